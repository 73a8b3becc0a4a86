/*
 * blkmirror: the command.  One table of verbs in gmirror(8)'s vocabulary;
 * each verb lives in a cmd_*.c file and returns the exit status
 * (0 success, 1 error, 2 a wrong command line; status also says 2 for a
 * DEGRADED mirror and 3 when it is not running).  The grammar every verb
 * shares is in args.c (cli_getopt).  `blkmirror --version` and
 * `blkmirror version` print "blkmirror VERSION": VERSION comes from the
 * VERSION file at build time, with the git commit appended in a git
 * checkout (Makefile, build/version.h).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "statedir.h"
#include "version.h"

static int cmd_version(int argc, char **argv);

static const struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
} verbs[] = {
	{"label", cmd_label, "label [-fn] [-b ALGORITHM] [-s SLICE] [-r REGION] [--no-bitmap] NAME COMPONENT..."},
	{"serve", cmd_serve, "serve NAME [--socket PATH] [--tcp [HOST:]PORT] [--readahead SIZE] [--io-timeout SECONDS] [--read-errors COUNT] [--max-connections N] [--max-inflight SIZE] [--max-inflight-total SIZE] [--force-source COMPONENT]"},
	{"status", cmd_status, "status [--json] [NAME...]"},
	{"list", cmd_list, "list [NAME...]"},
	{"dump", cmd_dump, "dump COMPONENT..."},
	{"clear", cmd_clear, "clear [-f] COMPONENT..."},
	{"configure", cmd_configure, "configure [-b ALGORITHM] [-s SLICE] [--io-timeout SECONDS] [--sync-min RATE] [--sync-max RATE] NAME | -p PRIORITY NAME COMPONENT"},
	{"stop", cmd_stop, "stop [-f] [--timeout TIME] NAME..."},
	{"forget", cmd_forget, "forget [-f] NAME..."},
	{"assemble", cmd_assemble, "assemble [-f] [--old-size SIZE]... NAME COMPONENT..."},
	{"insert", cmd_insert, "insert [-fi] [-p PRIORITY] [--wait] NAME COMPONENT..."},
	{"remove", cmd_remove, "remove NAME COMPONENT..."},
	{"destroy", cmd_destroy, "destroy [-f] NAME"},
	{"version", cmd_version, "version"},
	{"bench", cmd_bench, "bench [--write [--yes]] [--size SIZE] [--repeat N] [--threshold PCT] COMPONENT... | bench --history [--svg FILE] [COMPONENT...]"},
	{"attach", cmd_attach, "attach [--device PATH] NAME"},
	{"detach", cmd_detach, "detach NAME|DEVICE"},
	{"check", cmd_check, "check NAME"},
	{"repair", cmd_repair, "repair NAME"},
	{"deactivate", cmd_deactivate, "deactivate NAME COMPONENT"},
	{"activate", cmd_activate, "activate [--wait] NAME COMPONENT"},
	{"rebuild", cmd_rebuild, "rebuild [--wait] NAME COMPONENT"},
	{"monitor", cmd_monitor, "monitor [--exec PROGRAM] [--oneshot] [--interval SECONDS] [NAME...]"},
	{"stat", cmd_stat, "stat [-db] [-I INTERVAL] [-c COUNT] [--json] NAME | stat --prometheus NAME..."},
};

static int cmd_version(int argc, char **argv)
{
	int status = 0;

	optind = 0;
	while (cli_getopt(argc, argv, "version", "", NULL, &status) != -1)
		return status;  /* --help, or an unknown option */
	if (optind != argc)
		return cli_usage_of("version");
	printf("blkmirror %s\n", BM_VERSION);
	return 0;
}

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
	        "State directory: $BLKMIRROR_STATE_DIR or " STATE_DIR_DEFAULT "\n"
	        "Run directory (serve's default socket): $BLKMIRROR_RUN_DIR, else "
	        "the state directory\nwhen $BLKMIRROR_STATE_DIR is set, else "
	        RUN_DIR_DEFAULT "\n"
	        "blkmirror --version prints the version; 'man blkmirror' is the "
	        "manual\n");
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage("no verb given; 'blkmirror help' lists them");
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "--help")) {
		if (argc == 3 && argv[1][0] != '-' &&
		    (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") ||
		     !strcmp(argv[2], "help"))) {
			usage(stdout); /* help --help */
			return 0;
		}
		if (argc == 3 && argv[1][0] != '-') { /* help VERB: its --help */
			for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
				if (strcmp(argv[2], verbs[i].name) == 0) {
					char *hargv[] = {argv[2], "--help", NULL};
					return verbs[i].run(2, hargv);
				}
			return cli_usage("unknown verb '%s'; 'blkmirror help' "
			                 "lists them", argv[2]);
		}
		if (argc > 2)
			return cli_usage("usage: blkmirror help [VERB]");
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		if (argc > 2)
			return cli_usage("usage: blkmirror --version");
		return cmd_version(1, argv + 1);
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
