/*
 * The bench history: STATE_DIR/bench-history.jsonl, one JSON object a run
 * (time, blkmirror version, kernel, bytes read of each, components with
 * size and model, the figures in MiB/s; with --repeat, each figure's
 * median and its min and max), appended and never rewritten.  A run is
 * compared with the last ones (up to BENCH_BASELINE_RUNS) on the same
 * components (the same paths and sizes, in the same order) that read as
 * much (--size): a figure that fell by more than the threshold below its
 * median over them is named, with how much and what changed since the
 * oldest of them (version, kernel, a component's model), which is the
 * question the second field report needed a hand-run dd to answer.  The
 * median keeps one odd run from setting the bar, and a fall that stays is
 * flagged again until most of those runs have it.  --history prints the
 * runs as a table (and a chart: bench_svg.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"
#include "cli.h"
#include "median.h"

#define HISTORY_FILE "bench-history.jsonl"

char bench_letter(size_t i)
{
	return (char)('A' + i);
}

void bench_run_free(struct bench_run *r)
{
	free(r->time);
	free(r->version);
	free(r->kernel);
	for (size_t i = 0; i < r->ncomp; i++) {
		free(r->comp[i].path);
		free(r->comp[i].model);
	}
	for (size_t i = 0; i < r->nfig; i++)
		free(r->fig[i].name);
	memset(r, 0, sizeof(*r));
}

bool bench_run_add(struct bench_run *r, const char *name, double mibs)
{
	if (r->nfig >= BENCH_MAX_FIGURES)
		return false;
	r->fig[r->nfig].name = strdup(name);
	if (!r->fig[r->nfig].name)
		return false;
	r->fig[r->nfig].min = r->fig[r->nfig].max = mibs;
	r->fig[r->nfig++].mibs = mibs;
	return true;
}

double bench_run_figure(const struct bench_run *r, const char *name)
{
	for (size_t i = 0; i < r->nfig; i++)
		if (strcmp(r->fig[i].name, name) == 0)
			return r->fig[i].mibs;
	return -1;
}

bool bench_run_same_components(const struct bench_run *a,
                               const struct bench_run *b)
{
	if (a->ncomp != b->ncomp)
		return false;
	for (size_t i = 0; i < a->ncomp; i++)
		if (a->comp[i].size != b->comp[i].size ||
		    strcmp(a->comp[i].path, b->comp[i].path) != 0)
			return false;
	return true;
}

int bench_history_path(char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", state_dir(), HISTORY_FILE);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

/* A run from one parsed line; false when a field is missing or wrong. */
static bool run_from_json(const struct json *j, struct bench_run *r)
{
	const struct json *comps = json_get(j, "components");
	const struct json *figs = json_get(j, "figures");
	const struct json *wr = json_get(j, "write");

	memset(r, 0, sizeof(*r));
	if (!comps || comps->type != JSON_ARRAY || !figs ||
	    figs->type != JSON_ARRAY || comps->n == 0 ||
	    comps->n > BM_MAX_COMPONENTS || !*json_str(j, "time"))
		return false;
	r->time = dup_or_empty(json_str(j, "time"));
	r->version = dup_or_empty(json_str(j, "version"));
	r->kernel = dup_or_empty(json_str(j, "kernel"));
	r->bytes = json_num(j, "bytes") > 0 ? (uint64_t)json_num(j, "bytes") : 0;
	r->write = wr && wr->type == JSON_BOOL && wr->boolean;
	double rep = json_num(j, "repeat"); /* (whole, 1 to the most) */
	r->repeat = rep >= 1 && rep <= BENCH_MAX_REPEAT && rep == (unsigned)rep
	                    ? (unsigned)rep : 1;
	for (size_t i = 0; i < comps->n; i++) {
		const struct json *c = &comps->items[i];
		if (!*json_str(c, "path") || json_num(c, "size") < 0)
			goto bad;
		r->comp[i].path = dup_or_empty(json_str(c, "path"));
		r->comp[i].model = dup_or_empty(json_str(c, "model"));
		r->comp[i].size = (uint64_t)json_num(c, "size");
		r->ncomp++;
	}
	for (size_t i = 0; i < figs->n; i++) {
		const struct json *f = &figs->items[i];
		double v = json_num(f, "mibs");
		if (!*json_str(f, "name") || v < 0 ||
		    !bench_run_add(r, json_str(f, "name"), v))
			goto bad;
		/* (runs of one measure each record no spread) */
		double lo = json_num(f, "min"), hi = json_num(f, "max");
		if (lo >= 0 && lo <= v && hi >= v) {
			r->fig[r->nfig - 1].min = lo;
			r->fig[r->nfig - 1].max = hi;
		}
	}
	return r->time && r->version && r->kernel;
bad:
	bench_run_free(r);
	return false;
}

void bench_history_free(struct bench_run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		bench_run_free(&runs[i]);
	free(runs);
}

int bench_history_load(struct bench_run **runs, size_t *n, size_t *skipped)
{
	char path[4096];
	char *line = NULL;
	size_t cap = 0, have = 0;
	struct bench_run *out = NULL;
	FILE *f;

	*runs = NULL;
	*n = *skipped = 0;
	if (bench_history_path(path, sizeof(path)) < 0)
		return cli_fail("the state directory's path is too long"), -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		int err = errno;
		cli_fail("cannot read %s: %s", path, strerror(err));
		return -err;
	}
	while (getline(&line, &cap, f) > 0) {
		struct json *j = json_parse(line);
		struct bench_run r;
		if (!j || !run_from_json(j, &r)) {
			json_free(j);
			(*skipped)++;
			continue;
		}
		json_free(j);
		if (*n == have) {
			size_t nh = have ? have * 2 : 16;
			struct bench_run *nr = realloc(out, nh * sizeof(*nr));
			if (!nr) {
				bench_run_free(&r);
				break;
			}
			out = nr;
			have = nh;
		}
		out[(*n)++] = r;
	}
	free(line);
	fclose(f);
	*runs = out;
	return 0;
}

int bench_history_append(const struct bench_run *r)
{
	char path[4096];
	FILE *f;

	if (mkdir(state_dir(), 0755) < 0 && errno != EEXIST)
		return -errno;
	if (bench_history_path(path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	f = fopen(path, "ae");
	if (!f)
		return -errno;
	fputs("{\"time\":", f);
	json_put_string(f, r->time);
	fputs(",\"version\":", f);
	json_put_string(f, r->version);
	fputs(",\"kernel\":", f);
	json_put_string(f, r->kernel);
	fprintf(f, ",\"bytes\":%llu,\"write\":%s,\"repeat\":%u,"
	        "\"components\":[", (unsigned long long)r->bytes,
	        r->write ? "true" : "false", r->repeat ? r->repeat : 1);
	for (size_t i = 0; i < r->ncomp; i++) {
		fputs(i ? ",{\"path\":" : "{\"path\":", f);
		json_put_string(f, r->comp[i].path);
		fprintf(f, ",\"size\":%llu,\"model\":",
		        (unsigned long long)r->comp[i].size);
		json_put_string(f, r->comp[i].model);
		fputc('}', f);
	}
	fputs("],\"figures\":[", f);
	for (size_t i = 0; i < r->nfig; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		json_put_string(f, r->fig[i].name);
		fprintf(f, ",\"mibs\":%.2f", r->fig[i].mibs);
		if (r->repeat > 1)
			fprintf(f, ",\"min\":%.2f,\"max\":%.2f", r->fig[i].min,
			        r->fig[i].max);
		fputc('}', f);
	}
	fputs("]}\n", f);
	if (fclose(f) != 0)
		return -errno;
	return 0;
}

/* "2026-11-30T17:02:11Z" -> "2026-11-30 17:02" */
static void short_time(const char *iso, char *buf, size_t len)
{
	snprintf(buf, len, "%.16s", iso);
	char *t = strchr(buf, 'T');
	if (t)
		*t = ' ';
}

/* Appends "; WHAT a -> b" to buf for each thing that changed. */
static void what_changed(const struct bench_run *prev,
                         const struct bench_run *cur, char *buf, size_t len)
{
	size_t n = 0;

#define ADD(...) do { \
		if (n < len) \
			n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__); \
	} while (0)
	buf[0] = '\0';
	if (strcmp(prev->version, cur->version) != 0)
		ADD("; blkmirror %s -> %s", prev->version, cur->version);
	if (strcmp(prev->kernel, cur->kernel) != 0)
		ADD("; kernel %s -> %s", prev->kernel, cur->kernel);
	for (size_t i = 0; i < cur->ncomp && i < prev->ncomp; i++)
		if (strcmp(prev->comp[i].model, cur->comp[i].model) != 0)
			ADD("; %c's model '%s' -> '%s'", bench_letter(i),
			    prev->comp[i].model, cur->comp[i].model);
#undef ADD
}

/* The component a figure is about ("read B alone" -> 1), or -1. */
static int figure_component(const struct bench_run *r, const char *name)
{
	for (size_t i = 0; i < r->ncomp; i++) {
		char a[32], b[32];
		snprintf(a, sizeof(a), "read %c alone", bench_letter(i));
		snprintf(b, sizeof(b), "write %c alone", bench_letter(i));
		if (strcmp(name, a) == 0 || strcmp(name, b) == 0)
			return (int)i;
	}
	return -1;
}

/* The median of a figure over the newest runs among prev[0..nprev) that
 * have it, BENCH_BASELINE_RUNS at most; *k: how many, *oldest: the
 * oldest of them (NULL and -1 when none has it). */
static double baseline(const struct bench_run *const *prev, size_t nprev,
                       const char *name, size_t *k,
                       const struct bench_run **oldest)
{
	double v[BENCH_BASELINE_RUNS];

	*k = 0;
	*oldest = NULL;
	for (size_t j = 0; j < nprev && *k < BENCH_BASELINE_RUNS; j++) {
		double x = bench_run_figure(prev[j], name);
		if (x > 0) {
			v[(*k)++] = x;
			*oldest = prev[j];
		}
	}
	return *k ? bm_median(v, *k) : -1;
}

int bench_compare(const struct bench_run *const *prev, size_t nprev,
                  const struct bench_run *cur, double threshold_pct,
                  FILE *out)
{
	char when[32] = "", changed[2048] = "", missing[1024] = "";
	size_t nmissing = 0;
	int fell = 0, unexplained = 0;

	for (size_t i = 0; i < cur->nfig; i++) {
		size_t k;
		const struct bench_run *oldest;
		const char *name = cur->fig[i].name;
		double before = baseline(prev, nprev, name, &k, &oldest);
		double now = cur->fig[i].mibs;
		char of[64] = "";
		if (!oldest) {
			size_t len = strlen(missing);
			snprintf(missing + len, sizeof(missing) - len, "%s%s",
			         nmissing++ ? ", " : "", name);
			continue;
		}
		if (now >= before * (1 - threshold_pct / 100))
			continue;
		if (k > 1)
			snprintf(of, sizeof(of), ": the median of %zu runs", k);
		short_time(oldest->time, when, sizeof(when));
		what_changed(oldest, cur, changed, sizeof(changed));
		int c = figure_component(cur, name);
		char who[4200] = "";
		if (c >= 0)
			snprintf(who, sizeof(who), " (%c is %s)", bench_letter((size_t)c),
			         cur->comp[c].path);
		fprintf(out, "REGRESSION: %s fell %.0f%% (%.0f%s -> %.0f MiB/s) "
		        "since %s%s%s\n", name, (before - now) * 100 / before,
		        before, of, now, when, who, changed);
		fell++;
		unexplained += !changed[0];
	}
	if (fell && unexplained == fell)
		fprintf(out, "Nothing recorded changed since %s (blkmirror %s, "
		        "kernel %s, the same disk models): look at the disks "
		        "themselves (health, firmware, cabling, other load)\n",
		        when, cur->version, cur->kernel);
	if (nmissing)
		fprintf(out, "not compared (no earlier run on these components "
		        "has it): %s\n", missing);
	return fell;
}

/* Prints the runs of one component set as a table. */
static void print_set(struct bench_run *const *runs, size_t n)
{
	const struct bench_run *last = runs[n - 1];
	const char *names[BENCH_MAX_FIGURES * 2];
	size_t nn = 0;

	printf("components:\n");
	for (size_t i = 0; i < last->ncomp; i++)
		printf("  %c  %s  %llu MiB%s%s\n", bench_letter(i),
		       last->comp[i].path,
		       (unsigned long long)(last->comp[i].size >> 20),
		       *last->comp[i].model ? "  " : "", last->comp[i].model);
	/* every figure any run has, in first-seen order */
	for (size_t r = 0; r < n; r++)
		for (size_t f = 0; f < runs[r]->nfig; f++) {
			size_t k = 0;
			while (k < nn && strcmp(names[k], runs[r]->fig[f].name))
				k++;
			if (k == nn && nn < sizeof(names) / sizeof(names[0]))
				names[nn++] = runs[r]->fig[f].name;
		}
	printf("MiB/s of each figure (numbered below) per run:\n");
	printf("%-16s  %-16s  %-16s  %5s", "time (UTC)", "blkmirror", "kernel",
	       "MiB");
	for (size_t k = 0; k < nn; k++)
		printf(" %6zu", k + 1);
	printf("\n");
	for (size_t r = 0; r < n; r++) {
		char when[32];
		short_time(runs[r]->time, when, sizeof(when));
		printf("%-16s  %-16.16s  %-16.16s  %5llu", when, runs[r]->version,
		       runs[r]->kernel, (unsigned long long)(runs[r]->bytes >> 20));
		for (size_t k = 0; k < nn; k++) {
			double v = bench_run_figure(runs[r], names[k]);
			if (v < 0)
				printf(" %6s", "-");
			else
				printf(" %6.0f", v);
		}
		printf("\n");
	}
	for (size_t k = 0; k < nn; k++)
		printf("  %2zu  %s\n", k + 1, names[k]);
}

static bool run_has_paths(const struct bench_run *r, char *const *paths,
                          size_t n)
{
	if (r->ncomp != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(r->comp[i].path, paths[i]) != 0)
			return false;
	return true;
}

int bench_history_show(char *const *paths, size_t n, const char *svg_path)
{
	struct bench_run *runs, **set;
	size_t nruns, skipped, shown = 0, sets = 0;
	char file[4096];
	bool *done;
	int rc = EXIT_OK;

	if (bench_history_load(&runs, &nruns, &skipped) < 0)
		return EXIT_ERROR;
	bench_history_path(file, sizeof(file));
	set = calloc(nruns + 1, sizeof(*set));
	done = calloc(nruns + 1, sizeof(*done));
	if (!set || !done) {
		free(set);
		free(done);
		bench_history_free(runs, nruns);
		return cli_fail("out of memory");
	}
	/* one table per component set, in the order they first ran */
	for (size_t i = 0; i < nruns; i++) {
		size_t k = 0;
		if (done[i] || (n && !run_has_paths(&runs[i], paths, n)))
			continue;
		for (size_t j = i; j < nruns; j++)
			if (!done[j] && bench_run_same_components(&runs[i], &runs[j])) {
				done[j] = true;
				set[k++] = &runs[j];
			}
		if (sets++)
			printf("\n");
		print_set(set, k);
		shown += k;
		if (svg_path && sets == 1) {
			int err = bench_svg_write(svg_path, set, k);
			if (err < 0) {
				rc = cli_fail("cannot write %s: %s", svg_path,
				              strerror(-err));
				break;
			}
		}
	}
	if (rc == EXIT_OK && shown == 0)
		rc = cli_fail("no bench run recorded%s in %s; run 'blkmirror "
		              "bench COMPONENT...' first", n ? " on these "
		              "components" : "", file);
	else if (rc == EXIT_OK && svg_path && sets > 1)
		fprintf(stderr, "blkmirror: %s charts the first set of components "
		        "only; name the components to chart another\n", svg_path);
	if (skipped)
		fprintf(stderr, "blkmirror: %zu line%s of %s could not be read "
		        "and %s left out\n", skipped, skipped == 1 ? "" : "s", file,
		        skipped == 1 ? "was" : "were");
	free(set);
	free(done);
	bench_history_free(runs, nruns);
	return rc;
}
