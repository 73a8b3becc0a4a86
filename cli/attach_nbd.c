/*
 * The kernel's NBD driver, through nbd-client, where the nbd module and
 * nbd-client exist.  Not tested on the machine this was written on (no
 * nbd module, no modprobe): kept to the three nbd-client calls, connect
 * (-unix SOCKET DEVICE -name EXPORT), check (-c) and disconnect (-d), each
 * with a deadline.  A free device is one with no pid in sysfs.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach.h"

int knbd_available(void)
{
	struct stat st;

	return (access("/sys/module/nbd", F_OK) == 0 ||
	        stat("/dev/nbd0", &st) == 0) && program_exists("nbd-client");
}

/* 1 when /sys/block/nbdN/pid exists (a client holds the device). */
static int busy(const char *dev)
{
	const char *base = strrchr(dev, '/');
	char path[300];

	snprintf(path, sizeof(path), "/sys/block/%s/pid", base ? base + 1 : dev);
	return access(path, F_OK) == 0;
}

int knbd_attach(const char *name, const char *socket, const char *want,
                char *dev, size_t devlen, char *err, size_t len)
{
	char e[512];
	struct stat st;
	int r;

	if (want) {
		snprintf(dev, devlen, "%s", want);
	} else {
		dev[0] = '\0';
		for (int i = 0; i < 256 && !dev[0]; i++) {
			char d[32];
			snprintf(d, sizeof(d), "/dev/nbd%d", i);
			if (stat(d, &st) < 0)
				break;
			if (!busy(d))
				snprintf(dev, devlen, "%s", d);
		}
		if (!dev[0]) {
			snprintf(err, len, "no free /dev/nbdN device");
			return -1;
		}
	}
	if (busy(dev)) {
		snprintf(err, len, "%s is already in use", dev);
		return -1;
	}
	char *argv[] = {"nbd-client", "-unix", (char *)socket, dev, "-name",
	                (char *)name, "-timeout", "30", NULL};
	r = run_program(argv, 30, e, sizeof(e));
	if (r != 0) {
		snprintf(err, len, "nbd-client could not connect %s: %s", dev,
		         e[0] ? e : "it failed without saying why");
		return -1;
	}
	return 0;
}

int knbd_connected(const char *dev)
{
	return busy(dev);
}

int knbd_detach(const char *dev, char *err, size_t len)
{
	char e[512];
	char *argv[] = {"nbd-client", "-d", (char *)dev, NULL};

	if (run_program(argv, 30, e, sizeof(e)) != 0) {
		snprintf(err, len, "nbd-client -d %s failed: %s", dev, e);
		return -1;
	}
	return 0;
}
