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
 * warmest), linked through their first bytes.  The pool never grows the
 * memory in use: what is in use is bounded by the callers (the NBD
 * server's bytes-in-flight budget, the read-ahead's cap); the pool only
 * keeps what they gave back, at most BM_BUFPOOL_IDLE_MAX bytes over all
 * classes, and releases the rest to the system at once.  Classes of 128 KiB
 * and more are mapped directly (mmap), so that a released buffer goes back
 * to the system instead of fragmenting malloc's arenas.
 *
 * One mutex, held for a list push or pop: a few tens of thousands of
 * operations a second at most.  Under AddressSanitizer an idle buffer is
 * poisoned (but for its link), so a use after bm_buf_put is still caught.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/mman.h>

#include "blkmirror.h"
#include "bufpool.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define MIN_SHIFT 12
#define MAX_SHIFT 25                 /* 32 MiB = BM_MAX_IO */
#define MAP_SHIFT 17                 /* 128 KiB and up: mmap */
#define NCLASS (MAX_SHIFT - MIN_SHIFT + 1)

_Static_assert((1u << MAX_SHIFT) >= BM_MAX_IO, "a class for every request");

struct idle {
	struct idle *next;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct idle *free_list[NCLASS];
static uint64_t idle_bytes;

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

size_t bm_buf_capacity(size_t len)
{
	int k = class_of(len ? len : 1);

	return k < 0 ? 0 : class_size(k);
}

void *bm_buf_get(size_t len)
{
	int k = class_of(len ? len : 1);
	size_t size;
	struct idle *b;

	if (k < 0)
		return NULL;
	size = class_size(k);
	pthread_mutex_lock(&pool_lock);
	b = free_list[k];
	if (b) {
		free_list[k] = b->next;
		idle_bytes -= size;
	}
	pthread_mutex_unlock(&pool_lock);
	if (b) {
		UNPOISON(b, size);
		return b;
	}
	return system_alloc(size);
}

void bm_buf_put(void *buf, size_t len)
{
	int k = class_of(len ? len : 1);
	size_t size;
	bool kept = false;

	if (!buf || k < 0)
		return;
	size = class_size(k);
	pthread_mutex_lock(&pool_lock);
	if (idle_bytes + size <= BM_BUFPOOL_IDLE_MAX) {
		struct idle *b = buf;
		/* poisoned before it can be taken again (under the lock) */
		POISON((char *)buf + sizeof(struct idle),
		       size - sizeof(struct idle));
		b->next = free_list[k];
		free_list[k] = b;
		idle_bytes += size;
		kept = true;
	}
	pthread_mutex_unlock(&pool_lock);
	if (!kept)
		system_release(buf, size);
}

uint64_t bm_bufpool_idle_bytes(void)
{
	pthread_mutex_lock(&pool_lock);
	uint64_t n = idle_bytes;
	pthread_mutex_unlock(&pool_lock);
	return n;
}
