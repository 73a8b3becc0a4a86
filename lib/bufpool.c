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
 * How much is kept idle: two rules.
 *  - The server's request buffers (bm_buf_get, one pool for the process):
 *    at most BM_BUFPOOL_IDLE_MAX bytes over all classes; the rest goes
 *    back to the system at once.
 *  - The peak rule (a struct bm_bufpool of its own: the read-ahead's
 *    chunks, one per mirror): idle plus in use never exceeds the most
 *    that was in use since the pool was last trimmed, so reuse never
 *    raises the memory held above what the users needed at once anyway
 *    (the peak RSS stays where allocation per chunk left it), while a
 *    steady user never maps again.  A request of a class with no idle
 *    buffer takes one of the next class if the caller accepts that much
 *    (a chunk size that changed, or differs per component: a warm buffer
 *    at most twice the size beats fresh memory); else the pool maps a new
 *    one and gives back idle buffers, the smallest first, until idle plus
 *    in use is within the peak again.  The user trims the pool when it
 *    goes idle (bm_bufpool_trim: every idle buffer back to the system).
 *    A request above BM_MAX_IO is mapped for itself and never kept.
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
_Static_assert(NCLASS == BM_BUFPOOL_CLASSES, "bufpool.h's class count");

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

/* Moves idle buffers, the smallest first, to out[class] until idle plus
 * in use is at most `keep` (lock held); release_shed frees them after. */
static void shed_idle(struct bm_bufpool *p, uint64_t keep,
                      struct idle *out[NCLASS])
{
	for (int k = 0; k < NCLASS; k++) {
		while (p->free_list[k] && p->in_use + p->idle_bytes > keep) {
			struct idle *b = pop_idle(p, k);
			b->next = out[k];
			out[k] = b;
		}
	}
}

static void release_shed(struct idle *out[NCLASS])
{
	for (int k = 0; k < NCLASS; k++)
		while (out[k]) {
			struct idle *b = out[k];
			out[k] = b->next;
			/* a later mapping may get the same addresses */
			UNPOISON(b, class_size(k));
			system_release(b, class_size(k));
		}
}

static void count_in_use(struct bm_bufpool *p, size_t size)
{
	p->in_use += size;
	if (p->in_use > p->peak)
		p->peak = p->in_use;
}

void bm_bufpool_init(struct bm_bufpool *p)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
}

void *bm_bufpool_get(struct bm_bufpool *p, size_t len, size_t max_cap,
                     size_t *cap)
{
	int k = class_of(len ? len : 1);
	struct idle *shed[NCLASS] = {0};
	size_t size;
	void *b;

	if (k < 0) { /* above every class: a mapping of its own, never kept */
		size = (len + 4095) & ~(size_t)4095;
		b = system_alloc(size);
		if (!b)
			return NULL;
		pthread_mutex_lock(&p->lock);
		count_in_use(p, size);
		p->maps++;
		pthread_mutex_unlock(&p->lock);
		*cap = size;
		return b;
	}
	size = class_size(k);
	pthread_mutex_lock(&p->lock);
	b = pop_idle(p, k);
	if (!b && k + 1 < NCLASS && class_size(k + 1) <= max_cap &&
	    (b = pop_idle(p, k + 1)))
		size = class_size(k + 1);
	count_in_use(p, size);
	if (!b) {
		p->maps++;
		if (!p->idle_max)
			shed_idle(p, p->peak, shed);
	}
	pthread_mutex_unlock(&p->lock);
	if (b) {
		UNPOISON(b, size);
		*cap = size;
		return b;
	}
	release_shed(shed);
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

void bm_bufpool_put(struct bm_bufpool *p, void *buf, size_t cap)
{
	int k = class_of(cap ? cap : 1);
	bool kept = false;

	if (!buf)
		return;
	pthread_mutex_lock(&p->lock);
	p->in_use -= cap;
	if (k >= 0 && class_size(k) == cap &&
	    (p->idle_max ? p->idle_bytes + cap <= p->idle_max
	                 : p->in_use + p->idle_bytes + cap <= p->peak)) {
		push_idle(p, buf, k);
		kept = true;
	}
	pthread_mutex_unlock(&p->lock);
	if (!kept)
		system_release(buf, cap);
}

void bm_bufpool_trim(struct bm_bufpool *p)
{
	struct idle *shed[NCLASS] = {0};

	pthread_mutex_lock(&p->lock);
	shed_idle(p, 0, shed);
	p->peak = p->in_use;
	pthread_mutex_unlock(&p->lock);
	release_shed(shed);
}

void bm_bufpool_destroy(struct bm_bufpool *p)
{
	bm_bufpool_trim(p);
	pthread_mutex_destroy(&p->lock);
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
	return bm_bufpool_get(&server_pool, len, 0, &cap);
}

void bm_buf_put(void *buf, size_t len)
{
	size_t cap = bm_buf_capacity(len);

	if (buf && cap)
		bm_bufpool_put(&server_pool, buf, cap);
}

uint64_t bm_bufpool_idle_bytes(void)
{
	pthread_mutex_lock(&server_pool.lock);
	uint64_t n = server_pool.idle_bytes;
	pthread_mutex_unlock(&server_pool.lock);
	return n;
}
