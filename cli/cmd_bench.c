/*
 * blkmirror bench: the two field reports' test, run on real components.
 *
 * The first report (gmirror reading at one disk's speed) ran dd on each
 * disk, on both at once, then on the mirror; the second (a driver release
 * that halved throughput) was caught only because someone ran dd by hand
 * after an upgrade.  This verb runs the first report's steps on files,
 * block devices or NBD exports, and keeps a history so the second report's
 * question is answered on every run:
 *   1. each component alone: sequential reads of 1 MiB, one at a time;
 *   2. all components at once (one such reader each): the sum;
 *   3. a temporary mirror of them (benchmirror.c: the engine's own data
 *      path, no label, writes refused below it unless --write), read with
 *      each balance algorithm by one stream of 128 KiB reads, one at a time
 *      (the report's dd bs=128k);
 *   4. with --write: sequential 1 MiB writes to each component alone and to
 *      the mirror (each ends with a flush, counted in its time).
 * Local components are read with O_DIRECT where the file system allows it
 * (the file backend falls back to buffered I/O where it does not); no cache
 * is dropped, so nothing else on the machine is disturbed.  Figures are MiB/s
 * and ratios to one disk (the mean of the components alone); each run is
 * appended to the history and compared with the last runs on the same
 * components (bench_history.c: each figure with its median over up to 5):
 * exit 3 when a figure fell by more than --threshold.  --repeat N measures the whole sequence N times, one round
 * after another (so a slow spell of the machine touches every figure
 * alike), and records each figure's median with its min and max: on a
 * busy machine one measure can fall by more than the threshold on its
 * own, a median of three seldom does.
 *
 * --write destroys data, so it runs only on components with no blkmirror
 * label and no signature libblkid knows (label's checks, probe.c), after
 * printing what will be overwritten and, on a terminal, reading "yes";
 * --yes is for scripts, and without it a run whose stdin is not a
 * terminal is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "bench.h"
#include "benchmirror.h"
#include "cli.h"
#include "median.h"
#include "probe.h"

#include "version.h" /* BM_VERSION, made by the Makefile */
#ifndef BM_VERSION
#define BM_VERSION "unknown"
#endif

#define DEFAULT_BYTES (1ull << 30)
#define ALONE_REQUEST (1u << 20)   /* dd bs=1M: a disk at its full speed */
#define MIRROR_REQUEST (128u << 10) /* the report's dd bs=128k */
#define WRITE_REQUEST (1u << 20)
#define DRAW_EVERY_NS 100000000ull

/* ---- the progress bar (stderr, only on a terminal) ---- */

struct progress {
	bool on;
	uint64_t total;
	atomic_uint_fast64_t done;
	atomic_uint_fast64_t last_draw;
	pthread_mutex_t lock;           /* one drawer at a time */
	char what[96];                  /* lock: the step running */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void progress_draw(struct progress *pg)
{
	uint64_t done = atomic_load(&pg->done);
	int pct = pg->total ? (int)(done * 100 / pg->total) : 0;
	int fill = pct * 30 / 100;

	fprintf(stderr, "\r\033[K[%.*s%*s] %3d%% %s", fill,
	        "##############################", 30 - fill, "", pct, pg->what);
	fflush(stderr);
}

static void progress_step(struct progress *pg, const char *what)
{
	if (!pg->on)
		return;
	pthread_mutex_lock(&pg->lock);
	snprintf(pg->what, sizeof(pg->what), "%s", what);
	progress_draw(pg);
	pthread_mutex_unlock(&pg->lock);
}

static void progress_add(struct progress *pg, uint64_t bytes)
{
	uint64_t now, last;

	atomic_fetch_add(&pg->done, bytes);
	if (!pg->on)
		return;
	now = now_ns();
	last = atomic_load(&pg->last_draw);
	if (now - last < DRAW_EVERY_NS ||
	    !atomic_compare_exchange_strong(&pg->last_draw, &last, now))
		return;
	if (pthread_mutex_trylock(&pg->lock) == 0) {
		progress_draw(pg);
		pthread_mutex_unlock(&pg->lock);
	}
}

static void progress_end(struct progress *pg)
{
	if (pg->on) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
}

/* ---- measurements ---- */

static double mibs_of(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / 1048576.0 / ((double)ns / 1e9) : 0;
}

/* Fills a buffer with data a disk cannot compress or skip. */
static void fill_pattern(uint8_t *buf, size_t len)
{
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)now_ns();

	for (size_t i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
}

/* Reads (or writes, then flushes) bytes from offset 0 of one backend,
 * one request of req bytes at a time. */
static int backend_sequential(struct bm_backend *be, enum bm_bop op,
                              uint64_t bytes, uint32_t req, uint8_t *buf,
                              struct progress *pg, double *mibs)
{
	uint64_t t0 = now_ns();

	for (uint64_t off = 0; off < bytes; off += req) {
		uint32_t len = bytes - off < req ? (uint32_t)(bytes - off) : req;
		int err = bm_backend_io_wait(be, op, buf, len, off, 0);
		if (err < 0)
			return cli_fail("%s: %s failed at offset %llu: %s", be->path,
			                op == BM_BOP_READ ? "read" : "write",
			                (unsigned long long)off, strerror(-err)), err;
		progress_add(pg, len);
	}
	if (op == BM_BOP_WRITE) {
		int err = bm_backend_io_wait(be, BM_BOP_FLUSH, NULL, 0, 0, 0);
		if (err < 0)
			return cli_fail("%s: flush failed: %s", be->path,
			                strerror(-err)), err;
	}
	*mibs = mibs_of(bytes, now_ns() - t0);
	return 0;
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;                      /* lock */
	int result;                     /* lock */
};

static void io_done(struct bm_io *io, int result)
{
	struct waiter *w = io->opaque;

	pthread_mutex_lock(&w->lock);
	w->result = result;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static int mirror_io(bm_mirror *m, struct bm_io *io, struct waiter *w)
{
	int err;

	w->done = false;
	io->done = io_done;
	io->opaque = w;
	err = bm_mirror_submit(m, io);
	if (err < 0)
		return err;
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	err = w->result;
	pthread_mutex_unlock(&w->lock);
	return err;
}

/* The same through the mirror: one request in flight, like dd. */
static int mirror_sequential(bm_mirror *m, enum bm_io_type type,
                             uint64_t bytes, uint32_t req, uint8_t *buf,
                             struct progress *pg, const char *what,
                             double *mibs)
{
	struct waiter w = {.lock = PTHREAD_MUTEX_INITIALIZER,
	                   .cond = PTHREAD_COND_INITIALIZER};
	uint64_t t0 = now_ns();
	int err = 0;

	for (uint64_t off = 0; off < bytes && err == 0; off += req) {
		struct bm_io io = {.type = type, .offset = off, .buf = buf,
		                   .length = bytes - off < req
		                           ? (uint32_t)(bytes - off) : req};
		err = mirror_io(m, &io, &w);
		if (err < 0)
			cli_fail("%s: failed at offset %llu: %s", what,
			         (unsigned long long)off, strerror(-err));
		else
			progress_add(pg, io.length);
	}
	if (err == 0 && type == BM_IO_WRITE) {
		struct bm_io io = {.type = BM_IO_FLUSH};
		err = mirror_io(m, &io, &w);
		if (err < 0)
			cli_fail("%s: flush failed: %s", what, strerror(-err));
	}
	*mibs = mibs_of(bytes, now_ns() - t0);
	return err;
}

struct parallel_reader {
	struct bm_backend *be;
	uint64_t bytes;
	uint8_t *buf;
	struct progress *pg;
	double mibs;
	int err;
};

static void *parallel_main(void *arg)
{
	struct parallel_reader *r = arg;

	pthread_setname_np(pthread_self(), "bm-bench-read");
	r->err = backend_sequential(r->be, BM_BOP_READ, r->bytes, ALONE_REQUEST,
	                            r->buf, r->pg, &r->mibs);
	return NULL;
}

/* ---- what is being measured ---- */

struct component {
	char path[PATH_MAX];    /* as recorded: absolute, symlinks kept */
	struct bm_backend *be;
	uint64_t bytes;         /* to read (and write) */
	char model[256];
};

/* Absolute path (symlinks kept: /dev/disk/by-id names outlive sdX);
 * URIs as given. */
static int recorded_path(const char *p, char *out, size_t len)
{
	char cwd[PATH_MAX];
	int k;

	if (p[0] == '/' || strstr(p, "://") || !getcwd(cwd, sizeof(cwd)))
		k = snprintf(out, len, "%s", p);
	else
		k = snprintf(out, len, "%s/%s", cwd, p);
	return k < 0 || (size_t)k >= len ? -ENAMETOOLONG : 0;
}

static void read_sys(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "re");

	out[0] = '\0';
	if (!f)
		return;
	if (!fgets(out, (int)len, f))
		out[0] = '\0';
	fclose(f);
	size_t n = strlen(out);
	while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
}

/* What the system says about the disk behind dev: "sda: MODEL, 932 GiB"
 * (a partition: its disk's; no model: the driver, or a loop device's
 * backing file). */
static void disk_model(dev_t dev, char *out, size_t len)
{
	char link[PATH_MAX], dir[PATH_MAX], p[PATH_MAX + 32], model[128],
	     size[32], drv[PATH_MAX];

	out[0] = '\0';
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(dev),
	         minor(dev));
	if (!realpath(link, dir))
		return;
	snprintf(p, sizeof(p), "%s/partition", dir);
	if (access(p, F_OK) == 0) {
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
	}
	snprintf(p, sizeof(p), "%s/device/model", dir);
	read_sys(p, model, sizeof(model));
	if (!model[0]) { /* virtio and others: the driver's name */
		ssize_t n;
		snprintf(p, sizeof(p), "%s/device/driver", dir);
		n = readlink(p, drv, sizeof(drv) - 1);
		if (n > 0) {
			drv[n] = '\0';
			snprintf(model, sizeof(model), "%.100s", strrchr(drv, '/')
			         ? strrchr(drv, '/') + 1 : drv);
		}
	}
	if (!model[0]) { /* a loop device: its backing file */
		char back[100];
		snprintf(p, sizeof(p), "%s/loop/backing_file", dir);
		read_sys(p, back, sizeof(back));
		if (back[0])
			snprintf(model, sizeof(model), "loop over %.100s", back);
	}
	snprintf(p, sizeof(p), "%s/size", dir);
	read_sys(p, size, sizeof(size));
	unsigned long long bytes = strtoull(size, NULL, 10) * 512;
	const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	snprintf(out, len, "%.60s%s%.120s, %llu %s", name, model[0] ? ": " : "",
	         model, bytes >= (1ull << 30) ? bytes >> 30 : bytes >> 20,
	         bytes >= (1ull << 30) ? "GiB" : "MiB");
}

static void component_model(const char *path, char *out, size_t len)
{
	struct stat st;
	char disk[200];

	out[0] = '\0';
	if (strstr(path, "://")) {
		snprintf(out, len, "NBD export");
		return;
	}
	if (stat(path, &st) < 0)
		return;
	if (S_ISBLK(st.st_mode)) {
		disk_model(st.st_rdev, out, len);
		return;
	}
	disk_model(st.st_dev, disk, sizeof(disk));
	snprintf(out, len, "file%s%s", disk[0] ? " on " : "", disk);
}

static void close_components(struct component *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].be)
			c[i].be->ops->close(c[i].be);
}

/* --write: nothing that holds a mirror or data is overwritten. */
static int refuse_data(struct component *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char name[BM_NAME_MAX + 1];
		struct bm_content content;
		int err = bm_label_probe(c[i].path, name, sizeof(name));

		if (err == 0)
			return cli_fail("%s: is a component of mirror '%s'; bench "
			                "--write would destroy it (if the mirror "
			                "is no longer needed: blkmirror clear %s)",
			                c[i].path, name, c[i].path);
		if (err < 0 && err != -ENOENT && err != -ENOSPC)
			return cli_fail("%s: holds a damaged blkmirror label (%s); "
			                "bench --write refuses it", c[i].path,
			                bm_last_error());
		err = bm_probe_content(c[i].be, &content, 0);
		if (err < 0)
			return cli_fail("%s", bm_last_error());
		if (err > 0)
			return cli_fail("%s: holds %s; bench --write would "
			                "overwrite it", c[i].path, content.what);
	}
	return 0;
}

static int confirm_write(struct component *c, size_t n, bool yes)
{
	char answer[16];

	if (!yes && !isatty(STDIN_FILENO))
		return cli_fail("bench --write destroys the data on the components "
		                "and stdin is not a terminal to ask; add --yes to "
		                "run it from a script");
	fprintf(stderr, "bench --write overwrites, on each component:\n");
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "  %s: the first %llu MiB of %llu MiB%s%s%s\n",
		        c[i].path, (unsigned long long)(c[i].bytes >> 20),
		        (unsigned long long)(c[i].be->size >> 20),
		        c[i].model[0] ? " (" : "", c[i].model,
		        c[i].model[0] ? ")" : "");
	if (yes)
		return 0;
	fprintf(stderr, "Type \"yes\" to destroy that data: ");
	fflush(stderr);
	if (!fgets(answer, sizeof(answer), stdin) ||
	    strcmp(answer, "yes\n") != 0)
		return cli_fail("not confirmed; nothing was written");
	return 0;
}

/* ---- the table ---- */

static void print_row(const struct bench_figure *f, unsigned repeat,
                      double one)
{
	char spread[48] = "";

	if (repeat > 1)
		snprintf(spread, sizeof(spread), "  %7.1f-%-7.1f", f->min, f->max);
	if (one > 0)
		printf("  %-34s %9.1f%s  %6.2f\n", f->name, f->mibs, spread,
		       f->mibs / one);
	else
		printf("  %-34s %9.1f%s  %6s\n", f->name, f->mibs, spread, "-");
}

/* r's figures: each one's median over the rounds that measured it, with
 * its min and max; 0 or the exit status. */
static int combine_rounds(const struct bench_run *rounds, unsigned k,
                          struct bench_run *r)
{
	for (size_t i = 0; i < rounds[0].nfig; i++) {
		const char *name = rounds[0].fig[i].name;
		double v[BENCH_MAX_REPEAT];
		size_t nv = 0;
		for (unsigned j = 0; j < k; j++) {
			double x = bench_run_figure(&rounds[j], name);
			if (x >= 0)
				v[nv++] = x;
		}
		if (!nv)
			continue;
		double med = bm_median(v, nv);
		if (!bench_run_add(r, name, med))
			return cli_fail("out of memory");
		r->fig[r->nfig - 1].min = v[0];
		r->fig[r->nfig - 1].max = v[nv - 1];
	}
	return 0;
}

static void utc_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int parse_threshold(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !(*out > 0 && *out < 100))
		return cli_usage("--threshold '%s' is not a percentage above 0 "
		                 "and below 100", s);
	return 0;
}

/* bench_run_add, saying why when it cannot. */
static bool add_figure(struct bench_run *r, const char *name, double mibs)
{
	if (bench_run_add(r, name, mibs))
		return true;
	cli_fail("out of memory");
	return false;
}

/* Every measurement of one run, into r; 0 or the exit status. */
static int measure(struct component *c, size_t n, uint64_t mbytes,
                   bool write, struct progress *pg, struct bench_run *r)
{
	static const int algorithms[] = {
		BM_BALANCE_STREAM, BM_BALANCE_ROUND_ROBIN, BM_BALANCE_LOAD,
		BM_BALANCE_PREFER, BM_BALANCE_SPLIT,
	};
	struct parallel_reader pr[BM_MAX_COMPONENTS];
	pthread_t th[BM_MAX_COMPONENTS];
	struct bm_backend *be[BM_MAX_COMPONENTS];
	uint8_t *buf;
	bm_mirror *m = NULL;
	char name[96];
	double v, sum = 0;
	int rc = EXIT_ERROR;

	memset(pr, 0, sizeof(pr));
	if (posix_memalign((void **)&buf, 4096, ALONE_REQUEST))
		return cli_fail("out of memory");
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "read %c alone", bench_letter(i));
		progress_step(pg, name);
		if (backend_sequential(c[i].be, BM_BOP_READ, c[i].bytes,
		                       ALONE_REQUEST, buf, pg, &v) < 0)
			goto out;
		if (!add_figure(r, name, v))
			goto out;
	}
	if (n > 1) {
		size_t started = 0;
		bool failed = false;
		progress_step(pg, "read all in parallel");
		for (size_t i = 0; i < n; i++) {
			pr[i] = (struct parallel_reader){.be = c[i].be, .pg = pg,
			                                 .bytes = c[i].bytes};
			if (posix_memalign((void **)&pr[i].buf, 4096, ALONE_REQUEST) ||
			    pthread_create(&th[i], NULL, parallel_main, &pr[i])) {
				cli_fail("cannot start a reader: out of memory");
				failed = true;
				break;
			}
			started++;
		}
		for (size_t i = 0; i < started; i++) {
			pthread_join(th[i], NULL);
			failed |= pr[i].err < 0;
			sum += pr[i].mibs;
		}
		for (size_t i = 0; i < n; i++)
			free(pr[i].buf);
		if (failed)
			goto out;
		if (!add_figure(r, "read all in parallel (sum)", sum))
			goto out;
	}
	for (size_t i = 0; i < n; i++)
		be[i] = c[i].be;
	if (bm_bench_mirror_open(be, n, write, &m) < 0) {
		cli_fail("%s", bm_last_error());
		goto out;
	}
	bm_mirror_set_io_timeout(m, 60);
	for (size_t a = 0; a < sizeof(algorithms) / sizeof(algorithms[0]); a++) {
		snprintf(name, sizeof(name), "mirror read (%s)",
		         bm_balance_name(algorithms[a]));
		progress_step(pg, name);
		if (bm_mirror_configure(m, algorithms[a], 0) < 0) {
			cli_fail("%s", bm_last_error());
			goto out;
		}
		if (mirror_sequential(m, BM_IO_READ, mbytes, MIRROR_REQUEST, buf,
		                      pg, name, &v) < 0)
			goto out;
		if (!add_figure(r, name, v))
			goto out;
	}
	if (write) {
		fill_pattern(buf, ALONE_REQUEST);
		for (size_t i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "write %c alone", bench_letter(i));
			progress_step(pg, name);
			if (backend_sequential(c[i].be, BM_BOP_WRITE, c[i].bytes,
			                       WRITE_REQUEST, buf, pg, &v) < 0)
				goto out;
			if (!add_figure(r, name, v))
				goto out;
		}
		progress_step(pg, "mirror write");
		if (mirror_sequential(m, BM_IO_WRITE, mbytes, WRITE_REQUEST, buf,
		                      pg, "mirror write", &v) < 0)
			goto out;
		if (!add_figure(r, "mirror write", v))
			goto out;
	}
	rc = EXIT_OK;
out:
	if (m)
		bm_bench_mirror_close(m);
	free(buf);
	return rc;
}

static void print_table(const struct bench_run *r, const struct component *c,
                        size_t n, uint64_t mbytes)
{
	double one_read = 0, one_write = 0;
	int nw = 0;

	for (size_t i = 0; i < n; i++) {
		char fig[32];
		snprintf(fig, sizeof(fig), "read %c alone", bench_letter(i));
		one_read += bench_run_figure(r, fig) / (double)n;
		snprintf(fig, sizeof(fig), "write %c alone", bench_letter(i));
		if (bench_run_figure(r, fig) >= 0) {
			one_write += bench_run_figure(r, fig);
			nw++;
		}
	}
	if (nw)
		one_write /= nw;
	printf("components:\n");
	for (size_t i = 0; i < n; i++)
		printf("  %c  %s  %llu MiB%s%s\n", bench_letter(i), c[i].path,
		       (unsigned long long)(c[i].be->size >> 20),
		       c[i].model[0] ? "  " : "", c[i].model);
	printf("each component alone: %llu MiB in 1 MiB reads, one at a time; "
	       "the mirror: %llu MiB in 128 KiB reads, one at a time (dd "
	       "bs=128k)\n", (unsigned long long)(c[0].bytes >> 20),
	       (unsigned long long)(mbytes >> 20));
	if (r->repeat > 1)
		printf("  %-34s %9s  %15s  %6s\n", "", "MiB/s", "min-max", "x one");
	else
		printf("  %-34s %9s  %6s\n", "", "MiB/s", "x one");
	for (size_t i = 0; i < r->nfig; i++) {
		bool is_write = strncmp(r->fig[i].name, "write", 5) == 0 ||
		                strcmp(r->fig[i].name, "mirror write") == 0;
		print_row(&r->fig[i], r->repeat, is_write ? one_write : one_read);
	}
	if (r->repeat > 1)
		printf("MiB/s: the median of %u rounds (min-max over them)\n",
		       r->repeat);
	printf("x one: ratio to one component alone (the mean of the "
	       "components' %s)\n", nw ? "reads, or writes" : "reads");
}

int cmd_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"write", no_argument, NULL, 'w'},
		{"yes", no_argument, NULL, 'y'},
		{"size", required_argument, NULL, 's'},
		{"threshold", required_argument, NULL, 't'},
		{"history", no_argument, NULL, 'H'},
		{"svg", required_argument, NULL, 'g'},
		{"repeat", required_argument, NULL, 'r'},
		{NULL, 0, NULL, 0},
	};
	struct component c[BM_MAX_COMPONENTS];
	struct progress pg = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct bench_run r = {0};
	struct bench_run *rounds = NULL;
	bool write = false, yes = false, history = false;
	unsigned repeat = 1;
	uint64_t limit = DEFAULT_BYTES, mbytes = UINT64_MAX, total;
	double threshold = 10;
	const char *svg = NULL;
	bool size_given = false, threshold_given = false, repeat_given = false;
	int opt, status, rc;
	size_t n;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, "bench", "", longopts,
	                         &status)) != -1) {
		switch (opt) {
		case 'w': write = true; break;
		case 'y': yes = true; break;
		case 'H': history = true; break;
		case 'g': svg = optarg; break;
		case 's':
			if (parse_size(optarg, &limit) < 0 || limit < 4096)
				return cli_usage("--size '%s' is not a size of at least "
				                 "4K (e.g. 32M, 1G)", optarg);
			size_given = true;
			break;
		case 't':
			if ((rc = parse_threshold(optarg, &threshold)))
				return rc;
			threshold_given = true;
			break;
		case 'r': {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' ||
			    v < 1 || v > BENCH_MAX_REPEAT)
				return cli_usage("--repeat '%s' is not a count from 1 to "
				                 "%d", optarg, BENCH_MAX_REPEAT);
			repeat = (unsigned)v;
			repeat_given = true;
			break;
		}
		default:
			return status;
		}
	}
	n = (size_t)(argc - optind);
	if (history) {
		if (write || yes || size_given || threshold_given || repeat_given)
			return cli_usage("--history only prints what was recorded: "
			                 "it takes no --write, --yes, --size, "
			                 "--threshold or --repeat");
		if (n > BM_MAX_COMPONENTS)
			return cli_usage("bench takes 1 to %d components",
			                 BM_MAX_COMPONENTS);
		for (size_t i = 0; i < n; i++) /* named as runs record them */
			if (recorded_path(argv[optind + i], c[i].path,
			                  sizeof(c[i].path)) < 0)
				return cli_fail("%s: path too long", argv[optind + i]);
		char *paths[BM_MAX_COMPONENTS];
		for (size_t i = 0; i < n; i++)
			paths[i] = c[i].path;
		return bench_history_show(paths, n, svg);
	}
	if (svg)
		return cli_usage("--svg goes with --history (bench --history --svg "
		                 "FILE)");
	if (yes && !write)
		return cli_usage("--yes confirms --write; it means nothing alone");
	if (n == 0 || n > BM_MAX_COMPONENTS)
		return n ? cli_usage("bench takes 1 to %d components",
		                     BM_MAX_COMPONENTS) : cli_usage_of("bench");

	memset(c, 0, sizeof(c));
	{
		const char *paths[BM_MAX_COMPONENTS];
		size_t a, b;
		for (size_t i = 0; i < n; i++) {
			if (recorded_path(argv[optind + i], c[i].path,
			                  sizeof(c[i].path)) < 0)
				return cli_fail("%s: path too long", argv[optind + i]);
			paths[i] = c[i].path;
		}
		if (bm_probe_same_identity(paths, n, &a, &b))
			return cli_fail("%s and %s are the same disk; bench wants "
			                "each disk once", paths[a], paths[b]);
	}
	for (size_t i = 0; i < n; i++) {
		int err = bm_backend_open(c[i].path, write, &c[i].be);
		if (err < 0) {
			rc = cli_fail("%s", bm_last_error());
			goto out;
		}
		for (size_t k = 0; k < i; k++)
			if (bm_backend_same(c[k].be, c[i].be)) {
				rc = cli_fail("%s and %s are the same disk; bench wants "
				              "each disk once", c[k].path, c[i].path);
				goto out;
			}
		c[i].bytes = (limit < c[i].be->size ? limit : c[i].be->size) &
		             ~(uint64_t)4095;
		if (c[i].bytes == 0) {
			rc = cli_fail("%s: too small to measure (%llu bytes)",
			              c[i].path, (unsigned long long)c[i].be->size);
			goto out;
		}
		if (c[i].bytes < mbytes)
			mbytes = c[i].bytes;
		component_model(c[i].path, c[i].model, sizeof(c[i].model));
	}
	if (write && ((rc = refuse_data(c, n)) || (rc = confirm_write(c, n, yes))))
		goto out;

	/* the run's identity, recorded with its figures */
	{
		struct utsname u;
		char when[32];
		utc_now(when, sizeof(when));
		r.time = strdup(when);
		r.version = strdup(BM_VERSION);
		r.kernel = strdup(uname(&u) == 0 ? u.release : "unknown");
		r.bytes = c[0].bytes;
		r.write = write;
		r.repeat = repeat;
		r.ncomp = n;
		for (size_t i = 0; i < n; i++) {
			r.comp[i].path = strdup(c[i].path);
			r.comp[i].size = c[i].be->size;
			r.comp[i].model = strdup(c[i].model);
			if (!r.comp[i].path || !r.comp[i].model) {
				rc = cli_fail("out of memory");
				goto out;
			}
		}
		if (!r.time || !r.version || !r.kernel) {
			rc = cli_fail("out of memory");
			goto out;
		}
	}
	total = 5 * mbytes + (write ? mbytes : 0);
	for (size_t i = 0; i < n; i++)
		total += c[i].bytes * ((n > 1 ? 2 : 1) + (write ? 1 : 0));
	pg.total = total * repeat;
	pg.on = isatty(STDERR_FILENO);
	if (repeat == 1) {
		rc = measure(c, n, mbytes, write, &pg, &r);
	} else {
		rounds = calloc(repeat, sizeof(*rounds));
		rc = rounds ? 0 : cli_fail("out of memory");
		for (unsigned k = 0; k < repeat && !rc; k++)
			rc = measure(c, n, mbytes, write, &pg, &rounds[k]);
		if (!rc)
			rc = combine_rounds(rounds, repeat, &r);
	}
	progress_end(&pg);
	if (rc)
		goto out;
	print_table(&r, c, n, mbytes);

	/* the history: the last runs on these components, then this one */
	{
		struct bench_run *runs;
		size_t nruns, skipped;
		const struct bench_run **prev = NULL;
		size_t nprev = 0, nshown;
		char file[4096];
		int fell = 0, err;

		bench_history_path(file, sizeof(file));
		if (bench_history_load(&runs, &nruns, &skipped) < 0) {
			rc = EXIT_ERROR;
			goto out;
		}
		/* every run on these components, the newest first (a figure
		 * takes its baseline from the newest that have it) */
		if (nruns && !(prev = calloc(nruns, sizeof(*prev)))) {
			bench_history_free(runs, nruns);
			rc = cli_fail("out of memory");
			goto out;
		}
		for (size_t i = nruns; i-- > 0;)
			if (bench_run_same_components(&runs[i], &r) &&
			    runs[i].bytes == r.bytes)
				prev[nprev++] = &runs[i];
		nshown = nprev < BENCH_BASELINE_RUNS ? nprev : BENCH_BASELINE_RUNS;
		if (nprev)
			fell = bench_compare(prev, nprev, &r, threshold, stdout);
		err = bench_history_append(&r);
		if (err < 0)
			fprintf(stderr, "blkmirror: cannot record this run in %s: "
			        "%s (BLKMIRROR_STATE_DIR chooses another directory)\n",
			        file, strerror(-err));
		if (!nprev)
			printf("first run on these components (with --size %llu "
			       "MiB); recorded in %s\n",
			       (unsigned long long)(r.bytes >> 20), file);
		else if (!fell && nprev == 1)
			printf("no figure fell by more than %g%% since the last run "
			       "on these components (%.10s %.5s)\n", threshold,
			       prev[0]->time, prev[0]->time + 11);
		else if (!fell)
			printf("no figure fell by more than %g%% below its median "
			       "over the last %zu runs on these components (%.10s "
			       "%.5s to %.10s %.5s)\n", threshold, nshown,
			       prev[nshown - 1]->time, prev[nshown - 1]->time + 11,
			       prev[0]->time, prev[0]->time + 11);
		free(prev);
		bench_history_free(runs, nruns);
		rc = fell ? BENCH_EXIT_REGRESSION : EXIT_OK;
	}
out:
	if (rounds)
		for (unsigned k = 0; k < repeat; k++)
			bench_run_free(&rounds[k]);
	free(rounds);
	bench_run_free(&r);
	close_components(c, n);
	return rc;
}
