/*
 * Component backends: one ops table, one base struct embedded first in every
 * implementation (file/blockdev through io_uring, NBD exports, test doubles).
 *
 * The data path is asynchronous: submit() starts a request and its done()
 * callback runs later on a backend thread; no thread waits per request.
 * Labels are few and small, so they use the synchronous calls.
 */
#ifndef BM_BACKEND_H
#define BM_BACKEND_H
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum bm_bop { BM_BOP_READ, BM_BOP_WRITE, BM_BOP_FLUSH, BM_BOP_TRIM, BM_BOP_ZERO };
#define BM_BOP_FUA 1u

struct bm_breq {
	enum bm_bop op;
	uint32_t flags;       /* BM_BOP_FUA */
	uint64_t offset;
	uint32_t length;
	void *buf;
	/* Called once with 0 or -errno: on a backend thread, or on the
	 * submitter's before submit() returns 0 (a request done or refused
	 * at once: file.c's TRIM, ZERO and writes to a file cut short). */
	void (*done)(struct bm_breq *r, int result);
	void *opaque;         /* the submitter's */
	uint32_t progress;    /* backend-private: bytes already transferred */
	/* Set (before done) by whoever ended it without the component's
	 * answer: a refused submission, a flush the export does not need, an
	 * empty request.  Says nothing of the component's queue (mirror.h,
	 * done_t0_max).  Submitters clear it. */
	bool unanswered;
};

/*
 * A question about allocation: what [offset, offset+length) holds, starting
 * at offset.  The answer is the first run: run bytes (1 <= run <= length)
 * that are all data, or all read as zeros (zero).  "All data" is always a
 * correct answer (a backend that cannot tell gives it).
 */
struct bm_extent_req {
	uint64_t offset, length;
	uint64_t run;         /* answer */
	bool zero;            /* answer: the run reads as zeros */
	/* Called once, on any thread, with 0 or -errno. */
	void (*done)(struct bm_extent_req *r, int result);
	void *opaque;         /* the submitter's */
};

struct bm_backend;

struct bm_backend_ops {
	const char *kind;  /* "file", "blockdev", "nbd", ... */
	/* Starts r; returns 0 (done will be called) or -errno (it will not). */
	int (*submit)(struct bm_backend *be, struct bm_breq *r);
	int (*pread_sync)(struct bm_backend *be, void *buf, size_t len,
	                  uint64_t off);
	int (*pwrite_sync)(struct bm_backend *be, const void *buf, size_t len,
	                   uint64_t off);
	int (*flush_sync)(struct bm_backend *be);
	/* Waits for in-flight requests (a bounded time after abort()), then
	 * frees be. */
	void (*close)(struct bm_backend *be);
	/*
	 * Optional (may be NULL).  Makes every request in flight complete soon
	 * (with -ETIMEDOUT, -ECONNABORTED or whatever the transport reports)
	 * and every later submit() fail at once.  Called by the engine when it
	 * gives up on a component (timeout, failure); any thread; idempotent.
	 * A request that the kernel cannot give back (a hung block device)
	 * may still complete late: the engine keeps its buffers until then.
	 */
	void (*abort)(struct bm_backend *be);
	/*
	 * Optional.  A cheap look at whether the component is still there,
	 * called about once a second from the engine's event thread; must not
	 * block.  0, or -ENODEV (file deleted: link count 0; device gone),
	 * -ENOTCONN (NBD connection dead), with a reason in bm_error().
	 */
	int (*check)(struct bm_backend *be);
	/*
	 * Optional (NULL: everything is data).  Starts an allocation question
	 * (struct bm_extent_req); 0 (done will be called) or -errno.  Files
	 * answer with SEEK_DATA/SEEK_HOLE, NBD exports with block status
	 * "base:allocation" (its zero flag).
	 */
	int (*extent)(struct bm_backend *be, struct bm_extent_req *r);
};

struct bm_backend {
	const struct bm_backend_ops *ops;
	char path[PATH_MAX];
	uint64_t size;       /* bytes: what the mirror uses of it (a component
	                        that grew since it was labelled is used at its
	                        old size: bm_label_find_grown) */
	uint64_t dev_size;   /* bytes it had when opened, whatever it is used
	                        at (what another opening of it sees) */
	bool rotational;
	uint32_t min_block;  /* the shortest, and alignment of, requests it
	                        takes (an NBD export's advertised minimum
	                        block size); 0: any (files align themselves) */
	dev_t st_dev;        /* identity, to find one disk named twice */
	ino_t st_ino;
	dev_t st_rdev;
	/* Requests whose waiter gave up (bm_backend_io_wait_timeout) and that
	 * have not completed yet: the component may still act on them, so
	 * it is not reopened while any is left (recover.c). */
	atomic_int detached;
};

/*
 * Opens a component by path (a regular file or a block device).  With
 * exclusive, takes the lock that keeps a second server away.  Errors say what
 * is wrong with the path.
 */
int bm_backend_open(const char *path, bool exclusive, struct bm_backend **out);
/* Ends and closes a backend opened and not taken (a request it was given
 * may still be outstanding: a component that hangs); returns err (-errno)
 * with bm_last_error() still the reason it was not taken. */
int bm_backend_discard(struct bm_backend *be, int err);
int bm_file_backend_open(const char *path, bool exclusive,
                         struct bm_backend **out);
int bm_nbd_backend_open(const char *uri, struct bm_backend **out);

/* True when two open backends are the same disk or file. */
bool bm_backend_same(const struct bm_backend *a, const struct bm_backend *b);

/* Synchronous helpers built on submit(), for code that must wait. */
int bm_backend_io_wait(struct bm_backend *be, enum bm_bop op, void *buf,
                       uint32_t len, uint64_t off, uint32_t flags);

/*
 * The same with a deadline (timeout_ms > 0): the request goes through a
 * bounce buffer owned by the request, so when the deadline passes the call
 * returns -ETIMEDOUT at once and a late completion frees what it owns
 * without touching buf.  timeout_ms <= 0 waits for ever.
 */
int bm_backend_io_wait_timeout(struct bm_backend *be, enum bm_bop op,
                               void *buf, uint32_t len, uint64_t off,
                               uint32_t flags, long timeout_ms);

/*
 * What a waiter asks when its deadline passes: whether the backend is
 * slow rather than hung (it answers, in order, a queue that was ahead of
 * the request submitted at t0_ns, CLOCK_MONOTONIC).  While it says so,
 * the wait goes on, asking again every BM_PATIENCE_RECHECK_MS.  owner and
 * which are the asker's (the mirror and the component: events.c).  With
 * a streak, waits that follow one another (within a second) share one
 * budget: since_ns is when the first of them ran late, kept while they end
 * late; one that ends in time or is given up ends the streak.  The waiter
 * serializes them (e.g. under a lock).
 */
struct bm_wait_streak {
	uint64_t since_ns;      /* 0: no streak */
	uint64_t last_ns;       /* when its last wait ended */
};
struct bm_patience {
	bool (*slow_not_hung)(const struct bm_patience *p, uint64_t t0_ns);
	void *owner;
	void *which;
	struct bm_wait_streak *streak;
};
#define BM_PATIENCE_RECHECK_MS 250

/*
 * The deadline of the synchronous calls of a component that can hang (an
 * NBD export that accepts the connection and never answers): what a label,
 * header or bitmap read before a mirror runs (assembly, the CLI's offline
 * views, label, clear) waits at most.  Process-wide: BM_IO_TIMEOUT_MS_DEFAULT
 * (mirror.h) unless the CLI sets it (serve --io-timeout; status shortens
 * it; 0: for ever; declared in blkmirror.h too).  A call that ran out leaves a detached request (the backend is then
 * closed or discarded: it may still answer).
 */
void bm_backend_set_sync_timeout_ms(long ms);
long bm_backend_sync_timeout_ms(void);

/* bm_backend_io_wait_timeout with patience (NULL: none). */
int bm_backend_io_wait_patient(struct bm_backend *be, enum bm_bop op,
                               void *buf, uint32_t len, uint64_t off,
                               uint32_t flags, long timeout_ms,
                               const struct bm_patience *p);

/*
 * Several requests at once (on one backend or several: a label or bitmap
 * block on every component), each waited for as by
 * bm_backend_io_wait_patient, all with the deadline counted from when they
 * were sent together: the wait is the slowest one's, not the sum.  Each
 * op's result is set.  At most BM_WAIT_ALL_MAX are in flight at a time.
 */
struct bm_wait_op {
	struct bm_backend *be;
	enum bm_bop op;
	void *buf;
	uint32_t len;
	uint64_t off;
	uint32_t flags;
	const struct bm_patience *patience; /* NULL: none */
	int result;                         /* out: 0 or -errno */
};
#define BM_WAIT_ALL_MAX 64
void bm_backend_io_wait_all(struct bm_wait_op *ops, int n, long timeout_ms);

/*
 * The allocation of [off, off+len) from off, with a deadline (a late
 * answer is dropped): *run bytes that are data (*zero false) or read as
 * zeros.  A backend without the op, or one that fails to answer, says
 * "all data" (*run = len, *zero = false) and the call returns 0, or the
 * -errno of a failure (the answer is then "all data" too).
 */
int bm_backend_extent(struct bm_backend *be, uint64_t off, uint64_t len,
                      long timeout_ms, uint64_t *run, bool *zero);

#endif
