/*
 * Components that join and leave a running mirror (gmirror insert, remove,
 * forget).  Each call may take seconds (label and lease I/O with deadlines,
 * a lease watched, requests drained): run it off the control thread.
 * Between bm_live_begin and bm_live_end the mirror is not freed (its close
 * waits); begin fails once the close has started.
 */
#ifndef BM_LIVE_H
#define BM_LIVE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blkmirror.h"

int bm_live_begin(bm_mirror *m);      /* 0, or -ESHUTDOWN: closing */
void bm_live_end(bm_mirror *m);

struct bm_insert_params {
	uint32_t priority;
	bool inactive;  /* -i: labeled INACTIVE, not in service, not copied */
	bool force;     /* -f: over a file system or other signature */
	bool check_only; /* the checks alone: nothing is written (the CLI
	                    checks every component of one insert first) */
};

/*
 * Opens path (file, block device, nbd:// URI), checks it (big enough, not
 * already in the mirror under any name, not another mirror's, no file
 * system etc. unless force, lease free), takes its lease, labels it
 * SYNCHRONIZING from 0 (or INACTIVE) and puts it in service; the sync
 * starts.  Nothing is written when a check refuses.  0 or -errno with
 * bm_last_error() saying why.
 */
int bm_mirror_insert(bm_mirror *m, const char *path,
                     const struct bm_insert_params *p);

/*
 * Takes the named components out for good: no new request reaches them,
 * those in flight complete, their lease stops, their label (and lease) is
 * cleared when they can be reached.  Refused (nothing changes) when it
 * would leave no ACTIVE component.  report gets one line per component.
 */
int bm_mirror_remove(bm_mirror *m, const char *const *paths, size_t n,
                     char *report, size_t len);

/*
 * Drops every component that is not connected (ABSENT, DISCONNECTED,
 * FAILED; not one inserted INACTIVE); their labels stay, stale (the
 * survivors' genid is bumped).  Returns how many (report names them).
 */
int bm_mirror_forget_gone(bm_mirror *m, char *report, size_t len);

/* The paths of the components in the mirror now, in order (malloc'd
 * copies into paths[BM_MAX_COMPONENTS]): what the state directory lists. */
int bm_mirror_paths(bm_mirror *m, char **paths, size_t *n);

/*
 * A component left ABSENT at the start because it could not be opened
 * (its file gone, its NBD server down: bm_component.rejoin), tried again
 * by the recovery thread (recover.c).  When it opens with this mirror's
 * label, as the member the others expect there, and a restart would take
 * it as a member to copy (neither newer than the running mirror nor in
 * split brain with it: assembly_decide.c over the labels in service and
 * its own), it takes its lease and comes back SYNCHRONIZING, copied in
 * full (or INACTIVE, when its label says so).  0: back; -EBUSY: not now;
 * -EEXIST: refused (its why says why; nothing was written to it); other
 * -errno: still away.
 */
int bm_live_rejoin(struct bm_mirror *m, int idx);

#endif
