/*
 * The control socket of a running mirror (STATE_DIR/NAME.ctl, mode 0600):
 * one request a connection, a line of text in ("status", "list",
 * "io-timeout MS", "stop", "live ..." jobs), text out, then close.  The first line of
 * the reply is "ok" or "error MESSAGE".
 *
 * Neither side can hang the other: the server reads and writes a client with
 * timeouts and ends its reply with shutdown(SHUT_WR), so the client sees EOF
 * even if something else still holds the socket; control_call gives up after
 * CTL_CALL_TIMEOUT_MS in all (connect, send, reply).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "unix_socket.h"

#define CTL_REPLY_MAX (256 * 1024)
#define CTL_CMD_MAX (16 * 1024)   /* a request line: room for component paths */
#define CTL_CALL_TIMEOUT_MS 10000

struct control_server {
	int fd;
	int wake[2];
	char path[108];
	control_handler handler;
	void *ctx;
	pthread_t thread;
};

static int ctl_addr(const char *name, struct sockaddr_un *sa)
{
	char p[4096];

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (state_path(p, sizeof(p), name, ".ctl") < 0 ||
	    strlen(p) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, p);
	return 0;
}

static void serve_one(struct control_server *c, int fd)
{
	char cmd[CTL_CMD_MAX];
	size_t got = 0;
	char *out = malloc(CTL_REPLY_MAX);
	struct timeval tv = {5, 0};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (got < sizeof(cmd) - 1) {
		ssize_t n = read(fd, cmd + got, sizeof(cmd) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(cmd, '\n', got))
			break;
	}
	cmd[got] = '\0';
	cmd[strcspn(cmd, "\n")] = '\0';
	if (out) {
		c->handler(c->ctx, cmd, out, CTL_REPLY_MAX);
		size_t len = strlen(out), off = 0;
		while (off < len) {
			ssize_t n = send(fd, out + off, len - off, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			off += (size_t)n;
		}
	}
	free(out);
	shutdown(fd, SHUT_WR); /* EOF now, whoever else holds the socket */
	close(fd);
}

static void *control_main(void *arg)
{
	struct control_server *c = arg;
	struct pollfd pfd[2] = {{.fd = c->fd, .events = POLLIN},
	                        {.fd = c->wake[0], .events = POLLIN}};

	pthread_setname_np(pthread_self(), "bm-control");
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			serve_one(c, fd);
	}
	return NULL;
}

/* Creates STATE_DIR/NAME.ctl (mode 0600).  The caller holds NAME.lock, so
 * a socket found there is stale unless something else entirely put it
 * there; either way unix_socket.c replaces only a stale socket and names
 * anything else.  -errno with the message in bm_last_error(). */
int control_start(const char *name, control_handler h, void *ctx,
                  struct control_server **out)
{
	struct control_server *c = calloc(1, sizeof(*c));
	struct sockaddr_un sa;
	struct bm_sock_id id;
	mode_t old;
	int err;

	if (!c)
		return bm_error(ENOMEM, "out of memory");
	if (mkdir(state_dir(), 0755) < 0 && errno != EEXIST) {
		err = bm_error(errno, "cannot create the state directory %s: %s",
		               state_dir(), strerror(errno));
		goto fail;
	}
	if (ctl_addr(name, &sa) < 0) {
		err = bm_error(ENAMETOOLONG, "the control socket path in %s is "
		               "too long", state_dir());
		goto fail;
	}
	old = umask(077);
	c->fd = bm_unix_socket_listen(sa.sun_path, 16, &id);
	umask(old);
	if (c->fd < 0) {
		err = c->fd;
		goto fail;
	}
	if (pipe2(c->wake, O_CLOEXEC) < 0) {
		err = bm_error(errno, "pipe: %s", strerror(errno));
		close(c->fd);
		unlink(sa.sun_path);
		goto fail;
	}
	snprintf(c->path, sizeof(c->path), "%s", sa.sun_path);
	c->handler = h;
	c->ctx = ctx;
	if (pthread_create(&c->thread, NULL, control_main, c) != 0) {
		err = bm_error(EAGAIN, "cannot start the control thread");
		close(c->fd);
		close(c->wake[0]);
		close(c->wake[1]);
		unlink(sa.sun_path);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	free(c);
	return err;
}

void control_stop(struct control_server *c)
{
	char b = 0;

	if (write(c->wake[1], &b, 1) < 0)
		perror("blkmirror: control wake");
	pthread_join(c->thread, NULL);
	close(c->fd);
	close(c->wake[0]);
	close(c->wake[1]);
	unlink(c->path);
	free(c);
}

static int64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends all of buf before the deadline (the socket has a send timeout). */
static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return (errno == EAGAIN || errno == EWOULDBLOCK) ? -ETIMEDOUT
			                                                 : -errno;
		buf += n;
		len -= (size_t)n;
		if (len && ms_now() >= deadline)
			return -ETIMEDOUT;
	}
	return 0;
}

/*
 * Sends cmd to the running mirror and reads the whole reply into out.
 * Returns 0, -ENOENT (not running, or a stale socket), -EACCES (no
 * permission on the socket), -ETIMEDOUT (not taken within
 * CTL_CALL_TIMEOUT_MS: nothing was sent), -EINPROGRESS (sent in full, but
 * no complete answer within it: the server may still carry it out), or
 * another -errno.
 */
int control_call(const char *name, const char *cmd, char *out, size_t outlen)
{
	struct sockaddr_un sa;
	struct timeval tv = {CTL_CALL_TIMEOUT_MS / 1000, 0};
	int64_t deadline = ms_now() + CTL_CALL_TIMEOUT_MS;
	size_t got = 0;
	int fd, err = 0;

	if (outlen == 0)
		return -EINVAL;
	out[0] = '\0';
	if (ctl_addr(name, &sa) < 0)
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A Unix connect blocks (backlog full) for at most the send timeout. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		if (e == EACCES || e == EPERM)
			return -EACCES;
		if (e == EAGAIN || e == EINPROGRESS || e == ETIMEDOUT)
			return -ETIMEDOUT;
		return -ENOENT; /* not running (or a stale socket) */
	}
	err = send_all(fd, cmd, strlen(cmd), deadline);
	if (!err)
		err = send_all(fd, "\n", 1, deadline);
	while (!err && got + 1 < outlen) {
		int64_t left = deadline - ms_now();
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (left <= 0) {
			err = -EINPROGRESS; /* (sent: it may still be done) */
			break;
		}
		int r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			continue; /* the deadline check above ends it */
		ssize_t n = read(fd, out + got, outlen - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	close(fd);
	return err;
}
