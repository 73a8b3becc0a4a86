/* Waiting for a component of a running mirror to finish its copy (the
 * --wait of insert, rebuild, activate). */
#ifndef BM_CLI_PROGRESS_H
#define BM_CLI_PROGRESS_H

/*
 * Polls the server of mirror `name` until component `path` (as status
 * shows it) is ACTIVE, showing the copy's progress: on a terminal (stdout)
 * one line redrawn with \r (percent, MiB/s, time left), otherwise a plain
 * line at every 10%.  Returns 0 once it is ACTIVE, 1 (after one line on
 * stderr with the reason status gives) when it failed, left the mirror or
 * the server stopped.
 */
int wait_synchronized(const char *name, const char *path);

#endif
