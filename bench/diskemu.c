/*
 * diskemu: an nbdkit plugin that behaves like one disk, for benchmarks.
 *
 * nbdkit's rate filter is a token bucket: a disk left idle banks time and
 * then serves a burst faster than its rate.  Two such disks read in turn
 * (round-robin at one request in flight) each bank the other's turn, and
 * the pair looks twice as fast as one, which no real disk does: that is
 * exactly the effect the gmirror report is about.  diskemu has one
 * "head": requests are served one after another, each taking
 *     positioning + bytes / rate,
 * and time spent idle is lost, except that, like a real drive, it keeps
 * reading ahead into its cache while a sequential reader is between
 * requests (at most `cache` bytes).  Positioning is free for a request
 * that starts where the last ended; a forward skip of d bytes costs
 * min(d / rate, seek) (a rotating disk spins past what it skips, or seeks
 * over it); anything else costs `seek`.
 *
 *   nbdkit -U SOCK ./diskemu.so size=1G rate=80 [seek=MS] [cache=1M] [fill=SEED]
 *          [rotational=0|1] [ratefile=PATH]
 *     size   bytes (k/M/G suffixes as nbdkit parses them)
 *     rate   MiB/s for reads and writes (the head is shared)
 *     seek   milliseconds of a seek; > 0 also reports a rotating disk
 *            unless rotational=0 says otherwise
 *     rotational  what the disk announces (NBD rotational flag): 0 makes
 *            a rotating disk that does not say so (many NBD servers never
 *            set the flag, and a file never has it)
 *     cache  read-ahead cache bytes (default 1M; 0 turns it off)
 *     fill   fill with pseudo-random data from SEED (same SEED, same data),
 *            so no minute is spent writing test data first
 *     ratefile  a file whose content, when it exists, is the rate in MiB/s
 *            from then on (looked at every 100 ms): a disk that slows
 *            down, or speeds up, while it is read
 */
#define NBDKIT_API_VERSION 2
#include <errno.h>
#include <nbdkit-plugin.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static int64_t size;
static double rate_bps = 80.0 * 1024 * 1024;
static double seek_s;
static double cache_bytes = 1024 * 1024;
static uint64_t fill_seed;
static bool fill;
static int announce_rotational = -1; /* -1: seek > 0 */
static uint8_t *mem;
static char *ratefile;
static double ratefile_seen;  /* when ratefile was last looked at */

static pthread_mutex_t head_lock = PTHREAD_MUTEX_INITIALIZER;
static double head_free;     /* when the head finishes what it has queued */
static uint64_t head_pos;    /* where the last request ended */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
	struct timespec ts;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The rate ratefile says, if it exists and says one (head_lock held). */
static void follow_ratefile(double t)
{
	char text[32];
	FILE *f;

	if (!ratefile || t - ratefile_seen < 0.1)
		return;
	ratefile_seen = t;
	f = fopen(ratefile, "r");
	if (!f)
		return;
	if (fgets(text, sizeof(text), f) && atof(text) > 0)
		rate_bps = atof(text) * 1024 * 1024;
	fclose(f);
}

/* Queues a transfer on the head and waits for it to finish. */
static void service(uint32_t count, uint64_t offset, bool is_read)
{
	double t = now(), start, done, pos = 0;

	pthread_mutex_lock(&head_lock);
	follow_ratefile(t);
	start = head_free > t ? head_free : t;
	if (offset == head_pos && is_read && head_free < t) {
		/* the drive kept reading ahead while idle, up to its cache */
		double banked = t - head_free;
		if (banked > cache_bytes / rate_bps)
			banked = cache_bytes / rate_bps;
		start = t - banked;
	} else if (offset > head_pos) {
		double spin = (double)(offset - head_pos) / rate_bps;
		pos = spin < seek_s ? spin : seek_s;
	} else if (offset != head_pos) {
		pos = seek_s;
	}
	done = start + pos + (double)count / rate_bps;
	if (done < t)
		done = t;
	head_free = done;
	head_pos = offset + count;
	pthread_mutex_unlock(&head_lock);
	sleep_until(done);
}

static int diskemu_config(const char *key, const char *value)
{
	if (strcmp(key, "size") == 0) {
		size = nbdkit_parse_size(value);
		return size < 0 ? -1 : 0;
	}
	if (strcmp(key, "rate") == 0) {
		rate_bps = atof(value) * 1024 * 1024;
		if (rate_bps <= 0) {
			nbdkit_error("rate must be a positive number of MiB/s");
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "seek") == 0) {
		seek_s = atof(value) / 1000.0;
		return seek_s < 0 ? -1 : 0;
	}
	if (strcmp(key, "cache") == 0) {
		int64_t c = nbdkit_parse_size(value);
		if (c < 0)
			return -1;
		cache_bytes = (double)c;
		return 0;
	}
	if (strcmp(key, "rotational") == 0) {
		if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
			nbdkit_error("rotational must be 0 or 1");
			return -1;
		}
		announce_rotational = value[0] == '1';
		return 0;
	}
	if (strcmp(key, "ratefile") == 0) {
		free(ratefile);
		ratefile = strdup(value);
		if (!ratefile)
			nbdkit_error("out of memory");
		return ratefile ? 0 : -1;
	}
	if (strcmp(key, "fill") == 0) {
		fill = true;
		fill_seed = strtoull(value, NULL, 10) | 1;
		return 0;
	}
	nbdkit_error("unknown parameter '%s'", key);
	return -1;
}

static int diskemu_config_complete(void)
{
	if (size <= 0) {
		nbdkit_error("size= is required");
		return -1;
	}
	mem = calloc(1, (size_t)size);
	if (!mem) {
		nbdkit_error("cannot allocate %ld bytes", (long)size);
		return -1;
	}
	if (fill) {
		uint64_t x = fill_seed;
		for (int64_t i = 0; i + 8 <= size; i += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(mem + i, &x, 8);
		}
	}
	return 0;
}

static void *diskemu_open(int readonly)
{
	return mem;
}

static int64_t diskemu_get_size(void *h)
{
	return size;
}

static int diskemu_can_multi_conn(void *h)
{
	return 1;
}

static int diskemu_is_rotational(void *h)
{
	return announce_rotational >= 0 ? announce_rotational : seek_s > 0;
}

static int diskemu_pread(void *h, void *buf, uint32_t count, uint64_t offset,
                         uint32_t flags)
{
	service(count, offset, true);
	memcpy(buf, mem + offset, count);
	return 0;
}

static int diskemu_pwrite(void *h, const void *buf, uint32_t count,
                          uint64_t offset, uint32_t flags)
{
	memcpy(mem + offset, buf, count);
	service(count, offset, false);
	return 0;
}

static int diskemu_flush(void *h, uint32_t flags)
{
	return 0;
}

static int diskemu_zero(void *h, uint32_t count, uint64_t offset,
                        uint32_t flags)
{
	memset(mem + offset, 0, count);
	return 0;
}

static struct nbdkit_plugin plugin = {
	.name = "diskemu",
	.longname = "blkmirror's one-head disk emulator",
	.config = diskemu_config,
	.config_complete = diskemu_config_complete,
	.config_help = "size=SIZE rate=MIB_PER_S [seek=MS] [cache=SIZE] [fill=SEED] "
	               "[rotational=0|1] [ratefile=PATH]",
	.open = diskemu_open,
	.get_size = diskemu_get_size,
	.can_multi_conn = diskemu_can_multi_conn,
	.is_rotational = diskemu_is_rotational,
	.pread = diskemu_pread,
	.pwrite = diskemu_pwrite,
	.flush = diskemu_flush,
	.zero = diskemu_zero,
};

NBDKIT_REGISTER_PLUGIN(plugin)
