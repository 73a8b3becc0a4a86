/*
 * --wait: follow a component's copy until it is ACTIVE.
 *
 * Two control commands are polled five times a second: "status" says the
 * component's state (the line "... PATH (STATE...)"), "progress" says how
 * far its copy is ("sync INDEX DONE TOTAL RATE ETA PATH").  When the server
 * gives no rate yet (0) the rate is measured here from the bytes done
 * between polls.  A component that is DISCONNECTED is retried by the
 * server (its copy resumes), so it is waited for; FAILED, ABSENT or any
 * other state ends the wait with status's reason, as does the component
 * leaving the mirror or the server stopping.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"

#define POLL_MS 200
#define REPLY_MAX (256 * 1024)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Finds path's line in a status reply: copies its state word and the text
 * after "STATE: " (the reason) or ", " (percent).  0 when found. */
static int status_state(const char *reply, const char *path, char *state,
                        size_t slen, char *why, size_t wlen)
{
	size_t plen = strlen(path);

	for (const char *line = reply; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *p = line;
		/* "NAME  STATUS  PATH (STATE...)": PATH is preceded by a
		 * space and followed by " (". */
		while ((p = memmem(p, len - (size_t)(p - line), path, plen))) {
			const char *after = p + plen;
			if (p > line && p[-1] == ' ' &&
			    (size_t)(after - line) + 2 <= len &&
			    after[0] == ' ' && after[1] == '(') {
				const char *s = after + 2;
				size_t n = strcspn(s, ",:)\n");
				snprintf(state, slen, "%.*s", (int)n, s);
				why[0] = '\0';
				if (s[n] == ':' && s[n + 1] == ' ') {
					const char *w = s + n + 2;
					size_t wl = (size_t)(line + len - w);
					if (wl > 0 && w[wl - 1] == ')')
						wl--;
					snprintf(why, wlen, "%.*s", (int)wl, w);
				}
				return 0;
			}
			p++;
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

/* path's "sync" line in a progress reply: 0 when found. */
static int progress_of(const char *reply, const char *path, uint64_t *done,
                       uint64_t *total, uint64_t *rate, int64_t *eta)
{
	for (const char *line = reply; line && *line;) {
		const char *end = strchr(line, '\n');
		int idx, pos = 0;
		if (sscanf(line, "sync %d %" SCNu64 " %" SCNu64 " %" SCNu64
		           " %" SCNd64 " %n", &idx, done, total, rate, eta,
		           &pos) == 5 && pos > 0) {
			size_t len = end ? (size_t)(end - line - pos)
			                 : strlen(line + pos);
			if (len == strlen(path) &&
			    memcmp(line + pos, path, len) == 0)
				return 0;
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

static void format_eta(int64_t s, char *buf, size_t len)
{
	if (s < 0)
		snprintf(buf, len, "--:--");
	else if (s >= 3600)
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", s / 3600,
		         s / 60 % 60);
	else
		snprintf(buf, len, "%02" PRId64 ":%02" PRId64, s / 60, s % 60);
}

int wait_synchronized(const char *name, const char *path)
{
	char *reply = malloc(REPLY_MAX), state[64], why[512], eta_str[32];
	bool tty = isatty(STDOUT_FILENO);
	int last_tenth = -1, ret = 1, err;
	uint64_t prev_done = 0, done = 0, total = 0, rate = 0;
	double prev_t = 0, measured = 0;
	int64_t eta = -1;
	bool drawn = false;

	if (!reply)
		return cli_fail("out of memory");
	for (int failures = 0;;) {
		err = control_call(name, "status", reply, REPLY_MAX);
		if (err == -ENOENT) {
			cli_fail("%s stopped before %s was synchronized", name,
			         path);
			break;
		}
		if (err < 0 && ++failures < 25) { /* busy or stopping: again */
			usleep(POLL_MS * 1000);
			continue;
		}
		if (err < 0) {
			cli_fail("cannot ask %s for its status: %s", name,
			         strerror(-err));
			break;
		}
		failures = 0;
		if (strncmp(reply, "ok\n", 3) != 0) {
			cli_fail("%s: %s", name, reply + (strncmp(reply,
			         "error ", 6) == 0 ? 6 : 0));
			break;
		}
		if (status_state(reply + 3, path, state, sizeof(state), why,
		                 sizeof(why)) < 0) {
			cli_fail("%s is no longer a component of %s", path, name);
			break;
		}
		if (strcmp(state, "ACTIVE") == 0) {
			if (drawn)
				printf("\r%s: 100%% synchronized%40s\n", path, "");
			else
				printf("%s: synchronized\n", path);
			fflush(stdout);
			ret = 0;
			break;
		}
		if (strcmp(state, "SYNCHRONIZING") != 0 &&
		    strcmp(state, "DISCONNECTED") != 0) {
			if (drawn)
				putchar('\n');
			fflush(stdout);
			cli_fail("%s of %s is %s%s%s", path, name, state,
			         why[0] ? ": " : "", why);
			break;
		}
		if (control_call(name, "progress", reply, REPLY_MAX) == 0 &&
		    strncmp(reply, "ok\n", 3) == 0 &&
		    progress_of(reply + 3, path, &done, &total, &rate, &eta) == 0 &&
		    total > 0) {
			double t = now_s();
			if (prev_t > 0 && t > prev_t && done >= prev_done) {
				double r = (double)(done - prev_done) / (t - prev_t);
				measured = measured > 0 ? 0.7 * measured + 0.3 * r : r;
			}
			prev_t = t;
			prev_done = done;
			if (rate == 0 && measured > 0) {
				rate = (uint64_t)measured;
				eta = rate ? (int64_t)((total - done) / rate) : -1;
			}
			int pct = (int)(done * 100 / total);
			format_eta(eta, eta_str, sizeof(eta_str));
			/* no rate before two samples: not "0.0" (under
			 * --sync-max 1M the first line said 0.0 MiB/s) */
			char rate_str[32];
			if (rate)
				snprintf(rate_str, sizeof(rate_str), "%.1f",
				         (double)rate / 1048576.0);
			else
				snprintf(rate_str, sizeof(rate_str), "--.-");
			if (tty) {
				int bar = pct * 30 / 100;
				printf("\r%s: [%.*s%*s] %3d%% %7s MiB/s %s left ",
				       path, bar, "##############################",
				       30 - bar, "", pct, rate_str, eta_str);
				drawn = true;
			} else if (pct / 10 > last_tenth) {
				last_tenth = pct / 10;
				printf("%s: %d%% synchronized, %s MiB/s, %s left\n",
				       path, pct, rate_str, eta_str);
			}
			fflush(stdout);
		}
		usleep(POLL_MS * 1000);
	}
	free(reply);
	return ret;
}
