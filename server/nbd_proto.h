/*
 * NBD protocol constants (fixed newstyle negotiation, simple replies), from
 * the protocol specification (doc/proto.md in the NBD project).
 * All integers on the wire are big-endian.
 */
#ifndef BM_NBD_PROTO_H
#define BM_NBD_PROTO_H
#include <stdint.h>

#define NBD_MAGIC 0x4e42444d41474943ull        /* "NBDMAGIC" */
#define NBD_IHAVEOPT 0x49484156454F5054ull     /* "IHAVEOPT" */
#define NBD_REP_MAGIC 0x0003e889045565a9ull
#define NBD_REQUEST_MAGIC 0x25609513u
#define NBD_SIMPLE_REPLY_MAGIC 0x67446698u

/* handshake flags (server) and client flags */
#define NBD_FLAG_FIXED_NEWSTYLE 1u
#define NBD_FLAG_NO_ZEROES 2u
#define NBD_FLAG_C_FIXED_NEWSTYLE 1u
#define NBD_FLAG_C_NO_ZEROES 2u

/* options */
#define NBD_OPT_EXPORT_NAME 1u
#define NBD_OPT_ABORT 2u
#define NBD_OPT_LIST 3u
#define NBD_OPT_STARTTLS 5u
#define NBD_OPT_INFO 6u
#define NBD_OPT_GO 7u
#define NBD_OPT_STRUCTURED_REPLY 8u

/* option replies */
#define NBD_REP_ACK 1u
#define NBD_REP_SERVER 2u
#define NBD_REP_INFO 3u
#define NBD_REP_ERR(n) (0x80000000u | (n))
#define NBD_REP_ERR_UNSUP NBD_REP_ERR(1)
#define NBD_REP_ERR_INVALID NBD_REP_ERR(3)
#define NBD_REP_ERR_UNKNOWN NBD_REP_ERR(6)
#define NBD_REP_ERR_TOO_BIG NBD_REP_ERR(9)

/* NBD_REP_INFO types */
#define NBD_INFO_EXPORT 0u
#define NBD_INFO_NAME 1u
#define NBD_INFO_DESCRIPTION 2u
#define NBD_INFO_BLOCK_SIZE 3u

/* transmission flags */
#define NBD_FLAG_HAS_FLAGS (1u << 0)
#define NBD_FLAG_READ_ONLY (1u << 1)
#define NBD_FLAG_SEND_FLUSH (1u << 2)
#define NBD_FLAG_SEND_FUA (1u << 3)
#define NBD_FLAG_ROTATIONAL (1u << 4)
#define NBD_FLAG_SEND_TRIM (1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES (1u << 6)
#define NBD_FLAG_CAN_MULTI_CONN (1u << 8)

/* commands and their flags */
#define NBD_CMD_READ 0u
#define NBD_CMD_WRITE 1u
#define NBD_CMD_DISC 2u
#define NBD_CMD_FLUSH 3u
#define NBD_CMD_TRIM 4u
#define NBD_CMD_WRITE_ZEROES 6u
#define NBD_CMD_FLAG_FUA (1u << 0)
#define NBD_CMD_FLAG_NO_HOLE (1u << 1)

/* errors in replies */
#define NBD_EPERM 1u
#define NBD_EIO 5u
#define NBD_ENOMEM 12u
#define NBD_EINVAL 22u
#define NBD_ENOSPC 28u
#define NBD_EOVERFLOW 75u
#define NBD_ENOTSUP 95u
#define NBD_ESHUTDOWN 108u

#define NBD_REQUEST_SIZE 28u
#define NBD_MAX_OPTION_LENGTH 65536u
#define NBD_MAX_NAME 4096u
#define NBD_NAME_MAX_SENT 64u /* our export names are at most 31 bytes */

#endif
