/* Parsers of NBD requests and option data; see nbd_parse.h. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "nbd_parse.h"
#include "nbd_proto.h"

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return ((uint64_t)be32(p) << 32) | be32(p + 4);
}

int nbd_parse_request(const uint8_t hdr[28], struct nbd_request *r)
{
	if (be32(hdr) != NBD_REQUEST_MAGIC)
		return -EPROTO;
	r->flags = be16(hdr + 4);
	r->type = be16(hdr + 6);
	r->cookie = be64(hdr + 8);
	r->offset = be64(hdr + 16);
	r->length = be32(hdr + 24);
	return 0;
}

static bool in_range(const struct nbd_request *r, uint64_t size)
{
	return r->offset <= size && r->length <= size - r->offset;
}

enum nbd_verdict nbd_check_request(const struct nbd_request *r, uint64_t size,
                                   uint32_t max_io, uint32_t *err,
                                   uint32_t *payload)
{
	uint16_t allowed;

	*payload = 0;
	*err = 0;
	/* FUA is advertised, and the spec then has every command accept it
	 * (some clients set it on reads and flushes): ignored where it means
	 * nothing.  A DISC is carried out whatever its flags: it has no
	 * reply to carry an error. */
	switch (r->type) {
	case NBD_CMD_WRITE:
		/* The payload follows whatever we think of the request;
		 * one we will not read leaves the stream unusable. */
		if (r->length > max_io)
			return NBD_HANG_UP;
		*payload = r->length;
		allowed = NBD_CMD_FLAG_FUA;
		break;
	case NBD_CMD_READ:
	case NBD_CMD_TRIM:
	case NBD_CMD_FLUSH:
		allowed = NBD_CMD_FLAG_FUA;
		break;
	case NBD_CMD_WRITE_ZEROES:
		allowed = NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE;
		break;
	case NBD_CMD_DISC:
		return NBD_DO;
	default:
		*err = NBD_EINVAL;
		return NBD_REPLY_ERROR;
	}
	if (r->flags & ~allowed) {
		*err = NBD_EINVAL;
		return NBD_REPLY_ERROR;
	}
	if (r->type == NBD_CMD_FLUSH)
		return NBD_DO;
	if (r->type == NBD_CMD_READ && r->length > max_io) {
		*err = NBD_EINVAL;
		return NBD_REPLY_ERROR;
	}
	if (!in_range(r, size)) {
		/* the spec: EINVAL for a read or trim past the end, ENOSPC
		 * for what would write there */
		*err = r->type == NBD_CMD_READ || r->type == NBD_CMD_TRIM
		       ? NBD_EINVAL : NBD_ENOSPC;
		return NBD_REPLY_ERROR;
	}
	return NBD_DO;
}

int nbd_parse_info_request(const uint8_t *data, uint32_t len,
                           struct nbd_info_request *out)
{
	uint32_t name_len;
	uint16_t n;

	memset(out, 0, sizeof(*out));
	if (len < 6)
		return -EINVAL;
	name_len = be32(data);
	if (name_len > len - 6)
		return -EINVAL;
	out->name = (const char *)data + 4;
	out->name_len = name_len;
	n = be16(data + 4 + name_len);
	if ((uint64_t)len != 6ull + name_len + 2ull * n)
		return -EINVAL;
	for (uint16_t i = 0; i < n; i++)
		if (i < NBD_MAX_INFO_REQUESTS)
			out->info[out->ninfo++] = be16(data + 6 + name_len + 2u * i);
	return 0;
}
