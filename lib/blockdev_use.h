/* Who uses a block device (blockdev_use.c). */
#ifndef BM_BLOCKDEV_USE_H
#define BM_BLOCKDEV_USE_H
#include <stddef.h>

/* Who uses the block device dev: 0 when nobody (besides us); else 1 with
 * one line in what: where it is mounted, which device sits on it, or
 * which process holds it open. */
int bm_blockdev_in_use(const char *dev, char *what, size_t len);

#endif
