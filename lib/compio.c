/*
 * Component I/O: what one client request does on the components, below
 * both the entry point (io.c) and the read-ahead (readahead.c).
 *
 * A client request becomes one mirror request (struct mreq) with every
 * sub-request it needs allocated up front, so that an allocation failure is
 * reported before anything reaches a disk.
 *
 *  READ   one sub-request on the component the balance algorithm picks (split:
 *         one piece per readable component).  A failed piece is retried on
 *         another readable component.  A component that answered with an
 *         error gets the range rewritten from the good copy (recover.c; too
 *         many such errors fail it); one that went away (connection dead,
 *         device gone) is disconnected.
 *  WRITE, TRIM, WRITE_ZEROES
 *         first DIRTY is on disk (meta.c), then a shared range hold keeps the
 *         sync copy off the range (taken before the targets are chosen, so a
 *         component that starts synchronizing meanwhile is either a target
 *         or copied after this write), then one sub-request per writable
 *         component.  A TRIM or WRITE_ZEROES longer than BM_ZERO_PIECE
 *         goes to each component in pieces of that, one after another
 *         (the next when the one before succeeded), so that a component
 *         that zeroes by writing ends something within the io-timeout
 *         (at a stop, one that would outlast the io-timeout is cut:
 *         stop_cuts).
 *         When all completed without error it is acknowledged.
 *         Otherwise the event thread first applies (and records in the
 *         labels) every failure found up to then, this one's included, and
 *         then decides: acknowledged only if a component that completed it
 *         is still ACTIVE with its label current; else the client gets the
 *         error (ENOSPC, EROFS, EIO: what the components said).
 *  FLUSH  to every writable component, decided the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "error.h"
#include "mirror.h"

struct sub {
	struct bm_breq br;
	struct mreq *req;
	int comp;
	int result;       /* write: what the component answered */
	unsigned epoch;   /* the component's connection it was issued on */
	uint32_t tried;   /* read: components that failed this piece */
	uint32_t repair;  /* read: those that answered with an error */
	uint64_t t0_ns;
	uint64_t zero_end; /* zeroing in pieces: where the whole range ends */
	bool cut;          /* zeroing ended unfinished by a stop (stop_cuts) */
	uint64_t flush_mark; /* flush: the component's writes_done at issue */
};

struct mreq {
	struct bm_mirror *m;
	struct bm_io *io;
	atomic_int pending;
	atomic_int error;
	atomic_uint failed;     /* components that failed this request */
	bool is_write;
	bm_range_hook before_ack; /* write: at submission and before the ack */
	uint64_t t0_ns;
	struct bm_range_hold hold;
	int bitmap_slot;        /* write: bm_bitmap_write_begin's */
	int nsub;
	struct sub sub[];
};

static int stat_kind(enum bm_bop op)
{
	switch (op) {
	case BM_BOP_READ: return BM_STAT_READ;
	case BM_BOP_WRITE: case BM_BOP_ZERO: return BM_STAT_WRITE;
	case BM_BOP_TRIM: return BM_STAT_DELETE;
	default: return BM_STAT_OTHER;
	}
}

static void account(struct bm_component *c, const struct sub *s, int result)
{
	bm_stats_account(&c->stats, stat_kind(s->br.op), s->br.length,
	                 bm_now_ns() - s->t0_ns, result);
}

/* A write ends (or is refused after it was counted). */
static void write_leave(struct bm_mirror *m, int bitmap_slot)
{
	bm_bitmap_write_end(m, bitmap_slot);
	atomic_fetch_sub(&m->writes_inflight, 1);
}

static int flush_vouches(struct mreq *r);

static void req_complete(void *arg)
{
	struct mreq *r = arg;
	struct bm_mirror *m = r->m;
	struct bm_io *io = r->io;
	int result = atomic_load(&r->error);

	/* (every way a flush ends, write_decide's included) */
	if (result == 0 && io->type == BM_IO_FLUSH)
		result = flush_vouches(r);
	if (r->is_write) {
		/* Read-ahead taken while the write was in flight may be old. */
		if (r->before_ack)
			r->before_ack(m, io->offset, io->length);
		bm_rangelock_shared_release(&m->rl, &r->hold);
		atomic_store(&m->last_write_ms, bm_now_ms());
		write_leave(m, r->bitmap_slot);
	}
	uint64_t t0 = r->t0_ns;
	free(r);
	bm_io_end(m, io, t0, result);
	bm_io_leave(m);
	io->done(io, result);
}

static void set_error(struct mreq *r, int err)
{
	int zero = 0;
	atomic_compare_exchange_strong(&r->error, &zero, err);
}

static void sub_issue(struct sub *s);

/* The epochs the subs were issued on, for bm_ev_fail (thread-local: the
 * event is queued, and the array copied, before the next call). */
static const unsigned *epochs_of(struct bm_mirror *m, const struct sub *s,
                                 int n)
{
	static __thread unsigned ep[BM_MAX_COMPONENTS];

	for (int i = 0; i < m->ncomp; i++)
		ep[i] = atomic_load(&m->comp[i].epoch);
	for (int k = 0; k < n; k++)
		ep[s[k].comp] = s[k].epoch;
	return ep;
}

static void read_done(struct bm_breq *br, int result)
{
	struct sub *s = br->opaque;
	struct mreq *r = s->req;
	struct bm_mirror *m = r->m;
	struct bm_component *c = &m->comp[s->comp];

	bm_comp_leave(c, s->t0_ns, br->op, !br->unanswered);
	account(c, s, result);
	if (result < 0) {
		s->tried |= 1u << s->comp;
		if (bm_error_is_gone(result))
			bm_ev_fail(m, 1u << s->comp, epochs_of(m, s, 1),
			           "read error", result,
			           br->offset, br->length, NULL, NULL);
		else
			s->repair |= 1u << s->comp;
		int next = bm_balance_pick(m, br->offset, br->length, s->tried);
		if (next >= 0) {
			s->comp = next;
			sub_issue(s);
			return;
		}
		set_error(r, result);
	} else if (s->repair) {
		/* A good copy was read: mend the ones that failed it. */
		for (int i = 0; i < m->ncomp; i++)
			if (s->repair & (1u << i))
				bm_recover_repair(m, i, br->offset, br->length);
	}
	if (atomic_fetch_sub(&r->pending, 1) == 1)
		req_complete(r);
}

/* On the event thread, after every failure found so far is applied: is
 * the write held by a component still in service? */
static void write_decide(void *arg)
{
	struct mreq *r = arg;
	struct bm_mirror *m = r->m;
	uint32_t failed = atomic_load(&r->failed);
	bool held = false;
	int err = 0;
	pthread_mutex_lock(&m->meta_lock);
	for (int k = 0; k < r->nsub; k++) {
		struct sub *s = &r->sub[k];
		struct bm_component *c = &m->comp[s->comp];
		if (failed & (1u << s->comp)) {
			/* the most telling error: ENOSPC over a lost link */
			if (!err || (bm_error_is_gone(err) &&
			             !bm_error_is_gone(s->result)))
				err = s->result;
			continue;
		}
		if (atomic_load(&c->state) == BM_CS_ACTIVE && !c->label_stale)
			held = true;
	}
	/* Copies must not differ where a client looks.  Not held (the
	 * client gets an error): a SYNCHRONIZING target that took it now
	 * differs from its source, so its copy goes over it again before it
	 * is ACTIVE (sync.c).  Held: a failed component still ACTIVE (the
	 * last one when its failure was applied, and a copy has ended
	 * since) lacks an acknowledged write, so it goes now. */
	for (int k = 0; k < r->nsub; k++) {
		struct sub *s = &r->sub[k];
		struct bm_component *c = &m->comp[s->comp];
		int st = atomic_load(&c->state);
		if (!held && !(failed & (1u << s->comp)) &&
		    st == BM_CS_SYNCHRONIZING) {
			uint64_t want = r->io->offset + 1,
			         cur = atomic_load(&c->recopy_from);
			while ((cur == 0 || want < cur) &&
			       !atomic_compare_exchange_weak(&c->recopy_from, &cur,
			                                     want))
				;
			uint64_t end = r->io->offset + r->io->length,
			         top = atomic_load(&c->recopy_to);
			while (end > top &&
			       !atomic_compare_exchange_weak(&c->recopy_to, &top,
			                                     end))
				;
		} else if (held && (failed & (1u << s->comp)) &&
		           st == BM_CS_ACTIVE) {
			char why[160];
			snprintf(why, sizeof(why), "write error: %s (the write "
			         "is held by another)", strerror(-s->result));
			bm_meta_drop_locked(m, c, bm_error_is_gone(s->result)
			                    ? BM_CS_DISCONNECTED : BM_CS_FAILED,
			                    why);
		}
	}
	pthread_mutex_unlock(&m->meta_lock);
	if (!held)
		set_error(r, err ? err : -EIO);
	req_complete(r);
}

/* The sub this thread is issuing a piece of (issue_pieces), and whether
 * that piece ended within the submit and left the next one to it. */
static __thread struct sub *issuing;
static __thread bool next_wanted;

/* Issues s, and then its next pieces while each ends within the submit
 * (file components zero synchronously): a loop, not a call per piece
 * nested in the one before.  s is not touched after a submit that took
 * it: its last piece may end, and free it, on another thread. */
static void issue_pieces(struct sub *s)
{
	struct sub *outer = issuing;
	bool outer_wanted = next_wanted;
	bool again;

	do {
		issuing = s;
		next_wanted = false;
		sub_issue(s);
		again = next_wanted;
	} while (again);
	issuing = outer;
	next_wanted = outer_wanted;
}

static uint32_t zero_piece(uint64_t left)
{
	return left < BM_ZERO_PIECE ? (uint32_t)left : BM_ZERO_PIECE;
}

/* Whether a zeroing in pieces ends here, unfinished, on this component:
 * the mirror is stopping and the request, were it to wait for one more
 * piece as long as the last one took, would be older than the
 * io-timeout.  A stop ends within io-timeout + 5 s (assemble.c); each
 * piece is within the watchdog's rules, the whole may take far longer.
 * The component is then disconnected (an error that says it is gone), as
 * the watchdog's stop-time ceiling did to one long request, and the write
 * is acknowledged from the others if they hold it. */
static bool stop_cuts(struct bm_mirror *m, const struct mreq *r,
                      const struct sub *s)
{
	uint64_t limit = (uint64_t)atomic_load(&m->io_timeout_ms) * 1000000u;
	uint64_t now = bm_now_ns();

	return limit && atomic_load(&m->stopping) &&
	       (now - r->t0_ns) + (now - s->t0_ns) >= limit;
}

/* Whether s is a zeroing in pieces with pieces left after the one in br. */
static bool pieces_left(const struct sub *s)
{
	return s->br.offset + s->br.length < s->zero_end;
}

/* A zeroing in pieces whose piece succeeded, with pieces left: moves br to
 * the next piece and has it issued (by the loop in issue_pieces when this
 * runs inside its submit). */
static void next_piece(struct sub *s)
{
	struct bm_breq *br = &s->br;
	uint64_t at = br->offset + br->length;

	br->offset = at;
	br->length = zero_piece(s->zero_end - at);
	if (issuing == s)
		next_wanted = true;
	else
		issue_pieces(s);
}

/* What a component took and flushed (mirror.h writes_done,
 * flushed_upto): a FUA write is durable by itself. */
static void count_durability(struct bm_component *c, const struct sub *s)
{
	if (s->epoch != atomic_load(&c->epoch))
		return; /* an old connection's: its counters were reset */
	if (s->br.op == BM_BOP_FLUSH)
		bm_comp_flushed(c, s->flush_mark);
	else if (!(s->br.flags & BM_BOP_FUA))
		atomic_fetch_add(&c->writes_done, 1);
}

/* A client flush about to succeed: not when the last ACTIVE component was
 * connected again in place holding writes not flushed (recover.c
 * reconnect_in_place) and this flush reached it on the new connection
 * (one issued before covers nothing written since): it fails, once. */
static int flush_vouches(struct mreq *r)
{
	struct bm_mirror *m = r->m;

	if (!atomic_load(&m->flush_lost))
		return 0;
	for (int k = 0; k < r->nsub; k++) {
		const struct sub *s = &r->sub[k];
		if (s->comp != m->flush_lost_comp ||
		    (int)(s->epoch - m->flush_lost_epoch) < 0)
			continue;
		if (!atomic_exchange(&m->flush_lost, false))
			return 0;
		fprintf(stderr, "blkmirror: %s: a flush fails: writes acknowledged "
		        "before it may have been lost when a component's "
		        "connection died (connected again since)\n", m->name);
		return -EIO;
	}
	return 0;
}

static void write_done(struct bm_breq *br, int result)
{
	struct sub *s = br->opaque;
	struct mreq *r = s->req;
	struct bm_mirror *m = r->m;
	struct bm_component *c = &m->comp[s->comp];

	bm_comp_leave(c, s->t0_ns, br->op, !br->unanswered);
	account(c, s, result);
	if (result == 0 && pieces_left(s)) {
		if (!stop_cuts(m, r, s)) {
			next_piece(s);
			return;
		}
		s->cut = true;
		result = -ETIMEDOUT;
	}
	s->result = result;
	if (result < 0)
		atomic_fetch_or(&r->failed, 1u << s->comp);
	else
		count_durability(c, s);
	if (atomic_fetch_sub(&r->pending, 1) != 1)
		return;

	uint32_t failed = atomic_load(&r->failed);
	/* (recording first: a record that failed sets meta_broken before
	 * it ends, meta.c) */
	if (failed == 0 && atomic_load(&m->recording) == 0 &&
	    !atomic_load(&m->meta_broken)) {
		req_complete(r);
		return;
	}
	if (failed == 0) {
		/* a component is leaving and the others' labels do not say so
		 * yet (meta.c bm_meta_record_begin), or could not: decided
		 * once they do, on the event thread (nothing to apply first);
		 * a component whose label is not current holds nothing */
		bm_ev_fail(m, 0, NULL, "", 0, 0, 0, write_decide, r);
		return;
	}
	/* Components that went away are disconnected, the others failed:
	 * one event each kind, the decision after both. */
	uint32_t gone = 0, other = 0;
	int gone_err = -ENOTCONN, other_err = -EIO;
	bool all_cut = true; /* every component gone was cut by the stop */
	for (int k = 0; k < r->nsub; k++) {
		struct sub *f = &r->sub[k];
		if (!(failed & (1u << f->comp)))
			continue;
		if (bm_error_is_gone(f->result)) {
			gone |= 1u << f->comp;
			gone_err = f->result;
			all_cut = all_cut && f->cut;
		} else {
			other |= 1u << f->comp;
			other_err = f->result;
		}
	}
	const char *what = r->io->type == BM_IO_FLUSH ? "flush error"
	                                               : "write error";
	const char *gone_what =
	        !(gone && all_cut) ? what
	        : r->io->type == BM_IO_TRIM
	                ? "trim left unfinished at the stop (caught up later)"
	                : "zeroing left unfinished at the stop (caught up later)";
	const unsigned *ep = epochs_of(m, r->sub, r->nsub);
	if (gone && other)
		bm_ev_fail(m, gone, ep, gone_what, gone_err, r->io->offset,
		           r->io->length, NULL, NULL);
	if (other)
		bm_ev_fail(m, other, ep, what, other_err, r->io->offset,
		           r->io->length, write_decide, r);
	else
		bm_ev_fail(m, gone, ep, gone_what, gone_err, r->io->offset,
		           r->io->length, write_decide, r);
}

static void sub_issue(struct sub *s)
{
	struct bm_mirror *m = s->req->m;
	struct bm_component *c = &m->comp[s->comp];
	struct bm_backend *be;
	int err;

	s->t0_ns = bm_now_ns();
	s->br.unanswered = false;
	bm_comp_enter(c, s->t0_ns);
	if (s->br.op == BM_BOP_READ)
		atomic_store(&c->head_pos, s->br.offset + s->br.length);
	be = bm_comp_get(c);
	/* read while we hold it: a reconnect waits for users to leave */
	s->epoch = atomic_load(&c->epoch);
	if (s->br.op == BM_BOP_FLUSH)
		s->flush_mark = atomic_load(&c->writes_done);
	err = be ? be->ops->submit(be, &s->br) : -ENOTCONN;
	if (be)
		bm_comp_put(c);
	if (err < 0) {
		s->br.unanswered = true;
		s->br.done(&s->br, err);
	}
}

static struct mreq *req_alloc(struct bm_mirror *m, struct bm_io *io, int nsub)
{
	struct mreq *r = calloc(1, sizeof(*r) + (size_t)nsub * sizeof(struct sub));

	if (!r)
		return NULL;
	r->m = m;
	r->io = io;
	r->nsub = nsub;
	r->t0_ns = bm_now_ns();
	atomic_init(&r->pending, nsub);
	return r;
}

static void sub_init(struct mreq *r, int k, int comp, enum bm_bop op,
                     uint64_t off, uint32_t len, void *buf, uint32_t flags,
                     void (*done)(struct bm_breq *, int))
{
	struct sub *s = &r->sub[k];

	s->req = r;
	s->comp = comp;
	s->br.op = op;
	s->br.flags = flags;
	s->br.offset = off;
	s->br.length = len;
	s->br.buf = buf;
	s->br.done = done;
	s->br.opaque = s;
	s->zero_end = 0;
	s->cut = false;
	if ((op == BM_BOP_ZERO || op == BM_BOP_TRIM) && len > BM_ZERO_PIECE) {
		s->zero_end = off + len;
		s->br.length = BM_ZERO_PIECE;
	}
}

int bm_io_read_direct(struct bm_mirror *m, struct bm_io *io)
{
	int ncomp_read = bm_readable_count(m);
	int npieces = 1;
	uint32_t piece = io->length;
	struct mreq *r;

	if (ncomp_read == 0)
		return bm_error(EIO, "no readable component");
	if (atomic_load(&m->balance) == BM_BALANCE_SPLIT &&
	    io->length > atomic_load(&m->slice) && ncomp_read > 1) {
		piece = (io->length / (uint32_t)ncomp_read + 4095u) & ~4095u;
		npieces = (int)((io->length + piece - 1) / piece);
	}
	r = req_alloc(m, io, npieces);
	if (!r)
		return bm_error(ENOMEM, "out of memory");
	uint32_t used = 0;
	for (int k = 0; k < npieces; k++) {
		uint32_t len = io->length - (uint32_t)k * piece < piece
		                       ? io->length - (uint32_t)k * piece : piece;
		int comp = bm_balance_pick(m, io->offset, len, used);
		if (comp < 0)
			comp = bm_balance_pick(m, io->offset, len, 0);
		if (comp < 0)
			comp = 0; /* raced with a failure: the read will fail over */
		used |= 1u << comp;
		sub_init(r, k, comp, BM_BOP_READ, io->offset + (uint64_t)k * piece,
		         len, (char *)io->buf + (size_t)k * piece, 0, read_done);
	}
	atomic_fetch_add(&m->ios_inflight, 1);
	bm_io_begin(m);
	for (int k = 0; k < npieces; k++)
		sub_issue(&r->sub[k]);
	return 0;
}

int bm_compio_write(struct bm_mirror *m, struct bm_io *io,
                    bm_range_hook before_ack)
{
	enum bm_bop op;
	bool is_write = io->type != BM_IO_FLUSH;
	int targets[BM_MAX_COMPONENTS], n = 0, bitmap_slot = -1;
	struct mreq *r;

	switch (io->type) {
	case BM_IO_WRITE: op = BM_BOP_WRITE; break;
	case BM_IO_TRIM: op = BM_BOP_TRIM; break;
	case BM_IO_WRITE_ZEROES: op = BM_BOP_ZERO; break;
	default: op = BM_BOP_FLUSH; break;
	}
	if (is_write) {
		atomic_fetch_add(&m->writes_inflight, 1);
		if (!atomic_load(&m->dirty_on_disk)) {
			int err = bm_meta_mark_dirty(m);
			if (err < 0) {
				atomic_fetch_sub(&m->writes_inflight, 1);
				return bm_error(EIO, "cannot mark the mirror dirty");
			}
		}
		/* the regions' bits on disk before the write is issued */
		if (bm_bitmap_write_begin(m, io->offset, io->length,
		                          &bitmap_slot) < 0) {
			atomic_fetch_sub(&m->writes_inflight, 1);
			return -EIO;
		}
	}
	if (atomic_load(&m->meta_broken)) {
		if (is_write)
			write_leave(m, bitmap_slot);
		return bm_error(EIO, "the mirror cannot record its state in any "
		                "label; writes are refused");
	}
	/* Hold the range first, then choose the targets: a component that
	 * starts synchronizing after this point is copied after this write
	 * completes; one published before it (live.c) is a target.  ncomp
	 * only grows: if it grew between the allocation and the hold, again
	 * with room for the newcomer (nothing was issued yet). */
	int nc;
	for (;;) {
		int room = atomic_load(&m->ncomp);
		r = req_alloc(m, io, room);
		if (!r) {
			if (is_write)
				write_leave(m, bitmap_slot);
			return bm_error(ENOMEM, "out of memory");
		}
		r->is_write = is_write;
		r->bitmap_slot = bitmap_slot;
		r->before_ack = before_ack;
		if (is_write) {
			bm_rangelock_shared(&m->rl, &r->hold, io->offset,
			                    io->length);
			if (before_ack)
				before_ack(m, io->offset, io->length);
		}
		nc = atomic_load(&m->ncomp);
		if (nc <= room)
			break;
		if (is_write)
			bm_rangelock_shared_release(&m->rl, &r->hold);
		free(r);
	}
	for (int i = 0; i < nc; i++) {
		int s = atomic_load(&m->comp[i].state);
		if (s == BM_CS_ACTIVE || s == BM_CS_SYNCHRONIZING)
			targets[n++] = i;
	}
	if (n == 0) {
		if (is_write) {
			bm_rangelock_shared_release(&m->rl, &r->hold);
			write_leave(m, bitmap_slot);
		}
		free(r);
		return bm_error(EIO, "no writable component");
	}
	r->nsub = n;
	atomic_store(&r->pending, n);
	for (int k = 0; k < n; k++)
		sub_init(r, k, targets[k], op, io->offset, io->length, io->buf,
		         (io->flags & BM_IO_FUA) ? BM_BOP_FUA : 0, write_done);
	atomic_fetch_add(&m->ios_inflight, 1);
	bm_io_begin(m);
	for (int k = 0; k < n; k++)
		issue_pieces(&r->sub[k]);
	return 0;
}

