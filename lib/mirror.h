/*
 * The mirror engine's internal state, shared by its files:
 *   assemble.c  labels -> component states at start; labeling new mirrors
 *   meta.c      label writes, DIRTY/clean, recording a component's failure
 *   events.c    the event thread: the one place component failures found on
 *               the data path are applied and writes acknowledged after them;
 *               the I/O watchdog (timeouts), health checks, idle clean
 *   recover.c   the recovery thread: reconnects DISCONNECTED components,
 *               rewrites ranges that failed to read from a good copy
 *   io.c        the data path's entry: checks, routing
 *   compio.c    component I/O: reads with retry, write fan-out, the ack rule
 *   stats.c     clocks, counters, client ios in flight
 *   balance.c   the read balance algorithms
 *   sync.c      the synchronization thread
 *   status.c    status and list text
 *   live.c      components inserted into and removed from a running mirror
 *
 * Locking.  meta_lock protects the labels and every component state change;
 * it is held across label I/O, which has a deadline (io_timeout_ms).  The
 * data path never takes it except on the first write after the mirror was
 * clean (to write DIRTY labels before that write is issued).  Status and
 * list never wait for it for long: what they show is under info_lock.  The
 * data path reads states and counters through atomics.  Component failures
 * found on the data path are queued to the event thread, which records them
 * in the labels (genid bump) before the write that found them is
 * acknowledged, and acknowledges it only if a component still in service
 * holds it.
 *
 * Components join and leave while the data path runs (live.c): ncomp only
 * grows, and a slot is filled in full, its state not readable or writable,
 * before it is published (a store of ncomp, or of its state for a reused
 * slot), so a loop over comp[0..ncomp) never sees a half-built component.
 * A component leaves by its state becoming BM_CS_REMOVED (meta_lock); its
 * backend is closed once users and inflight are 0.  live_lock serializes
 * inserts and removals (taken before meta_lock, never under it).
 */
#ifndef BM_MIRROR_H
#define BM_MIRROR_H
#include <assert.h>
#include <errno.h>
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
	BM_CS_DISCONNECTED,  /* vanished or stopped answering; retried, and
	                        copied again when it comes back */
	BM_CS_REMOVED,       /* live.c: taken out of the mirror (remove,
	                        forget): an empty slot, hidden everywhere;
	                        reused by an insert once nothing refers to it */
	BM_CS_INACTIVE,      /* deactivated (rebuild.c): open, not used */
};

/* The rules of the locking comment above, checked where they are relied
 * on: a mutex the caller must hold (a default mutex held by anyone makes
 * trylock fail with EBUSY; one held by nobody would be taken: abort). */
#define BM_ASSERT_HELD(mutex) assert(pthread_mutex_trylock(mutex) == EBUSY)

/* Defaults of the failure policy (serve --io-timeout, --read-errors). */
#define BM_IO_TIMEOUT_MS_DEFAULT 30000
#define BM_READ_ERRORS_DEFAULT 20   /* repaired read errors before failing */
/* Largest zeroing (WRITE_ZEROES, TRIM) sent to a component at once; a
 * longer one goes in pieces of this, one after another (compio.c, sync.c).
 * A component without a zero of its own (an NBD server that emulates it,
 * a file that cannot punch holes) writes the zeros at its write speed, and
 * the watchdog takes one that ends nothing for the io-timeout as hung: 8
 * MiB ends within 2 s down to 4 MiB/s. */
#define BM_ZERO_PIECE (8u << 20)
/* The background copy's chunk (sync.c): where a copy starts and resumes. */
#define BM_SYNC_CHUNK (1u << 20)

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
	atomic_uint_fast64_t last_done;  /* when a request last completed */
};

uint64_t bm_now_ns(void);

/* A request starts / ends on a queue: keeps the queue length and busy time
 * (the %busy of gstat) without a lock. */
static inline void bm_queue_enter(atomic_int *q, struct bm_comp_stats *st)
{
	if (atomic_fetch_add(q, 1) == 0)
		atomic_store(&st->busy_since, bm_now_ns());
}

static inline void bm_queue_leave_answered(atomic_int *q,
                                           struct bm_comp_stats *st,
                                           bool answered)
{
	uint64_t now = bm_now_ns();

	if (answered)
		atomic_store(&st->last_done, now);
	if (atomic_fetch_sub(q, 1) == 1)
		atomic_fetch_add(&st->busy_ns,
		                 now - atomic_load(&st->busy_since));
}

static inline void bm_queue_leave(atomic_int *q, struct bm_comp_stats *st)
{
	bm_queue_leave_answered(q, st, true);
}

/*
 * How old a component's oldest outstanding request is, without a list:
 * requests are counted by when they were submitted, in a ring of slots of
 * 2^BM_AGE_SHIFT ns (~1.07 s) each, and the watchdog (events.c) looks for
 * a slot still counting requests that were submitted long ago.  The ring
 * covers more than the longest wait (the ceiling below is held to its
 * span), so a slot is reused only after its requests are given up.  This catches a component
 * that answers every request but one (a lost reply, one stuck sector),
 * which "completed nothing for io-timeout" does not.
 *
 * Age alone is not a hang: a slow or distant component that answers in
 * order with a deep queue (a remote export behind a slow link, many
 * clients' writes on a rotating disk) holds every request long, and each
 * waits only for those ahead of it.  So the oldest slot counts as stuck
 * only once a request submitted in a later slot has completed (done_t0_max:
 * the latest submission time among completed requests): it was passed
 * over (by a read or a write), and the watchdog gives it io-timeout from
 * when it first saw that.
 * A component answering nothing at all is caught by the other rule, and
 * one answering too slowly by a ceiling: no request is waited for longer
 * than BM_SLOW_FACTOR times io-timeout (held to the ring's span), nor
 * longer than io-timeout once the mirror is closing.  Only answers count
 * (bm_comp_leave's answered): a request ended inside the server (a
 * submission refused, a flush the export does not need) says nothing of
 * the queue.
 */
#define BM_SLOW_FACTOR 4
#define BM_AGE_SHIFT 30
#define BM_AGE_SLOTS 4096

/* Adds one completed request to a set of counters. */
void bm_stats_account(struct bm_comp_stats *st, int kind, uint64_t bytes,
                      uint64_t ns, int result);
enum { BM_STAT_READ, BM_STAT_WRITE, BM_STAT_DELETE, BM_STAT_OTHER };

struct bm_component {
	int index;
	char path[PATH_MAX];
	struct bm_backend *be;          /* NULL when absent; replaced only
	                                   while DISCONNECTED (meta_lock) */
	struct bm_backend *retired[4];  /* earlier connections, closed at
	                                   the end (a racing submitter may
	                                   still hold one) */
	int nretired;                   /* meta_lock */
	struct bm_label label;          /* meta_lock */
	atomic_int state;               /* enum bm_comp_state */
	atomic_int inflight;            /* backend requests outstanding */
	atomic_int users;               /* threads holding be (bm_comp_get) */
	atomic_uint_fast64_t sync_offset;  /* copied up to here */
	atomic_uint_fast64_t sync_durable; /* copied and flushed: the label's */
	atomic_uint_fast64_t recopy_from;  /* SYNCHRONIZING: 1 + the lowest
	                                   offset of a write it took that
	                                   every ACTIVE component failed (its
	                                   copy differs there: copied again
	                                   before it is ACTIVE); 0: none */
	atomic_uint_fast64_t recopy_to;    /* and the highest end of those */
	atomic_uint_fast64_t recopy_end;   /* where the next pass of the copy
	                                   ends (the range copied again, not
	                                   the rest); 0: the end.  Zeroed
	                                   wherever a copy starts over */
	atomic_uint_fast64_t head_pos;  /* where its last read ended */
	atomic_int read_errors;         /* read errors repaired so far */
	atomic_uint epoch;              /* bumped when it reconnects: failures
	                                   found on an older connection are
	                                   not applied to the new one */
	uint64_t known_id;              /* meta_lock: its component id, also
	                                   when ABSENT (from the source's
	                                   member list; 0: unknown, or not a
	                                   member: foreign, a duplicate) */
	bool label_stale;               /* meta_lock: its last label write
	                                   failed: it may not hold the genid */
	int label_err;                  /* meta_lock: that write's error */
	bool hang_warned;               /* events.c: said it hangs, once */
	bool inactive_abort_said;       /* events.c abort_inactive: said so,
	                                   once a deactivation (meta_lock) */
	atomic_bool link_dead;          /* the last ACTIVE one's NBD connection
	                                   is gone (events.c health): it is
	                                   opened again in place (recover.c
	                                   reconnect_in_place) */
	atomic_bool swapping;           /* its backend is being swapped in
	                                   place: bm_comp_get refuses it */
	uint64_t label_seq_landed;      /* meta_lock: the seq of its last label
	                                   write that succeeded (0: none yet);
	                                   its disk holds one from there to
	                                   label.seq (recover.c history) */
	uint64_t events_on_disk;        /* meta_lock: the events of that label
	                                   (or of the one read from its disk) */
	bool full_on_disk;              /* meta_lock: and whether it was full
	                                   (meta.c events_cap) */
	atomic_uint_fast64_t writes_done;  /* compio.c: client writes it took */
	atomic_uint_fast64_t flushed_upto; /* writes_done as of the issue of
	                                   its last client flush that ended
	                                   well: above it, writes a crash of
	                                   its server may still lose */
	bool stop_aborted;              /* events.c: the last ACTIVE one's
	                                   I/O aborted at the stop, once */
	bool rejoin;                    /* ABSENT because it could not be
	                                   opened at the start: tried again
	                                   (recover.c, bm_live_rejoin) */
	long long retry_at_ms;          /* recover.c: next reconnect attempt */
	atomic_bool refused;            /* recover.c: its last reconnect found
	                                   it but did not take it (smaller,
	                                   another label: its why says): only
	                                   remove + insert bring it back */
	int retry_delay_ms;             /* recover.c: backoff */
	char why[256];                  /* info_lock: why absent or failed */
	char retry_why[160];            /* info_lock: how the last attempt to
	                                   bring it back failed, when that says
	                                   something why does not ("" none);
	                                   a new why clears it */
	long long retry_why_ms;         /* info_lock: when (bm_now_ms) */
	struct bm_comp_stats stats;
	bool sync_ending;               /* meta_lock: its copy is done and its
	                                   labels are being written: they say
	                                   ACTIVE before its state does
	                                   (meta.c label_state, sync.c) */
	bool sync_full;                 /* meta_lock: its next copy is in full
	                                   (rebuild, insert): never from the
	                                   bitmap (bitmap.c) */
	atomic_bool sync_regions;       /* sync.c: this copy covers only the
	                                   bitmap's set regions */
	atomic_uint_fast64_t sync_copied; /* sync.c: bytes its copy wrote, over
	                                   its runs in this server (reset when
	                                   it ends: eventlog.c, SyncFinished's) */
	atomic_int age[BM_AGE_SLOTS];   /* outstanding requests by submission
	                                   time (bm_comp_enter) */
	atomic_uint_fast64_t done_t0_max; /* latest submission time among its
	                                   completed requests (bm_comp_leave) */
	struct bm_wait_streak meta_slow; /* meta_lock: bm_comp_patience_locked */
	uint64_t wd_slot;               /* events.c: the oldest slot that was
	                                   seen passed over, and when */
	uint64_t wd_passed_ns;
};

/*
 * Takes a component's backend to call it (submit, a synchronous request,
 * check): counts the caller as a user, then looks at the state.  NULL when
 * the component is out of service (nothing to put back).  recover.c closes
 * a backend only after the state says so and no user is left; a request
 * submitted before that is waited for by the backend's close().
 */
static inline struct bm_backend *bm_comp_get(struct bm_component *c)
{
	atomic_fetch_add(&c->users, 1);
	int s = atomic_load(&c->state);
	if ((s != BM_CS_ACTIVE && s != BM_CS_SYNCHRONIZING) ||
	    atomic_load(&c->swapping)) {
		atomic_fetch_sub(&c->users, 1);
		return NULL;
	}
	return c->be;
}

static inline void bm_comp_put(struct bm_component *c)
{
	atomic_fetch_sub(&c->users, 1);
}

/* A flush of c issued when its writes_done was `mark` ended well: the
 * writes it took before are durable (compio.c, meta.c). */
static inline void bm_comp_flushed(struct bm_component *c, uint64_t mark)
{
	uint_fast64_t upto = atomic_load(&c->flushed_upto);
	while (upto < mark &&
	       !atomic_compare_exchange_weak(&c->flushed_upto, &upto, mark))
		;
}

/* A request to component c starts / ends: t0 is its submission time, the
 * same value to both (bm_now_ns() taken just before bm_comp_enter);
 * answered: the component answered it (false: refused at submission, ended
 * inside the backend, or given up by a waiter's deadline).  Any answer
 * shows the component alive (stats.last_done: the watchdog's "answers
 * nothing"); only a read's or a write's shows where its queue is
 * (done_t0_max: "passed over"): a server may answer a flush, a zeroing or
 * a trim ahead of older writes, which is no sign that they are stuck. */
static inline atomic_int *bm_comp_age_slot(struct bm_component *c,
                                           uint64_t t0)
{
	return &c->age[(t0 >> BM_AGE_SHIFT) % BM_AGE_SLOTS];
}

static inline void bm_comp_enter(struct bm_component *c, uint64_t t0)
{
	atomic_fetch_add(bm_comp_age_slot(c, t0), 1);
	bm_queue_enter(&c->inflight, &c->stats);
}

static inline void bm_comp_leave(struct bm_component *c, uint64_t t0,
                                 enum bm_bop op, bool answered)
{
	uint_fast64_t seen = atomic_load(&c->done_t0_max);
	bool in_turn = answered && (op == BM_BOP_READ || op == BM_BOP_WRITE);

	while (in_turn && t0 > seen &&
	       !atomic_compare_exchange_weak(&c->done_t0_max, &seen, t0))
		;
	bm_queue_leave_answered(&c->inflight, &c->stats, answered);
	atomic_fetch_sub(bm_comp_age_slot(c, t0), 1);
}

/* Patience for the synchronous requests to c (label and bitmap writes,
 * flushes, the copy's flushes, check's and repair's I/O; events.c): they
 * are waited for past io-timeout while c answers, in order, the queue that
 * was ahead of them, and given up as the watchdog would give c up
 * (nothing answered for io-timeout, requests sent after them answered
 * first, or BM_SLOW_FACTOR times io-timeout since they were sent).  p
 * must live as long as the wait. */
void bm_comp_patience(struct bm_mirror *m, struct bm_component *c,
                      struct bm_patience *p);
/* The same for waits under meta_lock (label and bitmap writes, flushes):
 * those to one component share one budget (c->meta_slow), so
 * that a series of them behind a slow component (the idle clean: flushes,
 * labels, bitmap) holds meta_lock and the event thread for 4 x io-timeout
 * at most, not 4 x io-timeout each (8 x while a copy runs: a mark waits
 * for the full components' labels, then for the copies'). */
void bm_comp_patience_locked(struct bm_mirror *m, struct bm_component *c,
                             struct bm_patience *p);

/* meta_lock held (or the mirror not yet running): c's disk holds the label
 * in c->label, written by us or read from it. */
static inline void bm_comp_label_on_disk(struct bm_component *c)
{
	c->label_seq_landed = c->label.seq;
	c->events_on_disk = c->label.events;
	c->full_on_disk = bm_label_full(&c->label);
}

/* Every state but REMOVED: what status, list and stat show. */
static inline bool bm_comp_present(const struct bm_component *c)
{
	return atomic_load(&c->state) != BM_CS_REMOVED;
}

struct bm_event;
struct bm_repair;

struct bm_mirror {
	char name[BM_NAME_MAX + 1];
	uint64_t size;
	atomic_int ncomp;               /* slots in use; only grows (live.c) */
	struct bm_component comp[BM_MAX_COMPONENTS];
	pthread_mutex_t live_lock;      /* live.c: one insert/remove at a time */
	uint64_t late_ids[2 * BM_MAX_COMPONENTS]; /* live_lock: component ids
	                                   of those that left while their
	                                   server could still carry out writes
	                                   of a connection given up: insert
	                                   refuses a disk still labelled so */
	unsigned nlate;                 /* live_lock: ids recorded, ever */
	atomic_int live_ops;            /* live.c: inserts/removals that run */
	atomic_bool stopping;           /* bm_mirror_begin_stop: waits for slow
	                                   components end at io-timeout */
	atomic_bool closing;            /* bm_mirror_close started: no more */

	pthread_mutex_t meta_lock;      /* labels, states, genid, syncid */
	pthread_mutex_t info_lock;      /* why[], sync_error: what status shows */
	atomic_uint min_block;          /* bm_mirror_min_block: what clients
	                                   were told; never lowered */
	atomic_int io_timeout_ms;       /* a component silent this long with
	                                   requests outstanding is given up */
	atomic_int read_error_limit;    /* repaired read errors before failing */
	atomic_bool flush_lost;         /* the last ACTIVE component
	                                   (flush_lost_comp) was connected
	                                   again in place (its epoch from
	                                   flush_lost_epoch) while it held
	                                   writes not flushed: the next client
	                                   flush issued to it on the new
	                                   connection fails (they may be gone
	                                   with its server's cache) */
	int flush_lost_comp;
	unsigned flush_lost_epoch;
	atomic_bool meta_broken;        /* a failure could not be recorded on
	                                   any ACTIVE component: writes get EIO
	                                   until labels can be written again */
	atomic_int recording;           /* departures whose labels are being
	                                   written (meta_lock held meanwhile):
	                                   write acks wait for them (compio.c
	                                   write_done, bm_meta_record_*) */
	uint64_t mirror_id, genid, syncid; /* meta_lock */
	uint64_t events;                /* meta_lock: DIRTY and clean marks
	                                   (label.h version 3), in every label */
	uint64_t events_landed;         /* meta_lock: the highest events on a
	                                   label written full (not being copied,
	                                   not INACTIVE): the most a label that
	                                   is not full may carry (meta.c
	                                   label_prepare) */
	uint32_t mirror_flags;          /* meta_lock */
	uint32_t missed;                /* meta_lock: slots that missed writes
	                                   the ACTIVE ones hold (label.h's
	                                   missed; assembly_decide.c) */

	atomic_int balance;
	atomic_uint slice;
	atomic_uint rr_cursor;          /* round-robin and tie breaking */

	atomic_bool dirty;              /* labels are to say DIRTY */
	atomic_bool dirty_on_disk;      /* and an ACTIVE one does: a write may
	                                   be issued without marking */
	atomic_long writes_inflight;    /* writes, trims, zeroes in flight */
	atomic_long ios_inflight;       /* every client io in flight */
	atomic_bool draining;           /* someone waits for ios_inflight 0 */
	pthread_mutex_t drain_lock;
	pthread_cond_t drain_cond;
	atomic_int queue;               /* client reads/writes in flight (stat) */
	struct bm_comp_stats stats;     /* the mirror's own row in stat */
	atomic_llong last_write_ms;
	bool degraded;                  /* meta_lock: a component is not ACTIVE */

	struct bm_rangelock rl;
	struct bm_readahead ra;         /* the stream algorithm's state */

	/* event thread (events.c): queue protected by ev_lock */
	pthread_t ev_thread;
	pthread_mutex_t ev_lock;
	pthread_cond_t ev_cond;
	struct bm_event *ev_head, *ev_tail;
	bool ev_stop;

	/* recovery thread (recover.c): repair queue protected by rc_lock */
	pthread_t rc_thread;
	pthread_mutex_t rc_lock;
	pthread_cond_t rc_cond;
	struct bm_repair *rc_head;
	const struct bm_repair *rc_trying; /* the one being tried, off the list */
	bool rc_stop;

	/* sync thread (sync.c): lives as long as the mirror; sync_lock */
	pthread_t sync_thread;
	pthread_mutex_t sync_lock;
	pthread_cond_t sync_cond;
	bool sync_kick;                 /* sync_lock: look for targets */
	atomic_bool sync_running;       /* a copy is in progress */
	struct bm_component *_Atomic sync_target; /* the one being copied:
	                                   recover.c does not reconnect it
	                                   until the copy has let go */
	atomic_bool sync_stop;
	char sync_error[256];           /* info_lock */

	/* sync.c: the copy's rates (bytes/s; set by bm_sync_start and
	 * configure, read by the sync thread) and its measured rate */
	atomic_uint_fast64_t sync_min_rate; /* floor while clients are busy */
	atomic_uint_fast64_t sync_max_rate; /* ceiling; 0: none */
	atomic_uint_fast64_t sync_rate;     /* over the last seconds; 0 unknown */

	struct bm_lease_keeper *lease;  /* lease.c: set at open, freed at close */
	bool no_metadata;               /* a benchmark's temporary mirror
	                                   (benchmirror.c): labels live in
	                                   memory only, never written */

	/* check/repair (check.c): the job and its report, created by the
	 * first start, cancelled, joined and freed by bm_check_stop */
	struct bm_check *_Atomic check;

	/* Event log (eventlog.c): every state change, kept for followers
	 * (`blkmirror monitor`) and logged to stderr as one line.
	 * evlog_lock protects the ring and the fields below; it is held only
	 * to copy a record in or out (no I/O, no other lock taken inside),
	 * so posting under meta_lock never makes a reader wait for long. */
	pthread_mutex_t evlog_lock;
	struct bm_event_record *evlog;  /* BM_EVLOG_SIZE records, a ring */
	uint64_t evlog_seq;             /* the last posted */
	uint64_t evlog_instance;        /* random at open */
	bool evlog_degraded;            /* the last Degraded/Complete said */

	struct bm_bitmap *bitmap;       /* bitmap.c: set at assembly, NULL when
	                                   the labels have no bitmap */
};

/* assemble.c: a random nonzero id; the label of an open component. */
uint64_t bm_random_id(void);
int bm_label_read_be(struct bm_backend *be, struct bm_label *l);
/* The same, and when there is none at be's end, at the old ends the size
 * hints give (bm_label_set_size_hints: a verb on a mirror whose record
 * keeps them); be->size becomes the size it was found at. */
int bm_label_read_hinted(struct bm_backend *be, struct bm_label *l);
/* A component grown since it was labelled: its label at one of its old
 * ends (sizes[]: sizes its label may record); be->size becomes that
 * size.  0; -ENOENT none; -EEXIST two; a read error (assemble.c). */
int bm_label_find_grown(struct bm_backend *be, const uint64_t *sizes,
                        int n, struct bm_label *l, long timeout_ms);
/* live.c: the same, read with the mirror's io-timeout (a component that
 * connects and then does not answer holds no thread); -ETIMEDOUT then. */
int bm_label_read_timeout(struct bm_mirror *m, struct bm_backend *be,
                          struct bm_label *l);
/* The same, and when there is none at its end, at its old ends (a
 * component grown since it was labelled: bm_label_find_grown at own_size,
 * its last label's, 0 none, then the sizes m's labels record, under
 * meta_lock, which the caller does not hold); logs that it grew.  0,
 * -ENOENT (the end read's message), -EEXIST (two), a read's error. */
int bm_label_read_grown(struct bm_mirror *m, struct bm_backend *be,
                        uint64_t own_size, struct bm_label *l);
/* live.c: flushes be within io-timeout before a component comes back: one
 * whose flushes do not end is found without meta_lock held (the label
 * write that brings it back holds it).  (A write that does not end is
 * found by that label write, once: the connection is then kept until its
 * server closes it, and not retried before, lib/backends/nbd.c.) */
int bm_flush_probe_timeout(struct bm_mirror *m, struct bm_backend *be);

/* live.c: bm_mirror_close calls it first: no insert or removal starts
 * after it, and the one that runs has ended when it returns. */
void bm_live_wait_closing(struct bm_mirror *m);

/* live.c: the present component named by path: the same string, or the
 * same file or device (another spelling of its path: a link, a relative
 * path).  Index, or -ENOENT with bm_last_error() saying so. */
int bm_find_component(struct bm_mirror *m, const char *path);

/* meta.c */
int bm_label_store(struct bm_backend *be, const struct bm_label *l,
                   long timeout_ms, const struct bm_patience *p);
int bm_meta_write_label(struct bm_mirror *m, struct bm_component *c);
int bm_meta_mark_dirty(struct bm_mirror *m);
void bm_meta_try_clean(struct bm_mirror *m, long idle_ms);
/* Caller holds meta_lock.  Takes c out of service (FAILED) and records it
 * (genid bump on the survivors); never the last ACTIVE component. */
/* meta_lock held: around a departure's state change and the labels that
 * record it, write acks wait (meta.c says why). */
void bm_meta_record_begin(struct bm_mirror *m);
void bm_meta_record_end(struct bm_mirror *m);
void bm_meta_fail_locked(struct bm_mirror *m, struct bm_component *c,
                         const char *why);
/* Caller holds meta_lock, after a departure's genid bump was written:
 * when no ACTIVE component's label holds it (the last one's write failed
 * and it stayed), writes are refused (meta_broken) until a label write
 * succeeds.  `what` is said: "the failure", "the removal". */
void bm_meta_check_recorded_locked(struct bm_mirror *m, const char *what);
/* The same, into `state` (BM_CS_FAILED or BM_CS_DISCONNECTED). */
void bm_meta_drop_locked(struct bm_mirror *m, struct bm_component *c,
                         int state, const char *why);
/* Caller holds meta_lock.  c's label write failed (c->label_err): out of
 * service, DISCONNECTED (reconnected and copied later) when it did not
 * answer or went away, FAILED when it answered with an error.  `when` is
 * said after the reason ("", " (marking dirty)"). */
void bm_meta_label_failed_locked(struct bm_mirror *m, struct bm_component *c,
                                 const char *when);
/* 0 if a component coming back with `be` takes requests as small as
 * clients were told (bm_mirror_min_block); else -EEXIST (refused), the
 * reason in bm_last_error(). */
int bm_min_block_check(struct bm_mirror *m, const struct bm_backend *be);
int bm_meta_write_all_labels(struct bm_mirror *m);
/* Caller holds meta_lock: does some ACTIVE component's label hold what was
 * last written (none of them stale)? */
bool bm_meta_recorded_locked(struct bm_mirror *m);
/* Flushes every writable component (deadline io_timeout_ms); one whose
 * flush fails is failed out.  0 when every component left in service
 * flushed. */
int bm_meta_flush_all_locked(struct bm_mirror *m);
/* Records how an attempt to bring c back failed (status shows it after
 * why, unless why already says it). */
void bm_set_retry_why(struct bm_mirror *m, struct bm_component *c,
                      const char *err);
/* Sets a component's why[] (status shows it) under info_lock. */
void bm_set_why(struct bm_mirror *m, struct bm_component *c,
                const char *fmt, ...) __attribute__((format(printf, 3, 4)));
long long bm_now_ms(void);
/* True for the errors of a component that went away (connection dead,
 * device gone, timed out) rather than one that answered with an error. */
bool bm_error_is_gone(int err);

/* events.c: the event thread.  bm_ev_fail queues the failure of the
 * components in mask (err: the -errno, off/len: the request, for the log);
 * epochs[i] is component i's epoch when the failed request was issued
 * (NULL: now), so a failure of an older connection is not applied to a
 * reconnected one.  Once it is applied (and everything queued before it),
 * then(arg) runs on the event thread. */
void bm_ev_fail(struct bm_mirror *m, uint32_t mask, const unsigned *epochs,
                const char *what, int err, uint64_t off, uint64_t len,
                void (*then)(void *), void *arg);
int bm_ev_start(struct bm_mirror *m);
/* assemble.c: bm_ev_start and bm_recover_start, both or neither. */
int bm_workers_start(struct bm_mirror *m);
void bm_ev_stop(struct bm_mirror *m);
void bm_ev_free(struct bm_mirror *m);

/* recover.c: the recovery thread.  init (its lock and condition) comes
 * first, at the mirror's creation: a component dropped at the start, before
 * the thread runs, already kicks it; free undoes init. */
void bm_recover_init(struct bm_mirror *m);
int bm_recover_start(struct bm_mirror *m);
void bm_recover_request_stop(struct bm_mirror *m);
void bm_recover_stop(struct bm_mirror *m);
void bm_recover_free(struct bm_mirror *m);
void bm_recover_kick(struct bm_mirror *m);
/* Queues a rewrite of [off, off+len) on component comp from a good copy
 * (after a read error there). */
void bm_recover_repair(struct bm_mirror *m, int comp, uint64_t off,
                       uint32_t len);
/* Reopens a FAILED component (meta_lock not held; nobody else may change
 * it meanwhile) and makes it SYNCHRONIZING from 0, as a reconnect does. */
int bm_recover_reopen(struct bm_mirror *m, struct bm_component *c);
/* Whether be (c opened again: reconnect, activate, in place) is c of this
 * mirror, fits it, and holds what this server last wrote there: 0 (*older:
 * an older copy of it, to be copied in full), -EEXIST (refused: smaller,
 * another or no label, a larger minimum block size, used by another
 * server meanwhile) or another -errno (still away), bm_last_error() says
 * which. */
int bm_recover_judge(struct bm_mirror *m, struct bm_component *c,
                     struct bm_backend *be, bool *older);
/* rebuild.c: the lease block of be still holds this server's lease (no
 * other server took c meanwhile): 0, or -errno with bm_last_error(). */
int bm_lease_is_ours(struct bm_mirror *m, struct bm_component *c,
                     struct bm_backend *be);

/* balance.c: picks a readable component not in `exclude`, or -1. */
int bm_balance_pick(struct bm_mirror *m, uint64_t off, uint32_t len,
                    uint32_t exclude);
int bm_readable_count(struct bm_mirror *m);

/* sync.c: the thread starts with the mirror and stops with it; kick tells
 * it that a component became SYNCHRONIZING. */
int bm_sync_start(struct bm_mirror *m);
void bm_sync_kick(struct bm_mirror *m);
void bm_sync_request_stop(struct bm_mirror *m);
void bm_sync_stop(struct bm_mirror *m);
void bm_sync_free(struct bm_mirror *m);
/* "45%, 80.0 MiB/s, 12s left" (or "45%" while the rate is unknown) for
 * status and list. */
void bm_sync_progress_text(struct bm_mirror *m, int comp, char *buf,
                           size_t len);

/* check.c: stops a check/repair (close, before anything it uses stops);
 * the "Note:" line status shows while one runs (bytes, like snprintf). */
void bm_check_stop(struct bm_mirror *m);
int bm_check_status_note(struct bm_mirror *m, char *buf, size_t len);
/* eventlog.c: posting events (never blocks on I/O; may be called under
 * meta_lock).  Event names, one word each: */
#define BM_EVLOG_SIZE 1024
#define BM_EV_STARTED "Started"                 /* the mirror serves */
#define BM_EV_DEGRADED "Degraded"               /* a component is not ACTIVE */
#define BM_EV_COMPLETE "Complete"               /* every one ACTIVE again */
#define BM_EV_COMPONENT_FAILED "ComponentFailed"
#define BM_EV_COMPONENT_DISCONNECTED "ComponentDisconnected"
#define BM_EV_COMPONENT_BACK "ComponentBack"     /* reconnected */
#define BM_EV_LAST_COMPONENT_ERROR "LastComponentError" /* kept in service */
#define BM_EV_SYNC_STARTED "SyncStarted"
#define BM_EV_SYNC_FINISHED "SyncFinished"
#define BM_EV_SYNC_STOPPED "SyncStopped"         /* the message says why */
#define BM_EV_READ_ERROR_REPAIRED "ReadErrorRepaired"
#define BM_EV_WRITES_REFUSED "WritesRefused"     /* no label can be written */
#define BM_EV_WRITES_RESUMED "WritesResumed"
#define BM_EV_COMPONENT_INSERTED "ComponentInserted"
#define BM_EV_COMPONENT_REMOVED "ComponentRemoved"
#define BM_EV_COMPONENT_DEACTIVATED "ComponentDeactivated"
#define BM_EV_COMPONENT_ACTIVATED "ComponentActivated"
#define BM_EV_CHECK_FINISHED "CheckFinished"
#define BM_EV_COMPONENT_REBUILDING "ComponentRebuilding"
int bm_event_init(struct bm_mirror *m);
void bm_event_free(struct bm_mirror *m);
/* Records an event and logs "blkmirror: MIRROR: SEVERITY: EVENT
 * [COMPONENT]: MESSAGE" to stderr.  component: a path or NULL.  The same
 * event repeated within 10 s is kept once. */
void bm_event_post(struct bm_mirror *m, int severity, const char *event,
                   const char *component, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Posts Degraded or Complete when the mirror's redundancy changed since
 * the last one said (call after any component state change). */
void bm_event_redundancy(struct bm_mirror *m);
/* At the end of assembly: Started, then Degraded if it is. */
void bm_event_started(struct bm_mirror *m);
/* After sync.c's copy of t ended with sync_one's result (0 done, 1
 * stopped on request, -EAGAIN not started, other < 0 an error):
 * SyncFinished or SyncStopped with why. */
void bm_event_sync_ended(struct bm_mirror *m, struct bm_component *t,
                         int result);

/* io.c: the entry point. */
int bm_io_submit(struct bm_mirror *m, struct bm_io *io);

/* stats.c: a client io begins / ends in the mirror's row of stat; leaves
 * ios_inflight (and wakes a drainer at zero). */
void bm_io_begin(struct bm_mirror *m);
void bm_io_end(struct bm_mirror *m, struct bm_io *io, uint64_t t0, int result);
void bm_io_leave(struct bm_mirror *m);

/* compio.c: component I/O.  Reads without read-ahead: the balance
 * algorithm's pick, with retries.  Writes, trims, zeroes and flushes
 * fanned out; before_ack(m, off, len) runs at submission and before the
 * acknowledgement of a write (the read-ahead's invalidation). */
typedef void (*bm_range_hook)(struct bm_mirror *m, uint64_t off, uint64_t len);
int bm_io_read_direct(struct bm_mirror *m, struct bm_io *io);
int bm_compio_write(struct bm_mirror *m, struct bm_io *io,
                    bm_range_hook before_ack);

#endif
