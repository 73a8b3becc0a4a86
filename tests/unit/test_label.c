/* Label encoding: round trip of every field, and rejection of every kind
 * of damage with a message that names it. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "crc32c.h"
#include "error.h"
#include "label.h"

static struct bm_label sample(void)
{
	struct bm_label l = {0};

	l.version = BM_LABEL_VERSION;
	strcpy(l.name, "gm0");
	l.mirror_id = 0x1122334455667788ull;
	l.component_id = 0x8877665544332211ull;
	l.genid = 7;
	l.syncid = 9;
	l.seq = 42;
	l.mirror_flags = BM_MF_NOAUTOSYNC;
	l.component_flags = BM_CF_DIRTY | BM_CF_SYNCHRONIZING;
	l.balance = BM_BALANCE_SPLIT;
	l.slice = 65536;
	l.priority = 3;
	l.sector_size = 512;
	l.component_size = 64ull << 20;
	l.data_size = bm_data_area(l.component_size);
	l.sync_offset = 1 << 20;
	l.bitmap_offset = bm_lease_offset(l.component_size) - 4096;
	l.bitmap_size = 4096;
	l.bitmap_chunk = 65536;
	l.ncomponents = 2;
	l.last_write = 1796061600; /* 2026-11-30 18:00:00 UTC */
	l.member_id[0] = l.component_id;
	l.member_id[1] = 0x0102030405060708ull;
	l.missed = 2;
	l.events = 11;
	return l;
}

/* Re-seals a modified buffer so that only the field check can fail. */
static void reseal(uint8_t *b)
{
	uint32_t crc = bm_crc32c(0, b, BM_LABEL_USED - 4);
	memcpy(b + BM_LABEL_USED - 4, &crc, 4); /* little-endian host */
}

static void expect_reject(uint8_t *b, const char *needle)
{
	struct bm_label out;
	int err = bm_label_decode(b, BM_LABEL_SIZE, &out);

	CHECK(err < 0);
	if (!strstr(bm_last_error(), needle)) {
		fprintf(stderr, "message '%s' lacks '%s'\n", bm_last_error(),
		        needle);
		CHECK(0);
	}
}

int main(void)
{
	uint8_t buf[BM_LABEL_SIZE], b[BM_LABEL_SIZE];
	struct bm_label l = sample(), out;

	bm_label_encode(&l, buf);
	CHECK_EQ(bm_label_decode(buf, sizeof(buf), &out), 0);
	CHECK(memcmp(&l, &out, sizeof(l)) == 0);
	/* Fixed offsets, little-endian: genid at 72, name at 24. */
	CHECK_EQ(buf[72], 7);
	CHECK_EQ(buf[73], 0);
	CHECK(memcmp(buf + 24, "gm0", 4) == 0);
	CHECK(memcmp(buf, "BLKMIRROR-LABEL", 16) == 0);
	for (size_t i = BM_LABEL_USED; i < BM_LABEL_SIZE; i++)
		CHECK_EQ(buf[i], 0);

	/* Layout helpers. */
	CHECK_EQ(bm_label_offset(64ull << 20), (64ull << 20) - 4096);
	CHECK_EQ(bm_label_offset((64ull << 20) + 1000), (64ull << 20) - 4096);
	CHECK_EQ(bm_data_area(64ull << 20), (63ull << 20));
	CHECK_EQ(bm_data_area(1 << 20), 0);

	/* Names. */
	CHECK(bm_name_valid("gm0"));
	CHECK(bm_name_valid("a.b_c-d"));
	CHECK(!bm_name_valid(""));
	CHECK(!bm_name_valid(".hidden"));
	CHECK(!bm_name_valid("-opt"));
	CHECK(!bm_name_valid("a/b"));
	CHECK(!bm_name_valid("0123456789abcdef0123456789abcdef"));
	CHECK(bm_name_valid("0123456789abcdef0123456789abcde"));

	/* No label at all. */
	memset(b, 0, sizeof(b));
	CHECK_EQ(bm_label_decode(b, sizeof(b), &out), -ENOENT);
	/* Truncated. */
	CHECK(bm_label_decode(buf, 100, &out) < 0);
	/* Any flipped bit in the covered area is caught by the crc. */
	for (size_t i = 16; i < BM_LABEL_USED; i += 7) {
		memcpy(b, buf, sizeof(b));
		b[i] ^= 0x10;
		expect_reject(b, ""); /* any message: version, crc or a field */
	}
	memcpy(b, buf, sizeof(b));
	b[100] ^= 1;
	expect_reject(b, "checksum mismatch");
	/* Newer version. */
	memcpy(b, buf, sizeof(b));
	b[16] = 5;
	reseal(b);
	expect_reject(b, "version 5");
	/* Version 4 (the current one) says its writer caps a copy's events;
	 * a version 3 label reads the same fields and does not. */
	CHECK_EQ(buf[16], 4);
	memcpy(b, buf, sizeof(b));
	b[16] = 3;
	reseal(b);
	CHECK_EQ(bm_label_decode(b, sizeof(b), &out), 0);
	CHECK_EQ(out.version, 3);
	CHECK_EQ(out.events, 11);
	CHECK(!bm_label_events_capped(&out));
	CHECK_EQ(bm_label_decode(buf, sizeof(buf), &out), 0);
	CHECK(bm_label_events_capped(&out));
	/* Version 3's events at 400. */
	CHECK_EQ(buf[400], 11);
	CHECK_EQ(buf[401], 0);
	/* A version 2 label: events zero, read as "unknown" ... */
	memcpy(b, buf, sizeof(b));
	b[16] = 2;
	memset(b + 400, 0, 8);
	reseal(b);
	CHECK_EQ(bm_label_decode(b, sizeof(b), &out), 0);
	CHECK_EQ(out.version, 2);
	CHECK_EQ(out.events, 0);
	CHECK_EQ(out.missed, 2);
	/* ... and version 2 with anything there is damaged. */
	b[403] = 1;
	reseal(b);
	expect_reject(b, "reserved");
	/* Version 2's fields at fixed offsets: last_write 256, missed 264,
	 * member ids from 272. */
	CHECK_EQ(buf[256], 1796061600u & 0xff);
	CHECK_EQ(buf[264], 2);
	CHECK_EQ(buf[272 + 8], 0x08);
	/* A version 1 label: those bytes zero, read as "unknown". */
	memcpy(b, buf, sizeof(b));
	b[16] = 1;
	memset(b + 256, 0, 408 - 256);
	reseal(b);
	CHECK_EQ(bm_label_decode(b, sizeof(b), &out), 0);
	CHECK_EQ(out.version, 1);
	CHECK_EQ(out.last_write, 0);
	CHECK_EQ(out.missed, 0);
	CHECK_EQ(out.member_id[0], 0);
	CHECK_EQ(out.genid, 7);
	/* ... and version 1 with anything there is damaged. */
	b[300] = 1;
	reseal(b);
	expect_reject(b, "reserved");
	/* A missed member that the label does not name. */
	memcpy(b, buf, sizeof(b));
	b[264] = 4;
	reseal(b);
	expect_reject(b, "names no member 2");
	memcpy(b, buf, sizeof(b));
	b[266] = 1;
	reseal(b);
	expect_reject(b, "missed-writes mask");
	memcpy(b, buf, sizeof(b));
	b[420] = 1;
	reseal(b);
	expect_reject(b, "reserved");
	/* Each field's range, with a valid crc. */
	struct { size_t off; uint8_t val; const char *msg; } bad[] = {
		{104, 9, "balance"},         /* balance 9 */
		{108, 0xff, "slice"},        /* slice not a power of two */
		{116, 0x01, "sector size"},  /* 513 */
		{96, 0x80, "mirror flags"},
		{100, 0x80, "component flags"},
		{164, 0, "component count"},
		{200, 1, "reserved"},
		{24, '/', "name"},
		{143, 0x7f, "sync offset"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(b, buf, sizeof(b));
		b[bad[i].off] = bad[i].val;
		reseal(b);
		expect_reject(b, bad[i].msg);
	}
	/* Unterminated name. */
	memcpy(b, buf, sizeof(b));
	memset(b + 24, 'a', 32);
	reseal(b);
	expect_reject(b, "not terminated");
	/* data size larger than the component. */
	memcpy(b, buf, sizeof(b));
	b[127] = 0x01;
	reseal(b);
	expect_reject(b, "sizes are inconsistent");

	/* Format names every field. */
	char text[2048];
	bm_label_format(&l, "", text, sizeof(text));
	CHECK(strstr(text, "Flags: DIRTY, SYNCHRONIZING") != NULL);
	CHECK(strstr(text, "MirrorFlags: NOAUTOSYNC") != NULL);
	CHECK(strstr(text, "Balance: split") != NULL);
	CHECK(strstr(text, "GenID: 7") != NULL);
	CHECK(strstr(text, "LastWrite: 2026-11-30 18:00:00 UTC") != NULL);
	CHECK(strstr(text, "MissedWrites: 0102030405060708") != NULL);
	CHECK(strstr(text, "Events: 11") != NULL);
	return check_exit();
}
