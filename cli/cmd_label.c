/* blkmirror label, clear and dump: verbs that work on labels directly. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Absolute path for files and devices; other forms (URIs) as given. */
static char *canonical(const char *p)
{
	char buf[PATH_MAX];

	if (strstr(p, "://") == NULL && realpath(p, buf))
		return strdup(buf);
	return strdup(p);
}

static int refuse_existing(const char *name)
{
	char **paths, reply[64];
	size_t n;

	if (control_call(name, "ping", reply, sizeof(reply)) == 0)
		return cli_fail("mirror '%s' is running; stop it first", name);
	if (state_read_components(name, &paths, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char lname[BM_NAME_MAX + 1];
		if (bm_label_probe(paths[i], lname, sizeof(lname)) == 0 &&
		    strcmp(lname, name) == 0) {
			cli_fail("mirror '%s' already exists (%s is one of its "
			         "components); run 'blkmirror clear' on its "
			         "components first", name, paths[i]);
			state_free(paths, n);
			return 1;
		}
	}
	state_free(paths, n);
	return 0;
}

int cmd_label(int argc, char **argv)
{
	struct bm_label_params p = {.balance = BM_BALANCE_STREAM, .slice = 4096};
	char *paths[BM_MAX_COMPONENTS];
	const char *name;
	int opt, n, rc;

	optind = 1;
	while ((opt = getopt(argc, argv, "+nb:s:h")) != -1) {
		switch (opt) {
		case 'n':
			p.no_sync = true;
			break;
		case 'b':
			if (parse_balance_arg(optarg, &p.balance))
				return 1;
			break;
		case 's':
			if (parse_slice_arg(optarg, &p.slice))
				return 1;
			break;
		default:
			return cli_fail("usage: blkmirror label [-n] [-b ALGORITHM] "
			                "[-s SLICE] NAME COMPONENT...");
		}
	}
	if (argc - optind < 2)
		return cli_fail("usage: blkmirror label [-n] [-b ALGORITHM] "
		                "[-s SLICE] NAME COMPONENT...");
	name = argv[optind++];
	n = argc - optind;
	if (n > BM_MAX_COMPONENTS)
		return cli_fail("a mirror has at most %d components, not %d",
		                BM_MAX_COMPONENTS, n);
	rc = refuse_existing(name);
	if (rc)
		return rc;
	for (int i = 0; i < n; i++)
		paths[i] = canonical(argv[optind + i]);
	if (bm_label_write_new(name, (const char *const *)paths, (size_t)n,
	                       &p) < 0) {
		rc = cli_fail("%s", bm_last_error());
		goto out;
	}
	int err = state_write_components(name, paths, (size_t)n);
	if (err < 0)
		rc = cli_fail("labels written, but cannot record the mirror in "
		              "%s: %s", state_dir(), strerror(-err));
out:
	for (int i = 0; i < n; i++)
		free(paths[i]);
	return rc;
}

int cmd_clear(int argc, char **argv)
{
	int rc = 0;

	if (argc < 2)
		return cli_fail("usage: blkmirror clear COMPONENT...");
	for (int i = 1; i < argc; i++) {
		char *p = canonical(argv[i]);
		if (bm_label_clear(p) < 0) {
			rc = cli_fail("%s", bm_last_error());
		} else {
			state_forget_component(p);
			printf("Metadata cleared on %s.\n", argv[i]);
		}
		free(p);
	}
	return rc;
}

int cmd_dump(int argc, char **argv)
{
	char buf[4096];

	if (argc != 2)
		return cli_fail("usage: blkmirror dump COMPONENT");
	if (bm_label_dump(argv[1], buf, sizeof(buf)) < 0)
		return cli_fail("%s", bm_last_error());
	printf("Metadata on %s:\n%s", argv[1], buf);
	return 0;
}
