/*
 * lease_tool: reads or forges the lease block of a component, for tests.
 *
 *   lease_tool dump COMPONENT
 *       one line: "none", "damaged: WHY", or
 *       "state=active seq=N owner=HEX pid=P host=H mirror=M interval=MS"
 *   lease_tool write COMPONENT active|clean HOST PID [SEQ]
 *       writes a lease of another server (a fresh random owner id), as a
 *       second host would
 *
 * It opens the component without the local lock, like a server on another
 * host would see it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "backend.h"
#include "blkmirror.h"
#include "lease.h"

static int dump(struct bm_backend *be)
{
	struct bm_lease l;
	int err = bm_lease_read(be, &l);

	if (err == -ENOENT) {
		printf("none\n");
		return 0;
	}
	if (err == -EINVAL || err == -EPROTO) {
		printf("damaged: %s\n", bm_last_error());
		return 0;
	}
	if (err < 0) {
		fprintf(stderr, "lease_tool: %s\n", bm_last_error());
		return 1;
	}
	printf("state=%s seq=%" PRIu64 " owner=%016" PRIx64 " pid=%" PRIu32
	       " host=%s mirror=%s interval=%" PRIu32 "\n",
	       l.state == BM_LEASE_ACTIVE ? "active" : "clean", l.seq,
	       l.owner_id, l.pid, l.host, l.name, l.interval_ms);
	return 0;
}

static int forge(struct bm_backend *be, char **argv, int argc)
{
	struct bm_lease l = {.version = BM_LEASE_VERSION, .seq = 1,
	                     .interval_ms = 1000, .time_ms = 0};
	uint8_t *buf;
	int err;

	l.state = strcmp(argv[0], "clean") == 0 ? BM_LEASE_CLEAN : BM_LEASE_ACTIVE;
	snprintf(l.host, sizeof(l.host), "%s", argv[1]);
	l.pid = (uint32_t)strtoul(argv[2], NULL, 10);
	if (argc > 3)
		l.seq = strtoull(argv[3], NULL, 10);
	snprintf(l.name, sizeof(l.name), "forged");
	while (l.owner_id == 0)
		if (getrandom(&l.owner_id, sizeof(l.owner_id), 0) != 8)
			return 1;
	if (posix_memalign((void **)&buf, 4096, BM_LEASE_SIZE))
		return 1;
	bm_lease_encode(&l, buf);
	err = bm_backend_io_wait_timeout(be, BM_BOP_WRITE, buf, BM_LEASE_SIZE,
	                                 bm_lease_offset(be->size), BM_BOP_FUA,
	                                 5000);
	free(buf);
	if (err < 0) {
		fprintf(stderr, "lease_tool: write: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bm_backend *be;
	int rc;

	if (argc < 3 || (strcmp(argv[1], "dump") && strcmp(argv[1], "write")) ||
	    (strcmp(argv[1], "write") == 0 && argc < 6)) {
		fprintf(stderr, "usage: lease_tool dump COMPONENT | lease_tool "
		        "write COMPONENT active|clean HOST PID [SEQ]\n");
		return 2;
	}
	if (bm_backend_open(argv[2], false, &be) < 0) {
		fprintf(stderr, "lease_tool: %s\n", bm_last_error());
		return 1;
	}
	rc = strcmp(argv[1], "dump") == 0 ? dump(be) : forge(be, argv + 3, argc - 3);
	be->ops->close(be);
	return rc;
}
