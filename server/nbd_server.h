/*
 * The NBD server: serves one mirror as one export over a Unix socket and/or
 * TCP.  Fixed newstyle negotiation; simple replies, sent as requests
 * complete (out of order); many connections (multi-conn is safe because a
 * FLUSH reaches every component).
 */
#ifndef BM_NBD_SERVER_H
#define BM_NBD_SERVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blkmirror.h"

struct bm_nbd_export {
	const char *name;   /* also served as the default export "" */
	uint64_t size;
	uint16_t tflags;    /* transmission flags */
	uint32_t min_block; /* requests must be aligned to it (power of two;
	                       0: 1) */
};

/*
 * Runs the negotiation phase on a connection (read from in_fd, write to
 * out_fd).  Returns 1 when the client chose the export and transmission
 * starts (*no_zeroes unused after), 0 when the client ended cleanly, and
 * -errno on a broken or hostile client (the caller closes).
 */
int bm_nbd_negotiate(int in_fd, int out_fd, const struct bm_nbd_export *exp);
/* The same, all of it within timeout_ms (> 0; -ETIMEDOUT when the client
 * is too slow, however it trickles its bytes).  For sockets and pipes. */
int bm_nbd_negotiate_timed(int in_fd, int out_fd,
                           const struct bm_nbd_export *exp, int timeout_ms);

struct bm_nbd_server;

/* Binds and listens (before the mirror is assembled, so that a wrong
 * address changes nothing); unix_path and/or tcp ("HOST:PORT"). */
int bm_nbd_server_listen(const char *unix_path, const char *tcp,
                         struct bm_nbd_server **out);
/*
 * What one client, and all of them, may hold of the server.  Request data
 * in flight (read buffers until their reply is sent, write payloads until
 * the write completes, plus a small charge for every request) is capped per
 * connection and per server: a request over the cap waits, before its
 * buffer is allocated or its payload read, until earlier ones finish (a
 * single request larger than a cap still runs alone).  Connections beyond
 * max_conns are closed at once, with a log line.  A client has
 * negotiate_ms to finish negotiating; a connection whose replies cannot
 * be sent (the client stops reading) for reply_timeout_ms is closed.
 */
struct bm_nbd_limits {
	uint64_t conn_bytes;    /* default 64 MiB */
	uint64_t server_bytes;  /* default 256 MiB */
	int max_conns;          /* default 128 */
	int negotiate_ms;       /* default 10000; env BLKMIRROR_NEGOTIATE_TIMEOUT_MS */
	int reply_timeout_ms;   /* default 30000; env BLKMIRROR_REPLY_TIMEOUT_MS */
};
/* Fills in the defaults (with the environment overrides above). */
void bm_nbd_limits_default(struct bm_nbd_limits *l);
/* Sets the limits of s, before bm_nbd_server_run(); -EINVAL (with a
 * message) when one is zero or negative. */
int bm_nbd_server_set_limits(struct bm_nbd_server *s,
                             const struct bm_nbd_limits *l);

/* Starts accepting clients for mirror m as export_name. */
int bm_nbd_server_run(struct bm_nbd_server *s, bm_mirror *m,
                      const char *export_name);
/* The clients connected now: returns their number and writes who they are
 * ("pid 12 (nbdfuse) on the unix socket, tcp 10.0.0.2:51234") to buf. */
int bm_nbd_server_clients(struct bm_nbd_server *s, char *buf, size_t len);
/* Stops accepting, ends every connection after its in-flight requests
 * (and their replies, or reply_timeout_ms of a client not reading them). */
void bm_nbd_server_stop(struct bm_nbd_server *s);

/* Read and write exactly len bytes (EINTR-safe).  0, or -errno / -EPIPE
 * at end of stream. */
int bm_read_full(int fd, void *buf, size_t len);
int bm_write_full(int fd, const void *buf, size_t len);

#endif
