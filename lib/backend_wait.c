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
	if (d->abandoned)
		atomic_fetch_sub(&d->be->detached, 1);
	pthread_cond_signal(&d->cond);
	detached_put_locked(d);
}

int bm_backend_io_wait_timeout(struct bm_backend *be, enum bm_bop op,
                               void *buf, uint32_t len, uint64_t off,
                               uint32_t flags, long timeout_ms)
{
	struct detached *d;
	struct timespec deadline;
	int err;

	if (timeout_ms <= 0)
		return bm_backend_io_wait(be, op, buf, len, off, flags);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	if (len && (op == BM_BOP_READ || op == BM_BOP_WRITE)) {
		if (posix_memalign(&d->bounce, 4096, len)) {
			free(d);
			return -ENOMEM;
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
	err = be->ops->submit(be, &d->r);
	if (err < 0) {
		pthread_mutex_lock(&d->lock);
		d->refs--; /* the completion's: it will not run */
		detached_put_locked(d);
		return err;
	}
	deadline = bm_deadline_ms(CLOCK_MONOTONIC, timeout_ms);
	pthread_mutex_lock(&d->lock);
	while (!d->finished &&
	       pthread_cond_timedwait(&d->cond, &d->lock, &deadline) != ETIMEDOUT)
		;
	if (!d->finished) {
		err = -ETIMEDOUT;
		d->abandoned = true;
		atomic_fetch_add(&be->detached, 1);
	} else {
		err = d->result;
		if (err == 0 && op == BM_BOP_READ && len)
			memcpy(buf, d->bounce, len);
	}
	detached_put_locked(d);
	return err;
}

/* An allocation question that may outlive its asker (refs as above). */
struct extent_wait {
	struct bm_extent_req r;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;
	int result;
	int refs;          /* lock */
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
	pthread_mutex_lock(&x->lock);
	while (!x->finished &&
	       pthread_cond_timedwait(&x->cond, &x->lock, &deadline) != ETIMEDOUT)
		;
	if (!x->finished) {
		err = -ETIMEDOUT;
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
