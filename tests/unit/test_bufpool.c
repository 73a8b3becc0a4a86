/* The buffer pool: warm reuse, size classes, alignment, and the bound on
 * what it keeps idle, also with threads taking and giving at once; and a
 * pool of its own under the peak rule (the read-ahead's chunks). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blkmirror.h"
#include "bufpool.h"
#include "check.h"

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	unsigned char tag0 = (unsigned char)(seed * 16);
	void *held[8] = {0};
	size_t len[8] = {0};

	for (int i = 0; i < 20000; i++) {
		int k = (int)(rand_r(&seed) % 8);
		if (held[k]) {
			/* what we wrote is still there: nobody else had it */
			if (((unsigned char *)held[k])[len[k] - 1] !=
			    (unsigned char)(tag0 + k))
				return (void *)1;
			bm_buf_put(held[k], len[k]);
			held[k] = NULL;
		} else {
			len[k] = 1 + rand_r(&seed) % (1u << 20);
			held[k] = bm_buf_get(len[k]);
			if (!held[k])
				return (void *)1;
			memset(held[k], tag0 + k, len[k]);
		}
	}
	for (int k = 0; k < 8; k++)
		bm_buf_put(held[k], len[k]);
	return NULL;
}

/* The peak rule: idle + in use never exceeds the most in use since the
 * last trim; a steady user maps nothing; a larger warm buffer serves a
 * smaller request when the caller accepts it; trim gives all idle back. */
static void peak_rule(void)
{
	struct bm_bufpool p;
	void *b[8];
	size_t cap[8];
	const size_t MiB = 1 << 20;

	bm_bufpool_init(&p);
	for (int i = 0; i < 4; i++) {
		b[i] = bm_bufpool_get(&p, 2 * MiB, 0, &cap[i]);
		CHECK(b[i] != NULL && cap[i] == 2 * MiB);
		memset(b[i], i, 2 * MiB);
	}
	CHECK_EQ(p.maps, 4);
	CHECK_EQ(p.peak, 8 * MiB);
	/* steady: give one back, take one: the same buffer, nothing mapped */
	for (int r = 0; r < 100; r++) {
		void *x = b[r % 4];
		bm_bufpool_put(&p, x, 2 * MiB);
		b[r % 4] = bm_bufpool_get(&p, 2 * MiB, 0, &cap[r % 4]);
		CHECK(b[r % 4] == x);
	}
	CHECK_EQ(p.maps, 4);
	/* a smaller request takes a warm buffer twice its size if allowed,
	 * and not without leave */
	bm_bufpool_put(&p, b[0], 2 * MiB);
	void *s = bm_bufpool_get(&p, MiB, 0, &cap[4]);
	CHECK(s != b[0] && cap[4] == MiB);
	CHECK_EQ(p.maps, 5);
	/* that map went past the peak: nothing idle is left over it */
	CHECK(p.in_use + p.idle_bytes <= p.peak);
	bm_bufpool_put(&p, s, MiB);
	CHECK(p.in_use + p.idle_bytes <= p.peak);
	b[0] = bm_bufpool_get(&p, 2 * MiB, 0, &cap[0]);
	CHECK(p.in_use + p.idle_bytes <= p.peak);
	bm_bufpool_put(&p, b[0], 2 * MiB);
	uint64_t maps = p.maps;
	s = bm_bufpool_get(&p, MiB, 2 * MiB, &cap[4]);
	CHECK(s != NULL && cap[4] == 2 * MiB);
	CHECK_EQ(p.maps, maps);
	bm_bufpool_put(&p, s, cap[4]);
	/* a larger size than any idle one: mapped, and idle ones shed so
	 * that the total stays within the new peak */
	for (int i = 1; i < 4; i++)
		bm_bufpool_put(&p, b[i], 2 * MiB);
	CHECK_EQ(p.in_use, 0);
	for (int i = 0; i < 2; i++) {
		b[i] = bm_bufpool_get(&p, 4 * MiB, 0, &cap[i]);
		CHECK(b[i] != NULL && cap[i] == 4 * MiB);
		CHECK(p.in_use + p.idle_bytes <= p.peak);
	}
	b[2] = bm_bufpool_get(&p, 4 * MiB, 0, &cap[2]);
	CHECK(p.in_use + p.idle_bytes <= p.peak);
	CHECK(p.peak <= 12 * MiB);
	/* above every class: a mapping of its own, never kept */
	b[3] = bm_bufpool_get(&p, (size_t)BM_MAX_IO + 4096, 0, &cap[3]);
	CHECK(b[3] != NULL && cap[3] == (size_t)BM_MAX_IO + 4096);
	((char *)b[3])[cap[3] - 1] = 1;
	bm_bufpool_put(&p, b[3], cap[3]);
	for (int i = 0; i < 3; i++)
		bm_bufpool_put(&p, b[i], cap[i]);
	CHECK(p.idle_bytes > 0);
	bm_bufpool_trim(&p);
	CHECK_EQ(p.idle_bytes, 0);
	CHECK_EQ(p.peak, 0);
	/* memory given back and mapped again is usable (under ASan: no
	 * poison left on addresses the system hands out again) */
	for (int i = 0; i < 3; i++) {
		b[i] = bm_bufpool_get(&p, 4 * MiB, 0, &cap[i]);
		CHECK(b[i] != NULL);
		memset(b[i], 7, cap[i]);
	}
	for (int i = 0; i < 3; i++)
		bm_bufpool_put(&p, b[i], cap[i]);
	bm_bufpool_destroy(&p);
}

int main(void)
{
	/* classes */
	CHECK_EQ(bm_buf_capacity(1), 4096);
	CHECK_EQ(bm_buf_capacity(4096), 4096);
	CHECK_EQ(bm_buf_capacity(4097), 8192);
	CHECK_EQ(bm_buf_capacity(128 << 10), 128 << 10);
	CHECK_EQ(bm_buf_capacity((128 << 10) + 1), 256 << 10);
	CHECK_EQ(bm_buf_capacity(BM_MAX_IO), BM_MAX_IO);
	CHECK_EQ(bm_buf_capacity((size_t)BM_MAX_IO + 1), 0);
	CHECK(bm_buf_get((size_t)BM_MAX_IO + 1) == NULL);

	/* aligned, and the buffer given back is the next one of its class */
	void *a = bm_buf_get(128 << 10);
	CHECK(a != NULL);
	CHECK(((uintptr_t)a & 4095) == 0);
	memset(a, 1, 128 << 10);
	bm_buf_put(a, 128 << 10);
	CHECK_EQ(bm_bufpool_idle_bytes(), 128 << 10);
	void *b = bm_buf_get(100 << 10); /* same class */
	CHECK(b == a);
	CHECK_EQ(bm_bufpool_idle_bytes(), 0);
	void *c = bm_buf_get(3000);
	CHECK(c != NULL && ((uintptr_t)c & 4095) == 0);
	bm_buf_put(c, 3000);
	bm_buf_put(b, 100 << 10);

	/* idle memory is bounded: give back far more than the bound */
	enum { N = 64 };
	void *many[N];
	for (int i = 0; i < N; i++) {
		many[i] = bm_buf_get(1 << 20);
		CHECK(many[i] != NULL);
	}
	for (int i = 0; i < N; i++)
		bm_buf_put(many[i], 1 << 20);
	CHECK(bm_bufpool_idle_bytes() <= BM_BUFPOOL_IDLE_MAX);
	CHECK(bm_bufpool_idle_bytes() >= BM_BUFPOOL_IDLE_MAX - (1 << 20) - (8 << 10));

	/* a buffer above the pool's bound is never kept */
	uint64_t before = bm_bufpool_idle_bytes();
	void *big = bm_buf_get(BM_MAX_IO);
	CHECK(big != NULL);
	bm_buf_put(big, BM_MAX_IO);
	CHECK_EQ(bm_bufpool_idle_bytes(), before);

	/* threads: no buffer is handed to two holders, the bound holds */
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 4; i++) {
		void *rv;
		pthread_join(t[i], &rv);
		CHECK(rv == NULL);
	}
	CHECK(bm_bufpool_idle_bytes() <= BM_BUFPOOL_IDLE_MAX);

	peak_rule();
	return check_exit();
}
