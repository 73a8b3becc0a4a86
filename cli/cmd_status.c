/*
 * blkmirror status, list, configure, stop and forget: the verbs about known
 * mirrors.  "Running" means NAME.lock is held (statedir.h); a running
 * mirror is asked over its control socket and its components are never
 * opened here; a stopped one is described from its labels.
 *
 * status exit status (also in `status --help`):
 *   1  an error: unknown name, a server that cannot be asked (permission
 *      denied on its control socket, not answering);
 *   2  otherwise, when a running mirror shown is DEGRADED;
 *   3  otherwise, when a mirror named on the command line is stopped, or,
 *      without names, when mirrors are known but none is running;
 *   0  otherwise (every running mirror COMPLETE; stopped mirrors listed
 *      without names do not change this).
 * mdadm --detail --test in spirit, but a stopped mirror never hides a
 * degraded one.
 *
 * Every verb takes its options anywhere on the line; a wrong command line
 * is one line on stderr and exit 2, a refused or failed request exit 1.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "statedir.h"

#define REPLY_MAX (256 * 1024)

static const char status_usage[] = "usage: blkmirror status [--json] [NAME...]";
static const char list_usage[] = "usage: blkmirror list [NAME...]";
static const char configure_usage[] =
	"usage: blkmirror configure [-b ALGORITHM] [-s SLICE] [--io-timeout SECONDS] "
	"[--sync-min RATE] [--sync-max RATE] NAME | -p PRIORITY NAME COMPONENT";
static const char stop_usage[] =
	"usage: blkmirror stop [-f] [--timeout TIME] NAME...";
static const char forget_usage[] = "usage: blkmirror forget [-f] NAME...";

/* One line for a wrong option, exit 2. */
static int bad_option(const char *verb, const char *usage, int opt,
                      const char *shortopts, char **argv)
{
	char o[3] = {'-', (char)optopt, '\0'};
	const char *arg = argv[optind - 1];
	const char *what = strncmp(arg, "--", 2) != 0 && optopt > 0 &&
	                   optopt < 128 && strchr(shortopts, optopt) ? o : arg;

	if (opt == ':')
		return cli_usage("%s: option %s needs a value; %s", verb, what,
		                 usage);
	return cli_usage("%s: unknown option %s; %s", verb, what, usage);
}

static int known_mirror(const char *name, char ***paths, size_t *n)
{
	int err;

	if (!bm_name_valid(name))
		return cli_fail("invalid mirror name '%s'", name);
	err = state_read_components(name, paths, n);
	if (err == -ENOENT)
		return cli_fail("no mirror named '%s' in %s", name, state_dir());
	if (err < 0)
		return cli_fail("cannot read the state of '%s': %s", name,
		                strerror(-err));
	return 0;
}

/* 1 running (pid set), 0 stopped, or the exit status 1 after an error
 * message (returned as -1). */
static int running(const char *name, pid_t *pid)
{
	char what[64];
	int r = state_lock_holder(name, pid, what, sizeof(what));

	if (r < 0) {
		cli_fail("cannot tell whether '%s' is running: %s/%s.lock: %s",
		         name, state_dir(), name, strerror(-r));
		return -1;
	}
	return r;
}

/* Asks a running server.  0 with the text after "ok\n" in reply; 1 after
 * printing one line (permission denied, no answer, an error reply). */
static int ask(const char *name, pid_t pid, const char *cmd, char *reply)
{
	char ctl[4096];
	int err = control_call(name, cmd, reply, REPLY_MAX);

	if (err < 0) {
		state_path(ctl, sizeof(ctl), name, ".ctl");
		if (err == -EACCES || (access(ctl, F_OK) == 0 &&
		                       access(ctl, W_OK) < 0 && errno == EACCES))
			return cli_fail("%s: permission denied on its control socket "
			                "%s (served by pid %ld); run this as root or as "
			                "the user that serves it", name, ctl,
			                (long)pid);
		if (err == -ENOENT)
			return cli_fail("%s is running (pid %ld) but does not answer "
			                "on %s (starting or stopping); try again",
			                name, (long)pid, ctl);
		if (err == -EINPROGRESS && (strcmp(cmd, "status") == 0 ||
		                            strcmp(cmd, "list") == 0))
			return cli_fail("%s: its server (pid %ld) did not answer "
			                "within 10 s (busy, or stopped)", name,
			                (long)pid);
		if (err == -EINPROGRESS)
			return cli_fail("%s: its server (pid %ld) took the request "
			                "'%s' but did not answer it within 10 s (busy, "
			                "or stopped); it may still carry it out: "
			                "'blkmirror status %s' shows what it did",
			                name, (long)pid, cmd, name);
		return cli_fail("%s: control socket %s: %s", name, ctl,
		                strerror(-err));
	}
	if (strncmp(reply, "ok\n", 3) != 0) {
		const char *msg = strncmp(reply, "error ", 6) == 0 ? reply + 6 : reply;
		size_t nl = strlen(name);
		/* A message that starts with the name already says whose. */
		if (strncmp(msg, name, nl) == 0 && msg[nl] == ' ')
			return cli_fail("%.*s", (int)strcspn(msg, "\n"), msg);
		return cli_fail("%s: %.*s", name, (int)strcspn(msg, "\n"), msg);
	}
	memmove(reply, reply + 3, strlen(reply + 3) + 1);
	return 0;
}

/* ---- status -------------------------------------------------------------- */

struct comp_view {
	char path[4096];
	char state[32];     /* ACTIVE SYNCHRONIZING FAILED ABSENT (running);
	                     * CLEAN DIRTY SYNCHRONIZING ABSENT (stopped) */
	int sync_pct;       /* -1 when not synchronizing */
	double sync_mib_s;  /* the copy's recent rate; -1 unknown */
	long sync_eta_s;    /* seconds left at that rate; -1 unknown */
	char reason[512];
};

struct mirror_view {
	char name[BM_NAME_MAX + 1];
	char state[16];     /* COMPLETE DEGRADED STOPPED */
	long pid;
	int n;
	struct comp_view comp[BM_MAX_COMPONENTS];
	char note[1200];
};

/* Parses one component row of the server's status text (lib/status.c):
 * "NAME  STATUS    PATH (STATE[, N%|: REASON])", the first two columns
 * padded to the width of the name.  The path ends at the first " (STATE"
 * after the status column. */
static void parse_row(const char *line, size_t w, struct mirror_view *v)
{
	/* every state lib/status.c names (bm_comp_state_name; REMOVED
	 * rows are not shown): a row with another is not parsed at all */
	static const char *const states[] = {"ACTIVE", "SYNCHRONIZING", "FAILED",
	                                     "DISCONNECTED", "ABSENT",
	                                     "INACTIVE"};
	struct comp_view *c;
	const char *path, *best = NULL, *st = NULL;

	if (strlen(line) < w + 12 || v->n >= BM_MAX_COMPONENTS)
		return;
	if (v->n == 0)
		snprintf(v->state, sizeof(v->state), "%.8s", line + w + 2);
	v->state[strcspn(v->state, " ")] = '\0';
	path = line + w + 12;
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		for (const char *p = strstr(path, " ("); p; p = strstr(p + 1, " (")) {
			size_t k = strlen(states[i]);
			if (strncmp(p + 2, states[i], k) == 0 &&
			    strchr("),:", p[2 + k]) && (!best || p < best)) {
				best = p;
				st = states[i];
				break;
			}
		}
	}
	if (!best)
		return;
	c = &v->comp[v->n++];
	snprintf(c->path, sizeof(c->path), "%.*s", (int)(best - path), path);
	snprintf(c->state, sizeof(c->state), "%s", st);
	c->sync_pct = -1;
	c->sync_mib_s = -1;
	c->sync_eta_s = -1;
	const char *rest = best + 2 + strlen(st);
	if (rest[0] == ',') {
		/* ", 45%[, 80.0 MiB/s, [1h02m|3m05s|12s] left]" */
		double mib;
		char left[32];
		long h = 0, mi = 0, se = 0;
		c->sync_pct = atoi(rest + 1);
		if (sscanf(rest, ", %*d%%, %lf MiB/s, %31s left", &mib, left) == 2) {
			c->sync_mib_s = mib;
			if (sscanf(left, "%ldh%ldm", &h, &mi) == 2)
				c->sync_eta_s = h * 3600 + mi * 60;
			else if (sscanf(left, "%ldm%lds", &mi, &se) == 2)
				c->sync_eta_s = mi * 60 + se;
			else if (sscanf(left, "%lds", &se) == 1)
				c->sync_eta_s = se;
		}
	}
	else if (rest[0] == ':') {
		size_t len = strlen(rest + 2);
		if (len && rest[2 + len - 1] == ')')
			len--;
		snprintf(c->reason, sizeof(c->reason), "%.*s", (int)len, rest + 2);
	}
}

static void parse_status(const char *text, struct mirror_view *v)
{
	size_t w = strlen(v->name) > 4 ? strlen(v->name) : 4;
	char line[8192];

	while (*text) {
		size_t len = strcspn(text, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)len, text);
		text += len + (text[len] == '\n');
		if (strncmp(line, "Note: ", 6) == 0)
			snprintf(v->note, sizeof(v->note), "%.*s", (int)sizeof(v->note) - 1, line + 6);
		else if (strncmp(line, "Name ", 5) != 0)
			parse_row(line, w, v);
	}
}

/* A stopped mirror, from its labels: bm_label_state's text. */
static void offline_view(char **paths, size_t n, struct mirror_view *v,
                         char details[][600])
{
	snprintf(v->state, sizeof(v->state), "STOPPED");
	/* the sizes its record keeps: where grown components' labels are
	 * (also for the preview that follows) */
	state_hint_sizes(v->name);
	for (size_t i = 0; i < n && i < BM_MAX_COMPONENTS; i++) {
		struct comp_view *c = &v->comp[v->n++];
		char *d = details[i];
		bm_label_state_in(paths[i], v->name, (const char *const *)paths, n, d,
		                  600);
		snprintf(c->path, sizeof(c->path), "%s", paths[i]);
		c->sync_pct = -1;
		c->sync_mib_s = -1;
		c->sync_eta_s = -1;
		if (strncmp(d, "ABSENT: ", 8) == 0) {
			snprintf(c->state, sizeof(c->state), "ABSENT");
			snprintf(c->reason, sizeof(c->reason), "%s", d + 8);
		} else if (strncmp(d, "synchronizing ", 14) == 0) {
			snprintf(c->state, sizeof(c->state), "SYNCHRONIZING");
			c->sync_pct = atoi(d + 14);
		} else if (strncmp(d, "inactive", 8) == 0) {
			snprintf(c->state, sizeof(c->state), "INACTIVE");
		} else {
			snprintf(c->state, sizeof(c->state), "%s",
			         strncmp(d, "dirty", 5) == 0 ? "DIRTY" : "CLEAN");
		}
	}
}

static void json_str(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void json_mirror(const struct mirror_view *v, bool first)
{
	printf("%s\n  {\"name\": ", first ? "" : ",");
	json_str(v->name);
	printf(", \"state\": ");
	json_str(v->state);
	printf(", \"running\": %s, \"pid\": ", v->pid ? "true" : "false");
	if (v->pid)
		printf("%ld", v->pid);
	else
		printf("null");
	/* The NBD socket a running server recorded (statedir.h). */
	char sock[4096];
	printf(", \"socket\": ");
	if (v->pid && state_read_socket(v->name, sock, sizeof(sock)) == 0)
		json_str(sock);
	else
		printf("null");
	/* The block device attach made of it, if it still is one. */
	printf(", \"device\": ");
	if (attach_device(v->name, sock, sizeof(sock)))
		json_str(sock);
	else
		printf("null");
	printf(", \"note\": ");
	if (v->note[0])
		json_str(v->note);
	else
		printf("null");
	printf(", \"components\": [");
	for (int i = 0; i < v->n; i++) {
		const struct comp_view *c = &v->comp[i];
		printf("%s\n    {\"path\": ", i ? "," : "");
		json_str(c->path);
		printf(", \"state\": ");
		json_str(c->state);
		printf(", \"sync_percent\": ");
		if (c->sync_pct >= 0)
			printf("%d", c->sync_pct);
		else
			printf("null");
		printf(", \"sync_mib_s\": ");
		if (c->sync_mib_s >= 0)
			printf("%.1f", c->sync_mib_s);
		else
			printf("null");
		printf(", \"sync_eta_s\": ");
		if (c->sync_eta_s >= 0)
			printf("%ld", c->sync_eta_s);
		else
			printf("null");
		printf(", \"reason\": ");
		if (c->reason[0])
			json_str(c->reason);
		else
			printf("null");
		printf("}");
	}
	printf("%s]}", v->n ? "\n  " : "");
}

/* How long status and list of a stopped mirror wait for a component's
 * label (one that connects and never answers: an NBD export that hangs)
 * before they show it ABSENT: a view, not a start, so not the 30 s a
 * serve waits. */
#define OFFLINE_VIEW_WAIT_MS 5000

/* Shows one mirror.  Returns 0 COMPLETE, 2 DEGRADED, 3 stopped, 1 error. */
/* Prints a running mirror's status text (from its server, whose name
 * column is as wide as its own name) in the table's common width, without
 * the server's header: one header for every mirror shown. */
static void print_running(const char *reply, const char *name, int width)
{
	size_t sw = strlen(name) > 4 ? strlen(name) : 4;
	bool first_row = true;
	const char *line = strchr(reply, '\n'); /* skip its header */

	while (line && *++line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (strncmp(line, "Note:", 5) == 0 || len <= sw + 2)
			printf("%.*s\n", (int)len, line);
		else
			printf("%-*s  %.*s\n", width, first_row ? name : "",
			       (int)(len - sw - 2), line + sw + 2);
		first_row = false;
		line = end;
	}
}

static void print_header(int width, bool *header_done)
{
	if (*header_done)
		return;
	printf("%-*s  %-8s  %s\n", width, "Name", "Status", "Components");
	*header_done = true;
}

static int status_one(const char *name, bool json, bool *first_json,
                      int width, bool *header_done)
{
	struct mirror_view *v;
	char **paths, *reply = NULL;
	char (*details)[600] = NULL;
	size_t n;
	pid_t pid;
	int rc, r;

	if (known_mirror(name, &paths, &n))
		return 1;
	v = calloc(1, sizeof(*v));
	if (!v) {
		state_free(paths, n);
		return cli_fail("out of memory");
	}
	snprintf(v->name, sizeof(v->name), "%s", name);
	r = running(name, &pid);
	if (r < 0) {
		rc = 1;
	} else if (r == 1) {
		v->pid = (long)pid;
		reply = malloc(REPLY_MAX);
		if (!reply)
			rc = cli_fail("out of memory");
		else
			rc = ask(name, pid, "status", reply);
		if (rc == 0) {
			parse_status(reply, v);
			if (!json) {
				print_header(width, header_done);
				print_running(reply, name, width);
			}
			rc = strcmp(v->state, "DEGRADED") == 0 ? 2 : 0;
		}
	} else {
		int w = width;
		details = calloc(BM_MAX_COMPONENTS, sizeof(*details));
		if (!details) {
			rc = cli_fail("out of memory");
			goto out;
		}
		offline_view(paths, n, v, details);
		char why[sizeof(v->note) - 40];
		bool skip[BM_MAX_COMPONENTS];
		for (size_t i = 0; i < n && i < BM_MAX_COMPONENTS; i++)
			skip[i] = strcmp(v->comp[i].state, "ABSENT") == 0;
		if (bm_assembly_preview(name, (const char *const *)paths, n,
		                        skip, why, sizeof(why)) == 1)
			snprintf(v->note, sizeof(v->note), "serve refuses to "
			         "start it: %s", why);
		if (!json) {
			print_header(width, header_done);
			for (int i = 0; i < v->n; i++)
				printf("%-*s  %-8s  %s (%s)\n", w, i ? "" : name,
				       i ? "" : "STOPPED", v->comp[i].path, details[i]);
			if (v->note[0])
				printf("%-*s  Note: %s\n", w, "", v->note);
		}
		rc = 3;
	}
	if (!json && rc != 1) {
		char dev[4096];
		if (attach_device(name, dev, sizeof(dev)))
			printf("%-*s  Device: %s\n", width, "", dev);
	}
	if (json && rc != 1) {
		json_mirror(v, *first_json);
		*first_json = false;
	}
out:
	free(details);
	free(reply);
	free(v);
	state_free(paths, n);
	return rc;
}

static void status_help(void)
{
	printf("%s\n"
	       "Shows each mirror (all known mirrors without NAME): its state "
	       "(COMPLETE, DEGRADED,\nSTOPPED) and its components.  A running "
	       "mirror is asked over its control socket;\na stopped one is "
	       "described from its labels.\n"
	       "  --json  one object per mirror in a JSON array: name, state, "
	       "running, pid, socket,\n          device, note, components (path, state, "
	       "sync_percent, sync_mib_s, sync_eta_s, reason)\n"
	       "Exit status: 1 on an error (unknown name, permission denied on "
	       "a control socket);\nelse 2 if a running mirror is DEGRADED; "
	       "else 3 if a mirror named is stopped, or,\nwithout names, if "
	       "mirrors are known but none is running; else 0.  Stopped\n"
	       "mirrors never hide a DEGRADED one.\n", status_usage);
}

int cmd_status(int argc, char **argv)
{
	static const char shortopts[] = ":jh";
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false, first = true, err = false, degraded = false,
	     stopped = false, any_running = false, named;
	char **names;
	size_t n;
	int opt;

	bm_backend_set_sync_timeout_ms(OFFLINE_VIEW_WAIT_MS);
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': json = true; break;
		case 'h': status_help(); return 0;
		default:
			return bad_option("status", status_usage, opt, shortopts, argv);
		}
	}
	named = optind < argc;
	if (named) {
		names = argv + optind;
		n = (size_t)(argc - optind);
	} else if (state_list_mirrors(&names, &n) < 0) {
		return cli_fail("cannot read %s: %s", state_dir(), strerror(errno));
	}
	int width = 4;
	bool header_done = false;
	for (size_t i = 0; i < n; i++)
		if ((int)strlen(names[i]) > width)
			width = (int)strlen(names[i]);
	if (json)
		printf("[");
	for (size_t i = 0; i < n; i++) {
		switch (status_one(names[i], json, &first, width, &header_done)) {
		case 0: any_running = true; break;
		case 2: any_running = true; degraded = true; break;
		case 3: stopped = true; break;
		default: err = true; break;
		}
	}
	if (json)
		printf("%s]\n", first ? "" : "\n");
	if (!named)
		state_free(names, n);
	if (err)
		return 1;
	if (degraded)
		return 2;
	if (stopped && (named || !any_running))
		return 3;
	return 0;
}

/* ---- list ---------------------------------------------------------------- */

static int list_offline(const char *name, char **paths, size_t n)
{
	printf("Geom name: %s\nState: STOPPED\nComponents: %zu\nConsumers:\n",
	       name, n);
	for (size_t i = 0; i < n; i++) {
		char buf[4096];
		printf("%zu. Name: %s\n", i + 1, paths[i]);
		if (bm_label_dump(paths[i], buf, sizeof(buf)) < 0) {
			printf("   State: ABSENT\n   Reason: %s\n", bm_last_error());
			continue;
		}
		/* dump indents by two; list, running or not, by three */
		for (char *line = buf, *end; *line; line = end) {
			end = strchr(line, '\n');
			end = end ? end + 1 : line + strlen(line);
			printf(" %.*s", (int)(end - line), line);
		}
	}
	return 0;
}

static int list_one(const char *name)
{
	char **paths, *reply;
	size_t n;
	pid_t pid;
	int rc, r;

	if (known_mirror(name, &paths, &n))
		return 1;
	r = running(name, &pid);
	if (r < 0) {
		rc = 1;
	} else if (r == 0) {
		rc = list_offline(name, paths, n);
	} else if (!(reply = malloc(REPLY_MAX))) {
		rc = cli_fail("out of memory");
	} else {
		rc = ask(name, pid, "list", reply);
		if (rc == 0)
			fputs(reply, stdout);
		free(reply);
	}
	state_free(paths, n);
	return rc;
}

int cmd_list(int argc, char **argv)
{
	static const char shortopts[] = ":h";
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char **names;
	size_t n;
	int rc = 0, opt;
	bool named;

	bm_backend_set_sync_timeout_ms(OFFLINE_VIEW_WAIT_MS);
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (opt == 'h') {
			printf("%s\nShows every label field of each mirror's "
			       "components (all known mirrors without NAME).\n",
			       list_usage);
			return 0;
		}
		return bad_option("list", list_usage, opt, shortopts, argv);
	}
	named = optind < argc;
	if (named) {
		names = argv + optind;
		n = (size_t)(argc - optind);
	} else if (state_list_mirrors(&names, &n) < 0) {
		return cli_fail("cannot read %s: %s", state_dir(), strerror(errno));
	}
	for (size_t i = 0; i < n; i++)
		rc |= list_one(names[i]);
	if (!named)
		state_free(names, n);
	return rc;
}

/* ---- configure ----------------------------------------------------------- */

int cmd_configure(int argc, char **argv)
{
	static const char shortopts[] = ":b:s:p:h";
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"io-timeout", required_argument, NULL, 'T'},
		{"sync-min", required_argument, NULL, 'N'},
		{"sync-max", required_argument, NULL, 'X'},
		{NULL, 0, NULL, 0},
	};
	uint64_t sync_min = UINT64_MAX, sync_max = UINT64_MAX;
	int balance = -1, priority = -1, opt, rc, r, lock_fd;
	uint32_t slice = 0;
	uint64_t io_timeout = 0;
	bool io_timeout_set = false;
	const char *name;
	char cmd[128], **paths, *reply, what[64];
	size_t n;
	pid_t pid;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			if (parse_balance_arg(optarg, &balance))
				return EXIT_USAGE;
			break;
		case 's':
			if (parse_slice_arg(optarg, &slice))
				return EXIT_USAGE;
			break;
		case 'p':
			if (parse_priority_arg(optarg, &priority))
				return EXIT_USAGE;
			break;
		case 'T':
			if (parse_io_timeout_arg(optarg, &io_timeout))
				return EXIT_USAGE;
			io_timeout_set = true;
			break;
		case 'N':
			if (parse_rate_arg("--sync-min", optarg, false, &sync_min))
				return EXIT_USAGE;
			break;
		case 'X':
			if (parse_rate_arg("--sync-max", optarg, true, &sync_max))
				return EXIT_USAGE;
			break;
		case 'h':
			printf("%s\nSets the read balance algorithm (and the split "
			       "slice) of a mirror, running or not, and the I/O\n"
			       "timeout of a running one (serve --io-timeout; not "
			       "kept in the labels).\n"
			       "--sync-min/--sync-max RATE: the background copy's "
			       "floor while clients are busy and its\nceiling "
			       "(bytes per second, e.g. 10M; --sync-max 0: none) on "
			       "a running mirror, in\nmemory only (defaults 1M and "
			       "none at each serve).\n", configure_usage);
			return 0;
		default:
			return bad_option("configure", configure_usage, opt,
			                  shortopts, argv);
		}
	}
	bool sync_set = sync_min != UINT64_MAX || sync_max != UINT64_MAX;
	if (priority >= 0) /* -p PRIORITY NAME COMPONENT, alone */
		return balance >= 0 || slice || io_timeout_set || sync_set ||
		       argc - optind != 2
		       ? cli_usage("%s", configure_usage)
		       : configure_priority(argv[optind], argv[optind + 1], priority);
	if (slice && balance < 0)
		return cli_usage("configure: -s sets the slice of a balance: give "
		                 "it with -b (e.g. -b split -s %u)", slice);
	if (argc - optind != 1 || (balance < 0 && !io_timeout_set && !sync_set))
		return cli_usage("%s", configure_usage);
	if (sync_min != UINT64_MAX && sync_max != UINT64_MAX && sync_max &&
	    sync_min > sync_max)
		return cli_usage("configure: --sync-min is above --sync-max");
	name = argv[optind];
	if (known_mirror(name, &paths, &n))
		return 1;
	if (sync_set) {
		r = state_lock(name, "configure", &lock_fd, &pid, what,
		               sizeof(what));
		if (r == 0) {
			state_unlock(lock_fd);
			state_free(paths, n);
			return cli_fail("mirror '%s' is not running; --sync-min and "
			                "--sync-max apply to a running mirror (kept "
			                "in its memory, not in the labels)", name);
		}
		char a[32] = "-", b[32] = "-";
		if (sync_min != UINT64_MAX)
			snprintf(a, sizeof(a), "%llu", (unsigned long long)sync_min);
		if (sync_max != UINT64_MAX)
			snprintf(b, sizeof(b), "%llu", (unsigned long long)sync_max);
		snprintf(cmd, sizeof(cmd), "sync-rates %s %s", a, b);
		reply = malloc(REPLY_MAX);
		rc = reply ? ask(name, pid, cmd, reply) : cli_fail("out of memory");
		free(reply);
		if (rc != 0 || (balance < 0 && !io_timeout_set)) {
			state_free(paths, n);
			return rc;
		}
	}
	if (io_timeout_set) {
		r = state_lock(name, "configure", &lock_fd, &pid, what,
		               sizeof(what));
		if (r == 0) {
			state_unlock(lock_fd);
			state_free(paths, n);
			return cli_fail("mirror '%s' is not running; --io-timeout "
			                "applies to a running mirror (give it to "
			                "'blkmirror serve')", name);
		}
		snprintf(cmd, sizeof(cmd), "io-timeout %llu",
		         (unsigned long long)io_timeout);
		reply = malloc(REPLY_MAX);
		rc = reply ? ask(name, pid, cmd, reply) : cli_fail("out of memory");
		free(reply);
		if (rc != 0 || balance < 0) {
			state_free(paths, n);
			return rc;
		}
	}
	/* Running, the server rewrites every label on a job thread (up to the
	 * io-timeout for a component that hangs, while status still answers). */
	snprintf(cmd, sizeof(cmd), "live configure %s %u",
	         bm_balance_name(balance), slice);
	/* Stopped: write the labels under the lock, so that a serve cannot
	 * start in the middle; running: ask the server. */
	r = state_lock(name, "configure", &lock_fd, &pid, what, sizeof(what));
	if (r == 0) {
		rc = 0;
		state_hint_sizes(name); /* (components grown since labelled) */
		if (bm_label_configure((const char *const *)paths, n, balance,
		                       slice) < 0)
			rc = cli_fail("%s", bm_last_error());
		state_unlock(lock_fd);
	} else if (r == -EBUSY && strcmp(what, "serve") == 0) {
		rc = live_run_job(name, cmd);
	} else if (r == -EBUSY) {
		rc = cli_fail("mirror '%s' is busy: pid %ld (%s); try again", name,
		              (long)pid, what[0] ? what : "starting");
	} else {
		rc = cli_fail("cannot lock %s/%s.lock: %s", state_dir(), name,
		              strerror(-r));
	}
	state_free(paths, n);
	return rc;
}

/* ---- stop ---------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Asks the server to stop, then waits until it has released NAME.lock:
 * the NBD clients are gone, the components flushed, marked clean and
 * closed, the process exited. */
static int stop_one(const char *name, bool force, double timeout)
{
	char **paths, reply[4096], what[128];
	size_t n;
	pid_t pid, last;
	double deadline;
	int r;

	if (known_mirror(name, &paths, &n))
		return 1;
	state_free(paths, n);
	r = running(name, &pid);
	if (r < 0)
		return 1;
	if (r == 0)
		return cli_fail("mirror '%s' is not running", name);
	/* Even with -f: the device would fail under its user; detach is the
	 * way (it refuses while the device is mounted). */
	if (attach_device(name, reply, sizeof(reply)))
		return cli_fail("%s is attached as %s; detach it first: "
		                "'blkmirror detach %s'", name, reply, name);
	if (ask(name, pid, force ? "stop force" : "stop", reply))
		return 1;
	deadline = now_s() + timeout;
	for (;;) {
		r = state_lock_holder(name, &last, what, sizeof(what));
		if (r <= 0)
			break;
		if (timeout && now_s() >= deadline) {
			const char *phase = "exiting";
			char *p = malloc(REPLY_MAX);
			if (p && control_call(name, "phase", p, REPLY_MAX) == 0 &&
			    strncmp(p, "ok\n", 3) == 0) {
				p[3 + strcspn(p + 3, "\n")] = '\0';
				phase = p + 3;
			}
			cli_fail("%s (pid %ld) has not stopped after %g s; it is still "
			         "%s", name, (long)pid, timeout, phase);
			free(p);
			return 1;
		}
		usleep(20000);
	}
	if (r < 0)
		return cli_fail("cannot tell whether '%s' stopped: %s", name,
		                strerror(-r));
	if (last == pid && strcmp(what, "stopped cleanly") == 0) {
		printf("%s stopped cleanly\n", name);
		return 0;
	}
	if (last == pid && strncmp(what, "stopped dirty: ", 15) == 0)
		return cli_fail("%s stopped, but not cleanly: %s; its labels say "
		                "dirty, and its next serve resynchronizes it", name,
		                what + 15);
	return cli_fail("%s: pid %ld exited without a clean stop; its next "
	                "serve resynchronizes it", name, (long)pid);
}

int cmd_stop(int argc, char **argv)
{
	static const char shortopts[] = ":ft:h";
	static const struct option longopts[] = {
		{"force", no_argument, NULL, 'f'},
		{"timeout", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	double timeout = 60;
	bool force = false;
	int opt, rc = 0;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case 'f': force = true; break;
		case 't':
			if (parse_duration(optarg, &timeout) < 0 ||
			    timeout > 86400)
				return cli_usage("stop: --timeout '%s' is not a time "
				                 "from 0 (no limit) to 86400 s (e.g. 60, "
				                 "1.5s, 500ms, 2min)", optarg);
			break;
		case 'h':
			printf("%s\n"
			       "Stops each mirror: refuses while NBD clients are "
			       "connected (naming them) unless -f;\nthen waits until "
			       "the server has drained, flushed, marked the labels "
			       "clean and\nexited, and says \"NAME stopped cleanly\".  "
			       "After --timeout TIME (seconds, or 1.5s,\n500ms, 2min; "
			       "default 60, 0: no limit) it "
			       "says what the server is still doing and exits 1.\n",
			       stop_usage);
			return 0;
		default:
			return bad_option("stop", stop_usage, opt, shortopts, argv);
		}
	}
	if (optind >= argc)
		return cli_usage("%s", stop_usage);
	for (int i = optind; i < argc; i++) {
		bool again = false; /* a name given twice is stopped once */
		for (int k = optind; k < i; k++)
			again |= strcmp(argv[k], argv[i]) == 0;
		if (!again)
			rc |= stop_one(argv[i], force, timeout);
	}
	return rc;
}

/* ---- forget -------------------------------------------------------------- */

/* Removes the records of a stopped mirror whose components are gone or no
 * longer carry its label.  When some still do, only the others are
 * dropped from the record (gmirror forget); when all do, refused unless
 * -f. */
static int forget_one(const char *name, bool force)
{
	char **paths, what[64];
	char *keep[BM_MAX_COMPONENTS];
	size_t n, nkeep = 0;
	pid_t pid;
	int fd, r, rc = 0;

	if (known_mirror(name, &paths, &n))
		return 1;
	r = state_lock(name, "forget", &fd, &pid, what, sizeof(what));
	if (r == -EBUSY) {
		state_free(paths, n);
		if (strcmp(what, "serve") == 0) /* the server drops them */
			return live_forget_running(name);
		return cli_fail("mirror '%s' is busy: pid %ld (%s); try again", name,
		                (long)pid, what[0] ? what : "starting");
	}
	if (r < 0) {
		state_free(paths, n);
		return cli_fail("cannot lock %s/%s.lock: %s", state_dir(), name,
		                strerror(-r));
	}
	for (size_t i = 0; i < n && i < BM_MAX_COMPONENTS; i++)
		if (state_component_labeled(paths[i], name))
			keep[nkeep++] = paths[i];
	if (nkeep == 0 || force) {
		r = state_remove_mirror(name, fd);
		if (r < 0)
			rc = cli_fail("cannot remove the records of '%s' from %s: %s",
			              name, state_dir(), strerror(-r));
		else
			printf("Mirror %s forgotten.\n", name);
	} else if (nkeep == n) {
		state_unlock(fd);
		rc = cli_fail("every component of '%s' still carries its label "
		              "(%s%s); run 'blkmirror clear' on them first, or "
		              "'blkmirror forget -f %s'", name, paths[0],
		              n > 1 ? ", ..." : "", name);
	} else {
		r = state_write_components(name, keep, nkeep);
		state_unlock(fd);
		if (r < 0)
			rc = cli_fail("cannot rewrite the record of '%s': %s", name,
			              strerror(-r));
		else
			printf("%s: forgot %zu component%s that %s gone or no "
			       "longer carr%s its label; %zu left.\n", name,
			       n - nkeep, n - nkeep == 1 ? "" : "s",
			       n - nkeep == 1 ? "is" : "are",
			       n - nkeep == 1 ? "ies" : "y", nkeep);
	}
	state_free(paths, n);
	return rc;
}

int cmd_forget(int argc, char **argv)
{
	static const char shortopts[] = ":fh";
	static const struct option longopts[] = {
		{"force", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool force = false;
	int opt, rc = 0;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case 'f': force = true; break;
		case 'h':
			printf("%s\n"
			       "Removes a stopped mirror's records from the state "
			       "directory when its components are\ngone or no longer "
			       "carry its label.  When only some are, those are "
			       "dropped from the\nrecord and the mirror stays.  "
			       "Refused while every component still carries\nthe "
			       "label, unless -f.  On a running mirror: drops the "
			       "components that are not\nconnected (ABSENT, "
			       "DISCONNECTED, FAILED).  Labels are never touched.\n",
			       forget_usage);
			return 0;
		default:
			return bad_option("forget", forget_usage, opt, shortopts, argv);
		}
	}
	if (optind >= argc)
		return cli_usage("%s", forget_usage);
	for (int i = optind; i < argc; i++)
		rc |= forget_one(argv[i], force);
	return rc;
}

/* ---- destroy ------------------------------------------------------------- */

static const char destroy_usage[] = "usage: blkmirror destroy [-f] NAME";

/* Stops the mirror if it runs (refused while NBD clients are connected,
 * unless force), clears the label and lease of every component that
 * carries its label, and removes its records.  The data stays. */
static int destroy_one(const char *name, bool force)
{
	char **paths, what[64], lname[BM_NAME_MAX + 1], *cleared;
	size_t n, used = 0;
	pid_t pid;
	int fd, r, rc = 0;

	if (known_mirror(name, &paths, &n))
		return 1;
	r = running(name, &pid);
	if (r == 1 && !force) {
		/* stop's own refusal, with destroy's way round it */
		char *reply = malloc(REPLY_MAX), *hint;
		if (reply && control_call(name, "stop", reply, REPLY_MAX) == 0 &&
		    strncmp(reply, "error ", 6) == 0) {
			reply[strcspn(reply, "\n")] = '\0';
			hint = strstr(reply, "'blkmirror stop -f");
			if (hint)
				*hint = '\0';
			if (hint)
				cli_fail("%s'blkmirror destroy -f %s'", reply + 6, name);
			else
				cli_fail("%s", reply + 6);
			free(reply);
			state_free(paths, n);
			return 1;
		}
		free(reply);
	}
	if (r < 0 || (r == 1 && stop_one(name, force, 60))) {
		state_free(paths, n);
		return 1;
	}
	r = state_lock(name, "destroy", &fd, &pid, what, sizeof(what));
	if (r < 0) {
		state_free(paths, n);
		if (r == -EBUSY)
			return cli_fail("mirror '%s' is busy: pid %ld (%s); try "
			                "again", name, (long)pid, what[0] ? what
			                : "starting");
		return cli_fail("cannot lock %s/%s.lock: %s", state_dir(), name,
		                strerror(-r));
	}
	cleared = calloc(n ? n : 1, PATH_MAX + 4);
	if (!cleared) {
		state_unlock(fd);
		state_free(paths, n);
		return cli_fail("out of memory");
	}
	state_hint_sizes(name); /* (components grown since labelled) */
	for (size_t i = 0; i < n; i++) {
		if (bm_label_probe(paths[i], lname, sizeof(lname)) < 0) {
			printf("%s: left alone: %s\n", paths[i], bm_last_error());
			continue;
		}
		if (strcmp(lname, name) != 0) {
			printf("%s: left alone: it is labeled for mirror '%s'\n",
			       paths[i], lname);
			continue;
		}
		if (bm_label_clear(paths[i]) < 0) {
			rc = cli_fail("%s", bm_last_error());
			break;
		}
		used += (size_t)sprintf(cleared + used, "%s%s", used ? ", " : "",
		                        paths[i]);
	}
	if (rc) {
		state_unlock(fd);
		if (used)
			printf("cleared %s; the records of %s are kept: run 'blkmirror "
			       "destroy %s' again\n", cleared, name, name);
	} else if ((r = state_remove_mirror(name, fd)) < 0) {
		rc = cli_fail("cannot remove the records of '%s' from %s: %s",
		              name, state_dir(), strerror(-r));
	} else if (used) {
		printf("Mirror %s destroyed: labels and leases cleared on %s; the "
		       "data is still on %s.\n", name, cleared,
		       strchr(cleared, ',') ? "them" : "it");
	} else {
		printf("Mirror %s destroyed: no component carried its label.\n",
		       name);
	}
	free(cleared);
	state_free(paths, n);
	return rc;
}

int cmd_destroy(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"force", no_argument, NULL, 'f'},
		{NULL, 0, NULL, 0},
	};
	bool force = false;
	int opt, status;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, "destroy", "f", longopts,
	                         &status)) != -1) {
		if (opt != 'f')
			return status;
		force = true;
	}
	if (argc - optind != 1)
		return cli_usage("%s", destroy_usage);
	return destroy_one(argv[optind], force);
}
