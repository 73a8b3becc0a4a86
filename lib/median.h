/*
 * Order statistics of a few measures (the read-ahead's chunk-size
 * decisions, bench's medians): sorts in place, no allocation.
 */
#ifndef BM_MEDIAN_H
#define BM_MEDIAN_H
#include <stddef.h>

/* Sorts v[0..n) ascending (NaN is not expected). */
void bm_sort_doubles(double *v, size_t n);
/* The median of v[0..n), sorting v; the mean of the middle two when n is
 * even; 0 when n is 0. */
double bm_median(double *v, size_t n);
#endif
