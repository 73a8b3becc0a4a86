/*
 * The lease: which server owns a component (DESIGN.md "Who owns a
 * component"; the model is ext4's multiple mount protection).
 *
 * Every component keeps one 4 KiB lease block just below its label
 * (label.h: bm_lease_offset).  The server that serves a mirror writes its
 * lease there at start (a random owner id per start, host name, pid) and
 * rewrites it with the next sequence number every interval while it serves;
 * a clean stop marks it CLEAN.  A server about to serve reads the lease
 * first: ACTIVE and not its own means it watches the block for about two
 * of the holder's intervals; a block that changed means the holder is
 * alive, so it refuses and names it; one that did not change belonged to a
 * server that died and is taken over.  While serving, a server that finds
 * another owner's lease (or anything else) in place of its own stops
 * writing to that component at once: it fails it out.
 *
 * Encoding: explicit little-endian fields at fixed offsets, a crc32c over
 * the first BM_LEASE_USED bytes stored at its end, zeros past it.
 *
 *   off  size  field
 *     0    16  magic "BLKMIRROR-LEASE\0"
 *    16     4  version (1)
 *    20     4  state: 1 ACTIVE, 2 CLEAN
 *    24     8  owner id (random, never 0, new at every server start)
 *    32     8  sequence number (1 at start, +1 at every renewal)
 *    40     8  mirror id (the label's), for the human
 *    48     8  wall-clock time of the write, ms since the epoch (for the
 *              human only: hosts' clocks are not compared)
 *    56     4  pid of the server
 *    60     4  renewal interval the holder promises, ms (100..60000);
 *              a reader waits 2.5 of them before taking the lease over
 *    64    72  host name, NUL padded, printable ASCII, 1..71 bytes
 *   136    32  mirror name, NUL padded
 *   168    16  boot id of the holder's kernel (/proc/sys/kernel/random/
 *              boot_id; zeros: unknown)
 *   184     8  inode of the holder's pid namespace (0: unknown)
 *   192   316  reserved, zero
 *   508     4  crc32c of bytes 0..507
 *
 * Version history:
 *   1  (2026-11) first version.
 *   1  (2026-11, same version) boot id and pid namespace at 168: a reader
 *      on the same kernel and in the same pid namespace whose holder's pid
 *      no longer exists takes the lease of a local component (file or
 *      block device: the dead process's requests ended before it was
 *      reaped) at once instead of watching it; NBD components are still
 *      watched (the export's server may still run requests of the dead
 *      connection); earlier leases read as "unknown" and are watched.
 */
#ifndef BM_LEASE_H
#define BM_LEASE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blkmirror.h"
#include "label.h"

#define BM_LEASE_USED 512u              /* bytes covered by the crc */
#define BM_LEASE_MAGIC "BLKMIRROR-LEASE" /* 15 chars + NUL = 16 bytes */
#define BM_LEASE_VERSION 1u
#define BM_LEASE_HOST_MAX 71            /* bytes, without the NUL */
#define BM_LEASE_INTERVAL_MIN_MS 100u
#define BM_LEASE_INTERVAL_MAX_MS 60000u

enum bm_lease_state { BM_LEASE_ACTIVE = 1, BM_LEASE_CLEAN = 2 };

struct bm_lease {
	uint32_t version;
	uint32_t state;            /* enum bm_lease_state */
	uint64_t owner_id;
	uint64_t seq;
	uint64_t mirror_id;
	uint64_t time_ms;
	uint32_t pid;
	uint32_t interval_ms;
	char host[BM_LEASE_HOST_MAX + 1];
	char name[BM_NAME_MAX + 1];
	uint8_t boot_id[16];       /* the holder's kernel; zeros: unknown */
	uint64_t pid_ns;           /* its pid namespace's inode; 0: unknown */
};

/* Encodes into a BM_LEASE_SIZE buffer (zero-filled past BM_LEASE_USED). */
void bm_lease_encode(const struct bm_lease *l, uint8_t out[BM_LEASE_SIZE]);

/*
 * Decodes and validates untrusted bytes.  Returns 0, -ENOENT when the block
 * holds no lease (no magic: a component never served by a server that
 * writes leases), or -EINVAL/-EPROTO with bm_last_error() saying what is
 * wrong.  len shorter than BM_LEASE_USED is malformed.
 */
int bm_lease_decode(const uint8_t *buf, size_t len, struct bm_lease *out);

/* "host H, pid P, mirror 'N'": the holder, for messages. */
void bm_lease_holder_str(const struct bm_lease *l, char *buf, size_t len);

/* ---- the engine's side (lease.c; needs lib/mirror.h) ---- */

struct bm_mirror;
struct bm_backend;

/* Timing.  Every lease I/O has a deadline, so a hanging component never
 * holds a lease thread for longer. */
#define BM_LEASE_INTERVAL_MS 1000
#define BM_LEASE_IO_TIMEOUT_MS 5000
/* How long a starting server waits after writing its leases before it
 * reads them back (plus three times its slowest lease write): longer than
 * another server's check-to-write gap (lease.c, verify_leases). */
#define BM_LEASE_SETTLE_MS 100

/*
 * Reads the lease of one open component (deadline BM_LEASE_IO_TIMEOUT_MS).
 * 0 with *out filled, -ENOENT (no lease), -EINVAL/-EPROTO (damaged) or the
 * I/O error, with bm_last_error() set.
 */
int bm_lease_read(struct bm_backend *be, struct bm_lease *out);

/*
 * Before anything is written: reads the lease of every open component and,
 * where another server's lease is ACTIVE (or the block is damaged), watches
 * it for about two and a half of its holder's intervals (all components
 * together).  Returns -EBUSY with a one-line message naming the component,
 * the holder's host, pid and mirror when one of them changed (its holder
 * is alive); otherwise 0, after logging every lease it takes over.
 * Components whose lease cannot be read are set in *unreadable (their
 * reason in comp->why) for the caller to leave out.  Allocates m->lease.
 */
int bm_lease_check(struct bm_mirror *m, uint32_t *unreadable);

/*
 * The same look for one component that a command is about to change
 * without serving it (clear, configure): 0 when no live server holds it
 * (no lease, CLEAN, or not renewed while watched), -EBUSY naming the
 * holder, or -EIO when the lease cannot be read.  Takes nothing over.
 */
int bm_lease_check_free(struct bm_backend *be);

/* Writes our ACTIVE lease on every writable component and starts one
 * renewal thread per component.  Call after bm_lease_check(). */
int bm_lease_start(struct bm_mirror *m);

/*
 * Stops the renewal threads and frees m->lease (safe when never started or
 * never checked).  With clean, each component that still holds our lease
 * gets it marked CLEAN (the mirror's labels must already be clean).  Call
 * without meta_lock held: a renewal thread may be taking it.
 */
void bm_lease_stop(struct bm_mirror *m, bool clean);

/*
 * A component joining a running mirror (live.c), not yet published: takes
 * its lease (written through be, which the caller checked is free with
 * bm_lease_check_free) and starts its renewal, which begins once its state
 * is ACTIVE or SYNCHRONIZING.  bm_lease_drop stops renewing slot index (a
 * component removed or forgotten; call without meta_lock): its lease is
 * left as it is, for the caller to clear or leave.
 */
int bm_lease_add(struct bm_mirror *m, int index, struct bm_backend *be);
void bm_lease_drop(struct bm_mirror *m, int index);

#endif
