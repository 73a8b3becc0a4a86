/*
 * Little-endian fields at fixed offsets of an on-disk block (labels,
 * leases): explicit encoding, never a raw struct.
 */
#ifndef BM_LE_H
#define BM_LE_H
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void bm_put32(uint8_t *b, size_t off, uint32_t v)
{
	v = htole32(v);
	memcpy(b + off, &v, 4);
}

static inline void bm_put64(uint8_t *b, size_t off, uint64_t v)
{
	v = htole64(v);
	memcpy(b + off, &v, 8);
}

static inline uint32_t bm_get32(const uint8_t *b, size_t off)
{
	uint32_t v;
	memcpy(&v, b + off, 4);
	return le32toh(v);
}

static inline uint64_t bm_get64(const uint8_t *b, size_t off)
{
	uint64_t v;
	memcpy(&v, b + off, 8);
	return le64toh(v);
}

#endif
