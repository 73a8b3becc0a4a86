/* File system sizes from superblocks (lib/fs_size.c): ext2/3/4 with and
 * without 64bit, XFS, btrfs; truncated and implausible superblocks are
 * not sizes. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fs_size.h"

static uint8_t buf[BM_FS_SIZE_HEAD];

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_be32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void ext(uint32_t blocks_lo, uint32_t blocks_hi, uint32_t log,
                uint32_t compat, uint32_t incompat)
{
	memset(buf, 0, sizeof(buf));
	put_le32(buf + 1024 + 4, blocks_lo);
	put_le32(buf + 1024 + 24, log);
	buf[1024 + 56] = 0x53;
	buf[1024 + 57] = 0xEF;
	put_le32(buf + 1024 + 92, compat);
	put_le32(buf + 1024 + 96, incompat);
	put_le32(buf + 1024 + 336, blocks_hi);
}

int main(void)
{
	uint64_t bytes = 0;
	const char *kind = NULL;

	/* ext4, 4 KiB blocks, 65536 of them: 256 MiB; hi ignored without 64bit */
	ext(65536, 1, 2, 0x4, 0x40);
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), 0);
	CHECK_EQ(bytes, 256ull << 20);
	CHECK(kind && strcmp(kind, "ext4") == 0);
	/* 64bit: blocks_count_hi counts */
	ext(0, 1, 2, 0, 0x80);
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), 0);
	CHECK_EQ(bytes, (1ull << 32) * 4096);
	/* ext3 (journal), ext2 (nothing), 1 KiB blocks */
	ext(1000, 0, 0, 0x4, 0);
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), 0);
	CHECK_EQ(bytes, 1000 * 1024);
	CHECK(strcmp(kind, "ext3") == 0);
	ext(1000, 0, 0, 0, 0);
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), 0);
	CHECK(strcmp(kind, "ext2") == 0);
	/* implausible block size, zero blocks, truncated superblock */
	ext(1000, 0, 30, 0, 0);
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), -ENOENT);
	ext(0, 0, 2, 0, 0);
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), -ENOENT);
	ext(1000, 0, 2, 0, 0);
	CHECK_EQ(bm_fs_size(buf, 1024 + 100, &bytes, &kind), -ENOENT);

	/* XFS: 4096-byte blocks, 0x10000 of them */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "XFSB", 4);
	put_be32(buf + 4, 4096);
	put_be32(buf + 12, 0x10000);
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), 0);
	CHECK_EQ(bytes, 256ull << 20);
	CHECK(strcmp(kind, "xfs") == 0);
	put_be32(buf + 4, 3000);
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), -ENOENT);

	/* btrfs: total_bytes at 64 KiB + 112 */
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 65536 + 64, "_BHRfS_M", 8);
	put_le32(buf + 65536 + 112, 1u << 30);
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), 0);
	CHECK_EQ(bytes, 1ull << 30);
	CHECK(strcmp(kind, "btrfs") == 0);
	CHECK_EQ(bm_fs_size(buf, 65536 + 100, &bytes, &kind), -ENOENT);

	/* nothing */
	memset(buf, 0, sizeof(buf));
	CHECK_EQ(bm_fs_size(buf, sizeof(buf), &bytes, &kind), -ENOENT);
	CHECK_EQ(bm_fs_size(buf, 0, &bytes, &kind), -ENOENT);
	return check_exit();
}
