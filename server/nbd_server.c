/*
 * NBD listener and transmission phase.
 *
 * One accept thread per server; per connection, a reader thread and a
 * writer thread.  The reader decodes a request, waits for room in the
 * connection's and the server's budget of bytes in flight, takes a request
 * structure (kept for reuse: no allocation per request) and its buffer
 * (bufpool.c), reads its payload, and hands it to the mirror.
 *
 * Replies: finished replies join the connection's queue.  The thread that
 * finds the queue empty becomes its sender and sends it at once with
 * MSG_DONTWAIT, as many replies per sendmsg as are queued; it drops the
 * lock around each sendmsg, so that replies completing meanwhile (on other
 * backend threads) only append and go out with its next one.  A request
 * that completes inline on the reader (a read-ahead hit) is held by the
 * reader and sent with the others it completes before it may block (on a
 * read, for budget, before a write's submission; at most 32).  The
 * reader and the components' receivers send in batches (sendbatch.c): a
 * reply that finds the queue empty on such a thread is sent when that
 * thread flushes (after the requests or replies one read brought), the
 * queue marked `deferred` meanwhile (it has a sender).  When the
 * socket is full the queue is left to the writer thread, asleep until
 * then, which finishes it as the socket drains.  So a client that stops
 * reading blocks no backend thread: its replies pile up in its own queue
 * (bounded by its budget), and when they make no progress for
 * reply_timeout_ms the connection is closed and the queue dropped.  A
 * read's buffer goes back to the pool (reused warm) when its reply has
 * been sent; a write's when the write completes.
 *
 * Read-ahead hits are not copied: reads are submitted with BM_IO_BORROW,
 * and a hit comes back as pointers into the read-ahead's chunks (io.seg),
 * which the reply is sent from (its request buffer goes back to the pool
 * at once).  The loan is given back (bm_io_release) where the buffer
 * would have been: in reply_finished_locked, when the last byte of the
 * reply went into the socket or the reply was dropped (dead connection,
 * failed send, stop), which every request passes through exactly once.
 * A connection has at most BORROW_MAX such reads at once, so that a
 * client that does not read its replies pins little of the read-ahead
 * memory (shared by every client).
 *
 * A connection is freed when both its reader and its writer have stopped;
 * the writer stops only when the reader has and no request is pending, so
 * a completion never finds its connection gone.
 *
 * Hostile input: a bad magic, or a write whose payload we will not read,
 * ends the connection; anything else wrong gets an error reply and the
 * connection goes on.  One connection's failure never touches another.
 * Every socket is shut down (SHUT_RDWR) before it is closed, so the client
 * sees an end of stream even if another thread still holds the descriptor.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bufpool.h"
#include "error.h"
#include "nbd_parse.h"
#include "nbd_proto.h"
#include "nbd_server.h"
#include "sendbatch.h"
#include "unix_socket.h"

/* Budget charge of a request without data (its bookkeeping), so that a
 * flood of FLUSHes is bounded too.  A request with data is charged the
 * memory its buffer really takes (the pool's size class: bufpool.c), which
 * covers its bookkeeping too. */
#define REQUEST_OVERHEAD 256u
#define DATA_CHARGE(len) ((uint32_t)bm_buf_capacity(len))
/* How often a reader waiting for budget looks whether it should give up. */
#define BUDGET_POLL_MS 200
/* When the server stops, a client not reading its replies gets this long
 * (at most) before its connection is dropped; the writer looks this often. */
#define STOP_REPLY_GRACE_MS 3000
#define WRITER_POLL_MS 1000
/* Replies gathered into one sendmsg: up to 1 + BM_IO_SEGS iovecs each
 * (header, data pieces). */
#define SEND_IOV_MAX 64
/* Reads of one connection submitted with BM_IO_BORROW and not finished. */
#define BORROW_MAX 16

/*
 * Bytes in flight against a cap.  take() is one compare-and-swap when there
 * is room; it waits on the condition only when there is none.  give()
 * takes the lock only when someone waits.
 */
struct budget {
	_Atomic uint64_t used;
	uint64_t cap;
	atomic_int waiters;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

struct bm_nbd_server {
	bm_mirror *m;
	struct bm_nbd_export exp;
	char export_name[BM_NAME_MAX + 1];
	char unix_path[108];
	struct bm_sock_id unix_id; /* the socket we bound: the only one removed */
	int listen_fd[2];
	int nlisten;
	int wake_pipe[2];
	pthread_t accept_thread;
	bool running;
	atomic_bool stopping;
	struct bm_nbd_limits limits;
	struct budget bytes;      /* all connections */
	pthread_mutex_t lock;     /* protects conns and nconns */
	pthread_cond_t cond;
	struct conn *conns;
	int nconns;
};

struct nreq;

struct conn {
	struct bm_nbd_server *srv;
	int fd;
	atomic_int refs;           /* reader + writer */
	atomic_bool dead;          /* replies can no longer be sent */
	struct budget bytes;
	uint32_t min_block;        /* told the client at negotiation */
	atomic_int pending;        /* requests whose reply is not finished */
	atomic_int borrowing;      /* reads with BM_IO_BORROW not finished */
	pthread_mutex_t send_lock; /* the queue, sending, free_reqs, reader_done */
	pthread_cond_t send_cond;  /* the writer waits for work */
	struct nreq *q_head, *q_tail; /* replies not all sent yet, in order */
	bool sending;              /* a thread is sending the queue */
	bool deferred;             /* a thread's send batch will send it
	                              (sendbatch.c): the writer leaves it */
	uint64_t last_progress_ns; /* queue left to the writer: bytes last went */
	bool reader_done;
	struct nreq *free_reqs;    /* finished, kept for reuse */
	int nfree;
	/* the reader's own (no lock) */
	struct nreq *held_head, *held_tail; /* completed inline, not sent yet */
	unsigned nheld;
	struct nreq *spare;        /* taken from free_reqs, for new requests */
	struct conn *next;         /* srv->lock */
	pthread_t thread, writer;
};

struct nreq {
	struct bm_io io;
	struct conn *c;
	uint64_t cookie;
	uint32_t charge;           /* budget held (see DATA_CHARGE) */
	uint32_t buf_len;          /* io.buf's length for bm_buf_put */
	uint16_t type;
	uint8_t hdr[16];           /* the reply header */
	uint32_t sent;             /* bytes of header + data already sent */
	uint32_t data_len;         /* data bytes in the reply */
	struct nreq *next;         /* the send queue */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- budgets ---- */

static void budget_init(struct budget *b, uint64_t cap)
{
	atomic_init(&b->used, 0);
	atomic_init(&b->waiters, 0);
	b->cap = cap;
	pthread_mutex_init(&b->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	pthread_condattr_destroy(&ca);
}

static void budget_destroy(struct budget *b)
{
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
}

/* Takes n if it fits (or if nothing is held: one request larger than the
 * cap runs alone). */
static bool budget_try(struct budget *b, uint64_t n)
{
	uint64_t old = atomic_load(&b->used);

	while (old == 0 || old + n <= b->cap)
		if (atomic_compare_exchange_weak(&b->used, &old, old + n))
			return true;
	return false;
}

/* Waits until n fits; false when give_up() says so first. */
static bool budget_take(struct budget *b, uint64_t n,
                        bool (*give_up)(void *), void *arg)
{
	bool ok;

	if (budget_try(b, n))
		return true;
	pthread_mutex_lock(&b->lock);
	atomic_fetch_add(&b->waiters, 1);
	while (!(ok = budget_try(b, n)) && !give_up(arg)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += BUDGET_POLL_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&b->cond, &b->lock, &ts);
	}
	atomic_fetch_sub(&b->waiters, 1);
	pthread_mutex_unlock(&b->lock);
	return ok;
}

static void budget_give(struct budget *b, uint64_t n)
{
	if (n == 0)
		return;
	atomic_fetch_sub(&b->used, n);
	if (atomic_load(&b->waiters) > 0) {
		pthread_mutex_lock(&b->lock);
		pthread_cond_broadcast(&b->cond);
		pthread_mutex_unlock(&b->lock);
	}
}

/* ---- limits ---- */

static int env_ms(const char *name, int def)
{
	const char *e = getenv(name);
	char *end;
	long v;

	if (!e || !*e)
		return def;
	v = strtol(e, &end, 10);
	if (*end || v <= 0 || v > 24L * 3600 * 1000) {
		fprintf(stderr, "blkmirror: ignoring %s='%s' (not a number of "
		        "milliseconds)\n", name, e);
		return def;
	}
	return (int)v;
}

void bm_nbd_limits_default(struct bm_nbd_limits *l)
{
	l->conn_bytes = 64ull << 20;
	l->server_bytes = 256ull << 20;
	l->max_conns = 128;
	l->negotiate_ms = env_ms("BLKMIRROR_NEGOTIATE_TIMEOUT_MS", 10000);
	l->reply_timeout_ms = env_ms("BLKMIRROR_REPLY_TIMEOUT_MS", 30000);
}

int bm_nbd_server_set_limits(struct bm_nbd_server *s,
                             const struct bm_nbd_limits *l)
{
	if (s->running)
		return bm_error(EBUSY, "the NBD server limits are set before it runs");
	if (l->conn_bytes == 0 || l->server_bytes == 0)
		return bm_error(EINVAL, "the bytes in flight per connection and per "
		                "server must be above 0");
	if (l->max_conns <= 0)
		return bm_error(EINVAL, "the connection limit must be at least 1");
	if (l->negotiate_ms <= 0 || l->reply_timeout_ms <= 0)
		return bm_error(EINVAL, "the negotiation and reply timeouts must be "
		                "above 0 ms");
	s->limits = *l;
	s->bytes.cap = l->server_bytes;
	return 0;
}

/* ---- connections and replies ---- */

static void conn_put(struct conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	struct bm_nbd_server *s = c->srv;
	pthread_mutex_lock(&s->lock);
	for (struct conn **p = &s->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	s->nconns--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	shutdown(c->fd, SHUT_RDWR); /* EOF to the client even if a stale poll holds the socket */
	close(c->fd);
	pthread_mutex_destroy(&c->send_lock);
	pthread_cond_destroy(&c->send_cond);
	budget_destroy(&c->bytes);
	for (struct nreq *l = c->free_reqs; l; ) {
		struct nreq *r = l;
		l = r->next;
		free(r);
	}
	for (struct nreq *l = c->spare; l; ) {
		struct nreq *r = l;
		l = r->next;
		free(r);
	}
	free(c);
}

static uint32_t errno_to_nbd(int err)
{
	switch (err < 0 ? -err : err) {
	case 0: return 0;
	case EPERM: case EROFS: return NBD_EPERM;
	case ENOMEM: return NBD_ENOMEM;
	case EINVAL: return NBD_EINVAL;
	case ENOSPC: case EDQUOT: return NBD_ENOSPC;
	case EOVERFLOW: return NBD_EOVERFLOW;
	case ENOTSUP: return NBD_ENOTSUP;
	case ESHUTDOWN: return NBD_ESHUTDOWN;
	default: return NBD_EIO;
	}
}

/* Finished requests a connection keeps for reuse (no allocation per
 * request); more than this are freed. */
#define SPARE_REQS_MAX 256

/* Gives back what a request held and keeps it for reuse; its reply is
 * finished (sent or dropped).  Caller holds send_lock. */
static void reply_finished_locked(struct conn *c, struct nreq *r)
{
	budget_give(&c->bytes, r->charge);
	budget_give(&c->srv->bytes, r->charge);
	bm_buf_put(r->io.buf, r->buf_len);
	if (r->io.flags & BM_IO_BORROW) {
		bm_io_release(&r->io); /* the read-ahead's chunks, if lent */
		atomic_fetch_sub(&c->borrowing, 1);
	}
	if (c->nfree < SPARE_REQS_MAX) {
		r->next = c->free_reqs;
		c->free_reqs = r;
		c->nfree++;
	} else {
		free(r);
	}
	if (atomic_fetch_sub(&c->pending, 1) == 1 && c->reader_done)
		pthread_cond_signal(&c->send_cond);
}

/* The client cannot be answered any more: end the connection.  The writer
 * drops the queue; the reader sees the end of its stream.  Caller holds
 * send_lock. */
static void conn_kill_locked(struct conn *c)
{
	if (atomic_exchange(&c->dead, true))
		return;
	shutdown(c->fd, SHUT_RDWR);
	pthread_cond_signal(&c->send_cond);
}

/* Drops every queued reply (the connection is dead).  Caller holds
 * send_lock and is the sender (or no one is). */
static void queue_drop_locked(struct conn *c)
{
	while (c->q_head) {
		struct nreq *r = c->q_head;
		c->q_head = r->next;
		reply_finished_locked(c, r);
	}
	c->q_tail = NULL;
}

static uint32_t reply_size(const struct nreq *r)
{
	return (uint32_t)sizeof(r->hdr) + r->data_len;
}

/* Points iov at the unsent bytes of the queued replies, from the head;
 * returns how many iovecs it filled. */
static int queue_gather_locked(struct conn *c, struct iovec *iov, int max)
{
	int n = 0;

	for (struct nreq *r = c->q_head;
	     r && n + 1 + (r->io.nseg ? (int)r->io.nseg : 1) <= max;
	     r = r->next) {
		if (r->sent < sizeof(r->hdr))
			iov[n++] = (struct iovec){r->hdr + r->sent,
			                          sizeof(r->hdr) - r->sent};
		if (!r->data_len)
			continue;
		uint32_t dsent = r->sent > sizeof(r->hdr)
		                 ? r->sent - (uint32_t)sizeof(r->hdr) : 0;
		if (!r->io.nseg) {
			iov[n++] = (struct iovec){(char *)r->io.buf + dsent,
			                          r->data_len - dsent};
			continue;
		}
		/* a hit lent by the read-ahead: its pieces, in order */
		for (unsigned i = 0; i < r->io.nseg; i++) {
			const struct bm_io_seg *g = &r->io.seg[i];
			if (dsent >= g->len) {
				dsent -= g->len;
				continue;
			}
			iov[n++] = (struct iovec){(char *)g->base + dsent,
			                          g->len - dsent};
			dsent = 0;
		}
	}
	return n;
}

/* n bytes of the queue went out: finishes the replies they complete. */
static void queue_advance_locked(struct conn *c, size_t n)
{
	while (n) {
		struct nreq *r = c->q_head;
		uint32_t left = reply_size(r) - r->sent;
		if (n < left) {
			r->sent += (uint32_t)n;
			return;
		}
		n -= left;
		c->q_head = r->next;
		if (!c->q_head)
			c->q_tail = NULL;
		reply_finished_locked(c, r);
	}
}

/*
 * The sender (c->sending, set by the caller) sends the queue without
 * blocking, as many replies per sendmsg as are queued (up to
 * SEND_IOV_MAX / 2).  The lock is dropped around each sendmsg, so that
 * replies completing meanwhile join the queue and go out with the next
 * one instead of waiting on the lock.  Only the sender removes replies
 * from the queue; others only append.  Returns 1 when the queue is empty,
 * 0 when the socket is full, -errno when the connection is broken or
 * dead.  *progress tells whether any byte went out.
 */
static int queue_push_locked(struct conn *c, bool *progress)
{
	struct iovec iov[SEND_IOV_MAX];

	while (c->q_head) {
		if (atomic_load(&c->dead))
			return -EPIPE;
		int n_iov = queue_gather_locked(c, iov, SEND_IOV_MAX);
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
		pthread_mutex_unlock(&c->send_lock);
		ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		int err = n < 0 ? errno : 0;
		pthread_mutex_lock(&c->send_lock);
		if (n < 0) {
			if (err == EINTR)
				continue;
			if (err == EAGAIN || err == EWOULDBLOCK)
				return 0;
			return -err;
		}
		if (n > 0)
			*progress = true;
		queue_advance_locked(c, (size_t)n);
	}
	return 1;
}

/* send_lock held, queue not empty, no sender: sends as the sole sender
 * (send_lock is dropped around sendmsg); a connection whose socket failed
 * is killed and its queue dropped.  What queue_push_locked returns. */
static int push_as_sender_locked(struct conn *c, bool *progress)
{
	c->sending = true;
	int rc = queue_push_locked(c, progress);
	c->sending = false;
	if (rc < 0) {
		conn_kill_locked(c);
		queue_drop_locked(c);
	}
	return rc;
}

/* The queue has no sender: sends it as one now, without blocking; what
 * the socket does not take is left to the writer thread. */
static void push_queue_locked(struct conn *c, bool *progress)
{
	if (c->sending || !c->q_head)
		return; /* the sender sends it; or sent already (the writer) */
	int rc = push_as_sender_locked(c, progress);
	if (rc == 0) {
		c->last_progress_ns = now_ns(); /* the writer times it from now */
	}
	if (c->q_head || (c->reader_done && atomic_load(&c->pending) == 0))
		pthread_cond_signal(&c->send_cond);
}

/* A send this thread's batch deferred (sendbatch.c): c stayed pinned. */
static void batch_send(void *obj)
{
	struct conn *c = obj;
	bool progress = false;

	pthread_mutex_lock(&c->send_lock);
	c->deferred = false;
	push_queue_locked(c, &progress);
	pthread_mutex_unlock(&c->send_lock);
	conn_put(c);
}

/* Appends a list of finished replies (first..last) to the queue; when the
 * queue was empty, no one is sending it: this thread becomes the sender
 * and sends it now, without blocking.  What the socket does not take is
 * left to the writer thread.  Caller holds send_lock. */
static void replies_send_locked(struct conn *c, struct nreq *first,
                                struct nreq *last)
{
	bool progress = false;

	if (atomic_load(&c->dead)) {
		while (first) {
			struct nreq *r = first;
			first = r->next;
			reply_finished_locked(c, r);
		}
		return;
	}
	if (c->q_head) {
		/* the sender, the writer, or the batch that deferred the
		 * queue's send sends it with the rest */
		c->q_tail->next = first;
		c->q_tail = last;
		return;
	}
	c->q_head = first;
	c->q_tail = last;
	bool first_here;
	if (bm_sendbatch_defer(batch_send, c, &first_here)) {
		/* sent with the others this thread finishes before it may
		 * sleep (sendbatch.c); c stays until then (a pending reply
		 * keeps the writer, so refs > 0 here).  Until then the batch
		 * is the queue's sender: the writer does not take it (its
		 * timer is about a queue that stalled) */
		c->deferred = true;
		if (first_here)
			atomic_fetch_add(&c->refs, 1);
		return;
	}
	push_queue_locked(c, &progress);
}

/* Sends r's reply now if the socket takes it, else queues it for the
 * writer.  Any thread. */
static void reply_send(struct conn *c, struct nreq *r)
{
	r->next = NULL;
	pthread_mutex_lock(&c->send_lock);
	replies_send_locked(c, r, r);
	pthread_mutex_unlock(&c->send_lock);
}

/* The connection whose reader runs on this thread: its requests that
 * complete inline (read-ahead hits) are held and sent together. */
static __thread struct conn *reader_conn;
#define HELD_MAX 32

/* Sends the replies the reader holds.  The reader calls it before it may
 * block (reading, waiting for budget, submitting a write). */
static void reader_flush(struct conn *c)
{
	if (c->held_head) {
		pthread_mutex_lock(&c->send_lock);
		replies_send_locked(c, c->held_head, c->held_tail);
		pthread_mutex_unlock(&c->send_lock);
		c->held_head = c->held_tail = NULL;
		c->nheld = 0;
	}
	/* the held replies (deferred just now), the requests it sent on to
	 * the components, other connections' replies */
	bm_sendbatch_flush();
}

static void reply_fill(struct nreq *r, uint32_t nbd_err, uint32_t data_len)
{
	uint32_t v = htobe32(NBD_SIMPLE_REPLY_MAGIC);
	uint64_t ck = htobe64(r->cookie);

	memcpy(r->hdr, &v, 4);
	v = htobe32(nbd_err);
	memcpy(r->hdr + 4, &v, 4);
	memcpy(r->hdr + 8, &ck, 8);
	r->sent = 0;
	r->data_len = data_len;
	r->next = NULL;
}

/*
 * The per-connection writer: sleeps until a completing thread leaves
 * replies the socket did not take, then sends the queue as the socket
 * drains (as the sender: completions meanwhile only append).  No progress
 * for reply_timeout_ms ends the connection.  Stops when the reader has
 * stopped and every request has finished its reply.
 */
static void *writer_main(void *arg)
{
	struct conn *c = arg;
	int limit_ms = c->srv->limits.reply_timeout_ms;

	pthread_setname_np(pthread_self(), "bm-client-tx");
	pthread_mutex_lock(&c->send_lock);
	for (;;) {
		if (atomic_load(&c->srv->stopping) && limit_ms > STOP_REPLY_GRACE_MS)
			limit_ms = STOP_REPLY_GRACE_MS;
		uint64_t limit_ns = (uint64_t)limit_ms * 1000000ull;
		if (c->sending || c->deferred || !c->q_head) {
			if (!c->sending && c->reader_done &&
			    atomic_load(&c->pending) == 0)
				break;
			pthread_cond_wait(&c->send_cond, &c->send_lock);
			continue;
		}
		bool progress = false;
		int rc = push_as_sender_locked(c, &progress);
		if (rc != 0)
			continue; /* sent all (1), or the connection ended (< 0) */
		uint64_t now = now_ns();
		if (progress) {
			c->last_progress_ns = now;
		} else if (now - c->last_progress_ns >= limit_ns) {
			fprintf(stderr, "blkmirror: an NBD client has not read its "
			        "replies for %d ms: closing its connection\n",
			        limit_ms);
			conn_kill_locked(c);
			queue_drop_locked(c);
			continue;
		}
		uint64_t wait_ms = (limit_ns - (now - c->last_progress_ns))
		                   / 1000000ull + 1;
		if (wait_ms > WRITER_POLL_MS)
			wait_ms = WRITER_POLL_MS; /* to notice a stop */
		/* the queue is not empty: completions only append meanwhile */
		pthread_mutex_unlock(&c->send_lock);
		struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
		poll(&pfd, 1, (int)wait_ms);
		pthread_mutex_lock(&c->send_lock);
	}
	pthread_mutex_unlock(&c->send_lock);
	conn_put(c);
	return NULL;
}

static void request_done(struct bm_io *io, int result)
{
	struct nreq *r = (struct nreq *)io;
	struct conn *c = r->c;
	bool has_data = r->type == NBD_CMD_READ && result == 0 && io->length;

	if (has_data && io->nseg && io->buf) {
		/* served from the read-ahead's memory: the reply is sent from
		 * there, the request's buffer is not needed (its charge stays
		 * until the reply is sent) */
		bm_buf_put(io->buf, r->buf_len);
		io->buf = NULL;
	} else if ((io->flags & BM_IO_BORROW) && !io->nseg) {
		atomic_fetch_sub(&c->borrowing, 1); /* nothing lent */
		io->flags &= ~BM_IO_BORROW;
	}
	if (!has_data && io->buf) {
		/* A write's payload (or a failed read's buffer) is not needed
		 * for the reply: give it back now. */
		uint32_t data = r->charge - REQUEST_OVERHEAD;
		bm_buf_put(io->buf, r->buf_len);
		io->buf = NULL;
		r->charge = REQUEST_OVERHEAD; /* until the reply is sent */
		budget_give(&c->bytes, data);
		budget_give(&c->srv->bytes, data);
	}
	reply_fill(r, errno_to_nbd(result), has_data ? io->length : 0);
	if (reader_conn == c) {
		/* completed inline, on the reader: goes out with the next ones */
		if (c->held_tail)
			c->held_tail->next = r;
		else
			c->held_head = r;
		c->held_tail = r;
		if (++c->nheld >= HELD_MAX)
			reader_flush(c);
		return;
	}
	reply_send(c, r);
}

/* The reader gives up waiting for budget when the connection is dead or
 * the server stops. */
static bool reader_should_stop(void *arg)
{
	struct conn *c = arg;
	return atomic_load(&c->dead) || atomic_load(&c->srv->stopping);
}

/* Waits for room for charge bytes in both budgets. */
static int take_budget(struct conn *c, uint32_t charge)
{
	if (budget_try(&c->bytes, charge)) {
		if (budget_try(&c->srv->bytes, charge))
			return 0;
		budget_give(&c->bytes, charge);
	}
	reader_flush(c); /* what it holds may be what it waits for */
	if (!budget_take(&c->bytes, charge, reader_should_stop, c))
		return -ESHUTDOWN;
	if (!budget_take(&c->srv->bytes, charge, reader_should_stop, c)) {
		budget_give(&c->bytes, charge);
		return -ESHUTDOWN;
	}
	return 0;
}

/* A request with its budget taken (and its buffer, for reads and writes);
 * NULL when the connection should end. */
static struct nreq *new_request(struct conn *c, const struct nbd_request *q,
                                uint32_t data_len)
{
	uint32_t charge = data_len ? DATA_CHARGE(data_len) : REQUEST_OVERHEAD;
	struct nreq *r;

	if (take_budget(c, charge) < 0)
		return NULL;
	if (!c->spare) {
		pthread_mutex_lock(&c->send_lock);
		c->spare = c->free_reqs;
		c->free_reqs = NULL;
		c->nfree = 0;
		pthread_mutex_unlock(&c->send_lock);
	}
	if ((r = c->spare) != NULL) {
		c->spare = r->next;
		memset(r, 0, sizeof(*r));
	} else {
		r = calloc(1, sizeof(*r));
	}
	if (r && data_len && !(r->io.buf = bm_buf_get(data_len))) {
		free(r);
		r = NULL;
	}
	if (!r) {
		budget_give(&c->bytes, charge);
		budget_give(&c->srv->bytes, charge);
		return NULL;
	}
	r->c = c;
	r->buf_len = data_len;
	r->cookie = q->cookie;
	r->type = q->type;
	r->charge = charge;
	atomic_fetch_add(&c->pending, 1);
	return r;
}

/*
 * The reader's input: requests are read through a buffer, so that a client
 * with many requests in flight costs one read(2) per batch of headers (and
 * of small write payloads), not one per header.  A large payload is read
 * straight into its request's buffer after what is already buffered.
 */
#define INBUF_SIZE (16u << 10)

struct inbuf {
	struct conn *c;
	int fd;
	uint32_t start, end;
	uint8_t data[INBUF_SIZE];
};

/* Reads at least once into the free room: 0, or -errno / -EPIPE at EOF. */
static int inbuf_fill(struct inbuf *in)
{
	if (in->start == in->end) {
		in->start = in->end = 0;
	} else if (in->start > INBUF_SIZE / 2) {
		memmove(in->data, in->data + in->start, in->end - in->start);
		in->end -= in->start;
		in->start = 0;
	}
	reader_flush(in->c); /* the read may wait */
	for (;;) {
		ssize_t n = read(in->fd, in->data + in->end, INBUF_SIZE - in->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		in->end += (uint32_t)n;
		return 0;
	}
}

/* Reads exactly len bytes into dst (what is buffered first). */
static int inbuf_read(struct inbuf *in, void *dst, size_t len)
{
	char *p = dst;

	while (len) {
		uint32_t have = in->end - in->start;
		if (have) {
			uint32_t n = len < have ? (uint32_t)len : have;
			memcpy(p, in->data + in->start, n);
			in->start += n;
			p += n;
			len -= n;
			continue;
		}
		if (len >= INBUF_SIZE / 2) {
			reader_flush(in->c);
			return bm_read_full(in->fd, p, len);
		}
		int err = inbuf_fill(in);
		if (err < 0)
			return err;
	}
	return 0;
}

static int start_request(struct conn *c, struct inbuf *in,
                         const struct nbd_request *q)
{
	bool has_data = q->type == NBD_CMD_READ || q->type == NBD_CMD_WRITE;
	struct nreq *r = new_request(c, q, has_data ? q->length : 0);
	int err;

	if (!r)
		return -ENOMEM;
	r->io.offset = q->offset;
	r->io.length = q->length;
	/* FUA on a read or a flush means nothing (accepted: the spec) */
	r->io.flags = (q->flags & NBD_CMD_FLAG_FUA) && q->type != NBD_CMD_READ &&
	              q->type != NBD_CMD_FLUSH ? BM_IO_FUA : 0;
	r->io.done = request_done;
	switch (q->type) {
	case NBD_CMD_READ:
		r->io.type = BM_IO_READ;
		/* a read-ahead hit may be lent (sent without a copy) */
		if (atomic_fetch_add(&c->borrowing, 1) < BORROW_MAX)
			r->io.flags |= BM_IO_BORROW;
		else
			atomic_fetch_sub(&c->borrowing, 1);
		break;
	case NBD_CMD_WRITE: r->io.type = BM_IO_WRITE; break;
	case NBD_CMD_FLUSH: r->io.type = BM_IO_FLUSH; break;
	case NBD_CMD_TRIM: r->io.type = BM_IO_TRIM; break;
	default: r->io.type = BM_IO_WRITE_ZEROES; break;
	}
	if (q->type == NBD_CMD_WRITE && q->length) {
		err = inbuf_read(in, r->io.buf, q->length);
		if (err < 0) {
			pthread_mutex_lock(&c->send_lock);
			reply_finished_locked(c, r);
			pthread_mutex_unlock(&c->send_lock);
			return err;
		}
	}
	if (r->io.type != BM_IO_READ)
		reader_flush(c); /* a write may wait for a range */
	err = bm_mirror_submit(c->srv->m, &r->io);
	if (err < 0)
		request_done(&r->io, err);
	return 0;
}

/* Reads and discards len bytes (the payload of a write we refuse). */
static int skip_payload(struct inbuf *in, uint32_t len)
{
	char junk[4096];

	while (len) {
		uint32_t n = len < sizeof(junk) ? len : (uint32_t)sizeof(junk);
		int err = inbuf_read(in, junk, n);
		if (err < 0)
			return err;
		len -= n;
	}
	return 0;
}

static void transmission(struct conn *c)
{
	uint8_t hdr[NBD_REQUEST_SIZE];
	struct nbd_request q;
	struct inbuf *in = malloc(sizeof(*in));

	if (!in)
		return;
	in->c = c;
	in->fd = c->fd;
	in->start = in->end = 0;
	reader_conn = c;
	bm_sendbatch_open();
	while (!atomic_load(&c->dead)) {
		uint32_t nbd_err, payload;
		if (inbuf_read(in, hdr, sizeof(hdr)) < 0)
			break;
		if (nbd_parse_request(hdr, &q) < 0)
			break; /* bad magic: the stream is lost */
		enum nbd_verdict v = nbd_check_request(&q, c->srv->exp.size,
		                                       BM_MAX_IO, &nbd_err,
		                                       &payload);
		/* not aligned to what we advertised: the components would
		 * refuse it (and be failed out for it) */
		if (v == NBD_DO && c->min_block > 1 &&
		    q.type != NBD_CMD_FLUSH && q.type != NBD_CMD_DISC &&
		    ((q.offset | q.length) & (c->min_block - 1))) {
			v = NBD_REPLY_ERROR;
			nbd_err = NBD_EINVAL;
		}
		switch (v) {
		case NBD_HANG_UP:
			goto out;
		case NBD_REPLY_ERROR: {
			if (skip_payload(in, payload) < 0)
				goto out;
			struct nreq *r = new_request(c, &q, 0);
			if (!r)
				goto out;
			reply_fill(r, nbd_err, 0);
			reply_send(c, r);
			continue;
		}
		case NBD_DO:
			break;
		}
		if (q.type == NBD_CMD_DISC)
			break; /* in-flight requests still reply */
		if (start_request(c, in, &q) < 0)
			break;
	}
out:
	reader_flush(c);
	bm_sendbatch_close();
	reader_conn = NULL;
	free(in);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct bm_nbd_server *s = c->srv;
	struct bm_nbd_export exp = s->exp;

	pthread_setname_np(pthread_self(), "bm-client-rx");
	/* the components' alignment when the client connects (an insert
	 * that would raise it is refused: live.c) */
	exp.min_block = bm_mirror_min_block(s->m);
	c->min_block = exp.min_block;
	int rc = bm_nbd_negotiate_timed(c->fd, c->fd, &exp,
	                                s->limits.negotiate_ms);

	if (rc == -ETIMEDOUT)
		fprintf(stderr, "blkmirror: an NBD client did not finish "
		        "negotiating in %d ms: closing its connection\n",
		        s->limits.negotiate_ms);
	if (rc == 1) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 << 10);
		atomic_fetch_add(&c->refs, 1);
		if (pthread_create(&c->writer, &attr, writer_main, c) == 0) {
			transmission(c);
		} else {
			fprintf(stderr, "blkmirror: cannot start a thread for an NBD "
			        "connection: closing it\n");
			atomic_fetch_sub(&c->refs, 1);
		}
		pthread_attr_destroy(&attr);
	}
	shutdown(c->fd, SHUT_RD);
	pthread_mutex_lock(&c->send_lock);
	c->reader_done = true;
	pthread_cond_signal(&c->send_cond);
	pthread_mutex_unlock(&c->send_lock);
	conn_put(c);
	return NULL;
}

/* Closes a connection we will not serve. */
static void refuse(int fd)
{
	shutdown(fd, SHUT_RDWR);
	close(fd);
}

/* A Unix socket takes at most its send buffer of replies the client has
 * not read yet (212992 bytes by default): fewer than two 128 KiB replies,
 * so a client with a few large reads in flight found it full, and every
 * reply after went through the writer thread (a wake-up and a poll each).
 * Asking for more (the kernel caps it at net.core.wmem_max) lets the
 * completing thread send them at once.  The memory is bounded anyway by
 * the connection's budget of bytes in flight.  TCP keeps its own tuning
 * (a fixed SO_SNDBUF would turn its autotuning off). */
#define UNIX_SNDBUF (1u << 20)

static void unix_send_room(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int size = UNIX_SNDBUF;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
	    ss.ss_family == AF_UNIX)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

static void start_conn(struct bm_nbd_server *s, int fd)
{
	struct conn *c;
	pthread_attr_t attr;
	int one = 1;

	pthread_mutex_lock(&s->lock);
	int n = s->nconns;
	pthread_mutex_unlock(&s->lock);
	if (n >= s->limits.max_conns) {
		fprintf(stderr, "blkmirror: %d NBD connections already (the limit): "
		        "closing a new one\n", n);
		refuse(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		refuse(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	unix_send_room(fd);
	c->srv = s;
	c->fd = fd;
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_cond_init(&c->send_cond, NULL);
	budget_init(&c->bytes, s->limits.conn_bytes);
	atomic_init(&c->refs, 1);
	pthread_mutex_lock(&s->lock);
	c->next = s->conns;
	s->conns = c;
	s->nconns++;
	pthread_mutex_unlock(&s->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&c->thread, &attr, conn_main, c) != 0)
		conn_put(c);
	pthread_attr_destroy(&attr);
}

static void *accept_main(void *arg)
{
	struct bm_nbd_server *s = arg;
	struct pollfd pfd[3];

	pthread_setname_np(pthread_self(), "bm-accept");
	for (int i = 0; i < s->nlisten; i++)
		pfd[i] = (struct pollfd){.fd = s->listen_fd[i], .events = POLLIN};
	pfd[s->nlisten] = (struct pollfd){.fd = s->wake_pipe[0], .events = POLLIN};
	for (;;) {
		if (poll(pfd, (nfds_t)s->nlisten + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[s->nlisten].revents)
			break;
		for (int i = 0; i < s->nlisten; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			int fd = accept4(s->listen_fd[i], NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				start_conn(s, fd);
			else if (errno == EMFILE || errno == ENFILE)
				usleep(10000);
		}
	}
	return NULL;
}

/* Never replaces anything but a stale socket (unix_socket.c), and records
 * the inode so that stop removes only the socket this server bound. */
static int listen_unix(const char *path, int *out, struct bm_sock_id *id)
{
	int fd = bm_unix_socket_listen(path, 64, id);

	if (fd < 0)
		return fd;
	*out = fd;
	return 0;
}

static int listen_tcp(const char *hostport, int *out)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai;
	int fd, one = 1, rc;

	const char *port;

	if (hostport[0] && strspn(hostport, "0123456789") == strlen(hostport)) {
		/* a bare port: loopback only, unless told otherwise */
		snprintf(host, sizeof(host), "127.0.0.1");
		port = hostport;
	} else {
		if (!colon || colon == hostport || !colon[1] ||
		    (size_t)(colon - hostport) >= sizeof(host) ||
		    strspn(colon + 1, "0123456789") != strlen(colon + 1))
			return bm_error(EINVAL, "--tcp wants PORT (on 127.0.0.1) "
			                "or HOST:PORT, e.g. 10809 or 0.0.0.0:10809, "
			                "not '%s'", hostport);
		memcpy(host, hostport, (size_t)(colon - hostport));
		host[colon - hostport] = '\0';
		port = colon + 1;
	}
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	/* getaddrinfo takes port 0 ("any") and wraps 65536 to 0 */
	if (strlen(port) > 5 || atoi(port) < 1 || atoi(port) > 65535)
		return bm_error(EINVAL, "--tcp %s: the port must be a number from "
		                "1 to 65535", hostport);
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc != 0)
		return bm_error(EINVAL, "--tcp %s: %s", hostport, gai_strerror(rc));
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return bm_error(errno, "socket: %s", strerror(errno));
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		int err = errno;
		close(fd);
		freeaddrinfo(ai);
		return bm_error(err, "cannot listen on %s: %s", hostport,
		                strerror(err));
	}
	freeaddrinfo(ai);
	*out = fd;
	return 0;
}


int bm_nbd_server_listen(const char *unix_path, const char *tcp,
                         struct bm_nbd_server **out)
{
	struct bm_nbd_server *s = calloc(1, sizeof(*s));
	int err = 0;

	if (!s)
		return bm_error(ENOMEM, "out of memory");
	s->wake_pipe[0] = s->wake_pipe[1] = -1;
	bm_nbd_limits_default(&s->limits);
	budget_init(&s->bytes, s->limits.server_bytes);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (unix_path) {
		err = listen_unix(unix_path, &s->listen_fd[s->nlisten], &s->unix_id);
		if (err < 0)
			goto fail;
		snprintf(s->unix_path, sizeof(s->unix_path), "%s", unix_path);
		s->nlisten++;
	}
	if (tcp) {
		err = listen_tcp(tcp, &s->listen_fd[s->nlisten]);
		if (err < 0)
			goto fail;
		s->nlisten++;
	}
	if (s->nlisten == 0) {
		err = bm_error(EINVAL, "nothing to listen on: give --socket PATH "
		               "or --tcp HOST:PORT");
		goto fail;
	}
	if (pipe2(s->wake_pipe, O_CLOEXEC) < 0) {
		err = bm_error(errno, "pipe: %s", strerror(errno));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	for (int i = 0; i < s->nlisten; i++)
		close(s->listen_fd[i]);
	if (s->unix_path[0])
		bm_unix_socket_remove(s->unix_path, &s->unix_id);
	budget_destroy(&s->bytes);
	free(s);
	return err;
}

int bm_nbd_server_run(struct bm_nbd_server *s, bm_mirror *m,
                      const char *export_name)
{
	s->m = m;
	snprintf(s->export_name, sizeof(s->export_name), "%s", export_name);
	s->exp.name = s->export_name;
	s->exp.size = bm_mirror_size(m);
	(void)bm_mirror_min_block(m); /* what the assembled components take,
	                                 kept even if one leaves before the
	                                 first client */
	s->exp.tflags = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH |
	                NBD_FLAG_SEND_FUA | NBD_FLAG_SEND_TRIM |
	                NBD_FLAG_SEND_WRITE_ZEROES | NBD_FLAG_CAN_MULTI_CONN;
	if (pthread_create(&s->accept_thread, NULL, accept_main, s) != 0)
		return bm_error(EAGAIN, "cannot start the accept thread");
	s->running = true;
	return 0;
}

void bm_nbd_server_stop(struct bm_nbd_server *s)
{
	char b = 0;

	if (s->running) {
		if (write(s->wake_pipe[1], &b, 1) < 0)
			perror("blkmirror: wake");
		pthread_join(s->accept_thread, NULL);
	}
	for (int i = 0; i < s->nlisten; i++) {
		shutdown(s->listen_fd[i], SHUT_RDWR);
		close(s->listen_fd[i]);
	}
	if (s->unix_path[0])
		bm_unix_socket_remove(s->unix_path, &s->unix_id);
	/* Stop reading new requests (readers waiting for budget give up);
	 * in-flight ones still reply. */
	atomic_store(&s->stopping, true);
	pthread_mutex_lock(&s->lock);
	for (struct conn *c = s->conns; c; c = c->next)
		shutdown(c->fd, SHUT_RD);
	while (s->nconns > 0)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	close(s->wake_pipe[0]);
	close(s->wake_pipe[1]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	budget_destroy(&s->bytes);
	free(s);
}

/* Who is at the other end of one connection. */
static void describe_peer(int fd, char *who, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	snprintf(who, len, "a client");
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	if (ss.ss_family == AF_UNIX) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		char comm[64] = "", p[64];
		FILE *f;
		snprintf(who, len, "a client on the unix socket");
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
		    cr.pid <= 0)
			return;
		snprintf(p, sizeof(p), "/proc/%d/comm", (int)cr.pid);
		if ((f = fopen(p, "re")) != NULL) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
		snprintf(who, len, "pid %d%s%s%s on the unix socket", (int)cr.pid,
		         comm[0] ? " (" : "", comm, comm[0] ? ")" : "");
	} else {
		char host[INET6_ADDRSTRLEN + 8], port[16];
		if (getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port,
		                sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
			snprintf(who, len, "tcp %s%s%s:%s",
			         ss.ss_family == AF_INET6 ? "[" : "", host,
			         ss.ss_family == AF_INET6 ? "]" : "", port);
	}
}

/* Connections from one peer (a multi-conn client opens several) are told
 * once, with their number. */
int bm_nbd_server_clients(struct bm_nbd_server *s, char *buf, size_t len)
{
	enum { MAX_PEERS = 16 };
	struct { char who[200]; int count; } peers[MAX_PEERS];
	size_t used = 0;
	int n = 0, np = 0, others = 0;

	pthread_mutex_lock(&s->lock);
	for (struct conn *c = s->conns; c; c = c->next) {
		char who[200];
		int k;
		/* A client that has hung up is leaving, not connected: its
		 * connection is only finishing its replies. */
		struct pollfd pfd = {.fd = c->fd, .events = POLLRDHUP};
		if (atomic_load(&c->dead) ||
		    (poll(&pfd, 1, 0) == 1 &&
		     (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))))
			continue;
		n++;
		describe_peer(c->fd, who, sizeof(who));
		for (k = 0; k < np && strcmp(peers[k].who, who) != 0; k++)
			;
		if (k < np) {
			peers[k].count++;
		} else if (np < MAX_PEERS) {
			snprintf(peers[np].who, sizeof(peers[np].who), "%s", who);
			peers[np++].count = 1;
		} else {
			others++;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (len)
		buf[0] = '\0';
	for (int k = np - 1; k >= 0 && used < len; k--) {
		int w = peers[k].count > 1
		        ? snprintf(buf + used, len - used, "%s%d from %s",
		                   used ? ", " : "", peers[k].count, peers[k].who)
		        : snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
		                   peers[k].who);
		if (w > 0)
			used += (size_t)w;
	}
	if (others && used < len)
		snprintf(buf + used, len - used, ", %d more", others);
	return n;
}
