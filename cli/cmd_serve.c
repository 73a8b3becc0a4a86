/*
 * blkmirror serve: assemble the mirror from its labels and serve it over
 * NBD in the foreground until SIGTERM/SIGINT or `blkmirror stop`; then drain
 * in-flight requests, flush, mark the components clean and exit 0.
 *
 * Signals are blocked before any thread starts and taken with sigwait() in
 * the main thread, so no handler ever runs inside the engine.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "nbd_server.h"

static int control_handler_fn(void *ctx, const char *cmd, char *out,
                              size_t len)
{
	bm_mirror *m = ctx;
	char alg[64];
	unsigned slice = 0;
	int n;

	if (strcmp(cmd, "ping") == 0) {
		snprintf(out, len, "ok\n");
	} else if (strcmp(cmd, "status") == 0 || strcmp(cmd, "list") == 0) {
		n = snprintf(out, len, "ok\n");
		if (cmd[0] == 's')
			bm_mirror_status(m, out + n, len - (size_t)n);
		else
			bm_mirror_list(m, out + n, len - (size_t)n);
	} else if (sscanf(cmd, "configure %63s %u", alg, &slice) >= 1) {
		int b = bm_balance_parse(alg);
		if (b < 0)
			snprintf(out, len, "error unknown balance algorithm '%s'\n",
			         alg);
		else if (bm_mirror_configure(m, b, slice) < 0)
			snprintf(out, len, "error %s\n", bm_last_error());
		else
			snprintf(out, len, "ok\n");
	} else if (strcmp(cmd, "stats") == 0) {
		struct bm_stat_row rows[BM_MAX_COMPONENTS + 1];
		int nrows = bm_mirror_stats(m, rows, BM_MAX_COMPONENTS + 1);
		struct timespec ts;
		size_t used;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		used = (size_t)snprintf(out, len, "ok\nt %llu\n",
		        (unsigned long long)ts.tv_sec * 1000000000ull +
		        (unsigned long long)ts.tv_nsec);
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
	} else if (strcmp(cmd, "stop") == 0) {
		snprintf(out, len, "ok\n");
		kill(getpid(), SIGTERM);
	} else {
		snprintf(out, len, "error unknown control command\n");
	}
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 'S'},
		{"tcp", required_argument, NULL, 'T'},
		{"readahead", required_argument, NULL, 'R'},
		{"io-timeout", required_argument, NULL, 'O'},
		{"read-errors", required_argument, NULL, 'E'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL, *tcp = NULL, *name;
	struct control_server *ctl = NULL;
	struct bm_nbd_server *srv = NULL;
	bm_mirror *m = NULL;
	char **paths, reply[64];
	size_t n;
	sigset_t set;
	uint64_t readahead = 0, io_timeout = 0, read_errors = 0;
	bool readahead_set = false, io_timeout_set = false,
	     read_errors_set = false;
	int opt, sig, err;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "S:T:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'S': sock = optarg; break;
		case 'T':
			tcp = optarg;
			if (parse_tcp_arg(tcp)) /* labelsafe: exit 2 for a bad port */
				return EXIT_USAGE;
			break;
		case 'R':
			if (parse_size(optarg, &readahead) < 0 ||
			    readahead > (64ull << 30))
				return cli_fail("--readahead '%s' is not a size from 0 "
				                "to 64G (e.g. 64M)", optarg);
			readahead_set = true;
			break;
		case 'O':
			if (parse_size(optarg, &io_timeout) < 0 || io_timeout > 3600)
				return cli_fail("--io-timeout '%s' is not a number of "
				                "seconds from 0 (never) to 3600",
				                optarg);
			io_timeout_set = true;
			break;
		case 'E':
			if (parse_size(optarg, &read_errors) < 0 ||
			    read_errors > 1000000)
				return cli_fail("--read-errors '%s' is not a count "
				                "from 0 to 1000000", optarg);
			read_errors_set = true;
			break;
		default:
			return cli_fail("usage: blkmirror serve NAME --socket PATH "
			                "[--tcp [HOST:]PORT] [--readahead SIZE] [--io-timeout SECONDS] "
			                "[--read-errors COUNT]");
		}
	}
	if (argc - optind != 1 || (!sock && !tcp))
		return cli_fail("usage: blkmirror serve NAME --socket PATH "
		                "[--tcp [HOST:]PORT] [--readahead SIZE]");
	name = argv[optind];
	if (control_call(name, "ping", reply, sizeof(reply)) == 0)
		return cli_fail("mirror '%s' is already being served", name);
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

	/* Request buffers (up to 32 MiB each) come and go all the time: keep
	 * them on the heap, not in fresh mmaps, so that each request does not
	 * pay page faults and TLB shootdowns (measured: ~150 us on a 128 KiB
	 * write). */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	err = bm_nbd_server_listen(sock, tcp, &srv);
	if (err < 0) {
		state_free(paths, n);
		return cli_fail("%s", bm_last_error());
	}
	err = bm_mirror_open(name, (const char *const *)paths, n, &m);
	state_free(paths, n);
	if (err < 0) {
		cli_fail("%s", bm_last_error());
		bm_nbd_server_stop(srv);
		return 1;
	}
	if (readahead_set)
		bm_mirror_set_readahead(m, readahead);
	if (io_timeout_set)
		bm_mirror_set_io_timeout(m, (unsigned)io_timeout);
	if (read_errors_set)
		bm_mirror_set_read_error_limit(m, (unsigned)read_errors);
	err = bm_nbd_server_run(srv, m, name);
	if (err < 0) {
		cli_fail("%s", bm_last_error());
		bm_nbd_server_stop(srv);
		bm_mirror_close(m);
		return 1;
	}
	err = control_start(name, control_handler_fn, m, &ctl);
	if (err < 0) {
		cli_fail("cannot create the control socket in %s: %s",
		         state_dir(), strerror(-err));
		bm_nbd_server_stop(srv);
		bm_mirror_close(m);
		return 1;
	}
	fprintf(stderr, "blkmirror: serving mirror '%s' (%" PRIu64 " bytes)%s%s%s%s\n",
	        name, bm_mirror_size(m), sock ? " on " : "", sock ? sock : "",
	        tcp ? " on tcp " : "", tcp ? tcp : "");
	do {
		err = sigwait(&set, &sig);
	} while (err == EINTR);
	fprintf(stderr, "blkmirror: %s: stopping\n", name);
	control_stop(ctl);
	bm_nbd_server_stop(srv);
	bm_mirror_close(m);
	fprintf(stderr, "blkmirror: %s: stopped cleanly\n", name);
	return 0;
}
