/* libFuzzer target: the whole NBD negotiation phase, fed the input as the
 * client's bytes through a pipe, its replies written to /dev/null.  It must
 * end (the input is finite) without a crash, leak or hang. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "nbd_server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct bm_nbd_export exp = {"m0", 1 << 20, 0x14d};
	int p[2], out;

	if (size > 60000)
		size = 60000; /* stays within the pipe's buffer */
	if (pipe(p) < 0)
		return 0;
	fcntl(p[1], F_SETPIPE_SZ, 1 << 16);
	if (write(p[1], data, size) != (ssize_t)size) {
		close(p[0]);
		close(p[1]);
		return 0;
	}
	close(p[1]);
	out = open("/dev/null", O_WRONLY);
	bm_nbd_negotiate(p[0], out, &exp);
	close(out);
	close(p[0]);
	return 0;
}
