/* libFuzzer target: the lease decoder on raw bytes, and on bytes given a
 * valid magic and checksum so that every field check is reached.  A lease
 * that decodes must encode back to one that decodes the same, and its
 * holder text must stay one printable line. */
#include <stdint.h>
#include <string.h>

#include "crc32c.h"
#include "lease.h"

static void check(const struct bm_lease *l)
{
	uint8_t buf[BM_LEASE_SIZE];
	struct bm_lease again;
	char holder[200];

	bm_lease_encode(l, buf);
	if (bm_lease_decode(buf, sizeof(buf), &again) != 0 ||
	    memcmp(l, &again, sizeof(again)) != 0)
		__builtin_trap();
	bm_lease_holder_str(l, holder, sizeof(holder));
	for (const char *p = holder; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[BM_LEASE_SIZE];
	struct bm_lease l;

	if (bm_lease_decode(data, size, &l) == 0)
		check(&l);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
	memcpy(buf, BM_LEASE_MAGIC, 16);
	buf[16] = 1, buf[17] = buf[18] = buf[19] = 0;
	uint32_t crc = bm_crc32c(0, buf, BM_LEASE_USED - 4);
	memcpy(buf + BM_LEASE_USED - 4, &crc, 4);
	if (bm_lease_decode(buf, sizeof(buf), &l) == 0)
		check(&l);
	return 0;
}
