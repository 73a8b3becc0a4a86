/*
 * The NBD client's reply reader (nbd_reply.h): one simple reply or one
 * structured chunk per call, checked field by field against the command
 * it names.  Read data goes straight to the command's buffer, and only
 * inside the range the command asked for; a read's chunks must cover that
 * range exactly once (the coverage record: a contiguous part from the
 * start, and up to NBDW_READ_PIECES chunks ahead of it), since counting
 * bytes alone would let a chunk sent twice make up for one never sent.
 */
#include "nbd_reply.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t be64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return be64toh(v);
}

int nbdw_errno(uint32_t e)
{
	switch (e) {
	case 1: return EPERM;
	case 5: return EIO;
	case 12: return ENOMEM;
	case 22: return EINVAL;
	case 28: return ENOSPC;
	case 75: return EOVERFLOW;
	case 95: return ENOTSUP;
	case 108: return ESHUTDOWN;
	default: return EINVAL;
	}
}

void nbdw_encode_request(uint8_t out[NBDW_REQUEST_SIZE], uint16_t flags,
                         uint16_t type, uint64_t cookie, uint64_t offset,
                         uint32_t length)
{
	uint32_t m = htobe32(NBDW_REQUEST_MAGIC), l = htobe32(length);
	uint16_t f = htobe16(flags), t = htobe16(type);
	uint64_t c = htobe64(cookie), o = htobe64(offset);

	memcpy(out, &m, 4);
	memcpy(out + 4, &f, 2);
	memcpy(out + 6, &t, 2);
	memcpy(out + 8, &c, 8);
	memcpy(out + 16, &o, 8);
	memcpy(out + 24, &l, 4);
}

bool nbdw_read_complete(const struct nbdw_pending *p)
{
	return p->npiece == 0 && p->covered == p->length;
}

void nbdw_cover(struct nbdw_pending *p, uint64_t start, uint64_t end)
{
	if (p->npiece < 0)
		return;
	if (start < p->covered)
		goto spoiled;
	for (int i = 0; i < p->npiece; i++)
		if (start < p->ahead[i].end && p->ahead[i].start < end)
			goto spoiled;
	if (start > p->covered) {
		if (p->npiece == NBDW_READ_PIECES)
			goto spoiled;
		p->ahead[p->npiece].start = start;
		p->ahead[p->npiece].end = end;
		p->npiece++;
		return;
	}
	p->covered = end;
	for (int i = 0; i < p->npiece;) {
		if (p->ahead[i].start == p->covered) {
			p->covered = p->ahead[i].end;
			p->ahead[i] = p->ahead[--p->npiece];
			i = 0;
		} else {
			i++;
		}
	}
	return;
spoiled:
	p->npiece = -1;
}

static void note_error(struct nbdw_pending *p, uint32_t nbd_error)
{
	if (p->error == 0)
		p->error = nbdw_errno(nbd_error);
}

/* The part [off, off + len) of the device, inside read p: its start
 * relative to p's offset in *rel. */
static bool inside(const struct nbdw_pending *p, uint64_t off, uint64_t len,
                   uint64_t *rel)
{
	if (off < p->offset || len > p->length)
		return false;
	*rel = off - p->offset;
	return *rel <= p->length - len;
}

#define PROTO(msg) do { *why = (msg); return NBDW_PROTOCOL; } while (0)
#define NEED(var, n) do { if (!((var) = s->need(s, (n)))) \
		return NBDW_ENDED; } while (0)
#define INTO(dst, n) do { if (s->into(s, (dst), (n)) < 0) \
		return NBDW_ENDED; } while (0)

static enum nbdw_result simple_reply(struct nbdw_source *s,
                                     nbdw_lookup lookup, void *opaque,
                                     uint64_t *cookie, bool *done,
                                     const char **why)
{
	const uint8_t *h;
	struct nbdw_pending *p;
	uint32_t error;

	NEED(h, 12);
	error = be32(h);
	*cookie = be64(h + 4);
	p = lookup(opaque, *cookie);
	if (!p)
		PROTO("a reply to no request in flight");
	*done = true;
	if (error) {
		note_error(p, error);
		return NBDW_CHUNK;
	}
	if (p->kind == NBDW_KIND_READ) {
		INTO(p->buf, p->length);
		if (p->covered != 0 || p->npiece != 0)
			p->npiece = -1;
		else
			p->covered = p->length;
	}
	return NBDW_CHUNK;
}

/* OFFSET_DATA and OFFSET_HOLE of read p, len bytes of payload. */
static enum nbdw_result read_chunk(struct nbdw_source *s, uint16_t type,
                                   uint32_t len, struct nbdw_pending *p,
                                   const char **why)
{
	const uint8_t *b;
	uint64_t off, rel, n;

	if (p->kind != NBDW_KIND_READ)
		PROTO("read data in answer to a request that is not a read");
	if (type == NBDW_REPLY_OFFSET_DATA) {
		if (len <= 8)
			PROTO("a data chunk without data");
		NEED(b, 8);
		off = be64(b);
		n = len - 8;
		if (!inside(p, off, n, &rel))
			PROTO("a data chunk outside the read it answers");
		INTO(p->buf + rel, (size_t)n);
	} else {
		if (len != 12)
			PROTO("a hole chunk of the wrong length");
		NEED(b, 12);
		off = be64(b);
		n = be32(b + 8);
		if (n == 0 || !inside(p, off, n, &rel))
			PROTO("a hole chunk outside the read it answers");
		memset(p->buf + rel, 0, (size_t)n);
	}
	nbdw_cover(p, rel, rel + n);
	return NBDW_CHUNK;
}

static enum nbdw_result error_chunk(struct nbdw_source *s, uint16_t type,
                                    uint32_t len, struct nbdw_pending *p,
                                    const char **why)
{
	const uint8_t *b;
	uint32_t error, msg, rest;

	if (len < 6)
		PROTO("an error chunk too short for its error");
	NEED(b, 6);
	error = be32(b);
	msg = be16(b + 4);
	if (error == 0)
		PROTO("an error chunk without an error");
	if (msg > len - 6)
		PROTO("an error chunk's message longer than the chunk");
	rest = len - 6 - msg;
	if ((type == NBDW_REPLY_ERROR && rest != 0) ||
	    (type == NBDW_REPLY_ERROR_OFFSET && rest != 8))
		PROTO("an error chunk of the wrong length");
	INTO(NULL, (size_t)msg + rest); /* the message (and offset): dropped */
	note_error(p, error);
	return NBDW_CHUNK;
}

static enum nbdw_result status_chunk(struct nbdw_source *s, uint32_t len,
                                     struct nbdw_pending *p, const char **why)
{
	const uint8_t *b;

	if (p->kind != NBDW_KIND_EXTENT)
		PROTO("block status in answer to a request that is not one");
	if (len < 12 || (len - 4) % 8 != 0)
		PROTO("a block status chunk of the wrong length");
	NEED(b, 12); /* context id, then the first extent */
	if (be32(b + 4) == 0) /* would say nothing of the range */
		PROTO("a block status extent of length 0");
	if (!p->answered) {
		p->answered = true;
		p->run = be32(b + 4);
		p->status = be32(b + 8);
	}
	INTO(NULL, len - 12); /* more extents than asked for: dropped */
	return NBDW_CHUNK;
}

static enum nbdw_result structured_chunk(struct nbdw_source *s,
                                         nbdw_lookup lookup, void *opaque,
                                         uint64_t *cookie, bool *done,
                                         const char **why)
{
	const uint8_t *h;
	struct nbdw_pending *p;
	uint16_t flags, type;
	uint32_t len;

	NEED(h, 16);
	flags = be16(h);
	type = be16(h + 2);
	*cookie = be64(h + 4);
	len = be32(h + 12);
	p = lookup(opaque, *cookie);
	if (!p)
		PROTO("a reply to no request in flight");
	*done = (flags & NBDW_REPLY_FLAG_DONE) != 0;
	switch (type) {
	case NBDW_REPLY_NONE:
		if (len != 0 || !*done)
			PROTO("an empty chunk with a payload, or not the last");
		return NBDW_CHUNK;
	case NBDW_REPLY_OFFSET_DATA:
	case NBDW_REPLY_OFFSET_HOLE:
		return read_chunk(s, type, len, p, why);
	case NBDW_REPLY_BLOCK_STATUS:
		return status_chunk(s, len, p, why);
	case NBDW_REPLY_ERROR:
	case NBDW_REPLY_ERROR_OFFSET:
		return error_chunk(s, type, len, p, why);
	default:
		/* an error type we do not know still carries its error */
		if (!(type & 0x8000))
			PROTO("a chunk of a type never negotiated");
		if (len < 6)
			PROTO("an error chunk too short for its error");
		NEED(h, 4);
		if (be32(h) == 0)
			PROTO("an error chunk without an error");
		note_error(p, be32(h));
		INTO(NULL, len - 4);
		return NBDW_CHUNK;
	}
}

enum nbdw_result nbdw_read_reply(struct nbdw_source *s, bool structured,
                                 nbdw_lookup lookup, void *opaque,
                                 uint64_t *cookie, bool *done,
                                 const char **why)
{
	const uint8_t *m;
	uint32_t magic;

	*why = NULL;
	*done = false;
	NEED(m, 4);
	magic = be32(m);
	if (magic == NBDW_SIMPLE_MAGIC)
		return simple_reply(s, lookup, opaque, cookie, done, why);
	if (magic == NBDW_STRUCTURED_MAGIC && structured)
		return structured_chunk(s, lookup, opaque, cookie, done, why);
	PROTO("a reply with a wrong magic number");
}
