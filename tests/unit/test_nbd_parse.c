/* NBD request and option parsing: every verdict the server acts on. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "nbd_parse.h"
#include "nbd_proto.h"

static void put(uint8_t *h, uint16_t flags, uint16_t type, uint64_t off,
                uint32_t len)
{
	uint8_t *p = h;
	uint32_t magic = NBD_REQUEST_MAGIC;
	for (int i = 3; i >= 0; i--)
		*p++ = (uint8_t)(magic >> (8 * i));
	*p++ = (uint8_t)(flags >> 8);
	*p++ = (uint8_t)flags;
	*p++ = (uint8_t)(type >> 8);
	*p++ = (uint8_t)type;
	for (int i = 7; i >= 0; i--)
		*p++ = (uint8_t)(0xabcdull >> (8 * i));
	for (int i = 7; i >= 0; i--)
		*p++ = (uint8_t)(off >> (8 * i));
	for (int i = 3; i >= 0; i--)
		*p++ = (uint8_t)(len >> (8 * i));
}

static enum nbd_verdict verdict(uint16_t flags, uint16_t type, uint64_t off,
                                uint32_t len, uint32_t *err, uint32_t *payload)
{
	uint8_t h[28];
	struct nbd_request r;

	put(h, flags, type, off, len);
	CHECK_EQ(nbd_parse_request(h, &r), 0);
	CHECK_EQ(r.cookie, 0xabcd);
	CHECK_EQ(r.offset, off);
	CHECK_EQ(r.length, len);
	return nbd_check_request(&r, 1 << 20, 1 << 16, err, payload);
}

int main(void)
{
	uint8_t h[28];
	struct nbd_request r;
	uint32_t err, payload;

	put(h, 0, NBD_CMD_READ, 0, 512);
	h[0] ^= 1;
	CHECK_EQ(nbd_parse_request(h, &r), -EPROTO);

	CHECK_EQ(verdict(0, NBD_CMD_READ, 0, 4096, &err, &payload), NBD_DO);
	CHECK_EQ(payload, 0);
	CHECK_EQ(verdict(NBD_CMD_FLAG_FUA, NBD_CMD_WRITE, 4096, 512, &err,
	                 &payload), NBD_DO);
	CHECK_EQ(payload, 512);
	/* Out of range: EINVAL for reads, ENOSPC for writes (payload read). */
	CHECK_EQ(verdict(0, NBD_CMD_READ, (1 << 20) - 100, 512, &err, &payload),
	         NBD_REPLY_ERROR);
	CHECK_EQ(err, NBD_EINVAL);
	CHECK_EQ(verdict(0, NBD_CMD_WRITE, (1 << 20), 1, &err, &payload),
	         NBD_REPLY_ERROR);
	CHECK_EQ(err, NBD_ENOSPC);
	CHECK_EQ(payload, 1);
	CHECK_EQ(verdict(0, NBD_CMD_WRITE_ZEROES, (1 << 20) - 512, 1024, &err,
	                 &payload), NBD_REPLY_ERROR);
	CHECK_EQ(err, NBD_ENOSPC);
	/* a trim past the end: EINVAL, as for a read (the spec) */
	CHECK_EQ(verdict(0, NBD_CMD_TRIM, (1 << 20) - 512, 1024, &err, &payload),
	         NBD_REPLY_ERROR);
	CHECK_EQ(err, NBD_EINVAL);
	/* Offset overflow. */
	CHECK_EQ(verdict(0, NBD_CMD_READ, UINT64_MAX - 10, 100, &err, &payload),
	         NBD_REPLY_ERROR);
	/* Huge read: error; huge write: the stream cannot be followed. */
	CHECK_EQ(verdict(0, NBD_CMD_READ, 0, 1 << 17, &err, &payload),
	         NBD_REPLY_ERROR);
	CHECK_EQ(verdict(0, NBD_CMD_WRITE, 0, 1u << 31, &err, &payload),
	         NBD_HANG_UP);
	/* Unknown command and flags. */
	CHECK_EQ(verdict(0, 99, 0, 0, &err, &payload), NBD_REPLY_ERROR);
	CHECK_EQ(err, NBD_EINVAL);
	/* FUA is accepted on every command (advertised: the spec), other
	 * flags where they mean nothing are not; DISC goes whatever it says */
	CHECK_EQ(verdict(NBD_CMD_FLAG_FUA, NBD_CMD_READ, 0, 1, &err, &payload),
	         NBD_DO);
	CHECK_EQ(verdict(NBD_CMD_FLAG_FUA, NBD_CMD_FLUSH, 0, 0, &err, &payload),
	         NBD_DO);
	CHECK_EQ(verdict(NBD_CMD_FLAG_FUA, NBD_CMD_TRIM, 0, 4096, &err,
	                 &payload), NBD_DO);
	CHECK_EQ(verdict(NBD_CMD_FLAG_NO_HOLE, NBD_CMD_READ, 0, 1, &err,
	                 &payload), NBD_REPLY_ERROR);
	CHECK_EQ(err, NBD_EINVAL);
	CHECK_EQ(verdict(NBD_CMD_FLAG_FUA | 0x8000, NBD_CMD_DISC, 0, 0, &err,
	                 &payload), NBD_DO);
	CHECK_EQ(verdict(0x8000, NBD_CMD_WRITE, 0, 10, &err, &payload),
	         NBD_REPLY_ERROR);
	CHECK_EQ(payload, 10); /* still consumed */
	CHECK_EQ(verdict(NBD_CMD_FLAG_NO_HOLE, NBD_CMD_WRITE_ZEROES, 0, 1 << 19,
	                 &err, &payload), NBD_DO);
	CHECK_EQ(verdict(0, NBD_CMD_TRIM, 0, 1 << 20, &err, &payload), NBD_DO);
	CHECK_EQ(verdict(0, NBD_CMD_FLUSH, 0, 0, &err, &payload), NBD_DO);
	CHECK_EQ(verdict(0, NBD_CMD_DISC, 0, 0, &err, &payload), NBD_DO);

	/* NBD_OPT_GO data. */
	struct nbd_info_request ir;
	uint8_t go[] = {0, 0, 0, 2, 'm', '0', 0, 2, 0, 3, 0, 1};
	CHECK_EQ(nbd_parse_info_request(go, sizeof(go), &ir), 0);
	CHECK_EQ(ir.name_len, 2);
	CHECK(memcmp(ir.name, "m0", 2) == 0);
	CHECK_EQ(ir.ninfo, 2);
	CHECK_EQ(ir.info[0], NBD_INFO_BLOCK_SIZE);
	CHECK_EQ(nbd_parse_info_request(go, sizeof(go) - 1, &ir), -EINVAL);
	CHECK_EQ(nbd_parse_info_request(go, 5, &ir), -EINVAL);
	uint8_t liar[] = {0xff, 0xff, 0xff, 0xff, 0, 0};
	CHECK_EQ(nbd_parse_info_request(liar, sizeof(liar), &ir), -EINVAL);
	uint8_t empty[] = {0, 0, 0, 0, 0, 0};
	CHECK_EQ(nbd_parse_info_request(empty, sizeof(empty), &ir), 0);
	CHECK_EQ(ir.name_len, 0);
	return check_exit();
}
