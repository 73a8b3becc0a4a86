/*
 * blkmirror: the command.  One table of verbs in gmirror(8)'s vocabulary;
 * each verb lives in a cmd_*.c file and returns the exit status
 * (0 success, 1 error, 2 a wrong command line; status also says 2 for a
 * DEGRADED mirror and 3 when it is not running).  The grammar every verb
 * shares is in args.c (cli_getopt).
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
	{"label", cmd_label, "label [-fn] [-b ALGORITHM] [-s SLICE] NAME COMPONENT..."},
	{"serve", cmd_serve, "serve NAME --socket PATH [--tcp [HOST:]PORT] [--readahead SIZE] [--io-timeout SECONDS] [--read-errors COUNT] [--max-connections N] [--max-inflight SIZE] [--max-inflight-total SIZE]"},
	{"status", cmd_status, "status [--json] [NAME...]"},
	{"list", cmd_list, "list [NAME...]"},
	{"dump", cmd_dump, "dump COMPONENT..."},
	{"clear", cmd_clear, "clear COMPONENT..."},
	{"configure", cmd_configure, "configure [-b ALGORITHM] [-s SLICE] [--io-timeout SECONDS] [--sync-min RATE] [--sync-max RATE] NAME"},
	{"stop", cmd_stop, "stop [-f] [--timeout SECONDS] NAME..."},
	{"forget", cmd_forget, "forget [-f] NAME..."},
	{"stat", cmd_stat, "stat [-db] [-I INTERVAL] [-c COUNT] [--json] NAME"},
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

const char *cli_verb_usage(const char *verb)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verb, verbs[i].name) == 0)
			return verbs[i].usage;
	return verb;
}

int cli_usage_of(const char *verb)
{
	return cli_usage("usage: blkmirror %s", cli_verb_usage(verb));
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
	if (argc < 2)
		return cli_usage("no verb given; 'blkmirror help' lists them");
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "--help")) {
		if (argc == 3 && argv[1][0] != '-') { /* help VERB */
			for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
				if (strcmp(argv[2], verbs[i].name) == 0) {
					printf("usage: blkmirror %s\n", verbs[i].usage);
					return 0;
				}
			return cli_usage("unknown verb '%s'; 'blkmirror help' "
			                 "lists them", argv[2]);
		}
		if (argc > 2)
			return cli_usage("usage: blkmirror help [VERB]");
		usage(stdout);
		return 0;
	}
	if (argv[1][0] == '-')
		return cli_usage("unknown option '%s' before the verb; "
		                 "'blkmirror help' lists the verbs", argv[1]);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[1], verbs[i].name) == 0)
			return verbs[i].run(argc - 1, argv + 1);
	return cli_usage("unknown verb '%s'; 'blkmirror help' lists them",
	                 argv[1]);
}
