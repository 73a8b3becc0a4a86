/*
 * Components that join and leave a running mirror: insert, remove, forget
 * (gmirror's verbs).  The data path keeps running without a lock; what
 * makes that safe:
 *
 * Publication.  comp[] has room for BM_MAX_COMPONENTS and ncomp only grows
 * (an atomic).  An insert fills a slot while nobody can see it (index >=
 * ncomp, or a reused slot whose state is BM_CS_REMOVED, which every reader
 * skips), with its backend open, its lease taken and its label written,
 * and only then publishes it: a store of its state, then of ncomp.  Every
 * loop `for (i = 0; i < m->ncomp; i++)` therefore sees either no slot or a
 * whole one.  States change under meta_lock (the locking rule); live_lock
 * orders inserts and removals among themselves (the slots and ncomp only
 * change under it) and is taken before meta_lock.
 *
 * Leaving.  remove and forget set the state to BM_CS_REMOVED under
 * meta_lock: bm_comp_get refuses it from then on, so no new request
 * reaches it; the requests in flight complete (their failures are ignored:
 * bm_meta_drop_locked leaves a component that is not writable alone, and
 * the write's fate is decided by the others).  Its backend is closed only
 * when users and inflight are 0 (what recover.c waits for before a
 * reconnect), then its label is cleared (remove) or left (forget).  A
 * removed slot is reused only when the mirror is full, and only when its
 * backend is closed and nobody uses it; its epoch is bumped, so a failure
 * found on the old component and still queued (events.c) is not applied
 * to the new one.  recover.c re-checks DISCONNECTED under meta_lock before
 * it installs a reconnected backend, so a removed component is not brought
 * back.
 *
 * Writes in flight while a component joins.  The acknowledgement rule
 * (compio.c write_decide) needs: a write acknowledged is on every ACTIVE
 * component and on every SYNCHRONIZING one below its sync offset.  A new
 * component starts SYNCHRONIZING at offset 0, so the danger is one write W
 * that did not choose it as a target and ends after the sync copied W's
 * range onto it: the copy would carry the old data and W would be missing
 * there for ever.  It cannot happen:
 *   - compio.c takes W's shared range hold before it reads ncomp and the
 *     states to choose targets, and releases it after W completed on
 *     every target;
 *   - the sync copies a chunk under an exclusive hold on it, and starts
 *     after the component was published (bm_sync_kick follows the
 *     publication; the kick's mutex orders the two);
 *   - the range lock's mutex orders W's hold and the copy's hold on any
 *     overlapping chunk.  If W's hold came first, the copy waits until W
 *     completed on its sources, so it reads W's data.  If the copy's came
 *     first, W took its hold after the copy released it, hence after the
 *     publication (the release/acquire of the range lock's mutex carries
 *     the ordering), so W read the new ncomp and state and chose the new
 *     component as a target.
 * A write that did choose it is acknowledged by the usual rule (it is
 * SYNCHRONIZING, not ACTIVE: its failure fails it out, not the write).
 * Leaving needs no argument of the kind: a component out of the mirror has
 * no promise to keep, and remove refuses to take the last ACTIVE one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "assembly_decide.h"
#include "bitmap.h"
#include "error.h"
#include "lease.h"
#include "live.h"
#include "mirror.h"
#include "probe.h"

#define DRAIN_EXTRA_MS 5000

int bm_live_begin(bm_mirror *m)
{
	atomic_fetch_add(&m->live_ops, 1);
	if (atomic_load(&m->closing)) {
		atomic_fetch_sub(&m->live_ops, 1);
		return -ESHUTDOWN;
	}
	return 0;
}

void bm_live_end(bm_mirror *m)
{
	atomic_fetch_sub(&m->live_ops, 1);
}

void bm_live_wait_closing(struct bm_mirror *m)
{
	atomic_store(&m->closing, true);
	while (atomic_load(&m->live_ops) > 0)
		usleep(10000);
}

/* Present (not removed) component named path, or -1. */
static int find_path(struct bm_mirror *m, const char *path)
{
	for (int i = 0; i < m->ncomp; i++)
		if (bm_comp_present(&m->comp[i]) &&
		    strcmp(m->comp[i].path, path) == 0)
			return i;
	return -1;
}

/* (mirror.h) */
int bm_find_component(struct bm_mirror *m, const char *path)
{
	struct stat a, b;

	for (int i = 0; i < m->ncomp; i++)
		if (bm_comp_present(&m->comp[i]) &&
		    strcmp(m->comp[i].path, path) == 0)
			return i;
	if (strstr(path, "://") || stat(path, &a) < 0)
		goto none;
	for (int i = 0; i < m->ncomp; i++) {
		if (!bm_comp_present(&m->comp[i]) ||
		    strstr(m->comp[i].path, "://") ||
		    stat(m->comp[i].path, &b) < 0)
			continue;
		if (S_ISBLK(a.st_mode) ? S_ISBLK(b.st_mode) && a.st_rdev == b.st_rdev
		                       : a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return i;
	}
none:
	return bm_error(ENOENT, "%s is not a component of %s", path, m->name);
}

static int present_count(struct bm_mirror *m)
{
	int n = 0;
	for (int i = 0; i < m->ncomp; i++)
		n += bm_comp_present(&m->comp[i]);
	return n;
}

/* Caller holds meta_lock. */
static void update_degraded_locked(struct bm_mirror *m)
{
	m->degraded = false;
	for (int i = 0; i < m->ncomp; i++)
		if (bm_comp_present(&m->comp[i]) &&
		    atomic_load(&m->comp[i].state) != BM_CS_ACTIVE)
			m->degraded = true;
}

/* Caller holds meta_lock.  Every label in service says how many components
 * the mirror has now, and the current genid. */
static int relabel_all_locked(struct bm_mirror *m)
{
	uint32_t n = (uint32_t)present_count(m);
	for (int i = 0; i < m->ncomp; i++)
		m->comp[i].label.ncomponents = n ? n : 1;
	return bm_meta_write_all_labels(m);
}

/* The same storage as a component of the mirror, under another name?
 * The kernel's identities (inode, device, loop backing file); for what it
 * cannot tell (URIs), the open backends' identity and, when the new one is
 * not a local path, a token written through it and looked for through the
 * others (in the reserved area, never in the data). */
static int refuse_same_storage(struct bm_mirror *m, const char *path,
                               struct bm_backend *be)
{
	const char *paths[BM_MAX_COMPONENTS + 1];
	struct bm_backend *bes[BM_MAX_COMPONENTS + 1];
	int idx[BM_MAX_COMPONENTS + 1];
	size_t n = 0, a, b;
	struct stat st;
	int err = 0;

	for (int i = 0; i < m->ncomp; i++)
		if (bm_comp_present(&m->comp[i])) {
			idx[n] = i;
			paths[n++] = m->comp[i].path;
		}
	paths[n] = path;
	if (bm_probe_same_identity(paths, n + 1, &a, &b) && b == n)
		return bm_error(EEXIST, "%s is the same disk as %s, already a "
		                "component of %s", path, paths[a], m->name);
	size_t nb = 0;
	for (size_t k = 0; k < n; k++) {
		struct bm_component *c = &m->comp[idx[k]];
		struct bm_backend *cb = bm_comp_get(c);
		if (!cb)
			continue;
		if (bm_backend_same(cb, be)) {
			bm_comp_put(c);
			return bm_error(EEXIST, "%s is the same disk as %s, already "
			                "a component of %s", path, c->path, m->name);
		}
		idx[nb] = idx[k];
		bes[nb++] = cb; /* put back below */
	}
	if (stat(path, &st) < 0 && nb > 0) {
		bes[nb] = be;
		err = bm_probe_same_content(bes, nb + 1, &a, &b,
		                            atomic_load(&m->io_timeout_ms));
		if (err > 0)
			err = bm_error(EEXIST, "%s is the same disk as %s, already a "
			               "component of %s (a block written through one "
			               "was read back through the other)", path,
			               m->comp[idx[a < nb ? a : b]].path, m->name);
		else if (err < 0)
			err = bm_error(err, "%s: cannot tell whether it is another "
			               "component under another name: %s", path,
			               bm_last_error());
	}
	for (size_t k = 0; k < nb; k++)
		bm_comp_put(&m->comp[idx[k]]);
	return err;
}

/* Whether be was given up with writes its server may still carry out
 * (lib/backends/nbd.c: detached requests). */
static bool late_writes(struct bm_backend *be)
{
	return be && atomic_load(&be->detached) > 0;
}

/* Caller holds live_lock: component id left while writes of a connection
 * given up may still land on it (check_new refuses it while labelled). */
static void remember_late(struct bm_mirror *m, uint64_t id)
{
	if (id)
		m->late_ids[m->nlate++ % (2 * BM_MAX_COMPONENTS)] = id;
}

/* Caller holds live_lock: whether id is one of those. */
static bool left_late(const struct bm_mirror *m, uint64_t id)
{
	unsigned n = m->nlate < 2 * BM_MAX_COMPONENTS ? m->nlate
	                                               : 2 * BM_MAX_COMPONENTS;
	for (unsigned k = 0; k < n; k++)
		if (id && m->late_ids[k] == id)
			return true;
	return false;
}

/* Checks the component to insert, open in be: nothing is written. */
static int check_new(struct bm_mirror *m, const char *path,
                     struct bm_backend *be, const struct bm_insert_params *p)
{
	struct bm_label l;
	struct bm_content content;
	int err;

	if (be->size < BM_MIN_COMPONENT_SIZE ||
	    bm_data_area(be->size) < m->size)
		return bm_error(ENOSPC, "%s is too small: %" PRIu64 " bytes; %s "
		                "needs %" PRIu64 " (its %" PRIu64 " bytes of data "
		                "and %u of metadata)", path, be->size, m->name,
		                m->size + BM_META_SIZE, m->size, BM_META_SIZE);
	uint32_t told = bm_mirror_min_block(m);
	if (be->min_block > told)
		return bm_error(EINVAL, "%s takes only requests aligned to %u "
		                "bytes (its minimum block size), and %s's clients "
		                "were told that %u works: it would refuse their "
		                "requests; serve it without that minimum, or make "
		                "a new mirror with it", path, be->min_block, m->name,
		                told);
	err = refuse_same_storage(m, path, be);
	if (err < 0)
		return err;
	/* (io-timeout: never hangs; a former component grown since keeps
	 * its label, lease and a late write's record at its old end: taken
	 * at that size, as a stale component of this mirror, or refused as
	 * another's) */
	err = bm_label_read_grown(m, be, 0, &l);
	if (err == -EEXIST)
		return err;
	if (err < 0 && err != -ENOENT && err != -EINVAL && err != -EPROTO)
		return bm_error(-err, "%s: %s", path, bm_last_error());
	if (err == 0 && l.mirror_id != m->mirror_id)
		return bm_error(EEXIST, "%s is labeled for mirror '%s'; clear it "
		                "first with blkmirror clear %s", path, l.name, path);
	bool ours = err == 0; /* a stale component of this mirror: its data
	                         is this mirror's, copied over again */
	/* ...unless a write of its old connection may still land: after the
	 * copy, over a newer write (copies that differ) */
	if (ours && left_late(m, l.component_id))
		return bm_error(EBUSY, "%s left this mirror while its server "
		                "could still carry out writes of a connection "
		                "given up, and one may land over the copy; once "
		                "its server has carried them out (or was "
		                "restarted), 'blkmirror clear %s', then insert it",
		                path, path);
	bm_error_clear();
	if (!ours) {
		err = bm_probe_content(be, &content, /* never hangs */
		                       atomic_load(&m->io_timeout_ms));
		if (err < 0)
			return err;
		if (err > 0 && !p->force)
			return bm_error(EEXIST, "%s holds %s, which the sync would "
			                "overwrite; insert -f to go ahead", path,
			                content.what);
	}
	/* Not under a server elsewhere (a lease renewed while watched). */
	return bm_lease_check_free(be);
}

static void zero_stats(struct bm_comp_stats *st)
{
	atomic_store(&st->reads, 0);
	atomic_store(&st->read_bytes, 0);
	atomic_store(&st->read_ns, 0);
	atomic_store(&st->writes, 0);
	atomic_store(&st->write_bytes, 0);
	atomic_store(&st->write_ns, 0);
	atomic_store(&st->deletes, 0);
	atomic_store(&st->delete_bytes, 0);
	atomic_store(&st->delete_ns, 0);
	atomic_store(&st->errors, 0);
	atomic_store(&st->busy_ns, 0);
	atomic_store(&st->busy_since, 0);
	atomic_store(&st->last_done, 0);
}

/* Caller holds live_lock: a slot nobody can see or use, or -1. */
static int free_slot(struct bm_mirror *m)
{
	int n = m->ncomp;

	if (n < BM_MAX_COMPONENTS)
		return n;
	for (int i = 0; i < n; i++) {
		struct bm_component *c = &m->comp[i];
		if (!bm_comp_present(c) && !c->be && c->nretired == 0 &&
		    atomic_load(&c->users) == 0 &&
		    atomic_load(&c->inflight) == 0 &&
		    atomic_load(&m->sync_target) != c)
			return i;
	}
	return -1;
}

/* A label for the new component, from the mirror's own. */
static void new_label(struct bm_mirror *m, struct bm_backend *be,
                      const struct bm_insert_params *p, struct bm_label *l)
{
	memset(l, 0, sizeof(*l));
	for (int i = 0; i < m->ncomp; i++)
		if (atomic_load(&m->comp[i].state) == BM_CS_ACTIVE) {
			*l = m->comp[i].label;
			break;
		}
	l->version = BM_LABEL_VERSION;
	memset(l->name, 0, sizeof(l->name));
	memcpy(l->name, m->name, strnlen(m->name, BM_NAME_MAX));
	l->mirror_id = m->mirror_id;
	l->component_id = bm_random_id();
	l->genid = m->genid;
	l->syncid = m->syncid;
	l->seq = 0;
	l->mirror_flags = m->mirror_flags;
	l->component_flags = p->inactive ? BM_CF_INACTIVE : BM_CF_SYNCHRONIZING;
	/* Not an INACTIVE one: its label is not rewritten when the mirror
	 * is marked clean, and a DIRTY left there would make the next start
	 * take the mirror for crashed. */
	if (atomic_load(&m->dirty) && !p->inactive)
		l->component_flags |= BM_CF_DIRTY;
	l->balance = (uint32_t)atomic_load(&m->balance);
	l->slice = atomic_load(&m->slice);
	l->priority = p->priority;
	l->sector_size = l->sector_size ? l->sector_size : 512;
	l->data_size = m->size;
	l->component_size = be->size;
	l->sync_offset = 0;
	l->bitmap_offset = bm_label_offset(be->size) -
	                   (BM_META_SIZE - BM_LABEL_SIZE);
	/* the mirror's bitmap geometry (its blocks are written when its
	 * copy starts, sync.c); none when the mirror has none */
	if (!m->bitmap) {
		l->bitmap_size = 0;
		l->bitmap_chunk = 0;
	} else {
		l->bitmap_offset = bm_bitmap_offset(be->size);
	}
	l->ncomponents = (uint32_t)present_count(m) + 1;
}

int bm_mirror_insert(bm_mirror *m, const char *path,
                     const struct bm_insert_params *p)
{
	struct bm_backend *be = NULL;
	struct bm_component *c;
	int err, idx;

	if (strlen(path) >= sizeof(m->comp[0].path))
		return bm_error(ENAMETOOLONG, "component path too long");
	pthread_mutex_lock(&m->live_lock);
	idx = find_path(m, path);
	if (idx >= 0) {
		int st = atomic_load(&m->comp[idx].state);
		if (st == BM_CS_ACTIVE || st == BM_CS_SYNCHRONIZING)
			err = bm_error(EEXIST, "%s is already a component of %s",
			               path, m->name);
		else
			err = bm_error(EEXIST, "%s is already a component of %s "
			               "(%s); remove it first ('blkmirror remove %s "
			               "%s') to insert it anew", path, m->name,
			               bm_comp_state_name(st), m->name, path);
		goto out;
	}
	idx = free_slot(m);
	if (idx < 0) {
		err = bm_error(ENOSPC, "%s already has %d components", m->name,
		               BM_MAX_COMPONENTS);
		goto out;
	}
	err = bm_backend_open(path, true, &be);
	struct stat sn, sc;
	if (err == -EBUSY && stat(path, &sn) == 0) {
		/* locked: by this server, when it is one of ours under
		 * another name (a hard or symbolic link) */
		for (int i = 0; i < m->ncomp; i++) {
			struct bm_component *o = &m->comp[i];
			if (atomic_load(&o->state) == BM_CS_REMOVED ||
			    stat(o->path, &sc) < 0)
				continue;
			if (S_ISBLK(sn.st_mode) ? sn.st_rdev == sc.st_rdev
			                        : sn.st_dev == sc.st_dev &&
			                          sn.st_ino == sc.st_ino) {
				err = bm_error(EEXIST, "%s is %s, already a "
				               "component of %s", path, o->path,
				               m->name);
				goto out;
			}
		}
	}
	if (err < 0) {
		err = bm_error(err, "%s", bm_last_error());
		goto out;
	}
	err = check_new(m, path, be, p);
	if (err < 0 || p->check_only)
		goto out;

	/* Build the slot while nobody can see it. */
	c = &m->comp[idx];
	atomic_store(&c->state, BM_CS_REMOVED);
	c->index = idx;
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->nretired = 0;
	atomic_store(&c->sync_offset, 0);
	atomic_store(&c->sync_copied, 0); /* (a new copy) */
	atomic_store(&c->sync_durable, 0);
	atomic_store(&c->recopy_from, 0);
	atomic_store(&c->recopy_to, 0);
	atomic_store(&c->recopy_end, 0);
	atomic_store(&c->head_pos, 0);
	atomic_store(&c->read_errors, 0);
	atomic_fetch_add(&c->epoch, 1);
	c->label_stale = false;
	c->label_seq_landed = 0; /* (nothing of ours on its disk yet) */
	c->events_on_disk = 0;
	c->full_on_disk = false;
	c->hang_warned = false;
	c->inactive_abort_said = false;
	c->rejoin = false;
	c->retry_at_ms = 0;
	c->retry_delay_ms = 0;
	atomic_store(&c->refused, false);
	atomic_store(&c->link_dead, false);
	zero_stats(&c->stats);
	bm_set_why(m, c, "%s", p->inactive ? "inserted inactive" : "");

	/* Ours before anything else is written to it. */
	err = bm_lease_add(m, idx, be);
	if (err < 0)
		goto out;

	pthread_mutex_lock(&m->meta_lock);
	new_label(m, be, p, &c->label);
	c->be = be;
	/* The label says SYNCHRONIZING from 0 (or INACTIVE) before any
	 * client write can reach it. */
	err = bm_meta_write_label(m, c);
	if (err < 0) {
		c->be = NULL;
		pthread_mutex_unlock(&m->meta_lock);
		bm_lease_drop(m, idx);
		err = bm_error(err, "%s: cannot write its label: %s", path,
		               strerror(-err));
		goto out;
	}
	/* Publish: the state, then (a new slot) ncomp. */
	atomic_store(&c->state, p->inactive ? BM_CS_INACTIVE : BM_CS_SYNCHRONIZING);
	if (idx == m->ncomp)
		atomic_store(&m->ncomp, idx + 1);
	be = NULL; /* the slot owns it */
	update_degraded_locked(m);
	if (relabel_all_locked(m) < 0)
		fprintf(stderr, "blkmirror: %s: a label could not be updated "
		        "after inserting %s\n", m->name, path);
	pthread_mutex_unlock(&m->meta_lock);
	bm_event_post(m, BM_SEV_NOTICE, BM_EV_COMPONENT_INSERTED, path,
	              "inserted %s, priority %u",
	              p->inactive ? "INACTIVE" : "SYNCHRONIZING", p->priority);
	bm_event_redundancy(m);
	if (!p->inactive)
		bm_sync_kick(m);
	err = 0;
out:
	if (be) {
		/* a check that timed out may have left a request outstanding
		 * (a disk that hangs): end it, so that close does not wait */
		if (err < 0 && be->ops->abort)
			be->ops->abort(be);
		be->ops->close(be);
	}
	pthread_mutex_unlock(&m->live_lock);
	return err;
}

/* ---- an ABSENT component that comes back ---- */

/* lab is of the running mirror's generation and says no component in
 * service missed writes: chosen as a restart's source only by priority
 * or order, it holds nothing the mirror lacks (meta_lock held). */
static bool same_history(struct bm_mirror *m, int idx,
                         const struct bm_label *lab)
{
	if (lab->genid != m->genid || lab->syncid != m->syncid)
		return false;
	for (int i = 0; i < m->ncomp; i++) {
		int st = atomic_load(&m->comp[i].state);
		if (i != idx && st != BM_CS_ABSENT && st != BM_CS_REMOVED &&
		    bm_label_says_missed(lab, m->comp[i].label.component_id))
			return false;
	}
	return true;
}

/* Would a restart take lab (the label of the component at idx) as a member
 * to copy?  The assembly decision (assembly_decide.c) over the labels of
 * the components in service and lab: it must be neither the source (it
 * would hold writes the running mirror lacks) nor in split brain with
 * them.  0, or -errno with a message (meta_lock held). */
static int rejoin_allowed(struct bm_mirror *m, int idx, struct bm_backend *be,
                          const struct bm_label *lab, bool *inactive)
{
	struct bm_asm_input *in = calloc(BM_MAX_COMPONENTS, sizeof(*in));
	struct bm_asm_out *out = calloc(1, sizeof(*out));
	int err = 0;

	if (!in || !out) {
		free(in);
		free(out);
		return bm_error(ENOMEM, "out of memory");
	}
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		int st = atomic_load(&c->state);
		in[i].path = c->path;
		in[i].same_disk_as = -1;
		if (i == idx) {
			in[i].present = true;
			in[i].label = *lab;
			in[i].data_area = bm_data_area(be->size);
		} else if ((st == BM_CS_ACTIVE || st == BM_CS_SYNCHRONIZING ||
		            st == BM_CS_INACTIVE) && c->be) {
			in[i].present = true;
			in[i].label = c->label;
			in[i].data_area = bm_data_area(c->be->size);
		}
	}
	bm_assembly_decide(m->name, in, m->ncomp, -1, out);
	/* it would be the source: it holds writes the mirror lacks (also
	 * when a copy in service counts more events: another history) */
	bool newer = out->source == idx && !same_history(m, idx, lab);
	if (out->result == BM_ASM_SPLIT_BRAIN) {
		int other = out->split[0] == idx ? out->split[1] : out->split[0];
		err = bm_error(EEXIST, "split brain: it and %s each took writes "
		               "while the other was away; nothing was written "
		               "to it (to keep it: stop, serve --force-source)",
		               other >= 0 ? m->comp[other].path : "another");
	} else if (out->result != BM_ASM_OK &&
	           !(out->result == BM_ASM_SOURCE_BEHIND && newer))
		err = bm_error(EEXIST, "it came back, but %s", out->error);
	else if (newer)
		err = bm_error(EEXIST, "it came back holding writes the running "
		               "mirror lacks (generation %" PRIu64 ", the "
		               "mirror's %" PRIu64 "): stop the mirror and start "
		               "it again to take them, or remove it",
		               lab->genid, m->genid);
	else if (out->comp[idx].role == BM_ROLE_ABSENT)
		err = bm_error(EEXIST, "it came back, but is left out: %s",
		               out->comp[idx].why);
	*inactive = out->comp[idx].role == BM_ROLE_INACTIVE;
	free(in);
	free(out);
	return err;
}

int bm_label_read_timeout(struct bm_mirror *m, struct bm_backend *be,
                          struct bm_label *l)
{
	uint8_t *buf;
	int err;

	if (be->size < BM_MIN_COMPONENT_SIZE)
		return bm_error(ENOSPC, "too small (%" PRIu64 " bytes)", be->size);
	if (posix_memalign((void **)&buf, 4096, BM_LABEL_SIZE))
		return bm_error(ENOMEM, "out of memory");
	err = bm_backend_io_wait_timeout(be, BM_BOP_READ, buf, BM_LABEL_SIZE,
	                                 bm_label_offset(be->size), 0,
	                                 atomic_load(&m->io_timeout_ms));
	if (err == 0)
		err = bm_label_decode(buf, BM_LABEL_SIZE, l);
	else
		err = bm_error(err, "cannot read its label: %s", strerror(-err));
	free(buf);
	return err;
}

int bm_label_read_grown(struct bm_mirror *m, struct bm_backend *be,
                        uint64_t own_size, struct bm_label *l)
{
	uint64_t sizes[BM_MAX_COMPONENTS + 1], now = be->size;
	char msg[400];
	int n = 0, err = bm_label_read_timeout(m, be, l);

	if (err != -ENOENT)
		return err;
	snprintf(msg, sizeof(msg), "%s", bm_last_error());
	if (own_size)
		sizes[n++] = own_size;
	pthread_mutex_lock(&m->meta_lock); /* (labels change there) */
	for (int i = 0; i < m->ncomp; i++)
		if (m->comp[i].label.component_size)
			sizes[n++] = m->comp[i].label.component_size;
	pthread_mutex_unlock(&m->meta_lock);
	err = bm_label_find_grown(be, sizes, n, l,
	                          atomic_load(&m->io_timeout_ms));
	if (err == 0)
		fprintf(stderr, "blkmirror: %s: %s grew from %" PRIu64 " to %"
		        PRIu64 " bytes since it was labelled: its label is at its "
		        "old end, and the mirror uses its first %" PRIu64
		        " bytes\n", m->name, be->path, be->size, now, be->size);
	else if (err == -ENOENT)
		bm_error(ENOENT, "%s", msg);
	return err;
}

int bm_flush_probe_timeout(struct bm_mirror *m, struct bm_backend *be)
{
	/* A flush only: a probe write that timed out could land later, over
	 * the label written once the component is back. */
	int err = bm_backend_io_wait_timeout(be, BM_BOP_FLUSH, NULL, 0, 0, 0,
	                                     atomic_load(&m->io_timeout_ms));

	if (err < 0)
		return bm_error(err, "it answers, but a flush did not end: %s",
		                strerror(-err));
	return 0;
}

/* The same label read twice (before and after the lease was taken). */
static bool same_label(const struct bm_label *a, const struct bm_label *b)
{
	return a->genid == b->genid && a->syncid == b->syncid &&
	       a->seq == b->seq && a->component_flags == b->component_flags &&
	       a->missed == b->missed;
}

int bm_live_rejoin(struct bm_mirror *m, int idx)
{
	struct bm_component *c = &m->comp[idx];
	struct bm_backend *be = NULL;
	struct bm_label lab, again;
	bool inactive = false, locked = false, leased = false;
	int err;

	/* a close waits for us (and we start none once it began) */
	if (bm_live_begin(m) < 0)
		return -ECANCELED;
	if (atomic_load(&c->state) != BM_CS_ABSENT || !c->rejoin) {
		err = -ECANCELED;
		goto out;
	}
	/* The slow steps first, without live_lock (an insert, remove or a
	 * verb's job never waits for a component that connects and then
	 * hangs): open (its connect has a deadline), the label (read with
	 * io-timeout), the lease watched. */
	err = bm_backend_open(c->path, true, &be);
	if (err < 0) {
		if (err == -EBUSY) /* (not "busy, retry soon": still away) */
			err = bm_error(EAGAIN, "%s", bm_last_error());
		goto out;
	}
	if (bm_data_area(be->size) < m->size) {
		err = bm_error(ENOSPC, "it came back smaller (%" PRIu64
		               " bytes of data room, the mirror has %" PRIu64 ")",
		               bm_data_area(be->size), m->size);
		goto refused;
	}
	err = bm_min_block_check(m, be);
	if (err < 0)
		goto refused;
	err = bm_label_read_grown(m, be, 0, &lab); /* (grown while away) */
	if (err == -ETIMEDOUT)
		goto out; /* it connects but does not answer: still away */
	if (err < 0) {
		err = bm_error(err, "it came back without this mirror's label: "
		               "%s", bm_last_error());
		goto refused;
	}
	if (lab.mirror_id != m->mirror_id ||
	    (c->known_id && lab.component_id != c->known_id)) {
		err = bm_error(EEXIST, "it came back with the label of %s",
		               lab.mirror_id != m->mirror_id
		                       ? "another mirror" : "another member");
		goto refused;
	}
	/* Not under a server elsewhere (watched for seconds). */
	err = bm_lease_check_free(be);
	if (err < 0)
		goto refused;

	/* never waits behind an insert or removal: the next try will do */
	if (pthread_mutex_trylock(&m->live_lock) != 0) {
		err = -EBUSY;
		goto out;
	}
	locked = true;
	if (atomic_load(&c->state) != BM_CS_ABSENT || !c->rejoin) {
		err = -ECANCELED;
		goto out;
	}
	/* Another member's copy (the same component id), even where the
	 * member list did not name it: the kernel cannot tell for URIs, and
	 * no token is written to find out (this is tried every few
	 * seconds). */
	for (int i = 0; i < m->ncomp; i++) {
		int st = atomic_load(&m->comp[i].state);
		if (i != idx && st != BM_CS_ABSENT && st != BM_CS_REMOVED &&
		    m->comp[i].label.component_id == lab.component_id) {
			err = bm_error(EEXIST, "it came back as a copy of %s (the "
			               "same component id)", m->comp[i].path);
			goto refused;
		}
	}
	pthread_mutex_lock(&m->meta_lock);
	err = rejoin_allowed(m, idx, be, &lab, &inactive);
	pthread_mutex_unlock(&m->meta_lock);
	if (err < 0)
		goto refused;
	/* Ours before anything is written to it; then its label again: one
	 * written by another server during the watch (which then stopped)
	 * is judged anew at the next try. */
	err = bm_lease_add(m, idx, be);
	if (err < 0)
		goto refused;
	leased = true;
	err = bm_label_read_timeout(m, be, &again);
	if (err == 0 && !same_label(&lab, &again))
		err = bm_error(EAGAIN, "its label changed while it was looked at");
	if (err == 0)
		err = bm_flush_probe_timeout(m, be);
	if (err < 0)
		goto out;

	pthread_mutex_lock(&m->meta_lock);
	c->label = lab;
	bm_comp_label_on_disk(c); /* (read from its disk) */
	c->known_id = lab.component_id;
	c->be = be;
	atomic_store(&c->sync_offset, 0);
	atomic_store(&c->sync_copied, 0); /* (a new copy) */
	atomic_store(&c->sync_durable, 0);
	atomic_store(&c->recopy_from, 0); /* (copied from the start) */
	atomic_store(&c->recopy_to, 0);
	atomic_store(&c->recopy_end, 0);
	atomic_store(&c->read_errors, 0);
	atomic_fetch_add(&c->epoch, 1);
	c->hang_warned = false;
	c->inactive_abort_said = false;
	c->label_stale = false;
	if (!inactive) {
		/* what it missed is not known (it was not here to be
		 * tracked by this server's bitmap): copied in full, and its
		 * label says so before any client write reaches it */
		c->sync_full = true;
		c->label.component_flags |= BM_CF_SYNCHRONIZING |
		                             BM_CF_FORCE_SYNC;
		c->label.component_flags &= ~(uint32_t)BM_CF_DIRTY;
		if (atomic_load(&m->dirty))
			c->label.component_flags |= BM_CF_DIRTY;
		c->label.sync_offset = 0;
		c->label.genid = m->genid;
		c->label.syncid = m->syncid;
		err = bm_meta_write_label(m, c);
	}
	if (err < 0) {
		c->be = NULL;
		pthread_mutex_unlock(&m->meta_lock);
		err = bm_error(err, "it came back, but its label cannot be "
		               "written: %s", strerror(-err));
		goto refused;
	}
	atomic_store(&c->state, inactive ? BM_CS_INACTIVE : BM_CS_SYNCHRONIZING);
	c->rejoin = false;
	be = NULL; /* the slot owns it, and its lease is renewed */
	leased = false;
	update_degraded_locked(m);
	if (relabel_all_locked(m) < 0)
		fprintf(stderr, "blkmirror: %s: a label could not be updated "
		        "after %s came back\n", m->name, c->path);
	pthread_mutex_unlock(&m->meta_lock);
	bm_set_why(m, c, "%s", inactive ? "came back inactive" : "");
	bm_event_post(m, BM_SEV_NOTICE, BM_EV_COMPONENT_BACK, c->path,
	              inactive ? "it was absent and is back (INACTIVE, as its "
	                         "label says)"
	                       : "it was absent and is back; copying it in full");
	bm_event_redundancy(m);
	if (!inactive)
		bm_sync_kick(m);
	err = 0;
	goto out;
refused:
	bm_set_why(m, c, "%s", bm_last_error());
	if (err != -EBUSY) /* (EBUSY: another server holds it; retried) */
		err = -EEXIST;
out:
	if (leased) /* (its lease block says ACTIVE until it expires) */
		bm_lease_drop(m, idx);
	if (be) {
		if (be->ops->abort)
			be->ops->abort(be);
		be->ops->close(be);
	}
	if (locked)
		pthread_mutex_unlock(&m->live_lock);
	bm_live_end(m);
	return err;
}

/* Waits until nothing uses c (bm_comp_get callers, requests in flight).
 * After io-timeout + 5 s its backend is aborted (what it holds ends with
 * an error) and waited for as long again.  True when idle. */
static bool drain_comp(struct bm_mirror *m, struct bm_component *c)
{
	long long limit = atomic_load(&m->io_timeout_ms) + DRAIN_EXTRA_MS;
	long long start = bm_now_ms();
	bool aborted = false;

	for (;;) {
		if (atomic_load(&c->users) == 0 && atomic_load(&c->inflight) == 0 &&
		    atomic_load(&m->sync_target) != c)
			return true;
		long long waited = bm_now_ms() - start;
		if (waited > limit && !aborted) {
			pthread_mutex_lock(&m->meta_lock);
			if (c->be && c->be->ops->abort)
				c->be->ops->abort(c->be);
			pthread_mutex_unlock(&m->meta_lock);
			aborted = true;
		} else if (waited > 2 * limit) {
			return false;
		}
		usleep(2000);
	}
}

/* Zeroes the lease and the label of be when it still carries the label
 * of this component.  0, or -errno with bm_last_error(): -ENODATA when it
 * carries no label (nothing to clear), -ESTALE when another one. */
static int clear_label_on(struct bm_mirror *m, struct bm_backend *be,
                          uint64_t component_id)
{
	struct bm_label l;
	uint8_t *zero;
	/* (grown since it was labelled: at its old end, be->size then) */
	int err = bm_label_read_grown(m, be, 0, &l);

	if (err == -ENOENT) /* (bm_label_decode: no label there) */
		return bm_error(ENODATA, "it carries no blkmirror label");
	if (err < 0)
		return err;
	/* component_id 0: absent since the start, its label never read */
	if (l.mirror_id != m->mirror_id ||
	    (component_id && l.component_id != component_id))
		return bm_error(ESTALE, "it now carries another label (mirror "
		                "'%s')", l.name);
	if (posix_memalign((void **)&zero, 4096, BM_LEASE_SIZE + BM_LABEL_SIZE))
		return bm_error(ENOMEM, "out of memory");
	memset(zero, 0, BM_LEASE_SIZE + BM_LABEL_SIZE);
	err = bm_backend_io_wait_timeout(be, BM_BOP_WRITE, zero,
	                                 BM_LEASE_SIZE + BM_LABEL_SIZE,
	                                 bm_lease_offset(be->size), 0,
	                                 atomic_load(&m->io_timeout_ms));
	if (err == 0)
		err = bm_backend_io_wait_timeout(be, BM_BOP_FLUSH, NULL, 0, 0, 0,
		                                 atomic_load(&m->io_timeout_ms));
	free(zero);
	return err < 0 ? bm_error(err, "%s", strerror(-err)) : 0;
}

/* Clears the label of a component that left (its backend closed): through
 * a fresh open of its path. */
static int clear_label(struct bm_mirror *m, const char *path,
                       uint64_t component_id)
{
	struct bm_backend *be;
	int err = -EBUSY;

	/* A reconnect that raced the removal may hold it a moment. */
	for (int tries = 0; tries < 20 && err == -EBUSY; tries++) {
		if (tries)
			usleep(100000);
		err = bm_backend_open(path, true, &be);
	}
	if (err < 0)
		return err;
	err = clear_label_on(m, be, component_id);
	if (err < 0 && be->ops->abort)
		be->ops->abort(be);
	be->ops->close(be);
	return err;
}

/* A file or device path that no longer exists (an NBD URI is never
 * "gone": its server may be down and come back with the label). */
static bool file_gone(const char *path)
{
	struct stat st;

	/* (a device node udev removed, an unplugged disk, may come back
	 * with its label: not "gone") */
	return !strstr(path, "://") && strncmp(path, "/dev/", 5) != 0 &&
	       stat(path, &st) < 0 && errno == ENOENT;
}

#define REPORT(...)                                                        \
	do {                                                               \
		int n_ = snprintf(report + used, used < len ? len - used : 0, \
		                  __VA_ARGS__);                            \
		if (n_ > 0)                                                \
			used += (size_t)n_;                                \
	} while (0)

/* Takes the components in mask out of service (already REMOVED): drains
 * them, stops their leases, closes their backends, clears their labels
 * when clear.  Caller holds live_lock. */
static size_t retire(struct bm_mirror *m, uint32_t mask, const uint64_t *ids,
                     const int *was, bool clear, char *report, size_t len,
                     size_t used)
{
	for (int i = 0; i < m->ncomp; i++) {
		if (!(mask & (1u << i)))
			continue;
		struct bm_component *c = &m->comp[i];
		bool idle = drain_comp(m, c);
		bm_lease_drop(m, i);
		struct bm_backend *be = NULL, *old[4];
		int nold;
		pthread_mutex_lock(&m->meta_lock);
		if (idle) {
			be = c->be;
			c->be = NULL;
		}
		nold = idle ? c->nretired : 0;
		for (int k = 0; k < nold; k++)
			old[k] = c->retired[k];
		if (idle)
			c->nretired = 0;
		pthread_mutex_unlock(&m->meta_lock);
		for (int k = 0; k < nold; k++)
			old[k]->ops->close(old[k]);
		if (!idle || late_writes(be))
			remember_late(m, ids[i]);
		if (!idle) {
			/* Leaves the backend to the mirror's close. */
			REPORT("%s: removed; it did not finish its requests, so its "
			       "label was left (it is stale)\n", c->path);
			continue;
		}
		int err = -ENODEV;
		/* its old connection given up with writes its server may
		 * still carry out (lib/backends/nbd.c): a label cleared now
		 * could be written over by one of them */
		bool late = be && atomic_load(&be->detached) > 0;
		if (clear && be && (was[i] == BM_CS_ACTIVE ||
		                    was[i] == BM_CS_SYNCHRONIZING ||
		                    was[i] == BM_CS_INACTIVE) &&
		    atomic_load(&be->detached) == 0)
			err = clear_label_on(m, be, ids[i]);
		if (be) {
			if ((err < 0 || atomic_load(&be->detached) > 0) &&
			    be->ops->abort)
				be->ops->abort(be);
			be->ops->close(be);
		}
		if (clear && err < 0 && late)
			err = bm_error(EBUSY, "its server may still carry out "
			               "writes of a connection given up; once it "
			               "has (or was restarted), 'blkmirror clear "
			               "%s'", c->path);
		else if (clear && err < 0 && err != -ENODATA && err != -ESTALE)
			err = clear_label(m, c->path, ids[i]); /* a fresh open */
		if (!clear && file_gone(c->path))
			REPORT("%s: forgotten (%s); it is gone, so no label of "
			       "it is left\n", c->path, bm_comp_state_name(was[i]));
		else if (!clear)
			REPORT("%s: forgotten (%s); its label stays, stale\n",
			       c->path, bm_comp_state_name(was[i]));
		else if (err < 0 && file_gone(c->path))
			REPORT("%s: removed; it is gone, so no label of it is "
			       "left\n", c->path);
		else if (err == 0)
			REPORT("%s: removed; its label is cleared\n", c->path);
		else if (err == -ENODATA || err == -ESTALE)
			/* not this mirror's (wiped, or labelled again): no
			 * stale label of ours is left */
			REPORT("%s: removed; %s, left as it is\n", c->path,
			       bm_last_error());
		else
			REPORT("%s: removed; its label was left (it is stale): "
			       "%s\n", c->path, bm_last_error());
		bm_event_post(m, BM_SEV_NOTICE, BM_EV_COMPONENT_REMOVED, c->path,
		              "%s", clear ? "removed" : "forgotten");
	}
	return used;
}

int bm_mirror_remove(bm_mirror *m, const char *const *paths, size_t n,
                     char *report, size_t len)
{
	uint64_t ids[BM_MAX_COMPONENTS];
	int was[BM_MAX_COMPONENTS];
	uint32_t mask = 0;
	size_t used = 0;
	int err = 0, active_left = 0, active_removed = 0;

	if (len)
		report[0] = '\0';
	pthread_mutex_lock(&m->live_lock);
	for (size_t k = 0; k < n; k++) {
		int i = bm_find_component(m, paths[k]); /* (any spelling) */
		if (i < 0) {
			err = i;
			goto out;
		}
		mask |= 1u << i;
	}
	pthread_mutex_lock(&m->meta_lock);
	for (int i = 0; i < m->ncomp; i++) {
		int s = atomic_load(&m->comp[i].state);
		if (s != BM_CS_ACTIVE)
			continue;
		if (mask & (1u << i))
			active_removed++;
		else
			active_left++;
	}
	if (active_removed && !active_left) {
		const char *which = "";
		for (int i = 0; i < m->ncomp && !which[0]; i++)
			if ((mask & (1u << i)) &&
			    atomic_load(&m->comp[i].state) == BM_CS_ACTIVE)
				which = m->comp[i].path;
		pthread_mutex_unlock(&m->meta_lock);
		err = bm_error(EBUSY, "removing %s%s would leave %s with no ACTIVE "
		               "(up-to-date) component: that loses the data; insert "
		               "another and let it synchronize first", which,
		               active_removed > 1 ? " and the other ACTIVE ones" : "",
		               m->name);
		goto out;
	}
	bool departed = false;
	bm_meta_record_begin(m); /* (meta.c: write acks wait for the record) */
	for (int i = 0; i < m->ncomp; i++) {
		if (!(mask & (1u << i)))
			continue;
		struct bm_component *c = &m->comp[i];
		was[i] = atomic_load(&c->state);
		ids[i] = c->label.component_id;
		departed |= was[i] == BM_CS_ACTIVE ||
		            was[i] == BM_CS_SYNCHRONIZING;
		atomic_store(&c->state, BM_CS_REMOVED);
		atomic_store(&c->link_dead, false);
	}
	/* Its label may not be cleared (unreachable): then it must never pass
	 * for current again. */
	if (departed)
		m->genid++;
	update_degraded_locked(m);
	if (relabel_all_locked(m) < 0) {
		fprintf(stderr, "blkmirror: %s: a label could not be updated "
		        "after a removal\n", m->name);
		for (int i = 0; i < m->ncomp && used < len; i++)
			if (m->comp[i].label_stale &&
			    !(mask & (1u << i)))
				used += (size_t)snprintf(report + used, len - used,
				        "warning: the label of %s could not record "
				        "the removal: %s\n", m->comp[i].path,
				        strerror(m->comp[i].label_err < 0
				                 ? -m->comp[i].label_err : EIO));
		/* one in service whose label lacks the record cannot be
		 * trusted with writes (as when a failure is recorded) */
		for (int i = 0; i < m->ncomp; i++) {
			struct bm_component *c = &m->comp[i];
			int st = atomic_load(&c->state);
			if (c->label_stale && (st == BM_CS_ACTIVE ||
			                       st == BM_CS_SYNCHRONIZING))
				bm_meta_label_failed_locked(m, c,
				                            " after a removal");
		}
		if (departed)
			bm_meta_check_recorded_locked(m, "the removal");
		if (atomic_load(&m->meta_broken) && used < len)
			used += (size_t)snprintf(report + used, len - used,
			        "warning: no ACTIVE component's label records it: "
			        "writes to %s are refused until a label write "
			        "succeeds\n", m->name);
	}
	bm_meta_record_end(m);
	pthread_mutex_unlock(&m->meta_lock);
	used = retire(m, mask, ids, was, true, report, len, used);
out:
	pthread_mutex_unlock(&m->live_lock);
	return err;
}

int bm_mirror_forget_gone(bm_mirror *m, char *report, size_t len)
{
	uint64_t ids[BM_MAX_COMPONENTS];
	int was[BM_MAX_COMPONENTS], count = 0;
	uint32_t mask = 0;

	if (len)
		report[0] = '\0';
	pthread_mutex_lock(&m->live_lock);
	pthread_mutex_lock(&m->meta_lock);
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		int s = atomic_load(&c->state);
		if (s != BM_CS_ABSENT && s != BM_CS_DISCONNECTED &&
		    s != BM_CS_FAILED)
			continue;
		was[i] = s;
		ids[i] = c->label.component_id;
		atomic_store(&c->state, BM_CS_REMOVED);
		mask |= 1u << i;
		count++;
	}
	if (count) {
		/* Their labels may hold the current genid (absent at start):
		 * now they are stale. */
		m->genid++;
		update_degraded_locked(m);
		if (relabel_all_locked(m) < 0) {
			fprintf(stderr, "blkmirror: %s: a label could not be "
			        "updated after forget\n", m->name);
			bm_meta_check_recorded_locked(m, "the forget");
		}
	}
	pthread_mutex_unlock(&m->meta_lock);
	if (count)
		retire(m, mask, ids, was, false, report, len, 0);
	pthread_mutex_unlock(&m->live_lock);
	return count;
}

int bm_mirror_paths(bm_mirror *m, char **paths, size_t *n)
{
	*n = 0;
	pthread_mutex_lock(&m->live_lock);
	for (int i = 0; i < m->ncomp; i++) {
		if (!bm_comp_present(&m->comp[i]))
			continue;
		paths[*n] = strdup(m->comp[i].path);
		if (!paths[*n]) {
			for (size_t k = 0; k < *n; k++)
				free(paths[k]);
			*n = 0;
			pthread_mutex_unlock(&m->live_lock);
			return -ENOMEM;
		}
		(*n)++;
	}
	pthread_mutex_unlock(&m->live_lock);
	return 0;
}
