/*
 * blkmirror stat: gstat(8) for a running mirror.  A row per component and
 * one for the mirror, with gstat's columns: L(q) (requests outstanding),
 * ops/s, r/s, kBps, ms/r, w/s, kBps, ms/w (and with -d d/s, kBps, ms/d),
 * %busy (the share of the interval with a request outstanding).
 *
 * The server keeps cumulative counters; stat asks for them every interval
 * over the control socket and prints the differences.  On a terminal the
 * screen is redrawn in place; piped, each interval is printed as plain
 * lines; --json prints one JSON object per interval.  Under the table, a
 * line per component being copied (the "progress" control command): its
 * percent, rate and time left ("sync" in JSON).
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

static void print_table(const char *name, const struct sample *a,
                        const struct sample *b, double wanted, bool deletes,
                        bool json)
{
	double dt = (double)(b->t - a->t) / 1e9;

	if (json) {
		printf("{\"interval_s\":%.3f,\"rows\":[", dt);
	} else {
		printf("dT: %.3fs  w: %.3fs\n", dt, wanted);
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
			printf("%s{\"name\":\"%s\",\"queue\":%d,\"ops_s\":%.1f,"
			       "\"r_s\":%.1f,\"r_kBps\":%.1f,\"ms_r\":%.3f,"
			       "\"w_s\":%.1f,\"w_kBps\":%.1f,\"ms_w\":%.3f,"
			       "\"d_s\":%.1f,\"d_kBps\":%.1f,\"ms_d\":%.3f,"
			       "\"busy_pct\":%.1f,\"errors\":%lu}",
			       i ? "," : "", y->name, y->queue,
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
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0)
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		v /= 1000;
	else if (*end && strcmp(end, "s") != 0)
		return -EINVAL;
	if (v < 0.01 || v > 3600)
		return -EINVAL;
	*out = v;
	return 0;
}

int cmd_stat(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"count", required_argument, NULL, 'c'},
		{NULL, 0, NULL, 0},
	};
	double interval = 1.0;
	bool deletes = false, json = false;
	long count = -1;
	int opt, status;
	struct sample a, b;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, "stat", "I:dbc:", longopts,
	                         &status)) != -1) {
		switch (opt) {
		case 'I':
			if (parse_interval(optarg, &interval) < 0)
				return cli_usage("interval '%s' is not a time from 10ms "
				                 "to 3600s (e.g. 1s, 500ms)", optarg);
			break;
		case 'd': deletes = true; break;
		case 'b': count = 1; break;
		case 'j': json = true; break;
		case 'c': {
			char *end;
			count = strtol(optarg, &end, 10);
			if (*end || count < 1)
				return cli_usage("count '%s' is not a positive number",
				                 optarg);
			break;
		}
		default:
			return status;
		}
	}
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
