/*
 * The data path's entry: checks a client request, then sends reads to the
 * `stream` read-ahead (readahead.c) or straight to the components, and
 * writes, trims, zeroes and flushes to the fan-out (compio.c), with the
 * read-ahead's invalidation as the hook that runs at submission and before
 * the acknowledgement.  The arrows point down: io.c -> readahead.c ->
 * compio.c -> backends.
 */
#include <errno.h>

#include "error.h"
#include "mirror.h"

int bm_io_submit(struct bm_mirror *m, struct bm_io *io)
{
	io->nseg = 0; /* borrowed pieces: only bm_ra_read sets them */
	if (io->type != BM_IO_FLUSH) {
		if (io->offset > m->size || io->length > m->size - io->offset)
			return bm_error(io->type == BM_IO_READ ? EINVAL : ENOSPC,
			                "request beyond the end of the mirror");
		if ((io->type == BM_IO_READ || io->type == BM_IO_WRITE) &&
		    io->length > BM_MAX_IO)
			return bm_error(EINVAL, "request larger than %u bytes",
			                BM_MAX_IO);
	}
	if (io->length == 0 && io->type != BM_IO_FLUSH) {
		io->done(io, 0);
		return 0;
	}
	switch (io->type) {
	case BM_IO_READ:
		if (atomic_load(&m->balance) == BM_BALANCE_STREAM &&
		    bm_ra_read(m, io))
			return 0;
		return bm_io_read_direct(m, io);
	case BM_IO_WRITE:
	case BM_IO_TRIM:
	case BM_IO_WRITE_ZEROES:
	case BM_IO_FLUSH:
		return bm_compio_write(m, io, bm_ra_invalidate);
	}
	return bm_error(EINVAL, "unknown request type %d", (int)io->type);
}

void bm_io_release(struct bm_io *io)
{
	if (io->nseg)
		bm_ra_release(io->seg, io->nseg);
	io->nseg = 0;
}
