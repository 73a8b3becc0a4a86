/*
 * The assembly decision as a pure function: from the decoded labels of a
 * mirror's components (and what the kernel says about their identity), which
 * component is the source, what every other one becomes, or why the mirror
 * must not be assembled at all.  No I/O, no globals, no clock: the same
 * input always gives the same output (assembly_decide.c has the rules;
 * tests/unit/test_assembly_decide.c and tests/fuzz/fuzz_assembly.c hold it
 * to them).
 */
#ifndef BM_ASSEMBLY_DECIDE_H
#define BM_ASSEMBLY_DECIDE_H
#include <stdbool.h>
#include <stdint.h>

#include "label.h"

enum bm_asm_role {
	BM_ROLE_ABSENT,        /* left out: why says why */
	BM_ROLE_ACTIVE,        /* in sync (the source is one) */
	BM_ROLE_SYNCHRONIZING, /* copied from the source, from sync_offset */
	BM_ROLE_INACTIVE,      /* deactivated (its label says so) */
};

enum bm_asm_result {
	BM_ASM_OK,
	BM_ASM_NO_LABEL,     /* no component has a label of this mirror */
	BM_ASM_NO_SOURCE,    /* none present holds the newest data in full */
	BM_ASM_SPLIT_BRAIN,  /* two components took writes without each other */
	BM_ASM_BAD_FORCE,    /* the forced source cannot be one */
	BM_ASM_SOURCE_BEHIND, /* a label not in full counts more events than
	                         the newest full one: that one is older */
};

struct bm_asm_input {
	const char *path;     /* for the messages */
	bool present;         /* opened and its label decoded */
	struct bm_label label;
	uint64_t data_area;   /* bm_data_area(the component's size) */
	int same_disk_as;     /* the kernel says: the same storage as this
	                         earlier entry (inode, rdev, loop backing
	                         file); -1 when not known to be.  Also set
	                         on an entry left unopened for it (not
	                         present): it then gets no member id */
	uint64_t clear_seq;   /* its bitmap header's (bitmap.c: bumped by
	                         every clear on every component in service);
	                         0: no bitmap, or not readable */
};

struct bm_asm_comp {
	int role;             /* enum bm_asm_role */
	uint64_t sync_offset; /* BM_ROLE_SYNCHRONIZING: resume here */
	bool duplicate;       /* ABSENT as another view of a component used */
	uint64_t known_id;    /* its component id: its label's, or (absent)
	                         the one the source's member list gives it */
	bool older;           /* SYNCHRONIZING: an older copy of itself (the
	                         same genid and syncid, fewer events: a
	                         snapshot put back), so copied in full */
	char why[256];        /* ABSENT, INACTIVE, older: for status */
};

struct bm_asm_out {
	int result;           /* enum bm_asm_result */
	int source;           /* index, when BM_ASM_OK */
	int split[2];         /* BM_ASM_SPLIT_BRAIN: the two that diverged */
	int ahead;            /* BM_ASM_SOURCE_BEHIND: the label ahead (the
	                         source would have been out->source) */
	bool was_dirty;       /* the source's generation was not stopped
	                         cleanly: the others are copied from it */
	bool forced;          /* the source was chosen by force_source */
	uint64_t mirror_id, data_size, genid, syncid;
	uint64_t events;      /* the highest of the labels' (label.h) */
	uint32_t missed;      /* entries (bit i = entry i) that missed writes
	                         the source holds */
	struct bm_asm_comp comp[BM_MAX_COMPONENTS];
	char error[1024];     /* one line, when result != BM_ASM_OK */
};

/*
 * Decides the assembly of mirror `name` from n (<= BM_MAX_COMPONENTS)
 * entries.  force_source: an entry index to take as the source whatever
 * the labels say (serve --force-source), or -1.  Returns out->result.
 */
int bm_assembly_decide(const char *name, const struct bm_asm_input *in,
                       int n, int force_source, struct bm_asm_out *out);

/* Does label a record that the component whose id is `id` missed writes
 * that a holds? */
bool bm_label_says_missed(const struct bm_label *a, uint64_t id);

#endif
