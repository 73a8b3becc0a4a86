/*
 * crashsim backend (crashsim.h says what it models and why).
 *
 * Design: one FIFO and one worker thread for every crashsim component of
 * the process.  The worker takes a request, and under the journal lock
 * numbers it, journals it (write(2) to an O_APPEND file: in the kernel
 * before the next operation, so a crash keeps it) and executes it on the
 * file, then calls done() outside the lock.  The synchronous calls take
 * the same path (submit and wait), so label and lease I/O are numbered in
 * the same sequence.  Crashing is _exit() in the worker, before the
 * operation numbered N is journaled or executed: the simplest stop that no
 * thread of the engine can get past.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crashsim.h"
#include "error.h"

struct csim {
	struct bm_backend base;
	int fd;
	int jfd;
	bool aborted;
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static struct qent {
	struct qent *next;
	struct csim *cs;
	struct bm_breq *r;
} *q_head, *q_tail;
static bool worker_started;
static pthread_t worker;
static uint64_t seq;          /* under q_lock's worker only */
static uint64_t crash_at;

uint64_t bm_crashsim_ops(void)
{
	return __atomic_load_n(&seq, __ATOMIC_SEQ_CST);
}

static int full_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf = (const char *)buf + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int full_write(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf = (const char *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

static int do_read(struct csim *cs, struct bm_breq *r)
{
	size_t got = 0;
	while (got < r->length) {
		ssize_t n = pread(cs->fd, (char *)r->buf + got, r->length - got,
		                  (off_t)(r->offset + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			memset((char *)r->buf + got, 0, r->length - got);
			break;
		}
		got += (size_t)n;
	}
	return 0;
}

/* Numbers, journals and executes one changing operation. */
static int do_change(struct csim *cs, struct bm_breq *r)
{
	struct bm_crashsim_rec rec = {0};
	static char zeros[65536];
	int err;

	seq++;
	if (crash_at && seq == crash_at)
		_exit(BM_CRASHSIM_EXIT);
	rec.seq = seq;
	rec.op = (uint32_t)r->op;
	rec.flags = r->flags;
	rec.offset = r->offset;
	rec.length = r->op == BM_BOP_FLUSH ? 0 : r->length;
	err = full_write(cs->jfd, &rec, sizeof(rec));
	if (!err && r->op == BM_BOP_WRITE)
		err = full_write(cs->jfd, r->buf, r->length);
	if (err)
		return err;
	switch (r->op) {
	case BM_BOP_WRITE:
		return full_pwrite(cs->fd, r->buf, r->length, r->offset);
	case BM_BOP_FLUSH:
		return 0;    /* durability is the oracle's model, not the file's */
	default:         /* TRIM and ZERO both read back as zeros */
		for (uint64_t done = 0; done < r->length;) {
			size_t n = r->length - done;
			if (n > sizeof(zeros))
				n = sizeof(zeros);
			err = full_pwrite(cs->fd, zeros, n, r->offset + done);
			if (err)
				return err;
			done += n;
		}
		return 0;
	}
}

static void *worker_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "bm-crashsim");
	for (;;) {
		struct qent *e;
		int res;

		pthread_mutex_lock(&q_lock);
		while (!q_head)
			pthread_cond_wait(&q_cond, &q_lock);
		e = q_head;
		q_head = e->next;
		if (!q_head)
			q_tail = NULL;
		if (e->cs->aborted)
			res = -ECONNABORTED;
		else if (e->r->op == BM_BOP_READ)
			res = do_read(e->cs, e->r);
		else
			res = do_change(e->cs, e->r);
		pthread_mutex_unlock(&q_lock);
		e->r->done(e->r, res);
		free(e);
	}
	return NULL;
}

static int cs_submit(struct bm_backend *be, struct bm_breq *r)
{
	struct csim *cs = (struct csim *)be;
	struct qent *e;

	if (r->op != BM_BOP_FLUSH &&
	    (r->offset > be->size || r->length > be->size - r->offset))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cs = cs;
	e->r = r;
	pthread_mutex_lock(&q_lock);
	if (cs->aborted) {
		pthread_mutex_unlock(&q_lock);
		free(e);
		return -ECONNABORTED;
	}
	if (q_tail)
		q_tail->next = e;
	else
		q_head = e;
	q_tail = e;
	pthread_cond_signal(&q_cond);
	pthread_mutex_unlock(&q_lock);
	return 0;
}

static int cs_pread(struct bm_backend *be, void *buf, size_t len, uint64_t off)
{
	return bm_backend_io_wait(be, BM_BOP_READ, buf, (uint32_t)len, off, 0);
}

static int cs_pwrite(struct bm_backend *be, const void *buf, size_t len,
                     uint64_t off)
{
	return bm_backend_io_wait(be, BM_BOP_WRITE, (void *)buf, (uint32_t)len,
	                          off, 0);
}

static int cs_flush(struct bm_backend *be)
{
	return bm_backend_io_wait(be, BM_BOP_FLUSH, NULL, 0, 0, 0);
}

/* Waits for this component's queued requests, then frees it. */
static void cs_close(struct bm_backend *be)
{
	struct csim *cs = (struct csim *)be;
	for (;;) {
		bool queued = false;
		pthread_mutex_lock(&q_lock);
		for (struct qent *e = q_head; e; e = e->next)
			queued |= e->cs == cs;
		pthread_mutex_unlock(&q_lock);
		if (!queued)
			break;
		usleep(1000);
	}
	/* The worker may still be calling done() of our last request, which
	 * touches only the request; taking the lock once more orders us after
	 * its execution. */
	pthread_mutex_lock(&q_lock);
	pthread_mutex_unlock(&q_lock);
	close(cs->fd);
	close(cs->jfd);
	free(cs);
}

static void cs_abort(struct bm_backend *be)
{
	struct csim *cs = (struct csim *)be;
	pthread_mutex_lock(&q_lock);
	cs->aborted = true;
	pthread_mutex_unlock(&q_lock);
}

static const struct bm_backend_ops cs_ops = {
	.kind = "crashsim",
	.submit = cs_submit,
	.pread_sync = cs_pread,
	.pwrite_sync = cs_pwrite,
	.flush_sync = cs_flush,
	.close = cs_close,
	.abort = cs_abort,
};

int bm_crashsim_backend_open(const char *uri, struct bm_backend **out)
{
	const char *path = uri + strlen(BM_CRASHSIM_PREFIX);
	char jpath[PATH_MAX + 16];
	struct csim *cs;
	struct stat st;
	const char *env;

	/* A test backend journals every write next to the file: never by
	 * accident from the command line. */
	if (!getenv("BM_CRASHSIM"))
		return bm_error(EINVAL, "%s: crashsim: is a test backend "
		                "(tests/tools/crashsim_oracle); set BM_CRASHSIM=1 "
		                "to use it", uri);
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return bm_error(ENOMEM, "out of memory");
	cs->fd = open(path, O_RDWR | O_CLOEXEC);
	if (cs->fd < 0 || fstat(cs->fd, &st) < 0) {
		int e = errno;
		if (cs->fd >= 0)
			close(cs->fd);
		free(cs);
		return bm_error(e, "%s: %s", path, strerror(e));
	}
	snprintf(jpath, sizeof(jpath), "%s.journal", path);
	cs->jfd = open(jpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (cs->jfd < 0) {
		int e = errno;
		close(cs->fd);
		free(cs);
		return bm_error(e, "%s: %s", jpath, strerror(e));
	}
	cs->base.ops = &cs_ops;
	snprintf(cs->base.path, sizeof(cs->base.path), "%s", uri);
	cs->base.size = (uint64_t)st.st_size;
	cs->base.st_dev = st.st_dev;
	cs->base.st_ino = st.st_ino;
	pthread_mutex_lock(&q_lock);
	if (!worker_started) {
		env = getenv("BM_CRASHSIM_CRASH_AT");
		crash_at = env ? strtoull(env, NULL, 10) : 0;
		if (pthread_create(&worker, NULL, worker_main, NULL) == 0) {
			pthread_detach(worker);
			worker_started = true;
		}
	}
	pthread_mutex_unlock(&q_lock);
	if (!worker_started) {
		close(cs->fd);
		close(cs->jfd);
		free(cs);
		return bm_error(EAGAIN, "crashsim: cannot start its thread");
	}
	*out = &cs->base;
	return 0;
}
