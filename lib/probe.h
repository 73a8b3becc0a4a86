/*
 * Looks at components before they are labeled, so that nothing an
 * administrator types loses data: what they already hold (libblkid), and
 * whether two of them are one piece of storage named twice.
 */
#ifndef BM_PROBE_H
#define BM_PROBE_H
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct bm_content {
	char what[160];      /* "a file system (ext4)", "a partition table (gpt)" */
	uint64_t fs_bytes;   /* the file system's own size, 0 when unknown */
	const char *fs_kind; /* set with fs_bytes */
};

/*
 * Probes the first and last MiB of an open component, read through its
 * backend (so files, block devices and NBD exports alike), with libblkid
 * on a sparse memory file of the component's size.  Returns 1 when it holds
 * a file system, partition table, RAID/LVM/crypto signature or other known
 * signature (described in out), 0 when none was found, -errno on a read
 * error (bm_last_error() says it).  timeout_ms > 0: a component that does
 * not answer a read within it fails the probe (-ETIMEDOUT); 0: no deadline.
 */
int bm_probe_content(struct bm_backend *be, struct bm_content *out,
                     long timeout_ms);

/*
 * Identity the kernel can tell, before anything is opened: one inode through
 * two paths, one block device through two nodes, a loop device and its
 * backing file, two loop devices over one file.  Returns 1 with the pair
 * in *a < *b, else 0.  Paths that stat() cannot see (URIs) are skipped.
 */
int bm_probe_same_identity(const char *const *paths, size_t n, size_t *a,
                           size_t *b);

/*
 * Identity by content, for what the kernel cannot tell (NBD exports, device
 * mapper stacks): a random token is written through each component to the
 * block BM_IDPROBE_FROM_END bytes before its end (label.h) and read back
 * with O_DIRECT through every other component of the same size; what was
 * in the block is restored.  Returns 1 with the pair, 0, or -errno.
 * timeout_ms > 0: each request's deadline (a running mirror's io-timeout:
 * insert never waits for ever on a component that hangs); 0: none.
 */
int bm_probe_same_content(struct bm_backend **be, size_t n, size_t *a,
                          size_t *b, long timeout_ms);

#endif
