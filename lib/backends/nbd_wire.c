/*
 * Our own NBD transmission on a connection libnbd negotiated (nbd.c hands
 * over the socket of a plain, non-TLS connection; see HACKING.md "Own NBD
 * transmission").  Why: libnbd costs a poll and four reads per reply
 * (structured replies), a lock round and a thread hand-off per command;
 * here one read takes as many replies as have come, and read data goes
 * from the socket straight into the request's buffer.
 *
 * Threads.  Submitters (any thread, the receiver too) send their request
 * themselves: the frame goes on the output queue and whoever holds
 * out_lock sends what is queued with a non-blocking sendmsg (several
 * frames per call).  Nobody ever blocks on a send: what the socket does
 * not take stays queued, and the receiver, woken if it sleeps, sends the
 * rest when poll says the socket is writable.  (A submitter blocked on a
 * full socket could be another component's receiver, which then would
 * not read its own server's replies: two servers each waiting for the
 * other's client.)  A submitter with a send batch open (sendbatch.c: the
 * server's reader, a receiver) only queues, and sends the queue at its
 * flush (w pinned until then: batch_pins).
 *
 * One receiver thread per connection reads replies (nbd_reply.c checks
 * them) and runs done() with no lock held; it is the only thread that
 * completes a command that reached the server, the only one that ends the
 * connection, and it sends the next piece of a long request, or the flush
 * of an emulated FUA.  It reads before it polls while data keeps coming
 * (a short read means the socket is empty: poll next).
 *
 * Commands are kept for the backend's life and recycled; a command's
 * cookie is its index in the table and a generation (one per request it
 * sent), so a reply names exactly one request in flight, and a reply to
 * anything else (or to a request not yet sent whole) breaks the protocol.
 *
 * Ending the connection (the receiver: the server closed it, a protocol
 * error, abort()): every command in flight completes with an error, later
 * submits fail at once.  When the server may still carry out writes it
 * holds (abort, protocol error), the socket is only shut for writing and
 * read until the server closes it, counted in base.detached meanwhile, so
 * that recover.c does not reconnect while an old write can still land
 * over newer data.  Otherwise it is shut down.  close() sends the
 * protocol's disconnect on a healthy connection and waits a bounded time
 * for the server to close its end.
 *
 * What the export cannot do is emulated as in nbd.c: FUA by a flush
 * after the write, zeroing by writing zeros, long requests in pieces one
 * after another.
 */
#include "nbd_wire.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../error.h"
#include "../nbd_reply.h"
#include "../sendbatch.h"

#define STAGE_SIZE (64u * 1024)   /* replies are read into this ... */
#define DIRECT_MIN (16u * 1024)   /* ... and data this long straight into
                                     the request's buffer */
#define SEND_BATCH 16             /* frames per sendmsg */
#define HEADER_READ 28            /* a structured chunk's header and a
                                     data chunk's offset */

struct wire;

struct wire_cmd {
	struct wire *w;
	struct bm_breq *r;
	struct bm_extent_req *xr;  /* instead of r: an allocation question */
	enum bm_bop op;            /* what to send next (FUA emulation) */
	bool then_flush;           /* emulated FUA: flush after the data */
	bool changes_data;         /* the request in flight writes */
	uint32_t done_bytes;       /* bytes of r already done ... */
	uint32_t piece;            /* ... and the piece in flight */
	uint32_t index;            /* in the table, for ever */
	uint32_t gen;              /* the request in flight: cookie's top */
	bool live;                 /* lock: sent, reply awaited */
	struct nbdw_pending pend;  /* receiver only, while live */
	/* output, under out_lock */
	uint8_t hdr[NBDW_REQUEST_SIZE];
	const char *payload;
	uint32_t payload_len;
	uint32_t out_sent;         /* of hdr + payload */
	atomic_bool sent_whole;
	struct wire_cmd *next_out;
	struct wire_cmd *next;     /* free list or done list */
};

struct wire {
	struct bm_backend base;
	struct bm_nbd_props pr;
	char uri[1024];
	int fd;
	int wake_fd;
	pthread_t receiver;

	pthread_mutex_t lock;      /* the fields down to inflight */
	struct wire_cmd **table;
	uint32_t ntable, table_cap;
	struct wire_cmd *free_list;
	struct wire_cmd *done_head; /* ended here, to be delivered */
	bool aborted, stopping;
	bool ended;                /* submits fail from now on */
	unsigned inflight;         /* accepted and not yet delivered */

	pthread_mutex_t out_lock;  /* the fields down to out_dead */
	struct wire_cmd *out_head, *out_tail;
	bool out_dead;

	/* Wake-up protocol: the receiver sets sleeping, then looks at the
	 * flags; a thread that sets a flag then looks at sleeping. */
	atomic_bool sleeping;
	atomic_bool out_pending;   /* the output queue is not empty */
	atomic_bool done_pending;  /* done_head is not empty */
	atomic_bool look;          /* abort or stop was asked, or a send
	                              failed */
	atomic_int send_errno;     /* the send that failed (0: none) */

	pthread_mutex_t pin_lock;  /* batch_pins reaching 0 (pin_cond) */
	pthread_cond_t pin_cond;
	atomic_uint batch_pins;    /* threads whose batch holds a send of
	                              ours (sendbatch.c): close waits */
	atomic_bool dead;          /* for check(); dead_reason set before */
	char dead_reason[256];

	/* receiver only */
	uint8_t *stage;
	uint32_t stage_pos, stage_len;
	bool poll_first;
	bool long_payloads;        /* the last payload went straight */
	enum { GO_ON, END_STOP, END_ABORT, END_EOF, END_ERROR,
	       END_SEND_ERROR } end;
	int end_errno;
	bool draining;
};

static __thread struct wire *on_receiver;

static void wake(struct wire *w)
{
	uint64_t one = 1;
	if (write(w->wake_fd, &one, sizeof(one)) < 0) {
		/* saturated: the receiver is awake anyway */
	}
}

static void wake_if_sleeping(struct wire *w)
{
	if (on_receiver != w && atomic_load(&w->sleeping))
		wake(w);
}

/* ---- output ---- */

/* out_lock held: sends what is queued without blocking, several frames
 * per call; stops when the socket is full.  A send error drops the output
 * (a frame may be cut: nothing more can be framed) and wakes the
 * receiver, which ends the connection (must_end). */
static void flush_out_locked(struct wire *w)
{
	while (w->out_head && !w->out_dead) {
		struct iovec iov[2 * SEND_BATCH];
		int n = 0;
		for (struct wire_cmd *c = w->out_head;
		     c && n + 2 <= 2 * SEND_BATCH; c = c->next_out) {
			uint32_t s = c->out_sent;
			if (s < NBDW_REQUEST_SIZE) {
				iov[n++] = (struct iovec){c->hdr + s,
				                          NBDW_REQUEST_SIZE - s};
				s = 0;
			} else {
				s -= NBDW_REQUEST_SIZE;
			}
			if (c->payload_len > s)
				iov[n++] = (struct iovec){(char *)c->payload + s,
				                          c->payload_len - s};
		}
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t sent = sendmsg(w->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				/* broken (the server stopped reading, no
				 * memory): nothing more can be framed; the
				 * receiver ends the connection */
				atomic_store(&w->send_errno, errno);
				w->out_dead = true;
				w->out_head = w->out_tail = NULL;
				atomic_store(&w->look, true);
				wake(w);
			}
			break;
		}
		while (sent > 0) {
			struct wire_cmd *c = w->out_head;
			uint32_t left = NBDW_REQUEST_SIZE + c->payload_len -
			                c->out_sent;
			if ((size_t)sent < left) {
				c->out_sent += (uint32_t)sent;
				break;
			}
			sent -= left;
			w->out_head = c->next_out;
			if (!w->out_head)
				w->out_tail = NULL;
			/* c may be answered and recycled from here on */
			atomic_store_explicit(&c->sent_whole, true,
			                      memory_order_release);
		}
	}
	atomic_store(&w->out_pending, w->out_head != NULL);
}

/* Sends what is queued; what the socket does not take is the receiver's
 * to send (woken if it sleeps). */
static void flush_out(struct wire *w)
{
	bool left;

	pthread_mutex_lock(&w->out_lock);
	flush_out_locked(w);
	left = w->out_head != NULL;
	pthread_mutex_unlock(&w->out_lock);
	if (left)
		wake_if_sleeping(w);
}

/* A send this thread's batch deferred (sendbatch.c): w stayed pinned. */
static void batch_send(void *obj)
{
	struct wire *w = obj;

	flush_out(w);
	/* under pin_lock: close frees w once it saw 0 and took the lock */
	pthread_mutex_lock(&w->pin_lock);
	if (atomic_fetch_sub(&w->batch_pins, 1) == 1)
		pthread_cond_broadcast(&w->pin_cond);
	pthread_mutex_unlock(&w->pin_lock);
}

/* Queues c's frame and sends what the socket takes, or, inside a batch,
 * when the batch is flushed (one sendmsg for the batch's frames). */
static void send_frame(struct wire *w, struct wire_cmd *c)
{
	bool first, left;

	pthread_mutex_lock(&w->out_lock);
	if (w->out_dead) { /* c is live: the receiver fails it at the end */
		pthread_mutex_unlock(&w->out_lock);
		return;
	}
	c->out_sent = 0;
	c->next_out = NULL;
	if (w->out_tail)
		w->out_tail->next_out = c;
	else
		w->out_head = c;
	w->out_tail = c;
	if (bm_sendbatch_defer(batch_send, w, &first)) {
		if (first)
			atomic_fetch_add(&w->batch_pins, 1);
		pthread_mutex_unlock(&w->out_lock);
		return;
	}
	flush_out_locked(w);
	left = w->out_head != NULL;
	pthread_mutex_unlock(&w->out_lock);
	if (left)
		wake_if_sleeping(w);
}

/* ---- commands ---- */

/* c ends without a request to the server (nothing to send, or nothing
 * the export needs): the receiver delivers it.  Not an answer of the
 * server (bm_breq.unanswered). */
static void complete_here(struct wire *w, struct wire_cmd *c)
{
	if (c->r && c->done_bytes == 0 && c->op == c->r->op)
		c->r->unanswered = true;
	pthread_mutex_lock(&w->lock);
	c->next = w->done_head;
	w->done_head = c;
	pthread_mutex_unlock(&w->lock);
	atomic_store(&w->done_pending, true);
	wake_if_sleeping(w);
}

static uint32_t data_piece(const struct wire *w, uint32_t left)
{
	return bm_nbd_data_piece(w->pr.max_block, left);
}

static uint32_t zero_piece(const struct wire *w, uint32_t left)
{
	return bm_nbd_zero_piece(w->pr.can_zero, w->pr.max_block, left);
}

/*
 * Sends c's next request (the first, the next piece, or the flush of an
 * emulated FUA).  Returns 0, or -errno when the connection has ended (c
 * was not sent; the caller ends it).  A request with nothing to send
 * completes here.
 */
static int start(struct wire *w, struct wire_cmd *c)
{
	struct bm_breq *r = c->r;
	uint16_t type, flags = 0;
	uint64_t offset = 0;
	uint32_t length = 0;
	const char *payload = NULL;
	struct nbdw_pending p = {.kind = NBDW_KIND_OTHER};

	c->changes_data = false;
	if (c->xr) {
		uint64_t count = c->xr->length > (1u << 30) ? (1u << 30)
		                                            : c->xr->length;
		c->xr->length = count;
		c->xr->run = count;
		c->xr->zero = false;
		type = NBDW_CMD_BLOCK_STATUS;
		flags = NBDW_FLAG_REQ_ONE;
		offset = c->xr->offset;
		length = (uint32_t)count;
		p.kind = NBDW_KIND_EXTENT;
		p.offset = offset;
		p.length = length;
		goto send;
	}
	if ((r->flags & BM_BOP_FUA) && c->op != BM_BOP_FLUSH &&
	    c->op != BM_BOP_READ) {
		if (w->pr.can_fua)
			flags = NBDW_FLAG_FUA;
		else if (c->done_bytes == 0 && c->op == r->op)
			c->then_flush = w->pr.can_flush;
	}
	offset = r->offset + c->done_bytes;
	switch (c->op) {
	case BM_BOP_READ:
		if (r->length == 0)
			goto here;
		c->piece = data_piece(w, r->length - c->done_bytes);
		type = NBDW_CMD_READ;
		length = c->piece;
		p.kind = NBDW_KIND_READ;
		p.offset = offset;
		p.length = length;
		p.buf = (char *)r->buf + c->done_bytes;
		break;
	case BM_BOP_WRITE:
		if (r->length == 0)
			goto here;
		c->piece = data_piece(w, r->length - c->done_bytes);
		type = NBDW_CMD_WRITE;
		length = c->piece;
		payload = (const char *)r->buf + c->done_bytes;
		c->changes_data = true;
		break;
	case BM_BOP_FLUSH:
		if (!w->pr.can_flush)
			goto here;
		type = NBDW_CMD_FLUSH;
		offset = 0;
		break;
	default: /* ZERO, and TRIM as zeroing that may unmap */
		if (c->done_bytes >= r->length)
			goto here;
		c->piece = zero_piece(w, r->length - c->done_bytes);
		length = c->piece;
		c->changes_data = true;
		if (w->pr.can_zero) {
			type = NBDW_CMD_WRITE_ZEROES;
		} else {
			payload = bm_nbd_zero_map();
			if (!payload)
				return -ENOMEM;
			type = NBDW_CMD_WRITE;
		}
		break;
	}
send:
	pthread_mutex_lock(&w->lock);
	if (w->ended) {
		pthread_mutex_unlock(&w->lock);
		return w->aborted ? -ECONNABORTED : -ENOTCONN;
	}
	c->gen++;
	c->live = true;
	c->pend = p;
	atomic_store_explicit(&c->sent_whole, false, memory_order_relaxed);
	pthread_mutex_unlock(&w->lock);
	nbdw_encode_request(c->hdr, flags, type,
	                    (uint64_t)c->gen << 32 | c->index, offset, length);
	c->payload = payload;
	c->payload_len = payload ? length : 0;
	send_frame(w, c);
	return 0;
here:
	complete_here(w, c);
	return 0;
}

/* Accepts a request (r) or an allocation question (xr) and sends it. */
static int enqueue(struct wire *w, struct bm_breq *r, struct bm_extent_req *xr)
{
	struct wire_cmd *c;
	int err;

	pthread_mutex_lock(&w->lock);
	if (w->aborted || w->ended || w->stopping) {
		err = w->aborted ? -ECONNABORTED : -ENOTCONN;
		pthread_mutex_unlock(&w->lock);
		return err;
	}
	c = w->free_list;
	if (c) {
		w->free_list = c->next;
	} else {
		if (w->ntable == w->table_cap) {
			uint32_t cap = w->table_cap ? 2 * w->table_cap : 64;
			struct wire_cmd **t = realloc(w->table, cap * sizeof(*t));
			if (!t) {
				pthread_mutex_unlock(&w->lock);
				return -ENOMEM;
			}
			w->table = t;
			w->table_cap = cap;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			pthread_mutex_unlock(&w->lock);
			return -ENOMEM;
		}
		c->w = w;
		c->index = w->ntable;
		w->table[w->ntable++] = c;
	}
	c->r = r;
	c->xr = xr;
	c->op = r ? r->op : BM_BOP_READ;
	c->then_flush = false;
	c->done_bytes = c->piece = 0;
	w->inflight++;
	pthread_mutex_unlock(&w->lock);
	err = start(w, c);
	if (err < 0) {
		bool last;
		pthread_mutex_lock(&w->lock);
		c->next = w->free_list;
		w->free_list = c;
		w->inflight--;
		last = w->stopping && w->inflight == 0;
		pthread_mutex_unlock(&w->lock);
		if (last) { /* a close() waits for this */
			atomic_store(&w->look, true);
			wake(w);
		}
	}
	return err;
}

/* Runs done() of a finished command and recycles it (receiver, no lock). */
static void deliver(struct wire *w, struct wire_cmd *c, int result)
{
	if (c->xr) {
		struct bm_extent_req *xr = c->xr;
		if (result < 0 || !c->pend.answered) {
			xr->run = xr->length;
			xr->zero = false;
		} else {
			if (c->pend.run >= 1 && c->pend.run < xr->length)
				xr->run = c->pend.run;
			xr->zero = (c->pend.status & NBDW_STATE_ZERO) != 0;
		}
		xr->done(xr, result);
	} else {
		c->r->done(c->r, result);
	}
	pthread_mutex_lock(&w->lock);
	c->r = NULL;
	c->xr = NULL;
	c->next = w->free_list;
	w->free_list = c;
	w->inflight--;
	if (w->stopping && w->inflight == 0)
		atomic_store(&w->look, true); /* close() waits for this */
	pthread_mutex_unlock(&w->lock);
}

/* The server answered c's request in full (receiver): the next piece, or
 * done(). */
static void answered(struct wire *w, struct wire_cmd *c)
{
	int result = 0;
	bool more = false;

	if (c->pend.error)
		result = -c->pend.error;
	else if (c->pend.kind == NBDW_KIND_READ && !nbdw_read_complete(&c->pend))
		result = -EIO; /* a server that broke the protocol */
	if (result == 0 && !c->xr) {
		if (c->op != BM_BOP_FLUSH) {
			c->done_bytes += c->piece;
			more = c->done_bytes < c->r->length;
		}
		if (!more && c->then_flush) {
			c->then_flush = false;
			c->op = BM_BOP_FLUSH;
			more = true;
		}
		if (more) {
			result = start(w, c);
			if (result == 0)
				return;
		}
	}
	deliver(w, c, result);
}

static void deliver_done_list(struct wire *w)
{
	struct wire_cmd *list;

	if (!atomic_load(&w->done_pending))
		return;
	pthread_mutex_lock(&w->lock);
	list = w->done_head;
	w->done_head = NULL;
	atomic_store(&w->done_pending, false);
	pthread_mutex_unlock(&w->lock);
	while (list) {
		struct wire_cmd *c = list;
		list = c->next;
		deliver(w, c, 0);
	}
}

/* ---- the receiver's reading ---- */

/* Whether the receiver must stop reading (abort, a failed send, or close
 * with nothing in flight); sets end. */
static bool must_end(struct wire *w)
{
	bool abort_now, stop;

	if (!atomic_exchange(&w->look, false))
		return false;
	if (atomic_load(&w->send_errno)) {
		w->end = END_SEND_ERROR;
		w->end_errno = atomic_load(&w->send_errno);
		return true;
	}
	pthread_mutex_lock(&w->lock);
	abort_now = w->aborted;
	stop = w->stopping && w->inflight == 0;
	pthread_mutex_unlock(&w->lock);
	if (abort_now)
		w->end = END_ABORT;
	else if (stop)
		w->end = END_STOP;
	return abort_now || stop;
}

/* What the receiver does between reads: delivers what ended here, sends
 * what submitters left queued.  False when it must stop reading. */
static bool service(struct wire *w)
{
	deliver_done_list(w);
	if (atomic_load(&w->out_pending)) {
		pthread_mutex_lock(&w->out_lock);
		flush_out_locked(w);
		pthread_mutex_unlock(&w->out_lock);
	}
	return !must_end(w);
}

/* Waits until the socket is readable (or writable while output waits),
 * or something needs the receiver.  False when it must stop. */
static bool wait_socket(struct wire *w)
{
	for (;;) {
		bm_sendbatch_flush(); /* never sleep on a deferred send */
		atomic_store(&w->sleeping, true);
		if (atomic_load(&w->done_pending) || atomic_load(&w->look)) {
			atomic_store(&w->sleeping, false);
			if (!service(w))
				return false;
			continue;
		}
		bool out = atomic_load(&w->out_pending);
		struct pollfd pfd[2] = {
			{.fd = w->wake_fd, .events = POLLIN},
			{.fd = w->fd, .events = (short)(POLLIN | (out ? POLLOUT : 0))},
		};
		int n = poll(pfd, 2, -1);
		atomic_store(&w->sleeping, false);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			w->end = END_ERROR;
			w->end_errno = errno;
			return false;
		}
		if (pfd[0].revents & POLLIN) {
			uint64_t v;
			if (read(w->wake_fd, &v, sizeof(v)) < 0) {
				/* spurious */
			}
		}
		if (!service(w))
			return false;
		if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))
			return true;
	}
}

/* One read into dst (up to len bytes), waiting as needed.  Returns the
 * bytes read, or 0 when the receiver must stop (end says why). */
static size_t read_some(struct wire *w, void *dst, size_t len)
{
	for (;;) {
		if (!service(w))
			return 0;
		/* what the replies read so far made this thread send (the
		 * clients' replies, the next requests) goes out now: a batch
		 * is one read's worth of replies */
		bm_sendbatch_flush();
		if (w->poll_first && !wait_socket(w))
			return 0;
		ssize_t n = recv(w->fd, dst, len, MSG_DONTWAIT);
		if (n > 0) {
			w->poll_first = (size_t)n < len;
			return (size_t)n;
		}
		if (n == 0) {
			w->end = END_EOF;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			w->poll_first = true;
			continue;
		}
		w->end = END_ERROR;
		w->end_errno = errno;
		return 0;
	}
}

static struct wire *of_source(struct nbdw_source *s);

static const uint8_t *src_need(struct nbdw_source *s, size_t n)
{
	struct wire *w = of_source(s);

	while (w->stage_len - w->stage_pos < n) {
		if (w->stage_pos > 0) {
			memmove(w->stage, w->stage + w->stage_pos,
			        w->stage_len - w->stage_pos);
			w->stage_len -= w->stage_pos;
			w->stage_pos = 0;
		}
		/* After a long payload the next reply most likely carries
		 * one too: read its header (and a data chunk's offset) only,
		 * so that its data goes straight to its buffer rather than
		 * through here; after short ones, read as many as came. */
		size_t room = STAGE_SIZE - w->stage_len;
		if (w->long_payloads && room > HEADER_READ) {
			room = HEADER_READ > n ? HEADER_READ : n;
			/* once: replies without data (writes) batch again */
			w->long_payloads = false;
		}
		size_t got = read_some(w, w->stage + w->stage_len, room);
		if (got == 0)
			return NULL;
		w->stage_len += (uint32_t)got;
	}
	const uint8_t *p = w->stage + w->stage_pos;
	w->stage_pos += (uint32_t)n;
	return p;
}

static int src_into(struct nbdw_source *s, void *dst, size_t n)
{
	struct wire *w = of_source(s);
	char *d = dst;

	w->long_payloads = d && n >= DIRECT_MIN;
	while (n > 0) {
		uint32_t have = w->stage_len - w->stage_pos;
		if (have > 0) {
			size_t k = have < n ? have : n;
			if (d) {
				memcpy(d, w->stage + w->stage_pos, k);
				d += k;
			}
			w->stage_pos += (uint32_t)k;
			n -= k;
			continue;
		}
		w->stage_pos = w->stage_len = 0;
		if (d && n >= DIRECT_MIN) { /* straight into the buffer */
			size_t got = read_some(w, d, n);
			if (got == 0)
				return -1;
			d += got;
			n -= got;
			continue;
		}
		size_t got = read_some(w, w->stage, STAGE_SIZE);
		if (got == 0)
			return -1;
		w->stage_len = (uint32_t)got;
	}
	return 0;
}

struct wire_source {
	struct nbdw_source s;
	struct wire *w;
};

static struct wire *of_source(struct nbdw_source *s)
{
	return ((struct wire_source *)s)->w;
}

/* The parser's lookup: the live command a cookie names (a request sent
 * whole only: the server cannot answer what it has not read). */
static struct nbdw_pending *lookup(void *opaque, uint64_t cookie)
{
	struct wire *w = opaque;
	uint32_t index = (uint32_t)cookie, gen = (uint32_t)(cookie >> 32);
	struct wire_cmd *c = NULL;

	pthread_mutex_lock(&w->lock);
	if (index < w->ntable && w->table[index]->live &&
	    w->table[index]->gen == gen)
		c = w->table[index];
	pthread_mutex_unlock(&w->lock);
	if (!c)
		return NULL;
	if (!atomic_load_explicit(&c->sent_whole, memory_order_acquire)) {
		/* its sender may be finishing: ask under its lock */
		pthread_mutex_lock(&w->out_lock);
		bool whole = atomic_load(&c->sent_whole);
		pthread_mutex_unlock(&w->out_lock);
		if (!whole)
			return NULL;
	}
	return &c->pend;
}

/* ---- the end of the connection ---- */

static void set_dead(struct wire *w, const char *fmt, const char *arg)
{
	snprintf(w->dead_reason, sizeof(w->dead_reason), fmt, arg);
	atomic_store(&w->dead, true);
}

/*
 * The receiver ends the connection: nothing more is sent, every command
 * in flight fails (err; -ECONNABORTED after an abort).  keep_reading: the
 * server may still carry out writes it holds, so the socket is shut for
 * writing only and read until the server closes it.
 */
static void end_connection(struct wire *w, int err, bool keep_reading)
{
	struct wire_cmd *list = NULL;
	bool writes = false, aborted;

	pthread_mutex_lock(&w->lock);
	w->ended = true;
	aborted = w->aborted;
	for (uint32_t i = 0; i < w->ntable; i++) {
		struct wire_cmd *c = w->table[i];
		if (!c->live)
			continue;
		c->live = false;
		writes = writes || c->changes_data;
		c->next = list;
		list = c;
	}
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_lock(&w->out_lock); /* waits out a sender's sendmsg */
	w->out_dead = true;
	w->out_head = w->out_tail = NULL;
	atomic_store(&w->out_pending, false);
	pthread_mutex_unlock(&w->out_lock);
	if (aborted)
		err = -ECONNABORTED;
	if (keep_reading && writes) {
		w->draining = true;
		atomic_fetch_add(&w->base.detached, 1);
		shutdown(w->fd, SHUT_WR);
	} else {
		shutdown(w->fd, SHUT_RDWR);
	}
	while (list) {
		struct wire_cmd *c = list;
		list = c->next;
		deliver(w, c, err);
	}
}

static void end_drain(struct wire *w)
{
	if (!w->draining)
		return;
	w->draining = false;
	atomic_fetch_sub(&w->base.detached, 1);
}

/* After the end: delivers what ends here, drops what the old connection's
 * server still sends until it closes it; returns when close() asks. */
static void after_end(struct wire *w)
{
	for (;;) {
		deliver_done_list(w);
		bm_sendbatch_flush();
		pthread_mutex_lock(&w->lock);
		bool stop = w->stopping && w->inflight == 0;
		pthread_mutex_unlock(&w->lock);
		if (stop)
			break;
		atomic_store(&w->sleeping, true);
		if (atomic_load(&w->done_pending) || atomic_load(&w->look)) {
			atomic_store(&w->sleeping, false);
			atomic_store(&w->look, false);
			continue;
		}
		struct pollfd pfd[2] = {
			{.fd = w->wake_fd, .events = POLLIN},
			{.fd = w->fd, .events = POLLIN},
		};
		int n = poll(pfd, w->draining ? 2 : 1, -1);
		atomic_store(&w->sleeping, false);
		if (n < 0)
			continue;
		if (pfd[0].revents & POLLIN) {
			uint64_t v;
			if (read(w->wake_fd, &v, sizeof(v)) < 0) {
				/* spurious */
			}
		}
		if (w->draining && pfd[1].revents) {
			char sink[16384];
			ssize_t k;
			while ((k = recv(w->fd, sink, sizeof(sink),
			                 MSG_DONTWAIT)) > 0)
				;
			if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
			               errno != EINTR))
				end_drain(w);
		}
	}
	end_drain(w); /* closing: the server's end is not waited for */
}

static void *receiver_main(void *arg)
{
	struct wire *w = arg;
	struct wire_source src = {{src_need, src_into}, w};

	pthread_setname_np(pthread_self(), "bm-nbd-recv");
	on_receiver = w;
	bm_sendbatch_open();
	for (;;) {
		uint64_t cookie;
		bool done;
		const char *why;
		enum nbdw_result res = nbdw_read_reply(&src.s, w->pr.structured,
		                                       lookup, w, &cookie, &done,
		                                       &why);
		if (res == NBDW_CHUNK) {
			if (done) {
				struct wire_cmd *c;
				pthread_mutex_lock(&w->lock);
				c = w->table[(uint32_t)cookie];
				c->live = false;
				pthread_mutex_unlock(&w->lock);
				answered(w, c);
			}
			continue;
		}
		/* Every end is reported as the connection's loss (-ENOTCONN,
		 * -ECONNABORTED after an abort): the component is
		 * disconnected and reconnected, not failed, as with libnbd. */
		if (res == NBDW_PROTOCOL) {
			set_dead(w, "the server broke the NBD protocol: %s", why);
			end_connection(w, -ENOTCONN, true);
			break;
		}
		switch (w->end) {
		case END_STOP:
			bm_sendbatch_close();
			return NULL; /* healthy; close() disconnects */
		case END_ABORT:
			set_dead(w, "%s", "the connection was aborted");
			end_connection(w, -ECONNABORTED, true);
			break;
		case END_EOF:
			set_dead(w, "%s", "the server closed the connection");
			end_connection(w, -ENOTCONN, false);
			break;
		case END_SEND_ERROR: /* writes may be at the server */
			set_dead(w, "cannot send to the server: %s",
			         strerror(w->end_errno));
			end_connection(w, -ENOTCONN, true);
			break;
		default:
			set_dead(w, "%s", strerror(w->end_errno));
			end_connection(w, -ENOTCONN, false);
			break;
		}
		break;
	}
	after_end(w);
	bm_sendbatch_close();
	return NULL;
}

/* ---- backend ops ---- */

static int wire_submit(struct bm_backend *be, struct bm_breq *r)
{
	return enqueue((struct wire *)be, r, NULL);
}

static int wire_extent(struct bm_backend *be, struct bm_extent_req *r)
{
	struct wire *w = (struct wire *)be;

	if (!w->pr.can_extents) {
		r->run = r->length;
		r->zero = false;
		r->done(r, 0);
		return 0;
	}
	return enqueue(w, NULL, r);
}

static void wire_abort(struct bm_backend *be)
{
	struct wire *w = (struct wire *)be;

	pthread_mutex_lock(&w->lock);
	w->aborted = true;
	pthread_mutex_unlock(&w->lock);
	atomic_store(&w->look, true);
	wake(w);
}

static int wire_check(struct bm_backend *be)
{
	struct wire *w = (struct wire *)be;

	if (!atomic_load(&w->dead))
		return 0;
	return bm_error(ENOTCONN, "%s: the NBD connection is gone: %s",
	                w->base.path, w->dead_reason);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A clean goodbye: the disconnect request, then the server's close (with
 * a deadline).  Only on a connection with nothing in flight. */
static void disconnect(struct wire *w)
{
	uint8_t hdr[NBDW_REQUEST_SIZE];
	int64_t deadline = now_ms() + BM_NBD_DISCONNECT_TIMEOUT_MS;

	nbdw_encode_request(hdr, 0, NBDW_CMD_DISC, 0, 0, 0);
	if (send(w->fd, hdr, sizeof(hdr), MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(hdr))
		return;
	shutdown(w->fd, SHUT_WR);
	for (;;) {
		char sink[4096];
		int64_t left = deadline - now_ms();
		struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return;
		ssize_t k = recv(w->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

static void wire_close(struct bm_backend *be)
{
	struct wire *w = (struct wire *)be;
	bool clean;

	/* a request whose waiter gave up (a sync call past its deadline)
	 * may never be answered: it is not waited for */
	if (atomic_load(&be->detached) > 0)
		wire_abort(be);
	bm_sendbatch_flush(); /* this thread's sends of ours, if any */
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_mutex_unlock(&w->lock);
	atomic_store(&w->look, true);
	wake(w);
	pthread_join(w->receiver, NULL);
	/* a thread that sent to us in a batch flushes it before it may
	 * sleep (sendbatch.c): soon; no new pins (submits fail now) */
	pthread_mutex_lock(&w->pin_lock);
	while (atomic_load(&w->batch_pins) > 0)
		pthread_cond_wait(&w->pin_cond, &w->pin_lock);
	pthread_mutex_unlock(&w->pin_lock);
	/* the receiver is gone: this thread owns everything now */
	clean = !w->aborted && !w->ended && !atomic_load(&w->dead);
	if (clean)
		disconnect(w);
	close(w->fd);
	close(w->wake_fd);
	for (uint32_t i = 0; i < w->ntable; i++)
		free(w->table[i]);
	free(w->table);
	free(w->stage);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->out_lock);
	pthread_mutex_destroy(&w->pin_lock);
	pthread_cond_destroy(&w->pin_cond);
	free(w);
}

static const struct bm_backend_ops wire_ops = {
	.kind = "nbd",
	.submit = wire_submit,
	.pread_sync = bm_nbd_pread_sync,
	.pwrite_sync = bm_nbd_pwrite_sync,
	.flush_sync = bm_nbd_flush_sync,
	.close = wire_close,
	.abort = wire_abort,
	.check = wire_check,
	.extent = wire_extent,
};

int bm_nbd_wire_open(int fd, const struct bm_nbd_props *pr,
                     struct bm_backend **out)
{
	struct wire *w = calloc(1, sizeof(*w));

	if (!w) {
		close(fd);
		return bm_error(ENOMEM, "out of memory");
	}
	w->pr = *pr;
	snprintf(w->uri, sizeof(w->uri), "%s", pr->uri);
	w->pr.uri = w->uri;
	w->fd = fd;
	w->base.ops = &wire_ops;
	snprintf(w->base.path, sizeof(w->base.path), "%s", pr->uri);
	w->base.size = pr->size;
	w->base.rotational = pr->rotational;
	w->base.min_block = pr->min_block;
	w->stage = malloc(STAGE_SIZE);
	w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* both are held for a few microseconds at most: spinning a little
	 * before sleeping in the kernel saves a wake-up */
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&w->lock, &ma);
	pthread_mutex_init(&w->out_lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_mutex_init(&w->pin_lock, NULL);
	pthread_cond_init(&w->pin_cond, NULL);
	if (!w->stage || w->wake_fd < 0 ||
	    pthread_create(&w->receiver, NULL, receiver_main, w) != 0) {
		if (w->wake_fd >= 0)
			close(w->wake_fd);
		close(fd);
		free(w->stage);
		pthread_mutex_destroy(&w->lock);
		pthread_mutex_destroy(&w->out_lock);
		pthread_mutex_destroy(&w->pin_lock);
		pthread_cond_destroy(&w->pin_cond);
		free(w);
		return bm_error(EAGAIN, "%s: cannot start the I/O thread",
		                pr->uri);
	}
	*out = &w->base;
	return 0;
}
