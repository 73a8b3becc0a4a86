/*
 * The on-disk label: 4 KiB at the very end of every component.
 *
 * Component layout (sizes in bytes, S = component size rounded down to 4096):
 *
 *   0 ........................ data_size   the mirror's data, as a plain disk
 *   S - BM_META_SIZE ......... S - 8192    reserved for the write-intent bitmap
 *   S - 8192 ................. S - 4096    the lease: which server owns the
 *                                          component (lease.h; version 1 never
 *                                          wrote here, so old components read
 *                                          as "no lease")
 *   S - 4096 ................. S           this label
 *
 * so a lone surviving component can be read as an ordinary disk image.
 *
 * Encoding: explicit little-endian fields at fixed offsets (never a raw
 * struct), a crc32c over the first BM_LABEL_USED bytes stored at its end.
 *
 * Version history:
 *   1  (2026-11) first version: gmirror's fields plus seq, component size,
 *      sync offset and the bitmap's place.
 *   1  (2026-11, same version) the 4 KiB below the label hold the lease; a
 *      bitmap may no longer reach into it (no label ever had a bitmap).
 *   2  (2026-11) split-brain detection (assembly_decide.h), in bytes that
 *      version 1 kept zero: last_write (offset 256, u64: wall-clock seconds
 *      of the last label write made while the mirror was DIRTY), missed
 *      (264, u32: bit i = member i missed writes this component holds) and
 *      member_id[16] (272..400, u64 each: the component ids of the mirror's
 *      components as the writer knew them, 0 = empty or unknown).  A
 *      version 1 label reads with all three zero ("unknown": the genid and
 *      syncid rule alone decides); blkmirror writes version 2 from then on,
 *      which a blkmirror that reads only version 1 refuses by its version.
 *   3  (2026-12) older copies put back: events (offset 400, u64), the
 *      mirror's count of DIRTY and clean marks (the idle clean's and the
 *      stop's) and of starts, written into every label write of every
 *      component in service.  Of two components at the same
 *      genid and syncid, the one with fewer events is an older copy of
 *      itself (a snapshot, a lagging replica put back while the mirror was
 *      stopped): never the source, and copied in full.  A version 2 label
 *      reads events 0 ("unknown": not compared).
 *   4  (2026-12-04) the same fields; the writer never lets a label not in
 *      full (being copied, deactivated) count more events than a full
 *      label on disk (meta.c label_prepare), so assembly may take one that
 *      does as proof that the source is older (assembly_decide.c rule 4);
 *      a version 3 writer could leave a copy's label one ahead after a
 *      crash, and is not taken at its word.  bm_label_encode writes 4 only
 *      for a label whose version says 4 (the server's label_prepare and a
 *      new label set it); one read as 1..3 and rewritten offline stays 3.
 */
#ifndef BM_LABEL_H
#define BM_LABEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blkmirror.h"

#define BM_LABEL_SIZE 4096u
#define BM_LABEL_USED 512u              /* bytes covered by the crc */
#define BM_META_SIZE (1024u * 1024u)    /* label + bitmap room at the end */
#define BM_LEASE_SIZE 4096u           /* the lease block, just below the label */
#define BM_MIN_COMPONENT_SIZE (2u * BM_META_SIZE)
#define BM_IDPROBE_FROM_END BM_META_SIZE /* label borrows the 4 KiB at S - 1 MiB (first of the reserved area) for its same-disk check, then restores it */
#define BM_LABEL_MAGIC "BLKMIRROR-LABEL" /* 15 chars + NUL = 16 bytes */
#define BM_LABEL_VERSION 4u

/* Mirror flags (gmirror's). */
#define BM_MF_NOAUTOSYNC 0x1u   /* do not start a sync by itself */
#define BM_MF_NOFAILSYNC 0x2u   /* do not mark out of sync on a write error */
#define BM_MF_ALL (BM_MF_NOAUTOSYNC | BM_MF_NOFAILSYNC)

/* Component flags (gmirror's). */
#define BM_CF_DIRTY 0x1u          /* writes may be in flight: not clean */
#define BM_CF_SYNCHRONIZING 0x2u  /* being copied; valid below sync_offset */
#define BM_CF_FORCE_SYNC 0x4u     /* copy from offset 0 at next start */
#define BM_CF_INACTIVE 0x8u       /* administratively out of service */
#define BM_CF_ALL 0xfu
/* a label that does not say its component holds the data in full */
#define BM_CF_NOT_FULL (BM_CF_SYNCHRONIZING | BM_CF_FORCE_SYNC | BM_CF_INACTIVE)

struct bm_label {
	uint32_t version;
	char name[BM_NAME_MAX + 1];
	uint64_t mirror_id;
	uint64_t component_id;
	uint64_t genid;        /* bumped when a component fails */
	uint64_t syncid;       /* bumped on the first write while degraded */
	uint64_t seq;          /* bumped on every label write */
	uint32_t mirror_flags;
	uint32_t component_flags;
	uint32_t balance;
	uint32_t slice;
	uint32_t priority;
	uint32_t sector_size;
	uint64_t data_size;      /* the mirror's size when labeled */
	uint64_t component_size; /* this component's size when labeled */
	uint64_t sync_offset;    /* valid data below this while SYNCHRONIZING */
	uint64_t bitmap_offset;  /* reserved for the write-intent bitmap */
	uint64_t bitmap_size;
	uint32_t bitmap_chunk;
	uint32_t ncomponents;
	/* version 2 (0 when read from version 1: unknown) */
	uint64_t last_write;     /* wall-clock s of the last DIRTY label write */
	uint32_t missed;         /* bit i: member_id[i] missed writes held here */
	uint64_t member_id[BM_MAX_COMPONENTS]; /* the mirror's components */
	/* version 3 (0 when read from an older one: unknown) */
	uint64_t events;         /* the mirror's DIRTY and clean marks so far */
};

/* Where a component of this size keeps its label, and how much data it holds. */
uint64_t bm_label_offset(uint64_t component_size);
uint64_t bm_data_area(uint64_t component_size);
/* Where it keeps its lease (BM_LEASE_SIZE bytes, just below the label). */
uint64_t bm_lease_offset(uint64_t component_size);


/* Encodes into a BM_LABEL_SIZE buffer (zero-filled past BM_LABEL_USED). */
void bm_label_encode(const struct bm_label *l, uint8_t out[BM_LABEL_SIZE]);

/*
 * Decodes and validates untrusted bytes.  Returns 0, -ENOENT when there is no
 * label (no magic), or -EINVAL/-EPROTO with bm_last_error() saying what is
 * wrong.  len may be shorter than BM_LABEL_SIZE (then it is malformed unless
 * it covers BM_LABEL_USED).
 */
int bm_label_decode(const uint8_t *buf, size_t len, struct bm_label *out);

/* Appends every field as "  Name: value" lines (gmirror list style). */
int bm_label_format(const struct bm_label *l, const char *indent, char *buf,
                    size_t len);

/* A label's wall-clock seconds as "2026-11-30 17:50:12 UTC" ("unknown"
 * for 0, version 1's value). */
void bm_label_time_str(uint64_t t, char *buf, size_t len);

/* Flag words as text, e.g. "DIRTY, SYNCHRONIZING" or "NONE". */
void bm_component_flags_str(uint32_t f, char *buf, size_t len);
void bm_mirror_flags_str(uint32_t f, char *buf, size_t len);

/* Was l written by a blkmirror that never lets a label not in full count
 * past the full labels on disk (version 4)? */
static inline bool bm_label_events_capped(const struct bm_label *l)
{
	return l->version >= 4;
}

/* Does l say its component holds the mirror's data in full? */
static inline bool bm_label_full(const struct bm_label *l)
{
	return !(l->component_flags & BM_CF_NOT_FULL);
}

#endif
