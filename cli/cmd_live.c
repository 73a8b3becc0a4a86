/*
 * blkmirror insert / remove, and forget on a running mirror: components
 * join and leave while the mirror serves (lib/live.c does the work); and
 * the server's side of deactivate / activate / rebuild / configure -p
 * (lib/rebuild.c does the work, cmd_rebuild.c is the command's side).
 *
 * The work (opening a component, checking it, watching its lease, label
 * writes, draining a component's requests) can take seconds, up to the
 * io-timeout when a component hangs, and the control thread must answer
 * status within one.  So the server runs it on a thread of its own, one
 * job at a time:
 *   "live insert PRIORITY FLAGS PATH"   FLAGS: '-' or letters i (inactive),
 *                                       f (force), n (the checks only:
 *                                       nothing is written)
 *   "live remove PATH<TAB>PATH..."
 *   "live forget"
 *   "live deactivate PATH" | "live activate PATH" | "live rebuild PATH"
 *   "live priority N PATH"
 *   "live configure ALGORITHM SLICE"    (configure -b/-s: every label is
 *                                       rewritten, up to the io-timeout)
 * each answer "ok\nstarted ID" (or "error ..." when another job runs), and
 *   "live result ID"
 * answers "ok\nrunning", "ok\ndone\nREPORT" or "error MESSAGE".  A job
 * that changes the list of components writes the state directory's list
 * (the server holds NAME.lock) before it ends, so a restart assembles what
 * the mirror has.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "live.h"
#include "probe.h"
#include "progress.h"
#include "statedir.h"

#define JOB_REPORT_MAX 8192
#define REPLY_MAX (16 * 1024)

enum job_kind {
	JOB_INSERT, JOB_REMOVE, JOB_FORGET,          /* the list changes */
	JOB_DEACTIVATE, JOB_ACTIVATE, JOB_REBUILD, JOB_PRIORITY, /* one's state */
	JOB_CONFIGURE,                                /* the labels' balance */
};

static struct job {
	pthread_mutex_t lock;
	unsigned id;             /* of the last job started */
	bool running;
	bool done;               /* finished, result not fetched yet */
	enum job_kind kind;
	bm_mirror *m;
	char name[BM_NAME_MAX + 1];
	struct bm_insert_params ip;
	unsigned priority;       /* JOB_PRIORITY */
	int balance;             /* JOB_CONFIGURE */
	unsigned slice;
	char *paths[BM_MAX_COMPONENTS];
	size_t npaths;
	int err;
	char report[JOB_REPORT_MAX];
} job = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The state directory lists what the mirror has now. */
static void record_components(struct job *j, size_t used)
{
	char *paths[BM_MAX_COMPONENTS];
	size_t n;
	int err = bm_mirror_paths(j->m, paths, &n);

	if (err == 0) {
		err = state_write_components(j->name, paths, n);
		for (size_t i = 0; i < n; i++)
			free(paths[i]);
	}
	uint64_t sizes[BM_MAX_COMPONENTS];
	size_t nsizes = bm_mirror_label_sizes(j->m, sizes, BM_MAX_COMPONENTS);
	if (err == 0)
		err = state_keep_sizes(j->name, sizes, nsizes);
	if (err < 0)
		snprintf(j->report + used, sizeof(j->report) - used,
		         "warning: cannot record the components of %s in %s: %s; "
		         "a restart assembles the old list\n", j->name,
		         state_dir(), strerror(-err));
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	char msg[1024] = "";
	int err = 0;

	pthread_setname_np(pthread_self(), "bm-live-job");
	j->report[0] = '\0';
	switch (j->kind) {
	case JOB_INSERT:
		err = bm_mirror_insert(j->m, j->paths[0], &j->ip);
		if (err == 0 && j->ip.check_only)
			err = -EALREADY; /* nothing to say, nothing to record */
		else if (err == 0)
			snprintf(j->report, sizeof(j->report), "%s: inserted %s%s\n",
			         j->name, j->paths[0], j->ip.inactive ? " (INACTIVE)"
			         : "; synchronizing it");
		break;
	case JOB_REMOVE:
		err = bm_mirror_remove(j->m, (const char *const *)j->paths,
		                       j->npaths, j->report, sizeof(j->report));
		break;
	case JOB_FORGET:
		err = bm_mirror_forget_gone(j->m, j->report, sizeof(j->report));
		if (err == 0)
			snprintf(j->report, sizeof(j->report), "%s: nothing to "
			         "forget: every component is connected\n", j->name);
		if (err >= 0)
			err = err > 0 ? 0 : -EALREADY;
		break;
	case JOB_DEACTIVATE:
		err = bm_mirror_deactivate(j->m, j->paths[0]);
		break;
	case JOB_ACTIVATE:
		err = bm_mirror_activate(j->m, j->paths[0]);
		break;
	case JOB_REBUILD:
		err = bm_mirror_rebuild(j->m, j->paths[0]);
		break;
	case JOB_PRIORITY:
		err = bm_mirror_set_priority(j->m, j->paths[0], j->priority);
		break;
	case JOB_CONFIGURE:
		err = bm_mirror_configure(j->m, j->balance, j->slice);
		break;
	}
	if (err < 0 && err != -EALREADY)
		snprintf(msg, sizeof(msg), "%s%s%s",
		         j->kind == JOB_CONFIGURE ? j->name : "",
		         j->kind == JOB_CONFIGURE ? ": " : "", bm_last_error());
	if (err == 0 && j->kind <= JOB_FORGET)
		record_components(j, strlen(j->report));
	bm_live_end(j->m);
	pthread_mutex_lock(&j->lock);
	j->err = err == -EALREADY ? 0 : err;
	if (err < 0 && err != -EALREADY)
		snprintf(j->report, sizeof(j->report), "%s", msg);
	for (size_t i = 0; i < j->npaths; i++) {
		free(j->paths[i]);
		j->paths[i] = NULL;
	}
	j->npaths = 0;
	j->running = false;
	j->done = true;
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* Parses a job request into job (lock held); 0, or the reply written. */
static int parse_job(const char *cmd, char *out, size_t len)
{
	unsigned prio;
	char flags[8];
	int pos = 0;

	if (strcmp(cmd, "live forget") == 0) {
		job.kind = JOB_FORGET;
		return 0;
	}
	char alg[32];
	if (sscanf(cmd, "live configure %31s %u", alg, &job.slice) == 2) {
		job.balance = bm_balance_parse(alg);
		if (job.balance < 0) {
			snprintf(out, len, "error unknown balance algorithm '%s'\n",
			         alg);
			return 1;
		}
		job.kind = JOB_CONFIGURE;
		return 0;
	}
	if (sscanf(cmd, "live insert %u %7s %n", &prio, flags, &pos) == 2 &&
	    pos > 0 && cmd[pos]) {
		job.kind = JOB_INSERT;
		job.ip = (struct bm_insert_params){
			.priority = prio, .inactive = strchr(flags, 'i') != NULL,
			.force = strchr(flags, 'f') != NULL,
			.check_only = strchr(flags, 'n') != NULL};
		job.paths[0] = strdup(cmd + pos);
		job.npaths = job.paths[0] ? 1 : 0;
		return job.npaths ? 0 : snprintf(out, len, "error out of memory\n");
	}
	if (strncmp(cmd, "live remove ", 12) == 0 && cmd[12]) {
		job.kind = JOB_REMOVE;
		for (const char *p = cmd + 12; *p;) {
			size_t l = strcspn(p, "\t");
			if (job.npaths == BM_MAX_COMPONENTS) {
				snprintf(out, len, "error too many components\n");
				return 1;
			}
			job.paths[job.npaths] = strndup(p, l);
			if (!job.paths[job.npaths]) {
				snprintf(out, len, "error out of memory\n");
				return 1;
			}
			job.npaths++;
			p += l;
			if (*p == '\t')
				p++;
		}
		return 0;
	}
	static const struct {
		const char *prefix;
		enum job_kind kind;
	} one[] = {
		{"live deactivate ", JOB_DEACTIVATE},
		{"live activate ", JOB_ACTIVATE},
		{"live rebuild ", JOB_REBUILD},
	};
	const char *path = NULL;
	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]) && !path; i++) {
		size_t l = strlen(one[i].prefix);
		if (strncmp(cmd, one[i].prefix, l) == 0 && cmd[l]) {
			job.kind = one[i].kind;
			path = cmd + l;
		}
	}
	if (!path && sscanf(cmd, "live priority %u %n", &prio, &pos) == 1 &&
	    pos > 0 && cmd[pos]) {
		if (prio > 255) {
			snprintf(out, len, "error priority %u is not from 0 to 255\n",
			         prio);
			return 1;
		}
		job.kind = JOB_PRIORITY;
		job.priority = prio;
		path = cmd + pos;
	}
	if (path) {
		job.paths[0] = strdup(path);
		job.npaths = job.paths[0] ? 1 : 0;
		return job.npaths ? 0 : snprintf(out, len, "error out of memory\n");
	}
	snprintf(out, len, "error unknown control command\n");
	return 1;
}

int ctl_live(bm_mirror *m, const char *name, const char *cmd, char *out,
             size_t len)
{
	unsigned id;
	pthread_t t;

	if (strncmp(cmd, "live ", 5) != 0)
		return 0;
	pthread_mutex_lock(&job.lock);
	if (sscanf(cmd, "live result %u", &id) == 1) {
		if (id != job.id || (!job.running && !job.done))
			snprintf(out, len, "error no such job\n");
		else if (job.running)
			snprintf(out, len, "ok\nrunning\n");
		else if (job.err < 0)
			snprintf(out, len, "error %s\n", job.report);
		else
			snprintf(out, len, "ok\ndone\n%s", job.report);
		if (id == job.id && job.done)
			job.done = false;
		pthread_mutex_unlock(&job.lock);
		return 1;
	}
	if (job.running) {
		snprintf(out, len, "error %s is busy with another change of its "
		         "components (insert, remove, forget, deactivate, activate, "
		         "rebuild, priority or configure); try again when it "
		         "ends\n", name);
		pthread_mutex_unlock(&job.lock);
		return 1;
	}
	for (size_t i = 0; i < job.npaths; i++)
		free(job.paths[i]);
	job.npaths = 0;
	if (parse_job(cmd, out, len)) {
		pthread_mutex_unlock(&job.lock);
		return 1;
	}
	if (bm_live_begin(m) < 0) {
		snprintf(out, len, "error %s is stopping\n", name);
		pthread_mutex_unlock(&job.lock);
		return 1;
	}
	job.m = m;
	snprintf(job.name, sizeof(job.name), "%s", name);
	job.running = true;
	job.done = false;
	job.id++;
	if (pthread_create(&t, NULL, job_main, &job) != 0) {
		bm_live_end(m);
		job.running = false;
		snprintf(out, len, "error cannot start a thread\n");
	} else {
		pthread_detach(t);
		snprintf(out, len, "ok\nstarted %u\n", job.id);
	}
	pthread_mutex_unlock(&job.lock);
	return 1;
}

/* ---- the command's side ---- */

/* 0 when NAME is a mirror whose server runs; else 1 after one line. */
static int need_running(const char *verb, const char *name)
{
	char **paths, what[64];
	size_t n;
	pid_t pid;
	int err;

	if (!bm_name_valid(name))
		return cli_fail("invalid mirror name '%s'", name);
	err = state_read_components(name, &paths, &n);
	if (err == -ENOENT)
		return cli_fail("no mirror named '%s' in %s", name, state_dir());
	if (err < 0)
		return cli_fail("cannot read the state of '%s': %s", name,
		                strerror(-err));
	state_free(paths, n);
	err = state_lock_holder(name, &pid, what, sizeof(what));
	if (err < 0)
		return cli_fail("cannot tell whether '%s' is running: %s", name,
		                strerror(-err));
	if (err == 0)
		return cli_fail("mirror '%s' is not running; %s works on a running "
		                "mirror: start it with 'blkmirror serve %s' first",
		                name, verb, name);
	return 0;
}

/* Sends a job request and waits for its end.  0 with the report printed;
 * 1 after one line. */
int live_run_job(const char *name, const char *cmd)
{
	char *reply = malloc(REPLY_MAX);
	unsigned id;
	int err, rc = 1;

	if (!reply)
		return cli_fail("out of memory");
	err = control_call(name, cmd, reply, REPLY_MAX);
	if (err == -EACCES) {
		cli_fail("%s: permission denied on its control socket; run this "
		         "as root or as the user that serves it", name);
		goto out;
	}
	if (err == -ENOENT) {
		cli_fail("%s is running but does not answer on its control "
		         "socket (starting or stopping); try again", name);
		goto out;
	}
	if (err == -EINPROGRESS) {
		cli_fail("%s: its server took the request but did not answer it "
		         "within 10 s (busy, or stopped); it may still carry it "
		         "out: 'blkmirror status %s' shows what it did", name,
		         name);
		goto out;
	}
	if (err < 0) {
		cli_fail("%s does not answer on its control socket: %s", name,
		         strerror(-err));
		goto out;
	}
	if (strncmp(reply, "ok\nstarted ", 11) != 0 ||
	    sscanf(reply + 11, "%u", &id) != 1) {
		cli_fail("%.*s", (int)strcspn(reply, "\n") -
		         (strncmp(reply, "error ", 6) == 0 ? 6 : 0),
		         reply + (strncmp(reply, "error ", 6) == 0 ? 6 : 0));
		goto out;
	}
	for (;;) {
		char q[64];
		usleep(20000);
		snprintf(q, sizeof(q), "live result %u", id);
		err = control_call(name, q, reply, REPLY_MAX);
		if (err < 0) {
			pid_t pid;
			char what[64];
			if (state_lock_holder(name, &pid, what, sizeof(what)) != 1) {
				cli_fail("%s stopped before the request ended", name);
				goto out;
			}
			continue; /* busy: the next poll */
		}
		if (strcmp(reply, "ok\nrunning\n") == 0)
			continue;
		break;
	}
	if (strncmp(reply, "ok\ndone\n", 8) == 0) {
		fputs(reply + 8, stdout);
		rc = 0;
	} else {
		const char *msg = strncmp(reply, "error ", 6) == 0 ? reply + 6
		                                                   : reply;
		cli_fail("%.*s", (int)strcspn(msg, "\n"), msg);
	}
out:
	free(reply);
	return rc;
}

/* Whether two component arguments name the same disk: the same path, or
 * the same file or device under two names (hard or symbolic links, a loop
 * device and its backing file, two loop devices over one file). */
static bool same_disk(const char *a, const char *b)
{
	struct stat sa, sb;
	char *ca = cli_canonical_path(a), *cb = cli_canonical_path(b);
	bool same = ca && cb && strcmp(ca, cb) == 0;
	const char *pair[2] = {a, b};
	size_t x, y;

	free(ca);
	free(cb);
	if (same || bm_probe_same_identity(pair, 2, &x, &y))
		return true;
	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return false;
	if (S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode))
		return sa.st_rdev == sb.st_rdev;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Runs the server's removal of paths (as it knows them); 0, or 1 said. */
static int remove_job(const char *name, char *const *paths, size_t n)
{
	size_t len = 32, used;
	for (size_t i = 0; i < n; i++)
		len += strlen(paths[i]) + 1;
	char *cmd = malloc(len);
	if (!cmd)
		return cli_fail("out of memory");
	used = (size_t)sprintf(cmd, "live remove ");
	for (size_t i = 0; i < n; i++)
		used += (size_t)sprintf(cmd + used, "%s%s", i ? "\t" : "",
		                        paths[i]);
	int rc = live_run_job(name, cmd);
	free(cmd);
	return rc;
}

/* After one of several inserts failed: the ones inserted before it go. */
static void undo_inserts(const char *name, char **paths, int n)
{
	fprintf(stderr, "blkmirror: insert: removing again what this command "
	        "inserted before the failure\n");
	fflush(stdout);
	if (remove_job(name, paths, (size_t)n) != 0)
		fprintf(stderr, "blkmirror: insert: what it inserted could not "
		        "be removed again; see 'blkmirror status %s' and remove "
		        "it\n", name);
}

int cmd_insert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"wait", no_argument, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	unsigned long prio = 0;
	bool inactive = false, force = false, wait = false;
	int opt, status, rc = 0;
	char *end;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, "insert", "p:ifw", longopts,
	                         &status)) != -1) {
		switch (opt) {
		case 'p':
			errno = 0;
			prio = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' ||
			    prio > 255)
				return cli_usage("insert: -p '%s' is not a priority "
				                 "from 0 to 255", optarg);
			break;
		case 'i': inactive = true; break;
		case 'f': force = true; break;
		case 'w': wait = true; break;
		default: return status;
		}
	}
	if (argc - optind < 2)
		return cli_usage_of("insert");
	if (inactive && wait)
		return cli_usage("insert: --wait waits for a copy, and a component "
		                 "inserted with -i is not copied");
	const char *name = argv[optind];
	if (!bm_name_valid(name))
		return cli_usage("invalid mirror name '%s'", name);
	for (int i = optind + 1; i < argc; i++)
		if ((rc = cli_check_path("insert", argv[i])) != 0)
			return rc;
	if (need_running("insert", name))
		return 1;
	/* Several: every one checked before any is inserted (the server
	 * inserts one a job), so a wrong one leaves the mirror as it was. */
	int n = argc - optind - 1;
	for (int i = 0; n > 1 && i < n && rc == 0; i++)
		for (int k = 0; k < i && rc == 0; k++)
			if (same_disk(argv[optind + 1 + k], argv[optind + 1 + i]))
				rc = cli_fail("insert: %s and %s are the same disk; "
				              "nothing inserted",
				              argv[optind + 1 + k], argv[optind + 1 + i]);
	/* What the server alone can tell (two URIs of one export: a block
	 * written through one and read through the other) shows when the
	 * second is inserted: the ones this command inserted before it are
	 * removed again (new, they hold nothing the mirror needs). */
	char *done[BM_MAX_COMPONENTS];
	int ndone = 0;
	for (int pass = n > 1 ? 0 : 1; pass < 2 && rc == 0; pass++)
		for (int i = optind + 1; i < argc && rc == 0; i++) {
			char *p = cli_canonical_path(argv[i]);
			char *cmd = malloc(strlen(p ? p : "") + 64);
			if (!p || !cmd) {
				free(p);
				free(cmd);
				return cli_fail("out of memory");
			}
			sprintf(cmd, "live insert %lu %s%s%s%s %s", prio,
			        inactive ? "i" : "", force ? "f" : "",
			        pass == 0 ? "n" : "",
			        inactive || force || pass == 0 ? "" : "-", p);
			rc = live_run_job(name, cmd);
			free(cmd);
			fflush(stdout); /* (its report before a later error) */
			if (rc == 0 && pass == 1 && ndone < BM_MAX_COMPONENTS) {
				done[ndone++] = p;
				p = NULL;
			} else if (rc != 0 && pass == 1 && ndone > 0) {
				undo_inserts(name, done, ndone);
			}
			if (rc == 0 && wait && pass == 1) {
				fflush(stdout);
				rc = wait_synchronized(name, done[ndone - 1]);
			}
			free(p);
		}
	for (int i = 0; i < ndone; i++)
		free(done[i]);
	return rc;
}

int cmd_remove(int argc, char **argv)
{
	int opt, status, rc;

	optind = 0;
	while ((opt = cli_getopt(argc, argv, "remove", "", NULL, &status)) != -1)
		return status;
	if (argc - optind < 2)
		return cli_usage_of("remove");
	const char *name = argv[optind];
	if (!bm_name_valid(name))
		return cli_usage("invalid mirror name '%s'", name);
	if (argc - optind - 1 > BM_MAX_COMPONENTS)
		return cli_usage("remove: a mirror has at most %d components",
		                 BM_MAX_COMPONENTS);
	for (int i = optind + 1; i < argc; i++)
		if ((rc = cli_check_path("remove", argv[i])) != 0)
			return rc;
	if (need_running("remove", name))
		return 1;
	/* As status shows them: the paths as recorded (canonical), or as
	 * typed when that is how they are known. */
	char *paths[BM_MAX_COMPONENTS] = {0};
	size_t n = 0;
	rc = 0;
	for (int i = optind + 1; i < argc && rc == 0; i++)
		if (!(paths[n++] = cli_canonical_path(argv[i])))
			rc = cli_fail("out of memory");
	if (rc == 0)
		rc = remove_job(name, paths, n);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	return rc;
}

int live_forget_running(const char *name)
{
	return live_run_job(name, "live forget");
}
