/*
 * Background synchronization: copies the mirror's data from ACTIVE
 * components onto each SYNCHRONIZING one, in order, one chunk at a time.
 *
 * Each chunk is copied under an exclusive range hold (rangelock.h), so a
 * client write to that range either finished before the copy read the source
 * or starts after the copy wrote the target; either way the target ends with
 * the newest data.  Client writes reach SYNCHRONIZING components everywhere,
 * so the part already copied stays current.  Client reads never go to a
 * SYNCHRONIZING component.
 *
 * Progress is checkpointed in the target's label (sync offset) every
 * CHECKPOINT_BYTES: the target is flushed first, and only a successful
 * flush moves the offset the label records (sync_durable), so a restart
 * never resumes past data that was not on disk; after a crash (DIRTY
 * labels) the copy starts again from 0.
 *
 * The thread lives as long as the mirror and sleeps on sync_cond until a
 * component becomes SYNCHRONIZING (at start, or when a disconnected one
 * comes back: bm_sync_kick).
 *
 * A source read error is retried on another ACTIVE component; if none can
 * read the chunk the sync stops and the sources stay in service (the target
 * stays SYNCHRONIZING).  A target write error fails the target.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "mirror.h"

#define CHUNK_BYTES (1u << 20)
#define CHECKPOINT_BYTES (64ull << 20)

static struct bm_component *next_target(struct bm_mirror *m)
{
	for (int i = 0; i < m->ncomp; i++)
		if (atomic_load(&m->comp[i].state) == BM_CS_SYNCHRONIZING)
			return &m->comp[i];
	return NULL;
}

/* Reads one chunk from any ACTIVE component other than the target. */
static int read_source(struct bm_mirror *m, void *buf, uint32_t len,
                       uint64_t off)
{
	uint32_t tried = 0;
	int err = -EIO;

	for (;;) {
		int i = bm_balance_pick(m, off, len, tried);
		if (i < 0)
			return err;
		struct bm_component *s = &m->comp[i];
		uint64_t t0 = bm_now_ns();
		bm_queue_enter(&s->inflight, &s->stats);
		struct bm_backend *be = bm_comp_get(s);
		err = be ? bm_backend_io_wait_timeout(be, BM_BOP_READ, buf, len,
		                                      off, 0,
		                                      atomic_load(&m->io_timeout_ms))
		         : -ENOTCONN;
		if (be)
			bm_comp_put(s);
		bm_queue_leave(&s->inflight, &s->stats);
		bm_stats_account(&s->stats, BM_STAT_READ, len, bm_now_ns() - t0, err);
		if (err == 0)
			return 0;
		/* A source that went away or did not answer in io-timeout
		 * is given up (its request may still be outstanding); one
		 * that answered with an error stays, as gmirror keeps it. */
		if (bm_error_is_gone(err)) {
			char why[160];
			snprintf(why, sizeof(why), "read error during sync: %s",
			         strerror(-err));
			pthread_mutex_lock(&m->meta_lock);
			bm_meta_drop_locked(m, s, BM_CS_DISCONNECTED, why);
			pthread_mutex_unlock(&m->meta_lock);
		}
		tried |= 1u << i;
	}
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

static int flush_target(struct bm_mirror *m, struct bm_component *t)
{
	struct bm_backend *be = bm_comp_get(t);
	int err = be ? bm_backend_io_wait_timeout(be, BM_BOP_FLUSH, NULL, 0, 0,
	                                          0, atomic_load(&m->io_timeout_ms))
	             : -ENOTCONN;
	if (be)
		bm_comp_put(t);
	return err;
}

/* Flushes the target, then records the flushed offset in its label. */
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

/* Copies to one target; returns 0 when done, 1 if stopped, <0 on error. */
static int sync_one(struct bm_mirror *m, struct bm_component *t, void *buf)
{
	/* Published before the state and offset are read: a reconnect
	 * (recover.c) waits while this copy holds t, and one that finished
	 * before is seen here as offset 0. */
	atomic_store(&m->sync_target, t);
	if (atomic_load(&t->state) != BM_CS_SYNCHRONIZING)
		return -EAGAIN;
	uint64_t off = atomic_load(&t->sync_offset);
	uint64_t since_checkpoint = 0;

	bm_event_post(m, BM_SEV_INFO, BM_EV_SYNC_STARTED, t->path, "copying from offset %llu of %llu", (unsigned long long)off, (unsigned long long)m->size);
	while (off < m->size) {
		if (atomic_load(&m->sync_stop))
			return 1;
		if (atomic_load(&t->state) != BM_CS_SYNCHRONIZING)
			return -EIO;
		uint32_t len = m->size - off < CHUNK_BYTES ? (uint32_t)(m->size - off)
		                                           : CHUNK_BYTES;
		bm_rangelock_exclusive(&m->rl, off, len);
		int err = read_source(m, buf, len, off);
		if (err < 0) {
			bm_rangelock_exclusive_release(&m->rl);
			pthread_mutex_lock(&m->info_lock);
			snprintf(m->sync_error, sizeof(m->sync_error),
			         "sync of %s stopped: no component could read "
			         "offset %llu", t->path, (unsigned long long)off);
			pthread_mutex_unlock(&m->info_lock);
			return err;
		}
		uint64_t t0 = bm_now_ns();
		bm_queue_enter(&t->inflight, &t->stats);
		struct bm_backend *tbe = bm_comp_get(t);
		err = tbe ? bm_backend_io_wait_timeout(tbe, BM_BOP_WRITE, buf, len,
		                                       off, 0,
		                                       atomic_load(&m->io_timeout_ms))
		          : -ENOTCONN;
		if (tbe)
			bm_comp_put(t);
		bm_queue_leave(&t->inflight, &t->stats);
		bm_stats_account(&t->stats, BM_STAT_WRITE, len, bm_now_ns() - t0, err);
		bm_rangelock_exclusive_release(&m->rl);
		if (err < 0) {
			drop_target(m, t, "write error during sync", err);
			return err;
		}
		off += len;
		atomic_store(&t->sync_offset, off);
		since_checkpoint += len;
		if (since_checkpoint >= CHECKPOINT_BYTES) {
			if ((err = checkpoint(m, t, off)) < 0)
				return err;
			since_checkpoint = 0;
		}
	}
	/* Done: durable first, then ACTIVE in the label. */
	int err = flush_target(m, t);
	if (err < 0) {
		drop_target(m, t, "flush error at the end of sync", err);
		return err;
	}
	pthread_mutex_lock(&m->meta_lock);
	if (atomic_load(&t->state) != BM_CS_SYNCHRONIZING) {
		pthread_mutex_unlock(&m->meta_lock);
		return -EIO;
	}
	atomic_store(&t->state, BM_CS_ACTIVE);
	t->label.component_flags &= ~(BM_CF_SYNCHRONIZING | BM_CF_FORCE_SYNC);
	t->label.genid = m->genid;
	t->label.syncid = m->syncid;
	if (bm_meta_write_label(m, t) < 0)
		bm_meta_fail_locked(m, t, "label write failed at the end of sync");
	else
		bm_set_why(m, t, "%s", "");
	m->degraded = false;
	for (int i = 0; i < m->ncomp; i++)
		if (atomic_load(&m->comp[i].state) != BM_CS_ACTIVE &&
		    bm_comp_present(&m->comp[i]))
			m->degraded = true;
	pthread_mutex_unlock(&m->meta_lock);
	return 0;
}

static void *sync_main(void *arg)
{
	struct bm_mirror *m = arg;
	struct bm_component *t;
	void *buf = NULL;

	pthread_mutex_lock(&m->sync_lock);
	for (;;) {
		while (!m->sync_kick && !atomic_load(&m->sync_stop))
			pthread_cond_wait(&m->sync_cond, &m->sync_lock);
		if (atomic_load(&m->sync_stop))
			break;
		m->sync_kick = false;
		pthread_mutex_unlock(&m->sync_lock);
		if (!buf && posix_memalign(&buf, 4096, CHUNK_BYTES)) {
			buf = NULL;
			fprintf(stderr, "blkmirror: %s: no memory to synchronize\n",
			        m->name);
		}
		while (buf && !atomic_load(&m->sync_stop) &&
		       (t = next_target(m)) != NULL) {
			atomic_store(&m->sync_running, true);
			int err = sync_one(m, t, buf);
			bm_event_sync_ended(m, t, err);
			atomic_store(&m->sync_target, NULL);
			atomic_store(&m->sync_running, false);
			if (err == -EAGAIN)
				continue;
			if (err > 0 || (err < 0 && atomic_load(&t->state) ==
			                                   BM_CS_SYNCHRONIZING))
				break; /* stopped, or no source could read: stay
				          put until something changes */
		}
		pthread_mutex_lock(&m->sync_lock);
	}
	pthread_mutex_unlock(&m->sync_lock);
	free(buf);
	return NULL;
}

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
	p->rate = 0;
	p->eta_s = -1;
	return 1;
}

int bm_sync_start(struct bm_mirror *m)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&m->sync_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->sync_cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_store(&m->sync_stop, false);
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
