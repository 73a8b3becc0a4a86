/*
 * crashsim: a component backend for crash-point testing (tests only).
 *
 * "crashsim:PATH" serves the file PATH and journals every operation that
 * changes it (write, zero, trim, flush; FUA as a flag) to PATH.journal with
 * a sequence number global to the process, with the written data.  All
 * crashsim components share one worker thread that executes requests in
 * submission order, so at queue depth 1 the numbering is the same from run
 * to run (timers of the engine, e.g. the lease renewal every second, can
 * still interleave in a long run).  Reads see the latest write.
 *
 * The volatile write cache is modelled afterwards, from the journal
 * (tests/tools/crashsim_oracle.c): a write is durable once a later FLUSH of
 * the same component is journaled, or at once with FUA.
 *
 * Refused unless BM_CRASHSIM is set in the environment (the oracle sets
 * it): a mistyped component must not start a journal.
 *
 * BM_CRASHSIM_CRASH_AT=N in the environment: the operation numbered N is
 * not executed; the process _exit()s with BM_CRASHSIM_EXIT instead, so no
 * later operation reaches any component.
 */
#ifndef BM_CRASHSIM_H
#define BM_CRASHSIM_H
#include <stdint.h>

#include "backend.h"

#define BM_CRASHSIM_PREFIX "crashsim:"
#define BM_CRASHSIM_EXIT 77

/* One journal record; writes are followed by length bytes of data. */
struct bm_crashsim_rec {
	uint64_t seq;     /* global operation number, from 1 */
	uint32_t op;      /* enum bm_bop: WRITE, FLUSH, TRIM, ZERO */
	uint32_t flags;   /* BM_BOP_FUA */
	uint64_t offset;
	uint32_t length;
	uint32_t reserved;
};

int bm_crashsim_backend_open(const char *uri, struct bm_backend **out);

/* Operations numbered so far in this process. */
uint64_t bm_crashsim_ops(void);

#endif
