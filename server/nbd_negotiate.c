/*
 * NBD negotiation (fixed newstyle only).  Every length from the client is
 * checked before it is used; an option whose data is too large to be worth
 * reading, a wrong magic, or unknown client flags end the connection, and
 * anything else unknown is answered NBD_REP_ERR_UNSUP, as the specification
 * asks.  The export is found by its name; the empty name is the default.
 *
 * With a deadline (bm_nbd_negotiate_timed), every read and write waits in
 * poll() for at most the time left, so a client that says nothing, trickles
 * a byte at a time, or never reads our replies is dropped when it runs out.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nbd_parse.h"
#include "nbd_proto.h"
#include "nbd_server.h"

int bm_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int bm_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The client's two descriptors and the negotiation deadline (0: none). */
struct chan {
	int in, out;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits until fd is ready for events, within the deadline. */
static int wait_ready(const struct chan *ch, int fd, short events)
{
	for (;;) {
		uint64_t now = mono_ns();
		if (now >= ch->deadline_ns)
			return -ETIMEDOUT;
		struct pollfd pfd = {.fd = fd, .events = events};
		int ms = (int)((ch->deadline_ns - now + 999999) / 1000000);
		int n = poll(&pfd, 1, ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n > 0)
			return 0;
	}
}

static int chan_read(const struct chan *ch, void *buf, size_t len)
{
	char *p = buf;

	if (!ch->deadline_ns)
		return bm_read_full(ch->in, buf, len);
	while (len) {
		int err = wait_ready(ch, ch->in, POLLIN);
		if (err < 0)
			return err;
		ssize_t n = read(ch->in, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int chan_write(const struct chan *ch, const void *buf, size_t len)
{
	const char *p = buf;

	if (!ch->deadline_ns)
		return bm_write_full(ch->out, buf, len);
	while (len) {
		int err = wait_ready(ch, ch->out, POLLOUT);
		if (err < 0)
			return err;
		ssize_t n = send(ch->out, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == ENOTSOCK)
			n = write(ch->out, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int reply(const struct chan *ch, uint32_t opt, uint32_t type, const void *data,
                 uint32_t len)
{
	uint8_t hdr[20];
	uint64_t magic = htobe64(NBD_REP_MAGIC);
	uint32_t v;
	int err;

	memcpy(hdr, &magic, 8);
	v = htobe32(opt);
	memcpy(hdr + 8, &v, 4);
	v = htobe32(type);
	memcpy(hdr + 12, &v, 4);
	v = htobe32(len);
	memcpy(hdr + 16, &v, 4);
	err = chan_write(ch, hdr, sizeof(hdr));
	if (err == 0 && len)
		err = chan_write(ch, data, len);
	return err;
}

static bool name_matches(const struct bm_nbd_export *exp, const char *name,
                         uint32_t len)
{
	return len == 0 || (len == strlen(exp->name) &&
	                    memcmp(name, exp->name, len) == 0);
}

static int send_info(const struct chan *ch, uint32_t opt, const struct bm_nbd_export *exp,
                     const struct nbd_info_request *ir)
{
	uint8_t b[12 + NBD_NAME_MAX_SENT];
	uint64_t size = htobe64(exp->size);
	uint16_t t;
	uint32_t v;
	int err;

	t = htobe16(NBD_INFO_EXPORT);
	memcpy(b, &t, 2);
	memcpy(b + 2, &size, 8);
	t = htobe16(exp->tflags);
	memcpy(b + 10, &t, 2);
	err = reply(ch, opt, NBD_REP_INFO, b, 12);
	if (err)
		return err;
	/* Block sizes: the components' alignment (any, unless an NBD
	 * component has a minimum); 4 KiB is fastest. */
	uint32_t min = exp->min_block > 1 ? exp->min_block : 1;
	t = htobe16(NBD_INFO_BLOCK_SIZE);
	memcpy(b, &t, 2);
	v = htobe32(min);
	memcpy(b + 2, &v, 4);
	v = htobe32(min > 4096 ? min : 4096);
	memcpy(b + 6, &v, 4);
	v = htobe32(BM_MAX_IO);
	memcpy(b + 10, &v, 4);
	err = reply(ch, opt, NBD_REP_INFO, b, 14);
	for (uint16_t i = 0; err == 0 && i < ir->ninfo; i++) {
		if (ir->info[i] == NBD_INFO_NAME) {
			size_t n = strlen(exp->name);
			if (n > NBD_NAME_MAX_SENT)
				n = NBD_NAME_MAX_SENT;
			t = htobe16(NBD_INFO_NAME);
			memcpy(b, &t, 2);
			memcpy(b + 2, exp->name, n);
			err = reply(ch, opt, NBD_REP_INFO, b, (uint32_t)(2 + n));
		}
	}
	return err;
}

static int negotiate(const struct chan *ch, const struct bm_nbd_export *exp)
{
	uint8_t hello[18], cflags_be[4], opthdr[16];
	uint64_t v64;
	uint16_t v16;
	uint32_t cflags;
	uint8_t *data = NULL;
	int err;

	v64 = htobe64(NBD_MAGIC);
	memcpy(hello, &v64, 8);
	v64 = htobe64(NBD_IHAVEOPT);
	memcpy(hello + 8, &v64, 8);
	v16 = htobe16(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
	memcpy(hello + 16, &v16, 2);
	if ((err = chan_write(ch, hello, sizeof(hello))) < 0)
		return err;
	if ((err = chan_read(ch, cflags_be, 4)) < 0)
		return err;
	memcpy(&cflags, cflags_be, 4);
	cflags = be32toh(cflags);
	if (cflags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES))
		return -EPROTO;

	data = malloc(NBD_MAX_OPTION_LENGTH);
	if (!data)
		return -ENOMEM;
	for (;;) {
		uint32_t opt, len;
		if ((err = chan_read(ch, opthdr, 16)) < 0)
			break;
		memcpy(&v64, opthdr, 8);
		if (be64toh(v64) != NBD_IHAVEOPT) {
			err = -EPROTO;
			break;
		}
		memcpy(&opt, opthdr + 8, 4);
		memcpy(&len, opthdr + 12, 4);
		opt = be32toh(opt);
		len = be32toh(len);
		if (len > NBD_MAX_OPTION_LENGTH) {
			err = -EPROTO; /* not worth reading: hang up */
			break;
		}
		if ((err = chan_read(ch, data, len)) < 0)
			break;

		if (opt == NBD_OPT_EXPORT_NAME) {
			uint8_t b[10 + 124] = {0};
			if (!name_matches(exp, (char *)data, len)) {
				err = -ENOENT; /* no way to say no: hang up */
				break;
			}
			v64 = htobe64(exp->size);
			memcpy(b, &v64, 8);
			v16 = htobe16(exp->tflags);
			memcpy(b + 8, &v16, 2);
			err = chan_write(ch, b,
			        (cflags & NBD_FLAG_C_NO_ZEROES) ? 10 : sizeof(b));
			if (err == 0)
				err = 1;
			break;
		}
		switch (opt) {
		case NBD_OPT_ABORT:
			reply(ch, opt, NBD_REP_ACK, NULL, 0);
			err = 0;
			goto out;
		case NBD_OPT_LIST: {
			size_t n = strlen(exp->name);
			uint8_t b[4 + NBD_NAME_MAX_SENT];
			uint32_t nl = htobe32((uint32_t)n);
			if (len != 0) {
				err = reply(ch, opt, NBD_REP_ERR_INVALID, NULL, 0);
				break;
			}
			memcpy(b, &nl, 4);
			memcpy(b + 4, exp->name, n);
			err = reply(ch, opt, NBD_REP_SERVER, b, (uint32_t)(4 + n));
			if (err == 0)
				err = reply(ch, opt, NBD_REP_ACK, NULL, 0);
			break;
		}
		case NBD_OPT_INFO:
		case NBD_OPT_GO: {
			struct nbd_info_request ir;
			if (nbd_parse_info_request(data, len, &ir) < 0) {
				err = reply(ch, opt, NBD_REP_ERR_INVALID, NULL, 0);
				break;
			}
			if (!name_matches(exp, ir.name, ir.name_len)) {
				static const char msg[] = "no such export";
				err = reply(ch, opt, NBD_REP_ERR_UNKNOWN, msg,
				            sizeof(msg) - 1);
				break;
			}
			err = send_info(ch, opt, exp, &ir);
			if (err == 0)
				err = reply(ch, opt, NBD_REP_ACK, NULL, 0);
			if (err == 0 && opt == NBD_OPT_GO) {
				err = 1;
				goto out;
			}
			break;
		}
		default:
			err = reply(ch, opt, NBD_REP_ERR_UNSUP, NULL, 0);
			break;
		}
		if (err < 0)
			break;
	}
out:
	free(data);
	return err;
}

int bm_nbd_negotiate(int in, int out, const struct bm_nbd_export *exp)
{
	struct chan ch = {in, out, 0};
	return negotiate(&ch, exp);
}

int bm_nbd_negotiate_timed(int in, int out, const struct bm_nbd_export *exp,
                           int timeout_ms)
{
	struct chan ch = {in, out, 0};
	if (timeout_ms > 0)
		ch.deadline_ns = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	return negotiate(&ch, exp);
}
