/* bm_median and bm_sort_doubles: odd and even counts, one value, none,
 * values given in any order, negatives. */
#include "check.h"
#include "median.h"

int main(void)
{
	double a[] = {9e6, 1e6, 2e6};
	CHECK(bm_median(a, 3) == 2e6);
	CHECK(a[0] == 1e6 && a[1] == 2e6 && a[2] == 9e6); /* sorted */
	double b[] = {4, 1, 3, 2};
	CHECK(bm_median(b, 4) == 2.5);
	double c[] = {7};
	CHECK(bm_median(c, 1) == 7);
	CHECK(bm_median(c, 0) == 0);
	double d[] = {-2.5, 3.0, -7.0, 0.5, 1.0};
	CHECK(bm_median(d, 5) == 0.5);
	CHECK(d[0] == -7.0 && d[4] == 3.0);
	double e[] = {5, 5, 1, 5};
	bm_sort_doubles(e, 4);
	CHECK(e[0] == 1 && e[1] == 5 && e[3] == 5);
	return check_exit();
}
