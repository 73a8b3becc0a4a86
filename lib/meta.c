/*
 * Metadata: label writes, DIRTY/clean marking, and recording a component's
 * departure (failed or disconnected).  Everything here runs under
 * meta_lock, and every label or flush has a deadline (io_timeout_ms), so a
 * component that stops answering holds the lock at most that long; one
 * that answers in order behind a slow queue, at most 4 x io-timeout for a
 * series of waits (bm_comp_patience_locked); 8 x while a copy runs, when
 * a mark writes the full labels first and then the copies' (two waits in
 * a row: bm_meta_write_all_labels).  Writes to several components go to
 * all at once (bm_backend_io_wait_all).
 *
 * Order of durability (what makes "never lose an acknowledged write" hold):
 *  - DIRTY is on disk on every writable component before the first write
 *    after a clean period is issued, so a crash is always detected; if the
 *    only ACTIVE component cannot record it, the write fails;
 *  - a component's departure is on disk (genid bumped on every survivor)
 *    before the write that found it is acknowledged, so the departed copy
 *    can never be taken for current at the next assembly; if no ACTIVE
 *    survivor could record it, the mirror refuses writes (meta_broken)
 *    until a label write succeeds again;
 *  - clean is written only after a successful flush of every component
 *    still in service, with no write in flight; a failed flush or label
 *    write keeps the mirror DIRTY (the next start resynchronizes);
 *  - a SYNCHRONIZING component's label records only the part of the copy
 *    that was flushed (sync_durable), never more.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitmap.h"
#include "error.h"
#include "mirror.h"

bool bm_error_is_gone(int err)
{
	switch (err < 0 ? -err : err) {
	case ENOTCONN: case ECONNRESET: case ECONNABORTED: case ESHUTDOWN:
	case EPIPE: case ENODEV: case ENXIO: case ETIMEDOUT: case ECONNREFUSED:
		return true;
	default:
		return false;
	}
}

void bm_set_why(struct bm_mirror *m, struct bm_component *c,
                const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&m->info_lock);
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->retry_why[0] = '\0'; /* (of the reason before) */
	pthread_mutex_unlock(&m->info_lock);
}

void bm_set_retry_why(struct bm_mirror *m, struct bm_component *c,
                      const char *err)
{
	pthread_mutex_lock(&m->info_lock);
	if (strstr(c->why, err))
		c->retry_why[0] = '\0';
	else
		snprintf(c->retry_why, sizeof(c->retry_why), "%s", err);
	c->retry_why_ms = bm_now_ms();
	pthread_mutex_unlock(&m->info_lock);
}

static long timeout_of(struct bm_mirror *m)
{
	return atomic_load(&m->io_timeout_ms);
}

/* The one label writer: encodes l into the component's last 4 KiB and
 * flushes, each step within timeout_ms (<= 0: no deadline), and longer
 * while p (NULL: none) says the component is only slow. */
int bm_label_store(struct bm_backend *be, const struct bm_label *l,
                   long timeout_ms, const struct bm_patience *p)
{
	uint8_t *buf;
	int err;

	if (posix_memalign((void **)&buf, 4096, BM_LABEL_SIZE))
		return -ENOMEM;
	bm_label_encode(l, buf);
	err = bm_backend_io_wait_patient(be, BM_BOP_WRITE, buf, BM_LABEL_SIZE,
	                                 bm_label_offset(be->size), 0,
	                                 timeout_ms, p);
	if (err == 0)
		err = bm_backend_io_wait_patient(be, BM_BOP_FLUSH, NULL, 0, 0, 0,
		                                 timeout_ms, p);
	free(buf);
	return err;
}

/* The state a label records for c: ACTIVE from the moment its copy is
 * done (sync_ending), before the state says so, so that every label says
 * it holds every write before anyone sees it ACTIVE (meta_lock held). */
static int label_state(const struct bm_component *c)
{
	return c->sync_ending ? BM_CS_ACTIVE : atomic_load(&c->state);
}

/*
 * What c's label says about the others (split-brain detection,
 * assembly_decide.c): the members' ids, and which of them missed writes
 * that c holds.  A member out of service (absent, failed, disconnected,
 * deactivated) while the mirror is DIRTY misses writes; one that is ACTIVE
 * again has them all.  With the time of the write, for the refusal's
 * message.
 */
static void record_members(struct bm_mirror *m, struct bm_component *c)
{
	bool dirty = atomic_load(&m->dirty);
	int self = (int)(c - m->comp);

	memset(c->label.member_id, 0, sizeof(c->label.member_id));
	for (int i = 0; i < m->ncomp && i < BM_MAX_COMPONENTS; i++) {
		struct bm_component *s = &m->comp[i];
		int st = label_state(s);
		uint64_t id = st == BM_CS_ABSENT ? s->known_id
		                                 : s->label.component_id;
		if (st == BM_CS_REMOVED || id == 0) {
			m->missed &= ~(1u << i);
			continue;
		}
		if (st == BM_CS_ACTIVE)
			m->missed &= ~(1u << i);
		else if (dirty && st != BM_CS_SYNCHRONIZING)
			m->missed |= 1u << i;
		c->label.member_id[i] = id;
	}
	c->label.missed = m->missed & ~(1u << self);
	if (dirty)
		c->label.last_write = (uint64_t)time(NULL);
}

/* meta_lock held: the fewest events on the disk of a component other
 * than for_c whose label there is full (and, if active_only, that is
 * still ACTIVE with a full label in memory); false if there is none. */
static bool fewest_full_on_disk(const struct bm_mirror *m,
                                const struct bm_component *for_c,
                                bool active_only, uint64_t *fewest)
{
	bool any = false;

	for (int i = 0; i < m->ncomp; i++) {
		const struct bm_component *c = &m->comp[i];
		int st = atomic_load(&c->state);
		if (c == for_c || st == BM_CS_REMOVED || !c->full_on_disk ||
		    !c->label_seq_landed)
			continue;
		/* (one whose label no longer says full is leaving: a rebuild
		 * of an ACTIVE component marks its label first) */
		if (active_only &&
		    (st != BM_CS_ACTIVE || !bm_label_full(&c->label)))
			continue;
		if (!any || c->events_on_disk < *fewest)
			*fewest = c->events_on_disk;
		any = true;
	}
	return any;
}

/* meta_lock held: the most events a label that is not full may carry: the
 * fewest a full label holds on the disk of a component still ACTIVE, each
 * of them a possible source of the next start (the one with most events
 * leads, and any may be the one left; assembly_decide.c rule 4 compares
 * events only).  Not the highest ever landed full (m->events_landed), nor
 * the highest of the ACTIVE ones: a copy that ended (its full label
 * landed a new count) while another ACTIVE component's label writes
 * failed, and that was then failed or copied again, would carry a count
 * the other's disk lacks, and the next start would take that one for an
 * older copy put back and refuse; so would a component inserted INACTIVE
 * meanwhile (insert -i), whose label nothing rewrites later.  Fewer than
 * the source's only costs a copy that resumes: it starts again from 0.
 * With no such ACTIVE component (a mark whose label writes failed while
 * another was being deactivated, say), the fewest on any disk in the
 * mirror that holds a full label; with none at all, m->events_landed. */
static uint64_t events_cap(const struct bm_mirror *m,
                           const struct bm_component *for_c)
{
	uint64_t cap = 0;

	if (!fewest_full_on_disk(m, for_c, true, &cap) &&
	    !fewest_full_on_disk(m, for_c, false, &cap))
		return m->events_landed;
	return cap < m->events_landed ? cap : m->events_landed;
}

/* meta_lock held: what c's next label write says beyond what the caller
 * set: the members, a new seq, the copy's progress. */
static void label_prepare(struct bm_mirror *m, struct bm_component *c)
{
	record_members(m, c);
	c->label.seq++;
	c->label.events = m->events;
	/* A label that is not full never counts past the full ones on disk:
	 * at the next start a component being copied (or deactivated) with
	 * more events than the source tells that the source is an older
	 * copy put back (assembly_decide.c rule 4), and that must not happen
	 * because a full label's write failed or had not landed yet (a mark
	 * writes the full labels first: bm_meta_write_all_labels). */
	if (!bm_label_full(&c->label)) {
		uint64_t cap = events_cap(m, c);
		if (c->label.events > cap)
			c->label.events = cap;
	}
	c->label.version = BM_LABEL_VERSION; /* (what encode writes) */
	c->label.sync_offset =
		label_state(c) == BM_CS_SYNCHRONIZING
			? atomic_load(&c->sync_durable) : 0;
	/* a range the copy must go over again (compio.c write_decide): a
	 * stop now resumes before it, not past it */
	uint64_t again = atomic_load(&c->recopy_from);
	if (again && c->label.sync_offset > again - 1)
		c->label.sync_offset = (again - 1) / BM_SYNC_CHUNK * BM_SYNC_CHUNK;
}

/* meta_lock held: records how c's label write ended. */
static int label_result(struct bm_mirror *m, struct bm_component *c, int err)
{
	c->label_stale = err < 0;
	c->label_err = err;
	if (err == 0)
		bm_comp_label_on_disk(c);
	if (err == 0 && bm_label_full(&c->label) &&
	    c->label.events > m->events_landed)
		m->events_landed = c->label.events;
	if (err < 0)
		fprintf(stderr, "blkmirror: %s: cannot write the label of %s: %s\n",
		        m->name, c->path, strerror(-err));
	return err;
}

/* Caller holds meta_lock.  Writes c's label (seq bumped) and flushes it. */
int bm_meta_write_label(struct bm_mirror *m, struct bm_component *c)
{
	BM_ASSERT_HELD(&m->meta_lock);
	if (!c->be)
		return -ENODEV;
	if (m->no_metadata)
		return 0;
	label_prepare(m, c);
	struct bm_patience slow;
	bm_comp_patience_locked(m, c, &slow);
	return label_result(m, c, bm_label_store(c->be, &c->label,
	                                         timeout_of(m), &slow));
}

/* Caller holds meta_lock.  Writes the labels of comps[0..n) (prepared) at
 * once: the write to each, then the flush of each that took it, so that
 * the time is one component's (the slowest), not the sum; records each
 * result.  The first error, or 0. */
static int write_labels_at_once(struct bm_mirror *m,
                                struct bm_component **comps, int n)
{
	struct bm_wait_op ops[BM_MAX_COMPONENTS];
	struct bm_patience slow[BM_MAX_COMPONENTS];
	uint8_t *bufs = NULL;
	int first_err = 0, nflush = 0, fidx[BM_MAX_COMPONENTS];

	if (n == 0)
		return 0;
	if (posix_memalign((void **)&bufs, 4096, (size_t)n * BM_LABEL_SIZE)) {
		for (int i = 0; i < n; i++)
			label_result(m, comps[i], -ENOMEM);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct bm_component *c = comps[i];
		uint8_t *b = bufs + (size_t)i * BM_LABEL_SIZE;
		bm_label_encode(&c->label, b);
		bm_comp_patience_locked(m, c, &slow[i]);
		ops[i] = (struct bm_wait_op){.be = c->be, .op = BM_BOP_WRITE,
		        .buf = b, .len = BM_LABEL_SIZE,
		        .off = bm_label_offset(c->be->size), .patience = &slow[i]};
	}
	bm_backend_io_wait_all(ops, n, timeout_of(m));
	for (int i = 0; i < n; i++)
		if (ops[i].result == 0)
			fidx[nflush++] = i;
	struct bm_wait_op flushes[BM_MAX_COMPONENTS];
	for (int k = 0; k < nflush; k++)
		flushes[k] = (struct bm_wait_op){.be = comps[fidx[k]]->be,
		        .op = BM_BOP_FLUSH, .patience = &slow[fidx[k]]};
	bm_backend_io_wait_all(flushes, nflush, timeout_of(m));
	for (int k = 0; k < nflush; k++)
		ops[fidx[k]].result = flushes[k].result;
	for (int i = 0; i < n; i++) {
		int err = label_result(m, comps[i], ops[i].result);
		if (err < 0 && !first_err)
			first_err = err;
	}
	free(bufs);
	return first_err;
}

static bool writable(struct bm_component *c)
{
	int s = atomic_load(&c->state);
	return s == BM_CS_ACTIVE || s == BM_CS_SYNCHRONIZING;
}

static int active_count(struct bm_mirror *m)
{
	int n = 0;
	for (int k = 0; k < m->ncomp; k++)
		n += atomic_load(&m->comp[k].state) == BM_CS_ACTIVE;
	return n;
}

/* Caller holds meta_lock: is some ACTIVE component's label current? */
static bool recorded_somewhere(struct bm_mirror *m)
{
	for (int i = 0; i < m->ncomp; i++)
		if (atomic_load(&m->comp[i].state) == BM_CS_ACTIVE &&
		    !m->comp[i].label_stale)
			return true;
	return false;
}

bool bm_meta_recorded_locked(struct bm_mirror *m)
{
	BM_ASSERT_HELD(&m->meta_lock);
	return recorded_somewhere(m);
}

void bm_meta_check_recorded_locked(struct bm_mirror *m, const char *what)
{
	BM_ASSERT_HELD(&m->meta_lock);
	/* The survivor that stayed (the last ACTIVE one) may not have the
	 * bump on disk: then nothing written from now on can be trusted to
	 * win at the next assembly. */
	if (!recorded_somewhere(m) && !atomic_load(&m->meta_broken)) {
		atomic_store(&m->meta_broken, true);
		bm_event_post(m, BM_SEV_CRIT, BM_EV_WRITES_REFUSED, NULL, "cannot record %s on any ACTIVE component; writes fail until a label write succeeds", what);
	}
}

void bm_meta_drop_locked(struct bm_mirror *m, struct bm_component *c,
                         int state, const char *why)
{
	BM_ASSERT_HELD(&m->meta_lock);
	if (!writable(c))
		return;
	if (atomic_load(&c->state) == BM_CS_ACTIVE && active_count(m) <= 1) {
		bm_event_post(m, BM_SEV_CRIT, BM_EV_LAST_COMPONENT_ERROR, c->path, "%s; it is the last ACTIVE component, so it stays in service", why);
		return;
	}
	bm_meta_record_begin(m);
	atomic_store(&c->state, state);
	atomic_store(&c->refused, false); /* (not looked at again yet) */
	atomic_store(&c->link_dead, false); /* (reconnected the usual way) */
	assert(active_count(m) >= 1 ||
	       state != BM_CS_FAILED || !"the last ACTIVE component failed");
	bm_set_why(m, c, "%s", why);
	bm_event_post(m, state == BM_CS_DISCONNECTED ? BM_SEV_WARNING : BM_SEV_ERR, state == BM_CS_DISCONNECTED ? BM_EV_COMPONENT_DISCONNECTED : BM_EV_COMPONENT_FAILED, c->path, "%s", why);
	/* No new request reaches it; whatever it still holds ends soon. */
	if (c->be && c->be->ops->abort)
		c->be->ops->abort(c->be);
	m->degraded = true;
	m->genid++;
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *s = &m->comp[i];
		if (!writable(s))
			continue;
		s->label.genid = m->genid;
		if (bm_meta_write_label(m, s) < 0)
			bm_meta_label_failed_locked(m, s, "");
	}
	bm_meta_check_recorded_locked(m, "the failure");
	bm_meta_record_end(m);
	bm_event_redundancy(m);
	if (c->be && state == BM_CS_DISCONNECTED)
		bm_recover_kick(m);
}

/*
 * A component that leaves the set of write targets (failed, gone,
 * removed) stops getting writes the moment its state says so, and the
 * others' labels record its departure (the genid bump) a label write
 * later.  A write issued in between reaches only the others; were it
 * acknowledged before their labels are on disk, a crash then would leave
 * every label at the old genid, and the next start could take the one
 * that left as the source and copy its old data over the write (found
 * by a crash test: acknowledged writes lost).  So between begin (before
 * the state changes) and end (after the labels are written), under
 * meta_lock, a write that completes is decided on the event thread
 * (compio.c write_decide), which takes meta_lock: after the record.
 */
void bm_meta_record_begin(struct bm_mirror *m)
{
	BM_ASSERT_HELD(&m->meta_lock);
	atomic_fetch_add(&m->recording, 1);
}

void bm_meta_record_end(struct bm_mirror *m)
{
	BM_ASSERT_HELD(&m->meta_lock);
	atomic_fetch_sub(&m->recording, 1);
}

void bm_meta_fail_locked(struct bm_mirror *m, struct bm_component *c,
                         const char *why)
{
	bm_meta_drop_locked(m, c, BM_CS_FAILED, why);
}

void bm_meta_label_failed_locked(struct bm_mirror *m, struct bm_component *c,
                                 const char *when)
{
	char why[160];
	int err = c->label_err < 0 ? c->label_err : -EIO;

	snprintf(why, sizeof(why), "cannot write its label%s: %s", when,
	         strerror(-err));
	bm_meta_drop_locked(m, c, bm_error_is_gone(err) ? BM_CS_DISCONNECTED
	                                                : BM_CS_FAILED, why);
}

/* Caller holds meta_lock.  Writes every writable component's label: the
 * full ones (ACTIVE) at once, then those being copied at once, so that a
 * crash or a failed write never leaves a label being copied with a count
 * of events that no full label has (label_prepare; assembly_decide.c
 * rule 4 refuses a source behind one).  Two label writes in a row only
 * while a copy runs. */
int bm_meta_write_all_labels(struct bm_mirror *m)
{
	int first_err = 0, n = 0, nfull = 0;
	struct bm_component *comps[BM_MAX_COMPONENTS];

	BM_ASSERT_HELD(&m->meta_lock);
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (!writable(c))
			continue;
		c->label.genid = m->genid;
		c->label.syncid = m->syncid;
		c->label.mirror_flags = m->mirror_flags;
		c->label.balance = (uint32_t)atomic_load(&m->balance);
		c->label.slice = atomic_load(&m->slice);
		if (label_state(c) == BM_CS_SYNCHRONIZING)
			c->label.component_flags |= BM_CF_SYNCHRONIZING;
		else
			c->label.component_flags &= ~BM_CF_SYNCHRONIZING;
		if (atomic_load(&m->dirty))
			c->label.component_flags |= BM_CF_DIRTY;
		else
			c->label.component_flags &= ~BM_CF_DIRTY;
		if (!c->be) {
			if (!first_err)
				first_err = -ENODEV;
			continue;
		}
		if (m->no_metadata)
			continue;
		comps[n++] = c;
	}
	/* the full ones first (stable: the order of the others kept) */
	for (int i = 0; i < n; i++)
		if (bm_label_full(&comps[i]->label)) {
			struct bm_component *f = comps[i];
			memmove(&comps[nfull + 1], &comps[nfull],
			        (size_t)(i - nfull) * sizeof(comps[0]));
			comps[nfull++] = f;
		}
	for (int i = 0; i < nfull; i++)
		label_prepare(m, comps[i]);
	int err = write_labels_at_once(m, comps, nfull);
	if (err < 0 && !first_err)
		first_err = err;
	for (int i = nfull; i < n; i++)
		label_prepare(m, comps[i]); /* (after: events_landed) */
	err = write_labels_at_once(m, comps + nfull, n - nfull);
	if (err < 0 && !first_err)
		first_err = err;
	if (first_err == 0 && atomic_load(&m->meta_broken) &&
	    recorded_somewhere(m)) {
		atomic_store(&m->meta_broken, false);
		bm_event_post(m, BM_SEV_NOTICE, BM_EV_WRITES_RESUMED, NULL, "labels are written again; writes resume");
	}
	return first_err;
}

/*
 * Called on the data path before a write when m->dirty is false.  While the
 * mirror is degraded the first write of each dirty period bumps syncid, so a
 * component that comes back later is known to have missed writes.  A
 * component that cannot record DIRTY is failed out; if no ACTIVE component
 * has DIRTY on disk the write must not go ahead (-EIO, and the mirror stays
 * "clean" in memory so the next write tries again).
 */
int bm_meta_mark_dirty(struct bm_mirror *m)
{
	int err = 0;

	pthread_mutex_lock(&m->meta_lock);
	if (!atomic_load(&m->dirty_on_disk)) {
		atomic_store(&m->dirty, true);
		if (m->degraded)
			m->syncid++;
		m->events++;
		if (bm_meta_write_all_labels(m) < 0) {
			for (int i = 0; i < m->ncomp; i++) {
				struct bm_component *c = &m->comp[i];
				if (writable(c) && c->label_stale)
					bm_meta_label_failed_locked(m, c, " (marking dirty)");
			}
		}
		if (!recorded_somewhere(m)) {
			atomic_store(&m->dirty, false);
			err = -EIO;
		} else {
			/* only now may writes skip marking (compio.c) */
			atomic_store(&m->dirty_on_disk, true);
		}
	}
	pthread_mutex_unlock(&m->meta_lock);
	return err;
}

int bm_meta_flush_all_locked(struct bm_mirror *m)
{
	struct bm_wait_op ops[BM_MAX_COMPONENTS];
	struct bm_patience slow[BM_MAX_COMPONENTS];
	int who[BM_MAX_COMPONENTS], n = 0, err = 0;
	uint64_t mark[BM_MAX_COMPONENTS];

	/* all at once: the time of the slowest, not the sum */
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (!writable(c))
			continue;
		mark[n] = atomic_load(&c->writes_done);
		bm_comp_patience_locked(m, c, &slow[n]);
		ops[n] = (struct bm_wait_op){.be = c->be, .op = BM_BOP_FLUSH,
		                             .patience = &slow[n]};
		who[n++] = i;
	}
	bm_backend_io_wait_all(ops, n, timeout_of(m));
	for (int k = 0; k < n; k++) {
		struct bm_component *c = &m->comp[who[k]];
		int e = ops[k].result;
		if (!writable(c))
			continue;
		if (e == 0)
			bm_comp_flushed(c, mark[k]); /* (the idle clean's, the stop's) */
		if (e < 0) {
			char why[128];
			snprintf(why, sizeof(why), "flush error: %s", strerror(-e));
			bm_meta_drop_locked(m, c, bm_error_is_gone(e)
			                    ? BM_CS_DISCONNECTED : BM_CS_FAILED, why);
			if (writable(c)) /* the last ACTIVE one: stays dirty */
				err = e;
		}
	}
	return err;
}

/*
 * Marks the mirror clean if it has been idle for idle_ms (0: now).  Clean
 * only after every component in service flushed; otherwise it stays DIRTY
 * and the next start resynchronizes.  A component whose clean label cannot
 * be written is failed out (it keeps DIRTY on disk, which is safe).
 */
/* Clean already, bits set: a copy that ended since (a component caught
 * up, all ACTIVE now) left them.  They may go: a writer marks DIRTY under
 * meta_lock before its bit check (dirty_on_disk is false), so none is
 * between that check and its issue while we hold the lock. */
static void clear_bits_when_clean(struct bm_mirror *m)
{
	if (!m->bitmap || bm_bitmap_dirty_count(m) == 0)
		return;
	for (int i = 0; i < m->ncomp; i++)
		if (bm_comp_present(&m->comp[i]) &&
		    atomic_load(&m->comp[i].state) != BM_CS_ACTIVE)
			return;
	pthread_mutex_lock(&m->meta_lock);
	if (!atomic_load(&m->dirty) && !atomic_load(&m->dirty_on_disk) &&
	    atomic_load(&m->writes_inflight) == 0)
		bm_bitmap_clear_locked(m);
	pthread_mutex_unlock(&m->meta_lock);
}

void bm_meta_try_clean(struct bm_mirror *m, long idle_ms)
{
	if (!atomic_load(&m->dirty)) {
		clear_bits_when_clean(m);
		return;
	}
	if (idle_ms && bm_now_ms() - atomic_load(&m->last_write_ms) < idle_ms)
		return;
	pthread_mutex_lock(&m->meta_lock);
	/* dirty_on_disk false before the look at writes_inflight: a writer
	 * either is counted there or finds it false and marks again (it
	 * waits for meta_lock, so after this clean) */
	bool was_on_disk = atomic_exchange(&m->dirty_on_disk, false);
	atomic_store(&m->dirty, false);
	bool flushed = atomic_load(&m->writes_inflight) == 0 &&
	               bm_meta_flush_all_locked(m) == 0;
	if (flushed)
		m->events++; /* (label.h: the clean mark counts too) */
	if (!flushed) {
		/* a writer raced us, or a flush failed: later (the labels
		 * still say DIRTY) */
		atomic_store(&m->dirty, true);
		atomic_store(&m->dirty_on_disk, was_on_disk);
	} else if (bm_meta_write_all_labels(m) == 0) {
		/* clean on disk, nothing in flight: the bits may go (only
		 * if no component is missing, bitmap.c) */
		bm_bitmap_clear_locked(m);
	} else {
		/* Some labels say clean now, others may not: memory says
		 * clean, so the next write runs bm_meta_mark_dirty, which
		 * writes DIRTY everywhere again (or refuses the write). */
		for (int i = 0; i < m->ncomp; i++) {
			struct bm_component *c = &m->comp[i];
			if (writable(c) && c->label_stale)
				bm_meta_label_failed_locked(m, c, " (marking clean)");
		}
	}
	pthread_mutex_unlock(&m->meta_lock);
}
