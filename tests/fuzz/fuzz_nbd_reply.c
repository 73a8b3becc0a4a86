/* libFuzzer target: the NBD client's reply reader (lib/nbd_reply.c) on
 * whatever a component's server may send.  Three commands are in flight
 * (a 64 KiB read, a block status question, a write); the input is the
 * server's byte stream, split at random into short reads.  Checks: no
 * byte is written outside the read's buffer (guard bytes around it, and
 * AddressSanitizer), a read called complete was covered exactly, a
 * command is never answered after its last chunk. */
#include <stdint.h>
#include <string.h>

#include "nbd_reply.h"

#define READ_LEN 65536
#define GUARD 64

struct mem_source {
	struct nbdw_source s;
	const uint8_t *data;
	size_t size, pos;
	uint8_t stage[NBDW_STAGE_MIN];
};

static const uint8_t *mem_need(struct nbdw_source *s, size_t n)
{
	struct mem_source *m = (struct mem_source *)s;

	if (n > NBDW_STAGE_MIN || m->size - m->pos < n)
		return NULL;
	memcpy(m->stage, m->data + m->pos, n);
	m->pos += n;
	return m->stage;
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

static uint8_t area[GUARD + READ_LEN + GUARD];
static struct nbdw_pending cmds[3];
static bool finished[3];

static struct nbdw_pending *lookup(void *opaque, uint64_t cookie)
{
	(void)opaque;
	if (cookie < 1 || cookie > 3 || finished[cookie - 1])
		return NULL;
	return &cmds[cookie - 1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_source m = {{mem_need, mem_into}, data, size, 0, {0}};
	bool structured = size > 0 && (data[0] & 1);

	memset(area, 0xa5, sizeof(area));
	memset(finished, 0, sizeof(finished));
	cmds[0] = (struct nbdw_pending){.kind = NBDW_KIND_READ,
	                                .offset = 1u << 20, .length = READ_LEN,
	                                .buf = (char *)area + GUARD};
	cmds[1] = (struct nbdw_pending){.kind = NBDW_KIND_EXTENT,
	                                .offset = 0, .length = 1u << 30};
	cmds[2] = (struct nbdw_pending){.kind = NBDW_KIND_OTHER};
	if (size > 0)
		m.pos = 1;
	for (int i = 0; i < 64; i++) {
		uint64_t cookie;
		bool done;
		const char *why;
		enum nbdw_result r = nbdw_read_reply(&m.s, structured, lookup,
		                                     NULL, &cookie, &done, &why);
		if (r != NBDW_CHUNK) {
			if (r == NBDW_PROTOCOL && !why)
				__builtin_trap();
			break;
		}
		if (cookie < 1 || cookie > 3 || finished[cookie - 1])
			__builtin_trap(); /* answered what lookup refused */
		if (done)
			finished[cookie - 1] = true;
	}
	for (int g = 0; g < GUARD; g++)
		if (area[g] != 0xa5 || area[GUARD + READ_LEN + g] != 0xa5)
			__builtin_trap();
	if (nbdw_read_complete(&cmds[0]) && cmds[0].covered != READ_LEN)
		__builtin_trap();
	if (cmds[0].npiece > NBDW_READ_PIECES || cmds[0].covered > READ_LEN)
		__builtin_trap();
	return 0;
}
