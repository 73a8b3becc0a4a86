/*
 * Changing a component's state on a running mirror, in gmirror(8)'s words:
 * deactivate, activate, rebuild, and its priority (configure -p).
 *
 * Every change is made by a control job's thread (cli/cmd_live.c) under
 * meta_lock; the data path sees the new state through the atomic it reads before each request.
 *
 * deactivate  ACTIVE or SYNCHRONIZING -> INACTIVE.  The component stays in
 *     the mirror with its backend open, but is not read, written or copied.
 *     Its own label says INACTIVE first (assembly keeps it out on the next
 *     start), then the others record its departure (genid bump), as for a
 *     failure (meta.c), so its copy can never be taken for current; only
 *     then does its state change (until then every write still reaches it).
 *     Writes already in flight on it are not waited for: a write whose
 *     sub-requests all succeeded is on every ACTIVE component too, and one
 *     that met a failure is decided (compio.c write_decide) by the
 *     components that are ACTIVE at decision time, which it no longer is.
 *     The last ACTIVE component is never deactivated.
 * activate    INACTIVE -> SYNCHRONIZING from offset 0 (the sync copies
 *     only the bitmap's dirty regions when bitmap.c says that is enough).  Refused while requests of its active days
 *     are still outstanding (a late write could land after the copy passed
 *     its offset) and when its lease is no longer this server's.  Its label
 *     says SYNCHRONIZING before any write reaches it; a new epoch keeps
 *     failures found before from being applied to it.
 * rebuild     a full copy again.  ACTIVE -> SYNCHRONIZING from 0 (never the
 *     only ACTIVE one: it would be the source).  FAILED: its backend is
 *     reopened and its label checked (recover.c, as for a reconnect), then
 *     SYNCHRONIZING from 0.  A DISCONNECTED one is refused: the recovery
 *     thread reconnects it by itself (and owns its backend meanwhile).  A
 *     SYNCHRONIZING one is refused: it is being copied already.
 * The sync thread copies one component at a time, in index order, so a
 * component made SYNCHRONIZING here while another is copied waits its turn.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bitmap.h"
#include "error.h"
#include "lease.h"
#include "deadline.h"
#include "mirror.h"

static int count_state(struct bm_mirror *m, int state)
{
	int n = 0;

	for (int i = 0; i < m->ncomp; i++)
		n += atomic_load(&m->comp[i].state) == state;
	return n;
}

static bool in_service(int state)
{
	return state == BM_CS_ACTIVE || state == BM_CS_SYNCHRONIZING;
}

static void update_degraded_locked(struct bm_mirror *m)
{
	m->degraded = count_state(m, BM_CS_ACTIVE) != m->ncomp;
}

/* Caller holds meta_lock.  The others in service record that c leaves
 * (genid bump, bm_meta_drop_locked's rule): one whose label cannot be
 * written fails.  Returns how many ACTIVE ones besides c are left. */
static int record_departure_locked(struct bm_mirror *m, struct bm_component *c)
{
	int left = 0;

	BM_ASSERT_HELD(&m->meta_lock);
	m->genid++;
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *s = &m->comp[i];
		if (s == c || !in_service(atomic_load(&s->state)))
			continue;
		s->label.genid = m->genid;
		if (bm_meta_write_label(m, s) < 0)
			bm_meta_label_failed_locked(m, s, "");
	}
	for (int i = 0; i < m->ncomp; i++)
		left += &m->comp[i] != c &&
		        atomic_load(&m->comp[i].state) == BM_CS_ACTIVE;
	return left;
}

static int deactivate_serialized(bm_mirror *m, const char *path)
{
	int i = bm_find_component(m, path), err = 0;

	if (i < 0)
		return i;
	struct bm_component *c = &m->comp[i];
	pthread_mutex_lock(&m->meta_lock);
	int s = atomic_load(&c->state);
	if (s == BM_CS_INACTIVE)
		goto out; /* already: nothing to do (gmirror says nothing) */
	if (!in_service(s)) {
		err = bm_error(EINVAL, "%s is %s; only an ACTIVE or SYNCHRONIZING "
		               "component can be deactivated", c->path,
		               bm_comp_state_name(s));
		goto out;
	}
	if (s == BM_CS_ACTIVE && count_state(m, BM_CS_ACTIVE) <= 1) {
		err = bm_error(EBUSY, "%s is the last ACTIVE component of %s; "
		               "it cannot be deactivated", c->path, m->name);
		goto out;
	}
	/* On disk before the state changes: until then every write still
	 * reaches c, so a crash in between loses nothing, and no write is
	 * acknowledged without c before c's copy is marked as left behind
	 * (INACTIVE in its label, an older genid than the others'). */
	c->label.component_flags |= BM_CF_INACTIVE;
	if (bm_meta_write_label(m, c) < 0)
		fprintf(stderr, "blkmirror: %s: %s: cannot record INACTIVE in its "
		        "label; it is copied in full at the next start\n",
		        m->name, c->path);
	if (record_departure_locked(m, c) == 0) {
		/* the others failed their label writes: c is all there is */
		c->label.component_flags &= ~BM_CF_INACTIVE;
		c->label.genid = m->genid;
		bm_meta_write_label(m, c);
		err = bm_error(EIO, "cannot record the deactivation of %s: no "
		               "other ACTIVE component could write its label; it "
		               "stays in service", c->path);
		goto out;
	}
	/* From here no new request reaches it (bm_comp_get, compio.c). */
	atomic_store(&c->state, BM_CS_INACTIVE);
	atomic_store(&c->link_dead, false); /* (out of service now) */
	bm_set_why(m, c, "deactivated");
	update_degraded_locked(m);
	bm_event_post(m, BM_SEV_NOTICE, BM_EV_COMPONENT_DEACTIVATED, c->path,
	              "deactivated: neither read nor written until activated");
	bm_event_redundancy(m);
out:
	pthread_mutex_unlock(&m->meta_lock);
	return err;
}

/*
 * Requests of an INACTIVE component's active days normally end within
 * milliseconds: waits up to ms for them, polling, as nothing signals the
 * last one.  Returns how many are left (a component that hangs keeps
 * them until the watchdog aborts it after io-timeout: events.c
 * abort_inactive; activate is refused meanwhile).
 */
#define DRAIN_WAIT_MS 2000
static int wait_idle(struct bm_component *c, int ms)
{
	struct timespec nap = {0, 2 * 1000 * 1000};

	for (int waited = 0;; waited += 2) {
		int busy = atomic_load(&c->inflight) +
		           atomic_load(&c->be->detached);
		if (busy <= 0 || waited >= ms)
			return busy;
		nanosleep(&nap, NULL);
	}
}

/* (mirror.h) The lease block holds the pid and host this server writes
 * (lease.c). */
int bm_lease_is_ours(struct bm_mirror *m, struct bm_component *c,
                     struct bm_backend *be)
{
	char host[BM_LEASE_HOST_MAX + 1];
	struct bm_lease l;
	int err = bm_lease_read(be, &l);

	if (err < 0)
		return bm_error(err, "%s: cannot read its lease: %s", c->path,
		                strerror(-err));
	if (gethostname(host, sizeof(host)) < 0 || !host[0])
		snprintf(host, sizeof(host), "unknown");
	host[BM_LEASE_HOST_MAX] = '\0';
	for (char *p = host; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			*p = '_';
	if (l.state != BM_LEASE_ACTIVE || l.pid != (uint32_t)getpid() ||
	    strcmp(l.host, host) != 0 || l.mirror_id != m->mirror_id) {
		char holder[200];
		bm_lease_holder_str(&l, holder, sizeof(holder));
		return bm_error(EBUSY, "%s: its lease is no longer this server's "
		                "(%s); restart this server to take it back",
		                c->path, holder);
	}
	return 0;
}

/* Caller holds meta_lock.  c (open, out of service, nothing outstanding)
 * becomes SYNCHRONIZING from offset 0: its label says so first. */
static int start_full_copy_locked(struct bm_mirror *m, struct bm_component *c)
{
	uint32_t flags = c->label.component_flags;
	int err;

	atomic_store(&c->sync_offset, 0);
	atomic_store(&c->sync_copied, 0); /* (a new copy) */
	atomic_store(&c->sync_durable, 0);
	atomic_store(&c->read_errors, 0);
	atomic_store(&c->recopy_from, 0); /* (copied from the start) */
	atomic_store(&c->recopy_to, 0);
	atomic_store(&c->recopy_end, 0);
	c->label.component_flags &= ~(BM_CF_INACTIVE | BM_CF_DIRTY);
	c->label.component_flags |= BM_CF_SYNCHRONIZING | BM_CF_FORCE_SYNC;
	if (atomic_load(&m->dirty))
		c->label.component_flags |= BM_CF_DIRTY;
	c->label.genid = m->genid;
	c->label.syncid = m->syncid;
	c->label.mirror_flags = m->mirror_flags;
	err = bm_meta_write_label(m, c);
	if (err < 0) {
		c->label.component_flags = flags;
		err = bm_error(err, "cannot write the label of %s: %s", c->path,
		               strerror(-err));
		/* an ACTIVE one whose label is not current fails (meta.c) */
		if (atomic_load(&c->state) == BM_CS_ACTIVE)
			bm_meta_label_failed_locked(m, c, "");
		return err;
	}
	atomic_store(&c->state, BM_CS_SYNCHRONIZING);
	bm_set_why(m, c, "%s", "");
	update_degraded_locked(m);
	return 0;
}

/* An INACTIVE component whose connection is gone (its NBD server was
 * restarted while it was deactivated): opened again by its path, its
 * label checked, and the new backend put in place of the dead one (which
 * only the lease keeper still looks at: it counts as a user, as any
 * caller of bm_comp_get, and the old one is closed once none is left).
 * Nothing else reopens an INACTIVE component: before, activate failed for
 * ever reading its lease through the dead connection. */
static int reopen_inactive(struct bm_mirror *m, struct bm_component *c)
{
	struct bm_backend *nb = NULL, *old;
	int err;

	if (c->be && atomic_load(&c->be->detached) > 0)
		return bm_error(EBUSY, "%s: its old connection was given up with "
		                "writes its server may still carry out; once it "
		                "has (or was restarted), try again", c->path);
	err = bm_backend_open(c->path, true, &nb);
	if (err < 0)
		return bm_error(err, "%s: its connection is gone and it cannot "
		                "be opened again: %s", c->path, bm_last_error());
	bool older;
	err = bm_recover_judge(m, c, nb, &older); /* (as a reconnect's) */
	if (older) {
		c->sync_full = true; /* an older copy put back */
		fprintf(stderr, "blkmirror: %s: %s: %s, copied in full\n",
		        m->name, c->path, bm_last_error());
	}
	if (err < 0) {
		char why[200];
		snprintf(why, sizeof(why), "%s", bm_last_error());
		bm_error(-err, "%s: %s", c->path, why);
		return bm_backend_discard(nb, err);
	}
	pthread_mutex_lock(&m->meta_lock);
	old = c->be;
	c->be = NULL;
	pthread_mutex_unlock(&m->meta_lock);
	for (int waited = 0; atomic_load(&c->users) > 0; waited += 10) {
		if (waited >= DRAIN_WAIT_MS) {
			pthread_mutex_lock(&m->meta_lock);
			c->be = old;
			pthread_mutex_unlock(&m->meta_lock);
			nb->ops->close(nb);
			return bm_error(EBUSY, "%s is still in use; try again",
			                c->path);
		}
		usleep(10000);
	}
	if (old) {
		if (old->ops->abort)
			old->ops->abort(old);
		old->ops->close(old);
	}
	pthread_mutex_lock(&m->meta_lock);
	c->be = nb;
	atomic_fetch_add(&c->epoch, 1);
	pthread_mutex_unlock(&m->meta_lock);
	fprintf(stderr, "blkmirror: %s: %s: its connection was gone; opened "
	        "again\n", m->name, c->path);
	return 0;
}

static int activate_serialized(bm_mirror *m, const char *path)
{
	int i = bm_find_component(m, path), err;

	if (i < 0)
		return i;
	struct bm_component *c = &m->comp[i];
	/* Only this thread changes an INACTIVE component: the look at it
	 * and its lease need no lock. */
	int s = atomic_load(&c->state);
	if (s != BM_CS_INACTIVE)
		return bm_error(EINVAL, "%s is %s, not INACTIVE%s", c->path,
		                bm_comp_state_name(s), s == BM_CS_FAILED
		                ? "; 'blkmirror rebuild' brings back a FAILED one"
		                : "");
	if (!c->be)
		return bm_error(ENODEV, "%s is not open", c->path);
	int busy = wait_idle(c, DRAIN_WAIT_MS);
	if (busy > 0)
		return bm_error(EBUSY, "%s still has %d request%s outstanding "
		                "from before it was deactivated; try again",
		                c->path, busy, busy == 1 ? "" : "s");
	/* A copy of it that began before it was deactivated may still be
	 * winding down (its source reads, its checkpoint): until it lets go
	 * (sync_target), it could store its old offset over the new copy's 0
	 * and declare the component in sync without the writes it missed. */
	for (int waited = 0; atomic_load(&m->sync_target) == c; waited += 10) {
		if (waited >= DRAIN_WAIT_MS)
			return bm_error(EBUSY, "the copy of %s that was stopped has "
			                "not let go yet; try again", c->path);
		usleep(10000);
	}
	err = bm_lease_is_ours(m, c, c->be);
	if (err < 0 && bm_error_is_gone(err)) {
		err = reopen_inactive(m, c);
		if (err == 0)
			err = bm_lease_is_ours(m, c, c->be);
	}
	if (err < 0)
		return err;
	pthread_mutex_lock(&m->meta_lock);
	/* failures found on its earlier requests are not applied to it */
	atomic_fetch_add(&c->epoch, 1);
	c->hang_warned = false;
	c->inactive_abort_said = false;
	/* its header behind the last clear: an older copy of it was put
	 * back (while the mirror was stopped); bits of writes it lacks are
	 * gone */
	if (!c->sync_full && bm_bitmap_behind(m, c)) {
		c->sync_full = true;
		fprintf(stderr, "blkmirror: %s: %s: its bitmap is older than "
		        "the last clear of the others': copied in full\n",
		        m->name, c->path);
	}
	err = start_full_copy_locked(m, c);
	pthread_mutex_unlock(&m->meta_lock);
	if (err < 0)
		return err;
	/* (as sync.c decide_regions will choose) */
	bm_event_post(m, BM_SEV_NOTICE, BM_EV_COMPONENT_ACTIVATED, c->path,
	              c->sync_full || !bm_bitmap_is_member(m, c)
	              ? "activated; copying it in full"
	              : "activated; copying what it missed (the bitmap's "
	                "dirty regions)");
	bm_sync_kick(m);
	return 0;
}

/* A FAILED component: its lease checked through a second, read-only
 * opening (its own backend was aborted when it failed), then reopened. */
static int rebuild_failed(struct bm_mirror *m, struct bm_component *c)
{
	struct bm_backend *look;
	int err = bm_backend_open(c->path, false, &look);

	if (err < 0)
		return bm_error(err, "cannot open %s: %s", c->path,
		                bm_last_error());
	/* grown since it was labelled (taken at its old size): its lease
	 * is at its old end */
	pthread_mutex_lock(&m->meta_lock); /* (labels change there) */
	uint64_t was = c->label.component_size;
	pthread_mutex_unlock(&m->meta_lock);
	struct bm_label g;
	if (was && (was & ~(uint64_t)4095) < look->size) {
		err = bm_label_read_timeout(m, look, &g);
		if (err == -ENOENT)
			err = bm_label_find_grown(look, &was, 1, &g,
			                          atomic_load(&m->io_timeout_ms));
		if (err == -ENOENT || err == -EINVAL || err == -EPROTO ||
		    err == -EEXIST)
			err = 0; /* (its lease says what it is) */
	}
	if (err == 0)
		err = look->size >= BM_MIN_COMPONENT_SIZE
		      ? bm_lease_is_ours(m, c, look)
		      : bm_error(ENOSPC, "%s is too small now", c->path);
	/* a read that timed out may still be queued: a file's close would
	 * wait for it (and rebuild holds live_lock) */
	if (err < 0 && look->ops->abort)
		look->ops->abort(look);
	look->ops->close(look);
	if (err < 0)
		return err;
	err = bm_recover_reopen(m, c);
	if (err == -EBUSY)
		return bm_error(EBUSY, "%s still has requests outstanding from "
		                "before it failed; try again", c->path);
	if (err < 0) {
		char why[sizeof(c->why)];
		pthread_mutex_lock(&m->info_lock);
		snprintf(why, sizeof(why), "%s", bm_last_error()[0]
		         ? bm_last_error() : c->why[0] ? c->why : strerror(-err));
		pthread_mutex_unlock(&m->info_lock);
		return bm_error(err, "cannot bring back %s: %s", c->path, why);
	}
	return 0;
}

static int rebuild_serialized(bm_mirror *m, const char *path)
{
	int i = bm_find_component(m, path), err = 0;

	if (i < 0)
		return i;
	struct bm_component *c = &m->comp[i];
	int s = atomic_load(&c->state);
	switch (s) {
	case BM_CS_FAILED:
		bm_error_clear();
		return rebuild_failed(m, c);
	case BM_CS_ACTIVE:
		break;
	case BM_CS_SYNCHRONIZING:
		return bm_error(EBUSY, "%s is being synchronized already", c->path);
	case BM_CS_DISCONNECTED:
		if (atomic_load(&c->refused)) {
			/* found but not taken (a file cut short, a disk
			 * labelled again): no reconnect will take it */
			char why[sizeof(c->why)];
			pthread_mutex_lock(&m->info_lock);
			snprintf(why, sizeof(why), "%s", c->why);
			pthread_mutex_unlock(&m->info_lock);
			return bm_error(EINVAL, "%s is DISCONNECTED and is not "
			                "taken back (%s); 'blkmirror remove %s %s', "
			                "then 'blkmirror insert %s DISK' copies a "
			                "disk of at least %llu bytes in full",
			                c->path, why[0] ? why : "refused", m->name,
			                c->path, m->name,
			                (unsigned long long)(m->size + BM_META_SIZE));
		}
		return bm_error(EAGAIN, "%s is DISCONNECTED: it is reconnected "
		                "automatically, then copied in full", c->path);
	case BM_CS_INACTIVE:
		return bm_error(EINVAL, "%s is INACTIVE; 'blkmirror activate' "
		                "brings it back (with a full copy)", c->path);
	default:
		return bm_error(EINVAL, "%s is %s: restart the server once it is "
		                "there", c->path, bm_comp_state_name(s));
	}
	pthread_mutex_lock(&m->meta_lock);
	if (atomic_load(&c->state) != BM_CS_ACTIVE) {
		err = bm_error(EAGAIN, "%s changed state meanwhile (%s); try "
		               "again", c->path,
		               bm_comp_state_name(atomic_load(&c->state)));
	} else if (count_state(m, BM_CS_ACTIVE) <= 1) {
		err = bm_error(EBUSY, "%s is the only ACTIVE component of %s: "
		               "there is no other copy to rebuild it from",
		               c->path, m->name);
	} else {
		/* From here it is not read; reads already issued return what
		 * it held while it was in sync.  A rebuild copies in full,
		 * never from the bitmap. */
		c->sync_full = true;
		err = start_full_copy_locked(m, c);
	}
	pthread_mutex_unlock(&m->meta_lock);
	if (err < 0)
		return err;
	bm_event_post(m, BM_SEV_NOTICE, BM_EV_COMPONENT_REBUILDING, c->path,
	              "rebuild: copying it again in full");
	bm_event_redundancy(m);
	bm_sync_kick(m);
	return 0;
}

static int set_priority_serialized(bm_mirror *m, const char *path,
                                   uint32_t priority)
{
	int i = bm_find_component(m, path), err = 0;

	if (i < 0)
		return i;
	struct bm_component *c = &m->comp[i];
	pthread_mutex_lock(&m->meta_lock);
	/* balance.c (prefer) reads it without the lock */
	__atomic_store_n(&c->label.priority, priority, __ATOMIC_RELAXED);
	int s = atomic_load(&c->state);
	/* A component out of service gets it in its label when it is
	 * brought back (the label is rewritten then). */
	if (c->be && (in_service(s) || s == BM_CS_INACTIVE)) {
		err = bm_meta_write_label(m, c);
		if (err < 0) {
			err = bm_error(err, "cannot write the label of %s: %s",
			               c->path, strerror(-err));
			if (in_service(s))
				bm_meta_label_failed_locked(m, c, "");
		}
	}
	pthread_mutex_unlock(&m->meta_lock);
	return err;
}

/*
 * The verbs above run one at a time with insert/remove/forget (live.c
 * holds live_lock across a job): a component cannot be deactivated while
 * it is being added or retired.  The server runs them as control jobs
 * (cli/cmd_live.c), one at a time, so the lock is normally free; a caller
 * that finds it held (another embedding of the library) waits 2 s at most
 * and gets EBUSY.
 */
static int live_enter(bm_mirror *m)
{
	struct timespec deadline = bm_deadline_ms(CLOCK_REALTIME, 2000);

	if (pthread_mutex_timedlock(&m->live_lock, &deadline) != 0)
		return bm_error(EBUSY, "an insert, remove or forget is running on "
		                "%s; try again when it is done", m->name);
	return 0;
}

int bm_mirror_deactivate(bm_mirror *m, const char *path)
{
	int err = live_enter(m);
	if (err < 0)
		return err;
	err = deactivate_serialized(m, path);
	pthread_mutex_unlock(&m->live_lock);
	return err;
}

int bm_mirror_activate(bm_mirror *m, const char *path)
{
	int err = live_enter(m);
	if (err < 0)
		return err;
	err = activate_serialized(m, path);
	pthread_mutex_unlock(&m->live_lock);
	return err;
}

int bm_mirror_rebuild(bm_mirror *m, const char *path)
{
	int err = live_enter(m);
	if (err < 0)
		return err;
	err = rebuild_serialized(m, path);
	pthread_mutex_unlock(&m->live_lock);
	return err;
}

int bm_mirror_set_priority(bm_mirror *m, const char *path, uint32_t priority)
{
	int err = live_enter(m);
	if (err < 0)
		return err;
	err = set_priority_serialized(m, path, priority);
	pthread_mutex_unlock(&m->live_lock);
	return err;
}

int bm_label_set_priority(const char *name, const char *path,
                          uint32_t priority)
{
	struct bm_backend *be;
	struct bm_label l;
	int err = bm_backend_open(path, true, &be);

	if (err < 0)
		return err;
	/* (grown since it was labelled: at its old end, be->size then) */
	err = bm_label_read_hinted(be, &l);
	if (err < 0) {
		err = bm_error(err, "%s: cannot read its label: %s", path,
		               err == -ENOENT ? "there is none" : bm_last_error());
		goto out;
	}
	if (strcmp(l.name, name) != 0) {
		err = bm_error(EINVAL, "%s belongs to mirror '%s', not '%s'", path,
		               l.name, name);
		goto out;
	}
	err = bm_lease_check_free(be); /* no live server on it */
	if (err < 0)
		goto out;
	l.priority = priority;
	l.seq++;
	err = bm_label_store(be, &l, BM_IO_TIMEOUT_MS_DEFAULT, NULL);
	if (err < 0)
		err = bm_error(err, "%s: cannot write its label: %s", path,
		               strerror(-err));
out:
	be->ops->close(be);
	return err;
}
