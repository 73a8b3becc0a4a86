/*
 * Running helper programs for attach/detach (nbd-client, fusermount):
 * with a deadline (a helper stuck on a dead server must not hang the
 * verb), stdin/stdout on /dev/null, stderr kept in an anonymous file so
 * that its last line can be quoted in our one-line error.  And the start
 * time of a process, which tells a process from a later one that got its
 * pid.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"

int program_exists(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (!path || !*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		if (n && (size_t)snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path,
		                          prog) < sizeof(buf) &&
		    access(buf, X_OK) == 0)
			return 1;
		path += n + (path[n] == ':');
	}
	return 0;
}

/* The last non-empty line of the file behind fd. */
static void last_line(int fd, char *out, size_t len)
{
	char buf[4096];
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from = end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = end > 0 ? pread(fd, buf, sizeof(buf) - 1, from) : 0;

	if (!len)
		return;
	out[0] = '\0';
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	char *start = strrchr(buf, '\n');
	snprintf(out, len, "%s", start ? start + 1 : buf);
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int run_program(char *const argv[], int timeout_s, char *err, size_t len)
{
	int errfd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	double deadline = mono_now() + timeout_s;
	int status, delay_us = 1000;
	pid_t pid, r;

	if (len)
		err[0] = '\0';
	pid = fork();
	if (pid < 0) {
		snprintf(err, len, "cannot run %s: %s", argv[0], strerror(errno));
		if (errfd >= 0)
			close(errfd);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		dup2(errfd >= 0 ? errfd : null, 2);
		execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		if (mono_now() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			snprintf(err, len, "%s did not finish within %d s", argv[0],
			         timeout_s);
			if (errfd >= 0)
				close(errfd);
			return -1;
		}
		usleep((useconds_t)delay_us);
		if (delay_us < 50000)
			delay_us *= 2;
	}
	if (errfd >= 0) {
		last_line(errfd, err, len);
		close(errfd);
	}
	if (r == pid && WIFEXITED(status))
		return WEXITSTATUS(status);
	if (len && !err[0])
		snprintf(err, len, "%s was killed", argv[0]);
	return -1;
}

unsigned long long proc_start_time(pid_t pid)
{
	char path[64], buf[1024], state;
	unsigned long long start = 0;
	FILE *f;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	/* "PID (COMM) STATE ..." where COMM may hold spaces and ')': the
	 * fields start after the last ')'.  starttime is field 22. */
	char *p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
	                 "%*u %*u %*d %*d %*d %*d %*d %*d %llu", &state,
	                 &start) != 2)
		return 0;
	return (state == 'Z' || state == 'X') ? 0 : start;
}
