/*
 * The size a file system believes its device has, read from its superblock
 * (untrusted bytes: a pure function, fuzzed by tests/fuzz/fuzz_fs_size.c).
 * libblkid 2.38 names a file system but does not report its size, and
 * label must refuse a mirror smaller than the file system it would carry.
 */
#ifndef BM_FS_SIZE_H
#define BM_FS_SIZE_H
#include <stddef.h>
#include <stdint.h>

/* How many bytes of the device's start bm_fs_size() looks at. */
#define BM_FS_SIZE_HEAD (128u * 1024u)

/*
 * head: the first len bytes of the device.  Recognizes ext2/3/4, XFS and
 * btrfs.  Returns 0 with the file system's size in bytes and its kind
 * ("ext4"...), -ENOENT when none of these is there or its size fields are
 * implausible.
 */
int bm_fs_size(const uint8_t *head, size_t len, uint64_t *bytes,
               const char **kind);

#endif
