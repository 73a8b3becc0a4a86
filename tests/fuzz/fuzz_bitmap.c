/* libFuzzer target: the bitmap loader (bitmap.c) on untrusted bytes.  The
 * header and block decoders on raw bytes; then the whole-area loader with
 * a label whose geometry comes from the input, once on the raw bytes and
 * once with magic, ids, geometry and checksums made right so that the
 * checks past them are reached.  A header that decodes must encode back
 * to one that decodes the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "crc32c.h"
#include "le.h"

static void roundtrip(const struct bm_bitmap_header *h)
{
	uint8_t buf[BM_BITMAP_BLOCK];
	struct bm_bitmap_header again;

	bm_bitmap_header_encode(h, buf);
	if (bm_bitmap_header_decode(buf, sizeof(buf), &again) != 0 ||
	    memcmp(h, &again, sizeof(again)) != 0)
		__builtin_trap();
}

/* Magic, ids, geometry and crcs made right in an area of n blocks. */
static void make_plausible(uint8_t *area, const struct bm_label *l,
                           uint64_t nregions, uint32_t nblocks)
{
	memcpy(area, BM_BITMAP_MAGIC, 16);
	bm_put32(area, 16, BM_BITMAP_VERSION);
	bm_put32(area, 20, BM_BITMAP_BLOCK);
	bm_put64(area, 24, l->mirror_id);
	bm_put64(area, 32, l->component_id);
	bm_put64(area, 40, l->bitmap_chunk);
	bm_put64(area, 48, nregions);
	bm_put32(area, 56, nblocks);
	bm_put32(area, BM_BITMAP_BLOCK - 4,
	         bm_crc32c(0, area, BM_BITMAP_BLOCK - 4));
	for (uint32_t i = 0; i < nblocks; i++) {
		uint8_t *b = area + (size_t)(i + 1) * BM_BITMAP_BLOCK;
		bm_put32(b, 0, BM_BITMAP_BLOCK_MAGIC);
		bm_put32(b, 4, i);
		bm_put32(b, 8, 0);
		bm_put32(b, 12, bm_crc32c(bm_crc32c(0, b, 12), b + 16,
		                          BM_BITMAP_BLOCK - 16));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bm_bitmap_header h;
	struct bm_label l = {0};
	uint64_t nregions;
	uint32_t nblocks;

	if (bm_bitmap_header_decode(data, size, &h) == 0)
		roundtrip(&h);
	bm_bitmap_block_decode(data, size, 0, NULL);
	if (size < 10)
		return 0;
	l.mirror_id = 1;
	l.component_id = 2;
	l.data_size = (bm_get64(data, 0) % (8ull << 30)) & ~(uint64_t)4095;
	l.bitmap_chunk = 1u << (16 + data[8] % 16);
	if (bm_bitmap_geometry(l.data_size, l.bitmap_chunk, &nregions,
	                       &nblocks) < 0)
		return 0;
	l.bitmap_size = bm_bitmap_bytes(nblocks);
	size_t len = (size_t)l.bitmap_size;
	uint8_t *area = calloc(1, len), *bits = malloc((size_t)(nregions + 7) / 8);
	if (!area || !bits)
		abort();
	memcpy(area, data + 10, size - 10 < len ? size - 10 : len);
	if (bm_bitmap_decode(area, len, &l, &h, bits) == 0)
		roundtrip(&h);
	if (data[9] & 1)
		make_plausible(area, &l, nregions, nblocks);
	if (bm_bitmap_decode(area, len - (data[9] & 2 ? 1 : 0), &l, &h, bits) == 0)
		roundtrip(&h);
	free(area);
	free(bits);
	return 0;
}
