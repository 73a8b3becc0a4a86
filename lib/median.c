/* Order statistics of a few measures (median.h). */
#include <stdlib.h>

#include "median.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void bm_sort_doubles(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(v[0]), cmp_double);
}

double bm_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	bm_sort_doubles(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
