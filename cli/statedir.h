/*
 * The per-mirror lock of the state directory (NAME.lock).  `serve` holds it
 * (flock LOCK_EX) from before it touches anything until the process exits,
 * so: a second serve of the same mirror on this host is refused naming the
 * pid; "running" means "the lock is held", which stays true until the
 * components are flushed, marked clean and closed; and `stop` knows the
 * server is gone when it can take the lock.  Verbs that change a stopped
 * mirror's records (configure, forget) hold it too while they work.
 *
 * The file holds one line, "PID WHAT" (WHAT: serve, configure, forget, or
 * "stopped cleanly" written by serve just before it exits cleanly).  It is
 * never removed while the mirror is known (removing a lock file races with
 * a process that opened it); `forget` removes it with the records.
 */
#ifndef BM_STATEDIR_H
#define BM_STATEDIR_H
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/* Takes NAME.lock for `what`.  0 with *fd on success; -EBUSY when another
 * process holds it (its pid in *holder, 0 if unknown, and what it does in
 * holder_what); other -errno. */
int state_lock(const char *name, const char *what, int *fd, pid_t *holder,
               char *holder_what, size_t len);
/* state_lock for a verb that makes a mirror (label, assemble): 0 with
 * *fd held, or 1 said ("busy: pid N (what); try again", or "running" when
 * its server holds it). */
int state_lock_said(const char *name, const char *what, int *fd);
/* Replaces the text after the pid ("stopped cleanly"). */
void state_lock_note(int fd, const char *what);
void state_unlock(int fd);
/* 1 when NAME.lock is held (pid and what as above), 0 when not (then pid
 * and what say how the last holder left it: "stopped cleanly"), -errno. */
int state_lock_holder(const char *name, pid_t *pid, char *what, size_t len);
/* Removes a stopped mirror's records: NAME.components, a stale NAME.ctl,
 * NAME.lock.  The caller holds the lock (fd, closed here). */
int state_remove_mirror(const char *name, int lock_fd);
/* 1 when path carries a label of mirror name, 0 when not (gone, no label,
 * another mirror's label). */
int state_component_labeled(const char *path, const char *name);

/*
 * Where a server listens when told nothing (serve without --socket and
 * --tcp): RUN_DIR/NAME.sock.  The run directory is $BLKMIRROR_RUN_DIR;
 * else, when $BLKMIRROR_STATE_DIR is set, the state directory itself (so a
 * test or a private set-up never touches /run); else /run/blkmirror.
 *
 * NAME.socket in the state directory holds the absolute path of the Unix
 * socket a running server listens on (one line), written once it accepts
 * connections and removed when it stops cleanly, so that other verbs find
 * the export without being told.  A server that died leaves it: trust it
 * only while NAME.lock is held.
 */
#define RUN_DIR_DEFAULT "/run/blkmirror"
/* Whether path is NAME.ctl in the state directory: where some mirror's
 * server keeps its control socket (serve --socket refuses it). */
bool state_control_socket_path(const char *path);
const char *run_dir(void);
/* RUN_DIR/NAME.sock in buf, RUN_DIR created (mode 0755) when missing. */
int run_default_socket(char *buf, size_t len, const char *name);
/* Writes NAME.socket (path made absolute); removes it. */
int state_record_socket(const char *name, const char *path);
void state_remove_socket_record(const char *name);
/* The recorded socket path of NAME: 0, -ENOENT when none, other -errno. */
int state_read_socket(const char *name, char *buf, size_t len);
/* Small records beside NAME.components: NAME.socket (the Unix socket the
 * server listens on, written by serve once it answers, removed when it
 * stops), NAME.attach (the block device attach made).  Written whole
 * (temporary file + rename); read up to len - 1 bytes.  -errno (-ENOENT:
 * none). */
int state_write_file(const char *name, const char *suffix, const char *text);
int state_read_file(const char *name, const char *suffix, char *buf,
                    size_t len);
void state_remove_file(const char *name, const char *suffix);

/* The sizes a mirror's components had when they were labelled (NAME.sizes:
 * where a grown component's label is, when every component grew): the
 * count read (0 when none is kept). */
size_t state_read_sizes(const char *name, uint64_t *sizes, size_t max);
/* Keeps the sizes the labels record now, and those kept before (0 or
 * -errno). */
int state_keep_sizes(const char *name, const uint64_t *now, size_t n);
/* bm_label_set_size_hints from name's record, or from every record that
 * lists path (clear, dump). */
void state_hint_sizes(const char *name);
void state_hint_sizes_of(const char *path);

#endif
