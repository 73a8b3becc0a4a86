/* libFuzzer target: NBD request header parsing and checking, and the
 * NBD_OPT_GO/INFO data parser.  Checks the verdict's invariants: a request
 * carried out is within the export and the size limit. */
#include <stdint.h>
#include <string.h>

#include "nbd_parse.h"
#include "nbd_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nbd_request r;
	struct nbd_info_request ir;
	uint32_t err, payload;
	uint8_t hdr[28] = {0x25, 0x60, 0x95, 0x13};

	if (size > 4) {
		memcpy(hdr + 4, data, size - 4 < 24 ? size - 4 : 24);
		if (nbd_parse_request(hdr, &r) == 0) {
			uint64_t export_size = 1ull << 30;
			enum nbd_verdict v = nbd_check_request(&r, export_size,
			                                       1u << 25, &err,
			                                       &payload);
			if (v == NBD_DO && r.type != NBD_CMD_FLUSH &&
			    r.type != NBD_CMD_DISC &&
			    (r.offset > export_size ||
			     r.length > export_size - r.offset))
				__builtin_trap();
			if (v != NBD_HANG_UP && payload > (1u << 25))
				__builtin_trap();
			if (v == NBD_REPLY_ERROR && err == 0)
				__builtin_trap();
		}
	}
	if (size <= UINT32_MAX && nbd_parse_info_request(data, (uint32_t)size,
	                                                  &ir) == 0) {
		if ((const uint8_t *)ir.name < data ||
		    (const uint8_t *)ir.name + ir.name_len > data + size ||
		    ir.ninfo > NBD_MAX_INFO_REQUESTS)
			__builtin_trap();
	}
	return 0;
}
