/* The assembly decision (lib/assembly_decide.c), case by case: clean,
 * dirty, stale, a copy resumed at its offset, one missing, split brain and
 * its forced resolution, duplicates, foreign labels, the newest generation
 * found last, version 1 labels, an older copy by its events, a source
 * behind a copy. */
#include <string.h>

#include "assembly_decide.h"
#include "check.h"

#define MIB (1ull << 20)
#define IDA 0xa0a0a0a0a0a0a0a0ull
#define IDB 0xb0b0b0b0b0b0b0b0ull
#define IDC 0xc0c0c0c0c0c0c0c0ull

static struct bm_asm_input in[BM_MAX_COMPONENTS];
static struct bm_asm_out out;
static int n;
static const char *paths[] = {"/d/a", "/d/b", "/d/c", "/d/d"};

/* n components a, b, c... of mirror m0, clean, genid 1, syncid 1, each
 * knowing all of them. */
static void setup(int count)
{
	static const uint64_t ids[] = {IDA, IDB, IDC, 0xd0d0d0d0d0d0d0d0ull};

	memset(in, 0, sizeof(in));
	n = count;
	for (int i = 0; i < n; i++) {
		struct bm_label *l = &in[i].label;
		in[i].path = paths[i];
		in[i].present = true;
		in[i].same_disk_as = -1;
		in[i].data_area = 63 * MIB;
		l->version = BM_LABEL_VERSION;
		strcpy(l->name, "m0");
		l->mirror_id = 0x1234;
		l->component_id = ids[i];
		l->genid = l->syncid = l->seq = 1;
		l->data_size = 63 * MIB;
		l->component_size = 64 * MIB;
		l->ncomponents = (uint32_t)n;
		for (int k = 0; k < n; k++)
			l->member_id[k] = ids[k];
	}
}

static int decide(int force)
{
	return bm_assembly_decide("m0", in, n, force, &out);
}

/* label i says member j missed its writes */
static void says_missed(int i, int j)
{
	in[i].label.missed |= 1u << j;
}

int main(void)
{
	/* Clean: both ACTIVE, a is the source. */
	setup(2);
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK_EQ(out.comp[0].role, BM_ROLE_ACTIVE);
	CHECK_EQ(out.comp[1].role, BM_ROLE_ACTIVE);
	CHECK(!out.was_dirty);
	CHECK_EQ(out.comp[1].known_id, IDB);

	/* Priority picks the source among equals. */
	in[1].label.priority = 5;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);

	/* Dirty: one source, the other copied from 0. */
	setup(2);
	in[0].label.component_flags = BM_CF_DIRTY;
	in[1].label.component_flags = BM_CF_DIRTY;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK(out.was_dirty);
	CHECK_EQ(out.source, 0);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[1].sync_offset, 0);

	/* Stale (lower syncid), listed first: b is the source, a copied. */
	setup(2);
	in[1].label.syncid = 2;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);
	CHECK_EQ(out.comp[0].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[0].sync_offset, 0);

	/* The newest generation found last, among three. */
	setup(3);
	in[2].label.genid = 3;
	in[1].label.genid = 2;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 2);
	CHECK_EQ(out.genid, 3);
	CHECK_EQ(out.comp[0].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);

	/* A copy stopped cleanly resumes at its checkpoint ... */
	setup(2);
	in[1].label.component_flags = BM_CF_SYNCHRONIZING;
	in[1].label.sync_offset = 8 * MIB;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[1].sync_offset, 8 * MIB);
	/* ... from 0 after a crash ... */
	in[0].label.component_flags = BM_CF_DIRTY;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.comp[1].sync_offset, 0);
	/* ... and never as the source. */
	setup(1);
	in[0].label.component_flags = BM_CF_SYNCHRONIZING;
	CHECK_EQ(decide(-1), BM_ASM_NO_SOURCE);
	CHECK(strstr(out.error, "no component holds the newest data") != NULL);

	/* One missing: it is ABSENT, known by the id the others list. */
	setup(2);
	in[1].present = false;
	memset(&in[1].label, 0, sizeof(in[1].label));
	says_missed(0, 1);
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK_EQ(out.comp[1].role, BM_ROLE_ABSENT);
	CHECK_EQ(out.comp[1].known_id, IDB);
	CHECK_EQ(out.missed, 2);

	/* Deactivated stays INACTIVE. */
	setup(2);
	in[1].label.component_flags = BM_CF_INACTIVE;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.comp[1].role, BM_ROLE_INACTIVE);

	/* Split brain: each says the other missed writes. */
	setup(2);
	in[0].label.syncid = in[1].label.syncid = 2;
	in[0].label.last_write = 1796061600;
	in[1].label.last_write = 1796061660;
	says_missed(0, 1);
	says_missed(1, 0);
	CHECK_EQ(decide(-1), BM_ASM_SPLIT_BRAIN);
	CHECK_EQ(out.split[0], 0);
	CHECK_EQ(out.split[1], 1);
	CHECK(strstr(out.error, "/d/a (last write 2026-11-30 18:00:00 UTC) "
	                        "and /d/b (last write 2026-11-30 18:01:00 UTC)"));
	CHECK(strstr(out.error, "--force-source COMPONENT m0"));
	CHECK(strchr(out.error, '\n') == NULL);
	/* ... whatever the generations say. */
	in[1].label.genid = 9;
	CHECK_EQ(decide(-1), BM_ASM_SPLIT_BRAIN);
	/* Forced: b is the source, a copied in full, genid past both. */
	CHECK_EQ(decide(1), BM_ASM_OK);
	CHECK(out.forced);
	CHECK_EQ(out.source, 1);
	CHECK_EQ(out.comp[0].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[0].sync_offset, 0);
	CHECK_EQ(out.genid, 10);
	CHECK_EQ(out.missed, 1); /* b's record: a missed writes */
	/* A forced source that holds no full copy is refused. */
	in[0].label.component_flags = BM_CF_SYNCHRONIZING;
	CHECK_EQ(decide(0), BM_ASM_BAD_FORCE);
	CHECK_EQ(decide(7), BM_ASM_BAD_FORCE);

	/* Only one says so: it supersedes, even with a lower genid (b's
	 * genid rose from others' departures while nothing was written). */
	setup(2);
	in[0].label.syncid = 2;
	says_missed(0, 1);
	in[1].label.genid = 4;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[1].sync_offset, 0);
	CHECK_EQ(out.genid, 4); /* never lower than a label's */

	/* A record that the other missed writes, on the same generation, is
	 * not ACTIVE. */
	setup(2);
	says_missed(0, 1);
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);

	/* Three that each supersede the next: records that cannot all be
	 * true; refused. */
	setup(3);
	says_missed(0, 1);
	says_missed(1, 2);
	says_missed(2, 0);
	CHECK_EQ(decide(-1), BM_ASM_SPLIT_BRAIN);

	/* Duplicates: the kernel says one disk ... */
	setup(3);
	in[2].label = in[0].label;
	in[2].same_disk_as = 0;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.comp[2].role, BM_ROLE_ABSENT);
	CHECK(out.comp[2].duplicate);
	CHECK(strstr(out.comp[2].why, "the same component as /d/a"));
	CHECK_EQ(out.comp[2].known_id, 0);
	/* Left unopened for it (a second path to a): no member id, even where
	 * the source's list has one free in its slot (b's; c is missing). */
	setup(3);
	in[1].present = false;
	in[1].same_disk_as = 0;
	in[2].present = false;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK(out.comp[1].duplicate);
	CHECK_EQ(out.comp[1].known_id, 0);
	CHECK_EQ(out.comp[2].known_id, IDC);
	/* ... or the same component id (NBD, a copy): the newer label is
	 * used, whichever is listed first. */
	setup(3);
	in[2].label = in[0].label;
	in[2].label.seq = 5;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.comp[0].role, BM_ROLE_ABSENT);
	CHECK(strstr(out.comp[0].why, "the same component as /d/c"));
	CHECK_EQ(out.comp[2].role, BM_ROLE_ACTIVE);

	/* Foreign labels: another mirror's name, another mirror id. */
	setup(3);
	strcpy(in[1].label.name, "other");
	in[2].label.mirror_id = 0x999;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.comp[1].role, BM_ROLE_ABSENT);
	CHECK(strstr(out.comp[1].why, "belongs to mirror 'other'"));
	CHECK_EQ(out.comp[2].role, BM_ROLE_ABSENT);
	CHECK(strstr(out.comp[2].why, "another mirror of the same name"));
	CHECK_EQ(out.comp[1].known_id, 0);
	/* Smaller than the mirror. */
	setup(2);
	in[1].data_area = 10 * MIB;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK(strstr(out.comp[1].why, "smaller than the mirror"));
	/* Nothing of this mirror. */
	setup(1);
	strcpy(in[0].label.name, "other");
	CHECK_EQ(decide(-1), BM_ASM_NO_LABEL);

	/* Version 1 labels (no records): genid and syncid alone. */
	setup(2);
	for (int i = 0; i < 2; i++) {
		in[i].label.version = 1;
		memset(in[i].label.member_id, 0, sizeof(in[i].label.member_id));
	}
	in[1].label.syncid = 2;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);

	/* Events (version 3): an older copy of b put back, clean, the same
	 * genid and syncid, a higher priority: never the source, copied in
	 * full (older), and the generation counts as clean. */
	setup(2);
	in[0].label.events = 7;
	in[1].label.events = 5;
	in[1].label.priority = 9;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK_EQ(out.events, 7);
	CHECK(!out.was_dirty);
	CHECK_EQ(out.comp[0].role, BM_ROLE_ACTIVE);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[1].sync_offset, 0);
	CHECK(out.comp[1].older);
	CHECK(strstr(out.comp[1].why, "older copy of itself (events 5, /d/a has 7)"));
	/* ... also when the old copy says DIRTY (taken while running) and
	 * listed first; the newer one is clean: nothing to copy from b's
	 * bitmap, and a is not copied over */
	in[1].label.component_flags = BM_CF_DIRTY;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK(!out.was_dirty);
	CHECK_EQ(out.comp[0].role, BM_ROLE_ACTIVE);
	CHECK(out.comp[1].older);
	/* ... and when it was being copied: not resumed at its offset */
	in[1].label.component_flags = BM_CF_SYNCHRONIZING;
	in[1].label.sync_offset = 8 * MIB;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[1].sync_offset, 0);
	CHECK(out.comp[1].older);
	/* The same events: equals, priority decides, nobody older. */
	setup(2);
	in[0].label.events = in[1].label.events = 7;
	in[1].label.priority = 9;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);
	CHECK_EQ(out.comp[0].role, BM_ROLE_ACTIVE);
	CHECK(!out.comp[0].older);
	/* A version 2 label (no events, 0) beside a version 3 one at the
	 * same genid and syncid: an older copy from before the upgrade (the
	 * first start of version 3 wrote a count to every component in
	 * service), even with the higher priority. */
	in[0].label.events = 0;
	in[0].label.priority = 10;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);
	CHECK_EQ(out.comp[0].role, BM_ROLE_SYNCHRONIZING);
	CHECK(out.comp[0].older);
	/* All without events (before the upgrade's first start): equals. */
	setup(2);
	in[1].label.priority = 1;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);
	CHECK_EQ(out.comp[0].role, BM_ROLE_ACTIVE);
	CHECK_EQ(out.events, 0);
	/* The source's order is total (fuzz_assembly found a, b, c each
	 * beating the next when "unknown" equalled anything). */
	setup(3);
	in[1].label.events = 3;
	in[2].label.events = 1;
	in[2].label.priority = 2;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);
	CHECK(out.comp[0].older);
	CHECK(out.comp[2].older);
	/* As many events, an older bitmap header (a copy taken while the
	 * mirror stayed DIRTY, put back after a crash): older, never the
	 * source, whatever its priority; the generation was DIRTY. */
	setup(2);
	in[0].label.events = in[1].label.events = 4;
	in[0].label.component_flags = in[1].label.component_flags = BM_CF_DIRTY;
	in[0].clear_seq = 9;
	in[1].clear_seq = 6;
	in[1].label.priority = 9;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK(out.was_dirty);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	CHECK(out.comp[1].older);
	CHECK(strstr(out.comp[1].why, "older copy of itself (bitmap clear 6, /d/a has 9)"));
	/* An unknown header (0: no bitmap, or damaged) is never older, only
	 * loses the tie. */
	in[1].clear_seq = 0;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK(!out.comp[1].older);
	/* Clean labels at the same events hold the same data: headers that
	 * differ (a crash between the clean labels and the clear's header
	 * writes) change nothing, priority decides, both ACTIVE. */
	in[0].label.component_flags = in[1].label.component_flags = 0;
	in[1].clear_seq = 6;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);
	CHECK(!out.was_dirty);
	CHECK_EQ(out.comp[0].role, BM_ROLE_ACTIVE);
	CHECK_EQ(out.comp[1].role, BM_ROLE_ACTIVE);
	/* Events never outrank the generation: more events at a lower
	 * syncid (it left before writes it then missed) is still stale,
	 * copied from the source's bitmap (not `older`). */
	setup(2);
	in[0].label.events = 9;
	in[1].label.events = 4;
	in[1].label.syncid = 2;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);
	CHECK_EQ(out.comp[0].role, BM_ROLE_SYNCHRONIZING);
	CHECK(!out.comp[0].older);
	CHECK_EQ(out.events, 9);

	/* The source behind a label that is not full (rule 4): b was being
	 * copied and counts more events than a, the only full one: a is an
	 * older copy put back (or the newest full one is missing).  Refused,
	 * naming both and the way to force; nothing else decided. */
	setup(2);
	in[0].label.events = 4;
	in[1].label.events = 7;
	in[1].label.component_flags = BM_CF_SYNCHRONIZING | BM_CF_FORCE_SYNC;
	in[1].label.sync_offset = 8 * MIB;
	CHECK_EQ(decide(-1), BM_ASM_SOURCE_BEHIND);
	CHECK_EQ(out.ahead, 1);
	CHECK(strstr(out.error, "/d/a, the newest component holding the data "
	             "in full, is behind /d/b (being copied; 7 events to its "
	             "4)"));
	CHECK(strstr(out.error, "'blkmirror serve --force-source /d/a m0'"));
	/* ... not when b's label was written by a blkmirror that did not
	 * cap a copy's count (before 2026-12-04: a crash inside a mark's
	 * label writes could leave it one ahead): not resumed either */
	in[1].label.version = 3;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[1].sync_offset, 0);
	in[1].label.version = BM_LABEL_VERSION;
	/* ... by one event too (the labels of a copy never count past a
	 * full one on disk, meta.c) */
	in[0].label.events = 6;
	CHECK_EQ(decide(-1), BM_ASM_SOURCE_BEHIND);
	/* ... forced: a is the source, b copied again from 0 */
	CHECK_EQ(decide(0), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[1].sync_offset, 0);
	/* ... not when the copy's label is of an older generation than the
	 * source's (a start forced while b could not be read counted from
	 * fewer events, and raised the genid) */
	in[0].label.genid = 2;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	in[0].label.genid = 1;
	/* ... a deactivated one ahead: refused too */
	in[1].label.component_flags = BM_CF_INACTIVE;
	CHECK_EQ(decide(-1), BM_ASM_SOURCE_BEHIND);
	CHECK(strstr(out.error, "behind /d/b (deactivated; 7 events to its 6)"));
	/* ... the same count: resumed at its checkpoint, as before */
	in[1].label.component_flags = BM_CF_SYNCHRONIZING;
	in[1].label.events = 6;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 0);
	CHECK_EQ(out.comp[1].role, BM_ROLE_SYNCHRONIZING);
	CHECK_EQ(out.comp[1].sync_offset, 8 * MIB);
	/* ... a newer full one beside the older source: it is the source,
	 * nothing refused (the copy is at its count) */
	setup(3);
	in[0].label.events = 4;
	in[1].label.events = in[2].label.events = 7;
	in[2].label.component_flags = BM_CF_SYNCHRONIZING;
	CHECK_EQ(decide(-1), BM_ASM_OK);
	CHECK_EQ(out.source, 1);
	CHECK(out.comp[0].older);

	/* The same input, the same answer. */
	static struct bm_asm_out first;
	setup(3);
	in[0].label.genid = 2;
	says_missed(0, 2);
	decide(-1);
	first = out;
	decide(-1);
	CHECK(memcmp(&first, &out, sizeof(out)) == 0);
	return check_exit();
}
