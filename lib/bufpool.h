/*
 * Data buffers reused warm: see bufpool.c.
 */
#ifndef BM_BUFPOOL_H
#define BM_BUFPOOL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Idle bytes the server's pool keeps for reuse, at most (all sizes). */
#define BM_BUFPOOL_IDLE_MAX (16ull << 20)

/* Size classes: powers of two from 4 KiB to 32 MiB (BM_MAX_IO). */
#define BM_BUFPOOL_CLASSES 14

/* The server's request buffers (one pool for the process). */
/* A 4096-aligned buffer of at least len bytes (len > 0), or NULL. */
void *bm_buf_get(size_t len);
/* Gives back a buffer from bm_buf_get(len), with the same len. */
void bm_buf_put(void *buf, size_t len);
/* The memory bm_buf_get(len) really takes (its size class); 0 when len
 * is above BM_MAX_IO. */
size_t bm_buf_capacity(size_t len);
/* Idle bytes held now (tests, status). */
uint64_t bm_bufpool_idle_bytes(void);

/* A pool of its own, with the peak rule (bufpool.c): what it keeps idle
 * plus what is in use never exceeds the most that was in use since it
 * was last trimmed.  The read-ahead's chunks (one per mirror). */
struct bm_bufpool {
	pthread_mutex_t lock;
	void *free_list[BM_BUFPOOL_CLASSES];
	uint64_t idle_bytes;     /* kept for reuse */
	uint64_t in_use;         /* handed out (capacities), not given back */
	uint64_t peak;           /* most in use since the last trim */
	uint64_t idle_max;       /* 0: the peak rule; else a fixed bound */
	uint64_t maps;           /* buffers taken from the system, ever */
};

void bm_bufpool_init(struct bm_bufpool *p);
/* Gives everything idle back to the system; what is in use must be back. */
void bm_bufpool_destroy(struct bm_bufpool *p);
/* A 4096-aligned buffer of at least len bytes; *cap gets its capacity,
 * which is len's size class or, when an idle buffer of that class is
 * lacking, the next larger class if that is at most max_cap (a warm
 * buffer rather than fresh memory).  NULL: no memory, or len above
 * BM_MAX_IO. */
void *bm_bufpool_get(struct bm_bufpool *p, size_t len, size_t max_cap,
                     size_t *cap);
/* Gives back a buffer from bm_bufpool_get with the capacity it reported. */
void bm_bufpool_put(struct bm_bufpool *p, void *buf, size_t cap);
/* Gives every idle buffer back to the system and starts the peak again
 * from what is in use now (the users went idle). */
void bm_bufpool_trim(struct bm_bufpool *p);

#endif
