/*
 * blkmirror: the command.  One table of verbs in gmirror(8)'s vocabulary;
 * each verb lives in a cmd_*.c file and returns the exit status
 * (0 success, 1 error; status also says 2 for a DEGRADED mirror).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
} verbs[] = {
	{"label", cmd_label, "label [-n] [-b ALGORITHM] [-s SLICE] NAME COMPONENT..."},
	{"serve", cmd_serve, "serve NAME --socket PATH [--tcp [HOST:]PORT] [--readahead SIZE]"},
	{"status", cmd_status, "status [--json] [NAME...]"},
	{"list", cmd_list, "list [NAME...]"},
	{"dump", cmd_dump, "dump COMPONENT"},
	{"clear", cmd_clear, "clear COMPONENT..."},
	{"configure", cmd_configure, "configure -b ALGORITHM [-s SLICE] NAME"},
	{"stop", cmd_stop, "stop [-f] [--timeout SECONDS] NAME..."},
	{"forget", cmd_forget, "forget [-f] NAME..."},
	{"stat", cmd_stat, "stat NAME [-I INTERVAL] [-d] [-b] [-c COUNT] [--json]"},
};

int cli_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("blkmirror: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int cli_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("blkmirror: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: blkmirror VERB ...\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(f, "       blkmirror %s\n", verbs[i].usage);
	fprintf(f, "ALGORITHM: stream (default), round-robin, load, prefer, split\n"
	        "State directory: $BLKMIRROR_STATE_DIR or " STATE_DIR_DEFAULT "\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[1], verbs[i].name) == 0)
			return verbs[i].run(argc - 1, argv + 1);
	cli_fail("unknown verb '%s'; run 'blkmirror help' for the list",
	         argv[1]);
	return 1;
}
