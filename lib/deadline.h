/* Absolute deadlines for pthread_cond_timedwait and friends. */
#ifndef BM_DEADLINE_H
#define BM_DEADLINE_H
#include <time.h>

/* The time ms milliseconds from now on clock clk. */
static inline struct timespec bm_deadline_ms(clockid_t clk, long long ms)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif
