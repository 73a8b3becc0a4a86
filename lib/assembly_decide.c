/*
 * The assembly decision (assembly_decide.h): labels in, roles out.
 *
 * The rules, in the order they are applied:
 *
 *  1. Foreign labels are left out: another mirror's name, or this name but
 *     another mirror id (the mirror id is the one of the newest label by
 *     genid, syncid, seq; ties go to the first listed).  So is a component
 *     smaller than the mirror.
 *
 *  2. One component seen twice is used once.  Two entries the kernel says
 *     are one piece of storage (one inode, one block device, a loop device
 *     and its backing file), or two entries whose labels carry the same
 *     component id, are one component: the one with the newer label (the
 *     first listed on a tie) is used, the other is ABSENT "the same
 *     component as X".  The same id on two different pieces of storage is a
 *     copy (dd) of one component: it holds that component's data as of the
 *     copy, never anything the other lacks that a mirror could place, so it
 *     is not a second member either; to make it one, clear it and insert it.
 *     (The token check label uses for NBD exports is not run here: it writes,
 *     and nothing is written before the leases are checked; the id already
 *     tells that the two are one component or a copy of it.)
 *
 *  3. Split brain.  Every label written while the mirror is DIRTY records
 *     which members were out of service then (label.h: missed, over the
 *     member ids): those members missed writes this component holds.  A
 *     member leaves that set only when it is ACTIVE again (copied).  For two
 *     components X and Y that both hold the data in full (not being copied,
 *     not deactivated):
 *       - X says Y missed writes and Y says X missed writes: each took
 *         writes without the other, the histories diverged, and no copy is
 *         "newer".  Assembly is refused naming both, with the time of each
 *         one's last write, unless the administrator names the copy to keep
 *         (force_source);
 *       - only X says so: X holds writes Y lacks and Y holds nothing X lacks:
 *         X supersedes Y, whatever their genids (Y may have a higher genid
 *         from departures of others while nothing was written to it);
 *       - neither: the same history; genid and syncid decide (gmirror's
 *         rule: a lower (genid, syncid) missed writes), then events
 *         (version 3: the mirror's count of DIRTY and clean marks; fewer at
 *         the same genid and syncid is an older copy of the component put
 *         back, a snapshot say, which gmirror's rule takes for current),
 *         then, for DIRTY labels, the bitmap header's clear_seq (as many
 *         events, an older header: a copy taken while the mirror stayed
 *         DIRTY, put back after a crash; two clean labels at the same
 *         events hold the same data).
 *     Labels of version 1 record nothing (missed 0): the genid/syncid rule
 *     alone applies, as before.  No count of events (0, an older version's
 *     label) is fewer than any: the first start of version 3 writes one
 *     to every component in service.  An unknown clear_seq (no bitmap,
 *     or damaged) never makes a copy older.
 *
 *  4. The source is, among the components holding the data in full that no
 *     other one supersedes, the highest (genid, syncid, events, clear_seq),
 *     then the highest priority, then the first listed.  Unless a component
 *     not in full (being copied, deactivated) counts more events than it:
 *     such a label (of version 4, label.h) never counts past the full
 *     labels on disk (meta.c label_prepare: the full ones are written
 *     first, and a copy's label carries no more events than one of them
 *     holds), so the source is an
 *     older copy put back (a snapshot of the source taken before a rebuild
 *     was stopped) or the newest full component is missing: assembly is
 *     refused (before, the older source was taken and the writes made
 *     after it were lost on every copy).  Only for such a label of the
 *     source's generation or a newer one.  Every other component with
 *     the source's (genid, syncid) and events that no label says missed
 *     writes is ACTIVE if the source's generation was stopped cleanly, or
 *     resumes its copy at its checkpoint if it was being copied (a copy
 *     in full, FORCE_SYNC, goes on in full from there); when the
 *     generation was DIRTY, or the component is older, it is copied from
 *     offset 0 (an older copy of itself by events or clear_seq is `older`: over
 *     the bitmap's regions only if its bitmap header shows no clear since,
 *     bitmap.c and assemble.c decide).  Deactivated components stay
 *     INACTIVE.
 *
 *  5. force_source: that component is the source; every other one is copied
 *     from it in full (INACTIVE ones stay INACTIVE), and the genid is raised
 *     past every label's so that the choice holds at the next assembly even
 *     where a label could not be rewritten.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "assembly_decide.h"

bool bm_label_says_missed(const struct bm_label *a, uint64_t id)
{
	if (id == 0)
		return false;
	for (int i = 0; i < BM_MAX_COMPONENTS; i++)
		if ((a->missed & (1u << i)) && a->member_id[i] == id)
			return true;
	return false;
}

/* The clear_seq that counts in e's history: its header's when its label
 * says DIRTY, else none.  Two clean labels at the same events hold the
 * same data (a write since would have marked DIRTY, a new count), and a
 * clean stop writes the labels before the clear's headers, so a crash or
 * a failed header write there leaves headers that differ for nothing.  A
 * copy taken while the mirror stayed DIRTY and put back after a crash is
 * told by its header (bitmap.c "Older copies"). */
static uint64_t dirty_clear_seq(const struct bm_asm_input *e)
{
	return (e->label.component_flags & BM_CF_DIRTY) ? e->clear_seq : 0;
}

/* At the same genid and syncid, a is an older copy of its component than
 * b (label.h; bitmap.c "Older copies"): fewer events (none, 0, is fewer:
 * the first start of version 3 writes 1 to every component in service,
 * and one away then bumped syncid with the first write), or as many, both
 * DIRTY, and an older bitmap header (both readable). */
static bool older_copy(const struct bm_asm_input *a, const struct bm_asm_input *b)
{
	if (a->label.events != b->label.events)
		return a->label.events < b->label.events;
	uint64_t x = dirty_clear_seq(a), y = dirty_clear_seq(b);
	return x && y && x < y;
}

/* genid, then syncid, then events, then the bitmap's clear_seq of a DIRTY
 * label: the newer place in the history (0: the same, as far as they
 * tell).  An unknown clear_seq (0: no bitmap, a damaged one, or a clean
 * label) ranks lowest, so that the order stays total; it never makes a
 * copy `older`. */
static int cmp_history(const struct bm_asm_input *a, const struct bm_asm_input *b)
{
	if (a->label.genid != b->label.genid)
		return a->label.genid > b->label.genid ? 1 : -1;
	if (a->label.syncid != b->label.syncid)
		return a->label.syncid > b->label.syncid ? 1 : -1;
	if (a->label.events != b->label.events)
		return a->label.events > b->label.events ? 1 : -1;
	if (dirty_clear_seq(a) != dirty_clear_seq(b))
		return dirty_clear_seq(a) > dirty_clear_seq(b) ? 1 : -1;
	return 0;
}

/* The history, then seq: the label written last. */
static int cmp_age(const struct bm_asm_input *ia, const struct bm_asm_input *ib)
{
	const struct bm_label *a = &ia->label, *b = &ib->label;
	int h = cmp_history(ia, ib);

	if (h)
		return h;
	if (a->seq != b->seq)
		return a->seq > b->seq ? 1 : -1;
	return 0;
}

static void leave_out(struct bm_asm_out *out, bool *usable, int i,
                      bool duplicate, const char *fmt, const char *arg)
{
	usable[i] = false;
	out->comp[i].role = BM_ROLE_ABSENT;
	out->comp[i].duplicate = duplicate;
	snprintf(out->comp[i].why, sizeof(out->comp[i].why), fmt, arg);
}

int bm_assembly_decide(const char *name, const struct bm_asm_input *in,
                       int n, int force, struct bm_asm_out *out)
{
	bool usable[BM_MAX_COMPONENTS] = {0}, cand[BM_MAX_COMPONENTS] = {0};
	bool superseded[BM_MAX_COMPONENTS] = {0};
	int ref = -1, src = -1;

	memset(out, 0, sizeof(*out));
	out->source = out->split[0] = out->split[1] = out->ahead = -1;
	if (n < 0 || n > BM_MAX_COMPONENTS) {
		snprintf(out->error, sizeof(out->error), "mirror '%s': %d "
		         "components (at most %d)", name, n, BM_MAX_COMPONENTS);
		return out->result = BM_ASM_NO_LABEL;
	}
	for (int i = 0; i < n; i++) {
		out->comp[i].role = BM_ROLE_ABSENT;
		usable[i] = in[i].present;
	}

	/* 1. Foreign labels, then the mirror's identity and size. */
	for (int i = 0; i < n; i++)
		if (usable[i] && strcmp(in[i].label.name, name) != 0)
			leave_out(out, usable, i, false, "belongs to mirror '%s'",
			          in[i].label.name);
	for (int i = 0; i < n; i++)
		if (usable[i] && (ref < 0 ||
		                  cmp_age(&in[i], &in[ref]) > 0))
			ref = i;
	if (ref < 0) {
		snprintf(out->error, sizeof(out->error), "mirror '%s': no "
		         "component has its label", name);
		return out->result = BM_ASM_NO_LABEL;
	}
	out->mirror_id = in[ref].label.mirror_id;
	out->data_size = in[ref].label.data_size;
	for (int i = 0; i < n; i++) {
		if (!usable[i])
			continue;
		if (in[i].label.mirror_id != out->mirror_id)
			leave_out(out, usable, i, false, "%slabeled for another "
			          "mirror of the same name", "");
		else if (in[i].data_area < out->data_size)
			leave_out(out, usable, i, false, "%ssmaller than the "
			          "mirror", "");
	}

	/* 2. One component seen twice. */
	for (int i = 0; i < n; i++) {
		int k = in[i].same_disk_as;
		if (k >= 0 && !in[i].present)
			out->comp[i].duplicate = true; /* left out before opening */
		if (usable[i] && k >= 0 && k < i && usable[k])
			leave_out(out, usable, i, true, "the same component as %s "
			          "(the same disk through another path)", in[k].path);
	}
	for (int i = 0; i < n; i++) {
		for (int k = 0; usable[i] && k < i; k++) {
			if (!usable[k] || in[k].label.component_id !=
			                  in[i].label.component_id)
				continue;
			int keep = cmp_age(&in[i], &in[k]) > 0 ? i : k;
			int drop = keep == i ? k : i;
			leave_out(out, usable, drop, true, "the same component as %s "
			          "(the same component id: one disk through two "
			          "paths, or a copy of it)", in[keep].path);
		}
	}

	/* 3. Who supersedes whom; split brain. */
	for (int i = 0; i < n; i++)
		cand[i] = usable[i] && bm_label_full(&in[i].label);
	for (int x = 0; x < n; x++) {
		for (int y = 0; cand[x] && y < n; y++) {
			if (!cand[y] || x == y)
				continue;
			bool x_says = bm_label_says_missed(&in[x].label,
			                                   in[y].label.component_id);
			bool y_says = bm_label_says_missed(&in[y].label,
			                                   in[x].label.component_id);
			if (x_says && !y_says)
				superseded[y] = true;
			if (x_says && y_says && x < y && out->split[0] < 0) {
				out->split[0] = x;
				out->split[1] = y;
			}
		}
	}
	if (force >= 0) {
		const char *why = NULL;
		if (force >= n)
			why = "is not a component of the mirror";
		else if (!usable[force])
			why = in[force].present ? out->comp[force].why
			                        : "could not be read";
		else if (!cand[force])
			why = "does not hold the mirror's data in full (it was "
			      "being copied, or is deactivated)";
		if (why) {
			snprintf(out->error, sizeof(out->error), "mirror '%s': "
			         "%s cannot be the forced source: it %s%s", name,
			         force < n ? in[force].path : "?",
			         force < n && !usable[force] && in[force].present
			         ? "is left out: " : "", why);
			return out->result = BM_ASM_BAD_FORCE;
		}
		src = force;
		out->forced = true;
		out->split[0] = out->split[1] = -1;
	}
	if (src < 0) {
		for (int i = 0; i < n; i++) {
			if (!cand[i] || superseded[i])
				continue;
			int h = src >= 0 ? cmp_history(&in[i], &in[src]) : 1;
			if (h > 0 || (h == 0 && in[i].label.priority >
			                        in[src].label.priority))
				src = i;
		}
		if (src < 0 && out->split[0] < 0) {
			/* Candidates, each superseded by another: a cycle of
			 * records that cannot all be true. */
			for (int x = 0; x < n && out->split[0] < 0; x++)
				for (int y = 0; cand[x] && y < n; y++)
					if (cand[y] && x != y && bm_label_says_missed(
					        &in[y].label, in[x].label.component_id)) {
						out->split[0] = x < y ? x : y;
						out->split[1] = x < y ? y : x;
						break;
					}
		}
	}
	if (out->split[0] >= 0) {
		const struct bm_label *a = &in[out->split[0]].label;
		const struct bm_label *b = &in[out->split[1]].label;
		char ta[64], tb[64];
		bm_label_time_str(a->last_write, ta, sizeof(ta));
		bm_label_time_str(b->last_write, tb, sizeof(tb));
		snprintf(out->error, sizeof(out->error), "mirror '%s': split "
		         "brain: %s (last write %s) and %s (last write %s) each "
		         "took writes while the other was away, so their data "
		         "differ; nothing was changed.  Choose the copy to keep: "
		         "'blkmirror serve --force-source COMPONENT %s' (the others "
		         "are copied from it and lose their own writes)", name,
		         in[out->split[0]].path, ta, in[out->split[1]].path, tb,
		         name);
		return out->result = BM_ASM_SPLIT_BRAIN;
	}
	if (src < 0) {
		snprintf(out->error, sizeof(out->error), "mirror '%s': no "
		         "component holds the newest data in full (every one "
		         "present is out of sync or missing); bring back a "
		         "complete component", name);
		return out->result = BM_ASM_NO_SOURCE;
	}

	/* 4. A label that is not full with more events than the source: the
	 * source is behind a copy taken from the mirror (meta.c: such a label
	 * never counts past the full ones on disk).  Not one of an older
	 * generation: the source's label was written after it (a forced
	 * start while it could not be read counted from fewer events). */
	for (int i = 0; i < n && !out->forced; i++)
		if (usable[i] && !cand[i] && bm_label_events_capped(&in[i].label) &&
		    in[i].label.genid >= in[src].label.genid &&
		    in[i].label.events > in[src].label.events &&
		    (out->ahead < 0 ||
		     in[i].label.events > in[out->ahead].label.events))
			out->ahead = i;
	if (out->ahead >= 0) {
		const struct bm_label *l = &in[out->ahead].label;
		out->source = src;
		snprintf(out->error, sizeof(out->error), "mirror '%s': %s, the "
		         "newest component holding the data in full, is behind "
		         "%s (%s; %" PRIu64 " events to its %" PRIu64 "): an "
		         "older copy put back (a snapshot), or the newest "
		         "component is missing; nothing was changed.  Bring back "
		         "the newest one, or keep this one's data and lose the "
		         "writes made after it: 'blkmirror serve --force-source "
		         "%s %s'", name, in[src].path, in[out->ahead].path,
		         (l->component_flags & BM_CF_INACTIVE) ? "deactivated"
		                                             : "being copied",
		         l->events, in[src].label.events, in[src].path, name);
		return out->result = BM_ASM_SOURCE_BEHIND;
	}

	/* 4./5. The generation, and every component's role. */
	const struct bm_label *s = &in[src].label;
	out->source = src;
	out->genid = s->genid;
	out->syncid = s->syncid;
	out->events = s->events;
	for (int i = 0; i < n; i++) {
		if (!usable[i])
			continue;
		if (in[i].label.genid > out->genid)
			out->genid = in[i].label.genid;
		if (in[i].label.events > out->events) /* (never counts back) */
			out->events = in[i].label.events;
		if (out->forced && in[i].label.syncid > out->syncid)
			out->syncid = in[i].label.syncid;
	}
	if (out->forced)
		out->genid++;
	for (int i = 0; i < n && !out->forced; i++)
		if (usable[i] && (in[i].label.component_flags & BM_CF_DIRTY) &&
		    in[i].label.genid == s->genid &&
		    in[i].label.syncid == s->syncid &&
		    !older_copy(&in[i], &in[src]))
			out->was_dirty = true;

	/* Ids: the present ones' own; an absent one's from the source's
	 * member list (the same slot first, then in order). */
	bool id_taken[BM_MAX_COMPONENTS] = {0};
	for (int i = 0; i < n; i++)
		if (in[i].present && strcmp(in[i].label.name, name) == 0 &&
		    in[i].label.mirror_id == out->mirror_id &&
		    !out->comp[i].duplicate)
			out->comp[i].known_id = in[i].label.component_id;
	for (int j = 0; j < BM_MAX_COMPONENTS; j++)
		for (int i = 0; i < n; i++)
			if (s->member_id[j] && s->member_id[j] ==
			    in[i].label.component_id && in[i].present)
				id_taken[j] = true;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			if (in[i].present || in[i].same_disk_as >= 0)
				continue; /* a second view is no member */
			for (int j = 0; j < BM_MAX_COMPONENTS &&
			                !out->comp[i].known_id; j++)
				if ((pass == 1 || j == i) && s->member_id[j] &&
				    !id_taken[j]) {
					out->comp[i].known_id = s->member_id[j];
					id_taken[j] = true;
				}
		}
	for (int i = 0; i < n; i++)
		if (i != src && bm_label_says_missed(s, out->comp[i].known_id))
			out->missed |= 1u << i;

	for (int i = 0; i < n; i++) {
		struct bm_asm_comp *c = &out->comp[i];
		const struct bm_label *l = &in[i].label;
		bool missed_writes = false;
		if (!usable[i])
			continue;
		for (int k = 0; k < n; k++)
			if (cand[k] && k != i &&
			    bm_label_says_missed(&in[k].label, l->component_id))
				missed_writes = true;
		bool older = l->genid == s->genid && l->syncid == s->syncid &&
		             older_copy(&in[i], &in[src]);
		bool current = !out->forced && !missed_writes && !older &&
		               l->genid == s->genid && l->syncid == s->syncid;
		if (i == src) {
			c->role = BM_ROLE_ACTIVE;
		} else if (l->component_flags & BM_CF_INACTIVE) {
			c->role = BM_ROLE_INACTIVE;
			snprintf(c->why, sizeof(c->why), "deactivated");
		} else if (current && !out->was_dirty &&
		           (l->component_flags & BM_CF_SYNCHRONIZING) &&
		           l->events == s->events) {
			/* resumed at its checkpoint; FORCE_SYNC (a copy in
			 * full: rebuild, activate, an older copy) goes on in
			 * full from there (assemble.c open_bitmap): every
			 * setter of FORCE_SYNC restarts the offset at 0, so
			 * the data below it is this copy's.  Only at the
			 * source's events: a checkpoint with more (the source
			 * is an older copy put back: refused above, unless
			 * forced or written by an older blkmirror) was copied
			 * from newer data than the source holds, and is
			 * copied again from 0 so that the copies agree
			 * (review of 2026-12-04) */
			c->role = BM_ROLE_SYNCHRONIZING;
			c->sync_offset = l->sync_offset;
		} else if (current && !out->was_dirty && bm_label_full(l)) {
			c->role = BM_ROLE_ACTIVE;
		} else {
			c->role = BM_ROLE_SYNCHRONIZING;
			c->sync_offset = 0;
			c->older = older;
			if (older && l->events != s->events)
				snprintf(c->why, sizeof(c->why), "an older copy of "
				         "itself (events %" PRIu64 ", %s has %"
				         PRIu64 "): copied again", l->events,
				         in[src].path, s->events);
			else if (older)
				snprintf(c->why, sizeof(c->why), "an older copy of "
				         "itself (bitmap clear %" PRIu64 ", %s has %"
				         PRIu64 "): copied again", in[i].clear_seq,
				         in[src].path, in[src].clear_seq);
		}
	}
	return out->result = BM_ASM_OK;
}
