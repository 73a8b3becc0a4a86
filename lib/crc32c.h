/* CRC-32C (Castagnoli), as used by iSCSI, ext4 and btrfs metadata. */
#ifndef BM_CRC32C_H
#define BM_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* crc32c of len bytes, starting from crc (0 for a fresh checksum). */
uint32_t bm_crc32c(uint32_t crc, const void *data, size_t len);

#endif
