/*
 * The NBD backend against real nbdkit servers:
 * - abort(): a read held by a paused server (nbdkit's pause filter)
 *   completes with an error within 2 s, later submits fail, close returns;
 * - check() is 0 while the server is there and -ENOTCONN once it is killed,
 *   and submits then fail at once;
 * - connecting to a socket whose server never answers gives up at the
 *   deadline (BLKMIRROR_NBD_CONNECT_TIMEOUT_MS).
 * Skipped (77) when nbdkit is not installed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "check.h"

static char dir[] = "/tmp/bm_nbd_unit.XXXXXX";

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Starts nbdkit (memory 16M) on DIR/NAME.sock, with the pause filter when
 * ctl is set; returns its pid, or -1. */
static pid_t start_nbdkit(const char *name, const char *ctl)
{
	char sock[256], pidf[256], ctlarg[300];
	snprintf(sock, sizeof(sock), "%s/%s.sock", dir, name);
	snprintf(pidf, sizeof(pidf), "%s/%s.pid", dir, name);
	snprintf(ctlarg, sizeof(ctlarg), "pause-control=%s", ctl ? ctl : "");
	pid_t p = fork();
	if (p == 0) {
		if (ctl)
			execlp("nbdkit", "nbdkit", "-f", "-U", sock, "-P", pidf,
			       "--filter=pause", "memory", "16M", ctlarg, (char *)NULL);
		else
			execlp("nbdkit", "nbdkit", "-f", "-U", sock, "-P", pidf,
			       "memory", "16M", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) { /* the pid file is written when ready */
		if (access(pidf, F_OK) == 0)
			return p;
		usleep(50000);
	}
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	return -1;
}

static void stop_nbdkit(pid_t p)
{
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

static int unix_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The pause filter's protocol: send 'p' or 'r', read back 'P' or 'R'. */
static bool pause_cmd(const char *ctl, char cmd)
{
	int fd = -1;
	char reply = 0;
	for (int i = 0; i < 100 && fd < 0; i++) {
		fd = unix_connect(ctl);
		if (fd < 0)
			usleep(20000);
	}
	if (fd < 0)
		return false;
	bool ok = write(fd, &cmd, 1) == 1 && read(fd, &reply, 1) == 1 &&
	          reply == cmd - 'a' + 'A';
	close(fd);
	return ok;
}

struct pending {
	struct bm_breq r;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;
	int result;
	char buf[4096];
};

static void pending_done(struct bm_breq *r, int result)
{
	struct pending *p = r->opaque;
	pthread_mutex_lock(&p->lock);
	p->result = result;
	p->finished = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void pending_init(struct pending *p, uint64_t off)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	p->r = (struct bm_breq){.op = BM_BOP_READ, .offset = off,
	                        .length = sizeof(p->buf), .buf = p->buf,
	                        .done = pending_done, .opaque = p};
}

/* Waits up to ms for p to finish; returns whether it did. */
static bool pending_wait(struct pending *p, long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->lock);
	while (!p->finished &&
	       pthread_cond_timedwait(&p->cond, &p->lock, &ts) == 0)
		;
	bool f = p->finished;
	pthread_mutex_unlock(&p->lock);
	return f;
}

static void test_abort_paused(void)
{
	char ctl[100], uri[300];
	snprintf(ctl, sizeof(ctl), "%s/pause.ctl", dir);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/paused.sock", dir);
	pid_t p = start_nbdkit("paused", ctl);
	CHECK(p > 0);
	if (p <= 0)
		return;
	struct bm_backend *be = NULL;
	CHECK_EQ(bm_nbd_backend_open(uri, &be), 0);
	if (!be) {
		stop_nbdkit(p);
		return;
	}
	CHECK_EQ(be->ops->check(be), 0);
	char b[512];
	CHECK_EQ(be->ops->pread_sync(be, b, sizeof(b), 0), 0);

	static struct pending rd[4];
	CHECK(pause_cmd(ctl, 'p'));
	for (int i = 0; i < 4; i++) {
		pending_init(&rd[i], (uint64_t)i * 4096);
		CHECK_EQ(be->ops->submit(be, &rd[i].r), 0);
	}
	/* The server is paused: the reads must still be waiting. */
	CHECK(!pending_wait(&rd[0], 300));
	long t0 = now_ms();
	be->ops->abort(be);
	be->ops->abort(be); /* idempotent */
	for (int i = 0; i < 4; i++) {
		CHECK(pending_wait(&rd[i], 2000 - (now_ms() - t0)));
		CHECK(rd[i].result < 0);
	}
	CHECK_EQ(rd[0].result, -ECONNABORTED);
	CHECK(now_ms() - t0 < 2000);
	struct pending late;
	pending_init(&late, 0);
	CHECK_EQ(be->ops->submit(be, &late.r), -ECONNABORTED);
	/* check() reports the dead connection once the loop has noticed */
	int c = 0;
	for (int i = 0; i < 200 && (c = be->ops->check(be)) == 0; i++)
		usleep(10000);
	CHECK_EQ(c, -ENOTCONN);
	t0 = now_ms();
	be->ops->close(be);
	CHECK(now_ms() - t0 < 3000);
	stop_nbdkit(p); /* still paused: it never answered */
}

static void test_server_killed(void)
{
	char uri[300];
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/killed.sock", dir);
	pid_t p = start_nbdkit("killed", NULL);
	CHECK(p > 0);
	if (p <= 0)
		return;
	struct bm_backend *be = NULL;
	CHECK_EQ(bm_nbd_backend_open(uri, &be), 0);
	if (!be) {
		stop_nbdkit(p);
		return;
	}
	char b[4096];
	memset(b, 0x5a, sizeof(b));
	CHECK_EQ(be->ops->pwrite_sync(be, b, sizeof(b), 8192), 0);
	CHECK_EQ(be->ops->check(be), 0);
	stop_nbdkit(p);
	/* No I/O: the idle loop sees the hang-up by itself. */
	int c = 0;
	for (int i = 0; i < 500 && (c = be->ops->check(be)) == 0; i++)
		usleep(10000);
	CHECK_EQ(c, -ENOTCONN);
	struct pending late;
	pending_init(&late, 0);
	CHECK_EQ(be->ops->submit(be, &late.r), -ENOTCONN);
	long t0 = now_ms();
	be->ops->close(be);
	CHECK(now_ms() - t0 < 1000);
}

static void test_connect_deadline(void)
{
	char path[100], uri[300];
	snprintf(path, sizeof(path), "%s/silent.sock", dir);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", path);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	      listen(lfd, 4) == 0);
	/* Connects (the backlog accepts) but never says hello. */
	setenv("BLKMIRROR_NBD_CONNECT_TIMEOUT_MS", "500", 1);
	struct bm_backend *be = NULL;
	long t0 = now_ms();
	CHECK_EQ(bm_nbd_backend_open(uri, &be), -ETIMEDOUT);
	long took = now_ms() - t0;
	CHECK(took >= 400 && took < 3000);
	unsetenv("BLKMIRROR_NBD_CONNECT_TIMEOUT_MS");
	close(lfd);
}

int main(void)
{
	if (system("nbdkit --version >/dev/null 2>&1") != 0) {
		printf("skipped: nbdkit is not installed\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_abort_paused();
	test_server_killed();
	test_connect_deadline();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_exit();
}
