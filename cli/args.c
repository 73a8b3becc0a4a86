/* Parsing of the arguments several verbs share: sizes, algorithms, slices. */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_balance_arg(const char *s, int *out)
{
	int b = bm_balance_parse(s);

	if (b < 0)
		return cli_fail("unknown balance algorithm '%s' (use stream, "
		                "round-robin, load, prefer or split)", s);
	*out = b;
	return 0;
}

int parse_slice_arg(const char *s, uint32_t *out)
{
	uint64_t v;

	if (parse_size(s, &v) < 0 || v < 512 || v > BM_MAX_IO || (v & (v - 1)))
		return cli_fail("slice '%s' is not a power of two from 512 to 32M",
		                s);
	*out = (uint32_t)v;
	return 0;
}
