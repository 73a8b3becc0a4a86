/*
 * The mirror as a file: nbdfuse (libnbd's FUSE client) connected to the
 * server's Unix socket, mounted on STATE_DIR/NAME.fuse, the file
 * STATE_DIR/NAME.fuse/NAME.  attach_loop.c puts a loop device over it.
 *
 * nbdfuse runs in the foreground, so it is started in its own session
 * (a terminal's ^C or hang-up does not reach it) with its stderr in an
 * anonymous file (quoted when it fails to start; what it says later goes
 * nowhere, and it never dies of a closed pipe).  It is ready when it has
 * written its pid file (-P) and the file answers stat(); we poll both with
 * a deadline.  Stopping: unmount (nbdfuse then exits by itself), wait,
 * kill it only if it lingers.  Only the recorded process (pid + start
 * time) is ever signalled.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "cli.h"

#define START_TIMEOUT_S 10
#define EXIT_WAIT_S 5

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int fuse_export_available(char *why, size_t len)
{
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		snprintf(why, len, "/dev/fuse: %s (FUSE is needed when the "
		         "kernel has no nbd module)", strerror(errno));
		return -1;
	}
	if (!program_exists("nbdfuse")) {
		snprintf(why, len, "nbdfuse is not installed (Debian package "
		         "libnbd-bin; scripts/setup installs it)");
		return -1;
	}
	return 0;
}

bool fuse_export_running(const struct fuse_export *fx)
{
	return fx->pid > 0 && fx->start && proc_start_time(fx->pid) == fx->start;
}

void fuse_export_abort(const struct fuse_export *fx)
{
	if (fuse_export_running(fx))
		kill(fx->pid, SIGKILL);
}

/* 1 when path is the root of a mount (a dead FUSE mount included). */
static int is_mount_root(const char *path)
{
	char parent[PATH_MAX + 4];
	struct stat a, b;

	if (stat(path, &a) < 0)
		return errno == ENOTCONN ? 1 : 0;
	if ((size_t)snprintf(parent, sizeof(parent), "%s/..", path) >=
	    sizeof(parent) || stat(parent, &b) < 0)
		return 0;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

static int pid_file(const struct fuse_export *fx, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.pid", fx->mount);
	return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

/* Unmounts fx->mount: 0 (also when nothing was mounted), -1 with err. */
static int unmount(const struct fuse_export *fx, char *err, size_t len)
{
	if (umount2(fx->mount, UMOUNT_NOFOLLOW) == 0 || errno == EINVAL ||
	    errno == ENOENT)
		return 0;
	if (errno == EBUSY) {
		snprintf(err, len, "the FUSE mount %s is busy (a loop device or "
		         "a process still has %s open)", fx->mount, fx->file);
		return -1;
	}
	if (errno == EPERM) { /* not root: the setuid helper may */
		char *argv[] = {program_exists("fusermount3") ? "fusermount3"
		                : "fusermount", "-u", (char *)fx->mount, NULL};
		char e[512];
		if (run_program(argv, 10, e, sizeof(e)) == 0)
			return 0;
		snprintf(err, len, "cannot unmount %s: %s", fx->mount, e);
		return -1;
	}
	snprintf(err, len, "cannot unmount %s: %s", fx->mount, strerror(errno));
	return -1;
}

/* Waits until the recorded nbdfuse has exited; SIGTERM after secs, then
 * SIGKILL. */
static void wait_gone(const struct fuse_export *fx, int secs)
{
	double deadline = now_s() + secs;
	int sig = 0;

	while (fuse_export_running(fx)) {
		if (now_s() >= deadline) {
			if (sig == SIGKILL)
				return; /* nothing more we can do */
			sig = sig ? SIGKILL : SIGTERM;
			kill(fx->pid, sig);
			deadline = now_s() + 2;
		}
		usleep(10000);
	}
}

int fuse_export_stop(const struct fuse_export *fx, char *err, size_t len)
{
	char pidf[PATH_MAX + 8];

	if (unmount(fx, err, len) < 0)
		return -1;
	wait_gone(fx, EXIT_WAIT_S);
	if (rmdir(fx->mount) < 0 && errno != ENOENT) {
		snprintf(err, len, "cannot remove %s: %s", fx->mount,
		         strerror(errno));
		return -1;
	}
	if (pid_file(fx, pidf, sizeof(pidf)) == 0)
		unlink(pidf);
	return 0;
}

/* Makes fx->mount an empty directory we own, and canonical (the loop
 * device keeps the file's full path, which detach and tests compare). */
static int make_mount_dir(const char *name, struct fuse_export *fx, char *err,
                          size_t len)
{
	char path[PATH_MAX];

	if (state_path(path, sizeof(path), name, ".fuse") < 0) {
		snprintf(err, len, "the state directory path is too long");
		return -1;
	}
	if (mkdir(state_dir(), 0755) < 0 && errno != EEXIST) {
		snprintf(err, len, "cannot create %s: %s", state_dir(),
		         strerror(errno));
		return -1;
	}
	if (mkdir(path, 0700) < 0) {
		if (errno != EEXIST) {
			snprintf(err, len, "cannot create %s: %s", path,
			         strerror(errno));
			return -1;
		}
		if (is_mount_root(path)) {
			snprintf(err, len, "something is mounted on %s (left by an "
			         "earlier attach?); 'blkmirror detach %s' or "
			         "unmount it", path, name);
			return -1;
		}
		/* An empty directory left behind is reused; anything else is
		 * not ours to remove. */
		if (rmdir(path) < 0 || mkdir(path, 0700) < 0) {
			snprintf(err, len, "%s is in the way (%s); remove it", path,
			         strerror(errno));
			return -1;
		}
	}
	if (!realpath(path, fx->mount)) {
		snprintf(err, len, "%s: %s", path, strerror(errno));
		rmdir(path);
		return -1;
	}
	if ((size_t)snprintf(fx->file, sizeof(fx->file), "%s/%s", fx->mount,
	                     name) >= sizeof(fx->file)) {
		snprintf(err, len, "the state directory path is too long");
		rmdir(path);
		return -1;
	}
	return 0;
}

/* The pid in nbdfuse's pid file, 0 while it is not written yet. */
static pid_t read_pid_file(const char *path)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (pid_t)atol(buf);
}

static void stderr_line(int fd, char *out, size_t len)
{
	char buf[2048];
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;

	out[0] = '\0';
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	char *nl = strrchr(buf, '\n');
	snprintf(out, len, "%.300s", nl ? nl + 1 : buf);
}

int fuse_export_start(const char *name, const char *socket,
                      struct fuse_export *fx, char *err, size_t len)
{
	char pidf[PATH_MAX + 8], said[512];
	double deadline;
	struct stat st;
	int errfd, status;
	pid_t pid;

	memset(fx, 0, sizeof(*fx));
	if (make_mount_dir(name, fx, err, len) < 0)
		return -1;
	pid_file(fx, pidf, sizeof(pidf));
	unlink(pidf);
	errfd = open(state_dir(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (errfd < 0)
		errfd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	pid = fork();
	if (pid < 0) {
		snprintf(err, len, "cannot start nbdfuse: %s", strerror(errno));
		goto fail_dir;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		setsid();
		if (chdir("/") < 0)
			_exit(126);
		dup2(null, 0);
		dup2(null, 1);
		dup2(errfd >= 0 ? errfd : null, 2);
		execlp("nbdfuse", "nbdfuse", "-P", pidf, fx->file, "--unix", socket,
		       (char *)NULL);
		dprintf(2, "cannot run nbdfuse: %s\n", strerror(errno));
		_exit(127);
	}
	deadline = now_s() + START_TIMEOUT_S;
	for (;;) {
		if (read_pid_file(pidf) > 0 && stat(fx->file, &st) == 0 &&
		    S_ISREG(st.st_mode))
			break;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			stderr_line(errfd, said, sizeof(said));
			snprintf(err, len, "nbdfuse failed: %s", said[0] ? said :
			         "it exited without saying why");
			pid = 0;
			goto fail_mount;
		}
		if (now_s() >= deadline) {
			stderr_line(errfd, said, sizeof(said));
			snprintf(err, len, "nbdfuse did not mount %s within %d s%s%s",
			         fx->file, START_TIMEOUT_S, said[0] ? ": " : "", said);
			goto fail_mount;
		}
		usleep(10000);
	}
	fx->pid = pid;
	fx->start = proc_start_time(pid);
	unlink(pidf);
	if (errfd >= 0)
		close(errfd);
	return 0;

fail_mount:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	umount2(fx->mount, UMOUNT_NOFOLLOW); /* a mount nbdfuse left, if any */
fail_dir:
	unlink(pidf);
	rmdir(fx->mount);
	if (errfd >= 0)
		close(errfd);
	return -1;
}
