/*
 * The `stream` read balance: the fix for the gmirror report.
 *
 * Why.  `dd bs=128k` keeps one request in flight.  Any algorithm that sends
 * each request to one component (round-robin, load, md, ZFS, btrfs) leaves
 * the other components idle while that request is served, so one stream
 * reads at the speed of one component however many there are.  Splitting
 * each request (gmirror `split`) keeps them all busy with tiny pieces, which
 * a rotating disk must still spin past, so it gains nothing there.
 *
 * What.  Reads are matched to sequential streams (BM_RA_STREAMS at once,
 * from any connection: a read that starts where a stream's last read ended,
 * or inside its read-ahead window, or a few of its lengths past the front
 * (reads that come out of order, as a file system's do), belongs to it;
 * one a little behind the front is a straggler, read directly without
 * starting a stream of its own: near_front).  After two sequential
 * reads the stream reads ahead: the range after the client's position is
 * cut into chunks, issued in stream order.  Until every component has a
 * measured speed, each chunk goes to the component with the fewest chunks
 * in flight (two at most each).  Then (pick_slot) it goes to the one that
 * would finish it first, counting what each has queued (earliest finish,
 * up to RA_SLOTS_MAX chunks each), so that work follows measured speed: a
 * fast component takes more chunks, and a slow one takes a chunk only if
 * it would deliver it before the client, at the components' summed speed,
 * gets there.  A client read that waits for a chunk whose component is
 * late, when another would deliver it clearly sooner, gets the chunk read
 * there too (steal_late: the twin takes its place; the late one is freed
 * when it lands).  Client reads are served from memory, or wait for the
 * chunks they need.
 *
 * Pieces.  A chunk is sent to its component as pieces (1 MiB, or what it
 * reads in 10 ms if more; at most 16), in order, two at a time
 * (pull_pieces), so the component reads them as one sequential run, and a
 * client read is served as soon as the pieces under it have landed, in a
 * row from the chunk's start, not when the whole chunk has.  That matters where a stream
 * begins and where it ends: a 4 MiB chunk of an 80 MiB/s disk is 50 ms,
 * and the client's last read needed on average half of its final chunk
 * (three such disks lost ~55 ms per 256 MiB stream against their summed
 * speed, half of it there).
 *
 * Window.  It starts at 4 MiB and doubles every 4 sequential reads, up to
 * half the memory cap (64 MiB per mirror unless configured), and never
 * less than two chunks per component; no chunk is allocated past the cap.
 * And it is earned: a chunk is issued only while what the stream has
 * read ahead of its front stays within RA_EARN times the bytes its
 * client has read (consumed).  A `dd bs=128k` has earned 16 MiB after
 * two reads; a probe of a few small reads that look sequential (mount
 * reads 4 KiB at 0, 16 KiB, 32 KiB, 64 KiB, ...) earns no chunk at all.
 * Before, such a probe read 34 MiB ahead after its second read and took
 * the whole cap just before a file's reads began (an ext4 file read 43 of
 * 64 MiB from the read-ahead, 1 run in 15).
 * A component left with nothing in flight takes the next chunk even past
 * the window, up to twice it (extend): a disk that idles loses that time
 * for good, and the window stops while the client waits on another
 * component's late chunk.
 * Chunks behind the client are freed at once; a stream idle for a second
 * is dropped with its chunks (bm_ra_tick, or the next read), and so is the
 * least recently used stream when a new one needs its slot.
 * A read that fits no stream goes to the component with
 * the fewest requests outstanding (all connections and read-ahead
 * counted, ties rotated; on a rotating component a read next to its head
 * position counts one request less).
 *
 * Memory.  Chunk buffers come from the mirror's chunk memory
 * (chunkmem.c): a freed chunk's buffer is kept warm for the next chunk of
 * any size (sizes differ per component and change while they climb: a
 * chunk that doubles touches only the difference), and the cap counts
 * how far each buffer in use has been touched, so resident memory stays
 * within the cap.  A steady stream maps and touches nothing new (fresh
 * pages cost a fault and a clear each: half the server's CPU on a fast
 * stream).  Thirty seconds after the last chunk (RA_MEM_IDLE_MS) the
 * idle buffers are given to the kernel lazily (MADV_FREE: still there for
 * the next stream unless the system needed the memory), and they stay
 * mapped (within the cap).  Not sooner: where the hypervisor shadows the
 * guest's page tables (this VM) the first write to a lazily freed page
 * costs ~8 us, half a fresh page, and with a one-second delay every
 * stream after a pause (the benchmark's runs, a file system's bursts)
 * paid it on all its memory: 1.15 against 0.61-0.68 s of server CPU per
 * GiB on the QD1 stream from two 400 MiB/s disks, side by side.
 * Before the first stream the event thread's tick touches the memory a
 * stream of the default cap uses, in buffers of the size chunks start at
 * (warm), and a chunk that climbs past its buffer at the cap takes the
 * pages of idle ones (chunkmem.c move_pages): a page's first touch is the
 * dearest thing there is in a virtual machine whose free memory goes
 * back to the host (~15 us a page here: a fresh server's first stream
 * from two 400 MiB/s disks read at 0.8-0.9x one disk, 1.4-1.9 s of CPU
 * per GiB).  Only the stream balance warms; on another the idle chunk
 * memory is unmapped.
 * A stream whose client has gone (not read since another stream began,
 * for RA_STALE_MS) is ended when another begins or needs the memory
 * (drop_stale); streams that read at once never end each other.
 *
 * Chunk size (per component), by measurement alone.  A chunk costs
 * positioning plus bytes over bandwidth; on a rotating disk the
 * positioning is the spin (or seek) over the other components' chunks, so
 * small chunks lose much of the disk's speed and large ones little, and
 * on media that do not position, large chunks only lose time at the end
 * of a stream (the others read past it while the last chunk comes at one
 * disk's speed: with 4 MiB chunks three 80 MiB/s disks read a 256 MiB
 * stream at 2.88x one disk, with 2 MiB at 2.94x).  Many rotating disks
 * do not say so (NBD servers that never set the rotational flag, files),
 * so what a component announces only picks where it starts (2 MiB, 4 MiB
 * if rotational).  Each chunk of two pieces or more measures its own
 * positioning: its first piece's service time less what its later
 * pieces took for as many bytes (learn).  Every BM_RA_POS_SAMPLES chunks
 * the size doubles while that pays 3% at the lower quartile of their
 * positioning, and halves when doubling the half would not pay at the
 * upper quartile, down to two pieces (chunk_floor); the only bound above
 * is memory (the cap shared by the components' chunks) and, for a
 * component much slower than the others, its share of the window.
 * BM_RA_DEBUG=1 prints every decision and, at the end, each component's
 * size, speed, waits and stolen chunks.

 * Never stale.  A write drops every chunk it overlaps, and every chunk after
 * it in that stream, when it is submitted and again just before it is
 * acknowledged; so a chunk read before the write completed can never serve
 * a read issued after the acknowledgement.  Dropped chunks still in flight
 * are freed when they land.  Reads waiting on a dropped chunk are re-read
 * directly.  A chunk that fails is dropped the same way and its component
 * is reported (io.c fails it out if the direct read fails too).
 *
 * Lent buffers.  A caller that opts in (BM_IO_BORROW: the NBD server) gets
 * a hit as pointers into the chunks (up to BM_IO_SEGS of them) instead of
 * a copy into its buffer, and sends its reply from there.  Each such read
 * counts one loan on each chunk it points into (c->lent, under the lock);
 * a chunk dropped from its stream while lent (passed, overwritten, its
 * stream ended) is only detached: its buffer is not given back to the
 * chunk memory (chunkmem.c), so never refilled for another chunk (nor
 * poisoned, under ASan, as idle), until the last loan comes back
 * (bm_ra_release, once the reply is sent or dropped).  The data a reply
 * sends is thus exactly what a copy at the time of the hit would have
 * held: a part of a chunk's buffer is written only until its piece
 * lands, never once it served a read (a pending chunk serves only the
 * pieces that have landed, in a row from its start).  So a write that drops a lent chunk is concurrent with
 * the read that hit it, which may return the old data; a read issued
 * after the write's acknowledgement finds the chunk gone, as before.  A
 * lent chunk still counts in the memory cap (ra->bytes) and in nchunks,
 * so bm_ra_destroy waits for the loans too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "median.h"
#include "mirror.h"
#include "readahead.h"

#define RA_SLOTS_PER_COMP 2       /* chunks queued per component, at least */
#define RA_SLOTS_MAX 12            /* at most (by expected finish: pick_slot) */
#define RA_MIN_HITS 2
#define RA_WINDOW_START (4ull << 20)
#define RA_IDLE_MS 1000
#define RA_MEM_IDLE_MS 30000      /* chunk memory idle this long is given to
                                     the kernel lazily (MADV_FREE) */
#define RA_WARM_PER_TICK (64u << 20) /* chunk memory touched per tick
                                        before the first stream */
#define RA_REORDER_READS 8        /* a read this many of its lengths from a
                                     stream's front is the stream's */
#define RA_REORDER_QUIET 64       /* reads at the front with none behind:
                                     the kept distance halves */
#define RA_STALE_MS 50            /* a stream not read for this long since
                                     another began has ended (drop_stale) */
#define RA_EARN 64                /* a stream reads ahead at most this many
                                     times what its client has read */
#define RA_CHUNK_MIN (512u << 10)
#define RA_CHUNK_START (2u << 20)          /* memory, SSD, unknown */
#define RA_CHUNK_START_ROTATIONAL (4u << 20)
#define RA_DOUBLING_GAIN 1.03     /* a chunk doubles if that makes its
                                   * component 3% faster (learn) */
#define RA_STEAL_GAIN 0.7         /* steal when elsewhere is 30% sooner */
#define RA_PIECE (1u << 20)       /* a chunk is read in pieces of at least
                                     this, ... */
#define RA_PIECE_NS 10000000ull   /* ... as large as the component reads in
                                     10 ms (fewer requests from fast ones) */
#define RA_PIECES_MAX 16          /* ... and at most this many */
#define RA_PIECES_OUT 2           /* pieces a component holds at once */
#define RA_GONE_NS 1000000000ull  /* a component found gone or refusing
                                     takes no chunk for this long */

enum { CH_PENDING, CH_READY, CH_ERROR };

struct ra_chunk {
	struct bm_mirror *m;
	struct ra_stream *s;     /* NULL once dropped */
	uint64_t off;
	uint32_t len;
	struct bm_chunkbuf *mem; /* its buffer (buf is mem->base) */
	size_t charge;           /* counted in ra->bytes: mem's touched bytes */
	int state;
	int comp;
	bool idle_start;         /* its component had nothing else in flight */
	bool stolen;             /* a twin of a late chunk (never stolen again) */
	bool contiguous;         /* follows its component's previous chunk */
	bool short_cut;          /* shorter than its component's chunk size
	                          * (a stream's first, cut to RA_CHUNK_MIN, or
	                          * the device's last): teaches no speed */
	unsigned epoch;          /* its component's connection when issued */
	uint64_t t_issue;
	uint64_t q_mark;         /* its component's issued_cum before it */
	void *buf;
	unsigned lent;           /* reads served from buf and not released:
	                          * while > 0 the chunk is not freed */
	struct ra_chunk *next;   /* in the stream */
	struct ra_chunk *issue_next; /* on an issue list */
	/* Pieces: read back to back on the chunk's component; what has
	 * landed in a row from off is served before the rest lands. */
	uint32_t ready;          /* bytes from off landed, in a row */
	uint32_t landed;         /* bytes landed, in any order */
	uint32_t piece_len;      /* each piece's length (the last: the rest) */
	unsigned npieces;
	unsigned next_piece;     /* the next to send */
	struct ra_chunk *pq_next; /* in its component's queue (ra_comp) */
	unsigned pieces_left;    /* not landed: the chunk is freed only at 0 */
	uint64_t landed_mask;    /* pieces landed whole */
	bool failed;             /* a piece failed: the chunk is detached */
	bool retired;            /* dropped with pieces never sent */
	/* what its pieces took (learn): the first's service time, the
	 * later ones' summed, and their bytes; unmeasured if a piece of its
	 * component landed out of the order they were sent in, or its first
	 * piece found its component's queue empty (its time would hold the
	 * whole round trip, or another chunk's work) */
	bool unmeasured;
	uint64_t first_ns, rest_ns;
	uint32_t rest_bytes;
	struct ra_piece {
		struct bm_breq br;
		struct ra_chunk *c;
		uint64_t t_issue;
		uint64_t seq;       /* its component's sent_seq when pulled */
		struct ra_piece *sub_next; /* on a list to send */
	} piece[];
};

struct ra_wait {
	struct bm_io *io;
	uint64_t t0;
	struct ra_wait *next;
};


void bm_ra_init(struct bm_mirror *m)
{
	struct bm_readahead *ra = &m->ra;

	pthread_mutex_init(&ra->lock, NULL);
	bm_chunkmem_init(&ra->mem);
	if (!ra->cap)
		ra->cap = BM_RA_DEFAULT_CAP;
	bm_chunkmem_limit(&ra->mem, ra->cap);
	for (int i = 0; i < BM_MAX_COMPONENTS; i++)
		ra->comp[i].chunk = 0; /* chosen at the first chunk: chunk_size() */
}

/* A buffer for a chunk of len bytes from the read-ahead's memory (lock
 * held): warm if one is idle (chunkmem.c); NULL: no memory. */
static struct bm_chunkbuf *buf_get(struct bm_readahead *ra, uint32_t len)
{
	struct bm_chunkbuf *b = bm_chunkmem_get(&ra->mem, len, ra->cap);

	if (b) {
		ra->bytes += b->touched;
		/* (bm_ra_tick: not idle) */
		ra->idle_since_ms = 0;
		ra->soft_trimmed = false;
	}
	return b;
}

static void chunk_free(struct bm_readahead *ra, struct ra_chunk *c)
{
	ra->bytes -= c->charge;
	atomic_fetch_sub(&ra->nchunks, 1);
	bm_chunkmem_put(&ra->mem, c->mem, ra->cap);
	free(c);
}

/* The length of pieces for a component that reads a byte in ns_per_byte
 * (0: not measured yet): RA_PIECE, or what it reads in RA_PIECE_NS if
 * more (a power of two). */
static uint32_t piece_size(double ns_per_byte)
{
	uint32_t piece = RA_PIECE;

	while (ns_per_byte > 0 && piece < (1u << 28) &&
	       (double)piece * 2 * ns_per_byte <= (double)RA_PIECE_NS)
		piece *= 2;
	return piece;
}

/* A component's piece length: chosen at its first measure, then again
 * only at each chunk-size decision (learn), so that its floor
 * (chunk_floor) does not follow every chunk's speed (lock held). */
static uint32_t piece_of(struct bm_mirror *m, int comp)
{
	struct ra_comp *rc = &m->ra.comp[comp];

	if (!rc->piece && rc->ns_per_byte > 0)
		rc->piece = piece_size(rc->ns_per_byte);
	return rc->piece ? rc->piece : RA_PIECE;
}

/* A chunk of len bytes read as pieces of piece bytes (piece_of), not
 * yet in any list (lock held); NULL when memory (the cap, or the
 * system's) is short. */
static struct ra_chunk *chunk_alloc(struct bm_readahead *ra, uint32_t len,
                                    uint32_t piece)
{
	if (piece > len)
		piece = len ? len : RA_PIECE;
	if (len > (uint64_t)piece * RA_PIECES_MAX) /* (aligned as chunks are) */
		piece = ((len / RA_PIECES_MAX) + (64u << 10) - 1) & ~((64u << 10) - 1);
	unsigned n = len ? (len + piece - 1) / piece : 1;
	struct ra_chunk *c = calloc(1, sizeof(*c) + n * sizeof(c->piece[0]));

	if (!c || !(c->mem = buf_get(ra, len))) {
		free(c);
		return NULL;
	}
	c->buf = c->mem->base;
	c->charge = c->mem->touched;
	c->len = len;
	c->piece_len = piece;
	c->npieces = c->pieces_left = n;
	c->state = CH_PENDING;
	return c;
}

/* The read-ahead lets go of a chunk that has landed (lock held): freed
 * now, or by the last bm_ra_release if replies still send from it. */
static void chunk_drop(struct bm_readahead *ra, struct ra_chunk *c)
{
	if (!c->lent)
		chunk_free(ra, c);
}

/* Detaches c and every chunk after it from its stream (lock held). */
static void truncate_from(struct bm_readahead *ra, struct ra_stream *s,
                          struct ra_chunk *from)
{
	struct ra_chunk **pp = &s->head, *prev = NULL;

	while (*pp && *pp != from) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	*pp = NULL;
	s->tail = prev;
	s->ra_end = from->off;
	if (!s->head)
		s->ra_start = s->ra_end = 0;
	while (from) {
		struct ra_chunk *n = from->next;
		from->s = NULL;
		from->next = NULL;
		if (from->state != CH_PENDING)
			chunk_drop(ra, from);
		from = n;
	}
}

/* Frees the chunks wholly before `off` (the client has read past them). */
static void release_behind(struct bm_readahead *ra, struct ra_stream *s,
                           uint64_t off)
{
	while (s->head && s->head->off + s->head->len <= off) {
		struct ra_chunk *c = s->head;
		s->head = c->next;
		if (!s->head)
			s->tail = NULL;
		c->s = NULL;
		c->next = NULL;
		if (c->state != CH_PENDING)
			chunk_drop(ra, c);
		s->ra_start = s->head ? s->head->off : s->ra_end;
	}
	if (!s->head)
		s->ra_start = s->ra_end = 0;
}

/* Ends a stream; its waiting reads go to *fallback (lock held). */
static void stream_drop(struct bm_readahead *ra, struct ra_stream *s,
                        struct ra_wait **fallback)
{
	if (s->head)
		truncate_from(ra, s, s->head);
	while (s->waiting) {
		struct ra_wait *w = s->waiting;
		s->waiting = w->next;
		w->next = *fallback;
		*fallback = w;
	}
	memset(s, 0, sizeof(*s));
}

/* Whether component i takes chunks: ACTIVE, and its connection not seen
 * gone or refusing in the last RA_GONE_NS (until the event thread has
 * given it up, a refused submit fails at once, and the chunks freed so
 * would go to it again at once; it may also stay in service, the last
 * ACTIVE one, so only for a while) (lock held). */
static bool readable(struct bm_mirror *m, int i)
{
	const struct ra_comp *rc = &m->ra.comp[i];

	if (atomic_load(&m->comp[i].state) != BM_CS_ACTIVE)
		return false;
	return rc->gone_epoch != atomic_load(&m->comp[i].epoch) + 1 ||
	       bm_now_ns() - rc->gone_ns > RA_GONE_NS;
}

static uint32_t chunk_size(struct bm_mirror *m, int comp);

/* What the read-ahead learned of a component (its speed, chunk size,
 * piece length, positioning samples) is of the disk on the connection it
 * was measured on.  When the component's epoch moves (it reconnected, was
 * re-added, or a new component took a removed one's slot), it starts
 * again from what it says it is: a flat disk put where a seeking one was
 * would otherwise read its predecessor's 8 MiB chunks until its own first
 * decision, and a slow disk would be given a fast one's share of the
 * stream.  Chunks still in flight from the old connection land without
 * teaching anything (learn) (lock held). */
static void measures_follow_epoch(struct bm_mirror *m)
{
	for (int i = 0; i < m->ncomp; i++) {
		struct ra_comp *rc = &m->ra.comp[i];
		unsigned e = atomic_load(&m->comp[i].epoch);
		if (rc->measured_epoch == e)
			continue;
		rc->measured_epoch = e;
		rc->ns_per_byte = 0;
		rc->chunk = 0;
		rc->piece = 0;
		rc->npos = 0;
	}
}

/* When component i would finish `len` more bytes queued behind `ahead`
 * bytes still to do, from its measured service time per byte; 0 while it
 * has no measure (lock held). */
static uint64_t finish_after(struct bm_mirror *m, int i, uint64_t ahead,
                             uint64_t len, uint64_t now)
{
	struct ra_comp *rc = &m->ra.comp[i];

	if (rc->ns_per_byte <= 0)
		return 0;
	uint64_t from = rc->slots ? rc->head_start_ns : now;
	uint64_t t = from + (uint64_t)(rc->ns_per_byte * (double)(ahead + len));
	/* running late: at least a quarter of the last chunk is still to do */
	uint64_t floor = now + (uint64_t)(rc->ns_per_byte * (double)(ahead + len / 4));
	return t > floor ? t : floor;
}

/* When component i would finish a chunk of `len` issued now (lock held). */
static uint64_t finish_estimate(struct bm_mirror *m, int i, uint64_t len,
                                uint64_t now)
{
	struct ra_comp *rc = &m->ra.comp[i];
	return finish_after(m, i, rc->issued_cum - rc->done_cum, len, now);
}

/* Which component reads the stream's next chunk (at `off`; the client is
 * at s->next).  Once every readable component has a measured speed: the
 * one that would finish it first, counting what each has queued (earliest
 * finish), so that a fast component takes more chunks than a slow one.  If
 * that one has no free slot, another may take the chunk only if it would
 * deliver it before the client gets there (at the components' summed
 * speed, the fastest the client can go): a slow component gets the chunks
 * far enough ahead, never one the stream would then wait for; else -1
 * (wait for a slot) unless `beyond_slots`.  Until every component has a
 * measure: the one with a free slot and the fewest chunks in flight (ties
 * rotate); -1 if none is free. */
static int pick_slot(struct bm_mirror *m, struct ra_stream *s, uint64_t off,
                     bool beyond_slots)
{
	struct bm_readahead *ra = &m->ra;
	unsigned start = atomic_fetch_add(&m->rr_cursor, 1);
	uint64_t now = bm_now_ns(), best_t = 0, t[BM_MAX_COMPONENTS];
	double bytes_per_ns = 0;
	int best = -1;

	for (int i = 0; i < m->ncomp; i++) {
		if (!readable(m, i))
			continue;
		if (ra->comp[i].ns_per_byte <= 0) {
			bytes_per_ns = -1;
			break;
		}
		bytes_per_ns += 1.0 / ra->comp[i].ns_per_byte;
	}
	if (bytes_per_ns < 0) { /* not every component measured yet */
		for (int k = 0; k < m->ncomp; k++) {
			int i = (int)((start + (unsigned)k) % (unsigned)m->ncomp);
			if (!readable(m, i) ||
			    (!beyond_slots && ra->comp[i].slots >= RA_SLOTS_PER_COMP))
				continue;
			if (best < 0 || ra->comp[i].slots < ra->comp[best].slots)
				best = i;
		}
		return best;
	}
	for (int i = 0; i < m->ncomp; i++)
		t[i] = UINT64_MAX; /* a component that becomes readable meanwhile */
	for (int k = 0; k < m->ncomp; k++) {
		int i = (int)((start + (unsigned)k) % (unsigned)m->ncomp);
		if (!readable(m, i))
			continue;
		t[i] = finish_estimate(m, i, chunk_size(m, i), now);
		if (best < 0 || t[i] < best_t) {
			best = i;
			best_t = t[i];
		}
	}
	if (best < 0 || beyond_slots || ra->comp[best].slots < RA_SLOTS_MAX)
		return best;
	uint64_t ahead = off > s->next ? off - s->next : 0;
	uint64_t need = now + (uint64_t)((double)ahead / bytes_per_ns);
	int other = -1;
	for (int i = 0; i < m->ncomp; i++)
		if (i != best && t[i] != UINT64_MAX && readable(m, i) &&
		    ra->comp[i].slots < RA_SLOTS_MAX &&
		    t[i] + (uint64_t)(ra->comp[i].ns_per_byte * chunk_size(m, i)) / 4
		            <= need &&
		    (other < 0 || t[i] < t[other]))
			other = i;
	return other;
}

/* How many streams read ahead (lock held). */
static int streams_reading(struct bm_mirror *m)
{
	int n = 0;
	for (int i = 0; i < BM_RA_STREAMS; i++)
		n += m->ra.streams[i].used && m->ra.streams[i].hits >= RA_MIN_HITS;
	return n;
}

/* Ends every other stream whose client has gone, so that `keep` (a stream
 * that reads) gets the memory and the whole cap; true if any ended.
 * Gone: not read since before `keep` began, for RA_STALE_MS, with no read
 * waiting and no chunk still being read.  Without this, a dd run again
 * from the start read at the speed of one disk for a second: the first
 * run's read-ahead held the cap until that stream was idle 1 s.  Streams
 * that read at once are never ended here, even when one of them waits
 * long for a read the read-ahead did not take (it began before `keep`
 * did, or it has chunks in flight) (lock held). */
static bool drop_stale(struct bm_mirror *m, struct ra_stream *keep)
{
	long long now = bm_now_ms();
	struct ra_wait *none = NULL;
	bool dropped = false;

	for (int i = 0; i < BM_RA_STREAMS; i++) {
		struct ra_stream *s = &m->ra.streams[i];
		if (s == keep || !s->used || s->waiting ||
		    s->last_ms >= keep->born_ms || now - s->last_ms <= RA_STALE_MS)
			continue;
		bool pending = false;
		for (struct ra_chunk *c = s->head; c && !pending; c = c->next)
			pending = c->state == CH_PENDING;
		if (pending)
			continue;
		stream_drop(&m->ra, s, &none); /* (nothing waits: none stays NULL) */
		m->ra.ended++;
		dropped = true;
	}
	return dropped;
}

/* The largest chunk for a component.  The memory cap: every readable
 * component keeps two chunks in flight and the window holds two more each,
 * for every stream that reads ahead.
 * And, for a component clearly slower than the others (less than half
 * an equal share of the summed speed), its share: the window (at most
 * half the cap) is read by the components in proportion to their measured
 * speeds, so its chunk is at most half its share of the window; a larger
 * one would take longer than the client needs to get to it (lock held). */
static uint32_t chunk_bound(struct bm_mirror *m, int comp)
{
	int n = bm_readable_count(m), nstreams = streams_reading(m);
	uint64_t b = m->ra.cap / (4u * (uint64_t)(n > 0 ? n : 1) *
	                          (uint64_t)(nstreams > 1 ? nstreams : 1));
	double sum = 0;
	for (int i = 0; i < m->ncomp; i++)
		if (readable(m, i) && m->ra.comp[i].ns_per_byte > 0)
			sum += 1.0 / m->ra.comp[i].ns_per_byte;
	if (sum > 0 && m->ra.comp[comp].ns_per_byte > 0) {
		double share = 1.0 / m->ra.comp[comp].ns_per_byte / sum;
		if (share < 0.5 / (n > 0 ? n : 1)) {
			uint64_t by_speed = (uint64_t)((double)(m->ra.cap / 2) * share / 2);
			if (by_speed < b)
				b = by_speed;
		}
	}
	uint32_t p = RA_CHUNK_MIN;

	while ((uint64_t)p * 2 <= b && p < (1u << 30))
		p *= 2;
	return p;
}

/* Where a component's chunk size starts: larger on a disk that says it
 * rotates (its backend read under a user count: a remove may close it). */
static uint32_t chunk_start(struct bm_mirror *m, int comp)
{
	struct bm_backend *be = bm_comp_get(&m->comp[comp]);
	bool rotational = be && be->rotational;

	if (be)
		bm_comp_put(&m->comp[comp]);
	return rotational ? RA_CHUNK_START_ROTATIONAL : RA_CHUNK_START;
}

/* The smallest chunk a component reads: two of its pieces, so that each
 * chunk measures its positioning (learn), within the memory bound (lock
 * held).  Pieces are as long as the component reads in RA_PIECE_NS, so a
 * fast disk's chunks start longer (fewer requests). */
static uint32_t chunk_floor(struct bm_mirror *m, int comp)
{
	uint32_t floor = 2 * piece_of(m, comp), bound = chunk_bound(m, comp);

	return floor < bound ? floor : bound;
}

/* A component's chunk size.  The first time, from what it says it is: a
 * rotating disk starts larger, since it surely needs long transfers; the
 * measurement (learn) takes it from there, within its floor and the
 * memory bound (lock held). */
static uint32_t chunk_size(struct bm_mirror *m, int comp)
{
	struct ra_comp *rc = &m->ra.comp[comp];
	uint32_t was = rc->chunk;

	if (!rc->chunk)
		rc->chunk = chunk_start(m, comp);
	uint32_t floor = chunk_floor(m, comp), bound = chunk_bound(m, comp);
	while (rc->chunk < floor)
		rc->chunk *= 2;
	while (rc->chunk > bound)
		rc->chunk /= 2;
	if (rc->chunk != was)
		rc->npos = 0; /* measure again at the new size */
	return rc->chunk;
}

/* The stream's window, but never less than what keeps every component
 * busy while the client waits for the oldest chunk: a chunk per component
 * in flight, one more each ready, and the one being read (lock held). */
static uint64_t window_of(struct bm_mirror *m, struct ra_stream *s)
{
	uint64_t floor = 0;

	for (int i = 0; i < m->ncomp; i++)
		floor += 2ull * (m->ra.comp[i].chunk ? m->ra.comp[i].chunk
		                                      : RA_CHUNK_MIN);
	/* streams share the cap: none takes more than its part */
	int n = streams_reading(m);
	uint64_t w = s->window, part = m->ra.cap / 2 / (uint64_t)(n > 1 ? n : 1);
	if (w > part)
		w = part;
	return w > floor ? w : floor;
}

/* Issues the stream's next chunk to component comp; false when memory
 * (the cap) or the system has none (lock held). */
static bool add_chunk(struct bm_mirror *m, struct ra_stream *s, int comp,
                      struct ra_chunk **issue)
{
	struct bm_readahead *ra = &m->ra;

	uint32_t len = chunk_size(m, comp), full = len;
	/* chunks start and end on multiples of the smallest chunk size
	 * (aligned transfers), and are full-size after the first: a
	 * component's measure is of chunks of its size (learn) */
	uint64_t end = s->ra_end % RA_CHUNK_MIN
	                       ? (s->ra_end / RA_CHUNK_MIN + 1) * RA_CHUNK_MIN
	                       : s->ra_end + len;
	if (end > m->size)
		end = m->size;
	len = (uint32_t)(end - s->ra_end);
	if (ra->bytes + len > ra->cap)
		return false;
	struct ra_chunk *c = chunk_alloc(ra, len, piece_of(m, comp));
	if (!c)
		return false;
	c->m = m;
	c->s = s;
	c->off = s->ra_end;
	c->comp = comp;
	c->short_cut = len < full;
	c->idle_start = ra->comp[comp].slots == 0 &&
	                atomic_load(&m->comp[comp].inflight) == 0;
	if (ra->comp[comp].slots++ == 0) {
		struct ra_comp *rc = &ra->comp[comp];
		rc->head_start_ns = bm_now_ns();
		/* idle since its last chunk, while a stream read ahead */
		if (rc->last_done_ns && rc->head_start_ns - rc->last_done_ns < 1000000000ull)
			rc->idle_ns += rc->head_start_ns - rc->last_done_ns;
	}
	c->q_mark = ra->comp[comp].issued_cum;
	ra->comp[comp].issued_cum += len;
	c->contiguous = c->off == ra->comp[comp].issue_end;
	ra->comp[comp].issue_end = c->off + len;
	atomic_fetch_add(&ra->nchunks, 1);
	if (s->tail)
		s->tail->next = c;
	else
		s->head = c;
	s->tail = c;
	s->ra_end += len;
	c->issue_next = *issue;
	*issue = c;
	return true;
}

/* add_chunk, and once per extend, when memory is short, again after the
 * streams whose client has gone gave theirs up (lock held). */
static bool add_chunk_reclaim(struct bm_mirror *m, struct ra_stream *s,
                              int comp, struct ra_chunk **issue,
                              bool *reclaimed)
{
	if (add_chunk(m, s, comp, issue))
		return true;
	if (*reclaimed)
		return false;
	*reclaimed = true;
	return drop_stale(m, s) && add_chunk(m, s, comp, issue);
}

/* A readable component with no chunk in flight, or -1 (lock held). */
static int idle_comp(struct bm_mirror *m)
{
	unsigned start = atomic_load(&m->rr_cursor);

	for (int k = 0; k < m->ncomp; k++) {
		int i = (int)((start + (unsigned)k) % (unsigned)m->ncomp);
		if (readable(m, i) && m->ra.comp[i].slots == 0)
			return i;
	}
	return -1;
}

/* Whether s has earned a chunk of comp's size at its read-ahead's end
 * (RA_EARN: what it reads ahead follows what its client has read, so a
 * few small reads that happen to look sequential do not take the cap)
 * (lock held). */
static bool earned(struct bm_mirror *m, struct ra_stream *s, int comp)
{
	uint64_t end = s->ra_end + chunk_size(m, comp);

	return end <= s->next || end - s->next <= RA_EARN * s->consumed;
}

/* Issues chunks until `target` is read ahead or nothing is free; up to
 * `must` chunks are issued even past the slot limit, since a client read
 * waits for them (several streams can hold every slot).  Then, work
 * conserving: a component left with nothing to do takes the next chunk
 * even past the window, up to twice it (within the cap): a disk that
 * idles loses that time for good, and the window stops while the client
 * waits on another component's chunk (a slow disk's, or one a busy
 * machine delivers late).  New chunks are added to *issue (lock held). */
static void extend(struct bm_mirror *m, struct ra_stream *s, uint64_t target,
                   uint64_t must, struct ra_chunk **issue)
{
	uint64_t beyond = s->next + 2 * window_of(m, s);

	if (target > m->size)
		target = m->size;
	if (beyond > m->size)
		beyond = m->size;
	bool reclaimed = false;

	while (s->ra_end < target) {
		int comp = pick_slot(m, s, s->ra_end, s->ra_end < must);
		if (comp < 0 || !earned(m, s, comp) ||
		    !add_chunk_reclaim(m, s, comp, issue, &reclaimed))
			return;
	}
	while (s->ra_end < beyond) {
		int comp = idle_comp(m);
		if (comp < 0 || !earned(m, s, comp) ||
		    !add_chunk_reclaim(m, s, comp, issue, &reclaimed))
			return;
	}
}

/* 1: every chunk over [off, off+len) has landed there (READY, or its
 * pieces there in a row from its start); 0: some pending; -1: not
 * covered or a chunk failed (lock held). */
static int coverage(struct ra_stream *s, uint64_t off, uint32_t len)
{
	uint64_t end = off + len;
	int all_ready = 1;

	if (off < s->ra_start || end > s->ra_end || !s->head)
		return -1;
	for (struct ra_chunk *c = s->head; c && c->off < end; c = c->next) {
		if (c->off + c->len <= off)
			continue;
		if (c->state == CH_ERROR)
			return -1;
		if (c->state == CH_PENDING &&
		    (c->off + c->len < end ? c->off + c->len : end) >
		            c->off + c->ready)
			all_ready = 0; /* (its landed prefix is not enough) */
	}
	return all_ready;
}

static void copy_out(struct ra_stream *s, struct bm_io *io)
{
	uint64_t end = io->offset + io->length;

	for (struct ra_chunk *c = s->head; c && c->off < end; c = c->next) {
		uint64_t a = c->off > io->offset ? c->off : io->offset;
		uint64_t b = c->off + c->len < end ? c->off + c->len : end;
		if (a < b)
			memcpy((char *)io->buf + (a - io->offset),
			       (char *)c->buf + (a - c->off), b - a);
	}
}

/* Serves a covered read (coverage 1: only landed bytes): lends the chunks'
 * buffers if the caller accepts it and the read spans at most BM_IO_SEGS
 * chunks, else copies (lock held). */
static void serve_out(struct bm_readahead *ra, struct ra_stream *s,
                      struct bm_io *io)
{
	uint64_t end = io->offset + io->length;
	unsigned n = 0;

	if (io->flags & BM_IO_BORROW) {
		for (struct ra_chunk *c = s->head; c && c->off < end; c = c->next)
			if (c->off + c->len > io->offset && ++n > BM_IO_SEGS)
				break;
	}
	if (!n || n > BM_IO_SEGS) {
		copy_out(s, io);
		return;
	}
	n = 0;
	for (struct ra_chunk *c = s->head; c && c->off < end; c = c->next) {
		uint64_t a = c->off > io->offset ? c->off : io->offset;
		uint64_t b = c->off + c->len < end ? c->off + c->len : end;
		if (a >= b)
			continue;
		c->lent++;
		io->seg[n++] = (struct bm_io_seg){(char *)c->buf + (a - c->off),
		                                  (uint32_t)(b - a), c};
	}
	io->nseg = n;
	ra->lent++;
}

void bm_ra_release(const struct bm_io_seg *seg, unsigned n)
{
	struct ra_chunk *c0 = seg[0].ref;
	struct bm_readahead *ra = &c0->m->ra;

	/* a last loan frees the chunk (nchunks falls): bm_ra_destroy waits
	 * for this call to end too, as for piece_done */
	atomic_fetch_add(&ra->landing, 1);
	pthread_mutex_lock(&ra->lock);
	for (unsigned i = 0; i < n; i++) {
		struct ra_chunk *c = seg[i].ref;
		/* dropped meanwhile (c->s NULL) and this was its last loan:
		 * free it now, unless pieces are still to land (a chunk is lent
		 * from its landed prefix while the rest is read) */
		if (--c->lent == 0 && !c->s && c->pieces_left == 0)
			chunk_free(ra, c);
	}
	pthread_mutex_unlock(&ra->lock);
	atomic_fetch_sub(&ra->landing, 1);
}

static void piece_done(struct bm_breq *br, int result);

/* A chunk goes to its component as pieces, in order, at most
 * RA_PIECES_OUT at once: the component reads them as one sequential run,
 * and the client is served from each as it lands, not only once the whole
 * chunk has (a stream's first read, and its last: the client needs only
 * part of its final chunk).  Not all at once: servers with several
 * threads (nbdkit's, qemu-nbd's) serve what they hold in any order, and
 * on a disk that positions, pieces read out of order cost a seek each
 * (all of a 4-piece chunk's pieces and the next chunk's at once: two
 * unannounced rotating disks 1.87 -> 1.79 of one).  Appends to *tailp
 * the pieces of comp's queued chunks that may be sent now (lock held). */
static void pull_pieces(struct bm_readahead *ra, int comp,
                        struct ra_piece ***tailp)
{
	struct ra_comp *rc = &ra->comp[comp];

	while (rc->pieces_out < RA_PIECES_OUT && rc->pq_head) {
		struct ra_chunk *c = rc->pq_head;
		if (!c->s) {
			/* dropped (overwritten, passed, its stream ended, stolen):
			 * what is not sent yet is not read at all */
			uint64_t sent = (uint64_t)c->next_piece * c->piece_len;
			unsigned unsent = c->npieces - c->next_piece;
			rc->pq_head = c->pq_next;
			if (!rc->pq_head)
				rc->pq_tail = NULL;
			c->pq_next = NULL;
			c->next_piece = c->npieces;
			c->retired = true;
			rc->done_cum += sent < c->len ? c->len - sent : 0;
			c->pieces_left -= unsent;
			if (c->pieces_left == 0) {
				rc->slots--;
				if (!c->lent)
					chunk_free(ra, c);
			}
			continue;
		}
		struct ra_piece *p = &c->piece[c->next_piece++];
		if (p == c->piece && rc->pieces_out == 0)
			c->unmeasured = true; /* (learn) */
		p->seq = rc->sent_seq++;
		if (c->next_piece == c->npieces) {
			rc->pq_head = c->pq_next;
			if (!rc->pq_head)
				rc->pq_tail = NULL;
			c->pq_next = NULL;
		}
		rc->pieces_out++;
		p->sub_next = NULL;
		**tailp = p;
		*tailp = &p->sub_next;
	}
}

/* Queues chunk c on its component, its pieces ready to send (lock held). */
static void enqueue_chunk(struct bm_mirror *m, struct ra_chunk *c)
{
	struct ra_comp *rc = &m->ra.comp[c->comp];
	uint64_t plen = c->piece_len;

	c->t_issue = bm_now_ns();
	c->epoch = atomic_load(&m->comp[c->comp].epoch);
	for (unsigned k = 0; k < c->npieces; k++) {
		struct ra_piece *p = &c->piece[k];
		uint64_t at = (uint64_t)k * plen;
		p->c = c;
		p->br.op = BM_BOP_READ;
		p->br.flags = 0;
		p->br.offset = c->off + at;
		p->br.length = (uint32_t)(c->len - at < plen ? c->len - at : plen);
		p->br.buf = (char *)c->buf + at;
		p->br.done = piece_done;
		p->br.opaque = p;
	}
	if (rc->pq_tail)
		rc->pq_tail->pq_next = c;
	else
		rc->pq_head = c;
	rc->pq_tail = c;
}

/* Sends pieces (no lock held).  A piece's chunk may be freed as soon as
 * that piece is sent (its answer may come at once, on another thread). */
static void send_pieces(struct bm_mirror *m, struct ra_piece *list)
{
	while (list) {
		struct ra_piece *p = list;
		list = p->sub_next;
		struct bm_component *comp = &m->comp[p->c->comp];
		p->br.unanswered = false;
		p->t_issue = bm_now_ns();
		bm_comp_enter(comp, p->t_issue);
		struct bm_backend *be = bm_comp_get(comp);
		int err = -ENOTCONN;
		if (be) {
			/* the connection the chunk was queued for, still
			 * serving: a piece pulled after the component was given
			 * up, reconnected or its slot reused must not read
			 * another disk (or a copy still being made) into a
			 * chunk whose first pieces came from this one */
			if (atomic_load(&comp->state) != BM_CS_ACTIVE ||
			    atomic_load(&comp->epoch) != p->c->epoch)
				err = -ESTALE;
			else
				err = be->ops->submit(be, &p->br);
			bm_comp_put(comp);
		}
		if (err < 0) {
			p->br.unanswered = true;
			piece_done(&p->br, err);
		}
	}
}

static void issue_all(struct bm_mirror *m, struct ra_chunk *list)
{
	/* The list was built by pushing at its head: queue in the order the
	 * chunks were made (by offset), so that each component receives its
	 * chunks in stream order (the nearest first, and sequential runs stay
	 * sequential on its disk). */
	struct ra_chunk *fifo = NULL;
	struct ra_piece *send = NULL, **tail = &send;

	if (!list)
		return;
	while (list) {
		struct ra_chunk *c = list;
		list = c->issue_next;
		c->issue_next = fifo;
		fifo = c;
	}
	pthread_mutex_lock(&m->ra.lock);
	while (fifo) {
		struct ra_chunk *c = fifo;
		fifo = c->issue_next;
		enqueue_chunk(m, c);
		pull_pieces(&m->ra, c->comp, &tail);
	}
	pthread_mutex_unlock(&m->ra.lock);
	send_pieces(m, send);
}

static void finish_reads(struct bm_mirror *m, struct ra_wait *done_list,
                         struct ra_wait *fallback)
{
	while (done_list) {
		struct ra_wait *w = done_list;
		done_list = w->next;
		struct bm_io *io = w->io;
		uint64_t t0 = w->t0;
		free(w);
		bm_io_end(m, io, t0, 0);
		bm_io_leave(m);
		io->done(io, 0);
	}
	while (fallback) {
		struct ra_wait *w = fallback;
		fallback = w->next;
		struct bm_io *io = w->io;
		free(w);
		/* the direct read counts itself in the mirror's row */
		bm_queue_leave(&m->queue, &m->stats);
		int err = bm_io_read_direct(m, io);
		bm_io_leave(m);
		if (err < 0)
			io->done(io, err);
	}
}

/* Sorts a stream's waiting reads into served, still waiting, and those to
 * read directly (lock held). */
static void check_waiters(struct bm_readahead *ra, struct ra_stream *s,
                          struct ra_wait **done_list,
                          struct ra_wait **fallback)
{
	struct ra_wait **pp = &s->waiting;
	uint64_t now = bm_now_ns();

	while (*pp) {
		struct ra_wait *w = *pp;
		int cov = coverage(s, w->io->offset, w->io->length);
		if (cov == 0) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		if (cov > 0) {
			serve_out(ra, s, w->io);
			ra->wait_ns += now - w->t0;
			ra->served++;
			ra->served_bytes += w->io->length;
			w->next = *done_list;
			*done_list = w;
		} else {
			w->next = *fallback;
			*fallback = w;
		}
	}
}

static bool ra_debug(void)
{
	static int on = -1;
	if (on < 0)
		on = getenv("BM_RA_DEBUG") != NULL;
	return on;
}

/* Whether doubling a chunk of len bytes makes its component at least
 * RA_DOUBLING_GAIN faster, when each chunk costs pos_ns of positioning
 * and npb ns per byte of transfer: with x = pos / transfer, a chunk twice
 * as long moves 2 (1 + x) / (2 + x) times as many bytes per second. */
static bool doubling_pays(uint32_t len, double pos_ns, double npb)
{
	double x = pos_ns / ((double)len * npb);

	return x > 0 && 2 * (1 + x) / (2 + x) >= RA_DOUBLING_GAIN;
}

/* Learns from chunk c, landed whole at t_done (lock held): the
 * component's service time per byte (it feeds the assignment, pick_slot,
 * and the lateness estimate, steal_late), and its chunk size.  A chunk's
 * service time runs from when the component could start it (its issue,
 * or the previous chunk's landing if it was still busy) to its landing.
 * A chunk cut short (short_cut) teaches no speed: its time is mostly the
 * component's latency per request.
 *
 * The chunk size: a chunk costs positioning plus its bytes' transfer.
 * Each chunk read in order as two pieces or more measures both on its
 * own: its first piece's service time is positioning plus transfer, its
 * later pieces' (each from the previous one's landing: they were queued
 * behind it) transfer only.  Measured within one chunk, a slow drift of
 * the machine (a fresh server warming up) cancels, which comparing the
 * throughput of whole chunks of two sizes measured one after the other
 * did not (HACKING "Chunk size and the end of a stream").  Every
 * BM_RA_POS_SAMPLES chunks the component's size doubles if that pays
 * (doubling_pays) at the lower quartile of their positioning, and halves
 * if doubling the half would not pay at the upper quartile: between the
 * two it stays, so noise does not walk it up and down.  The floor is two
 * pieces (chunk_floor: a smaller chunk measures nothing), the ceiling the
 * memory bound (chunk_bound).  Not measured: a short tail chunk, one of
 * another size, a twin, one that found its disk idle (the disk's own
 * read-ahead may have served part of it), one that continued its
 * component's previous chunk (no positioning), one marked unmeasured (a
 * piece of its component landed out of the order they were sent in, or
 * its first piece found the component's queue empty). */
static void learn(struct bm_mirror *m, int comp, struct ra_chunk *c,
                  uint64_t t_done)
{
	struct ra_comp *rc = &m->ra.comp[comp];
	uint64_t start = c->t_issue > rc->last_done_ns ? c->t_issue
	                                               : rc->last_done_ns;

	rc->last_done_ns = t_done;
	if (t_done <= start || c->epoch != rc->measured_epoch)
		return; /* (a chunk of an earlier connection: measures_follow_epoch) */
	/* A short chunk's time is mostly the component's latency per request:
	 * 256 KiB at the start of a stream from a 400 MiB/s disk with 2 ms of
	 * latency measured 83 MB/s, and as the first measure it sent the
	 * stream's next 24 MiB to the other component while this one idled. */
	if (c->short_cut)
		return;
	double npb = (double)(t_done - start) / (double)c->len;
	if (rc->ns_per_byte <= 0) {
		rc->ns_per_byte = npb;
		if (ra_debug())
			fprintf(stderr, "ra: comp %d speed first measured on a "
			        "%u-byte chunk: %.1f MB/s\n", comp, c->len,
			        1e3 / npb);
	} else if (!c->idle_start)
		rc->ns_per_byte = 0.75 * rc->ns_per_byte + 0.25 * npb;
	if (c->len != chunk_size(m, comp) || c->stolen || c->idle_start ||
	    c->contiguous || c->npieces < 2 || c->unmeasured || !c->first_ns ||
	    !c->rest_ns || !c->rest_bytes)
		return;
	double xfer = (double)c->rest_ns / (double)c->rest_bytes;
	rc->pos_ns[rc->npos] = (double)c->first_ns - xfer * (double)c->piece_len;
	rc->xfer_npb[rc->npos] = xfer;
	if (++rc->npos < BM_RA_POS_SAMPLES)
		return;
	rc->npos = 0;
	double pos[BM_RA_POS_SAMPLES], tx[BM_RA_POS_SAMPLES];
	memcpy(pos, rc->pos_ns, sizeof(pos));
	memcpy(tx, rc->xfer_npb, sizeof(tx));
	bm_sort_doubles(pos, BM_RA_POS_SAMPLES);
	bm_sort_doubles(tx, BM_RA_POS_SAMPLES);
	double q1 = pos[BM_RA_POS_SAMPLES / 4],
	       q3 = pos[BM_RA_POS_SAMPLES - 1 - BM_RA_POS_SAMPLES / 4],
	       xfer_med = tx[BM_RA_POS_SAMPLES / 2];
	rc->piece = piece_size(rc->ns_per_byte); /* (its floor follows) */
	uint32_t measured = rc->chunk, floor = chunk_floor(m, comp),
	         bound = chunk_bound(m, comp);
	const char *what = "keep";
	if ((uint64_t)measured * 2 <= bound &&
	    doubling_pays(measured, q1, xfer_med)) {
		rc->chunk = measured * 2;
		what = "double: doubling pays";
	} else if (measured / 2 >= floor &&
	           !doubling_pays(measured / 2, q3, xfer_med)) {
		rc->chunk = measured / 2;
		what = "halve: doubling the half would not pay";
	}
	if (ra_debug())
		fprintf(stderr, "ra: comp %d chunk %u: positioning %.2f ms "
		        "(quartiles %.2f %.2f), transfer %.1f MB/s -> chunk %u %s "
		        "(floor %u, bound %u, rotational %d)\n", comp, measured,
		        pos[BM_RA_POS_SAMPLES / 2] / 1e6, q1 / 1e6, q3 / 1e6,
		        1e3 / xfer_med, rc->chunk, what, floor, bound,
		        chunk_start(m, comp) == RA_CHUNK_START_ROTATIONAL);
}

/* A client read waits for chunk c: if another component would deliver it
 * clearly sooner than c's own (by their measured speeds and queues),
 * read it there too, as a twin that takes c's place in the stream; c is
 * freed when it lands.  So a stream never waits on a slow component for
 * data a fast one could have fetched (lock held). */
static void steal_late(struct bm_mirror *m, struct ra_stream *s,
                       struct ra_chunk *c, struct ra_chunk **issue)
{
	struct bm_readahead *ra = &m->ra;
	uint64_t now = bm_now_ns();

	if (c->state != CH_PENDING || c->stolen || ra->bytes + c->len > ra->cap)
		return;
	struct ra_comp *own = &ra->comp[c->comp];
	uint64_t ahead = c->q_mark > own->done_cum ? c->q_mark - own->done_cum : 0;
	uint64_t t_own = finish_after(m, c->comp, ahead, c->len - c->landed, now);
	if (!t_own)
		return;
	int best = -1;
	uint64_t best_t = 0;
	for (int i = 0; i < m->ncomp; i++) {
		if (i == c->comp || !readable(m, i) ||
		    ra->comp[i].slots > RA_SLOTS_MAX)
			continue;
		uint64_t t = finish_estimate(m, i, c->len, now);
		if (t && (best < 0 || t < best_t)) {
			best = i;
			best_t = t;
		}
	}
	if (best < 0 || (double)(best_t - now) >=
	                         (double)(t_own - now) * RA_STEAL_GAIN)
		return;
	struct ra_chunk *n = chunk_alloc(ra, c->len, piece_of(m, best));
	if (!n)
		return;
	n->m = m;
	n->s = s;
	n->off = c->off;
	n->comp = best;
	n->stolen = true;
	n->short_cut = c->short_cut; /* (as short, so as little to learn) */
	if (ra->comp[best].slots++ == 0)
		ra->comp[best].head_start_ns = now;
	n->q_mark = ra->comp[best].issued_cum;
	ra->comp[best].issued_cum += n->len;
	ra->comp[c->comp].steals++;
	atomic_fetch_add(&ra->nchunks, 1);
	/* n takes c's place */
	struct ra_chunk **pp = &s->head, *prev = NULL;
	while (*pp != c) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	n->next = c->next;
	*pp = n;
	if (s->tail == c)
		s->tail = n;
	(void)prev;
	c->s = NULL;
	c->next = NULL;
	if (ra_debug())
		fprintf(stderr, "ra: chunk at %llu late on comp %d (%.1f ms left): "
		        "re-read on comp %d (%.1f ms)\n",
		        (unsigned long long)c->off, c->comp,
		        (double)(t_own - now) / 1e6, best,
		        (double)(best_t - now) / 1e6);
	n->issue_next = *issue;
	*issue = n;
}

/* The first chunk under [off, off+len) whose part there has not landed
 * (lock held). */
static struct ra_chunk *first_pending(struct ra_stream *s, uint64_t off,
                                      uint64_t len)
{
	for (struct ra_chunk *c = s->head; c && c->off < off + len; c = c->next)
		if (c->off + c->len > off && c->state == CH_PENDING &&
		    (c->off + c->len < off + len ? c->off + c->len : off + len) >
		            c->off + c->ready)
			return c;
	return NULL;
}

/* A piece has landed (a backend thread).  Its bytes count as done on its
 * component at once (the queue estimates); the landed prefix grows and
 * the reads waiting on it are served.  A failed piece detaches its chunk
 * (and what follows it) from the stream at once: the reads waiting there
 * are read directly.  The chunk's last piece frees its slot, is measured
 * (learn: the whole chunk, from its issue) and lets the streams go on; a
 * detached chunk is freed then, or by its last loan. */
static void piece_done(struct bm_breq *br, int result)
{
	struct ra_piece *p = br->opaque;
	struct ra_chunk *c = p->c;
	struct bm_mirror *m = c->m;
	struct bm_readahead *ra = &m->ra;
	struct bm_component *comp = &m->comp[c->comp];
	struct ra_chunk *issue = NULL;
	struct ra_piece *send = NULL, **tail = &send;
	struct ra_wait *done_list = NULL, *fallback = NULL;
	uint64_t t = bm_now_ns();
	int comp_index = c->comp;
	unsigned k = (unsigned)(p - c->piece);
	uint64_t p_off = br->offset, p_len = br->length;
	unsigned c_epoch = c->epoch;
	bool first_failure = false;

	/* before c can be freed (and nchunks fall): bm_ra_destroy waits for
	 * this call to end, not only for the chunk to be freed */
	atomic_fetch_add(&ra->landing, 1);
	bm_comp_leave(comp, p->t_issue, BM_BOP_READ, !br->unanswered);
	bm_stats_account(&comp->stats, BM_STAT_READ, br->length, t - p->t_issue,
	                 result);
	pthread_mutex_lock(&ra->lock);
	measures_follow_epoch(m);
	struct ra_comp *rc = &ra->comp[comp_index];
	rc->done_cum += p_len;
	rc->head_start_ns = t; /* the next one in its queue starts now */
	rc->pieces_out--;
	/* this piece's service time: from when its component could start it
	 * (its send, or the landing of the piece sent before it; t was read
	 * before the lock, so another landing may have come in between) */
	if (!br->unanswered) {
		uint64_t from = p->t_issue > rc->piece_done_ns ? p->t_issue
		                                               : rc->piece_done_ns;
		if (p->seq != rc->land_seq || t <= from)
			c->unmeasured = true;
		else if (k == 0)
			c->first_ns = t - from;
		else {
			c->rest_ns += t - from;
			c->rest_bytes += (uint32_t)p_len;
		}
		if (p->seq >= rc->land_seq)
			rc->land_seq = p->seq + 1;
		if (t > rc->piece_done_ns)
			rc->piece_done_ns = t;
	}
	pull_pieces(ra, comp_index, &tail);
	if (result == 0) {
		c->landed_mask |= 1ull << k;
		c->landed += (uint32_t)p_len;
		while (c->ready < c->len &&
		       (c->landed_mask >> (c->ready / c->piece_len)) & 1) {
			uint32_t left = c->len - c->ready;
			c->ready += left < c->piece_len ? left : c->piece_len;
		}
	} else {
		if (bm_error_is_gone(result) || br->unanswered) {
			rc->gone_epoch = c_epoch + 1;
			rc->gone_ns = t;
		}
		if (!c->failed)
			first_failure = true;
		c->failed = true;
	}
	bool last = --c->pieces_left == 0;
	if (last) {
		rc->slots--;
		if (!c->failed && !c->retired)
			learn(m, comp_index, c, t);
		else if (!c->failed)
			rc->last_done_ns = t; /* (the next is timed from here) */
	}
	struct ra_stream *s = c->s;
	if (!s) {
		if (last && !c->lent)
			chunk_free(ra, c); /* dropped while in flight */
	} else {
		bool ok = !c->failed;
		if (last)
			c->state = ok ? CH_READY : CH_ERROR;
		if (first_failure)
			truncate_from(ra, s, c); /* (may free c if it landed) */
		check_waiters(ra, s, &done_list, &fallback);
		if (last && ok && s->used)
			extend(m, s, s->next + window_of(m, s), 0, &issue);
	}
	if (last) {
		/* Reads still waiting: is the chunk they wait for late? */
		for (int i = 0; i < BM_RA_STREAMS; i++) {
			struct ra_stream *o = &ra->streams[i];
			for (struct ra_wait *w = o->waiting; w; w = w->next) {
				struct ra_chunk *q = first_pending(o, w->io->offset,
				                                   w->io->length);
				if (q)
					steal_late(m, o, q, &issue);
			}
		}
		/* A freed slot may let any stream go on; which goes first
		 * rotates. */
		for (int i = 0; i < BM_RA_STREAMS; i++) {
			struct ra_stream *o =
				&ra->streams[(ra->turn + i) % BM_RA_STREAMS];
			if (o->used && o->head)
				extend(m, o, o->next + window_of(m, o), 0, &issue);
		}
		ra->turn++;
	}
	pthread_mutex_unlock(&ra->lock);
	/* A component that went away is disconnected; one that answered with
	 * an error is mended by the direct read the client falls back to. */
	if (result < 0 && bm_error_is_gone(result)) {
		unsigned ep[BM_MAX_COMPONENTS];
		for (int i = 0; i < m->ncomp; i++)
			ep[i] = atomic_load(&m->comp[i].epoch);
		ep[comp_index] = c_epoch;
		bm_ev_fail(m, 1u << comp_index, ep, "read error (read-ahead)", result,
		           p_off, p_len, NULL, NULL);
	}
	send_pieces(m, send);
	issue_all(m, issue);
	finish_reads(m, done_list, fallback);
	atomic_fetch_sub(&ra->landing, 1);
}

/* The stream this read belongs to, or a slot for a new one (lock held). */
/* Out of order: a file system's reads through a loop device arrive
 * several at a time (1 MiB and 256 KiB from the kernel's read-ahead), and
 * a read often lands a few reads' lengths past the stream's front, the
 * gap filled a moment later (up to ~6 MiB behind the front, seen with
 * nbdfuse).  A read up to RA_REORDER_READS of its own length ahead of the
 * front belongs to the stream (AHEAD).  One behind the front by up to
 * that, or half the stream's window, and outside its chunks is a
 * straggler: read directly, and it must not start a stream of its own,
 * which would take the read-ahead away from the real one.  A small read
 * far from every stream (random I/O) is neither; *dist: how far from the
 * front (lock held).  Near several streams, a read goes to the one with
 * the most sequential reads, then the nearest: a file's metadata read
 * just ahead of its data starts a stream of one read, whose front is
 * nearer to the data's next reads than the data stream's (they come out
 * of order); those reads went to it, and the two streams took turns,
 * each reading ahead over the other's range. */
enum { FAR, AHEAD, STRAGGLER };
static int near_front(const struct ra_stream *s, const struct bm_io *io,
                      uint64_t *dist)
{
	uint64_t ahead = (uint64_t)io->length * RA_REORDER_READS;
	uint64_t behind = ahead > s->window / 2 ? ahead : s->window / 2;

	if (io->offset > s->next && io->offset <= s->next + ahead) {
		*dist = io->offset - s->next;
		return AHEAD;
	}
	if (io->offset < s->next && io->offset + behind >= s->next) {
		*dist = s->next - io->offset;
		return STRAGGLER;
	}
	return FAR;
}

/* A read of len bytes behind s's front by lag: s keeps its chunks that
 * far behind (release_behind; at most half its part of the window).  The
 * distance grows at most twice per such read from what reads of that
 * length need, so a small read far behind (metadata, another client)
 * cannot make a stream keep much; it halves after RA_REORDER_QUIET reads
 * at the front with none behind near it (lock held). */
static void learn_reorder(struct ra_stream *s, uint64_t lag, uint32_t len)
{
	uint64_t base = (uint64_t)len * RA_REORDER_READS;
	uint64_t most = 2 * (s->reorder > base ? s->reorder : base);

	if (lag > most)
		lag = most;
	if (lag > s->window / 2)
		lag = s->window / 2;
	if (lag * 2 >= s->reorder)
		s->reorder_quiet = 0; /* the distance kept is still needed */
	if (lag > s->reorder)
		s->reorder = lag;
}

static struct ra_stream *find_stream(struct bm_mirror *m, struct bm_io *io,
                                     bool *is_new, struct ra_wait **fallback)
{
	struct bm_readahead *ra = &m->ra;
	long long now = bm_now_ms();
	struct ra_stream *free_slot = NULL, *lru = NULL;

	struct ra_stream *near[3] = { NULL, NULL, NULL };
	uint64_t near_dist[3] = { 0, 0, 0 };

	*is_new = false;
	for (int i = 0; i < BM_RA_STREAMS; i++) {
		struct ra_stream *s = &ra->streams[i];
		uint64_t d;
		if (s->used && now - s->last_ms > RA_IDLE_MS && !s->waiting)
			stream_drop(ra, s, fallback);
		if (!s->used) {
			if (!free_slot)
				free_slot = s;
			continue;
		}
		if (io->offset == s->next ||
		    (s->head && io->offset >= s->ra_start &&
		     io->offset < s->ra_end))
			return s;
		int k = near_front(s, io, &d);
		if (k != FAR && (!near[k] || s->hits > near[k]->hits ||
		                 (s->hits == near[k]->hits && d < near_dist[k]))) {
			near[k] = s;
			near_dist[k] = d;
		}
		if (!s->waiting && (!lru || s->last_ms < lru->last_ms ||
		                    (!s->head && lru->head)))
			lru = s;
	}
	if (near[AHEAD])
		return near[AHEAD];
	if (near[STRAGGLER]) {
		learn_reorder(near[STRAGGLER], near_dist[STRAGGLER], io->length);
		return NULL;
	}
	struct ra_stream *s = free_slot ? free_slot : lru;
	if (!s)
		return NULL;
	if (s->used)
		stream_drop(ra, s, fallback);
	s->used = true;
	s->next = io->offset; /* counted as a hit below */
	s->window = RA_WINDOW_START;
	s->born_ms = now;
	*is_new = true;
	drop_stale(m, s);
	return s;
}

bool bm_ra_read(struct bm_mirror *m, struct bm_io *io)
{
	struct bm_readahead *ra = &m->ra;
	struct ra_chunk *issue = NULL;
	struct ra_wait *done_list = NULL, *fallback = NULL;
	bool is_new, taken = false;

	pthread_mutex_lock(&ra->lock);
	measures_follow_epoch(m);
	struct ra_stream *s = find_stream(m, io, &is_new, &fallback);
	if (!s)
		goto out;
	s->last_ms = bm_now_ms();
	s->consumed += io->length;
	/* a read that moves the front counts as sequential, in order or
	 * not; one that fills a gap behind it teaches how far behind the
	 * front reads still come (the chunks there are kept for them) */
	if (!is_new && io->offset < s->next)
		learn_reorder(s, s->next - io->offset, io->length);
	if (!is_new && io->offset + io->length > s->next &&
	    io->offset <= s->next + (uint64_t)io->length * RA_REORDER_READS) {
		s->hits++;
		if (s->hits % 4 == 0 && s->window < ra->cap / 2)
			s->window *= 2;
		if (s->reorder && ++s->reorder_quiet >= RA_REORDER_QUIET) {
			s->reorder /= 2;
			s->reorder_quiet = 0;
		}
	}
	uint64_t front = s->next; /* before this read */
	if (io->offset + io->length > s->next)
		s->next = io->offset + io->length;
	if (s->hits < RA_MIN_HITS)
		goto out;
	/* Free what the client has passed, but not what a read still waits
	 * for (several reads of one stream may be in flight), nor what reads
	 * that come out of order may still want (s->reorder behind the
	 * front). */
	uint64_t behind = io->offset, keep = window_of(m, s) / 2;
	if (keep > s->reorder)
		keep = s->reorder;
	if (s->next - keep < behind)
		behind = s->next - keep;
	for (struct ra_wait *w = s->waiting; w; w = w->next)
		if (w->io->offset < behind)
			behind = w->io->offset;
	release_behind(ra, s, behind);
	/* chunks left only behind the front (a write dropped those ahead of
	 * the kept ones): start again at the read rather than read what the
	 * front has passed.  (Not when only this read is past them: a read
	 * ahead of the front, out of order, leaves chunks the client still
	 * needs.) */
	if (s->head && !s->waiting && s->ra_end < front &&
	    s->ra_end <= io->offset)
		release_behind(ra, s, s->ra_end);
	if (!s->head) /* (re)start the window at this read */
		s->ra_start = s->ra_end = io->offset;
	uint64_t target = s->next + window_of(m, s);
	if (target < io->offset + io->length)
		target = io->offset + io->length;
	extend(m, s, target, io->offset + io->length, &issue);
	int cov = coverage(s, io->offset, io->length);
	if (cov < 0)
		goto out;
	struct ra_wait *w = malloc(sizeof(*w));
	if (!w)
		goto out;
	w->io = io;
	w->t0 = bm_now_ns();
	taken = true;
	atomic_fetch_add(&m->ios_inflight, 1);
	bm_io_begin(m);
	if (cov > 0) {
		serve_out(ra, s, io);
		ra->served++;
		ra->served_bytes += io->length;
		w->next = done_list;
		done_list = w;
	} else {
		struct ra_chunk *p = first_pending(s, io->offset, io->length);
		if (p) {
			ra->comp[p->comp].waits++;
			steal_late(m, s, p, &issue);
		}
		w->next = s->waiting;
		s->waiting = w;
	}
out:
	pthread_mutex_unlock(&ra->lock);
	issue_all(m, issue);
	finish_reads(m, done_list, fallback);
	return taken;
}

void bm_ra_invalidate(struct bm_mirror *m, uint64_t off, uint64_t len)
{
	struct bm_readahead *ra = &m->ra;
	struct ra_wait *done_list = NULL, *fallback = NULL;
	uint64_t end = off + len;

	if (atomic_load(&ra->nchunks) == 0)
		return;
	pthread_mutex_lock(&ra->lock);
	for (int i = 0; i < BM_RA_STREAMS; i++) {
		struct ra_stream *s = &ra->streams[i];
		if (!s->used || !s->head || end <= s->ra_start || off >= s->ra_end)
			continue;
		for (struct ra_chunk *c = s->head; c; c = c->next)
			if (c->off < end && off < c->off + c->len) {
				truncate_from(ra, s, c);
				break;
			}
		check_waiters(ra, s, &done_list, &fallback);
	}
	pthread_mutex_unlock(&ra->lock);
	finish_reads(m, done_list, fallback);
}

void bm_ra_drop_all(struct bm_mirror *m)
{
	struct bm_readahead *ra = &m->ra;
	struct ra_wait *fallback = NULL;

	pthread_mutex_lock(&ra->lock);
	for (int i = 0; i < BM_RA_STREAMS; i++)
		if (ra->streams[i].used)
			stream_drop(ra, &ra->streams[i], &fallback);
	pthread_mutex_unlock(&ra->lock);
	finish_reads(m, NULL, fallback);
}

/* The size warm buffers are touched to: the size the components' chunks
 * start at (chunk_size's first choice, within the memory bound), the
 * smallest of them.  Not larger: a chunk takes an idle buffer touched
 * further than it needs when there is no room for a fresh one, and is
 * charged all of it, so buffers warmed at the largest size would hold a
 * quarter as many chunks in the cap until they climbed (and for good on
 * media where they never climb).  A chunk that climbs past it touches
 * the difference fresh (lock held). */
static size_t warm_size(struct bm_mirror *m)
{
	uint32_t len = 0;

	for (int i = 0; i < m->ncomp; i++) {
		if (!readable(m, i))
			continue;
		uint32_t c = chunk_start(m, i), bound = chunk_bound(m, i);
		if (c > bound)
			c = bound;
		if (!len || c < len)
			len = c;
	}
	return len;
}

void bm_ra_tick(struct bm_mirror *m)
{
	struct bm_readahead *ra = &m->ra;
	struct ra_wait *fallback = NULL;
	long long now = bm_now_ms();

	/* bm_ra_destroy runs while the event thread still ticks (its
	 * watchdog ends chunks that hang): whichever comes second of the
	 * increment and the store of closed sees the other */
	atomic_fetch_add(&ra->ticking, 1);
	if (atomic_load(&ra->closed)) {
		atomic_fetch_sub(&ra->ticking, 1);
		return;
	}
	pthread_mutex_lock(&ra->lock);
	for (int i = 0; i < BM_RA_STREAMS; i++) {
		struct ra_stream *s = &ra->streams[i];
		if (s->used && now - s->last_ms > RA_IDLE_MS && !s->waiting)
			stream_drop(ra, s, &fallback);
	}
	/* Idle chunk memory: lazily given to the kernel after RA_MEM_IDLE_MS
	 * without chunks, and kept mapped: the next stream does not fault
	 * it in again unless the kernel needed it meanwhile (but pays a
	 * write fault per page where the hypervisor tracks dirty pages) */
	enum { TRIM_NONE, TRIM_SOFT, TRIM_ALL } trim = TRIM_NONE;
	size_t warm_len = 0;
	uint64_t warm_target = 0;
	if (atomic_load(&ra->nchunks) > 0) {
		ra->idle_since_ms = 0;
		ra->soft_trimmed = false;
	} else {
		if (!ra->idle_since_ms)
			ra->idle_since_ms = now;
		long long idle = now - ra->idle_since_ms;
		bool stream = atomic_load(&m->balance) == BM_BALANCE_STREAM;
		/* (0 while no component is readable: nothing to warm for) */
		size_t to_warm = stream && !ra->warmed && ra->cap > 0
		                         ? warm_size(m) : 0;
		if (!stream && idle > RA_IDLE_MS) {
			/* another balance reads without read-ahead: its
			 * memory goes (warmed again if stream comes back) */
			trim = TRIM_ALL;
			ra->warmed = false;
			ra->soft_trimmed = false;
		} else if (to_warm) {
			/* idle from the end of the warm, and what it touches
			 * is given back lazily RA_MEM_IDLE_MS after that */
			ra->idle_since_ms = now;
			ra->soft_trimmed = false;
			warm_len = to_warm;
			warm_target = ra->cap < BM_RA_DEFAULT_CAP ? ra->cap
			                                          : BM_RA_DEFAULT_CAP;
		} else if (stream && idle > RA_MEM_IDLE_MS && !ra->soft_trimmed) {
			ra->soft_trimmed = true;
			trim = TRIM_SOFT;
		}
	}
	pthread_mutex_unlock(&ra->lock);
	/* (chunkmem has its own lock; a buffer taken meanwhile is not idle
	 * and not touched) */
	if (trim == TRIM_SOFT)
		bm_chunkmem_soft_trim(&ra->mem);
	else if (trim == TRIM_ALL)
		bm_chunkmem_trim(&ra->mem);
	if (warm_len) {
		size_t done = 0, n = 1;
		while (done < RA_WARM_PER_TICK &&
		       (n = bm_chunkmem_warm(&ra->mem, warm_len, warm_target)))
			done += n;
		if (!n) {
			pthread_mutex_lock(&ra->lock);
			ra->warmed = true;
			pthread_mutex_unlock(&ra->lock);
		}
	}
	finish_reads(m, NULL, fallback);
	atomic_fetch_sub(&ra->ticking, 1);
}

/* Drops every stream and waits for chunks in flight to land, at most
 * timeout_ms (< 0: for ever).  False when some did not (a component that
 * hangs): then nothing is freed. */
bool bm_ra_destroy(struct bm_mirror *m, long timeout_ms)
{
	long long end = bm_now_ms() + timeout_ms;

	bm_ra_drop_all(m);
	if (ra_debug()) {
		fprintf(stderr, "ra: %llu reads served (%.1f MiB, %llu from lent "
		        "buffers), %.1f ms waiting for chunks, %llu streams ended "
		        "for another\n", (unsigned long long)m->ra.served,
		        (double)m->ra.served_bytes / 1048576.0,
		        (unsigned long long)m->ra.lent, (double)m->ra.wait_ns / 1e6,
		        (unsigned long long)m->ra.ended);
		for (int i = 0; i < m->ncomp; i++)
			fprintf(stderr, "ra: comp %d: chunk %u, %.1f MB/s, %llu waits, "
			        "%.1f ms idle between chunks, "
			        "%llu chunks re-read elsewhere\n", i, m->ra.comp[i].chunk,
			        m->ra.comp[i].ns_per_byte > 0
			                ? 1e3 / m->ra.comp[i].ns_per_byte : 0.0,
			        (unsigned long long)m->ra.comp[i].waits,
			        (double)m->ra.comp[i].idle_ns / 1e6,
			        (unsigned long long)m->ra.comp[i].steals);
		fprintf(stderr, "ra: chunk buffers: %llu mapped, %.1f MiB warmed "
		        "before use, %.1f MiB moved between them, %.1f MiB "
		        "touched fresh, %.1f MiB resident at most\n",
		        (unsigned long long)m->ra.mem.maps,
		        (double)m->ra.mem.warmed / 1048576.0,
		        (double)m->ra.mem.moved / 1048576.0,
		        (double)m->ra.mem.fresh / 1048576.0,
		        (double)m->ra.mem.peak / 1048576.0);
	}
	while (atomic_load(&m->ra.nchunks) > 0 ||
	       atomic_load(&m->ra.landing) > 0) {
		if (timeout_ms >= 0 && bm_now_ms() >= end)
			return false;
		usleep(1000); /* chunks land within io-timeout; rare */
	}
	atomic_store(&m->ra.closed, true);
	while (atomic_load(&m->ra.ticking) > 0)
		usleep(1000);
	bm_chunkmem_destroy(&m->ra.mem);
	pthread_mutex_destroy(&m->ra.lock);
	return true;
}
