/*
 * Label encoding and validation.  Every field is written at a fixed offset in
 * little-endian order; the decoder trusts nothing it reads: magic, version,
 * crc, then every field's range, so that a damaged or hostile label is
 * reported with what is wrong and never used.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "le.h"
#include "crc32c.h"
#include "error.h"
#include "label.h"

/* Field offsets in the encoded label. */
enum {
	OFF_MAGIC = 0,         /* 16 bytes */
	OFF_VERSION = 16,
	OFF_USED = 20,
	OFF_NAME = 24,         /* 32 bytes, NUL padded */
	OFF_MIRROR_ID = 56,
	OFF_COMPONENT_ID = 64,
	OFF_GENID = 72,
	OFF_SYNCID = 80,
	OFF_SEQ = 88,
	OFF_MIRROR_FLAGS = 96,
	OFF_COMPONENT_FLAGS = 100,
	OFF_BALANCE = 104,
	OFF_SLICE = 108,
	OFF_PRIORITY = 112,
	OFF_SECTOR_SIZE = 116,
	OFF_DATA_SIZE = 120,
	OFF_COMPONENT_SIZE = 128,
	OFF_SYNC_OFFSET = 136,
	OFF_BITMAP_OFFSET = 144,
	OFF_BITMAP_SIZE = 152,
	OFF_BITMAP_CHUNK = 160,
	OFF_NCOMPONENTS = 164,
	OFF_END_OF_FIELDS = 168, /* reserved zeros up to OFF_LAST_WRITE */
	/* version 2 (label.h); zeros in version 1 */
	OFF_LAST_WRITE = 256,
	OFF_MISSED = 264,
	OFF_MEMBER_ID = 272,     /* BM_MAX_COMPONENTS u64s */
	OFF_END_OF_V2 = OFF_MEMBER_ID + 8 * BM_MAX_COMPONENTS,
	/* version 3 */
	OFF_EVENTS = OFF_END_OF_V2,
	OFF_END_OF_V3 = OFF_EVENTS + 8, /* zeros to the crc (version 4: the
	                                   same fields, label.h) */
	OFF_CRC = BM_LABEL_USED - 4,
};
_Static_assert(OFF_END_OF_FIELDS <= OFF_LAST_WRITE, "label fields overlap");
_Static_assert(OFF_END_OF_V3 <= OFF_CRC, "label fields overlap the crc");
_Static_assert(sizeof(BM_LABEL_MAGIC) == 16, "magic is 16 bytes");
_Static_assert(BM_LABEL_USED <= BM_LABEL_SIZE, "label fits its block");


uint64_t bm_label_offset(uint64_t component_size)
{
	return (component_size & ~(uint64_t)4095) - BM_LABEL_SIZE;
}

uint64_t bm_lease_offset(uint64_t component_size)
{
	return bm_label_offset(component_size) - BM_LEASE_SIZE;
}

uint64_t bm_data_area(uint64_t component_size)
{
	uint64_t s = component_size & ~(uint64_t)4095;
	return s < BM_MIN_COMPONENT_SIZE ? 0 : s - BM_META_SIZE;
}

bool bm_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > BM_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

void bm_label_encode(const struct bm_label *l, uint8_t out[BM_LABEL_SIZE])
{
	memset(out, 0, BM_LABEL_SIZE);
	memcpy(out + OFF_MAGIC, BM_LABEL_MAGIC, 16);
	/* 4 only from a writer that capped the events (label.h): an older
	 * label rewritten as it was read (an offline priority change) stays
	 * 3, the layout of both */
	bm_put32(out, OFF_VERSION, l->version >= 4 ? BM_LABEL_VERSION : 3);
	bm_put32(out, OFF_USED, BM_LABEL_USED);
	memcpy(out + OFF_NAME, l->name, strnlen(l->name, BM_NAME_MAX));
	bm_put64(out, OFF_MIRROR_ID, l->mirror_id);
	bm_put64(out, OFF_COMPONENT_ID, l->component_id);
	bm_put64(out, OFF_GENID, l->genid);
	bm_put64(out, OFF_SYNCID, l->syncid);
	bm_put64(out, OFF_SEQ, l->seq);
	bm_put32(out, OFF_MIRROR_FLAGS, l->mirror_flags);
	bm_put32(out, OFF_COMPONENT_FLAGS, l->component_flags);
	bm_put32(out, OFF_BALANCE, l->balance);
	bm_put32(out, OFF_SLICE, l->slice);
	bm_put32(out, OFF_PRIORITY, l->priority);
	bm_put32(out, OFF_SECTOR_SIZE, l->sector_size);
	bm_put64(out, OFF_DATA_SIZE, l->data_size);
	bm_put64(out, OFF_COMPONENT_SIZE, l->component_size);
	bm_put64(out, OFF_SYNC_OFFSET, l->sync_offset);
	bm_put64(out, OFF_BITMAP_OFFSET, l->bitmap_offset);
	bm_put64(out, OFF_BITMAP_SIZE, l->bitmap_size);
	bm_put32(out, OFF_BITMAP_CHUNK, l->bitmap_chunk);
	bm_put32(out, OFF_NCOMPONENTS, l->ncomponents);
	bm_put64(out, OFF_LAST_WRITE, l->last_write);
	bm_put32(out, OFF_MISSED, l->missed);
	for (int i = 0; i < BM_MAX_COMPONENTS; i++)
		bm_put64(out, OFF_MEMBER_ID + 8 * i, l->member_id[i]);
	bm_put64(out, OFF_EVENTS, l->events);
	bm_put32(out, OFF_CRC, bm_crc32c(0, out, OFF_CRC));
}

static bool power_of_two(uint64_t v)
{
	return v && !(v & (v - 1));
}

int bm_label_decode(const uint8_t *buf, size_t len, struct bm_label *l)
{
	uint32_t crc, want;

	if (len < BM_LABEL_USED)
		return bm_error(EINVAL, "label is truncated (%zu bytes, need %u)",
		                len, BM_LABEL_USED);
	if (memcmp(buf + OFF_MAGIC, BM_LABEL_MAGIC, 16) != 0)
		return bm_error(ENOENT, "no blkmirror label");
	memset(l, 0, sizeof(*l));
	l->version = bm_get32(buf, OFF_VERSION);
	if (l->version == 0 || l->version > BM_LABEL_VERSION)
		return bm_error(EPROTO,
		                "label version %u is not one this blkmirror reads "
		                "(it reads 1..%u); use a newer blkmirror",
		                l->version, BM_LABEL_VERSION);
	if (bm_get32(buf, OFF_USED) != BM_LABEL_USED)
		return bm_error(EINVAL, "label header size %u is wrong (want %u)",
		                bm_get32(buf, OFF_USED), BM_LABEL_USED);
	want = bm_get32(buf, OFF_CRC);
	crc = bm_crc32c(0, buf, OFF_CRC);
	if (crc != want)
		return bm_error(EINVAL,
		                "label checksum mismatch (stored %08x, computed "
		                "%08x): the label is damaged", want, crc);
	if (memchr(buf + OFF_NAME, '\0', BM_NAME_MAX + 1) == NULL)
		return bm_error(EINVAL, "label mirror name is not terminated");
	/* up to the terminator only: bytes after it (never written by
	 * encode) would make the same label decode to different structs */
	memset(l->name, 0, sizeof(l->name));
	memcpy(l->name, buf + OFF_NAME,
	       strnlen((const char *)buf + OFF_NAME, BM_NAME_MAX + 1));
	if (!bm_name_valid(l->name))
		return bm_error(EINVAL, "label mirror name is not valid");
	l->mirror_id = bm_get64(buf, OFF_MIRROR_ID);
	l->component_id = bm_get64(buf, OFF_COMPONENT_ID);
	l->genid = bm_get64(buf, OFF_GENID);
	l->syncid = bm_get64(buf, OFF_SYNCID);
	l->seq = bm_get64(buf, OFF_SEQ);
	l->mirror_flags = bm_get32(buf, OFF_MIRROR_FLAGS);
	l->component_flags = bm_get32(buf, OFF_COMPONENT_FLAGS);
	l->balance = bm_get32(buf, OFF_BALANCE);
	l->slice = bm_get32(buf, OFF_SLICE);
	l->priority = bm_get32(buf, OFF_PRIORITY);
	l->sector_size = bm_get32(buf, OFF_SECTOR_SIZE);
	l->data_size = bm_get64(buf, OFF_DATA_SIZE);
	l->component_size = bm_get64(buf, OFF_COMPONENT_SIZE);
	l->sync_offset = bm_get64(buf, OFF_SYNC_OFFSET);
	l->bitmap_offset = bm_get64(buf, OFF_BITMAP_OFFSET);
	l->bitmap_size = bm_get64(buf, OFF_BITMAP_SIZE);
	l->bitmap_chunk = bm_get32(buf, OFF_BITMAP_CHUNK);
	l->ncomponents = bm_get32(buf, OFF_NCOMPONENTS);
	if (l->version >= 2) {
		l->last_write = bm_get64(buf, OFF_LAST_WRITE);
		l->missed = bm_get32(buf, OFF_MISSED);
		for (int i = 0; i < BM_MAX_COMPONENTS; i++)
			l->member_id[i] = bm_get64(buf, OFF_MEMBER_ID + 8 * i);
	}
	if (l->version >= 3)
		l->events = bm_get64(buf, OFF_EVENTS);

	if (l->mirror_flags & ~BM_MF_ALL)
		return bm_error(EINVAL, "label has unknown mirror flags %#x",
		                l->mirror_flags);
	if (l->component_flags & ~BM_CF_ALL)
		return bm_error(EINVAL, "label has unknown component flags %#x",
		                l->component_flags);
	if (l->balance >= BM_BALANCE_COUNT)
		return bm_error(EINVAL, "label balance %u is unknown", l->balance);
	if (!power_of_two(l->slice) || l->slice < 512 || l->slice > BM_MAX_IO)
		return bm_error(EINVAL, "label slice %u is not a power of two "
		                "from 512 to %u", l->slice, BM_MAX_IO);
	if (l->sector_size != 512 && l->sector_size != 4096)
		return bm_error(EINVAL, "label sector size %u is not 512 or 4096",
		                l->sector_size);
	if (l->component_size < BM_MIN_COMPONENT_SIZE ||
	    l->data_size == 0 || l->data_size > bm_data_area(l->component_size) ||
	    l->data_size % 4096)
		return bm_error(EINVAL, "label sizes are inconsistent (data %" PRIu64
		                ", component %" PRIu64 ")", l->data_size,
		                l->component_size);
	if (l->sync_offset > l->data_size)
		return bm_error(EINVAL, "label sync offset %" PRIu64
		                " is past the data size %" PRIu64, l->sync_offset,
		                l->data_size);
	if (l->bitmap_size > BM_META_SIZE - BM_LABEL_SIZE - BM_LEASE_SIZE ||
	    (l->bitmap_size && l->bitmap_offset >
	                           bm_lease_offset(l->component_size) -
	                           l->bitmap_size))
		return bm_error(EINVAL, "label bitmap area is out of place");
	if (l->ncomponents == 0 || l->ncomponents > BM_MAX_COMPONENTS)
		return bm_error(EINVAL, "label component count %u is out of range",
		                l->ncomponents);
	for (size_t i = OFF_END_OF_FIELDS; i < OFF_CRC; i++)
		if (buf[i] && (l->version < 2 || i < OFF_LAST_WRITE ||
		               i >= (l->version < 3 ? OFF_END_OF_V2
		                                    : OFF_END_OF_V3)))
			return bm_error(EINVAL, "label reserved bytes are not zero");
	for (int i = 0; i < BM_MAX_COMPONENTS; i++)
		if ((l->missed & (1u << i)) && l->member_id[i] == 0)
			return bm_error(EINVAL, "label says member %d missed "
			                "writes but names no member %d", i, i);
	if (BM_MAX_COMPONENTS < 32 && (l->missed >> BM_MAX_COMPONENTS))
		return bm_error(EINVAL, "label missed-writes mask %#x names "
		                "members past %d", l->missed, BM_MAX_COMPONENTS);
	return 0;
}

static void flags_str(uint32_t f, const char *const names[], size_t n,
                      char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (f & (1u << i))
			used += snprintf(buf + used, used < len ? len - used : 0,
			                 "%s%s", used ? ", " : "", names[i]);
	if (used == 0)
		snprintf(buf, len, "NONE");
}

void bm_component_flags_str(uint32_t f, char *buf, size_t len)
{
	static const char *const names[] = {"DIRTY", "SYNCHRONIZING",
	                                    "FORCE_SYNC", "INACTIVE"};
	flags_str(f, names, 4, buf, len);
}

void bm_mirror_flags_str(uint32_t f, char *buf, size_t len)
{
	static const char *const names[] = {"NOAUTOSYNC", "NOFAILSYNC"};
	flags_str(f, names, 2, buf, len);
}

int bm_label_format(const struct bm_label *l, const char *in, char *buf,
                    size_t len)
{
	char mf[64], cf[96], when[64], missed[BM_MAX_COMPONENTS * 17 + 8];
	size_t used = 0;

	bm_mirror_flags_str(l->mirror_flags, mf, sizeof(mf));
	bm_component_flags_str(l->component_flags, cf, sizeof(cf));
	bm_label_time_str(l->last_write, when, sizeof(when));
	missed[0] = '\0';
	for (int i = 0; i < BM_MAX_COMPONENTS; i++)
		if (l->missed & (1u << i))
			used += (size_t)snprintf(missed + used, sizeof(missed) - used,
			                         "%s%016" PRIx64, used ? " " : "",
			                         l->member_id[i]);
	return snprintf(buf, len,
	    "%sName: %s\n%sVersion: %u\n%sMirrorID: %016" PRIx64 "\n"
	    "%sComponentID: %016" PRIx64 "\n%sGenID: %" PRIu64 "\n"
	    "%sSyncID: %" PRIu64 "\n%sSeq: %" PRIu64 "\n%sMirrorFlags: %s\n"
	    "%sFlags: %s\n%sBalance: %s\n%sSlice: %u\n%sPriority: %u\n"
	    "%sSectorsize: %u\n%sMediasize: %" PRIu64 "\n"
	    "%sComponentsize: %" PRIu64 "\n%sSyncOffset: %" PRIu64 "\n"
	    "%sBitmap: %" PRIu64 " bytes at %" PRIu64 ", chunk %u\n"
	    "%sComponents: %u\n%sLastWrite: %s\n%sMissedWrites: %s\n"
	    "%sEvents: %" PRIu64 "\n",
	    in, l->name, in, l->version, in, l->mirror_id, in, l->component_id,
	    in, l->genid, in, l->syncid, in, l->seq, in, mf, in, cf, in,
	    bm_balance_name((int)l->balance) ? bm_balance_name((int)l->balance)
	                                     : "?",
	    in, l->slice, in, l->priority, in, l->sector_size, in, l->data_size,
	    in, l->component_size, in, l->sync_offset, in, l->bitmap_size,
	    l->bitmap_offset, l->bitmap_chunk, in, l->ncomponents, in, when,
	    in, used ? missed : "none", in, l->events);
}

void bm_label_time_str(uint64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t == 0 || t > (uint64_t)INT32_MAX * 4 || !gmtime_r(&tt, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "unknown");
}
