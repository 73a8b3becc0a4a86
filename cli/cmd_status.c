/*
 * blkmirror status, list, configure and stop.  A running mirror answers on
 * its control socket; a stopped one is described from its labels.
 *
 * status exits 0 when every mirror shown is COMPLETE, 2 when one is
 * DEGRADED, 3 when one is not running, 1 on error (mdadm --detail --test
 * in spirit: scripts can tell).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define REPLY_MAX (256 * 1024)

/* Calls the running server; prints its text on success.  Returns 0, or
 * -ENOENT when the mirror is not running, or 1 after printing an error. */
static int call_and_print(const char *name, const char *cmd, bool print)
{
	char *reply = malloc(REPLY_MAX);
	int err;

	if (!reply)
		return cli_fail("out of memory");
	err = control_call(name, cmd, reply, REPLY_MAX);
	if (err < 0) {
		free(reply);
		return err == -ENOENT ? -ENOENT
		                      : cli_fail("%s: %s", name, strerror(-err));
	}
	if (strncmp(reply, "ok\n", 3) != 0) {
		const char *msg = strncmp(reply, "error ", 6) == 0 ? reply + 6 : reply;
		cli_fail("%s: %.*s", name, (int)strcspn(msg, "\n"), msg);
		free(reply);
		return 1;
	}
	if (print)
		fputs(reply + 3, stdout);
	err = strstr(reply, "DEGRADED") ? 2 : 0;
	free(reply);
	return err;
}

static int known_mirror(const char *name, char ***paths, size_t *n)
{
	int err = state_read_components(name, paths, n);

	if (err == -ENOENT)
		return cli_fail("no mirror named '%s' in %s", name, state_dir());
	if (err < 0)
		return cli_fail("cannot read the state of '%s': %s", name,
		                strerror(-err));
	return 0;
}

static int status_offline(const char *name, bool header)
{
	char **paths;
	size_t n;
	int w = (int)strlen(name) > 4 ? (int)strlen(name) : 4;

	if (known_mirror(name, &paths, &n))
		return 1;
	if (header)
		printf("%-*s  %-8s  %s\n", w, "Name", "Status", "Components");
	for (size_t i = 0; i < n; i++) {
		char st[600];
		bm_label_state(paths[i], name, st, sizeof(st));
		printf("%-*s  %-8s  %s (%s)\n", w, i ? "" : name,
		       i ? "" : "STOPPED", paths[i], st);
	}
	state_free(paths, n);
	return 3;
}

static int status_one(const char *name, bool header)
{
	char **paths;
	size_t n;
	int rc;

	if (!bm_name_valid(name))
		return cli_fail("invalid mirror name '%s'", name);
	if (known_mirror(name, &paths, &n))
		return 1;
	state_free(paths, n);
	rc = call_and_print(name, "status", header);
	if (rc == -ENOENT)
		return status_offline(name, header);
	return rc;
}

int cmd_status(int argc, char **argv)
{
	char **names;
	size_t n;
	int worst = 0;

	if (argc > 2)
		return cli_fail("usage: blkmirror status [NAME]");
	if (argc == 2)
		return status_one(argv[1], true);
	if (state_list_mirrors(&names, &n) < 0)
		return cli_fail("cannot read %s", state_dir());
	for (size_t i = 0; i < n; i++) {
		int rc = status_one(names[i], true);
		if (rc > worst)
			worst = rc;
	}
	state_free(names, n);
	return worst;
}

static int list_offline(const char *name)
{
	char **paths;
	size_t n;

	if (known_mirror(name, &paths, &n))
		return 1;
	printf("Geom name: %s\nState: STOPPED\nComponents: %zu\nConsumers:\n",
	       name, n);
	for (size_t i = 0; i < n; i++) {
		char buf[4096];
		printf("%zu. Name: %s\n", i + 1, paths[i]);
		if (bm_label_dump(paths[i], buf, sizeof(buf)) < 0)
			printf("   Error: %s\n", bm_last_error());
		else
			fputs(buf, stdout);
	}
	state_free(paths, n);
	return 0;
}

static int list_one(const char *name)
{
	int rc;

	if (!bm_name_valid(name))
		return cli_fail("invalid mirror name '%s'", name);
	rc = call_and_print(name, "list", true);
	if (rc == -ENOENT)
		return list_offline(name);
	return rc == 2 ? 0 : rc;
}

int cmd_list(int argc, char **argv)
{
	char **names;
	size_t n;
	int rc = 0;

	if (argc > 2)
		return cli_fail("usage: blkmirror list [NAME]");
	if (argc == 2)
		return list_one(argv[1]);
	if (state_list_mirrors(&names, &n) < 0)
		return cli_fail("cannot read %s", state_dir());
	for (size_t i = 0; i < n; i++)
		rc |= list_one(names[i]);
	state_free(names, n);
	return rc;
}

int cmd_configure(int argc, char **argv)
{
	int balance = -1, opt, rc;
	uint32_t slice = 0;
	const char *name;
	char cmd[128], **paths;
	size_t n;

	optind = 1;
	while ((opt = getopt(argc, argv, "+b:s:h")) != -1) {
		switch (opt) {
		case 'b':
			if (parse_balance_arg(optarg, &balance))
				return 1;
			break;
		case 's':
			if (parse_slice_arg(optarg, &slice))
				return 1;
			break;
		default:
			return cli_fail("usage: blkmirror configure -b ALGORITHM "
			                "[-s SLICE] NAME");
		}
	}
	if (argc - optind != 1 || balance < 0)
		return cli_fail("usage: blkmirror configure -b ALGORITHM "
		                "[-s SLICE] NAME");
	name = argv[optind];
	if (!bm_name_valid(name))
		return cli_fail("invalid mirror name '%s'", name);
	if (known_mirror(name, &paths, &n))
		return 1;
	snprintf(cmd, sizeof(cmd), "configure %s %u", bm_balance_name(balance),
	         slice);
	rc = call_and_print(name, cmd, false);
	if (rc == -ENOENT) {
		rc = 0;
		if (bm_label_configure((const char *const *)paths, n, balance,
		                       slice) < 0)
			rc = cli_fail("%s", bm_last_error());
	}
	state_free(paths, n);
	return rc;
}

int cmd_stop(int argc, char **argv)
{
	char **paths;
	size_t n;
	int rc;

	if (argc != 2)
		return cli_fail("usage: blkmirror stop NAME");
	if (!bm_name_valid(argv[1]))
		return cli_fail("invalid mirror name '%s'", argv[1]);
	if (known_mirror(argv[1], &paths, &n))
		return 1;
	state_free(paths, n);
	rc = call_and_print(argv[1], "stop", false);
	if (rc == -ENOENT)
		return cli_fail("mirror '%s' is not running", argv[1]);
	return rc;
}
