/* The thread-local "last error" message behind bm_last_error(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "blkmirror.h"
#include "error.h"

static __thread char last_error[1024];

int bm_error(int err, const char *fmt, ...)
{
	char msg[sizeof(last_error)];
	va_list ap;

	/* through a copy: the message may include bm_last_error() itself */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(last_error, msg, sizeof(last_error));
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
