/* The bitmap's encoding and region arithmetic: geometry and the default
 * region rule, header and block round trips, rejection of damage, the
 * whole-area loader against its label, the spans a write touches. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "check.h"
#include "error.h"

static void geometry(void)
{
	uint64_t n;
	uint32_t b;

	CHECK_EQ(bm_bitmap_default_region(512ull << 20), 64u << 20);
	CHECK_EQ(bm_bitmap_default_region(1ull << 40), 64u << 20);
	/* the default always fits, doubling past 502 TiB */
	uint64_t huge = 600ull << 40;
	uint64_t r = bm_bitmap_default_region(huge);
	CHECK_EQ(r, 128u << 20);
	CHECK_EQ(bm_bitmap_geometry(huge, r, &n, &b), 0);
	CHECK(b <= BM_BITMAP_MAX_BLOCKS);
	CHECK(bm_bitmap_bytes(b) <= BM_BITMAP_AREA);
	CHECK(bm_bitmap_geometry(huge, 64u << 20, &n, &b) < 0);
	CHECK_EQ(bm_bitmap_geometry(512ull << 20, 1 << 20, &n, &b), 0);
	CHECK_EQ(n, 512);
	CHECK_EQ(b, 1);
	CHECK_EQ(bm_bitmap_geometry((512ull << 20) + 4096, 1 << 20, &n, &b), 0);
	CHECK_EQ(n, 513);
	CHECK_EQ(bm_bitmap_geometry(32640ull * 65536 + 1, 65536, &n, &b), 0);
	CHECK_EQ(b, 2);
	CHECK(bm_bitmap_geometry(1 << 30, 3 << 20, &n, &b) == -EINVAL);
	CHECK(bm_bitmap_geometry(1 << 30, 32768, &n, &b) == -EINVAL);
	CHECK_EQ(BM_BITMAP_MAX_BLOCKS, 252);
	CHECK_EQ(bm_bitmap_offset(64ull << 20) + BM_BITMAP_AREA, (64ull << 20) - 8192);
	CHECK_EQ(BM_BITMAP_BITS_PER_BLOCK, 32640);
}

static void spans(void)
{
	uint64_t f, l;

	bm_bitmap_span(1 << 20, 0, 4096, &f, &l);
	CHECK_EQ(f, 0); CHECK_EQ(l, 0);
	bm_bitmap_span(1 << 20, (1 << 20) - 4096, 8192, &f, &l);
	CHECK_EQ(f, 0); CHECK_EQ(l, 1);
	bm_bitmap_span(1 << 20, 1 << 20, 1 << 20, &f, &l);
	CHECK_EQ(f, 1); CHECK_EQ(l, 1);
	bm_bitmap_span(1 << 20, 5ull << 20, 3ull << 20, &f, &l);
	CHECK_EQ(f, 5); CHECK_EQ(l, 7);
}

static struct bm_bitmap_header sample(void)
{
	struct bm_bitmap_header h = {0};

	h.version = BM_BITMAP_VERSION;
	h.mirror_id = 0x1122334455667788ull;
	h.component_id = 0x99;
	h.region_size = 1 << 20;
	h.nregions = 40000;
	h.nblocks = 2;
	h.nmembers = 2;
	h.members[0] = 0x99;
	h.members[1] = 0x77;
	h.seq = 5;
	h.clear_seq = 3;
	h.sets = 12;
	return h;
}

static void header(void)
{
	struct bm_bitmap_header h = sample(), d;
	uint8_t buf[BM_BITMAP_BLOCK];

	bm_bitmap_header_encode(&h, buf);
	CHECK(memcmp(buf, "BLKMIRROR-BITMAP", 16) == 0);
	CHECK_EQ(buf[40 + 2], 0x10); /* region 1 MiB, little-endian */
	CHECK_EQ(bm_bitmap_header_decode(buf, sizeof(buf), &d), 0);
	CHECK(memcmp(&h, &d, sizeof(h)) == 0);
	CHECK(bm_bitmap_header_decode(buf, 100, &d) == -EINVAL);
	buf[100] ^= 1;
	CHECK(bm_bitmap_header_decode(buf, sizeof(buf), &d) == -EINVAL);
	CHECK(strstr(bm_last_error(), "checksum") != NULL);
	memset(buf, 0, sizeof(buf));
	CHECK(bm_bitmap_header_decode(buf, sizeof(buf), &d) == -ENOENT);
	h.nblocks = 3; /* inconsistent with nregions */
	bm_bitmap_header_encode(&h, buf);
	CHECK(bm_bitmap_header_decode(buf, sizeof(buf), &d) == -EINVAL);
	h = sample();
	h.members[1] = 0; /* a hole in the member list */
	bm_bitmap_header_encode(&h, buf);
	CHECK(bm_bitmap_header_decode(buf, sizeof(buf), &d) == -EINVAL);
}

static void block(void)
{
	uint8_t bits[BM_BITMAP_BITS_BYTES] = {0}, out[BM_BITMAP_BITS_BYTES];
	uint8_t buf[BM_BITMAP_BLOCK];

	bits[0] = 0x05;
	bits[4079] = 0x80;
	bm_bitmap_block_encode(7, bits, buf);
	CHECK_EQ(bm_bitmap_block_decode(buf, sizeof(buf), 7, out), 0);
	CHECK(memcmp(bits, out, sizeof(bits)) == 0);
	CHECK(bm_bitmap_block_decode(buf, sizeof(buf), 6, out) == -EINVAL);
	buf[2000] ^= 0x10;
	CHECK(bm_bitmap_block_decode(buf, sizeof(buf), 7, out) == -EINVAL);
}

static void whole(void)
{
	struct bm_label l = {0};
	struct bm_bitmap_header h = sample(), d;
	uint64_t n;
	uint32_t nb;

	l.mirror_id = h.mirror_id;
	l.component_id = h.component_id;
	l.data_size = 40000ull << 20;
	l.bitmap_chunk = 1 << 20;
	CHECK_EQ(bm_bitmap_geometry(l.data_size, l.bitmap_chunk, &n, &nb), 0);
	l.bitmap_size = bm_bitmap_bytes(nb);
	uint8_t *area = calloc(1, l.bitmap_size), bits[5000];
	uint8_t blk[2][BM_BITMAP_BITS_BYTES] = {{0}};
	blk[0][0] = 0x08;                       /* region 3 */
	blk[1][(39999 - 32640) / 8] = 1u << ((39999 - 32640) % 8); /* last */
	bm_bitmap_header_encode(&h, area);
	bm_bitmap_block_encode(0, blk[0], area + 4096);
	bm_bitmap_block_encode(1, blk[1], area + 8192);
	CHECK_EQ(bm_bitmap_decode(area, l.bitmap_size, &l, &d, bits), 0);
	CHECK_EQ(bits[0], 0x08);
	CHECK(bits[39999 / 8] & (1u << (39999 % 8)));
	/* a bit past the last region */
	blk[1][(40000 - 32640) / 8] |= 1u << ((40000 - 32640) % 8);
	bm_bitmap_block_encode(1, blk[1], area + 8192);
	CHECK(bm_bitmap_decode(area, l.bitmap_size, &l, &d, bits) == -EINVAL);
	/* another component's bitmap */
	blk[1][(40000 - 32640) / 8] = 0;
	bm_bitmap_block_encode(1, blk[1], area + 8192);
	l.component_id = 0x98;
	CHECK(bm_bitmap_decode(area, l.bitmap_size, &l, &d, bits) == -EINVAL);
	l.component_id = h.component_id;
	CHECK_EQ(bm_bitmap_decode(area, l.bitmap_size, &l, &d, NULL), 0);
	CHECK(bm_bitmap_decode(area, l.bitmap_size - 1, &l, &d, NULL) < 0);
	l.bitmap_size = 0;
	CHECK(bm_bitmap_decode(area, 12288, &l, &d, NULL) == -ENOENT);
	free(area);
}

int main(void)
{
	geometry();
	spans();
	header();
	block();
	whole();
	return check_exit();
}
