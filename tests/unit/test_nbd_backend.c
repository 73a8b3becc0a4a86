/*
 * The NBD backend against real nbdkit servers:
 * - abort(): a read held by a paused server (nbdkit's pause filter)
 *   completes with an error within 2 s, later submits fail, close returns;
 * - check() is 0 while the server is there and -ENOTCONN once it is killed,
 *   and submits then fail at once;
 * - connecting to a socket whose server never answers gives up at the
 *   deadline (BLKMIRROR_NBD_CONNECT_TIMEOUT_MS);
 * - a hand-made server that stops reading (a write cannot be sent) or
 *   answers with garbage: the request fails at once as the connection's
 *   loss (-ENOTCONN), check() says so;
 * all of it on our own transmission (nbd_wire.c), then again on libnbd's
 * (BLKMIRROR_NBD_LIBNBD, kept for TLS), and that the variable selects it;
 * - send batches (sendbatch.c) on our own transmission: requests made
 *   with a batch open reach the server only at the flush, all in one
 *   read, and are answered; a close on the thread whose batch holds a
 *   request (after an abort) returns.
 * Skipped (77) when nbdkit is not installed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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
#include "sendbatch.h"

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
	unlink(sock); /* from the pass before */
	unlink(pidf);
	if (ctl)
		unlink(ctl);
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
	unlink(path); /* from the pass before */
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

/* ---- a hand-made server that misbehaves after negotiation ---- */

enum fake_mode { FAKE_STOP_READING, FAKE_GARBAGE, FAKE_COUNT };

#define COUNT_READS 8       /* FAKE_COUNT: requests it waits for */
#define COUNT_LEN 512       /* ... each a read of this length */

struct fake {
	int lfd;
	enum fake_mode mode;
	pthread_t thread;
	atomic_bool release;    /* the test is done with it */
	atomic_int got_bytes;   /* FAKE_COUNT: request bytes received ... */
	atomic_int got_reads;   /* ... in this many read() calls */
};

static bool read_full(int fd, void *buf, size_t n)
{
	char *b = buf;
	while (n > 0) {
		ssize_t k = read(fd, b, n);
		if (k <= 0)
			return false;
		b += k;
		n -= (size_t)k;
	}
	return true;
}

static void put_be(uint8_t *b, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		b[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *b, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++)
		v = v << 8 | b[i];
	return v;
}

static bool opt_reply(int fd, uint32_t opt, uint32_t type, const void *data,
                      uint32_t len)
{
	uint8_t h[20];
	put_be(h, 0x3e889045565a9ull, 8);
	put_be(h + 8, opt, 4);
	put_be(h + 12, type, 4);
	put_be(h + 16, len, 4);
	return write(fd, h, 20) == 20 &&
	       (len == 0 || write(fd, data, len) == (ssize_t)len);
}

/* Fixed newstyle; every option but NBD_OPT_GO refused (no structured
 * replies); a 1 MiB export with flush and FUA; then the mode's fault. */
static void *fake_main(void *arg)
{
	struct fake *f = arg;
	int fd = accept(f->lfd, NULL, NULL);
	uint8_t h[16], data[4096], req[28];
	if (fd < 0)
		return NULL;
	memcpy(h, "NBDMAGICIHAVEOPT", 16);
	if (write(fd, h, 16) != 16 || write(fd, "\0\3", 2) != 2 ||
	    !read_full(fd, data, 4))
		goto out;
	for (;;) {
		if (!read_full(fd, h, 16))
			goto out;
		uint32_t opt = (uint32_t)get_be(h + 8, 4);
		uint32_t len = (uint32_t)get_be(h + 12, 4);
		if (len > sizeof(data) || !read_full(fd, data, len))
			goto out;
		if (opt != 7) {
			opt_reply(fd, opt, 0x80000001u, NULL, 0);
			continue;
		}
		uint8_t info[12];
		put_be(info, 0, 2);
		put_be(info + 2, 1u << 20, 8);
		put_be(info + 10, 1 | 4 | 8, 2); /* has flags, flush, FUA */
		if (!opt_reply(fd, opt, 3, info, sizeof(info)) ||
		    !opt_reply(fd, opt, 1, NULL, 0))
			goto out;
		break;
	}
	if (f->mode == FAKE_STOP_READING) {
		shutdown(fd, SHUT_RD); /* the client's sends now fail */
		while (!atomic_load(&f->release)) /* and it stays connected */
			usleep(10000);
	} else if (f->mode == FAKE_COUNT) {
		/* COUNT_READS read requests, counted as they come, then a
		 * simple reply with data to each */
		uint8_t reqs[COUNT_READS * 28];
		size_t have = 0;
		while (have < sizeof(reqs)) {
			ssize_t k = read(fd, reqs + have, sizeof(reqs) - have);
			if (k <= 0)
				goto out;
			have += (size_t)k;
			atomic_fetch_add(&f->got_reads, 1);
			atomic_store(&f->got_bytes, (int)have);
		}
		for (int i = 0; i < COUNT_READS; i++) {
			uint8_t rep[16 + COUNT_LEN];
			put_be(rep, 0x67446698u, 4);
			put_be(rep + 4, 0, 4);
			memcpy(rep + 8, reqs + i * 28 + 8, 8); /* the cookie */
			memset(rep + 16, 0x5a, COUNT_LEN);
			if (write(fd, rep, sizeof(rep)) != (ssize_t)sizeof(rep))
				goto out;
		}
	} else {
		/* a request, then 16 bytes that are no reply */
		if (read_full(fd, req, sizeof(req))) {
			memset(data, 0x12, 16);
			if (write(fd, data, 16) != 16)
				goto out;
		}
	}
	while (read(fd, data, sizeof(data)) > 0) /* until the client goes */
		;
out:
	close(fd);
	return NULL;
}

static bool fake_start(struct fake *f, const char *name, enum fake_mode mode,
                       char *uri, size_t urisz)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", dir, name);
	snprintf(uri, urisz, "nbd+unix:///?socket=%s", sa.sun_path);
	unlink(sa.sun_path); /* from the pass before */
	f->mode = mode;
	atomic_store(&f->release, false);
	atomic_store(&f->got_bytes, 0);
	atomic_store(&f->got_reads, 0);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return f->lfd >= 0 &&
	       bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	       listen(f->lfd, 1) == 0 &&
	       pthread_create(&f->thread, NULL, fake_main, f) == 0;
}

/* Lets the fake server end (a blocked accept() too) and waits for it. */
static void fake_stop(struct fake *f)
{
	atomic_store(&f->release, true);
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->thread, NULL);
	close(f->lfd);
}

/* A fake server NAME in MODE and a backend open on it; NULL (the fake
 * stopped) when either cannot be had. */
static struct bm_backend *fake_open(struct fake *f, const char *name,
                                    enum fake_mode mode)
{
	char uri[300];
	struct bm_backend *be = NULL;

	if (!fake_start(f, name, mode, uri, sizeof(uri))) {
		CHECK(!"the fake server starts");
		return NULL;
	}
	CHECK_EQ(bm_nbd_backend_open(uri, &be), 0);
	if (!be)
		fake_stop(f);
	return be;
}

/* Closes be, which never waits on the fake's goodwill (3 s at most), and
 * stops the fake. */
static void fake_close(struct fake *f, struct bm_backend *be)
{
	long t0 = now_ms();
	be->ops->close(be);
	CHECK(now_ms() - t0 < 3000);
	fake_stop(f);
}

/* A server that stops reading: the write cannot be sent; it fails at once
 * as the connection's loss (not left waiting for the io-timeout), check()
 * says so, later submits fail, close returns. */
static void test_send_fails(void)
{
	struct fake f;
	struct bm_backend *be = fake_open(&f, "deaf", FAKE_STOP_READING);
	if (!be)
		return;
	usleep(100000); /* the shutdown has happened */
	struct pending w;
	pending_init(&w, 0);
	w.r.op = BM_BOP_WRITE;
	CHECK_EQ(be->ops->submit(be, &w.r), 0);
	CHECK(pending_wait(&w, 2000));
	CHECK_EQ(w.result, -ENOTCONN);
	CHECK_EQ(be->ops->check(be), -ENOTCONN);
	struct pending late;
	pending_init(&late, 0);
	CHECK(be->ops->submit(be, &late.r) < 0);
	fake_close(&f, be);
}

/* A server that answers with garbage: the read fails as the connection's
 * loss (-ENOTCONN: the component is disconnected and reconnected, not
 * failed), and check() says the protocol was broken. */
static void test_garbage_reply(void)
{
	struct fake f;
	struct bm_backend *be = fake_open(&f, "garbage", FAKE_GARBAGE);
	if (!be)
		return;
	struct pending r;
	pending_init(&r, 0);
	CHECK_EQ(be->ops->submit(be, &r.r), 0);
	CHECK(pending_wait(&r, 2000));
	CHECK_EQ(r.result, -ENOTCONN);
	CHECK_EQ(be->ops->check(be), -ENOTCONN);
	fake_close(&f, be);
}

/* Requests made with a send batch open go out at the flush, not before,
 * in one message (one read at the server), and are answered. */
static void test_batch_sends_at_flush(void)
{
	struct fake f;
	struct bm_backend *be = fake_open(&f, "batch", FAKE_COUNT);
	if (!be)
		return;
	struct pending p[COUNT_READS];
	bm_sendbatch_open();
	for (int i = 0; i < COUNT_READS; i++) {
		pending_init(&p[i], (uint64_t)i * COUNT_LEN);
		p[i].r.length = COUNT_LEN;
		CHECK_EQ(be->ops->submit(be, &p[i].r), 0);
	}
	usleep(200000); /* time enough for a send to arrive */
	CHECK_EQ(atomic_load(&f.got_bytes), 0); /* nothing sent yet */
	bm_sendbatch_flush();
	for (int i = 0; i < COUNT_READS; i++) {
		CHECK(pending_wait(&p[i], 2000));
		CHECK_EQ(p[i].result, 0);
		CHECK(p[i].buf[0] == 0x5a && p[i].buf[COUNT_LEN - 1] == 0x5a);
	}
	CHECK_EQ(atomic_load(&f.got_bytes), COUNT_READS * 28);
	CHECK_EQ(atomic_load(&f.got_reads), 1); /* one message */
	bm_sendbatch_close();
	fake_close(&f, be);
}

/* A request deferred in this thread's batch, the connection aborted: the
 * request ends, and close() on this same thread returns (it sends its
 * own thread's batch first instead of waiting for it). */
static void test_batch_close_same_thread(void)
{
	struct fake f;
	struct bm_backend *be = fake_open(&f, "batchclose", FAKE_COUNT);
	if (!be)
		return;
	struct pending r;
	pending_init(&r, 0);
	r.r.length = COUNT_LEN;
	bm_sendbatch_open();
	CHECK_EQ(be->ops->submit(be, &r.r), 0);
	be->ops->abort(be);
	CHECK(pending_wait(&r, 2000));
	CHECK_EQ(r.result, -ECONNABORTED);
	fake_close(&f, be);
	bm_sendbatch_close();
}

/* BLKMIRROR_NBD_LIBNBD really selects the other transmission. */
static void test_two_paths(void)
{
	char uri[300];
	struct bm_backend *own = NULL, *lib = NULL;
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/two.sock", dir);
	pid_t p = start_nbdkit("two", NULL);
	CHECK(p > 0);
	if (p <= 0)
		return;
	CHECK_EQ(bm_nbd_backend_open(uri, &own), 0);
	setenv("BLKMIRROR_NBD_LIBNBD", "1", 1);
	CHECK_EQ(bm_nbd_backend_open(uri, &lib), 0);
	unsetenv("BLKMIRROR_NBD_LIBNBD");
	CHECK(own && lib && own->ops != lib->ops);
	if (own)
		own->ops->close(own);
	if (lib)
		lib->ops->close(lib);
	stop_nbdkit(p);
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
	/* Twice: our own transmission, then libnbd's (kept for TLS) */
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			setenv("BLKMIRROR_NBD_LIBNBD", "1", 1);
		test_abort_paused();
		test_server_killed();
		test_connect_deadline();
		test_send_fails();
		test_garbage_reply();
	}
	unsetenv("BLKMIRROR_NBD_LIBNBD");
	test_two_paths();
	test_batch_sends_at_flush();
	test_batch_close_same_thread();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_exit();
}
