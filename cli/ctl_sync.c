/*
 * The synchronization's control commands (served by `serve` through
 * ctl_extensions[], sent by `configure --sync-min/--sync-max`):
 *
 *   sync-rates MIN MAX   sets the floor and the ceiling of the copy, in
 *                        bytes per second ("-" keeps one; MAX 0: no
 *                        ceiling); replies "ok\nsync-min N\nsync-max N\n"
 *   sync-rates           the same reply, nothing changed
 *
 * The rates live in the running server's memory (not in the labels): a
 * restart comes back to the defaults.  The progress of a copy is the
 * "progress" command (cmd_serve.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define RATE_LOW (64ull << 10)
#define RATE_HIGH (64ull << 30)

int parse_rate_arg(const char *opt, const char *s, bool zero_ok,
                   uint64_t *out)
{
	char buf[64];
	size_t n = strlen(s);
	uint64_t v;

	/* "10M" or "10M/s" */
	if (n >= 2 && strcmp(s + n - 2, "/s") == 0)
		n -= 2;
	snprintf(buf, sizeof(buf), "%.*s", (int)n, s);
	if (n >= sizeof(buf) || parse_size(buf, &v) < 0 ||
	    (v == 0 && !zero_ok) || (v && (v < RATE_LOW || v > RATE_HIGH)))
		return cli_usage("%s '%s' is not a rate from 64K to 64G per "
		                 "second (e.g. 10M)%s", opt, s,
		                 zero_ok ? ", or 0 for no ceiling" : "");
	*out = v;
	return 0;
}

static int parse_field(const char *f, uint64_t *v)
{
	char *end;

	if (strcmp(f, "-") == 0) {
		*v = UINT64_MAX;
		return 0;
	}
	if (!*f || *f == '-')
		return -EINVAL;
	errno = 0;
	*v = strtoull(f, &end, 10);
	return (errno || *end) ? -EINVAL : 0;
}

int ctl_sync(bm_mirror *m, const char *name, const char *cmd, char *out,
             size_t len)
{
	char a[32], b[32], extra;
	uint64_t lo, hi;
	int n;

	if (strcmp(cmd, "sync-rates") != 0 && strncmp(cmd, "sync-rates ", 11) != 0)
		return 0; /* not ours */
	n = sscanf(cmd, "sync-rates %31s %31s %c", a, b, &extra);
	if (n > 0) {
		if (n != 2 || parse_field(a, &lo) < 0 || parse_field(b, &hi) < 0) {
			snprintf(out, len, "error usage: sync-rates [MIN|- MAX|-]\n");
			return 1;
		}
		if (bm_mirror_set_sync_rates(m, lo, hi) < 0) {
			snprintf(out, len, "error %s\n", bm_last_error());
			return 1;
		}
	}
	bm_mirror_sync_rates(m, &lo, &hi);
	snprintf(out, len, "ok\nsync-min %" PRIu64 "\nsync-max %" PRIu64 "\n",
	         lo, hi);
	return 1;
}
