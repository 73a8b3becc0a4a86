/*
 * The recovery thread: brings components back without a restart.
 *
 *  - Read errors (md's read-error fix): a component that answered a read
 *    with an error, while another copy read fine, gets the range rewritten
 *    from a good copy and read back.  Under an exclusive range hold, so no
 *    client write to the range can be overwritten by the old data.  A
 *    rewrite that fails, or more than read_error_limit repaired errors,
 *    fails the component.  The hold is asked for a while only (200 ms
 *    first, doubling with each try): a client write that keeps the range
 *    for long (a zeroing of GiBs in 8 MiB pieces on a disk that zeroes at
 *    a few MiB/s) would otherwise keep this thread from every other
 *    repair and reconnection, and every later client write to the range
 *    (they wait for a pending exclusive hold) waiting with it.  A repair
 *    not granted is tried again a second later, or as long as it waited
 *    if more (so writes to the range wait for it at most half the time),
 *    each try waiting twice as long, up to 5 s: never long enough to
 *    keep a client's write past its patience.  Writes that keep a range
 *    longer than that, one after another without a gap, can keep its
 *    repair waiting as long as they go on; they write the range
 *    themselves (a rewrite of the part they cover, which is what the
 *    repair would do), and the copy read fine stays in service
 *    meanwhile.  A try gives up at once when the mirror stops.  The same
 *    repair is queued once (also while it is being tried).
 *  - Reconnection: a DISCONNECTED component (its connection died, its
 *    device or file went away, it stopped answering) is reopened by its
 *    path with a growing delay (1 s, doubling to 30 s).  When it answers
 *    with this mirror's label, it comes back SYNCHRONIZING and is copied
 *    again from the start (over the bitmap's dirty regions: bitmap.c), while
 *    client writes reach it at once.  An ABSENT one that could not be
 *    opened at the start is tried the same way (live.c bm_live_rejoin:
 *    its history checked as a restart would, copied in full).
 *
 * Swapping a component's backend: every caller takes it with bm_comp_get
 * (users++, then a look at the state), and this thread closes an old
 * backend only once the state is DISCONNECTED and no user is left, so
 * nobody can still be calling it; the new one is stored before the state
 * says SYNCHRONIZING.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "bitmap.h"
#include "error.h"
#include "live.h"
#include "mirror.h"

#define RETRY_FIRST_MS 1000
#define RETRY_MAX_MS 30000
#define REPAIR_AGAIN_MS 1000  /* the least time between a repair's tries */

struct bm_repair {
	int comp;
	uint64_t off;
	uint32_t len;
	long hold_wait_ms;       /* how long the next try waits for the range */
	long long not_before_ms; /* when it may be tried (bm_now_ms) */
	struct bm_repair *next;
};

void bm_recover_repair(struct bm_mirror *m, int comp, uint64_t off,
                       uint32_t len)
{
	pthread_mutex_lock(&m->rc_lock);
	const struct bm_repair *t = m->rc_trying;
	if (t && t->comp == comp && t->off == off && t->len == len) {
		/* being tried: a read that failed while it waits for its
		 * range asks again */
		pthread_mutex_unlock(&m->rc_lock);
		return;
	}
	for (struct bm_repair *q = m->rc_head; q; q = q->next) {
		if (q->comp == comp && q->off == off && q->len == len) {
			/* queued already (reads of a range whose repair waits
			 * fail again, each asking for it) */
			pthread_mutex_unlock(&m->rc_lock);
			return;
		}
	}
	struct bm_repair *rp = calloc(1, sizeof(*rp));
	if (!rp) {
		pthread_mutex_unlock(&m->rc_lock);
		return; /* the next read error tries again */
	}
	rp->comp = comp;
	rp->off = off;
	rp->len = len;
	rp->hold_wait_ms = BM_RANGE_TRY_FIRST_MS;
	rp->next = m->rc_head;
	m->rc_head = rp;
	pthread_cond_signal(&m->rc_cond);
	pthread_mutex_unlock(&m->rc_lock);
}

/* The link to the first repair that may be tried now; NULL if none.
 * Caller holds rc_lock. */
static struct bm_repair **due_repair(struct bm_mirror *m)
{
	long long now = bm_now_ms();

	for (struct bm_repair **pp = &m->rc_head; *pp; pp = &(*pp)->next)
		if ((*pp)->not_before_ms <= now)
			return pp;
	return NULL;
}

/* That repair, unlinked; NULL if none.  Caller holds rc_lock. */
static struct bm_repair *take_due_repair(struct bm_mirror *m)
{
	struct bm_repair **pp = due_repair(m);
	struct bm_repair *rp = pp ? *pp : NULL;

	if (rp)
		*pp = rp->next;
	return rp;
}

/* rp, not granted its range, queued again for later: after as long as
 * it waited (so that client writes to the range wait for it at most half
 * the time), at least REPAIR_AGAIN_MS; the next try waits twice as long,
 * up to BM_RANGE_TRY_MAX_MS.  Caller holds rc_lock. */
static void repair_later(struct bm_mirror *m, struct bm_repair *rp)
{
	long waited = rp->hold_wait_ms;

	rp->not_before_ms = bm_now_ms() +
	                    (waited > REPAIR_AGAIN_MS ? waited : REPAIR_AGAIN_MS);
	rp->hold_wait_ms = bm_range_try_next(waited);
	rp->next = m->rc_head;
	m->rc_head = rp;
}

void bm_recover_kick(struct bm_mirror *m)
{
	pthread_mutex_lock(&m->rc_lock);
	pthread_cond_signal(&m->rc_cond);
	pthread_mutex_unlock(&m->rc_lock);
}

static void fail_comp(struct bm_mirror *m, struct bm_component *c,
                      const char *why)
{
	pthread_mutex_lock(&m->meta_lock);
	bm_meta_fail_locked(m, c, why);
	pthread_mutex_unlock(&m->meta_lock);
}

static int comp_io(struct bm_mirror *m, struct bm_component *c,
                   enum bm_bop op, void *buf, uint32_t len, uint64_t off)
{
	struct bm_backend *be = bm_comp_get(c);
	int err;

	if (!be)
		return -ENOTCONN;
	uint64_t t0 = bm_now_ns();
	bm_comp_enter(c, t0);
	struct bm_patience slow;
	bm_comp_patience(m, c, &slow);
	err = bm_backend_io_wait_patient(be, op, buf, len, off, 0,
	                                 atomic_load(&m->io_timeout_ms), &slow);
	bm_comp_leave(c, t0, op, err != -ETIMEDOUT);
	bm_comp_put(c);
	bm_stats_account(&c->stats, op == BM_BOP_READ ? BM_STAT_READ
	                                              : BM_STAT_WRITE,
	                 len, bm_now_ns() - t0, err);
	return err;
}

/* False when the range was not granted in time: rp is to be tried again
 * (repair_later). */
static bool repair_one(struct bm_mirror *m, const struct bm_repair *rp)
{
	struct bm_component *c = &m->comp[rp->comp];
	struct bm_range_hold hold;
	void *good = NULL, *back = NULL;
	char why[200];
	int err = -ENOMEM;

	if (atomic_load(&c->state) != BM_CS_ACTIVE)
		return true;
	if (!bm_rangelock_excl_try_hold(&m->rl, &hold, rp->off, rp->len,
	                                rp->hold_wait_ms, &m->stopping))
		return false;
	if (posix_memalign(&good, 4096, rp->len) ||
	    posix_memalign(&back, 4096, rp->len)) {
		free(good);
		bm_rangelock_excl_release(&m->rl, &hold);
		return true;
	}
	uint32_t tried = 1u << rp->comp;
	for (;;) {
		int src = bm_balance_pick(m, rp->off, rp->len, tried);
		if (src < 0) {
			err = -ENODATA;
			break;
		}
		err = comp_io(m, &m->comp[src], BM_BOP_READ, good, rp->len,
		              rp->off);
		if (err == 0)
			break;
		tried |= 1u << src;
	}
	if (err == 0)
		err = comp_io(m, c, BM_BOP_WRITE, good, rp->len, rp->off);
	if (err == 0)
		err = comp_io(m, c, BM_BOP_READ, back, rp->len, rp->off);
	if (err == 0 && memcmp(good, back, rp->len) != 0)
		err = -EILSEQ;
	bm_rangelock_excl_release(&m->rl, &hold);
	free(good);
	free(back);
	if (err == -ENODATA)
		return true; /* no other copy could read it now: leave it */
	if (err < 0) {
		snprintf(why, sizeof(why), "read error at offset %llu, length "
		         "%u, and rewriting it failed: %s",
		         (unsigned long long)rp->off, rp->len, strerror(-err));
		fail_comp(m, c, why);
		return true;
	}
	int n = atomic_fetch_add(&c->read_errors, 1) + 1;
	bm_event_post(m, BM_SEV_NOTICE, BM_EV_READ_ERROR_REPAIRED, c->path, "read error at offset %llu, length %u: rewritten from a good copy (%d so far)", (unsigned long long)rp->off, rp->len, n);
	if (n > atomic_load(&m->read_error_limit)) {
		snprintf(why, sizeof(why), "%d read errors (more than %d)", n,
		         atomic_load(&m->read_error_limit));
		fail_comp(m, c, why);
	}
	return true;
}

/* Reads the label of a reopened component; 0 when it is this component
 * of this mirror and fits it.  -EEXIST: refused (another label, too
 * small, a larger minimum block size than clients were told), tried again
 * slowly; other errors: still away. */
static int check_label(struct bm_mirror *m, struct bm_component *c,
                       struct bm_backend *be, struct bm_label *seen)
{
	struct bm_label l;
	int err;

	if (bm_data_area(be->size) < m->size)
		return bm_error(EEXIST, "it came back smaller (%llu bytes)",
		                (unsigned long long)be->size);
	err = bm_min_block_check(m, be);
	if (err < 0)
		return err;
	/* (grown while away, an export resized: its own last label's size
	 * first) */
	pthread_mutex_lock(&m->meta_lock);
	uint64_t own = c->label.component_size;
	pthread_mutex_unlock(&m->meta_lock);
	err = bm_label_read_grown(m, be, own, &l);
	if (err == -EEXIST) {
		char msg[400];
		snprintf(msg, sizeof(msg), "%s", bm_last_error());
		return bm_error(EEXIST, "it came back without its label (%s)",
		                msg);
	}
	if (err == -ENOENT || err == -EINVAL || err == -EPROTO) {
		/* read, but no valid label there (wiped, written over):
		 * refused, like another mirror's label */
		char msg[200];
		snprintf(msg, sizeof(msg), "%s", bm_last_error());
		return bm_error(EEXIST, "it came back without its label (%s)",
		                msg);
	}
	if (err < 0)
		return err;
	if (l.mirror_id != c->label.mirror_id ||
	    l.component_id != c->label.component_id)
		return bm_error(EEXIST, "it came back with another label "
		                "(mirror '%s')", l.name);
	if (seen)
		*seen = l;
	return bm_flush_probe_timeout(m, be);
}

/*
 * What a component that comes back (reconnect, reopen_inactive in
 * rebuild.c) holds, judged by its label against the one this server last
 * wrote there (c->label: its seq is bumped before each write; one that
 * failed may have landed or not) and by its lease.  Another server wrote
 * it meanwhile (its lease taken, or a label newer than ours: the same
 * component used elsewhere, a split brain): -EEXIST, refused.  An older
 * label (a copy of it from before, put back): 1, copied in full (its
 * bitmap may lack bits cleared since).  The label last written: 0.
 */
static int check_history(struct bm_mirror *m, struct bm_component *c,
                         struct bm_backend *be, const struct bm_label *seen)
{
	int err = bm_lease_is_ours(m, c, be);

	if (err == -EBUSY) {
		char msg[300];
		const char *holder = strstr(bm_last_error(), "(host");
		snprintf(msg, sizeof(msg), "%.*s", holder ? (int)strcspn(holder,
		         ")") + 1 : 0, holder ? holder : "");
		return bm_error(EEXIST, "another server %s used it meanwhile, so "
		                "its data may differ; a restart compares the "
		                "histories, or remove it and insert it again",
		                msg);
	}
	if (err < 0)
		return err; /* its lease could not be read: still away */
	pthread_mutex_lock(&m->meta_lock);
	uint64_t genid = c->label.genid, seq = c->label.seq;
	/* its disk holds a label from the last that landed to the last
	 * tried (several may have failed while it was away); none landed
	 * yet: the one read at the start or the one before the last tried */
	uint64_t landed = c->label_seq_landed ? c->label_seq_landed
	                  : seq - (c->label_stale ? 1 : 0); /* (unknown) */
	pthread_mutex_unlock(&m->meta_lock);
	if (seen->genid > genid || seen->seq > seq)
		return bm_error(EEXIST, "its label was written elsewhere meanwhile "
		                "(generation %llu, label %llu; this server last "
		                "wrote %llu, %llu): the same component used by "
		                "another server (a split brain); 'blkmirror "
		                "remove' it, and insert it again to copy this "
		                "mirror's data over it",
		                (unsigned long long)seen->genid,
		                (unsigned long long)seen->seq,
		                (unsigned long long)genid, (unsigned long long)seq);
	if (seen->seq < landed)
		return bm_error_1(ESTALE, "it came back with an older label (%llu; "
		                  "this server last wrote %llu): an older copy of "
		                  "it", (unsigned long long)seen->seq,
		                  (unsigned long long)landed);
	return 0;
}

int bm_recover_judge(struct bm_mirror *m, struct bm_component *c,
                     struct bm_backend *be, bool *older)
{
	struct bm_label seen = {0};
	int err = check_label(m, c, be, &seen);

	if (err == 0)
		err = check_history(m, c, be, &seen);
	if (err == 0) /* the label is the last; the bitmap may not be */
		err = bm_bitmap_judge(m, c, be);
	*older = err == 1;
	return err < 0 ? err : 0;
}

/* meta_lock held: writes the label of c, come back on be; on an error,
 * ends be's requests (the next attempt closes it) and says why. */
static int write_back_label(struct bm_mirror *m, struct bm_component *c,
                            struct bm_backend *be)
{
	int err = bm_meta_write_label(m, c);

	if (err == 0)
		return 0;
	if (be->ops->abort)
		be->ops->abort(be);
	err = bm_error(err, "came back, but its label cannot be written: %s",
	               strerror(-err));
	bm_set_why(m, c, "%s", bm_last_error());
	return err;
}

/* One attempt to bring c back from state `from` (DISCONNECTED here, FAILED
 * for rebuild.c); 0 when it is SYNCHRONIZING again. */
static int reconnect(struct bm_mirror *m, struct bm_component *c, int from)
{
	struct bm_backend *be = NULL, *old;
	bool older = false;
	int err;

	/* Nobody may hold the old connection when it is closed (and a file
	 * keeps its lock until then); its close() waits for what it was
	 * given, which abort() ended. */
	if (atomic_load(&c->users) > 0 || atomic_load(&m->sync_target) == c ||
	    atomic_load(&c->inflight) > 0 ||
	    (c->be && atomic_load(&c->be->detached) > 0))
		return -EBUSY; /* the old connection may still act on requests:
		                  a late write would land on the new copy */
	pthread_mutex_lock(&m->meta_lock);
	old = c->be;
	c->be = NULL;
	pthread_mutex_unlock(&m->meta_lock);
	if (old)
		old->ops->close(old);
	err = bm_backend_open(c->path, true, &be);
	/* EBUSY here is another process holding the device (O_EXCL), not
	 * our old connection draining (-EBUSY above, retried at once with
	 * no reason shown): a reason and the usual back-off */
	if (err == -EBUSY)
		err = bm_error(EAGAIN, "%s", bm_last_error());
	if (err == 0)
		err = bm_recover_judge(m, c, be, &older);
	if (older)
		fprintf(stderr, "blkmirror: %s: %s: %s, copied in full\n",
		        m->name, c->path, bm_last_error());
	if (err < 0) {
		/* it answers but is not taken (refused: EEXIST; or its label
		 * or a flush did not end): status says why, while away;
		 * refused before the why shows it (rebuild reads both) */
		if (from == BM_CS_DISCONNECTED &&
		    atomic_load(&c->state) == BM_CS_DISCONNECTED)
			atomic_store(&c->refused, err == -EEXIST);
		if (be && from == BM_CS_DISCONNECTED &&
		    atomic_load(&c->state) == BM_CS_DISCONNECTED)
			bm_set_why(m, c, "%s", bm_last_error());
		return be ? bm_backend_discard(be, err) : err;
	}
	pthread_mutex_lock(&m->meta_lock);
	if (atomic_load(&c->state) != from) {
		/* changed meanwhile: not ours to bring back */
		pthread_mutex_unlock(&m->meta_lock);
		be->ops->close(be);
		return bm_error(ECANCELED, "%s changed state meanwhile", c->path);
	}
	c->be = be;
	/* a FAILED one brought back (rebuild) is copied in full; one that
	 * was DISCONNECTED may catch up from the bitmap (sync.c decides) */
	if (from == BM_CS_FAILED || older)
		c->sync_full = true;
	/* and its label says so: a restart during the copy copies it in
	 * full again (the evidence, an older label or bitmap, is written
	 * over from here on) */
	if (c->sync_full)
		c->label.component_flags |= BM_CF_FORCE_SYNC;
	atomic_store(&c->sync_offset, 0);
	atomic_store(&c->sync_copied, 0); /* (a new copy) */
	atomic_store(&c->sync_durable, 0);
	atomic_store(&c->recopy_from, 0); /* copied again from the start */
	atomic_store(&c->recopy_to, 0);
	atomic_store(&c->recopy_end, 0);
	atomic_store(&c->read_errors, 0);
	atomic_fetch_add(&c->epoch, 1);
	c->hang_warned = false;
	c->inactive_abort_said = false;
	c->label.component_flags |= BM_CF_SYNCHRONIZING;
	c->label.genid = m->genid;
	c->label.syncid = m->syncid;
	if (atomic_load(&m->dirty))
		c->label.component_flags |= BM_CF_DIRTY;
	/* The label says SYNCHRONIZING (offset 0) before any write reaches
	 * it: the state is published only once that is on disk. */
	err = write_back_label(m, c, be);
	if (err == 0) {
		atomic_store(&c->refused, false);
		atomic_store(&c->state, BM_CS_SYNCHRONIZING);
		bm_set_why(m, c, "%s", "");
	}
	pthread_mutex_unlock(&m->meta_lock);
	if (err < 0)
		return err;
	bm_event_post(m, BM_SEV_NOTICE, BM_EV_COMPONENT_BACK, c->path, "it answers again with its label; copying it again");
	bm_sync_kick(m);
	return 0;
}

int bm_recover_reopen(struct bm_mirror *m, struct bm_component *c)
{
	return reconnect(m, c, BM_CS_FAILED);
}

/*
 * The last ACTIVE component whose NBD connection died (its server was
 * restarted, say): a mirror never takes its last ACTIVE component out of
 * service, so it cannot come back through DISCONNECTED, and before this
 * every request failed until the mirror was restarted.  It is opened again
 * in place once its server answers with a label this server wrote there
 * (check_history: from the last that landed to the last tried,
 * the same history, not an older copy put back) and with this server's
 * lease; the new
 * connection replaces the dead one while bm_comp_get refuses it
 * (swapping), so no caller holds the old one when it is closed.  Requests
 * made while the connection was dead failed (the clients got errors, as
 * on a lone disk); none was acknowledged.  NBD only: a file or device
 * keeps its claim (flock, O_EXCL) until the old descriptor is closed.
 */
static int reconnect_in_place(struct bm_mirror *m, struct bm_component *c)
{
	struct bm_backend *nb = NULL, *old;
	bool older = false;
	int err;

	if (c->be && atomic_load(&c->be->detached) > 0)
		return -EBUSY; /* a write given up may still land: not yet */
	err = bm_backend_open(c->path, true, &nb);
	if (err == 0)
		err = bm_recover_judge(m, c, nb, &older);
	if (older) /* the only copy: nothing to copy it from, not taken */
		err = bm_error(EEXIST, "%s", bm_last_error());
	if (err < 0)
		return nb ? bm_backend_discard(nb, err) : err;
	atomic_store(&c->swapping, true);
	for (int waited = 0; atomic_load(&c->users) > 0; waited++) {
		if (waited >= 2000 || atomic_load(&m->stopping)) {
			atomic_store(&c->swapping, false);
			nb->ops->close(nb);
			return bm_error(EAGAIN, "%s is still in use", c->path);
		}
		usleep(1000);
	}
	pthread_mutex_lock(&m->meta_lock);
	if (atomic_load(&c->state) != BM_CS_ACTIVE) {
		/* another one became ACTIVE and the normal way took it out */
		atomic_store(&c->swapping, false);
		pthread_mutex_unlock(&m->meta_lock);
		nb->ops->close(nb);
		return bm_error(ECANCELED, "%s changed state meanwhile", c->path);
	}
	old = c->be;
	c->be = nb;
	atomic_fetch_add(&c->epoch, 1); /* old failures are not applied */
	/* writes it acknowledged since its last flush may be gone with its
	 * server's cache: the next client flush must not vouch for them */
	if (atomic_load(&c->writes_done) > atomic_load(&c->flushed_upto)) {
		m->flush_lost_comp = (int)(c - m->comp);
		m->flush_lost_epoch = atomic_load(&c->epoch);
		atomic_store(&m->flush_lost, true);
		fprintf(stderr, "blkmirror: %s: %s held writes not flushed when "
		        "its connection died: the next flush fails\n", m->name,
		        c->path);
	}
	atomic_store(&c->writes_done, 0);
	atomic_store(&c->flushed_upto, 0);
	c->hang_warned = false;
	c->inactive_abort_said = false;
	atomic_store(&c->link_dead, false);
	atomic_store(&c->swapping, false);
	pthread_mutex_unlock(&m->meta_lock);
	bm_set_why(m, c, "%s", "");
	if (old) {
		if (old->ops->abort)
			old->ops->abort(old);
		old->ops->close(old);
	}
	bm_event_post(m, BM_SEV_NOTICE, BM_EV_COMPONENT_BACK, c->path, "its connection was gone; connected again (it is the last ACTIVE component, with the label this server last wrote)");
	return 0;
}

static void reconnect_due(struct bm_mirror *m)
{
	long long now = bm_now_ms();

	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		int st = atomic_load(&c->state);
		bool absent = st == BM_CS_ABSENT && c->rejoin;
		bool in_place = st == BM_CS_ACTIVE && atomic_load(&c->link_dead);
		if (st != BM_CS_DISCONNECTED && !absent && !in_place)
			continue;
		if (c->retry_delay_ms == 0) {
			c->retry_delay_ms = RETRY_FIRST_MS;
			c->retry_at_ms = now + RETRY_FIRST_MS;
			continue;
		}
		if (now < c->retry_at_ms)
			continue;
		int err = absent ? bm_live_rejoin(m, i)
		          : in_place ? reconnect_in_place(m, c)
		                     : reconnect(m, c, BM_CS_DISCONNECTED);
		if (err == 0 || err == -ECANCELED) {
			c->retry_delay_ms = 0;
			continue;
		}
		if (err == -EEXIST && in_place)
			bm_set_why(m, c, "its connection was gone; its server "
			           "answers again, but it is not taken: %s",
			           bm_last_error());
		/* the reason it left stays; status adds how the tries end
		 * now (its server refuses the connection, say) */
		if (err != -EBUSY)
			bm_set_retry_why(m, c, bm_last_error());
		if (err == -EEXIST) {
			/* refused (its why says why): tried again slowly, in
			 * case it is set right */
			if (c->retry_delay_ms < RETRY_MAX_MS)
				fprintf(stderr, "blkmirror: %s: %s is back but not "
				        "taken: %s\n", m->name, c->path,
				        bm_last_error());
			c->retry_delay_ms = RETRY_MAX_MS;
		} else if (err != -EBUSY && c->retry_delay_ms >= 8000) {
			fprintf(stderr, "blkmirror: %s: %s is still away: %s\n",
			        m->name, c->path, bm_last_error());
		}
		if (err == -EBUSY && !absent && !in_place) {
			/* waiting for its old connection to end (reconnect
			 * looks at counters only): back soon after it has,
			 * whatever the wait took */
			c->retry_at_ms = bm_now_ms() + RETRY_FIRST_MS;
			continue;
		}
		c->retry_at_ms = bm_now_ms() + c->retry_delay_ms;
		c->retry_delay_ms = c->retry_delay_ms * 2 > RETRY_MAX_MS
		                            ? RETRY_MAX_MS : c->retry_delay_ms * 2;
	}
}

static void *rc_main(void *arg)
{
	struct bm_mirror *m = arg;

	pthread_setname_np(pthread_self(), "bm-recover");
	pthread_mutex_lock(&m->rc_lock);
	while (!m->rc_stop) {
		struct bm_repair *rp = take_due_repair(m);
		if (rp) {
			m->rc_trying = rp;
			pthread_mutex_unlock(&m->rc_lock);
			bool done = repair_one(m, rp);
			pthread_mutex_lock(&m->rc_lock);
			m->rc_trying = NULL;
			if (done)
				free(rp);
			else
				repair_later(m, rp);
			if (m->rc_stop)
				continue;
			/* reconnections are not kept waiting by a queue of
			 * repairs that each wait for their range */
			pthread_mutex_unlock(&m->rc_lock);
			reconnect_due(m);
			pthread_mutex_lock(&m->rc_lock);
			continue;
		}
		pthread_mutex_unlock(&m->rc_lock);
		reconnect_due(m);
		pthread_mutex_lock(&m->rc_lock);
		if (m->rc_stop)
			continue;
		/* a repair due (queued meanwhile): at once; one due later
		 * is looked at within the 250 ms below */
		if (due_repair(m))
			continue;
		struct timespec ts = bm_deadline_ms(CLOCK_MONOTONIC, 250);
		pthread_cond_timedwait(&m->rc_cond, &m->rc_lock, &ts);
	}
	while (m->rc_head) {
		struct bm_repair *rp = m->rc_head;
		m->rc_head = rp->next;
		free(rp);
	}
	pthread_mutex_unlock(&m->rc_lock);
	return NULL;
}

void bm_recover_init(struct bm_mirror *m)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&m->rc_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->rc_cond, &ca);
	pthread_condattr_destroy(&ca);
}

int bm_recover_start(struct bm_mirror *m)
{
	if (pthread_create(&m->rc_thread, NULL, rc_main, m) != 0)
		return bm_error(EAGAIN, "cannot start the recovery thread");
	return 0;
}

void bm_recover_request_stop(struct bm_mirror *m)
{
	pthread_mutex_lock(&m->rc_lock);
	m->rc_stop = true;
	pthread_cond_signal(&m->rc_cond);
	pthread_mutex_unlock(&m->rc_lock);
}

void bm_recover_stop(struct bm_mirror *m)
{
	bm_recover_request_stop(m);
	pthread_join(m->rc_thread, NULL);
	/* rc_lock and rc_cond stay: a component dropped while the mirror
	 * closes still kicks (nobody listens); bm_recover_free frees them. */
}

void bm_recover_free(struct bm_mirror *m)
{
	pthread_mutex_destroy(&m->rc_lock);
	pthread_cond_destroy(&m->rc_cond);
}
