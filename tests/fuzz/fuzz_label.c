/* libFuzzer target: the label decoder on raw bytes, and on bytes given a
 * valid magic and checksum so that every field check is reached.  A label
 * that decodes must encode back to one that decodes the same (a version 1
 * label comes back as version 3, every field the same). */
#include <stdint.h>
#include <string.h>

#include "crc32c.h"
#include "label.h"

static void roundtrip(const struct bm_label *l)
{
	uint8_t buf[BM_LABEL_SIZE];
	struct bm_label again;

	bm_label_encode(l, buf);
	if (bm_label_decode(buf, sizeof(buf), &again) != 0)
		__builtin_trap();
	/* an older version's label is written as version 3 (the same fields
	 * as 4, which only a writer that caps a copy's events sets) */
	if (again.version != (l->version >= 4 ? BM_LABEL_VERSION : 3))
		__builtin_trap();
	again.version = l->version;
	if (memcmp(l, &again, sizeof(again)) != 0)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[BM_LABEL_SIZE];
	struct bm_label l;

	if (bm_label_decode(data, size, &l) == 0)
		roundtrip(&l);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
	memcpy(buf, BM_LABEL_MAGIC, 16);
	uint32_t crc = bm_crc32c(0, buf, BM_LABEL_USED - 4);
	memcpy(buf + BM_LABEL_USED - 4, &crc, 4);
	if (bm_label_decode(buf, sizeof(buf), &l) == 0)
		roundtrip(&l);
	return 0;
}
