/* The buffer pool: warm reuse, size classes, alignment, and the bound on
 * what it keeps idle, also with threads taking and giving at once. */
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

	return check_exit();
}
