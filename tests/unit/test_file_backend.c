/* The file backend's failure behaviour, in both engines (io_uring and the
 * thread pool): check() sees a deleted file, abort() makes later submits
 * fail with ECONNABORTED and close() return, TRIM on a file reads back
 * zeros, a full file system reports ENOSPC (not EIO), and a file cut
 * short is never grown back by a write, a zeroing or a trim (ENODEV, the
 * file keeps its new size). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "check.h"

static char dir[] = "/tmp/bm-filebe.XXXXXX";

static struct bm_backend *open_file(const char *name, off_t size)
{
	char p[256];
	struct bm_backend *be = NULL;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, size) == 0);
	close(fd);
	CHECK(bm_file_backend_open(p, false, &be) == 0);
	return be;
}

static void check_deleted_abort_trim(void)
{
	static char buf[65536] __attribute__((aligned(4096)));
	struct bm_backend *be = open_file("a", 1 << 20);

	if (!be)
		return;
	CHECK(be->ops->check(be) == 0);
	memset(buf, 0x5a, sizeof(buf));
	CHECK(bm_backend_io_wait(be, BM_BOP_WRITE, buf, sizeof(buf), 0, 0) == 0);
	CHECK(bm_backend_io_wait(be, BM_BOP_TRIM, NULL, 8192, 4096, 0) == 0);
	memset(buf, 1, sizeof(buf));
	CHECK(bm_backend_io_wait(be, BM_BOP_READ, buf, sizeof(buf), 0, 0) == 0);
	CHECK(buf[0] == 0x5a && buf[4095] == 0x5a);
	CHECK(buf[4096] == 0 && buf[12287] == 0);
	CHECK(buf[12288] == 0x5a);

	unlink(be->path);
	CHECK_EQ(be->ops->check(be), -ENODEV);

	be->ops->abort(be);
	be->ops->abort(be); /* idempotent */
	CHECK_EQ(bm_backend_io_wait(be, BM_BOP_READ, buf, 4096, 0, 0),
	         -ECONNABORTED);
	CHECK_EQ(bm_backend_io_wait(be, BM_BOP_TRIM, NULL, 4096, 0, 0),
	         -ECONNABORTED);
	be->ops->close(be);
}

static void check_cut_short(void)
{
	static char buf[4096] __attribute__((aligned(4096)));
	struct bm_backend *be = open_file("c", 1 << 20);
	struct stat st;

	if (!be)
		return;
	memset(buf, 0x44, sizeof(buf));
	CHECK(bm_backend_io_wait(be, BM_BOP_WRITE, buf, sizeof(buf), 0, 0) == 0);
	CHECK(truncate(be->path, 64 << 10) == 0);
	usleep(2000); /* past the 1 ms in which a whole file is not looked at */
	CHECK_EQ(bm_backend_io_wait(be, BM_BOP_WRITE, buf, sizeof(buf),
	                            (1 << 20) - 4096, 0), -ENODEV);
	CHECK_EQ(bm_backend_io_wait(be, BM_BOP_WRITE, buf, sizeof(buf), 0, 0),
	         -ENODEV); /* (below the new end too: the file is not whole) */
	CHECK_EQ(bm_backend_io_wait(be, BM_BOP_ZERO, NULL, 8192, 512 << 10, 0),
	         -ENODEV);
	CHECK_EQ(bm_backend_io_wait(be, BM_BOP_TRIM, NULL, 8192, 512 << 10, 0),
	         -ENODEV);
	CHECK_EQ(be->ops->pwrite_sync(be, buf, sizeof(buf), (1 << 20) - 4096),
	         -ENODEV);
	CHECK(stat(be->path, &st) == 0 && st.st_size == 64 << 10);
	CHECK(bm_backend_io_wait(be, BM_BOP_READ, buf, sizeof(buf), 0, 0) == 0);
	CHECK(buf[0] == 0x44); /* reads below the new end still work */
	CHECK_EQ(be->ops->check(be), -ENODEV);
	unlink(be->path);
	be->ops->close(be);
}

/* A file larger than its (tmpfs) file system: writes past the space fail
 * with ENOSPC. */
static void check_enospc(const char *mnt)
{
	static char buf[1 << 20] __attribute__((aligned(4096)));
	char p[320];
	struct bm_backend *be = NULL;
	int err = 0, fd;

	snprintf(p, sizeof(p), "%s/big", mnt);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && ftruncate(fd, 16 << 20) == 0);
	close(fd);
	CHECK(bm_file_backend_open(p, false, &be) == 0);
	if (!be)
		return;
	memset(buf, 0x33, sizeof(buf));
	for (int i = 0; i < 16 && err == 0; i++)
		err = bm_backend_io_wait(be, BM_BOP_WRITE, buf, sizeof(buf),
		                         (uint64_t)i << 20, 0);
	CHECK_EQ(err, -ENOSPC);
	be->ops->close(be);
	unlink(p);
}

int main(void)
{
	char mnt[200];
	bool mounted;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(mnt, sizeof(mnt), "%s/small", dir);
	mkdir(mnt, 0700);
	mounted = mount("tmpfs", mnt, "tmpfs", 0, "size=4m") == 0;
	if (!mounted)
		printf("(no tmpfs mount here: the ENOSPC case is skipped)\n");
	for (int pool = 0; pool < 2; pool++) {
		if (pool)
			setenv("BLKMIRROR_NO_IO_URING", "1", 1);
		check_deleted_abort_trim();
		check_cut_short();
		if (mounted)
			check_enospc(mnt);
	}
	if (mounted)
		umount2(mnt, MNT_DETACH);
	rmdir(mnt);
	rmdir(dir);
	return check_exit();
}
