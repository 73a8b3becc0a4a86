/*
 * attach/detach: the pieces that make a running mirror a local block
 * device (cmd_attach.c drives them; README "attach" says what the user
 * sees).
 *
 *   kernel NBD (attach_nbd.c)   nbd-client connects /dev/nbdN to the
 *                               mirror's socket; only where the nbd module
 *                               and nbd-client exist (untested here)
 *   FUSE + loop (attach_fuse.c, attach_loop.c)
 *                               nbdfuse shows the mirror as a file in a
 *                               FUSE mount under the state directory; a
 *                               loop device (direct I/O when it can) over
 *                               that file
 *
 * blockdev_use.c says who uses a block device (mounts, holders, open
 * files), so that detach refuses instead of pulling a device from under a
 * file system.
 */
#ifndef BM_ATTACH_H
#define BM_ATTACH_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A FUSE mount made by nbdfuse; pid + start time identify the process
 * (a pid alone may be reused once it exits). */
struct fuse_export {
	char mount[PATH_MAX];   /* directory nbdfuse mounts on */
	char file[PATH_MAX];    /* the mirror as a file in it */
	pid_t pid;
	unsigned long long start;
};

/* 0 when nbdfuse can run here; else -1 with the reason in why. */
int fuse_export_available(char *why, size_t len);
/* Starts nbdfuse for the mirror's Unix socket and waits (10 s at most)
 * until the file is there.  0, or -1 with one line in err (nothing left
 * behind). */
int fuse_export_start(const char *name, const char *socket,
                      struct fuse_export *fx, char *err, size_t len);
/* Kills nbdfuse at once (the FUSE connection aborts: requests waiting on
 * a server that does not answer fail).  Only the recorded process. */
void fuse_export_abort(const struct fuse_export *fx);
/* Unmounts, waits for nbdfuse to exit (killing it after 5 s), removes the
 * mount directory.  0, or -1 with one line in err (a busy mount stays). */
int fuse_export_stop(const struct fuse_export *fx, char *err, size_t len);
/* Whether the recorded nbdfuse process still runs. */
bool fuse_export_running(const struct fuse_export *fx);
/* The start time of pid (/proc/PID/stat), 0 when it is gone or a zombie. */
unsigned long long proc_start_time(pid_t pid);

/* Loop devices.  Configures a free loop device (or want when given) over
 * file, with direct I/O when the file allows it (*dio says).  0 with the
 * device in dev, or -1 with one line in err. */
int loop_attach(const char *file, const char *want, char *dev, size_t devlen,
                bool *dio, char *err, size_t len);
/* 0 when dev is a free loop device, else -1 with one line in err. */
int loop_check_device(const char *dev, char *err, size_t len);
/* 1 when dev is a loop device over backing (its path as the kernel keeps
 * it), 0 when it is free or over something else, -errno. */
int loop_backed_by(const char *dev, const char *backing);
/* Releases dev and waits (5 s at most) until the kernel has.  0 or -1
 * with one line in err. */
int loop_detach(const char *dev, char *err, size_t len);

/* Kernel NBD through nbd-client (attach_nbd.c).  1 when the nbd module
 * and nbd-client are there. */
int knbd_available(void);
int knbd_attach(const char *name, const char *socket, const char *want,
                char *dev, size_t devlen, char *err, size_t len);
/* 1 when dev is connected (nbd-client -c), 0 when not. */
int knbd_connected(const char *dev);
int knbd_detach(const char *dev, char *err, size_t len);


/* Runs argv (PATH searched) with stdin and stdout on /dev/null, stderr
 * captured; waits timeout_s at most (then kills it).  Its exit status,
 * or -1 (could not run, killed); its last stderr line in err. */
int run_program(char *const argv[], int timeout_s, char *err, size_t len);
/* 1 when prog is an executable on PATH. */
int program_exists(const char *prog);

#endif
