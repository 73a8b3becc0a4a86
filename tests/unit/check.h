/* A minimal unit-test harness: CHECK() records a failure and goes on;
 * main() returns check_exit() (0 if every check held). */
#ifndef BM_CHECK_H
#define BM_CHECK_H
#include <stdio.h>

static int check_failures, check_count;

#define CHECK(cond)                                                        \
	do {                                                               \
		check_count++;                                             \
		if (!(cond)) {                                             \
			check_failures++;                                  \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n",       \
			        __FILE__, __LINE__, #cond);                \
		}                                                          \
	} while (0)

#define CHECK_EQ(a, b)                                                     \
	do {                                                               \
		long long a_ = (long long)(a), b_ = (long long)(b);        \
		check_count++;                                             \
		if (a_ != b_) {                                            \
			check_failures++;                                  \
			fprintf(stderr, "%s:%d: CHECK failed: %s == %s "   \
			        "(%lld != %lld)\n", __FILE__, __LINE__,    \
			        #a, #b, a_, b_);                           \
		}                                                          \
	} while (0)

static inline int check_exit(void)
{
	printf("%d checks, %d failed\n", check_count, check_failures);
	return check_failures ? 1 : 0;
}
#endif
