/*
 * Labeling new mirrors and assembling running ones from their labels.
 *
 * Assembly reads every component's label and leaves the decision to
 * assembly_decide.c (a pure function: which component is the source, what
 * the others become, or a refusal: split brain, no source), then applies
 * it.  In short (gmirror's rules, plus split-brain detection):
 *   - genid is bumped on the survivors when a component fails, syncid on the
 *     first write while the mirror is degraded: a component with a lower
 *     (genid, syncid) missed writes and is copied again from offset 0;
 *   - a label records which members missed writes it holds: two that each
 *     missed the other's writes are a split brain (refused until
 *     serve --force-source names the copy to keep);
 *   - a component flagged SYNCHRONIZING is never a source: it resumes its
 *     copy at its checkpoint if the mirror was shut down cleanly, else at 0;
 *   - if the sources were DIRTY (the server did not stop cleanly) their
 *     copies may differ where writes were in flight: one source is kept (the
 *     highest priority, then the lowest index) and the others are copied
 *     from it.  This makes copies identical; like md and gmirror, it cannot
 *     prove which copy of an in-flight write is right.
 * Components that are missing, unreadable, foreign, too small or one
 * component seen twice (two paths to one disk, or the same component id)
 * are left out (ABSENT) with the reason kept for status.
 * Before anything is written, every component's lease (lease.c) must show
 * that no other live server holds it, and a component locked by another
 * process on this host refuses the whole mirror: one owner per component.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "assembly_decide.h"
#include "bitmap.h"
#include "deadline.h"
#include "error.h"
#include "lease.h"
#include "mirror.h"
#include "probe.h"

uint64_t bm_random_id(void)
{
	uint64_t v = 0;
	while (v == 0)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = (uint64_t)bm_now_ms() * 2654435761u;
	return v;
}

/* Reads and decodes the label of an open backend (live.c uses it too). */
int bm_label_read_be(struct bm_backend *be, struct bm_label *l)
{
	uint8_t *buf;
	int err;

	if (be->size < BM_MIN_COMPONENT_SIZE)
		return bm_error(ENOSPC, "%s: too small (%" PRIu64 " bytes; a "
		                "component needs at least %u)", be->path,
		                be->size, BM_MIN_COMPONENT_SIZE);
	if (posix_memalign((void **)&buf, 4096, BM_LABEL_SIZE))
		return bm_error(ENOMEM, "out of memory");
	err = be->ops->pread_sync(be, buf, BM_LABEL_SIZE,
	                          bm_label_offset(be->size));
	if (err == -ETIMEDOUT) {
		free(buf);
		return bm_error(err, "%s: does not answer: its label was not "
		                "read within %ld s (%s)", be->path,
		                (bm_backend_sync_timeout_ms() + 999) / 1000,
		                strstr(be->path, "://") ? "its connection is up"
		                : "the kernel holds the read");
	}
	if (err < 0) {
		free(buf);
		return bm_error(err, "%s: cannot read the label: %s", be->path,
		                strerror(-err));
	}
	err = bm_label_decode(buf, BM_LABEL_SIZE, l);
	free(buf);
	if (err < 0) {
		char msg[400];
		snprintf(msg, sizeof(msg), "%s", bm_last_error());
		if (err == -ENOENT)
			return bm_error(err, "%s: has no blkmirror label", be->path);
		return bm_error(err, "%s: %s", be->path, msg);
	}
	return 0;
}

/*
 * A component that grew since its label was written (an LV extended, a
 * file made longer, an export resized) keeps its label, lease and bitmap
 * at its old end, where nothing looks (bm_label_offset of its new size).
 * Given the sizes its label may have been written at (the sizes the
 * mirror's other labels, or its own last one, record), this looks at each
 * old end; a label found there that records that size as its own is the
 * component's, and the component is used at that size from then on
 * (be->size: its label, lease and bitmap where they are; the space it
 * gained unused; be->dev_size keeps what it is).  Every candidate is
 * read: labels at two old ends (one of them stale) are not told apart.
 * 0 with *l; -ENOENT when none is there (bm_last_error not meaningful);
 * -EEXIST for two; the read's error (-ETIMEDOUT: it did not answer within
 * timeout_ms, or the process's deadline when 0).
 */
/* Sizes a record keeps, each with the mirror it is for: a label found
 * at one of them is taken only when it is that mirror's. */
static struct {
	uint64_t size;
	char name[BM_NAME_MAX + 1];
} hints[BM_MAX_COMPONENTS];
static _Atomic int nhints; /* (cleared by serve once open, while the
                            * mirror's threads may look: the entries stay) */

void bm_label_set_size_hints(const char *name, const uint64_t *sizes,
                             size_t n)
{
	nhints = 0;
	bm_label_add_size_hints(name, sizes, n);
}

void bm_label_add_size_hints(const char *name, const uint64_t *sizes,
                             size_t n)
{
	for (size_t i = 0; name && i < n && nhints < BM_MAX_COMPONENTS; i++) {
		bool seen = sizes[i] == 0;
		for (int k = 0; k < nhints && !seen; k++)
			seen = hints[k].size == sizes[i] &&
			       strcmp(hints[k].name, name) == 0;
		if (seen)
			continue;
		hints[nhints].size = sizes[i];
		snprintf(hints[nhints].name, sizeof(hints[nhints].name), "%s",
		         name);
		nhints++;
	}
}

size_t bm_mirror_label_sizes(bm_mirror *m, uint64_t *sizes, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&m->meta_lock); /* (labels change there) */
	for (int i = 0; i < m->ncomp && n < max; i++) {
		uint64_t s = m->comp[i].label.component_size;
		bool seen = s == 0;
		for (size_t k = 0; k < n && !seen; k++)
			seen = sizes[k] == s;
		if (!seen)
			sizes[n++] = s;
	}
	pthread_mutex_unlock(&m->meta_lock);
	return n;
}

int bm_label_find_grown(struct bm_backend *be, const uint64_t *given,
                        int ngiven, struct bm_label *l, long timeout_ms)
{
	/* the sizes given, then the hints (the sizes a record keeps: a
	 * mirror whose components all grew has no label to give one) */
	uint64_t sizes[2 * BM_MAX_COMPONENTS + 2], at = 0;
	const char *only[2 * BM_MAX_COMPONENTS + 2]; /* a hint's mirror */
	int n = 0;
	for (int i = 0; i < ngiven && n < BM_MAX_COMPONENTS + 2; i++) {
		only[n] = NULL;
		sizes[n++] = given[i];
	}
	for (int i = 0; i < nhints; i++) {
		only[n] = hints[i].name;
		sizes[n++] = hints[i].size;
	}
	uint8_t *buf;
	int err = 0;

	if (posix_memalign((void **)&buf, 4096, BM_LABEL_SIZE))
		return bm_error(ENOMEM, "out of memory");
	for (int i = 0; i < n && err == 0; i++) {
		uint64_t h = sizes[i] & ~(uint64_t)4095, off = bm_label_offset(h);
		struct bm_label found;
		bool tried = false;
		for (int k = 0; k < i; k++)
			tried |= (sizes[k] & ~(uint64_t)4095) == h;
		if (tried || h < BM_MIN_COMPONENT_SIZE ||
		    off >= bm_label_offset(be->size))
			continue;
		err = timeout_ms > 0
		      ? bm_backend_io_wait_timeout(be, BM_BOP_READ, buf,
		                                   BM_LABEL_SIZE, off, 0, timeout_ms)
		      : be->ops->pread_sync(be, buf, BM_LABEL_SIZE, off);
		if (err < 0) {
			err = bm_error(err, "%s: has no blkmirror label at its end, "
			               "and where it was when it was %" PRIu64 " bytes "
			               "cannot be read: %s", be->path, h,
			               strerror(-err));
			break;
		}
		if (bm_label_decode(buf, BM_LABEL_SIZE, &found) < 0 ||
		    bm_label_offset(found.component_size) != off ||
		    (only[i] && strcmp(found.name, only[i]) != 0))
			continue;
		if (at)
			err = bm_error(EEXIST, "%s: has no blkmirror label at its "
			               "end, and labels at two of its old ends (when "
			               "it was %" PRIu64 " and %" PRIu64 " bytes): "
			               "which is its own cannot be told; shrink it "
			               "back to its size when it was labelled", be->path,
			               at, h);
		else {
			*l = found;
			at = h;
		}
	}
	free(buf);
	if (err < 0)
		return err;
	if (!at)
		return -ENOENT;
	be->size = at;
	bm_error_clear();
	return 0;
}

/* bm_label_read_be, and when there is none at be's end, at the old ends
 * the size hints give (bm_label_set_size_hints: a verb on a mirror whose
 * record keeps them); be->size becomes the size it was found at.  The
 * end's message stays when none is there either. */
int bm_label_read_hinted(struct bm_backend *be, struct bm_label *l)
{
	int err = bm_label_read_be(be, l);

	if (err != -ENOENT || nhints == 0)
		return err;
	char msg[400];
	snprintf(msg, sizeof(msg), "%s", bm_last_error());
	err = bm_label_find_grown(be, NULL, 0, l, 0);
	if (err == -ENOENT)
		return bm_error(ENOENT, "%s", msg);
	return err;
}

/* Finds one disk or file named twice, before anything is opened (the
 * second exclusive open would otherwise only say "in use"). */
static int find_same(const char *const *paths, size_t n, size_t *a, size_t *b)
{
	struct stat st[BM_MAX_COMPONENTS];
	bool ok[BM_MAX_COMPONENTS];

	for (size_t i = 0; i < n && i < BM_MAX_COMPONENTS; i++) {
		ok[i] = stat(paths[i], &st[i]) == 0;
		for (size_t k = 0; ok[i] && k < i; k++) {
			if (!ok[k])
				continue;
			bool same = S_ISBLK(st[i].st_mode)
			        ? S_ISBLK(st[k].st_mode) && st[i].st_rdev == st[k].st_rdev
			        : st[i].st_dev == st[k].st_dev && st[i].st_ino == st[k].st_ino;
			if (same) {
				*a = k;
				*b = i;
				return 1;
			}
		}
	}
	return 0;
}

static int write_label_to(struct bm_backend *be, const struct bm_label *l)
{
	return bm_label_store(be, l, BM_IO_TIMEOUT_MS_DEFAULT, NULL);
}

static void close_all(struct bm_backend **be, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (be[i])
			be[i]->ops->close(be[i]);
}

/*
 * What label must not destroy: another mirror's label, a file system, a
 * partition table, a RAID or LVM signature (refused unless p->force), and a
 * file system larger than the mirror that would carry it (always refused:
 * the label and its reserved MiB take the file system's last blocks).
 * Kept components are the first (the sync source) or, with no_sync, all.
 */
static int refuse_existing_data(struct bm_backend **be,
                                const char *const *paths, size_t n,
                                const struct bm_label_params *p,
                                uint64_t data_size)
{
	for (size_t i = 0; i < n; i++) {
		bool kept = i == 0 || p->no_sync;
		struct bm_content c;
		struct bm_label l;
		int err = bm_label_read_be(be[i], &l);

		if (err == -ETIMEDOUT) /* (not "none": it may hold one) */
			return bm_error(err, "%s; nothing was written",
			                bm_last_error());
		if (err == 0 && !p->force)
			return bm_error(EEXIST, "%s: already a component of mirror "
			                "'%s'; run 'blkmirror clear %s' first (or "
			                "label -f)", paths[i], l.name, paths[i]);
		if (err < 0)
			bm_error_clear(); /* none, or damaged: overwritten */
		/* -f overwrites another mirror's label, never one a live
		 * server uses (on this host the file lock refused it at open;
		 * an NBD export or another host's: its lease is renewed) */
		if (err == 0 && (err = bm_lease_check_free(be[i])) < 0)
			return err;
		err = bm_probe_content(be[i], &c, 0);
		if (err < 0)
			return err;
		if (kept && c.fs_bytes > data_size)
			return bm_error(ENOSPC, "%s: its %s file system (%" PRIu64
			                " bytes) is %" PRIu64 " bytes larger than the "
			                "mirror would be (%" PRIu64 " bytes: the last "
			                "MiB of each component holds blkmirror's "
			                "metadata); shrink the file system first or use "
			                "larger components", paths[i], c.fs_kind,
			                c.fs_bytes, c.fs_bytes - data_size, data_size);
		if (err > 0 && !p->force)
			return bm_error(EEXIST, "%s: holds %s, which %s; label -f "
			                "to go ahead", paths[i], c.what, kept
			                ? "would become the mirror's data"
			                : "the initial sync would overwrite");
	}
	return 0;
}

int bm_label_write_new(const char *name, const char *const *paths, size_t n,
                       const struct bm_label_params *p)
{
	struct bm_backend *be[BM_MAX_COMPONENTS] = {0};
	uint64_t data_size = UINT64_MAX, mirror_id = bm_random_id();
	struct bm_label l;
	uint8_t **saved = NULL;
	int err = 0;

	if (!bm_name_valid(name))
		return bm_error(EINVAL, "invalid mirror name '%s': use 1 to %d of "
		                "letters, digits, '.', '_' and '-', not starting "
		                "with '.' or '-'", name, BM_NAME_MAX);
	if (n == 0 || n > BM_MAX_COMPONENTS)
		return bm_error(EINVAL, "a mirror has 1 to %d components, not %zu",
		                BM_MAX_COMPONENTS, n);
	if (p->balance < 0 || p->balance >= BM_BALANCE_COUNT)
		return bm_error(EINVAL, "unknown balance algorithm");
	if (p->slice < 512 || p->slice > BM_MAX_IO || (p->slice & (p->slice - 1)))
		return bm_error(EINVAL, "slice %u is not a power of two from 512 "
		                "to %u", p->slice, BM_MAX_IO);
	size_t dup_a, dup_b;
	if (find_same(paths, n, &dup_a, &dup_b) ||
	    bm_probe_same_identity(paths, n, &dup_a, &dup_b))
		return bm_error(EINVAL, "%s and %s are the same disk",
		                paths[dup_a], paths[dup_b]);
	for (size_t i = 0; i < n; i++) {
		err = bm_backend_open(paths[i], true, &be[i]);
		if (err < 0)
			goto out;
		if (be[i]->size < BM_MIN_COMPONENT_SIZE) {
			err = bm_error(ENOSPC, "%s: too small (%" PRIu64 " bytes; a "
			               "component needs at least %u)", paths[i],
			               be[i]->size, BM_MIN_COMPONENT_SIZE);
			goto out;
		}
		for (size_t k = 0; k < i; k++)
			if (bm_backend_same(be[k], be[i])) {
				err = bm_error(EINVAL, "%s and %s are the same disk",
				               paths[k], paths[i]);
				goto out;
			}
		if (bm_data_area(be[i]->size) < data_size)
			data_size = bm_data_area(be[i]->size);
	}
	err = refuse_existing_data(be, paths, n, p, data_size);
	if (err < 0)
		goto out;
	uint64_t region = 0, nregions = 0;
	uint32_t nblocks = 0;
	if (!p->no_bitmap) {
		region = p->bitmap_region ? p->bitmap_region
		                          : bm_bitmap_default_region(data_size);
		err = bm_bitmap_geometry(data_size, region, &nregions, &nblocks);
		if (err < 0)
			goto out;
	}
	err = bm_probe_same_content(be, n, &dup_a, &dup_b, 0);
	if (err > 0)
		err = bm_error(EINVAL, "%s and %s are the same disk (a block "
		               "written through one was read back through the "
		               "other)", paths[dup_a], paths[dup_b]);
	if (err < 0)
		goto out;
	/* What each component holds where the metadata goes, put back if
	 * one of them cannot be labelled: a refused label changes nothing. */
	saved = calloc(n, sizeof(*saved));
	for (size_t i = 0; saved && i < n && err == 0; i++) {
		if (posix_memalign((void **)&saved[i], 4096, BM_META_SIZE)) {
			saved[i] = NULL;
			break;
		}
		err = be[i]->ops->pread_sync(be[i], saved[i], BM_META_SIZE,
		                             bm_data_area(be[i]->size));
		if (err < 0)
			err = bm_error(err, "%s: cannot read its last MiB (where the "
			               "label goes): %s", paths[i], strerror(-err));
	}
	if (err < 0)
		goto out;
	if (!saved || !saved[n - 1]) {
		err = bm_error(ENOMEM, "out of memory");
		goto out;
	}
	uint64_t ids[BM_MAX_COMPONENTS] = {0};
	for (size_t i = 0; i < n; i++)
		ids[i] = bm_random_id();
	for (size_t i = 0; i < n; i++) {
		memset(&l, 0, sizeof(l));
		l.version = BM_LABEL_VERSION;
		memcpy(l.member_id, ids, sizeof(l.member_id));
		snprintf(l.name, sizeof(l.name), "%s", name);
		l.mirror_id = mirror_id;
		l.component_id = ids[i];
		l.genid = 1;
		l.syncid = 1;
		l.seq = 1;
		l.events = 1;
		l.component_flags = (i > 0 && !p->no_sync) ? BM_CF_SYNCHRONIZING : 0;
		l.balance = (uint32_t)p->balance;
		l.slice = p->slice;
		l.sector_size = 512;
		l.data_size = data_size;
		l.component_size = be[i]->size;
		l.bitmap_offset = bm_label_offset(be[i]->size) -
		                  (BM_META_SIZE - BM_LABEL_SIZE);
		if (region)
			l.bitmap_offset = bm_bitmap_offset(be[i]->size);
		l.bitmap_size = region ? bm_bitmap_bytes(nblocks) : 0;
		l.bitmap_chunk = (uint32_t)region;
		l.ncomponents = (uint32_t)n;
		/* the bitmap first (all clear; in sync: the source, or all
		 * with -n), then the label that points at it */
		err = bm_bitmap_write_new(be[i], &l, ids, p->no_sync ? (uint32_t)n
		                                                     : 1);
		if (err == 0)
			err = write_label_to(be[i], &l);
		if (err < 0) {
			err = bm_error(err, "%s: cannot write the label: %s", paths[i],
			               strerror(-err));
			/* Undo: every component written so far (this one's bitmap
			 * too) gets back what it held, with a deadline; one that
			 * did not answer is not waited for again (its requests
			 * are ended, and what it holds is said). */
			bool timed_out = err == -ETIMEDOUT;
			for (size_t k = 0; k <= i; k++) {
				int r = k == i && timed_out ? -ETIMEDOUT
				        : bm_backend_io_wait_timeout(be[k], BM_BOP_WRITE,
				              saved[k], BM_META_SIZE,
				              bm_data_area(be[k]->size), BM_BOP_FUA,
				              BM_IO_TIMEOUT_MS_DEFAULT);
				if (r < 0 && be[k]->ops->abort)
					be[k]->ops->abort(be[k]);
				if (r < 0)
					fprintf(stderr, "blkmirror: %s: cannot put back what "
					        "its last MiB held: %s\n", paths[k],
					        strerror(-r));
			}
			goto out;
		}
	}
out:
	for (size_t i = 0; saved && i < n; i++)
		free(saved[i]);
	free(saved);
	close_all(be, n);
	return err;
}

int bm_label_clear(const char *path)
{
	struct bm_backend *be;
	struct bm_label l;
	uint8_t *zero;
	int err = bm_backend_open(path, true, &be);

	if (err < 0)
		return err;
	err = bm_label_read_be(be, &l);
	if (err == -ENOENT && nhints) {
		/* grown since it was labelled: at its old end (be->size
		 * becomes that size, where the metadata is cleared); two
		 * there, or one that cannot be read: nothing is written */
		err = bm_label_find_grown(be, NULL, 0, &l, 0);
		if (err < 0 && err != -ENOENT)
			goto out;
	}
	if (err == -ENOENT) {
		err = bm_error(ENOENT, "%s: has no blkmirror label", path);
		goto out;
	}
	if (err == -ETIMEDOUT) /* (not damaged: it may be in use) */
		goto out;
	/* A damaged label is cleared too: that is what clear is for. */
	if (be->size < BM_MIN_COMPONENT_SIZE)
		goto out;
	/* Not under a server on another host.  The whole metadata area goes
	 * (label, lease, write-intent bitmap): the last MiB, past the data,
	 * in one write. */
	err = bm_lease_check_free(be);
	if (err < 0)
		goto out;
	uint64_t meta = bm_label_offset(be->size) + BM_LABEL_SIZE - BM_META_SIZE;
	zero = calloc(1, BM_META_SIZE);
	if (!zero) {
		err = bm_error(ENOMEM, "out of memory");
		goto out;
	}
	err = be->ops->pwrite_sync(be, zero, BM_META_SIZE, meta);
	if (err == 0)
		err = be->ops->flush_sync(be);
	free(zero);
	if (err < 0)
		err = bm_error(err, "%s: cannot clear the label: %s", path,
		               strerror(-err));
out:
	be->ops->close(be);
	return err;
}

/* What clearing entry 0 of in[0..n) leaves: 1 (with the reason) when an
 * older copy would become the mirror's (assembly_decide.c's rules). */
static int clear_leaves_older(const char *name, struct bm_asm_input *in,
                              int n, const char *unreadable)
{
	struct bm_asm_out all, rest;
	int r = bm_assembly_decide(name, in, n, -1, &all);

	if (r == BM_ASM_SPLIT_BRAIN)
		return bm_error_1(EEXIST, "%s and %s of mirror '%s' took writes "
		                "without each other; clearing one makes the "
		                "other's data the mirror's", in[all.split[0]].path,
		                in[all.split[1]].path, name);
	if (r == BM_ASM_SOURCE_BEHIND) {
		/* the start is refused: clearing the evidence (the component
		 * ahead) must not let it take the older source silently */
		if (bm_label_full(&in[0].label))
			return 0;
		in[0].present = false;
		r = bm_assembly_decide(name, in, n, -1, &rest);
		in[0].present = true;
		if (r == BM_ASM_OK)
			return bm_error_1(EEXIST, "%s shows that %s is an older "
			                "copy of mirror '%s' (%" PRIu64 " events to "
			                "its %" PRIu64 "): cleared, the next start "
			                "takes %s's older data", in[0].path,
			                in[rest.source].path, name,
			                in[0].label.events,
			                in[rest.source].label.events,
			                in[rest.source].path);
		return 0;
	}
	if (r != BM_ASM_OK || all.source != 0)
		return 0; /* the newest data is not (only) here */
	/* another copy in sync with it keeps the data: ACTIVE, or (the
	 * generation not stopped cleanly: all but the source are copied
	 * over the bitmap's regions then) one of the same generation that
	 * missed nothing; never an INACTIVE one (deactivated: behind) */
	for (int i = 1; i < n; i++) {
		const struct bm_label *l = &in[i].label;
		if (all.comp[i].role == BM_ROLE_ACTIVE)
			return 0;
		if (all.was_dirty && in[i].present &&
		    all.comp[i].role == BM_ROLE_SYNCHRONIZING &&
		    !all.comp[i].older &&
		    !(all.missed & (1u << i)) && l->genid == all.genid &&
		    l->syncid == all.syncid &&
		    !(l->component_flags & (BM_CF_SYNCHRONIZING | BM_CF_INACTIVE)))
			return 0;
	}
	if (unreadable)
		return bm_error_1(EAGAIN, "%s may be the only up-to-date copy of "
		                "mirror '%s': the label of %s cannot be read to "
		                "tell", in[0].path, name, unreadable);
	in[0].present = false;
	r = bm_assembly_decide(name, in, n, -1, &rest);
	in[0].present = true;
	if (r == BM_ASM_SOURCE_BEHIND)
		return bm_error_1(EEXIST, "%s is the only up-to-date copy of "
		                "mirror '%s': cleared, the next start is refused "
		                "(%s, the newest left, is behind %s) and only "
		                "--force-source could start it, with the older "
		                "data", in[0].path, name, in[rest.source].path,
		                in[rest.ahead].path);
	if (r == BM_ASM_NO_SOURCE) {
		/* the others are labelled but none holds the data in full
		 * (deactivated, being copied): the start is refused for good,
		 * --force-source takes none of them either.  (One whose copy
		 * has not begun holds nothing of the mirror: a mirror just
		 * labelled is dissolved in any order.) */
		for (int i = 1; i < n; i++)
			if (in[i].present &&
			    ((in[i].label.component_flags & BM_CF_INACTIVE) ||
			     in[i].label.sync_offset > 0))
				return bm_error_1(EEXIST, "%s is the only copy of "
				                "mirror '%s' in full (%s is %s): "
				                "cleared, the mirror cannot start "
				                "again, not even with --force-source",
				                in[0].path, name, in[i].path,
				                (in[i].label.component_flags &
				                 BM_CF_INACTIVE) ? "deactivated"
				                                 : "being copied");
	}
	if (r != BM_ASM_OK)
		return 0; /* none left labelled (the mirror is dissolved), or the
		           * next start refuses: nothing older is taken silently */
	for (int i = 1; i < n; i++)
		if (in[i].present && i == rest.source)
			return bm_error_1(EEXIST, "%s is the only up-to-date copy of "
			                "mirror '%s' (generation %" PRIu64 "; %s has "
			                "%" PRIu64 "%s): cleared, the next start "
			                "takes the older data", in[0].path, name,
			                in[0].label.genid, in[i].path,
			                in[i].label.genid,
			                (in[i].label.component_flags &
			                 BM_CF_SYNCHRONIZING) ? ", half copied" : "");
	return 0;
}

int bm_label_clear_loses_data(const char *path, const char *const *others,
                              size_t n)
{
	struct bm_asm_input *in = calloc(BM_MAX_COMPONENTS, sizeof(*in));
	const char *unreadable = NULL;
	struct bm_backend *be;
	int k = 1, r;

	if (!in)
		return bm_error(ENOMEM, "out of memory");
	r = bm_backend_open(path, false, &be);
	if (r == 0) {
		r = bm_label_read_hinted(be, &in[0].label);
		in[0].data_area = bm_data_area(be->size);
		if (r == 0) /* (the history as serve sees it) */
			in[0].clear_seq = bm_bitmap_clear_seq_of(be, &in[0].label);
		be->ops->close(be);
	}
	if (r < 0) {
		free(in);
		return r;
	}
	in[0].path = path;
	in[0].present = true;
	in[0].same_disk_as = -1;
	for (size_t i = 0; i < n && k < BM_MAX_COMPONENTS; i++) {
		struct stat st;
		in[k].path = others[i];
		in[k].same_disk_as = -1;
		if (bm_backend_open(others[i], false, &be) < 0) {
			/* a file that is gone holds no label; anything else
			 * (an NBD server down) may come back with one */
			if (!unreadable && (strstr(others[i], "://") ||
			                    stat(others[i], &st) == 0))
				unreadable = others[i];
			k++;
			continue;
		}
		int lr = bm_label_read_hinted(be, &in[k].label);
		if (lr == 0 && in[k].label.mirror_id == in[0].label.mirror_id) {
			in[k].present = true;
			in[k].data_area = bm_data_area(be->size);
			in[k].clear_seq = bm_bitmap_clear_seq_of(be, &in[k].label);
		} else if (lr < 0 && lr != -ENOENT && !unreadable) {
			unreadable = others[i]; /* (EIO, too small: no telling) */
		}
		be->ops->close(be);
		k++;
	}
	r = clear_leaves_older(in[0].label.name, in, k, unreadable);
	free(in);
	return r;
}

static int label_of(const char *path, struct bm_label *l);

int bm_assembly_preview(const char *name, const char *const *paths, size_t n,
                        const bool *skip, char *buf, size_t len)
{
	struct bm_asm_input *in = calloc(BM_MAX_COMPONENTS, sizeof(*in));
	struct bm_asm_out *out = malloc(sizeof(*out));
	int k = 0, r = 0;

	if (!in || !out)
		goto done;
	for (size_t i = 0; i < n && k < BM_MAX_COMPONENTS; i++, k++) {
		struct bm_backend *be;
		in[k].path = paths[i];
		in[k].same_disk_as = -1;
		if ((skip && skip[i]) || bm_backend_open(paths[i], false, &be) < 0)
			continue;
		int lr = bm_label_read_be(be, &in[k].label);
		if (lr == -ENOENT) { /* grown? as the start looks (find_grown) */
			uint64_t sizes[BM_MAX_COMPONENTS];
			struct bm_label o;
			int ns = 0;
			for (size_t j = 0; j < n && ns < BM_MAX_COMPONENTS; j++)
				if (j != i && label_of(paths[j], &o) == 0)
					sizes[ns++] = o.component_size;
			lr = bm_label_find_grown(be, sizes, ns, &in[k].label, 0);
		}
		if (lr == 0) {
			in[k].present = true;
			in[k].data_area = bm_data_area(be->size);
			in[k].clear_seq = bm_bitmap_clear_seq_of(be, &in[k].label);
		}
		be->ops->close(be);
	}
	bm_assembly_decide(name, in, k, -1, out);
	if (out->result == BM_ASM_SPLIT_BRAIN ||
	    out->result == BM_ASM_SOURCE_BEHIND ||
	    out->result == BM_ASM_NO_SOURCE) {
		snprintf(buf, len, "%s", out->error);
		r = 1;
	}
done:
	free(out);
	free(in);
	return r;
}

/* Opens a component just to read its label (*opened: whether it could be
 * opened; NULL: not wanted). */
static int label_of_opened(const char *path, struct bm_label *l,
                           bool *opened)
{
	struct bm_backend *be;
	int err = bm_backend_open(path, false, &be);

	if (opened)
		*opened = err == 0;
	if (err < 0)
		return err;
	err = bm_label_read_hinted(be, l);
	be->ops->close(be);
	return err;
}

static int label_of(const char *path, struct bm_label *l)
{
	return label_of_opened(path, l, NULL);
}

int bm_label_probe_opened(const char *path, char *name, size_t len,
                          bool *opened)
{
	struct bm_label l;
	int err = label_of_opened(path, &l, opened);

	if (err == 0)
		snprintf(name, len, "%s", l.name);
	return err;
}

int bm_label_probe(const char *path, char *name, size_t len)
{
	return bm_label_probe_opened(path, name, len, NULL);
}

/* Which of a's and b's labels says the later history (genid, syncid,
 * events, seq, in that order). */
static bool label_later(const struct bm_label *a, const struct bm_label *b)
{
	if (a->genid != b->genid)
		return a->genid > b->genid;
	if (a->syncid != b->syncid)
		return a->syncid > b->syncid;
	if (a->events != b->events)
		return a->events > b->events;
	return a->seq > b->seq;
}

/* Reads path's label for assemble: at its end, or (grown) at the old
 * ends the sizes give and the size hints (bm_label_find_grown); then
 * whether another server's lease holds it.  *none (no message) when it
 * opened and has no label there. */
static int adopt_read(const char *path, const uint64_t *sizes, int ns,
                      bool grown, struct bm_label *l, bool *none)
{
	struct bm_backend *be;
	int err = bm_backend_open(path, false, &be);

	*none = false;
	if (err < 0)
		return bm_error(err, "%s; nothing was recorded", bm_last_error());
	err = grown ? bm_label_find_grown(be, sizes, ns, l, 0)
	            : bm_label_read_be(be, l);
	/* a server elsewhere (another host) that serves it now: recorded
	 * here, it would be refused at the start */
	if (err == 0)
		err = bm_lease_check_free(be);
	be->ops->close(be);
	if (err == -ENOENT)
		*none = true;
	else if (err < 0) /* (the message names the path) */
		err = bm_error(err, "%s; nothing was recorded", bm_last_error());
	return err;
}

/* Adds v to list[*n] unless it is there already (or the list is full). */
static void add_size_once(uint64_t *list, size_t *n, uint64_t v)
{
	for (size_t k = 0; k < *n; k++)
		if (list[k] == v)
			return;
	if (*n < BM_MAX_COMPONENTS)
		list[(*n)++] = v;
}

/* The refusal when path's label is NAME's wrong mirror (another name,
 * or another id than the reference label's), else 0. */
static int adopt_same_mirror(const char *name, const char *path,
                             const struct bm_label *l, const char *ref_path,
                             const struct bm_label *ref)
{
	if (strcmp(l->name, name) != 0)
		return bm_error(EINVAL, "%s carries the label of mirror '%s', not "
		                "'%s'; nothing was recorded", path, l->name, name);
	if (l->mirror_id != ref->mirror_id)
		return bm_error(EINVAL, "%s and %s carry labels of two different "
		                "mirrors named '%s' (ids %016llx and %016llx); give "
		                "the components of one; nothing was recorded",
		                ref_path, path, name,
		                (unsigned long long)ref->mirror_id,
		                (unsigned long long)l->mirror_id);
	return 0;
}

int bm_label_adopt_check(const char *name, const char *const *paths,
                         size_t n, bool force)
{
	return bm_label_adopt_check_sizes(name, paths, n, force, NULL, NULL);
}

int bm_label_adopt_check_sizes(const char *name, const char *const *paths,
                               size_t n, bool force, uint64_t *sizes_out,
                               size_t *nsizes_out)
{
	struct bm_label *l = calloc(n ? n : 1, sizeof(*l));
	bool *at_old_end = calloc(n ? n : 1, sizeof(*at_old_end));
	uint64_t sizes[BM_MAX_COMPONENTS];
	size_t ref = 0, first = n, ns = 0;
	int err = 0;

	if (nsizes_out)
		*nsizes_out = 0;
	if (!l || !at_old_end) {
		free(l);
		free(at_old_end);
		return bm_error(ENOMEM, "out of memory");
	}
	/* labels at the components' ends first, and whether they are all
	 * NAME's, one mirror's; one that grew since it was labelled has its
	 * label where those labels say their components ended (as the start
	 * looks: find_grown), or where a size hint says (assemble
	 * --old-size) */
	for (size_t i = 0; i < n && err == 0; i++) {
		bool none;
		err = adopt_read(paths[i], NULL, 0, false, &l[i], &none);
		if (none) {
			at_old_end[i] = true;
			err = 0;
		} else if (err == 0 && first == n) {
			first = i;
		}
	}
	for (size_t i = 0; i < n && err == 0; i++) {
		if (at_old_end[i])
			continue;
		err = adopt_same_mirror(name, paths[i], &l[i], paths[first],
		                        &l[first]);
		if (err == 0)
			add_size_once(sizes, &ns, l[i].component_size);
	}
	for (size_t i = 0; i < n && err == 0; i++) {
		if (!at_old_end[i])
			continue;
		bool none;
		err = adopt_read(paths[i], sizes, (int)ns, true, &l[i], &none);
		if (none && ns == 0 && nhints == 0)
			err = bm_error(ENOENT, "%s carries no blkmirror label at its "
			               "end; if it grew since it was labelled, give "
			               "the size it had then with --old-size SIZE; "
			               "nothing was recorded", paths[i]);
		else if (none)
			err = bm_error(ENOENT, "%s carries no blkmirror label, at its "
			               "end or at the old ends the others' labels "
			               "and --old-size give; if it grew since it was "
			               "labelled, give the size it had then (to "
			               "4 KiB) with --old-size SIZE; nothing was "
			               "recorded", paths[i]);
		if (err == 0 && first == n)
			first = i;
		if (err == 0)
			err = adopt_same_mirror(name, paths[i], &l[i], paths[first],
			                        &l[first]);
	}
	for (size_t i = 0; i < n && err == 0; i++)
		if (label_later(&l[i], &l[ref]))
			ref = i;
	/* the sizes the labels taken were written at (where a grown one's
	 * is): what the record keeps for serve */
	for (size_t i = 0; i < n && err == 0 && sizes_out && nsizes_out; i++)
		add_size_once(sizes_out, nsizes_out, l[i].component_size);
	free(at_old_end);
	for (size_t i = 0; i < n && err == 0; i++)
		for (size_t k = 0; k < i && err == 0; k++)
			if (l[i].component_id == l[k].component_id)
				err = bm_error(EINVAL, "%s and %s carry the label of "
				               "one component (the same disk, or a "
				               "copy of it); nothing was recorded",
				               paths[k], paths[i]);
	/* the newest label names the mirror's components as it knew them: a
	 * component left out may hold the newest data, and one it does not
	 * name has left the mirror (serve would start from what is given) */
	int named = 0;
	for (int m = 0; m < BM_MAX_COMPONENTS; m++)
		named += l[ref].member_id[m] != 0;
	for (int m = 0; m < BM_MAX_COMPONENTS && err == 0 && !force; m++) {
		uint64_t id = l[ref].member_id[m];
		bool given = false;
		for (size_t i = 0; i < n && id; i++)
			given |= l[i].component_id == id;
		if (id && !given)
			err = bm_error(ENOENT, "the newest label (on %s) names %d "
			               "components and one of them (component id "
			               "%016llx; 'blkmirror dump DISK' shows a disk's) "
			               "was not given: it may hold the newest data; "
			               "give every component, or -f to record the "
			               "mirror without it; nothing was recorded",
			               paths[ref], named, (unsigned long long)id);
	}
	/* a version 1 label names none: its count of components decides */
	if (err == 0 && !force && named == 0 && n < l[ref].ncomponents)
		err = bm_error(ENOENT, "the newest label (on %s) says the mirror "
		               "has %u components and %zu were given: a missing "
		               "one may hold the newest data; give every "
		               "component, or -f to record the mirror without "
		               "it; nothing was recorded", paths[ref],
		               l[ref].ncomponents, n);
	for (size_t i = 0; i < n && err == 0 && !force; i++) {
		bool listed = false;
		for (int m = 0; m < BM_MAX_COMPONENTS; m++)
			listed |= l[ref].member_id[m] == l[i].component_id;
		if (named && !listed)
			err = bm_error(EINVAL, "%s has left mirror '%s' (the newest "
			               "label, on %s, does not name it): its data "
			               "is older; leave it out, or -f; nothing was "
			               "recorded", paths[i], name, paths[ref]);
	}
	free(l);
	return err;
}

/* "clean, genid 3, syncid 1", "synchronizing 45%, ...", "inactive, ..." */
static void label_state_text(const struct bm_label *l, char *buf, size_t len)
{
	if (l->component_flags & BM_CF_INACTIVE)
		snprintf(buf, len, "inactive, genid %" PRIu64 ", syncid %" PRIu64,
		         l->genid, l->syncid);
	else if (l->component_flags & BM_CF_SYNCHRONIZING)
		snprintf(buf, len, "synchronizing %d%%, genid %" PRIu64
		         ", syncid %" PRIu64, (int)(l->sync_offset * 100 /
		         l->data_size), l->genid, l->syncid);
	else
		snprintf(buf, len, "%s, genid %" PRIu64 ", syncid %" PRIu64,
		         (l->component_flags & BM_CF_DIRTY) ? "dirty" : "clean",
		         l->genid, l->syncid);
}

/*
 * The label of path, one of a mirror's components (all[0..n)), also when
 * it grew since it was labelled: looked for at its old end, at the sizes
 * the others' labels record, as the start does (find_grown).  *grown_from:
 * its size now when it was found so (else 0).
 */
static int label_of_member(const char *path, const char *const *all,
                           size_t n, struct bm_label *l, uint64_t *grown_from)
{
	uint64_t sizes[BM_MAX_COMPONENTS];
	struct bm_backend *be;
	struct bm_label o;
	int k = 0, err = bm_backend_open(path, false, &be);

	*grown_from = 0;
	if (err < 0)
		return err;
	uint64_t now = be->size;
	err = bm_label_read_hinted(be, l); /* (the record's sizes) */
	if (err == -ENOENT) {
		char msg[400];
		snprintf(msg, sizeof(msg), "%s", bm_last_error());
		for (size_t i = 0; i < n && k < BM_MAX_COMPONENTS; i++)
			if (strcmp(all[i], path) != 0 && label_of(all[i], &o) == 0)
				sizes[k++] = o.component_size;
		err = k ? bm_label_find_grown(be, sizes, k, l, 0) : -ENOENT;
		if (err == -ENOENT)
			err = bm_error(ENOENT, "%s", msg);
	}
	if (err == 0 && be->size != now)
		*grown_from = now;
	be->ops->close(be);
	return err;
}

int bm_label_state_in(const char *path, const char *name,
                      const char *const *all, size_t n, char *buf,
                      size_t len)
{
	struct bm_label l;
	uint64_t grown_from;
	int err = label_of_member(path, all, n, &l, &grown_from);

	if (err == 0 && grown_from && strcmp(l.name, name) == 0) {
		char rest[300];
		label_state_text(&l, rest, sizeof(rest));
		snprintf(buf, len, "%s; grown to %" PRIu64 " bytes, its label "
		         "at its old end (%" PRIu64 ")", rest, grown_from,
		         l.component_size);
		return 0;
	}
	if (err < 0) {
		snprintf(buf, len, "ABSENT: %s", bm_last_error());
		return err;
	}
	if (strcmp(l.name, name) != 0) {
		snprintf(buf, len, "ABSENT: belongs to mirror '%s'", l.name);
		return 0;
	}
	label_state_text(&l, buf, len);
	return 0;
}

int bm_label_state(const char *path, const char *name, char *buf, size_t len)
{
	struct bm_label l;
	int err = label_of(path, &l);

	if (err < 0)
		snprintf(buf, len, "ABSENT: %s", bm_last_error());
	else if (strcmp(l.name, name) != 0)
		snprintf(buf, len, "ABSENT: belongs to mirror '%s'", l.name);
	else
		label_state_text(&l, buf, len);
	return err;
}

int bm_label_dump(const char *path, char *buf, size_t len)
{
	struct bm_backend *be;
	struct bm_label l;
	int err = bm_backend_open(path, false, &be);

	if (err < 0)
		return err;
	uint64_t now = be->size;
	err = bm_label_read_hinted(be, &l); /* (grown since it was labelled?) */
	if (err < 0) {
		be->ops->close(be);
		return err;
	}
	int used = 0;
	if (be->size != now)
		used = snprintf(buf, len, "  (at its old end: it was %" PRIu64
		                " bytes when it was labelled, it is %" PRIu64
		                " now)\n", be->size, now);
	if (used >= 0 && (size_t)used < len) {
		int f = bm_label_format(&l, "  ", buf + used, len - (size_t)used);
		used = f < 0 ? f : used + f;
	}
	if (used >= 0 && (size_t)used < len)
		bm_bitmap_dump_text(be, &l, "  ", buf + used, len - (size_t)used);
	be->ops->close(be);
	return 0;
}

int bm_label_configure(const char *const *paths, size_t n, int balance,
                       uint32_t slice)
{
	int done = 0;

	for (size_t i = 0; i < n; i++) {
		struct bm_backend *be;
		struct bm_label l;
		int err = bm_backend_open(paths[i], true, &be);
		if (err < 0)
			return err;
		err = bm_label_read_hinted(be, &l); /* (grown: its old end) */
		if (err == 0)
			err = bm_lease_check_free(be); /* no live server on it */
		if (err == 0) {
			l.balance = (uint32_t)balance;
			if (slice)
				l.slice = slice;
			l.seq++;
			err = write_label_to(be, &l);
			done++;
		} else if (err == -ENOENT) {
			err = 0; /* absent components keep theirs */
		}
		be->ops->close(be);
		if (err < 0)
			return err;
	}
	return done ? 0 : bm_error(ENOENT, "no component has a label");
}

/* ---- assembly ---- */

static void absent(struct bm_component *c, const char *why)
{
	atomic_store(&c->state, BM_CS_ABSENT);
	snprintf(c->why, sizeof(c->why), "%s", why);
	if (c->be) {
		c->be->ops->close(c->be);
		c->be = NULL;
	}
}

/* Whether b holds what a holds: the same history (generation, syncid,
 * events), in full, and a does not say b missed writes.  After a crash
 * (both DIRTY) either one is a right copy of what was acknowledged. */
static bool same_history(const struct bm_label *a, const struct bm_label *b)
{
	return a->genid == b->genid && a->syncid == b->syncid &&
	       a->events == b->events && bm_label_full(b) &&
	       !bm_label_says_missed(a, b->component_id);
}

/*
 * The decision is assembly_decide.c's (a pure function over the labels);
 * this applies it: states, the mirror's generation and identity, and the
 * components left out (closed).
 */
static int choose_states(struct bm_mirror *m, const char *name,
                         int force_source, const int *same_disk,
                         uint32_t lease_unreadable)
{
	struct bm_asm_input in[BM_MAX_COMPONENTS];
	struct bm_asm_out out;
	struct bm_component *source;
	bool mute[BM_MAX_COMPONENTS] = {false};
	char mute_why[BM_MAX_COMPONENTS][sizeof(m->comp[0].why)];
	uint64_t known[BM_MAX_COMPONENTS];
	int nmute = 0;

	memset(in, 0, sizeof(in));
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		in[i].path = c->path;
		in[i].same_disk_as = same_disk[i];
		in[i].present = atomic_load(&c->state) != BM_CS_ABSENT && c->be;
		if (!in[i].present)
			continue;
		in[i].label = c->label;
		in[i].data_area = bm_data_area(c->be->size);
		/* It answered its label, then not its lease (lease.c says
		 * why) or its bitmap header (a read past the deadline, still
		 * in flight: bitmap.c read_area): judged by its label (its
		 * header unknown: 0, ranked below any known one). */
		if (lease_unreadable & (1u << i)) {
			mute[i] = true;
			snprintf(mute_why[i], sizeof(mute_why[i]), "%s", c->why);
		} else {
			in[i].clear_seq = bm_bitmap_clear_seq_of(c->be, &c->label);
			if (atomic_load(&c->be->detached) > 0) {
				mute[i] = true;
				snprintf(mute_why[i], sizeof(mute_why[i]),
				         "does not answer: its bitmap header was "
				         "not read within %ld s",
				         (bm_backend_sync_timeout_ms() + 999) / 1000);
			}
		}
		if (mute[i])
			in[i].clear_seq = 0;
		nmute += mute[i];
	}
	int r = bm_assembly_decide(name, in, m->ncomp, force_source, &out);
	if (r == BM_ASM_OK && nmute) {
		/* Left out (it rejoins when it answers, judged then) unless
		 * it holds the newest data and no other in sync with it is
		 * here: then the start waits for it (its label, read, says
		 * what the others lack). */
		bool other_current = false;
		for (int j = 0; j < m->ncomp; j++)
			if (!mute[j] && j != out.source && in[j].present &&
			    out.comp[j].role != BM_ROLE_ABSENT &&
			    same_history(&in[out.source].label, &in[j].label))
				other_current = true;
		if (mute[out.source] && out.forced)
			return bm_error(EAGAIN, "mirror '%s': %s, the forced "
			                "source, %s; nothing was changed: start it "
			                "again once it answers", name,
			                m->comp[out.source].path,
			                mute_why[out.source]);
		if (mute[out.source] && !other_current)
			return bm_error(EAGAIN, "mirror '%s': %s holds its newest "
			                "data but %s; nothing was changed: start it "
			                "again once it answers (or keep an older "
			                "copy's data: 'blkmirror serve --force-source "
			                "COMPONENT %s')", name,
			                m->comp[out.source].path,
			                mute_why[out.source], name);
		for (int i = 0; i < m->ncomp; i++) {
			known[i] = out.comp[i].known_id;
			/* (one left out anyway, as another mirror's or a
			 * duplicate, is left out by the decision below with
			 * its own reason) */
			if (!mute[i] || out.comp[i].role == BM_ROLE_ABSENT) {
				mute[i] = false;
				continue;
			}
			fprintf(stderr, "blkmirror: %s: leaving out %s: %s\n", name,
			        m->comp[i].path, mute_why[i]);
			absent(&m->comp[i], mute_why[i]);
			m->comp[i].rejoin = true;
			in[i].present = false;
		}
		r = bm_assembly_decide(name, in, m->ncomp, force_source, &out);
		/* (its id as its own label said, not guessed from the others') */
		for (int i = 0; r == BM_ASM_OK && i < m->ncomp; i++)
			if (mute[i])
				out.comp[i].known_id = known[i];
	}
	if (r != BM_ASM_OK)
		return bm_error(out.result == BM_ASM_NO_LABEL ? ENOENT
		                : out.result == BM_ASM_BAD_FORCE ? EINVAL : EIO,
		                "%s", out.error);
	source = &m->comp[out.source];
	m->mirror_id = out.mirror_id;
	m->size = out.data_size;
	m->genid = out.genid;
	m->syncid = out.syncid;
	/* (the start's labels count one more, bm_mirror_open: a copy put
	 * back later with none, 0, an older version's label, is older) */
	m->events = out.events;
	m->events_landed = source->label.events; /* (its full label's) */
	m->missed = out.missed;
	m->mirror_flags = source->label.mirror_flags;
	atomic_store(&m->balance, (int)source->label.balance);
	atomic_store(&m->slice, source->label.slice);
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		struct bm_asm_comp *d = &out.comp[i];
		c->known_id = d->known_id;
		switch (d->role) {
		case BM_ROLE_ABSENT:
			if (in[i].present) {
				absent(c, d->why);
				fprintf(stderr, "blkmirror: %s: leaving out %s: %s\n",
				        name, c->path, d->why);
			}
			break;
		case BM_ROLE_ACTIVE:
			atomic_store(&c->state, BM_CS_ACTIVE);
			break;
		case BM_ROLE_INACTIVE:
			/* kept open but out of service (rebuild.c) */
			atomic_store(&c->state, BM_CS_INACTIVE);
			snprintf(c->why, sizeof(c->why), "%s", d->why);
			break;
		default:
			atomic_store(&c->state, BM_CS_SYNCHRONIZING);
			atomic_store(&c->sync_offset, d->sync_offset);
			atomic_store(&c->sync_durable, d->sync_offset);
			if (d->older) {
				snprintf(c->why, sizeof(c->why), "%s", d->why);
				fprintf(stderr, "blkmirror: %s: %s is %s\n", name,
				        c->path, d->why);
			}
			break;
		}
	}
	if (out.forced)
		fprintf(stderr, "blkmirror: %s: --force-source: %s is the "
		        "source; every other component is copied from it in "
		        "full (what only they held is overwritten)\n", name,
		        source->path);
	else if (out.was_dirty)
		fprintf(stderr, "blkmirror: %s: was not stopped cleanly; "
		        "copying %s over the other components\n", name,
		        source->path);
	m->degraded = false;
	for (int i = 0; i < m->ncomp; i++)
		if (atomic_load(&m->comp[i].state) != BM_CS_ACTIVE)
			m->degraded = true;
	return 0;
}

/*
 * The write-intent bitmap (bitmap.c), once the states are chosen: the
 * union of the components' bits.  A component whose label says FORCE_SYNC
 * (rebuild or activate stopped by a restart) is copied in full (from its
 * checkpoint after a clean stop, from 0 after a crash).  A DIRTY
 * start copies the set regions only (the sync thread asks bitmap.c).
 */
static int open_bitmap(struct bm_mirror *m, const char *name)
{
	bool usable;
	int err = bm_bitmap_open(m, &usable);

	if (err < 0 || !m->bitmap)
		return err;
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (c->label.component_flags & BM_CF_FORCE_SYNC)
			c->sync_full = true;
		/* behind the last clear: bits of writes it lacks are gone
		 * (an older copy put back; or it missed the clear's header
		 * write, which a crash in the middle of a clear leaves) */
		if (atomic_load(&c->state) == BM_CS_SYNCHRONIZING &&
		    !c->sync_full && bm_bitmap_behind(m, c)) {
			/* its label says so before the start rewrites the
			 * evidence (its header, its events): a restart
			 * during the copy copies in full again */
			c->sync_full = true;
			c->label.component_flags |= BM_CF_FORCE_SYNC;
			/* (and no checkpoint of it is trusted either) */
			atomic_store(&c->sync_offset, 0);
			atomic_store(&c->sync_durable, 0);
			fprintf(stderr, "blkmirror: %s: %s: its bitmap is older "
			        "than the last clear of the others': copied in "
			        "full\n", name, c->path);
		}
	}
	if (!usable)
		fprintf(stderr, "blkmirror: %s: a bitmap is damaged; components "
		        "out of sync are copied in full\n", name);
	return 0;
}

/*
 * A component another process holds locked (a server on this host): the
 * whole mirror is refused, naming the holder from the lease when it can be
 * read (a read-only look, without the lock).
 */
static int refuse_in_use(const char *name, const char *path)
{
	char lockmsg[PATH_MAX + 128], holder[160];
	struct bm_backend *be;
	struct bm_lease l;

	snprintf(lockmsg, sizeof(lockmsg), "%s", bm_last_error());
	if (bm_backend_open(path, false, &be) == 0) {
		int err = be->size >= BM_MIN_COMPONENT_SIZE
		        ? bm_lease_read(be, &l) : -ENOSPC;
		be->ops->close(be);
		if (err == 0 && l.state == BM_LEASE_ACTIVE) {
			bm_lease_holder_str(&l, holder, sizeof(holder));
			return bm_error(EBUSY, "mirror '%s': %s is served by another "
			                "blkmirror on this host (%s); stop that "
			                "server first", name, path, holder);
		}
	}
	return bm_error(EBUSY, "mirror '%s': %s", name, lockmsg);
}

/*
 * meta_lock held; the start's label write failed (err) on some component:
 * one that did not take it (a timeout, an error, gone) leaves the mirror
 * the way it would while the mirror runs (meta.c: DISCONNECTED and taken
 * back by the recovery thread, or FAILED; the others' labels record its
 * departure), so that a component that answers reads and not writes does
 * not keep the others from serving.  The start fails only when no ACTIVE
 * component holds the start's label: nothing then says which data is
 * newest.
 */
static int drop_unwritten(struct bm_mirror *m, const char *name, int err)
{
	/* refused before anything changes: no drop, no genid bump in the
	 * labels that took the start's write (a copy's checkpoint kept) */
	if (!bm_meta_recorded_locked(m))
		return bm_error(err, "mirror '%s': cannot write labels: %s; no "
		                "ACTIVE component took the start's label, so the "
		                "mirror does not start", name, strerror(-err));
	/* what clients will be told counts the ones left out here too: each
	 * is taken back when it answers, which needs its block size to be
	 * one the clients were told (bm_min_block_check) */
	(void)bm_mirror_min_block(m);
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		int st = atomic_load(&c->state);
		if ((st == BM_CS_ACTIVE || st == BM_CS_SYNCHRONIZING) &&
		    c->label_stale && c->be) {
			fprintf(stderr, "blkmirror: %s: leaving out %s: it did not "
			        "take the start's label write (%s)\n", name, c->path,
			        strerror(-(c->label_err < 0 ? c->label_err : -EIO)));
			bm_meta_label_failed_locked(m, c, " at the start");
		}
	}
	if (!bm_meta_recorded_locked(m))
		return bm_error(err, "mirror '%s': cannot write labels: %s; no "
		                "ACTIVE component took the start's label, so the "
		                "mirror does not start", name, strerror(-err));
	/* a drop's rewrite that failed on one and landed on another may have
	 * said writes are refused: they are not, the start's label is held */
	atomic_store(&m->meta_broken, false);
	return 0;
}

/* Whether id is a component of the mirror as the labels read at the start
 * (those not in mask) name them; true when none names any (version 1). */
static bool named_by_members(struct bm_mirror *m, uint32_t mask, uint64_t id)
{
	bool any = false;

	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if ((mask & (1u << i)) || !c->be ||
		    atomic_load(&c->state) == BM_CS_ABSENT)
			continue;
		for (int k = 0; k < BM_MAX_COMPONENTS; k++) {
			any |= c->label.member_id[k] != 0;
			if (c->label.member_id[k] == id)
				return true;
		}
	}
	return !any;
}

/*
 * The components in mask had no label at their end: each is looked for at
 * the sizes the others' labels record (grown since it was labelled:
 * bm_label_find_grown), and left out (ABSENT, the first reason kept) when
 * it is not there either.  A mirror whose components all grew finds no
 * size to look at: its components are left out (HACKING "Not done yet").
 */
static void find_grown(struct bm_mirror *m, const char *name, uint32_t mask)
{
	uint64_t sizes[BM_MAX_COMPONENTS];
	int n = 0;

	for (int i = 0; i < m->ncomp; i++)
		if (!(mask & (1u << i)) && m->comp[i].be &&
		    atomic_load(&m->comp[i].state) != BM_CS_ABSENT &&
		    m->comp[i].label.component_size)
			sizes[n++] = m->comp[i].label.component_size;
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		struct bm_label found;
		char why[sizeof(c->why)];
		if (!(mask & (1u << i)))
			continue;
		uint64_t now = c->be->size;
		int err = bm_label_find_grown(c->be, sizes, n, &found, 0);
		if (err == 0 && strcmp(found.name, name) == 0 &&
		    named_by_members(m, mask, found.component_id)) {
			c->label = found;
			bm_comp_label_on_disk(c);
			c->why[0] = '\0';
			fprintf(stderr, "blkmirror: %s: %s grew from %" PRIu64
			        " to %" PRIu64 " bytes since it was labelled: its "
			        "label is at its old end, and the mirror uses its "
			        "first %" PRIu64 " bytes\n", name, c->path,
			        c->be->size, now, c->be->size);
			continue;
		}
		c->be->size = now; /* (not taken: as it is) */
		if (err == 0) /* (another mirror's, or a member's that left) */
			err = -ENOENT;
		/* one that does not answer there is tried again while the
		 * mirror runs, as one whose label read timed out */
		c->rejoin = err == -ETIMEDOUT;
		snprintf(why, sizeof(why), "%s", err == -ENOENT ? c->why
		                                                  : bm_last_error());
		absent(c, why);
		fprintf(stderr, "blkmirror: %s: leaving out %s\n", name, why);
	}
}

int bm_mirror_open(const char *name, const char *const *paths, size_t n,
                   bm_mirror **out)
{
	return bm_mirror_open_forced(name, paths, n, -1, out);
}

/* An earlier path the kernel says is the same storage as paths[i] (one
 * inode, one block device, a loop device over the file), or -1. */
static int same_disk_before(const char *const *paths, size_t i)
{
	for (size_t k = 0; k < i; k++) {
		const char *pair[2] = {paths[k], paths[i]};
		size_t a, b;
		if (find_same(pair, 2, &a, &b) ||
		    bm_probe_same_identity(pair, 2, &a, &b))
			return (int)k;
	}
	return -1;
}

int bm_mirror_open_forced(const char *name, const char *const *paths,
                          size_t n, int force_source, bm_mirror **out)
{
	struct bm_mirror *m;
	int same_disk[BM_MAX_COMPONENTS];
	uint32_t no_label = 0;
	int err;

	if (!bm_name_valid(name))
		return bm_error(EINVAL, "invalid mirror name '%s'", name);
	if (n == 0 || n > BM_MAX_COMPONENTS)
		return bm_error(EINVAL, "a mirror has 1 to %d components",
		                BM_MAX_COMPONENTS);
	m = calloc(1, sizeof(*m));
	if (!m)
		return bm_error(ENOMEM, "out of memory");
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->ncomp = (int)n;
	pthread_mutex_init(&m->meta_lock, NULL);
	pthread_mutex_init(&m->live_lock, NULL);
	pthread_mutex_init(&m->drain_lock, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&m->drain_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&m->info_lock, NULL);
	bm_event_init(m);
	bm_recover_init(m);
	/* (serve --io-timeout sets it before the start's reads) */
	atomic_init(&m->io_timeout_ms, (int)bm_backend_sync_timeout_ms());
	atomic_init(&m->read_error_limit, BM_READ_ERRORS_DEFAULT);
	bm_rangelock_init(&m->rl);
	bm_ra_init(m);
	for (size_t i = 0; i < n; i++) {
		struct bm_component *c = &m->comp[i];
		int same = same_disk[i] = same_disk_before(paths, i);
		c->index = (int)i;
		snprintf(c->path, sizeof(c->path), "%s", paths[i]);
		if (same >= 0) {
			/* not opened: its lock is the other path's */
			char why[PATH_MAX + 64];
			snprintf(why, sizeof(why), "the same component as %s (the "
			         "same disk through another path)", paths[same]);
			absent(c, why);
			fprintf(stderr, "blkmirror: %s: leaving out %s: %s\n", name,
			        paths[i], why);
			continue;
		}
		err = bm_backend_open(paths[i], true, &c->be);
		if (err == -EBUSY) {
			err = refuse_in_use(name, paths[i]);
			goto fail;
		}
		/* (not there now: tried again while the mirror runs) */
		c->rejoin = err < 0;
		if (err == 0) {
			err = bm_label_read_be(c->be, &c->label);
			/* it connects but does not answer: as one that is
			 * not there */
			c->rejoin = err == -ETIMEDOUT;
		}
		if (err == -ENOENT && c->be) {
			/* none at its end: it may have grown (looked at
			 * once every label that can be read is) */
			snprintf(c->why, sizeof(c->why), "%s", bm_last_error());
			no_label |= 1u << i;
			continue;
		}
		if (err == 0)
			bm_comp_label_on_disk(c);
		if (err < 0) {
			absent(c, bm_last_error());
			fprintf(stderr, "blkmirror: %s: leaving out %s\n", name,
			        bm_last_error());
		}
	}
	find_grown(m, name, no_label);
	/* Nothing is written before the leases say no other server holds
	 * these components. */
	uint32_t unreadable;
	err = bm_lease_check(m, &unreadable);
	if (err < 0)
		goto fail;
	/* (left out there, judged by their labels first) */
	err = choose_states(m, name, force_source, same_disk, unreadable);
	if (err < 0)
		goto fail;
	err = bm_lease_start(m);
	if (err < 0)
		goto fail;
	err = open_bitmap(m, name);
	if (err < 0)
		goto fail;
	pthread_mutex_lock(&m->meta_lock);
	/* every start counts: a copy taken before it is older than what the
	 * start writes (a crash, a start with no write, a clean stop: the
	 * labels would say clean at the count of the copy's DIRTY one) */
	m->events++;
	err = bm_meta_write_all_labels(m);
	if (err < 0)
		err = drop_unwritten(m, name, err);
	/* every component in service holds the union of the bits; one that
	 * cannot is failed out by its first bit write (bitmap.c), not here:
	 * a bitmap never keeps a mirror from assembling */
	if (err == 0 && m->bitmap && bm_bitmap_write_all_locked(m) < 0)
		fprintf(stderr, "blkmirror: %s: a component's bitmap could not "
		        "be written\n", name);
	pthread_mutex_unlock(&m->meta_lock);
	if (err < 0)
		goto fail;
	bm_event_started(m);
	err = bm_workers_start(m);
	if (err < 0)
		goto fail;
	atomic_store(&m->last_write_ms, bm_now_ms());
	err = bm_sync_start(m);
	if (err < 0) {
		bm_recover_stop(m);
		bm_ev_stop(m);
		bm_ev_free(m);
		goto fail;
	}
	*out = m;
	return 0;
fail:
	bm_lease_stop(m, true);
	bm_ra_destroy(m, -1);
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		struct bm_backend *be = c->be;
		if (!be)
			continue;
		/* a label write that timed out may still be outstanding:
		 * end it, or close would wait for it (as bm_mirror_close) */
		if ((c->label_stale || atomic_load(&c->inflight) > 0 ||
		     atomic_load(&be->detached) > 0) && be->ops->abort)
			be->ops->abort(be);
		be->ops->close(be);
	}
	/* (after the lease threads: a drop there still kicks recovery) */
	bm_recover_free(m);
	bm_rangelock_destroy(&m->rl);
	pthread_mutex_destroy(&m->meta_lock);
	pthread_mutex_destroy(&m->live_lock);
	pthread_mutex_destroy(&m->info_lock);
	pthread_mutex_destroy(&m->drain_lock);
	pthread_cond_destroy(&m->drain_cond);
	bm_event_free(m);
	bm_bitmap_free(m);
	free(m);
	return err;
}

/* Waits for every client request to complete, at most timeout_ms (< 0:
 * for ever); true when none is left. */
static bool drain_until(bm_mirror *m, long timeout_ms)
{
	struct timespec deadline = bm_deadline_ms(CLOCK_MONOTONIC, timeout_ms);
	bool empty;

	/* draining before the look at the count: a completion that brings
	 * it to zero either is seen here or sees draining and wakes us */
	pthread_mutex_lock(&m->drain_lock);
	atomic_store(&m->draining, true);
	while (atomic_load(&m->ios_inflight) > 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&m->drain_cond, &m->drain_lock);
		else if (pthread_cond_timedwait(&m->drain_cond, &m->drain_lock,
		                                &deadline) == ETIMEDOUT)
			break;
	}
	empty = atomic_load(&m->ios_inflight) == 0;
	atomic_store(&m->draining, false);
	pthread_mutex_unlock(&m->drain_lock);
	return empty;
}

void bm_mirror_drain(bm_mirror *m)
{
	drain_until(m, -1);
}

/* The event and recovery threads, both or neither. */
int bm_workers_start(struct bm_mirror *m)
{
	int err = bm_ev_start(m);

	if (err < 0)
		return err;
	err = bm_recover_start(m);
	if (err < 0) {
		bm_ev_stop(m);
		bm_ev_free(m);
	}
	return err;
}

/*
 * Stops in a bounded time whatever the components do: requests on a
 * component that stopped answering end within io-timeout (the watchdog
 * gives it up and aborts it), so draining waits io-timeout + 5 s at most.
 * What could not drain, or flush, keeps the mirror DIRTY on disk (the next
 * start resynchronizes), and the mirror's memory is left to the exiting
 * process rather than freed under a request that may still complete.
 */
void bm_mirror_begin_stop(bm_mirror *m)
{
	atomic_store(&m->stopping, true);
}

int bm_mirror_close(bm_mirror *m)
{
	char dirty_why[160] = "";
	bool drained;

	bm_mirror_begin_stop(m);
	/* A check/repair first: its chunk ends within io-timeout (the
	 * watchdog still runs), and no client request waits for it. */
	bm_check_stop(m);
	/* An insert or removal that runs (live.c) finishes first: it holds
	 * backends and lease threads that the code below closes. */
	bm_live_wait_closing(m);
	/* Ask first, join after the drain: a copy or a repair may wait on
	 * the range of a client write held by a component that hangs. */
	bm_sync_request_stop(m);
	bm_recover_request_stop(m);
	drained = drain_until(m, atomic_load(&m->io_timeout_ms) + 5000L);
	if (!drained) {
		fprintf(stderr, "blkmirror: %s: %ld requests did not complete; "
		        "leaving the mirror marked dirty\n", m->name,
		        (long)atomic_load(&m->ios_inflight));
		bm_lease_stop(m, false);
		/* the process exits; nothing is freed under them */
		return bm_error(EIO, "%ld requests did not complete",
		                (long)atomic_load(&m->ios_inflight));
	}
	bm_sync_stop(m);
	bm_recover_stop(m);
	/* Before the event thread stops: its watchdog ends a chunk that
	 * hangs, and a chunk that fails may still queue an event. */
	if (!bm_ra_destroy(m, atomic_load(&m->io_timeout_ms) + 5000L)) {
		fprintf(stderr, "blkmirror: %s: read-ahead did not land; leaving "
		        "the mirror marked dirty\n", m->name);
		bm_ev_stop(m);
		bm_lease_stop(m, false);
		return bm_error(EIO, "read-ahead reads did not complete");
	}
	bm_ev_stop(m);
	pthread_mutex_lock(&m->meta_lock);
	if (bm_meta_flush_all_locked(m) == 0) {
		atomic_store(&m->dirty_on_disk, false);
		atomic_store(&m->dirty, false);
		m->events++; /* a clean mark: a copy taken before (DIRTY at
		                the same count) is older (label.h) */
		if (bm_meta_write_all_labels(m) < 0) {
			atomic_store(&m->dirty, true);
			fprintf(stderr, "blkmirror: %s: a label could not be "
			        "marked clean; the next start resynchronizes\n",
			        m->name);
			snprintf(dirty_why, sizeof(dirty_why), "a label could not "
			         "be marked clean");
		} else {
			/* drained and clean: the bits may go (bitmap.c) */
			bm_bitmap_clear_locked(m);
		}
	} else {
		fprintf(stderr, "blkmirror: %s: a flush failed; leaving the "
		        "mirror marked dirty\n", m->name);
		snprintf(dirty_why, sizeof(dirty_why), "a component's flush "
		         "failed");
	}
	pthread_mutex_unlock(&m->meta_lock);
	/* Renewed until now, so that no one takes the components over while
	 * they are flushed; clean only when the labels are. */
	bm_lease_stop(m, !atomic_load(&m->dirty));
	/* A request that timed out (a label write, a flush, a sync read on a
	 * component that hangs) may still be outstanding: end it, or close
	 * would wait for it. */
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		struct bm_backend *be = c->be;
		if (!be)
			continue;
		if ((atomic_load(&m->dirty) || c->label_stale ||
		     atomic_load(&c->inflight) > 0 ||
		     atomic_load(&be->detached) > 0) && be->ops->abort)
			be->ops->abort(be);
		be->ops->close(be);
	}
	bm_sync_free(m);
	bm_recover_free(m);
	bm_ev_free(m);
	bm_rangelock_destroy(&m->rl);
	pthread_mutex_destroy(&m->meta_lock);
	pthread_mutex_destroy(&m->live_lock);
	pthread_mutex_destroy(&m->info_lock);
	pthread_mutex_destroy(&m->drain_lock);
	pthread_cond_destroy(&m->drain_cond);
	bm_event_free(m);
	bm_bitmap_free(m);
	free(m);
	return dirty_why[0] ? bm_error(EIO, "%s", dirty_why) : 0;
}

uint64_t bm_mirror_size(const bm_mirror *m)
{
	return m->size;
}

/* The largest minimum of the components present, and of every one seen
 * present before: a component that needs 4 KiB and is out of service
 * (deactivated, disconnected, failed) comes back to clients that were
 * told 4 KiB meanwhile too. */
uint32_t bm_mirror_min_block(bm_mirror *m)
{
	uint32_t min = atomic_load(&m->min_block);

	for (int i = 0; i < m->ncomp; i++) {
		struct bm_backend *be = bm_comp_get(&m->comp[i]);
		if (!be)
			continue;
		if (be->min_block > min)
			min = be->min_block;
		bm_comp_put(&m->comp[i]);
	}
	if (min < 1)
		min = 1;
	uint32_t seen = atomic_load(&m->min_block);
	while (seen < min && !atomic_compare_exchange_weak(&m->min_block, &seen, min))
		;
	return min > seen ? min : seen;
}

int bm_min_block_check(bm_mirror *m, const struct bm_backend *be)
{
	uint32_t told = bm_mirror_min_block(m);

	if (be->min_block <= told)
		return 0;
	return bm_error(EEXIST, "it came back taking only requests aligned to "
	                "%u bytes (its minimum block size), and %s's clients "
	                "were told that %u works: it would refuse their "
	                "requests; serve it with a minimum of %u at most",
	                be->min_block, m->name, told, told);
}

int bm_mirror_submit(bm_mirror *m, struct bm_io *io)
{
	return bm_io_submit(m, io);
}

void bm_mirror_set_readahead(bm_mirror *m, uint64_t bytes)
{
	pthread_mutex_lock(&m->ra.lock);
	if (m->ra.cap != bytes)
		m->ra.warmed = false; /* warmed again up to the new cap */
	m->ra.cap = bytes;
	pthread_mutex_unlock(&m->ra.lock);
	if (bytes == 0)
		bm_ra_drop_all(m);
	/* idle chunk memory is kept mapped: within the new cap */
	bm_chunkmem_limit(&m->ra.mem, bytes);
}

void bm_mirror_set_io_timeout(bm_mirror *m, unsigned seconds)
{
	/* the synchronous calls of its components wait as long (one mirror
	 * a process: serve) */
	bm_backend_set_sync_timeout_ms((long)seconds * 1000);
	atomic_store(&m->io_timeout_ms, (int)(seconds * 1000u));
}

unsigned bm_mirror_io_timeout_ms(bm_mirror *m)
{
	int ms = atomic_load(&m->io_timeout_ms);

	return ms > 0 ? (unsigned)ms : 0;
}

void bm_mirror_set_read_error_limit(bm_mirror *m, unsigned errors)
{
	atomic_store(&m->read_error_limit, (int)errors);
}

bool bm_mirror_syncing(bm_mirror *m)
{
	return atomic_load(&m->sync_running);
}

int bm_mirror_configure(bm_mirror *m, int balance, uint32_t slice)
{
	int err;

	if (balance < 0 || balance >= BM_BALANCE_COUNT)
		return bm_error(EINVAL, "unknown balance algorithm");
	if (slice && (slice < 512 || slice > BM_MAX_IO || (slice & (slice - 1))))
		return bm_error(EINVAL, "slice %u is not a power of two from 512 "
		                "to %u", slice, BM_MAX_IO);
	pthread_mutex_lock(&m->meta_lock);
	atomic_store(&m->balance, balance);
	if (slice)
		atomic_store(&m->slice, slice);
	if (balance != BM_BALANCE_STREAM)
		bm_ra_drop_all(m);
	err = bm_meta_write_all_labels(m);
	if (err < 0) {
		/* say whose label keeps the old balance (the rest took it) */
		char who[1024] = "";
		size_t used = 0;
		for (int i = 0; i < m->ncomp && used < sizeof(who); i++)
			if (m->comp[i].label_stale)
				used += (size_t)snprintf(who + used, sizeof(who) - used,
				                         "%s%s", used ? ", " : "",
				                         m->comp[i].path);
		pthread_mutex_unlock(&m->meta_lock);
		return bm_error(err, "the balance is %s now, but the label of %s "
		                "could not be written (%s) and still says the old "
		                "one; run configure again once it answers",
		                bm_balance_name(balance), who[0] ? who : "a component",
		                strerror(-err));
	}
	pthread_mutex_unlock(&m->meta_lock);
	return 0;
}
