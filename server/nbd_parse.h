/*
 * Pure parsers of untrusted NBD bytes (no I/O, no allocation), so that each
 * can be fuzzed alone: the transmission request header and the data of
 * NBD_OPT_INFO / NBD_OPT_GO.
 */
#ifndef BM_NBD_PARSE_H
#define BM_NBD_PARSE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nbd_request {
	uint16_t flags;
	uint16_t type;
	uint64_t cookie;
	uint64_t offset;
	uint32_t length;
};

/* Decodes a 28-byte request header; -EPROTO on a bad magic. */
int nbd_parse_request(const uint8_t hdr[28], struct nbd_request *r);

/* What the server must do with a decoded request. */
enum nbd_verdict {
	NBD_DO,           /* valid: carry it out */
	NBD_REPLY_ERROR,  /* reply with *err (after reading any payload) */
	NBD_HANG_UP,      /* cannot resynchronize the stream: close */
};

/*
 * Checks a request against an export of `size` bytes with at most `max_io`
 * bytes per read or write.  Sets *err to an NBD error for NBD_REPLY_ERROR.
 * *payload is the number of bytes of data that follow the header (writes).
 */
enum nbd_verdict nbd_check_request(const struct nbd_request *r, uint64_t size,
                                   uint32_t max_io, uint32_t *err,
                                   uint32_t *payload);

#define NBD_MAX_INFO_REQUESTS 32

struct nbd_info_request {
	const char *name;    /* not NUL-terminated: name_len bytes in data */
	uint32_t name_len;
	uint16_t ninfo;      /* requests stored (up to NBD_MAX_INFO_REQUESTS) */
	uint16_t info[NBD_MAX_INFO_REQUESTS];
};

/* Parses NBD_OPT_INFO/GO data; -EINVAL when its lengths disagree. */
int nbd_parse_info_request(const uint8_t *data, uint32_t len,
                           struct nbd_info_request *out);

#endif
