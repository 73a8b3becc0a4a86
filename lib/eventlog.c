/*
 * The event log: every state change of a running mirror (a component
 * failed, went away, came back; a copy started, ended or stopped; the
 * mirror lost or regained redundancy) as one record, for `blkmirror
 * monitor` and for the server's stderr.
 *
 * Why a ring in memory: followers poll ("events SINCE" on the control
 * socket) and must never slow the engine down, so posting copies a record
 * into a fixed ring under its own mutex (evlog_lock) and returns; nothing
 * there waits for I/O or takes another lock, so callers post while they
 * hold meta_lock, and a reader (the control thread) waits at most for one
 * record's copy.  The ring keeps the last BM_EVLOG_SIZE records; a follower
 * that fell further behind is told how many it lost.  Sequence numbers
 * start at 1 each time the mirror starts, with a new random instance id so
 * a follower knows the numbers started again.
 *
 * The stderr line ("blkmirror: m0: err: ComponentFailed /dev/sdb: write
 * error: ...") is written with one write(2) after the ring lock is let go.
 * The same event (name, component, message) repeated within
 * REPEAT_WINDOW_MS of the last one is kept once: a component that keeps
 * failing the same way (the watchdog looks 4 times a second) must not
 * flush the ring.
 *
 * Degraded/Complete are derived: after any state change the poster calls
 * bm_event_redundancy, which compares what the component states say with
 * what was last posted.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "mirror.h"

#define REPEAT_WINDOW_MS 10000

const char *bm_severity_name(int severity)
{
	switch (severity) {
	case BM_SEV_CRIT: return "crit";
	case BM_SEV_ERR: return "err";
	case BM_SEV_WARNING: return "warning";
	case BM_SEV_NOTICE: return "notice";
	default: return "info";
	}
}

int bm_event_init(struct bm_mirror *m)
{
	pthread_mutex_init(&m->evlog_lock, NULL);
	m->evlog = calloc(BM_EVLOG_SIZE, sizeof(*m->evlog));
	m->evlog_seq = 0;
	if (getrandom(&m->evlog_instance, sizeof(m->evlog_instance), 0) !=
	    sizeof(m->evlog_instance))
		m->evlog_instance = (uint64_t)bm_now_ns();
	/* without a ring (no memory) events still reach stderr */
	return m->evlog ? 0 : -ENOMEM;
}

void bm_event_free(struct bm_mirror *m)
{
	free(m->evlog);
	m->evlog = NULL;
	pthread_mutex_destroy(&m->evlog_lock);
}

/* Tabs and line ends would break the one-line formats: spaces instead. */
static void flatten(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Caller holds evlog_lock.  Appends r (numbering it); false when it
 * repeats the newest record within the window (then nothing is kept). */
static bool append_locked(struct bm_mirror *m, struct bm_event_record *r)
{
	if (m->evlog && m->evlog_seq > 0) {
		const struct bm_event_record *last =
			&m->evlog[(m->evlog_seq - 1) % BM_EVLOG_SIZE];
		if (r->time_ms - last->time_ms < REPEAT_WINDOW_MS &&
		    strcmp(last->event, r->event) == 0 &&
		    strcmp(last->component, r->component) == 0 &&
		    strcmp(last->message, r->message) == 0)
			return false;
	}
	r->seq = ++m->evlog_seq;
	if (m->evlog)
		m->evlog[(r->seq - 1) % BM_EVLOG_SIZE] = *r;
	return true;
}

static void log_line(struct bm_mirror *m, const struct bm_event_record *r)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "blkmirror: %s: %s: %s%s%s: %s\n",
	                 m->name, bm_severity_name(r->severity), r->event,
	                 r->component[0] ? " " : "", r->component, r->message);

	if (n >= (int)sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	/* one write: lines of concurrent posters do not mix */
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere to say it */
	}
}

static void fill(struct bm_event_record *r, int severity, const char *event,
                 const char *component)
{
	memset(r, 0, sizeof(*r));
	r->time_ms = wall_ms();
	r->severity = severity;
	snprintf(r->event, sizeof(r->event), "%s", event);
	snprintf(r->component, sizeof(r->component), "%s",
	         component ? component : "");
	flatten(r->event);
	flatten(r->component);
}

void bm_event_post(struct bm_mirror *m, int severity, const char *event,
                   const char *component, const char *fmt, ...)
{
	struct bm_event_record r;
	va_list ap;
	bool kept;

	fill(&r, severity, event, component);
	va_start(ap, fmt);
	vsnprintf(r.message, sizeof(r.message), fmt, ap);
	va_end(ap);
	flatten(r.message);
	pthread_mutex_lock(&m->evlog_lock);
	kept = append_locked(m, &r);
	pthread_mutex_unlock(&m->evlog_lock);
	if (kept)
		log_line(m, &r);
}

/* "1 of 2 components ACTIVE: /b DISCONNECTED, /c SYNCHRONIZING" */
static void redundancy_message(struct bm_mirror *m, char *buf, size_t len)
{
	int active = 0;
	size_t used;
	const char *sep = ": ";

	int present = 0;

	for (int i = 0; i < m->ncomp; i++) {
		present += bm_comp_present(&m->comp[i]);
		active += atomic_load(&m->comp[i].state) == BM_CS_ACTIVE;
	}
	used = (size_t)snprintf(buf, len, "%d of %d components ACTIVE", active,
	                        present);
	for (int i = 0; i < m->ncomp && used < len; i++) {
		int s = atomic_load(&m->comp[i].state);
		if (s == BM_CS_ACTIVE || s == BM_CS_REMOVED)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s %s", sep,
		                         m->comp[i].path, bm_comp_state_name(s));
		sep = ", ";
	}
}

void bm_event_redundancy(struct bm_mirror *m)
{
	struct bm_event_record r;
	bool degraded = false, kept = false;

	for (int i = 0; i < m->ncomp; i++)
		if (bm_comp_present(&m->comp[i]) &&
		    atomic_load(&m->comp[i].state) != BM_CS_ACTIVE)
			degraded = true;
	fill(&r, degraded ? BM_SEV_WARNING : BM_SEV_NOTICE,
	     degraded ? BM_EV_DEGRADED : BM_EV_COMPLETE, NULL);
	redundancy_message(m, r.message, sizeof(r.message));
	flatten(r.message);
	pthread_mutex_lock(&m->evlog_lock);
	if (m->evlog_degraded != degraded) {
		m->evlog_degraded = degraded;
		kept = append_locked(m, &r);
	}
	pthread_mutex_unlock(&m->evlog_lock);
	if (kept)
		log_line(m, &r);
}

void bm_event_started(struct bm_mirror *m)
{
	bm_event_post(m, BM_SEV_INFO, BM_EV_STARTED, NULL,
	              "%d components, %llu bytes", m->ncomp,
	              (unsigned long long)m->size);
	bm_event_redundancy(m);
}

void bm_event_sync_ended(struct bm_mirror *m, struct bm_component *t,
                         int result)
{
	unsigned long long off = atomic_load(&t->sync_offset);
	int s = atomic_load(&t->state);

	if (result == -EAGAIN)
		return;
	if (result == 0 && s == BM_CS_ACTIVE)
		bm_event_post(m, BM_SEV_INFO, BM_EV_SYNC_FINISHED, t->path,
		              "%llu bytes copied (%s); it is ACTIVE",
		              (unsigned long long)atomic_load(&t->sync_copied),
		              atomic_load(&t->sync_regions)
		              ? "the bitmap's dirty regions only" : "in full");
	else if (result > 0)
		bm_event_post(m, BM_SEV_NOTICE, BM_EV_SYNC_STOPPED, t->path,
		              "stopped on request at offset %llu (it resumes "
		              "from its last checkpoint)", off);
	else if (s != BM_CS_SYNCHRONIZING) /* failed out, or lost at the end */
		bm_event_post(m, BM_SEV_WARNING, BM_EV_SYNC_STOPPED, t->path,
		              "stopped at offset %llu: the component is %s",
		              off, bm_comp_state_name(s));
	else
		bm_event_post(m, BM_SEV_ERR, BM_EV_SYNC_STOPPED, t->path,
		              "no component could read offset %llu; the copy "
		              "waits until a component comes back", off);
	/* the count is the copy's over its runs (sync.c): one that ended
	 * (ACTIVE, or the component left) is not counted on by the next
	 * copy (which also starts at 0 where it is begun: rebuild.c,
	 * live.c, recover.c); a stopped or waiting one goes on */
	if (s != BM_CS_SYNCHRONIZING)
		atomic_store(&t->sync_copied, 0);
	bm_event_redundancy(m);
}

int bm_mirror_events(bm_mirror *m, uint64_t since, struct bm_event_record *out,
                     int max, struct bm_event_cursor *cur)
{
	int n = 0;

	pthread_mutex_lock(&m->evlog_lock);
	uint64_t last = m->evlog_seq;
	uint64_t oldest = !m->evlog ? last + 1
	                : last > BM_EVLOG_SIZE ? last - BM_EVLOG_SIZE + 1 : 1;
	uint64_t from = since + 1 > oldest ? since + 1 : oldest;
	cur->current = last;
	cur->instance = m->evlog_instance;
	cur->lost = since + 1 < oldest ? oldest - (since + 1) : 0;
	if (since > last) /* a follower of another instance */
		cur->lost = 0;
	for (uint64_t s = from; s <= last && n < max; s++)
		out[n++] = m->evlog[(s - 1) % BM_EVLOG_SIZE];
	pthread_mutex_unlock(&m->evlog_lock);
	return n;
}

int bm_mirror_component_info(bm_mirror *m, int comp,
                             struct bm_component_info *out)
{
	if (comp < 0 || comp >= m->ncomp)
		return 0;
	struct bm_component *c = &m->comp[comp];
	int s = atomic_load(&c->state);

	memset(out, 0, sizeof(*out));
	snprintf(out->path, sizeof(out->path), "%s", c->path);
	snprintf(out->state, sizeof(out->state), "%s", bm_comp_state_name(s));
	out->sync_percent = -1;
	if (s == BM_CS_SYNCHRONIZING)
		out->sync_percent = (int)(atomic_load(&c->sync_offset) * 100 /
		                          (m->size ? m->size : 1));
	if (s != BM_CS_ACTIVE && s != BM_CS_SYNCHRONIZING) {
		pthread_mutex_lock(&m->info_lock);
		snprintf(out->why, sizeof(out->why), "%s", c->why);
		pthread_mutex_unlock(&m->info_lock);
		flatten(out->why);
	}
	return 1;
}
