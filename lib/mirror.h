/*
 * The mirror engine's internal state, shared by its files:
 *   assemble.c  labels -> component states at start; labeling new mirrors
 *   meta.c      label writes, DIRTY marking, component failure (control plane)
 *   io.c        the data path: read balance, write fan-out, flush, retries
 *   balance.c   the read balance algorithms
 *   sync.c      the background synchronization thread
 *   status.c    status and list text
 *
 * Locking.  meta_lock protects the labels and every component state change;
 * the data path never takes it except on the first write after the mirror
 * was clean (to write DIRTY labels before that write is issued).  The data
 * path reads states and counters through atomics.  Component failures found
 * on the data path are queued to the control thread, which records them in
 * the labels (genid bump) before the write that found them is acknowledged.
 */
#ifndef BM_MIRROR_H
#define BM_MIRROR_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "blkmirror.h"
#include "label.h"
#include "rangelock.h"
#include "readahead.h"

enum bm_comp_state {
	BM_CS_ACTIVE,        /* in sync; reads and writes */
	BM_CS_SYNCHRONIZING, /* being copied; writes only */
	BM_CS_FAILED,        /* I/O failed during service; out */
	BM_CS_ABSENT,        /* missing, unreadable or foreign at start */
};

const char *bm_comp_state_name(int state);

/* Cumulative counters behind `blkmirror stat` (one set per component and
 * one for the mirror as its clients see it). */
struct bm_comp_stats {
	atomic_uint_fast64_t reads, read_bytes, read_ns;
	atomic_uint_fast64_t writes, write_bytes, write_ns;
	atomic_uint_fast64_t deletes, delete_bytes, delete_ns;
	atomic_uint_fast64_t errors;
	atomic_uint_fast64_t busy_ns;    /* time with a request outstanding */
	atomic_uint_fast64_t busy_since; /* when the queue last left zero */
};

uint64_t bm_now_ns(void);

/* A request starts / ends on a queue: keeps the queue length and busy time
 * (the %busy of gstat) without a lock. */
static inline void bm_queue_enter(atomic_int *q, struct bm_comp_stats *st)
{
	if (atomic_fetch_add(q, 1) == 0)
		atomic_store(&st->busy_since, bm_now_ns());
}

static inline void bm_queue_leave(atomic_int *q, struct bm_comp_stats *st)
{
	if (atomic_fetch_sub(q, 1) == 1)
		atomic_fetch_add(&st->busy_ns,
		                 bm_now_ns() - atomic_load(&st->busy_since));
}

/* Adds one completed request to a set of counters. */
void bm_stats_account(struct bm_comp_stats *st, int kind, uint64_t bytes,
                      uint64_t ns, int result);
enum { BM_STAT_READ, BM_STAT_WRITE, BM_STAT_DELETE, BM_STAT_OTHER };

struct bm_component {
	int index;
	char path[PATH_MAX];
	struct bm_backend *be;          /* NULL when absent */
	struct bm_label label;          /* meta_lock */
	atomic_int state;               /* enum bm_comp_state */
	atomic_int inflight;            /* backend requests outstanding */
	atomic_uint_fast64_t sync_offset;
	atomic_uint_fast64_t head_pos;  /* where its last read ended */
	char why[256];                  /* meta_lock: why absent or failed */
	struct bm_comp_stats stats;
};

struct bm_event;

struct bm_mirror {
	char name[BM_NAME_MAX + 1];
	uint64_t size;
	int ncomp;
	struct bm_component comp[BM_MAX_COMPONENTS];

	pthread_mutex_t meta_lock;      /* labels, states, genid, syncid */
	uint64_t mirror_id, genid, syncid; /* meta_lock */
	uint32_t mirror_flags;          /* meta_lock */

	atomic_int balance;
	atomic_uint slice;
	atomic_uint rr_cursor;          /* round-robin and tie breaking */

	atomic_bool dirty;              /* labels say DIRTY */
	atomic_long writes_inflight;    /* writes, trims, zeroes in flight */
	atomic_long ios_inflight;       /* every client io in flight */
	atomic_int queue;               /* client reads/writes in flight (stat) */
	struct bm_comp_stats stats;     /* the mirror's own row in stat */
	atomic_llong last_write_ms;
	bool degraded;                  /* meta_lock: a component is not ACTIVE */

	struct bm_rangelock rl;
	struct bm_readahead ra;         /* the stream algorithm's state */

	/* control thread: event queue protected by ev_lock */
	pthread_t ctl_thread;
	pthread_mutex_t ev_lock;
	pthread_cond_t ev_cond;
	struct bm_event *ev_head, *ev_tail;
	bool ctl_stop;

	/* sync thread */
	pthread_t sync_thread;
	atomic_bool sync_running;
	atomic_bool sync_stop;
	char sync_error[256];           /* meta_lock */

	struct bm_lease_keeper *lease;  /* lease.c: set at open, freed at close */
};

/* meta.c */
int bm_meta_write_label(struct bm_mirror *m, struct bm_component *c);
int bm_meta_mark_dirty(struct bm_mirror *m);
void bm_meta_try_clean(struct bm_mirror *m, long idle_ms);
void bm_meta_fail_locked(struct bm_mirror *m, struct bm_component *c,
                         const char *why);
int bm_meta_write_all_labels(struct bm_mirror *m);
long long bm_now_ms(void);

/* control thread: queue a failure; run `then(arg)` after it is recorded. */
void bm_ctl_fail(struct bm_mirror *m, uint32_t mask, const char *why,
                 void (*then)(void *), void *arg);
int bm_ctl_start(struct bm_mirror *m);
void bm_ctl_stop(struct bm_mirror *m);

/* balance.c: picks a readable component not in `exclude`, or -1. */
int bm_balance_pick(struct bm_mirror *m, uint64_t off, uint32_t len,
                    uint32_t exclude);
int bm_readable_count(struct bm_mirror *m);

/* sync.c */
int bm_sync_start(struct bm_mirror *m);
void bm_sync_stop(struct bm_mirror *m);

/* io.c */
int bm_io_submit(struct bm_mirror *m, struct bm_io *io);
void bm_io_begin(struct bm_mirror *m);
void bm_io_end(struct bm_mirror *m, struct bm_io *io, uint64_t t0, int result);
/* Reads without read-ahead: the balance algorithm's pick, with retries. */
int bm_io_read_direct(struct bm_mirror *m, struct bm_io *io);

#endif
