/* bm_label_adopt_check (assemble's judgement, lib/assemble.c) on files
 * carrying hand-made labels: every component the newest label names must
 * be given unless force; a label that names none (version 1, or member ids
 * unknown) is held to its count of components; one given that the newest
 * label does not name has left; two mirrors of one name, a copy of a
 * component, another mirror's label and no label are refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blkmirror.h"
#include "check.h"
#include "label.h"

#define SIZE (4u << 20)

static char dir[] = "/tmp/bm-adopt.XXXXXX";

/* A component file with label l (l NULL: none); its path in p. */
static void component(const char *name, const struct bm_label *l, char *p,
                      size_t len)
{
	uint8_t buf[BM_LABEL_SIZE];
	int fd;

	snprintf(p, len, "%s/%s", dir, name);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, SIZE) == 0);
	if (l) {
		bm_label_encode(l, buf);
		CHECK(pwrite(fd, buf, sizeof(buf), (off_t)bm_label_offset(SIZE)) ==
		      (ssize_t)sizeof(buf));
	}
	close(fd);
}

static struct bm_label label(const char *name, uint64_t mirror,
                             uint64_t comp, uint64_t genid, uint32_t n)
{
	struct bm_label l;

	memset(&l, 0, sizeof(l));
	l.version = 4;
	snprintf(l.name, sizeof(l.name), "%s", name);
	l.mirror_id = mirror;
	l.component_id = comp;
	l.genid = genid;
	l.syncid = 1;
	l.seq = genid;
	l.balance = 0;
	l.slice = 4096;
	l.sector_size = 512;
	l.data_size = SIZE - BM_META_SIZE;
	l.component_size = SIZE;
	l.ncomponents = n;
	return l;
}

int main(void)
{
	char a[300], b[300], c[300], x[300], none[300], other[300];

	CHECK(mkdtemp(dir) != NULL);
	bm_backend_set_sync_timeout_ms(5000);

	/* member ids known: a (newest) names a and b */
	struct bm_label la = label("m0", 7, 101, 3, 2), lb = label("m0", 7, 102, 2, 2);
	la.member_id[0] = lb.member_id[0] = 101;
	la.member_id[1] = lb.member_id[1] = 102;
	component("a", &la, a, sizeof(a));
	component("b", &lb, b, sizeof(b));
	const char *ab[] = {a, b}, *only_a[] = {a}, *only_b[] = {b};
	CHECK_EQ(bm_label_adopt_check("m0", ab, 2, false), 0);
	CHECK_EQ(bm_label_adopt_check("m0", only_b, 1, false), -ENOENT);
	CHECK(strstr(bm_last_error(), "names 2 components") != NULL);
	CHECK_EQ(bm_label_adopt_check("m0", only_b, 1, true), 0);
	CHECK_EQ(bm_label_adopt_check("m0", only_a, 1, false), -ENOENT);

	/* c: an old member, no longer named by the newest label */
	struct bm_label lc = label("m0", 7, 103, 1, 3);
	lc.member_id[0] = 101;
	lc.member_id[1] = 102;
	lc.member_id[2] = 103;
	component("c", &lc, c, sizeof(c));
	const char *abc[] = {a, b, c};
	CHECK_EQ(bm_label_adopt_check("m0", abc, 3, false), -EINVAL);
	CHECK(strstr(bm_last_error(), "has left mirror 'm0'") != NULL);

	/* no member ids (a version 1 label reads so): the count decides */
	struct bm_label l1 = label("v1", 9, 201, 2, 2), l2 = label("v1", 9, 202, 1, 2);
	component("a", &l1, a, sizeof(a));
	component("b", &l2, b, sizeof(b));
	CHECK_EQ(bm_label_adopt_check("v1", only_b, 1, false), -ENOENT);
	CHECK(strstr(bm_last_error(), "says the mirror has 2 components and 1 were given") != NULL);
	CHECK_EQ(bm_label_adopt_check("v1", only_b, 1, true), 0);
	CHECK_EQ(bm_label_adopt_check("v1", ab, 2, false), 0);

	/* refusals whatever force says */
	struct bm_label lx = label("v1", 10, 301, 5, 2), lo = label("other", 11, 401, 1, 1);
	component("x", &lx, x, sizeof(x));
	component("none", NULL, none, sizeof(none));
	component("other", &lo, other, sizeof(other));
	const char *ax[] = {a, x}, *an[] = {a, none}, *ao[] = {a, other};
	CHECK_EQ(bm_label_adopt_check("v1", ax, 2, true), -EINVAL);
	CHECK(strstr(bm_last_error(), "two different mirrors named 'v1'") != NULL);
	CHECK_EQ(bm_label_adopt_check("v1", an, 2, true), -ENOENT);
	CHECK(strstr(bm_last_error(), "carries no blkmirror label") != NULL);
	CHECK_EQ(bm_label_adopt_check("v1", ao, 2, true), -EINVAL);
	CHECK(strstr(bm_last_error(), "carries the label of mirror 'other'") != NULL);
	component("b", &l1, b, sizeof(b)); /* a copy of a */
	CHECK_EQ(bm_label_adopt_check("v1", ab, 2, true), -EINVAL);
	CHECK(strstr(bm_last_error(), "carry the label of one component") != NULL);

	unlink(a); unlink(b); unlink(c); unlink(x); unlink(none); unlink(other);
	rmdir(dir);
	return check_exit();
}
