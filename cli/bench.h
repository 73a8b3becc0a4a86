/*
 * `blkmirror bench`: what both field reports ran by hand (each disk alone,
 * all in parallel, the mirror read like dd), on real components, with a
 * history that says when a figure fell.  Split by concern:
 *   cmd_bench.c      the verb: checks, measurements, the table
 *   bench_history.c  the history file (one JSON line a run), comparison
 *                    with the last runs on the same components, --history
 *   bench_svg.c      the --svg chart of the history
 *   bench_json.c     a small JSON reader and string writer for the file
 */
#ifndef BM_CLI_BENCH_H
#define BM_CLI_BENCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "blkmirror.h"

/* Exit status when a figure fell by more than --threshold. */
#define BENCH_EXIT_REGRESSION 3
#define BENCH_MAX_FIGURES 64
#define BENCH_MAX_REPEAT 99     /* bench --repeat */

struct bench_component {
	char *path;
	uint64_t size;      /* bytes */
	char *model;        /* what the system says about the disk; "" */
};

struct bench_figure {
	char *name;         /* "read A alone", "mirror read (stream)", ... */
	double mibs;        /* MiB/s: the median of the run's repeats */
	double min, max;    /* over the repeats (mibs when one) */
};

/* One run: what was measured, and on what. */
struct bench_run {
	char *time;         /* UTC, "2026-11-30T17:02:11Z" */
	char *version;      /* blkmirror's, BM_VERSION at build time */
	char *kernel;       /* uname -r */
	uint64_t bytes;     /* read (and written) of each component */
	bool write;         /* --write figures included */
	unsigned repeat;    /* each figure measured this many times (1) */
	size_t ncomp;
	struct bench_component comp[BM_MAX_COMPONENTS];
	size_t nfig;
	struct bench_figure fig[BENCH_MAX_FIGURES];
};

void bench_run_free(struct bench_run *r);
/* Adds a figure (name copied); false when full or out of memory. */
bool bench_run_add(struct bench_run *r, const char *name, double mibs);
/* A figure's value, or -1 when the run has none of that name. */
double bench_run_figure(const struct bench_run *r, const char *name);
/* Same components: the same paths and sizes, in the same order. */
bool bench_run_same_components(const struct bench_run *a,
                               const struct bench_run *b);
/* Letter of component i in figure names ("A", "B", ...). */
char bench_letter(size_t i);

/* bench_history.c */
/* STATE_DIR/bench-history.jsonl into buf. */
int bench_history_path(char *buf, size_t len);
/* Every run recorded (lines that do not parse are skipped and counted in
 * *skipped); 0, or -errno with a message printed.  A missing file is no
 * run.  Free with bench_history_free. */
int bench_history_load(struct bench_run **runs, size_t *n, size_t *skipped);
void bench_history_free(struct bench_run *runs, size_t n);
/* Appends r as one line; 0 or -errno. */
int bench_history_append(const struct bench_run *r);
/* A figure of a new run is compared with its median over the last runs
 * on the same components and size that have it, at most this many: one
 * odd run does not set the bar, and a fall that stays is flagged until
 * most of them have it (3 runs after 5 before it). */
#define BENCH_BASELINE_RUNS 5
/* Prints to out each figure of cur that fell by more than threshold_pct
 * below its median over the newest runs of prev[0..nprev) (the newest
 * first) that have it, and what changed since the oldest of those; names
 * the figures no run of prev has; returns how many fell. */
int bench_compare(const struct bench_run *const *prev, size_t nprev,
                  const struct bench_run *cur, double threshold_pct,
                  FILE *out);
/* --history: the runs (of these components when n > 0) as a table, and
 * as a chart into svg_path when not NULL; the exit status. */
int bench_history_show(char *const *paths, size_t n, const char *svg_path);

/* bench_svg.c: a line chart of every figure over the runs given (all of
 * one component set); 0 or -errno. */
int bench_svg_write(const char *path, struct bench_run *const *runs,
                    size_t n);

/* bench_json.c: a parsed JSON value. */
enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY,
                 JSON_OBJECT };
struct json {
	enum json_type type;
	bool boolean;
	double number;
	char *string;
	size_t n;               /* items of an array or object */
	struct json *items;
	char **keys;            /* an object's, one per item */
};
/* Parses one JSON text (the whole string); NULL when it is not one. */
struct json *json_parse(const char *text);
void json_free(struct json *j);
/* An object's member, or NULL. */
const struct json *json_get(const struct json *obj, const char *key);
/* A member's string ("" when absent or not a string) and number (-1). */
const char *json_str(const struct json *obj, const char *key);
double json_num(const struct json *obj, const char *key);
/* Writes s as a JSON string, quoted and escaped. */
void json_put_string(FILE *f, const char *s);

#endif
