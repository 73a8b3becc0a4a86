/*
 * blkmirror attach NAME [--device PATH]: a running mirror as a local block
 * device; its path is the only line on stdout.  blkmirror detach
 * NAME|DEVICE undoes it.
 *
 * How (attach.h): the kernel's NBD driver through nbd-client where it
 * exists, else nbdfuse + a loop device.  The server's Unix socket comes
 * from NAME.socket (serve records it), so attach works whatever path the
 * server was given.  What attach made is recorded in NAME.attach, one
 * "key value" a line:
 *
 *   kind loop|nbd
 *   device /dev/loop3
 *   mount STATE_DIR/NAME.fuse        (loop only: the FUSE mount,
 *   file STATE_DIR/NAME.fuse/NAME     the mirror as a file,
 *   pid 1234 / start 5678             nbdfuse and its start time)
 *
 * so that a second attach is refused, status shows the device, stop
 * refuses while attached (naming the device), and detach knows what to
 * undo.  attach and detach serialize on flock(STATE_DIR).
 *
 * Detach, in order: refuse while the device is mounted, stacked on, used
 * as swap or held open (blockdev_use.c; never a lazy unmount of the
 * user's file system); flush the device (10 s deadline: a server that
 * died or hangs must not hang detach; past it nbdfuse is killed, which
 * fails what waits); release the loop device (only if it is still over
 * our file); unmount the FUSE mount and wait for nbdfuse to exit (killed
 * after 5 s); remove the directory and the record.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "blockdev_use.h"
#include "cli.h"
#include "statedir.h"

#define FLUSH_TIMEOUT_S 10
#define LOCK_WAIT_S 30

struct attachment {
	char kind[8];
	char device[PATH_MAX];
	struct fuse_export fx;
};

static int record_write(const char *name, const struct attachment *a)
{
	char text[3 * PATH_MAX + 128];

	if (strcmp(a->kind, "loop") == 0)
		snprintf(text, sizeof(text), "kind loop\ndevice %s\nmount %s\n"
		         "file %s\npid %ld\nstart %llu\n", a->device, a->fx.mount,
		         a->fx.file, (long)a->fx.pid, a->fx.start);
	else
		snprintf(text, sizeof(text), "kind %s\ndevice %s\n", a->kind,
		         a->device);
	return state_write_file(name, ".attach", text);
}

/* 1 with the record, 0 when there is none, -errno. */
static int record_read(const char *name, struct attachment *a)
{
	char text[3 * PATH_MAX + 128], *line, *save = NULL;
	int r;

	memset(a, 0, sizeof(*a));
	r = state_read_file(name, ".attach", text, sizeof(text));
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, ' ');
		if (!v)
			continue;
		*v++ = '\0';
		if (strcmp(line, "kind") == 0)
			snprintf(a->kind, sizeof(a->kind), "%s", v);
		else if (strcmp(line, "device") == 0)
			snprintf(a->device, sizeof(a->device), "%s", v);
		else if (strcmp(line, "mount") == 0)
			snprintf(a->fx.mount, sizeof(a->fx.mount), "%s", v);
		else if (strcmp(line, "file") == 0)
			snprintf(a->fx.file, sizeof(a->fx.file), "%s", v);
		else if (strcmp(line, "pid") == 0)
			a->fx.pid = (pid_t)atol(v);
		else if (strcmp(line, "start") == 0)
			a->fx.start = strtoull(v, NULL, 10);
	}
	return a->device[0] ? 1 : -EINVAL;
}

/* Whether the device still is what the record says (after a reboot the
 * record may name a device that is free or someone else's). */
static bool record_live(const struct attachment *a)
{
	if (strcmp(a->kind, "loop") == 0)
		return loop_backed_by(a->device, a->fx.file) == 1;
	return knbd_connected(a->device) == 1;
}

int attach_device(const char *name, char *dev, size_t len)
{
	struct attachment a;

	if (record_read(name, &a) != 1 || !record_live(&a))
		return 0;
	snprintf(dev, len, "%s", a.device);
	return 1;
}

/* flock on the state directory: one attach or detach at a time. */
static int lock_attachments(void)
{
	double waited = 0;
	int fd;

	if (mkdir(state_dir(), 0755) < 0 && errno != EEXIST) {
		cli_fail("cannot create %s: %s", state_dir(), strerror(errno));
		return -1;
	}
	fd = open(state_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		cli_fail("cannot open %s: %s", state_dir(), strerror(errno));
		return -1;
	}
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_S) {
			cli_fail("another attach or detach holds %s for more than "
			         "%d s; try again", state_dir(), LOCK_WAIT_S);
			close(fd);
			return -1;
		}
		usleep(20000);
		waited += 0.02;
	}
	return fd;
}

/* The mirror must be known and served; 0 or the exit status 1. */
static int check_serving(const char *name)
{
	char what[64], **paths;
	size_t n;
	pid_t pid;
	int r;

	if (!bm_name_valid(name))
		return cli_fail("invalid mirror name '%s'", name);
	r = state_read_components(name, &paths, &n);
	if (r == -ENOENT)
		return cli_fail("no mirror named '%s' in %s", name, state_dir());
	if (r < 0)
		return cli_fail("cannot read the state of '%s': %s", name,
		                strerror(-r));
	state_free(paths, n);
	r = state_lock_holder(name, &pid, what, sizeof(what));
	if (r < 0)
		return cli_fail("cannot tell whether '%s' is running: %s", name,
		                strerror(-r));
	if (r == 0)
		return cli_fail("mirror '%s' is not running; start it first with "
		                "'blkmirror serve %s'", name, name);
	if (strcmp(what, "serve") != 0)
		return cli_fail("mirror '%s' is busy: pid %ld (%s); try again", name,
		                (long)pid, what[0] ? what : "starting");
	return 0;
}

static int server_socket(const char *name, char *sock, size_t len)
{
	struct stat st;
	int r = state_read_file(name, ".socket", sock, len);

	if (r == -ENOENT)
		return cli_fail("%s is served without a Unix socket (or is still "
		                "starting): attach needs 'serve %s --socket PATH'",
		                name, name);
	if (r < 0)
		return cli_fail("cannot read %s/%s.socket: %s", state_dir(), name,
		                strerror(-r));
	sock[strcspn(sock, "\n")] = '\0';
	if (stat(sock, &st) < 0 || !S_ISSOCK(st.st_mode))
		return cli_fail("%s: the server's socket %s is not there; is it "
		                "stopping?", name, sock);
	return 0;
}

static int attach_one(const char *name, const char *want)
{
	struct attachment a;
	char sock[PATH_MAX], err[1024];
	bool dio = false, nbd;
	int lock, rc = 1, r;

	if (check_serving(name))
		return 1;
	nbd = want ? strncmp(want, "/dev/nbd", 8) == 0 : knbd_available() == 1;
	if (want && nbd && !knbd_available())
		return cli_fail("%s: this machine has no kernel NBD driver or no "
		                "nbd-client; leave out --device for a loop device",
		                want);
	if ((lock = lock_attachments()) < 0)
		return 1;
	r = record_read(name, &a);
	if (r == 1 && record_live(&a)) {
		rc = cli_fail("%s is already attached as %s", name, a.device);
		goto out;
	}
	if (r < 0) {
		rc = cli_fail("cannot read %s/%s.attach: %s; 'blkmirror detach "
		              "%s' clears it", state_dir(), name, strerror(-r),
		              name);
		goto out;
	}
	/* A record whose device is no longer ours (after a reboot): what is
	 * left of its FUSE mount goes, then the record. */
	if (r == 1) {
		if (strcmp(a.kind, "loop") == 0 && a.fx.mount[0] &&
		    fuse_export_stop(&a.fx, err, sizeof(err)) < 0) {
			rc = cli_fail("%s: a stale attachment is left: %s", name, err);
			goto out;
		}
		state_remove_file(name, ".attach");
	}
	if (server_socket(name, sock, sizeof(sock)))
		goto out;
	memset(&a, 0, sizeof(a));
	if (nbd) {
		snprintf(a.kind, sizeof(a.kind), "nbd");
		if (knbd_attach(name, sock, want, a.device, sizeof(a.device), err,
		                sizeof(err)) < 0) {
			rc = cli_fail("cannot attach %s: %s", name, err);
			goto out;
		}
	} else {
		snprintf(a.kind, sizeof(a.kind), "loop");
		if ((want && loop_check_device(want, err, sizeof(err)) < 0) ||
		    fuse_export_available(err, sizeof(err)) < 0 ||
		    fuse_export_start(name, sock, &a.fx, err, sizeof(err)) < 0) {
			rc = cli_fail("cannot attach %s: %s", name, err);
			goto out;
		}
		if (loop_attach(a.fx.file, want, a.device, sizeof(a.device), &dio,
		                err, sizeof(err)) < 0) {
			char e2[512];
			rc = cli_fail("cannot attach %s: %s", name, err);
			fuse_export_stop(&a.fx, e2, sizeof(e2));
			goto out;
		}
	}
	if ((r = record_write(name, &a)) < 0) {
		rc = cli_fail("cannot record the attachment in %s/%s.attach: %s; "
		              "released %s", state_dir(), name, strerror(-r),
		              a.device);
		if (nbd) {
			knbd_detach(a.device, err, sizeof(err));
		} else {
			loop_detach(a.device, err, sizeof(err));
			fuse_export_stop(&a.fx, err, sizeof(err));
		}
		goto out;
	}
	printf("%s\n", a.device);
	rc = 0;
out:
	close(lock);
	return rc;
}

/* ---- detach --------------------------------------------------------------- */

struct flush_job {
	pthread_mutex_t m;
	pthread_cond_t c;
	int fd, err;
	bool done;
};

static void *flush_thread(void *arg)
{
	struct flush_job *j = arg;
	int err;

	pthread_setname_np(pthread_self(), "bm-fsync");
	err = fsync(j->fd) < 0 ? errno : 0;
	pthread_mutex_lock(&j->m);
	j->err = err;
	j->done = true;
	pthread_cond_signal(&j->c);
	pthread_mutex_unlock(&j->m);
	return NULL;
}

/* Waits for the job until secs from now; true when it is done. */
static bool wait_job(struct flush_job *j, int secs)
{
	struct timespec ts;
	bool done;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += secs;
	pthread_mutex_lock(&j->m);
	while (!j->done &&
	       pthread_cond_timedwait(&j->c, &j->m, &ts) != ETIMEDOUT)
		;
	done = j->done;
	pthread_mutex_unlock(&j->m);
	return done;
}

/* Writes what the device caches through to the mirror (the mirror
 * flushes its components).  A server that does not answer: past the
 * deadline nbdfuse is killed, which fails the flush.  0, or -1 with why in
 * err (the data written last may not have reached the mirror). */
static int flush_device(const struct attachment *a, char *err, size_t len)
{
	struct flush_job j = {.m = PTHREAD_MUTEX_INITIALIZER, .done = false};
	pthread_condattr_t ca;
	pthread_t t;
	bool loop = strcmp(a->kind, "loop") == 0;

	j.fd = open(a->device, O_RDWR | O_CLOEXEC);
	if (j.fd < 0) {
		snprintf(err, len, "cannot open %s: %s", a->device, strerror(errno));
		return -1;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j.c, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&t, NULL, flush_thread, &j) != 0) {
		close(j.fd);
		snprintf(err, len, "cannot start a thread");
		return -1;
	}
	if (!wait_job(&j, FLUSH_TIMEOUT_S)) {
		if (loop)
			fuse_export_abort(&a->fx);
		if (!wait_job(&j, FLUSH_TIMEOUT_S)) {
			/* The thread is stuck in the kernel: leave it; the
			 * process waits for it at exit. */
			snprintf(err, len, "the flush of %s does not return even "
			         "after nbdfuse was killed", a->device);
			return -2;
		}
		snprintf(err, len, "the server did not answer the flush within "
		         "%d s", FLUSH_TIMEOUT_S);
		j.err = j.err ? j.err : ETIMEDOUT;
	} else if (j.err) {
		snprintf(err, len, "flushing %s failed: %s", a->device,
		         strerror(j.err));
	}
	pthread_join(t, NULL);
	close(j.fd);
	pthread_cond_destroy(&j.c);
	return j.err ? -1 : 0;
}

/* The mirror whose record names dev (a path to the same device counts). */
static int name_of_device(const char *dev, char *name, size_t len)
{
	struct stat want, st;
	struct dirent *e;
	bool have_rdev = stat(dev, &want) == 0 && S_ISBLK(want.st_mode);
	DIR *d = opendir(state_dir());
	int found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		struct attachment a;
		char nm[BM_NAME_MAX + 1];
		if (n <= 7 || strcmp(e->d_name + n - 7, ".attach") != 0 ||
		    n - 7 > BM_NAME_MAX)
			continue;
		snprintf(nm, sizeof(nm), "%.*s", (int)(n - 7), e->d_name);
		if (record_read(nm, &a) != 1)
			continue;
		if (strcmp(a.device, dev) == 0 ||
		    (have_rdev && stat(a.device, &st) == 0 &&
		     st.st_rdev == want.st_rdev)) {
			snprintf(name, len, "%s", nm);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

static int detach_one(const char *arg)
{
	struct attachment a;
	char name[BM_NAME_MAX + 1], what[4200], err[PATH_MAX + 1024],
	     ferr[PATH_MAX + 1024];
	bool loop, live;
	int lock, rc = 1, r, fr = 0;

	if (arg[0] == '/') {
		if (!name_of_device(arg, name, sizeof(name)))
			return cli_fail("%s is not a device blkmirror attached "
			                "(no record in %s)", arg, state_dir());
	} else {
		if (!bm_name_valid(arg))
			return cli_fail("invalid mirror name '%s'", arg);
		snprintf(name, sizeof(name), "%s", arg);
	}
	if ((lock = lock_attachments()) < 0)
		return 1;
	r = record_read(name, &a);
	if (r == 0) {
		char p[4096];
		state_path(p, sizeof(p), name, ".components");
		rc = access(p, F_OK) == 0 ? cli_fail("%s is not attached", name)
		     : cli_fail("no mirror named '%s' in %s", name, state_dir());
		goto out;
	}
	if (r < 0) {
		rc = cli_fail("cannot read %s/%s.attach: %s", state_dir(), name,
		              strerror(-r));
		goto out;
	}
	loop = strcmp(a.kind, "loop") == 0;
	live = record_live(&a);
	ferr[0] = '\0';
	if (live) {
		if (bm_blockdev_in_use(a.device, what, sizeof(what), true)) {
			rc = cli_fail("%s (%s) is %s", a.device, name, what);
			goto out;
		}
		fr = flush_device(&a, ferr, sizeof(ferr));
		if (fr == -2) {
			rc = cli_fail("%s: %s", name, ferr);
			goto out;
		}
		if (loop ? loop_detach(a.device, err, sizeof(err)) < 0
		         : knbd_detach(a.device, err, sizeof(err)) < 0) {
			rc = cli_fail("%s: %s", name, err);
			goto out;
		}
	}
	if (loop && a.fx.mount[0] &&
	    fuse_export_stop(&a.fx, err, sizeof(err)) < 0) {
		rc = cli_fail("%s: %s", name, err);
		goto out;
	}
	state_remove_file(name, ".attach");
	if (fr)
		rc = cli_fail("%s: detached %s, but %s: what was written last may "
		              "not have reached the mirror", name, a.device, ferr);
	else
		rc = 0;
out:
	close(lock);
	return rc;
}

/* ---- the verbs ------------------------------------------------------------ */

int cmd_attach(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"device", required_argument, NULL, 'd'},
		{NULL, 0, NULL, 0},
	};
	const char *want = NULL;
	int opt, status;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, "attach", "d:", longopts,
	                         &status)) != -1) {
		if (opt == CLI_OPT_EXIT)
			return status;
		if (opt == 'd') {
			if (optarg[0] != '/')
				return cli_usage("attach: --device '%s' is not a device "
				                 "path (e.g. /dev/loop7)", optarg);
			want = optarg;
		}
	}
	if (argc - optind != 1)
		return cli_usage_of("attach");
	return attach_one(argv[optind], want);
}

int cmd_detach(int argc, char **argv)
{
	int opt, status;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, "detach", "", NULL, &status)) != -1)
		if (opt == CLI_OPT_EXIT)
			return status;
	if (argc - optind != 1)
		return cli_usage_of("detach");
	return detach_one(argv[optind]);
}
