/*
 * Status (gmirror's Name / Status / Components table) and list text.
 * Neither waits on meta_lock for long (it is held across label I/O, which
 * a hanging component can stretch to io-timeout): states are atomics, the
 * reasons are under info_lock, and list shows the labels only when it can
 * take meta_lock within half a second.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "bitmap.h"
#include "mirror.h"

const char *bm_comp_state_name(int state)
{
	switch (state) {
	case BM_CS_ACTIVE: return "ACTIVE";
	case BM_CS_SYNCHRONIZING: return "SYNCHRONIZING";
	case BM_CS_FAILED: return "FAILED";
	case BM_CS_DISCONNECTED: return "DISCONNECTED";
	case BM_CS_REMOVED: return "REMOVED";
	case BM_CS_INACTIVE: return "INACTIVE";
	default: return "ABSENT";
	}
}

#define APPEND(...)                                                        \
	do {                                                               \
		int n_ = snprintf(buf + used, used < len ? len - used : 0,  \
		                  __VA_ARGS__);                            \
		if (n_ > 0)                                                \
			used += (size_t)n_;                                \
	} while (0)

/* The last ACTIVE component whose NBD connection is gone (events.c):
 * ACTIVE, but every request fails until it is connected again. */
static bool link_lost(struct bm_component *c)
{
	return atomic_load(&c->state) == BM_CS_ACTIVE &&
	       atomic_load(&c->link_dead);
}

/* info_lock held: "<prefix> 3 s ago: Connection refused", how the last
 * attempt to bring c back ended when its why does not say it, or "". */
static void retry_text(struct bm_component *c, const char *prefix,
                       char *out, size_t len)
{
	long long ago;

	out[0] = '\0';
	if (!c->retry_why[0])
		return;
	ago = (bm_now_ms() - c->retry_why_ms) / 1000;
	snprintf(out, len, "%s %lld s ago: %s", prefix, ago < 0 ? 0 : ago,
	         c->retry_why);
}

int bm_mirror_status(bm_mirror *m, char *buf, size_t len)
{
	size_t used = 0;
	int w = (int)strlen(m->name) > 4 ? (int)strlen(m->name) : 4;
	bool complete = true;
	int shown = 0;

	pthread_mutex_lock(&m->info_lock);
	for (int i = 0; i < m->ncomp; i++)
		if ((atomic_load(&m->comp[i].state) != BM_CS_ACTIVE &&
		     bm_comp_present(&m->comp[i])) || link_lost(&m->comp[i]))
			complete = false; /* (the last one, its link gone: every
			                     request fails until it is back) */
	APPEND("%-*s  %-8s  %s\n", w, "Name", "Status", "Components");
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		int s = atomic_load(&c->state);
		char detail[512] = "";
		if (s == BM_CS_REMOVED)
			continue;
		if (s == BM_CS_SYNCHRONIZING) {
			/* ", 45%, 80.0 MiB/s, 12s left" (cmd_status.c parses) */
			detail[0] = ',';
			detail[1] = ' ';
			bm_sync_progress_text(m, i, detail + 2, sizeof(detail) - 2);
		} else if (s != BM_CS_ACTIVE || link_lost(c)) {
			char last[224];
			retry_text(c, "; last try", last, sizeof(last));
			snprintf(detail, sizeof(detail), ": %s%s", c->why, last);
		}
		APPEND("%-*s  %-8s  %s (%s%s)\n", w, shown ? "" : m->name,
		       shown ? "" : (complete ? "COMPLETE" : "DEGRADED"), c->path,
		       bm_comp_state_name(s), detail);
		shown++;
	}
	if (m->sync_error[0])
		APPEND("Note: %s\n", m->sync_error);
	used += (size_t)bm_check_status_note(m, buf + used, used < len ? len - used : 0);
	if (atomic_load(&m->meta_broken))
		APPEND("Note: no ACTIVE component can record the mirror's state; "
		       "writes are refused\n");
	pthread_mutex_unlock(&m->info_lock);
	return used < len ? (int)used : -ENOSPC;
}

static void snapshot(struct bm_stat_row *r, const char *name, int queue,
                     struct bm_comp_stats *st)
{
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->queue = queue;
	r->reads = atomic_load(&st->reads);
	r->read_bytes = atomic_load(&st->read_bytes);
	r->read_ns = atomic_load(&st->read_ns);
	r->writes = atomic_load(&st->writes);
	r->write_bytes = atomic_load(&st->write_bytes);
	r->write_ns = atomic_load(&st->write_ns);
	r->deletes = atomic_load(&st->deletes);
	r->delete_bytes = atomic_load(&st->delete_bytes);
	r->delete_ns = atomic_load(&st->delete_ns);
	r->errors = atomic_load(&st->errors);
	r->busy_ns = atomic_load(&st->busy_ns);
	if (queue > 0) {
		uint64_t since = atomic_load(&st->busy_since), now = bm_now_ns();
		if (now > since)
			r->busy_ns += now - since;
	}
}

int bm_mirror_stats(bm_mirror *m, struct bm_stat_row *rows, int max)
{
	int n = 0;

	for (int i = 0; i < m->ncomp && n < max; i++) {
		if (!bm_comp_present(&m->comp[i]))
			continue;
		snapshot(&rows[n++], m->comp[i].path,
		         atomic_load(&m->comp[i].inflight), &m->comp[i].stats);
	}
	if (n < max) {
		char name[BM_NAME_MAX + 8];
		snprintf(name, sizeof(name), "mirror/%s", m->name);
		snapshot(&rows[n++], name, atomic_load(&m->queue), &m->stats);
	}
	return n;
}

int bm_mirror_list(bm_mirror *m, char *buf, size_t len)
{
	size_t used = 0;
	char mf[64];
	struct timespec deadline = bm_deadline_ms(CLOCK_REALTIME, 500);
	bool labels;
	int present = 0, shown = 0;
	bool lost = false;

	for (int i = 0; i < m->ncomp; i++) {
		present += bm_comp_present(&m->comp[i]);
		lost |= link_lost(&m->comp[i]);
	}
	labels = pthread_mutex_timedlock(&m->meta_lock, &deadline) == 0;
	pthread_mutex_lock(&m->info_lock);
	bm_mirror_flags_str(m->mirror_flags, mf, sizeof(mf));
	APPEND("Geom name: %s\nState: %s\nComponents: %d\nBalance: %s\n"
	       "Slice: %u\nFlags: %s\nGenID: %" PRIu64 "\nSyncID: %" PRIu64
	       "\nID: %016" PRIx64 "\nMediasize: %" PRIu64 "\n",
	       m->name, m->degraded || lost ? "DEGRADED" : "COMPLETE", present,
	       bm_balance_name(atomic_load(&m->balance)),
	       atomic_load(&m->slice), mf, m->genid, m->syncid, m->mirror_id,
	       m->size);
	/* the write-intent bitmap: region size, count, dirty ones */
	used += (size_t)bm_bitmap_status_text(m, buf + used,
	                                      used < len ? len - used : 0);
	APPEND("Consumers:\n");
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		int s = atomic_load(&c->state);
		if (s == BM_CS_REMOVED)
			continue;
		APPEND("%d. Name: %s\n   State: %s\n", ++shown, c->path,
		       bm_comp_state_name(s));
		if (s == BM_CS_SYNCHRONIZING) {
			char progress[128];
			bm_sync_progress_text(m, i, progress, sizeof(progress));
			APPEND("   Progress: %s\n", progress);
		}
		if ((s != BM_CS_ACTIVE && s != BM_CS_SYNCHRONIZING) ||
		    link_lost(c)) {
			char last[224];
			APPEND("   Reason: %s\n", c->why);
			retry_text(c, "   Last try", last, sizeof(last));
			if (last[0])
				APPEND("%s\n", last);
			if (s == BM_CS_ABSENT)
				continue;
		}
		if (!labels) {
			APPEND("   (label not shown: a component is busy with "
			       "label I/O)\n");
			continue;
		}
		if (used < len) {
			int n = bm_label_format(&c->label, "   ", buf + used,
			                        len - used);
			if (n > 0)
				used += (size_t)n;
		}
	}
	pthread_mutex_unlock(&m->info_lock);
	if (labels)
		pthread_mutex_unlock(&m->meta_lock);
	return used < len ? (int)used : -ENOSPC;
}
