/*
 * blkmirror check NAME / repair NAME: compare (and repair) the ACTIVE
 * components of a running mirror while it serves.
 *
 * The work runs in the server (lib/check.c: one job per mirror); this verb
 * starts it with the control command "check start [repair]", then asks for
 * its report ("check report ID") every 200 ms: on a terminal it shows a
 * progress line, and at the end the differing ranges.  SIGINT or SIGTERM
 * sends "check cancel ID", waits for the job to stop and exits 1.
 *
 * Exit status: check 0 identical, 2 ranges differ, 1 error (not running,
 * fewer than two ACTIVE components, a component failed on the way,
 * cancelled); repair 0 repaired or nothing to repair, 1 error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define REPORT_MAX (256 * 1024)
#define POLL_MS 200

/* ---- The server's side: control commands ---------------------------- */

/* "check start [repair]" -> "ok\nid N"; "check report N" -> "ok\n" and the
 * report (blkmirror.h); "check cancel N" -> "ok". */
int ctl_check(bm_mirror *m, const char *name, const char *cmd, char *out,
              size_t len)
{
	unsigned id;
	int n;

	if (strcmp(cmd, "check start") == 0 ||
	    strcmp(cmd, "check start repair") == 0) {
		if (bm_mirror_check_start(m, cmd[11] != '\0', &id) < 0)
			snprintf(out, len, "error %s\n", bm_last_error());
		else
			snprintf(out, len, "ok\nid %u\n", id);
	} else if (sscanf(cmd, "check report %u%n", &id, &n) == 1 && !cmd[n]) {
		int used = snprintf(out, len, "ok\n");
		if (bm_mirror_check_report(m, id, out + used, len - (size_t)used) < 0)
			snprintf(out, len, "error %s\n", bm_last_error());
	} else if (sscanf(cmd, "check cancel %u%n", &id, &n) == 1 && !cmd[n]) {
		if (bm_mirror_check_cancel(m, id) < 0)
			snprintf(out, len, "error %s\n", bm_last_error());
		else
			snprintf(out, len, "ok\n");
	} else {
		return 0;
	}
	return 1;
}

/* ---- The verb --------------------------------------------------------- */

struct range {
	uint64_t off, len;
	int ref;
	uint32_t mask;
};

struct report {
	char state[16];
	uint64_t done, total, elapsed_ms;
	int source;
	int ncomp;
	char comp_state[BM_MAX_COMPONENTS][16];
	char *comp_path[BM_MAX_COMPONENTS];
	struct range *ranges;
	int nranges;
	uint64_t more, more_bytes, differ_bytes;
	char *notes[32];
	int nnotes;
	char *fatal;
};

/* Parses the report in place (text is kept: the strings point into it). */
static void parse_report(char *text, struct report *r)
{
	memset(r, 0, sizeof(*r));
	r->source = -1;
	r->ranges = calloc(1000, sizeof(*r->ranges));
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		struct range g;
		int i, n = 0;
		char st[16];
		if (sscanf(line, "state %15s", r->state) == 1 ||
		    sscanf(line, "done %" SCNu64, &r->done) == 1 ||
		    sscanf(line, "total %" SCNu64, &r->total) == 1 ||
		    sscanf(line, "elapsed_ms %" SCNu64, &r->elapsed_ms) == 1 ||
		    sscanf(line, "source %d", &r->source) == 1 ||
		    sscanf(line, "differ_bytes %" SCNu64, &r->differ_bytes) == 1 ||
		    sscanf(line, "more %" SCNu64 " %" SCNu64, &r->more,
		           &r->more_bytes) == 2)
			continue;
		if (sscanf(line, "comp %d %15s %n", &i, st, &n) == 2 && n &&
		    i >= 0 && i < BM_MAX_COMPONENTS) {
			snprintf(r->comp_state[i], sizeof(r->comp_state[i]), "%s", st);
			r->comp_path[i] = line + n;
			if (i + 1 > r->ncomp)
				r->ncomp = i + 1;
		} else if (sscanf(line, "range %" SCNu64 " %" SCNu64 " %d %" SCNx32,
		                  &g.off, &g.len, &g.ref, &g.mask) == 4) {
			if (r->ranges && r->nranges < 1000 && g.ref >= 0 &&
			    g.ref < BM_MAX_COMPONENTS)
				r->ranges[r->nranges++] = g;
		} else if (strncmp(line, "note ", 5) == 0 && r->nnotes < 32) {
			r->notes[r->nnotes++] = line + 5;
		} else if (strncmp(line, "fatal ", 6) == 0) {
			r->fatal = line + 6;
		}
	}
}

static const char *path_of(const struct report *r, int i)
{
	return i >= 0 && i < BM_MAX_COMPONENTS && r->comp_path[i]
	       ? r->comp_path[i] : "?";
}

/* "A", "A and B", "A, B and C": the components in mask. */
static void names_of(const struct report *r, uint32_t mask, char *buf,
                     size_t len)
{
	size_t used = 0;
	int left = __builtin_popcount(mask);

	buf[0] = '\0';
	for (int i = 0; i < BM_MAX_COMPONENTS && used < len; i++) {
		if (!(mask & (1u << i)))
			continue;
		left--;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", path_of(r, i),
		                         left > 1 ? ", " : left == 1 ? " and " : "");
	}
}

static double mib(uint64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

static double rate_mib(const struct report *r)
{
	return r->elapsed_ms ? mib(r->done) * 1000.0 / (double)r->elapsed_ms : 0;
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL); /* a signal ends it early: that is wanted */
}

/* A control call; prints the error and returns 1 when it failed. */
static int call(const char *name, const char *cmd, char *reply, bool started)
{
	int err = control_call(name, cmd, reply, REPORT_MAX);

	if (err == -ENOENT)
		return started ? cli_fail("mirror '%s' stopped during the check",
		                          name)
		               : cli_fail("mirror '%s' is not running; start it "
		                          "with 'blkmirror serve %s'", name, name);
	if (err == -EACCES)
		return cli_fail("no permission to ask the server of '%s' (its "
		                "control socket in %s); run as root", name,
		                state_dir());
	if (err < 0)
		return cli_fail("mirror '%s' did not answer: %s", name,
		                strerror(-err));
	if (strncmp(reply, "ok\n", 3) != 0) {
		const char *msg = strncmp(reply, "error ", 6) == 0 ? reply + 6 : reply;
		return cli_fail("%.*s", (int)strcspn(msg, "\n"), msg);
	}
	return 0;
}

/* What the finished job found, on stdout; returns the exit status. */
static int print_result(const char *name, const char *verb, bool repair,
                        const struct report *r)
{
	char who[4096], ref[4096];
	int compared = 0, rc;

	for (int i = 0; i < r->ncomp; i++) {
		if (strcmp(r->comp_state[i], "ACTIVE") == 0)
			compared++;
		else if (strcmp(r->comp_state[i], "REMOVED") != 0)
			printf("%s: skipped %s (%s%s)\n", name, path_of(r, i),
			       r->comp_state[i],
			       strcmp(r->comp_state[i], "SYNCHRONIZING") == 0
			       ? ": being copied, not compared" : ": not compared");
	}
	if (repair && r->source >= 0)
		printf("%s: source %s (the highest-priority ACTIVE component)\n",
		       name, path_of(r, r->source));
	for (int k = 0; k < r->nranges; k++) {
		const struct range *g = &r->ranges[k];
		names_of(r, g->mask, who, sizeof(who));
		snprintf(ref, sizeof(ref), "%s", path_of(r, g->ref));
		/* a repair that failed stopped at r->done: it rewrote what
		 * is before, not the chunk it failed in */
		uint64_t done = !repair ? 0
		        : g->off + g->len <= r->done ? g->len
		        : g->off < r->done ? r->done - g->off : 0;
		if (done)
			printf("%s: repaired offset %" PRIu64 " length %" PRIu64
			       ": %s from %s\n", name, g->off, done, who, ref);
		if (repair && done < g->len)
			printf("%s: offset %" PRIu64 " length %" PRIu64 ": %s "
			       "differ%s from %s, not repaired\n", name,
			       g->off + done, g->len - done, who,
			       __builtin_popcount(g->mask) > 1 ? "" : "s", ref);
		else if (!repair)
			printf("%s: offset %" PRIu64 " length %" PRIu64 ": %s "
			       "differ%s from %s\n", name, g->off, g->len, who,
			       __builtin_popcount(g->mask) > 1 ? "" : "s", ref);
	}
	if (r->more)
		printf("%s: and %" PRIu64 " more range%s (%" PRIu64 " bytes)\n",
		       name, r->more, r->more == 1 ? "" : "s", r->more_bytes);
	fflush(stdout); /* in order with what follows on stderr */
	for (int k = 0; k < r->nnotes; k++)
		fprintf(stderr, "blkmirror: %s: %s\n", name, r->notes[k]);
	if (r->fatal)
		return cli_fail("%s of '%s' failed at %" PRIu64 " of %" PRIu64
		                " bytes: %s", verb, name, r->done, r->total,
		                r->fatal);
	uint64_t nr = (uint64_t)r->nranges + r->more;
	if (repair && nr)
		printf("%s: repaired %" PRIu64 " range%s (%" PRIu64 " bytes) in "
		       "%.1f MiB of %d components, in %.1f s; flushed\n", name, nr,
		       nr == 1 ? "" : "s", r->differ_bytes, mib(r->total),
		       compared, (double)r->elapsed_ms / 1000.0);
	else if (repair)
		printf("%s: nothing to repair (%.1f MiB of %d components, in "
		       "%.1f s, %.0f MiB/s)\n", name, mib(r->total), compared,
		       (double)r->elapsed_ms / 1000.0, rate_mib(r));
	else if (nr)
		printf("%s: %" PRIu64 " range%s (%" PRIu64 " bytes) differ%s, "
		       "at 4 KiB granularity, in %.1f MiB; 'blkmirror repair %s' "
		       "copies the highest-priority ACTIVE component over the "
		       "others\n", name, nr, nr == 1 ? "" : "s",
		       r->differ_bytes, nr == 1 ? "s" : "", mib(r->total), name);
	else if (r->nnotes)
		printf("%s: no differences where the components could be read "
		       "(%.1f MiB in %.1f s)\n", name, mib(r->total),
		       (double)r->elapsed_ms / 1000.0);
	else
		printf("%s: %d ACTIVE components identical (%.1f MiB in %.1f s, "
		       "%.0f MiB/s)\n", name, compared, mib(r->total),
		       (double)r->elapsed_ms / 1000.0, rate_mib(r));
	fflush(stdout);
	if (r->nnotes)
		rc = cli_fail("%s of '%s' is incomplete: a component failed "
		              "during it (see above)", verb, name);
	else
		rc = !repair && nr ? 2 : 0;
	return rc;
}

static int run(int argc, char **argv, const char *verb, bool repair)
{
	int opt, status = 0, rc;
	char cmd[128], *reply;
	char **paths;
	size_t n;
	unsigned id;
	bool tty = isatty(STDERR_FILENO), cancelled = false;
	struct report r;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, verb, "", NULL, &status)) != -1)
		if (opt == CLI_OPT_EXIT)
			return status;
	if (argc - optind != 1)
		return cli_usage_of(verb);
	const char *name = argv[optind];
	if (!bm_name_valid(name))
		return cli_usage("invalid mirror name '%s'", name);
	if (state_read_components(name, &paths, &n) < 0)
		return cli_fail("no mirror named '%s' in %s ('blkmirror list' "
		                "shows them)", name, state_dir());
	state_free(paths, n);
	reply = malloc(REPORT_MAX);
	if (!reply)
		return cli_fail("out of memory");

	/* Before the start: a Ctrl-C from now on cancels the job. */
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	snprintf(cmd, sizeof(cmd), "check start%s", repair ? " repair" : "");
	if (call(name, cmd, reply, false)) {
		free(reply);
		return 1;
	}
	if (sscanf(reply, "ok\nid %u", &id) != 1) {
		free(reply);
		return cli_fail("mirror '%s' gave no job id", name);
	}
	for (;;) {
		if (interrupted && !cancelled) {
			snprintf(cmd, sizeof(cmd), "check cancel %u", id);
			if (call(name, cmd, reply, true)) {
				free(reply);
				return 1;
			}
			cancelled = true;
			signal(SIGINT, SIG_DFL); /* a second Ctrl-C ends this */
			if (tty)
				fprintf(stderr, "\r\033[K%s: cancelling the %s...", name,
				        verb);
		}
		snprintf(cmd, sizeof(cmd), "check report %u", id);
		if (call(name, cmd, reply, true)) {
			free(reply);
			return 1;
		}
		parse_report(reply + 3, &r);
		if (strcmp(r.state, "running") != 0)
			break;
		if (tty && !cancelled)
			fprintf(stderr, "\r\033[K%s: %s %d%% (%.0f of %.0f MiB), "
			        "%.0f MiB/s", name, verb,
			        (int)(r.done * 100 / (r.total ? r.total : 1)),
			        mib(r.done), mib(r.total), rate_mib(&r));
		free(r.ranges);
		sleep_ms(POLL_MS);
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
	if (strcmp(r.state, "cancelled") == 0)
		rc = cli_fail("%s of '%s' cancelled at %d%% (%s)", verb, name,
		              (int)(r.done * 100 / (r.total ? r.total : 1)),
		              interrupted == SIGTERM ? "SIGTERM" : "Ctrl-C");
	else
		rc = print_result(name, verb, repair, &r);
	free(r.ranges);
	free(reply);
	return rc;
}

int cmd_check(int argc, char **argv)
{
	return run(argc, argv, "check", false);
}

int cmd_repair(int argc, char **argv)
{
	return run(argc, argv, "repair", true);
}
