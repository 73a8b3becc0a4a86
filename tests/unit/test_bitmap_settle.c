/* The bitmap's settle pass against writers in flight: while a write is
 * between bm_bitmap_write_begin and bm_bitmap_write_end, the bits of its
 * regions stay set (in memory, and so on disk), whatever passes run
 * meanwhile; regions no write touches are cleared; a write begun after a
 * clear sets its bit again.  A real mirror over two files: first the race
 * made to happen (a write begins between a pass's choice of its region and
 * the clear), then writers in threads (as compio.c counts them) beside one
 * pass after another. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bitmap.h"
#include "blkmirror.h"
#include "check.h"
#include "label.h"
#include "mirror.h"

#define REGION (64u * 1024u)
#define NREG 64u          /* the writers' regions: 0..NREG-1 */
#define WRITERS 3
#define RUN_MS 1500

static struct bm_mirror *mir;
static atomic_bool done;
static atomic_long bit_gone, writes;

/* A write as compio.c counts it (the idle clean, which clears every bit
 * when nothing was written for 2 s, must not run meanwhile). */
static int write_begin(uint64_t off, int *slot)
{
	atomic_fetch_add(&mir->writes_inflight, 1);
	if (!atomic_load(&mir->dirty_on_disk) && bm_meta_mark_dirty(mir) < 0)
		return -1;
	return bm_bitmap_write_begin(mir, off, 4096, slot);
}

static void write_end(int slot)
{
	bm_bitmap_write_end(mir, slot);
	atomic_store(&mir->last_write_ms, bm_now_ms());
	atomic_fetch_sub(&mir->writes_inflight, 1);
}

static void *writer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	while (!atomic_load(&done)) {
		uint64_t r = (uint64_t)(rand_r(&seed) % NREG);
		int slot;
		if (write_begin(r * REGION + 512, &slot) < 0)
			abort();
		/* the write is "in flight" for a while: its bit must hold in
		 * the image that goes to disk (the in-memory durable bit may
		 * blink while a pass puts it back) */
		for (int k = 0; k < 50; k++) {
			if (!bm_bitmap_region_on_disk(mir, r))
				atomic_fetch_add(&bit_gone, 1);
			if (k % 10 == 0)
				sched_yield();
		}
		write_end(slot);
		atomic_fetch_add(&writes, 1);
	}
	return NULL;
}

/* Widens the window between a pass's choice of a region and its clear:
 * a writer may begin on the region inside it (and must keep its bit). */
static void pause_a_little(uint64_t region)
{
	(void)region;
	for (int k = 0; k < 3; k++)
		sched_yield();
}

/* The race made to happen: inside the window, a write begins on the very
 * region the pass is about to clear, and sees its bit still set (the
 * lock-free path: it would go ahead and issue). */
static pthread_mutex_t inj_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t inj_cond = PTHREAD_COND_INITIALIZER;
static int inj_state;         /* 0 idle, 1 asked, 2 begun, 3 may end */
static uint64_t inj_region;
static int inj_slot;

static void *inject_writer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&inj_lock);
	while (inj_state != 1 && inj_state != -1)
		pthread_cond_wait(&inj_cond, &inj_lock);
	int st = inj_state;
	pthread_mutex_unlock(&inj_lock);
	if (st == -1)
		return NULL; /* the hook never ran: the test says so */
	/* the mirror is DIRTY already: no meta_lock (the pass holds it) */
	if (!atomic_load(&mir->dirty_on_disk) ||
	    write_begin(inj_region * REGION, &inj_slot) < 0)
		abort();
	pthread_mutex_lock(&inj_lock);
	inj_state = 2;
	pthread_cond_broadcast(&inj_cond);
	while (inj_state != 3)
		pthread_cond_wait(&inj_cond, &inj_lock);
	pthread_mutex_unlock(&inj_lock);
	write_end(inj_slot);
	return NULL;
}

static void inject_once(uint64_t region)
{
	pthread_mutex_lock(&inj_lock);
	if (inj_state == 0) {
		inj_region = region;
		inj_state = 1;
		pthread_cond_broadcast(&inj_cond);
		while (inj_state != 2)
			pthread_cond_wait(&inj_cond, &inj_lock);
	}
	pthread_mutex_unlock(&inj_lock);
}

int main(void)
{
	char dir[] = "/tmp/bm_settle_XXXXXX", a[64], b[64];
	const char *paths[2] = {a, b};
	struct bm_label_params p = {.balance = BM_BALANCE_ROUND_ROBIN,
	                            .slice = 4096, .no_sync = true,
	                            .bitmap_region = REGION};
	pthread_t t[WRITERS];
	uint64_t cleared = 0;
	long passes = 0;

	if (!mkdtemp(dir))
		return 2;
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(paths[i], "w");
		if (!f || ftruncate(fileno(f), 16 * 1048576 + BM_META_SIZE) < 0)
			return 2;
		fclose(f);
	}
	CHECK_EQ(bm_label_write_new("settle", paths, 2, &p), 0);
	CHECK_EQ(bm_mirror_open("settle", paths, 2, &mir), 0);
	if (!mir)
		return check_exit();
	CHECK_EQ(bm_bitmap_region_size(mir), REGION);
	/* the headers' clear_seq before any pass */
	uint64_t seq_open = 0, seq_seen[2] = {0};
	{
		struct bm_bitmap_header h;
		static uint8_t bits0[BM_BITMAP_BITS_BYTES];
		CHECK_EQ(bm_bitmap_read(mir->comp[0].be, &mir->comp[0].label, &h,
		                        bits0), 0);
		seq_open = h.clear_seq;
	}
	/* A write "elsewhere" in flight all along: the idle clean (all bits
	 * cleared after 2 s without writes) never runs, so every clear
	 * seen here is the settle pass's. */
	atomic_fetch_add(&mir->writes_inflight, 1);

	/* a region written once, then left: the next pass but one clears
	 * it (the first only starts a new epoch for it to be old in) */
	int slot;
	CHECK_EQ(write_begin(200 * REGION, &slot), 0);
	CHECK(bm_bitmap_region_set(mir, 200));
	write_end(slot);
	bm_bitmap_settle_now(mir);
	CHECK(bm_bitmap_settle_now(mir) >= 1);
	CHECK(!bm_bitmap_region_set(mir, 200));
	/* written again: set again before the write may go */
	CHECK_EQ(write_begin(200 * REGION, &slot), 0);
	CHECK(bm_bitmap_region_set(mir, 200));
	/* in flight across the event thread's passes (period 0: every
	 * call a step, none waits for the write; a call finding the event
	 * thread's own tick in the lock does nothing): stays */
	for (int k = 0; k < 20; k++) {
		bm_bitmap_settle(mir, 0);
		usleep(1000);
	}
	CHECK(bm_bitmap_region_set(mir, 200));
	write_end(slot);
	/* once it ended: a bump and a clear later (three steps at least) */
	for (int k = 0; k < 2000 && bm_bitmap_region_set(mir, 200); k++) {
		bm_bitmap_settle(mir, 0);
		usleep(1000);
	}
	CHECK(!bm_bitmap_region_set(mir, 200));

	/* the race, made to happen: the write that slipped in keeps its
	 * bit through the pass, and loses it only once it ended */
	pthread_t inj;
	pthread_create(&inj, NULL, inject_writer, NULL);
	CHECK_EQ(write_begin(250 * REGION, &slot), 0);
	write_end(slot);
	bm_bitmap_settle_now(mir);
	bm_bitmap_settle_test_pause = inject_once;
	bm_bitmap_settle_now(mir);
	bm_bitmap_settle_test_pause = NULL;
	CHECK_EQ(inj_state, 2);
	CHECK_EQ(inj_region, 250);
	CHECK(bm_bitmap_region_set(mir, 250));
	CHECK(bm_bitmap_region_on_disk(mir, 250));
	/* and on both disks */
	for (int i = 0; i < 2; i++) {
		struct bm_bitmap_header h;
		static uint8_t bits[BM_BITMAP_BITS_BYTES];
		memset(bits, 0, sizeof(bits));
		CHECK_EQ(bm_bitmap_read(mir->comp[i].be, &mir->comp[i].label, &h,
		                        bits), 0);
		CHECK(bits[250 / 8] & (1u << (250 % 8)));
		CHECK(!(bits[200 / 8] & (1u << (200 % 8))));
		seq_seen[i] = h.clear_seq;
	}
	/* every pass that cleared counted in both headers (an older copy
	 * of a component is told by it: bm_bitmap_judge) */
	CHECK(seq_seen[0] >= seq_open + 2);
	CHECK_EQ(seq_seen[0], seq_seen[1]);
	pthread_mutex_lock(&inj_lock);
	inj_state = inj_state == 2 ? 3 : -1;
	pthread_cond_broadcast(&inj_cond);
	pthread_mutex_unlock(&inj_lock);
	pthread_join(inj, NULL);
	bm_bitmap_settle_now(mir);
	bm_bitmap_settle_now(mir);
	CHECK(!bm_bitmap_region_set(mir, 250));

	/* and at random: writers on 64 regions, one pass after another */
	bm_bitmap_settle_test_pause = pause_a_little;
	for (int i = 0; i < WRITERS; i++)
		pthread_create(&t[i], NULL, writer, (void *)(uintptr_t)(i + 1));
	long long end = bm_now_ms() + RUN_MS;
	while (bm_now_ms() < end) {
		cleared += bm_bitmap_settle_now(mir);
		passes++;
	}
	atomic_store(&done, true);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(t[i], NULL);
	printf("%ld passes cleared %llu regions beside %ld writes\n", passes,
	       (unsigned long long)cleared, atomic_load(&writes));
	CHECK_EQ(atomic_load(&bit_gone), 0);
	CHECK(atomic_load(&writes) > 100);
	atomic_fetch_sub(&mir->writes_inflight, 1);
	bm_mirror_close(mir);
	unlink(a);
	unlink(b);
	rmdir(dir);
	return check_exit();
}
