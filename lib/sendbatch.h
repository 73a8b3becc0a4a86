/*
 * Sends batched per thread: see sendbatch.c.
 */
#ifndef BM_SENDBATCH_H
#define BM_SENDBATCH_H
#include <stdbool.h>

/* What a deferred send runs when the batch is flushed: sends what its
 * object queued (never blocks), then drops the pin it took when
 * bm_sendbatch_defer said "first". */
typedef void (*bm_sendbatch_fn)(void *obj);

/* Opens a batch on this thread (nests: only the outermost close flushes). */
void bm_sendbatch_open(void);
/* Flushes, and closes this thread's batch. */
void bm_sendbatch_close(void);
/* Runs every deferred send of this thread's batch now (the batch stays
 * open).  Called before anything that may block, and cheap when there is
 * nothing deferred: a thread never sleeps with a send deferred. */
void bm_sendbatch_flush(void);
/*
 * Asks to send obj's queued output later, at this thread's next flush.
 * False: no batch is open here (or it is full): send now.  True: deferred;
 * *first says whether obj was not in the batch yet, in which case the
 * caller pins obj (keeps it alive) until fn runs.
 */
bool bm_sendbatch_defer(bm_sendbatch_fn fn, void *obj, bool *first);
/*
 * Which batch this thread is in: changes at every flush, so two calls that
 * return the same non-zero value saw no send go out between them.  0: no
 * batch is open (sends go out at once).
 */
unsigned bm_sendbatch_epoch(void);

#endif
