/*
 * The lease (lease.h has the format and the protocol): its encoding, the
 * check a starting server makes, and the renewal threads of a running one.
 *
 * Why every component, not only NBD ones: files and block devices take a
 * flock() too, but that lock lives in one kernel; a LUN, a multi-attach
 * disk or an NFS file seen from two hosts has no lock between them.  The
 * lease costs one 4 KiB read and one 4 KiB write per component per second.
 *
 * Why one renewal thread per component: lease I/O waits (with a deadline)
 * for the component, and a component that hangs must not delay the
 * renewal of the others, or a starting server would take their leases over
 * from a live holder.  For the same reason the interval a holder promises
 * in its lease grows with the time its lease I/O took (1 s + twice the last
 * renewal's I/O time), so a slow but live holder is waited for longer.
 *
 * Renewal reads the block before writing it: anything there that is not
 * this server's lease (another owner id, garbage) means someone else now
 * writes the component, so it is failed out at once and its lease is never
 * written again (nor marked clean at stop); an I/O error or a timeout is
 * only logged (the engine's own checks deal with a component that stopped
 * answering).  The engine never fails its last ACTIVE component: that one
 * has its backend aborted where the backend can (its I/O stops, clients
 * get errors) and the log says two servers may write it where it cannot.
 *
 * A starting server does not write anything until bm_lease_check() has
 * decided; it watches every contested lease at once (one wait, not one per
 * component) and refuses as soon as one changes.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "le.h"
#include "crc32c.h"
#include "error.h"
#include "lease.h"
#include "mirror.h"

/* Field offsets in the encoded lease. */
enum {
	OFF_MAGIC = 0,      /* 16 bytes */
	OFF_VERSION = 16,
	OFF_STATE = 20,
	OFF_OWNER = 24,
	OFF_SEQ = 32,
	OFF_MIRROR_ID = 40,
	OFF_TIME = 48,
	OFF_PID = 56,
	OFF_INTERVAL = 60,
	OFF_HOST = 64,      /* BM_LEASE_HOST_MAX + 1 bytes */
	OFF_NAME = 136,     /* BM_NAME_MAX + 1 bytes */
	OFF_BOOT_ID = 168,  /* 16 bytes */
	OFF_PID_NS = 184,
	OFF_END_OF_FIELDS = 192,
	OFF_CRC = BM_LEASE_USED - 4,
};
_Static_assert(OFF_HOST + BM_LEASE_HOST_MAX + 1 == OFF_NAME, "host field");
_Static_assert(OFF_NAME + BM_NAME_MAX + 1 == OFF_BOOT_ID, "name field");
_Static_assert(OFF_PID_NS + 8 == OFF_END_OF_FIELDS, "pid namespace field");
_Static_assert(OFF_END_OF_FIELDS <= OFF_CRC, "lease fields overlap the crc");
_Static_assert(sizeof(BM_LEASE_MAGIC) == 16, "magic is 16 bytes");
_Static_assert(BM_LEASE_USED <= BM_LEASE_SIZE, "lease fits its block");


void bm_lease_encode(const struct bm_lease *l, uint8_t out[BM_LEASE_SIZE])
{
	memset(out, 0, BM_LEASE_SIZE);
	memcpy(out + OFF_MAGIC, BM_LEASE_MAGIC, 16);
	bm_put32(out, OFF_VERSION, BM_LEASE_VERSION);
	bm_put32(out, OFF_STATE, l->state);
	bm_put64(out, OFF_OWNER, l->owner_id);
	bm_put64(out, OFF_SEQ, l->seq);
	bm_put64(out, OFF_MIRROR_ID, l->mirror_id);
	bm_put64(out, OFF_TIME, l->time_ms);
	bm_put32(out, OFF_PID, l->pid);
	bm_put32(out, OFF_INTERVAL, l->interval_ms);
	memcpy(out + OFF_HOST, l->host, strnlen(l->host, BM_LEASE_HOST_MAX));
	memcpy(out + OFF_NAME, l->name, strnlen(l->name, BM_NAME_MAX));
	memcpy(out + OFF_BOOT_ID, l->boot_id, sizeof(l->boot_id));
	bm_put64(out, OFF_PID_NS, l->pid_ns);
	bm_put32(out, OFF_CRC, bm_crc32c(0, out, OFF_CRC));
}

/* A NUL-terminated field of printable ASCII (it ends up in messages). */
static bool text_field(const uint8_t *b, size_t len, bool allow_empty)
{
	const uint8_t *nul = memchr(b, '\0', len);

	if (!nul || (nul == b && !allow_empty))
		return false;
	for (const uint8_t *p = b; p < nul; p++)
		if (*p < 0x21 || *p > 0x7e)
			return false;
	for (const uint8_t *p = nul; p < b + len; p++)
		if (*p)
			return false;
	return true;
}

int bm_lease_decode(const uint8_t *buf, size_t len, struct bm_lease *l)
{
	uint32_t crc, want;

	if (len < BM_LEASE_USED)
		return bm_error(EINVAL, "lease is truncated (%zu bytes, need %u)",
		                len, BM_LEASE_USED);
	if (memcmp(buf + OFF_MAGIC, BM_LEASE_MAGIC, 16) != 0)
		return bm_error(ENOENT, "no lease");
	memset(l, 0, sizeof(*l));
	l->version = bm_get32(buf, OFF_VERSION);
	if (l->version == 0 || l->version > BM_LEASE_VERSION)
		return bm_error(EPROTO, "lease version %u is not one this "
		                "blkmirror reads (it reads 1..%u)", l->version,
		                BM_LEASE_VERSION);
	want = bm_get32(buf, OFF_CRC);
	crc = bm_crc32c(0, buf, OFF_CRC);
	if (crc != want)
		return bm_error(EINVAL, "lease checksum mismatch (stored %08x, "
		                "computed %08x)", want, crc);
	l->state = bm_get32(buf, OFF_STATE);
	l->owner_id = bm_get64(buf, OFF_OWNER);
	l->seq = bm_get64(buf, OFF_SEQ);
	l->mirror_id = bm_get64(buf, OFF_MIRROR_ID);
	l->time_ms = bm_get64(buf, OFF_TIME);
	l->pid = bm_get32(buf, OFF_PID);
	l->interval_ms = bm_get32(buf, OFF_INTERVAL);
	if (l->state != BM_LEASE_ACTIVE && l->state != BM_LEASE_CLEAN)
		return bm_error(EINVAL, "lease state %u is unknown", l->state);
	if (l->owner_id == 0)
		return bm_error(EINVAL, "lease has no owner id");
	if (l->interval_ms < BM_LEASE_INTERVAL_MIN_MS ||
	    l->interval_ms > BM_LEASE_INTERVAL_MAX_MS)
		return bm_error(EINVAL, "lease interval %u ms is out of range "
		                "(%u..%u)", l->interval_ms,
		                BM_LEASE_INTERVAL_MIN_MS, BM_LEASE_INTERVAL_MAX_MS);
	if (!text_field(buf + OFF_HOST, BM_LEASE_HOST_MAX + 1, false))
		return bm_error(EINVAL, "lease host name is not printable text");
	memcpy(l->host, buf + OFF_HOST, BM_LEASE_HOST_MAX + 1);
	if (!text_field(buf + OFF_NAME, BM_NAME_MAX + 1, true))
		return bm_error(EINVAL, "lease mirror name is not printable text");
	memcpy(l->name, buf + OFF_NAME, BM_NAME_MAX + 1);
	if (l->name[0] && !bm_name_valid(l->name))
		return bm_error(EINVAL, "lease mirror name is not valid");
	memcpy(l->boot_id, buf + OFF_BOOT_ID, sizeof(l->boot_id));
	l->pid_ns = bm_get64(buf, OFF_PID_NS);
	for (size_t i = OFF_END_OF_FIELDS; i < OFF_CRC; i++)
		if (buf[i])
			return bm_error(EINVAL, "lease reserved bytes are not zero");
	return 0;
}

void bm_lease_holder_str(const struct bm_lease *l, char *buf, size_t len)
{
	snprintf(buf, len, "host %s, pid %" PRIu32 ", mirror '%s'", l->host,
	         l->pid, l->name);
}

/* ---- the engine's side ---- */

/* One component's renewal.  Before start, touched by the opening thread;
 * then only by its own thread; after the join, by the closing thread. */
struct lease_slot {
	struct bm_lease_keeper *k;
	struct bm_component *c;
	pthread_t thread;
	bool running;
	bool stop;          /* k->lock: this slot alone stops (live.c) */
	bool held;          /* we wrote (or tried to write) our lease on it */
	bool lost;          /* someone else writes it now: never write again */
	bool io_failing;    /* the last lease I/O failed (logged once) */
	uint64_t seq;
	uint32_t interval_ms;  /* promised to readers in our next write */
};

struct bm_lease_keeper {
	struct bm_mirror *m;
	uint64_t owner_id;
	uint32_t pid;
	char host[BM_LEASE_HOST_MAX + 1];
	pthread_mutex_t lock;   /* stop, clean_on_stop */
	pthread_cond_t cond;    /* signalled on stop (CLOCK_MONOTONIC) */
	bool stop;
	bool clean_on_stop;
	struct lease_slot slot[BM_MAX_COMPONENTS];
};

static uint64_t random_owner(void)
{
	uint64_t v = 0;
	while (v == 0)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = bm_now_ns() ^ ((uint64_t)getpid() << 32);
	return v;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool writable(struct bm_component *c)
{
	int s = atomic_load(&c->state);
	return s == BM_CS_ACTIVE || s == BM_CS_SYNCHRONIZING;
}

/* Ours to keep: in service, or INACTIVE (deactivated: still open and
 * still this server's; rebuild.c never replaces its backend then). */
static bool held(struct bm_component *c)
{
	return writable(c) || atomic_load(&c->state) == BM_CS_INACTIVE;
}

/* bm_comp_get, INACTIVE components included; bm_comp_put after use. */
static struct bm_backend *lease_get(struct bm_component *c)
{
	struct bm_backend *be = bm_comp_get(c);

	if (be)
		return be;
	atomic_fetch_add(&c->users, 1);
	/* read once (rebuild.c reopen_inactive swaps it once users are 0) */
	struct bm_backend *inactive_be = __atomic_load_n(&c->be, __ATOMIC_SEQ_CST);
	if (atomic_load(&c->state) == BM_CS_INACTIVE && inactive_be)
		return inactive_be;
	atomic_fetch_sub(&c->users, 1);
	return NULL;
}

/* Reads the raw lease block: 0 or the I/O error. */
static int read_raw(struct bm_backend *be, uint8_t *buf)
{
	return bm_backend_io_wait_timeout(be, BM_BOP_READ, buf, BM_LEASE_SIZE,
	                                  bm_lease_offset(be->size), 0,
	                                  BM_LEASE_IO_TIMEOUT_MS);
}

int bm_lease_read(struct bm_backend *be, struct bm_lease *out)
{
	uint8_t buf[BM_LEASE_SIZE];
	int err = read_raw(be, buf);

	if (err < 0)
		return bm_error(err, "%s: cannot read its lease: %s", be->path,
		                strerror(-err));
	return bm_lease_decode(buf, sizeof(buf), out);
}

/* This process's kernel (boot id) and pid namespace, read once. */
static pthread_once_t instance_once = PTHREAD_ONCE_INIT;
static uint8_t instance_boot[16];
static uint64_t instance_ns;

static void read_instance(void)
{
	char text[64];
	struct stat st;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	int n = 0;

	if (f && fgets(text, sizeof(text), f))
		for (const char *p = text; *p && n < 32; p++) {
			int v = *p >= '0' && *p <= '9' ? *p - '0'
			      : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
			if (v < 0)
				continue;
			instance_boot[n / 2] = (uint8_t)(instance_boot[n / 2] << 4 | v);
			n++;
		}
	if (f)
		fclose(f);
	if (n != 32)
		memset(instance_boot, 0, sizeof(instance_boot));
	instance_ns = stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static void this_instance(uint8_t boot_id[16], uint64_t *pid_ns)
{
	pthread_once(&instance_once, read_instance);
	memcpy(boot_id, instance_boot, sizeof(instance_boot));
	*pid_ns = instance_ns;
}

static int write_lease_to(struct lease_slot *s, struct bm_backend *be,
                          uint32_t state)
{
	struct bm_lease_keeper *k = s->k;
	struct bm_lease l = {
		.version = BM_LEASE_VERSION, .state = state,
		.owner_id = k->owner_id, .seq = s->seq,
		.mirror_id = k->m->mirror_id, .time_ms = wall_ms(),
		.pid = k->pid, .interval_ms = s->interval_ms,
	};
	uint8_t buf[BM_LEASE_SIZE];

	snprintf(l.host, sizeof(l.host), "%s", k->host);
	snprintf(l.name, sizeof(l.name), "%s", k->m->name);
	this_instance(l.boot_id, &l.pid_ns);
	bm_lease_encode(&l, buf);
	return bm_backend_io_wait_timeout(be, BM_BOP_WRITE, buf, BM_LEASE_SIZE,
	                                  bm_lease_offset(be->size), BM_BOP_FUA,
	                                  BM_LEASE_IO_TIMEOUT_MS);
}

/* Writes through the component's current backend (recover.c may replace
 * it while the component is away: bm_comp_get keeps it while we use it). */
static int write_lease(struct lease_slot *s, uint32_t state)
{
	struct bm_backend *be = lease_get(s->c);
	int err;

	if (!be)
		return -ENOTCONN;
	err = write_lease_to(s, be, state);
	bm_comp_put(s->c);
	return err;
}

/* Logs a lease I/O failure once per run of failures. */
static void io_result(struct lease_slot *s, const char *what, int err)
{
	struct bm_mirror *m = s->k->m;

	if (err < 0 && !s->io_failing)
		fprintf(stderr, "blkmirror: %s: %s: cannot %s its lease: %s; "
		        "retrying every second\n", m->name, s->c->path, what,
		        strerror(-err));
	else if (err == 0 && s->io_failing)
		fprintf(stderr, "blkmirror: %s: %s: its lease is renewed again\n",
		        m->name, s->c->path);
	s->io_failing = err < 0;
}

/* Someone else writes this component now: stop writing to it. */
static void lease_lost(struct lease_slot *s, const struct bm_lease *other,
                       const char *damage)
{
	struct bm_mirror *m = s->k->m;
	struct bm_component *c = s->c;
	char why[320], holder[256];

	s->lost = true;
	if (other) {
		bm_lease_holder_str(other, holder, sizeof(holder));
		snprintf(why, sizeof(why), "another server took over its lease "
		         "(%s)", holder);
	} else {
		snprintf(why, sizeof(why), "its lease was overwritten (%s)",
		         damage);
	}
	pthread_mutex_lock(&m->meta_lock);
	bm_meta_fail_locked(m, c, why);
	bool still = writable(c);
	pthread_mutex_unlock(&m->meta_lock);
	if (!still)
		return;
	/* The engine keeps its last ACTIVE component in service.  Another
	 * server owns it now: stopping its I/O (clients get errors) is better
	 * than two servers writing it. */
	struct bm_backend *be = bm_comp_get(c);
	if (be && be->ops->abort) {
		be->ops->abort(be);
		bm_comp_put(c);
		fprintf(stderr, "blkmirror: %s: %s: %s, and it is the last "
		        "ACTIVE component: its I/O is stopped; stop this "
		        "server\n", m->name, c->path, why);
	} else {
		if (be)
			bm_comp_put(c);
		fprintf(stderr, "blkmirror: %s: %s: %s, but it is the last "
		        "ACTIVE component: two servers may now write to it; stop "
		        "one of them\n", m->name, c->path, why);
	}
}

/* A renewal that found the component gone (its NBD server closed the
 * connection or is shutting down, the device went away) says so at once:
 * on an idle mirror nothing else asks it for a while, and status would
 * call it ACTIVE meanwhile.  Not a timeout: a slow component is the data
 * path's to judge (its patience), and not other errors (a bad block at
 * the lease): its renewals go on being tried. */
static void gone(struct lease_slot *s, int err)
{
	struct bm_mirror *m = s->k->m;
	char why[160];

	if (-err == ETIMEDOUT || !bm_error_is_gone(err))
		return;
	snprintf(why, sizeof(why), "cannot reach its lease: %s",
	         -err == ESHUTDOWN ? "its server is shutting down"
	                           : strerror(-err));
	pthread_mutex_lock(&m->meta_lock);
	bm_meta_drop_locked(m, s->c, BM_CS_DISCONNECTED, why);
	pthread_mutex_unlock(&m->meta_lock);
}

/* One renewal: check that the block still holds our lease, then advance it. */
static void renew(struct lease_slot *s)
{
	uint8_t buf[BM_LEASE_SIZE];
	struct bm_lease cur;
	uint64_t t0 = bm_now_ns();
	int err;

	if (s->lost || !held(s->c))
		return;
	struct bm_backend *be = lease_get(s->c);
	if (!be)
		return;
	err = read_raw(be, buf);
	bm_comp_put(s->c);
	if (err < 0) {
		bool first = !s->io_failing; /* once per run of failures (the
		                                last ACTIVE one stays) */
		io_result(s, "read", err);
		if (first)
			gone(s, err);
		return;
	}
	err = bm_lease_decode(buf, sizeof(buf), &cur);
	if (err < 0 || cur.owner_id != s->k->owner_id) {
		lease_lost(s, err == 0 ? &cur : NULL, bm_last_error());
		return;
	}
	s->seq++;
	err = write_lease(s, BM_LEASE_ACTIVE);
	bool first = !s->io_failing;
	io_result(s, "write", err);
	if (err < 0 && first)
		gone(s, err);
	/* Promise readers an interval that covers this renewal's I/O time. */
	uint64_t io_ms = (bm_now_ns() - t0) / 1000000;
	uint64_t iv = BM_LEASE_INTERVAL_MS + 2 * io_ms;
	s->interval_ms = (uint32_t)(iv > BM_LEASE_INTERVAL_MAX_MS
	                            ? BM_LEASE_INTERVAL_MAX_MS : iv);
}

static void *renew_main(void *arg)
{
	struct lease_slot *s = arg;
	struct bm_lease_keeper *k = s->k;
	bool clean;

	pthread_setname_np(pthread_self(), "bm-lease");
	pthread_mutex_lock(&k->lock);
	while (!k->stop && !s->stop) {
		struct timespec dl = bm_deadline_ms(CLOCK_MONOTONIC,
		                                    BM_LEASE_INTERVAL_MS);
		while (!k->stop && !s->stop &&
		       pthread_cond_timedwait(&k->cond, &k->lock, &dl) != ETIMEDOUT)
			;
		if (k->stop || s->stop)
			break;
		pthread_mutex_unlock(&k->lock);
		renew(s);
		pthread_mutex_lock(&k->lock);
	}
	clean = k->clean_on_stop && !s->stop;
	pthread_mutex_unlock(&k->lock);
	if (clean && !s->lost && held(s->c)) {
		s->seq++;
		int err = write_lease(s, BM_LEASE_CLEAN);
		if (err < 0)
			fprintf(stderr, "blkmirror: %s: %s: cannot mark its lease "
			        "clean: %s; the next start waits a few seconds\n",
			        k->m->name, s->c->path, strerror(-err));
	}
	return NULL;
}

/* ---- the check before serving (or before an offline label change) ---- */

struct watch {
	uint8_t raw[BM_LEASE_SIZE];
	struct bm_lease lease;
	bool decoded;            /* lease is valid */
	char damage[160];        /* why it is not, when it is not */
	long long until_ms;      /* monotonic: stale after this */
};

/* The holder ran on this kernel, in this pid namespace, and its process
 * is gone: certainly dead, no need to watch its lease. */
static bool holder_gone_here(const struct bm_lease *l)
{
	static const uint8_t zero[16];
	uint8_t boot[16];
	uint64_t ns;

	this_instance(boot, &ns);
	if (!memcmp(l->boot_id, zero, 16) || memcmp(l->boot_id, boot, 16) ||
	    !l->pid_ns || l->pid_ns != ns || !l->pid ||
	    l->pid == (uint32_t)getpid())
		return false;
	return kill((pid_t)l->pid, 0) < 0 && errno == ESRCH;
}

static uint32_t wait_ms_for(const struct bm_lease *l)
{
	return l->interval_ms * 2 + l->interval_ms / 2;
}

/*
 * Reads the leases of be[0..n-1] (NULL entries skipped) and watches the
 * contested ones together.  -EBUSY with a message (prefixed by `prefix`)
 * when one of them changed; else 0.  Unreadable components are set in
 * *unreadable with the reason in why[i].  `taking` names who logs the
 * takeovers (the mirror), or NULL for a look that takes nothing.
 */
static int watch_leases(struct bm_backend *const *be, int n,
                        const char *prefix, const char *taking,
                        uint32_t *unreadable, char (*why)[256])
{
	struct watch *w = calloc((size_t)n, sizeof(*w));
	uint32_t pending = 0;
	long long start = bm_now_ms();
	int err = 0;

	*unreadable = 0;
	if (!w)
		return bm_error(ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		if (!be[i])
			continue;
		err = read_raw(be[i], w[i].raw);
		if (err < 0) {
			snprintf(why[i], sizeof(why[i]), "cannot read its lease: %s",
			         strerror(-err));
			*unreadable |= 1u << i;
			continue;
		}
		err = bm_lease_decode(w[i].raw, BM_LEASE_SIZE, &w[i].lease);
		if (err == -ENOENT || (err == 0 && w[i].lease.state == BM_LEASE_CLEAN))
			continue; /* free to take */
		/* Only a local component: a dead process's requests to a
		 * file or device ended before it was reaped, but an NBD
		 * server may still run those of the dead connection. */
		if (err == 0 && !strstr(be[i]->path, "://") &&
		    holder_gone_here(&w[i].lease)) {
			if (taking) {
				char holder[256];
				bm_lease_holder_str(&w[i].lease, holder,
				                    sizeof(holder));
				fprintf(stderr, "blkmirror: %s: %s: taking over the "
				        "lease of %s: that process is gone (same "
				        "host and boot)\n", taking, be[i]->path,
				        holder);
			}
			continue; /* its holder is dead for certain */
		}
		w[i].decoded = err == 0;
		snprintf(w[i].damage, sizeof(w[i].damage), "%s", bm_last_error());
		w[i].until_ms = start + (w[i].decoded ? wait_ms_for(&w[i].lease)
		                         : BM_LEASE_INTERVAL_MS * 5 / 2);
		pending |= 1u << i;
	}
	err = 0;
	bm_error_clear();

	/* A change means the holder is alive. */
	while (pending) {
		usleep(200 * 1000);
		long long now = bm_now_ms();
		for (int i = 0; i < n; i++) {
			if (!(pending & (1u << i)))
				continue;
			uint8_t again[BM_LEASE_SIZE];
			struct bm_lease l;
			char holder[256];
			int e = read_raw(be[i], again);
			if (e < 0) {
				snprintf(why[i], sizeof(why[i]), "cannot read its "
				         "lease: %s", strerror(-e));
				*unreadable |= 1u << i;
				pending &= ~(1u << i);
				continue;
			}
			if (memcmp(again, w[i].raw, BM_LEASE_USED) != 0) {
				int d = bm_lease_decode(again, sizeof(again), &l);
				if (d == 0 && l.state == BM_LEASE_CLEAN) {
					pending &= ~(1u << i); /* its holder stopped */
					continue;
				}
				if (d == 0)
					bm_lease_holder_str(&l, holder, sizeof(holder));
				else
					snprintf(holder, sizeof(holder),
					         "a writer that leaves no valid lease");
				err = bm_error(EBUSY, "%s%s is served by another "
				               "blkmirror (%s): its lease is being "
				               "renewed; stop that server first",
				               prefix, be[i]->path, holder);
				goto out;
			}
			if (now < w[i].until_ms)
				continue;
			pending &= ~(1u << i);
			if (!taking)
				continue;
			if (w[i].decoded) {
				bm_lease_holder_str(&w[i].lease, holder, sizeof(holder));
				fprintf(stderr, "blkmirror: %s: %s: taking over the "
				        "lease of %s: not renewed for %.1f s (a server "
				        "that died)\n", taking, be[i]->path, holder,
				        (now - start) / 1000.0);
			} else {
				fprintf(stderr, "blkmirror: %s: %s: taking over a "
				        "damaged lease (%s), unchanged for %.1f s\n",
				        taking, be[i]->path, w[i].damage,
				        (now - start) / 1000.0);
			}
		}
	}
out:
	free(w);
	return err;
}

int bm_lease_check_free(struct bm_backend *be)
{
	char why[1][256];
	uint32_t unreadable;
	int err = watch_leases(&be, 1, "", NULL, &unreadable, why);

	if (err == 0 && unreadable)
		err = bm_error(EIO, "%s: %s", be->path, why[0]);
	return err;
}

int bm_lease_check(struct bm_mirror *m, uint32_t *unreadable)
{
	struct bm_lease_keeper *k = calloc(1, sizeof(*k));
	struct bm_backend *be[BM_MAX_COMPONENTS];
	char (*why)[256] = calloc(BM_MAX_COMPONENTS, sizeof(*why));
	char prefix[BM_NAME_MAX + 16];
	int err;

	*unreadable = 0;
	if (!k || !why) {
		free(k);
		free(why);
		return bm_error(ENOMEM, "out of memory");
	}
	k->m = m;
	k->owner_id = random_owner();
	k->pid = (uint32_t)getpid();
	if (gethostname(k->host, sizeof(k->host)) < 0 || !k->host[0])
		snprintf(k->host, sizeof(k->host), "unknown");
	k->host[BM_LEASE_HOST_MAX] = '\0';
	for (char *p = k->host; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			*p = '_';
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cond, &ca);
	pthread_condattr_destroy(&ca);
	for (int i = 0; i < m->ncomp; i++) {
		k->slot[i].k = k;
		k->slot[i].c = &m->comp[i];
		k->slot[i].interval_ms = BM_LEASE_INTERVAL_MS;
		be[i] = m->comp[i].be;
	}
	m->lease = k;

	snprintf(prefix, sizeof(prefix), "mirror '%s': ", m->name);
	err = watch_leases(be, m->ncomp, prefix, m->name, unreadable, why);
	for (int i = 0; i < m->ncomp; i++)
		if (*unreadable & (1u << i))
			snprintf(m->comp[i].why, sizeof(m->comp[i].why), "%s", why[i]);
	free(why);
	return err;
}

/* Test hook (tests/func/lease_simultaneous_start.sh): with
 * BM_TEST_LEASE_PAUSE=PATH, a server that has checked the leases creates
 * PATH.checked and waits for PATH.go before it writes its own, so that a
 * test can make two servers check before either writes. */
static void test_pause(void)
{
	const char *p = getenv("BM_TEST_LEASE_PAUSE");
	char path[PATH_MAX];

	if (!p || !*p)
		return;
	snprintf(path, sizeof(path), "%s.checked", p);
	FILE *f = fopen(path, "w");
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s.go", p);
	for (int i = 0; i < 30000 && access(path, F_OK) != 0; i++)
		usleep(1000);
}

/*
 * Two servers that checked the leases at the same moment (both saw them
 * free, before either wrote) would both write and both serve until the
 * first renewal (1 s) found the other's lease.  So after writing its
 * leases a server waits for as long as another's write could still come
 * (the time between a check and the write is a few milliseconds of
 * decisions plus the write itself), reads back those it wrote, and
 * refuses to start if one is not its own: the later writer wins.  If each
 * won some components (the writes crossed), the higher owner id wins: it
 * writes its lease again where the other's is and reads back again, and
 * the lower one refuses.  A server that refuses writes no lease again
 * (every slot lost: a clean lease written now could land over the
 * winner's); what it left is the winner's to overwrite, or expires.
 * wrote[i]: slot i's write succeeded and it is a remote export (only those
 * are read back: a local component's lock kept any other server away, so
 * a mirror of local components pays no settle time).
 */
static int verify_leases(struct bm_lease_keeper *k, long long slowest_ms,
                         const bool *wrote)
{
	struct bm_mirror *m = k->m;
	long long settle = BM_LEASE_SETTLE_MS + 3 * slowest_ms;
	char holder[256] = "";
	const char *path = NULL;

	if (settle > BM_LEASE_IO_TIMEOUT_MS)
		settle = BM_LEASE_IO_TIMEOUT_MS;
	for (int round = 0; round < 3; round++) {
		bool theirs[BM_MAX_COMPONENTS] = {false};
		int ours = 0, others = 0;
		uint64_t other_id = 0;
		bool one_other = true;

		usleep((useconds_t)settle * 1000);
		for (int i = 0; i < m->ncomp; i++) {
			struct lease_slot *s = &k->slot[i];
			struct bm_backend *be;
			uint8_t raw[BM_LEASE_SIZE];
			struct bm_lease l;
			if (!s->held || !wrote[i] || !(be = lease_get(s->c)))
				continue;
			int e = read_raw(be, raw);
			bm_comp_put(s->c);
			if (e < 0 || bm_lease_decode(raw, sizeof(raw), &l) < 0)
				continue; /* unreadable: renewal deals with it */
			if (l.owner_id == k->owner_id) {
				ours++;
				continue;
			}
			theirs[i] = true;
			if (others++ == 0) {
				other_id = l.owner_id;
				bm_lease_holder_str(&l, holder, sizeof(holder));
				path = s->c->path;
			} else if (l.owner_id != other_id) {
				one_other = false;
			}
		}
		if (others == 0)
			return 0;
		if (!(ours > 0 && one_other && k->owner_id > other_id))
			break; /* refused */
		for (int i = 0; i < m->ncomp; i++) {
			struct lease_slot *s = &k->slot[i];
			if (!theirs[i])
				continue;
			s->seq++;
			io_result(s, "write", write_lease(s, BM_LEASE_ACTIVE));
		}
	}
	for (int i = 0; i < m->ncomp; i++)
		if (k->slot[i].held)
			k->slot[i].lost = true;
	return bm_error(EBUSY, "mirror '%s': %s was taken by another server at "
	                "the same moment (%s); not serving: serve a mirror "
	                "from one place at a time", m->name, path ? path : "?",
	                holder);
}

int bm_lease_start(struct bm_mirror *m)
{
	struct bm_lease_keeper *k = m->lease;
	long long slowest = 0;
	bool any = false, wrote[BM_MAX_COMPONENTS] = {false};

	test_pause();
	for (int i = 0; i < m->ncomp; i++) {
		struct lease_slot *s = &k->slot[i];
		if (!s->c->be || !held(s->c))
			continue;
		s->held = true;
		s->seq = 1;
		long long t = bm_now_ms();
		int e = write_lease(s, BM_LEASE_ACTIVE);
		io_result(s, "write", e);
		if (bm_now_ms() - t > slowest)
			slowest = bm_now_ms() - t;
		/* a local file or device is held by its lock (exclusive open)
		 * already: no second server can have written it */
		wrote[i] = e == 0 && strstr(s->c->path, "://") != NULL;
		any = any || wrote[i];
	}
	if (any) {
		int err = verify_leases(k, slowest, wrote);
		if (err < 0)
			return err;
	}
	for (int i = 0; i < m->ncomp; i++) {
		struct lease_slot *s = &k->slot[i];
		if (!s->held)
			continue;
		if (pthread_create(&s->thread, NULL, renew_main, s) != 0)
			return bm_error(EAGAIN, "cannot start a lease thread");
		s->running = true;
	}
	return 0;
}

void bm_lease_stop(struct bm_mirror *m, bool clean)
{
	struct bm_lease_keeper *k = m->lease;

	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	k->stop = true;
	k->clean_on_stop = clean;
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);
	for (int i = 0; i < m->ncomp; i++) {
		struct lease_slot *s = &k->slot[i];
		if (s->running) {
			pthread_join(s->thread, NULL);
		} else if (s->held && clean && !s->lost && held(s->c)) {
			s->seq++;
			write_lease(s, BM_LEASE_CLEAN);
		}
	}
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k);
	m->lease = NULL;
}

/* ---- components that join and leave a running mirror (live.c) ---- */

int bm_lease_add(struct bm_mirror *m, int index, struct bm_backend *be)
{
	struct bm_lease_keeper *k = m->lease;
	struct lease_slot *s;
	int err;

	if (!k || index < 0 || index >= BM_MAX_COMPONENTS)
		return bm_error(EINVAL, "no lease keeper");
	s = &k->slot[index];
	if (s->running) /* a slot reused without bm_lease_drop: a bug */
		return bm_error(EBUSY, "lease slot %d still renewed", index);
	memset(s, 0, sizeof(*s));
	s->k = k;
	s->c = &m->comp[index];
	s->interval_ms = BM_LEASE_INTERVAL_MS;
	s->seq = 1;
	s->held = true;
	err = write_lease_to(s, be, BM_LEASE_ACTIVE);
	if (err < 0)
		return bm_error(err, "%s: cannot write its lease: %s", be->path,
		                strerror(-err));
	/* Renewals skip it until its state says it is in service. */
	if (pthread_create(&s->thread, NULL, renew_main, s) != 0)
		return bm_error(EAGAIN, "cannot start a lease thread");
	s->running = true;
	return 0;
}

void bm_lease_drop(struct bm_mirror *m, int index)
{
	struct bm_lease_keeper *k = m->lease;
	struct lease_slot *s;

	if (!k || index < 0 || index >= BM_MAX_COMPONENTS)
		return;
	s = &k->slot[index];
	if (!s->running) {
		s->held = false;
		return;
	}
	pthread_mutex_lock(&k->lock);
	s->stop = true;
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);
	pthread_join(s->thread, NULL);
	s->running = false;
	s->held = false;
}
