/* Shared/exclusive range holds; see rangelock.h for why they exist and why
 * they cannot deadlock. */
#include <errno.h>

#include "deadline.h"
#include "rangelock.h"
#include "sendbatch.h"

static bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

static void link_front(struct bm_range_hold **list, struct bm_range_hold *h)
{
	h->prev = NULL;
	h->next = *list;
	if (*list)
		(*list)->prev = h;
	*list = h;
}

static void unlink_hold(struct bm_range_hold **list, struct bm_range_hold *h)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		*list = h->next;
	if (h->next)
		h->next->prev = h->prev;
}

void bm_rangelock_init(struct bm_rangelock *rl)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&rl->lock, NULL);
	/* timed waits on the monotonic clock: a step of the wall clock
	 * neither stretches nor cuts them */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rl->cond, &ca);
	pthread_condattr_destroy(&ca);
	rl->shared = NULL;
	rl->excl = NULL;
}

void bm_rangelock_destroy(struct bm_rangelock *rl)
{
	pthread_mutex_destroy(&rl->lock);
	pthread_cond_destroy(&rl->cond);
}

/* Any exclusive hold, pending or granted, over [start, end)? */
static bool excl_over(struct bm_rangelock *rl, uint64_t start, uint64_t end)
{
	for (struct bm_range_hold *e = rl->excl; e; e = e->next)
		if (overlaps(start, end, e->start, e->end))
			return true;
	return false;
}

void bm_rangelock_shared(struct bm_rangelock *rl, struct bm_range_hold *h,
                         uint64_t start, uint64_t len)
{
	h->start = start;
	h->end = start + (len ? len : 1);
	h->granted = true;
	bm_sendbatch_flush(); /* never sleep on a deferred send */
	pthread_mutex_lock(&rl->lock);
	while (excl_over(rl, h->start, h->end))
		pthread_cond_wait(&rl->cond, &rl->lock);
	link_front(&rl->shared, h);
	pthread_mutex_unlock(&rl->lock);
}

void bm_rangelock_shared_release(struct bm_rangelock *rl,
                                 struct bm_range_hold *h)
{
	pthread_mutex_lock(&rl->lock);
	unlink_hold(&rl->shared, h);
	if (rl->excl)
		pthread_cond_broadcast(&rl->cond);
	pthread_mutex_unlock(&rl->lock);
}

/* May h be granted: no overlapping shared hold, no overlapping granted
 * exclusive one?  Caller holds rl->lock. */
static bool grantable(struct bm_rangelock *rl, struct bm_range_hold *h)
{
	for (struct bm_range_hold *s = rl->shared; s; s = s->next)
		if (overlaps(h->start, h->end, s->start, s->end))
			return false;
	for (struct bm_range_hold *e = rl->excl; e; e = e->next)
		if (e != h && e->granted && overlaps(h->start, h->end, e->start,
		                                     e->end))
			return false;
	return true;
}

void bm_rangelock_excl_hold(struct bm_rangelock *rl, struct bm_range_hold *h,
                            uint64_t start, uint64_t len)
{
	h->start = start;
	h->end = start + (len ? len : 1);
	h->granted = false;
	bm_sendbatch_flush(); /* never sleep on a deferred send */
	pthread_mutex_lock(&rl->lock);
	link_front(&rl->excl, h);
	while (!grantable(rl, h))
		pthread_cond_wait(&rl->cond, &rl->lock);
	h->granted = true;
	pthread_mutex_unlock(&rl->lock);
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* No older pending exclusive hold over h (older ones are further down the
 * list: holds are linked at the front).  Caller holds rl->lock. */
static bool no_older_pending(struct bm_range_hold *h)
{
	for (struct bm_range_hold *e = h->next; e; e = e->next)
		if (!e->granted && overlaps(h->start, h->end, e->start, e->end))
			return false;
	return true;
}

bool bm_rangelock_excl_try_hold(struct bm_rangelock *rl,
                                struct bm_range_hold *h, uint64_t start,
                                uint64_t len, long timeout_ms,
                                const atomic_bool *cancel)
{
	struct timespec deadline = bm_deadline_ms(CLOCK_MONOTONIC, timeout_ms);
	bool ok;

	h->start = start;
	h->end = start + (len ? len : 1);
	h->granted = false;
	bm_sendbatch_flush(); /* never sleep on a deferred send */
	pthread_mutex_lock(&rl->lock);
	link_front(&rl->excl, h);
	for (;;) {
		ok = grantable(rl, h) && no_older_pending(h);
		if (ok || (cancel && atomic_load(cancel)))
			break;
		/* with a cancel, wake every 100 ms to look at it */
		struct timespec soon = bm_deadline_ms(CLOCK_MONOTONIC, 100);
		bool last = !cancel || !ts_before(&soon, &deadline);
		if (pthread_cond_timedwait(&rl->cond, &rl->lock,
		                           last ? &deadline : &soon) == ETIMEDOUT &&
		    last) {
			ok = grantable(rl, h) && no_older_pending(h);
			break;
		}
	}
	if (ok) {
		h->granted = true;
	} else {
		unlink_hold(&rl->excl, h);
		pthread_cond_broadcast(&rl->cond); /* writes waited for it */
	}
	pthread_mutex_unlock(&rl->lock);
	return ok;
}

void bm_rangelock_excl_shrink(struct bm_rangelock *rl,
                              struct bm_range_hold *h, uint64_t len)
{
	pthread_mutex_lock(&rl->lock);
	if (len && h->start + len < h->end) {
		h->end = h->start + len;
		pthread_cond_broadcast(&rl->cond);
	}
	pthread_mutex_unlock(&rl->lock);
}

void bm_rangelock_excl_release(struct bm_rangelock *rl,
                               struct bm_range_hold *h)
{
	pthread_mutex_lock(&rl->lock);
	unlink_hold(&rl->excl, h);
	pthread_cond_broadcast(&rl->cond);
	pthread_mutex_unlock(&rl->lock);
}
