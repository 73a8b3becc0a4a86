/*
 * Remote components: an NBD export (nbd://HOST[:PORT]/EXPORT,
 * nbd+unix:///EXPORT?socket=PATH), through libnbd's asynchronous API.
 *
 * One connection per component with any number of requests in flight, and
 * one event-loop thread that polls the socket and lets libnbd make progress.
 * Submitters call nbd_aio_* directly (the handle has its own lock), which
 * sends the request at once when the socket takes it, then wake the loop
 * (an eventfd) so that it polls with the handle's current direction.
 *
 * libnbd runs completion callbacks with the handle locked, so the callback
 * only moves the request to a completed list; the loop delivers done() after
 * libnbd returns, where done() may safely start more I/O on any component.
 *
 * What the export cannot do is emulated: no FUA means write then flush; no
 * TRIM means TRIM is accepted and ignored; no WRITE_ZEROES means writing
 * zeros.  A dead connection fails every request on it, which fails the
 * component out of the mirror in the usual way.
 */
#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../backend.h"
#include "../error.h"

struct nbd_backend;

/* The per-request state kept while libnbd owns the request. */
struct nbd_cmd {
	struct nbd_backend *nb;
	struct bm_breq *r;
	enum bm_bop op;         /* what to send next (FUA emulation flushes) */
	int result;
	bool then_flush;        /* emulated FUA: flush once the write is done */
	void *zero_buf;         /* emulated WRITE_ZEROES */
	struct nbd_cmd *next;   /* on the completed list */
};

struct nbd_backend {
	struct bm_backend base;
	struct nbd_handle *h;
	int wake_fd;
	pthread_t loop;
	atomic_bool stopping;
	atomic_int inflight;
	bool can_fua, can_trim, can_zero, can_flush;
	pthread_mutex_t done_lock;  /* protects done_head */
	struct nbd_cmd *done_head;
};

static void wake(struct nbd_backend *nb)
{
	uint64_t one = 1;
	if (write(nb->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the loop is awake anyway */
	}
}

static __thread struct nbd_backend *in_loop; /* set on a loop thread */

/* libnbd completion callback: runs with the handle locked, almost always
 * on the loop thread, which delivers right after; only a completion on
 * another thread needs to wake it. */
static int on_complete(void *user_data, int *error)
{
	struct nbd_cmd *c = user_data;
	struct nbd_backend *nb = c->nb;

	c->result = *error ? -*error : 0;
	pthread_mutex_lock(&nb->done_lock);
	c->next = nb->done_head;
	nb->done_head = c;
	pthread_mutex_unlock(&nb->done_lock);
	if (in_loop != nb)
		wake(nb);
	return 1;
}

static int issue(struct nbd_backend *nb, struct nbd_cmd *c);

static void deliver(struct nbd_backend *nb)
{
	struct nbd_cmd *list;

	pthread_mutex_lock(&nb->done_lock);
	list = nb->done_head;
	nb->done_head = NULL;
	pthread_mutex_unlock(&nb->done_lock);
	while (list) {
		struct nbd_cmd *c = list;
		list = c->next;
		if (c->result == 0 && c->then_flush) {
			c->then_flush = false;
			c->op = BM_BOP_FLUSH; /* the write is done; now flush */
			if (issue(nb, c) == 0)
				continue;
		}
		struct bm_breq *r = c->r;
		int res = c->result;
		free(c->zero_buf);
		free(c);
		atomic_fetch_sub(&nb->inflight, 1);
		r->done(r, res);
	}
}

static void *loop_main(void *arg)
{
	struct nbd_backend *nb = arg;
	int fd = nbd_aio_get_fd(nb->h);

	in_loop = nb;
	for (;;) {
		unsigned dir = nbd_aio_get_direction(nb->h);
		struct pollfd pfd[2] = {
			{.fd = fd,
			 .events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
			                   ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0))},
			{.fd = nb->wake_fd, .events = POLLIN},
		};
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents & POLLIN) {
			uint64_t v;
			if (read(nb->wake_fd, &v, sizeof(v)) < 0) {
				/* spurious */
			}
		}
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
			nbd_aio_notify_read(nb->h);
		else if (pfd[0].revents & POLLOUT)
			nbd_aio_notify_write(nb->h);
		deliver(nb);
		if (atomic_load(&nb->stopping) && atomic_load(&nb->inflight) == 0)
			break;
		if (nbd_aio_is_dead(nb->h) || nbd_aio_is_closed(nb->h)) {
			/* Nothing more will complete by itself: libnbd has
			 * already failed what was in flight.  Keep delivering
			 * until asked to stop. */
			deliver(nb);
			if (atomic_load(&nb->stopping))
				break;
			usleep(10000);
		}
	}
	return NULL;
}

static int issue(struct nbd_backend *nb, struct nbd_cmd *c)
{
	struct bm_breq *r = c->r;
	nbd_completion_callback cb = {.callback = on_complete, .user_data = c};
	uint32_t flags = 0;
	int64_t cookie;

	switch (c->op) {
	case BM_BOP_READ:
		cookie = nbd_aio_pread(nb->h, r->buf, r->length, r->offset, cb, 0);
		break;
	case BM_BOP_WRITE:
		if (r->flags & BM_BOP_FUA) {
			if (nb->can_fua)
				flags = LIBNBD_CMD_FLAG_FUA;
			else
				c->then_flush = nb->can_flush;
		}
		cookie = nbd_aio_pwrite(nb->h, r->buf, r->length, r->offset, cb,
		                        flags);
		break;
	case BM_BOP_FLUSH:
		if (!nb->can_flush) {
			c->result = 0;
			on_complete(c, &(int){0});
			return 0;
		}
		cookie = nbd_aio_flush(nb->h, cb, 0);
		break;
	case BM_BOP_TRIM:
		if (!nb->can_trim) {
			on_complete(c, &(int){0});
			return 0;
		}
		if ((r->flags & BM_BOP_FUA) && nb->can_fua)
			flags = LIBNBD_CMD_FLAG_FUA;
		cookie = nbd_aio_trim(nb->h, r->length, r->offset, cb, flags);
		break;
	default: /* ZERO */
		if ((r->flags & BM_BOP_FUA) && nb->can_fua)
			flags = LIBNBD_CMD_FLAG_FUA;
		if (nb->can_zero) {
			cookie = nbd_aio_zero(nb->h, r->length, r->offset, cb, flags);
		} else {
			c->zero_buf = calloc(1, r->length ? r->length : 1);
			if (!c->zero_buf)
				return -ENOMEM;
			cookie = nbd_aio_pwrite(nb->h, c->zero_buf, r->length,
			                        r->offset, cb, flags);
		}
		break;
	}
	if (cookie < 0) {
		int err = nbd_get_errno();
		return err ? -err : -EIO;
	}
	/* Always tell the loop: it must poll again with whatever direction
	 * the handle is in now (waking only when output was left queued hung
	 * one run of component_vanishes when the server died; a lost wake-up
	 * costs a hang, an extra one a few microseconds). */
	wake(nb);
	return 0;
}

static int nbd_submit(struct bm_backend *be, struct bm_breq *r)
{
	struct nbd_backend *nb = (struct nbd_backend *)be;
	struct nbd_cmd *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->nb = nb;
	c->r = r;
	c->op = r->op;
	atomic_fetch_add(&nb->inflight, 1);
	err = issue(nb, c);
	if (err < 0) {
		atomic_fetch_sub(&nb->inflight, 1);
		free(c->zero_buf);
		free(c);
	}
	return err;
}

static int nbd_pread_sync(struct bm_backend *be, void *buf, size_t len,
                          uint64_t off)
{
	return bm_backend_io_wait(be, BM_BOP_READ, buf, (uint32_t)len, off, 0);
}

static int nbd_pwrite_sync(struct bm_backend *be, const void *buf, size_t len,
                           uint64_t off)
{
	return bm_backend_io_wait(be, BM_BOP_WRITE, (void *)buf, (uint32_t)len,
	                          off, 0);
}

static int nbd_flush_sync(struct bm_backend *be)
{
	return bm_backend_io_wait(be, BM_BOP_FLUSH, NULL, 0, 0, 0);
}

static void nbd_close_backend(struct bm_backend *be)
{
	struct nbd_backend *nb = (struct nbd_backend *)be;

	atomic_store(&nb->stopping, true);
	wake(nb);
	pthread_join(nb->loop, NULL);
	deliver(nb);
	nbd_shutdown(nb->h, 0);
	nbd_close(nb->h);
	close(nb->wake_fd);
	pthread_mutex_destroy(&nb->done_lock);
	free(nb);
}

static const struct bm_backend_ops nbd_ops = {
	.kind = "nbd",
	.submit = nbd_submit,
	.pread_sync = nbd_pread_sync,
	.pwrite_sync = nbd_pwrite_sync,
	.flush_sync = nbd_flush_sync,
	.close = nbd_close_backend,
};

int bm_nbd_backend_open(const char *uri, struct bm_backend **out)
{
	struct nbd_backend *nb = calloc(1, sizeof(*nb));
	int64_t size;

	if (!nb)
		return bm_error(ENOMEM, "out of memory");
	nb->h = nbd_create();
	if (!nb->h) {
		free(nb);
		return bm_error(ENOMEM, "%s: %s", uri, nbd_get_error());
	}
	nbd_set_uri_allow_local_file(nb->h, true);
	if (nbd_connect_uri(nb->h, uri) < 0) {
		int err = nbd_get_errno();
		bm_error(err ? err : EIO, "%s: cannot connect: %s", uri,
		         nbd_get_error());
		nbd_close(nb->h);
		free(nb);
		return err ? -err : -EIO;
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
	nb->can_trim = nbd_can_trim(nb->h) == 1;
	nb->can_zero = nbd_can_zero(nb->h) == 1;
	nb->can_flush = nbd_can_flush(nb->h) == 1;
	nb->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&nb->done_lock, NULL);
	if (nb->wake_fd < 0 ||
	    pthread_create(&nb->loop, NULL, loop_main, nb) != 0) {
		if (nb->wake_fd >= 0)
			close(nb->wake_fd);
		nbd_close(nb->h);
		pthread_mutex_destroy(&nb->done_lock);
		free(nb);
		return bm_error(EAGAIN, "%s: cannot start the I/O thread", uri);
	}
	*out = &nb->base;
	return 0;
}
