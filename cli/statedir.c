/*
 * The state directory ($BLKMIRROR_STATE_DIR or /var/lib/blkmirror) records,
 * per mirror, the paths of its components (NAME.components, one a line) and
 * holds the running server's control socket (NAME.ctl).  The labels on the
 * components stay the truth about the mirror; this file only says where to
 * look for them.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

const char *state_dir(void)
{
	const char *d = getenv("BLKMIRROR_STATE_DIR");
	return (d && *d) ? d : STATE_DIR_DEFAULT;
}

int state_path(char *buf, size_t len, const char *name, const char *suffix)
{
	int n = snprintf(buf, len, "%s/%s%s", state_dir(), name, suffix);
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

void state_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

int state_read_components(const char *name, char ***paths, size_t *n)
{
	char p[4096], line[4096];
	FILE *f;
	char **v = NULL;
	size_t cnt = 0;

	if (state_path(p, sizeof(p), name, ".components") < 0)
		return -ENAMETOOLONG;
	f = fopen(p, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		char **nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv || !(nv[cnt] = strdup(line))) {
			state_free(nv ? nv : v, cnt);
			fclose(f);
			return -ENOMEM;
		}
		v = nv;
		cnt++;
	}
	fclose(f);
	*paths = v;
	*n = cnt;
	return 0;
}

int state_write_components(const char *name, char *const *paths, size_t n)
{
	char p[4096], tmp[4200];
	FILE *f;

	if (mkdir(state_dir(), 0755) < 0 && errno != EEXIST)
		return -errno;
	if (state_path(p, sizeof(p), name, ".components") < 0)
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", paths[i]);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		int err = -errno;
		fclose(f);
		unlink(tmp);
		return err;
	}
	fclose(f);
	if (rename(tmp, p) < 0)
		return -errno;
	return 0;
}

int state_list_mirrors(char ***names, size_t *n)
{
	DIR *d = opendir(state_dir());
	struct dirent *e;
	char **v = NULL;
	size_t cnt = 0;

	*names = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		const char *suf = ".components";
		if (len <= strlen(suf) ||
		    strcmp(e->d_name + len - strlen(suf), suf) != 0)
			continue;
		char **nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[cnt] = strndup(e->d_name, len - strlen(suf));
		if (v[cnt])
			cnt++;
	}
	closedir(d);
	/* sort for stable output */
	for (size_t i = 1; i < cnt; i++)
		for (size_t k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
			char *t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	*names = v;
	*n = cnt;
	return 0;
}

/* Removes a cleared component from whichever mirror lists it. */
int state_forget_component(const char *path)
{
	char **names;
	size_t nn;

	if (state_list_mirrors(&names, &nn) < 0)
		return 0;
	for (size_t i = 0; i < nn; i++) {
		char **paths;
		size_t np, keep = 0;
		if (state_read_components(names[i], &paths, &np) < 0)
			continue;
		for (size_t k = 0; k < np; k++) {
			if (strcmp(paths[k], path) == 0) {
				free(paths[k]);
				continue;
			}
			paths[keep++] = paths[k];
		}
		if (keep != np) {
			if (keep == 0) {
				char p[4096];
				if (state_path(p, sizeof(p), names[i], ".components") == 0)
					unlink(p);
			} else {
				state_write_components(names[i], paths, keep);
			}
		}
		state_free(paths, keep);
	}
	state_free(names, nn);
	return 0;
}
