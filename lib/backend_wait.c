/*
 * Waiting for one backend request, for the code that must (labels, the
 * sync copy, leases, repairs): the data path never waits.  The deadline
 * variant owns its buffer and its completion, so that a component that
 * never answers costs a little memory, never a hang or a write into the
 * caller's freed buffer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "backend.h"
#include "mirror.h" /* bm_now_ns */
#include "sendbatch.h"

static _Atomic long sync_timeout_ms = BM_IO_TIMEOUT_MS_DEFAULT;

void bm_backend_set_sync_timeout_ms(long ms)
{
	atomic_store(&sync_timeout_ms, ms >= 0 ? ms : BM_IO_TIMEOUT_MS_DEFAULT);
}

long bm_backend_sync_timeout_ms(void)
{
	return atomic_load(&sync_timeout_ms);
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;
	int result;
};

static void waiter_done(struct bm_breq *r, int result)
{
	struct waiter *w = r->opaque;

	pthread_mutex_lock(&w->lock);
	w->result = result;
	w->finished = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int bm_backend_io_wait(struct bm_backend *be, enum bm_bop op, void *buf,
                       uint32_t len, uint64_t off, uint32_t flags)
{
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	                   false, 0};
	struct bm_breq r = {.op = op, .flags = flags, .offset = off,
	                    .length = len, .buf = buf, .done = waiter_done,
	                    .opaque = &w};
	int err = be->ops->submit(be, &r);

	if (err < 0)
		return err;
	bm_sendbatch_flush(); /* never sleep on a deferred send */
	pthread_mutex_lock(&w.lock);
	while (!w.finished)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.result;
}

/* A request that may outlive its waiter: two references (the waiter's and
 * the completion's); whoever drops the last one frees it. */
struct detached {
	struct bm_breq r;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;
	int result;
	int refs;          /* lock */
	bool abandoned;    /* lock: the waiter gave up (be->detached counts it) */
	uint64_t done_ns;  /* lock: when it finished (CLOCK_MONOTONIC) */
	struct bm_backend *be;
	void *bounce;
};

static void detached_put_locked(struct detached *d)
{
	if (--d->refs > 0) {
		pthread_mutex_unlock(&d->lock);
		return;
	}
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d->bounce);
	free(d);
}

static void detached_done(struct bm_breq *r, int result)
{
	struct detached *d = r->opaque;

	pthread_mutex_lock(&d->lock);
	d->result = result;
	d->finished = true;
	d->done_ns = bm_now_ns();
	if (d->abandoned)
		atomic_fetch_sub(&d->be->detached, 1);
	pthread_cond_signal(&d->cond);
	detached_put_locked(d);
}

int bm_backend_io_wait_timeout(struct bm_backend *be, enum bm_bop op,
                               void *buf, uint32_t len, uint64_t off,
                               uint32_t flags, long timeout_ms)
{
	return bm_backend_io_wait_patient(be, op, buf, len, off, flags,
	                                  timeout_ms, NULL);
}

/* Starts one detached request (a copy of buf for a write): NULL, with
 * *err, when it could not be started. */
static struct detached *detached_start(struct bm_backend *be, enum bm_bop op,
                                       const void *buf, uint32_t len,
                                       uint64_t off, uint32_t flags, int *err)
{
	struct detached *d = calloc(1, sizeof(*d));

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	if (len && (op == BM_BOP_READ || op == BM_BOP_WRITE)) {
		if (posix_memalign(&d->bounce, 4096, len)) {
			free(d);
			*err = -ENOMEM;
			return NULL;
		}
		if (op == BM_BOP_WRITE)
			memcpy(d->bounce, buf, len);
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	d->refs = 2;
	d->be = be;
	d->r = (struct bm_breq){.op = op, .flags = flags, .offset = off,
	                        .length = len, .buf = d->bounce,
	                        .done = detached_done, .opaque = d};
	*err = be->ops->submit(be, &d->r);
	if (*err < 0) {
		pthread_mutex_lock(&d->lock);
		d->refs--; /* the completion's: it will not run */
		detached_put_locked(d);
		return NULL;
	}
	return d;
}

/* A wait sent at t0 runs late: it starts a streak, or continues one whose
 * last wait ended less than a second before it was sent. */
static void streak_late(struct bm_wait_streak *s, uint64_t t0)
{
	if (s->since_ns == 0 || t0 > s->last_ns + 1000000000u)
		s->since_ns = t0;
}

/* Waits for d until *deadline (and on while p says the backend is only
 * slow; t0: when d was submitted), gives it up after that; copies a read's
 * data to buf; drops the waiter's reference.  0 or -errno. */
static int detached_finish(struct detached *d, void *buf,
                           struct timespec deadline, uint64_t t0,
                           const struct bm_patience *p)
{
	uint64_t due = (uint64_t)deadline.tv_sec * 1000000000u +
	               (uint64_t)deadline.tv_nsec;
	bool late = false;
	int err;

	bm_sendbatch_flush(); /* never sleep on a deferred send */
	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (!d->finished &&
		       pthread_cond_timedwait(&d->cond, &d->lock, &deadline) !=
		       ETIMEDOUT)
			;
		if (d->finished || !p)
			break;
		if (p->streak && !late)
			streak_late(p->streak, t0);
		late = true;
		if (!p->slow_not_hung(p, t0))
			break;
		deadline = bm_deadline_ms(CLOCK_MONOTONIC,
		                          BM_PATIENCE_RECHECK_MS);
	}
	if (p && p->streak) {
		/* late by when it finished, not by when it was looked at (one
		 * of several sent together is looked at after the others);
		 * one in time ends the streak unless another sent with it
		 * (or after it) ended late */
		struct bm_wait_streak *s = p->streak;
		if (!d->finished) {
			s->since_ns = 0;
		} else if (d->done_ns <= due) {
			if (s->last_ns < t0)
				s->since_ns = 0;
		} else {
			streak_late(s, t0);
			if (d->done_ns > s->last_ns)
				s->last_ns = d->done_ns;
		}
	}
	if (!d->finished) {
		err = -ETIMEDOUT;
		d->abandoned = true;
		atomic_fetch_add(&d->be->detached, 1);
	} else {
		err = d->result;
		if (err == 0 && d->r.op == BM_BOP_READ && d->r.length)
			memcpy(buf, d->bounce, d->r.length);
	}
	detached_put_locked(d);
	return err;
}

int bm_backend_io_wait_patient(struct bm_backend *be, enum bm_bop op,
                               void *buf, uint32_t len, uint64_t off,
                               uint32_t flags, long timeout_ms,
                               const struct bm_patience *p)
{
	struct detached *d;
	int err;

	if (timeout_ms <= 0)
		return bm_backend_io_wait(be, op, buf, len, off, flags);
	uint64_t t0 = bm_now_ns();
	d = detached_start(be, op, buf, len, off, flags, &err);
	if (!d)
		return err;
	return detached_finish(d, buf,
	                       bm_deadline_ms(CLOCK_MONOTONIC, timeout_ms), t0,
	                       p);
}

void bm_backend_io_wait_all(struct bm_wait_op *ops, int n, long timeout_ms)
{
	struct detached *d[BM_WAIT_ALL_MAX];

	if (timeout_ms <= 0) { /* no deadline: one after another is the same */
		for (int i = 0; i < n; i++)
			ops[i].result = bm_backend_io_wait(ops[i].be, ops[i].op,
			                                   ops[i].buf, ops[i].len,
			                                   ops[i].off, ops[i].flags);
		return;
	}
	for (int base = 0; base < n; base += BM_WAIT_ALL_MAX) {
		int k = n - base < BM_WAIT_ALL_MAX ? n - base : BM_WAIT_ALL_MAX;
		uint64_t t0 = bm_now_ns();
		struct timespec deadline = bm_deadline_ms(CLOCK_MONOTONIC,
		                                          timeout_ms);
		for (int i = 0; i < k; i++) {
			struct bm_wait_op *o = &ops[base + i];
			d[i] = detached_start(o->be, o->op, o->buf, o->len, o->off,
			                      o->flags, &o->result);
		}
		/* once a request to a backend is given up, the others sent
		 * with it to the same one end at the deadline (no patience:
		 * it is being given up; and its streak is not restarted) */
		const struct bm_patience *gave_up[BM_WAIT_ALL_MAX];
		int ngave = 0;
		for (int i = 0; i < k; i++) {
			struct bm_wait_op *o = &ops[base + i];
			const struct bm_patience *p = o->patience;
			for (int g = 0; g < ngave && p; g++)
				if (gave_up[g] == p)
					p = NULL;
			if (!d[i])
				continue;
			o->result = detached_finish(d[i], o->buf, deadline, t0,
			                            p);
			if (o->result == -ETIMEDOUT && o->patience &&
			    ngave < BM_WAIT_ALL_MAX)
				gave_up[ngave++] = o->patience;
		}
	}
}

/* An allocation question that may outlive its asker (refs as above). */
struct extent_wait {
	struct bm_extent_req r;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;
	int result;
	int refs;          /* lock */
	bool abandoned;    /* lock: the asker gave up (be->detached counts it:
	                      a close does not wait for it) */
	struct bm_backend *be;
};

static void extent_put_locked(struct extent_wait *x)
{
	if (--x->refs > 0) {
		pthread_mutex_unlock(&x->lock);
		return;
	}
	pthread_mutex_unlock(&x->lock);
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->cond);
	free(x);
}

static void extent_done(struct bm_extent_req *r, int result)
{
	struct extent_wait *x = r->opaque;

	pthread_mutex_lock(&x->lock);
	x->result = result;
	x->finished = true;
	if (x->abandoned)
		atomic_fetch_sub(&x->be->detached, 1);
	pthread_cond_signal(&x->cond);
	extent_put_locked(x);
}

int bm_backend_extent(struct bm_backend *be, uint64_t off, uint64_t len,
                      long timeout_ms, uint64_t *run, bool *zero)
{
	struct extent_wait *x;
	struct timespec deadline;
	int err;

	*run = len;
	*zero = false;
	if (!be->ops->extent || len == 0)
		return 0;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	pthread_mutex_init(&x->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&x->cond, &ca);
	pthread_condattr_destroy(&ca);
	x->refs = 2;
	x->be = be;
	x->r = (struct bm_extent_req){.offset = off, .length = len,
	                              .done = extent_done, .opaque = x};
	err = be->ops->extent(be, &x->r);
	if (err < 0) {
		pthread_mutex_lock(&x->lock);
		x->refs--;
		extent_put_locked(x);
		return err;
	}
	deadline = bm_deadline_ms(CLOCK_MONOTONIC,
	                          timeout_ms > 0 ? timeout_ms : 3600000L);
	bm_sendbatch_flush(); /* never sleep on a deferred send */
	pthread_mutex_lock(&x->lock);
	while (!x->finished &&
	       pthread_cond_timedwait(&x->cond, &x->lock, &deadline) != ETIMEDOUT)
		;
	if (!x->finished) {
		err = -ETIMEDOUT;
		x->abandoned = true;
		atomic_fetch_add(&be->detached, 1);
	} else {
		err = x->result;
		if (err == 0 && x->r.run >= 1 && x->r.run <= len) {
			*run = x->r.run;
			*zero = x->r.zero;
		}
	}
	extent_put_locked(x);
	return err;
}
