/* Telling the service manager (systemd) what the server does: sd_notify.c. */
#ifndef BM_SD_NOTIFY_H
#define BM_SD_NOTIFY_H

/* Sends one message ("READY=1", "STATUS=...", "STOPPING=1", several
 * separated by newlines) to $NOTIFY_SOCKET.  0 when sent or when there is
 * no service manager to tell; -errno when sending failed (nothing else
 * happens: the server does not depend on it). */
int service_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
