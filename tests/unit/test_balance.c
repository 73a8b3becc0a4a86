/* Read balance decisions on a mirror built in memory (no disks). */
#include <string.h>

#include "check.h"
#include "mirror.h"
#include "sendbatch.h"

static struct bm_mirror m;

static void setup(int n, int balance)
{
	memset(&m, 0, sizeof(m));
	m.ncomp = n;
	atomic_store(&m.balance, balance);
	for (int i = 0; i < n; i++)
		atomic_store(&m.comp[i].state, BM_CS_ACTIVE);
}

int main(void)
{
	int hits[4] = {0};

	/* round-robin visits every component in turn. */
	setup(3, BM_BALANCE_ROUND_ROBIN);
	for (int i = 0; i < 300; i++)
		hits[bm_balance_pick(&m, 0, 4096, 0)]++;
	CHECK_EQ(hits[0], 100);
	CHECK_EQ(hits[1], 100);
	CHECK_EQ(hits[2], 100);
	/* Only ACTIVE components are readable. */
	atomic_store(&m.comp[1].state, BM_CS_SYNCHRONIZING);
	atomic_store(&m.comp[2].state, BM_CS_FAILED);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(bm_balance_pick(&m, 0, 4096, 0), 0);
	CHECK_EQ(bm_readable_count(&m), 1);
	/* Excluding the only one leaves none. */
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 1u << 0), -1);

	/* load: the least outstanding wins; ties spread. */
	setup(3, BM_BALANCE_LOAD);
	atomic_store(&m.comp[0].inflight, 5);
	atomic_store(&m.comp[1].inflight, 2);
	atomic_store(&m.comp[2].inflight, 7);
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 0), 1);
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 1u << 1), 0);
	memset(hits, 0, sizeof(hits));
	setup(2, BM_BALANCE_LOAD);
	for (int i = 0; i < 100; i++)
		hits[bm_balance_pick(&m, 0, 4096, 0)]++;
	CHECK_EQ(hits[0], 50);
	CHECK_EQ(hits[1], 50);

	/* Batch affinity: inside one batch, reads stay on the component the
	 * previous read went to while every other one is busy and it has at
	 * most 4 more outstanding than the least loaded. */
	setup(2, BM_BALANCE_LOAD);
	atomic_store(&m.comp[0].inflight, 1);
	atomic_store(&m.comp[1].inflight, 1);
	bm_sendbatch_open();
	int first = bm_balance_pick(&m, 0, 4096, 0);
	CHECK(first == 0 || first == 1);
	for (int i = 0; i < 4; i++) {
		atomic_fetch_add(&m.comp[first].inflight, 1);
		CHECK_EQ(bm_balance_pick(&m, 0, 4096, 0), first);
	}
	/* 5 more than the other (1 + 4 + 1): the other gets it */
	atomic_fetch_add(&m.comp[first].inflight, 1);
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 0), 1 - first);
	/* an idle disk always gets the read, affinity or not */
	setup(2, BM_BALANCE_LOAD);
	atomic_store(&m.comp[0].inflight, 1);
	first = bm_balance_pick(&m, 0, 4096, 0);
	CHECK_EQ(first, 1);
	atomic_store(&m.comp[1].inflight, 1);
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 0), 1); /* both busy: stays */
	atomic_store(&m.comp[0].inflight, 0);
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 0), 0); /* 0 went idle */
	/* a flush ends the batch: back to the least loaded, ties spread */
	atomic_store(&m.comp[0].inflight, 2);
	atomic_store(&m.comp[1].inflight, 2);
	memset(hits, 0, sizeof(hits));
	for (int i = 0; i < 100; i++) {
		bm_sendbatch_flush();
		hits[bm_balance_pick(&m, 0, 4096, 0)]++;
	}
	CHECK_EQ(hits[0], 50);
	CHECK_EQ(hits[1], 50);
	/* an excluded or no longer readable component is not stuck to */
	bm_sendbatch_flush();
	first = bm_balance_pick(&m, 0, 4096, 0);
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 1u << first), 1 - first);
	bm_sendbatch_flush();
	first = bm_balance_pick(&m, 0, 4096, 0);
	atomic_store(&m.comp[first].state, BM_CS_FAILED);
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 0), 1 - first);
	bm_sendbatch_close();
	/* no batch open: no affinity (ties spread as before) */
	setup(2, BM_BALANCE_LOAD);
	atomic_store(&m.comp[0].inflight, 1);
	atomic_store(&m.comp[1].inflight, 1);
	memset(hits, 0, sizeof(hits));
	for (int i = 0; i < 100; i++)
		hits[bm_balance_pick(&m, 0, 4096, 0)]++;
	CHECK_EQ(hits[0], 50);
	CHECK_EQ(hits[1], 50);

	/* prefer: the highest priority, whatever the load. */
	setup(3, BM_BALANCE_PREFER);
	m.comp[2].label.priority = 9;
	atomic_store(&m.comp[2].inflight, 100);
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 0), 2);
	CHECK_EQ(bm_balance_pick(&m, 0, 4096, 1u << 2), 0);

	/* names */
	CHECK_EQ(bm_balance_parse("split"), BM_BALANCE_SPLIT);
	CHECK(bm_balance_parse("fastest") < 0);
	CHECK(bm_balance_name(99) == NULL);
	return check_exit();
}
