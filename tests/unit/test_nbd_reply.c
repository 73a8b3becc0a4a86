/* The NBD client's reply reader (lib/nbd_reply.c) on hand-made replies:
 * what it accepts, what it refuses as a protocol error, and what it tells
 * of a read's coverage, an error, a block status answer. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "check.h"
#include "nbd_reply.h"

struct mem_source {
	struct nbdw_source s;
	uint8_t data[4096];
	size_t size, pos;
};

static const uint8_t *mem_need(struct nbdw_source *s, size_t n)
{
	struct mem_source *m = (struct mem_source *)s;
	const uint8_t *p = m->data + m->pos;

	if (m->size - m->pos < n)
		return NULL;
	m->pos += n;
	return p;
}

static int mem_into(struct nbdw_source *s, void *dst, size_t n)
{
	struct mem_source *m = (struct mem_source *)s;

	if (m->size - m->pos < n)
		return -1;
	if (dst)
		memcpy(dst, m->data + m->pos, n);
	m->pos += n;
	return 0;
}

static void put16(struct mem_source *m, uint16_t v)
{
	v = htobe16(v);
	memcpy(m->data + m->size, &v, 2);
	m->size += 2;
}

static void put32(struct mem_source *m, uint32_t v)
{
	v = htobe32(v);
	memcpy(m->data + m->size, &v, 4);
	m->size += 4;
}

static void put64(struct mem_source *m, uint64_t v)
{
	v = htobe64(v);
	memcpy(m->data + m->size, &v, 8);
	m->size += 8;
}

static void chunk(struct mem_source *m, uint16_t flags, uint16_t type,
                  uint64_t cookie, uint32_t len)
{
	put32(m, NBDW_STRUCTURED_MAGIC);
	put16(m, flags);
	put16(m, type);
	put64(m, cookie);
	put32(m, len);
}

static void data_chunk(struct mem_source *m, bool last, uint64_t cookie,
                       uint64_t off, uint32_t n, uint8_t fill)
{
	chunk(m, last ? NBDW_REPLY_FLAG_DONE : 0, NBDW_REPLY_OFFSET_DATA,
	      cookie, 8 + n);
	put64(m, off);
	memset(m->data + m->size, fill, n);
	m->size += n;
}

static char buf[256];
static struct nbdw_pending cmd;

static struct nbdw_pending *lookup(void *opaque, uint64_t cookie)
{
	(void)opaque;
	return cookie == 7 ? &cmd : NULL;
}

static void new_read(void)
{
	memset(buf, 0xee, sizeof(buf));
	cmd = (struct nbdw_pending){.kind = NBDW_KIND_READ, .offset = 4096,
	                            .length = 128, .buf = buf};
}

/* Reads every reply in m; returns the last result, *last_done. */
static enum nbdw_result run(struct mem_source *m, bool structured,
                            bool *last_done)
{
	enum nbdw_result r = NBDW_ENDED;
	uint64_t cookie;
	const char *why;

	*last_done = false;
	while (m->pos < m->size) {
		r = nbdw_read_reply(&m->s, structured, lookup, NULL, &cookie,
		                    last_done, &why);
		if (r != NBDW_CHUNK)
			break;
		CHECK_EQ(cookie, 7);
	}
	return r;
}

#define SOURCE(m) struct mem_source m = {.s = {mem_need, mem_into}}

int main(void)
{
	bool done;

	{ /* two data chunks out of order, then done: complete */
		SOURCE(m);
		new_read();
		data_chunk(&m, false, 7, 4096 + 64, 64, 2);
		data_chunk(&m, true, 7, 4096, 64, 1);
		CHECK_EQ(run(&m, true, &done), NBDW_CHUNK);
		CHECK(done);
		CHECK(nbdw_read_complete(&cmd));
		CHECK_EQ(buf[0], 1);
		CHECK_EQ(buf[127], 2);
		CHECK_EQ((uint8_t)buf[128], 0xee); /* nothing past the read */
	}
	{ /* the first half twice (bytes add up): not complete */
		SOURCE(m);
		new_read();
		data_chunk(&m, false, 7, 4096, 64, 1);
		data_chunk(&m, true, 7, 4096, 64, 1);
		CHECK_EQ(run(&m, true, &done), NBDW_CHUNK);
		CHECK(done);
		CHECK(!nbdw_read_complete(&cmd));
	}
	{ /* half, flagged last: not complete */
		SOURCE(m);
		new_read();
		data_chunk(&m, true, 7, 4096, 64, 1);
		CHECK_EQ(run(&m, true, &done), NBDW_CHUNK);
		CHECK(!nbdw_read_complete(&cmd));
	}
	{ /* a hole and data: complete, the hole reads zeros */
		SOURCE(m);
		new_read();
		chunk(&m, 0, NBDW_REPLY_OFFSET_HOLE, 7, 12);
		put64(&m, 4096);
		put32(&m, 100);
		data_chunk(&m, true, 7, 4196, 28, 3);
		CHECK_EQ(run(&m, true, &done), NBDW_CHUNK);
		CHECK(nbdw_read_complete(&cmd));
		CHECK_EQ(buf[99], 0);
		CHECK_EQ(buf[100], 3);
	}
	{ /* data past the read's end: protocol error, nothing written */
		SOURCE(m);
		new_read();
		data_chunk(&m, true, 7, 4096 + 64, 65, 1);
		CHECK_EQ(run(&m, true, &done), NBDW_PROTOCOL);
		CHECK_EQ((uint8_t)buf[64], 0xee);
	}
	{ /* data before the read's start */
		SOURCE(m);
		new_read();
		data_chunk(&m, true, 7, 4095, 8, 1);
		CHECK_EQ(run(&m, true, &done), NBDW_PROTOCOL);
	}
	{ /* a cookie nobody sent */
		SOURCE(m);
		new_read();
		data_chunk(&m, true, 8, 4096, 128, 1);
		CHECK_EQ(run(&m, true, &done), NBDW_PROTOCOL);
	}
	{ /* a structured reply where none was negotiated */
		SOURCE(m);
		new_read();
		data_chunk(&m, true, 7, 4096, 128, 1);
		CHECK_EQ(run(&m, false, &done), NBDW_PROTOCOL);
	}
	{ /* simple replies: data, then an error without data */
		SOURCE(m);
		new_read();
		put32(&m, NBDW_SIMPLE_MAGIC);
		put32(&m, 0);
		put64(&m, 7);
		memset(m.data + m.size, 9, 128);
		m.size += 128;
		CHECK_EQ(run(&m, false, &done), NBDW_CHUNK);
		CHECK(done);
		CHECK(nbdw_read_complete(&cmd));
		CHECK_EQ(buf[127], 9);
		SOURCE(e);
		new_read();
		put32(&e, NBDW_SIMPLE_MAGIC);
		put32(&e, 28); /* NBD_ENOSPC */
		put64(&e, 7);
		CHECK_EQ(run(&e, false, &done), NBDW_CHUNK);
		CHECK_EQ(cmd.error, ENOSPC);
	}
	{ /* an error chunk with a message, then the end */
		SOURCE(m);
		new_read();
		chunk(&m, 0, NBDW_REPLY_ERROR, 7, 6 + 5);
		put32(&m, 5);
		put16(&m, 5);
		memcpy(m.data + m.size, "oops!", 5);
		m.size += 5;
		chunk(&m, NBDW_REPLY_FLAG_DONE, NBDW_REPLY_NONE, 7, 0);
		CHECK_EQ(run(&m, true, &done), NBDW_CHUNK);
		CHECK(done);
		CHECK_EQ(cmd.error, EIO);
	}
	{ /* an error chunk whose error is 0 */
		SOURCE(m);
		new_read();
		chunk(&m, NBDW_REPLY_FLAG_DONE, NBDW_REPLY_ERROR, 7, 6);
		put32(&m, 0);
		put16(&m, 0);
		CHECK_EQ(run(&m, true, &done), NBDW_PROTOCOL);
	}
	{ /* block status: the first extent answers */
		SOURCE(m);
		cmd = (struct nbdw_pending){.kind = NBDW_KIND_EXTENT,
		                            .offset = 0, .length = 1 << 20};
		chunk(&m, NBDW_REPLY_FLAG_DONE, NBDW_REPLY_BLOCK_STATUS, 7,
		      4 + 16);
		put32(&m, 1);
		put32(&m, 65536);
		put32(&m, NBDW_STATE_ZERO);
		put32(&m, 4096);
		put32(&m, 0);
		CHECK_EQ(run(&m, true, &done), NBDW_CHUNK);
		CHECK(cmd.answered);
		CHECK_EQ(cmd.run, 65536);
		CHECK_EQ(cmd.status, NBDW_STATE_ZERO);
		CHECK_EQ(m.pos, m.size);
	}
	{ /* an extent of length 0 would say nothing: refused */
		SOURCE(m);
		cmd = (struct nbdw_pending){.kind = NBDW_KIND_EXTENT,
		                            .offset = 0, .length = 1 << 20};
		chunk(&m, NBDW_REPLY_FLAG_DONE, NBDW_REPLY_BLOCK_STATUS, 7, 12);
		put32(&m, 1);
		put32(&m, 0);
		put32(&m, NBDW_STATE_ZERO);
		CHECK_EQ(run(&m, true, &done), NBDW_PROTOCOL);
		CHECK(!cmd.answered);
	}
	{ /* read data in answer to a block status question */
		SOURCE(m);
		cmd = (struct nbdw_pending){.kind = NBDW_KIND_EXTENT,
		                            .offset = 0, .length = 1 << 20};
		data_chunk(&m, true, 7, 0, 8, 1);
		CHECK_EQ(run(&m, true, &done), NBDW_PROTOCOL);
	}
	{ /* a reply cut short: the source ended */
		SOURCE(m);
		new_read();
		data_chunk(&m, true, 7, 4096, 128, 1);
		m.size -= 10;
		CHECK_EQ(run(&m, true, &done), NBDW_ENDED);
	}
	{ /* a request header as the server reads it */
		uint8_t h[NBDW_REQUEST_SIZE];
		nbdw_encode_request(h, NBDW_FLAG_FUA, NBDW_CMD_WRITE,
		                    0x0102030405060708ull, 4096, 512);
		CHECK_EQ(h[0], 0x25);
		CHECK_EQ(h[5], 1);
		CHECK_EQ(h[7], 1);
		CHECK_EQ(h[8], 1);
		CHECK_EQ(h[15], 8);
		CHECK_EQ(h[22], 0x10);
		CHECK_EQ(h[26], 2);
	}
	return check_exit();
}
