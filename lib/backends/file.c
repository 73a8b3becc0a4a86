/*
 * Local components: regular files and block devices.
 *
 * Reads and writes go through io_uring with one completion ("reaper") thread
 * per component, so any number of requests can be in flight and no thread
 * waits per request.  Aligned requests use an O_DIRECT descriptor (no page
 * cache between the mirror and the disk, so a disk's speed is what the mirror
 * measures); unaligned ones, and file systems that refuse O_DIRECT (tmpfs),
 * use a buffered descriptor of the same file.  Linux keeps the two coherent:
 * direct I/O writes back and invalidates the page cache over its range.
 *
 * Where io_uring is unavailable (old kernels, seccomp, or
 * BLKMIRROR_NO_IO_URING=1) a small thread pool runs the same requests with
 * plain system calls.  TRIM and WRITE_ZEROES are rare and run as synchronous
 * calls on the submitting thread in both modes.
 *
 * A FUA write is RWF_DSYNC; FLUSH is fdatasync.  TRIM must leave every
 * component reading the same bytes, so it zeroes: a file gets a hole
 * punched; a block device gets fallocate(PUNCH_HOLE) on the device (the
 * kernel issues WRITE ZEROES with unmap: reads return zeros), or BLKZEROOUT
 * where the device cannot; edges not aligned to the logical block size are
 * written with zeros.  A plain discard is not used: a discarded range may
 * read back differently on each disk.
 *
 * extent() (regular files only; a block device cannot tell, so it has
 * none: "all data") answers with lseek SEEK_DATA/SEEK_HOLE on the spot: a
 * hole reads zeros.  A file system without them reports all data.
 *
 * Errors keep their errno (ENOSPC stays ENOSPC) up to the engine.
 *
 * A regular file is never grown: a write, zeroing or trim first looks at
 * its size (fstat) and fails ENODEV, as a read past the end does, when the
 * file is shorter than the component (cut short by truncate).  A write
 * past the new end would grow it back with a hole that reads as zeros,
 * and a label or lease write at the end would make it look whole again
 * (test component_file_shrinks_written).  check() sees a short file at
 * the next tick (250 ms); this closes most of the window before it.  The
 * look is skipped for 1 ms after one that found the file whole (an fstat
 * costs ~1.3 us here, 2-4% of a small write's cost per component), so a
 * cut in that millisecond, or while a write that passed still waits (in
 * the kernel, in the thread pool's queue, or requeued after a short
 * write), can still be grown back: reads of the hole return zeros until
 * check() sees a file grown to a data write's end as short, or the lease
 * renewal (~1 s) a file grown back whole (its lease block reads as
 * zeros: FAILED).  Not on network or FUSE file systems, where fstat may
 * wait for a server (local_fs): there only check() looks.
 *
 * abort() cancels what is in flight in the kernel (IORING_OP_ASYNC_CANCEL,
 * best effort) or still queued in the pool, and makes later submits fail
 * with ECONNABORTED; close() after abort() waits a bounded time, then leaves
 * requests the kernel never gave back (and their memory) behind.  check()
 * is a non-blocking look: a deleted file (link count 0) or a block device
 * that is gone (no sysfs entry, or size 0: a detached loop device).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../backend.h"
#include "../blockdev_use.h"
#include "../error.h"
#include "../sendbatch.h"

#define RING_ENTRIES 256
#define POOL_THREADS 4
#define DIRECT_ALIGN 4096u
#define WAKE_TAG ((uint64_t)1) /* user_data of the NOP that stops the reaper */
#define CANCEL_TAG ((uint64_t)2) /* user_data of abort()'s cancel request */
#define ABORT_CLOSE_WAIT_MS 5000
#define REAP_BATCH 32 /* completions the reaper sends replies for at once */

struct file_backend {
	struct bm_backend base;
	int fd_buffered;
	int fd_direct;          /* -1 when O_DIRECT is refused */
	bool is_blockdev;
	bool size_look;                 /* refuse_if_shrank looks (local fs) */
	_Atomic int64_t whole_until_ns; /* refuse_if_shrank: no look before */
	bool use_uring;
	uint32_t lbs;           /* logical block size (block devices) */
	atomic_bool aborted;

	/* io_uring mode */
	struct io_uring ring;
	pthread_mutex_t sq_lock; /* protects the submission queue */
	pthread_t reaper;

	/* thread-pool mode: queue protected by pool_lock */
	pthread_mutex_t pool_lock;
	pthread_cond_t pool_cond;
	struct bm_breq **queue;
	size_t qhead, qlen, qcap;
	bool stopping;
	pthread_t workers[POOL_THREADS];

	atomic_int inflight;
	atomic_bool abandoned;     /* closed with requests in the kernel */
	bool exclusive;            /* opened to use (locked, claimed) */
	dev_t left_dev;            /* its key in left[] */
	ino_t left_ino;
	atomic_bool files_closed;
};

static bool aligned(const struct bm_breq *r)
{
	uint64_t pos = r->offset + r->progress;
	uintptr_t p = (uintptr_t)r->buf + r->progress;
	return ((pos | (r->length - r->progress) | p) & (DIRECT_ALIGN - 1)) == 0;
}

static int fd_for(struct file_backend *fb, const struct bm_breq *r)
{
	return (fb->fd_direct >= 0 && aligned(r)) ? fb->fd_direct
	                                          : fb->fd_buffered;
}

/* Zero a range with writes, for file systems without fallocate modes. */
static int write_zeros(int fd, uint64_t off, uint64_t len)
{
	static const char zeros[65536];

	while (len) {
		size_t n = len < sizeof(zeros) ? len : sizeof(zeros);
		ssize_t w = pwrite(fd, zeros, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/*
 * Makes a block device range read zeros.  unmap (TRIM): fallocate
 * PUNCH_HOLE, which may deallocate; else ZERO_RANGE; then BLKZEROOUT.  The
 * parts not aligned to the logical block size are written.
 */
static int blockdev_zero(struct file_backend *fb, uint64_t off, uint64_t len,
                         bool unmap)
{
	int fd = fb->fd_buffered;
	uint64_t mask = fb->lbs - 1;
	uint64_t a = (off + mask) & ~mask, b = (off + len) & ~mask;
	int err;

	if (a >= b) /* no whole block inside */
		return write_zeros(fd, off, len);
	if (a > off && (err = write_zeros(fd, off, a - off)) < 0)
		return err;
	if (off + len > b && (err = write_zeros(fd, b, off + len - b)) < 0)
		return err;
	if (unmap && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	                       (off_t)a, (off_t)(b - a)) == 0)
		return 0;
	if (fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)a,
	              (off_t)(b - a)) == 0)
		return 0;
	uint64_t range[2] = {a, b - a};
	if (ioctl(fd, BLKZEROOUT, range) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOTTY && errno != EINVAL)
		return -errno;
	return write_zeros(fd, a, b - a);
}

/* TRIM and WRITE_ZEROES (and everything, in pool mode) as system calls. */
static int exec_sync(struct file_backend *fb, struct bm_breq *r)
{
	int fd = fb->fd_buffered;

	switch (r->op) {
	case BM_BOP_READ:
	case BM_BOP_WRITE:
		while (r->progress < r->length) {
			char *p = (char *)r->buf + r->progress;
			size_t n = r->length - r->progress;
			off_t off = (off_t)(r->offset + r->progress);
			int rfd = fd_for(fb, r);
			ssize_t got;
			if (r->op == BM_BOP_READ) {
				got = pread(rfd, p, n, off);
			} else {
				struct iovec iov = {p, n};
				got = pwritev2(rfd, &iov, 1, off,
				               (r->flags & BM_BOP_FUA) ? RWF_DSYNC : 0);
			}
			if (got < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			if (got == 0) /* the end of the file inside the
			                 component: it shrank (truncate), or
			                 the device went: gone, not a bad
			                 block to repair (file_check says) */
				return r->op == BM_BOP_READ ? -ENODEV : -EIO;
			r->progress += (uint32_t)got;
		}
		return 0;
	case BM_BOP_FLUSH:
		return fdatasync(fd) < 0 ? -errno : 0;
	case BM_BOP_TRIM:
		if (fb->is_blockdev)
			return blockdev_zero(fb, r->offset, r->length, true);
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		              (off_t)r->offset, r->length) == 0)
			return 0;
		if (errno == EOPNOTSUPP)
			return write_zeros(fd, r->offset, r->length);
		return -errno;
	case BM_BOP_ZERO:
		if (fb->is_blockdev)
			return blockdev_zero(fb, r->offset, r->length, false);
		if (fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		              (off_t)r->offset, r->length) == 0)
			return 0;
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		              (off_t)r->offset, r->length) == 0)
			return 0;
		return write_zeros(fd, r->offset, r->length);
	}
	return -EINVAL;
}

/* Whether fd's file system answers fstat from memory.  On a network or
 * FUSE one it may ask a server (and block the submitting thread while
 * that server is away: an NFS hard mount), so writes do not look there;
 * check() still does, on the event thread. */
static bool local_fs(int fd)
{
	static const unsigned long remote[] = {
		0x6969,     /* NFS */
		0x65735546, /* FUSE */
		0xff534d42, /* CIFS */
		0xfe534d42, /* SMB2 */
		0x00c36400, /* Ceph */
		0x01021997, /* 9p */
		0x6b414653, /* AFS */
		0x47504653, /* GPFS */
		0x0bd00bd0, /* Lustre */
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return false;
	for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++)
		if ((unsigned long)sf.f_type == remote[i])
			return false;
	return true;
}

/* A regular file shorter than the component: cut short (truncate).
 * Reads past its new end would fail, and a write there would grow it
 * back with a hole that reads as zeros (see the top). */
static int shrank_error(const struct file_backend *fb, const struct stat *st)
{
	if ((uint64_t)st->st_size >= fb->base.size)
		return 0;
	return bm_error(ENODEV, "%s: the file shrank to %llu bytes (it had "
	                "%llu)", fb->base.path, (unsigned long long)st->st_size,
	                (unsigned long long)fb->base.size);
}

/* Before a write: refused (ENODEV) when the file was cut short. */
static int refuse_if_shrank(struct file_backend *fb)
{
	struct stat st;
	struct timespec ts;

	if (!fb->size_look)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (now < atomic_load_explicit(&fb->whole_until_ns,
	                               memory_order_relaxed))
		return 0;
	if (fstat(fb->fd_buffered, &st) < 0)
		return 0; /* (check() says why) */
	int err = shrank_error(fb, &st);
	if (err == 0)
		atomic_store_explicit(&fb->whole_until_ns, now + 1000000,
		                      memory_order_relaxed);
	return err;
}

/* ---- io_uring mode ---- */

/* Queues the rest of r.  Caller holds sq_lock. */
static void prep_locked(struct file_backend *fb, struct bm_breq *r)
{
	struct io_uring_sqe *sqe;

	while ((sqe = io_uring_get_sqe(&fb->ring)) == NULL)
		io_uring_submit(&fb->ring);
	switch (r->op) {
	case BM_BOP_READ:
		io_uring_prep_read(sqe, fd_for(fb, r), (char *)r->buf + r->progress,
		                   r->length - r->progress, r->offset + r->progress);
		break;
	case BM_BOP_WRITE:
		io_uring_prep_write(sqe, fd_for(fb, r),
		                    (char *)r->buf + r->progress,
		                    r->length - r->progress, r->offset + r->progress);
		if (r->flags & BM_BOP_FUA)
			sqe->rw_flags = RWF_DSYNC;
		break;
	default: /* FLUSH */
		io_uring_prep_fsync(sqe, fb->fd_buffered, IORING_FSYNC_DATASYNC);
		break;
	}
	io_uring_sqe_set_data(sqe, r);
}

static void uring_queue(struct file_backend *fb, struct bm_breq *r)
{
	pthread_mutex_lock(&fb->sq_lock);
	prep_locked(fb, r);
	io_uring_submit(&fb->ring);
	pthread_mutex_unlock(&fb->sq_lock);
}

/* What this process left behind (file_close: requests the kernel still
 * holds), so that opening its path again says so rather than "in use by
 * another": a block device by its number, a file by device and inode. */
#define LEFT_MAX 16
static pthread_mutex_t left_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	dev_t dev;
	ino_t ino;
} left[LEFT_MAX];
static int nleft;

static void left_key(const struct stat *st, dev_t *dev, ino_t *ino)
{
	*dev = S_ISBLK(st->st_mode) ? st->st_rdev : st->st_dev;
	*ino = S_ISBLK(st->st_mode) ? 0 : st->st_ino;
}

static void left_add(dev_t dev, ino_t ino)
{
	pthread_mutex_lock(&left_lock);
	if (nleft < LEFT_MAX)
		left[nleft++] = (typeof(left[0])){dev, ino};
	pthread_mutex_unlock(&left_lock);
}

static void left_del(dev_t dev, ino_t ino)
{
	pthread_mutex_lock(&left_lock);
	for (int i = 0; i < nleft; i++)
		if (left[i].dev == dev && left[i].ino == ino) {
			left[i] = left[--nleft];
			break;
		}
	pthread_mutex_unlock(&left_lock);
}

/* Whether path is one this process left behind. */
static bool left_behind(const char *path)
{
	struct stat st;
	dev_t dev;
	ino_t ino;
	bool found = false;

	if (stat(path, &st) < 0)
		return false;
	left_key(&st, &dev, &ino);
	pthread_mutex_lock(&left_lock);
	for (int i = 0; i < nleft && !found; i++)
		found = left[i].dev == dev && left[i].ino == ino;
	pthread_mutex_unlock(&left_lock);
	return found;
}

static int refuse_left_behind(const char *path)
{
	return bm_error(EBUSY, "%s: requests given up on (it did not answer) "
	                "are still in the kernel; it is opened again once they "
	                "come back", path);
}

/* Closes the descriptors once (their flock goes with them). */
static void close_files(struct file_backend *fb)
{
	if (atomic_exchange(&fb->files_closed, true))
		return;
	if (fb->fd_direct >= 0)
		close(fb->fd_direct);
	close(fb->fd_buffered);
	if (atomic_load(&fb->abandoned) && fb->exclusive)
		left_del(fb->left_dev, fb->left_ino);
}

static void finish(struct file_backend *fb, struct bm_breq *r, int result)
{
	/* the last request of a backend left behind (file_close) came
	 * back: its files go now, so that the path can be opened again
	 * (its lock was held for as long as a write of it could land) */
	if (atomic_fetch_sub(&fb->inflight, 1) == 1 &&
	    atomic_load(&fb->abandoned))
		close_files(fb);
	r->done(r, result);
}

static void *reaper_main(void *arg)
{
	struct file_backend *fb = arg;

	pthread_setname_np(pthread_self(), "bm-file-reap");
	/* the completions one wait brings are one batch (at most
	 * REAP_BATCH, so that a stream of completions that never lets the
	 * queue run empty does not hold replies): the replies and requests
	 * they make this thread send go out together (sendbatch.c) */
	unsigned reaped = 0;
	bm_sendbatch_open();
	for (;;) {
		struct io_uring_cqe *cqe;
		int err = io_uring_peek_cqe(&fb->ring, &cqe);
		if (err == -EAGAIN || reaped >= REAP_BATCH) {
			bm_sendbatch_flush(); /* never sleep on a deferred send */
			reaped = 0;
		}
		if (err == -EAGAIN)
			err = io_uring_wait_cqe(&fb->ring, &cqe);
		reaped++;
		if (err == -EINTR)
			continue;
		if (err < 0)
			break;
		uint64_t tag = cqe->user_data;
		int res = cqe->res;
		io_uring_cqe_seen(&fb->ring, cqe);
		if (tag == WAKE_TAG)
			break;
		if (tag == CANCEL_TAG)
			continue;
		struct bm_breq *r = (struct bm_breq *)(uintptr_t)tag;
		if (atomic_load(&fb->aborted) && (res == -ECANCELED || res >= 0)) {
			/* Cancelled, or finished but not worth going on with. */
			if (res < 0 || ((r->op == BM_BOP_READ || r->op == BM_BOP_WRITE) &&
			                r->progress + (uint32_t)res < r->length)) {
				finish(fb, r, -ECONNABORTED);
				continue;
			}
		}
		if (res == -EAGAIN || res == -EINTR) {
			if (atomic_load(&fb->aborted)) {
				finish(fb, r, -ECONNABORTED);
				continue;
			}
			uring_queue(fb, r);
			continue;
		}
		if (res < 0) {
			finish(fb, r, res);
			continue;
		}
		if (r->op == BM_BOP_READ || r->op == BM_BOP_WRITE) {
			if (res == 0) { /* the end: see exec_sync */
				finish(fb, r, r->op == BM_BOP_READ ? -ENODEV : -EIO);
				continue;
			}
			r->progress += (uint32_t)res;
			if (r->progress < r->length) {
				uring_queue(fb, r); /* short transfer: the rest */
				continue;
			}
		}
		finish(fb, r, 0);
	}
	bm_sendbatch_close();
	return NULL;
}

/* ---- thread-pool mode ---- */

static void *worker_main(void *arg)
{
	struct file_backend *fb = arg;

	pthread_setname_np(pthread_self(), "bm-file-io");
	for (;;) {
		pthread_mutex_lock(&fb->pool_lock);
		while (fb->qlen == 0 && !fb->stopping)
			pthread_cond_wait(&fb->pool_cond, &fb->pool_lock);
		if (fb->qlen == 0) {
			pthread_mutex_unlock(&fb->pool_lock);
			return NULL;
		}
		struct bm_breq *r = fb->queue[fb->qhead];
		fb->qhead = (fb->qhead + 1) % fb->qcap;
		fb->qlen--;
		pthread_mutex_unlock(&fb->pool_lock);
		finish(fb, r, atomic_load(&fb->aborted) ? -ECONNABORTED
		                                        : exec_sync(fb, r));
	}
}

static int pool_queue(struct file_backend *fb, struct bm_breq *r)
{
	pthread_mutex_lock(&fb->pool_lock);
	if (fb->qlen == fb->qcap) {
		size_t ncap = fb->qcap ? fb->qcap * 2 : 64;
		struct bm_breq **nq = malloc(ncap * sizeof(*nq));
		if (!nq) {
			pthread_mutex_unlock(&fb->pool_lock);
			return -ENOMEM;
		}
		for (size_t i = 0; i < fb->qlen; i++)
			nq[i] = fb->queue[(fb->qhead + i) % fb->qcap];
		free(fb->queue);
		fb->queue = nq;
		fb->qhead = 0;
		fb->qcap = ncap;
	}
	fb->queue[(fb->qhead + fb->qlen) % fb->qcap] = r;
	fb->qlen++;
	pthread_cond_signal(&fb->pool_cond);
	pthread_mutex_unlock(&fb->pool_lock);
	return 0;
}

/* ---- ops ---- */

static int file_submit(struct bm_backend *be, struct bm_breq *r)
{
	struct file_backend *fb = (struct file_backend *)be;

	r->progress = 0;
	if (atomic_load(&fb->aborted))
		return -ECONNABORTED;
	atomic_fetch_add(&fb->inflight, 1);
	if (r->op != BM_BOP_READ && r->op != BM_BOP_FLUSH) {
		int shrank = refuse_if_shrank(fb);
		if (shrank) {
			r->unanswered = true; /* (refused: backend.h) */
			finish(fb, r, shrank);
			return 0;
		}
	}
	if (r->op == BM_BOP_TRIM || r->op == BM_BOP_ZERO) {
		/* done here, synchronously: what this thread's batch holds
		 * for the other components goes first, not after it */
		bm_sendbatch_flush();
		int res = exec_sync(fb, r);
		if (res == 0 && (r->flags & BM_BOP_FUA) &&
		    fdatasync(fb->fd_buffered) < 0)
			res = -errno;
		finish(fb, r, res);
		return 0;
	}
	if (fb->use_uring) {
		uring_queue(fb, r);
		return 0;
	}
	int err = pool_queue(fb, r);
	if (err)
		atomic_fetch_sub(&fb->inflight, 1);
	return err;
}

/*
 * Synchronous calls (labels, leases, the start's reads) go through
 * submit() with the process's deadline, as an NBD export's do: a file or
 * device whose requests the kernel holds (a hung disk, an NFS server gone,
 * a FUSE file that never answers) makes them fail with -ETIMEDOUT instead
 * of hanging the start or a verb in a read nothing can interrupt.  It is
 * then given up (aborted): later calls fail at once, and the close waits
 * a bounded time for what the kernel still holds (file_close).
 */
static int file_sync_call(struct bm_backend *be, enum bm_bop op, void *buf,
                          size_t len, uint64_t off)
{
	if (len > (1u << 30))
		return -EINVAL; /* (no caller asks that much at once) */
	int err = bm_backend_io_wait_timeout(be, op, buf, (uint32_t)len, off,
	                                     0, bm_backend_sync_timeout_ms());
	if (err == -ETIMEDOUT)
		be->ops->abort(be);
	return err;
}

static int file_pread_sync(struct bm_backend *be, void *buf, size_t len,
                           uint64_t off)
{
	return file_sync_call(be, BM_BOP_READ, buf, len, off);
}

static int file_pwrite_sync(struct bm_backend *be, const void *buf,
                            size_t len, uint64_t off)
{
	return file_sync_call(be, BM_BOP_WRITE, (void *)buf, len, off);
}

static int file_flush_sync(struct bm_backend *be)
{
	return file_sync_call(be, BM_BOP_FLUSH, NULL, 0, 0);
}

static void file_abort(struct bm_backend *be);

static void file_close(struct bm_backend *be)
{
	struct file_backend *fb = (struct file_backend *)be;

	/* a request whose waiter gave up (a read past its deadline: the
	 * lease, the bitmap header) may never come back: not waited for
	 * unbounded, as an export's (nbd.c nbd_close_backend) */
	if (atomic_load(&be->detached) > 0)
		file_abort(be);
	bool bounded = atomic_load(&fb->aborted);
	for (int ms = 0; atomic_load(&fb->inflight) > 0; ms++) {
		if (bounded && ms >= ABORT_CLOSE_WAIT_MS) {
			/* The kernel has not given them back (a hung device):
			 * leave them, their buffers and this backend behind. */
			fprintf(stderr, "blkmirror: %s: %d requests still in the "
			        "kernel %d s after abort; leaving them (the "
			        "path is held until they come back)\n",
			        be->path, atomic_load(&fb->inflight),
			        ABORT_CLOSE_WAIT_MS / 1000);
			if (fb->exclusive) /* (what holds the path) */
				left_add(fb->left_dev, fb->left_ino);
			atomic_store(&fb->abandoned, true);
			if (atomic_load(&fb->inflight) == 0) /* (came back) */
				close_files(fb);
			return;
		}
		usleep(1000);
	}
	if (fb->use_uring) {
		pthread_mutex_lock(&fb->sq_lock);
		struct io_uring_sqe *sqe;
		while ((sqe = io_uring_get_sqe(&fb->ring)) == NULL)
			io_uring_submit(&fb->ring);
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, WAKE_TAG);
		io_uring_submit(&fb->ring);
		pthread_mutex_unlock(&fb->sq_lock);
		pthread_join(fb->reaper, NULL);
		io_uring_queue_exit(&fb->ring);
	} else {
		pthread_mutex_lock(&fb->pool_lock);
		fb->stopping = true;
		pthread_cond_broadcast(&fb->pool_cond);
		pthread_mutex_unlock(&fb->pool_lock);
		for (int i = 0; i < POOL_THREADS; i++)
			pthread_join(fb->workers[i], NULL);
		free(fb->queue);
	}
	close_files(fb);
	pthread_mutex_destroy(&fb->sq_lock);
	pthread_mutex_destroy(&fb->pool_lock);
	pthread_cond_destroy(&fb->pool_cond);
	free(fb);
}

static void file_abort(struct bm_backend *be)
{
	struct file_backend *fb = (struct file_backend *)be;

	if (atomic_exchange(&fb->aborted, true))
		return;
	if (fb->use_uring) {
		pthread_mutex_lock(&fb->sq_lock);
		struct io_uring_sqe *sqe;
		while ((sqe = io_uring_get_sqe(&fb->ring)) == NULL)
			io_uring_submit(&fb->ring);
		/* Every request of the ring (the cancel skips itself). */
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, CANCEL_TAG);
		io_uring_submit(&fb->ring);
		pthread_mutex_unlock(&fb->sq_lock);
		return;
	}
	/* Pool mode: what is queued fails now; what runs finishes. */
	pthread_mutex_lock(&fb->pool_lock);
	size_t n = fb->qlen;
	struct bm_breq **take = n ? malloc(n * sizeof(*take)) : NULL;
	if (take) {
		for (size_t i = 0; i < n; i++)
			take[i] = fb->queue[(fb->qhead + i) % fb->qcap];
		fb->qlen = 0;
	}
	pthread_mutex_unlock(&fb->pool_lock);
	if (take) {
		for (size_t i = 0; i < n; i++)
			finish(fb, take[i], -ECONNABORTED);
		free(take);
	}
	/* (without memory for the list, the workers fail them one by one) */
}

static int file_check(struct bm_backend *be)
{
	struct file_backend *fb = (struct file_backend *)be;
	struct stat st;

	if (fstat(fb->fd_buffered, &st) < 0)
		return bm_error(ENODEV, "%s: cannot stat: %s", be->path,
		                strerror(errno));
	if (!fb->is_blockdev) {
		if (st.st_nlink == 0)
			return bm_error(ENODEV, "%s: the file was deleted", be->path);
		return shrank_error(fb, &st);
	}
	char p[96];
	unsigned long long sectors = 0;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/size",
	         major(be->st_rdev), minor(be->st_rdev));
	FILE *f = fopen(p, "r");
	if (!f)
		return errno == ENOENT
		       ? bm_error(ENODEV, "%s: the block device is gone", be->path)
		       : 0;
	int got = fscanf(f, "%llu", &sectors);
	fclose(f);
	if (got == 1 && sectors == 0)
		return bm_error(ENODEV, "%s: the block device is gone (its size is "
		                "now 0)", be->path);
	if (got == 1 && sectors * 512 < be->size)
		return bm_error(ENODEV, "%s: the block device shrank to %llu "
		                "bytes (it had %llu)", be->path, sectors * 512,
		                (unsigned long long)be->size);
	return 0;
}

static int file_extent(struct bm_backend *be, struct bm_extent_req *r)
{
	struct file_backend *fb = (struct file_backend *)be;
	off_t off = (off_t)r->offset, at;

	r->run = r->length;
	r->zero = false;
	if (atomic_load(&fb->aborted))
		return -ECONNABORTED;
	at = lseek(fb->fd_buffered, off, SEEK_DATA);
	if (at < 0 && errno == ENXIO) {
		r->zero = true; /* no data from off to the end of the file */
	} else if (at > off) {
		r->zero = true;
		if ((uint64_t)(at - off) < r->length)
			r->run = (uint64_t)(at - off);
	} else if (at == off) {
		at = lseek(fb->fd_buffered, off, SEEK_HOLE);
		if (at > off && (uint64_t)(at - off) < r->length)
			r->run = (uint64_t)(at - off);
	}
	/* any other failure: all data, which is always true */
	r->done(r, 0);
	return 0;
}

static const struct bm_backend_ops file_ops = {
	.kind = "file",
	.submit = file_submit,
	.pread_sync = file_pread_sync,
	.pwrite_sync = file_pwrite_sync,
	.flush_sync = file_flush_sync,
	.close = file_close,
	.abort = file_abort,
	.check = file_check,
	.extent = file_extent,
};

static const struct bm_backend_ops blockdev_ops = {
	.kind = "blockdev",
	.submit = file_submit,
	.pread_sync = file_pread_sync,
	.pwrite_sync = file_pwrite_sync,
	.flush_sync = file_flush_sync,
	.close = file_close,
	.abort = file_abort,
	.check = file_check,
};

static bool read_rotational(dev_t rdev)
{
	char p[128];
	int v = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/queue/rotational",
	         major(rdev), minor(rdev));
	f = fopen(p, "r");
	if (!f)
		return false;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v == 1;
}

static bool uring_wanted(void)
{
	const char *e = getenv("BLKMIRROR_NO_IO_URING");
	return !(e && *e && strcmp(e, "0") != 0);
}

static int start_engine(struct file_backend *fb)
{
	if (uring_wanted() &&
	    io_uring_queue_init(RING_ENTRIES, &fb->ring, 0) == 0) {
		if (pthread_create(&fb->reaper, NULL, reaper_main, fb) == 0) {
			fb->use_uring = true;
			return 0;
		}
		io_uring_queue_exit(&fb->ring);
	}
	for (int i = 0; i < POOL_THREADS; i++) {
		if (pthread_create(&fb->workers[i], NULL, worker_main, fb) != 0) {
			pthread_mutex_lock(&fb->pool_lock);
			fb->stopping = true;
			pthread_cond_broadcast(&fb->pool_cond);
			pthread_mutex_unlock(&fb->pool_lock);
			while (i--)
				pthread_join(fb->workers[i], NULL);
			return bm_error(EAGAIN, "cannot start I/O threads");
		}
	}
	return 0;
}

int bm_file_backend_open(const char *path, bool exclusive,
                         struct bm_backend **out)
{
	struct file_backend *fb;
	struct stat st;
	int fd, err;

	/* A block device is claimed, as mkfs and mdadm do (O_EXCL without
	 * O_CREAT: Linux claims a block device and ignores it for a file):
	 * the kernel then refuses one that is mounted, held by md, dm or
	 * swap or by another program's exclusive opening, and a partition of
	 * a disk claimed (or the disk of a partition claimed), which no lock
	 * of ours could see. */
	fd = open(path, O_RDWR | O_CLOEXEC | (exclusive ? O_EXCL : 0));
	if (fd < 0 && errno == EBUSY && exclusive) {
		char who[512];
		if (left_behind(path))
			return refuse_left_behind(path);
		if (bm_blockdev_in_use(path, who, sizeof(who), false))
			return bm_error(EBUSY, "%s: the device is %s", path, who);
		return bm_error(EBUSY, "%s: the device is in use (opened "
		                "exclusively by another program, or a partition "
		                "of a disk in use, or the disk of a partition in "
		                "use); free it first", path);
	}
	if (fd < 0) {
		err = errno;
		if (err == ENOENT)
			return bm_error(err, "%s: no such file or device", path);
		if (err == EISDIR)
			return bm_error(err, "%s: is a directory; a component must be "
			                "a regular file, a block device or an NBD URI",
			                path);
		return bm_error(err, "%s: cannot open for reading and writing: %s",
		                path, strerror(err));
	}
	if (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
		close(fd);
		return bm_error(EINVAL, "%s: not a regular file or block device; a "
		                "component must be a regular file, a block device "
		                "or an NBD URI", path);
	}
	int ro = 0;
	if (exclusive && S_ISBLK(st.st_mode) && ioctl(fd, BLKROGET, &ro) == 0 &&
	    ro) {
		close(fd);
		return bm_error(EROFS, "%s: the device is read-only; a component "
		                "must be writable", path);
	}
	if (exclusive && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno;
		close(fd);
		if (err == EWOULDBLOCK && left_behind(path))
			return refuse_left_behind(path);
		if (err == EWOULDBLOCK)
			return bm_error(EBUSY, "%s: in use by a running blkmirror; stop "
			                "that mirror first", path);
		return bm_error(err, "%s: cannot lock: %s", path, strerror(err));
	}
	fb = calloc(1, sizeof(*fb));
	if (!fb) {
		close(fd);
		return bm_error(ENOMEM, "out of memory");
	}
	fb->fd_buffered = fd;
	fb->exclusive = exclusive;
	left_key(&st, &fb->left_dev, &fb->left_ino);
	fb->is_blockdev = S_ISBLK(st.st_mode);
	fb->base.ops = fb->is_blockdev ? &blockdev_ops : &file_ops;
	snprintf(fb->base.path, sizeof(fb->base.path), "%s", path);
	fb->base.st_dev = st.st_dev;
	fb->base.st_ino = st.st_ino;
	fb->base.st_rdev = fb->is_blockdev ? st.st_rdev : 0;
	if (fb->is_blockdev) {
		uint64_t sz = 0;
		if (ioctl(fd, BLKGETSIZE64, &sz) < 0)
			sz = 0;
		fb->base.size = sz;
		fb->base.rotational = read_rotational(st.st_rdev);
		int lbs = 0;
		fb->lbs = (ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs >= 512 &&
		           (lbs & (lbs - 1)) == 0) ? (uint32_t)lbs : 512;
	} else {
		fb->base.size = (uint64_t)st.st_size;
		fb->size_look = local_fs(fd);
	}
	fb->fd_direct = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	pthread_mutex_init(&fb->sq_lock, NULL);
	pthread_mutex_init(&fb->pool_lock, NULL);
	pthread_cond_init(&fb->pool_cond, NULL);
	err = start_engine(fb);
	if (err < 0) {
		if (fb->fd_direct >= 0)
			close(fb->fd_direct);
		close(fd);
		free(fb);
		return err;
	}
	*out = &fb->base;
	return 0;
}
