/*
 * Time and counters: the clock helpers, the per-component and per-mirror
 * counters behind `blkmirror stat`, and the count of client requests in
 * flight that bm_mirror_close drains (with a wake-up at zero).
 */
#include <time.h>

#include "mirror.h"

uint64_t bm_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

long long bm_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void bm_stats_account(struct bm_comp_stats *st, int kind, uint64_t bytes,
                      uint64_t ns, int result)
{
	if (result < 0) {
		atomic_fetch_add(&st->errors, 1);
		return;
	}
	switch (kind) {
	case BM_STAT_READ:
		atomic_fetch_add(&st->reads, 1);
		atomic_fetch_add(&st->read_bytes, bytes);
		atomic_fetch_add(&st->read_ns, ns);
		break;
	case BM_STAT_WRITE:
		atomic_fetch_add(&st->writes, 1);
		atomic_fetch_add(&st->write_bytes, bytes);
		atomic_fetch_add(&st->write_ns, ns);
		break;
	case BM_STAT_DELETE:
		atomic_fetch_add(&st->deletes, 1);
		atomic_fetch_add(&st->delete_bytes, bytes);
		atomic_fetch_add(&st->delete_ns, ns);
		break;
	}
}

static int io_stat_kind(enum bm_io_type t)
{
	switch (t) {
	case BM_IO_READ: return BM_STAT_READ;
	case BM_IO_WRITE: case BM_IO_WRITE_ZEROES: return BM_STAT_WRITE;
	case BM_IO_TRIM: return BM_STAT_DELETE;
	default: return BM_STAT_OTHER;
	}
}

/* The mirror's own row: a client request begins / ends. */
void bm_io_begin(struct bm_mirror *m)
{
	bm_queue_enter(&m->queue, &m->stats);
}

void bm_io_end(struct bm_mirror *m, struct bm_io *io, uint64_t t0, int result)
{
	bm_stats_account(&m->stats, io_stat_kind(io->type), io->length,
	                 bm_now_ns() - t0, result);
	bm_queue_leave(&m->queue, &m->stats);
}

void bm_io_leave(struct bm_mirror *m)
{
	if (atomic_fetch_sub(&m->ios_inflight, 1) == 1 &&
	    atomic_load(&m->draining)) {
		pthread_mutex_lock(&m->drain_lock);
		pthread_cond_broadcast(&m->drain_cond);
		pthread_mutex_unlock(&m->drain_lock);
	}
}
