/*
 * Listening Unix sockets that never destroy what they find.  A path is
 * taken only when nothing is there or a stale socket is (one whose connect()
 * is refused: its server is gone); a regular file, a directory, a device or
 * the live socket of another server is refused with a message naming it.
 * At stop only the socket we bound (same device and inode) is removed.
 */
#ifndef BM_UNIX_SOCKET_H
#define BM_UNIX_SOCKET_H
#include <sys/types.h>

struct bm_sock_id {
	dev_t dev;
	ino_t ino;
	int valid;
};

/* Binds and listens on path.  Returns the listening fd (close-on-exec), or
 * -errno with the message in bm_last_error(), e.g. "/x is a regular file;
 * refusing to replace it". */
int bm_unix_socket_listen(const char *path, int backlog, struct bm_sock_id *id);

/* Removes path only if it is still the socket described by id. */
void bm_unix_socket_remove(const char *path, const struct bm_sock_id *id);

#endif
