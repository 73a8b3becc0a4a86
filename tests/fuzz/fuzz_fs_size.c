/* libFuzzer target: file system sizes from superblock bytes (lib/fs_size.c).
 * The input is also placed behind each magic so the size fields are
 * reached; a size found must be a whole number of 512-byte sectors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs_size.h"

static void check(const uint8_t *buf, size_t len)
{
	if (len > BM_FS_SIZE_HEAD)
		len = BM_FS_SIZE_HEAD;
	uint64_t bytes;
	const char *kind;

	if (bm_fs_size(buf, len, &bytes, &kind) == 0 &&
	    (bytes == 0 || bytes % 512 != 0 || kind == NULL))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[BM_FS_SIZE_HEAD];
	size_t n = size < sizeof(buf) ? size : sizeof(buf);

	/* as given, in a buffer of exactly its size (overreads show) */
	uint8_t *exact = malloc(size ? size : 1);
	if (!exact)
		return 0;
	memcpy(exact, data, size);
	check(exact, size);
	free(exact);

	/* ext: magic at 1024 + 56, fields from the input around it */
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 1024, data, n < sizeof(buf) - 1024 ? n : sizeof(buf) - 1024);
	buf[1024 + 56] = 0x53;
	buf[1024 + 57] = 0xEF;
	check(buf, 1024 + (n > 340 ? n : 340));
	/* XFS */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, n);
	memcpy(buf, "XFSB", 4);
	check(buf, n > 16 ? n : 16);
	/* btrfs */
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 65536, data, n < 65536 ? n : 65536);
	memcpy(buf + 65536 + 64, "_BHRfS_M", 8);
	check(buf, 65536 + (n > 120 ? n : 120));
	return 0;
}
