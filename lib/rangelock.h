/*
 * Range lock between client writes and the synchronization copy.
 *
 * Client writes take shared holds (overlapping writes never wait for each
 * other: NBD gives no order to overlapping requests in flight).  The sync
 * thread takes one exclusive window at a time: it waits for the shared holds
 * that overlap it, and new overlapping writes wait until it is released, so a
 * chunk copied from the source can never overwrite a newer client write on
 * the target.
 */
#ifndef BM_RANGELOCK_H
#define BM_RANGELOCK_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct bm_range_hold {
	uint64_t start, end;           /* [start, end) */
	struct bm_range_hold *prev, *next;
};

struct bm_rangelock {
	pthread_mutex_t lock;          /* protects everything below */
	pthread_cond_t cond;
	struct bm_range_hold *shared;  /* list of shared holds */
	bool excl_held;
	uint64_t excl_start, excl_end;
};

void bm_rangelock_init(struct bm_rangelock *rl);
void bm_rangelock_destroy(struct bm_rangelock *rl);
void bm_rangelock_shared(struct bm_rangelock *rl, struct bm_range_hold *h,
                         uint64_t start, uint64_t len);
void bm_rangelock_shared_release(struct bm_rangelock *rl,
                                 struct bm_range_hold *h);
void bm_rangelock_exclusive(struct bm_rangelock *rl, uint64_t start,
                            uint64_t len);
void bm_rangelock_exclusive_release(struct bm_rangelock *rl);

#endif
