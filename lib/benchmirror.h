/*
 * A temporary mirror for `blkmirror bench`: the engine's data path (balance
 * algorithms, read-ahead, write fan-out) over backends the caller opened,
 * with no label, lease or metadata I/O at all.  See benchmirror.c.
 */
#ifndef BM_BENCHMIRROR_H
#define BM_BENCHMIRROR_H
#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "blkmirror.h"

/*
 * Builds a mirror of the n open backends (every component ACTIVE, size
 * the smallest component's whole size).  The backends stay the caller's:
 * the mirror reaches them through guards, closed by bm_bench_mirror_close
 * (the backends are not).  Unless writable, every write, trim and zero
 * is refused below the engine (-EROFS), so nothing can change a byte of a
 * component, whatever the engine attempts.  Labels live in memory only.
 */
int bm_bench_mirror_open(struct bm_backend *const *be, size_t n,
                         bool writable, bm_mirror **out);

/* Drains, stops the engine's threads and frees the mirror; writes no label. */
void bm_bench_mirror_close(bm_mirror *m);

#endif
