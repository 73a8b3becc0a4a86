/*
 * Remote components: an NBD export (nbd://HOST[:PORT]/EXPORT,
 * nbd+unix:///EXPORT?socket=PATH), through libnbd's asynchronous API.
 *
 * One connection per component with any number of requests in flight, and
 * one event-loop thread per connection that polls the socket and reads the
 * replies.  libnbd handles are thread-safe and a command given to a busy
 * state machine is queued by libnbd and sent when it is ready again, so a
 * submitter issues its command itself: every libnbd call after open is made
 * under call_lock (never held across a poll), which a submitter only tries
 * to take.  A submitter that finds it taken leaves its command on a queue;
 * whoever holds call_lock looks at the queue after letting go and issues
 * what it finds, so nobody waits for call_lock on the data path.  The loop
 * is woken (eventfd) only when it must look again: libnbd wants to write
 * (a command did not go out whole), the connection ended, or a command
 * completed at once; a command sent whole costs no wake-up (its reply wakes
 * the loop's poll).
 *
 * Why the loop polls its own descriptor: when the server goes away, libnbd
 * closes its socket inside whatever call noticed it, now on any thread.  A
 * thread polling that socket number would then poll a number the next
 * accept() reuses (a control client, an NBD client) and pin that socket
 * open (the old CLI hang).  The loop polls a duplicate made at open, which
 * nobody else closes; after every libnbd call the caller asks libnbd (under
 * call_lock) whether the connection is dead or closed and, if it is, wakes
 * the loop, which then fails everything queued, closes the duplicate and
 * never polls the socket again; later submits fail at once.
 *
 * libnbd runs completion callbacks with the handle locked, so the callback
 * only moves the command to a completed list (under call_lock, which every
 * caller of libnbd holds); the loop delivers done() with no lock held, where
 * done() may start more I/O on any component (on this one it is queued and
 * issued before the loop polls again).
 *
 * abort() (any thread) sets a flag and wakes the loop, which shuts its
 * duplicate of the socket down (shutdown(2) ends the connection for libnbd
 * too): libnbd then sees the connection end and fails what is in flight,
 * reported as -ECONNABORTED.  With writes outstanding, the server may
 * still carry them out: the connection is then ended for libnbd alone and
 * kept, shut for writing, until the server closes it
 * (end_connection_locked), and the component is not reconnected meanwhile.
 *
 * What the export cannot do is emulated: no FUA means write then flush; no
 * WRITE_ZEROES means writing zeros from one shared read-only zero mapping.
 * A read or write longer than the export takes (its advertised maximum
 * block size, and never more than 32 MiB: the protocol's default, which
 * every server takes) goes in pieces, one after another (each waits for
 * the one before: a round trip per piece): a read-ahead chunk may be longer,
 * and a client of ours may send up to 32 MiB to an export that takes
 * 1 MiB (before, such an export answered EINVAL and was failed out).
 * TRIM is zeroing that may unmap (so every copy reads zeros after it).
 * Zeroing is sent in pieces the export accepts: at most 32 MiB (or the
 * export's maximum block size) for written zeros, the maximum block size
 * (when advertised) for native ones; the pieces go one after another (the
 * loop sends the next piece, and the flush of an emulated FUA).
 * Connecting and the clean disconnect at close have deadlines.
 *
 * extent() asks block status in the "base:allocation" context (requested at
 * connect; one extent per question): a run with the zero flag reads as
 * zeros.  An export without the context answers "all data".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libnbd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../backend.h"
#include "../error.h"
#include "../nbd_reply.h"
#include "nbd_wire.h"

#define CONNECT_TIMEOUT_MS 10000
#define DISCONNECT_TIMEOUT_MS BM_NBD_DISCONNECT_TIMEOUT_MS
#define PIECE_MAX BM_NBD_PIECE_MAX

struct nbd_backend;

/* The per-request state kept while the request is queued or in libnbd.
 * Commands are recycled through a free list (no allocation per request
 * once the pool has grown to the queue depth). */

struct nbd_cmd {
	struct nbd_backend *nb;
	struct bm_breq *r;
	struct bm_extent_req *xr; /* instead of r: an allocation question */
	bool xr_answered;
	enum bm_bop op;         /* what to send next (FUA emulation flushes) */
	int result;
	bool then_flush;        /* emulated FUA: flush once the data is done */
	bool counted;           /* call_lock: in writes_sent */
	uint32_t done_bytes;    /* read/write/zero/trim: bytes already done */
	uint32_t piece;         /* ... and the length of the piece in flight */
	/* read: what the reply's chunks covered (on_read_chunk; coverage
	 * only: kind, length and the coverage record) */
	struct nbdw_pending pend;
	struct nbd_cmd *next;   /* queue, completed list or free list */
};

struct nbd_backend {
	struct bm_backend base;
	struct nbd_handle *h;   /* called only under call_lock after open */
	int poll_fd;            /* loop only: our duplicate of libnbd's socket,
	                           closed once the connection is over */
	int dead_fd;            /* a socket whose peer is closed, made at
	                           open: put in libnbd's place at an abort
	                           with writes outstanding (nothing to
	                           allocate then) */
	int wake_fd;
	pthread_t loop;
	bool can_fua, can_zero, can_flush;
	bool can_extents;       /* base:allocation was negotiated */
	uint32_t max_block;     /* advertised maximum, or 0 */

	pthread_mutex_t lock;   /* protects the fields down to inflight */
	struct nbd_cmd *queue_head, *queue_tail;
	struct nbd_cmd *free_list;
	bool stopping, aborted;
	bool dead_locked;       /* submits fail from now on */
	unsigned inflight;      /* accepted and not yet delivered */
	atomic_bool sleeping;   /* the loop is going to poll: it looks at the
	                           queue and libnbd's state after setting this */

	/* Held across every libnbd call after open (by the loop or a
	 * submitter), never across a poll or a done() callback; submitters
	 * only try to take it.  Protects the fields down to over_reason. */
	pthread_mutex_t call_lock;
	struct nbd_cmd *done_head; /* completed, not yet seen by the loop */
	bool over;              /* libnbd reported the connection dead/closed */
	unsigned writes_sent;   /* writes, zeros and trims libnbd holds */
	char over_reason[256];  /* libnbd's error, from the call that saw it */

	atomic_bool dead;       /* for check(): reason is set before */
	char dead_reason[256];

	/* loop thread only */
	bool shut;              /* abort: the socket was shut down */
	bool draining;          /* abort with writes at the server: poll_fd
	                           is read until the server closes it
	                           (base.detached counts it meanwhile) */
};

static __thread struct nbd_backend *in_loop; /* set on a loop thread */

static void wake(struct nbd_backend *nb)
{
	uint64_t one = 1;
	if (write(nb->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the loop is awake anyway */
	}
}

/* One read-only mapping of zeros shared by every backend: untouched
 * anonymous pages all map the kernel's zero page, so it costs no memory. */
static void *zero_map;
static pthread_once_t zero_once = PTHREAD_ONCE_INIT;

static void zero_map_init(void)
{
	void *p = mmap(NULL, PIECE_MAX, PROT_READ,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	zero_map = p == MAP_FAILED ? NULL : p;
}

const void *bm_nbd_zero_map(void)
{
	pthread_once(&zero_once, zero_map_init);
	return zero_map;
}

static long env_ms(const char *name, long dflt)
{
	const char *v = getenv(name);
	char *end;
	long ms;

	if (!v || !*v)
		return dflt;
	ms = strtol(v, &end, 10);
	return (*end || ms <= 0) ? dflt : ms;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Completes c with result: it goes to the done list, which the loop takes
 * (call_lock held: every libnbd call, hence every callback, holds it). */
static void complete(struct nbd_cmd *c, int result)
{
	struct nbd_backend *nb = c->nb;

	if (c->counted) {
		c->counted = false;
		nb->writes_sent--;
	}
	c->result = result;
	c->next = nb->done_head;
	nb->done_head = c;
}

/* c ends in issue() without being sent (nothing to send, or nothing the
 * export needs): not an answer of the server (bm_breq.unanswered). */
static void complete_here(struct nbd_cmd *c)
{
	if (c->r && c->done_bytes == 0 && c->op == c->r->op)
		c->r->unanswered = true;
	complete(c, 0);
}

/* libnbd completion callback: runs inside a libnbd call (on the loop, or on
 * a submitter whose call found the connection dead) with the handle locked
 * and call_lock held. */
static int on_complete(void *user_data, int *error)
{
	struct nbd_cmd *c = user_data;

	complete(c, *error ? -*error : 0);
	return 1;
}

/* libnbd chunk callback of a read: records what the reply covered, as
 * our own reader does (nbdw_cover: a buffer covered exactly once; libnbd
 * checks only that each chunk lies inside it and counts bytes, so a chunk
 * sent twice would make up for one never sent). */
static int on_read_chunk(void *user_data, const void *subbuf, size_t count,
                         uint64_t offset, unsigned status, int *error)
{
	struct nbd_cmd *c = user_data;
	uint64_t base = c->r->offset + c->done_bytes;

	(void)subbuf;
	(void)error;
	if ((status != LIBNBD_READ_DATA && status != LIBNBD_READ_HOLE) ||
	    count == 0)
		return 0;
	if (offset < base)
		c->pend.npiece = -1;
	else
		nbdw_cover(&c->pend, offset - base, offset - base + count);
	return 0;
}

/* libnbd completion callback of a read.  A reply that leaves part of the
 * buffer unwritten is an error: libnbd fails such a read only in
 * nbd_aio_command_completed, not in the completion callback, and read
 * buffers are not zeroed first (nbd_set_pread_initialize), so that part
 * would hold whatever the buffer held before (another chunk's data, or
 * zeros the kernel put back). */
static int on_read_complete(void *user_data, int *error)
{
	struct nbd_cmd *c = user_data;

	if (*error)
		complete(c, -*error);
	else if (!nbdw_read_complete(&c->pend))
		complete(c, -EIO); /* (a server that broke the protocol) */
	else
		complete(c, 0);
	return 1;
}

static uint32_t data_piece(const struct nbd_backend *nb, uint32_t left)
{
	return bm_nbd_data_piece(nb->max_block, left);
}

static uint32_t zero_piece(const struct nbd_backend *nb, uint32_t left)
{
	return bm_nbd_zero_piece(nb->can_zero, nb->max_block, left);
}

/* libnbd extent callback (call_lock held): the first extent answers. */
static int on_extent(void *user_data, const char *metacontext,
                     uint64_t offset, uint32_t *entries, size_t nr_entries,
                     int *error)
{
	struct nbd_cmd *c = user_data;
	struct bm_extent_req *xr = c->xr;

	if (c->xr_answered || nr_entries < 2 || offset != xr->offset ||
	    strcmp(metacontext, LIBNBD_CONTEXT_BASE_ALLOCATION) != 0)
		return 0;
	c->xr_answered = true;
	if (entries[0] >= 1 && entries[0] < xr->length)
		xr->run = entries[0];
	xr->zero = (entries[1] & LIBNBD_STATE_ZERO) != 0;
	return 0;
}

static void issue_extent(struct nbd_backend *nb, struct nbd_cmd *c)
{
	nbd_extent_callback ecb = {.callback = on_extent, .user_data = c};
	nbd_completion_callback cb = {.callback = on_complete, .user_data = c};
	uint64_t count = c->xr->length > (1u << 30) ? (1u << 30) : c->xr->length;

	if (count < c->xr->length)
		c->xr->length = count;
	c->xr->run = c->xr->length;
	c->xr->zero = false;
	if (nbd_aio_block_status(nb->h, count, c->xr->offset, ecb, cb,
	                         LIBNBD_CMD_FLAG_REQ_ONE) < 0) {
		int err = nbd_get_errno();
		complete(c, err ? -err : -EIO);
	}
}

/* call_lock held: c's next command changes data at the server (a write,
 * zeros, a trim); counted until it completes, so that an abort knows the
 * server may still carry it out (see end_connection_locked). */
static void count_write(struct nbd_backend *nb, struct nbd_cmd *c)
{
	if (!c->counted) {
		c->counted = true;
		nb->writes_sent++;
	}
}

/* Sends c's next command to libnbd; on failure c completes with the error. */
static void issue(struct nbd_backend *nb, struct nbd_cmd *c)
{
	struct bm_breq *r = c->r;
	nbd_completion_callback cb = {.callback = on_complete, .user_data = c};
	uint32_t flags = 0;
	int64_t cookie;

	if (c->xr) {
		issue_extent(nb, c);
		return;
	}
	if ((r->flags & BM_BOP_FUA) && c->op != BM_BOP_FLUSH &&
	    c->op != BM_BOP_READ) {
		if (nb->can_fua)
			flags = LIBNBD_CMD_FLAG_FUA;
		else if (c->done_bytes == 0 && c->op == r->op)
			c->then_flush = nb->can_flush;
	}
	switch (c->op) {
	case BM_BOP_READ:
		if (r->length == 0) {
			complete_here(c);
			return;
		}
		c->piece = data_piece(nb, r->length - c->done_bytes);
		c->pend = (struct nbdw_pending){.kind = NBDW_KIND_READ,
		                                .length = c->piece};
		cookie = nbd_aio_pread_structured(nb->h,
		                  (char *)r->buf + c->done_bytes, c->piece,
		                  r->offset + c->done_bytes,
		                  (nbd_chunk_callback){.callback =
		                  on_read_chunk, .user_data = c},
		                  (nbd_completion_callback){.callback =
		                  on_read_complete, .user_data = c}, 0);
		break;
	case BM_BOP_WRITE:
		if (r->length == 0) {
			complete_here(c);
			return;
		}
		c->piece = data_piece(nb, r->length - c->done_bytes);
		count_write(nb, c);
		cookie = nbd_aio_pwrite(nb->h, (const char *)r->buf + c->done_bytes,
		                        c->piece, r->offset + c->done_bytes, cb,
		                        flags);
		break;
	case BM_BOP_FLUSH:
		if (!nb->can_flush) {
			complete_here(c);
			return;
		}
		cookie = nbd_aio_flush(nb->h, cb, 0);
		break;
	default: /* ZERO, and TRIM as zeroing that may unmap */
		if (c->done_bytes >= r->length) {
			complete_here(c);
			return;
		}
		c->piece = zero_piece(nb, r->length - c->done_bytes);
		count_write(nb, c);
		if (nb->can_zero) {
			cookie = nbd_aio_zero(nb->h, c->piece,
			                      r->offset + c->done_bytes, cb, flags);
		} else {
			if (!bm_nbd_zero_map()) {
				complete(c, -ENOMEM); /* (uncounts it) */
				return;
			}
			cookie = nbd_aio_pwrite(nb->h, zero_map, c->piece,
			                        r->offset + c->done_bytes, cb, flags);
		}
		break;
	}
	if (cookie < 0) {
		int err = nbd_get_errno();
		complete(c, err ? -err : -EIO);
	}
}

/* call_lock held, after a libnbd call: whether the connection is over;
 * the first caller to see it keeps libnbd's reason (libnbd's error is per
 * thread, and the call that ended the connection set it on this one). */
static bool check_over_locked(struct nbd_backend *nb)
{
	if (!nb->over && (nbd_aio_is_dead(nb->h) == 1 ||
	                  nbd_aio_is_closed(nb->h) == 1)) {
		const char *why = nbd_get_error();
		nb->over = true;
		snprintf(nb->over_reason, sizeof(nb->over_reason), "%s",
		         why ? why : "");
	}
	return nb->over;
}

static bool queue_empty(struct nbd_backend *nb)
{
	bool empty;

	pthread_mutex_lock(&nb->lock);
	empty = nb->queue_head == NULL;
	pthread_mutex_unlock(&nb->lock);
	return empty;
}

/* Empties the queue and returns what was on it, in order; with dead, later
 * submits fail at once (set in the same critical section, so that nothing
 * is queued after the last look). */
static struct nbd_cmd *take_queue(struct nbd_backend *nb, bool dead)
{
	struct nbd_cmd *q;

	pthread_mutex_lock(&nb->lock);
	if (dead)
		nb->dead_locked = true;
	q = nb->queue_head;
	nb->queue_head = nb->queue_tail = NULL;
	pthread_mutex_unlock(&nb->lock);
	return q;
}

/* call_lock held: issues what is queued, in order; once the connection is
 * over, fails it instead.  (What is queued meanwhile is seen by the
 * holder after it lets go of call_lock.) */
static void issue_queued_locked(struct nbd_backend *nb)
{
	struct nbd_cmd *q = take_queue(nb, false);

	while (q) {
		struct nbd_cmd *c = q;
		q = c->next;
		if (check_over_locked(nb))
			complete(c, -ENOTCONN);
		else
			issue(nb, c);
	}
	check_over_locked(nb);
}

/* A completed command may have more to send: the next piece, or the
 * flush of an emulated FUA.  Returns true when it was sent again
 * (call_lock held). */
static bool continue_cmd(struct nbd_backend *nb, struct nbd_cmd *c)
{
	bool more = false;

	if (c->result != 0 || c->xr)
		return false;
	if (c->op != BM_BOP_FLUSH) {
		c->done_bytes += c->piece;
		more = c->done_bytes < c->r->length;
	}
	if (!more && c->then_flush) {
		c->then_flush = false;
		c->op = BM_BOP_FLUSH;
		more = true;
	}
	if (!more)
		return false;
	if (check_over_locked(nb)) { /* the rest cannot be sent: it failed */
		c->result = -ENOTCONN;
		return false;
	}
	issue(nb, c);
	return true;
}

/* call_lock held: takes the done list; a command with more to send goes
 * back to libnbd, the others are returned, last one in *lastp, count in
 * *np, to be delivered without the lock. */
static struct nbd_cmd *take_finished_locked(struct nbd_backend *nb,
                                            struct nbd_cmd **lastp,
                                            unsigned *np)
{
	struct nbd_cmd *list = nb->done_head, *finished = NULL, *last = NULL;
	unsigned n = 0;
	bool aborted;

	nb->done_head = NULL;
	if (!list)
		return NULL;
	pthread_mutex_lock(&nb->lock);
	aborted = nb->aborted;
	pthread_mutex_unlock(&nb->lock);
	while (list) {
		struct nbd_cmd *c = list;
		list = c->next;
		if (continue_cmd(nb, c))
			continue;
		if (c->result < 0 && aborted)
			c->result = -ECONNABORTED;
		c->next = finished;
		finished = c;
		if (!last)
			last = c;
		n++;
	}
	check_over_locked(nb);
	*lastp = last;
	*np = n;
	return finished;
}

/* Delivers done() for finished commands (loop thread, no lock held). */
static void deliver(struct nbd_backend *nb, struct nbd_cmd *finished,
                    struct nbd_cmd *last, unsigned n)
{
	for (struct nbd_cmd *c = finished; c; c = c->next) {
		if (c->xr) {
			if (c->result < 0 || !c->xr_answered) {
				c->xr->run = c->xr->length;
				c->xr->zero = false;
			}
			c->xr->done(c->xr, c->result);
		} else {
			c->r->done(c->r, c->result);
		}
	}
	pthread_mutex_lock(&nb->lock);
	last->next = nb->free_list;
	nb->free_list = finished;
	nb->inflight -= n;
	pthread_mutex_unlock(&nb->lock);
}

/* The connection is over (call_lock held, loop thread): nothing more will
 * be issued; what is queued fails (libnbd has already failed what it
 * held), and the loop's descriptor is closed: it is never polled again. */
static void mark_dead(struct nbd_backend *nb)
{
	struct nbd_cmd *q;

	snprintf(nb->dead_reason, sizeof(nb->dead_reason), "%s",
	         nb->shut ? "the connection was aborted"
	         : nb->over_reason[0] ? nb->over_reason
	                              : "the server closed the connection");
	atomic_store(&nb->dead, true);
	q = take_queue(nb, true);
	while (q) {
		struct nbd_cmd *c = q;
		q = c->next;
		complete(c, -ENOTCONN); /* -ECONNABORTED after abort (deliver) */
	}
	if (!nb->draining) {
		close(nb->poll_fd);
		nb->poll_fd = -1;
	}
}

/*
 * abort(), on the loop with call_lock held: ends the connection for libnbd
 * at once, so that everything in flight fails here and the mirror goes on.
 * A write the server has received may still be carried out there after
 * that (a request stuck in the server's disk, a lost reply): if it landed
 * after the component came back and was copied, it would put old data
 * over newer writes.  So when writes are outstanding, libnbd's descriptor
 * is swapped for a dead socket (libnbd fails everything on its next look)
 * while ours, the same connection, is only shut for writing: the server
 * reads its end, finishes what it holds and closes the connection, which
 * the loop sees by reading (and dropping) what comes until the end.
 * Meanwhile base.detached counts it, and recover.c does not reconnect.
 * Without writes outstanding the socket is simply shut down.
 */
static void end_connection_locked(struct nbd_backend *nb)
{
	int fd = nbd_aio_get_fd(nb->h);

	nb->shut = true;
	if (nb->writes_sent == 0 || fd < 0 ||
	    dup3(nb->dead_fd, fd, O_CLOEXEC) < 0) {
		shutdown(nb->poll_fd, SHUT_RDWR);
		return;
	}
	nb->draining = true;
	atomic_fetch_add(&nb->base.detached, 1);
	shutdown(nb->poll_fd, SHUT_WR);
	unsigned dir = nbd_aio_get_direction(nb->h);
	if (dir & LIBNBD_AIO_DIRECTION_READ)
		nbd_aio_notify_read(nb->h);
	else if (dir & LIBNBD_AIO_DIRECTION_WRITE)
		nbd_aio_notify_write(nb->h);
	check_over_locked(nb);
}

/* The old connection's server closed it (or it failed): what it held has
 * ended there; the component may be reconnected. */
static void end_drain(struct nbd_backend *nb)
{
	if (!nb->draining)
		return;
	nb->draining = false;
	close(nb->poll_fd);
	nb->poll_fd = -1;
	atomic_fetch_sub(&nb->base.detached, 1);
}

/* Reads and drops what the old connection's server still sends (replies
 * nobody waits for) until it closes the connection. */
static void drain_read(struct nbd_backend *nb)
{
	char sink[16384];

	for (;;) {
		ssize_t n = read(nb->poll_fd, sink, sizeof(sink));
		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		end_drain(nb);
		return;
	}
}

/* Gives the connection up when the loop cannot wait (poll failed: never
 * seen): libnbd sees its end at once rather than the loop spinning. */
static void give_up(struct nbd_backend *nb, unsigned dir)
{
	pthread_mutex_lock(&nb->lock);
	nb->aborted = true;
	pthread_mutex_unlock(&nb->lock);
	if (!nb->shut) {
		shutdown(nb->poll_fd, SHUT_RDWR);
		nb->shut = true;
	}
	pthread_mutex_lock(&nb->call_lock);
	if (!check_over_locked(nb)) {
		if (dir & LIBNBD_AIO_DIRECTION_READ)
			nbd_aio_notify_read(nb->h);
		else
			nbd_aio_notify_write(nb->h);
		check_over_locked(nb);
	}
	pthread_mutex_unlock(&nb->call_lock);
}

static void *loop_main(void *arg)
{
	struct nbd_backend *nb = arg;
	bool dead = false;

	pthread_setname_np(pthread_self(), "bm-libnbd");
	in_loop = nb;
	for (;;) {
		struct nbd_cmd *finished, *last = NULL;
		unsigned n = 0, dir;
		bool stop, abort_now, busy;

		pthread_mutex_lock(&nb->call_lock);
		if (!dead && check_over_locked(nb)) {
			/* libnbd has failed what it held and closed its socket */
			mark_dead(nb);
			dead = true;
		}
		pthread_mutex_lock(&nb->lock);
		stop = nb->stopping && nb->inflight == 0;
		abort_now = nb->aborted;
		pthread_mutex_unlock(&nb->lock);
		if (stop) {
			pthread_mutex_unlock(&nb->call_lock);
			end_drain(nb); /* closing: the server's end is not waited for */
			break;
		}
		issue_queued_locked(nb); /* only while alive: mark_dead empties it */
		if (!dead && abort_now && !nb->shut)
			end_connection_locked(nb);
		finished = take_finished_locked(nb, &last, &n);
		pthread_mutex_unlock(&nb->call_lock);
		if (finished) {
			deliver(nb, finished, last, n);
			continue; /* issue what done() queued; see what changed */
		}

		/* From here a submitter that changes what we must wait for
		 * (libnbd wants to write, the connection is over, a command
		 * completed) wakes us: it sees sleeping set, or we see its
		 * change under call_lock below. */
		atomic_store(&nb->sleeping, true);
		pthread_mutex_lock(&nb->call_lock);
		busy = nb->done_head != NULL || (!dead && check_over_locked(nb));
		dir = dead ? 0 : nbd_aio_get_direction(nb->h);
		pthread_mutex_unlock(&nb->call_lock);
		/* A submitter that found call_lock taken (by us, just now) left
		 * its command on the queue for us. */
		if (busy || !queue_empty(nb)) {
			atomic_store(&nb->sleeping, false);
			continue;
		}

		struct pollfd pfd[2] = {
			{.fd = nb->wake_fd, .events = POLLIN},
			{.fd = nb->poll_fd,
			 .events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
			                   ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0))},
		};
		/* Only poll says when to read: a speculative notify_read (to
		 * save the poll per reply) on an idle socket moves libnbd 1.14
		 * from READY to waiting for a reply, and a command given to it
		 * then is only queued until a reply comes: with nothing in
		 * flight, never (tried; the label's first read hung). */
		/* dir is never 0 on a live connection; if it were, polling the
		 * socket for nothing could spin on a hang-up */
		if (dead && nb->draining)
			pfd[1].events = POLLIN;
		int np = poll(pfd, nb->draining || (!dead && dir != 0) ? 2 : 1, -1);
		atomic_store(&nb->sleeping, false);
		if (np < 0) {
			if (errno == EINTR || dead)
				continue;
			give_up(nb, dir);
			continue;
		}
		if (pfd[0].revents & POLLIN) {
			uint64_t v;
			if (read(nb->wake_fd, &v, sizeof(v)) < 0) {
				/* spurious */
			}
		}
		if (dead) {
			if (nb->draining && pfd[1].revents)
				drain_read(nb);
			continue;
		}
		short ev = pfd[1].revents;
		bool can_read = (ev & (POLLIN | POLLHUP | POLLERR)) &&
		                (dir & LIBNBD_AIO_DIRECTION_READ);
		bool can_write = (ev & (POLLOUT | POLLHUP | POLLERR)) &&
		                 (dir & LIBNBD_AIO_DIRECTION_WRITE);
		if (!can_read && !can_write)
			continue;
		pthread_mutex_lock(&nb->call_lock);
		/* dir may be stale (a submitter's call may have finished the
		 * write libnbd waited for): notify only what it still asks */
		if (can_read && !check_over_locked(nb) &&
		    (nbd_aio_get_direction(nb->h) & LIBNBD_AIO_DIRECTION_READ))
			nbd_aio_notify_read(nb->h);
		if (can_write && !check_over_locked(nb) &&
		    (nbd_aio_get_direction(nb->h) & LIBNBD_AIO_DIRECTION_WRITE))
			nbd_aio_notify_write(nb->h);
		check_over_locked(nb);
		pthread_mutex_unlock(&nb->call_lock);
	}
	return NULL;
}

/* A submitter (not this backend's loop) issues what is queued if no other
 * thread is inside libnbd; if one is, that thread issues it after it lets
 * go of call_lock (it looks at the queue then).  Wakes the loop only when
 * it must look at the connection again. */
static void submit_queued(struct nbd_backend *nb)
{
	bool must_look = false;

	do { /* our command is on the queue, or already taken by another */
		if (pthread_mutex_trylock(&nb->call_lock) != 0)
			break;
		issue_queued_locked(nb);
		must_look = must_look || nb->done_head != NULL || nb->over ||
		            (nbd_aio_get_direction(nb->h) &
		             LIBNBD_AIO_DIRECTION_WRITE);
		pthread_mutex_unlock(&nb->call_lock);
	} while (!queue_empty(nb));
	if (must_look && atomic_load(&nb->sleeping))
		wake(nb); /* awake, it looks before it polls again */
}

/* Accepts a request (r) or an allocation question (xr) and issues it. */
static int enqueue(struct nbd_backend *nb, struct bm_breq *r,
                   struct bm_extent_req *xr)
{
	struct nbd_cmd *c;

	pthread_mutex_lock(&nb->lock);
	if (nb->aborted || nb->dead_locked || nb->stopping) {
		int err = nb->aborted ? -ECONNABORTED : -ENOTCONN;
		pthread_mutex_unlock(&nb->lock);
		return err;
	}
	c = nb->free_list;
	if (c) {
		nb->free_list = c->next;
	} else {
		c = malloc(sizeof(*c));
		if (!c) {
			pthread_mutex_unlock(&nb->lock);
			return -ENOMEM;
		}
	}
	*c = (struct nbd_cmd){.nb = nb, .r = r, .xr = xr,
	                      .op = r ? r->op : BM_BOP_READ};
	if (nb->queue_head == NULL)
		nb->queue_head = c;
	else
		nb->queue_tail->next = c;
	nb->queue_tail = c;
	nb->inflight++;
	pthread_mutex_unlock(&nb->lock);
	if (in_loop != nb) /* the loop issues it before it polls again */
		submit_queued(nb);
	return 0;
}

static int nbd_submit(struct bm_backend *be, struct bm_breq *r)
{
	return enqueue((struct nbd_backend *)be, r, NULL);
}

static int nbd_extent(struct bm_backend *be, struct bm_extent_req *r)
{
	struct nbd_backend *nb = (struct nbd_backend *)be;

	if (!nb->can_extents) {
		r->run = r->length;
		r->zero = false;
		r->done(r, 0);
		return 0;
	}
	return enqueue(nb, NULL, r);
}

/* Synchronous calls through submit() (both transmissions use them), with
 * the process's deadline (backend.h): an export that never answers makes
 * them fail with -ETIMEDOUT, never hang the caller.  It is then given up
 * (aborted): every later call and request fails at once rather than wait
 * again (label, clear and the start go on to other reads), and the close
 * does not wait for what it holds (a close aborts anyway while a request
 * is detached: nbd_close_backend, nbd_wire.c wire_close). */
static int sync_call(struct bm_backend *be, enum bm_bop op, void *buf,
                     size_t len, uint64_t off)
{
	int err = bm_backend_io_wait_timeout(be, op, buf, (uint32_t)len, off, 0,
	                                     bm_backend_sync_timeout_ms());

	if (err == -ETIMEDOUT)
		be->ops->abort(be);
	return err;
}

int bm_nbd_pread_sync(struct bm_backend *be, void *buf, size_t len,
                      uint64_t off)
{
	return sync_call(be, BM_BOP_READ, buf, len, off);
}

int bm_nbd_pwrite_sync(struct bm_backend *be, const void *buf, size_t len,
                       uint64_t off)
{
	return sync_call(be, BM_BOP_WRITE, (void *)buf, len, off);
}

int bm_nbd_flush_sync(struct bm_backend *be)
{
	return sync_call(be, BM_BOP_FLUSH, NULL, 0, 0);
}

static void nbd_abort(struct bm_backend *be)
{
	struct nbd_backend *nb = (struct nbd_backend *)be;
	bool first;

	pthread_mutex_lock(&nb->lock);
	first = !nb->aborted;
	nb->aborted = true;
	pthread_mutex_unlock(&nb->lock);
	if (first)
		wake(nb);
}

static int nbd_check(struct bm_backend *be)
{
	struct nbd_backend *nb = (struct nbd_backend *)be;

	if (!atomic_load(&nb->dead))
		return 0;
	return bm_error(ENOTCONN, "%s: the NBD connection is gone: %s",
	                nb->base.path, nb->dead_reason);
}

/*
 * Runs libnbd's state machine on h until done(h) or the deadline; the
 * caller is the only thread using h.  Returns 0, -ETIMEDOUT, or -errno
 * when the connection died.
 */
static int run_until(struct nbd_handle *h, int (*done)(struct nbd_handle *),
                     long timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		if (done(h) == 1)
			return 0;
		if (nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1)
			return -ENOTCONN;
		int fd = nbd_aio_get_fd(h);
		unsigned dir = nbd_aio_get_direction(h);
		int64_t left = deadline - now_ms();
		if (fd < 0)
			return -ENOTCONN;
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd = {
			.fd = fd,
			.events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
			                  ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0))};
		int n = poll(&pfd, 1, (int)(left > 1000 ? 1000 : left));
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) &&
		    (dir & LIBNBD_AIO_DIRECTION_READ)) {
			if (nbd_aio_notify_read(h) < 0)
				continue; /* the state check above reports it */
		} else if (pfd.revents & (POLLOUT | POLLHUP | POLLERR)) {
			nbd_aio_notify_write(h);
		}
	}
}

static void nbd_close_backend(struct bm_backend *be)
{
	struct nbd_backend *nb = (struct nbd_backend *)be;
	bool clean;

	/* a request whose waiter gave up (a sync call past its deadline)
	 * may never be answered: it is not waited for */
	if (atomic_load(&be->detached) > 0)
		nbd_abort(be);
	pthread_mutex_lock(&nb->lock);
	nb->stopping = true;
	pthread_mutex_unlock(&nb->lock);
	wake(nb);
	pthread_join(nb->loop, NULL);
	/* The loop is gone: this thread owns the handle now. */
	pthread_mutex_lock(&nb->lock);
	clean = !nb->aborted;
	pthread_mutex_unlock(&nb->lock);
	clean = clean && !atomic_load(&nb->dead) && !nb->over &&
	        nbd_aio_is_dead(nb->h) != 1 && nbd_aio_is_closed(nb->h) != 1;
	if (nb->poll_fd >= 0)
		close(nb->poll_fd);
	if (clean && nbd_aio_disconnect(nb->h, 0) == 0)
		run_until(nb->h, nbd_aio_is_closed, DISCONNECT_TIMEOUT_MS);
	nbd_close(nb->h);
	close(nb->wake_fd);
	close(nb->dead_fd);
	while (nb->free_list) {
		struct nbd_cmd *c = nb->free_list;
		nb->free_list = c->next;
		free(c);
	}
	pthread_mutex_destroy(&nb->lock);
	pthread_mutex_destroy(&nb->call_lock);
	free(nb);
}

static const struct bm_backend_ops nbd_ops = {
	.kind = "nbd",
	.submit = nbd_submit,
	.pread_sync = bm_nbd_pread_sync,
	.pwrite_sync = bm_nbd_pwrite_sync,
	.flush_sync = bm_nbd_flush_sync,
	.close = nbd_close_backend,
	.abort = nbd_abort,
	.check = nbd_check,
	.extent = nbd_extent,
};

/* Connects h to uri within the deadline (nbd_connect_uri has none). */
static int connect_with_deadline(struct nbd_handle *h, const char *uri)
{
	long ms = env_ms("BLKMIRROR_NBD_CONNECT_TIMEOUT_MS", CONNECT_TIMEOUT_MS);
	int err;

	if (nbd_aio_connect_uri(h, uri) < 0) {
		err = nbd_get_errno();
		return bm_error(err ? err : EIO, "%s: cannot connect: %s", uri,
		                nbd_get_error());
	}
	err = run_until(h, nbd_aio_is_ready, ms);
	if (err == -ETIMEDOUT)
		return bm_error(ETIMEDOUT, "%s: cannot connect: no answer from the "
		                "NBD server within %ld ms; check that it is "
		                "running and reachable", uri, ms);
	if (err < 0) {
		const char *why = nbd_get_error();
		int e = nbd_get_errno();
		return bm_error(e ? e : -err, "%s: cannot connect: %s", uri,
		                why && *why ? why : "the server closed the "
		                                    "connection");
	}
	return 0;
}

/* Extended headers (libnbd 1.18 and later ask for them) change every
 * request and reply: nbd_wire.c speaks the compact ones only, so they are
 * not asked for, and a connection that has them stays with libnbd. */
static void no_extended_headers(struct nbd_handle *h)
{
#ifdef LIBNBD_HAVE_NBD_SET_REQUEST_EXTENDED_HEADERS
	nbd_set_request_extended_headers(h, false);
#else
	(void)h;
#endif
}

static bool extended_headers(struct nbd_handle *h)
{
#ifdef LIBNBD_HAVE_NBD_GET_EXTENDED_HEADERS_NEGOTIATED
	return nbd_get_extended_headers_negotiated(h) == 1;
#else
	(void)h;
	return false;
#endif
}

/*
 * A plain connection goes on with our own transmission (nbd_wire.c) on a
 * duplicate of libnbd's socket; libnbd's handle is then closed, which
 * only closes its descriptor (nbd_close sends nothing: the negotiated
 * connection lives on in ours).  TLS connections stay with libnbd (the
 * session lives inside it), and so does every connection when
 * BLKMIRROR_NBD_LIBNBD is set (to compare the two).
 */
static int hand_over(struct nbd_backend *nb, const char *uri,
                     struct bm_backend **out)
{
	struct bm_nbd_props pr = {
		.uri = uri,
		.size = nb->base.size,
		.rotational = nb->base.rotational,
		.can_fua = nb->can_fua,
		.can_zero = nb->can_zero,
		.can_flush = nb->can_flush,
		.can_extents = nb->can_extents,
		.structured = nbd_get_structured_replies_negotiated(nb->h) == 1,
		.min_block = nb->base.min_block,
		.max_block = nb->max_block,
	};
	int fd = nbd_aio_get_fd(nb->h);

	int err = EBADF;

	fd = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0 && errno)
		err = errno;
	nbd_close(nb->h);
	free(nb);
	if (fd < 0)
		return bm_error(err, "%s: cannot keep the connection: %s", uri,
		                strerror(err));
	return bm_nbd_wire_open(fd, &pr, out);
}

int bm_nbd_backend_open(const char *uri, struct bm_backend **out)
{
	struct nbd_backend *nb = calloc(1, sizeof(*nb));
	int64_t size, max_block;
	int err;

	if (!nb)
		return bm_error(ENOMEM, "out of memory");
	nb->h = nbd_create();
	if (!nb->h) {
		free(nb);
		return bm_error(ENOMEM, "%s: %s", uri, nbd_get_error());
	}
	nbd_set_uri_allow_local_file(nb->h, true);
	/* Read buffers are not zeroed first (a read's buffer is used only when
	 * the read succeeded, and on_read_complete fails a reply that leaves
	 * part of it unwritten or covers a part twice): zeroing cost 5% of the
	 * server's CPU on a fast stream. */
	nbd_set_pread_initialize(nb->h, false);
	/* for extent(); a server without it simply does not agree */
	nbd_add_meta_context(nb->h, LIBNBD_CONTEXT_BASE_ALLOCATION);
	no_extended_headers(nb->h);
	err = connect_with_deadline(nb->h, uri);
	if (err < 0) {
		nbd_close(nb->h);
		free(nb);
		return err;
	}
	size = nbd_get_size(nb->h);
	if (size < 0 || nbd_is_read_only(nb->h) == 1) {
		bm_error(size < 0 ? EIO : EROFS, "%s: %s", uri,
		         size < 0 ? nbd_get_error()
		                  : "the export is read-only; a component must "
		                    "be writable");
		nbd_close(nb->h);
		free(nb);
		return size < 0 ? -EIO : -EROFS;
	}
	nb->base.ops = &nbd_ops;
	snprintf(nb->base.path, sizeof(nb->base.path), "%s", uri);
	nb->base.size = (uint64_t)size;
	nb->base.rotational = nbd_is_rotational(nb->h) == 1;
	nb->can_fua = nbd_can_fua(nb->h) == 1;
	nb->can_zero = nbd_can_zero(nb->h) == 1;
	nb->can_flush = nbd_can_flush(nb->h) == 1;
	nb->can_extents = nbd_can_meta_context(nb->h,
	                          LIBNBD_CONTEXT_BASE_ALLOCATION) == 1;
	int64_t min_block = nbd_get_block_size(nb->h, LIBNBD_SIZE_MINIMUM);
	if (min_block > 4096 || (min_block > 1 && (min_block & (min_block - 1)))) {
		/* labels, lease and bitmap are 4 KiB blocks */
		bm_error(EINVAL, "%s: the export takes only requests aligned to "
		         "%" PRId64 " bytes (its minimum block size); a component "
		         "must take 4096-byte blocks (the mirror's metadata)", uri,
		         min_block);
		nbd_close(nb->h);
		free(nb);
		return -EINVAL;
	}
	nb->base.min_block = min_block > 1 ? (uint32_t)min_block : 0;
	max_block = nbd_get_block_size(nb->h, LIBNBD_SIZE_MAXIMUM);
	nb->max_block = max_block > 0 && max_block <= UINT32_MAX
	                        ? (uint32_t)max_block : 0;
	const char *stay = getenv("BLKMIRROR_NBD_LIBNBD");
	if (nbd_get_tls_negotiated(nb->h) != 1 && !extended_headers(nb->h) &&
	    !(stay && *stay))
		return hand_over(nb, uri, out);
	int fd = nbd_aio_get_fd(nb->h);
	nb->poll_fd = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
	nb->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int sv[2];
	nb->dead_fd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
		close(sv[1]); /* sv[0] now reads end-of-file, writes fail */
		nb->dead_fd = sv[0];
	}
	/* both are held for a few microseconds at most: spinning a little
	 * before sleeping in the kernel saves a wake-up */
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&nb->lock, &ma);
	pthread_mutex_init(&nb->call_lock, &ma);
	pthread_mutexattr_destroy(&ma);
	if (nb->poll_fd < 0 || nb->wake_fd < 0 || nb->dead_fd < 0 ||
	    pthread_create(&nb->loop, NULL, loop_main, nb) != 0) {
		if (nb->dead_fd >= 0)
			close(nb->dead_fd);
		if (nb->wake_fd >= 0)
			close(nb->wake_fd);
		if (nb->poll_fd >= 0)
			close(nb->poll_fd);
		nbd_close(nb->h);
		pthread_mutex_destroy(&nb->lock);
		pthread_mutex_destroy(&nb->call_lock);
		free(nb);
		return bm_error(EAGAIN, "%s: cannot start the I/O thread", uri);
	}
	*out = &nb->base;
	return 0;
}
