/*
 * blkmirror serve: assemble the mirror from its labels and serve it over
 * NBD in the foreground until SIGTERM/SIGINT or `blkmirror stop`; then drain
 * in-flight requests, flush, mark the components clean and exit 0.
 *
 * Signals are blocked before any thread starts and taken with sigwait() in
 * the main thread, so no handler ever runs inside the engine.  SIGHUP is
 * taken and ignored (a closed terminal or a service manager's reload must
 * never stop a mirror uncleanly; the log is stderr, nothing to reopen).
 *
 * The whole life of the process is under NAME.lock (statedir.h): a second
 * serve of the mirror is refused naming the pid, and `stop` waits for the
 * lock to know that the components are flushed, clean and closed.  The
 * control socket answers until the end: during the stop it says what the
 * server is still doing ("phase"), which `stop --timeout` reports.
 *
 * Without --socket and --tcp the server listens on RUN_DIR/NAME.sock
 * (statedir.h).  The Unix socket's path is recorded in NAME.socket once it
 * accepts connections, for the verbs that connect to the export, and
 * removed at a clean stop.  Under a service manager (Type=notify,
 * sd_notify.c) READY=1 is sent once the mirror is assembled and both
 * sockets accept connections; each stop phase is sent as STATUS=, after
 * STOPPING=1.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "nbd_server.h"
#include "sd_notify.h"
#include "statedir.h"

static const char serve_usage[] =
	"usage: blkmirror serve NAME [--socket PATH] [--tcp [HOST:]PORT] "
	"[--readahead SIZE] [--io-timeout SECONDS] [--read-errors COUNT] "
	"[--max-connections N] [--max-inflight SIZE] [--max-inflight-total SIZE] "
	"[--force-source COMPONENT]";

/* What the control thread may touch.  lock orders the handler's use of m
 * and srv against the main thread's stop: once running is false neither
 * is used again. */
struct serve_state {
	pthread_mutex_t lock;
	bool running;
	bm_mirror *m;                 /* NULL once closed (stop phases after) */
	struct bm_nbd_server *srv;
	char name[BM_NAME_MAX + 1];
	char phase[1024];
	unsigned long long stop_extend_us; /* the last stop_extend_usec */
};

/* How long systemd should give each phase of a stop (EXTEND_TIMEOUT_USEC,
 * sent with STOPPING=1 and every stop phase; it only ever extends the
 * unit's TimeoutStopSec, never shortens it).  Each wait of a stop is
 * bounded by io-timeout (+ 5 s), the patient label and flush waits by 4 x
 * io-timeout (8 x for a mark's labels while a copy runs: the full
 * components' first, then the copies', meta.c); 8 x io-timeout + 30 s
 * covers any one phase.  So a unit whose TimeoutStopSec was not raised
 * along with --io-timeout (or with configure --io-timeout, live) is not
 * killed while it still drains or flushes, which would leave the mirror
 * dirty; a stop stuck in one phase for longer is killed. */
static unsigned long long stop_extend_usec(bm_mirror *m)
{
	return (8ull * bm_mirror_io_timeout_ms(m) + 30000ull) * 1000ull;
}

static void set_phase(struct serve_state *st, bool running, const char *fmt,
                      ...) __attribute__((format(printf, 3, 4)));
static void set_phase(struct serve_state *st, bool running, const char *fmt,
                      ...)
{
	va_list ap;

	pthread_mutex_lock(&st->lock);
	st->running = running;
	va_start(ap, fmt);
	vsnprintf(st->phase, sizeof(st->phase), fmt, ap);
	va_end(ap);
	/* a stop phase: the io-timeout now, or once m is closed the last
	 * one read */
	if (!running && st->m)
		st->stop_extend_us = stop_extend_usec(st->m);
	if (running || !st->stop_extend_us)
		service_notify("STATUS=%s: %s", st->name, st->phase);
	else
		service_notify("STATUS=%s: %s\nEXTEND_TIMEOUT_USEC=%llu", st->name,
		               st->phase, st->stop_extend_us);
	pthread_mutex_unlock(&st->lock);
}

static void stats_reply(bm_mirror *m, char *out, size_t len)
{
	struct bm_stat_row rows[BM_MAX_COMPONENTS + 1];
	int nrows = bm_mirror_stats(m, rows, BM_MAX_COMPONENTS + 1);
	struct timespec ts;
	size_t used;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* the server's own CPU time (every thread, ended ones too), to the
	 * microsecond: /proc's figures count in ticks of 10 ms */
	struct rusage ru;
	unsigned long long cpu_us = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu_us = (unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
		                 1000000ull +
		         (unsigned long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	used = (size_t)snprintf(out, len, "ok\nt %llu\ncpu %llu\n",
	        (unsigned long long)ts.tv_sec * 1000000000ull +
	        (unsigned long long)ts.tv_nsec, cpu_us);
	for (int i = 0; i < nrows && used < len; i++) {
		struct bm_stat_row *r = &rows[i];
		used += (size_t)snprintf(out + used, len - used,
		        "row %d %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		        "%llu %llu %s\n", r->queue,
		        (unsigned long long)r->reads,
		        (unsigned long long)r->read_bytes,
		        (unsigned long long)r->read_ns,
		        (unsigned long long)r->writes,
		        (unsigned long long)r->write_bytes,
		        (unsigned long long)r->write_ns,
		        (unsigned long long)r->deletes,
		        (unsigned long long)r->delete_bytes,
		        (unsigned long long)r->delete_ns,
		        (unsigned long long)r->busy_ns,
		        (unsigned long long)r->errors, r->name);
	}
}

/* "stop" refuses while NBD clients are connected; "stop force" does not.
 * Either only asks the main thread (SIGTERM) and returns at once: the
 * caller waits for NAME.lock. */
static void stop_request(struct serve_state *st, bool force, char *out,
                         size_t len)
{
	char who[700];
	int n = bm_nbd_server_clients(st->srv, who, sizeof(who));

	if (n > 0 && !force) {
		snprintf(out, len, "error %s has %d NBD connection%s open (%s); "
		         "unmount or disconnect the client%s first, or use "
		         "'blkmirror stop -f %s'\n", st->name, n, n == 1 ? "" : "s",
		         who, n == 1 ? "" : "s", st->name);
		return;
	}
	snprintf(out, len, "ok\n");
	kill(getpid(), SIGTERM);
}

/* Control commands of other verbs' files (cli.h, ctl_extension). */
static int ctl_progress(bm_mirror *m, const char *name, const char *cmd,
                        char *out, size_t len);
static const ctl_extension ctl_extensions[] = {
	ctl_progress,
	ctl_check,
	ctl_live,
	ctl_events,
	ctl_sync,
};

/* "progress": a line per component being copied:
 *   sync INDEX DONE_BYTES TOTAL_BYTES RATE_BYTES_PER_S ETA_S PATH
 * (ETA_S -1 when not known yet). */
static int ctl_progress(bm_mirror *m, const char *name, const char *cmd,
                        char *out, size_t len)
{
	struct bm_sync_progress p;
	size_t used;

	if (strcmp(cmd, "progress") != 0)
		return 0;
	used = (size_t)snprintf(out, len, "ok\n");
	for (int i = 0; i < BM_MAX_COMPONENTS && used < len; i++)
		if (bm_mirror_sync_progress(m, i, &p) == 1)
			used += (size_t)snprintf(out + used, len - used,
			        "sync %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64
			        " %s\n", i, p.done, p.total, p.rate, p.eta_s,
			        p.path);
	return 1;
}

static int control_handler_fn(void *ctx, const char *cmd, char *out,
                              size_t len)
{
	struct serve_state *st = ctx;
	unsigned slice = 0;
	int n;

	pthread_mutex_lock(&st->lock);
	if (strcmp(cmd, "ping") == 0) {
		snprintf(out, len, "ok\n");
	} else if (strcmp(cmd, "phase") == 0) {
		snprintf(out, len, "ok\n%s\n", st->phase);
	} else if (!st->running) {
		if (strncmp(cmd, "stop", 4) == 0)
			snprintf(out, len, "ok\n");
		else
			snprintf(out, len, "error %s is stopping: %s\n", st->name,
			         st->phase);
	} else if (strcmp(cmd, "status") == 0 || strcmp(cmd, "list") == 0) {
		n = snprintf(out, len, "ok\n");
		if (cmd[0] == 's')
			bm_mirror_status(st->m, out + n, len - (size_t)n);
		else
			bm_mirror_list(st->m, out + n, len - (size_t)n);
	} else if (sscanf(cmd, "io-timeout %u", &slice) == 1) {
		bm_mirror_set_io_timeout(st->m, slice);
		snprintf(out, len, "ok\n");
	} else if (strcmp(cmd, "stats") == 0) {
		stats_reply(st->m, out, len);
	} else if (strcmp(cmd, "stop") == 0 || strcmp(cmd, "stop force") == 0) {
		stop_request(st, cmd[4] != '\0', out, len);
	} else {
		size_t i, next = sizeof(ctl_extensions) / sizeof(ctl_extensions[0]);
		for (i = 0; i < next; i++)
			if (ctl_extensions[i](st->m, st->name, cmd, out, len))
				break;
		if (i == next)
			snprintf(out, len, "error unknown control command\n");
	}
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/* One line for a wrong option, exit 2. */
static int bad_option(int opt, const char *shortopts, char **argv)
{
	char o[3] = {'-', (char)optopt, '\0'};
	const char *arg = argv[optind - 1];
	const char *what = strncmp(arg, "--", 2) != 0 && optopt > 0 &&
	                   optopt < 128 && strchr(shortopts, optopt) ? o : arg;

	if (opt == ':')
		return cli_usage("serve: option %s needs a value; %s", what,
		                 serve_usage);
	return cli_usage("serve: unknown option %s; %s", what, serve_usage);
}

/* The index of COMPONENT among the mirror's paths: the same text, or the
 * same file once both are resolved; -1 when it is none of them. */
static int component_index(char **paths, size_t n, const char *component)
{
	char *want = realpath(component, NULL);
	int found = -1;

	for (size_t i = 0; i < n && found < 0; i++) {
		if (strcmp(paths[i], component) == 0) {
			found = (int)i;
		} else if (want) {
			char *have = realpath(paths[i], NULL);
			if (have && strcmp(have, want) == 0)
				found = (int)i;
			free(have);
		}
	}
	free(want);
	return found;
}

int cmd_serve(int argc, char **argv)
{
	static const char shortopts[] = ":S:T:R:h";
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 'S'},
		{"tcp", required_argument, NULL, 'T'},
		{"readahead", required_argument, NULL, 'R'},
		{"io-timeout", required_argument, NULL, 'O'},
		{"read-errors", required_argument, NULL, 'E'},
		{"max-connections", required_argument, NULL, 'C'},
		{"max-inflight", required_argument, NULL, 'I'},
		{"max-inflight-total", required_argument, NULL, 'J'},
		{"force-source", required_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct serve_state st = {.lock = PTHREAD_MUTEX_INITIALIZER};
	const char *sock = NULL, *tcp = NULL, *name, *force_source = NULL;
	int force_index = -1;
	struct control_server *ctl = NULL;
	char **paths, holder_what[64], who[700], default_sock[4096];
	size_t n;
	sigset_t set;
	uint64_t readahead = 0, io_timeout = 0, read_errors = 0;
	uint64_t max_conns = 0, max_inflight = 0, max_inflight_total = 0;
	bool readahead_set = false, io_timeout_set = false,
	     read_errors_set = false;
	int opt, sig, err, lock_fd, nclients;
	pid_t holder;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case 'S':
			if (!optarg[0])
				return cli_usage("serve: --socket needs a path");
			sock = optarg;
			break;
		case 'T':
			tcp = optarg;
			if (parse_tcp_arg(tcp)) /* labelsafe: exit 2 for a bad port */
				return EXIT_USAGE;
			break;
		case 'R':
			if (parse_size(optarg, &readahead) < 0 ||
			    readahead > (64ull << 30))
				return cli_usage("--readahead '%s' is not a size from 0 "
				                 "to 64G (e.g. 64M)", optarg);
			readahead_set = true;
			break;
		case 'O':
			if (parse_io_timeout_arg(optarg, &io_timeout))
				return EXIT_USAGE;
			io_timeout_set = true;
			break;
		case 'E':
			if (parse_count(optarg, &read_errors) < 0 ||
			    read_errors > 1000000)
				return cli_usage("--read-errors '%s' is not a count "
				                 "from 0 to 1000000", optarg);
			read_errors_set = true;
			break;
		case 'C':
			if (parse_count(optarg, &max_conns) < 0 || max_conns < 1 ||
			    max_conns > 100000)
				return cli_usage("--max-connections '%s' is not a "
				                 "count from 1 to 100000", optarg);
			break;
		case 'I':
		case 'J': {
			uint64_t v;
			if (parse_size(optarg, &v) < 0 || v < (1u << 20) ||
			    v > (64ull << 30))
				return cli_usage("--%s '%s' is not a size from 1M "
				                 "to 64G", opt == 'I' ? "max-inflight"
				                 : "max-inflight-total", optarg);
			*(opt == 'I' ? &max_inflight : &max_inflight_total) = v;
			break;
		}
		case 'F': force_source = optarg; break;
		case 'h':
			printf("%s\n"
			       "Serves the mirror over NBD in the foreground until "
			       "'blkmirror stop NAME' or SIGTERM/SIGINT\n(SIGHUP is "
			       "ignored).  PATH must not exist, or be a stale socket "
			       "left by a server\nthat is gone; nothing else there is "
			       "ever replaced.  Without --socket and --tcp: %s/NAME.sock\n"
			       "(the run directory: $BLKMIRROR_RUN_DIR, else "
			       "$BLKMIRROR_STATE_DIR, else " RUN_DIR_DEFAULT ").\n"
			       "--force-source COMPONENT resolves a split brain: that "
			       "component is the source and\nevery other one is copied "
			       "from it in full (their own writes are lost).\n",
			       serve_usage, run_dir());
			return 0;
		default:
			return bad_option(opt, shortopts, argv);
		}
	}
	if (argc - optind != 1)
		return cli_usage("%s", serve_usage);
	name = argv[optind];
	if (!bm_name_valid(name))
		return cli_fail("invalid mirror name '%s'", name);
	if (sock && state_control_socket_path(sock))
		return cli_fail("--socket %s is in the state directory, where "
		                "a mirror's server keeps its control socket "
		                "(NAME.ctl); give the NBD socket another path",
		                sock);
	snprintf(st.name, sizeof(st.name), "%s", name);
	err = state_read_components(name, &paths, &n);
	if (err == -ENOENT)
		return cli_fail("no mirror named '%s' in %s; create it with "
		                "'blkmirror label %s COMPONENT...'", name,
		                state_dir(), name);
	if (err < 0)
		return cli_fail("cannot read the state of '%s': %s", name,
		                strerror(-err));
	if (n == 0 || n > BM_MAX_COMPONENTS) {
		state_free(paths, n);
		return cli_fail("the state of '%s' lists %zu components", name, n);
	}
	if (force_source) {
		force_index = component_index(paths, n, force_source);
		if (force_index < 0) {
			state_free(paths, n);
			return cli_fail("--force-source %s is not a component of "
			                "mirror '%s' (see 'blkmirror status %s')",
			                force_source, name, name);
		}
	}
	/* Held until the process exits (the fd is closed by the kernel then,
	 * after the components are closed). */
	err = state_lock(name, "serve", &lock_fd, &holder, holder_what,
	                 sizeof(holder_what));
	if (err < 0) {
		state_free(paths, n);
		if (err == -EBUSY && strcmp(holder_what, "serve") == 0)
			return cli_fail("mirror '%s' is already being served by pid "
			                "%ld", name, (long)holder);
		if (err == -EBUSY)
			return cli_fail("mirror '%s' is busy: pid %ld (%s) holds "
			                "%s/%s.lock", name, (long)holder,
			                holder_what[0] ? holder_what : "starting",
			                state_dir(), name);
		return cli_fail("cannot lock %s/%s.lock: %s", state_dir(), name,
		                strerror(-err));
	}

	/* Request buffers (up to 32 MiB each) come and go all the time: keep
	 * them on the heap, not in fresh mmaps, so that each request does not
	 * pay page faults and TLB shootdowns (measured: ~150 us on a 128 KiB
	 * write). */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!sock && !tcp) {
		err = run_default_socket(default_sock, sizeof(default_sock), name);
		if (err < 0) {
			state_free(paths, n);
			return cli_fail("cannot use the run directory %s for the "
			                "default socket: %s (give --socket PATH, or "
			                "set BLKMIRROR_RUN_DIR)", run_dir(),
			                strerror(-err));
		}
		sock = default_sock;
	}
	err = bm_nbd_server_listen(sock, tcp, &st.srv);
	if (err < 0) {
		state_free(paths, n);
		return cli_fail("%s", bm_last_error());
	}
	if (max_conns || max_inflight || max_inflight_total) {
		struct bm_nbd_limits lim;
		bm_nbd_limits_default(&lim);
		if (max_conns)
			lim.max_conns = (int)max_conns;
		if (max_inflight)
			lim.conn_bytes = max_inflight;
		if (max_inflight_total)
			lim.server_bytes = max_inflight_total;
		if (bm_nbd_server_set_limits(st.srv, &lim) < 0) {
			state_free(paths, n);
			cli_fail("%s", bm_last_error());
			bm_nbd_server_stop(st.srv);
			return 1;
		}
	}
	/* the start's label, header and lease reads wait as long as the
	 * running mirror's will (a component that never answers is left
	 * out after that, not waited for) */
	if (io_timeout_set)
		bm_backend_set_sync_timeout_ms((long)io_timeout * 1000);
	/* where grown components' labels are when no label says it (every
	 * component grew): the sizes the last start recorded */
	state_hint_sizes(name);
	err = bm_mirror_open_forced(name, (const char *const *)paths, n,
	                            force_index, &st.m);
	/* from now on the labels in memory say where (the kept sizes could
	 * only add stale places to look) */
	bm_label_set_size_hints(NULL, NULL, 0);
	state_free(paths, n);
	if (err < 0) {
		cli_fail("%s", bm_last_error());
		bm_nbd_server_stop(st.srv);
		return 1;
	}
	uint64_t sizes[BM_MAX_COMPONENTS];
	size_t nsizes = bm_mirror_label_sizes(st.m, sizes, BM_MAX_COMPONENTS);
	if ((err = state_keep_sizes(name, sizes, nsizes)) < 0)
		fprintf(stderr, "blkmirror: %s: cannot record the components' "
		        "sizes in %s: %s (a start after every component grew "
		        "would not find their labels)\n", name, state_dir(),
		        strerror(-err));
	if (readahead_set)
		bm_mirror_set_readahead(st.m, readahead);
	if (io_timeout_set)
		bm_mirror_set_io_timeout(st.m, (unsigned)io_timeout);
	if (read_errors_set)
		bm_mirror_set_read_error_limit(st.m, (unsigned)read_errors);
	err = bm_nbd_server_run(st.srv, st.m, name);
	if (err < 0) {
		cli_fail("%s", bm_last_error());
		bm_nbd_server_stop(st.srv);
		bm_mirror_close(st.m);
		return 1;
	}
	set_phase(&st, true, "serving");
	err = control_start(name, control_handler_fn, &st, &ctl);
	if (err < 0) {
		cli_fail("cannot create the control socket: %s", bm_last_error());
		set_phase(&st, false, "stopping");
		bm_nbd_server_stop(st.srv);
		bm_mirror_close(st.m);
		return 1;
	}
	if (sock && (err = state_record_socket(name, sock)) < 0)
		fprintf(stderr, "blkmirror: %s: cannot record the socket path in "
		        "%s/%s.socket: %s (other verbs will not find it)\n", name,
		        state_dir(), name, strerror(-err));
	if (!sock)
		state_remove_socket_record(name); /* a dead server's, stale */
	fprintf(stderr, "blkmirror: serving mirror '%s' (%" PRIu64 " bytes)%s%s%s%s\n",
	        name, bm_mirror_size(st.m), sock ? " on " : "", sock ? sock : "",
	        tcp ? " on tcp " : "", tcp ? tcp : "");
	service_notify("READY=1\nSTATUS=serving %s (%" PRIu64 " bytes)%s%s%s%s",
	               name, bm_mirror_size(st.m), sock ? " on " : "",
	               sock ? sock : "", tcp ? " on tcp " : "", tcp ? tcp : "");
	for (;;) {
		err = sigwait(&set, &sig);
		if (err == EINTR)
			continue;
		if (err == 0 && sig == SIGHUP) {
			fprintf(stderr, "blkmirror: %s: SIGHUP ignored; stop with "
			        "'blkmirror stop %s' or SIGTERM\n", name, name);
			continue;
		}
		break;
	}
	fprintf(stderr, "blkmirror: %s: stopping\n", name);
	service_notify("STOPPING=1\nEXTEND_TIMEOUT_USEC=%llu",
	               stop_extend_usec(st.m));
	bm_mirror_begin_stop(st.m);
	/* The handler is not inside m or srv once the phase says stopping. */
	pthread_mutex_lock(&st.lock);
	nclients = bm_nbd_server_clients(st.srv, who, sizeof(who));
	pthread_mutex_unlock(&st.lock);
	if (nclients > 0)
		set_phase(&st, false, "draining %d NBD connection%s (%s)", nclients,
		          nclients == 1 ? "" : "s", who);
	else
		set_phase(&st, false, "draining in-flight requests");
	bm_nbd_server_stop(st.srv);
	if (sock)
		state_remove_socket_record(name);
	set_phase(&st, false, "flushing the components and marking their "
	          "labels clean");
	err = bm_mirror_close(st.m);
	pthread_mutex_lock(&st.lock);
	st.m = NULL; /* freed (or left to the exit): nothing reads it now */
	pthread_mutex_unlock(&st.lock);
	set_phase(&st, false, "exiting");
	control_stop(ctl);
	if (err < 0) {
		/* the stop's own words (cmd_status.c stop_one) */
		char note[100];
		snprintf(note, sizeof(note), "stopped dirty: %s", bm_last_error());
		state_lock_note(lock_fd, note);
		fprintf(stderr, "blkmirror: %s: stopped, left marked dirty (%s); "
		        "its next serve resynchronizes it\n", name,
		        bm_last_error());
		return 0;
	}
	state_lock_note(lock_fd, "stopped cleanly");
	fprintf(stderr, "blkmirror: %s: stopped cleanly\n", name);
	return 0;
}
