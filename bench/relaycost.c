/*
 * relaycost: what it costs a relay to move a stream's bytes from a
 * component's socket to a client's socket, by copy or by splice.
 *
 * Why.  A QD4 stream of 128 KiB reads from two fast NBD components spends
 * most of the server's CPU on the two copies every byte takes (component
 * socket -> chunk memory -> client socket) and on wake-ups (HACKING,
 * "Per-request cost").  Splicing the component's reply payload into a pipe
 * (the chunk is then the kernel's socket pages, held by reference) and
 * from that pipe into the client's socket copies nothing in the relay.
 * This measures both ways on this kernel, outside the server, so that the
 * design can be judged before it is built.
 *
 * What.  Three threads in one process: a "component" sends 4 MiB replies
 * (a pattern of prime period, so a lost, doubled or misordered byte shows)
 * into a socket; the relay reads them as 1 MiB chunks, holds up to
 * --window of them, and sends each as 128 KiB client replies (a 16-byte
 * header: magic, stream offset, length, then the payload); a "client"
 * reads every reply and checks its header and every payload byte.
 *   copy:   recv into a 32 MiB ring of chunk memory (cold in the cache, as
 *           the read-ahead's window is), sendmsg of header and payload.
 *   splice: splice into one pipe per held chunk (non-blocking; 1 MiB pipes,
 *           fs.pipe-max-size), send of the header with MSG_MORE, splice of
 *           the payload.  A pipe holds a number of page slots, not bytes: a
 *           sender's small socket buffers can fill it before the chunk is
 *           in.  Then the chunk is drained into memory and goes by copy
 *           ("fallbacks" counts them); a blocking splice would wait there
 *           for ever.
 * The relay thread's CPU (RUSAGE_THREAD) per GiB is the figure; the whole
 * process's is beside it (the component's and the client's copies are the
 * same in both modes).  Exit 1 when the client saw a wrong byte.
 *
 *   build/relaycost [--mode copy|splice|both] [--transport unix|tcp]
 *                   [--window N] [--size MIB] [--repeat N]
 *
 * --corrupt (to see the check fail): copy flips one payload byte of the
 * second chunk, splice sends a wrong offset in its first reply header.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define REPLY_BYTES (4u << 20)     /* what the component sends at once */
#define CHUNK_BYTES (1u << 20)     /* what the relay holds per pipe */
#define CLIENT_BYTES (128u << 10)  /* one client read */
#define RING_BYTES (32u << 20)     /* the copy mode's chunk memory */
#define PATTERN_PERIOD 4093u       /* prime: a shifted chunk shows */
#define PIPE_BYTES (1u << 20)
#define WINDOW_MAX 64
#define HEADER_MAGIC 0x52454c41u   /* "RELA" */

struct header {
	uint32_t magic;
	uint32_t len;
	uint64_t offset;
};

struct run {
	int comp[2];  /* [0] the component's end, [1] the relay's */
	int cli[2];   /* [0] the relay's end, [1] the client's */
	uint64_t total;
	const uint8_t *pattern;  /* PATTERN_PERIOD + REPLY_BYTES bytes */
	int corrupt;
	int bad;      /* set by the client thread */
	char why[160];
};

static void die(const char *what)
{
	fprintf(stderr, "relaycost: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double cpu_of(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void send_all(int fd, const void *buf, size_t len, int flags)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, flags);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("send");
		p += n;
		len -= (size_t)n;
	}
}

static void recv_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("recv");
		p += n;
		len -= (size_t)n;
	}
}

static void *component_thread(void *arg)
{
	struct run *r = arg;
	for (uint64_t off = 0; off < r->total; off += REPLY_BYTES)
		send_all(r->comp[0], r->pattern + off % PATTERN_PERIOD, REPLY_BYTES, 0);
	return NULL;
}

static void *client_thread(void *arg)
{
	struct run *r = arg;
	uint8_t *buf = malloc(CLIENT_BYTES);
	if (!buf)
		die("malloc");
	const uint64_t all = r->total + r->total / CLIENT_BYTES * sizeof(struct header);
	uint64_t consumed = 0;
	for (uint64_t want = 0; want < r->total; want += CLIENT_BYTES) {
		struct header h;
		recv_all(r->cli[1], &h, sizeof(h));
		consumed += sizeof(h);
		if (h.magic != HEADER_MAGIC || h.offset != want || h.len != CLIENT_BYTES) {
			snprintf(r->why, sizeof(r->why), "reply header for offset %llu says offset %llu length %u",
				 (unsigned long long)want, (unsigned long long)h.offset, h.len);
			r->bad = 1;
			break;
		}
		recv_all(r->cli[1], buf, CLIENT_BYTES);
		consumed += CLIENT_BYTES;
		const uint8_t *ref = r->pattern + want % PATTERN_PERIOD;
		if (memcmp(buf, ref, CLIENT_BYTES) != 0) {
			size_t i = 0;
			while (buf[i] == ref[i])
				i++;
			snprintf(r->why, sizeof(r->why), "wrong byte at stream offset %llu",
				 (unsigned long long)(want + i));
			r->bad = 1;
			break;
		}
	}
	/* after a wrong reply, read the rest unchecked so that the relay is
	 * not left blocked in a send */
	while (consumed < all) {
		ssize_t n = recv(r->cli[1], buf, CLIENT_BYTES, 0);
		if (n <= 0)
			break;
		consumed += (uint64_t)n;
	}
	free(buf);
	return NULL;
}

static void send_reply(struct run *r, uint64_t off, const uint8_t *data)
{
	struct header h = {HEADER_MAGIC, CLIENT_BYTES, off};
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)data, CLIENT_BYTES}};
	size_t left = sizeof(h) + CLIENT_BYTES;
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	while (left) {
		ssize_t n = sendmsg(r->cli[0], &mh, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("sendmsg");
		left -= (size_t)n;
		for (size_t k = (size_t)n; k;) {  /* step the iovecs past what went */
			size_t step = k < mh.msg_iov->iov_len ? k : mh.msg_iov->iov_len;
			mh.msg_iov->iov_base = (uint8_t *)mh.msg_iov->iov_base + step;
			mh.msg_iov->iov_len -= step;
			k -= step;
			if (!mh.msg_iov->iov_len && mh.msg_iovlen > 1) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
}

static void relay_copy(struct run *r, uint8_t *ring)
{
	uint64_t at = 0;
	for (uint64_t off = 0; off < r->total; off += CHUNK_BYTES) {
		uint8_t *chunk = ring + at;
		recv_all(r->comp[1], chunk, CHUNK_BYTES);
		if (r->corrupt && off == CHUNK_BYTES)
			chunk[12345] ^= 1;
		for (uint32_t o = 0; o < CHUNK_BYTES; o += CLIENT_BYTES)
			send_reply(r, off + o, chunk + o);
		at = (at + CHUNK_BYTES) % RING_BYTES;
	}
}

static void wait_readable(int fd)
{
	struct pollfd pfd = {fd, POLLIN, 0};
	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			die("poll");
}

/* Fill pipe p with the next chunk: 1.  0 when the pipe filled first (its
 * slots hold less than the chunk): what it took is drained into buf and
 * the rest of the chunk received there. */
static int chunk_into_pipe(struct run *r, int p[2], uint8_t *buf)
{
	size_t in = 0;
	while (in < CHUNK_BYTES) {
		wait_readable(r->comp[1]);
		ssize_t n = splice(r->comp[1], NULL, p[1], NULL, CHUNK_BYTES - in,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			in += (size_t)n;
			continue;
		}
		if (n == 0)
			die("splice from the component: end of stream");
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			die("splice from the component");
		/* the socket had bytes, so the pipe is what is full */
		size_t got = 0;
		while (got < in) {
			ssize_t m = read(p[0], buf + got, in - got);
			if (m <= 0)
				die("read from the pipe");
			got += (size_t)m;
		}
		recv_all(r->comp[1], buf + in, CHUNK_BYTES - in);
		return 0;
	}
	return 1;
}

static void chunk_out_of_pipe(struct run *r, int p[2], uint64_t off)
{
	for (uint32_t o = 0; o < CHUNK_BYTES; o += CLIENT_BYTES) {
		struct header h = {HEADER_MAGIC, CLIENT_BYTES, off + o};
		if (r->corrupt && off == CHUNK_BYTES && o == 0)
			h.offset++;  /* the payload never passes through user space here */
		send_all(r->cli[0], &h, sizeof(h), MSG_MORE);
		size_t left = CLIENT_BYTES;
		while (left) {
			ssize_t n = splice(p[0], NULL, r->cli[0], NULL, left, SPLICE_F_MOVE);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				die("splice to the client");
			left -= (size_t)n;
		}
	}
}

/* Returns how many chunks went by copy because their pipe filled first. */
static unsigned relay_splice(struct run *r, int window)
{
	int pipes[WINDOW_MAX][2];
	int in_pipe[WINDOW_MAX];
	uint8_t *spill[WINDOW_MAX];
	unsigned fallbacks = 0;
	for (int i = 0; i < window; i++) {
		if (pipe2(pipes[i], O_CLOEXEC) < 0)
			die("pipe2");
		if (fcntl(pipes[i][0], F_SETPIPE_SZ, PIPE_BYTES) < 0)
			die("F_SETPIPE_SZ (fs.pipe-max-size below 1 MiB?)");
		if (fcntl(pipes[i][1], F_SETFL, O_NONBLOCK) < 0)
			die("fcntl O_NONBLOCK");
		spill[i] = malloc(CHUNK_BYTES);
		if (!spill[i])
			die("malloc");
	}
	uint64_t chunks = r->total / CHUNK_BYTES;
	/* chunk k is read into slot k % window; the chunk window - 1 behind
	 * it is sent once the window is full (and the last ones at the end) */
	for (uint64_t k = 0; k < chunks + (uint64_t)window - 1; k++) {
		if (k < chunks) {
			int s = (int)(k % (uint64_t)window);
			in_pipe[s] = chunk_into_pipe(r, pipes[s], spill[s]);
			if (!in_pipe[s])
				fallbacks++;
		}
		if (k + 1 < (uint64_t)window)
			continue;
		uint64_t send_k = k + 1 - (uint64_t)window;
		int s = (int)(send_k % (uint64_t)window);
		uint64_t off = send_k * CHUNK_BYTES;
		if (in_pipe[s])
			chunk_out_of_pipe(r, pipes[s], off);
		else
			for (uint32_t o = 0; o < CHUNK_BYTES; o += CLIENT_BYTES)
				send_reply(r, off + o, spill[s] + o);
	}
	for (int i = 0; i < window; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
		free(spill[i]);
	}
	return fallbacks;
}

static void connect_pair(int tcp, int fds[2])
{
	if (!tcp) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
			die("socketpair");
		return;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&sa, &len) < 0)
		die("listen on 127.0.0.1");
	fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect to 127.0.0.1");
	fds[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (fds[1] < 0)
		die("accept");
	close(l);
}

static int run_once(int splice_mode, int tcp, int window, uint64_t total,
		    const uint8_t *pattern, int corrupt)
{
	struct run r = {.total = total, .pattern = pattern, .corrupt = corrupt};
	connect_pair(tcp, r.comp);
	connect_pair(0, r.cli);  /* clients of the bench reach the server by a Unix socket */
	int sndbuf = 1 << 20;    /* what the server sets towards its clients */
	setsockopt(r.cli[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	uint8_t *ring = NULL;
	if (!splice_mode) {
		ring = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ring == MAP_FAILED)
			die("mmap");
		memset(ring, 1, RING_BYTES);  /* resident, as a warm read-ahead's memory is; not timed */
	}
	pthread_t comp, client;
	double all0 = cpu_of(RUSAGE_SELF);
	if (pthread_create(&comp, NULL, component_thread, &r) || pthread_create(&client, NULL, client_thread, &r))
		die("pthread_create");
	double relay0 = cpu_of(RUSAGE_THREAD);
	unsigned fallbacks = 0;
	if (splice_mode)
		fallbacks = relay_splice(&r, window);
	else
		relay_copy(&r, ring);
	double relay = cpu_of(RUSAGE_THREAD) - relay0;
	pthread_join(client, NULL);
	if (ring)
		munmap(ring, RING_BYTES);
	if (r.bad) {
		pthread_join(comp, NULL);
		fprintf(stderr, "relaycost: %s, %s: the client read a wrong reply: %s\n",
			splice_mode ? "splice" : "copy", tcp ? "tcp" : "unix", r.why);
		return 1;
	}
	pthread_join(comp, NULL);
	double all = cpu_of(RUSAGE_SELF) - all0;
	double gib = (double)total / (1u << 30);
	printf("%-6s %-4s window %2d  relay %.3f s/GiB  all threads %.3f s/GiB  fallbacks %u\n",
	       splice_mode ? "splice" : "copy", tcp ? "tcp" : "unix", splice_mode ? window : 32,
	       relay / gib, all / gib, fallbacks);
	fflush(stdout);
	for (int i = 0; i < 2; i++) {
		close(r.comp[i]);
		close(r.cli[i]);
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: relaycost [--mode copy|splice|both] [--transport unix|tcp] [--window N (1-%d)]\n"
			"                 [--size MIB (a multiple of 4)] [--repeat N] [--corrupt]\n", WINDOW_MAX);
	exit(2);
}

static long number_arg(const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	int modes = 3, tcp = 0, window = 32, repeat = 1, corrupt = 0;
	long mib = 1024;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--corrupt")) {
			corrupt = 1;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--mode"))
			modes = !strcmp(v, "copy") ? 1 : !strcmp(v, "splice") ? 2 : !strcmp(v, "both") ? 3 : (usage(), 0);
		else if (!strcmp(a, "--transport"))
			tcp = !strcmp(v, "tcp") ? 1 : !strcmp(v, "unix") ? 0 : (usage(), 0);
		else if (!strcmp(a, "--window"))
			window = (int)number_arg(v, 1, WINDOW_MAX);
		else if (!strcmp(a, "--size"))
			mib = number_arg(v, 4, 1 << 20);
		else if (!strcmp(a, "--repeat"))
			repeat = (int)number_arg(v, 1, 100);
		else
			usage();
	}
	if (mib % 4)
		usage();
	uint8_t *pattern = malloc(PATTERN_PERIOD + REPLY_BYTES);
	if (!pattern)
		die("malloc");
	for (size_t i = 0; i < PATTERN_PERIOD + REPLY_BYTES; i++)
		pattern[i] = (uint8_t)((i % PATTERN_PERIOD) * 7 + (i % PATTERN_PERIOD) / 256);
	int bad = 0;
	for (int round = 0; round < repeat; round++)
		for (int m = 0; m < 2; m++)
			if (modes & (1 << m))
				bad |= run_once(m, tcp, window, (uint64_t)mib << 20, pattern, corrupt);
	free(pattern);
	return bad;
}
