/*
 * blkmirror deactivate, activate, rebuild and configure -p: a component's
 * state and priority, in gmirror(8)'s words (the engine: lib/rebuild.c).
 *
 * The first three change a running mirror only: the CLI names the
 * component as the mirror's records do (so that status, and --wait, find
 * it by that string), asks the server to run the change as a job (the
 * "live ..." control commands of cmd_live.c: a label write to a hanging
 * component may take up to the io-timeout, and the control thread must
 * go on answering status meanwhile), waits for its end, and with --wait
 * follows the copy (progress.c).  configure -p works on a running mirror
 * (the server rewrites the label, as a job too) and on a stopped one (the
 * label is rewritten here, under NAME.lock, as configure -b does).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "progress.h"
#include "statedir.h"

/* The same file or device (local paths only). */
static bool same_local(const char *a, const char *b)
{
	struct stat sa, sb;

	if (strstr(a, "://") || strstr(b, "://") || stat(a, &sa) < 0 ||
	    stat(b, &sb) < 0)
		return false;
	return S_ISBLK(sa.st_mode) ? S_ISBLK(sb.st_mode) && sa.st_rdev == sb.st_rdev
	                           : sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * Mirror name's record of component arg (the same string, or the same
 * file or device) into out.  0, or the exit status after one line (1: an
 * unknown mirror or component).
 */
static int resolve_component(const char *name, const char *arg, char *out,
                             size_t len)
{
	char **paths;
	size_t n;
	int err, rc = 1;

	if (!bm_name_valid(name))
		return cli_fail("invalid mirror name '%s'", name);
	err = state_read_components(name, &paths, &n);
	if (err == -ENOENT)
		return cli_fail("no mirror named '%s' in %s", name, state_dir());
	if (err < 0)
		return cli_fail("cannot read the state of '%s': %s", name,
		                strerror(-err));
	for (size_t i = 0; i < n && rc; i++)
		if (strcmp(paths[i], arg) == 0)
			rc = 0, snprintf(out, len, "%s", paths[i]);
	for (size_t i = 0; i < n && rc; i++)
		if (same_local(paths[i], arg))
			rc = 0, snprintf(out, len, "%s", paths[i]);
	/* one that is gone (a deleted file), as typed: the record holds it
	 * absolute */
	char *abs = rc ? cli_canonical_path(arg) : NULL;
	for (size_t i = 0; abs && i < n && rc; i++)
		if (strcmp(paths[i], abs) == 0)
			rc = 0, snprintf(out, len, "%s", paths[i]);
	free(abs);
	state_free(paths, n);
	if (rc)
		return cli_fail("%s is not a component of %s ('blkmirror list "
		                "%s' shows them)", arg, name, name);
	return 0;
}

/* 1 when the mirror is served (pid set), 0 when not, -1 after a line. */
static int served(const char *name, pid_t *pid)
{
	char what[64];
	int r = state_lock_holder(name, pid, what, sizeof(what));

	if (r < 0) {
		cli_fail("cannot tell whether '%s' is running: %s", name,
		         strerror(-r));
		return -1;
	}
	return r;
}

/* deactivate / activate / rebuild: one running mirror, one component. */
static int state_verb(const char *verb, bool can_wait, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"wait", no_argument, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	char path[PATH_MAX + 256], cmd[PATH_MAX + 300];
	bool wait = false;
	int opt, status, rc;
	pid_t pid;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, verb, "",
	                         can_wait ? longopts : NULL, &status)) != -1) {
		if (opt == CLI_OPT_EXIT)
			return status;
		if (opt == 'w')
			wait = true;
	}
	if (argc - optind != 2)
		return cli_usage_of(verb);
	const char *name = argv[optind];
	if ((rc = resolve_component(name, argv[optind + 1], path, sizeof(path))))
		return rc;
	rc = served(name, &pid);
	if (rc < 0)
		return 1;
	if (rc == 0)
		return cli_fail("mirror '%s' is not running; %s changes a running "
		                "mirror (start it with 'blkmirror serve %s')",
		                name, verb, name);
	snprintf(cmd, sizeof(cmd), "live %s %s", verb, path);
	if ((rc = live_run_job(name, cmd)))
		return rc;
	return wait ? wait_synchronized(name, path) : 0;
}

int cmd_deactivate(int argc, char **argv)
{
	return state_verb("deactivate", false, argc, argv);
}

int cmd_activate(int argc, char **argv)
{
	return state_verb("activate", true, argc, argv);
}

int cmd_rebuild(int argc, char **argv)
{
	return state_verb("rebuild", true, argc, argv);
}

int parse_priority_arg(const char *s, int *out)
{
	uint64_t v;

	if (parse_count(s, &v) < 0 || v > 255)
		return cli_usage("priority '%s' is not a number from 0 to 255", s);
	*out = (int)v;
	return 0;
}

int configure_priority(const char *name, const char *component, int priority)
{
	char path[PATH_MAX + 256], cmd[PATH_MAX + 300], what[64];
	int rc, lock_fd;
	pid_t pid;

	if ((rc = resolve_component(name, component, path, sizeof(path))))
		return rc;
	/* Stopped: the label is rewritten under the lock, so that no serve
	 * starts meanwhile; running: the server does it. */
	int r = state_lock(name, "configure", &lock_fd, &pid, what, sizeof(what));
	if (r == 0) {
		state_hint_sizes(name); /* (grown since it was labelled?) */
		rc = bm_label_set_priority(name, path, (uint32_t)priority) < 0
		     ? cli_fail("%s", bm_last_error()) : 0;
		state_unlock(lock_fd);
		return rc;
	}
	if (r == -EBUSY && strcmp(what, "serve") == 0) {
		snprintf(cmd, sizeof(cmd), "live priority %d %s", priority, path);
		return live_run_job(name, cmd);
	}
	if (r == -EBUSY)
		return cli_fail("mirror '%s' is busy: pid %ld (%s); try again",
		                name, (long)pid, what[0] ? what : "starting");
	return cli_fail("cannot lock %s/%s.lock: %s", state_dir(), name,
	                strerror(-r));
}
