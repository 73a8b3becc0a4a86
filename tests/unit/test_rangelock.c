/* The sync range lock: an exclusive hold waits for overlapping writes and
 * holds off new ones; writes elsewhere pass. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "check.h"
#include "rangelock.h"

static struct bm_rangelock rl;
static atomic_int stage;

static void *exclusive_thread(void *arg)
{
	struct bm_range_hold h;
	(void)arg;
	bm_rangelock_excl_hold(&rl, &h, 1000, 1000);
	atomic_store(&stage, 1);
	usleep(50000);
	atomic_store(&stage, 2);
	bm_rangelock_excl_release(&rl, &h);
	return NULL;
}

static void *writer_thread(void *arg)
{
	struct bm_range_hold h;
	(void)arg;
	bm_rangelock_shared(&rl, &h, 1500, 10);
	/* Must not get in while the window is held. */
	CHECK(atomic_load(&stage) != 1);
	bm_rangelock_shared_release(&rl, &h);
	return NULL;
}

int main(void)
{
	struct bm_range_hold a, far;
	pthread_t ex, wr;

	bm_rangelock_init(&rl);
	/* An overlapping shared hold delays the exclusive window. */
	bm_rangelock_shared(&rl, &a, 1900, 200);
	pthread_create(&ex, NULL, exclusive_thread, NULL);
	usleep(30000);
	CHECK_EQ(atomic_load(&stage), 0);
	/* A non-overlapping write is not delayed by anything. */
	bm_rangelock_shared(&rl, &far, 5000, 100);
	bm_rangelock_shared_release(&rl, &far);
	bm_rangelock_shared_release(&rl, &a);
	while (atomic_load(&stage) == 0)
		usleep(1000);
	/* Window held: an overlapping writer waits for it. */
	pthread_create(&wr, NULL, writer_thread, NULL);
	pthread_join(wr, NULL);
	CHECK_EQ(atomic_load(&stage), 2);
	pthread_join(ex, NULL);
	bm_rangelock_destroy(&rl);
	return check_exit();
}
