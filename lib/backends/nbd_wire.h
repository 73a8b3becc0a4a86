/*
 * What nbd.c (which connects and negotiates through libnbd) hands to
 * nbd_wire.c (our own transmission on the negotiated socket), and what
 * both use.
 */
#ifndef BM_NBD_WIRE_H
#define BM_NBD_WIRE_H
#include <stdbool.h>
#include <stdint.h>

#include "../backend.h"

/* The longest write or read sent to an export that advertises no maximum
 * (written zeros too): a server may drop a connection over 32 MiB (the
 * protocol's default), and libnbd refuses payloads over 64 MiB. */
#define BM_NBD_PIECE_MAX (32u * 1024 * 1024)
#define BM_NBD_DISCONNECT_TIMEOUT_MS 2000

/* What negotiation agreed, read off libnbd's handle. */
struct bm_nbd_props {
	const char *uri;
	uint64_t size;
	bool rotational;
	bool can_fua, can_zero, can_flush;
	bool can_extents;       /* base:allocation was negotiated */
	bool structured;        /* structured replies were negotiated */
	uint32_t min_block;     /* advertised minimum, or 0 */
	uint32_t max_block;     /* advertised maximum, or 0 */
};

/* BM_NBD_PIECE_MAX bytes of zeros, read-only, shared (NULL: no memory). */
const void *bm_nbd_zero_map(void);

/* Takes over fd, a negotiated connection in the transmission phase (it is
 * closed on failure too). */
int bm_nbd_wire_open(int fd, const struct bm_nbd_props *pr,
                     struct bm_backend **out);

#endif
