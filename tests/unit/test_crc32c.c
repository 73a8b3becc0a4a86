/* crc32c against the standard check value and incremental use. */
#include <string.h>

#include "check.h"
#include "crc32c.h"

int main(void)
{
	const char *s = "123456789";

	CHECK_EQ(bm_crc32c(0, s, 9), 0xE3069283u);
	CHECK_EQ(bm_crc32c(0, "", 0), 0);
	CHECK_EQ(bm_crc32c(bm_crc32c(0, s, 4), s + 4, 5), 0xE3069283u);
	uint8_t zeros[32] = {0};
	CHECK_EQ(bm_crc32c(0, zeros, 32), 0x8A9136AAu); /* iSCSI test vector */
	return check_exit();
}
