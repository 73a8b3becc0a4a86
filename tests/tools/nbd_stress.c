/*
 * nbd_stress URI SECONDS [WRITERS] [READERS]: a consistency checker for the
 * read path.  Writers (each on its own connection) rewrite 4 KiB blocks with
 * a stamp (block number, version); each block belongs to one writer, so its
 * versions only grow.  Readers (also on their own connections) read
 * sequential streams of 128 KiB (which the stream algorithm reads ahead)
 * and random blocks, and check every block they get: the right block
 * number, and a version no older than the last one acknowledged before the
 * read was issued.  A stale read-ahead chunk, a read from a component that
 * missed a write, or a torn block fails the run.  Exits 0 when all held.
 */
#include <inttypes.h>
#include <libnbd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK 4096
#define STREAM_IO (128 * 1024)

static const char *uri;
static uint64_t nblocks;
static _Atomic uint64_t *acked;   /* last acknowledged version per block */
static atomic_bool stop;
static atomic_long failures, reads_checked, writes_done;
static int nwriters;

static struct nbd_handle *dial(void)
{
	struct nbd_handle *h = nbd_create();
	if (!h || nbd_connect_uri(h, uri) < 0) {
		fprintf(stderr, "connect: %s\n", nbd_get_error());
		exit(2);
	}
	return h;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void stamp(uint8_t *b, uint64_t block, uint64_t version)
{
	for (int i = 0; i < BLOCK; i += 16) {
		memcpy(b + i, &block, 8);
		memcpy(b + i + 8, &version, 8);
	}
}

/* Checks len bytes read at off against what was acknowledged before. */
static void check(const uint8_t *buf, uint64_t off, uint32_t len,
                  const uint64_t *floor)
{
	for (uint32_t k = 0; k < len / BLOCK; k++) {
		uint64_t blk = off / BLOCK + k, b, v;
		const uint8_t *p = buf + (size_t)k * BLOCK;
		memcpy(&b, p, 8);
		memcpy(&v, p + 8, 8);
		for (int i = 16; i < BLOCK; i += 16)
			if (memcmp(p + i, p, 16) != 0) {
				fprintf(stderr, "block %" PRIu64 " is torn\n", blk);
				atomic_fetch_add(&failures, 1);
				break;
			}
		if (b != blk || v < floor[k]) {
			fprintf(stderr, "block %" PRIu64 ": got block %" PRIu64
			        " version %" PRIu64 ", want version >= %" PRIu64 "\n",
			        blk, b, v, floor[k]);
			atomic_fetch_add(&failures, 1);
		}
		atomic_fetch_add(&reads_checked, 1);
	}
}

static void *writer(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct nbd_handle *h = dial();
	uint8_t *b = malloc(BLOCK);
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);

	while (!atomic_load(&stop)) {
		/* blocks id, id + nwriters, ... belong to this writer */
		uint64_t blk = (rnd(&seed) % (nblocks / (uint64_t)nwriters)) *
		               (uint64_t)nwriters + (uint64_t)id;
		uint64_t v = atomic_load(&acked[blk]) + 1;
		stamp(b, blk, v);
		if (nbd_pwrite(h, b, BLOCK, blk * BLOCK, 0) < 0) {
			fprintf(stderr, "write: %s\n", nbd_get_error());
			atomic_fetch_add(&failures, 1);
			break;
		}
		atomic_store(&acked[blk], v);
		atomic_fetch_add(&writes_done, 1);
	}
	nbd_shutdown(h, 0);
	nbd_close(h);
	free(b);
	return NULL;
}

static void *reader(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct nbd_handle *h = dial();
	uint8_t *b = malloc(STREAM_IO);
	uint64_t floor[STREAM_IO / BLOCK];
	uint64_t seed = 0xdeadbeefull * (uint64_t)(id + 7);
	uint64_t pos = (rnd(&seed) % nblocks) * BLOCK & ~(uint64_t)(STREAM_IO - 1);

	while (!atomic_load(&stop)) {
		uint64_t off;
		uint32_t len;
		if (rnd(&seed) % 8 == 0) { /* a random block */
			off = (rnd(&seed) % nblocks) * BLOCK;
			len = BLOCK;
		} else {                   /* the stream goes on */
			if (pos + STREAM_IO > nblocks * BLOCK)
				pos = 0;
			off = pos;
			len = STREAM_IO;
			pos += STREAM_IO;
		}
		for (uint32_t k = 0; k < len / BLOCK; k++)
			floor[k] = atomic_load(&acked[off / BLOCK + k]);
		if (nbd_pread(h, b, len, off, 0) < 0) {
			fprintf(stderr, "read: %s\n", nbd_get_error());
			atomic_fetch_add(&failures, 1);
			break;
		}
		check(b, off, len, floor);
	}
	nbd_shutdown(h, 0);
	nbd_close(h);
	free(b);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: nbd_stress URI SECONDS [WRITERS] [READERS]\n");
		return 2;
	}
	uri = argv[1];
	int seconds = atoi(argv[2]);
	nwriters = argc > 3 ? atoi(argv[3]) : 2;
	int nreaders = argc > 4 ? atoi(argv[4]) : 3;
	struct nbd_handle *h = dial();
	int64_t size = nbd_get_size(h);
	nblocks = (uint64_t)size / BLOCK;
	nblocks -= nblocks % (uint64_t)nwriters;
	acked = calloc(nblocks, sizeof(*acked));
	/* Stamp every block with version 0 first. */
	uint8_t *b = malloc(STREAM_IO);
	for (uint64_t off = 0; off + STREAM_IO <= nblocks * BLOCK; off += STREAM_IO) {
		for (int k = 0; k < STREAM_IO / BLOCK; k++)
			stamp(b + k * BLOCK, off / BLOCK + (uint64_t)k, 0);
		if (nbd_pwrite(h, b, STREAM_IO, off, 0) < 0) {
			fprintf(stderr, "fill: %s\n", nbd_get_error());
			return 1;
		}
	}
	nblocks -= nblocks % (STREAM_IO / BLOCK); /* only what was stamped */
	nblocks -= nblocks % (uint64_t)nwriters;
	free(b);
	nbd_close(h);

	pthread_t t[64];
	int n = 0;
	for (int i = 0; i < nwriters && n < 64; i++)
		pthread_create(&t[n++], NULL, writer, (void *)(intptr_t)i);
	for (int i = 0; i < nreaders && n < 64; i++)
		pthread_create(&t[n++], NULL, reader, (void *)(intptr_t)i);
	struct timespec ts = {seconds, 0};
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("%ld blocks checked, %ld writes, %ld failures\n",
	       atomic_load(&reads_checked), atomic_load(&writes_done),
	       atomic_load(&failures));
	return atomic_load(&failures) || atomic_load(&reads_checked) == 0;
}
