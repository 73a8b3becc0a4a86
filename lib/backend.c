/*
 * Backend dispatch: a table of URI schemes and their open functions (a
 * path that is no URI is a file or a block device), and identity.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "backends/crashsim.h"
#include "blkmirror.h"
#include "error.h"

static const struct scheme {
	const char *prefix;
	int (*open)(const char *uri, struct bm_backend **out);
} schemes[] = {
	{"nbd://", bm_nbd_backend_open},
	{"nbd+unix://", bm_nbd_backend_open},
	{"nbds://", bm_nbd_backend_open},
	{"nbds+unix://", bm_nbd_backend_open},
	{BM_CRASHSIM_PREFIX, bm_crashsim_backend_open},  /* tests only */
};

int bm_backend_open(const char *path, bool exclusive, struct bm_backend **out)
{
	if (path[0] == '\0')
		return bm_error(EINVAL, "empty component path");
	if (strlen(path) >= PATH_MAX)
		return bm_error(ENAMETOOLONG, "component path is too long");
	int err = -EINVAL;
	bool known = false;

	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]) && !known; i++)
		if (strncmp(path, schemes[i].prefix, strlen(schemes[i].prefix)) == 0) {
			err = schemes[i].open(path, out);
			known = true;
		}
	if (!known && strstr(path, "://"))
		return bm_error(EINVAL, "%s: unknown URI scheme; a component is a "
		                "file, a block device, nbd://HOST[:PORT]/EXPORT or "
		                "nbd+unix:///EXPORT?socket=PATH", path);
	if (!known)
		err = bm_file_backend_open(path, exclusive, out);
	if (err == 0)
		(*out)->dev_size = (*out)->size;
	return err;
}

int bm_backend_discard(struct bm_backend *be, int err)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "%s", bm_last_error());
	if (be->ops->abort)
		be->ops->abort(be);
	be->ops->close(be);
	return bm_error(-err, "%s", msg); /* close may have said more */
}

bool bm_backend_same(const struct bm_backend *a, const struct bm_backend *b)
{
	if (a->st_rdev && a->st_rdev == b->st_rdev)
		return true;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       (a->st_ino != 0 || strcmp(a->path, b->path) == 0);
}

