/*
 * The write-intent bitmap (format: bitmap.h).
 *
 * THE RULES
 *
 * Setting.  Before the first write to a region is issued to any component,
 * the region's bit is written and flushed on every component in service
 * (ACTIVE and SYNCHRONIZING).  In memory, `durable` holds the bits known to
 * be on disk (atomic words): a write whose regions are all durable costs
 * two atomic loads.  Otherwise it adds its regions to `want` and either
 * waits for the writer of the bitmap (one at a time, `writing`) or becomes
 * it: under meta_lock (component states cannot change) it writes every bit
 * block that has wanted-but-not-durable bits to every component in
 * service, flushes each, then publishes those bits as durable.  Writers
 * that piled up meanwhile share the next such write (group commit).  A
 * component that cannot write its bitmap is failed out (as for a label);
 * if no ACTIVE one holds the bits the write fails with EIO.
 *
 * Clearing.  Bits are cleared only on the idle clean (meta.c's
 * bm_meta_try_clean: no write in flight, every component flushed, clean
 * labels written, new writers held at meta_lock by bm_meta_mark_dirty; or,
 * the mirror already clean, once a copy that ended made every component
 * ACTIVE: its target was flushed before it became ACTIVE) and at a clean
 * stop, and only when every component present is ACTIVE.  While the mirror is
 * degraded (a component DISCONNECTED, INACTIVE, FAILED, ABSENT, or
 * SYNCHRONIZING) bits are never cleared: they record what the missing
 * component misses.  A clear bumps clear_seq and records the members: the
 * component_ids ACTIVE at that moment (all in sync).
 *
 * Settling (bm_bitmap_settle, the event thread every tick).  A mirror that
 * is never idle for the idle clean would keep every bit it ever set, and a
 * crash would copy all of it again.  So bits are also cleared region by
 * region, with writes going on elsewhere, the way md's bitmap daemon does.
 * Every write is counted, from before its bit check until it has ended on
 * every component (failures decided: a component that failed it is out
 * of service first), in an epoch: `inflight` by the epoch's parity, and
 * `touched[r]` = the epoch of a write that began on region r (a slow
 * writer of an older epoch may store its older value over a newer one:
 * harmless, since a pass looks only once every write of the epoch it
 * judges, and of all before, has ended).  A pass (every
 * BM_BITMAP_SETTLE_MS) bumps the epoch and waits (ticks, never blocking)
 * until no write of the old epoch e is in flight.  Then, every component
 * present ACTIVE, the regions set and not touched in epoch e or since (no
 * write for a whole period, none in flight) are flushed on every
 * component (outside meta_lock: writes that need a bit do not wait for
 * it); under meta_lock, the same connections still ACTIVE, their bits are
 * cleared in memory (then touched is looked at again: a write that began
 * meanwhile may have seen the bit, which is put back), and only the
 * blocks that changed are rewritten, with each component's header
 * (clear_seq bumped; the members too when they are not the components
 * present: then every block is rewritten).  A
 * component that does not take them is dropped, as for a bit it cannot
 * set; any bitmap write that failed after it was issued marks its
 * component (write_unsure), whose next bitmap write first waits for the
 * old one to land (landed_before).  A region cleared here was identical
 * and on stable storage everywhere; a write after the clear finds its bit
 * gone and sets it again before issuing, its block write queued behind
 * the pass's (both under meta_lock).  The members stay meaningful: a
 * member was in sync at the last clear, and each region either kept its
 * bit or was in sync on it when cleared.
 *
 * Catching up.  A component may be copied over the set regions only (not
 * in full) iff the mirror has a bitmap, its component_id is among the
 * members of the last clear (the header with the highest clear_seq), and
 * its own header holds that clear_seq.  It was then in sync; every write
 * since that clear was issued only after its region's bit was durable, and
 * no clear happened since (it would have needed this component ACTIVE, and
 * a clear without it makes it no member).  Its own writes that failed are
 * in set regions too.  Otherwise — a new component (insert), `rebuild`
 * (sync_full), a component whose label says FORCE_SYNC at assembly
 * (rebuild or activate interrupted by a restart), a mirror without bitmap
 * — the copy is in full.
 *
 * Older copies.  Every clear bumps clear_seq in the header of every
 * component in service, so a copy of a component taken before a clear (a
 * snapshot put back, a replica that lagged) holds a lower clear_seq: it
 * lacks writes whose bits are gone.  At assembly the headers' clear_seq
 * count in the history after the labels' (assembly_decide.c: such a copy
 * is never the source, even after a crash left every label DIRTY at the
 * same events), and a component being copied whose header is behind the
 * newest is copied in full (bm_bitmap_behind; so is an INACTIVE one at
 * activate, whose header is read at open); one that comes back while the
 * mirror runs is judged against the clear_seq this server last wrote
 * there (bm_bitmap_judge, from recover.c's judge) — the case its label
 * cannot show, a copy taken while the mirror stayed DIRTY, so that no
 * label was written between the copy and its departure.
 * A crash in the middle of a clear's header writes leaves one header
 * behind: that component is copied in full too (it cannot be told from
 * an older copy).  A copy put back while the mirror was stopped cleanly
 * is caught first by its label (label.h: events).
 *
 * After an unclean stop (DIRTY labels), the components that are not the
 * source are copied over the union of every component's set bits (the
 * bits are on every component that was in service when the write began).
 * The bits stay set until all components are ACTIVE again, so a restart
 * during such a copy redoes the same regions.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bitmap.h"
#include "crc32c.h"
#include "error.h"
#include "le.h"
#include "mirror.h"
#include "sendbatch.h"

enum {
	H_MAGIC = 0, H_VERSION = 16, H_BLOCK = 20, H_MIRROR_ID = 24,
	H_COMPONENT_ID = 32, H_REGION = 40, H_NREGIONS = 48, H_NBLOCKS = 56,
	H_NMEMBERS = 60, H_SEQ = 64, H_CLEAR_SEQ = 72, H_SETS = 80,
	H_MEMBERS = 88, H_END = 88 + 8 * BM_BITMAP_MAX_MEMBERS,
	H_CRC = BM_BITMAP_BLOCK - 4,
	B_MAGIC = 0, B_INDEX = 4, B_RESERVED = 8, B_CRC = 12,
};
_Static_assert(H_END <= H_CRC, "bitmap header fits");

/* ---- encoding -------------------------------------------------------------- */

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

uint64_t bm_bitmap_default_region(uint64_t data_size)
{
	uint64_t r = BM_BITMAP_REGION_DEFAULT;

	while (r < BM_BITMAP_REGION_MAX &&
	       (data_size + r - 1) / r > BM_BITMAP_MAX_REGIONS)
		r <<= 1;
	return r;
}

int bm_bitmap_geometry(uint64_t data_size, uint64_t region, uint64_t *nregions,
                       uint32_t *nblocks)
{
	if (!pow2(region) || region < BM_BITMAP_REGION_MIN ||
	    region > BM_BITMAP_REGION_MAX)
		return bm_error(EINVAL, "bitmap region size %" PRIu64 " is not a "
		                "power of two from %u to %u", region,
		                BM_BITMAP_REGION_MIN, BM_BITMAP_REGION_MAX);
	uint64_t n = (data_size + region - 1) / region;
	if (n == 0 || n > BM_BITMAP_MAX_REGIONS)
		return bm_error(EINVAL, "bitmap region size %" PRIu64 " gives %"
		                PRIu64 " regions; the bitmap holds 1 to %" PRIu64
		                ": use larger regions", region, n,
		                (uint64_t)BM_BITMAP_MAX_REGIONS);
	*nregions = n;
	*nblocks = (uint32_t)((n + BM_BITMAP_BITS_PER_BLOCK - 1) /
	                      BM_BITMAP_BITS_PER_BLOCK);
	return 0;
}

void bm_bitmap_header_encode(const struct bm_bitmap_header *h,
                             uint8_t out[BM_BITMAP_BLOCK])
{
	memset(out, 0, BM_BITMAP_BLOCK);
	memcpy(out + H_MAGIC, BM_BITMAP_MAGIC, 16);
	bm_put32(out, H_VERSION, BM_BITMAP_VERSION);
	bm_put32(out, H_BLOCK, BM_BITMAP_BLOCK);
	bm_put64(out, H_MIRROR_ID, h->mirror_id);
	bm_put64(out, H_COMPONENT_ID, h->component_id);
	bm_put64(out, H_REGION, h->region_size);
	bm_put64(out, H_NREGIONS, h->nregions);
	bm_put32(out, H_NBLOCKS, h->nblocks);
	bm_put32(out, H_NMEMBERS, h->nmembers);
	bm_put64(out, H_SEQ, h->seq);
	bm_put64(out, H_CLEAR_SEQ, h->clear_seq);
	bm_put64(out, H_SETS, h->sets);
	for (uint32_t i = 0; i < h->nmembers && i < BM_BITMAP_MAX_MEMBERS; i++)
		bm_put64(out, H_MEMBERS + 8 * i, h->members[i]);
	bm_put32(out, H_CRC, bm_crc32c(0, out, H_CRC));
}

int bm_bitmap_header_decode(const uint8_t *buf, size_t len,
                            struct bm_bitmap_header *h)
{
	if (len < BM_BITMAP_BLOCK)
		return bm_error(EINVAL, "bitmap header is truncated (%zu bytes)",
		                len);
	if (memcmp(buf + H_MAGIC, BM_BITMAP_MAGIC, 16) != 0)
		return bm_error(ENOENT, "no bitmap header");
	memset(h, 0, sizeof(*h));
	h->version = bm_get32(buf, H_VERSION);
	if (h->version != BM_BITMAP_VERSION)
		return bm_error(EPROTO, "bitmap version %u is not one this "
		                "blkmirror reads (1)", h->version);
	uint32_t crc = bm_crc32c(0, buf, H_CRC);
	if (crc != bm_get32(buf, H_CRC))
		return bm_error(EINVAL, "bitmap header checksum mismatch: the "
		                "bitmap is damaged");
	if (bm_get32(buf, H_BLOCK) != BM_BITMAP_BLOCK)
		return bm_error(EINVAL, "bitmap block size %u is wrong",
		                bm_get32(buf, H_BLOCK));
	h->mirror_id = bm_get64(buf, H_MIRROR_ID);
	h->component_id = bm_get64(buf, H_COMPONENT_ID);
	h->region_size = bm_get64(buf, H_REGION);
	h->nregions = bm_get64(buf, H_NREGIONS);
	h->nblocks = bm_get32(buf, H_NBLOCKS);
	h->nmembers = bm_get32(buf, H_NMEMBERS);
	h->seq = bm_get64(buf, H_SEQ);
	h->clear_seq = bm_get64(buf, H_CLEAR_SEQ);
	h->sets = bm_get64(buf, H_SETS);
	if (!pow2(h->region_size) || h->region_size < BM_BITMAP_REGION_MIN ||
	    h->region_size > BM_BITMAP_REGION_MAX)
		return bm_error(EINVAL, "bitmap region size %" PRIu64 " is out of "
		                "range", h->region_size);
	if (h->nregions == 0 || h->nregions > BM_BITMAP_MAX_REGIONS ||
	    h->nblocks != (h->nregions + BM_BITMAP_BITS_PER_BLOCK - 1) /
	                          BM_BITMAP_BITS_PER_BLOCK)
		return bm_error(EINVAL, "bitmap geometry is inconsistent (%" PRIu64
		                " regions in %u blocks)", h->nregions, h->nblocks);
	if (h->nmembers > BM_BITMAP_MAX_MEMBERS)
		return bm_error(EINVAL, "bitmap member count %u is out of range",
		                h->nmembers);
	for (uint32_t i = 0; i < BM_BITMAP_MAX_MEMBERS; i++) {
		uint64_t id = bm_get64(buf, H_MEMBERS + 8 * i);
		if ((i < h->nmembers) != (id != 0))
			return bm_error(EINVAL, "bitmap member list is malformed");
		h->members[i] = id;
	}
	for (size_t i = H_END; i < H_CRC; i++)
		if (buf[i])
			return bm_error(EINVAL, "bitmap header reserved bytes are "
			                "not zero");
	return 0;
}

static uint32_t block_crc(const uint8_t *b)
{
	return bm_crc32c(bm_crc32c(0, b, B_CRC), b + BM_BITMAP_BITS_OFF,
	                 BM_BITMAP_BITS_BYTES);
}

void bm_bitmap_block_encode(uint32_t index, const uint8_t *bits,
                            uint8_t out[BM_BITMAP_BLOCK])
{
	bm_put32(out, B_MAGIC, BM_BITMAP_BLOCK_MAGIC);
	bm_put32(out, B_INDEX, index);
	bm_put32(out, B_RESERVED, 0);
	memcpy(out + BM_BITMAP_BITS_OFF, bits, BM_BITMAP_BITS_BYTES);
	bm_put32(out, B_CRC, block_crc(out));
}

int bm_bitmap_block_decode(const uint8_t *buf, size_t len, uint32_t index,
                           uint8_t *bits)
{
	if (len < BM_BITMAP_BLOCK)
		return bm_error(EINVAL, "bitmap block %u is truncated", index);
	if (bm_get32(buf, B_MAGIC) != BM_BITMAP_BLOCK_MAGIC ||
	    bm_get32(buf, B_INDEX) != index || bm_get32(buf, B_RESERVED))
		return bm_error(EINVAL, "bitmap block %u has a wrong magic or "
		                "index", index);
	if (bm_get32(buf, B_CRC) != block_crc(buf))
		return bm_error(EINVAL, "bitmap block %u checksum mismatch", index);
	if (bits)
		memcpy(bits, buf + BM_BITMAP_BITS_OFF, BM_BITMAP_BITS_BYTES);
	return 0;
}

int bm_bitmap_decode(const uint8_t *area, size_t len, const struct bm_label *l,
                     struct bm_bitmap_header *h, uint8_t *bits)
{
	uint64_t nregions;
	uint32_t nblocks;
	int err;

	if (l->bitmap_size == 0)
		return bm_error(ENOENT, "the label has no bitmap");
	err = bm_bitmap_geometry(l->data_size, l->bitmap_chunk, &nregions,
	                         &nblocks);
	if (err < 0)
		return err;
	if (l->bitmap_size != bm_bitmap_bytes(nblocks))
		return bm_error(EINVAL, "the label's bitmap size %" PRIu64 " does "
		                "not match its geometry", l->bitmap_size);
	if (len < l->bitmap_size)
		return bm_error(EINVAL, "bitmap area is truncated");
	err = bm_bitmap_header_decode(area, len, h);
	if (err < 0)
		return err;
	if (h->mirror_id != l->mirror_id || h->component_id != l->component_id ||
	    h->region_size != l->bitmap_chunk || h->nregions != nregions)
		return bm_error(EINVAL, "the bitmap belongs to another label "
		                "(ids or geometry differ)");
	for (uint32_t i = 0; i < nblocks; i++) {
		uint8_t *dst = bits ? bits + (size_t)i * BM_BITMAP_BITS_BYTES : NULL;
		const uint8_t *b = area + (size_t)(i + 1) * BM_BITMAP_BLOCK;
		err = bm_bitmap_block_decode(b, BM_BITMAP_BLOCK, i, NULL);
		if (err < 0)
			return err;
		/* bits past nregions must be 0 */
		uint64_t first = (uint64_t)i * BM_BITMAP_BITS_PER_BLOCK;
		for (uint64_t r = nregions; r < first + BM_BITMAP_BITS_PER_BLOCK;
		     r++) {
			if (r < first)
				continue;
			uint64_t k = r - first;
			if (b[BM_BITMAP_BITS_OFF + k / 8] & (1u << (k % 8)))
				return bm_error(EINVAL, "bitmap has bits past its "
				                "last region");
		}
		if (dst) {
			/* bits is ceil(nregions/8) long: copy what fits */
			uint64_t bytes = (nregions + 7) / 8 -
			                 (uint64_t)i * BM_BITMAP_BITS_BYTES;
			if (bytes > BM_BITMAP_BITS_BYTES)
				bytes = BM_BITMAP_BITS_BYTES;
			memcpy(dst, b + BM_BITMAP_BITS_OFF, bytes);
		}
	}
	return 0;
}

/* ---- on-disk I/O ----------------------------------------------------------- */

static int area_write(struct bm_backend *be, const struct bm_label *l,
                      const void *buf, size_t len, uint64_t at, long tmo,
                      const struct bm_patience *p)
{
	void *b;
	int err;

	if (posix_memalign(&b, 4096, len))
		return -ENOMEM;
	memcpy(b, buf, len);
	err = bm_backend_io_wait_patient(be, BM_BOP_WRITE, b, (uint32_t)len,
	                                 l->bitmap_offset + at, 0, tmo, p);
	free(b);
	return err;
}

/* Encodes header + every block of bits (bytes laid out as on disk). */
static uint8_t *encode_all(const struct bm_bitmap_header *h,
                           const uint8_t *bits)
{
	size_t total = (size_t)bm_bitmap_bytes(h->nblocks);
	uint8_t *out = malloc(total);

	if (!out)
		return NULL;
	bm_bitmap_header_encode(h, out);
	for (uint32_t i = 0; i < h->nblocks; i++)
		bm_bitmap_block_encode(i, bits + (size_t)i * BM_BITMAP_BITS_BYTES,
		                       out + (size_t)(i + 1) * BM_BITMAP_BLOCK);
	return out;
}

int bm_bitmap_write_new(struct bm_backend *be, const struct bm_label *l,
                        const uint64_t *member_ids, uint32_t nmembers)
{
	struct bm_bitmap_header h = {0};
	int err;

	if (l->bitmap_size == 0)
		return 0;
	err = bm_bitmap_geometry(l->data_size, l->bitmap_chunk, &h.nregions,
	                         &h.nblocks);
	if (err < 0)
		return err;
	h.mirror_id = l->mirror_id;
	h.component_id = l->component_id;
	h.region_size = l->bitmap_chunk;
	h.seq = 1;
	h.clear_seq = 1;
	h.nmembers = nmembers > BM_BITMAP_MAX_MEMBERS ? BM_BITMAP_MAX_MEMBERS
	                                              : nmembers;
	memcpy(h.members, member_ids, h.nmembers * sizeof(uint64_t));
	uint8_t *zero = calloc(h.nblocks, BM_BITMAP_BITS_BYTES);
	uint8_t *all = zero ? encode_all(&h, zero) : NULL;
	free(zero);
	if (!all)
		return -ENOMEM;
	err = area_write(be, l, all, (size_t)bm_bitmap_bytes(h.nblocks), 0,
	                 BM_IO_TIMEOUT_MS_DEFAULT, NULL);
	if (err == 0)
		err = bm_backend_io_wait_timeout(be, BM_BOP_FLUSH, NULL, 0, 0, 0,
		                                 BM_IO_TIMEOUT_MS_DEFAULT);
	free(all);
	return err;
}

/* Reads and checks a component's bitmap: 0 and *h, bits (ceil(n/8) bytes). */
/* A read of the bitmap area with the deadline of the synchronous calls
 * (backend.h), not the calls themselves: one that runs out is left in
 * flight (be->detached), the backend is not given up, so a stall at the
 * start leaves the component out (assemble.c choose_states) or costs a
 * copy in full, never the start itself. */
static int read_area(struct bm_backend *be, void *buf, size_t len,
                     uint64_t off)
{
	return bm_backend_io_wait_timeout(be, BM_BOP_READ, buf, (uint32_t)len,
	                                  off, 0, bm_backend_sync_timeout_ms());
}

int bm_bitmap_read(struct bm_backend *be, const struct bm_label *l,
                   struct bm_bitmap_header *h, uint8_t *bits)
{
	void *area;
	int err;

	if (l->bitmap_size == 0 || l->bitmap_size > BM_BITMAP_AREA)
		return bm_error(ENOENT, "no bitmap");
	if (posix_memalign(&area, 4096, (size_t)l->bitmap_size))
		return -ENOMEM;
	err = read_area(be, area, (size_t)l->bitmap_size, l->bitmap_offset);
	if (err == 0)
		err = bm_bitmap_decode(area, (size_t)l->bitmap_size, l, h, bits);
	free(area);
	return err;
}

uint64_t bm_bitmap_clear_seq_of(struct bm_backend *be, const struct bm_label *l)
{
	struct bm_bitmap_header h;
	uint64_t seq = 0;
	void *buf;

	if (l->bitmap_size < BM_BITMAP_BLOCK || l->bitmap_size > BM_BITMAP_AREA ||
	    posix_memalign(&buf, 4096, BM_BITMAP_BLOCK))
		return 0;
	if (read_area(be, buf, BM_BITMAP_BLOCK, l->bitmap_offset) == 0 &&
	    bm_bitmap_header_decode(buf, BM_BITMAP_BLOCK, &h) == 0 &&
	    h.component_id == l->component_id)
		seq = h.clear_seq;
	free(buf);
	return seq;
}

/* ---- the engine's state ------------------------------------------------------ */

struct bm_bitmap {
	uint64_t region;
	uint64_t nregions;
	uint32_t nblocks;
	_Atomic uint64_t *durable;   /* on disk on every component in service */
	/* lock protects the rest; taken after meta_lock, never before */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool writing;                /* a thread writes blocks (meta_lock) */
	uint8_t *want;               /* nblocks * BITS_BYTES, the disk image */
	struct bm_bitmap_header h;   /* clear_seq, members, sets, seq */
	bool failed;                 /* the last write could not be recorded */
	/* meta_lock: a bitmap write failed on this component after it was
	 * issued (a timeout leaves it in flight); if the component stayed
	 * in service (the last ACTIVE one) that old image may still land
	 * over a newer one, so its next bitmap write waits (landed_before) */
	bool write_unsure[BM_MAX_COMPONENTS];
	/* meta_lock: the clear_seq each component's header holds, as read
	 * at open and then written with success, and the component id it
	 * was for (a slot insert reuses holds another: then not known); a
	 * component that comes back with less is an older copy
	 * (bm_bitmap_judge) */
	uint64_t own_clear_seq[BM_MAX_COMPONENTS];
	uint64_t own_id[BM_MAX_COMPONENTS];
	/* The settle pass (see THE RULES, Settling) */
	_Atomic uint32_t *touched;   /* per region: epoch of its last write */
	_Atomic uint32_t epoch;      /* starts at 1; bumped by the pass */
	atomic_long inflight[2];     /* writes begun in an epoch of each parity */
	pthread_mutex_t settle_lock; /* one pass at a time; the fields below */
	bool settling;               /* epoch bumped, the old one draining */
	long long settle_ms;         /* when the pass last bumped or looked */
};

/* meta_lock held (or before the mirror serves): the clear_seq c's header
 * holds, as far as this server knows (0: nothing known). */
static void own_set(struct bm_bitmap *b, ptrdiff_t i,
                    const struct bm_component *c, uint64_t clear_seq)
{
	b->own_clear_seq[i] = clear_seq;
	b->own_id[i] = c->label.component_id;
}

static uint64_t own_get(const struct bm_bitmap *b, ptrdiff_t i,
                        const struct bm_component *c)
{
	return b->own_id[i] == c->label.component_id ? b->own_clear_seq[i] : 0;
}

static bool bit_get(const uint8_t *bits, uint64_t r)
{
	uint64_t blk = r / BM_BITMAP_BITS_PER_BLOCK,
	         k = r % BM_BITMAP_BITS_PER_BLOCK;
	return bits[blk * BM_BITMAP_BITS_BYTES + k / 8] & (1u << (k % 8));
}

static void bit_set(uint8_t *bits, uint64_t r)
{
	uint64_t blk = r / BM_BITMAP_BITS_PER_BLOCK,
	         k = r % BM_BITMAP_BITS_PER_BLOCK;
	bits[blk * BM_BITMAP_BITS_BYTES + k / 8] |= (uint8_t)(1u << (k % 8));
}

static bool durable_get(struct bm_bitmap *b, uint64_t r)
{
	return atomic_load_explicit(&b->durable[r / 64], memory_order_acquire) &
	       (1ull << (r % 64));
}

bool bm_bitmap_region_set(struct bm_mirror *m, uint64_t r)
{
	struct bm_bitmap *b = m->bitmap;
	return !b || r >= b->nregions || durable_get(b, r);
}

uint64_t bm_bitmap_region_size(struct bm_mirror *m)
{
	return m->bitmap ? m->bitmap->region : 0;
}

static struct bm_bitmap *bitmap_new(uint64_t region, uint64_t nregions,
                                    uint32_t nblocks)
{
	struct bm_bitmap *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->region = region;
	b->nregions = nregions;
	b->nblocks = nblocks;
	b->durable = calloc((nregions + 63) / 64, sizeof(uint64_t));
	b->want = calloc(nblocks, BM_BITMAP_BITS_BYTES);
	b->touched = calloc(nregions, sizeof(*b->touched));
	if (!b->durable || !b->want || !b->touched) {
		free(b->durable);
		free(b->want);
		free(b->touched);
		free(b);
		return NULL;
	}
	atomic_init(&b->epoch, 1);
	b->settle_ms = bm_now_ms();
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	pthread_mutex_init(&b->settle_lock, NULL);
	return b;
}

void bm_bitmap_free(struct bm_mirror *m)
{
	struct bm_bitmap *b = m->bitmap;

	if (!b)
		return;
	m->bitmap = NULL;
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->settle_lock);
	free(b->durable);
	free(b->want);
	free(b->touched);
	free(b);
}

static bool writable(struct bm_component *c)
{
	int s = atomic_load(&c->state);
	return s == BM_CS_ACTIVE || s == BM_CS_SYNCHRONIZING;
}

static bool has_bitmap(struct bm_mirror *m, struct bm_component *c)
{
	struct bm_bitmap *b = m->bitmap;
	return c->be && c->label.bitmap_size && c->label.bitmap_chunk == b->region;
}

/* meta_lock held: 0 when no older bitmap write to c may still land (one
 * that failed there: its abandoned requests waited for, up to tmo; 0
 * means no timeout, and then nothing is abandoned), else -ETIMEDOUT: a
 * bit written now could be overwritten by the old image, so it is not. */
static int landed_before(struct bm_mirror *m, struct bm_component *c, long tmo)
{
	struct bm_bitmap *b = m->bitmap;
	int ci = (int)(c - m->comp);

	if (!b->write_unsure[ci])
		return 0;
	for (long waited = 0; c->be && atomic_load(&c->be->detached) > 0;
	     waited++) {
		if (tmo > 0 && waited >= tmo)
			return -ETIMEDOUT;
		usleep(1000);
	}
	b->write_unsure[ci] = false;
	return 0;
}

/* b->lock held: c's header as the mirror's header says it now. */
static struct bm_bitmap_header header_of(struct bm_mirror *m,
                                         struct bm_component *c)
{
	struct bm_bitmap *b = m->bitmap;
	struct bm_bitmap_header h = b->h;

	h.mirror_id = c->label.mirror_id;
	h.component_id = c->label.component_id;
	h.region_size = b->region;
	h.nregions = b->nregions;
	h.nblocks = b->nblocks;
	return h;
}

/* Caller holds meta_lock and b->lock.  Writes the whole bitmap (header and
 * blocks from want) to c and flushes it. */
static int write_all_to(struct bm_mirror *m, struct bm_component *c)
{
	struct bm_bitmap *b = m->bitmap;
	struct bm_bitmap_header h = header_of(m, c);
	int err = landed_before(m, c, atomic_load(&m->io_timeout_ms));

	if (err < 0)
		return err;
	uint8_t *all = encode_all(&h, b->want);
	if (!all)
		return -ENOMEM;
	long tmo = atomic_load(&m->io_timeout_ms);
	struct bm_patience slow;
	bm_comp_patience_locked(m, c, &slow);
	err = area_write(c->be, &c->label, all,
	                     (size_t)bm_bitmap_bytes(b->nblocks), 0, tmo, &slow);
	if (err == 0)
		err = bm_backend_io_wait_patient(c->be, BM_BOP_FLUSH, NULL, 0, 0, 0,
		                                 tmo, &slow);
	if (err < 0)
		b->write_unsure[c - m->comp] = true;
	else
		own_set(b, c - m->comp, c, h.clear_seq);
	free(all);
	return err;
}

int bm_bitmap_open(struct bm_mirror *m, bool *usable)
{
	struct bm_bitmap *b = NULL;
	struct bm_component *ref = NULL;

	*usable = false;
	if (m->no_metadata)
		return 0;
	/* The geometry of the components that have a bitmap (the labels
	 * agree: they were written together). */
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		int s = atomic_load(&c->state);
		if (!c->be || s == BM_CS_ABSENT || !c->label.bitmap_size)
			continue;
		if (!ref || c->label.bitmap_chunk == ref->label.bitmap_chunk)
			ref = ref ? ref : c;
	}
	if (!ref)
		return 0;
	uint64_t nregions;
	uint32_t nblocks;
	if (bm_bitmap_geometry(m->size, ref->label.bitmap_chunk, &nregions,
	                       &nblocks) < 0)
		return 0;
	b = bitmap_new(ref->label.bitmap_chunk, nregions, nblocks);
	if (!b)
		return bm_error(ENOMEM, "out of memory");
	uint8_t *bits = malloc((size_t)nblocks * BM_BITMAP_BITS_BYTES);
	if (!bits) {
		m->bitmap = b;
		bm_bitmap_free(m);
		return bm_error(ENOMEM, "out of memory");
	}
	int loaded = 0, bad = 0;
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		struct bm_bitmap_header h;
		if (!c->be || atomic_load(&c->state) == BM_CS_ABSENT ||
		    !c->label.bitmap_size || c->label.bitmap_chunk != b->region)
			continue;
		/* an INACTIVE one was out of service: its bits do not count,
		 * its header's clear_seq does (activate: an older copy of it
		 * put back is copied in full) */
		if (atomic_load(&c->state) == BM_CS_INACTIVE) {
			own_set(b, i, c, bm_bitmap_clear_seq_of(c->be, &c->label));
			continue;
		}
		memset(bits, 0, (size_t)nblocks * BM_BITMAP_BITS_BYTES);
		if (bm_bitmap_read(c->be, &c->label, &h, bits) < 0) {
			fprintf(stderr, "blkmirror: %s: the bitmap of %s is "
			        "unusable: %s\n", m->name, c->path, bm_last_error());
			bad++;
			continue;
		}
		loaded++;
		own_set(b, i, c, h.clear_seq);
		for (size_t k = 0; k < (size_t)nblocks * BM_BITMAP_BITS_BYTES; k++)
			b->want[k] |= bits[k];
		if (h.clear_seq > b->h.clear_seq ||
		    (h.clear_seq == b->h.clear_seq && !b->h.nmembers)) {
			uint64_t sets = b->h.sets > h.sets ? b->h.sets : h.sets;
			b->h = h;
			b->h.sets = sets;
		} else if (h.sets > b->h.sets) {
			b->h.sets = h.sets;
		}
	}
	free(bits);
	if (loaded == 0) {
		m->bitmap = b;
		bm_bitmap_free(m);
		return 0;
	}
	if (bad) {
		/* a damaged bitmap may have held bits: all set, nobody a
		 * member (copies are full, as without a bitmap) */
		memset(b->want, 0xff, (size_t)nblocks * BM_BITMAP_BITS_BYTES);
		for (uint64_t r = nregions;
		     r < (uint64_t)nblocks * BM_BITMAP_BITS_PER_BLOCK; r++)
			b->want[(r / BM_BITMAP_BITS_PER_BLOCK) * BM_BITMAP_BITS_BYTES +
			        (r % BM_BITMAP_BITS_PER_BLOCK) / 8] &=
			        (uint8_t)~(1u << (r % BM_BITMAP_BITS_PER_BLOCK % 8));
		b->h.nmembers = 0;
		memset(b->h.members, 0, sizeof(b->h.members));
	}
	for (uint64_t r = 0; r < nregions; r++)
		if (bit_get(b->want, r))
			b->durable[r / 64] |= 1ull << (r % 64);
	m->bitmap = b;
	*usable = bad == 0;
	return 0;
}

bool bm_bitmap_behind(struct bm_mirror *m, struct bm_component *c)
{
	struct bm_bitmap *b = m->bitmap;
	bool behind;

	if (!b || !has_bitmap(m, c))
		return false;
	pthread_mutex_lock(&b->lock);
	behind = own_get(b, c - m->comp, c) < b->h.clear_seq;
	pthread_mutex_unlock(&b->lock);
	return behind;
}

int bm_bitmap_judge(struct bm_mirror *m, struct bm_component *c,
                    struct bm_backend *be)
{
	struct bm_bitmap *b = m->bitmap;
	struct bm_bitmap_header h;
	uint8_t *buf;
	int err;

	if (!b || !c->label.bitmap_size || c->label.bitmap_chunk != b->region)
		return 0;
	pthread_mutex_lock(&m->meta_lock);
	uint64_t want = own_get(b, c - m->comp, c);
	uint64_t off = c->label.bitmap_offset;
	pthread_mutex_unlock(&m->meta_lock);
	if (want == 0)
		return 0; /* (nothing known of it) */
	if (posix_memalign((void **)&buf, 4096, BM_BITMAP_BLOCK))
		return -ENOMEM;
	err = bm_backend_io_wait_patient(be, BM_BOP_READ, buf, BM_BITMAP_BLOCK,
	                                 off, 0, atomic_load(&m->io_timeout_ms),
	                                 NULL);
	if (err == 0 && bm_bitmap_header_decode(buf, BM_BITMAP_BLOCK, &h) < 0) {
		char why[200];
		snprintf(why, sizeof(why), "%s", bm_last_error());
		err = bm_error_1(ESTALE, "its bitmap cannot be read (%s)", why);
	} else if (err == 0 && h.clear_seq < want) {
		err = bm_error_1(ESTALE, "it came back with an older bitmap "
		                 "(clear %llu; this server last wrote %llu): an "
		                 "older copy of it, which lacks writes whose bits "
		                 "were cleared since", (unsigned long long)h.clear_seq,
		                 (unsigned long long)want);
	}
	free(buf);
	return err;
}

bool bm_bitmap_is_member(struct bm_mirror *m, struct bm_component *c)
{
	struct bm_bitmap *b = m->bitmap;
	bool yes = false;

	if (!b || !has_bitmap(m, c))
		return false;
	pthread_mutex_lock(&b->lock);
	for (uint32_t i = 0; i < b->h.nmembers; i++)
		if (b->h.members[i] == c->label.component_id)
			yes = true;
	pthread_mutex_unlock(&b->lock);
	return yes;
}

int bm_bitmap_write_component_locked(struct bm_mirror *m,
                                     struct bm_component *c)
{
	struct bm_bitmap *b = m->bitmap;
	int err;

	BM_ASSERT_HELD(&m->meta_lock);
	if (!b || !has_bitmap(m, c))
		return 0;
	pthread_mutex_lock(&b->lock);
	err = write_all_to(m, c);
	pthread_mutex_unlock(&b->lock);
	return err;
}

int bm_bitmap_write_all_locked(struct bm_mirror *m)
{
	int first = 0;

	BM_ASSERT_HELD(&m->meta_lock);
	if (!m->bitmap)
		return 0;
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (!writable(c))
			continue;
		int err = bm_bitmap_write_component_locked(m, c);
		if (err < 0 && !first)
			first = err;
	}
	return first;
}

/* Runs ops[0..n) at once; errs[opc[i]] keeps the first error of each
 * component. */
static void wait_batch(struct bm_wait_op *ops, const int *opc, int n,
                       long tmo, int *errs)
{
	bm_backend_io_wait_all(ops, n, tmo);
	for (int i = 0; i < n; i++)
		if (ops[i].result < 0 && errs[opc[i]] == 0)
			errs[opc[i]] = ops[i].result;
}

/* Caller holds meta_lock.  Writes the n encoded blocks img (block numbers
 * idx) to every component in service that has a bitmap, then flushes each
 * that took them all: all components at once (one component's time, not
 * the sum), blocks in batches of what bm_backend_io_wait_all keeps in
 * flight, a component that failed one left out of the next batches.
 * hdrs (NULL: none): each component's header (BM_BITMAP_BLOCK bytes at
 * its index), written after the blocks and before the flush.
 * errs[i]: component i's result (0 for those not written).  0, or -ENOMEM
 * (nothing written). */
static int write_blocks_everywhere(struct bm_mirror *m, const uint8_t *img,
                                   const uint32_t *idx, uint32_t n,
                                   const uint8_t *hdrs, int *errs)
{
	long tmo = atomic_load(&m->io_timeout_ms);
	struct bm_patience slow[BM_MAX_COMPONENTS];
	struct bm_wait_op ops[BM_WAIT_ALL_MAX];
	int who[BM_MAX_COMPONENTS], ncomp = 0, nops;

	for (int ci = 0; ci < m->ncomp; ci++) {
		struct bm_component *c = &m->comp[ci];
		errs[ci] = 0;
		if (writable(c) && has_bitmap(m, c)) {
			bm_comp_patience_locked(m, c, &slow[ci]);
			errs[ci] = landed_before(m, c, tmo);
			who[ncomp++] = ci;
		}
	}
	if (ncomp == 0)
		return 0;
	uint32_t per = BM_WAIT_ALL_MAX / (uint32_t)ncomp; /* >= 4: 16 comps */
	int opc[BM_WAIT_ALL_MAX];
	for (uint32_t k0 = 0; k0 < n; k0 += per) {
		nops = 0;
		for (uint32_t k = k0; k < n && k < k0 + per; k++)
			for (int w = 0; w < ncomp; w++) {
				int ci = who[w];
				struct bm_component *c = &m->comp[ci];
				if (errs[ci] < 0)
					continue;
				opc[nops] = ci;
				ops[nops++] = (struct bm_wait_op){.be = c->be,
				        .op = BM_BOP_WRITE,
				        .buf = (void *)(img + (size_t)k * BM_BITMAP_BLOCK),
				        .len = BM_BITMAP_BLOCK,
				        .off = c->label.bitmap_offset +
				               (uint64_t)(idx[k] + 1) * BM_BITMAP_BLOCK,
				        .patience = &slow[ci]};
			}
		wait_batch(ops, opc, nops, tmo, errs);
	}
	nops = 0;
	for (int w = 0; hdrs && w < ncomp; w++) {
		int ci = who[w];
		if (errs[ci] < 0)
			continue;
		opc[nops] = ci;
		ops[nops++] = (struct bm_wait_op){.be = m->comp[ci].be,
		        .op = BM_BOP_WRITE,
		        .buf = (void *)(hdrs + (size_t)ci * BM_BITMAP_BLOCK),
		        .len = BM_BITMAP_BLOCK,
		        .off = m->comp[ci].label.bitmap_offset,
		        .patience = &slow[ci]};
	}
	wait_batch(ops, opc, nops, tmo, errs);
	nops = 0;
	for (int w = 0; w < ncomp; w++) {
		int ci = who[w];
		if (errs[ci] < 0)
			continue;
		opc[nops] = ci;
		ops[nops++] = (struct bm_wait_op){.be = m->comp[ci].be,
		        .op = BM_BOP_FLUSH, .patience = &slow[ci]};
	}
	wait_batch(ops, opc, nops, tmo, errs);
	for (int w = 0; w < ncomp; w++)
		if (errs[who[w]] < 0)
			m->bitmap->write_unsure[who[w]] = true;
	return 0;
}

/* meta_lock held: components whose bitmap blocks could not be written
 * (errs[i] < 0) leave service: a bit it lacks may be one a write relies
 * on, and a write that timed out may still be in flight and land after
 * a later write of the same block. */
static void drop_unwritten(struct bm_mirror *m, const int *errs,
                           const char *what)
{
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (errs[i] == 0 || !writable(c))
			continue;
		char why[128];
		snprintf(why, sizeof(why), "%s: %s", what, strerror(-errs[i]));
		bm_meta_drop_locked(m, c, bm_error_is_gone(errs[i])
		                    ? BM_CS_DISCONNECTED : BM_CS_FAILED, why);
	}
}

/* Caller holds meta_lock, not b->lock.  Writes the blocks that have
 * wanted bits not yet durable to every component in service, then makes
 * them durable.  0, or -EIO when no ACTIVE component holds them. */
static int flush_pending(struct bm_mirror *m)
{
	struct bm_bitmap *b = m->bitmap;
	uint8_t *img = NULL;
	uint32_t *idx = NULL;
	uint32_t n = 0;
	int err = 0;

	pthread_mutex_lock(&b->lock);
	idx = malloc(b->nblocks * sizeof(*idx));
	img = malloc((size_t)b->nblocks * BM_BITMAP_BLOCK);
	if (!idx || !img) {
		pthread_mutex_unlock(&b->lock);
		free(idx);
		free(img);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < b->nblocks; i++) {
		uint64_t first = (uint64_t)i * BM_BITMAP_BITS_PER_BLOCK;
		uint64_t end = first + BM_BITMAP_BITS_PER_BLOCK;
		bool need = false;
		if (end > b->nregions)
			end = b->nregions;
		for (uint64_t r = first; r < end && !need; r++)
			need = bit_get(b->want, r) && !durable_get(b, r);
		if (!need)
			continue;
		bm_bitmap_block_encode(i, b->want + (size_t)i * BM_BITMAP_BITS_BYTES,
		                       img + (size_t)n * BM_BITMAP_BLOCK);
		idx[n++] = i;
	}
	b->h.sets++;
	pthread_mutex_unlock(&b->lock);

	bool held = false;
	int errs[BM_MAX_COMPONENTS];
	bool wrote[BM_MAX_COMPONENTS];
	for (int ci = 0; ci < m->ncomp; ci++)
		wrote[ci] = writable(&m->comp[ci]) &&
		            has_bitmap(m, &m->comp[ci]);
	if (n)
		err = write_blocks_everywhere(m, img, idx, n, NULL, errs);
	if (n && err == 0)
		drop_unwritten(m, errs, "cannot write its bitmap");
	/* after every drop: one may have failed another's label */
	for (int ci = 0; ci < m->ncomp && n && err == 0; ci++)
		if (wrote[ci] && errs[ci] == 0 &&
		    atomic_load(&m->comp[ci].state) == BM_CS_ACTIVE)
			held = true;
	if (n && !held)
		err = -EIO;
	if (err == 0) {
		/* publish: what was encoded is on disk everywhere */
		for (uint32_t k = 0; k < n; k++) {
			const uint8_t *bits = img + (size_t)k * BM_BITMAP_BLOCK +
			                      BM_BITMAP_BITS_OFF;
			uint64_t first = (uint64_t)idx[k] * BM_BITMAP_BITS_PER_BLOCK;
			for (uint64_t j = 0; j < BM_BITMAP_BITS_PER_BLOCK &&
			                     first + j < b->nregions; j++)
				if (bits[j / 8] & (1u << (j % 8)))
					atomic_fetch_or(&b->durable[(first + j) / 64],
					                1ull << ((first + j) % 64));
		}
	}
	free(idx);
	free(img);
	return err;
}

/* Counts the write in the current epoch's parity: the epoch read after
 * the count is the one counted in (a bump between the two: again). */
static int enter_epoch(struct bm_bitmap *b, uint32_t *epoch)
{
	for (;;) {
		uint32_t e = atomic_load(&b->epoch);
		atomic_fetch_add(&b->inflight[e & 1], 1);
		if (atomic_load(&b->epoch) == e) {
			*epoch = e;
			return (int)(e & 1);
		}
		atomic_fetch_sub(&b->inflight[e & 1], 1);
	}
}

void bm_bitmap_write_end(struct bm_mirror *m, int slot)
{
	if (m->bitmap && slot >= 0)
		atomic_fetch_sub(&m->bitmap->inflight[slot], 1);
}

int bm_bitmap_write_begin(struct bm_mirror *m, uint64_t off, uint64_t len,
                          int *slot)
{
	struct bm_bitmap *b = m->bitmap;
	uint64_t first, last, r;
	uint32_t e;

	*slot = -1;
	if (!b || len == 0)
		return 0;
	*slot = enter_epoch(b, &e);
	bm_bitmap_span(b->region, off, len, &first, &last);
	if (last >= b->nregions)
		last = b->nregions - 1;
	/* The settle pass clears a bit, then looks at touched; we store
	 * touched, then look at the bit (both sequentially consistent): it
	 * sees our epoch and puts the bit back, or we see the bit gone and
	 * set it again below before issuing. */
	for (r = first; r <= last; r++)
		if (atomic_load(&b->touched[r]) != e)
			atomic_store(&b->touched[r], e);
	for (r = first; r <= last; r++)
		if (!(atomic_load(&b->durable[r / 64]) & (1ull << (r % 64))))
			break;
	if (r > last)
		return 0; /* the hot path: every bit already on disk */

	int err = 0;
	bm_sendbatch_flush(); /* never sleep on a deferred send */
	pthread_mutex_lock(&b->lock);
	for (r = first; r <= last; r++)
		bit_set(b->want, r);
	for (;;) {
		for (r = first; r <= last; r++)
			if (!durable_get(b, r))
				break;
		if (r > last)
			break;
		if (b->writing) {
			pthread_cond_wait(&b->cond, &b->lock);
			continue;
		}
		b->writing = true;
		pthread_mutex_unlock(&b->lock);
		pthread_mutex_lock(&m->meta_lock);
		err = flush_pending(m);
		pthread_mutex_unlock(&m->meta_lock);
		pthread_mutex_lock(&b->lock);
		b->writing = false;
		pthread_cond_broadcast(&b->cond);
		if (err < 0)
			break;
	}
	pthread_mutex_unlock(&b->lock);
	if (err < 0) {
		bm_bitmap_write_end(m, *slot);
		*slot = -1;
		return bm_error(-err, "cannot record the write in the bitmap");
	}
	return 0;
}

/* Every component present is ACTIVE with this bitmap (1 to 16 of them):
 * the state in which bits may be cleared. */
static bool all_in_sync(struct bm_mirror *m)
{
	int nact = 0;

	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (!bm_comp_present(c))
			continue;
		if (atomic_load(&c->state) != BM_CS_ACTIVE || !has_bitmap(m, c))
			return false;
		nact++;
	}
	return nact > 0 && nact <= (int)BM_BITMAP_MAX_MEMBERS;
}

/* b->lock held: are the members of the last clear the components present? */
static bool members_are_present(struct bm_mirror *m)
{
	struct bm_bitmap *b = m->bitmap;
	uint32_t j = 0;

	for (int i = 0; i < m->ncomp; i++) {
		if (!bm_comp_present(&m->comp[i]))
			continue;
		if (j >= b->h.nmembers ||
		    b->h.members[j] != m->comp[i].label.component_id)
			return false;
		j++;
	}
	return j == b->h.nmembers;
}

/* b->lock held: the members of a clear are the components present. */
static void set_members(struct bm_mirror *m)
{
	struct bm_bitmap *b = m->bitmap;

	b->h.clear_seq++;
	b->h.seq++;
	memset(b->h.members, 0, sizeof(b->h.members));
	b->h.nmembers = 0;
	for (int i = 0; i < m->ncomp; i++)
		if (bm_comp_present(&m->comp[i]))
			b->h.members[b->h.nmembers++] = m->comp[i].label.component_id;
}

void bm_bitmap_clear_locked(struct bm_mirror *m)
{
	struct bm_bitmap *b = m->bitmap;

	BM_ASSERT_HELD(&m->meta_lock);
	if (!b || m->degraded || atomic_load(&m->writes_inflight) > 0 ||
	    !all_in_sync(m))
		return;
	pthread_mutex_lock(&b->lock);
	bool any = false;
	for (size_t k = 0; k < (size_t)b->nblocks * BM_BITMAP_BITS_BYTES; k++)
		any |= b->want[k] != 0;
	if (b->writing || (!any && members_are_present(m))) {
		pthread_mutex_unlock(&b->lock);
		return;
	}
	/* no writer can be between its bit check and its issue: none is
	 * in flight and new ones wait at meta_lock (bm_meta_mark_dirty) */
	for (uint64_t w = 0; w < (b->nregions + 63) / 64; w++)
		atomic_store(&b->durable[w], 0);
	memset(b->want, 0, (size_t)b->nblocks * BM_BITMAP_BITS_BYTES);
	set_members(m);
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (!bm_comp_present(c))
			continue;
		/* a stale set bit on disk only costs a copy: no failure here */
		if (write_all_to(m, c) < 0)
			fprintf(stderr, "blkmirror: %s: cannot clear the bitmap of "
			        "%s\n", m->name, c->path);
	}
	pthread_mutex_unlock(&b->lock);
}

void (*_Atomic bm_bitmap_settle_test_pause)(uint64_t region);

/* The first region from r on that is set and untouched since epoch e
 * began (nregions if none); words without a set bit are skipped whole. */
static uint64_t next_settled(struct bm_bitmap *b, uint64_t r, uint32_t e)
{
	for (; r < b->nregions; r++) {
		if (r % 64 == 0 && atomic_load(&b->durable[r / 64]) == 0) {
			r += 63;
			continue;
		}
		if (durable_get(b, r) && atomic_load(&b->touched[r]) < e)
			return r;
	}
	return b->nregions;
}

/*
 * Flushes every component present (all ACTIVE) at once, without meta_lock:
 * a flush takes up to a slow disk's time, and writes that need a new bit
 * would wait that long behind it.  (The event thread, which runs the pass,
 * does wait: failure decisions and the watchdog come after it, as after
 * the idle clean's flush.)
 * epochs[i]: component i's connection when flushed (a reconnect since
 * means another connection, not flushed).  False if one could not be
 * flushed (its next write or flush finds out; nothing is cleared).
 */
static bool flush_everywhere(struct bm_mirror *m, unsigned *epochs)
{
	struct bm_wait_op ops[BM_MAX_COMPONENTS];
	struct bm_patience slow[BM_MAX_COMPONENTS];
	int who[BM_MAX_COMPONENTS], n = 0, nc = atomic_load(&m->ncomp);
	bool ok = true;

	/* epochs[i] of a slot not flushed: one no connection has (a slot
	 * filled since is refused by same_connections) */
	for (int i = 0; i < BM_MAX_COMPONENTS; i++)
		epochs[i] = UINT_MAX;
	for (int i = 0; i < nc && ok; i++) {
		struct bm_component *c = &m->comp[i];
		if (!bm_comp_present(c))
			continue;
		epochs[i] = atomic_load(&c->epoch);
		struct bm_backend *be = bm_comp_get(c);
		if (!be) {
			ok = false;
			break;
		}
		bm_comp_patience(m, c, &slow[n]);
		ops[n] = (struct bm_wait_op){.be = be, .op = BM_BOP_FLUSH,
		                             .patience = &slow[n]};
		who[n++] = i;
	}
	if (ok)
		bm_backend_io_wait_all(ops, n, atomic_load(&m->io_timeout_ms));
	for (int k = 0; k < n; k++) {
		ok = ok && ops[k].result == 0;
		bm_comp_put(&m->comp[who[k]]);
	}
	return ok;
}

/* meta_lock held: still every component present ACTIVE, on the
 * connection flush_everywhere flushed (a component present now that was
 * not then has UINT_MAX there)? */
static bool same_connections(struct bm_mirror *m, const unsigned *epochs)
{
	if (m->degraded || atomic_load(&m->meta_broken) || !all_in_sync(m))
		return false;
	for (int i = 0; i < m->ncomp; i++)
		if (bm_comp_present(&m->comp[i]) &&
		    atomic_load(&m->comp[i].epoch) != epochs[i])
			return false;
	return true;
}

/*
 * settle_lock held, no write of epoch e in flight: clears the bits of the
 * regions no write touched in epoch e or since, once their data is flushed
 * on every component, and writes the blocks that changed.  Returns the
 * regions cleared.
 */
static uint64_t settle_regions(struct bm_mirror *m, uint32_t e)
{
	struct bm_bitmap *b = m->bitmap;
	uint64_t cleared = 0, r;
	uint32_t *idx = NULL, n = 0;
	uint8_t *img = NULL, *hdrs = NULL;
	bool *changed = NULL;
	unsigned epochs[BM_MAX_COMPONENTS];
	int errs[BM_MAX_COMPONENTS] = {0};

	if (!all_in_sync(m) || next_settled(b, 0, e) == b->nregions)
		return 0;
	changed = calloc(b->nblocks, sizeof(*changed));
	idx = malloc(b->nblocks * sizeof(*idx));
	img = malloc((size_t)b->nblocks * BM_BITMAP_BLOCK);
	hdrs = malloc((size_t)BM_MAX_COMPONENTS * BM_BITMAP_BLOCK);
	/* every write to those regions has ended (epoch e drained): on
	 * stable storage everywhere before any bit of theirs is cleared */
	if (!changed || !idx || !img || !hdrs || !flush_everywhere(m, epochs))
		goto out_free;
	pthread_mutex_lock(&m->meta_lock);
	if (!same_connections(m, epochs))
		goto out;
	pthread_mutex_lock(&b->lock);
	for (r = next_settled(b, 0, e); r < b->nregions;
	     r = next_settled(b, r + 1, e)) {
		uint64_t bit = 1ull << (r % 64);
		void (*pause)(uint64_t) = atomic_load(&bm_bitmap_settle_test_pause);
		if (pause)
			pause(r);
		atomic_fetch_and(&b->durable[r / 64], ~bit);
		if (atomic_load(&b->touched[r]) >= e) {
			/* a write came meanwhile and may have seen the bit:
			 * it stays (it is still on disk) */
			atomic_fetch_or(&b->durable[r / 64], bit);
			continue;
		}
		uint64_t blk = r / BM_BITMAP_BITS_PER_BLOCK,
		         k = r % BM_BITMAP_BITS_PER_BLOCK;
		b->want[blk * BM_BITMAP_BITS_BYTES + k / 8] &=
		        (uint8_t)~(1u << (k % 8));
		changed[blk] = true;
		cleared++;
	}
	if (cleared && !members_are_present(m)) {
		/* a copy ended since the last clear: its target is in sync now
		 * and a member from here on, which the header must say */
		set_members(m);
		for (int i = 0; i < m->ncomp; i++)
			if (bm_comp_present(&m->comp[i])) {
				errs[i] = write_all_to(m, &m->comp[i]);
				if (errs[i] == -ENOMEM) /* nothing written */
					errs[i] = 0;
			}
		pthread_mutex_unlock(&b->lock);
		drop_unwritten(m, errs, "cannot clear bits in its bitmap");
		goto out;
	}
	for (uint32_t i = 0; i < b->nblocks; i++) {
		if (!changed[i])
			continue;
		bm_bitmap_block_encode(i, b->want + (size_t)i * BM_BITMAP_BITS_BYTES,
		                       img + (size_t)n * BM_BITMAP_BLOCK);
		idx[n++] = i;
	}
	/* Every clear counts in the headers (clear_seq): a copy of a
	 * component taken before it (a snapshot) lacks writes whose bits
	 * are gone, and is told by its header when it comes back
	 * (bm_bitmap_judge), even where no label was written since. */
	uint64_t seq_now = 0;
	if (n) {
		b->h.clear_seq++;
		b->h.seq++;
		seq_now = b->h.clear_seq;
		for (int i = 0; i < m->ncomp; i++) {
			struct bm_bitmap_header h = header_of(m, &m->comp[i]);
			bm_bitmap_header_encode(&h, hdrs + (size_t)i * BM_BITMAP_BLOCK);
		}
	}
	pthread_mutex_unlock(&b->lock);
	/* A bit-setting writer waits for meta_lock to write its blocks: ours
	 * land first.  A component that did not take them all is dropped
	 * (drop_unwritten); on its disk they left stale bits or a bad crc,
	 * a copy too many or a full one: safe. */
	if (n && write_blocks_everywhere(m, img, idx, n, hdrs, errs) == 0) {
		for (int i = 0; i < m->ncomp; i++)
			if (errs[i] == 0 && writable(&m->comp[i]) &&
			    has_bitmap(m, &m->comp[i]))
				own_set(b, i, &m->comp[i], seq_now);
		drop_unwritten(m, errs, "cannot clear bits in its bitmap");
	}
out:
	pthread_mutex_unlock(&m->meta_lock);
out_free:
	free(changed);
	free(idx);
	free(img);
	free(hdrs);
	return cleared;
}

void bm_bitmap_settle(struct bm_mirror *m, long period_ms)
{
	struct bm_bitmap *b = m->bitmap;

	if (!b)
		return;
	/* bm_bitmap_settle_now (tests) may hold it while it waits for
	 * writes to end, and ending one may need this thread: skip a tick */
	if (pthread_mutex_trylock(&b->settle_lock) != 0)
		return;
	long long now = bm_now_ms();
	if (!b->settling) {
		if (now - b->settle_ms >= period_ms) {
			b->settle_ms = now;
			/* writes from here on count in the next epoch */
			if (bm_bitmap_dirty_count(m) > 0 && all_in_sync(m)) {
				atomic_fetch_add(&b->epoch, 1);
				b->settling = true;
			}
		}
	} else {
		uint32_t e = atomic_load(&b->epoch) - 1;
		if (atomic_load(&b->inflight[e & 1]) == 0) {
			b->settling = false;
			settle_regions(m, e);
		}
	}
	pthread_mutex_unlock(&b->settle_lock);
}

uint64_t bm_bitmap_settle_now(struct bm_mirror *m)
{
	struct bm_bitmap *b = m->bitmap;
	uint64_t cleared;

	if (!b)
		return 0;
	pthread_mutex_lock(&b->settle_lock);
	uint32_t e = b->settling ? atomic_load(&b->epoch) - 1
	                         : atomic_fetch_add(&b->epoch, 1);
	while (atomic_load(&b->inflight[e & 1]) > 0)
		usleep(1000);
	b->settling = false;
	b->settle_ms = bm_now_ms();
	cleared = settle_regions(m, e);
	pthread_mutex_unlock(&b->settle_lock);
	return cleared;
}

bool bm_bitmap_region_on_disk(struct bm_mirror *m, uint64_t r)
{
	struct bm_bitmap *b = m->bitmap;
	bool set;

	if (!b || r >= b->nregions)
		return true;
	pthread_mutex_lock(&b->lock);
	set = bit_get(b->want, r);
	pthread_mutex_unlock(&b->lock);
	return set;
}

uint64_t bm_bitmap_dirty_count(struct bm_mirror *m)
{
	struct bm_bitmap *b = m->bitmap;
	uint64_t n = 0;

	if (!b)
		return 0;
	for (uint64_t w = 0; w < (b->nregions + 63) / 64; w++)
		n += (uint64_t)__builtin_popcountll(atomic_load(&b->durable[w]));
	return n;
}

/* "R1-R2, R3, ..." of the set regions (at most `max` ranges). */
static int ranges_text(bool (*get)(const void *, uint64_t), const void *arg,
                       uint64_t n, int max, char *buf, size_t len)
{
	size_t used = 0;
	int shown = 0;

	buf[0] = '\0';
	for (uint64_t r = 0; r < n;) {
		if (!get(arg, r)) {
			r++;
			continue;
		}
		uint64_t e = r;
		while (e + 1 < n && get(arg, e + 1))
			e++;
		if (shown == max) {
			used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
			                         ", ...");
			break;
		}
		if (e == r)
			used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
			                         "%s%" PRIu64, shown ? ", " : "", r);
		else
			used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
			                         "%s%" PRIu64 "-%" PRIu64,
			                         shown ? ", " : "", r, e);
		shown++;
		r = e + 1;
	}
	return (int)used;
}

static bool get_durable(const void *arg, uint64_t r)
{
	return durable_get((struct bm_bitmap *)arg, r);
}

static bool get_bits(const void *arg, uint64_t r)
{
	return bit_get(arg, r);
}

int bm_bitmap_status_text(struct bm_mirror *m, char *buf, size_t len)
{
	struct bm_bitmap *b = m->bitmap;
	char ranges[160];

	if (!b)
		return snprintf(buf, len, "Bitmap: none (whole components are "
		                "copied)\n");
	ranges_text(get_durable, b, b->nregions, 6, ranges, sizeof(ranges));
	return snprintf(buf, len, "Bitmap: %" PRIu64 " KiB regions, %" PRIu64
	                " regions, %" PRIu64 " dirty%s%s\n", b->region >> 10,
	                b->nregions, bm_bitmap_dirty_count(m),
	                ranges[0] ? ": " : "", ranges);
}

int bm_bitmap_dump_text(struct bm_backend *be, const struct bm_label *l,
                        const char *in, char *buf, size_t len)
{
	struct bm_bitmap_header h;
	char ranges[160];
	uint64_t nregions;
	uint32_t nblocks;

	if (!l->bitmap_size)
		return snprintf(buf, len, "%sBitmapState: none\n", in);
	if (bm_bitmap_geometry(l->data_size, l->bitmap_chunk, &nregions,
	                       &nblocks) < 0)
		return snprintf(buf, len, "%sBitmapState: unusable (%s)\n", in,
		                bm_last_error());
	uint8_t *bits = calloc(nblocks, BM_BITMAP_BITS_BYTES);
	if (!bits)
		return snprintf(buf, len, "%sBitmapState: out of memory\n", in);
	/* decode writes ceil(n/8) bytes; lay them out per block for get_bits */
	uint8_t *flat = calloc(1, (size_t)(nregions + 7) / 8 + 1);
	int err = flat ? bm_bitmap_read(be, l, &h, flat) : -ENOMEM;
	int n;
	if (err < 0) {
		n = snprintf(buf, len, "%sBitmapState: unusable (%s)\n", in,
		             err == -ENOMEM ? "out of memory" : bm_last_error());
	} else {
		uint64_t dirty = 0;
		for (uint64_t r = 0; r < nregions; r++)
			if (flat[r / 8] & (1u << (r % 8))) {
				bit_set(bits, r);
				dirty++;
			}
		ranges_text(get_bits, bits, nregions, 6, ranges, sizeof(ranges));
		n = snprintf(buf, len, "%sBitmapState: %" PRIu64 " KiB regions, %"
		             PRIu64 " regions, %" PRIu64 " dirty%s%s; clear_seq %"
		             PRIu64 ", %u members\n", in,
		             (uint64_t)l->bitmap_chunk >> 10, nregions, dirty,
		             ranges[0] ? ": " : "", ranges, h.clear_seq, h.nmembers);
	}
	free(flat);
	free(bits);
	return n;
}
