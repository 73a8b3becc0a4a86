/*
 * blkmirror label, clear and dump: verbs that work on labels directly.
 * label refuses what would lose data (bm_label_write_new says what it found
 * where); -f labels over existing data, never over a file system larger
 * than the mirror.  clear and dump take several components, like gmirror.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "statedir.h"

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
		int r = bm_label_probe(paths[i], lname, sizeof(lname));
		if (r == -ETIMEDOUT) { /* may still be one: cannot tell */
			cli_fail("mirror '%s' already exists (%s, one of its "
			         "components, does not answer to tell whether it "
			         "still is); clear its components once they answer, "
			         "or drop its record: 'blkmirror forget -f %s'",
			         name, paths[i], name);
			state_free(paths, n);
			return 1;
		}
		if (r == 0 && strcmp(lname, name) == 0) {
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

/* How long label, clear and dump wait for a component's label (one that
 * connects and never answers: an NBD export that hangs) before they give
 * up on it, changing nothing: a verb typed at a prompt, not a start. */
#define LABEL_VERB_WAIT_MS 10000

int cmd_label(int argc, char **argv)
{
	struct bm_label_params p = {.balance = BM_BALANCE_STREAM, .slice = 4096};
	char *paths[BM_MAX_COMPONENTS];
	const char *name;
	int opt, n, rc, status;

	bm_backend_set_sync_timeout_ms(LABEL_VERB_WAIT_MS);
	optind = 0;
	static const struct option longopts[] = {
		{"no-bitmap", no_argument, NULL, 'B'},
		{NULL, 0, NULL, 0},
	};
	while ((opt = cli_getopt(argc, argv, "label", "fnb:s:r:", longopts,
	                         &status)) != -1) {
		switch (opt) {
		case 'r':
			if (parse_size(optarg, &p.bitmap_region) < 0 ||
			    p.bitmap_region < 65536 ||
			    p.bitmap_region > (1ull << 31) ||
			    (p.bitmap_region & (p.bitmap_region - 1)))
				return cli_usage("bitmap region '%s' is not a power "
				                 "of two from 64K to 2G", optarg);
			break;
		case 'B':
			p.no_bitmap = true;
			break;
		case 'f':
			p.force = true;
			break;
		case 'n':
			p.no_sync = true;
			break;
		case 'b':
			if ((rc = parse_balance_arg(optarg, &p.balance)))
				return rc;
			break;
		case 's':
			if ((rc = parse_slice_arg(optarg, &p.slice)))
				return rc;
			break;
		default:
			return status;
		}
	}
	if (argc - optind < 2)
		return cli_usage_of("label");
	name = argv[optind++];
	if (!bm_name_valid(name))
		return cli_usage("invalid mirror name '%s': use 1 to %d of letters, "
		                 "digits, '.', '_' and '-', not starting with '.' "
		                 "or '-'", name, BM_NAME_MAX);
	n = argc - optind;
	if (n > BM_MAX_COMPONENTS)
		return cli_usage("a mirror has at most %d components, not %d",
		                 BM_MAX_COMPONENTS, n);
	for (int i = 0; i < n; i++)
		if ((rc = cli_check_path("label", argv[optind + i])) != 0)
			return rc;
	/* held to the end: a second label (or assemble, or serve) of the
	 * same name meanwhile is refused, not a mix of the two */
	int lock_fd = -1;
	if ((rc = state_lock_said(name, "label", &lock_fd)) != 0)
		return rc;
	rc = refuse_existing(name);
	if (rc) {
		state_unlock(lock_fd);
		return rc;
	}
	for (int i = 0; i < n; i++)
		paths[i] = canonical(argv[optind + i]);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < i; k++)
			if (strcmp(paths[i], paths[k]) == 0) {
				rc = cli_fail("%s and %s are the same disk (%s)",
				              argv[optind + k], argv[optind + i],
				              paths[i]);
				goto out;
			}
	/* what -f takes: a component of another mirror (said once done) */
	char was[BM_MAX_COMPONENTS][BM_NAME_MAX + 1];
	for (int i = 0; i < n; i++)
		if (!p.force || bm_label_probe(paths[i], was[i],
		                               sizeof(was[i])) < 0)
			was[i][0] = '\0';
	if (bm_label_write_new(name, (const char *const *)paths, (size_t)n,
	                       &p) < 0) {
		rc = cli_fail("%s", bm_last_error());
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (was[i][0])
			fprintf(stderr, "blkmirror: label: %s was a component of "
			        "mirror '%s'; taken (-f)%s\n", paths[i], was[i],
			        strcmp(was[i], name) == 0 ? ""
			        : ": that mirror has lost it");
	/* -f may have taken a component from another mirror's list. */
	for (int i = 0; p.force && i < n; i++)
		state_forget_component(paths[i]);
	int err = state_write_components(name, paths, (size_t)n);
	if (err < 0)
		rc = cli_fail("labels written, but cannot record the mirror in "
		              "%s: %s", state_dir(), strerror(-err));
out:
	for (int i = 0; i < n; i++)
		free(paths[i]);
	state_unlock(lock_fd);
	return rc;
}

/* 1 (said) when clearing p would let an older copy become its mirror's
 * data: the other components its mirror lists are read (their labels). */
static int clear_loses_data(const char *p)
{
	char name[BM_NAME_MAX + 1], **paths;
	const char *others[BM_MAX_COMPONENTS];
	size_t n, k = 0;
	int r;

	int pr = bm_label_probe(p, name, sizeof(name));
	if (pr == -ETIMEDOUT) {
		cli_fail("%s; nothing was changed", bm_last_error());
		return 1;
	}
	if (pr < 0)
		return 0; /* no label: bm_label_clear says so */
	char what[64];
	if (state_lock_holder(name, NULL, what, sizeof(what)) == 1 &&
	    strcmp(what, "serve") == 0)
		return 0; /* running: bm_label_clear says it is in use */
	if (state_read_components(name, &paths, &n) < 0)
		n = 0, paths = NULL;
	for (size_t i = 0; i < n && k < BM_MAX_COMPONENTS; i++) {
		char *c = canonical(paths[i]);
		if (c && strcmp(c, p) != 0)
			others[k++] = paths[i];
		free(c);
	}
	r = bm_label_clear_loses_data(p, others, k);
	state_free(paths, n);
	if (r > 0)
		cli_fail("%s; 'blkmirror clear -f %s' clears it anyway",
		         bm_last_error(), p);
	return r > 0;
}

int cmd_clear(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"force", no_argument, NULL, 'f'},
		{NULL, 0, NULL, 0},
	};
	int opt, rc = 0, status;
	bool force = false;

	bm_backend_set_sync_timeout_ms(LABEL_VERB_WAIT_MS);
	optind = 0;
	while ((opt = cli_getopt(argc, argv, "clear", "f", longopts,
	                         &status)) != -1) {
		if (opt == 'f')
			force = true;
		else
			return status;
	}
	if (argc - optind < 1)
		return cli_usage_of("clear");
	for (int i = optind; i < argc; i++) {
		char *p = canonical(argv[i]);
		state_hint_sizes_of(p); /* (grown since it was labelled?) */
		if (!force && clear_loses_data(p)) {
			rc = 1;
		} else if (bm_label_clear(p) < 0) {
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
	int opt, rc = 0, status;

	bm_backend_set_sync_timeout_ms(LABEL_VERB_WAIT_MS);
	optind = 0;
	while ((opt = cli_getopt(argc, argv, "dump", "", NULL, &status)) != -1)
		return status;
	if (argc - optind < 1)
		return cli_usage_of("dump");
	for (int i = optind; i < argc; i++) {
		char *p = canonical(argv[i]);
		state_hint_sizes_of(p); /* (grown since it was labelled?) */
		free(p);
		if (bm_label_dump(argv[i], buf, sizeof(buf)) < 0) {
			rc = cli_fail("%s", bm_last_error());
			continue;
		}
		printf("%sMetadata on %s:\n%s", i > optind ? "\n" : "", argv[i],
		       buf);
	}
	return rc;
}
