/* libFuzzer target: the assembly decision (lib/assembly_decide.c) over up
 * to six fuzzed labels, their fields drawn from small ranges so that equal
 * ids, generations and missed-write records are common.  It must never
 * crash, must answer the same twice, must never let a lower generation win
 * over a higher one of the same mirror unless a label records that the
 * higher one missed writes, must never take as the source a component that
 * another one records as having missed its writes, must never accept two
 * components that each missed the other's writes (split brain), must
 * never take a source whose count of events a label not in full (being
 * copied, deactivated) passes, and must never use one component twice. */
#include <stdint.h>
#include <string.h>

#include "assembly_decide.h"

#define MIB (1ull << 20)

struct bytes {
	const uint8_t *p;
	size_t n;
};

static unsigned take(struct bytes *b)
{
	if (b->n == 0)
		return 0;
	b->n--;
	return *b->p++;
}

static const char *const paths[] = {"a", "b", "c", "d", "e", "f"};

static int cmp_gen(const struct bm_label *a, const struct bm_label *b)
{
	if (a->genid != b->genid)
		return a->genid > b->genid ? 1 : -1;
	if (a->syncid != b->syncid)
		return a->syncid > b->syncid ? 1 : -1;
	return 0;
}

static bool full(const struct bm_label *l)
{
	return !(l->component_flags &
	         (BM_CF_SYNCHRONIZING | BM_CF_FORCE_SYNC | BM_CF_INACTIVE));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct bm_asm_input in[BM_MAX_COMPONENTS];
	static struct bm_asm_out out, again;
	struct bytes b = {data, size};
	int n = 1 + (int)(take(&b) % 6);
	int force = (int)take(&b) % 10 - 3; /* -3..6: mostly none */

	if (force < 0)
		force = -1;
	memset(in, 0, sizeof(in));
	for (int i = 0; i < n; i++) {
		struct bm_label *l = &in[i].label;
		unsigned f = take(&b), g = take(&b), h = take(&b);
		in[i].path = paths[i];
		in[i].present = !(f & 1);
		in[i].same_disk_as = (f & 2) ? (int)(h % 8) - 1 : -1;
		in[i].data_area = (f & 4) ? 10 * MIB : 63 * MIB;
		l->version = (f & 8) ? 1 : (f & 0x30) == 0x10 ? 3 : BM_LABEL_VERSION;
		strcpy(l->name, (f & 0x30) == 0x30 ? "m1" : "m0");
		l->mirror_id = (f & 0xc0) == 0xc0 ? 2 : 1;
		l->component_id = 1 + g % 5;
		l->genid = 1 + (g >> 3) % 4;
		l->syncid = 1 + (h >> 3) % 4;
		l->seq = take(&b);
		l->component_flags = take(&b) & BM_CF_ALL;
		l->priority = take(&b) % 3;
		l->data_size = 63 * MIB;
		l->last_write = take(&b) * 1000u;
		unsigned missed = take(&b);
		for (int k = 0; k < 6; k++) {
			l->member_id[k] = 1 + (unsigned)k;
			if (missed & (1u << k))
				l->missed |= 1u << k;
		}
		l->events = take(&b) % 4; /* (0: none, a version 2 label's) */
		in[i].clear_seq = take(&b) % 3; /* (0: no bitmap, or damaged) */
		l->sync_offset = (take(&b) % 3) * MIB; /* a copy's checkpoint */
		if (l->version == 1) {
			l->missed = 0;
			memset(l->member_id, 0, sizeof(l->member_id));
			l->events = 0;
		}
	}

	int r = bm_assembly_decide("m0", in, n, force, &out);
	bm_assembly_decide("m0", in, n, force, &again);
	if (r != out.result || memcmp(&out, &again, sizeof(out)) != 0)
		__builtin_trap(); /* not deterministic */
	if (r == BM_ASM_SOURCE_BEHIND &&
	    (out.ahead < 0 || out.ahead >= n || full(&in[out.ahead].label) ||
	     !in[out.ahead].present || !bm_label_events_capped(&in[out.ahead].label) ||
	     strcmp(in[out.ahead].label.name, "m0") != 0 ||
	     in[out.ahead].label.mirror_id != out.mirror_id ||
	     force >= 0 || out.source < 0 ||
	     in[out.ahead].label.genid < in[out.source].label.genid ||
	     in[out.ahead].label.events <= in[out.source].label.events))
		__builtin_trap(); /* refused for nothing */
	if (r != BM_ASM_OK)
		return 0;

	const struct bm_label *s = &in[out.source].label;
	if (out.source < 0 || out.source >= n ||
	    out.comp[out.source].role != BM_ROLE_ACTIVE || !full(s))
		__builtin_trap();
	for (int i = 0; i < n; i++) {
		const struct bm_label *l = &in[i].label;
		bool used = out.comp[i].role != BM_ROLE_ABSENT;
		if (!used)
			continue;
		if (!in[i].present || strcmp(l->name, "m0") != 0 ||
		    l->mirror_id != out.mirror_id || l->genid > out.genid)
			__builtin_trap();
		for (int k = 0; k < i; k++)
			if (out.comp[k].role != BM_ROLE_ABSENT &&
			    in[k].label.component_id == l->component_id)
				__builtin_trap(); /* one component used twice */
		if (out.forced || i == out.source)
			continue;
		/* the source missed writes another one holds */
		if (full(l) && bm_label_says_missed(l, s->component_id))
			__builtin_trap();
		if (out.comp[i].role == BM_ROLE_ACTIVE && cmp_gen(l, s) != 0)
			__builtin_trap(); /* ACTIVE on another generation */
		if (l->events > out.events)
			__builtin_trap(); /* the count would go back */
		if (!full(l) && bm_label_events_capped(l) &&
		    l->genid >= s->genid && l->events > s->events)
			__builtin_trap(); /* a source behind a copy's label */
		bool dirty = (l->component_flags & BM_CF_DIRTY) &&
		             (s->component_flags & BM_CF_DIRTY);
		if (out.comp[i].role == BM_ROLE_ACTIVE &&
		    (l->events != s->events ||
		     (dirty && in[i].clear_seq && in[out.source].clear_seq &&
		      in[i].clear_seq != in[out.source].clear_seq)))
			__builtin_trap(); /* an older (or newer) copy left ACTIVE */
		if (out.comp[i].role == BM_ROLE_SYNCHRONIZING &&
		    out.comp[i].sync_offset > 0 &&
		    (l->events != s->events || cmp_gen(l, s) != 0 ||
		     out.was_dirty))
			__builtin_trap(); /* resumed from another history */
		/* the source is no older copy of a full one of its
		 * generation that no used label says missed writes (the
		 * helper's blind spot: a stale source, not only a stale
		 * ACTIVE one) */
		bool missed_any = false;
		for (int k = 0; k < n; k++)
			if (out.comp[k].role != BM_ROLE_ABSENT &&
			    bm_label_says_missed(&in[k].label, l->component_id))
				missed_any = true;
		if (full(l) && !missed_any && cmp_gen(l, s) == 0 &&
		    (s->events < l->events ||
		     (s->events == l->events && dirty && in[i].clear_seq &&
		      in[out.source].clear_seq > 0 &&
		      in[out.source].clear_seq < in[i].clear_seq)))
			__builtin_trap(); /* an older copy chosen as the source */
		if (out.comp[i].older && (cmp_gen(l, s) != 0 ||
		    l->events > s->events ||
		    (l->events == s->events &&
		     (!dirty || !in[i].clear_seq ||
		      in[i].clear_seq >= in[out.source].clear_seq))))
			__builtin_trap(); /* older, but not by its history */
		if (!full(l))
			continue;
		/* A lower generation won over a higher one: only when a used
		 * label records that the higher one missed writes. */
		bool recorded = false;
		for (int k = 0; k < n; k++)
			if (out.comp[k].role != BM_ROLE_ABSENT && full(&in[k].label) &&
			    bm_label_says_missed(&in[k].label, l->component_id))
				recorded = true;
		if (cmp_gen(l, s) > 0 && !recorded)
			__builtin_trap();
		/* split brain accepted */
		if (bm_label_says_missed(s, l->component_id) &&
		    bm_label_says_missed(l, s->component_id))
			__builtin_trap();
		for (int k = 0; k < n; k++)
			if (k != i && out.comp[k].role != BM_ROLE_ABSENT &&
			    full(&in[k].label) &&
			    bm_label_says_missed(&in[k].label, l->component_id) &&
			    bm_label_says_missed(l, in[k].label.component_id))
				__builtin_trap();
	}
	return 0;
}
