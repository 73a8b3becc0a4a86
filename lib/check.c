/*
 * check and repair of a running mirror (md's "check" and "repair" sync
 * actions): a job thread compares every ACTIVE component, chunk by chunk,
 * while the mirror serves; repair also writes the data of the reference
 * component over the copies that differ.
 *
 * Each chunk (1 MiB) is compared under an exclusive range hold
 * (rangelock.h), the one the sync copy takes: a client write to the chunk
 * either completed on every component before the reads, or waits until
 * the comparison (and the repair's writes) are done, so a write in flight
 * never shows as a difference.  The hold covers one chunk at a time, and
 * is asked for a while only (200 ms, then twice as long each time up to
 * 5 s, with as long a pause between: hold_chunk): a client write that
 * keeps the chunk for long (a zeroing of GiBs in 8 MiB pieces on a slow
 * disk) would otherwise keep every other write to the chunk waiting, since
 * writes wait for a pending exclusive hold (recover.c's repairs do the
 * same).  The
 * components of a chunk are read in parallel (a thread each but the
 * first), straight from their backends with the io-timeout deadline, and
 * compared at BLOCK granularity with the reference: the highest-priority
 * ACTIVE component that read the chunk (label priority, then the lowest
 * index: the source assembly picks).  Only components ACTIVE when a chunk
 * starts are compared; a SYNCHRONIZING one is being copied and is skipped.
 *
 * A component that fails to read is handled as the data path handles it:
 * one that went away or did not answer within io-timeout is disconnected
 * (sync.c's read_source does the same); one that answered with an error
 * gets the chunk rewritten from a good copy (recover.c).  Either is
 * reported, and the job goes on while two ACTIVE components are left.
 * Repair marks the mirror DIRTY on disk before its first write (as a client
 * write does), drops the read-ahead over what it rewrote, fails a target
 * whose write fails (as the sync does), and flushes the components it
 * wrote at the end.
 *
 * One job per mirror at a time.  Its report (state, progress, the first
 * MAX_RANGES differing ranges, adjacent blocks merged) stays until the next
 * job starts; bm_mirror_check_report gives it as text lines for the
 * control socket.  bm_check_stop (bm_mirror_close) cancels and joins it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "bitmap.h"
#include "mirror.h"

#define CHUNK_BYTES (1u << 20)
#define BLOCK 4096u
#define MAX_RANGES 1000
#define MAX_NOTES 16

enum job_state { JOB_NONE, JOB_RUNNING, JOB_DONE, JOB_CANCELLED, JOB_FAILED };

struct range {
	uint64_t off, len;
	int ref;            /* the reference component */
	uint32_t mask;      /* the components that differ from it */
};

struct bm_check {
	pthread_mutex_t lock;   /* everything below but the thread's own */
	pthread_t thread;
	bool joinable;          /* a thread was started and not joined */
	atomic_bool cancel;
	struct bm_mirror *m;
	unsigned id;            /* the job's number; 0 before the first */
	bool repair;
	int state;              /* enum job_state */
	uint64_t done;          /* bytes compared */
	uint64_t t0_ns, t1_ns;  /* started, ended (0 while running) */
	int ncomp;              /* components when it started */
	int start_state[BM_MAX_COMPONENTS];
	int source;             /* the reference when it started */
	struct range ranges[MAX_RANGES];
	int nranges;
	uint64_t more, more_bytes;  /* ranges beyond MAX_RANGES */
	uint64_t differ_bytes;
	uint32_t written;           /* repair: components it wrote */
	char notes[MAX_NOTES][320]; /* what went wrong on the way */
	int nnotes;
	char fatal[320];            /* why it failed */
	/* The job thread's own: the range being merged. */
	struct range cur;
	bool cur_open;
	uint32_t prio[BM_MAX_COMPONENTS];
	int nprio;
};

static void note(struct bm_check *j, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void note(struct bm_check *j, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&j->lock);
	if (j->nnotes < MAX_NOTES) {
		va_start(ap, fmt);
		vsnprintf(j->notes[j->nnotes++], sizeof(j->notes[0]), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&j->lock);
}

/* The merged range is complete: keep it, or count it beyond the cap. */
static void close_range(struct bm_check *j)
{
	if (!j->cur_open)
		return;
	pthread_mutex_lock(&j->lock);
	if (j->nranges < MAX_RANGES) {
		j->ranges[j->nranges++] = j->cur;
	} else {
		j->more++;
		j->more_bytes += j->cur.len;
	}
	j->differ_bytes += j->cur.len;
	pthread_mutex_unlock(&j->lock);
	j->cur_open = false;
}

static void add_block(struct bm_check *j, uint64_t off, uint64_t len, int ref,
                      uint32_t mask)
{
	if (j->cur_open && j->cur.off + j->cur.len == off &&
	    j->cur.ref == ref && j->cur.mask == mask) {
		j->cur.len += len;
		return;
	}
	close_range(j);
	j->cur = (struct range){off, len, ref, mask};
	j->cur_open = true;
}

/* Label priorities of every component (meta_lock: labels), read again
 * when a component was added since. */
static void load_priorities(struct bm_check *j)
{
	struct bm_mirror *m = j->m;

	pthread_mutex_lock(&m->meta_lock);
	j->nprio = m->ncomp;
	for (int i = 0; i < m->ncomp; i++)
		j->prio[i] = m->comp[i].label.priority;
	pthread_mutex_unlock(&m->meta_lock);
}

/* The reference among the components in mask: highest priority, then
 * the lowest index; -1 when mask is empty. */
static int pick_reference(struct bm_check *j, uint32_t mask)
{
	int best = -1;

	for (int i = 0; i < j->nprio; i++)
		if ((mask & (1u << i)) && (best < 0 || j->prio[i] > j->prio[best]))
			best = i;
	return best;
}

static uint32_t active_mask(struct bm_mirror *m)
{
	uint32_t mask = 0;

	for (int i = 0; i < m->ncomp; i++)
		if (atomic_load(&m->comp[i].state) == BM_CS_ACTIVE)
			mask |= 1u << i;
	return mask;
}

static int popcount(uint32_t v)
{
	return __builtin_popcount(v);
}

/* One request on one component, waited for with the io-timeout; counted
 * like the sync's (the watchdog sees it outstanding; stat shows it). */
struct comp_op {
	struct bm_mirror *m;
	int comp;
	enum bm_bop op;
	void *buf;
	uint32_t len;
	uint64_t off;
	int err;
	pthread_t thread;
	bool threaded;
};

static void *comp_op_run(void *arg)
{
	struct comp_op *o = arg;
	struct bm_mirror *m = o->m;
	struct bm_component *c = &m->comp[o->comp];
	uint64_t t0 = bm_now_ns();

	bm_comp_enter(c, t0);
	struct bm_backend *be = bm_comp_get(c);
	struct bm_patience slow;
	bm_comp_patience(m, c, &slow);
	o->err = be ? bm_backend_io_wait_patient(be, o->op, o->buf, o->len,
	                                         o->off, 0,
	                                         atomic_load(&m->io_timeout_ms),
	                                         &slow)
	            : -ENOTCONN;
	if (be)
		bm_comp_put(c);
	bm_comp_leave(c, t0, o->op, be && o->err != -ETIMEDOUT);
	bm_stats_account(&c->stats, o->op == BM_BOP_READ ? BM_STAT_READ
	                 : o->op == BM_BOP_WRITE ? BM_STAT_WRITE : BM_STAT_OTHER,
	                 o->len, bm_now_ns() - t0, o->err);
	return NULL;
}

/* Runs the requests in parallel: a thread each but the first (inline
 * when a thread cannot be started). */
static void run_parallel(struct comp_op *ops, int n)
{
	for (int k = 1; k < n; k++)
		ops[k].threaded = pthread_create(&ops[k].thread, NULL,
		                                 comp_op_run, &ops[k]) == 0;
	for (int k = 0; k < n; k++)
		if (k == 0 || !ops[k].threaded)
			comp_op_run(&ops[k]);
	for (int k = 1; k < n; k++)
		if (ops[k].threaded)
			pthread_join(ops[k].thread, NULL);
}

/* Takes out a component whose request failed, as the sync does: one that
 * went away is disconnected, one whose write failed is failed. */
static void drop(struct bm_mirror *m, int comp, int err, const char *what)
{
	char why[160];

	snprintf(why, sizeof(why), "%s: %s", what, strerror(-err));
	pthread_mutex_lock(&m->meta_lock);
	bm_meta_drop_locked(m, &m->comp[comp], bm_error_is_gone(err)
	                    ? BM_CS_DISCONNECTED : BM_CS_FAILED, why);
	pthread_mutex_unlock(&m->meta_lock);
}

/* Whether len bytes of b differ from a. */
static bool differs(const char *a, const char *b, uint32_t len)
{
	return memcmp(a, b, len) != 0;
}

/*
 * Repair: writes the reference's data over each component in `mask` from
 * the first to the last block where it differs (blocks in between are the
 * same, so rewriting them is harmless).  Under the chunk's hold.
 */
static int repair_chunk(struct bm_check *j, uint64_t off, uint32_t len,
                        char **bufs, int ref, uint32_t mask)
{
	struct bm_mirror *m = j->m;
	struct comp_op ops[BM_MAX_COMPONENTS];
	int n = 0;

	atomic_fetch_add(&m->writes_inflight, 1);
	if (!atomic_load(&m->dirty_on_disk) && bm_meta_mark_dirty(m) < 0) {
		atomic_fetch_sub(&m->writes_inflight, 1);
		snprintf(j->fatal, sizeof(j->fatal), "cannot mark the mirror "
		         "dirty before repairing offset %" PRIu64, off);
		return -EIO;
	}
	if (atomic_load(&m->meta_broken)) {
		atomic_fetch_sub(&m->writes_inflight, 1);
		snprintf(j->fatal, sizeof(j->fatal), "no ACTIVE component can "
		         "record the mirror's state; writes are refused");
		return -EIO;
	}
	uint32_t all_first = len, all_last = 0;
	for (int i = 0; i < m->ncomp; i++) {
		if (!(mask & (1u << i)))
			continue;
		uint32_t first = len, last = 0;
		for (uint32_t b = 0; b < len; b += BLOCK) {
			uint32_t bl = len - b < BLOCK ? len - b : BLOCK;
			if (differs(bufs[ref] + b, bufs[i] + b, bl)) {
				if (first == len)
					first = b;
				last = b + bl;
			}
		}
		if (first == len)
			continue;
		ops[n++] = (struct comp_op){.m = m, .comp = i, .op = BM_BOP_WRITE,
		        .buf = bufs[ref] + first, .len = last - first,
		        .off = off + first};
		all_first = first < all_first ? first : all_first;
		all_last = last > all_last ? last : all_last;
	}
	/* A copy being made may already hold this chunk, from a component
	 * that is wrong here: it gets the reference's data too (no sync chunk
	 * overlaps the window while it is held). */
	for (int i = 0; all_first < all_last && i < m->ncomp; i++)
		if (atomic_load(&m->comp[i].state) == BM_CS_SYNCHRONIZING)
			ops[n++] = (struct comp_op){.m = m, .comp = i,
			        .op = BM_BOP_WRITE, .buf = bufs[ref] + all_first,
			        .len = all_last - all_first, .off = off + all_first};
	/* The span's bits on disk first, as for a client write: a crash
	 * in the middle of the rewrite leaves a copy half repaired, which
	 * the next start copies again over the marked regions. */
	int slot = -1;
	if (n && bm_bitmap_write_begin(m, off + all_first, all_last - all_first,
	                               &slot) < 0) {
		atomic_fetch_sub(&m->writes_inflight, 1);
		snprintf(j->fatal, sizeof(j->fatal), "cannot record the repair "
		         "at offset %" PRIu64 " in the bitmap", off);
		return -EIO;
	}
	run_parallel(ops, n);
	bm_ra_invalidate(m, off, len);
	atomic_store(&m->last_write_ms, bm_now_ms());
	for (int k = 0; k < n; k++) {
		pthread_mutex_lock(&j->lock);
		j->written |= 1u << ops[k].comp;
		pthread_mutex_unlock(&j->lock);
		if (ops[k].err == 0)
			continue;
		note(j, "could not write %s at offset %" PRIu64 ": %s",
		     m->comp[ops[k].comp].path, ops[k].off, strerror(-ops[k].err));
		drop(m, ops[k].comp, ops[k].err, "write error during repair");
	}
	/* ended only once a component that failed it is out of service:
	 * no clear of the bits may come between (bitmap.c) */
	bm_bitmap_write_end(m, slot);
	atomic_fetch_sub(&m->writes_inflight, 1);
	return 0;
}

/* Takes the chunk's exclusive hold: asked for a while, then given back
 * for as long (client writes to the chunk get in), then asked for twice
 * as long, up to BM_RANGE_TRY_MAX_MS.  False when the job was cancelled. */
static bool hold_chunk(struct bm_check *j, struct bm_range_hold *hold,
                       uint64_t off, uint32_t len)
{
	long wait = BM_RANGE_TRY_FIRST_MS;

	while (!bm_rangelock_excl_try_hold(&j->m->rl, hold, off, len, wait,
	                                   &j->cancel)) {
		for (long slept = 0; slept < wait; slept += 100) {
			if (atomic_load(&j->cancel))
				return false;
			struct timespec ts = {0, 100 * 1000000L};
			nanosleep(&ts, NULL);
		}
		wait = bm_range_try_next(wait);
	}
	return true;
}

/* Compares (and repairs) one chunk under its exclusive hold.  0, or -errno
 * with j->fatal set when the job cannot go on. */
static int one_chunk(struct bm_check *j, uint64_t off, uint32_t len,
                     char **bufs)
{
	struct bm_mirror *m = j->m;
	struct comp_op ops[BM_MAX_COMPONENTS];
	uint32_t mask, ok = 0, readerr = 0;
	int n = 0, err = 0;
	struct bm_range_hold hold;

	/* Cancellable: a client write held by a component that hangs (the
	 * last ACTIVE one is never given up) must not keep close waiting. */
	if (!hold_chunk(j, &hold, off, len))
		return -ECANCELED;
	mask = active_mask(m);
	if (popcount(mask) < 2) {
		bm_rangelock_excl_release(&m->rl, &hold);
		snprintf(j->fatal, sizeof(j->fatal), "fewer than two ACTIVE "
		         "components left at offset %" PRIu64, off);
		return -ENODEV;
	}
	for (int i = 0; i < m->ncomp; i++)
		if (mask & (1u << i)) {
			if (i >= j->nprio)
				load_priorities(j);
			ops[n++] = (struct comp_op){.m = m, .comp = i,
			        .op = BM_BOP_READ, .buf = bufs[i], .len = len,
			        .off = off};
		}
	run_parallel(ops, n);
	for (int k = 0; k < n; k++) {
		if (ops[k].err == 0)
			ok |= 1u << ops[k].comp;
		else
			readerr |= 1u << ops[k].comp;
	}
	int ref = pick_reference(j, ok);
	uint32_t chunk_diff = 0;
	for (uint32_t b = 0; ref >= 0 && b < len; b += BLOCK) {
		uint32_t bl = len - b < BLOCK ? len - b : BLOCK, dmask = 0;
		for (int i = 0; i < m->ncomp; i++)
			if (i != ref && (ok & (1u << i)) &&
			    differs(bufs[ref] + b, bufs[i] + b, bl))
				dmask |= 1u << i;
		if (dmask)
			add_block(j, off + b, bl, ref, dmask);
		chunk_diff |= dmask;
	}
	if (j->repair && chunk_diff)
		err = repair_chunk(j, off, len, bufs, ref, chunk_diff);
	bm_rangelock_excl_release(&m->rl, &hold);

	for (int k = 0; k < n; k++) {
		int c = ops[k].comp, e = ops[k].err;
		if (e == 0)
			continue;
		if (bm_error_is_gone(e)) {
			note(j, "%s did not read offset %" PRIu64 ": %s; "
			     "disconnected", m->comp[c].path, off, strerror(-e));
			drop(m, c, e, "read error during check");
		} else if (ref >= 0) {
			note(j, "%s could not read offset %" PRIu64 ": %s; "
			     "the chunk is rewritten from a good copy",
			     m->comp[c].path, off, strerror(-e));
			bm_recover_repair(m, c, off, len);
		} else {
			note(j, "%s could not read offset %" PRIu64 ": %s",
			     m->comp[c].path, off, strerror(-e));
		}
	}
	if (err == 0 && popcount(ok) < 2) {
		snprintf(j->fatal, sizeof(j->fatal), "fewer than two components "
		         "could read offset %" PRIu64, off);
		err = -EIO;
	}
	return err;
}

static void finish(struct bm_check *j, int state)
{
	close_range(j);
	pthread_mutex_lock(&j->lock);
	j->state = state;
	j->t1_ns = bm_now_ns();
	pthread_mutex_unlock(&j->lock);
}

/* Flushes what repair wrote; a component whose flush fails is dropped. */
static void flush_written(struct bm_check *j)
{
	struct bm_mirror *m = j->m;
	struct comp_op ops[BM_MAX_COMPONENTS];
	int n = 0;

	for (int i = 0; i < m->ncomp; i++)
		if ((j->written & (1u << i)) &&
		    atomic_load(&m->comp[i].state) == BM_CS_ACTIVE)
			ops[n++] = (struct comp_op){.m = m, .comp = i,
			                            .op = BM_BOP_FLUSH};
	run_parallel(ops, n);
	for (int k = 0; k < n; k++)
		if (ops[k].err < 0) {
			note(j, "could not flush %s: %s", m->comp[ops[k].comp].path,
			     strerror(-ops[k].err));
			drop(m, ops[k].comp, ops[k].err, "flush error after repair");
		}
}

static void *job_main(void *arg)
{
	struct bm_check *j = arg;
	struct bm_mirror *m = j->m;
	char *bufs[BM_MAX_COMPONENTS] = {0};
	int err = 0;

	pthread_setname_np(pthread_self(), "bm-check");
	load_priorities(j);
	pthread_mutex_lock(&j->lock);
	j->source = pick_reference(j, active_mask(m));
	pthread_mutex_unlock(&j->lock);
	for (int i = 0; i < BM_MAX_COMPONENTS && err == 0; i++)
		if (posix_memalign((void **)&bufs[i], 4096, CHUNK_BYTES))
			err = -ENOMEM;
	if (err)
		snprintf(j->fatal, sizeof(j->fatal), "out of memory");
	for (uint64_t off = 0; err == 0 && off < m->size;) {
		if (atomic_load(&j->cancel))
			break;
		uint32_t len = m->size - off < CHUNK_BYTES
		               ? (uint32_t)(m->size - off) : CHUNK_BYTES;
		err = one_chunk(j, off, len, bufs);
		if (err == -ECANCELED) {
			err = 0; /* cancelled while waiting for the window */
			break;
		}
		if (err)
			break; /* done says where: a repair rewrote what is
			          before it, not the chunk that failed */
		off += len;
		pthread_mutex_lock(&j->lock);
		j->done = off;
		pthread_mutex_unlock(&j->lock);
	}
	if (j->repair && j->written)
		flush_written(j);
	for (int i = 0; i < BM_MAX_COMPONENTS; i++)
		free(bufs[i]);
	finish(j, err ? JOB_FAILED : atomic_load(&j->cancel) ? JOB_CANCELLED
	                                                    : JOB_DONE);
	bm_event_post(m, err ? BM_SEV_WARNING : BM_SEV_INFO, BM_EV_CHECK_FINISHED,
	              NULL, "%s %s", j->repair ? "repair" : "check",
	              err ? "failed" : atomic_load(&j->cancel) ? "cancelled"
	                                                       : "done");
	return NULL;
}

/* The mirror's job, created at its first use (m->check is set once). */
static struct bm_check *job_of(struct bm_mirror *m)
{
	struct bm_check *j = atomic_load(&m->check), *none = NULL;

	if (j)
		return j;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	pthread_mutex_init(&j->lock, NULL);
	j->m = m;
	if (!atomic_compare_exchange_strong(&m->check, &none, j)) {
		pthread_mutex_destroy(&j->lock);
		free(j);
		return none;
	}
	return j;
}

static int percent(const struct bm_check *j)
{
	return (int)(j->done * 100 / (j->m->size ? j->m->size : 1));
}

int bm_mirror_check_start(bm_mirror *m, bool repair, unsigned *id)
{
	struct bm_check *j = job_of(m);
	char skipped[512] = "";
	size_t used = 0;
	int nactive = 0;

	if (!j)
		return bm_error(ENOMEM, "out of memory");
	pthread_mutex_lock(&j->lock);
	if (j->state == JOB_RUNNING) {
		int pct = percent(j);
		bool r = j->repair;
		pthread_mutex_unlock(&j->lock);
		return bm_error(EBUSY, "a %s of '%s' is already running (%d%% "
		                "done); wait for it to end (Ctrl-C on the command "
		                "that started it cancels it)", r ? "repair" : "check",
		                m->name, pct);
	}
	if (j->joinable) { /* the last job has ended: its thread is done */
		pthread_join(j->thread, NULL);
		j->joinable = false;
	}
	for (int i = 0; i < m->ncomp; i++) {
		int s = atomic_load(&m->comp[i].state);
		if (s == BM_CS_ACTIVE)
			nactive++;
		else if (s != BM_CS_REMOVED && used < sizeof(skipped))
			used += (size_t)snprintf(skipped + used, sizeof(skipped) - used,
			                         "%s%s is %s", used ? ", " : "; ",
			                         m->comp[i].path, bm_comp_state_name(s));
	}
	if (nactive < 2) {
		pthread_mutex_unlock(&j->lock);
		return bm_error(EINVAL, "'%s' has %d ACTIVE component%s%s: a %s "
		                "needs two or more", m->name, nactive,
		                nactive == 1 ? "" : "s", skipped,
		                repair ? "repair" : "check");
	}
	j->id++;
	j->repair = repair;
	j->state = JOB_RUNNING;
	j->done = 0;
	j->t0_ns = bm_now_ns();
	j->t1_ns = 0;
	j->nranges = 0;
	j->more = j->more_bytes = j->differ_bytes = 0;
	j->written = 0;
	j->nnotes = 0;
	j->fatal[0] = '\0';
	j->cur_open = false;
	atomic_store(&j->cancel, false);
	pthread_mutex_unlock(&j->lock);

	/* The components as they are now (the reference it starts with is
	 * picked by the thread: priorities are labels, under meta_lock, which
	 * label I/O may hold for io-timeout; the control thread must not wait
	 * for it). */
	pthread_mutex_lock(&j->lock);
	j->ncomp = m->ncomp;
	for (int i = 0; i < j->ncomp; i++)
		j->start_state[i] = atomic_load(&m->comp[i].state);
	j->source = -1;
	if (pthread_create(&j->thread, NULL, job_main, j) != 0) {
		j->state = JOB_FAILED;
		snprintf(j->fatal, sizeof(j->fatal), "cannot start a thread");
		pthread_mutex_unlock(&j->lock);
		return bm_error(EAGAIN, "cannot start the %s thread",
		                repair ? "repair" : "check");
	}
	j->joinable = true;
	*id = j->id;
	pthread_mutex_unlock(&j->lock);
	fprintf(stderr, "blkmirror: %s: %s started\n", m->name,
	        repair ? "repair" : "check");
	return 0;
}

int bm_mirror_check_cancel(bm_mirror *m, unsigned id)
{
	struct bm_check *j = atomic_load(&m->check);
	bool mine;

	if (!j)
		return bm_error(ENOENT, "no such check of '%s'", m->name);
	pthread_mutex_lock(&j->lock);
	mine = j->id == id;
	if (mine)
		atomic_store(&j->cancel, true);
	pthread_mutex_unlock(&j->lock);
	return mine ? 0 : bm_error(ENOENT, "no such check of '%s'", m->name);
}

#define APPEND(...)                                                        \
	do {                                                               \
		int n_ = snprintf(buf + used, used < len ? len - used : 0,  \
		                  __VA_ARGS__);                            \
		if (n_ > 0)                                                \
			used += (size_t)n_;                                \
	} while (0)

static const char *state_word(int state)
{
	switch (state) {
	case JOB_RUNNING: return "running";
	case JOB_DONE: return "done";
	case JOB_CANCELLED: return "cancelled";
	default: return "failed";
	}
}

int bm_mirror_check_report(bm_mirror *m, unsigned id, char *buf, size_t len)
{
	struct bm_check *j = atomic_load(&m->check);
	size_t used = 0;

	if (!j)
		return bm_error(ENOENT, "no check of '%s' has run", m->name);
	pthread_mutex_lock(&j->lock);
	if (j->id != id || j->state == JOB_NONE) {
		pthread_mutex_unlock(&j->lock);
		return bm_error(ENOENT, "no such check of '%s' (another one "
		                "started since?)", m->name);
	}
	uint64_t end = j->t1_ns ? j->t1_ns : bm_now_ns();
	APPEND("kind %s\nstate %s\ndone %" PRIu64 "\ntotal %" PRIu64
	       "\nelapsed_ms %" PRIu64 "\nsource %d\n",
	       j->repair ? "repair" : "check", state_word(j->state), j->done,
	       m->size, (end - j->t0_ns) / 1000000u, j->source);
	for (int i = 0; i < j->ncomp; i++)
		APPEND("comp %d %s %s\n", i, bm_comp_state_name(j->start_state[i]),
		       m->comp[i].path);
	if (j->state != JOB_RUNNING) {
		for (int i = 0; i < j->nranges; i++)
			APPEND("range %" PRIu64 " %" PRIu64 " %d %" PRIx32 "\n",
			       j->ranges[i].off, j->ranges[i].len, j->ranges[i].ref,
			       j->ranges[i].mask);
		APPEND("more %" PRIu64 " %" PRIu64 "\ndiffer_bytes %" PRIu64
		       "\n", j->more, j->more_bytes, j->differ_bytes);
		for (int i = 0; i < j->nnotes; i++)
			APPEND("note %s\n", j->notes[i]);
		if (j->fatal[0])
			APPEND("fatal %s\n", j->fatal);
	}
	pthread_mutex_unlock(&j->lock);
	return used < len ? (int)used : -ENOSPC;
}

int bm_check_status_note(struct bm_mirror *m, char *buf, size_t len)
{
	struct bm_check *j = atomic_load(&m->check);
	int n = 0;

	if (!j)
		return 0;
	pthread_mutex_lock(&j->lock);
	if (j->state == JOB_RUNNING)
		n = snprintf(buf, len, "Note: %s running, %d%% compared\n",
		             j->repair ? "repair" : "check", percent(j));
	pthread_mutex_unlock(&j->lock);
	return n > 0 ? n : 0;
}

void bm_check_stop(struct bm_mirror *m)
{
	struct bm_check *j = atomic_load(&m->check);

	if (!j)
		return;
	atomic_store(&j->cancel, true);
	if (j->joinable)
		pthread_join(j->thread, NULL);
	atomic_store(&m->check, NULL);
	pthread_mutex_destroy(&j->lock);
	free(j);
}
