/* Backend dispatch by path, identity, and a wait-for-one-request helper. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "backend.h"
#include "error.h"

int bm_backend_open(const char *path, bool exclusive, struct bm_backend **out)
{
	if (path[0] == '\0')
		return bm_error(EINVAL, "empty component path");
	if (strlen(path) >= PATH_MAX)
		return bm_error(ENAMETOOLONG, "component path is too long");
	if (strncmp(path, "nbd://", 6) == 0 || strncmp(path, "nbd+unix://", 11) == 0 ||
	    strncmp(path, "nbds://", 7) == 0 || strncmp(path, "nbds+unix://", 12) == 0)
		return bm_nbd_backend_open(path, out);
	if (strstr(path, "://"))
		return bm_error(EINVAL, "%s: unknown URI scheme; a component is a "
		                "file, a block device, nbd://HOST[:PORT]/EXPORT or "
		                "nbd+unix:///EXPORT?socket=PATH", path);
	return bm_file_backend_open(path, exclusive, out);
}

bool bm_backend_same(const struct bm_backend *a, const struct bm_backend *b)
{
	if (a->st_rdev && a->st_rdev == b->st_rdev)
		return true;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       (a->st_ino != 0 || strcmp(a->path, b->path) == 0);
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;
	int result;
};

static void waiter_done(struct bm_breq *r, int result)
{
	struct waiter *w = r->opaque;

	pthread_mutex_lock(&w->lock);
	w->result = result;
	w->finished = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int bm_backend_io_wait(struct bm_backend *be, enum bm_bop op, void *buf,
                       uint32_t len, uint64_t off, uint32_t flags)
{
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	                   false, 0};
	struct bm_breq r = {.op = op, .flags = flags, .offset = off,
	                    .length = len, .buf = buf, .done = waiter_done,
	                    .opaque = &w};
	int err = be->ops->submit(be, &r);

	if (err < 0)
		return err;
	pthread_mutex_lock(&w.lock);
	while (!w.finished)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.result;
}
