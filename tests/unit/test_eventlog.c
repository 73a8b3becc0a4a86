/* The event log on a mirror built in memory: numbering, the ring's
 * overrun (lost counts), repeats kept once, one-line strings, Degraded and
 * Complete derived from the component states. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "mirror.h"

static struct bm_mirror m;
static struct bm_event_record recs[BM_EVLOG_SIZE];

int main(void)
{
	struct bm_event_cursor cur;
	int n, saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);

	memset(&m, 0, sizeof(m));
	strcpy(m.name, "m0");
	m.ncomp = 2;
	pthread_mutex_init(&m.info_lock, NULL);
	strcpy(m.comp[0].path, "/a");
	strcpy(m.comp[1].path, "/b");
	CHECK_EQ(bm_event_init(&m), 0);

	/* nothing yet */
	CHECK_EQ(bm_mirror_events(&m, 0, recs, BM_EVLOG_SIZE, &cur), 0);
	CHECK_EQ(cur.current, 0);
	CHECK_EQ(cur.lost, 0);

	/* numbered from 1, strings flattened to one line */
	bm_event_post(&m, BM_SEV_ERR, BM_EV_COMPONENT_FAILED, "/b",
	              "write error:\n\tInput/output error");
	n = bm_mirror_events(&m, 0, recs, BM_EVLOG_SIZE, &cur);
	CHECK_EQ(n, 1);
	CHECK_EQ(recs[0].seq, 1);
	CHECK(strcmp(recs[0].event, "ComponentFailed") == 0);
	CHECK(strcmp(recs[0].component, "/b") == 0);
	CHECK(strcmp(recs[0].message, "write error:  Input/output error") == 0);
	CHECK(recs[0].time_ms > 1600000000000LL);
	CHECK_EQ(recs[0].severity, BM_SEV_ERR);

	/* the same again at once is kept once; another message is not */
	bm_event_post(&m, BM_SEV_ERR, BM_EV_COMPONENT_FAILED, "/b",
	              "write error:\n\tInput/output error");
	CHECK_EQ(bm_mirror_events(&m, 0, recs, BM_EVLOG_SIZE, &cur), 1);
	bm_event_post(&m, BM_SEV_ERR, BM_EV_COMPONENT_FAILED, "/b", "other");
	CHECK_EQ(bm_mirror_events(&m, 1, recs, BM_EVLOG_SIZE, &cur), 1);
	CHECK_EQ(recs[0].seq, 2);
	CHECK_EQ(cur.current, 2);

	/* Degraded / Complete follow the states, once per change */
	atomic_store(&m.comp[0].state, BM_CS_ACTIVE);
	atomic_store(&m.comp[1].state, BM_CS_DISCONNECTED);
	bm_event_redundancy(&m);
	bm_event_redundancy(&m);
	n = bm_mirror_events(&m, 2, recs, BM_EVLOG_SIZE, &cur);
	CHECK_EQ(n, 1);
	CHECK(strcmp(recs[0].event, "Degraded") == 0);
	CHECK(strcmp(recs[0].message,
	             "1 of 2 components ACTIVE: /b DISCONNECTED") == 0);
	atomic_store(&m.comp[1].state, BM_CS_ACTIVE);
	bm_event_redundancy(&m);
	n = bm_mirror_events(&m, 3, recs, BM_EVLOG_SIZE, &cur);
	CHECK_EQ(n, 1);
	CHECK(strcmp(recs[0].event, "Complete") == 0);
	CHECK_EQ(recs[0].severity, BM_SEV_NOTICE);

	/* 2000 more: the ring keeps the last BM_EVLOG_SIZE; a follower at 0
	 * lost the rest, one that kept up lost nothing */
	dup2(null, STDERR_FILENO);
	for (int i = 0; i < 2000; i++)
		bm_event_post(&m, BM_SEV_NOTICE, BM_EV_READ_ERROR_REPAIRED, "/a",
		              "read error %d", i);
	dup2(saved, STDERR_FILENO);
	n = bm_mirror_events(&m, 0, recs, BM_EVLOG_SIZE, &cur);
	CHECK_EQ(cur.current, 2004);
	CHECK_EQ(n, BM_EVLOG_SIZE);
	CHECK_EQ(recs[0].seq, 2004 - BM_EVLOG_SIZE + 1);
	CHECK_EQ(cur.lost, 2004 - BM_EVLOG_SIZE);
	CHECK(strcmp(recs[BM_EVLOG_SIZE - 1].message, "read error 1999") == 0);
	n = bm_mirror_events(&m, 2000, recs, 2, &cur);
	CHECK_EQ(n, 2);
	CHECK_EQ(recs[0].seq, 2001);
	CHECK_EQ(cur.lost, 0);
	/* a follower of an earlier instance (beyond current) loses nothing
	 * and gets nothing */
	CHECK_EQ(bm_mirror_events(&m, 5000, recs, 2, &cur), 0);
	CHECK_EQ(cur.lost, 0);

	bm_event_free(&m);
	return check_exit();
}
