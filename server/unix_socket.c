/*
 * See unix_socket.h.  bind() is tried first: it fails with EADDRINUSE when
 * anything at all is at the path, and only then is the path looked at.  A
 * socket whose connect() is refused has no listener and is replaced; any
 * other thing is left alone and named in the error.  The window between
 * the check and the second bind() is small; two servers racing for one
 * stale path cannot both end up bound (the loser's bind fails).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "error.h"
#include "unix_socket.h"

static const char *kind_of(mode_t mode)
{
	if (S_ISREG(mode)) return "a regular file";
	if (S_ISDIR(mode)) return "a directory";
	if (S_ISLNK(mode)) return "a symbolic link";
	if (S_ISBLK(mode)) return "a block device";
	if (S_ISCHR(mode)) return "a character device";
	if (S_ISFIFO(mode)) return "a FIFO";
	return "not a socket";
}

/* 0 when path held a stale socket that is now removed; -errno (message
 * set) when what is there must be kept. */
static int remove_if_stale(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, err;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0
		       : bm_error(errno, "cannot look at %s: %s", path,
		                  strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return bm_error(EEXIST, "%s is %s; refusing to replace it (give "
		                "a path where nothing exists)", path,
		                kind_of(st.st_mode));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return bm_error(errno, "socket: %s", strerror(errno));
	err = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 ? errno
	                                                                : 0;
	close(fd);
	if (err == 0)
		return bm_error(EADDRINUSE, "%s is the live socket of another "
		                "server; refusing to take it over", path);
	if (err != ECONNREFUSED)
		return bm_error(err, "%s is a socket that cannot be checked (%s); "
		                "leaving it alone", path, strerror(err));
	if (unlink(path) < 0 && errno != ENOENT)
		return bm_error(errno, "cannot remove the stale socket %s: %s",
		                path, strerror(errno));
	return 0;
}

int bm_unix_socket_listen(const char *path, int backlog, struct bm_sock_id *id)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, err;

	id->valid = 0;
	if (strlen(path) >= sizeof(sa.sun_path))
		return bm_error(ENAMETOOLONG, "socket path %s is too long (at most "
		                "%zu bytes)", path, sizeof(sa.sun_path) - 1);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return bm_error(errno, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		if (err != EADDRINUSE)
			goto fail;
		err = remove_if_stale(path, &sa);
		if (err < 0) {
			close(fd);
			return err;
		}
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			err = errno;
			goto fail;
		}
	}
	if (listen(fd, backlog) < 0) {
		err = errno;
		unlink(path);
		goto fail;
	}
	if (stat(path, &st) == 0) {
		id->dev = st.st_dev;
		id->ino = st.st_ino;
		id->valid = 1;
	}
	return fd;
fail:
	close(fd);
	return bm_error(err, "cannot listen on %s: %s", path, strerror(err));
}

void bm_unix_socket_remove(const char *path, const struct bm_sock_id *id)
{
	struct stat st;

	if (!id->valid || lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) ||
	    st.st_dev != id->dev || st.st_ino != id->ino)
		return;
	unlink(path);
}
