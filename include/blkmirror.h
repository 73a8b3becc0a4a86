/*
 * blkmirror: a RAID-1 (mirror) block storage engine in user space.
 *
 * Public API of libblkmirror.  Every name starts with bm_ / BM_.  Handles are
 * opaque.  Functions that can fail return 0 or a positive value on success and
 * -errno on failure; bm_last_error() then gives a one-line message for a human
 * (thread-local, valid until the next failing call on the same thread).
 */
#ifndef BLKMIRROR_H
#define BLKMIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits. */
#define BM_NAME_MAX 31          /* mirror name, bytes, without the NUL */
#define BM_MAX_COMPONENTS 16    /* components in one mirror */
#define BM_MAX_IO (32u << 20)   /* largest single request, bytes */

/* Read balance algorithms (gmirror's vocabulary). */
enum bm_balance {
	BM_BALANCE_ROUND_ROBIN = 0, /* next component in turn */
	BM_BALANCE_LOAD = 1,        /* least outstanding requests */
	BM_BALANCE_PREFER = 2,      /* highest priority component */
	BM_BALANCE_SPLIT = 3,       /* requests > slice split over all */
	BM_BALANCE_STREAM = 4,      /* streams read ahead from all; default */
	BM_BALANCE_COUNT
};

/* Returns the algorithm's name ("round-robin", ...) or NULL. */
const char *bm_balance_name(int balance);
/* Parses an algorithm name; returns it or -EINVAL. */
int bm_balance_parse(const char *name);

/* True when name is a valid mirror name (1..31 of [A-Za-z0-9._-], not
 * starting with '.' or '-'). */
bool bm_name_valid(const char *name);

/* The message of the last failure on this thread ("" if none). */
const char *bm_last_error(void);

/* ---- Creating a mirror ------------------------------------------------ */

struct bm_label_params {
	int balance;        /* enum bm_balance */
	uint32_t slice;     /* split slice in bytes (power of two, >= 512) */
	bool no_sync;       /* -n: components are known identical; skip sync */
	bool force;         /* -f: label over file systems, partition tables, other mirrors' labels */
	uint64_t bitmap_region; /* -r: write-intent bitmap region bytes (0:
	                           the default, bitmap.h) */
	bool no_bitmap;     /* --no-bitmap (hidden): labels as before the
	                       bitmap existed (bitmap_size 0) */
};

/*
 * Writes a label for a new mirror NAME onto each component.  The first
 * component is the synchronization source; the others start SYNCHRONIZING
 * unless params->no_sync.  Refuses (without writing anything) if a component
 * cannot be opened, is too small, or appears twice; if one holds data (a
 * file system, partition table, RAID/LVM signature, another mirror's label)
 * unless params->force; and always if the mirror would be smaller than a
 * file system it keeps (on the first component, or on any with no_sync).
 */
int bm_label_write_new(const char *name, const char *const *paths, size_t n,
                       const struct bm_label_params *params);

/* Reads the mirror name from a component's label into name (at least
 * BM_NAME_MAX + 1 bytes).  -ENOENT when it has no label. */
int bm_label_probe(const char *path, char *name, size_t len);
/* The same; *opened says whether the component could be opened at all
 * (false: the error is about reaching it, not about its label). */
int bm_label_probe_opened(const char *path, char *name, size_t len,
                          bool *opened);

/* Whether paths are the components of a mirror NAME that the state
 * directory no longer records (after `forget -f`, or disks moved from
 * another host), from their labels alone, nothing written: each carries
 * NAME's label, one mirror id, no component twice; unless force, every
 * component the newest label names is given and every one given is named
 * (a missing one may hold the newest data).  0, or -errno with a one-line
 * reason in bm_last_error(). */
int bm_label_adopt_check(const char *name, const char *const *paths,
                         size_t n, bool force);
/* The same, and the sizes the labels taken record (each once; at most
 * BM_MAX_COMPONENTS into sizes), where a grown component's label is: what
 * a record keeps for serve (NAME.sizes).  sizes and n_sizes may be NULL. */
int bm_label_adopt_check_sizes(const char *name, const char *const *paths,
                               size_t n, bool force, uint64_t *sizes,
                               size_t *n_sizes);

/* One-word state of a component from its label alone, for a mirror that is
 * not running: "clean", "dirty", "synchronizing 45%", or an error. */
int bm_label_state(const char *path, const char *name, char *buf, size_t len);
/* The same for path among all[0..n), the mirror's components: one that
 * grew since it was labelled is found at its old end, as serve finds it
 * ("clean, ...; grown to N bytes, its label at its old end (M)"). */
int bm_label_state_in(const char *path, const char *name,
                      const char *const *all, size_t n, char *buf,
                      size_t len);

/* Zeroes the label of one component.  Returns -ENOENT if it had none. */
int bm_label_clear(const char *path);
/* Sizes a mirror's components had when they were labelled (its record
 * keeps them: cli/statedir.c): a component that grew since keeps its
 * label at its old end, looked for there when no other label says where
 * (every component grew).  For this process: the start, status, clear
 * and dump look at them too. */
void bm_label_set_size_hints(const char *name, const uint64_t *sizes,
                             size_t n);
/* The same, added to those set (another mirror that lists the path).  A
 * label found at a hint's size is taken only when it is its mirror's
 * (name); NULL name: none. */
void bm_label_add_size_hints(const char *name, const uint64_t *sizes,
                             size_t n);
/* Whether clearing path's label loses data: `others` are the other
 * components its mirror lists.  0 when it does not (another component in
 * sync with it keeps the data, or none of the mirror's is left labelled);
 * 1 with a one-line reason in bm_last_error() when the next start would
 * take an older copy as the mirror's (path holds the only newest one, or
 * the labels disagree), or when another one cannot be read to tell;
 * -errno when path's own label cannot be read. */
int bm_label_clear_loses_data(const char *path, const char *const *others,
                              size_t n);

/* How long a read or write of a component's label, header or lease waits
 * before the mirror runs (serve's start, status, label, clear, dump) for a
 * component that connects and never answers (an NBD export): ms > 0, 0
 * for ever; 30 s unless set.  Process-wide; a mirror opened after it
 * starts with it as its io-timeout. */
void bm_backend_set_sync_timeout_ms(long ms);

/* Whether a serve of the stopped mirror `name` over paths would be refused
 * by what its labels say (split brain, a source behind a component being
 * copied, no component holding the data in full): 1 with the refusal's
 * text in buf, 0 when the labels allow a start (or cannot tell: none of
 * the mirror's is readable).  Reads only; skip (NULL: none) names the
 * paths not to open again (found absent already: one that does not answer
 * is not waited for twice). */
int bm_assembly_preview(const char *name, const char *const *paths, size_t n,
                        const bool *skip, char *buf, size_t len);

/* Writes a human-readable dump of the component's label to buf. */
int bm_label_dump(const char *path, char *buf, size_t len);

/* Rewrites balance/slice in the labels of a mirror that is not running. */
int bm_label_configure(const char *const *paths, size_t n, int balance,
                       uint32_t slice);

/* ---- A running mirror -------------------------------------------------- */

typedef struct bm_mirror bm_mirror;

/*
 * Assembles mirror NAME from the given component paths (the list the state
 * directory recorded).  Components that are missing, unreadable or belong to
 * another mirror are left out and reported through bm_mirror_status().  Fails
 * with a message when no component can serve as a source of the newest data.
 */
int bm_mirror_open(const char *name, const char *const *paths, size_t n,
                   bm_mirror **out);
/* The same, with paths[force_source] as the source whatever the labels say
 * (the resolution of a split brain): every other component is copied from
 * it in full.  force_source -1: bm_mirror_open. */
int bm_mirror_open_forced(const char *name, const char *const *paths,
                          size_t n, int force_source, bm_mirror **out);

/* Drains in-flight I/O, stops sync (keeping its checkpoint), flushes, marks
 * the components clean and frees the mirror.  Returns within io-timeout +
 * 5 s whatever the components do (what could not drain or flush stays
 * marked dirty): 0 when every label was marked clean, else -EIO with
 * bm_last_error() saying why the mirror was left dirty. */
/* The sizes the components' labels record (each where its label is),
 * each once: what a record keeps for bm_label_set_size_hints.  The
 * count (at most max). */
size_t bm_mirror_label_sizes(bm_mirror *m, uint64_t *sizes, size_t max);
int bm_mirror_close(bm_mirror *m);

/* The mirror is about to be closed (a server stopping, before it waits for
 * its clients' requests): from now on no component request is waited for
 * longer than io-timeout, however slowly it is being answered (a slow
 * component is otherwise waited for up to 4 x io-timeout).  Any thread;
 * bm_mirror_close implies it. */
void bm_mirror_begin_stop(bm_mirror *m);

/* Size in bytes of the mirror's data area. */
uint64_t bm_mirror_size(const bm_mirror *m);

/* The alignment (and shortest length) every component present takes:
 * the largest minimum block size their NBD exports advertise, at least 1.
 * What the NBD server advertises to a client when it connects. */
uint32_t bm_mirror_min_block(bm_mirror *m);

/* Sets the read balance algorithm (and slice, if nonzero) at once; persists
 * it in the labels. */
int bm_mirror_configure(bm_mirror *m, int balance, uint32_t slice);

/* Asynchronous I/O. */
enum bm_io_type {
	BM_IO_READ,
	BM_IO_WRITE,
	BM_IO_FLUSH,
	BM_IO_TRIM,
	BM_IO_WRITE_ZEROES,
};
#define BM_IO_FUA 1u /* write: durable on every component before done */
/* read: the caller accepts the data in the mirror's own memory (seg[])
 * instead of a copy into buf, and calls bm_io_release once it no longer
 * reads it (the NBD server sends it from there: no copy). */
#define BM_IO_BORROW 2u
#define BM_IO_SEGS 4        /* a borrowed read spans at most this many pieces */

/* A piece of a borrowed read's data; ref is the mirror's (bm_io_release). */
struct bm_io_seg {
	const void *base;
	uint32_t len;
	void *ref;
};

struct bm_io {
	enum bm_io_type type;
	uint32_t flags;     /* BM_IO_FUA, BM_IO_BORROW */
	uint64_t offset;
	uint32_t length;
	void *buf;          /* read/write data; 4096-aligned is fastest */
	/* Called exactly once, from any thread, with 0 or -errno. */
	void (*done)(struct bm_io *io, int result);
	void *opaque;       /* for the caller */
	/* A BM_IO_BORROW read that completed with 0 may have been served from
	 * the mirror's memory: then nseg > 0, the data is seg[0..nseg) in
	 * order (buf is untouched), and it stays unchanged until
	 * bm_io_release(io), which the caller must call exactly once (also
	 * when it drops the reply).  nseg 0: the data is in buf as usual.
	 * Set by the mirror (bm_mirror_submit zeroes nseg). */
	unsigned nseg;
	struct bm_io_seg seg[BM_IO_SEGS];
};

/*
 * Starts io.  Returns 0 if io->done will be called, or -errno (io->done will
 * not be called) for requests that are invalid (out of range, too large).
 * May block briefly while a synchronization chunk overlaps a write.
 */
int bm_mirror_submit(bm_mirror *m, struct bm_io *io);

/* Gives back the memory a borrowed read's data is in (io->nseg > 0; then
 * sets nseg to 0).  Any thread; never blocks for long.  Every borrowed
 * read must be released before bm_mirror_close. */
void bm_io_release(struct bm_io *io);

/* Blocks until every submitted io has completed. */
void bm_mirror_drain(bm_mirror *m);

/* Writes the gmirror-style status (and per-component detail when verbose)
 * of a running mirror to buf as text. Returns bytes written or -errno. */
int bm_mirror_status(bm_mirror *m, char *buf, size_t len);

/* Writes every label field of every component, as `blkmirror list` shows. */
int bm_mirror_list(bm_mirror *m, char *buf, size_t len);

/* Caps the memory the `stream` algorithm reads ahead into (bytes; 0
 * turns read-ahead off).  Default 64 MiB. */
void bm_mirror_set_readahead(bm_mirror *m, uint64_t bytes);

/* Cumulative counters of one row of `blkmirror stat`. */
struct bm_stat_row {
	char name[256];
	int queue;                      /* requests outstanding now */
	uint64_t reads, read_bytes, read_ns;
	uint64_t writes, write_bytes, write_ns;
	uint64_t deletes, delete_bytes, delete_ns;
	uint64_t busy_ns;               /* time with a request outstanding */
	uint64_t errors;
};

/* Fills a row per component, then one for the mirror itself (named after
 * it); returns the number of rows, at most max. */
int bm_mirror_stats(bm_mirror *m, struct bm_stat_row *rows, int max);

/* A component with requests outstanding that completes nothing for this
 * long is disconnected (and retried later); 0 never gives up.  Default
 * 30 s.  Also bounds every label write and flush. */
void bm_mirror_set_io_timeout(bm_mirror *m, unsigned seconds);
/* The io-timeout now (configure may change it live), in milliseconds. */
unsigned bm_mirror_io_timeout_ms(bm_mirror *m);

/* Read errors a component may have (each rewritten from a good copy)
 * before it is failed out.  Default 20. */
void bm_mirror_set_read_error_limit(bm_mirror *m, unsigned errors);

/* Where the copy onto component index comp stands.  Returns 1 with *p
 * filled while comp is SYNCHRONIZING, 0 when it is not (or no such
 * component). */
struct bm_sync_progress {
	char path[4096];
	uint64_t done, total;   /* bytes copied (or skipped as holes), of */
	uint64_t rate;          /* bytes per second, recent; 0 while unknown */
	int64_t eta_s;          /* seconds left at that rate; -1 unknown */
};
int bm_mirror_sync_progress(bm_mirror *m, int comp, struct bm_sync_progress *p);

/*
 * Check and repair (md's check/repair): compares every ACTIVE component in
 * the background while the mirror serves; repair also writes the highest-
 * priority ACTIVE component's data over the copies that differ.  One at a
 * time: -EBUSY while one runs; -EINVAL with fewer than two ACTIVE
 * components.  *id names the job for the report and cancel.  The report is
 * text, a "key value" line each: kind, state (running, done, cancelled,
 * failed), done, total (bytes), elapsed_ms, source (the reference's
 * index), "comp INDEX STATE PATH" per component as it started; once ended,
 * "range OFFSET LENGTH REF MASK" (hex mask of the components that differ
 * from REF), "more COUNT BYTES", differ_bytes, "note TEXT", "fatal TEXT".
 */
int bm_mirror_check_start(bm_mirror *m, bool repair, unsigned *id);
int bm_mirror_check_cancel(bm_mirror *m, unsigned id);
int bm_mirror_check_report(bm_mirror *m, unsigned id, char *buf, size_t len);
/* The synchronization's rates in bytes per second: the floor it keeps
 * while clients are busy (sync-min) and its ceiling (sync-max, 0: none),
 * as md's sync_speed_min/max.  UINT64_MAX leaves one as it is.  -EINVAL
 * when min is 0 or above max.  Kept in memory (default 1M and none). */
int bm_mirror_set_sync_rates(bm_mirror *m, uint64_t min, uint64_t max);
void bm_mirror_sync_rates(bm_mirror *m, uint64_t *min, uint64_t *max);

/* True when a background synchronization is running. */
bool bm_mirror_syncing(bm_mirror *m);

/*
 * A component's state on a running mirror (gmirror's verbs; lib/rebuild.c).
 * component is its path as the mirror knows it, or another path of the
 * same file or device.  Each returns 0 or -errno with a one-line message.
 *  deactivate: ACTIVE/SYNCHRONIZING -> INACTIVE (kept, not used, recorded
 *    in its label, so it stays INACTIVE across restarts); never the last
 *    ACTIVE one; already INACTIVE: 0.
 *  activate: INACTIVE -> SYNCHRONIZING, copied in full.
 *  rebuild: copies it again in full: an ACTIVE one (not the only one), or
 *    a FAILED one (reopened; its label must be this mirror's).
 *  set_priority: its label's priority (prefer; the source after a crash).
 */
int bm_mirror_deactivate(bm_mirror *m, const char *component);
int bm_mirror_activate(bm_mirror *m, const char *component);
int bm_mirror_rebuild(bm_mirror *m, const char *component);
int bm_mirror_set_priority(bm_mirror *m, const char *component,
                           uint32_t priority);
/* The same for a mirror that is not running: rewrites the priority in the
 * label of component of mirror name (refused while a server holds it). */
int bm_label_set_priority(const char *name, const char *component,
                          uint32_t priority);
/* ---- Events: a running mirror's state changes (lib/eventlog.c) -------- */

/* Severities: syslog's numbers (LOG_CRIT ... LOG_INFO). */
enum bm_severity {
	BM_SEV_CRIT = 2,    /* the data is at risk now (writes refused, the
	                       last copy in trouble) */
	BM_SEV_ERR = 3,     /* a component failed, a copy stopped on an error */
	BM_SEV_WARNING = 4, /* lost redundancy, a component went away */
	BM_SEV_NOTICE = 5,  /* back to normal, an operator's action */
	BM_SEV_INFO = 6,    /* progress: started, a copy began or ended */
};
/* "crit", "err", "warning", "notice", "info" (syslog's words). */
const char *bm_severity_name(int severity);

/* One event.  Strings are NUL-terminated, with no tab or newline. */
struct bm_event_record {
	uint64_t seq;           /* 1, 2, ... since the mirror started */
	int64_t time_ms;        /* wall clock, ms since the epoch */
	int severity;           /* enum bm_severity */
	char event[32];         /* "ComponentFailed", "Degraded", ... */
	char component[256];    /* its path ("" for the mirror); long paths
	                           are cut */
	char message[256];
};

/* Where the event log stands, for a follower. */
struct bm_event_cursor {
	uint64_t current;       /* the last event's seq (0: none yet) */
	uint64_t instance;      /* random, new each time the mirror starts:
	                           seqs restart at 1 */
	uint64_t lost;          /* events after `since` the log no longer
	                           holds (it keeps the last 1024) */
};

/* Copies the oldest events with seq > since (at most max) to out; returns
 * how many.  Never waits on I/O. */
int bm_mirror_events(bm_mirror *m, uint64_t since, struct bm_event_record *out,
                     int max, struct bm_event_cursor *cur);

/* One component as status shows it: its state's name ("ACTIVE",
 * "SYNCHRONIZING", "FAILED", "DISCONNECTED", "ABSENT"), why it is out of
 * service ("" when in service) and the copy's progress in percent (-1
 * when not being copied).  Returns 1, or 0 when there is no component
 * comp. */
struct bm_component_info {
	char path[4096];
	char state[16];
	char why[256];
	int sync_percent;
};
int bm_mirror_component_info(bm_mirror *m, int comp,
                             struct bm_component_info *out);

#ifdef __cplusplus
}
#endif
#endif
