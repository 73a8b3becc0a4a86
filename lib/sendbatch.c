/*
 * Sends batched per thread.
 *
 * Why.  On a fast disk the cost of a small request is mostly system calls
 * and the wake-ups they cause: every sendmsg to a component or to a client
 * wakes the process at the other end.  A thread that handles several
 * requests in a row (the NBD server's reader after one read brought several
 * requests; a component's receiver after one read brought several replies)
 * would otherwise send one message per request to each peer.  With a
 * batch open, such a send only queues its frame and registers its object
 * here; the thread's next flush sends each object's queue with one call,
 * so a peer is woken once per batch instead of once per request.
 *
 * The rule that keeps this safe: a thread never sleeps with a send
 * deferred.  Whoever opens a batch flushes it before every point where it
 * may block (reading its socket, waiting for budget, submitting something
 * that may wait), and the waits that any thread may reach while a batch
 * is open (backend_wait.c, the range lock, the bitmap) flush first too, so
 * nobody waits for a reply to a request that has not been sent.  The
 * object's own lock protects its queue as before; a batch only decides
 * when the send happens, never what is sent.  An object stays alive until
 * its deferred send has run: the caller pins it when told "first", and the
 * send function drops the pin.
 *
 * At most BATCH_MAX objects per batch; past that, sends go out at once.
 */
#include "sendbatch.h"

#include <stddef.h>

#define BATCH_MAX 16

struct batch {
	int depth;
	int n;
	bool flushing;
	struct {
		bm_sendbatch_fn fn;
		void *obj;
	} item[BATCH_MAX];
};

static __thread struct batch batch;
static __thread unsigned batch_epoch; /* bumped by every flush */

void bm_sendbatch_open(void)
{
	batch.depth++;
}

void bm_sendbatch_flush(void)
{
	batch_epoch++;
	if (batch.n == 0 || batch.flushing)
		return;
	/* a send may complete something that defers again: those go out at
	 * once (flushing), never into the list being walked */
	batch.flushing = true;
	for (int i = 0; i < batch.n; i++)
		batch.item[i].fn(batch.item[i].obj);
	batch.n = 0;
	batch.flushing = false;
}

void bm_sendbatch_close(void)
{
	if (batch.depth == 0)
		return;
	if (--batch.depth == 0)
		bm_sendbatch_flush();
}

unsigned bm_sendbatch_epoch(void)
{
	return batch.depth > 0 && !batch.flushing ? (batch_epoch << 1) | 1u : 0;
}

bool bm_sendbatch_defer(bm_sendbatch_fn fn, void *obj, bool *first)
{
	if (batch.depth == 0 || batch.flushing)
		return false;
	for (int i = 0; i < batch.n; i++)
		if (batch.item[i].obj == obj && batch.item[i].fn == fn) {
			*first = false;
			return true;
		}
	if (batch.n == BATCH_MAX)
		return false;
	batch.item[batch.n].fn = fn;
	batch.item[batch.n].obj = obj;
	batch.n++;
	*first = true;
	return true;
}
