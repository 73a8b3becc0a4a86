/*
 * Range lock between client writes and the copies that must not race them
 * (the synchronization, repairs, a check).
 *
 * Client writes take shared holds (overlapping writes never wait for each
 * other: NBD gives no order to overlapping requests in flight).  A copier
 * takes exclusive holds: one waits for the shared holds that overlap it,
 * and new overlapping writes wait until it is released, so data copied from
 * a source can never overwrite a newer client write on the target.
 *
 * A copier may keep several exclusive holds at once (the sync keeps one per
 * chunk in flight).  An exclusive hold is "pending" from the moment it is
 * asked for (new overlapping writes already wait for it) and "granted"
 * once no overlapping shared hold and no overlapping granted exclusive
 * hold is left.  The plain form (bm_rangelock_excl_hold, the unit tests')
 * never waits for another pending hold: only for holds that are granted,
 * whose owners release them without taking any other hold first.
 *
 * Every copier of the engine asks politely (bm_rangelock_excl_try_hold):
 * it also waits for older pending holds that overlap, and gives up after
 * a while (the hold is then not taken).  The sync, which keeps many holds
 * and moves on, gives up after 100 ms and tends to its own chunks first,
 * so it never waits for a hold that waits for it, and a repair's or a
 * check's chunk pending before it is not starved by the copy walking
 * through.  A repair (recover.c) and a check (check.c) wait 200 ms first,
 * then give the range back for as long and ask again, each time twice as
 * long up to 5 s: a client write may keep a range for minutes (a long
 * zeroing in pieces), and every other write to that range would wait as
 * long behind a hold pending all that time.  A granted hold waits for
 * nothing; a pending one waits only for holds that end on their own
 * (writes, granted holds) or for older pending ones, which lead back to
 * the oldest: nobody deadlocks.  (The price: a check that catches up
 * with a copy of a slow component may give a chunk back before the
 * copy's holds on it end, and wait a pause more per chunk.)
 */
#ifndef BM_RANGELOCK_H
#define BM_RANGELOCK_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct bm_range_hold {
	uint64_t start, end;           /* [start, end) */
	bool granted;                  /* exclusive: no longer pending */
	struct bm_range_hold *prev, *next;
};

struct bm_rangelock {
	pthread_mutex_t lock;          /* protects everything below */
	pthread_cond_t cond;           /* a hold was released or shrunk */
	struct bm_range_hold *shared;  /* list of shared holds */
	struct bm_range_hold *excl;    /* exclusive holds, pending or granted */
};

void bm_rangelock_init(struct bm_rangelock *rl);
void bm_rangelock_destroy(struct bm_rangelock *rl);
void bm_rangelock_shared(struct bm_rangelock *rl, struct bm_range_hold *h,
                         uint64_t start, uint64_t len);
void bm_rangelock_shared_release(struct bm_rangelock *rl,
                                 struct bm_range_hold *h);

/* An exclusive hold on [start, start+len) in h (the caller's memory until
 * released); returns once granted, however long that takes (the unit
 * tests' form: the engine's copiers all ask politely, below). */
void bm_rangelock_excl_hold(struct bm_rangelock *rl, struct bm_range_hold *h,
                            uint64_t start, uint64_t len);
/* The polite form: true once granted; false (h not held) after
 * timeout_ms, or once *cancel is true (looked at every 100 ms; NULL:
 * never). */
bool bm_rangelock_excl_try_hold(struct bm_rangelock *rl,
                                struct bm_range_hold *h, uint64_t start,
                                uint64_t len, long timeout_ms,
                                const atomic_bool *cancel);
/* How long a repair or a check asks politely behind a client write: first
 * this long, then twice as long each time (bm_range_try_next), never more
 * than the last (rangelock.h's header says why). */
#define BM_RANGE_TRY_FIRST_MS 200
#define BM_RANGE_TRY_MAX_MS 5000
static inline long bm_range_try_next(long ms)
{
	return ms * 2 < BM_RANGE_TRY_MAX_MS ? ms * 2 : BM_RANGE_TRY_MAX_MS;
}
/* Shortens a granted hold to [start, start+len) (len <= its length). */
void bm_rangelock_excl_shrink(struct bm_rangelock *rl,
                              struct bm_range_hold *h, uint64_t len);
/* Releases it; any thread may (the sync releases from completions). */
void bm_rangelock_excl_release(struct bm_rangelock *rl,
                               struct bm_range_hold *h);

#endif
