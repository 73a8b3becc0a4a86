/* The blkmirror command: shared helpers of its verbs. */
#ifndef BM_CLI_H
#define BM_CLI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blkmirror.h"

#define STATE_DIR_DEFAULT "/var/lib/blkmirror"

/* Exit statuses of every verb: 0 success, 1 the request failed (runtime
 * error, refusal), 2 the command line is wrong (usage).  status also exits
 * 2 for DEGRADED and 3 for not running, as documented there. */
enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

/* Prints "blkmirror: <msg>" to stderr (one line) and returns 1. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for a wrong command line: one line, returns 2. */
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* statedir.c: the list of a mirror's components, one path a line. */
const char *state_dir(void);
int state_path(char *buf, size_t len, const char *name, const char *suffix);
int state_read_components(const char *name, char ***paths, size_t *n);
int state_write_components(const char *name, char *const *paths, size_t n);
int state_forget_component(const char *path);
void state_free(char **paths, size_t n);
int state_list_mirrors(char ***names, size_t *n);

/* control.c: the running server's control socket (NAME.ctl). */
struct control_server;
typedef int (*control_handler)(void *ctx, const char *cmd, char *out,
                               size_t outlen);
int control_start(const char *name, control_handler h, void *ctx,
                  struct control_server **out);
void control_stop(struct control_server *c);
/*
 * Control commands beyond serve's own (status, list, configure, stop...)
 * live beside the verb that sends them: each file offers one function of
 * this type, listed in cmd_serve.c's ctl_extensions[].  It returns 1 when
 * cmd is its own (with the reply, "ok..." or "error MESSAGE", in out), 0
 * when it is not.  It runs on the control thread, which serves one request
 * at a time, while m is serving: it must return within a second or two;
 * long work (a copy, a comparison) starts in the background and is polled.
 */
typedef int (*ctl_extension)(bm_mirror *m, const char *name, const char *cmd,
                             char *out, size_t outlen);
/* ctl_sync.c: "sync-rates"; --sync-min/--sync-max values (64K..64G per
 * second, "10M" or "10M/s"; 0 only with zero_ok), exit status 2 if wrong. */
int ctl_sync(bm_mirror *m, const char *name, const char *cmd, char *out,
             size_t outlen);
int parse_rate_arg(const char *opt, const char *s, bool zero_ok,
                   uint64_t *out);
/* Sends cmd to the running server; 0 with its reply in out, -ENOENT when
 * it is not running, other -errno on failure. */
int control_call(const char *name, const char *cmd, char *out, size_t outlen);

/* args.c.  parse_size: digits with an optional binary unit, k/K, m/M, g/G
 * or t/T, each also as KiB or KB (and B alone: bytes) (-EINVAL for a value
 * past 2^64, never wrapped); parse_count: digits alone (counts);
 * parse_duration: a number of seconds, with s, ms or min after it, or
 * none (seconds) (-EINVAL otherwise; the caller checks the range).  parse_balance_arg, parse_slice_arg, parse_tcp_arg: print the error and
 * return EXIT_USAGE (the exit status) when the argument is wrong. */
int parse_size(const char *s, uint64_t *out);
int parse_count(const char *s, uint64_t *out);
int parse_duration(const char *s, double *seconds);
int parse_balance_arg(const char *s, int *out);
int parse_slice_arg(const char *s, uint32_t *out);
/* --io-timeout: seconds from 0 (never) to 3600; prints the error and
 * returns 2 (the exit status) when wrong. */
int parse_io_timeout_arg(const char *s, uint64_t *out);
/* --tcp's [HOST:]PORT, PORT a number from 1 to 65535. */
int parse_tcp_arg(const char *s);

/*
 * getopt_long for every verb, the same grammar everywhere: options before
 * or after the names (set optind = 0 before the first call), "--" ends
 * them, -h/--help are added.  Returns the next option, -1 at the end, or
 * CLI_OPT_EXIT with *status set: 0 after printing the usage for --help, 2
 * after a one-line error (unknown option, missing value).
 */
#define CLI_OPT_EXIT (-2)
struct option;
int cli_getopt(int argc, char **argv, const char *verb, const char *shortopts,
               const struct option *longopts, int *status);
/* main.c: the verb's usage line without "blkmirror ", e.g. "stop NAME". */
const char *cli_verb_usage(const char *verb);
/* A wrong number of names: "usage: blkmirror VERB ...", exit status 2. */
int cli_usage_of(const char *verb);
/* 0 when a component path is one the state directory can record (one per
 * line, fields split by tabs): not empty, no tab, no newline; else the
 * usage error (2), said. */
int cli_check_path(const char *verb, const char *p);
/* A local path as the server opens and records it (absolute, resolved;
 * one that no longer resolves, a deleted file, made absolute as typed);
 * URIs as typed.  Malloc'd (NULL: out of memory). */
char *cli_canonical_path(const char *p);

int cmd_label(int argc, char **argv);
int cmd_clear(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_configure(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_forget(int argc, char **argv);
int cmd_assemble(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_detach(int argc, char **argv);
/* cmd_attach.c: 1 with the block device attach made of the mirror (its
 * NAME.attach record, the device still over the mirror), 0 when it is not
 * attached. */
int attach_device(const char *name, char *dev, size_t len);
int cmd_check(int argc, char **argv);
int cmd_repair(int argc, char **argv);
int ctl_check(bm_mirror *m, const char *name, const char *cmd, char *out,
              size_t outlen); /* cmd_check.c: "check ..." control commands */

/* cmd_live.c: components joining and leaving a running mirror. */
int cmd_insert(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_destroy(int argc, char **argv);
int ctl_live(bm_mirror *m, const char *name, const char *cmd, char *out,
             size_t outlen);
/* forget on a running mirror: 0 after printing what was forgotten. */
int live_forget_running(const char *name);
/* Runs a "live ..." control job on name's server and waits for its end:
 * 0 with its report printed, or 1 after one line. */
int live_run_job(const char *name, const char *cmd);
int cmd_deactivate(int argc, char **argv);
int cmd_activate(int argc, char **argv);
int cmd_rebuild(int argc, char **argv);
/* cmd_rebuild.c: configure -p (0..255; prints the error and returns 2);
 * the server runs these verbs as jobs (cmd_live.c). */
int parse_priority_arg(const char *s, int *out);
int configure_priority(const char *name, const char *component, int priority);
int cmd_monitor(int argc, char **argv);
/* cmd_monitor.c: "events SINCE" and "components" (ctl_extension). */
int ctl_events(bm_mirror *m, const char *name, const char *cmd, char *out,
               size_t len);

#endif
