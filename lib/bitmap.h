/*
 * The write-intent bitmap: one bit per region of the mirror's data, kept in
 * each component's reserved metadata area.  A set bit says "a write to this
 * region may have been issued since the bits were last cleared"; the rules
 * that make it true are at the top of bitmap.c.
 *
 * ON-DISK FORMAT (version 1).  All integers little-endian, at fixed offsets.
 *
 * Place.  The label's bitmap_offset is the byte offset of the header block
 * from the start of the component: S - BM_META_SIZE + 4096 (S = component
 * size rounded down to 4096; the reserved area's first 4 KiB stay free for
 * the same-disk probe of label and insert, which writes there and puts
 * back what it found); bitmap_size is the bytes used: 4096 * (1 + nblocks);
 * bitmap_chunk is the region size in bytes.  bitmap_size == 0: no bitmap
 * (labels written before the bitmap existed, or `label --no-bitmap`): the
 * mirror copies whole components as before.  The area ends before the lease
 * (S - 8192), so at most BM_BITMAP_MAX_BLOCKS bit blocks fit.
 *
 * Header block (4096 bytes at bitmap_offset):
 *     0  16  magic "BLKMIRROR-BITMAP" (no NUL)
 *    16   4  version (1)
 *    20   4  block size (4096)
 *    24   8  mirror_id (the label's)
 *    32   8  component_id (the label's: this component's bitmap)
 *    40   8  region_size, bytes: a power of two, BM_BITMAP_REGION_MIN..MAX
 *    48   8  nregions = ceil(data_size / region_size)
 *    56   4  nblocks = ceil(nregions / BM_BITMAP_BITS_PER_BLOCK)
 *    60   4  nmembers (0..16)
 *    64   8  seq: bumped on every header write
 *    72   8  clear_seq: bumped each time bits are cleared (every component
 *            in service gets the same value at that clear)
 *    80   8  sets: bit-setting writes of the mirror, as of this header's
 *            last write (a counter, informative only)
 *    88 128  members[16]: the component_ids that were ACTIVE (in sync) at
 *            the last clear, 8 bytes each, unused ones 0
 *   216 ...  zeros up to 4092
 *  4092   4  crc32c of bytes 0..4091
 *
 * Bit block i (4096 bytes at bitmap_offset + 4096 * (1 + i)), 0 <= i < nblocks:
 *     0   4  magic 0x4b4c424d ("MBLK" as bytes 'M','B','L','K')
 *     4   4  i (the block's index)
 *     8   4  reserved, 0
 *    12   4  crc32c of bytes 0..11 then 16..4095 (crc field skipped)
 *    16 4080 bits: region r = i * 32640 + b is bit (b % 8) (LSB first) of
 *            byte 16 + b / 8; bits past nregions are 0
 *
 * Write order (what a crash checker can rely on): the bit blocks holding a
 * region's bit are written and flushed on every component in service
 * before any data write to that region is issued to any component (a
 * bit-setting write rewrites only the bit blocks, never the header).  The
 * header and every block are rewritten together at labeling, at assembly
 * (the union of the bits), when a component's copy starts (its own
 * bitmap), and when every bit is cleared (clear_seq, members): such a
 * rewrite never clears a bit that a write in flight relies on (clears
 * happen only with no write in flight).  The settle pass clears the bits
 * of regions no write touched for a while by rewriting only their blocks
 * and the header (clear_seq bumped; every block when the members
 * changed), after every component flushed, never a bit of a region with a
 * write in flight.  A block or
 * header with a bad
 * crc or magic makes the whole
 * bitmap of that component unusable (treated as all set if another
 * component's bitmap cannot stand in: a full copy).
 */
#ifndef BM_BITMAP_H
#define BM_BITMAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "label.h"

#define BM_BITMAP_MAGIC "BLKMIRROR-BITMAP"   /* 16 bytes, no NUL stored */
#define BM_BITMAP_VERSION 1u
#define BM_BITMAP_BLOCK 4096u
#define BM_BITMAP_BLOCK_MAGIC 0x4b4c424du
#define BM_BITMAP_BITS_OFF 16u
#define BM_BITMAP_BITS_BYTES (BM_BITMAP_BLOCK - BM_BITMAP_BITS_OFF) /* 4080 */
#define BM_BITMAP_BITS_PER_BLOCK (BM_BITMAP_BITS_BYTES * 8u)        /* 32640 */
#define BM_BITMAP_PROBE_GAP 4096u  /* the id probe's block (label.h) */
#define BM_BITMAP_AREA \
	(BM_META_SIZE - BM_BITMAP_PROBE_GAP - BM_LEASE_SIZE - BM_LABEL_SIZE)
#define BM_BITMAP_MAX_BLOCKS (BM_BITMAP_AREA / BM_BITMAP_BLOCK - 1u) /* 252 */
#define BM_BITMAP_MAX_REGIONS \
	((uint64_t)BM_BITMAP_MAX_BLOCKS * BM_BITMAP_BITS_PER_BLOCK)
#define BM_BITMAP_MAX_MEMBERS 16u
#define BM_BITMAP_REGION_MIN (64u * 1024u)
#define BM_BITMAP_REGION_MAX (1u << 31)
#define BM_BITMAP_REGION_DEFAULT (64u * 1024u * 1024u)

struct bm_bitmap_header {
	uint32_t version;
	uint64_t mirror_id;
	uint64_t component_id;
	uint64_t region_size;
	uint64_t nregions;
	uint32_t nblocks;
	uint32_t nmembers;
	uint64_t seq;
	uint64_t clear_seq;
	uint64_t sets;
	uint64_t members[BM_BITMAP_MAX_MEMBERS];
};

/* The default region size for a mirror of data_size bytes: 64 MiB, doubled
 * until the bitmap fits the reserved area (64 MiB regions cover 502 TiB). */
uint64_t bm_bitmap_default_region(uint64_t data_size);
/* nregions and nblocks for data_size and region; -EINVAL (with
 * bm_last_error) when region is not a power of two in range or the bitmap
 * would not fit. */
int bm_bitmap_geometry(uint64_t data_size, uint64_t region, uint64_t *nregions,
                       uint32_t *nblocks);
/* The regions [*first, *last] that [off, off + len) touches (len > 0). */
static inline void bm_bitmap_span(uint64_t region, uint64_t off, uint64_t len,
                                  uint64_t *first, uint64_t *last)
{
	*first = off / region;
	*last = (off + len - 1) / region;
}
/* bitmap_offset of a component of this size. */
static inline uint64_t bm_bitmap_offset(uint64_t component_size)
{
	return bm_label_offset(component_size) - (BM_META_SIZE - BM_LABEL_SIZE) +
	       BM_BITMAP_PROBE_GAP;
}
/* bitmap_size for nblocks bit blocks. */
static inline uint64_t bm_bitmap_bytes(uint32_t nblocks)
{
	return (uint64_t)BM_BITMAP_BLOCK * (1u + nblocks);
}

void bm_bitmap_header_encode(const struct bm_bitmap_header *h,
                             uint8_t out[BM_BITMAP_BLOCK]);
/* Decodes untrusted bytes: 0, -ENOENT (no magic), -EINVAL/-EPROTO (with
 * bm_last_error). */
int bm_bitmap_header_decode(const uint8_t *buf, size_t len,
                            struct bm_bitmap_header *h);
/* bits: BM_BITMAP_BITS_BYTES bytes of block `index`. */
void bm_bitmap_block_encode(uint32_t index, const uint8_t *bits,
                            uint8_t out[BM_BITMAP_BLOCK]);
int bm_bitmap_block_decode(const uint8_t *buf, size_t len, uint32_t index,
                           uint8_t *bits);
/*
 * The whole on-disk bitmap of a component (len bytes read at the label's
 * bitmap_offset) checked against its label: header, every block, and that
 * geometry matches the label.  bits: room for ceil(nregions / 8) bytes
 * (at most BM_BITMAP_MAX_REGIONS / 8) receiving the bits; NULL to only
 * check.  The loader the fuzz target drives.
 */
int bm_bitmap_decode(const uint8_t *area, size_t len, const struct bm_label *l,
                     struct bm_bitmap_header *h, uint8_t *bits);

struct bm_backend;
/* The clear_seq of the bitmap header on be (the label's place), for the
 * assembly's history (assembly_decide.c); 0 when it has no bitmap or the
 * header cannot be read or is another component's. */
uint64_t bm_bitmap_clear_seq_of(struct bm_backend *be, const struct bm_label *l);

/* The engine's side (bitmap.c); struct bm_mirror has a pointer to it. */
struct bm_mirror;
struct bm_component;
struct bm_bitmap;

/* Labeling: writes a fresh, all-clear bitmap (members: member_ids) to a
 * component whose label l has a bitmap; 0 or -errno. */
struct bm_backend;
int bm_bitmap_write_new(struct bm_backend *be, const struct bm_label *l,
                        const uint64_t *member_ids, uint32_t nmembers);
/* Reads and checks a component's bitmap (bits: ceil(nregions/8) bytes or
 * more, or NULL). */
int bm_bitmap_read(struct bm_backend *be, const struct bm_label *l,
                   struct bm_bitmap_header *h, uint8_t *bits);
/* dump/list of a stopped mirror: one "BitmapState: ..." line. */
int bm_bitmap_dump_text(struct bm_backend *be, const struct bm_label *l,
                        const char *indent, char *buf, size_t len);

/* Assembly, once the states are decided: loads every component's bitmap
 * into m->bitmap (the union of the bits; the members of the last clear).
 * *usable: every bitmap read was sound (else all bits are set and nobody
 * is a member).  No bitmap (old labels): m->bitmap stays NULL. */
int bm_bitmap_open(struct bm_mirror *m, bool *usable);
void bm_bitmap_free(struct bm_mirror *m);
/* The data path, before a write to [off, off+len) is issued (after DIRTY
 * is on disk): 0 once every bit is durable; <0 (bm_last_error) if it
 * cannot be recorded.  Lock-free when the bits are already durable.  On 0,
 * *slot holds the write's place in the settle pass's count (or -1): hand
 * it to bm_bitmap_write_end once the write has ended on every component
 * and any component that failed it has been dropped. */
int bm_bitmap_write_begin(struct bm_mirror *m, uint64_t off, uint64_t len,
                          int *slot);
void bm_bitmap_write_end(struct bm_mirror *m, int slot);
/* The event thread, every tick: while every component present is ACTIVE,
 * clears the bits of the regions no write has begun on for period_ms or
 * more (the mirror may be written elsewhere all the while), after a flush
 * of every component.  Two calls at least: one starts a new epoch, a later
 * one (once the writes of the old epoch ended) clears. */
#define BM_BITMAP_SETTLE_MS 5000
void bm_bitmap_settle(struct bm_mirror *m, long period_ms);
/* The same at once (waits for the writes in flight to end): tests and the
 * crash-point oracle, which calls it between requests at chosen points.
 * Returns the regions cleared. */
uint64_t bm_bitmap_settle_now(struct bm_mirror *m);
/* Unit tests only (NULL otherwise): called between the choice of a region
 * to clear and the clear, to widen the window a writer may enter. */
extern void (*_Atomic bm_bitmap_settle_test_pause)(uint64_t region);
/* meta_lock held: clears every bit (idle clean, nothing in flight) when
 * every component present is ACTIVE; records them as the members. */
void bm_bitmap_clear_locked(struct bm_mirror *m);
/* meta_lock held: writes the whole bitmap to c (a component entering
 * service), or to every component in service. */
int bm_bitmap_write_component_locked(struct bm_mirror *m,
                                     struct bm_component *c);
int bm_bitmap_write_all_locked(struct bm_mirror *m);
/* Is c's own header behind the last clear (read at open: a snapshot from
 * before it, or a clear whose header write it missed)?  Then it lacks
 * writes whose bits are gone and is copied in full (meta_lock held, or
 * before the mirror serves). */
bool bm_bitmap_behind(struct bm_mirror *m, struct bm_component *c);
/* c comes back on be (recover.c bm_recover_judge): 0 when its header is
 * the one this server last wrote there (or nothing is known), 1 with
 * bm_last_error() when older or unreadable (copied in full), or -errno
 * (read failed: still away). */
int bm_bitmap_judge(struct bm_mirror *m, struct bm_component *c,
                    struct bm_backend *be);
/* May c catch up over the set regions only (see bitmap.c's rules)? */
bool bm_bitmap_is_member(struct bm_mirror *m, struct bm_component *c);
/* Region size (0: no bitmap); is region r set (true without a bitmap)? */
uint64_t bm_bitmap_region_size(struct bm_mirror *m);
bool bm_bitmap_region_set(struct bm_mirror *m, uint64_t r);
uint64_t bm_bitmap_dirty_count(struct bm_mirror *m);
/* Is region r's bit in the image written to disk (set or being set)?  A
 * pass's clear is never seen half done here (tests). */
bool bm_bitmap_region_on_disk(struct bm_mirror *m, uint64_t r);
/* status: one "Bitmap: ..." line. */
int bm_bitmap_status_text(struct bm_mirror *m, char *buf, size_t len);

#endif
