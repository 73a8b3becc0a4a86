/*
 * The event thread: the one owner of component failures found while
 * serving (GEOM's event queue is the model).
 *
 * The data path never changes a component's state itself.  It queues an
 * event (which components failed a request, why) and, for a write or flush
 * that met a failure, a continuation.  The thread applies events in order,
 * each recorded in the labels before the next, then runs the continuation:
 * so when a write's fate is decided, every failure found before it has
 * been applied, and the write is acknowledged only if a component that
 * completed it is still ACTIVE with its label current (compio.c).
 *
 * Between events it wakes a few times a second to
 *  - give up on components that stopped answering: one with requests
 *    outstanding that completed nothing for io_timeout_ms, or one that
 *    left a request unanswered that long after answering later ones (a
 *    lost reply, one stuck sector), is DISCONNECTED and its backend
 *    aborted, which ends what it holds; a queue answered in order is
 *    slow, not hung: waited for up to BM_SLOW_FACTOR x io_timeout_ms;
 *  - ask each backend whether its component is still there (a deleted
 *    file, a vanished device, a dead connection), so status tells within
 *    a second even when the mirror is idle;
 *  - mark the mirror clean after 2 s without writes;
 *  - let the read-ahead drop idle streams and give back idle memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "error.h"
#include "bitmap.h"
#include "mirror.h"

#define TICK_MS 250
#define CLEAN_IDLE_MS 2000

struct bm_event {
	uint32_t mask;
	unsigned epoch[BM_MAX_COMPONENTS]; /* each component's connection
	                                      when the failure was found */
	char why[192];
	int state;                 /* BM_CS_FAILED or BM_CS_DISCONNECTED */
	void (*then)(void *);
	void *arg;
	struct bm_event *next;
};

static void apply(struct bm_mirror *m, const struct bm_event *ev)
{
	if (!ev->mask)
		return;
	pthread_mutex_lock(&m->meta_lock);
	for (int i = 0; i < m->ncomp; i++)
		if ((ev->mask & (1u << i)) &&
		    atomic_load(&m->comp[i].epoch) == ev->epoch[i])
			bm_meta_drop_locked(m, &m->comp[i], ev->state, ev->why);
	pthread_mutex_unlock(&m->meta_lock);
}

void bm_ev_fail(struct bm_mirror *m, uint32_t mask, const unsigned *epochs,
                const char *what, int err, uint64_t off, uint64_t len,
                void (*then)(void *), void *arg)
{
	struct bm_event *ev = calloc(1, sizeof(*ev));
	struct bm_event local;

	if (!ev) /* cannot queue: apply it here, in order as far as we can */
		ev = &local;
	memset(ev, 0, sizeof(*ev));
	ev->mask = mask;
	for (int i = 0; i < m->ncomp; i++)
		ev->epoch[i] = epochs ? epochs[i] : atomic_load(&m->comp[i].epoch);
	ev->state = bm_error_is_gone(err) ? BM_CS_DISCONNECTED : BM_CS_FAILED;
	if (len)
		snprintf(ev->why, sizeof(ev->why), "%s: %s (offset %llu, length "
		         "%llu)", what, strerror(err < 0 ? -err : err),
		         (unsigned long long)off, (unsigned long long)len);
	else
		snprintf(ev->why, sizeof(ev->why), "%s: %s", what,
		         strerror(err < 0 ? -err : err));
	ev->then = then;
	ev->arg = arg;
	if (ev == &local) {
		apply(m, ev);
		if (then)
			then(arg);
		return;
	}
	pthread_mutex_lock(&m->ev_lock);
	if (m->ev_tail)
		m->ev_tail->next = ev;
	else
		m->ev_head = ev;
	m->ev_tail = ev;
	pthread_cond_signal(&m->ev_cond);
	pthread_mutex_unlock(&m->ev_lock);
}

/* The ring slot (absolute: submission time >> BM_AGE_SHIFT) of c's oldest
 * outstanding request; false if none is counted.  A slot counts requests of
 * its latest turn of the ring and any left from earlier turns (older
 * still), so its latest turn is a lower bound of their age. */
static bool oldest_slot(struct bm_component *c, uint64_t now, uint64_t *slot)
{
	uint64_t cur = now >> BM_AGE_SHIFT;
	uint64_t first = cur >= BM_AGE_SLOTS - 1 ? cur - (BM_AGE_SLOTS - 1) : 0;

	for (uint64_t s = first; s <= cur; s++)
		if (atomic_load(&c->age[s % BM_AGE_SLOTS]) > 0) {
			*slot = s;
			return true;
		}
	return false;
}

/* The longest any request to a component is waited for, answered in order
 * or not (mirror.h): BM_SLOW_FACTOR times the io-timeout, within what the
 * age ring can tell; the io-timeout itself once the mirror is stopping
 * (bm_mirror_begin_stop), so that a stop ends in io-timeout + 5 s. */
static uint64_t slow_ceiling(struct bm_mirror *m, uint64_t limit)
{
	uint64_t ring = (uint64_t)(BM_AGE_SLOTS - 64) << BM_AGE_SHIFT;
	uint64_t most = limit * BM_SLOW_FACTOR;

	if (atomic_load(&m->stopping))
		return limit;
	return most < ring ? most : ring;
}

enum stuck { NOT_STUCK, PASSED_OVER, TOO_SLOW };

/* Whether c's oldest outstanding requests are given up: they were passed
 * over (a request submitted in a later slot completed) and still wait
 * limit ns after the watchdog first saw it, or they are older than the
 * ceiling.  Requests that wait their turn behind others are not. */
static enum stuck oldest_stuck(struct bm_mirror *m, struct bm_component *c,
                               uint64_t now, uint64_t limit)
{
	uint64_t slot;

	if (!oldest_slot(c, now, &slot)) {
		c->wd_passed_ns = 0;
		return NOT_STUCK;
	}
	uint64_t slot_end = (slot + 1) << BM_AGE_SHIFT;
	if (now > slot_end && now - slot_end >= slow_ceiling(m, limit))
		return TOO_SLOW;
	if ((atomic_load(&c->done_t0_max) >> BM_AGE_SHIFT) <= slot) {
		c->wd_passed_ns = 0;
		return NOT_STUCK;
	}
	if (c->wd_slot != slot || c->wd_passed_ns == 0) {
		c->wd_slot = slot;
		c->wd_passed_ns = now;
	}
	return now - c->wd_passed_ns >= limit ? PASSED_OVER : NOT_STUCK;
}

/* The patience of a synchronous request to a component (mirror.h): the
 * watchdog's rules, for one request submitted at t0_ns. */
static bool comp_slow_not_hung(const struct bm_patience *p, uint64_t t0_ns)
{
	struct bm_mirror *m = p->owner;
	struct bm_component *c = p->which;
	uint64_t limit = (uint64_t)atomic_load(&m->io_timeout_ms) * 1000000u;
	uint64_t now = bm_now_ns();
	uint64_t last = atomic_load(&c->stats.last_done);
	uint64_t since = p->streak && p->streak->since_ns &&
	                 p->streak->since_ns < t0_ns ? p->streak->since_ns
	                                             : t0_ns;

	if (limit == 0)
		return true; /* io-timeout 0: never given up */
	if (now > since && now - since >= slow_ceiling(m, limit))
		return false;
	if (now > last && now - last >= limit)
		return false; /* answering nothing */
	/* passed over by a request sent a slot (~1 s) later: the watchdog's
	 * granularity, so that two sent together and answered in either
	 * order are not taken for it */
	return atomic_load(&c->done_t0_max) <= t0_ns + (1ull << BM_AGE_SHIFT);
}

void bm_comp_patience(struct bm_mirror *m, struct bm_component *c,
                      struct bm_patience *p)
{
	*p = (struct bm_patience){.slow_not_hung = comp_slow_not_hung,
	                          .owner = m, .which = c};
}

void bm_comp_patience_locked(struct bm_mirror *m, struct bm_component *c,
                             struct bm_patience *p)
{
	BM_ASSERT_HELD(&m->meta_lock);
	bm_comp_patience(m, c, p);
	p->streak = &c->meta_slow;
}

/* A deactivated NBD component that does not answer requests of its
 * active days (a client's write, acknowledged from the others once this
 * one ends; a read, retried elsewhere): out of service, so there is
 * nothing to record, but what it holds must end, or its client waits for
 * ever (and with it the stop, the idle clean, a copy's range).  Its
 * connection is aborted; activate opens it again (rebuild.c
 * reopen_inactive).  Under meta_lock, where activate changes its state
 * and reopen_inactive its backend, and only while the requests are still
 * there.  Not a file or device: the kernel cannot give back what it holds
 * (an abort ends nothing), and its claim would keep activate from opening
 * it again. */
static void abort_inactive(struct bm_mirror *m, struct bm_component *c,
                           const char *why)
{
	if (!strstr(c->path, "://"))
		return;
	pthread_mutex_lock(&m->meta_lock);
	struct bm_backend *be = c->be;
	if (atomic_load(&c->state) == BM_CS_INACTIVE && be &&
	    be->ops->abort && atomic_load(&c->inflight) > 0) {
		if (!c->inactive_abort_said) {
			c->inactive_abort_said = true;
			fprintf(stderr, "blkmirror: %s: %s (deactivated): %s: "
			        "what it still holds from before fails now\n",
			        m->name, c->path, why);
		}
		be->ops->abort(be);
	}
	pthread_mutex_unlock(&m->meta_lock);
}

/* Components given up: one with requests outstanding that finished
 * nothing for the timeout, or whose oldest request was passed over by
 * later ones for the timeout, or waited BM_SLOW_FACTOR times the timeout
 * (a deep queue answered in order is slow, not hung, up to that).  It is
 * disconnected (and retried later), its backend aborted so that what it
 * holds completes with an error; a deactivated one is only aborted. */
static void watchdog(struct bm_mirror *m)
{
	uint64_t now = bm_now_ns();
	int secs = atomic_load(&m->io_timeout_ms) / 1000;
	uint64_t limit = (uint64_t)atomic_load(&m->io_timeout_ms) * 1000000u;

	if (!limit)
		return;
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		int s = atomic_load(&c->state);
		if (atomic_load(&c->inflight) <= 0 || !c->be ||
		    (s != BM_CS_ACTIVE && s != BM_CS_SYNCHRONIZING &&
		     s != BM_CS_INACTIVE)) {
			c->wd_passed_ns = 0;
			continue;
		}
		uint64_t since = atomic_load(&c->stats.busy_since);
		uint64_t last = atomic_load(&c->stats.last_done);
		if (last > since)
			since = last;
		bool silent = now > since && now - since >= limit;
		enum stuck stuck = silent ? NOT_STUCK
		                          : oldest_stuck(m, c, now, limit);
		if (!silent && stuck == NOT_STUCK)
			continue;
		c->wd_passed_ns = 0;
		char why[128];
		if (silent)
			snprintf(why, sizeof(why), "no answer for %d s "
			         "(io-timeout)", secs);
		else if (stuck == PASSED_OVER)
			snprintf(why, sizeof(why), "a request unanswered for "
			         "%d s while others were answered (io-timeout)",
			         secs);
		else
			snprintf(why, sizeof(why), "a request unanswered for "
			         "%llu s, %s (io-timeout %d s)",
			         (unsigned long long)(slow_ceiling(m, limit) /
			                              1000000000u),
			         atomic_load(&m->stopping) ? "unanswered at the stop"
			                                   : "too slow", secs);
		if (s == BM_CS_INACTIVE) {
			abort_inactive(m, c, why);
			continue;
		}
		pthread_mutex_lock(&m->meta_lock);
		bm_meta_drop_locked(m, c, BM_CS_DISCONNECTED, why);
		pthread_mutex_unlock(&m->meta_lock);
		/* The last ACTIVE one stays in service, like a lone disk:
		 * its clients wait for it (bm_mirror_close does not) - but
		 * not past a stop: what it holds fails now (its clients get
		 * errors), and the stop ends within io-timeout + 5 s. */
		if (atomic_load(&c->state) == BM_CS_ACTIVE &&
		    atomic_load(&m->stopping) && !c->stop_aborted) {
			struct bm_backend *be = bm_comp_get(c);
			if (be && be->ops->abort) {
				c->stop_aborted = true;
				fprintf(stderr, "blkmirror: %s: %s: %s, and it is "
				        "the last ACTIVE component: its requests "
				        "fail now (stopping)\n", m->name, c->path,
				        why);
				be->ops->abort(be);
			}
			if (be)
				bm_comp_put(c);
		} else if (atomic_load(&c->state) == BM_CS_ACTIVE &&
		           !c->hang_warned) {
			c->hang_warned = true;
			fprintf(stderr, "blkmirror: %s: %s: %s, and it is the "
			        "last ACTIVE component: waiting for it\n",
			        m->name, c->path, why);
		}
	}
}

/* Components that are gone while nothing is asked of them. */
static void health(struct bm_mirror *m)
{
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		int s = atomic_load(&c->state);
		if (s != BM_CS_ACTIVE && s != BM_CS_SYNCHRONIZING)
			continue;
		struct bm_backend *be = bm_comp_get(c);
		unsigned ep = atomic_load(&c->epoch); /* (the connection looked at) */
		int err = be && be->ops->check ? be->ops->check(be) : 0;
		if (be)
			bm_comp_put(c);
		if (err == 0)
			continue;
		char why[256];
		snprintf(why, sizeof(why), "%s", bm_last_error()[0]
		         ? bm_last_error() : strerror(-err));
		pthread_mutex_lock(&m->meta_lock);
		if (atomic_load(&c->epoch) != ep) {
			/* connected again since it was looked at */
			pthread_mutex_unlock(&m->meta_lock);
			continue;
		}
		bm_meta_drop_locked(m, c, BM_CS_DISCONNECTED, why);
		/* the last ACTIVE one stays: an NBD connection that is gone
		 * is opened again in place (recover.c reconnect_in_place) */
		bool dead = atomic_load(&c->state) == BM_CS_ACTIVE &&
		            bm_error_is_gone(err) && strstr(c->path, "://") &&
		            !atomic_exchange(&c->link_dead, true);
		pthread_mutex_unlock(&m->meta_lock);
		if (dead) {
			bm_set_why(m, c, "its connection is gone (%s); "
			           "connecting again when its server answers",
			           why);
			fprintf(stderr, "blkmirror: %s: %s: %s, and it is the last "
			        "ACTIVE component: connecting again when its "
			        "server answers\n", m->name, c->path, why);
			bm_recover_kick(m);
		}
	}
}

static void *ev_main(void *arg)
{
	struct bm_mirror *m = arg;
	long long next_tick = bm_now_ms() + TICK_MS;

	pthread_setname_np(pthread_self(), "bm-events");
	pthread_mutex_lock(&m->ev_lock);
	for (;;) {
		while (m->ev_head) {
			struct bm_event *ev = m->ev_head;
			m->ev_head = ev->next;
			if (!m->ev_head)
				m->ev_tail = NULL;
			pthread_mutex_unlock(&m->ev_lock);
			apply(m, ev);
			if (ev->then)
				ev->then(ev->arg);
			free(ev);
			pthread_mutex_lock(&m->ev_lock);
		}
		if (m->ev_stop)
			break;
		long long now = bm_now_ms();
		if (now >= next_tick) {
			pthread_mutex_unlock(&m->ev_lock);
			watchdog(m);
			health(m);
			bm_meta_try_clean(m, CLEAN_IDLE_MS);
			bm_bitmap_settle(m, BM_BITMAP_SETTLE_MS);
			bm_ra_tick(m);
			pthread_mutex_lock(&m->ev_lock);
			next_tick = bm_now_ms() + TICK_MS;
			continue;
		}
		struct timespec ts = bm_deadline_ms(CLOCK_MONOTONIC, next_tick - now);
		pthread_cond_timedwait(&m->ev_cond, &m->ev_lock, &ts);
	}
	pthread_mutex_unlock(&m->ev_lock);
	return NULL;
}

int bm_ev_start(struct bm_mirror *m)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&m->ev_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->ev_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&m->ev_thread, NULL, ev_main, m) != 0)
		return bm_error(EAGAIN, "cannot start the event thread");
	return 0;
}

/* Applies what is queued, then stops the thread. */
void bm_ev_stop(struct bm_mirror *m)
{
	pthread_mutex_lock(&m->ev_lock);
	m->ev_stop = true;
	pthread_cond_signal(&m->ev_cond);
	pthread_mutex_unlock(&m->ev_lock);
	pthread_join(m->ev_thread, NULL);
}

/* After bm_ev_stop, once nothing can queue an event any more. */
void bm_ev_free(struct bm_mirror *m)
{
	pthread_mutex_destroy(&m->ev_lock);
	pthread_cond_destroy(&m->ev_cond);
}
