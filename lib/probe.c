/*
 * Probing components before label (probe.h).
 *
 * Content: the first and last MiB of a component are read through its
 * backend and copied into a sparse memfd of the component's size, and
 * libblkid probes that: one path for files, block devices and NBD exports
 * (which libblkid cannot open), and every signature libblkid knows that
 * lives in those two MiB (file systems, md 0.90 to 1.2, LVM, LUKS, swap,
 * MBR and both GPT headers) is found.  Signatures elsewhere (btrfs's backup
 * superblocks, ZFS's middle labels) are not looked for.
 *
 * Identity: what the kernel tells first (inodes, device numbers, a loop
 * device's backing inode from LOOP_GET_STATUS64); then a token written
 * through one component and read back through the others, for storage the
 * kernel cannot identify (the same NBD export through two URIs).
 */
#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/loop.h>
#include <linux/major.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "error.h"
#include "fs_size.h"
#include "label.h"
#include "probe.h"

#define PROBE_SPAN (1024u * 1024u)

/* Reads [off, off + len) through the backend into the memfd (and head);
 * timeout_ms > 0: a component that does not answer within it fails. */
static int copy_span(struct bm_backend *be, int fd, uint64_t off, uint32_t len,
                     uint8_t *buf, long timeout_ms)
{
	int err = timeout_ms > 0
	          ? bm_backend_io_wait_timeout(be, BM_BOP_READ, buf, len, off, 0,
	                                       timeout_ms)
	          : bm_backend_io_wait(be, BM_BOP_READ, buf, len, off, 0);

	if (err < 0)
		return bm_error(-err, "%s: cannot read %u bytes at %" PRIu64
		                " to look for existing data: %s", be->path, len,
		                off, strerror(-err));
	if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
		return bm_error(errno ? errno : EIO, "probe memfd: %s",
		                strerror(errno ? errno : EIO));
	return 0;
}

static void describe(blkid_probe pr, struct bm_content *out)
{
	const char *type = NULL, *usage = NULL, *pttype = NULL;

	blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
	blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
	blkid_probe_lookup_value(pr, "PTTYPE", &pttype, NULL);
	if (type && usage && strcmp(usage, "filesystem") == 0)
		snprintf(out->what, sizeof(out->what), "a file system (%s)", type);
	else if (type && strcmp(type, "LVM2_member") == 0)
		snprintf(out->what, sizeof(out->what),
		         "an LVM physical volume (LVM2_member)");
	else if (type && strcmp(type, "linux_raid_member") == 0)
		snprintf(out->what, sizeof(out->what),
		         "an md RAID member (linux_raid_member)");
	else if (type && usage && strcmp(usage, "raid") == 0)
		snprintf(out->what, sizeof(out->what), "a RAID member (%s)", type);
	else if (type && usage && strcmp(usage, "crypto") == 0)
		snprintf(out->what, sizeof(out->what), "an encrypted volume (%s)",
		         type);
	else if (type)
		snprintf(out->what, sizeof(out->what), "a %s signature", type);
	else if (pttype)
		snprintf(out->what, sizeof(out->what), "a partition table (%s)",
		         pttype);
	else
		snprintf(out->what, sizeof(out->what), "a signature libblkid "
		         "recognizes");
}

int bm_probe_content(struct bm_backend *be, struct bm_content *out,
                     long timeout_ms)
{
	uint64_t size = be->size / 4096 * 4096;
	uint32_t head = size < PROBE_SPAN ? (uint32_t)size : PROBE_SPAN;
	uint64_t tail = size > PROBE_SPAN ? size - PROBE_SPAN : 0;
	uint8_t *buf = NULL;
	blkid_probe pr = NULL;
	int fd, err, found = 0;

	memset(out, 0, sizeof(*out));
	fd = memfd_create("blkmirror-probe", MFD_CLOEXEC);
	if (fd < 0)
		return bm_error(errno, "memfd_create: %s", strerror(errno));
	if (ftruncate(fd, (off_t)be->size) < 0) {
		err = bm_error(errno, "probe memfd of %" PRIu64 " bytes: %s",
		               be->size, strerror(errno));
		goto out;
	}
	if (posix_memalign((void **)&buf, 4096, PROBE_SPAN)) {
		buf = NULL;
		err = bm_error(ENOMEM, "out of memory");
		goto out;
	}
	err = copy_span(be, fd, tail, (uint32_t)(size - tail), buf, timeout_ms);
	if (err == 0)
		err = copy_span(be, fd, 0, head, buf, timeout_ms);
	if (err < 0)
		goto out;
	/* buf holds the head now: the file system's own idea of its size. */
	if (bm_fs_size(buf, head, &out->fs_bytes, &out->fs_kind) < 0)
		out->fs_bytes = 0;

	pr = blkid_new_probe();
	if (!pr || blkid_probe_set_device(pr, fd, 0, (blkid_loff_t)be->size)) {
		err = bm_error(ENOMEM, "libblkid: cannot set up a probe");
		goto out;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE |
	                                  BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	switch (blkid_do_safeprobe(pr)) {
	case 0:
		describe(pr, out);
		found = 1;
		break;
	case 1:
		break;
	case -2: /* more than one: ambivalent */
		snprintf(out->what, sizeof(out->what), "several signatures "
		         "(wipefs lists them)");
		found = 1;
		break;
	default:
		err = bm_error(EIO, "%s: libblkid cannot probe it", be->path);
		goto out;
	}
	if (!found && out->fs_bytes) {
		snprintf(out->what, sizeof(out->what), "a file system (%s)",
		         out->fs_kind);
		found = 1;
	}
	err = found;
out:
	if (pr)
		blkid_free_probe(pr);
	free(buf);
	close(fd);
	return err;
}

/* ---- identity the kernel tells ---- */

struct identity {
	bool seen;
	dev_t rdev;          /* block devices */
	bool has_file;       /* regular files, and loop devices' backing files */
	dev_t file_dev;
	ino_t file_ino;
};

static void identify(const char *path, struct identity *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (stat(path, &st) < 0)
		return; /* URIs, or missing: the open will say */
	id->seen = true;
	if (S_ISREG(st.st_mode)) {
		id->has_file = true;
		id->file_dev = st.st_dev;
		id->file_ino = st.st_ino;
		return;
	}
	if (!S_ISBLK(st.st_mode))
		return;
	id->rdev = st.st_rdev;
	if (major(st.st_rdev) != LOOP_MAJOR)
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct loop_info64 li;
	if (fd < 0)
		return;
	if (ioctl(fd, LOOP_GET_STATUS64, &li) == 0) {
		id->has_file = true;
		id->file_dev = (dev_t)li.lo_device;
		id->file_ino = (ino_t)li.lo_inode;
	}
	close(fd);
}

int bm_probe_same_identity(const char *const *paths, size_t n, size_t *a,
                           size_t *b)
{
	struct identity *id = calloc(n ? n : 1, sizeof(*id));

	if (!id)
		return 0;
	for (size_t i = 0; i < n; i++) {
		identify(paths[i], &id[i]);
		for (size_t k = 0; id[i].seen && k < i; k++) {
			bool same = (id[i].rdev && id[i].rdev == id[k].rdev) ||
			            (id[i].has_file && id[k].has_file &&
			             id[i].file_dev == id[k].file_dev &&
			             id[i].file_ino == id[k].file_ino);
			if (same) {
				*a = k;
				*b = i;
				free(id);
				return 1;
			}
		}
	}
	free(id);
	return 0;
}

/* ---- identity by content ---- */

#define TOKEN_MAGIC "BLKMIRROR-IDPROBE"
#define TOKEN_LEN 64

/* How large the storage is, whatever the mirror uses of it (dev_size: 0
 * for a backend not made by bm_backend_open). */
static uint64_t real_size(const struct bm_backend *be)
{
	return be->dev_size ? be->dev_size : be->size;
}

static uint64_t idprobe_offset(uint64_t size)
{
	return size / 4096 * 4096 - BM_IDPROBE_FROM_END;
}

/* timeout_ms > 0: a component that does not answer within it fails the
 * check (a request given up may still land: only in this block, which
 * holds nothing but tokens) */
static int sync_io(struct bm_backend *be, enum bm_bop op, void *buf,
                   uint64_t off, const char *what, long timeout_ms)
{
	int err = bm_backend_io_wait_timeout(be, op, buf, 4096, off,
	                                     op == BM_BOP_WRITE ? BM_BOP_FUA : 0,
	                                     timeout_ms);

	if (err == 0 && op == BM_BOP_WRITE)
		err = timeout_ms > 0
		              ? bm_backend_io_wait_timeout(be, BM_BOP_FLUSH, NULL,
		                                           0, 0, 0, timeout_ms)
		              : be->ops->flush_sync(be);
	if (err < 0)
		return bm_error(-err, "%s: cannot %s 4 KiB at %" PRIu64 " (the "
		                "check that no two components are one disk): %s",
		                be->path, what, off, strerror(-err));
	return 0;
}

int bm_probe_same_content(struct bm_backend **be, size_t n, size_t *a,
                          size_t *b, long timeout_ms)
{
	uint8_t *orig = NULL, *token = NULL, *seen = NULL;
	int err = 0;

	if (posix_memalign((void **)&orig, 4096, 4096) ||
	    posix_memalign((void **)&token, 4096, 4096) ||
	    posix_memalign((void **)&seen, 4096, 4096)) {
		err = bm_error(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i + 1 < n && err == 0; i++) {
		/* (dev_size: a grown component used at its old size is
		 * still as large as another opening of it sees it) */
		uint64_t off = idprobe_offset(real_size(be[i]));
		bool others = false;
		for (size_t k = i + 1; k < n; k++)
			others |= real_size(be[k]) == real_size(be[i]);
		if (!others)
			continue; /* storage of another size is not this one */
		memset(token, 0, 4096);
		memcpy(token, TOKEN_MAGIC, sizeof(TOKEN_MAGIC) - 1);
		if (getrandom(token + 32, TOKEN_LEN - 32, 0) != TOKEN_LEN - 32) {
			err = bm_error(EIO, "getrandom: %s", strerror(errno));
			break;
		}
		err = sync_io(be[i], BM_BOP_READ, orig, off, "read", timeout_ms);
		if (err < 0)
			break;
		err = sync_io(be[i], BM_BOP_WRITE, token, off, "write",
		              timeout_ms);
		if (err < 0)
			break;
		for (size_t k = i + 1; k < n && err == 0; k++) {
			if (real_size(be[k]) != real_size(be[i]))
				continue;
			err = sync_io(be[k], BM_BOP_READ, seen, off, "read",
			              timeout_ms);
			if (err == 0 && memcmp(seen, token, TOKEN_LEN) == 0) {
				*a = i;
				*b = k;
				err = 1;
			}
		}
		int rerr = sync_io(be[i], BM_BOP_WRITE, orig, off, "restore",
		                   timeout_ms);
		if (rerr < 0)
			err = rerr;
	}
out:
	free(orig);
	free(token);
	free(seen);
	return err;
}
