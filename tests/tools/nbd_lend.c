/*
 * nbd_lend URI ROUNDS: replies sent from lent read-ahead buffers stay
 * right while the chunks they come from are dropped and their memory is
 * reused.  Each round, on a mirror with the `stream` algorithm:
 *  - connection A starts a sequential stream (a few 128 KiB reads), then
 *    sends many more reads of it at once and does not read the replies:
 *    they are served by the read-ahead (lent: BM_IO_BORROW) and wait in
 *    the server's send queue, the socket being full;
 *  - connection B rewrites that range (a new version): the write drops
 *    the chunks those replies point into;
 *  - connection C reads another range sequentially: new chunks take
 *    buffers from the read-ahead's idle memory, the dropped ones' among
 *    them;
 *  - A then reads its replies: every 4 KiB block must be the right block,
 *    untorn, of the old or the new version (the read raced the write).
 * A lent buffer given back to the chunk memory while its reply waited
 * would be refilled with C's blocks (a wrong block number here) or, idle,
 * poisoned (AddressSanitizer stops the server at the sendmsg).  Exits 0
 * when all held.
 */
#include <inttypes.h>
#include <libnbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK 4096
#define IO (128 * 1024)
#define QUEUED 96                  /* reads left unread per round */
#define SPAN ((uint64_t)(3 + QUEUED) * IO)

static struct nbd_handle *dial(const char *uri)
{
	struct nbd_handle *h = nbd_create();
	if (!h || nbd_connect_uri(h, uri) < 0) {
		fprintf(stderr, "connect: %s\n", nbd_get_error());
		exit(2);
	}
	return h;
}

static void stamp(uint8_t *b, uint64_t block, uint64_t version)
{
	for (int i = 0; i < BLOCK; i += 16) {
		memcpy(b + i, &block, 8);
		memcpy(b + i + 8, &version, 8);
	}
}

static void fill(struct nbd_handle *h, uint64_t off, uint64_t len,
                 uint64_t version)
{
	static uint8_t b[1 << 20];

	for (uint64_t o = off; o < off + len; o += sizeof(b)) {
		uint64_t n = off + len - o < sizeof(b) ? off + len - o : sizeof(b);
		for (uint64_t k = 0; k < n / BLOCK; k++)
			stamp(b + k * BLOCK, o / BLOCK + k, version);
		if (nbd_pwrite(h, b, n, o, 0) < 0) {
			fprintf(stderr, "write: %s\n", nbd_get_error());
			exit(1);
		}
	}
}

static long failures, checked;

static void check(const uint8_t *buf, uint64_t off, uint32_t len,
                  uint64_t v_old, uint64_t v_new)
{
	for (uint32_t k = 0; k < len / BLOCK; k++) {
		uint64_t blk = off / BLOCK + k, b, v;
		const uint8_t *p = buf + (size_t)k * BLOCK;
		memcpy(&b, p, 8);
		memcpy(&v, p + 8, 8);
		for (int i = 16; i < BLOCK; i += 16)
			if (memcmp(p + i, p, 16) != 0) {
				if (failures++ < 10)
					fprintf(stderr, "block %" PRIu64 " is torn\n", blk);
				break;
			}
		if (b != blk || (v != v_old && v != v_new)) {
			if (failures++ < 10)
				fprintf(stderr, "block %" PRIu64 ": got block %" PRIu64
				        " version %" PRIu64 ", want version %" PRIu64
				        " or %" PRIu64 "\n", blk, b, v, v_old, v_new);
		}
		checked++;
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: nbd_lend URI ROUNDS\n");
		return 2;
	}
	const char *uri = argv[1];
	int rounds = atoi(argv[2]);
	struct nbd_handle *a = dial(uri), *b = dial(uri), *c = dial(uri);
	uint64_t size = (uint64_t)nbd_get_size(a);
	uint64_t nspan = size / SPAN;
	uint8_t *bufs = malloc((size_t)QUEUED * IO);
	int64_t cookies[QUEUED];
	static uint8_t one[IO];

	if (nspan < 2 || !bufs) {
		fprintf(stderr, "the export is too small\n");
		return 2;
	}
	uint64_t *ver = calloc(nspan, sizeof(*ver));
	if (!ver)
		return 2;
	fill(b, 0, nspan * SPAN, 1);
	for (uint64_t i = 0; i < nspan; i++)
		ver[i] = 1;
	for (int r = 0; r < rounds; r++) {
		uint64_t i_base = (uint64_t)r % nspan, i_other = (i_base + 1) % nspan;
		uint64_t base = i_base * SPAN, other = i_other * SPAN;
		uint64_t v = ver[i_base];
		/* A: a stream (the read-ahead starts after two reads) */
		for (int i = 0; i < 3; i++) {
			if (nbd_pread(a, one, IO, base + (uint64_t)i * IO, 0) < 0) {
				fprintf(stderr, "read: %s\n", nbd_get_error());
				return 1;
			}
			check(one, base + (uint64_t)i * IO, IO, v, v);
		}
		/* A: many more, replies left unread */
		uint64_t q0 = base + 3ull * IO;
		for (int i = 0; i < QUEUED; i++) {
			cookies[i] = nbd_aio_pread(a, bufs + (size_t)i * IO, IO,
			                           q0 + (uint64_t)i * IO,
			                           NBD_NULL_COMPLETION, 0);
			if (cookies[i] < 0) {
				fprintf(stderr, "aio_pread: %s\n", nbd_get_error());
				return 1;
			}
		}
		struct timespec ts = {0, 200 * 1000000L};
		nanosleep(&ts, NULL); /* served meanwhile, replies queued */
		/* B: a new version over the range (drops the chunks) */
		fill(b, base, SPAN, v + 1);
		ver[i_base] = v + 1;
		/* C: another stream takes the idle chunk buffers */
		for (uint64_t o = other; o < other + SPAN; o += IO) {
			if (nbd_pread(c, one, IO, o, 0) < 0) {
				fprintf(stderr, "read: %s\n", nbd_get_error());
				return 1;
			}
			check(one, o, IO, ver[i_other], ver[i_other]);
		}
		/* A: now the replies */
		while (nbd_aio_in_flight(a) > 0)
			if (nbd_poll(a, -1) < 0) {
				fprintf(stderr, "poll: %s\n", nbd_get_error());
				return 1;
			}
		for (int i = 0; i < QUEUED; i++) {
			if (nbd_aio_command_completed(a, (uint64_t)cookies[i]) != 1) {
				fprintf(stderr, "read %d: %s\n", i, nbd_get_error());
				return 1;
			}
			check(bufs + (size_t)i * IO, q0 + (uint64_t)i * IO, IO, v, v + 1);
		}
	}
	printf("%ld blocks checked, %ld failures\n", checked, failures);
	nbd_shutdown(a, 0);
	nbd_shutdown(b, 0);
	nbd_shutdown(c, 0);
	nbd_close(a);
	nbd_close(b);
	nbd_close(c);
	free(bufs);
	free(ver);
	return failures || !checked;
}
