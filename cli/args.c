/*
 * The command-line grammar every verb shares: options anywhere (before or
 * after the names, getopt's permutation; "--" ends them), one-line errors
 * with the verb's usage and exit status 2, -h/--help printing the usage
 * and exiting 0; and the arguments several verbs parse: sizes, algorithms,
 * slices, TCP addresses.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	/* binary units however they are written: 10M, 10MiB, 10MB; 512B */
	if (shift && strcmp(end, "iB") == 0)
		end += 2;
	else if (strcmp(end, "B") == 0)
		end++;
	/* a value that does not fit is out of every range, not wrapped */
	if (*end || v > (ULLONG_MAX >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

int parse_count(const char *s, uint64_t *out)
{
	return s && *s && strspn(s, "0123456789") == strlen(s)
	       ? parse_size(s, out) : -EINVAL;
}

int parse_duration(const char *s, double *seconds)
{
	char *end;
	double v;

	/* (strtod alone would take "-1", " 5", "inf", "nan" and hex) */
	if (!s || !((*s >= '0' && *s <= '9') || *s == '.') ||
	    strpbrk(s, "xXpPeE"))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	/* (ERANGE: a fraction so small it became 0, which means "never") */
	if (end == s || errno == ERANGE || !(v >= 0 && v <= 1e9))
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		v /= 1000;
	else if (strcmp(end, "min") == 0)
		v *= 60;
	else if (*end && strcmp(end, "s") != 0)
		return -EINVAL;
	*seconds = v;
	return 0;
}

int parse_balance_arg(const char *s, int *out)
{
	int b = bm_balance_parse(s);

	if (b < 0)
		return cli_usage("unknown balance algorithm '%s' (use stream, "
		                "round-robin, load, prefer or split)", s);
	*out = b;
	return 0;
}

int parse_slice_arg(const char *s, uint32_t *out)
{
	uint64_t v;

	if (parse_size(s, &v) < 0 || v < 512 || v > BM_MAX_IO || (v & (v - 1)))
		return cli_usage("slice '%s' is not a power of two from 512 to 32M",
		                s);
	*out = (uint32_t)v;
	return 0;
}

int parse_tcp_arg(const char *s)
{
	const char *colon = strrchr(s, ':');
	const char *port = colon ? colon + 1 : s;
	char *end;
	unsigned long v;

	if (colon == s)
		return cli_usage("--tcp '%s' has no host before ':'; use PORT "
		                 "or HOST:PORT, e.g. 10809 or 0.0.0.0:10809", s);
	errno = 0;
	v = strtoul(port, &end, 10);
	if (!*port || *end || errno || port[0] < '0' || port[0] > '9' ||
	    v < 1 || v > 65535)
		return cli_usage("--tcp '%s': the port must be a number from 1 "
		                 "to 65535 (PORT or HOST:PORT, e.g. 10809 or "
		                 "0.0.0.0:10809)", s);
	return 0;
}

/* The option table with --help added, and the short options with ':' in
 * front (missing arguments are told apart) and 'h' added. */
static int merged(const char *shortopts, const struct option *longopts,
                  char *so, size_t solen, struct option *lo, size_t lolen)
{
	size_t n = 0;

	if ((size_t)snprintf(so, solen, ":%sh", shortopts) >= solen)
		return -1;
	for (; longopts && longopts[n].name; n++) {
		if (n + 2 >= lolen)
			return -1;
		lo[n] = longopts[n];
	}
	lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n] = (struct option){NULL, 0, NULL, 0};
	return 0;
}

/* Whether typed ("--name=value") names a long option whose value is c:
 * getopt_long's '?' for a value given to an option that takes none. */
static bool long_with_value(const char *typed, const struct option *lo, int c)
{
	size_t len = strcspn(typed + 2, "=");

	if (strncmp(typed, "--", 2) != 0 || typed[2 + len] != '=')
		return false;
	for (size_t i = 0; lo[i].name; i++)
		if (lo[i].val == c && strncmp(lo[i].name, typed + 2, len) == 0)
			return true;
	return false;
}

int cli_getopt(int argc, char **argv, const char *verb, const char *shortopts,
               const struct option *longopts, int *status)
{
	char so[64], opt[64];
	struct option lo[32];
	const char *usage = cli_verb_usage(verb);
	int c;

	if (merged(shortopts, longopts, so, sizeof(so), lo,
	           sizeof(lo) / sizeof(lo[0])) < 0) {
		*status = cli_fail("%s: internal error: too many options", verb);
		return CLI_OPT_EXIT;
	}
	opterr = 0;
	c = getopt_long(argc, argv, so, lo, NULL);
	if (c == 'h') {
		printf("usage: blkmirror %s\n", usage);
		*status = EXIT_OK;
		return CLI_OPT_EXIT;
	}
	if (c != '?' && c != ':')
		return c;
	/*
	 * The option as typed.  getopt_long has moved optind past a long
	 * option and past a missing value (which is at the end), so
	 * argv[optind - 1] is the word at fault then; an unknown short option
	 * may sit inside a cluster ("-xd"), so it is named by optopt alone.
	 */
	const char *typed = argv[optind - 1];
	bool is_long = (c == ':' || optopt == 0 || long_with_value(typed, lo,
	                optopt)) && strncmp(typed, "--", 2) == 0;
	if (is_long)
		snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(typed, "="), typed);
	else
		snprintf(opt, sizeof(opt), "-%c", optopt);
	if (c == ':')
		*status = cli_usage("%s: option '%s' needs a value; usage: "
		                    "blkmirror %s", verb, opt, usage);
	else if (is_long && optopt)
		*status = cli_usage("%s: option '%s' takes no value; usage: "
		                    "blkmirror %s", verb, opt, usage);
	else
		*status = cli_usage("%s: unknown option '%s'; usage: blkmirror %s",
		                    verb, opt, usage);
	return CLI_OPT_EXIT;
}

int parse_io_timeout_arg(const char *s, uint64_t *out)
{
	double v;

	if (parse_duration(s, &v) < 0 || v > 3600 || v != (double)(uint64_t)v)
		return cli_usage("--io-timeout '%s' is not a whole number of "
		                 "seconds from 0 (never) to 3600 (e.g. 30, 30s, "
		                 "1min)", s);
	*out = (uint64_t)v;
	return 0;
}

int cli_check_path(const char *verb, const char *p)
{
	char shown[512];
	size_t k = 0;

	if (p[0] && !strpbrk(p, "\t\n"))
		return 0;
	/* shown on one line: a tab or newline as \t or \n */
	for (const char *c = p; *c && k + 3 < sizeof(shown); c++) {
		if (*c == '\t' || *c == '\n') {
			shown[k++] = '\\';
			shown[k++] = *c == '\t' ? 't' : 'n';
		} else {
			shown[k++] = *c;
		}
	}
	shown[k] = '\0';
	return cli_usage("%s: component '%s': a path may not be empty or hold "
	                 "a tab or newline", verb, shown);
}

/* (cli.h) */
char *cli_canonical_path(const char *p)
{
	char buf[PATH_MAX];

	if (strstr(p, "://") != NULL)
		return strdup(p);
	if (realpath(p, buf))
		return strdup(buf);
	/* gone (a deleted file): absolute as the server recorded it */
	if (p[0] != '/' && getcwd(buf, sizeof(buf))) {
		char *abs = malloc(strlen(buf) + strlen(p) + 2);
		if (abs)
			sprintf(abs, "%s/%s", buf, p);
		return abs;
	}
	return strdup(p);
}
