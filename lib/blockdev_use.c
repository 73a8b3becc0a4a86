/*
 * Who uses a block device, for detach (which must never pull a device
 * from under a file system or a program) and for a component the kernel
 * would not let us claim (file.c): a mount (/proc/self/mountinfo,
 * by device number, so any path to the device counts), a device stacked
 * on it (sysfs holders: device mapper, md), swap, or a process that has it
 * open (/proc/PID/fd).  The first found is named in one line.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "blockdev_use.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static int mounted_on(dev_t rdev, char *where, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192], point[4096];
	unsigned maj, mnr;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... */
		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &maj, &mnr, point) == 3 &&
		    maj == major(rdev) && mnr == minor(rdev)) {
			unescape(point);
			snprintf(where, len, "%s", point);
			fclose(f);
			return 1;
		}
	}
	fclose(f);
	return 0;
}

static int holder(dev_t rdev, char *who, size_t len)
{
	char path[128];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/holders", major(rdev),
	         minor(rdev));
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(who, len, "%s", e->d_name);
		closedir(d);
		return 1;
	}
	closedir(d);
	return 0;
}

static int swap_on(dev_t rdev)
{
	FILE *f = fopen("/proc/swaps", "re");
	char line[4096], path[4096];
	struct stat st;
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%4095s", path) == 1 && path[0] == '/') {
			unescape(path);
			found = stat(path, &st) == 0 && S_ISBLK(st.st_mode) &&
			        st.st_rdev == rdev;
		}
	fclose(f);
	return found;
}

static void comm_of(long pid, char *out, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(out, len, "?");
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* A process other than us with the device open: its pid, or 0. */
static long opener(dev_t rdev)
{
	DIR *proc = opendir("/proc");
	struct dirent *p;
	long found = 0;

	if (!proc)
		return 0;
	while (!found && (p = readdir(proc)) != NULL) {
		char *end, path[300];
		long pid = strtol(p->d_name, &end, 10);
		struct dirent *e;
		DIR *fds;
		if (*end || pid <= 0 || pid == (long)getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
		fds = opendir(path);
		if (!fds)
			continue;
		while (!found && (e = readdir(fds)) != NULL) {
			struct stat st;
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid, e->d_name);
			if (stat(path, &st) == 0 && S_ISBLK(st.st_mode) &&
			    st.st_rdev == rdev)
				found = pid;
		}
		closedir(fds);
	}
	closedir(proc);
	return found;
}

int bm_blockdev_in_use(const char *dev, char *what, size_t len,
                       bool openers)
{
	char buf[4096];
	struct stat st;
	long pid;

	if (stat(dev, &st) < 0 || !S_ISBLK(st.st_mode))
		return 0;
	if (mounted_on(st.st_rdev, buf, sizeof(buf))) {
		snprintf(what, len, "mounted on %s; unmount it first", buf);
		return 1;
	}
	if (holder(st.st_rdev, buf, sizeof(buf))) {
		snprintf(what, len, "in use by %s (a device stacked on it); "
		         "remove that first", buf);
		return 1;
	}
	if (swap_on(st.st_rdev)) {
		snprintf(what, len, "in use as swap; swapoff it first");
		return 1;
	}
	if (!openers)
		return 0;
	/* udev's workers open a device for a moment after it changes:
	 * only a process that keeps it open for a second counts. */
	for (int i = 0; i < 20 && (pid = opener(st.st_rdev)) > 0; i++)
		usleep(50000);
	if (pid > 0) {
		comm_of(pid, buf, 64);
		snprintf(what, len, "open by pid %ld (%s); close it first", pid,
		         buf);
		return 1;
	}
	return 0;
}
