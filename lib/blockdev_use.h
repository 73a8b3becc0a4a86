/* Who uses a block device (blockdev_use.c). */
#ifndef BM_BLOCKDEV_USE_H
#define BM_BLOCKDEV_USE_H
#include <stdbool.h>
#include <stddef.h>

/* Who uses the block device dev: 0 when nobody (besides us); else 1 with
 * one line in what: where it is mounted, which device sits on it, swap,
 * or (openers: a scan of every process's descriptors that may wait up to
 * a second, and on a hung file system; not for a server's threads) which
 * process holds it open. */
int bm_blockdev_in_use(const char *dev, char *what, size_t len,
                       bool openers);

#endif
