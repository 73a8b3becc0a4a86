/* Several exclusive holds at once (the pipelined sync) beside a plain
 * exclusive hold of another thread, pending until granted: a pending hold never waits for another pending
 * one, granted holds exclude each other where they overlap, shrinking lets
 * a writer in, writes wait for pending holds (no starvation), and the
 * polite form yields to an older pending window. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rangelock.h"

static struct bm_rangelock rl;
static atomic_int window_granted, writer_in;

static void *window_thread(void *arg)
{
	struct bm_range_hold h;
	(void)arg;
	bm_rangelock_excl_hold(&rl, &h, 500, 1000); /* [500, 1500) */
	atomic_store(&window_granted, 1);
	bm_rangelock_excl_release(&rl, &h);
	return NULL;
}

static void *writer_thread(void *arg)
{
	struct bm_range_hold h;
	uint64_t *at = arg;

	bm_rangelock_shared(&rl, &h, *at, 10);
	atomic_store(&writer_in, 1);
	bm_rangelock_shared_release(&rl, &h);
	return NULL;
}

static atomic_bool cancel_it;

static void *canceller_thread(void *arg)
{
	(void)arg;
	usleep(50000);
	atomic_store(&cancel_it, true);
	return NULL;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void wait_for(atomic_int *v)
{
	for (int i = 0; i < 5000 && !atomic_load(v); i++)
		usleep(1000);
}

int main(void)
{
	struct bm_range_hold a, b, c;
	pthread_t win, wr;
	uint64_t at = 1200;

	bm_rangelock_init(&rl);
	/* Two chunks of a copy, side by side: both granted at once. */
	bm_rangelock_excl_hold(&rl, &a, 0, 1000);
	bm_rangelock_excl_hold(&rl, &b, 1000, 1000);
	/* A window over both waits (pending) ... */
	pthread_create(&win, NULL, window_thread, NULL);
	usleep(30000);
	CHECK_EQ(atomic_load(&window_granted), 0);
	/* ... which does not stop the copy's next chunk, */
	bm_rangelock_excl_hold(&rl, &c, 2000, 1000);
	/* and a write into it waits for it (pending, not yet granted). */
	pthread_create(&wr, NULL, writer_thread, &at);
	usleep(30000);
	CHECK_EQ(atomic_load(&writer_in), 0);
	bm_rangelock_excl_release(&rl, &a);
	usleep(30000);
	CHECK_EQ(atomic_load(&window_granted), 0); /* b still overlaps */
	/* b shrinks off the window's range: the window gets in, then the
	 * writer (no hold left over 1200). */
	bm_rangelock_excl_shrink(&rl, &b, 600); /* [1000, 1600) still overlaps */
	usleep(30000);
	CHECK_EQ(atomic_load(&window_granted), 0);
	bm_rangelock_excl_release(&rl, &b);
	wait_for(&window_granted);
	CHECK_EQ(atomic_load(&window_granted), 1);
	pthread_join(win, NULL);
	wait_for(&writer_in);
	CHECK_EQ(atomic_load(&writer_in), 1);
	pthread_join(wr, NULL);
	/* A shrunk hold lets a writer beyond its new end in. */
	atomic_store(&writer_in, 0);
	at = 2700;
	pthread_create(&wr, NULL, writer_thread, &at);
	usleep(30000);
	CHECK_EQ(atomic_load(&writer_in), 0);
	bm_rangelock_excl_shrink(&rl, &c, 500);
	wait_for(&writer_in);
	CHECK_EQ(atomic_load(&writer_in), 1);
	pthread_join(wr, NULL);
	bm_rangelock_excl_release(&rl, &c);

	/* The polite form yields to an older pending window, and gives up
	 * after its timeout (not held: a write gets in). */
	atomic_store(&window_granted, 0);
	bm_rangelock_excl_hold(&rl, &a, 0, 1000);
	pthread_create(&win, NULL, window_thread, NULL); /* [500, 1500) */
	usleep(30000);
	if (bm_rangelock_excl_try_hold(&rl, &b, 1000, 1000, 50, NULL)) {
		CHECK(!"the polite hold got in before an older window");
		bm_rangelock_excl_release(&rl, &b);
	}
	atomic_store(&writer_in, 0);
	at = 1800;
	pthread_create(&wr, NULL, writer_thread, &at);
	wait_for(&writer_in);
	CHECK_EQ(atomic_load(&writer_in), 1);
	pthread_join(wr, NULL);
	CHECK_EQ(atomic_load(&window_granted), 0);
	bm_rangelock_excl_release(&rl, &a);
	wait_for(&window_granted);
	pthread_join(win, NULL);
	CHECK(bm_rangelock_excl_try_hold(&rl, &b, 1000, 1000, 5000, NULL));
	bm_rangelock_excl_release(&rl, &b);

	/* The polite form with a cancel (a repair at a stop): behind a write
	 * that stays, it gives up once cancelled, long before its timeout,
	 * and a write gets in after it. */
	struct bm_range_hold w;
	pthread_t can;
	bm_rangelock_shared(&rl, &w, 1000, 10);
	pthread_create(&can, NULL, canceller_thread, NULL);
	long long t0 = now_ms();
	CHECK(!bm_rangelock_excl_try_hold(&rl, &b, 1000, 1000, 5000, &cancel_it));
	long long took = now_ms() - t0;
	CHECK(took >= 40 && took < 1000);
	pthread_join(can, NULL);
	atomic_store(&writer_in, 0);
	at = 1500;
	pthread_create(&wr, NULL, writer_thread, &at);
	wait_for(&writer_in);
	CHECK_EQ(atomic_load(&writer_in), 1);
	pthread_join(wr, NULL);
	/* Cancelled before it starts: no wait at all, even when granted
	 * would need one. */
	t0 = now_ms();
	CHECK(!bm_rangelock_excl_try_hold(&rl, &b, 1000, 1000, 5000, &cancel_it));
	CHECK(now_ms() - t0 < 50);
	bm_rangelock_shared_release(&rl, &w);
	/* nothing over it now: granted even when cancelled */
	CHECK(bm_rangelock_excl_try_hold(&rl, &b, 1000, 1000, 5000, &cancel_it));
	bm_rangelock_excl_release(&rl, &b);
	bm_rangelock_destroy(&rl);
	return check_exit();
}
