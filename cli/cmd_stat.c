/*
 * blkmirror stat: gstat(8) for a running mirror.  A row per component and
 * one for the mirror, with gstat's columns: L(q) (requests outstanding),
 * ops/s, r/s, kBps, ms/r, w/s, kBps, ms/w (and with -d d/s, kBps, ms/d),
 * %busy (the share of the interval with a request outstanding).
 *
 * The server keeps cumulative counters; stat asks for them every interval
 * over the control socket and prints the differences.  On a terminal the
 * screen is redrawn in place; piped, each interval is printed as plain
 * lines; --json prints one JSON object per interval (one interval, then
 * exits, unless -I or -c asks for more).  Under the table, a line per
 * component being copied (the "progress" control command): its percent,
 * rate and time left ("sync" in JSON).
 *
 * --prometheus prints the counters themselves once, in Prometheus' text
 * format, for node_exporter's textfile collector (see prometheus_report).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define MAX_ROWS (BM_MAX_COMPONENTS + 1)

struct sample {
	unsigned long long t;
	unsigned long long cpu_us; /* the server's CPU time (user + system) */
	bool has_cpu;              /* (an older server sends none) */
	int n;
	struct bm_stat_row rows[MAX_ROWS];
};

static int take(const char *name, struct sample *s)
{
	char *reply = malloc(64 * 1024);
	char *line, *save = NULL;
	int err;

	if (!reply)
		return -ENOMEM;
	err = control_call(name, "stats", reply, 64 * 1024);
	if (err == 0 && strncmp(reply, "ok\n", 3) != 0)
		err = -EPROTO;
	s->n = 0;
	s->cpu_us = 0;
	s->has_cpu = false;
	if (err) {
		free(reply);
		return err;
	}
	for (line = strtok_r(reply + 3, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct bm_stat_row *r = &s->rows[s->n];
		int name_at = 0;
		if (sscanf(line, "t %llu", &s->t) == 1)
			continue;
		if (sscanf(line, "cpu %llu", &s->cpu_us) == 1) {
			s->has_cpu = true;
			continue;
		}
		if (s->n < MAX_ROWS &&
		    sscanf(line, "row %d %lu %lu %lu %lu %lu %lu %lu %lu %lu %lu "
		           "%lu %n", &r->queue, &r->reads, &r->read_bytes,
		           &r->read_ns, &r->writes, &r->write_bytes, &r->write_ns,
		           &r->deletes, &r->delete_bytes, &r->delete_ns,
		           &r->busy_ns, &r->errors, &name_at) == 12 && name_at) {
			snprintf(r->name, sizeof(r->name), "%s", line + name_at);
			s->n++;
		}
	}
	free(reply);
	return err;
}

/* The copies in progress, under the table (the "progress" reply:
 * "sync INDEX DONE TOTAL RATE ETA PATH" lines). */
static void print_progress(const char *name, bool json)
{
	char *reply = malloc(64 * 1024), *line, *save = NULL;
	bool first = true;

	if (json)
		printf(",\"sync\":[");
	if (reply && control_call(name, "progress", reply, 64 * 1024) == 0 &&
	    strncmp(reply, "ok\n", 3) == 0) {
		for (line = strtok_r(reply + 3, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			uint64_t done, total, rate;
			int64_t eta;
			int idx, at = 0;
			if (sscanf(line, "sync %d %" SCNu64 " %" SCNu64 " %" SCNu64
			           " %" SCNd64 " %n", &idx, &done, &total, &rate,
			           &eta, &at) != 5 || !at)
				continue;
			double pct = total ? (double)done * 100 / (double)total : 0;
			if (json) {
				printf("%s{\"path\":\"%s\",\"percent\":%.1f,"
				       "\"rate\":%" PRIu64 ",\"eta_s\":%" PRId64 "}",
				       first ? "" : ",", line + at, pct, rate, eta);
			} else if (rate) {
				printf("sync: %s %.1f%% %.1f MiB/s %" PRId64 "m%02"
				       PRId64 "s left\n", line + at, pct,
				       (double)rate / (1 << 20), eta / 60, eta % 60);
			} else {
				printf("sync: %s %.1f%%\n", line + at, pct);
			}
			first = false;
		}
	}
	if (json)
		printf("]");
	free(reply);
}

static double per_s(uint64_t d, double dt) { return dt > 0 ? (double)d / dt : 0; }
static double ms_per(uint64_t ns, uint64_t ops)
{
	return ops ? (double)ns / (double)ops / 1e6 : 0;
}

/* A JSON string: quote, backslash and control characters escaped. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void print_table(const char *name, const struct sample *a,
                        const struct sample *b, double wanted, bool deletes,
                        bool json)
{
	double dt = (double)(b->t - a->t) / 1e9;
	/* (none from an older server; a restarted one starts again at 0) */
	bool cpu_known = a->has_cpu && b->has_cpu && b->cpu_us >= a->cpu_us;
	double cpu = cpu_known && dt > 0
	                     ? (double)(b->cpu_us - a->cpu_us) / 1e6 / dt * 100
	                     : 0;

	if (json) {
		printf("{\"interval_s\":%.3f,", dt);
		if (cpu_known)
			printf("\"server_cpu_pct\":%.1f,\"server_cpu_s\":%.6f,",
			       cpu, (double)b->cpu_us / 1e6);
		printf("\"rows\":[");
	} else {
		printf("dT: %.3fs  w: %.3fs", dt, wanted);
		if (cpu_known)
			printf("  server CPU: %.1f%%", cpu);
		printf("\n");
		printf(" L(q)  ops/s    r/s   kBps   ms/r    w/s   kBps   ms/w");
		if (deletes)
			printf("    d/s   kBps   ms/d");
		printf("   %%busy Name\n");
	}
	for (int i = 0; i < b->n && i < a->n; i++) {
		const struct bm_stat_row *x = &a->rows[i], *y = &b->rows[i];
		uint64_t dr = y->reads - x->reads, dw = y->writes - x->writes;
		uint64_t dd = y->deletes - x->deletes;
		double busy = dt > 0 ? (double)(y->busy_ns - x->busy_ns) / 1e9 /
		                       dt * 100 : 0;
		if (busy > 100)
			busy = 100;
		if (json) {
			printf("%s{\"name\":", i ? "," : "");
			json_string(y->name);
			printf(",\"queue\":%d,\"ops_s\":%.1f,"
			       "\"r_s\":%.1f,\"r_kBps\":%.1f,\"ms_r\":%.3f,"
			       "\"w_s\":%.1f,\"w_kBps\":%.1f,\"ms_w\":%.3f,"
			       "\"d_s\":%.1f,\"d_kBps\":%.1f,\"ms_d\":%.3f,"
			       "\"busy_pct\":%.1f,\"errors\":%lu}",
			       y->queue,
			       per_s(dr + dw + dd, dt), per_s(dr, dt),
			       per_s(y->read_bytes - x->read_bytes, dt) / 1024,
			       ms_per(y->read_ns - x->read_ns, dr), per_s(dw, dt),
			       per_s(y->write_bytes - x->write_bytes, dt) / 1024,
			       ms_per(y->write_ns - x->write_ns, dw), per_s(dd, dt),
			       per_s(y->delete_bytes - x->delete_bytes, dt) / 1024,
			       ms_per(y->delete_ns - x->delete_ns, dd), busy,
			       (unsigned long)(y->errors - x->errors));
			continue;
		}
		printf("%5d %6.0f %6.0f %6.0f %6.1f %6.0f %6.0f %6.1f", y->queue,
		       per_s(dr + dw + dd, dt), per_s(dr, dt),
		       per_s(y->read_bytes - x->read_bytes, dt) / 1024,
		       ms_per(y->read_ns - x->read_ns, dr), per_s(dw, dt),
		       per_s(y->write_bytes - x->write_bytes, dt) / 1024,
		       ms_per(y->write_ns - x->write_ns, dw));
		if (deletes)
			printf(" %6.0f %6.0f %6.1f", per_s(dd, dt),
			       per_s(y->delete_bytes - x->delete_bytes, dt) / 1024,
			       ms_per(y->delete_ns - x->delete_ns, dd));
		printf(" %6.1f| %s\n", busy, y->name);
	}
	if (json)
		printf("]");
	print_progress(name, json);
	if (json)
		printf("}\n");
	fflush(stdout);
}

static int parse_interval(const char *s, double *out)
{
	double v;

	if (parse_duration(s, &v) < 0 || !(v >= 0.01 && v <= 3600))
		return -EINVAL;
	*out = v;
	return 0;
}

/* ---- --prometheus ----------------------------------------------------- */

struct prom_mirror {
	const char *name;
	bool up;
	struct sample s;
	int ncomp;
	char state[MAX_ROWS][16];
	long long sync_done[MAX_ROWS], sync_total[MAX_ROWS]; /* -1: none */
};

/* A label value: backslash, double quote and line feed escaped. */
static void prom_label(const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			printf("\\%c", *v);
		else if (*v == '\n')
			printf("\\n");
		else
			putchar(*v);
	}
}

/* States and copy progress of a running mirror's components. */
static int prom_states(struct prom_mirror *pm)
{
	char *reply = malloc(256 * 1024), *line, *save = NULL;
	int err;

	if (!reply)
		return -ENOMEM;
	for (int i = 0; i < MAX_ROWS; i++)
		pm->sync_done[i] = pm->sync_total[i] = -1;
	err = control_call(pm->name, "components", reply, 256 * 1024);
	if (err == 0 && strncmp(reply, "ok\n", 3) != 0)
		err = -EPROTO;
	/* rows in the order of the slots, a REMOVED slot skipped (as the
	 * statistics' rows skip it): row[slot] */
	int row[MAX_ROWS];
	for (int i = 0; i < MAX_ROWS; i++)
		row[i] = -1;
	for (line = err ? NULL : strtok_r(reply + 3, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int idx;
		char st[16];
		if (sscanf(line, "comp\t%d\t%15[A-Z]", &idx, st) == 2 &&
		    idx >= 0 && idx < MAX_ROWS - 1 && pm->ncomp < MAX_ROWS - 1 &&
		    strcmp(st, "REMOVED") != 0) {
			row[idx] = pm->ncomp++;
			snprintf(pm->state[row[idx]], sizeof(pm->state[0]), "%s",
			         st);
		}
	}
	if (err == 0)
		err = control_call(pm->name, "progress", reply, 256 * 1024);
	for (line = err ? NULL : strtok_r(reply + 3, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int idx;
		long long done, total;
		if (sscanf(line, "sync %d %lld %lld", &idx, &done, &total) == 3 &&
		    idx >= 0 && idx < MAX_ROWS - 1 && row[idx] >= 0) {
			pm->sync_done[row[idx]] = done;
			pm->sync_total[row[idx]] = total;
		}
	}
	free(reply);
	return err;
}

enum prom_field { F_READS, F_READ_BYTES, F_READ_S, F_WRITES, F_WRITE_BYTES,
                  F_WRITE_S, F_DELETES, F_DELETE_BYTES, F_DELETE_S, F_ERRORS,
                  F_BUSY_S, F_QUEUE };

static const struct prom_metric {
	const char *name, *type, *help;
	enum prom_field field;
} prom_metrics[] = {
	{"reads_total", "counter", "Read requests completed.", F_READS},
	{"read_bytes_total", "counter", "Bytes read.", F_READ_BYTES},
	{"read_seconds_total", "counter", "Time spent in reads.", F_READ_S},
	{"writes_total", "counter", "Write requests completed.", F_WRITES},
	{"written_bytes_total", "counter", "Bytes written.", F_WRITE_BYTES},
	{"write_seconds_total", "counter", "Time spent in writes.", F_WRITE_S},
	{"deletes_total", "counter", "Trim and zero requests completed.",
	 F_DELETES},
	{"deleted_bytes_total", "counter", "Bytes trimmed or zeroed.",
	 F_DELETE_BYTES},
	{"delete_seconds_total", "counter", "Time spent in trims and zeroes.",
	 F_DELETE_S},
	{"errors_total", "counter", "Requests that failed.", F_ERRORS},
	{"busy_seconds_total", "counter",
	 "Time with at least one request outstanding.", F_BUSY_S},
	{"queue_requests", "gauge", "Requests outstanding now.", F_QUEUE},
};

static void prom_value(const struct bm_stat_row *r, enum prom_field f)
{
	switch (f) {
	case F_READS: printf("%lu\n", (unsigned long)r->reads); break;
	case F_READ_BYTES: printf("%lu\n", (unsigned long)r->read_bytes); break;
	case F_READ_S: printf("%.9f\n", (double)r->read_ns / 1e9); break;
	case F_WRITES: printf("%lu\n", (unsigned long)r->writes); break;
	case F_WRITE_BYTES: printf("%lu\n", (unsigned long)r->write_bytes); break;
	case F_WRITE_S: printf("%.9f\n", (double)r->write_ns / 1e9); break;
	case F_DELETES: printf("%lu\n", (unsigned long)r->deletes); break;
	case F_DELETE_BYTES:
		printf("%lu\n", (unsigned long)r->delete_bytes);
		break;
	case F_DELETE_S: printf("%.9f\n", (double)r->delete_ns / 1e9); break;
	case F_ERRORS: printf("%lu\n", (unsigned long)r->errors); break;
	case F_BUSY_S: printf("%.9f\n", (double)r->busy_ns / 1e9); break;
	case F_QUEUE: printf("%d\n", r->queue); break;
	}
}

static void prom_header(const char *name, const char *type, const char *help)
{
	printf("# HELP blkmirror_%s %s\n# TYPE blkmirror_%s %s\n", name, help,
	       name, type);
}

/* Every family once, its HELP and TYPE before its samples, all mirrors'
 * samples together (the format wants a family in one group). */
static void prom_print(struct prom_mirror *pm, int n)
{
	static const char *const states[] = {"ACTIVE", "SYNCHRONIZING",
	                                     "FAILED", "DISCONNECTED", "ABSENT",
	                                     "INACTIVE"};

	prom_header("mirror_up", "gauge", "1 when the mirror's server answers.");
	for (int i = 0; i < n; i++) {
		printf("blkmirror_mirror_up{mirror=\"");
		prom_label(pm[i].name);
		printf("\"} %d\n", pm[i].up);
	}
	prom_header("mirror_degraded", "gauge",
	            "1 when a component is not ACTIVE.");
	for (int i = 0; i < n; i++) {
		bool degraded = false;
		if (!pm[i].up)
			continue;
		for (int c = 0; c < pm[i].ncomp; c++)
			degraded |= strcmp(pm[i].state[c], "ACTIVE") != 0;
		printf("blkmirror_mirror_degraded{mirror=\"");
		prom_label(pm[i].name);
		printf("\"} %d\n", degraded);
	}
	prom_header("server_cpu_seconds_total", "counter",
	            "CPU time (user and system) of the mirror's server.");
	for (int i = 0; i < n; i++) {
		if (!pm[i].up || !pm[i].s.has_cpu)
			continue;
		printf("blkmirror_server_cpu_seconds_total{mirror=\"");
		prom_label(pm[i].name);
		printf("\"} %.6f\n", (double)pm[i].s.cpu_us / 1e6);
	}
	for (size_t k = 0; k < sizeof(prom_metrics) / sizeof(prom_metrics[0]);
	     k++) {
		const struct prom_metric *pmet = &prom_metrics[k];
		char family[64];
		for (int scope = 0; scope < 2; scope++) {
			snprintf(family, sizeof(family), "%s_%s",
			         scope ? "component" : "mirror", pmet->name);
			prom_header(family, pmet->type, pmet->help);
			for (int i = 0; i < n; i++) {
				const struct sample *s = &pm[i].s;
				if (!pm[i].up || s->n < 1)
					continue;
				for (int r = scope ? 0 : s->n - 1;
				     r < (scope ? s->n - 1 : s->n); r++) {
					printf("blkmirror_%s{mirror=\"", family);
					prom_label(pm[i].name);
					if (scope) {
						printf("\",component=\"");
						prom_label(s->rows[r].name);
					}
					printf("\"} ");
					prom_value(&s->rows[r], pmet->field);
				}
			}
		}
	}
	prom_header("component_state", "gauge",
	            "1 for the component's state, 0 for the others.");
	for (int i = 0; i < n; i++)
		for (int c = 0; pm[i].up && c < pm[i].ncomp && c < pm[i].s.n - 1;
		     c++)
			for (size_t k = 0; k < sizeof(states) / sizeof(states[0]);
			     k++) {
				printf("blkmirror_component_state{mirror=\"");
				prom_label(pm[i].name);
				printf("\",component=\"");
				prom_label(pm[i].s.rows[c].name);
				printf("\",state=\"%s\"} %d\n", states[k],
				       strcmp(pm[i].state[c], states[k]) == 0);
			}
	for (int pass = 0; pass < 2; pass++) {
		prom_header(pass ? "sync_total_bytes" : "sync_done_bytes", "gauge",
		            pass ? "Bytes to copy onto a SYNCHRONIZING component."
		                 : "Bytes copied onto a SYNCHRONIZING component.");
		for (int i = 0; i < n; i++)
			for (int c = 0; pm[i].up && c < pm[i].ncomp &&
			                c < pm[i].s.n - 1; c++) {
				if (pm[i].sync_done[c] < 0)
					continue;
				printf("blkmirror_%s{mirror=\"", pass
				       ? "sync_total_bytes" : "sync_done_bytes");
				prom_label(pm[i].name);
				printf("\",component=\"");
				prom_label(pm[i].s.rows[c].name);
				printf("\"} %lld\n", pass ? pm[i].sync_total[c]
				                         : pm[i].sync_done[c]);
			}
	}
}

/*
 * stat --prometheus NAME...: the cumulative counters of each mirror and
 * its components, the queue, each component's state (a 0/1 gauge per
 * state) and the copy's progress, once.  A mirror that is not running
 * has blkmirror_mirror_up 0 and nothing else (exit 0: that is data for
 * the alerting); one that does not exist is an error (exit 1, nothing
 * printed).
 */
static int prometheus_report(char **names, int n)
{
	struct prom_mirror *pm = calloc((size_t)n, sizeof(*pm));
	int rc = 0;

	if (!pm)
		return cli_fail("out of memory");
	for (int i = 0; i < n && rc == 0; i++) {
		pm[i].name = names[i];
		int err = take(names[i], &pm[i].s);
		if (err == 0)
			err = prom_states(&pm[i]);
		pm[i].up = err == 0;
		if (err == -ENOENT) {
			char **paths;
			size_t np;
			if (state_read_components(names[i], &paths, &np) < 0)
				rc = cli_fail("no mirror named '%s' ('blkmirror "
				              "list' shows them)", names[i]);
			else
				state_free(paths, np);
		} else if (err < 0) {
			rc = cli_fail("%s: %s", names[i], strerror(-err));
		}
	}
	if (rc == 0) {
		prom_print(pm, n);
		fflush(stdout);
	}
	free(pm);
	return rc;
}

/* --prometheus's command line: names only. */
static int stat_prometheus(int nnames, char **names, bool other_options)
{
	if (other_options)
		return cli_usage("stat: --prometheus takes no other option; "
		                 "usage: blkmirror %s", cli_verb_usage("stat"));
	if (nnames < 1)
		return cli_usage_of("stat");
	for (int i = 0; i < nnames; i++)
		if (!bm_name_valid(names[i]))
			return cli_usage("invalid mirror name '%s'", names[i]);
	return prometheus_report(names, nnames);
}

int cmd_stat(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"count", required_argument, NULL, 'c'},
		{"prometheus", no_argument, NULL, 'P'},
		{NULL, 0, NULL, 0},
	};
	double interval = 1.0;
	bool deletes = false, json = false, prometheus = false, timed = false;
	long count = -1;
	int opt, status;
	struct sample a, b;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, "stat", "I:dbc:", longopts,
	                         &status)) != -1) {
		switch (opt) {
		case 'I':
			timed = true;
			if (parse_interval(optarg, &interval) < 0)
				return cli_usage("interval '%s' is not a time from 10ms "
				                 "to 3600s (e.g. 1s, 500ms)", optarg);
			break;
		case 'd': deletes = true; break;
		case 'b': count = 1; break;
		case 'j': json = true; break;
		case 'P': prometheus = true; break;
		case 'c': {
			char *end;
			count = strtol(optarg, &end, 10);
			if (*end || count < 1)
				return cli_usage("stat: -c COUNT '%s' is not a positive number",
				                 optarg);
			break;
		}
		default:
			return status;
		}
	}
	if (prometheus)
		return stat_prometheus(argc - optind, argv + optind, timed ||
		                       count >= 0 || json || deletes);
	if (json && count < 0 && !timed)
		count = 1; /* one sample, for scripts; -I or -c for more */
	if (argc - optind != 1)
		return cli_usage_of("stat");
	const char *name = argv[optind];
	if (!bm_name_valid(name))
		return cli_usage("invalid mirror name '%s'", name);
	int err = take(name, &a);
	if (err == -ENOENT) {
		char **paths;
		size_t n;
		if (state_read_components(name, &paths, &n) < 0)
			return cli_fail("no mirror named '%s' ('blkmirror list' "
			                "shows them)", name);
		state_free(paths, n);
		return cli_fail("mirror '%s' is not running; start it with "
		                "'blkmirror serve %s'", name, name);
	}
	if (err < 0)
		return cli_fail("%s: %s", name, strerror(-err));
	bool tty = isatty(STDOUT_FILENO) && !json;
	for (long i = 0; count < 0 || i < count; i++) {
		struct timespec ts = {(time_t)interval,
		                      (long)((interval - (double)(time_t)interval) * 1e9)};
		nanosleep(&ts, NULL);
		if (take(name, &b) < 0)
			return cli_fail("mirror '%s' stopped", name);
		if (tty)
			printf("\033[H\033[2J");
		print_table(name, &a, &b, interval, deletes, json);
		if (!tty && !json)
			printf("\n");
		a = b;
	}
	return 0;
}
