/*
 * The service manager's notification protocol (sd_notify(3)), written out
 * so that blkmirror needs no libsystemd.  A service started with
 * Type=notify finds the manager's socket in $NOTIFY_SOCKET: an AF_UNIX
 * datagram socket named by a path, or, when the name starts with '@', in
 * the abstract namespace (the '@' stands for the leading NUL byte, and the
 * address length, not a terminating NUL, ends the name).  A message is one
 * datagram of newline-separated KEY=VALUE assignments; the manager learns
 * the sender's pid from the kernel (SCM_CREDENTIALS on its side).
 *
 * serve sends READY=1 once the mirror is assembled and both its NBD socket
 * and its control socket accept connections, STATUS=... as it goes, and
 * STOPPING=1 when a stop begins.  Sending never blocks (MSG_DONTWAIT): a
 * manager that does not read cannot hold the server up.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sd_notify.h"

/* The manager's address from $NOTIFY_SOCKET: 1 with sa and len set, 0 when
 * there is none, -errno when it names something unusable. */
static int manager_address(struct sockaddr_un *sa, socklen_t *len)
{
	const char *e = getenv("NOTIFY_SOCKET");
	size_t n;

	if (!e || !*e)
		return 0;
	n = strlen(e);
	if ((e[0] != '/' && e[0] != '@') || n >= sizeof(sa->sun_path))
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, e, n);
	if (e[0] == '@') {
		sa->sun_path[0] = '\0';
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	return 1;
}

int service_notify(const char *fmt, ...)
{
	struct sockaddr_un sa;
	socklen_t salen;
	char msg[2048];
	va_list ap;
	int fd, r, n;

	r = manager_address(&sa, &salen);
	if (r <= 0)
		return r;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;    /* a long STATUS= is cut, not lost */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = sendto(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT,
	           (const struct sockaddr *)&sa, salen) < 0 ? -errno : 0;
	close(fd);
	return r;
}
