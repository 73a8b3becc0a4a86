/*
 * nbd_zero URI zero|trim OFFSET LENGTH: sends one NBD_CMD_WRITE_ZEROES or
 * NBD_CMD_TRIM of that length (qemu-io and nbdcopy split large ones, which
 * would not exercise a server's handling of a single big request).  Exits 0
 * when the server acknowledged it, 1 with the error otherwise.
 */
#include <libnbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct nbd_handle *h;
	unsigned long long off, len;
	int rc;

	if (argc != 5 || (strcmp(argv[2], "zero") && strcmp(argv[2], "trim"))) {
		fprintf(stderr, "usage: nbd_zero URI zero|trim OFFSET LENGTH\n");
		return 2;
	}
	off = strtoull(argv[3], NULL, 0);
	len = strtoull(argv[4], NULL, 0);
	h = nbd_create();
	if (!h || nbd_connect_uri(h, argv[1]) < 0) {
		fprintf(stderr, "nbd_zero: %s\n", nbd_get_error());
		return 1;
	}
	if (strcmp(argv[2], "zero") == 0)
		rc = nbd_zero(h, len, off, 0);
	else
		rc = nbd_trim(h, len, off, 0);
	if (rc < 0) {
		fprintf(stderr, "nbd_zero: %s %llu at %llu: %s\n", argv[2], len, off,
		        nbd_get_error());
		nbd_close(h);
		return 1;
	}
	nbd_shutdown(h, 0);
	nbd_close(h);
	return 0;
}
