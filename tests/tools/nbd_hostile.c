/*
 * nbd_hostile SOCKET EXPORT: a deliberately broken NBD client.  Each case
 * opens a fresh connection to the server at SOCKET, misbehaves in one way,
 * and checks that the server answers as the protocol says (an error reply,
 * or a closed connection) and, where the connection survives, still serves
 * a valid request after it.  Exits 0 if every case held.
 *
 * Single scenarios, for tests that watch the server meanwhile:
 *   nbd_hostile SOCKET EXPORT flood COUNT LENGTH [CLOSED_WITHIN_MS]
 *       pipelines COUNT reads of LENGTH bytes and never reads a reply;
 *       prints "replies pending" once the server has started answering,
 *       then waits to be killed, or with CLOSED_WITHIN_MS checks that the
 *       server closes the connection within that time.
 *   nbd_hostile SOCKET EXPORT conns N
 *       opens N connections (negotiated), checks that one more is closed
 *       at once, that the N still serve, and that closing one makes room.
 *   nbd_hostile SOCKET EXPORT silent MIN_MS MAX_MS [trickle]
 *       connects and says nothing (or trickles a byte every 100 ms); the
 *       server must close the connection after MIN_MS and before MAX_MS.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nbd_proto.h"

static const char *sock_path, *export_name;
static int failures;

#define EXPECT(cond, ...)                                                  \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
			failures++;                                        \
			return;                                            \
		}                                                          \
	} while (0)

static int dial(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct timeval tv = {10, 0};

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(2);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int rd(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static void wr(int fd, const void *buf, size_t len)
{
	if (send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len) {
		/* the server may already have hung up: that is allowed */
	}
}

/* True when the server closed the connection (EOF, not a timeout). */
static int closed(int fd)
{
	char c;
	ssize_t n = read(fd, &c, 1);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static void w32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static void w64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }
static void w16(uint8_t *p, uint16_t v) { v = htobe16(v); memcpy(p, &v, 2); }

static int greet(int fd)
{
	uint8_t hello[18], flags[4];
	if (rd(fd, hello, 18) < 0)
		return -1;
	w32(flags, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	wr(fd, flags, 4);
	return 0;
}

static void send_opt(int fd, uint64_t magic, uint32_t opt, const void *data,
                     uint32_t len, uint32_t claimed_len)
{
	uint8_t h[16];
	w64(h, magic);
	w32(h + 8, opt);
	w32(h + 12, claimed_len);
	wr(fd, h, 16);
	if (len)
		wr(fd, data, len);
}

/* Reads option replies until a non-INFO one; returns its type. */
static int64_t opt_reply(int fd)
{
	for (;;) {
		uint8_t h[20];
		if (rd(fd, h, 20) < 0)
			return -1;
		uint32_t type, len;
		memcpy(&type, h + 12, 4);
		memcpy(&len, h + 16, 4);
		type = be32toh(type);
		len = be32toh(len);
		char *skip = malloc(len + 1);
		if (len && rd(fd, skip, len) < 0) {
			free(skip);
			return -1;
		}
		free(skip);
		if (type != NBD_REP_INFO && type != NBD_REP_SERVER)
			return type;
	}
}

static void go_data(uint8_t *d, uint32_t *len, const char *name)
{
	uint32_t n = (uint32_t)strlen(name);
	w32(d, n);
	memcpy(d + 4, name, n);
	w16(d + 4 + n, 0);
	*len = 6 + n;
}

/* A connection in transmission phase. */
static int connect_go(void)
{
	int fd = dial();
	uint8_t d[64];
	uint32_t len;

	if (greet(fd) < 0)
		return -1;
	go_data(d, &len, export_name);
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_GO, d, len, len);
	if (opt_reply(fd) != NBD_REP_ACK)
		return -1;
	return fd;
}

static void request(int fd, uint16_t flags, uint16_t type, uint64_t cookie,
                    uint64_t off, uint32_t len, uint32_t magic)
{
	uint8_t h[28];
	w32(h, magic);
	w16(h + 4, flags);
	w16(h + 6, type);
	w64(h + 8, cookie);
	w64(h + 16, off);
	w32(h + 24, len);
	wr(fd, h, 28);
}

/* Reads a simple reply; returns its error, -1 on EOF; checks the cookie. */
static int64_t simple_reply(int fd, uint64_t cookie, uint32_t data_len)
{
	uint8_t h[16];
	if (rd(fd, h, 16) < 0)
		return -1;
	uint32_t magic, err;
	uint64_t ck;
	memcpy(&magic, h, 4);
	memcpy(&err, h + 4, 4);
	memcpy(&ck, h + 8, 8);
	if (be32toh(magic) != NBD_SIMPLE_REPLY_MAGIC || be64toh(ck) != cookie)
		return -2;
	err = be32toh(err);
	if (err == 0 && data_len) {
		char *b = malloc(data_len);
		int r = rd(fd, b, data_len);
		free(b);
		if (r < 0)
			return -1;
	}
	return err;
}

/* The connection still works: a valid 4 KiB read succeeds. */
static int still_serves(int fd)
{
	request(fd, 0, NBD_CMD_READ, 777, 0, 4096, NBD_REQUEST_MAGIC);
	return simple_reply(fd, 777, 4096) == 0;
}

static void case_connect_close(void) { close(dial()); }

static void case_bad_client_flags(void)
{
	int fd = dial();
	uint8_t hello[18], flags[4];
	EXPECT(rd(fd, hello, 18) == 0, "no greeting");
	EXPECT(be64toh(*(uint64_t *)hello) == NBD_MAGIC, "bad greeting magic");
	w32(flags, 0xffffffffu);
	wr(fd, flags, 4);
	EXPECT(closed(fd), "unknown client flags not refused");
	close(fd);
}

static void case_bad_option_magic(void)
{
	int fd = dial();
	EXPECT(greet(fd) == 0, "greeting");
	send_opt(fd, 0x1234, NBD_OPT_LIST, NULL, 0, 0);
	EXPECT(closed(fd), "bad option magic not refused");
	close(fd);
}

static void case_huge_option(void)
{
	int fd = dial();
	EXPECT(greet(fd) == 0, "greeting");
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_GO, NULL, 0, 0xffffffffu);
	EXPECT(closed(fd), "4 GiB option not refused");
	close(fd);
}

static void case_unknown_options(void)
{
	int fd = dial();
	uint8_t d[64];
	uint32_t len;

	EXPECT(greet(fd) == 0, "greeting");
	send_opt(fd, NBD_IHAVEOPT, 99, "abc", 3, 3);
	EXPECT(opt_reply(fd) == NBD_REP_ERR_UNSUP, "unknown option");
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_STARTTLS, NULL, 0, 0);
	EXPECT(opt_reply(fd) == NBD_REP_ERR_UNSUP, "starttls");
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_LIST, "x", 1, 1);
	EXPECT(opt_reply(fd) == NBD_REP_ERR_INVALID, "list with data");
	go_data(d, &len, export_name);
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_GO, d, len - 1, len - 1);
	EXPECT(opt_reply(fd) == NBD_REP_ERR_INVALID, "short go");
	go_data(d, &len, "no-such-export");
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_INFO, d, len, len);
	EXPECT(opt_reply(fd) == NBD_REP_ERR_UNKNOWN, "unknown export");
	go_data(d, &len, export_name);
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_INFO, d, len, len);
	EXPECT(opt_reply(fd) == NBD_REP_ACK, "info after errors");
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_ABORT, NULL, 0, 0);
	EXPECT(opt_reply(fd) == NBD_REP_ACK, "abort");
	EXPECT(closed(fd), "not closed after abort");
	close(fd);
}

static void case_export_name_unknown(void)
{
	int fd = dial();
	EXPECT(greet(fd) == 0, "greeting");
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_EXPORT_NAME, "nope", 4, 4);
	EXPECT(closed(fd), "unknown EXPORT_NAME not closed");
	close(fd);
}

static void case_truncated_option(void)
{
	int fd = dial();
	EXPECT(greet(fd) == 0, "greeting");
	send_opt(fd, NBD_IHAVEOPT, NBD_OPT_GO, "ab", 2, 100);
	shutdown(fd, SHUT_WR);
	EXPECT(closed(fd), "truncated option");
	close(fd);
}

static void case_bad_request_magic(void)
{
	int fd = connect_go();
	EXPECT(fd >= 0, "go");
	request(fd, 0, NBD_CMD_READ, 1, 0, 512, 0xdeadbeef);
	EXPECT(closed(fd), "bad request magic not closed");
	close(fd);
}

static void case_errors_keep_connection(void)
{
	int fd = connect_go();
	EXPECT(fd >= 0, "go");
	request(fd, 0, NBD_CMD_READ, 1, UINT64_MAX - 100, 512, NBD_REQUEST_MAGIC);
	EXPECT(simple_reply(fd, 1, 0) == NBD_EINVAL, "read past end");
	request(fd, 0, NBD_CMD_READ, 2, 0, 0x7fffffff, NBD_REQUEST_MAGIC);
	EXPECT(simple_reply(fd, 2, 0) == NBD_EINVAL, "huge read");
	request(fd, 0, 99, 3, 0, 0, NBD_REQUEST_MAGIC);
	EXPECT(simple_reply(fd, 3, 0) == NBD_EINVAL, "unknown command");
	request(fd, 0x4000, NBD_CMD_READ, 4, 0, 512, NBD_REQUEST_MAGIC);
	EXPECT(simple_reply(fd, 4, 0) == NBD_EINVAL, "unknown flag");
	/* An out-of-range write's payload is consumed, then refused. */
	char payload[1024];
	memset(payload, 0xee, sizeof(payload));
	request(fd, 0, NBD_CMD_WRITE, 5, UINT64_MAX - 512, sizeof(payload),
	        NBD_REQUEST_MAGIC);
	wr(fd, payload, sizeof(payload));
	EXPECT(simple_reply(fd, 5, 0) == NBD_ENOSPC, "write past end");
	request(fd, 0, NBD_CMD_TRIM, 6, UINT64_MAX - 512, 4096,
	        NBD_REQUEST_MAGIC);
	EXPECT(simple_reply(fd, 6, 0) == NBD_EINVAL, "trim past end");
	EXPECT(still_serves(fd), "connection lost after errors");
	close(fd);
}

/* FUA is advertised, so every command takes it (the spec: "the server
 * MUST accept all commands with this bit set"); a DISC with it still
 * ends the connection, with no reply. */
static void case_fua_everywhere(void)
{
	int fd = connect_go();
	EXPECT(fd >= 0, "go");
	request(fd, NBD_CMD_FLAG_FUA, NBD_CMD_READ, 1, 0, 4096, NBD_REQUEST_MAGIC);
	EXPECT(simple_reply(fd, 1, 4096) == 0, "read with FUA");
	request(fd, NBD_CMD_FLAG_FUA, NBD_CMD_FLUSH, 2, 0, 0, NBD_REQUEST_MAGIC);
	EXPECT(simple_reply(fd, 2, 0) == 0, "flush with FUA");
	request(fd, NBD_CMD_FLAG_FUA, NBD_CMD_TRIM, 3, 0, 0, NBD_REQUEST_MAGIC);
	EXPECT(simple_reply(fd, 3, 0) == 0, "empty trim with FUA");
	request(fd, NBD_CMD_FLAG_FUA, NBD_CMD_DISC, 4, 0, 0, NBD_REQUEST_MAGIC);
	EXPECT(closed(fd), "DISC with FUA answered or not closed");
	close(fd);
}

static void case_huge_write(void)
{
	int fd = connect_go();
	EXPECT(fd >= 0, "go");
	request(fd, 0, NBD_CMD_WRITE, 1, 0, 0x80000000u, NBD_REQUEST_MAGIC);
	EXPECT(closed(fd), "2 GiB write not refused");
	close(fd);
}

static void case_disconnect_mid_request(void)
{
	int fd = connect_go();
	EXPECT(fd >= 0, "go");
	request(fd, 0, NBD_CMD_WRITE, 1, 0, 65536, NBD_REQUEST_MAGIC);
	wr(fd, "only a little", 13);
	close(fd);
	fd = connect_go();
	EXPECT(fd >= 0, "go");
	wr(fd, "\x25\x60\x95", 3); /* a third of a header */
	close(fd);
	/* Many reads, then hang up without reading the replies. */
	fd = connect_go();
	EXPECT(fd >= 0, "go");
	for (int i = 0; i < 64; i++)
		request(fd, 0, NBD_CMD_READ, (uint64_t)i, 0, 1 << 20,
		        NBD_REQUEST_MAGIC);
	close(fd);
}

static void case_pipelined(void)
{
	int fd = connect_go();
	int seen[32] = {0};
	EXPECT(fd >= 0, "go");
	for (int i = 0; i < 32; i++)
		request(fd, 0, NBD_CMD_READ, (uint64_t)i, (uint64_t)i * 4096, 4096,
		        NBD_REQUEST_MAGIC);
	for (int i = 0; i < 32; i++) {
		uint8_t h[16], b[4096];
		EXPECT(rd(fd, h, 16) == 0, "reply %d", i);
		uint64_t ck;
		memcpy(&ck, h + 8, 8);
		ck = be64toh(ck);
		EXPECT(ck < 32 && !seen[ck], "bad or repeated cookie %llu",
		       (unsigned long long)ck);
		seen[ck] = 1;
		EXPECT(rd(fd, b, 4096) == 0, "data %d", i);
	}
	request(fd, 0, NBD_CMD_DISC, 99, 0, 0, NBD_REQUEST_MAGIC);
	EXPECT(closed(fd), "not closed after DISC");
	close(fd);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

static int run_flood(int count, uint32_t length, long closed_within_ms)
{
	int fd = connect_go();
	struct timespec t0;

	if (fd < 0) {
		fprintf(stderr, "flood: cannot negotiate\n");
		return 1;
	}
	for (int i = 0; i < count; i++)
		request(fd, 0, NBD_CMD_READ, (uint64_t)i, 0, length,
		        NBD_REQUEST_MAGIC);
	/* Wait (without reading) until the first reply bytes arrive. */
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	if (poll(&pfd, 1, 60000) != 1) {
		fprintf(stderr, "flood: no reply within 60 s\n");
		return 1;
	}
	printf("replies pending\n");
	fflush(stdout);
	if (closed_within_ms <= 0) {
		for (;;)
			pause();
	}
	/* The server must give up on us: it shuts the connection down. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pfd = (struct pollfd){.fd = fd, .events = POLLRDHUP};
		poll(&pfd, 1, 100);
		if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			printf("closed by the server after %ld ms\n", ms_since(&t0));
			return 0;
		}
		if (ms_since(&t0) > closed_within_ms) {
			fprintf(stderr, "flood: still open after %ld ms\n",
			        closed_within_ms);
			return 1;
		}
	}
}

static int run_conns(int n)
{
	int *fds = calloc((size_t)n, sizeof(int));
	uint8_t hello[18];

	for (int i = 0; i < n; i++) {
		fds[i] = connect_go();
		if (fds[i] < 0) {
			fprintf(stderr, "conns: connection %d refused\n", i + 1);
			return 1;
		}
	}
	int extra = dial();
	if (rd(extra, hello, sizeof(hello)) == 0 || !closed(extra)) {
		fprintf(stderr, "conns: connection %d was not closed at once\n",
		        n + 1);
		return 1;
	}
	close(extra);
	for (int i = 0; i < n; i++)
		if (!still_serves(fds[i])) {
			fprintf(stderr, "conns: connection %d stopped serving\n",
			        i + 1);
			return 1;
		}
	/* One leaves: a newcomer gets its place (once the server has let
	 * the old one go). */
	close(fds[0]);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int fd = connect_go();
		if (fd >= 0 && still_serves(fd)) {
			close(fd);
			break;
		}
		if (fd >= 0)
			close(fd);
		if (ms_since(&t0) > 10000) {
			fprintf(stderr, "conns: no room after one connection left\n");
			return 1;
		}
		usleep(20000);
	}
	for (int i = 1; i < n; i++)
		close(fds[i]);
	free(fds);
	printf("%d connections served, connection %d refused\n", n, n + 1);
	return 0;
}

static int run_silent(long min_ms, long max_ms, int trickle)
{
	int fd = dial();
	uint8_t hello[18];
	struct timespec t0;
	struct timeval tv = {0, 100000};

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rd(fd, hello, sizeof(hello)) < 0) {
		fprintf(stderr, "silent: no greeting\n");
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* With trickle: valid client flags and an option header, one byte
	 * each 100 ms, never complete before the deadline. */
	uint8_t bytes[20];
	w32(bytes, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	w64(bytes + 4, NBD_IHAVEOPT);
	w32(bytes + 12, NBD_OPT_LIST);
	w32(bytes + 16, 0);
	size_t sent = 0;
	for (;;) {
		char c;
		ssize_t n = read(fd, &c, 1);
		long ms = ms_since(&t0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			if (ms < min_ms) {
				fprintf(stderr, "silent: closed after %ld ms, before "
				        "%ld\n", ms, min_ms);
				return 1;
			}
			printf("closed by the server after %ld ms\n", ms);
			return 0;
		}
		if (n > 0) {
			fprintf(stderr, "silent: unexpected byte from the server\n");
			return 1;
		}
		if (ms > max_ms) {
			fprintf(stderr, "silent: still open after %ld ms\n", ms);
			return 1;
		}
		if (trickle && sent < sizeof(bytes) - 1)
			wr(fd, bytes + sent++, 1);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: nbd_hostile SOCKET EXPORT [flood COUNT "
		        "LENGTH [CLOSED_WITHIN_MS] | conns N | silent MIN_MS "
		        "MAX_MS [trickle]]\n");
		return 2;
	}
	sock_path = argv[1];
	export_name = argv[2];
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 6 && strcmp(argv[3], "flood") == 0)
		return run_flood(atoi(argv[4]), (uint32_t)strtoul(argv[5], NULL, 0),
		                 argc > 6 ? atol(argv[6]) : 0);
	if (argc == 5 && strcmp(argv[3], "conns") == 0)
		return run_conns(atoi(argv[4]));
	if (argc >= 6 && strcmp(argv[3], "silent") == 0)
		return run_silent(atol(argv[4]), atol(argv[5]),
		                  argc > 6 && strcmp(argv[6], "trickle") == 0);
	if (argc != 3) {
		fprintf(stderr, "nbd_hostile: unknown scenario '%s'\n", argv[3]);
		return 2;
	}
	case_connect_close();
	case_bad_client_flags();
	case_bad_option_magic();
	case_huge_option();
	case_unknown_options();
	case_export_name_unknown();
	case_truncated_option();
	case_bad_request_magic();
	case_errors_keep_connection();
	case_fua_everywhere();
	case_huge_write();
	case_disconnect_mid_request();
	case_pipelined();
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
