/*
 * Data buffers reused warm.
 *
 * Why.  A buffer allocated per request is fresh memory: the kernel clears
 * every page of it at the first touch (clear_page, page faults) and it is
 * cold in the caches, and freeing it gives it back (munmap, or an arena
 * trim) so the next request pays again.  On a fast stream that was about a
 * third of the server's CPU.  A buffer given back here is kept and handed
 * to the next request of its size class, still mapped and usually still in
 * the caches.
 *
 * How.  Size classes are powers of two from 4 KiB up to BM_MAX_IO; a
 * request of len bytes takes the smallest class that holds it.  Each class
 * keeps a LIFO list of idle buffers (the most recently used first: the
 * warmest), linked through their first bytes.  A pool never grows the
 * memory in use: what is in use is bounded by the callers (the NBD
 * server's bytes-in-flight budget, the read-ahead's cap); a pool only
 * keeps what they gave back.  Classes of 128 KiB and more are mapped
 * directly (mmap), so that a released buffer goes back to the system
 * instead of fragmenting malloc's arenas.
 *
 * How much is kept idle: at most BM_BUFPOOL_IDLE_MAX bytes over all
 * classes; the rest goes back to the system at once.  A request above
 * BM_MAX_IO is mapped for itself and never kept.  (The read-ahead's
 * chunks have memory of their own: chunkmem.c.)
 *
 * One mutex per pool, held for a list push or pop: a few tens of thousands
 * of operations a second at most.  Under AddressSanitizer an idle buffer
 * is poisoned (but for its link), so a use after the put is still caught.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>

#include "blkmirror.h"
#include "bufpool.h"

#include "asan_poison.h"

#define MIN_SHIFT 12
#define MAX_SHIFT 25                 /* 32 MiB = BM_MAX_IO */
#define MAP_SHIFT 17                 /* 128 KiB and up: mmap */
#define NCLASS (MAX_SHIFT - MIN_SHIFT + 1)

struct bm_bufpool {
	pthread_mutex_t lock;
	void *free_list[NCLASS];
	uint64_t idle_bytes;     /* kept for reuse */
	uint64_t in_use;         /* handed out (capacities), not given back */
	uint64_t idle_max;       /* kept idle at most */
};

_Static_assert((1u << MAX_SHIFT) >= BM_MAX_IO, "a class for every request");

struct idle {
	struct idle *next;
};

static struct bm_bufpool server_pool = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.idle_max = BM_BUFPOOL_IDLE_MAX,
};

/* The class of len (its index), or -1 above the largest class. */
static int class_of(size_t len)
{
	int shift = MIN_SHIFT;

	while (shift <= MAX_SHIFT && ((size_t)1 << shift) < len)
		shift++;
	return shift > MAX_SHIFT ? -1 : shift - MIN_SHIFT;
}

static size_t class_size(int k)
{
	return (size_t)1 << (k + MIN_SHIFT);
}

static void *system_alloc(size_t size)
{
	void *p;

	if (size >= ((size_t)1 << MAP_SHIFT)) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	return posix_memalign(&p, 4096, size) ? NULL : p;
}

static void system_release(void *p, size_t size)
{
	if (size >= ((size_t)1 << MAP_SHIFT))
		munmap(p, size);
	else
		free(p);
}

/* Takes an idle buffer of class k (lock held); NULL if there is none. */
static void *pop_idle(struct bm_bufpool *p, int k)
{
	struct idle *b = p->free_list[k];

	if (b) {
		p->free_list[k] = b->next;
		p->idle_bytes -= class_size(k);
		UNPOISON(b, sizeof(*b));
	}
	return b;
}

static void push_idle(struct bm_bufpool *p, void *buf, int k)
{
	struct idle *b = buf;
	size_t size = class_size(k);

	/* poisoned before it can be taken again (under the lock) */
	POISON((char *)buf + sizeof(struct idle), size - sizeof(struct idle));
	b->next = p->free_list[k];
	p->free_list[k] = b;
	p->idle_bytes += size;
}

/* A buffer of len's class from pool p: an idle one (the warmest) or a
 * fresh one; *cap gets its capacity.  Above every class: a mapping of its
 * own, never kept.  NULL: no memory. */
static void *pool_get(struct bm_bufpool *p, size_t len, size_t *cap)
{
	int k = class_of(len ? len : 1);
	size_t size;
	void *b;

	if (k < 0) {
		size = (len + 4095) & ~(size_t)4095;
		b = system_alloc(size);
		*cap = size;
		return b;
	}
	size = class_size(k);
	pthread_mutex_lock(&p->lock);
	b = pop_idle(p, k);
	p->in_use += size;
	pthread_mutex_unlock(&p->lock);
	if (b) {
		UNPOISON(b, size);
		*cap = size;
		return b;
	}
	b = system_alloc(size);
	if (!b) {
		pthread_mutex_lock(&p->lock);
		p->in_use -= size;
		pthread_mutex_unlock(&p->lock);
		return NULL;
	}
	*cap = size;
	return b;
}

/* Gives back a buffer from pool_get with the capacity it reported: kept
 * idle while the pool's idle bytes stay within idle_max. */
static void pool_put(struct bm_bufpool *p, void *buf, size_t cap)
{
	int k = class_of(cap ? cap : 1);
	bool kept = false;

	if (!buf)
		return;
	if (k < 0 || class_size(k) != cap) {
		system_release(buf, cap);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->in_use -= cap;
	if (p->idle_bytes + cap <= p->idle_max) {
		push_idle(p, buf, k);
		kept = true;
	}
	pthread_mutex_unlock(&p->lock);
	if (!kept)
		system_release(buf, cap);
}

/* ---- the server's request buffers ---------------------------------- */

size_t bm_buf_capacity(size_t len)
{
	int k = class_of(len ? len : 1);

	return k < 0 ? 0 : class_size(k);
}

void *bm_buf_get(size_t len)
{
	size_t cap;

	if (class_of(len ? len : 1) < 0)
		return NULL;
	return pool_get(&server_pool, len, &cap);
}

void bm_buf_put(void *buf, size_t len)
{
	size_t cap = bm_buf_capacity(len);

	if (buf && cap)
		pool_put(&server_pool, buf, cap);
}

uint64_t bm_bufpool_idle_bytes(void)
{
	pthread_mutex_lock(&server_pool.lock);
	uint64_t n = server_pool.idle_bytes;
	pthread_mutex_unlock(&server_pool.lock);
	return n;
}
