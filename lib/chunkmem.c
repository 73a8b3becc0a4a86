/*
 * Memory for the read-ahead's chunks, kept warm.
 *
 * Why.  Fresh memory is the dearest thing a fast stream touches: every
 * page costs a fault and a clear, and in a virtual machine the host's
 * first touch too.  On a QD1 stream from two 400 MiB/s disks a server
 * that mapped its chunk buffers afresh spent half its CPU in clear_page
 * (2.0 s per GiB against 0.45 warm).  Two things made it map afresh even
 * with a pool of size classes: chunk sizes change while the read-ahead
 * measures (2, 4, 8 MiB...; differently per component), so every step
 * needed buffers of a new class; and a pool emptied when the streams went
 * idle made the next stream pay again.
 *
 * How.  Every buffer reserves BM_CHUNKMEM_SPAN of address space (no
 * memory until touched) and remembers how far it has been touched.  A
 * chunk of any size takes an idle buffer, the one touched just far enough
 * (else the one touched furthest), so a chunk size that doubles touches
 * only the difference, and the pages a stream touched serve the next; but
 * not one touched more than twice as far as the chunk needs while there
 * is room for a fresh one (its user counts a buffer by how far it is
 * touched, so small chunks in large buffers would shrink the window).
 * What counts is what is resident (touched): it is kept within the limit
 * (the read-ahead's memory cap) by unmapping idle buffers, the least
 * touched first, before touching more; the user counts a buffer in use
 * by how far it is touched (bm_chunkbuf.touched), not by its chunk.  When the read-ahead goes idle
 * the idle buffers are given to the kernel with MADV_FREE (taken only
 * when it needs memory; until then still there, and a write makes a page
 * ours again: no fault on bare metal, ~8 us a page under a hypervisor
 * that shadows page tables, as this VM's does); they stay mapped until
 * the limit falls (bm_chunkmem_limit) or the mirror closes.
 * bm_chunkmem_warm touches idle buffers ahead of use (readahead.c's
 * tick, before the first stream), through the kernel (touch_by_kernel:
 * the kernel's first copy into a page we wrote ourselves still costs
 * ~6 us under this VM's hypervisor).  A buffer that must grow when the
 * limit has no room takes the pages of idle ones (move_pages: mremap, no
 * copy) rather than giving pages to the kernel and touching others.
 * What a page's first touch costs on this VM (2026-12-01, a 32 MiB
 * test): fresh 15 us, moved by mremap 7-8 us, written after MADV_FREE
 * 8 us, warm 0.03 us.  The read-ahead writes a chunk's
 * whole length (the component's read) before anything reads it, so a
 * page the kernel took back (read as zeros) is never served.
 *
 * One mutex, held for a list walk of at most a few dozen buffers per
 * chunk (chunks are megabytes).  Under AddressSanitizer an idle buffer is
 * poisoned, so a use after the put is caught.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chunkmem.h"

#include "asan_poison.h"

#ifndef MADV_FREE
#define MADV_FREE 8
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

static size_t page_up(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

void bm_chunkmem_init(struct bm_chunkmem *p)
{
	memset(p, 0, sizeof(*p));
	p->limit = UINT64_MAX;
	pthread_mutex_init(&p->lock, NULL);
}

static void unlink_idle(struct bm_chunkmem *p, struct bm_chunkbuf *b)
{
	struct bm_chunkbuf **pp = &p->idle;

	while (*pp != b)
		pp = &(*pp)->next;
	*pp = b->next;
	b->next = NULL;
	p->idle_resident -= b->touched;
}

/* Moves idle buffers, the least touched first, to *out until resident
 * plus `more` is within the limit (lock held). */
static void shed_idle(struct bm_chunkmem *p, uint64_t more, uint64_t limit,
                      struct bm_chunkbuf **out)
{
	while (p->idle && p->resident + more > limit) {
		struct bm_chunkbuf *least = p->idle;
		for (struct bm_chunkbuf *b = p->idle; b; b = b->next)
			if (b->touched < least->touched)
				least = b;
		unlink_idle(p, least);
		p->resident -= least->touched;
		least->next = *out;
		*out = least;
	}
}

static void unmap_list(struct bm_chunkbuf *list)
{
	while (list) {
		struct bm_chunkbuf *b = list;
		list = b->next;
		/* a later mapping may get the same addresses */
		UNPOISON(b->base, b->span);
		munmap(b->base, b->span);
		free(b);
	}
}

/* b must grow by `grow` bytes and the limit has no room: moves touched
 * pages from the ends of idle buffers (the least touched first) to b's
 * end instead of touching fresh ones and unmapping idle ones, which
 * would hand pages to the kernel and take others back (on a VM whose free
 * memory goes to the host, each a host fault: ~15 us).  mremap moves the
 * page table entries, not the data; MREMAP_DONTUNMAP leaves the donor's
 * range mapped and empty.  A move's source must lie in one mapping (a
 * kernel before 6.12 checks that only after it has unmapped the
 * destination, and fails), so only a buffer that never received pages
 * donates: its touched bytes are one mapping from its base.  Each move
 * splits mappings, so a buffer takes part in at most BM_CHUNKMEM_MOVES
 * of them (then it grows by fresh pages); a donor left with nothing
 * touched goes to *shed (unmapped: its mappings start over).  If a move
 * fails, the destination is mapped again (the kernel may have unmapped
 * it); *broken when even that failed: b has a hole and must not be used.
 * Returns the bytes moved (lock held). */
static size_t move_pages(struct bm_chunkmem *p, struct bm_chunkbuf *b,
                         size_t grow, uint64_t limit, struct bm_chunkbuf **shed,
                         bool *broken)
{
	size_t moved = 0;

	while (grow > moved && !p->no_move && b->moves < BM_CHUNKMEM_MOVES &&
	       p->resident + (grow - moved) > limit) {
		struct bm_chunkbuf *d = NULL;
		for (struct bm_chunkbuf *i = p->idle; i; i = i->next)
			if (i->touched && !i->received &&
			    i->moves < BM_CHUNKMEM_MOVES &&
			    (!d || i->touched < d->touched))
				d = i;
		if (!d)
			break;
		size_t k = grow - moved < d->touched ? grow - moved : d->touched;
		char *src = (char *)d->base + d->touched - k;
		char *dst = (char *)b->base + b->touched;
		if (mremap(src, k, k, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
		           dst) == MAP_FAILED) {
			p->no_move = true; /* (a kernel before 5.7, or no memory) */
			if (mmap(dst, k, PROT_READ | PROT_WRITE,
			         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			                 MAP_FIXED, -1, 0) == MAP_FAILED)
				*broken = true;
			break;
		}
		d->touched -= k;
		d->moves++;
		p->idle_resident -= k;
		b->touched += k;
		b->moves++;
		b->received = true;
		moved += k;
		if (!d->touched) {
			unlink_idle(p, d);
			d->next = *shed;
			*shed = d;
		}
	}
	p->moved += moved;
	return moved;
}

/* A new buffer: span bytes of address space, `touched` of them counted
 * as touched (the caller touches them); NULL when the system has none. */
static struct bm_chunkbuf *map_buffer(size_t span, size_t touched)
{
	struct bm_chunkbuf *b = calloc(1, sizeof(*b));
	void *base = b ? mmap(NULL, span, PROT_READ | PROT_WRITE,
	                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
	               : MAP_FAILED;
	if (base == MAP_FAILED) {
		free(b);
		return NULL;
	}
	b->base = base;
	b->span = span;
	b->touched = touched;
	return b;
}

struct bm_chunkbuf *bm_chunkmem_get(struct bm_chunkmem *p, size_t len,
                                    uint64_t limit)
{
	struct bm_chunkbuf *b = NULL, *shed = NULL;
	size_t span = len > BM_CHUNKMEM_SPAN ? page_up(len) : BM_CHUNKMEM_SPAN;

	pthread_mutex_lock(&p->lock);
	if (span == BM_CHUNKMEM_SPAN) {
		struct bm_chunkbuf *fit = NULL, *most = NULL;
		for (struct bm_chunkbuf *i = p->idle; i; i = i->next) {
			if (i->touched >= len && (!fit || i->touched < fit->touched))
				fit = i;
			if (!most || i->touched > most->touched)
				most = i;
		}
		b = fit ? fit : most;
		/* a buffer touched far past this chunk would count that much
		 * against the cap for a small chunk: a fresh one instead, while
		 * the limit has room for it (sizes that fall, or differ per
		 * component) */
		if (b && b->touched > 2 * page_up(len) &&
		    p->resident + page_up(len) <= limit)
			b = NULL;
		if (b)
			unlink_idle(p, b);
	}
	size_t grow = b && b->touched < len ? page_up(len) - b->touched
	                                    : b ? 0 : page_up(len);
	if (b && grow) { /* b->touched grows by what is moved */
		bool broken = false;
		grow -= move_pages(p, b, grow, limit, &shed, &broken);
		if (broken) { /* a hole in its span: unmapped, a fresh one */
			p->resident -= b->touched;
			b->next = shed;
			shed = b;
			b = NULL;
			grow = page_up(len);
		}
	}
	shed_idle(p, grow, limit, &shed);
	p->resident += grow;
	p->fresh += grow;
	if (p->resident > p->peak)
		p->peak = p->resident;
	if (b)
		b->touched += grow;
	else
		p->maps++;
	pthread_mutex_unlock(&p->lock);
	unmap_list(shed);
	if (b) {
		UNPOISON(b->base, len);
		return b;
	}
	b = map_buffer(span, grow);
	if (!b) {
		pthread_mutex_lock(&p->lock);
		p->resident -= grow;
		pthread_mutex_unlock(&p->lock);
	}
	return b;
}

void bm_chunkmem_put(struct bm_chunkmem *p, struct bm_chunkbuf *b,
                     uint64_t limit)
{
	struct bm_chunkbuf *shed = NULL;

	if (!b)
		return;
	pthread_mutex_lock(&p->lock);
	if (b->span != BM_CHUNKMEM_SPAN) { /* a chunk above the span: never kept */
		p->resident -= b->touched;
		b->next = NULL;
		shed = b;
	} else {
		POISON(b->base, b->touched);
		b->next = p->idle;
		p->idle = b;
		p->idle_resident += b->touched;
		shed_idle(p, 0, limit, &shed);
	}
	pthread_mutex_unlock(&p->lock);
	unmap_list(shed);
}

/* Makes len bytes at base resident the way the data path will use them:
 * written by the kernel (a read from /dev/zero), not by us.  Under a
 * hypervisor that shadows page tables, the kernel's accesses to a user
 * page go through mappings of their own: a page written from user space
 * still cost ~6 us at the kernel's first copy into or out of it (a recv
 * into a chunk, a send from it), against ~0.6 us once the kernel has
 * written it (2026-12-02, this VM; HACKING "What this VM charges").
 * Chunk buffers are filled and sent by the kernel only.  Falls back to a
 * write per page if /dev/zero cannot be read (O_NONBLOCK: whatever sits
 * at that path never blocks the event thread). */
static void touch_by_kernel(void *base, size_t len)
{
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	size_t off = 0;

	while (fd >= 0 && off < len) {
		ssize_t n = read(fd, (char *)base + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	if (fd >= 0)
		close(fd);
	/* what was not read: one write per page makes it ours */
	for (off = off / 4096 * 4096; off < len; off += 4096)
		((volatile char *)base)[off] = 0;
}

size_t bm_chunkmem_warm(struct bm_chunkmem *p, size_t len, uint64_t target)
{
	struct bm_chunkbuf *b;

	len = page_up(len);
	if (len > BM_CHUNKMEM_SPAN)
		return 0;
	pthread_mutex_lock(&p->lock);
	if (target > p->limit)
		target = p->limit;
	bool room = p->resident + len <= target;
	if (room)
		p->resident += len; /* reserved now: a chunk meanwhile sees it */
	pthread_mutex_unlock(&p->lock);
	if (!room)
		return 0;
	b = map_buffer(BM_CHUNKMEM_SPAN, len);
	if (!b) {
		pthread_mutex_lock(&p->lock);
		p->resident -= len;
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	touch_by_kernel(b->base, len);
	pthread_mutex_lock(&p->lock);
	if (p->resident > p->limit) { /* the limit fell meanwhile */
		p->resident -= len;
		pthread_mutex_unlock(&p->lock);
		b->next = NULL;
		unmap_list(b);
		return 0;
	}
	POISON(b->base, b->touched);
	b->next = p->idle;
	p->idle = b;
	p->idle_resident += len;
	p->maps++;
	p->warmed += len;
	if (p->resident > p->peak)
		p->peak = p->resident;
	pthread_mutex_unlock(&p->lock);
	return len;
}

void bm_chunkmem_limit(struct bm_chunkmem *p, uint64_t limit)
{
	struct bm_chunkbuf *shed = NULL;

	pthread_mutex_lock(&p->lock);
	p->limit = limit;
	shed_idle(p, 0, limit, &shed);
	pthread_mutex_unlock(&p->lock);
	unmap_list(shed);
}

void bm_chunkmem_soft_trim(struct bm_chunkmem *p)
{
	pthread_mutex_lock(&p->lock);
	for (struct bm_chunkbuf *b = p->idle; b; b = b->next) {
		/* (ASan: the range is poisoned, madvise does not touch it) */
		madvise(b->base, b->touched, MADV_FREE);
	}
	pthread_mutex_unlock(&p->lock);
}

void bm_chunkmem_trim(struct bm_chunkmem *p)
{
	struct bm_chunkbuf *list;

	pthread_mutex_lock(&p->lock);
	list = p->idle;
	p->idle = NULL;
	for (struct bm_chunkbuf *b = list; b; b = b->next)
		p->resident -= b->touched;
	p->idle_resident = 0;
	pthread_mutex_unlock(&p->lock);
	unmap_list(list);
}

void bm_chunkmem_destroy(struct bm_chunkmem *p)
{
	bm_chunkmem_trim(p);
	pthread_mutex_destroy(&p->lock);
}
