/*
 * The control plane: label writes, DIRTY/clean marking, recording component
 * failures, and the control thread that does the latter for the data path.
 *
 * Order of durability (what makes "never lose an acknowledged write" hold):
 *  - DIRTY is on disk on every writable component before the first write
 *    after a clean period is issued, so a crash is always detected;
 *  - a component's failure is on disk (genid bumped on every survivor)
 *    before the write that found it is acknowledged, so the failed copy can
 *    never be taken for current at the next assembly;
 *  - clean is written only after a flush of every component, with no write
 *    in flight.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "mirror.h"

struct bm_event {
	uint32_t mask;
	char why[128];
	void (*then)(void *);
	void *arg;
	struct bm_event *next;
};

long long bm_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Caller holds meta_lock.  Writes c's label (seq bumped) and flushes it. */
int bm_meta_write_label(struct bm_mirror *m, struct bm_component *c)
{
	uint8_t *buf;
	int err;

	(void)m;
	if (!c->be)
		return -ENODEV;
	if (posix_memalign((void **)&buf, 4096, BM_LABEL_SIZE))
		return -ENOMEM;
	c->label.seq++;
	c->label.sync_offset =
		atomic_load(&c->state) == BM_CS_SYNCHRONIZING
			? atomic_load(&c->sync_offset) : 0;
	bm_label_encode(&c->label, buf);
	err = c->be->ops->pwrite_sync(c->be, buf, BM_LABEL_SIZE,
	                              bm_label_offset(c->be->size));
	if (err == 0)
		err = c->be->ops->flush_sync(c->be);
	free(buf);
	return err;
}

static bool writable(struct bm_component *c)
{
	int s = atomic_load(&c->state);
	return s == BM_CS_ACTIVE || s == BM_CS_SYNCHRONIZING;
}

/*
 * Caller holds meta_lock.  Takes c out of service and records it: genid is
 * bumped on every remaining component so that c, which keeps the old genid,
 * is stale at the next assembly.  A survivor whose label write fails is
 * failed in turn (never the last ACTIVE one: its data stays served).
 */
void bm_meta_fail_locked(struct bm_mirror *m, struct bm_component *c,
                         const char *why)
{
	if (!writable(c))
		return;
	if (atomic_load(&c->state) == BM_CS_ACTIVE) {
		int active = 0;
		for (int k = 0; k < m->ncomp; k++)
			active += atomic_load(&m->comp[k].state) == BM_CS_ACTIVE;
		if (active <= 1) {
			fprintf(stderr, "blkmirror: %s: %s: %s; it is the last "
			        "ACTIVE component, so it stays in service\n",
			        m->name, c->path, why);
			return;
		}
	}
	atomic_store(&c->state, BM_CS_FAILED);
	snprintf(c->why, sizeof(c->why), "%s", why);
	fprintf(stderr, "blkmirror: %s: component %s failed: %s\n", m->name,
	        c->path, why);
	m->degraded = true;
	m->genid++;
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *s = &m->comp[i];
		if (!writable(s))
			continue;
		s->label.genid = m->genid;
		if (bm_meta_write_label(m, s) < 0)
			bm_meta_fail_locked(m, s, "label write failed");
	}
}

/* Caller holds meta_lock.  Writes every writable component's label. */
int bm_meta_write_all_labels(struct bm_mirror *m)
{
	int first_err = 0;

	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (!writable(c))
			continue;
		c->label.genid = m->genid;
		c->label.syncid = m->syncid;
		c->label.mirror_flags = m->mirror_flags;
		c->label.balance = (uint32_t)atomic_load(&m->balance);
		c->label.slice = atomic_load(&m->slice);
		if (atomic_load(&c->state) == BM_CS_SYNCHRONIZING)
			c->label.component_flags |= BM_CF_SYNCHRONIZING;
		else
			c->label.component_flags &= ~BM_CF_SYNCHRONIZING;
		if (atomic_load(&m->dirty))
			c->label.component_flags |= BM_CF_DIRTY;
		else
			c->label.component_flags &= ~BM_CF_DIRTY;
		int err = bm_meta_write_label(m, c);
		if (err < 0 && !first_err)
			first_err = err;
	}
	return first_err;
}

/*
 * Called on the data path before a write when m->dirty is false.  While the
 * mirror is degraded the first write of each dirty period bumps syncid, so a
 * component that comes back later is known to have missed writes.
 */
int bm_meta_mark_dirty(struct bm_mirror *m)
{
	int err = 0;

	pthread_mutex_lock(&m->meta_lock);
	if (!atomic_load(&m->dirty)) {
		atomic_store(&m->dirty, true);
		if (m->degraded)
			m->syncid++;
		err = bm_meta_write_all_labels(m);
		if (err < 0) {
			/* Fail whatever could not record DIRTY, unless that
			 * would leave nothing to write to. */
			for (int i = 0; i < m->ncomp; i++) {
				struct bm_component *c = &m->comp[i];
				if (!writable(c))
					continue;
				if (bm_meta_write_label(m, c) < 0 &&
				    bm_readable_count(m) > 1)
					bm_meta_fail_locked(m, c,
					        "cannot write its label (marking dirty)");
			}
			err = bm_readable_count(m) > 0 ? 0 : -EIO;
		}
	}
	pthread_mutex_unlock(&m->meta_lock);
	return err;
}

/* Marks the mirror clean if it has been idle for idle_ms (0: now). */
void bm_meta_try_clean(struct bm_mirror *m, long idle_ms)
{
	if (!atomic_load(&m->dirty))
		return;
	if (idle_ms && bm_now_ms() - atomic_load(&m->last_write_ms) < idle_ms)
		return;
	pthread_mutex_lock(&m->meta_lock);
	atomic_store(&m->dirty, false);
	if (atomic_load(&m->writes_inflight) > 0) {
		atomic_store(&m->dirty, true); /* a writer raced us: later */
	} else {
		for (int i = 0; i < m->ncomp; i++)
			if (writable(&m->comp[i]))
				m->comp[i].be->ops->flush_sync(m->comp[i].be);
		bm_meta_write_all_labels(m);
	}
	pthread_mutex_unlock(&m->meta_lock);
}

/* ---- control thread ---- */

void bm_ctl_fail(struct bm_mirror *m, uint32_t mask, const char *why,
                 void (*then)(void *), void *arg)
{
	struct bm_event *ev = calloc(1, sizeof(*ev));

	if (!ev) {
		/* Cannot queue: record it here, synchronously. */
		pthread_mutex_lock(&m->meta_lock);
		for (int i = 0; i < m->ncomp; i++)
			if (mask & (1u << i))
				bm_meta_fail_locked(m, &m->comp[i], why);
		pthread_mutex_unlock(&m->meta_lock);
		if (then)
			then(arg);
		return;
	}
	ev->mask = mask;
	snprintf(ev->why, sizeof(ev->why), "%s", why);
	ev->then = then;
	ev->arg = arg;
	pthread_mutex_lock(&m->ev_lock);
	if (m->ev_tail)
		m->ev_tail->next = ev;
	else
		m->ev_head = ev;
	m->ev_tail = ev;
	pthread_cond_signal(&m->ev_cond);
	pthread_mutex_unlock(&m->ev_lock);
}

static void *ctl_main(void *arg)
{
	struct bm_mirror *m = arg;

	pthread_mutex_lock(&m->ev_lock);
	for (;;) {
		while (m->ev_head) {
			struct bm_event *ev = m->ev_head;
			m->ev_head = ev->next;
			if (!m->ev_head)
				m->ev_tail = NULL;
			pthread_mutex_unlock(&m->ev_lock);
			pthread_mutex_lock(&m->meta_lock);
			for (int i = 0; i < m->ncomp; i++)
				if (ev->mask & (1u << i))
					bm_meta_fail_locked(m, &m->comp[i], ev->why);
			pthread_mutex_unlock(&m->meta_lock);
			if (ev->then)
				ev->then(ev->arg);
			free(ev);
			pthread_mutex_lock(&m->ev_lock);
		}
		if (m->ctl_stop)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&m->ev_cond, &m->ev_lock, &ts);
		if (!m->ev_head && !m->ctl_stop) {
			pthread_mutex_unlock(&m->ev_lock);
			bm_meta_try_clean(m, 2000);
			pthread_mutex_lock(&m->ev_lock);
		}
	}
	pthread_mutex_unlock(&m->ev_lock);
	return NULL;
}

int bm_ctl_start(struct bm_mirror *m)
{
	pthread_mutex_init(&m->ev_lock, NULL);
	pthread_cond_init(&m->ev_cond, NULL);
	if (pthread_create(&m->ctl_thread, NULL, ctl_main, m) != 0)
		return bm_error(EAGAIN, "cannot start the control thread");
	return 0;
}

/* Processes what is queued, then stops the thread. */
void bm_ctl_stop(struct bm_mirror *m)
{
	pthread_mutex_lock(&m->ev_lock);
	m->ctl_stop = true;
	pthread_cond_signal(&m->ev_cond);
	pthread_mutex_unlock(&m->ev_lock);
	pthread_join(m->ctl_thread, NULL);
	pthread_mutex_destroy(&m->ev_lock);
	pthread_cond_destroy(&m->ev_cond);
}
