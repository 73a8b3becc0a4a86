/*
 * The `stream` read balance: sequential streams read ahead from every
 * component in parallel.  See readahead.c for the design.
 */
#ifndef BM_READAHEAD_H
#define BM_READAHEAD_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "blkmirror.h"
#include "chunkmem.h"

#define BM_RA_STREAMS 8
#define BM_RA_DEFAULT_CAP (64ull << 20)

struct ra_chunk;
struct ra_wait;

struct ra_stream {
	bool used;
	uint64_t next;          /* where the next sequential read starts */
	uint64_t ra_start;      /* chunks cover [ra_start, ra_end) contiguously */
	uint64_t ra_end;
	uint32_t hits;          /* sequential reads seen */
	uint64_t consumed;      /* bytes its client has read (readahead.c earned) */
	uint64_t window;        /* bytes to keep read ahead of `next` */
	uint64_t reorder;       /* how far behind `next` reads still come */
	unsigned reorder_quiet; /* reads at the front since one came that far */
	long long last_ms;
	long long born_ms;      /* when its first read came */
	struct ra_chunk *head, *tail;
	struct ra_wait *waiting; /* client reads waiting for chunks */
};

/* chunks measured per chunk-size decision (readahead.c learn) */
#define BM_RA_POS_SAMPLES 8

struct ra_comp {
	int slots;               /* read-ahead chunks in flight */
	uint64_t last_done_ns;   /* when its previous chunk completed */
	uint64_t head_start_ns;  /* when its chunk now in service began */
	uint64_t issued_cum;     /* bytes of chunks issued to it, ever */
	uint64_t issue_end;      /* where its last issued chunk ends */
	uint64_t done_cum;       /* bytes of chunks it completed, ever */
	double ns_per_byte;      /* measured service time per byte (0: none) */
	uint32_t chunk;          /* current chunk size */
	/* its last chunks at this size (readahead.c learn): each one's
	 * positioning (its first piece's service time less what the bytes
	 * took in its later pieces) and transfer time per byte */
	double pos_ns[BM_RA_POS_SAMPLES], xfer_npb[BM_RA_POS_SAMPLES];
	unsigned npos;
	uint32_t piece;          /* its pieces' length (0: not chosen yet) */
	uint64_t piece_done_ns;  /* when its latest piece landed */
	uint64_t sent_seq;       /* pieces pulled to send, ever */
	uint64_t land_seq;       /* the next piece expected to land, in that
	                          * order */
	uint64_t steals;         /* its late chunks re-read elsewhere */
	uint64_t waits;          /* client reads that waited on its chunks */
	uint64_t idle_ns;        /* time with no chunk while streams read
	                          * ahead (gaps under 1 s; BM_RA_DEBUG) */
	/* its chunks with pieces not yet sent, in stream order, and how
	 * many pieces it holds (readahead.c: pull_pieces) */
	struct ra_chunk *pq_head, *pq_tail;
	unsigned pieces_out;
	unsigned gone_epoch;     /* its epoch + 1 when a piece found its
	                          * connection gone or was refused: no chunk
	                          * goes to it for RA_GONE_NS after gone_ns,
	                          * or until the epoch moves (it reconnected) */
	uint64_t gone_ns;
	unsigned measured_epoch; /* the component's epoch its measures above
	                          * (speed, chunk and piece size) belong to:
	                          * a reconnected component, or a new one in a
	                          * reused slot, measures afresh (readahead.c
	                          * measures_follow_epoch) */
};

struct bm_readahead {
	pthread_mutex_t lock;    /* protects everything below */
	struct ra_stream streams[BM_RA_STREAMS];
	struct ra_comp comp[BM_MAX_COMPONENTS];
	unsigned turn;           /* which stream extends first, rotating */
	uint64_t bytes;          /* chunk memory in use (their buffers' touched bytes) */
	uint64_t cap;            /* at most this much */
	atomic_int nchunks;      /* lock-free "is there anything to drop?" */
	struct bm_chunkmem mem;  /* chunk buffers, kept warm (chunkmem.c) */
	long long idle_since_ms; /* no chunk since (bm_ra_tick), or 0 */
	bool soft_trimmed;       /* idle buffers given to the kernel lazily */
	bool warmed;             /* chunk memory warmed (bm_ra_tick); false
	                          * again when unmapped or the cap changes */
	atomic_bool closed;      /* bm_ra_destroy began: bm_ra_tick stays out */
	atomic_int ticking;      /* bm_ra_tick calls under way */
	atomic_int landing;      /* piece_done calls under way */
	uint64_t wait_ns;        /* client reads' time waiting for chunks */
	uint64_t served;         /* client reads served by the read-ahead */
	uint64_t served_bytes;   /* and their bytes */
	uint64_t ended;          /* streams ended for another (drop_stale) */
	uint64_t lent;           /* reads served from lent buffers (BM_IO_BORROW) */
};

struct bm_mirror;
struct bm_io;

void bm_ra_init(struct bm_mirror *m);
bool bm_ra_destroy(struct bm_mirror *m, long timeout_ms);
/* Takes a client read if the read-ahead can serve it (now or when its
 * chunks arrive); false: the caller reads it directly. */
bool bm_ra_read(struct bm_mirror *m, struct bm_io *io);
/* Drops read-ahead data overlapping a write (called when the write is
 * submitted and again before it is acknowledged). */
void bm_ra_invalidate(struct bm_mirror *m, uint64_t off, uint64_t len);
/* Gives back the loans of a read served from chunk buffers (bm_io_release:
 * seg[0..n), n > 0, all of one mirror); frees chunks dropped meanwhile. */
void bm_ra_release(const struct bm_io_seg *seg, unsigned n);
/* Drops everything (algorithm change, component state change). */
void bm_ra_drop_all(struct bm_mirror *m);
/* A few times a second (the event thread): drops streams idle for
 * RA_IDLE_MS and, when no chunk is left, gives the idle chunk buffers
 * back to the system. */
void bm_ra_tick(struct bm_mirror *m);

#endif
