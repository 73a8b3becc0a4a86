/*
 * Loop devices over the mirror's FUSE file, with the kernel's ioctls
 * (what losetup does, without parsing its output): LOOP_CTL_GET_FREE, then
 * LOOP_CONFIGURE in one step; another process may take the same free
 * device in between (EBUSY), then we ask again.  Direct I/O is asked for
 * (no second page cache above FUSE, and fewer writeback paths through the
 * FUSE daemon) and dropped when the kernel refuses it for the file.
 *
 * Which file a loop device is over comes from sysfs
 * (/sys/dev/block/MAJ:MIN/loop/backing_file), so detach never releases a
 * loop device that was reused for something else after a stale record.
 * Releasing: LOOP_CLR_FD only marks the device for release at its last
 * close; we close ours and wait until sysfs says it is free.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"

#define LOOP_MAJOR_NUMBER 7
#define RELEASE_WAIT_S 5

/* The backing file of a configured loop device (dev: its device number);
 * 1 with the path, 0 when the device is free, -errno. */
static int backing_of(dev_t rdev, char *out, size_t len)
{
	char path[128];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/loop/backing_file",
	         major(rdev), minor(rdev));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, out, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 1;
}

static int loop_rdev(const char *dev, dev_t *rdev)
{
	struct stat st;

	if (stat(dev, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode) || major(st.st_rdev) != LOOP_MAJOR_NUMBER)
		return -ENOTBLK;
	*rdev = st.st_rdev;
	return 0;
}

int loop_backed_by(const char *dev, const char *backing)
{
	char cur[PATH_MAX];
	dev_t rdev;
	int r = loop_rdev(dev, &rdev);

	if (r < 0)
		return r == -ENOENT || r == -ENOTBLK ? 0 : r;
	r = backing_of(rdev, cur, sizeof(cur));
	return r <= 0 ? r : strcmp(cur, backing) == 0;
}

/* LOOP_CONFIGURE on dev; 0, or -errno (EBUSY: taken meanwhile). */
static int configure(const char *dev, int file_fd, const char *file, bool dio)
{
	struct loop_config cfg;
	int fd, r = 0;

	for (int tries = 0;; tries++) {
		fd = open(dev, O_RDWR | O_CLOEXEC);
		/* a device node the kernel has just made may take a moment
		 * to appear */
		if (fd >= 0 || errno != ENOENT || tries >= 50)
			break;
		usleep(10000);
	}
	if (fd < 0)
		return -errno;
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (unsigned)file_fd;
	cfg.info.lo_flags = dio ? LO_FLAGS_DIRECT_IO : 0;
	snprintf((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name),
	         "%s", file);
	if (ioctl(fd, LOOP_CONFIGURE, &cfg) < 0)
		r = -errno;
	close(fd);
	return r;
}

static bool dio_in_use(const char *dev)
{
	char path[128], c = '0';
	dev_t rdev;
	int fd;

	if (loop_rdev(dev, &rdev) < 0)
		return false;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/loop/dio",
	         major(rdev), minor(rdev));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (read(fd, &c, 1) != 1)
		c = '0';
	close(fd);
	return c == '1';
}

int loop_check_device(const char *dev, char *err, size_t len)
{
	dev_t rdev;
	int r = loop_rdev(dev, &rdev);
	char cur[PATH_MAX];

	if (r == 0 && backing_of(rdev, cur, sizeof(cur)) == 1) {
		snprintf(err, len, "%s is already in use (over %s)", dev, cur);
		return -1;
	}
	if (r < 0)
		snprintf(err, len, "%s is not a loop device%s%s", dev,
		         r == -ENOTBLK ? "" : ": ", r == -ENOTBLK ? "" : strerror(-r));
	return r < 0 ? -1 : 0;
}

int loop_attach(const char *file, const char *want, char *dev, size_t devlen,
                bool *dio, char *err, size_t len)
{
	bool try_dio = true;
	int file_fd, ctl = -1, r = -EBUSY;

	file_fd = open(file, O_RDWR | O_CLOEXEC);
	if (file_fd < 0) {
		snprintf(err, len, "cannot open %s: %s", file, strerror(errno));
		return -1;
	}
	if (want) {
		dev_t rdev;
		if ((r = loop_rdev(want, &rdev)) < 0) {
			snprintf(err, len, "%s is not a loop device%s%s", want,
			         r == -ENOTBLK ? "" : ": ",
			         r == -ENOTBLK ? "" : strerror(-r));
			close(file_fd);
			return -1;
		}
	} else if ((ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) < 0) {
		snprintf(err, len, "/dev/loop-control: %s", strerror(errno));
		close(file_fd);
		return -1;
	}
	for (int tries = 0; tries < 20; tries++) {
		if (want) {
			snprintf(dev, devlen, "%s", want);
		} else {
			int n = ioctl(ctl, LOOP_CTL_GET_FREE);
			if (n < 0) {
				r = -errno;
				break;
			}
			snprintf(dev, devlen, "/dev/loop%d", n);
		}
		r = configure(dev, file_fd, file, try_dio);
		if (r == -EINVAL && try_dio) { /* direct I/O refused for the file */
			try_dio = false;
			r = configure(dev, file_fd, file, false);
		}
		if (r != -EBUSY || want)
			break;
	}
	if (ctl >= 0)
		close(ctl);
	close(file_fd);
	if (r == -EBUSY && want)
		snprintf(err, len, "%s is already in use", want);
	else if (r == -ENOTTY)
		snprintf(err, len, "this kernel has no LOOP_CONFIGURE (Linux 5.8 "
		         "or later is needed)");
	else if (r < 0)
		snprintf(err, len, "cannot set up a loop device%s%s over %s: %s",
		         want ? " " : "", want ? want : "", file, strerror(-r));
	if (r < 0)
		return -1;
	*dio = dio_in_use(dev);
	return 0;
}

int loop_detach(const char *dev, char *err, size_t len)
{
	char cur[PATH_MAX];
	struct timespec ts;
	dev_t rdev;
	double deadline;
	int fd, r;

	if ((r = loop_rdev(dev, &rdev)) < 0) {
		snprintf(err, len, "%s: %s", dev, strerror(-r));
		return -1;
	}
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, len, "cannot open %s: %s", dev, strerror(errno));
		return -1;
	}
	r = ioctl(fd, LOOP_CLR_FD, 0) < 0 ? -errno : 0;
	close(fd);
	if (r < 0 && r != -ENXIO) { /* ENXIO: already free */
		snprintf(err, len, "cannot release %s: %s", dev, strerror(-r));
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (double)ts.tv_sec + RELEASE_WAIT_S;
	while ((r = backing_of(rdev, cur, sizeof(cur))) == 1) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if ((double)ts.tv_sec >= deadline) {
			snprintf(err, len, "%s is still open somewhere: the kernel "
			         "releases it at its last close", dev);
			return -1;
		}
		usleep(10000);
	}
	return 0;
}
