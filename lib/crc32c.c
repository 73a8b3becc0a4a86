/*
 * CRC-32C in software, one table, byte at a time.  It only checksums 4 KiB
 * labels and bitmap blocks, so the simple form is fast enough; the table is
 * built once, thread-safely, on first use.
 */
#include <pthread.h>

#include "crc32c.h"

#define CRC32C_POLY_REFLECTED 0x82F63B78u

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
		table[i] = c;
	}
}

uint32_t bm_crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

	pthread_once(&table_once, build_table);
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
