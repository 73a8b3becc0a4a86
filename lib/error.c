/* The thread-local "last error" message behind bm_last_error(). */
#include <stdarg.h>
#include <stdio.h>

#include "blkmirror.h"
#include "error.h"

static __thread char last_error[512];

int bm_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err > 0 ? -err : err;
}

void bm_error_clear(void)
{
	last_error[0] = '\0';
}

const char *bm_last_error(void)
{
	return last_error;
}
