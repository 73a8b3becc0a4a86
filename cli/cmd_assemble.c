/*
 * blkmirror assemble NAME COMPONENT...: records a mirror that the state
 * directory does not know, from the labels its components carry (after
 * `forget -f`, or disks moved from another host), so that `serve NAME`
 * starts it.  Nothing on the components is written: the labels are read
 * (bm_label_adopt_check) and the record is written only when they agree
 * that these are the mirror's components; serve's own assembly then
 * decides the source, as after any stop.  mdadm --assemble in spirit, but
 * it starts nothing.  A component that grew since it was labelled has its
 * label at its old end: found where the others' labels say their
 * components ended, or, when every component grew, where --old-size says
 * (kept in NAME.sizes, where serve looks too).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "label.h"
#include "statedir.h"

/* How long the labels may take to answer (one that never does: an NBD
 * export that hangs) before the verb gives up, changing nothing. */
#define ASSEMBLE_WAIT_MS 10000

/* Whether a and b name one disk: the same URI, or the same file or
 * device however it is reached (a symlink, a hard link, another name). */
static bool same_disk(const char *a, const char *b)
{
	struct stat sa, sb;

	if (strcmp(a, b) == 0)
		return true;
	if (strstr(a, "://") || strstr(b, "://") || stat(a, &sa) < 0 ||
	    stat(b, &sb) < 0)
		return false;
	if (S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode))
		return sa.st_rdev == sb.st_rdev;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* 1 (said) when path is a component of another recorded mirror, or the
 * records cannot be read to tell. */
static int listed_elsewhere(const char *path)
{
	char **names, **paths;
	size_t nn, np;
	int found = 0, err = state_list_mirrors(&names, &nn);

	if (err < 0)
		return cli_fail("cannot read the records in %s: %s; nothing was "
		                "recorded", state_dir(), strerror(-err));
	for (size_t i = 0; i < nn && !found; i++) {
		if (state_read_components(names[i], &paths, &np) < 0)
			continue;
		for (size_t k = 0; k < np && !found; k++)
			if (same_disk(paths[k], path))
				found = cli_fail("%s is a component of mirror '%s' in "
				                 "the records (as %s); nothing was "
				                 "recorded: 'blkmirror status %s' shows "
				                 "it", path, names[i], paths[k], names[i]);
		state_free(paths, np);
	}
	state_free(names, nn);
	return found;
}

int cmd_assemble(int argc, char **argv)
{
	char *paths[BM_MAX_COMPONENTS], **known, reply[64];
	const char *name;
	static const struct option longopts[] = {
		{"force", no_argument, NULL, 'f'},
		{"old-size", required_argument, NULL, 'O'},
		{NULL, 0, NULL, 0},
	};
	bool force = false;
	size_t nknown, nold = 0;
	uint64_t old[BM_MAX_COMPONENTS];
	int opt, n = 0, status, rc = 0;

	bm_backend_set_sync_timeout_ms(ASSEMBLE_WAIT_MS);
	optind = 0;
	while ((opt = cli_getopt(argc, argv, "assemble", "f", longopts,
	                         &status)) != -1) {
		switch (opt) {
		case 'f': force = true; break;
		case 'O':
			if (nold == BM_MAX_COMPONENTS)
				return cli_usage("at most %d --old-size values",
				                 BM_MAX_COMPONENTS);
			if (parse_size(optarg, &old[nold]) < 0 ||
			    old[nold] < BM_MIN_COMPONENT_SIZE)
				return cli_usage("--old-size '%s' is not a size of at "
				                 "least %u bytes (e.g. 32G, 500GiB: the "
				                 "size a component had when it was "
				                 "labelled)", optarg,
				                 BM_MIN_COMPONENT_SIZE);
			nold++;
			break;
		default: return status;
		}
	}
	if (argc - optind < 2)
		return cli_usage_of("assemble");
	name = argv[optind++];
	if (!bm_name_valid(name))
		return cli_usage("invalid mirror name '%s': use 1 to %d of "
		                 "letters, digits, '.', '_' and '-', not starting "
		                 "with '.' or '-'", name, BM_NAME_MAX);
	if (argc - optind > BM_MAX_COMPONENTS)
		return cli_usage("a mirror has at most %d components",
		                 BM_MAX_COMPONENTS);
	for (int i = optind; i < argc; i++)
		if (cli_check_path("assemble", argv[i]))
			return EXIT_USAGE;
	/* held to the end: a label or assemble of the same name meanwhile
	 * is refused, never two records overwriting each other */
	int lock_fd = -1;
	if ((rc = state_lock_said(name, "assemble", &lock_fd)) != 0)
		return rc;
	int r = state_read_components(name, &known, &nknown);
	if (r == 0) {
		state_free(known, nknown);
		rc = cli_fail("mirror '%s' is already recorded; 'blkmirror "
		              "status %s' shows it", name, name);
		goto out;
	}
	if (r != -ENOENT) {
		rc = cli_fail("cannot read the record of '%s' in %s: %s", name,
		              state_dir(), strerror(-r));
		goto out;
	}
	if (control_call(name, "ping", reply, sizeof(reply)) == 0) {
		rc = cli_fail("mirror '%s' is running; stop it first", name);
		goto out;
	}
	for (int i = optind; i < argc; i++) {
		paths[n] = cli_canonical_path(argv[i]);
		if (!paths[n]) {
			rc = cli_fail("out of memory");
			goto out;
		}
		n++;
	}
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < i; k++)
			if (strcmp(paths[i], paths[k]) == 0) {
				rc = cli_fail("%s is given twice; nothing was "
				              "recorded", paths[i]);
				goto out;
			}
		if (listed_elsewhere(paths[i])) {
			rc = 1;
			goto out;
		}
	}
	/* where grown components' labels may be: the sizes given (no
	 * record's sizes: there is no record) */
	bm_label_set_size_hints(name, old, nold);
	uint64_t sizes[BM_MAX_COMPONENTS];
	size_t nsizes = 0;
	if (bm_label_adopt_check_sizes(name, (const char *const *)paths,
	                               (size_t)n, force, sizes, &nsizes) < 0) {
		rc = cli_fail("assemble: %s", bm_last_error());
		goto out;
	}
	/* the sizes the labels record (a grown component's label is at its
	 * old end), before the record: sizes alone are harmless if the
	 * record then fails, a record without them may not start */
	int err = state_keep_sizes(name, sizes, nsizes);
	if (err < 0) {
		rc = cli_fail("cannot keep the sizes of '%s' in %s: %s; nothing "
		              "was recorded", name, state_dir(), strerror(-err));
		goto out;
	}
	err = state_write_components(name, paths, (size_t)n);
	if (err < 0) {
		rc = cli_fail("cannot record mirror '%s' in %s: %s", name,
		              state_dir(), strerror(-err));
		goto out;
	}
	printf("%s: recorded with %d component%s from their labels; start it "
	       "with 'blkmirror serve %s'\n", name, n, n == 1 ? "" : "s",
	       name);
	/* recorded all the same: serve --force-source needs the record */
	char why[1024];
	if (bm_assembly_preview(name, (const char *const *)paths, (size_t)n,
	                        NULL, why, sizeof(why)) == 1)
		printf("Note: serve refuses to start it as it is: %s\n", why);
out:
	for (int i = 0; i < n; i++)
		free(paths[i]);
	state_unlock(lock_fd);
	return rc;
}
