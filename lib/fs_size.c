/*
 * File system sizes from superblocks: explicit little/big-endian loads at
 * fixed offsets, every offset checked against len, every product checked
 * for overflow.  Only the fields that give the size are read:
 *   ext2/3/4  at 1024: magic 0xEF53 @56, blocks_count_lo @4, log_block_size
 *             @24 (block = 1024 << n), feature_incompat @96 (0x80 = 64bit:
 *             blocks_count_hi @336)
 *   XFS       at 0:    "XFSB", blocksize @4 (BE32), dblocks @8 (BE64)
 *   btrfs     at 64K:  "_BHRfS_M" @64, total_bytes @112 (LE64)
 */
#include <errno.h>
#include <string.h>

#include "fs_size.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static int mul(uint64_t a, uint64_t b, uint64_t *out)
{
	if (a == 0 || b == 0 || a > UINT64_MAX / b)
		return -ENOENT;
	*out = a * b;
	return 0;
}

static int ext_size(const uint8_t *h, size_t len, uint64_t *bytes,
                    const char **kind)
{
	const uint8_t *sb = h + 1024;

	if (len < 1024 + 340 || sb[56] != 0x53 || sb[57] != 0xEF)
		return -ENOENT;
	uint32_t log = le32(sb + 24);
	uint32_t compat = le32(sb + 92), incompat = le32(sb + 96);
	uint64_t blocks = le32(sb + 4);
	if (log > 6) /* 1 KiB to 64 KiB blocks */
		return -ENOENT;
	if (incompat & 0x80)
		blocks |= (uint64_t)le32(sb + 336) << 32;
	/* Which of ext2/3/4, as blkid names them: extents, 64bit, flex_bg
	 * (incompat 0x40, 0x80, 0x200) make ext4; a journal (compat 0x4)
	 * ext3. */
	*kind = (incompat & 0x2c0) ? "ext4" : (compat & 0x4) ? "ext3" : "ext2";
	return mul(blocks, 1024u << log, bytes);
}

static int xfs_size(const uint8_t *h, size_t len, uint64_t *bytes,
                    const char **kind)
{
	if (len < 16 || memcmp(h, "XFSB", 4) != 0)
		return -ENOENT;
	uint32_t bs = be32(h + 4);
	if (bs < 512 || bs > 65536 || (bs & (bs - 1)))
		return -ENOENT;
	*kind = "xfs";
	return mul(be64(h + 8), bs, bytes);
}

static int btrfs_size(const uint8_t *h, size_t len, uint64_t *bytes,
                      const char **kind)
{
	const uint8_t *sb = h + 65536;

	if (len < 65536 + 120 || memcmp(sb + 64, "_BHRfS_M", 8) != 0)
		return -ENOENT;
	*bytes = le64(sb + 112);
	*kind = "btrfs";
	return (*bytes && *bytes % 512 == 0) ? 0 : -ENOENT;
}

int bm_fs_size(const uint8_t *head, size_t len, uint64_t *bytes,
               const char **kind)
{
	if (ext_size(head, len, bytes, kind) == 0 ||
	    xfs_size(head, len, bytes, kind) == 0 ||
	    btrfs_size(head, len, bytes, kind) == 0)
		return 0;
	return -ENOENT;
}
