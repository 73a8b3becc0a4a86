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

#endif
