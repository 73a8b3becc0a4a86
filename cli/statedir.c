/*
 * The state directory ($BLKMIRROR_STATE_DIR or /var/lib/blkmirror) records,
 * per mirror, the paths of its components (NAME.components, one a line),
 * holds the running server's control socket (NAME.ctl), the path of its
 * NBD socket (NAME.socket), the block device attach made (NAME.attach) and
 * the mirror's lock (NAME.lock, statedir.h).  The run directory (statedir.h)
 * holds default NBD sockets.  The labels on the components stay the
 * truth about the mirror; this file only says where to look for them.
 *
 * A component that is cleared stays listed (it shows as ABSENT: "has no
 * blkmirror label") as long as another listed component still carries the
 * mirror's label, the way gmirror keeps counting a disk it lost until
 * `forget`; when none does, the mirror's records go.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "statedir.h"

const char *state_dir(void)
{
	const char *d = getenv("BLKMIRROR_STATE_DIR");
	return (d && *d) ? d : STATE_DIR_DEFAULT;
}

bool state_control_socket_path(const char *path)
{
	char dir[4096], real_dir[PATH_MAX], real_state[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n = strlen(path);

	if (n < 4 || strcmp(path + n - 4, ".ctl") != 0)
		return false;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	return realpath(dir, real_dir) && realpath(state_dir(), real_state) &&
	       strcmp(real_dir, real_state) == 0;
}

int state_path(char *buf, size_t len, const char *name, const char *suffix)
{
	int n = snprintf(buf, len, "%s/%s%s", state_dir(), name, suffix);
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

void state_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

int state_read_components(const char *name, char ***paths, size_t *n)
{
	char p[4096], line[4096];
	FILE *f;
	char **v = NULL;
	size_t cnt = 0;

	if (state_path(p, sizeof(p), name, ".components") < 0)
		return -ENAMETOOLONG;
	f = fopen(p, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		char **nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv || !(nv[cnt] = strdup(line))) {
			state_free(nv ? nv : v, cnt);
			fclose(f);
			return -ENOMEM;
		}
		v = nv;
		cnt++;
	}
	fclose(f);
	*paths = v;
	*n = cnt;
	return 0;
}

int state_write_components(const char *name, char *const *paths, size_t n)
{
	char p[4096], tmp[4200];
	FILE *f;

	if (mkdir(state_dir(), 0755) < 0 && errno != EEXIST)
		return -errno;
	if (state_path(p, sizeof(p), name, ".components") < 0)
		return -ENAMETOOLONG;
	/* one per process: two writers never share (and mix) one */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", p, (long)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", paths[i]);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		int err = -errno;
		fclose(f);
		unlink(tmp);
		return err;
	}
	fclose(f);
	if (rename(tmp, p) < 0) {
		int err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
}

int state_list_mirrors(char ***names, size_t *n)
{
	DIR *d = opendir(state_dir());
	struct dirent *e;
	char **v = NULL;
	size_t cnt = 0;

	*names = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		const char *suf = ".components";
		if (len <= strlen(suf) ||
		    strcmp(e->d_name + len - strlen(suf), suf) != 0)
			continue;
		char **nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[cnt] = strndup(e->d_name, len - strlen(suf));
		if (v[cnt])
			cnt++;
	}
	closedir(d);
	/* sort for stable output */
	for (size_t i = 1; i < cnt; i++)
		for (size_t k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
			char *t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	*names = v;
	*n = cnt;
	return 0;
}

int state_component_labeled(const char *path, const char *name)
{
	char lname[BM_NAME_MAX + 1];
	state_hint_sizes(name); /* (grown since it was labelled?) */
	int r = bm_label_probe(path, lname, sizeof(lname));

	/* one that does not answer may still carry it: kept */
	return r == -ETIMEDOUT || (r == 0 && strcmp(lname, name) == 0);
}

/* Whether path may still carry mirror name's label: it does, or it could
 * not be read (an NBD server down may come back with it); a file that is
 * gone, or one read without that label, does not. */
static bool maybe_labeled(const char *path, const char *name)
{
	char lname[BM_NAME_MAX + 1];
	struct stat st;
	bool opened;
	state_hint_sizes(name); /* (grown since it was labelled?) */
	int r = bm_label_probe_opened(path, lname, sizeof(lname), &opened);

	if (r == 0)
		return strcmp(lname, name) == 0;
	if (opened ? r == -ENOENT : !strstr(path, "://") && stat(path, &st) < 0)
		return false; /* read without a label, or a file gone */
	return true; /* not reached, or its label not read */
}

/* After `clear PATH`: a mirror listing PATH keeps it listed (seen as
 * missing) while another listed component still carries its label, or
 * could not be read to tell, and is forgotten when none does.  A running
 * mirror is left alone (its component was in use, so clear did not get
 * here for files). */
int state_forget_component(const char *path)
{
	char **names;
	size_t nn;

	if (state_list_mirrors(&names, &nn) < 0)
		return 0;
	for (size_t i = 0; i < nn; i++) {
		char **paths;
		size_t np;
		bool listed = false, labeled = false;
		int fd;
		if (state_read_components(names[i], &paths, &np) < 0)
			continue;
		for (size_t k = 0; k < np; k++)
			if (strcmp(paths[k], path) == 0)
				listed = true;
		for (size_t k = 0; listed && !labeled && k < np; k++)
			if (strcmp(paths[k], path) != 0 &&
			    maybe_labeled(paths[k], names[i]))
				labeled = true;
		state_free(paths, np);
		if (listed && !labeled &&
		    state_lock(names[i], "forget", &fd, NULL, NULL, 0) == 0)
			state_remove_mirror(names[i], fd);
	}
	state_free(names, nn);
	return 0;
}

static int lock_path(char *p, size_t len, const char *name)
{
	return state_path(p, len, name, ".lock");
}

/* Reads "PID WHAT" from an open lock file; held: someone holds it now. */
static void read_holder(int fd, bool held, pid_t *pid, char *what, size_t len)
{
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long v = 0;
	int off = 0;

	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (sscanf(buf, "%ld %n", &v, &off) < 1)
		off = 0, v = 0;
	/* Held, but still saying how the last holder ended: the new holder
	 * has not written its line yet. */
	if (held && strncmp(buf + off, "stopped ", 8) == 0)
		v = 0, off = (int)strlen(buf);
	if (pid)
		*pid = (pid_t)v;
	if (what && len)
		snprintf(what, len, "%s", buf + off);
}

int state_lock(const char *name, const char *what, int *fd, pid_t *holder,
               char *holder_what, size_t len)
{
	char p[4096];
	int f;

	if (holder)
		*holder = 0;
	if (holder_what && len)
		holder_what[0] = '\0';
	if (lock_path(p, sizeof(p), name) < 0)
		return -ENAMETOOLONG;
	if (mkdir(state_dir(), 0755) < 0 && errno != EEXIST)
		return -errno;
	f = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (f < 0)
		return -errno;
	/* A holder that was just killed may keep the lock a moment after
	 * it is gone: the kernel releases the files of an exiting process
	 * asynchronously.  And a holder that wrote no pid yet has just taken
	 * it (a verb's look at the lock, or a process before its note).
	 * Wait (up to 2 s) only while the pid that wrote the lock file no
	 * longer exists, or none is written. */
	for (int tries = 0;; tries++) {
		if (flock(f, LOCK_EX | LOCK_NB) == 0)
			break;
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		pid_t pid = 0;
		if (err == -EBUSY)
			read_holder(f, true, &pid, holder_what, len);
		if (err == -EBUSY && tries < 100 &&
		    (pid == 0 || (kill(pid, 0) < 0 && errno == ESRCH))) {
			usleep(20000);
			continue;
		}
		if (holder)
			*holder = pid;
		close(f);
		return err;
	}
	state_lock_note(f, what);
	*fd = f;
	return 0;
}

int state_lock_said(const char *name, const char *what, int *fd)
{
	char holder[64];
	pid_t pid;
	int r = state_lock(name, what, fd, &pid, holder, sizeof(holder));

	if (r == -EBUSY && strcmp(holder, "serve") == 0)
		return cli_fail("mirror '%s' is running; stop it first", name);
	if (r == -EBUSY)
		return cli_fail("mirror '%s' is busy: pid %ld (%s); try again",
		                name, (long)pid, holder[0] ? holder : "starting");
	if (r < 0)
		return cli_fail("cannot lock %s/%s.lock: %s", state_dir(), name,
		                strerror(-r));
	return 0;
}

void state_lock_note(int fd, const char *what)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(), what);

	if (ftruncate(fd, 0) < 0 || pwrite(fd, line, (size_t)n, 0) != n)
		return; /* the pid is a courtesy; the lock itself is the flock */
}

void state_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

int state_lock_holder(const char *name, pid_t *pid, char *what, size_t len)
{
	char p[4096];
	int f, held;

	if (pid)
		*pid = 0;
	if (what && len)
		what[0] = '\0';
	if (lock_path(p, sizeof(p), name) < 0)
		return -ENAMETOOLONG;
	f = open(p, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return errno == ENOENT ? 0 : -errno;
	held = flock(f, LOCK_SH | LOCK_NB) < 0;
	if (held && errno != EWOULDBLOCK) {
		int err = -errno;
		close(f);
		return err;
	}
	read_holder(f, held, pid, what, len);
	close(f);
	return held;
}

int state_remove_mirror(const char *name, int lock_fd)
{
	char p[4096];
	struct stat st;
	int err = 0;

	if (state_path(p, sizeof(p), name, ".components") == 0 &&
	    unlink(p) < 0 && errno != ENOENT)
		err = -errno;
	/* The control socket of a server that died: nothing listens (we hold
	 * the lock), but remove only a socket. */
	if (state_path(p, sizeof(p), name, ".ctl") == 0 && lstat(p, &st) == 0 &&
	    S_ISSOCK(st.st_mode))
		unlink(p);
	state_remove_socket_record(name);
	state_remove_file(name, ".sizes");
	if (lock_path(p, sizeof(p), name) == 0)
		unlink(p);
	state_unlock(lock_fd);
	return err;
}

const char *run_dir(void)
{
	const char *d = getenv("BLKMIRROR_RUN_DIR");

	if (d && *d)
		return d;
	d = getenv("BLKMIRROR_STATE_DIR");
	return (d && *d) ? d : RUN_DIR_DEFAULT;
}

int run_default_socket(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s.sock", run_dir(), name);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (mkdir(run_dir(), 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int state_record_socket(const char *name, const char *path)
{
	char p[4096], tmp[4200], cwd[4096];
	FILE *f;

	if (state_path(p, sizeof(p), name, ".socket") < 0)
		return -ENAMETOOLONG;
	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return -errno;
	/* one per process: two writers never share (and mix) one */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", p, (long)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (path[0] == '/')
		fprintf(f, "%s\n", path);
	else
		fprintf(f, "%s/%s\n", cwd, path);
	if (fclose(f) != 0) {
		int err = -errno;
		unlink(tmp);
		return err;
	}
	if (rename(tmp, p) < 0) {
		int err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
}

void state_remove_socket_record(const char *name)
{
	char p[4096];

	if (state_path(p, sizeof(p), name, ".socket") == 0)
		unlink(p);
}

int state_read_socket(const char *name, char *buf, size_t len)
{
	char p[4096];
	FILE *f;

	if (state_path(p, sizeof(p), name, ".socket") < 0)
		return -ENAMETOOLONG;
	f = fopen(p, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -ENOENT;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf[0] ? 0 : -ENOENT;
}
int state_write_file(const char *name, const char *suffix, const char *text)
{
	char p[4096], tmp[4200];
	size_t len = strlen(text);
	int fd, err = 0;

	if (mkdir(state_dir(), 0755) < 0 && errno != EEXIST)
		return -errno;
	if (state_path(p, sizeof(p), name, suffix) < 0)
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", p, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, text, len);
	if (w != (ssize_t)len)
		err = w < 0 ? -errno : -EIO;
	else if (fsync(fd) < 0)
		err = -errno;
	close(fd);
	if (!err && rename(tmp, p) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int state_read_file(const char *name, const char *suffix, char *buf,
                    size_t len)
{
	char p[4096];
	ssize_t n;
	int fd;

	if (state_path(p, sizeof(p), name, suffix) < 0)
		return -ENAMETOOLONG;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

void state_remove_file(const char *name, const char *suffix)
{
	char p[4096];

	if (state_path(p, sizeof(p), name, suffix) == 0)
		unlink(p);
}

size_t state_read_sizes(const char *name, uint64_t *sizes, size_t max)
{
	char text[1024], *p, *end;
	size_t n = 0;

	if (state_read_file(name, ".sizes", text, sizeof(text)) < 0)
		return 0;
	for (p = text; *p && n < max; p = end) {
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p || errno)
			break; /* (not ours, or damaged: what was read so far) */
		sizes[n++] = v;
		while (*end == '\n' || *end == ' ')
			end++;
	}
	return n;
}

static int write_sizes(const char *name, const uint64_t *sizes, size_t n)
{
	char text[1024];
	size_t used = 0;

	text[0] = '\0';
	for (size_t i = 0; i < n && used < sizeof(text); i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
		                         "%llu\n", (unsigned long long)sizes[i]);
	if (used >= sizeof(text))
		return -ENAMETOOLONG;
	return state_write_file(name, ".sizes", text);
}

void state_hint_sizes(const char *name)
{
	uint64_t sizes[BM_MAX_COMPONENTS];

	bm_label_set_size_hints(name, sizes,
	                        state_read_sizes(name, sizes, BM_MAX_COMPONENTS));
}

int state_keep_sizes(const char *name, const uint64_t *now, size_t n)
{
	uint64_t all[BM_MAX_COMPONENTS], was[BM_MAX_COMPONENTS];
	size_t k = 0, nwas = state_read_sizes(name, was, BM_MAX_COMPONENTS);

	/* the labels' sizes now first, then those kept before (a component
	 * absent at this start keeps its own), each once */
	for (size_t i = 0; i < n + nwas && k < BM_MAX_COMPONENTS; i++) {
		uint64_t v = i < n ? now[i] : was[i - n];
		bool seen = v == 0;
		for (size_t j = 0; j < k && !seen; j++)
			seen = all[j] == v;
		if (!seen)
			all[k++] = v;
	}
	return k ? write_sizes(name, all, k) : 0;
}

void state_hint_sizes_of(const char *path)
{
	uint64_t sizes[BM_MAX_COMPONENTS];
	char **names, **paths;
	size_t nn, np;

	bm_label_set_size_hints(NULL, NULL, 0); /* (none from before) */
	if (!path || state_list_mirrors(&names, &nn) < 0)
		return;
	for (size_t i = 0; i < nn; i++) {
		if (state_read_components(names[i], &paths, &np) < 0)
			continue;
		bool listed = false;
		for (size_t k = 0; k < np && !listed; k++)
			listed = strcmp(paths[k], path) == 0;
		state_free(paths, np);
		if (listed)
			bm_label_add_size_hints(names[i], sizes,
			                        state_read_sizes(names[i], sizes,
			                                         BM_MAX_COMPONENTS));
	}
	state_free(names, nn);
}
