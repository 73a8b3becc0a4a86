/* Thread-local error message for the human, set where a failure is detected. */
#ifndef BM_ERROR_H
#define BM_ERROR_H
#include <errno.h>

/* Formats the message and returns -err, so callers write
 *     return bm_error(EINVAL, "slice %u is not a power of two", s);  */
int bm_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bm_error_clear(void);
/* bm_error, then 1: a finding said to the caller, not a failure. */
#define bm_error_1(...) (bm_error(__VA_ARGS__), 1)

#endif
