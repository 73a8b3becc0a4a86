/*
 * Memory for the read-ahead's chunks: see chunkmem.c.
 */
#ifndef BM_CHUNKMEM_H
#define BM_CHUNKMEM_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Every buffer reserves this much address space (touched only as far as
 * its chunks reach); a chunk above it gets a mapping of its own. */
#define BM_CHUNKMEM_SPAN (32u << 20)

struct bm_chunkbuf {
	void *base;
	size_t span;             /* mapped (reserved) bytes */
	size_t touched;          /* bytes from base that have been written */
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
void bm_chunkmem_soft_trim(struct bm_chunkmem *p);
/* Unmaps every idle buffer. */
void bm_chunkmem_trim(struct bm_chunkmem *p);
/* Unmaps everything; every buffer must be back. */
void bm_chunkmem_destroy(struct bm_chunkmem *p);

#endif
