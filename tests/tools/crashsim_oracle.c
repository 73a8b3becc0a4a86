/*
 * crashsim_oracle: crash-point testing of the real engine (RELIABILITY.md
 * "Crash consistency"; the method of CrashMonkey and ZFS's ztest).
 *
 *   crashsim_oracle [--dir D] [--seed S] [--ops N] [--comps 2|3]
 *                   [--size MIB] [--points all|P] [--max-points N]
 *                   [--subsets K] [--second] [--qd N] [--settle N]
 *                   [--seconds T]
 *
 * One round, for a seeded workload:
 *  1. a child labels fresh components (files in D) and saves them as the
 *     base images;
 *  2. a child opens the mirror over crashsim:FILE components and runs the
 *     workload (--qd requests in flight, default 1) through bm_mirror_submit (writes of random
 *     offsets and lengths, some FUA, flushes, write-zeroes, trims),
 *     recording in shared memory which requests were submitted and
 *     acknowledged; the crashsim backend journals every write, zero, trim
 *     and flush with a global number and _exit()s at operation P;
 *  3. the durable image of each component is rebuilt from the base and the
 *     journal: every write followed by a flush of its component, or FUA,
 *     plus ALL, NONE or a seeded SUBSET of the others, chosen per
 *     component; in a subset a multi-sector write may be torn (each
 *     512-byte sector kept or not).  The last MiB (label, lease, bitmap)
 *     is rebuilt the same way.  The lease block is then cleared: the
 *     crashed holder is known dead, which the engine would otherwise learn
 *     by watching the block for 2.5 s;
 *  4. a child assembles the mirror from the images (bm_mirror_open over
 *     crashsim:FILE, as serve does), waits for the synchronization, reads
 *     every sector through the engine and checks it holds a legal value
 *     (legal_values() says which);
 *     then closes, and the parent checks the components' data areas are
 *     byte-identical and that the mirror's generation is the newest found
 *     on the images;
 *  5. with --second, the same after a second crash at a seeded operation
 *     of the assembly and synchronization of step 4.
 *
 * --points all enumerates every operation of the workload child as P
 * (that child's own count, from a run without a crash); --seconds T runs
 * new seeds (random points) until T seconds have passed.  A failure prints
 * the seed, point, subset and second point that replay it.
 *
 * --settle N runs the bitmap's settle pass (bm_bitmap_settle_now) before
 * every Nth request: bits of regions the requests since the last pass did
 * not touch are cleared while others are in flight, so crash points fall
 * inside the pass's flushes and block writes too.
 *
 * The write-intent bitmap checks (issue 9) are a separate function that
 * says it is skipped while the labels carry no bitmap (bitmap_size 0).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/crashsim.h"
#include "bitmap.h"
#include "blkmirror.h"
#include "crc32c.h"
#include "label.h"
#include "mirror.h"

#define SECTOR 512u
#define MAX_OPS 4096
#define ZERO_VAL (-1)
#define MAGIC 0xc5a5000000000000ull
#define BM_BITMAP_MAX_BYTES (252u * 4080u)

enum { OP_WRITE, OP_FLUSH, OP_ZERO, OP_TRIM };

struct client_op {
	int type;
	uint32_t flags;
	uint64_t off;
	uint32_t len;
	int submitted, acked;
	uint64_t submit_tick, ack_tick;  /* order of submissions and acks */
};

/* Shared with the children (MAP_SHARED before fork). */
struct shared {
	int nops;
	struct client_op op[MAX_OPS];
	uint64_t backend_ops;    /* crashsim operations of the last child */
	uint64_t settled;        /* regions the settle passes cleared */
	uint64_t mirror_size;
	uint64_t genid;          /* the assembled mirror's */
	uint64_t tick;           /* the clock of submit_tick and ack_tick */
	char why[512];           /* a failing child's reason */
};

static struct shared *sh;
static const char *dir = "/tmp/crashsim";
static int ncomp = 2;
static uint64_t comp_size;
static int nops_wanted = 40;
static unsigned size_mib = 4;
static int subsets_wanted = 3;
static int qd = 1;             /* client requests in flight */
static int settle_every;       /* bitmap settle pass before every Nth op */
static const char *name = "cs";

/* ---- seeded randomness ---- */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t s = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
	for (int i = 0; i < 4; i++)
		rng_next(&s);
	return s;
}

/* ---- files ---- */
static void path_of(char *buf, size_t len, int c, const char *suffix)
{
	snprintf(buf, len, "%s/c%d.img%s", dir, c, suffix);
}

static void die(const char *what)
{
	fprintf(stderr, "crashsim_oracle: %s: %s\n", what, strerror(errno));
	exit(2);
}

/*
 * Buffers of load() are recycled (unload), not freed.  The oracle reads
 * every image several times per crash point, and on a virtual machine
 * whose free memory goes back to the host the first touch of a fresh page
 * is a fault of ~15 us: faulting fresh buffers in was a third of the
 * oracle's time (and crash_points outgrew its time limit under ASan,
 * whose allocator maps every large buffer afresh).  They are mapped
 * MADV_DONTFORK: a fork write-protects every page the parent has, and
 * its next write to each is a fault again (children never load).  A
 * buffer carries its capacity in the BUF_HDR bytes before it.
 */
#define SPARE_MAX 8
#define BUF_HDR 16
static uint8_t *spare[SPARE_MAX];
static int nspare;

static size_t buf_cap(const uint8_t *b)
{
	size_t cap;
	memcpy(&cap, b - BUF_HDR, sizeof(cap));
	return cap;
}

/* The smallest spare buffer that holds len bytes, or a new one. */
static uint8_t *buf_get(size_t len)
{
	int best = -1;
	for (int i = 0; i < nspare; i++)
		if (buf_cap(spare[i]) >= len &&
		    (best < 0 || buf_cap(spare[i]) < buf_cap(spare[best])))
			best = i;
	if (best >= 0) {
		uint8_t *b = spare[best];
		spare[best] = spare[--nspare];
		return b;
	}
	size_t cap = ((len + BUF_HDR + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1)) -
	             BUF_HDR;
	uint8_t *h = mmap(NULL, cap + BUF_HDR, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED)
		die("mmap");
	(void)madvise(h, cap + BUF_HDR, MADV_DONTFORK);
	memcpy(h, &cap, sizeof(cap));
	return h + BUF_HDR;
}

static void unload(uint8_t *b)
{
	if (!b)
		return;
	if (nspare < SPARE_MAX)
		spare[nspare++] = b;
	else
		munmap(b - BUF_HDR, buf_cap(b) + BUF_HDR);
}

/* The whole file p (len 0 and one zero byte if it does not exist and len
 * is asked); give it back with unload. */
static uint8_t *load(const char *p, size_t *len)
{
	int fd = open(p, O_RDONLY);
	struct stat st;
	uint8_t *buf;
	size_t got = 0;

	if (fd < 0) {
		if (errno == ENOENT && len) {
			*len = 0;
			buf = buf_get(1);
			buf[0] = 0;
			return buf;
		}
		die(p);
	}
	if (fstat(fd, &st) < 0)
		die(p);
	buf = buf_get((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			die(p);
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return buf;
}

static void store(const char *p, const uint8_t *buf, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	size_t put = 0;
	if (fd < 0)
		die(p);
	while (put < len) {
		ssize_t n = write(fd, buf + put, len - put);
		if (n <= 0)
			die(p);
		put += (size_t)n;
	}
	close(fd);
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	uint8_t *b = load(from, &len);
	store(to, b, len);
	unload(b);
}

/* Sets every component's working image to its SUFFIX copy; no journal. */
static void reset_images(const char *suffix)
{
	char a[4200], b[4200];
	for (int c = 0; c < ncomp; c++) {
		path_of(a, sizeof(a), c, suffix);
		path_of(b, sizeof(b), c, "");
		copy_file(a, b);
		path_of(b, sizeof(b), c, ".journal");
		unlink(b);
	}
}

/* ---- the data pattern: each sector names the op that wrote it ---- */
static void fill(uint8_t *buf, int op, uint64_t sector, uint32_t nsect)
{
	for (uint32_t s = 0; s < nsect; s++) {
		uint64_t *w = (uint64_t *)(buf + (size_t)s * SECTOR);
		w[0] = MAGIC | (uint64_t)(op + 1);
		w[1] = sector + s;
		for (unsigned j = 2; j < SECTOR / 8; j++)
			w[j] = w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull) ^ j;
	}
}

/* ZERO_VAL, the op that wrote it, or -2 for anything else. */
static int decode(const uint8_t *p, uint64_t sector)
{
	const uint64_t *w = (const uint64_t *)p;
	uint8_t want[SECTOR];
	int op;
	unsigned i;

	for (i = 0; i < SECTOR && p[i] == 0; i++)
		;
	if (i == SECTOR)
		return ZERO_VAL;
	if ((w[0] & 0xffff000000000000ull) != MAGIC)
		return -2;
	op = (int)(w[0] & 0xffffffffu) - 1;
	if (op < 0 || op >= MAX_OPS)
		return -2;
	fill(want, op, sector, 1);
	return memcmp(want, p, SECTOR) == 0 ? op : -2;
}

/* ---- the workload ---- */
static void gen_workload(uint64_t seed, uint64_t data_size)
{
	uint64_t s = mix(seed, 1);
	uint64_t nsect = data_size / SECTOR;

	sh->nops = nops_wanted;
	for (int i = 0; i < sh->nops; i++) {
		struct client_op *o = &sh->op[i];
		unsigned r = (unsigned)(rng_next(&s) % 100);
		uint32_t len = (uint32_t)(1 + rng_next(&s) % 64);
		uint64_t off = rng_next(&s) % nsect;

		memset(o, 0, sizeof(*o));
		/* with settle passes: three requests in four on the first
		 * 128 KiB (regions whose bits stay set), so that a write
		 * elsewhere is often not yet flushed when its region settles */
		if (settle_every && rng_next(&s) % 4 != 0)
			off %= 128 * 1024 / SECTOR;
		if (off + len > nsect)
			off = nsect - len;
		o->off = off * SECTOR;
		o->len = len * SECTOR;
		if (r < 62)
			o->type = OP_WRITE;
		else if (r < 75) {
			o->type = OP_WRITE;
			o->flags = BM_IO_FUA;
		} else if (r < 87) {
			o->type = OP_FLUSH;
			o->off = 0;
			o->len = 0;
		} else if (r < 94)
			o->type = OP_ZERO;
		else
			o->type = OP_TRIM;
	}
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, result;
};

static void io_done(struct bm_io *io, int result)
{
	struct waiter *w = io->opaque;
	pthread_mutex_lock(&w->lock);
	w->done = 1;
	w->result = result;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static int io_wait(bm_mirror *m, enum bm_io_type t, uint32_t flags,
                   uint64_t off, uint32_t len, void *buf)
{
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	                   0, 0};
	struct bm_io io = {.type = t, .flags = flags, .offset = off,
	                   .length = len, .buf = buf, .done = io_done,
	                   .opaque = &w};
	int err = bm_mirror_submit(m, &io);
	if (err < 0)
		return err;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.result;
}

static void open_paths(const char **paths, char store_[][4200])
{
	for (int c = 0; c < ncomp; c++) {
		char p[4100];
		path_of(p, sizeof(p), c, "");
		snprintf(store_[c], 4200, "%s%s", BM_CRASHSIM_PREFIX, p);
		paths[c] = store_[c];
	}
}

static void set_crash(uint64_t at)
{
	char v[32];
	snprintf(v, sizeof(v), "%" PRIu64, at);
	setenv("BM_CRASHSIM_CRASH_AT", v, 1);
}

/* The workload's requests in flight (up to qd of them). */
struct slot {
	struct bm_io io;
	int op;
	bool busy;
	uint8_t *buf;
};
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slot_cond = PTHREAD_COND_INITIALIZER;

static void slot_done(struct bm_io *io, int result)
{
	struct slot *sl = io->opaque;
	struct client_op *o = &sh->op[sl->op];

	pthread_mutex_lock(&slot_lock);
	o->ack_tick = __atomic_add_fetch(&sh->tick, 1, __ATOMIC_SEQ_CST);
	o->acked = result == 0;
	sl->busy = false;
	pthread_cond_broadcast(&slot_cond);
	pthread_mutex_unlock(&slot_lock);
}

/* Child: the workload; exits 0, or BM_CRASHSIM_EXIT from the backend. */
static void child_workload(uint64_t crash_at)
{
	const char *paths[BM_MAX_COMPONENTS];
	char store_[BM_MAX_COMPONENTS][4200];
	struct slot *slots = calloc((size_t)qd, sizeof(*slots));
	bm_mirror *m;

	for (int k = 0; k < qd; k++)
		slots[k].buf = aligned_alloc(4096, 64 * SECTOR);
	set_crash(crash_at);
	open_paths(paths, store_);
	if (bm_mirror_open(name, paths, (size_t)ncomp, &m) < 0) {
		snprintf(sh->why, sizeof(sh->why), "workload open: %s",
		         bm_last_error());
		_exit(1);
	}
	for (int i = 0; i < sh->nops; i++) {
		struct client_op *o = &sh->op[i];
		static const enum bm_io_type t[] = {
			[OP_WRITE] = BM_IO_WRITE, [OP_FLUSH] = BM_IO_FLUSH,
			[OP_ZERO] = BM_IO_WRITE_ZEROES, [OP_TRIM] = BM_IO_TRIM};
		struct slot *sl = NULL;

		/* the settle pass at chosen points (its own timer waits 5 s,
		 * longer than a workload): clears the bits of regions the
		 * last requests did not touch, with others in flight */
		if (settle_every && i > 0 && i % settle_every == 0)
			sh->settled += bm_bitmap_settle_now(m);
		pthread_mutex_lock(&slot_lock);
		while (!sl) {
			for (int k = 0; k < qd && !sl; k++)
				if (!slots[k].busy)
					sl = &slots[k];
			if (!sl)
				pthread_cond_wait(&slot_cond, &slot_lock);
		}
		sl->busy = true;
		sl->op = i;
		o->submitted = 1;
		o->submit_tick = __atomic_add_fetch(&sh->tick, 1, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&slot_lock);
		if (o->type == OP_WRITE)
			fill(sl->buf, i, o->off / SECTOR, o->len / SECTOR);
		sl->io = (struct bm_io){.type = t[o->type], .flags = o->flags,
		                        .offset = o->off, .length = o->len,
		                        .buf = sl->buf, .done = slot_done,
		                        .opaque = sl};
		int err = bm_mirror_submit(m, &sl->io);
		if (err < 0) {
			/* refused at once: never in flight, never acknowledged */
			pthread_mutex_lock(&slot_lock);
			sl->busy = false;
			pthread_mutex_unlock(&slot_lock);
		}
	}
	bm_mirror_drain(m);
	sh->backend_ops = bm_crashsim_ops();
	bm_mirror_close(m);
	sh->backend_ops = bm_crashsim_ops();
	_exit(0);
}

/*
 * The values sector s may legally hold after a crash (returns count).
 * A write is durable if acknowledged with FUA, or acknowledged before an
 * acknowledged flush was submitted.  Let T be the latest submission among
 * the durable writes covering s (0 if none): a write covering s that was
 * acknowledged before T is surely overwritten; every other one submitted
 * (acknowledged or in flight) may be what s holds, and so may the
 * initial zeros while T is 0.  Trims and write-zeroes write zeros.
 */
static int legal_values(uint64_t s, int *vals, int max)
{
	uint64_t last_flush = 0, t = 0;
	int n = 0;

	for (int i = 0; i < sh->nops; i++)
		if (sh->op[i].type == OP_FLUSH && sh->op[i].acked &&
		    sh->op[i].submit_tick > last_flush)
			last_flush = sh->op[i].submit_tick;
	for (int i = 0; i < sh->nops; i++) {
		struct client_op *o = &sh->op[i];
		if (o->type == OP_FLUSH || !o->acked ||
		    s < o->off / SECTOR || s >= (o->off + o->len) / SECTOR)
			continue;
		if (((o->flags & BM_IO_FUA) || o->ack_tick < last_flush) &&
		    o->submit_tick > t)
			t = o->submit_tick;
	}
	if (t == 0)
		vals[n++] = ZERO_VAL;
	for (int i = 0; i < sh->nops && n < max; i++) {
		struct client_op *o = &sh->op[i];
		if (o->type == OP_FLUSH || !o->submitted ||
		    s < o->off / SECTOR || s >= (o->off + o->len) / SECTOR)
			continue;
		if (o->acked && o->ack_tick < t)
			continue;
		vals[n++] = o->type == OP_WRITE ? i : ZERO_VAL;
	}
	return n;
}

static int wait_synced(bm_mirror *m)
{
	for (int tries = 0; tries < 60000; tries++) {
		int busy = 0;
		for (int c = 0; c < m->ncomp; c++)
			busy |= atomic_load(&m->comp[c].state) == BM_CS_SYNCHRONIZING;
		if (!busy)
			return 0;
		usleep(1000);
	}
	return -1;
}

/* Child: assemble, synchronize, read and check everything, close. */
static void child_verify(uint64_t crash_at)
{
	const char *paths[BM_MAX_COMPONENTS];
	char store_[BM_MAX_COMPONENTS][4200];
	bm_mirror *m;
	uint64_t size;
	uint8_t *buf = aligned_alloc(4096, 1 << 20);
	int vals[MAX_OPS + 1];

	set_crash(crash_at);
	open_paths(paths, store_);
	if (bm_mirror_open(name, paths, (size_t)ncomp, &m) < 0) {
		snprintf(sh->why, sizeof(sh->why), "assembly: %s",
		         bm_last_error());
		_exit(1);
	}
	sh->genid = m->genid;
	if (wait_synced(m) < 0) {
		snprintf(sh->why, sizeof(sh->why), "synchronization never ended");
		_exit(1);
	}
	for (int c = 0; c < m->ncomp; c++)
		if (atomic_load(&m->comp[c].state) != BM_CS_ACTIVE) {
			snprintf(sh->why, sizeof(sh->why),
			         "component %d is not ACTIVE after assembly and "
			         "synchronization (state %d)", c,
			         (int)atomic_load(&m->comp[c].state));
			_exit(1);
		}
	size = bm_mirror_size(m);
	sh->mirror_size = size;
	for (uint64_t off = 0; off < size; off += 1 << 20) {
		uint32_t len = size - off < (1 << 20) ? (uint32_t)(size - off)
		                                      : 1u << 20;
		int err = io_wait(m, BM_IO_READ, 0, off, len, buf);
		if (err < 0) {
			snprintf(sh->why, sizeof(sh->why), "read at %" PRIu64
			         ": %s", off, strerror(-err));
			_exit(1);
		}
		for (uint32_t i = 0; i < len / SECTOR; i++) {
			uint64_t s = off / SECTOR + i;
			int v = decode(buf + (size_t)i * SECTOR, s);
			int n = legal_values(s, vals, MAX_OPS + 1), ok = 0;
			for (int k = 0; k < n; k++)
				ok |= vals[k] == v;
			if (!ok) {
				int l = snprintf(sh->why, sizeof(sh->why),
				        "sector %" PRIu64 " holds %s%d; legal:", s,
				        v == -2 ? "garbage " : "op ", v);
				for (int k = 0; k < n && l < 400; k++)
					l += snprintf(sh->why + l, sizeof(sh->why) -
					              (size_t)l, " %d", vals[k]);
				_exit(1);
			}
		}
	}
	sh->backend_ops = bm_crashsim_ops();
	bm_mirror_close(m);
	_exit(0);
}

static void child_label(void)
{
	const char *paths[BM_MAX_COMPONENTS];
	char store_[BM_MAX_COMPONENTS][4200];
	struct bm_label_params p = {.balance = BM_BALANCE_ROUND_ROBIN,
	                            .slice = 4096, .no_sync = true};
#if __has_include("bitmap.h")
	/* small regions, so that a 1-4 MiB mirror has many */
	p.bitmap_region = 64 * 1024;
#endif
	for (int c = 0; c < ncomp; c++) {
		path_of(store_[c], 4200, c, "");
		paths[c] = store_[c];
	}
	if (bm_label_write_new(name, paths, (size_t)ncomp, &p) < 0) {
		snprintf(sh->why, sizeof(sh->why), "label: %s", bm_last_error());
		_exit(1);
	}
	_exit(0);
}

/* Runs fn in a child; its exit status (or 128+signal). */
static int run_child(void (*fn)(uint64_t), uint64_t arg)
{
	pid_t pid;
	int st;

	fflush(NULL);
	sh->why[0] = '\0';
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		nspare = 0; /* (not mapped here: MADV_DONTFORK) */
		if (!getenv("CRASHSIM_VERBOSE"))
			(void)!freopen("/dev/null", "w", stderr);
		fn(arg);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void label_fn(uint64_t unused)
{
	(void)unused;
	child_label();
}

/* ---- rebuilding durable images from base + journal ---- */
enum { KEEP_ALL, KEEP_NONE, KEEP_SUBSET };

static void rebuild(int c, const char *base_suffix, uint64_t seed)
{
	char p[4200];
	size_t blen, jlen, pos;
	uint8_t *img, *j;
	uint64_t s = seed;
	int mode;

	path_of(p, sizeof(p), c, base_suffix);
	img = load(p, &blen);
	path_of(p, sizeof(p), c, ".journal");
	j = load(p, &jlen);
	mode = seed == 0 ? KEEP_ALL : seed == 1 ? KEEP_NONE
	                   : (int)(rng_next(&s) % 3);
	for (pos = 0; pos + sizeof(struct bm_crashsim_rec) <= jlen;) {
		struct bm_crashsim_rec r;
		size_t dpos;
		bool durable;

		memcpy(&r, j + pos, sizeof(r));
		dpos = pos + sizeof(r);
		pos = dpos + (r.op == BM_BOP_WRITE ? r.length : 0);
		if (pos > jlen)
			break;
		if (r.op == BM_BOP_FLUSH || r.offset + r.length > blen)
			continue;
		durable = (r.flags & BM_BOP_FUA) != 0;
		for (size_t q = pos; !durable &&
		     q + sizeof(struct bm_crashsim_rec) <= jlen;) {
			struct bm_crashsim_rec f;
			memcpy(&f, j + q, sizeof(f));
			durable = f.op == BM_BOP_FLUSH;
			q += sizeof(f) + (f.op == BM_BOP_WRITE ? f.length : 0);
		}
		bool keep = durable || mode == KEEP_ALL ||
		            (mode == KEEP_SUBSET && rng_next(&s) % 2);
		bool torn = !durable && mode == KEEP_SUBSET &&
		            r.length > SECTOR && rng_next(&s) % 2;
		if (!keep)
			continue;
		for (uint32_t o = 0; o < r.length; o += SECTOR) {
			if (torn && rng_next(&s) % 2)
				continue;
			uint32_t n = r.length - o < SECTOR ? r.length - o : SECTOR;
			if (r.op == BM_BOP_WRITE)
				memcpy(img + r.offset + o, j + dpos + o, n);
			else
				memset(img + r.offset + o, 0, n);
		}
	}
	/* The crashed holder is known dead: its lease is not waited for. */
	memset(img + bm_lease_offset(blen), 0, BM_LEASE_SIZE);
	path_of(p, sizeof(p), c, "");
	store(p, img, blen);
	path_of(p, sizeof(p), c, ".journal");
	unlink(p);
	unload(img);
	unload(j);
}

/* The highest genid among the images' labels (0: none readable). */
static uint64_t newest_genid(void)
{
	uint64_t best = 0;
	for (int c = 0; c < ncomp; c++) {
		char p[4200];
		size_t len;
		struct bm_label l;
		path_of(p, sizeof(p), c, "");
		uint8_t *img = load(p, &len);
		if (bm_label_decode(img + bm_label_offset(len), BM_LABEL_SIZE,
		                    &l) == 0 && l.genid > best)
			best = l.genid;
		unload(img);
	}
	return best;
}

static int check_identical(char *why, size_t wlen)
{
	char p[4200];
	size_t l0, l;
	uint8_t *a, *b;

	path_of(p, sizeof(p), 0, "");
	a = load(p, &l0);
	for (int c = 1; c < ncomp; c++) {
		path_of(p, sizeof(p), c, "");
		b = load(p, &l);
		for (uint64_t off = 0; off < sh->mirror_size; off += SECTOR)
			if (memcmp(a + off, b + off, SECTOR)) {
				snprintf(why, wlen, "components 0 and %d differ at "
				         "byte %" PRIu64, c, off);
				unload(a);
				unload(b);
				return -1;
			}
		unload(b);
	}
	unload(a);
	return 0;
}

/*
 * Write-intent bitmap checks (lib/bitmap.h of the bitmap branch documents
 * the format and the write order this relies on; nothing of it is linked:
 * the checks read the bytes).  Skipped, and said once, when the labels
 * carry no bitmap (bitmap_size 0), as every label on main does.
 *
 * intent: at every data write (WRITE, ZERO, TRIM below data_size) in a
 * journal, for each region it touches and on every component of the run,
 * the last write of the bit block holding that region's bit before it
 * (or, when no write of the block precedes it, the base image) has the
 * bit set, and a FLUSH of that component lies between the two.
 * dirty-only: after a crash, the first assembly's synchronization writes
 * data only in regions set in the union of the rebuilt images' valid
 * bitmaps (skipped when no image has a valid one: a full copy is then
 * allowed).
 */
#define BITS_OFF 16u
#define BITS_PER_BLOCK ((4096u - BITS_OFF) * 8u)

struct bitmap_geo {
	uint64_t offset, region, data_size;
	bool present;
};

struct jrec {
	struct bm_crashsim_rec r;
	const uint8_t *data;
	int comp;
};

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* The bitmap's place from component 0's image with this suffix. */
static struct bitmap_geo bitmap_geo_of(const char *suffix)
{
	struct bitmap_geo g = {0};
	struct bm_label l;
	char p[4200];
	size_t len;
	uint8_t *img;

	path_of(p, sizeof(p), 0, suffix);
	img = load(p, &len);
	if (len >= BM_META_SIZE &&
	    bm_label_decode(img + bm_label_offset(len), BM_LABEL_SIZE, &l) == 0 &&
	    l.bitmap_size > 0 && l.bitmap_offset + 4096 <= len) {
		g.offset = l.bitmap_offset;
		g.region = l.bitmap_chunk ? l.bitmap_chunk
		                          : le64_at(img + l.bitmap_offset + 40);
		g.data_size = l.data_size;
		g.present = g.region > 0;
	}
	unload(img);
	return g;
}

static bool bitmap_skipped(const struct bitmap_geo *g)
{
	static bool said;
	if (g->present)
		return false;
	if (!said)
		printf("bitmap checks: skipped (labels carry no bitmap: "
		       "bitmap_size 0)\n");
	said = true;
	return true;
}

/* Every component's journal (suffix), records in global order. */
static struct jrec *load_journals(const char *suffix, size_t *n,
                                  uint8_t **bufs)
{
	struct jrec *v = NULL;
	size_t cap = 0;

	*n = 0;
	for (int c = 0; c < ncomp; c++) {
		char p[4200];
		size_t len, pos = 0;
		path_of(p, sizeof(p), c, suffix);
		bufs[c] = load(p, &len);
		while (pos + sizeof(struct bm_crashsim_rec) <= len) {
			struct jrec j;
			memcpy(&j.r, bufs[c] + pos, sizeof(j.r));
			j.data = bufs[c] + pos + sizeof(j.r);
			j.comp = c;
			pos += sizeof(j.r) + (j.r.op == BM_BOP_WRITE ? j.r.length : 0);
			if (pos > len)
				break;
			if (*n == cap) {
				cap = cap ? cap * 2 : 256;
				v = realloc(v, cap * sizeof(*v));
			}
			v[(*n)++] = j;
		}
	}
	/* merge by sequence number (insertion sort: journals are short) */
	for (size_t i = 1; i < *n; i++)
		for (size_t k = i; k > 0 && v[k - 1].r.seq > v[k].r.seq; k--) {
			struct jrec t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	return v;
}

static bool is_data_write(const struct jrec *j, const struct bitmap_geo *g)
{
	return j->r.op != BM_BOP_FLUSH && j->r.op != BM_BOP_READ &&
	       j->r.offset < g->data_size;
}

/* Is region r's bit durable on component d before journal index q? */
static bool bit_durable(const struct jrec *v, size_t q, int d, uint64_t r,
                        const struct bitmap_geo *g, const uint8_t *base)
{
	uint64_t at = g->offset + 4096u * (1 + r / BITS_PER_BLOCK) + BITS_OFF +
	              (r % BITS_PER_BLOCK) / 8;
	unsigned bit = (unsigned)(r % 8);
	bool flushed = false;

	for (size_t i = q; i-- > 0;) {
		const struct jrec *j = &v[i];
		if (j->comp != d)
			continue;
		if (j->r.op == BM_BOP_FLUSH) {
			flushed = true;
			continue;
		}
		if (at < j->r.offset || at >= j->r.offset + j->r.length)
			continue;
		if (j->r.op != BM_BOP_WRITE)
			return false;       /* zeroed */
		return ((j->data[at - j->r.offset] >> bit) & 1) &&
		       (flushed || (j->r.flags & BM_BOP_FUA));
	}
	return (base[at] >> bit) & 1;
}

static int check_bitmap_intent(const char *jsuffix, char *why, size_t wlen)
{
	struct bitmap_geo g = bitmap_geo_of(".base");
	uint8_t *bufs[BM_MAX_COMPONENTS], *base[BM_MAX_COMPONENTS];
	struct jrec *v;
	size_t n, blen;
	int bad = 0;

	if (bitmap_skipped(&g))
		return 0;
	v = load_journals(jsuffix, &n, bufs);
	for (int c = 0; c < ncomp; c++) {
		char p[4200];
		path_of(p, sizeof(p), c, ".base");
		base[c] = load(p, &blen);
	}
	for (size_t q = 0; q < n && !bad; q++) {
		if (!is_data_write(&v[q], &g) || v[q].r.length == 0)
			continue;
		uint64_t first = v[q].r.offset / g.region;
		uint64_t last = (v[q].r.offset + v[q].r.length - 1) / g.region;
		for (uint64_t r = first; r <= last && !bad; r++)
			for (int d = 0; d < ncomp && !bad; d++)
				if (!bit_durable(v, q, d, r, &g, base[d])) {
					snprintf(why, wlen, "bitmap: data write (operation "
					         "%" PRIu64 ", component %d, offset %" PRIu64
					         ") issued before region %" PRIu64 "'s bit "
					         "was durable on component %d",
					         v[q].r.seq, v[q].comp, v[q].r.offset, r, d);
					bad = 1;
				}
	}
	for (int c = 0; c < ncomp; c++) {
		unload(bufs[c]);
		unload(base[c]);
	}
	free(v);
	return bad ? -1 : 0;
}

/*
 * A bit comes off the disk only over settled data: when a bit block write
 * on any component turns region r's bit from 1 to 0, no data write to r
 * on any component may still be unflushed (every one was followed by a
 * flush of its component, or was FUA).  Otherwise a crash could keep the
 * clear and lose the write on one component only: the copies differ in a
 * region no bitmap marks, and no resync looks there.  Checked over the
 * journals of a run (the bit values followed from the base images).
 */
static int check_bitmap_clears(const char *jsuffix, char *why, size_t wlen)
{
	struct bitmap_geo g = bitmap_geo_of(".base");
	uint8_t *bufs[BM_MAX_COMPONENTS], *base[BM_MAX_COMPONENTS];
	uint8_t *unflushed[BM_MAX_COMPONENTS];
	struct jrec *v;
	size_t n, blen;
	int bad = 0;

	if (bitmap_skipped(&g))
		return 0;
	uint64_t nregions = (g.data_size + g.region - 1) / g.region;
	uint64_t bits_end = g.offset + 4096u * (1 + (nregions + BITS_PER_BLOCK
	                    - 1) / BITS_PER_BLOCK);
	v = load_journals(jsuffix, &n, bufs);
	for (int c = 0; c < ncomp; c++) {
		char p[4200];
		path_of(p, sizeof(p), c, ".base");
		base[c] = load(p, &blen);   /* updated in place: the bits now */
		unflushed[c] = calloc(nregions, 1);
	}
	for (size_t q = 0; q < n && !bad; q++) {
		const struct jrec *j = &v[q];
		int d = j->comp;
		if (j->r.op == BM_BOP_FLUSH) {
			memset(unflushed[d], 0, nregions);
			continue;
		}
		if (is_data_write(j, &g) && j->r.length > 0) {
			if (j->r.flags & BM_BOP_FUA)
				continue;
			uint64_t first = j->r.offset / g.region;
			uint64_t last = (j->r.offset + j->r.length - 1) / g.region;
			for (uint64_t r = first; r <= last && r < nregions; r++)
				unflushed[d][r] = 1;
			continue;
		}
		if (j->r.op != BM_BOP_WRITE || j->r.offset + j->r.length <=
		    g.offset + 4096u || j->r.offset >= bits_end)
			continue;
		for (uint64_t r = 0; r < nregions && !bad; r++) {
			uint64_t at = g.offset + 4096u * (1 + r / BITS_PER_BLOCK) +
			              BITS_OFF + (r % BITS_PER_BLOCK) / 8;
			unsigned bit = 1u << (r % 8);
			if (at < j->r.offset || at >= j->r.offset + j->r.length)
				continue;
			bool was = base[d][at] & bit;
			bool now = j->data[at - j->r.offset] & bit;
			for (int e = 0; e < ncomp && was && !now && !bad; e++)
				if (unflushed[e][r]) {
					snprintf(why, wlen, "bitmap: region %" PRIu64 "'s "
					         "bit cleared on component %d (operation %"
					         PRIu64 ") while a write to it on component"
					         " %d was not flushed", r, d, j->r.seq, e);
					bad = 1;
				}
		}
		if (j->r.offset + j->r.length <= blen)
			memcpy(base[d] + j->r.offset, j->data, j->r.length);
	}
	for (int c = 0; c < ncomp; c++) {
		unload(bufs[c]);
		unload(base[c]);
		free(unflushed[c]);
	}
	free(v);
	return bad ? -1 : 0;
}

/* Union of the valid bitmaps of the current images; false if none. */
/* Each image's bitmap clear_seq (header offset 72; 0: no valid header).
 * A component whose header is behind another's missed a clear (a crash in
 * the middle of one) and is copied in full by rule (bitmap.c: it cannot
 * be told from an older copy put back), so the regions check skips it;
 * and a damaged header (a torn write of the pass's) makes every copy a
 * full one (bitmap.c), so then there is nothing to check. */
static uint64_t hdr_clear_seq[BM_MAX_COMPONENTS];
static long full_by_rule; /* rounds where that rule copied something in
                             full: the cost of telling older copies,
                             shown in the summary */

static bool dirty_union(const struct bitmap_geo *g, uint8_t *bits,
                        size_t nbytes)
{
	bool any = false;
	memset(bits, 0, nbytes);
	memset(hdr_clear_seq, 0, sizeof(hdr_clear_seq));
	for (int c = 0; c < ncomp; c++) {
		char p[4200];
		size_t len;
		bool ok = true;
		path_of(p, sizeof(p), c, "");
		uint8_t *img = load(p, &len);
		const uint8_t *h = img + g->offset;
		if (g->offset + 4096 > len || memcmp(h, "BLKMIRROR-BITMAP", 16) ||
		    bm_crc32c(0, h, 4092) != le32_at(h + 4092)) {
			bool damaged = g->offset + 4096 <= len &&
			               memcmp(h, "BLKMIRROR-BITMAP", 16) == 0;
			unload(img);
			if (damaged) {
				full_by_rule++;
				return false; /* all copies full */
			}
			continue;
		}
		hdr_clear_seq[c] = le64_at(h + 72);
		uint32_t nblocks = le32_at(h + 56);
		for (uint32_t i = 0; i < nblocks && ok; i++) {
			const uint8_t *b = h + 4096u * (1 + i);
			if ((size_t)(b - img) + 4096 > len ||
			    le32_at(b) != 0x4b4c424du || le32_at(b + 4) != i ||
			    bm_crc32c(bm_crc32c(0, b, 12), b + 16, 4080) !=
			    le32_at(b + 12))
				ok = false;
		}
		for (uint32_t i = 0; i < nblocks && ok; i++)
			for (size_t k = 0; k < 4080 &&
			     (size_t)i * 4080 + k < nbytes; k++)
				bits[(size_t)i * 4080 + k] |= h[4096u * (1 + i) + 16 + k];
		any |= ok;
		unload(img);
	}
	for (int c = 0; c < ncomp; c++)
		if (hdr_clear_seq[c] && hdr_clear_seq[c] != hdr_clear_seq[0]) {
			full_by_rule++; /* one behind: copied in full */
			break;
		}
	return any;
}

static int check_bitmap_dirty_only(const uint8_t *bits, char *why,
                                   size_t wlen)
{
	struct bitmap_geo g = bitmap_geo_of("");
	uint8_t *bufs[BM_MAX_COMPONENTS];
	struct jrec *v;
	size_t n;
	int bad = 0;

	uint64_t newest = 0;
	for (int c = 0; c < ncomp; c++)
		if (hdr_clear_seq[c] > newest)
			newest = hdr_clear_seq[c];
	v = load_journals(".journal", &n, bufs);
	for (size_t q = 0; q < n && !bad; q++) {
		if (!is_data_write(&v[q], &g) || v[q].r.length == 0 ||
		    hdr_clear_seq[v[q].comp] < newest)
			continue;
		uint64_t first = v[q].r.offset / g.region;
		uint64_t last = (v[q].r.offset + v[q].r.length - 1) / g.region;
		for (uint64_t r = first; r <= last && !bad; r++)
			if (!((bits[r / 8] >> (r % 8)) & 1)) {
				snprintf(why, wlen, "bitmap: the resync wrote region %"
				         PRIu64 " (operation %" PRIu64 ", component %d)"
				         " though no bitmap had it dirty", r,
				         v[q].r.seq, v[q].comp);
				bad = 1;
			}
	}
	for (int c = 0; c < ncomp; c++)
		unload(bufs[c]);
	free(v);
	return bad ? -1 : 0;
}

static void verify_fn(uint64_t crash_at)
{
	child_verify(crash_at);
}

static void workload_fn(uint64_t crash_at)
{
	child_workload(crash_at);
}

/* Assembles, syncs, checks; 0 or -1 with why. */
static int verify_round(char *why, size_t wlen, bool after_first_crash)
{
	uint64_t newest = newest_genid();
	struct bitmap_geo g = bitmap_geo_of("");
	static uint8_t bits[BM_BITMAP_MAX_BYTES];
	/* (only the bytes of the regions there are: each page touched after
	 * a fork is a fault) */
	size_t nbits = g.present ? (size_t)((g.data_size + g.region - 1) / g.region) : 0;
	size_t nbytes = nbits / 8 + 1 < sizeof(bits) ? nbits / 8 + 1 : sizeof(bits);
	bool dirty_check = after_first_crash && g.present &&
	                   dirty_union(&g, bits, nbytes);
	int st = run_child(verify_fn, 0);

	if (st != 0) {
		snprintf(why, wlen, "%s (child status %d)",
		         sh->why[0] ? sh->why : "verify child failed", st);
		return -1;
	}
	if (sh->genid < newest) {
		snprintf(why, wlen, "assembled generation %" PRIu64 " older than "
		         "the newest on the images (%" PRIu64 ")", sh->genid,
		         newest);
		return -1;
	}
	if (dirty_check && check_bitmap_dirty_only(bits, why, wlen) < 0)
		return -1;
	return check_identical(why, wlen);
}

static long points_tried, subsets_tried, seconds_tried;

/* One crash point P with subset choice k; second: a second crash. */
static int try_point(uint64_t seed, uint64_t point, int k, bool second)
{
	char why[700];
	uint64_t sub = k < 2 ? (uint64_t)k : mix(mix(seed, point), (uint64_t)k);
	uint64_t point2 = 0;

	subsets_tried++;
	for (int c = 0; c < ncomp; c++)
		rebuild(c, ".base", c == 0 || sub < 2 ? sub : mix(sub, (uint64_t)c));
	if (second) {
		char a[4200], b[4200];
		for (int c = 0; c < ncomp; c++) {
			path_of(a, sizeof(a), c, "");
			path_of(b, sizeof(b), c, ".crash1");
			copy_file(a, b);
		}
		/* How many operations a full assembly and sync takes here. */
		if (verify_round(why, sizeof(why), true) < 0)
			goto fail;
		uint64_t total = sh->backend_ops, s2 = mix(sub, 77);
		point2 = total ? 1 + rng_next(&s2) % total : 1;
		reset_images(".crash1");
		for (int c = 0; c < ncomp; c++) {
			path_of(a, sizeof(a), c, "");
			path_of(b, sizeof(b), c, ".base2");
			copy_file(a, b);
		}
		int st = run_child(verify_fn, point2);
		if (st != BM_CRASHSIM_EXIT && st != 0) {
			snprintf(why, sizeof(why), "second crash run: %s (status %d)",
			         sh->why, st);
			goto fail;
		}
		seconds_tried++;
		for (int c = 0; c < ncomp; c++)
			rebuild(c, ".base2", mix(sub, 1000 + (uint64_t)c));
	}
	if (verify_round(why, sizeof(why), !second) == 0)
		return 0;
fail:
	printf("FAIL seed=%" PRIu64 " point=%" PRIu64 " subset=%d: %s\n"
	       "  replay: make torture SEED=%" PRIu64 " POINT=%" PRIu64
	       " COMPS=%d TORTURE_OPS=%d TORTURE_QD=%d TORTURE_SETTLE=%d\n"
	       "  or: crashsim_oracle --seed %" PRIu64 " --ops %d --comps %d "
	       "--size %u --qd %d --settle %d --points %" PRIu64 " --subsets %d"
	       " --second\n",
	       seed, point, k, why, seed, point, ncomp, nops_wanted, qd,
	       settle_every, seed, nops_wanted, ncomp, size_mib, qd,
	       settle_every, point,
	       subsets_wanted);
	if (second)
		printf("  second crash at operation %" PRIu64 " of the sync\n",
		       point2);
	return -1;
}

/* Workload seed; point 0: all points; returns failures. */
static int run_seed(uint64_t seed, uint64_t only_point, int subsets,
                    uint64_t max_points, bool second)
{
	char a[4200], b[4200];
	int fails = 0, st;
	uint64_t total;

	mkdir(dir, 0700);
	for (int c = 0; c < ncomp; c++) {
		path_of(a, sizeof(a), c, "");
		int fd = open(a, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)comp_size) < 0)
			die(a);
		close(fd);
		path_of(a, sizeof(a), c, ".journal");
		unlink(a);
	}
	if (run_child(label_fn, 0) != 0) {
		fprintf(stderr, "crashsim_oracle: %s\n", sh->why);
		exit(2);
	}
	for (int c = 0; c < ncomp; c++) {
		path_of(a, sizeof(a), c, "");
		path_of(b, sizeof(b), c, ".base");
		copy_file(a, b);
	}
	gen_workload(seed, bm_data_area(comp_size));
	sh->settled = 0;
	st = run_child(workload_fn, 0);
	if (st != 0) {
		fprintf(stderr, "crashsim_oracle: workload without a crash "
		        "failed: %s (status %d)\n", sh->why, st);
		return 1;
	}
	total = sh->backend_ops;
	if (settle_every && !only_point)
		printf("seed %" PRIu64 ": the settle passes cleared %" PRIu64
		       " regions (run without a crash)\n", seed, sh->settled);
	{
		char why[700];
		if (check_bitmap_intent(".journal", why, sizeof(why)) < 0 ||
		    check_bitmap_clears(".journal", why, sizeof(why)) < 0) {
			printf("FAIL seed=%" PRIu64 " (no crash): %s\n", seed, why);
			return 1;
		}
	}
	uint64_t first = 1, last = total, step = 1;
	uint64_t s = mix(seed, 99);
	if (only_point)
		first = last = only_point;
	else if (max_points && total > max_points)
		step = 0;    /* random points */
	for (uint64_t i = first; i <= last; i += step ? step : 1) {
		uint64_t p = step ? i : 1 + rng_next(&s) % total;
		if (!step && i > max_points)
			break;
		reset_images(".base");
		for (int n = 0; n < sh->nops; n++) {
			sh->op[n].submitted = sh->op[n].acked = 0;
			sh->op[n].submit_tick = sh->op[n].ack_tick = 0;
		}
		sh->tick = 0;
		st = run_child(workload_fn, p);
		if (st != BM_CRASHSIM_EXIT && st != 0) {
			printf("FAIL seed=%" PRIu64 " point=%" PRIu64 ": workload "
			       "child: %s (status %d)\n  replay: make torture "
			       "SEED=%" PRIu64 " POINT=%" PRIu64 " COMPS=%d "
			       "TORTURE_OPS=%d TORTURE_QD=%d TORTURE_SETTLE=%d\n",
			       seed, p, sh->why, st, seed, p, ncomp, nops_wanted,
			       qd, settle_every);
			fails++;
			continue;
		}
		points_tried++;
		{
			char why[700];
			if (check_bitmap_intent(".journal", why, sizeof(why)) < 0) {
				printf("FAIL seed=%" PRIu64 " point=%" PRIu64 ": %s\n",
				       seed, p, why);
				fails++;
				continue;
			}
		}
		/* Keep this crash's journal for every subset choice. */
		for (int c = 0; c < ncomp; c++) {
			path_of(a, sizeof(a), c, ".journal");
			path_of(b, sizeof(b), c, ".j1");
			if (rename(a, b) < 0 && errno != ENOENT)
				die(a);
		}
		for (int k = 0; k < subsets; k++) {
			for (int c = 0; c < ncomp; c++) {
				path_of(a, sizeof(a), c, ".j1");
				path_of(b, sizeof(b), c, ".journal");
				copy_file(a, b);
			}
			bool two = second && k == subsets - 1;
			if (try_point(seed, p, k, two) < 0) {
				fails++;
				break;
			}
		}
	}
	return fails;
}

static void usage(void)
{
	fprintf(stderr, "usage: crashsim_oracle [--dir D] [--seed S] [--ops N] "
	        "[--comps 2|3] [--size MIB] [--points all|P] [--max-points N] "
	        "[--subsets K] [--second] [--qd N] [--settle N] "
	        "[--seconds T]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t seed = 1, point = 0, max_points = 0;
	int subsets = 3, seconds = 0, fails = 0, seeds = 0;
	bool second = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--second")) {
			second = true;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--dir"))
			dir = v;
		else if (!strcmp(a, "--seed"))
			seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--ops"))
			nops_wanted = atoi(v);
		else if (!strcmp(a, "--comps"))
			ncomp = atoi(v);
		else if (!strcmp(a, "--size"))
			size_mib = (unsigned)atoi(v);
		else if (!strcmp(a, "--points"))
			point = !strcmp(v, "all") ? 0 : strtoull(v, NULL, 0);
		else if (!strcmp(a, "--max-points"))
			max_points = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--subsets"))
			subsets = atoi(v);
		else if (!strcmp(a, "--qd"))
			qd = atoi(v);
		else if (!strcmp(a, "--settle"))
			settle_every = atoi(v);
		else if (!strcmp(a, "--seconds"))
			seconds = atoi(v);
		else
			usage();
	}
	subsets_wanted = subsets;
	if (ncomp < 2 || ncomp > 3 || nops_wanted < 1 || nops_wanted > MAX_OPS ||
	    size_mib < 1 || subsets < 1 || qd < 1 || qd > 64 ||
	    settle_every < 0)
		usage();
	comp_size = (uint64_t)size_mib * 1048576 + BM_META_SIZE;
	setenv("BM_CRASHSIM", "1", 1);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	if (seconds > 0) {
		time_t end = time(NULL) + seconds;
		for (; time(NULL) < end; seed++, seeds++) {
			if (run_seed(seed, 0, subsets, max_points ? max_points : 8,
			             true))
				fails++;
		}
	} else {
		fails = run_seed(seed, point, subsets, max_points, second);
		seeds = 1;
	}
	printf("crashsim: seeds %d, crash points %ld, subsets %ld, second "
	       "crashes %ld, failures %d; full copies by the older-copy rule "
	       "(a header behind or damaged) %ld\n", seeds, points_tried,
	       subsets_tried, seconds_tried, fails, full_by_rule);
	return fails ? 1 : 0;
}
