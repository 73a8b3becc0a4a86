/*
 * The NBD client's reply reader: what a component's server sends back on
 * the transmission phase (simple replies, and structured ones when they
 * were negotiated), checked against the command it answers.
 *
 * The reader does no I/O: bytes come from a source with two calls, one
 * that gives the next few bytes in a contiguous buffer (headers, small
 * payloads) and one that puts the next bytes straight where they belong
 * (read data into the caller's buffer).  The connection's thread gives it
 * the socket; the fuzz target gives it memory.  Everything the server
 * says is untrusted: a cookie nobody sent, a chunk outside its read, a
 * chunk twice, a length that does not add up is a protocol error, after
 * which the connection must end (nothing after it can be framed).
 */
#ifndef BM_NBD_REPLY_H
#define BM_NBD_REPLY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NBDW_REQUEST_MAGIC 0x25609513u
#define NBDW_SIMPLE_MAGIC 0x67446698u
#define NBDW_STRUCTURED_MAGIC 0x668e33efu

#define NBDW_CMD_READ 0u
#define NBDW_CMD_WRITE 1u
#define NBDW_CMD_DISC 2u
#define NBDW_CMD_FLUSH 3u
#define NBDW_CMD_WRITE_ZEROES 6u
#define NBDW_CMD_BLOCK_STATUS 7u
#define NBDW_FLAG_FUA (1u << 0)
#define NBDW_FLAG_REQ_ONE (1u << 3)

#define NBDW_REPLY_FLAG_DONE 1u
#define NBDW_REPLY_NONE 0u
#define NBDW_REPLY_OFFSET_DATA 1u
#define NBDW_REPLY_OFFSET_HOLE 2u
#define NBDW_REPLY_BLOCK_STATUS 5u
#define NBDW_REPLY_ERROR 32769u
#define NBDW_REPLY_ERROR_OFFSET 32770u
#define NBDW_STATE_ZERO 2u      /* base:allocation: reads as zeros */

#define NBDW_REQUEST_SIZE 28u
#define NBDW_STAGE_MIN 4096u    /* a source's contiguous buffer: at least */
#define NBDW_READ_PIECES 16     /* out-of-order read chunks tracked */

enum nbdw_kind { NBDW_KIND_READ, NBDW_KIND_EXTENT, NBDW_KIND_OTHER };

/* What the reader needs of a command in flight, and what it learns. */
struct nbdw_pending {
	enum nbdw_kind kind;
	uint64_t offset;        /* read / extent: the request's offset */
	uint32_t length;        /* read / extent: its length */
	char *buf;              /* read: where the data goes */
	/* learned */
	int error;              /* first error the server reported (errno) */
	uint64_t covered;       /* read: [offset, + covered) is filled */
	int npiece;             /* read: chunks ahead of covered; -1: a chunk
	                           overlapped, or too many */
	struct { uint64_t start, end; } ahead[NBDW_READ_PIECES];
	bool answered;          /* extent: the first descriptor */
	uint32_t run;           /* extent: its length */
	uint32_t status;        /* extent: its flags */
};

struct nbdw_source {
	/* The next n bytes (n <= NBDW_STAGE_MIN) in a contiguous buffer,
	 * consumed; NULL when the connection ended or must end. */
	const uint8_t *(*need)(struct nbdw_source *s, size_t n);
	/* The next n bytes into dst (NULL: dropped); 0 or -1 as need. */
	int (*into)(struct nbdw_source *s, void *dst, size_t n);
};

/* Finds the command a cookie names (NULL: no such command in flight). */
typedef struct nbdw_pending *(*nbdw_lookup)(void *opaque, uint64_t cookie);

enum nbdw_result {
	NBDW_CHUNK,         /* one chunk read; *done: the command's last */
	NBDW_ENDED,         /* the source ended (need/into failed) */
	NBDW_PROTOCOL,      /* the server broke the protocol: end it */
};

/*
 * Reads one reply (a simple reply, or one structured chunk) from s.  On
 * NBDW_CHUNK, *cookie is the command it answered and *done whether that
 * command has its whole answer now; its pending record has been updated.
 * why (NBDW_PROTOCOL) says what was wrong, for the log.
 */
enum nbdw_result nbdw_read_reply(struct nbdw_source *s, bool structured,
                                 nbdw_lookup lookup, void *opaque,
                                 uint64_t *cookie, bool *done,
                                 const char **why);

/* Records that [start, end) of a read (relative to its offset) came; an
 * overlap with what came before, or too many pieces, spoils the read
 * (npiece -1).  Also used by the libnbd transmission (nbd.c). */
void nbdw_cover(struct nbdw_pending *p, uint64_t start, uint64_t end);

/* A read whose every chunk came: the buffer was covered exactly once. */
bool nbdw_read_complete(const struct nbdw_pending *p);

/* The NBD error number on the wire as an errno (unknown ones: EINVAL, as
 * the protocol says). */
int nbdw_errno(uint32_t nbd_error);

/* Encodes a request header (28 bytes) at out. */
void nbdw_encode_request(uint8_t out[NBDW_REQUEST_SIZE], uint16_t flags,
                         uint16_t type, uint64_t cookie, uint64_t offset,
                         uint32_t length);

#endif
