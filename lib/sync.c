/*
 * Background synchronization: copies the mirror's data from ACTIVE
 * components onto each SYNCHRONIZING one, in order, several chunks in
 * flight.
 *
 * Pipeline.  Up to DEPTH chunks are in flight at once (DEPTH_BUSY while
 * clients are busy): each is read from the least loaded ACTIVE component
 * and written to the target as soon as its read lands, so the next reads
 * overlap the previous writes and the target never waits for a source.
 * Completions (backend threads) only queue the chunk to this thread; every
 * decision (retry elsewhere, issue the write, drop a component) is taken
 * here.  Chunks finish out of order; the copied offset (sync_offset) is the
 * start of the oldest unfinished chunk.
 *
 * Range holds.  Each chunk is copied under its own exclusive hold
 * (rangelock.h; asked politely: an older window of a repair or a check
 * goes first), taken before the source is asked anything and released
 * when the target's write has completed, so a client write to that range
 * either finished before the copy read the source or starts after the copy
 * wrote the target: the target ends with the newest data.  Client writes
 * reach SYNCHRONIZING components everywhere, so the part already copied
 * stays current; client reads never go to a SYNCHRONIZING component.
 *
 * Thin copies.  The source is asked what it holds (the backend's extent
 * op: SEEK_DATA/SEEK_HOLE, NBD block status): a run of at least a chunk
 * that reads as zeros on the source is not copied (smaller holes go with
 * the data around them).  Under the run's hold the answer is asked again
 * (a client write may have landed meanwhile); then, if the target also
 * reads zeros there, nothing is done, else the target's range is trimmed
 * (a file gets a hole, NBD a zero request that may unmap, a block device
 * a zeroing that may unmap).  A backend that cannot tell says "all data",
 * which is always safe.
 *
 * Rate.  A ceiling (sync-max; 0: none) always; a floor (sync-min) while
 * clients are busy (their requests kept the mirror busy for more than
 * BUSY_SHARE of the last ACTIVITY_MS, and for HOLD_MS after): md's
 * sync_speed_min/max.  Only copied bytes count; holes are free.  Pacing is
 * a virtual clock (no banked idle time: a ceiling is never exceeded for
 * more than one chunk).  The rates live in memory (configure sets them on
 * a running mirror); a restart comes back to the defaults.
 *
 * Checkpoints.  The target's label records the copied offset every
 * CHECKPOINT_BYTES copied (or CHECKPOINT_MS): the target is flushed first,
 * and only a successful flush moves the offset the label records
 * (sync_durable), and only up to the copied offset taken before the flush,
 * so a restart never resumes past data that was not on disk; after a crash
 * (DIRTY labels) the copy starts again from 0.
 *
 * The thread lives as long as the mirror and sleeps on sync_cond until a
 * component becomes SYNCHRONIZING (at start, or when a disconnected one
 * comes back: bm_sync_kick).
 *
 * A source read error is retried on another ACTIVE component; if none can
 * read the chunk the copy stops, the sources stay in service (the target
 * stays SYNCHRONIZING) and it is tried again after a backoff (RETRY_MIN_MS,
 * doubling up to RETRY_MAX_MS) or at the next kick.  A target write error
 * fails the target.  A chunk that does not complete in io-timeout + 5 s
 * (the watchdog should have given its component up before) disconnects the
 * target; the chunk's memory is left to its late completion.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitmap.h"
#include "deadline.h"
#include "error.h"
#include "mirror.h"

#define CHUNK_BYTES BM_SYNC_CHUNK
#define DEPTH 8                       /* chunks in flight, clients idle */
#define DEPTH_BUSY 2                  /* ... clients busy */
#define ZERO_WINDOW (256u << 20)      /* largest zero run taken at once */
/* Largest zeroing request (mirror.h, BM_ZERO_PIECE), and one at a time
 * (nothing else starts while it is out): 8 MiB alone ends within 2 s down
 * to 4 MiB/s, eight at once, served in parallel or in turn, would not.  A
 * run the target already reads as zeros is skipped whole. */
#define ZERO_WRITE_MAX BM_ZERO_PIECE
#define CHECKPOINT_BYTES (64ull << 20)
#define CHECKPOINT_MS 5000
#define ACTIVITY_MS 100               /* client activity sampled this often */
#define BUSY_SHARE 10                 /* % of busy time that counts as busy */
#define HOLD_MS 500                   /* ... and how long it counts */
#define RATE_SAMPLES 11               /* one every 500 ms: the last 5 s */
#define RETRY_MIN_MS 2000
#define RETRY_MAX_MS 60000
#define WAIT_MS 100                   /* longest sleep between looks */

#define SYNC_MIN_DEFAULT (1ull << 20) /* md's sync_speed_min is 1000 KB/s */
#define SYNC_MAX_DEFAULT 0            /* no ceiling */

enum chunk_kind { CH_COPY, CH_ZERO, CH_SKIP };
enum chunk_stage { ST_READ, ST_WRITE, ST_DONE };

struct sync_run;

struct chunk {
	struct sync_run *run;
	uint64_t off;
	uint32_t len;
	int kind;                 /* enum chunk_kind */
	int stage;                /* enum chunk_stage: what is in flight */
	int src;                  /* component read from */
	uint32_t tried;           /* components that failed the read */
	uint64_t t0;
	void *buf;                /* CHUNK_BYTES, 4096-aligned */
	struct bm_breq br;
	struct bm_range_hold hold;
	bool held;                /* run->lock: hold not released yet */
	int result;               /* run->lock: the completion's */
	struct chunk *done_next;  /* run->lock: the completed list */
};

/* One copy onto one target.  On the heap with a reference per request in
 * flight: a request that never completes keeps it (and its buffers). */
struct sync_run {
	pthread_mutex_t lock;     /* refs, done list, chunks' held/result */
	pthread_cond_t cond;      /* a request completed */
	int refs;
	struct chunk *done_head;
	struct bm_mirror *m;
	struct bm_component *t;
	int head, count;          /* ring of chunks in offset order */
	struct chunk ch[DEPTH];
};

/* ---- the run and its completions ---------------------------------------- */

static void run_put_locked(struct sync_run *run)
{
	if (--run->refs > 0) {
		pthread_mutex_unlock(&run->lock);
		return;
	}
	pthread_mutex_unlock(&run->lock);
	for (int i = 0; i < DEPTH; i++)
		free(run->ch[i].buf);
	pthread_mutex_destroy(&run->lock);
	pthread_cond_destroy(&run->cond);
	free(run);
}

static struct sync_run *run_new(struct bm_mirror *m, struct bm_component *t)
{
	struct sync_run *run = calloc(1, sizeof(*run));
	pthread_condattr_t ca;

	if (!run)
		return NULL;
	for (int i = 0; i < DEPTH; i++) {
		run->ch[i].run = run;
		if (posix_memalign(&run->ch[i].buf, 4096, CHUNK_BYTES)) {
			run->ch[i].buf = NULL;
			for (int k = 0; k < i; k++)
				free(run->ch[k].buf);
			free(run);
			return NULL;
		}
	}
	pthread_mutex_init(&run->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&run->cond, &ca);
	pthread_condattr_destroy(&ca);
	run->refs = 1;
	run->m = m;
	run->t = t;
	return run;
}

/* Releases a chunk's hold once (the completion or this thread). */
static void release_hold_locked(struct sync_run *run, struct chunk *c)
{
	if (c->held) {
		c->held = false;
		bm_rangelock_excl_release(&run->m->rl, &c->hold);
	}
}

/* Backend completion: account, let the range go once the target holds the
 * chunk, and hand it to the sync thread. */
static void chunk_done(struct bm_breq *br, int result)
{
	struct chunk *c = br->opaque;
	struct sync_run *run = c->run;
	struct bm_mirror *m = run->m;
	bool read = c->stage == ST_READ;
	struct bm_component *comp = read ? &m->comp[c->src] : run->t;

	bm_comp_leave(comp, c->t0, br->op, !br->unanswered);
	bm_stats_account(&comp->stats, read ? BM_STAT_READ
	                 : c->kind == CH_ZERO ? BM_STAT_DELETE : BM_STAT_WRITE,
	                 c->len, bm_now_ns() - c->t0, result);
	pthread_mutex_lock(&run->lock);
	c->result = result;
	if (!read)
		release_hold_locked(run, c);
	c->done_next = run->done_head;
	run->done_head = c;
	pthread_cond_signal(&run->cond);
	run_put_locked(run);
}

/* Starts c's next request on comp; false (nothing in flight) if it could
 * not be started, with c->result set. */
static bool chunk_submit(struct sync_run *run, struct chunk *c,
                         struct bm_component *comp, enum bm_bop op)
{
	struct bm_backend *be;
	int err;

	c->br = (struct bm_breq){.op = op, .offset = c->off, .length = c->len,
	                         .buf = op == BM_BOP_TRIM ? NULL : c->buf,
	                         .done = chunk_done, .opaque = c};
	pthread_mutex_lock(&run->lock);
	run->refs++;
	pthread_mutex_unlock(&run->lock);
	c->t0 = bm_now_ns();
	bm_comp_enter(comp, c->t0);
	be = bm_comp_get(comp);
	err = be ? be->ops->submit(be, &c->br) : -ENOTCONN;
	if (be)
		bm_comp_put(comp);
	if (err == 0)
		return true;
	bm_comp_leave(comp, c->t0, op, false);
	pthread_mutex_lock(&run->lock);
	c->result = err;
	run->refs--; /* never the last: this thread holds one */
	pthread_mutex_unlock(&run->lock);
	return false;
}

/* ---- decisions ------------------------------------------------------------ */

/* The ACTIVE component (not t, not tried) with the fewest requests
 * outstanding, client reads included; ties go to prefer. */
static int pick_source(struct bm_mirror *m, struct bm_component *t,
                       uint32_t tried, int prefer)
{
	int best = -1, bestq = 0;

	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (c == t || (tried & (1u << i)) ||
		    atomic_load(&c->state) != BM_CS_ACTIVE)
			continue;
		int q = atomic_load(&c->inflight);
		if (best < 0 || q < bestq || (q == bestq && i == prefer)) {
			best = i;
			bestq = q;
		}
	}
	return best;
}

/* Asks comp about [off, off+len): see bm_backend_extent. */
static void ask_extent(struct bm_mirror *m, struct bm_component *comp,
                       uint64_t off, uint64_t len, uint64_t *run, bool *zero)
{
	struct bm_backend *be = comp ? bm_comp_get(comp) : NULL;

	*run = len;
	*zero = false;
	if (!be)
		return;
	bm_backend_extent(be, off, len, atomic_load(&m->io_timeout_ms), run,
	                  zero);
	bm_comp_put(comp);
}

/* The source asked about allocation: an ACTIVE component that can tell
 * (has the extent op), else any ACTIVE one (which says "all data"). */
static struct bm_component *extent_source(struct bm_mirror *m,
                                          struct bm_component *t)
{
	struct bm_component *any = NULL;

	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (c == t || atomic_load(&c->state) != BM_CS_ACTIVE)
			continue;
		/* held while looked at: a removal closes it once unused */
		struct bm_backend *be = bm_comp_get(c);
		if (!be)
			continue;
		bool tells = be->ops->extent != NULL;
		bm_comp_put(c);
		if (tells)
			return c;
		if (!any)
			any = c;
	}
	return any;
}

/* Does the target read zeros over all of [off, off+len)? */
static bool target_reads_zeros(struct bm_mirror *m, struct bm_component *t,
                               uint64_t off, uint64_t len)
{
	for (uint64_t pos = off; pos < off + len;) {
		uint64_t run;
		bool zero;
		ask_extent(m, t, pos, off + len - pos, &run, &zero);
		if (!zero)
			return false;
		pos += run;
	}
	return true;
}

/* Takes t out (failed or disconnected, after what err says). */
static void drop_target(struct bm_mirror *m, struct bm_component *t,
                        const char *what, int err)
{
	char why[160];

	snprintf(why, sizeof(why), "%s: %s", what, strerror(-err));
	pthread_mutex_lock(&m->meta_lock);
	bm_meta_drop_locked(m, t, bm_error_is_gone(err) ? BM_CS_DISCONNECTED
	                                                : BM_CS_FAILED, why);
	pthread_mutex_unlock(&m->meta_lock);
}

/* A source that went away or did not answer is given up; one that
 * answered with an error stays, as gmirror keeps it. */
static void source_failed(struct bm_mirror *m, int src, int err)
{
	char why[160];

	if (!bm_error_is_gone(err))
		return;
	snprintf(why, sizeof(why), "read error during sync: %s", strerror(-err));
	pthread_mutex_lock(&m->meta_lock);
	bm_meta_drop_locked(m, &m->comp[src], BM_CS_DISCONNECTED, why);
	pthread_mutex_unlock(&m->meta_lock);
}

static int flush_target(struct bm_mirror *m, struct bm_component *t)
{
	struct bm_backend *be = bm_comp_get(t);
	struct bm_patience slow;
	bm_comp_patience(m, t, &slow);
	int err = be ? bm_backend_io_wait_patient(be, BM_BOP_FLUSH, NULL, 0, 0,
	                                          0, atomic_load(&m->io_timeout_ms),
	                                          &slow)
	             : -ENOTCONN;
	if (be)
		bm_comp_put(t);
	return err;
}

/* Flushes the target, then records off (copied before the flush) in its
 * label. */
static int checkpoint(struct bm_mirror *m, struct bm_component *t,
                      uint64_t off)
{
	int err = flush_target(m, t);
	if (err < 0) {
		drop_target(m, t, "flush error during sync", err);
		return err;
	}
	atomic_store(&t->sync_durable, off);
	pthread_mutex_lock(&m->meta_lock);
	if (atomic_load(&t->state) == BM_CS_SYNCHRONIZING &&
	    (err = bm_meta_write_label(m, t)) < 0)
		bm_meta_fail_locked(m, t, "label write failed during sync");
	pthread_mutex_unlock(&m->meta_lock);
	return err;
}

/* ---- rate ----------------------------------------------------------------- */

struct pace {
	uint64_t next_ns;         /* the virtual clock: next copy allowed */
	uint64_t limit;           /* the rate it runs at (0: none) */
	uint64_t sample_ns, busy_ns;  /* client busy time at the last look */
	uint64_t busy_until_ns;   /* clients count as busy until then */
	uint64_t rate_ns[RATE_SAMPLES], rate_done[RATE_SAMPLES];
	int nrate;
};

/* Client busy time so far (the mirror's own row in stat: clients only). */
static uint64_t client_busy_ns(struct bm_mirror *m, uint64_t now)
{
	uint64_t busy = atomic_load(&m->stats.busy_ns);
	if (atomic_load(&m->queue) > 0) {
		uint64_t since = atomic_load(&m->stats.busy_since);
		if (now > since)
			busy += now - since;
	}
	return busy;
}

static bool clients_busy(struct bm_mirror *m, struct pace *p, uint64_t now)
{
	if (now - p->sample_ns >= ACTIVITY_MS * 1000000ull) {
		uint64_t busy = client_busy_ns(m, now);
		if ((busy - p->busy_ns) * 100 > (now - p->sample_ns) * BUSY_SHARE)
			p->busy_until_ns = now + HOLD_MS * 1000000ull;
		p->busy_ns = busy;
		p->sample_ns = now;
	}
	return now < p->busy_until_ns;
}

/* Bytes per second allowed now (0: no limit). */
static uint64_t rate_limit(struct bm_mirror *m, bool busy)
{
	uint64_t lo = atomic_load(&m->sync_min_rate);
	uint64_t hi = atomic_load(&m->sync_max_rate);

	if (busy && (hi == 0 || lo < hi))
		return lo;
	return hi;
}

/* The recent copy rate, from a sample every 500 ms over the last 5 s. */
static void rate_sample(struct bm_mirror *m, struct pace *p, uint64_t now,
                        uint64_t done)
{
	if (p->nrate && now - p->rate_ns[p->nrate - 1] < 500000000ull)
		return;
	if (p->nrate == RATE_SAMPLES) {
		memmove(p->rate_ns, p->rate_ns + 1, sizeof(p->rate_ns[0]) *
		        (RATE_SAMPLES - 1));
		memmove(p->rate_done, p->rate_done + 1, sizeof(p->rate_done[0]) *
		        (RATE_SAMPLES - 1));
		p->nrate--;
	}
	p->rate_ns[p->nrate] = now;
	p->rate_done[p->nrate] = done;
	p->nrate++;
	if (p->nrate >= 2) {
		uint64_t dt = now - p->rate_ns[0];
		uint64_t dd = done - p->rate_done[0];
		atomic_store(&m->sync_rate,
		             (uint64_t)((double)dd * 1e9 / (double)dt));
	}
}

/* ---- the copy ------------------------------------------------------------- */

/*
 * Prepares the chunk at off in c: what the source holds there, under the
 * chunk's hold.  A hole of the source is handled apart (skipped or
 * trimmed) only when it is at least CHUNK_BYTES long: smaller ones are
 * copied with the data around them, so a fragmented source costs full
 * chunks, not thousands of tiny requests.  data_until: the source said
 * data up to there (no need to ask again before it).  False when the hold
 * was not granted in WAIT_MS (an older window waits for this copy's
 * chunks: tend to them first).
 */
static bool chunk_prepare(struct sync_run *run, struct chunk *c, uint64_t off,
                          uint64_t *data_until)
{
	struct bm_mirror *m = run->m;
	struct bm_component *xs = extent_source(m, run->t);
	uint64_t left = m->size - off, n, len;
	uint64_t window = left < ZERO_WINDOW ? left : ZERO_WINDOW;
	bool zero = false;

	if (atomic_load(&run->t->sync_regions)) {
		/* only the bitmap's set regions (bitmap.c): a clean run is
		 * skipped whole, without a hold.  A client write there is
		 * issued to the target too (it is in service), after its bit
		 * is set. */
		uint64_t rs = bm_bitmap_region_size(m), r = off / rs, end = off;
		while (end < m->size && !bm_bitmap_region_set(m, r)) {
			end = (r + 1) * rs;
			r++;
		}
		if (end > m->size)
			end = m->size;
		if (end > off) {
			c->off = off;
			c->len = (uint32_t)(end - off > UINT32_MAX - 4095
			                    ? (UINT32_MAX - 4095) & ~(uint64_t)4095
			                    : end - off);
			c->kind = CH_SKIP;
			c->stage = ST_READ;
			c->tried = 0;
			c->result = 0;
			c->held = false;
			return true;
		}
		/* a set region: copied as usual, not past its end */
		uint64_t region_end = (r + 1) * rs;
		if (region_end < m->size && left > region_end - off)
			left = region_end - off;
		if (window > left)
			window = left;
		if (*data_until > region_end)
			*data_until = region_end;
	}
	if (off < *data_until) {
		n = *data_until - off;
	} else {
		ask_extent(m, xs, off, window, &n, &zero);
		if (!zero)
			*data_until = off + n;
		else if (n < CHUNK_BYTES && n < left)
			zero = false; /* a small hole: copied with what follows */
	}
	if (zero) {
		len = n;
	} else {
		len = left < CHUNK_BYTES ? left : CHUNK_BYTES;
		if (n < len) {
			/* stop before a large hole that starts inside */
			uint64_t z;
			bool hole;
			ask_extent(m, xs, off + n, window - n, &z, &hole);
			if (hole && (z >= CHUNK_BYTES || off + n + z >= m->size))
				len = n;
		}
	}
	c->off = off;
	c->len = (uint32_t)len;
	c->kind = CH_COPY;
	c->stage = ST_READ;
	c->tried = 0;
	c->result = 0;
	if (!bm_rangelock_excl_try_hold(&m->rl, &c->hold, off, len, WAIT_MS,
	                                NULL))
		return false;
	c->held = true;
	if (!zero)
		return true;
	/* Again under the hold: a client write may have landed. */
	ask_extent(m, xs, off, len, &n, &zero);
	if (!zero || (n < CHUNK_BYTES && n < len)) {
		if (len > CHUNK_BYTES) { /* copy a chunk of it */
			bm_rangelock_excl_shrink(&m->rl, &c->hold, CHUNK_BYTES);
			c->len = CHUNK_BYTES;
		}
		return true;
	}
	if (n < len) {
		bm_rangelock_excl_shrink(&m->rl, &c->hold, n);
		c->len = (uint32_t)n;
	}
	if (target_reads_zeros(m, run->t, off, c->len)) {
		c->kind = CH_SKIP;
		return true;
	}
	c->kind = CH_ZERO;
	if (c->len > ZERO_WRITE_MAX) {
		bm_rangelock_excl_shrink(&m->rl, &c->hold, ZERO_WRITE_MAX);
		c->len = ZERO_WRITE_MAX;
	}
	return true;
}

/* Starts a prepared chunk; false if it failed at once (c->result). */
static bool chunk_start(struct sync_run *run, struct chunk *c, int *last_src)
{
	struct bm_mirror *m = run->m;

	switch (c->kind) {
	case CH_SKIP:
		pthread_mutex_lock(&run->lock);
		release_hold_locked(run, c);
		pthread_mutex_unlock(&run->lock);
		c->stage = ST_DONE;
		return true;
	case CH_ZERO:
		c->stage = ST_WRITE;
		return chunk_submit(run, c, run->t, BM_BOP_TRIM);
	default:
		c->src = pick_source(m, run->t, c->tried, *last_src);
		if (c->src < 0) {
			c->result = -EIO;
			return false;
		}
		*last_src = c->src;
		c->stage = ST_READ;
		return chunk_submit(run, c, &m->comp[c->src], BM_BOP_READ);
	}
}

/* What this thread does with a chunk whose request completed (or could not
 * start).  Returns 0, or <0 when the copy must stop: no source could read
 * the chunk (*unreadable), or the target failed it (dropped here). */
static int chunk_next(struct sync_run *run, struct chunk *c, int *last_src,
                      bool *unreadable)
{
	struct bm_mirror *m = run->m;

	for (;;) {
		int err = c->result;
		if (c->stage == ST_READ) {
			if (err == 0) {
				c->stage = ST_WRITE;
				if (chunk_submit(run, c, run->t, BM_BOP_WRITE))
					return 0;
				continue; /* c->result: the write's */
			}
			if (c->src >= 0) {
				source_failed(m, c->src, err);
				c->tried |= 1u << c->src;
			}
			c->src = pick_source(m, run->t, c->tried, *last_src);
			if (c->src < 0) {
				*unreadable = true;
				return err < 0 ? err : -EIO;
			}
			c->result = 0;
			if (chunk_submit(run, c, &m->comp[c->src], BM_BOP_READ))
				return 0;
			continue;
		}
		if (err < 0) {
			/* at once: the next label write (a client's first
			 * write marks DIRTY) must not find it first */
			drop_target(m, run->t, c->kind == CH_ZERO
			            ? "trim error during sync"
			            : "write error during sync", err);
			return err;
		}
		c->stage = ST_DONE;
		return 0;
	}
}

/* Releases what this thread still holds (chunks not in flight). */
static void release_idle_holds(struct sync_run *run, bool everything)
{
	pthread_mutex_lock(&run->lock);
	for (int k = 0; k < run->count; k++) {
		struct chunk *c = &run->ch[(run->head + k) % DEPTH];
		if (everything || c->stage == ST_DONE)
			release_hold_locked(run, c);
	}
	pthread_mutex_unlock(&run->lock);
}

/*
 * Whether this copy of t covers only the bitmap's set regions (bitmap.c
 * says when that is enough), and the target's own bitmap brought up to
 * date first (it is in service: later bits reach it as they are set).
 * A copy in full clears t->sync_full only when it completes.
 */
static bool decide_regions(struct bm_mirror *m, struct bm_component *t)
{
	bool regions = false;

	pthread_mutex_lock(&m->meta_lock);
	if (m->bitmap && atomic_load(&t->state) == BM_CS_SYNCHRONIZING) {
		if (bm_bitmap_write_component_locked(m, t) < 0)
			fprintf(stderr, "blkmirror: %s: cannot write the bitmap of "
			        "%s; copying it in full\n", m->name, t->path);
		else
			regions = !t->sync_full && bm_bitmap_is_member(m, t);
	}
	atomic_store(&t->sync_regions, regions);
	pthread_mutex_unlock(&m->meta_lock);
	return regions;
}

/* Copies to one target; returns 0 when done, 1 if stopped, <0 on error. */
static int sync_one(struct bm_mirror *m, struct bm_component *t)
{
	/* Published before the state and offset are read: a reconnect
	 * (recover.c) waits while this copy holds t, and one that finished
	 * before is seen here as offset 0. */
	atomic_store(&m->sync_target, t);
	if (atomic_load(&t->state) != BM_CS_SYNCHRONIZING)
		return -EAGAIN;
	struct sync_run *run = run_new(m, t);
	if (!run) {
		fprintf(stderr, "blkmirror: %s: no memory to synchronize\n",
		        m->name);
		return 1;
	}
	uint64_t start = atomic_load(&t->sync_offset);
	/* a pass over a range again (recopy_end) ends there; anything else
	 * (a restart, a new copy) goes to the end */
	uint64_t again_end = atomic_exchange(&t->recopy_end, 0);
	uint64_t end = again_end > start ? again_end : m->size;
	bool regions = decide_regions(m, t);
	uint64_t next = start, done = start, ckpt_off = start;
	uint64_t copied_since = 0, data_until = 0;
	uint64_t now = bm_now_ns(), ckpt_ns = now, last_progress_ns = now;
	struct pace pace = {.next_ns = now, .sample_ns = now,
	                    .busy_ns = client_busy_ns(m, now)};
	int last_src = -1, err = 0, stopped = 0;
	bool unreadable = false;
	uint64_t unread_off = 0;

	atomic_store(&m->sync_rate, 0);
	uint64_t copied_total = 0;
	if (end < m->size)
		bm_event_post(m, BM_SEV_INFO, BM_EV_SYNC_STARTED, t->path,
		              "copying offsets %llu to %llu again%s",
		              (unsigned long long)start, (unsigned long long)end,
		              regions ? " (the bitmap's dirty regions there)" : "");
	else if (regions)
		bm_event_post(m, BM_SEV_INFO, BM_EV_SYNC_STARTED, t->path,
		              "copying from offset %llu of %llu: the bitmap's "
		              "%llu dirty regions of %llu bytes only",
		              (unsigned long long)start,
		              (unsigned long long)m->size,
		              (unsigned long long)bm_bitmap_dirty_count(m),
		              (unsigned long long)bm_bitmap_region_size(m));
	else
		bm_event_post(m, BM_SEV_INFO, BM_EV_SYNC_STARTED, t->path,
		              "copying from offset %llu of %llu",
		              (unsigned long long)start,
		              (unsigned long long)m->size);
	for (;;) {
		/* Completed requests: next step of each. */
		pthread_mutex_lock(&run->lock);
		struct chunk *list = run->done_head;
		run->done_head = NULL;
		pthread_mutex_unlock(&run->lock);
		if (list)
			last_progress_ns = bm_now_ns();
		for (struct chunk *c = list, *nx; c; c = nx) {
			nx = c->done_next;
			bool unread = false;
			int e = chunk_next(run, c, &last_src, &unread);
			if (e < 0 && !err) {
				err = e;
				unreadable = unread;
				unread_off = c->off;
			}
			if (e < 0)
				c->stage = ST_DONE; /* nothing in flight */
		}
		if (err)
			release_idle_holds(run, false);
		/* The copied offset: the oldest unfinished chunk's start. */
		while (run->count && run->ch[run->head].stage == ST_DONE &&
		       !err) {
			struct chunk *c = &run->ch[run->head];
			done = c->off + c->len;
			if (c->kind == CH_COPY) {
				copied_since += c->len;
				copied_total += c->len;
				atomic_fetch_add(&t->sync_copied, c->len);
			}
			run->head = (run->head + 1) % DEPTH;
			run->count--;
		}
		atomic_store(&t->sync_offset, done);
		now = bm_now_ns();
		rate_sample(m, &pace, now, done);
		if (!err && done > ckpt_off && done < m->size &&
		    (copied_since >= CHECKPOINT_BYTES ||
		     now - ckpt_ns >= CHECKPOINT_MS * 1000000ull)) {
			err = checkpoint(m, t, done);
			ckpt_off = done;
			copied_since = 0;
			ckpt_ns = bm_now_ns();
		}
		if (!err && !stopped) {
			if (atomic_load(&m->sync_stop))
				stopped = 1;
			else if (atomic_load(&t->state) != BM_CS_SYNCHRONIZING)
				err = -EIO;
		}
		bool ending = err || stopped;
		int inflight = 0, writing = 0, zeroing = 0;
		for (int k = 0; k < run->count; k++) {
			struct chunk *c = &run->ch[(run->head + k) % DEPTH];
			inflight += c->stage != ST_DONE;
			writing += c->stage == ST_WRITE;
			zeroing += c->stage != ST_DONE && c->kind == CH_ZERO;
		}
		if (ending && inflight == 0)
			break;
		if (!ending && next >= end && run->count == 0)
			break;
		/* More chunks, as the pipeline and the rate allow. */
		bool busy = clients_busy(m, &pace, now);
		uint64_t limit = rate_limit(m, busy);
		uint64_t wait_ns = WAIT_MS * 1000000ull;
		/* one zeroing at a time (ZERO_WRITE_MAX says why) */
		if (!ending && next < end && !zeroing &&
		    run->count < (busy ? DEPTH_BUSY : DEPTH)) {
			if (limit != pace.limit) {
				/* changed (configure, clients came or went):
				 * the new rate from now on */
				pace.limit = limit;
				pace.next_ns = now;
			}
			if (!limit || now >= pace.next_ns) {
				struct chunk *c =
				        &run->ch[(run->head + run->count) % DEPTH];
				if (!chunk_prepare(run, c, next, &data_until))
					continue; /* (it waited WAIT_MS) */
				run->count++;
				next += c->len;
				if (c->kind == CH_COPY && limit)
					pace.next_ns = (pace.next_ns > now ? pace.next_ns
					                                   : now) +
					               (uint64_t)((double)c->len * 1e9 /
					                          (double)limit);
				if (!chunk_start(run, c, &last_src)) {
					pthread_mutex_lock(&run->lock);
					c->done_next = run->done_head;
					run->done_head = c;
					pthread_mutex_unlock(&run->lock);
				}
				continue;
			}
			if (pace.next_ns - now < wait_ns)
				wait_ns = pace.next_ns - now;
		}
		/* A chunk that never completes: the watchdog gives its
		 * component up (at io-timeout if it answers nothing, at
		 * BM_SLOW_FACTOR x io-timeout if it answers slowly); this is
		 * the last resort.  A write may still land: the target goes
		 * before its range is let go. */
		long tmo = atomic_load(&m->io_timeout_ms);
		long most = atomic_load(&m->stopping) ? tmo : tmo * BM_SLOW_FACTOR;
		if (inflight && tmo > 0 &&
		    now - last_progress_ns > (uint64_t)(most + 5000) * 1000000ull) {
			if (writing)
				drop_target(m, t, "sync I/O did not complete",
				            -ETIMEDOUT);
			err = err ? err : -ETIMEDOUT;
			break;
		}
		pthread_mutex_lock(&run->lock);
		if (!run->done_head) {
			struct timespec dl = bm_deadline_ms(CLOCK_MONOTONIC,
			                                    (long long)(wait_ns / 1000000) + 1);
			pthread_cond_timedwait(&run->cond, &run->lock, &dl);
		}
		pthread_mutex_unlock(&run->lock);
	}
	/* Whatever is left (stopped, failed, gave up) lets its range go. */
	release_idle_holds(run, true);
	pthread_mutex_lock(&run->lock);
	run_put_locked(run);
	atomic_store(&m->sync_rate, 0);
	if (stopped && !err)
		return 1;
	if (err) {
		if (unreadable) {
			pthread_mutex_lock(&m->info_lock);
			snprintf(m->sync_error, sizeof(m->sync_error),
			         "sync of %.180s stopped: no component could read "
			         "offset %llu", t->path, (unsigned long long)unread_off);
			pthread_mutex_unlock(&m->info_lock);
		}
		return err;
	}
	/* (a pass over a range again: the rest was copied before) */
	if (end < m->size)
		atomic_store(&t->sync_offset, m->size);
	/* Done: durable first, then ACTIVE in the label. */
	err = flush_target(m, t);
	if (err < 0) {
		drop_target(m, t, "flush error at the end of sync", err);
		return err;
	}
	pthread_mutex_lock(&m->meta_lock);
	if (atomic_load(&t->state) != BM_CS_SYNCHRONIZING) {
		pthread_mutex_unlock(&m->meta_lock);
		return -EIO;
	}
	/* A write every ACTIVE component failed reached t behind the copy
	 * (compio.c write_decide, under meta_lock too): t differs there, so
	 * the copy goes over it again from there (called again: -EAGAIN). */
	uint64_t again = atomic_exchange(&t->recopy_from, 0);
	uint64_t again_to = atomic_exchange(&t->recopy_to, 0);
	if (again) {
		uint64_t from = (again - 1) / CHUNK_BYTES * CHUNK_BYTES;
		/* only that range again (the rest is copied and the target in
		 * service since): a source that keeps failing the writes a
		 * client keeps retrying costs a short pass each time, not a
		 * copy from there to the end */
		uint64_t to = (again_to + CHUNK_BYTES - 1) / CHUNK_BYTES *
		              CHUNK_BYTES;
		if (to <= from || to > m->size)
			to = m->size; /* (to the end: as before) */
		atomic_store(&t->recopy_end, to < m->size ? to : 0);
		atomic_store(&t->sync_offset, from);
		/* a stop meanwhile resumes from there, not past it */
		if (atomic_load(&t->sync_durable) > from) {
			atomic_store(&t->sync_durable, from);
			if (bm_meta_write_label(m, t) < 0)
				bm_meta_fail_locked(m, t, "label write failed "
				                    "during sync");
		}
		pthread_mutex_unlock(&m->meta_lock);
		fprintf(stderr, "blkmirror: %s: %s took a write at offset %llu "
		        "that every ACTIVE component failed: copied again from "
		        "offset %llu to %llu\n", m->name, t->path,
		        (unsigned long long)(again - 1), (unsigned long long)from,
		        (unsigned long long)to);
		return -EAGAIN;
	}
	/* Every label says t is in sync before its state does (status,
	 * activate --wait): t's own, then the others', which still say t
	 * missed writes (their record of the members): a later failure of
	 * theirs, with t written alone, would read at the next start as two
	 * that each took writes while the other was away (split brain).
	 * Before, t was seen ACTIVE just before the others were rewritten,
	 * and a component lost in between kept the stale record. */
	t->sync_ending = true;
	t->label.component_flags &= ~(BM_CF_SYNCHRONIZING | BM_CF_FORCE_SYNC);
	t->label.genid = m->genid;
	t->label.syncid = m->syncid;
	if (bm_meta_write_label(m, t) < 0) {
		t->sync_ending = false;
		bm_meta_fail_locked(m, t, "label write failed at the end of sync");
	} else {
		bm_set_why(m, t, "%s", "");
		if (bm_meta_write_all_labels(m) < 0)
			fprintf(stderr, "blkmirror: %s: a label could not be "
			        "updated as %s was synchronized\n", m->name,
			        t->path);
		/* said before anyone can see it ACTIVE (activate --wait
		 * returns then) */
		fprintf(stderr, "blkmirror: %s: %s synchronized: %llu bytes "
		        "copied (%s)\n", m->name, t->path,
		        (unsigned long long)copied_total,
		        end < m->size ? "a range again"
		        : regions ? "bitmap: dirty regions only" : "in full");
		t->sync_full = false;
		atomic_store(&t->state, BM_CS_ACTIVE);
		t->sync_ending = false;
	}
	m->degraded = false;
	for (int i = 0; i < m->ncomp; i++)
		if (atomic_load(&m->comp[i].state) != BM_CS_ACTIVE &&
		    bm_comp_present(&m->comp[i]))
			m->degraded = true;
	pthread_mutex_unlock(&m->meta_lock);
	pthread_mutex_lock(&m->info_lock);
	m->sync_error[0] = '\0';
	pthread_mutex_unlock(&m->info_lock);
	return 0;
}

static struct bm_component *next_target(struct bm_mirror *m)
{
	for (int i = 0; i < m->ncomp; i++)
		if (atomic_load(&m->comp[i].state) == BM_CS_SYNCHRONIZING)
			return &m->comp[i];
	return NULL;
}

static void *sync_main(void *arg)
{
	struct bm_mirror *m = arg;
	struct bm_component *t;
	int retry_ms = 0;  /* > 0: a copy stopped on a read error; again then */

	pthread_setname_np(pthread_self(), "bm-sync");
	pthread_mutex_lock(&m->sync_lock);
	for (;;) {
		if (retry_ms > 0 && !m->sync_kick && !atomic_load(&m->sync_stop)) {
			struct timespec dl = bm_deadline_ms(CLOCK_MONOTONIC, retry_ms);
			while (!m->sync_kick && !atomic_load(&m->sync_stop) &&
			       pthread_cond_timedwait(&m->sync_cond, &m->sync_lock,
			                              &dl) != ETIMEDOUT)
				;
			m->sync_kick = true; /* time to try again */
		}
		while (!m->sync_kick && !atomic_load(&m->sync_stop))
			pthread_cond_wait(&m->sync_cond, &m->sync_lock);
		if (atomic_load(&m->sync_stop))
			break;
		m->sync_kick = false;
		pthread_mutex_unlock(&m->sync_lock);
		bool stuck = false;
		while (!atomic_load(&m->sync_stop) &&
		       (t = next_target(m)) != NULL) {
			atomic_store(&m->sync_running, true);
			int err = sync_one(m, t);
			bm_event_sync_ended(m, t, err);
			atomic_store(&m->sync_target, NULL);
			atomic_store(&m->sync_running, false);
			if (err == -EAGAIN)
				continue;
			if (err > 0)
				break; /* stopped */
			if (err < 0 && atomic_load(&t->state) == BM_CS_SYNCHRONIZING) {
				stuck = true; /* no source could read: later */
				break;
			}
		}
		retry_ms = !stuck ? 0 : retry_ms == 0 ? RETRY_MIN_MS
		         : retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : retry_ms * 2;
		pthread_mutex_lock(&m->sync_lock);
	}
	pthread_mutex_unlock(&m->sync_lock);
	return NULL;
}

/* ---- what others see ------------------------------------------------------ */

int bm_mirror_sync_progress(bm_mirror *m, int comp, struct bm_sync_progress *p)
{
	if (comp < 0 || comp >= m->ncomp)
		return 0;
	struct bm_component *c = &m->comp[comp];
	if (atomic_load(&c->state) != BM_CS_SYNCHRONIZING)
		return 0;
	memset(p, 0, sizeof(*p));
	snprintf(p->path, sizeof(p->path), "%s", c->path);
	p->done = atomic_load(&c->sync_offset);
	p->total = m->size;
	p->rate = atomic_load(&m->sync_target) == c ? atomic_load(&m->sync_rate)
	                                            : 0;
	p->eta_s = p->rate ? (int64_t)((p->total - p->done + p->rate - 1) /
	                               p->rate) : -1;
	return 1;
}

void bm_sync_progress_text(struct bm_mirror *m, int comp, char *buf,
                           size_t len)
{
	struct bm_sync_progress p;
	char left[32] = "";

	if (bm_mirror_sync_progress(m, comp, &p) != 1) {
		snprintf(buf, len, "0%%");
		return;
	}
	int pct = (int)(p.done * 100 / (p.total ? p.total : 1));
	if (p.rate == 0) {
		snprintf(buf, len, "%d%%", pct);
		return;
	}
	if (p.eta_s >= 3600)
		snprintf(left, sizeof(left), "%" PRId64 "h%02" PRId64 "m",
		         p.eta_s / 3600, p.eta_s / 60 % 60);
	else if (p.eta_s >= 60)
		snprintf(left, sizeof(left), "%" PRId64 "m%02" PRId64 "s",
		         p.eta_s / 60, p.eta_s % 60);
	else
		snprintf(left, sizeof(left), "%" PRId64 "s", p.eta_s);
	snprintf(buf, len, "%d%%, %.1f MiB/s, %s left", pct,
	         (double)p.rate / (1 << 20), left);
}

int bm_mirror_set_sync_rates(bm_mirror *m, uint64_t min, uint64_t max)
{
	if (min == UINT64_MAX)
		min = atomic_load(&m->sync_min_rate);
	if (max == UINT64_MAX)
		max = atomic_load(&m->sync_max_rate);
	if (min == 0)
		return bm_error(EINVAL, "the sync floor must be above 0");
	if (max && min > max)
		return bm_error(EINVAL, "sync-min (%" PRIu64 " bytes/s) is above "
		                "sync-max (%" PRIu64 " bytes/s)", min, max);
	atomic_store(&m->sync_min_rate, min);
	atomic_store(&m->sync_max_rate, max);
	return 0;
}

void bm_mirror_sync_rates(bm_mirror *m, uint64_t *min, uint64_t *max)
{
	*min = atomic_load(&m->sync_min_rate);
	*max = atomic_load(&m->sync_max_rate);
}

/* ---- the thread ----------------------------------------------------------- */

int bm_sync_start(struct bm_mirror *m)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&m->sync_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->sync_cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_store(&m->sync_stop, false);
	atomic_store(&m->sync_min_rate, SYNC_MIN_DEFAULT);
	atomic_store(&m->sync_max_rate, SYNC_MAX_DEFAULT);
	atomic_store(&m->sync_rate, 0);
	m->sync_kick = !(m->mirror_flags & BM_MF_NOAUTOSYNC);
	if (pthread_create(&m->sync_thread, NULL, sync_main, m) != 0)
		return bm_error(EAGAIN, "cannot start the sync thread");
	return 0;
}

void bm_sync_kick(struct bm_mirror *m)
{
	pthread_mutex_lock(&m->sync_lock);
	m->sync_kick = true;
	pthread_cond_signal(&m->sync_cond);
	pthread_mutex_unlock(&m->sync_lock);
}

/* Asks the copy to stop at the next chunk (keeping its checkpoint). */
void bm_sync_request_stop(struct bm_mirror *m)
{
	pthread_mutex_lock(&m->sync_lock);
	atomic_store(&m->sync_stop, true);
	pthread_cond_signal(&m->sync_cond);
	pthread_mutex_unlock(&m->sync_lock);
}

/* Stops it and waits for the thread.  sync_lock stays until
 * bm_sync_free: a reconnect may still kick. */
void bm_sync_stop(struct bm_mirror *m)
{
	bm_sync_request_stop(m);
	pthread_join(m->sync_thread, NULL);
}

void bm_sync_free(struct bm_mirror *m)
{
	pthread_mutex_destroy(&m->sync_lock);
	pthread_cond_destroy(&m->sync_cond);
}
