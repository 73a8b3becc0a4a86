/*
 * Memory for the read-ahead's chunks: see chunkmem.c.
 */
#ifndef BM_CHUNKMEM_H
#define BM_CHUNKMEM_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every buffer reserves this much address space (touched only as far as
 * its chunks reach); a chunk above it gets a mapping of its own. */
#define BM_CHUNKMEM_SPAN (32u << 20)
#define BM_CHUNKMEM_MOVES 8      /* page moves a buffer takes part in */

struct bm_chunkbuf {
	void *base;
	size_t span;             /* mapped (reserved) bytes */
	size_t touched;          /* bytes from base that have been written */
	unsigned moves;          /* page moves it took part in (move_pages) */
	bool received;           /* took pages from another: never donates */
	struct bm_chunkbuf *next;
};

struct bm_chunkmem {
	pthread_mutex_t lock;
	struct bm_chunkbuf *idle;
	uint64_t resident;       /* touched bytes of every buffer (~ RSS) */
	uint64_t idle_resident;  /* of the idle ones */
	uint64_t maps;           /* buffers mapped, ever */
	uint64_t fresh;          /* bytes touched for the first time, ever */
	uint64_t peak;           /* most resident at once, ever */
	uint64_t warmed;         /* bytes touched ahead of use (warm) */
	uint64_t limit;          /* bm_chunkmem_limit's: warm stays within */
	uint64_t moved;          /* bytes moved between buffers, ever */
	bool no_move;            /* mremap cannot move pages here */
};

void bm_chunkmem_init(struct bm_chunkmem *p);
/* A buffer for len bytes (base 4096-aligned), warm if one is idle; idle
 * buffers are unmapped first if resident memory would pass `limit` (the
 * read-ahead's cap).  NULL: no memory. */
struct bm_chunkbuf *bm_chunkmem_get(struct bm_chunkmem *p, size_t len,
                                    uint64_t limit);
/* Gives back b; idle buffers beyond `limit` resident are unmapped. */
void bm_chunkmem_put(struct bm_chunkmem *p, struct bm_chunkbuf *b,
                     uint64_t limit);
/* The users went idle: the idle buffers' pages may be taken by the kernel
 * when it needs memory (MADV_FREE), but stay mapped and, until then,
 * resident, so the next stream does not fault them in again. */
/* Maps one idle buffer and touches len bytes of it, if the resident
 * bytes stay within target and the limit (bm_chunkmem_limit, checked
 * again before the buffer is kept); the bytes touched, 0 when there is no room
 * (or no memory).  Runs off the data path: the pages are the kernel's
 * dearest (a fault and a clear each, and in a virtual machine whose free
 * memory goes back to the host, the host's fault too). */
size_t bm_chunkmem_warm(struct bm_chunkmem *p, size_t len, uint64_t target);
/* Sets the limit warm keeps to, and unmaps idle buffers, the least
 * touched first, until the resident bytes are within it (a smaller cap). */
void bm_chunkmem_limit(struct bm_chunkmem *p, uint64_t limit);
void bm_chunkmem_soft_trim(struct bm_chunkmem *p);
/* Unmaps every idle buffer. */
void bm_chunkmem_trim(struct bm_chunkmem *p);
/* Unmaps everything; every buffer must be back. */
void bm_chunkmem_destroy(struct bm_chunkmem *p);

#endif
