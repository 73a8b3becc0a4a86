/* Shared/exclusive range holds; see rangelock.h for why they exist. */
#include "rangelock.h"

static bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

void bm_rangelock_init(struct bm_rangelock *rl)
{
	pthread_mutex_init(&rl->lock, NULL);
	pthread_cond_init(&rl->cond, NULL);
	rl->shared = NULL;
	rl->excl_held = false;
}

void bm_rangelock_destroy(struct bm_rangelock *rl)
{
	pthread_mutex_destroy(&rl->lock);
	pthread_cond_destroy(&rl->cond);
}

void bm_rangelock_shared(struct bm_rangelock *rl, struct bm_range_hold *h,
                         uint64_t start, uint64_t len)
{
	h->start = start;
	h->end = start + (len ? len : 1);
	pthread_mutex_lock(&rl->lock);
	while (rl->excl_held &&
	       overlaps(h->start, h->end, rl->excl_start, rl->excl_end))
		pthread_cond_wait(&rl->cond, &rl->lock);
	h->prev = NULL;
	h->next = rl->shared;
	if (rl->shared)
		rl->shared->prev = h;
	rl->shared = h;
	pthread_mutex_unlock(&rl->lock);
}

void bm_rangelock_shared_release(struct bm_rangelock *rl,
                                 struct bm_range_hold *h)
{
	pthread_mutex_lock(&rl->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		rl->shared = h->next;
	if (h->next)
		h->next->prev = h->prev;
	if (rl->excl_held)
		pthread_cond_broadcast(&rl->cond);
	pthread_mutex_unlock(&rl->lock);
}

static bool shared_overlap(struct bm_rangelock *rl)
{
	for (struct bm_range_hold *h = rl->shared; h; h = h->next)
		if (overlaps(h->start, h->end, rl->excl_start, rl->excl_end))
			return true;
	return false;
}

void bm_rangelock_exclusive(struct bm_rangelock *rl, uint64_t start,
                            uint64_t len)
{
	pthread_mutex_lock(&rl->lock);
	while (rl->excl_held)
		pthread_cond_wait(&rl->cond, &rl->lock);
	rl->excl_held = true;
	rl->excl_start = start;
	rl->excl_end = start + len;
	while (shared_overlap(rl))
		pthread_cond_wait(&rl->cond, &rl->lock);
	pthread_mutex_unlock(&rl->lock);
}

void bm_rangelock_exclusive_release(struct bm_rangelock *rl)
{
	pthread_mutex_lock(&rl->lock);
	rl->excl_held = false;
	pthread_cond_broadcast(&rl->cond);
	pthread_mutex_unlock(&rl->lock);
}
