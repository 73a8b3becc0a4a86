/*
 * blkmirror monitor: alerts, as mdadm --monitor gives them.
 *
 * Each running mirror keeps its state changes in an event log
 * (lib/eventlog.c); the control command "events SINCE" (ctl_events below)
 * returns those after SINCE.  The monitor polls every running mirror's
 * control socket every --interval, prints one line per event and, with
 * --exec, runs PROGRAM EVENT MIRROR [COMPONENT] for it (directly, never
 * through a shell; the message and severity are in its environment).
 *
 * What it reports:
 *  - at its start, each running mirror's present trouble as events (the
 *    --oneshot report below), not the old events in its log: a monitor
 *    started later does not replay what an earlier one already told;
 *  - then every new event, in order; a mirror that starts later (or
 *    restarts) is followed from its first event (Started, Degraded...);
 *  - Stopped when a followed mirror's server is gone, EventsLost when it
 *    fell more than the log holds behind.
 * --oneshot reports the present trouble once and exits (mdadm --monitor
 * --oneshot, for cron): per degraded mirror a Degraded event, then one per
 * component out of service (ComponentFailed, ComponentDisconnected,
 * ComponentDeactivated, ComponentAbsent) or being copied (Synchronizing;
 * the slots of removed components are not counted); nothing for a complete
 * mirror.  A named mirror that is not running is reported as Stopped.
 * It exits 0 once it has reported, degraded or not (mdadm exits 0 too and
 * alerts through its program), 1 when a mirror could not be asked.
 *
 * Children of --exec are reaped at every poll and never waited for by the
 * loop (one that hangs does not stop the alerts); at most MAX_CHILDREN run
 * at once, beyond that an event's program is skipped with a warning.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define EVENTS_PER_REPLY 256   /* ~600 bytes each: within a control reply */
#define REPLY_MAX (256 * 1024)
#define MAX_CHILDREN 32
#define ONESHOT_CHILD_WAIT_MS 10000

/* ---- The control command (runs in the server) ------------------------ */

/*
 * "events SINCE": the events after SINCE, oldest first, at most
 * EVENTS_PER_REPLY (ask again from the last one while it is short of
 * "current"):
 *   ok
 *   current SEQ instance HEX lost N
 *   event<TAB>SEQ<TAB>TIME_MS<TAB>SEVERITY<TAB>EVENT<TAB>MIRROR<TAB>
 *        COMPONENT (- for none)<TAB>MESSAGE
 * "components": one line per component:
 *   comp<TAB>INDEX<TAB>STATE<TAB>SYNC_PERCENT (-1)<TAB>PATH<TAB>WHY
 */
int ctl_events(bm_mirror *m, const char *name, const char *cmd, char *out,
               size_t len)
{
	struct bm_event_record *recs;
	struct bm_event_cursor cur;
	unsigned long long since;
	char *end;
	size_t used;

	if (strcmp(cmd, "components") == 0) {
		struct bm_component_info *ci = malloc(sizeof(*ci));
		if (!ci) {
			snprintf(out, len, "error out of memory\n");
			return 1;
		}
		used = (size_t)snprintf(out, len, "ok\n");
		for (int i = 0; used < len && bm_mirror_component_info(m, i, ci);
		     i++)
			used += (size_t)snprintf(out + used, len - used,
			                         "comp\t%d\t%s\t%d\t%s\t%s\n", i,
			                         ci->state, ci->sync_percent,
			                         ci->path, ci->why);
		free(ci);
		return 1;
	}
	if (strncmp(cmd, "events", 6) != 0 || (cmd[6] && cmd[6] != ' '))
		return 0;
	errno = 0;
	since = strtoull(cmd + 6, &end, 10);
	if (!cmd[6] || errno || *end || strchr(cmd + 6, '-')) {
		snprintf(out, len, "error usage: events SINCE (a sequence "
		         "number, 0 for all)\n");
		return 1;
	}
	recs = malloc(EVENTS_PER_REPLY * sizeof(*recs));
	if (!recs) {
		snprintf(out, len, "error out of memory\n");
		return 1;
	}
	int n = bm_mirror_events(m, since, recs, EVENTS_PER_REPLY, &cur);
	used = (size_t)snprintf(out, len, "ok\ncurrent %" PRIu64 " instance %016"
	                        PRIx64 " lost %" PRIu64 "\n", cur.current,
	                        cur.instance, cur.lost);
	for (int i = 0; i < n && used < len; i++) {
		const struct bm_event_record *r = &recs[i];
		used += (size_t)snprintf(out + used, len - used,
		        "event\t%" PRIu64 "\t%" PRId64 "\t%s\t%s\t%s\t%s\t%s\n",
		        r->seq, r->time_ms, bm_severity_name(r->severity),
		        r->event, name, r->component[0] ? r->component : "-",
		        r->message);
	}
	free(recs);
	return 1;
}

/* ---- The monitor (a client) ------------------------------------------ */

struct alert {
	int64_t time_ms;
	const char *severity;
	const char *event;
	const char *mirror;
	const char *component;  /* NULL or "-": none */
	const char *message;
};

struct followed {
	char name[BM_NAME_MAX + 1];
	bool running;
	uint64_t instance, since;
	bool complained;        /* said once that it cannot be asked */
};

static const char *program;
static int children;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reap(void)
{
	while (children > 0 && waitpid(-1, NULL, WNOHANG) > 0)
		children--;
}

static void run_program(const struct alert *a)
{
	char *argv[5] = {(char *)program, (char *)a->event, (char *)a->mirror,
	                 NULL, NULL};

	reap();
	if (children >= MAX_CHILDREN) {
		fprintf(stderr, "blkmirror: monitor: %d programs still running; "
		        "not running %s for %s %s\n", children, program, a->event,
		        a->mirror);
		return;
	}
	if (a->component && strcmp(a->component, "-") != 0)
		argv[3] = (char *)a->component;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "blkmirror: monitor: cannot run %s: %s\n", program,
		        strerror(errno));
		return;
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			if (fd != STDIN_FILENO)
				close(fd);
		}
		setenv("BLKMIRROR_EVENT_SEVERITY", a->severity, 1);
		setenv("BLKMIRROR_EVENT_MESSAGE", a->message, 1);
		execvp(program, argv);
		fprintf(stderr, "blkmirror: monitor: cannot run %s: %s\n", program,
		        strerror(errno));
		_exit(127);
	}
	children++;
}

/* Whether --exec's program can be run: a path to an executable file, or
 * a name found so on PATH (as execvp looks).  0 or the errno. */
static int runnable(const char *prog)
{
	struct stat st;

	if (strchr(prog, '/')) {
		if (stat(prog, &st) < 0)
			return errno;
		if (!S_ISREG(st.st_mode))
			return EACCES;
		return access(prog, X_OK) < 0 ? errno : 0;
	}
	const char *path = getenv("PATH");
	int err = ENOENT;
	for (const char *p = path && *path ? path : "/usr/bin:/bin"; p;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char full[4096];
		snprintf(full, sizeof(full), "%.*s/%s", (int)n, n ? p : ".",
		         prog);
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(full, X_OK) == 0)
				return 0;
			err = EACCES;
		}
		p = colon ? colon + 1 : NULL;
	}
	return err;
}

/* One line: TIME MIRROR SEVERITY EVENT COMPONENT MESSAGE. */
static void report(const struct alert *a)
{
	time_t secs = (time_t)(a->time_ms / 1000);
	struct tm tm;
	char when[64], zone[8];

	localtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	printf("%s.%03d%s %s %s %s %s %s\n", when, (int)(a->time_ms % 1000),
	       zone, a->mirror, a->severity, a->event,
	       a->component && a->component[0] ? a->component : "-", a->message);
	fflush(stdout);
	if (program)
		run_program(a);
}

static void report_now(const char *severity, const char *event,
                       const char *mirror, const char *component,
                       const char *message)
{
	struct alert a = {now_ms(), severity, event, mirror, component, message};
	report(&a);
}

/* The present trouble of a running mirror as events (see the top).
 * 0, or -errno when it could not be asked. */
static int report_state(const char *name)
{
	char *reply = malloc(REPLY_MAX), *line, *save = NULL;
	char msg[400];
	int total = 0, active = 0, err;

	if (!reply)
		return -ENOMEM;
	err = control_call(name, "components", reply, REPLY_MAX);
	if (err == 0 && strncmp(reply, "ok\n", 3) != 0)
		err = -EPROTO;
	if (err < 0) {
		free(reply);
		return err;
	}
	/* first the count, then the lines */
	for (char *p = reply; (p = strstr(p, "\ncomp\t")); p++) {
		char *state = strchr(p + 6, '\t');
		if (state && strncmp(state + 1, "REMOVED\t", 8) == 0)
			continue; /* a slot of a component no longer there */
		total++;
		active += state && strncmp(state + 1, "ACTIVE\t", 7) == 0;
	}
	if (active < total) {
		snprintf(msg, sizeof(msg), "%d of %d components ACTIVE", active,
		         total);
		report_now("warning", "Degraded", name, NULL, msg);
	}
	for (line = strtok_r(reply + 3, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[6];
		int nf = 0;
		for (char *s = line, *tok; nf < 6 && (tok = strsep(&s, "\t"));)
			f[nf++] = tok;
		if (nf < 6 || strcmp(f[0], "comp") != 0 ||
		    strcmp(f[2], "ACTIVE") == 0 || strcmp(f[2], "REMOVED") == 0)
			continue;
		if (strcmp(f[2], "SYNCHRONIZING") == 0) {
			snprintf(msg, sizeof(msg), "%s%% copied", f[3]);
			report_now("info", "Synchronizing", name, f[4], msg);
		} else if (strcmp(f[2], "FAILED") == 0) {
			report_now("err", "ComponentFailed", name, f[4], f[5]);
		} else if (strcmp(f[2], "DISCONNECTED") == 0) {
			report_now("warning", "ComponentDisconnected", name, f[4],
			           f[5]);
		} else if (strcmp(f[2], "INACTIVE") == 0) {
			report_now("warning", "ComponentDeactivated", name, f[4],
			           f[5]);
		} else {
			report_now("warning", "ComponentAbsent", name, f[4], f[5]);
		}
	}
	free(reply);
	return 0;
}

static void gone(struct followed *f, const char *why)
{
	if (f->running)
		report_now("notice", "Stopped", f->name, NULL, why);
	f->running = false;
}

/* Reports the events of reply (an "events" answer); returns how many. */
static int report_events(struct followed *f, char *reply)
{
	char *line, *save = NULL;
	int n = 0;

	for (line = strtok_r(reply, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *fl[8];
		int nf = 0;
		for (char *s = line, *tok; nf < 8 && (tok = strsep(&s, "\t"));)
			fl[nf++] = tok;
		if (nf < 8 || strcmp(fl[0], "event") != 0)
			continue;
		struct alert a = {strtoll(fl[2], NULL, 10), fl[3], fl[4], f->name,
		                  fl[6], fl[7]};
		f->since = strtoull(fl[1], NULL, 10);
		report(&a);
		n++;
	}
	return n;
}

/* One poll of one mirror; at_start: the monitor's first look.  0, or
 * -errno when the mirror could not be asked. */
static int poll_mirror(struct followed *f, bool at_start)
{
	char *reply = malloc(REPLY_MAX);
	char cmd[64];
	int err = 0;

	if (!reply)
		return -ENOMEM;
	for (int round = 0; round < 64; round++) {
		unsigned long long current, lost;
		uint64_t instance;
		snprintf(cmd, sizeof(cmd), "events %" PRIu64,
		         f->running ? f->since : 0);
		err = control_call(f->name, cmd, reply, REPLY_MAX);
		if (err == -ENOENT) {
			gone(f, "its server is gone");
			err = 0;
			break;
		}
		if (err == 0 && strncmp(reply, "error ", 6) == 0) {
			/* "error m0 is stopping": between running and gone */
			err = 0;
			break;
		}
		if (err == 0 && sscanf(reply, "ok\ncurrent %llu instance %" SCNx64
		                       " lost %llu", &current, &instance,
		                       &lost) != 3)
			err = -EPROTO;
		if (err < 0) {
			if (!f->complained)
				fprintf(stderr, "blkmirror: monitor: %s: cannot ask "
				        "it: %s\n", f->name, strerror(-err));
			f->complained = true;
			break;
		}
		f->complained = false;
		if (f->running && instance != f->instance) {
			gone(f, "its server restarted");
			continue; /* ask again from its first event */
		}
		if (!f->running) {
			f->running = true;
			f->instance = instance;
			f->since = 0;
			if (at_start) { /* its trouble now, not its history */
				f->since = current;
				err = report_state(f->name);
				break;
			}
		}
		if (lost) {
			char msg[128];
			snprintf(msg, sizeof(msg), "%llu events were lost (the "
			         "monitor fell behind the mirror's log)", lost);
			report_now("warning", "EventsLost", f->name, NULL, msg);
		}
		int n = report_events(f, reply);
		if (n == 0 || f->since >= current)
			break;
	}
	free(reply);
	return err;
}

static int parse_seconds(const char *s, double *out)
{
	double v;

	if (parse_duration(s, &v) < 0 || !(v >= 0.1 && v <= 3600))
		return -EINVAL;
	*out = v;
	return 0;
}

static struct followed *find_or_add(struct followed **v, size_t *n,
                                    const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].name, name) == 0)
			return &(*v)[i];
	struct followed *nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return NULL;
	*v = nv;
	memset(&nv[*n], 0, sizeof(nv[*n]));
	snprintf(nv[*n].name, sizeof(nv[*n].name), "%s", name);
	return &nv[(*n)++];
}

/* --oneshot: waits (boundedly) for the programs it started. */
static void wait_children(void)
{
	int64_t deadline = now_ms() + ONESHOT_CHILD_WAIT_MS;

	while (children > 0 && now_ms() < deadline) {
		reap();
		if (children > 0) {
			struct timespec ts = {0, 20 * 1000000};
			nanosleep(&ts, NULL);
		}
	}
}

int cmd_monitor(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"exec", required_argument, NULL, 'x'},
		{"oneshot", no_argument, NULL, '1'},
		{"interval", required_argument, NULL, 'i'},
		{NULL, 0, NULL, 0},
	};
	double interval = 1.0;
	bool oneshot = false;
	int opt, status, rc = 0;
	struct followed *fl = NULL;
	size_t nfl = 0;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, "monitor", "", longopts,
	                         &status)) != -1) {
		switch (opt) {
		case 'x':
			if (!optarg[0])
				return cli_usage("monitor: --exec needs a program");
			program = optarg;
			/* checked now: an alert it cannot send is found
			 * when it is needed, too late */
			int err = runnable(program);
			if (err)
				return cli_fail("monitor: --exec: cannot run '%s': "
				                "%s", program, strerror(err));
			break;
		case '1': oneshot = true; break;
		case 'i':
			if (parse_seconds(optarg, &interval) < 0)
				return cli_usage("monitor: --interval '%s' is not a "
				                 "time from 0.1s to 3600s (e.g. 2, 2s, "
				                 "500ms)",
				                 optarg);
			break;
		default:
			return status;
		}
	}
	char **names = argv + optind;
	size_t nnames = (size_t)(argc - optind);
	for (size_t i = 0; i < nnames; i++)
		if (!bm_name_valid(names[i]))
			return cli_usage("invalid mirror name '%s'", names[i]);
	for (size_t i = 0; i < nnames; i++) {
		char **paths;
		size_t np;
		if (state_read_components(names[i], &paths, &np) < 0)
			return cli_fail("no mirror named '%s' ('blkmirror list' "
			                "shows them)", names[i]);
		state_free(paths, np);
	}
	for (bool first = true;; first = false) {
		char **all = NULL;
		size_t nall = 0;
		reap();
		if (!nnames && state_list_mirrors(&all, &nall) < 0)
			nall = 0;
		char **look = nnames ? names : all;
		size_t nlook = nnames ? nnames : nall;
		for (size_t i = 0; i < nlook; i++) {
			struct followed *f = find_or_add(&fl, &nfl, look[i]);
			if (!f)
				continue;
			if (oneshot) {
				int err = report_state(f->name);
				if (err == -ENOENT && nnames)
					report_now("notice", "Stopped", f->name,
					           NULL, "it is not running");
				else if (err < 0 && err != -ENOENT)
					rc = cli_fail("%s: cannot ask it: %s",
					              f->name, strerror(-err));
				continue;
			}
			poll_mirror(f, first);
		}
		/* a followed mirror no longer listed (forgotten) */
		for (size_t i = 0; !oneshot && i < nfl; i++) {
			bool listed = false;
			for (size_t k = 0; k < nlook; k++)
				listed |= strcmp(fl[i].name, look[k]) == 0;
			if (!listed && fl[i].running)
				poll_mirror(&fl[i], false);
		}
		state_free(all, nall);
		if (oneshot)
			break;
		if (first) {
			int running = 0;
			for (size_t i = 0; i < nfl; i++)
				running += fl[i].running;
			fprintf(stderr, "blkmirror: monitor: following %d running "
			        "mirror%s; polling every %g s\n", running,
			        running == 1 ? "" : "s", interval);
		}
		struct timespec ts = {(time_t)interval,
		                      (long)((interval - (double)(time_t)interval) *
		                             1e9)};
		nanosleep(&ts, NULL);
	}
	wait_children();
	free(fl);
	return rc;
}
