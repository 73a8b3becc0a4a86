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

/* The longest read or write an export takes (its advertised maximum
 * block size, or 0 for none): a longer request goes in pieces. */
static inline uint32_t bm_nbd_data_piece(uint32_t max_block, uint32_t left)
{
	uint32_t max = BM_NBD_PIECE_MAX;

	if (max_block && max_block < max)
		max = max_block;
	return left > max ? max : left;
}

/* Native zeroing goes up to the advertised maximum (none: all at once);
 * written zeros are a write. */
static inline uint32_t bm_nbd_zero_piece(bool can_zero, uint32_t max_block,
                                         uint32_t left)
{
	if (!can_zero)
		return bm_nbd_data_piece(max_block, left);
	return (max_block && left > max_block) ? max_block : left;
}

/* Synchronous calls through submit(), for both transmissions. */
int bm_nbd_pread_sync(struct bm_backend *be, void *buf, size_t len,
                      uint64_t off);
int bm_nbd_pwrite_sync(struct bm_backend *be, const void *buf, size_t len,
                       uint64_t off);
int bm_nbd_flush_sync(struct bm_backend *be);

/* BM_NBD_PIECE_MAX bytes of zeros, read-only, shared (NULL: no memory). */
const void *bm_nbd_zero_map(void);

/* Takes over fd, a negotiated connection in the transmission phase (it is
 * closed on failure too). */
int bm_nbd_wire_open(int fd, const struct bm_nbd_props *pr,
                     struct bm_backend **out);

#endif
