/*
 * NBD listener and transmission phase.
 *
 * One accept thread per server; one reader thread per connection.  The
 * reader decodes a request, reads its payload, and hands it to the mirror;
 * the reply is sent by whichever backend thread completes it, under the
 * connection's send lock, so replies go out in completion order.  A
 * connection is freed when its reader has stopped and its last in-flight
 * request has replied (a reference count).
 *
 * Hostile input: a bad magic, or a write whose payload we will not read,
 * ends the connection; anything else wrong gets an error reply and the
 * connection goes on.  One connection's failure never touches another.
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
#include <unistd.h>

#include "error.h"
#include "nbd_parse.h"
#include "nbd_proto.h"
#include "nbd_server.h"
#include "unix_socket.h"

#define REPLY_SEND_TIMEOUT_S 30

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
	pthread_mutex_t lock;     /* protects conns and nconns */
	pthread_cond_t cond;
	struct conn *conns;
	int nconns;
};

struct conn {
	struct bm_nbd_server *srv;
	int fd;
	pthread_mutex_t send_lock; /* one reply at a time on fd */
	atomic_int refs;           /* reader + in-flight requests */
	atomic_bool dead;
	struct conn *next;         /* srv->lock */
	pthread_t thread;
};

struct nreq {
	struct bm_io io;
	struct conn *c;
	uint64_t cookie;
	uint16_t type;
};

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
	close(c->fd);
	pthread_mutex_destroy(&c->send_lock);
	free(c);
}

static uint32_t errno_to_nbd(int err)
{
	switch (err < 0 ? -err : err) {
	case 0: return 0;
	case EPERM: case EROFS: return NBD_EPERM;
	case ENOMEM: return NBD_ENOMEM;
	case EINVAL: return NBD_EINVAL;
	case ENOSPC: return NBD_ENOSPC;
	case EOVERFLOW: return NBD_EOVERFLOW;
	case ENOTSUP: return NBD_ENOTSUP;
	case ESHUTDOWN: return NBD_ESHUTDOWN;
	default: return NBD_EIO;
	}
}

/* Sends a reply header and its data in one system call when it can. */
static int send_two(int fd, const void *a, size_t alen, const void *b,
                    size_t blen)
{
	struct iovec iov[2] = {{(void *)a, alen}, {(void *)b, blen}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = blen ? 2 : 1};
	ssize_t n;

	do {
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n >= alen + blen)
		return 0;
	/* A short send: finish with plain writes. */
	if ((size_t)n < alen) {
		int err = bm_write_full(fd, (const char *)a + n, alen - (size_t)n);
		return err ? err : (blen ? bm_write_full(fd, b, blen) : 0);
	}
	return bm_write_full(fd, (const char *)b + (n - (ssize_t)alen),
	                     blen - (size_t)(n - (ssize_t)alen));
}

static void send_reply(struct conn *c, uint64_t cookie, uint32_t nbd_err,
                       const void *data, uint32_t len)
{
	uint8_t hdr[16];
	uint32_t v = htobe32(NBD_SIMPLE_REPLY_MAGIC);
	uint64_t ck = htobe64(cookie);

	memcpy(hdr, &v, 4);
	v = htobe32(nbd_err);
	memcpy(hdr + 4, &v, 4);
	memcpy(hdr + 8, &ck, 8);
	pthread_mutex_lock(&c->send_lock);
	if (!atomic_load(&c->dead)) {
		int err = send_two(c->fd, hdr, sizeof(hdr), data, len);
		if (err < 0) {
			atomic_store(&c->dead, true);
			shutdown(c->fd, SHUT_RDWR); /* wakes the reader */
		}
	}
	pthread_mutex_unlock(&c->send_lock);
}

static void request_done(struct bm_io *io, int result)
{
	struct nreq *r = (struct nreq *)io;
	struct conn *c = r->c;

	send_reply(c, r->cookie, errno_to_nbd(result), io->buf,
	           (r->type == NBD_CMD_READ && result == 0) ? io->length : 0);
	free(io->buf);
	free(r);
	conn_put(c);
}

static int start_request(struct conn *c, const struct nbd_request *q)
{
	struct nreq *r = calloc(1, sizeof(*r));
	void *buf = NULL;
	int err;

	if (!r)
		return -ENOMEM;
	if ((q->type == NBD_CMD_READ || q->type == NBD_CMD_WRITE) && q->length &&
	    posix_memalign(&buf, 4096, q->length)) {
		free(r);
		return -ENOMEM;
	}
	r->c = c;
	r->cookie = q->cookie;
	r->type = q->type;
	r->io.offset = q->offset;
	r->io.length = q->length;
	r->io.buf = buf;
	r->io.flags = (q->flags & NBD_CMD_FLAG_FUA) ? BM_IO_FUA : 0;
	r->io.done = request_done;
	switch (q->type) {
	case NBD_CMD_READ: r->io.type = BM_IO_READ; break;
	case NBD_CMD_WRITE: r->io.type = BM_IO_WRITE; break;
	case NBD_CMD_FLUSH: r->io.type = BM_IO_FLUSH; break;
	case NBD_CMD_TRIM: r->io.type = BM_IO_TRIM; break;
	default: r->io.type = BM_IO_WRITE_ZEROES; break;
	}
	if (q->type == NBD_CMD_WRITE && q->length) {
		err = bm_read_full(c->fd, buf, q->length);
		if (err < 0) {
			free(buf);
			free(r);
			return err;
		}
	}
	atomic_fetch_add(&c->refs, 1);
	err = bm_mirror_submit(c->srv->m, &r->io);
	if (err < 0) {
		send_reply(c, q->cookie, errno_to_nbd(err), NULL, 0);
		free(buf);
		free(r);
		conn_put(c);
	}
	return 0;
}

/* Reads and discards len bytes (the payload of a write we refuse). */
static int skip_payload(int fd, uint32_t len)
{
	char junk[4096];

	while (len) {
		uint32_t n = len < sizeof(junk) ? len : (uint32_t)sizeof(junk);
		int err = bm_read_full(fd, junk, n);
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

	while (!atomic_load(&c->dead)) {
		uint32_t nbd_err, payload;
		if (bm_read_full(c->fd, hdr, sizeof(hdr)) < 0)
			return;
		if (nbd_parse_request(hdr, &q) < 0)
			return; /* bad magic: the stream is lost */
		switch (nbd_check_request(&q, c->srv->exp.size, BM_MAX_IO,
		                          &nbd_err, &payload)) {
		case NBD_HANG_UP:
			return;
		case NBD_REPLY_ERROR:
			if (skip_payload(c->fd, payload) < 0)
				return;
			send_reply(c, q.cookie, nbd_err, NULL, 0);
			continue;
		case NBD_DO:
			break;
		}
		if (q.type == NBD_CMD_DISC)
			return; /* in-flight requests still reply */
		if (start_request(c, &q) < 0)
			return;
	}
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;

	if (bm_nbd_negotiate(c->fd, c->fd, &c->srv->exp) == 1)
		transmission(c);
	shutdown(c->fd, SHUT_RD);
	conn_put(c);
	return NULL;
}

static void start_conn(struct bm_nbd_server *s, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	pthread_attr_t attr;
	int one = 1;

	if (!c) {
		close(fd);
		return;
	}
	/* A client that stops reading its replies must not hold a backend
	 * thread forever: a reply that cannot be sent in this time ends the
	 * connection. */
	struct timeval send_limit = {REPLY_SEND_TIMEOUT_S, 0};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_limit, sizeof(send_limit));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->srv = s;
	c->fd = fd;
	pthread_mutex_init(&c->send_lock, NULL);
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
	for (int i = 0; i < s->nlisten; i++)
		close(s->listen_fd[i]);
	if (s->unix_path[0])
		bm_unix_socket_remove(s->unix_path, &s->unix_id);
	/* Stop reading new requests; in-flight ones still reply. */
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
	for (struct conn *c = s->conns; c; c = c->next, n++) {
		char who[200];
		int k;
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
