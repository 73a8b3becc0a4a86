/* Lease encoding: round trip of every field, the fixed layout lease.h
 * documents, and rejection of every kind of damage. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "crc32c.h"
#include "error.h"
#include "lease.h"

static struct bm_lease sample(void)
{
	struct bm_lease l = {0};

	l.version = BM_LEASE_VERSION;
	l.state = BM_LEASE_ACTIVE;
	l.owner_id = 0x0102030405060708ull;
	l.seq = 123456789;
	l.mirror_id = 0x1122334455667788ull;
	l.time_ms = 1796000000000ull;
	l.pid = 4242;
	l.interval_ms = 1000;
	strcpy(l.host, "node-a.example");
	strcpy(l.name, "gm0");
	for (int i = 0; i < 16; i++)
		l.boot_id[i] = (uint8_t)(0xa0 + i);
	l.pid_ns = 4026531836ull;
	return l;
}

/* Recomputes the crc after a test changed a byte on purpose. */
static void reseal(uint8_t *buf)
{
	uint32_t crc = bm_crc32c(0, buf, BM_LEASE_USED - 4);
	buf[BM_LEASE_USED - 4] = (uint8_t)crc;
	buf[BM_LEASE_USED - 3] = (uint8_t)(crc >> 8);
	buf[BM_LEASE_USED - 2] = (uint8_t)(crc >> 16);
	buf[BM_LEASE_USED - 1] = (uint8_t)(crc >> 24);
}

static int decode_err(const uint8_t *buf, const char *want)
{
	struct bm_lease l;
	int err = bm_lease_decode(buf, BM_LEASE_SIZE, &l);

	if (want && !strstr(bm_last_error(), want)) {
		fprintf(stderr, "message '%s' does not say '%s'\n",
		        bm_last_error(), want);
		return 1;
	}
	return err;
}

int main(void)
{
	static uint8_t buf[BM_LEASE_SIZE], copy[BM_LEASE_SIZE];
	struct bm_lease l = sample(), out;

	/* round trip */
	bm_lease_encode(&l, buf);
	CHECK_EQ(bm_lease_decode(buf, sizeof(buf), &out), 0);
	CHECK(memcmp(&l, &out, sizeof(l)) == 0);
	l.state = BM_LEASE_CLEAN;
	bm_lease_encode(&l, buf);
	CHECK_EQ(bm_lease_decode(buf, sizeof(buf), &out), 0);
	CHECK_EQ(out.state, BM_LEASE_CLEAN);

	/* fixed offsets, little-endian (lease.h's table) */
	l = sample();
	bm_lease_encode(&l, buf);
	CHECK(memcmp(buf, "BLKMIRROR-LEASE", 16) == 0);
	CHECK_EQ(buf[16], 1);                  /* version */
	CHECK_EQ(buf[20], BM_LEASE_ACTIVE);    /* state */
	CHECK_EQ(buf[24], 0x08);               /* owner, low byte first */
	CHECK_EQ(buf[31], 0x01);
	CHECK_EQ(buf[32], 123456789 & 0xff);   /* seq */
	CHECK_EQ(buf[40], 0x88);               /* mirror id */
	CHECK_EQ(buf[56], 4242 & 0xff);        /* pid */
	CHECK_EQ(buf[168], 0xa0);              /* boot id */
	CHECK_EQ(buf[183], 0xaf);
	CHECK_EQ(buf[184], 4026531836ull & 0xff); /* pid namespace */
	CHECK_EQ(buf[192], 0);                 /* reserved from here */
	CHECK_EQ(buf[57], 4242 >> 8);
	CHECK_EQ(buf[60], 1000 & 0xff);        /* interval */
	CHECK(strcmp((char *)buf + 64, "node-a.example") == 0);
	CHECK(strcmp((char *)buf + 136, "gm0") == 0);
	for (size_t i = BM_LEASE_USED; i < BM_LEASE_SIZE; i++)
		if (buf[i])
			CHECK(!"bytes past the crc are zero");

	/* the lease block sits just below the label */
	CHECK_EQ(bm_lease_offset(64ull << 20), (64ull << 20) - 8192);
	CHECK_EQ(bm_lease_offset((64ull << 20) + 100), (64ull << 20) - 8192);

	/* no lease: zeros */
	memset(copy, 0, sizeof(copy));
	CHECK_EQ(decode_err(copy, "no lease"), -ENOENT);
	/* truncated */
	CHECK_EQ(bm_lease_decode(buf, BM_LEASE_USED - 1, &out), -EINVAL);
	/* a flipped bit anywhere under the crc */
	for (size_t i = 16; i < BM_LEASE_USED; i += 37) {
		memcpy(copy, buf, sizeof(copy));
		copy[i] ^= 0x10;
		CHECK(bm_lease_decode(copy, sizeof(copy), &out) < 0);
	}
	memcpy(copy, buf, sizeof(copy));
	copy[100] ^= 1;
	CHECK_EQ(decode_err(copy, "checksum"), -EINVAL);
	/* a newer version */
	memcpy(copy, buf, sizeof(copy));
	copy[16] = 2;
	reseal(copy);
	CHECK_EQ(decode_err(copy, "version 2"), -EPROTO);
	/* each field's range, with a valid crc */
	memcpy(copy, buf, sizeof(copy));
	copy[20] = 3;
	reseal(copy);
	CHECK_EQ(decode_err(copy, "state 3"), -EINVAL);
	memcpy(copy, buf, sizeof(copy));
	memset(copy + 24, 0, 8);
	reseal(copy);
	CHECK_EQ(decode_err(copy, "owner"), -EINVAL);
	memcpy(copy, buf, sizeof(copy));
	copy[60] = 50, copy[61] = 0;
	reseal(copy);
	CHECK_EQ(decode_err(copy, "interval"), -EINVAL);
	memcpy(copy, buf, sizeof(copy));
	copy[62] = 1;   /* 65536 + 1000 ms: too long */
	reseal(copy);
	CHECK_EQ(decode_err(copy, "interval"), -EINVAL);
	memcpy(copy, buf, sizeof(copy));
	memset(copy + 64, 'h', 72);   /* not terminated */
	reseal(copy);
	CHECK_EQ(decode_err(copy, "host"), -EINVAL);
	memcpy(copy, buf, sizeof(copy));
	copy[66] = '\n';  /* not printable: would forge log lines */
	reseal(copy);
	CHECK_EQ(decode_err(copy, "host"), -EINVAL);
	memcpy(copy, buf, sizeof(copy));
	memset(copy + 64, 0, 72);     /* empty */
	reseal(copy);
	CHECK_EQ(decode_err(copy, "host"), -EINVAL);
	memcpy(copy, buf, sizeof(copy));
	copy[64 + 20] = 'x';          /* junk after the NUL */
	reseal(copy);
	CHECK_EQ(decode_err(copy, "host"), -EINVAL);
	memcpy(copy, buf, sizeof(copy));
	copy[136] = '-';              /* "-m0" is not a mirror name */
	reseal(copy);
	CHECK_EQ(decode_err(copy, "mirror name"), -EINVAL);
	memcpy(copy, buf, sizeof(copy));
	copy[300] = 1;
	reseal(copy);
	CHECK_EQ(decode_err(copy, "reserved"), -EINVAL);

	/* longest host name round-trips; longer is cut, never overflows */
	l = sample();
	memset(l.host, 'h', BM_LEASE_HOST_MAX);
	l.host[BM_LEASE_HOST_MAX] = '\0';
	bm_lease_encode(&l, buf);
	CHECK_EQ(bm_lease_decode(buf, sizeof(buf), &out), 0);
	CHECK_EQ(strlen(out.host), BM_LEASE_HOST_MAX);

	/* the holder as messages show it */
	char s[200];
	l = sample();
	bm_lease_holder_str(&l, s, sizeof(s));
	CHECK(strcmp(s, "host node-a.example, pid 4242, mirror 'gm0'") == 0);
	return check_exit();
}
