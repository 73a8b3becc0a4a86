/* The benchmark's temporary mirror (lib/benchmirror.c): read-only, a write
 * of any kind is refused (EROFS, the engine then fails that component)
 * and no byte of a component changes, and closing it writes no label;
 * writable, writes reach every component and still no label is written. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchmirror.h"
#include "check.h"

#define SIZE (4 << 20)

static char dir[] = "/tmp/bm-benchmirror.XXXXXX";
static char path[2][256];

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int result;
};

static void done(struct bm_io *io, int result)
{
	struct waiter *w = io->opaque;
	pthread_mutex_lock(&w->lock);
	w->result = result;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Submits io and waits; the submit's error or the completion's result. */
static int run(bm_mirror *m, enum bm_io_type type, void *buf, uint32_t len,
               uint64_t off)
{
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	                   false, 0};
	struct bm_io io = {.type = type, .offset = off, .length = len,
	                   .buf = buf, .done = done, .opaque = &w};
	int err = bm_mirror_submit(m, &io);
	if (err < 0)
		return err;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.result;
}

/* Reads a whole file into a new buffer. */
static unsigned char *slurp(const char *p)
{
	unsigned char *b = malloc(SIZE);
	int fd = open(p, O_RDONLY);
	CHECK(fd >= 0 && b);
	if (fd < 0 || !b)
		exit(1);
	CHECK(pread(fd, b, SIZE, 0) == SIZE);
	close(fd);
	return b;
}

static void open_both(struct bm_backend **be)
{
	for (int i = 0; i < 2; i++)
		CHECK(bm_backend_open(path[i], false, &be[i]) == 0);
}

static void check_read_only(void)
{
	static unsigned char buf[131072] __attribute__((aligned(4096)));
	struct bm_backend *be[2];
	unsigned char *before[2], *after;
	bm_mirror *m;

	for (int i = 0; i < 2; i++)
		before[i] = slurp(path[i]);
	open_both(be);
	CHECK(bm_bench_mirror_open(be, 2, false, &m) == 0);
	CHECK_EQ(bm_mirror_size(m), SIZE);
	for (int b = 0; b < BM_BALANCE_COUNT; b++) {
		CHECK(bm_mirror_configure(m, b, 0) == 0);
		for (uint64_t off = 0; off < SIZE; off += sizeof(buf))
			CHECK(run(m, BM_IO_READ, buf, sizeof(buf), off) == 0);
		CHECK(memcmp(buf, before[0] + SIZE - sizeof(buf),
		             sizeof(buf)) == 0);
	}
	memset(buf, 0x77, sizeof(buf));
	CHECK_EQ(run(m, BM_IO_WRITE, buf, sizeof(buf), 0), -EROFS);
	CHECK_EQ(run(m, BM_IO_WRITE_ZEROES, NULL, 65536, 0), -EROFS);
	CHECK_EQ(run(m, BM_IO_TRIM, NULL, 65536, 0), -EROFS);
	CHECK(run(m, BM_IO_FLUSH, NULL, 0, 0) == 0);
	bm_bench_mirror_close(m);
	for (int i = 0; i < 2; i++) {
		be[i]->ops->close(be[i]);
		after = slurp(path[i]);
		CHECK(memcmp(before[i], after, SIZE) == 0);
		free(after);
		free(before[i]);
	}
}

static void check_writable(void)
{
	static unsigned char buf[65536] __attribute__((aligned(4096)));
	struct bm_backend *be[2];
	bm_mirror *m;

	open_both(be);
	CHECK(bm_bench_mirror_open(be, 2, true, &m) == 0);
	memset(buf, 0x77, sizeof(buf));
	CHECK(run(m, BM_IO_WRITE, buf, sizeof(buf), 0) == 0);
	CHECK(run(m, BM_IO_FLUSH, NULL, 0, 0) == 0);
	bm_bench_mirror_close(m);
	for (int i = 0; i < 2; i++) {
		char name[BM_NAME_MAX + 1];
		unsigned char *after = slurp(path[i]);
		be[i]->ops->close(be[i]);
		CHECK(after[0] == 0x77 && after[65535] == 0x77);
		/* nothing past what was written: no label at the end */
		for (size_t k = 65536; k < SIZE; k++)
			if (after[k] != (unsigned char)(k * 31)) {
				CHECK(!"a byte past the write changed");
				break;
			}
		CHECK_EQ(bm_label_probe(path[i], name, sizeof(name)), -ENOENT);
		free(after);
	}
}

int main(void)
{
	unsigned char *data = malloc(SIZE);

	if (!mkdtemp(dir) || !data)
		return 1;
	for (int i = 0; i < 2; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/c%d", dir, i);
		for (size_t k = 0; k < SIZE; k++)
			data[k] = (unsigned char)(k * 31);
		int fd = open(path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
		CHECK(fd >= 0 && pwrite(fd, data, SIZE, 0) == SIZE);
		close(fd);
	}
	free(data);
	check_read_only();
	check_writable();
	for (int i = 0; i < 2; i++)
		unlink(path[i]);
	rmdir(dir);
	return check_exit();
}
