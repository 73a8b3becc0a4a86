/* The read-ahead's chunk memory (lib/chunkmem.c): a chunk whose size
 * grows touches only the difference, a warm buffer serves the next chunk
 * of any size, what is resident stays within the limit (idle buffers are
 * unmapped, the least touched first), chunks above the span are never
 * kept, the soft trim keeps buffers mapped and usable, warm buffers
 * serve chunks without a fresh touch, and a lower limit sheds idle
 * buffers at once. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "chunkmem.h"
#include "check.h"

#define MiB (1u << 20)

static void growth_touches_the_difference(void)
{
	struct bm_chunkmem p;
	bm_chunkmem_init(&p);
	struct bm_chunkbuf *a = bm_chunkmem_get(&p, 2 * MiB, 64 * MiB);
	CHECK(a && ((uintptr_t)a->base & 4095) == 0);
	memset(a->base, 1, 2 * MiB);
	CHECK_EQ(p.resident, 2 * MiB);
	bm_chunkmem_put(&p, a, 64 * MiB);
	/* the chunk size doubled: the same buffer, 2 MiB more touched */
	struct bm_chunkbuf *b = bm_chunkmem_get(&p, 4 * MiB, 64 * MiB);
	CHECK(b == a);
	memset(b->base, 2, 4 * MiB);
	CHECK_EQ(p.resident, 4 * MiB);
	CHECK_EQ(p.fresh, 4 * MiB);
	CHECK_EQ(p.maps, 1);
	bm_chunkmem_put(&p, b, 64 * MiB);
	/* a chunk half as large takes it too, and touches nothing */
	struct bm_chunkbuf *c = bm_chunkmem_get(&p, 2 * MiB, 64 * MiB);
	CHECK(c == a);
	CHECK_EQ(p.fresh, 4 * MiB);
	bm_chunkmem_put(&p, c, 64 * MiB);
	/* one a quarter as large gets a fresh buffer while the limit has
	 * room (it would count 4 MiB against the cap for 1 MiB)... */
	c = bm_chunkmem_get(&p, 1 * MiB, 64 * MiB);
	CHECK(c != a);
	CHECK_EQ(p.maps, 2);
	bm_chunkmem_put(&p, c, 64 * MiB);
	bm_chunkmem_trim(&p);
	CHECK_EQ(p.resident, 0);
	/* ...and the large one when it has none */
	a = bm_chunkmem_get(&p, 4 * MiB, 4 * MiB);
	bm_chunkmem_put(&p, a, 4 * MiB);
	c = bm_chunkmem_get(&p, 1 * MiB, 4 * MiB);
	CHECK(c == a);
	/* memory unmapped and mapped again is usable (under ASan: no poison
	 * left on addresses the system hands out again) */
	memset(c->base, 6, 1 * MiB);
	bm_chunkmem_put(&p, c, 4 * MiB);
	bm_chunkmem_destroy(&p);
}

static void best_fit_then_furthest(void)
{
	struct bm_chunkmem p;
	bm_chunkmem_init(&p);
	struct bm_chunkbuf *s = bm_chunkmem_get(&p, 1 * MiB, 64 * MiB);
	struct bm_chunkbuf *l = bm_chunkmem_get(&p, 8 * MiB, 64 * MiB);
	bm_chunkmem_put(&p, l, 64 * MiB);
	bm_chunkmem_put(&p, s, 64 * MiB);
	/* 1 MiB: the one touched just far enough */
	struct bm_chunkbuf *x = bm_chunkmem_get(&p, 1 * MiB, 64 * MiB);
	CHECK(x == s);
	/* 16 MiB with only the 8 MiB one idle: it grows, no new mapping */
	struct bm_chunkbuf *y = bm_chunkmem_get(&p, 16 * MiB, 64 * MiB);
	CHECK(y == l);
	CHECK_EQ(y->touched, 16 * MiB);
	CHECK_EQ(p.maps, 2);
	CHECK_EQ(p.resident, 17 * MiB);
	bm_chunkmem_put(&p, x, 64 * MiB);
	bm_chunkmem_put(&p, y, 64 * MiB);
	bm_chunkmem_destroy(&p);
}

static void limit_sheds_least_touched(void)
{
	struct bm_chunkmem p;
	struct bm_chunkbuf *b[4];
	bm_chunkmem_init(&p);
	b[0] = bm_chunkmem_get(&p, 1 * MiB, 16 * MiB);
	b[1] = bm_chunkmem_get(&p, 4 * MiB, 16 * MiB);
	b[2] = bm_chunkmem_get(&p, 8 * MiB, 16 * MiB);
	CHECK_EQ(p.resident, 13 * MiB);
	for (int i = 0; i < 3; i++)
		bm_chunkmem_put(&p, b[i], 16 * MiB);
	/* all three idle; a new 8 MiB chunk takes the 8 MiB one */
	b[3] = bm_chunkmem_get(&p, 8 * MiB, 16 * MiB);
	CHECK(b[3] == b[2]);
	/* another 8 MiB: the 4 MiB one grows by 4, which passes 16 MiB: the
	 * least touched idle one (1 MiB) goes */
	struct bm_chunkbuf *g = bm_chunkmem_get(&p, 8 * MiB, 16 * MiB);
	CHECK(g == b[1]);
	CHECK_EQ(p.resident, 16 * MiB);
	CHECK(p.idle == NULL);
	/* a lower limit on the way back: idle buffers go at once */
	bm_chunkmem_put(&p, g, 8 * MiB);
	CHECK_EQ(p.resident, 8 * MiB);
	CHECK(p.idle == NULL);
	bm_chunkmem_put(&p, b[3], 64 * MiB);
	CHECK(p.idle == b[3]);
	bm_chunkmem_trim(&p);
	CHECK_EQ(p.resident, 0);
	CHECK(p.idle == NULL);
	bm_chunkmem_destroy(&p);
}

static void above_span_not_kept(void)
{
	struct bm_chunkmem p;
	bm_chunkmem_init(&p);
	size_t big = (size_t)BM_CHUNKMEM_SPAN + 4096;
	struct bm_chunkbuf *b = bm_chunkmem_get(&p, big, 1ull << 30);
	CHECK(b && b->span >= big);
	memset(b->base, 3, big);
	bm_chunkmem_put(&p, b, 1ull << 30);
	CHECK(p.idle == NULL);
	CHECK_EQ(p.resident, 0);
	bm_chunkmem_destroy(&p);
}

static void soft_trim_keeps_buffers(void)
{
	struct bm_chunkmem p;
	bm_chunkmem_init(&p);
	struct bm_chunkbuf *b = bm_chunkmem_get(&p, 2 * MiB, 64 * MiB);
	memset(b->base, 4, 2 * MiB);
	bm_chunkmem_put(&p, b, 64 * MiB);
	bm_chunkmem_soft_trim(&p);
	struct bm_chunkbuf *c = bm_chunkmem_get(&p, 2 * MiB, 64 * MiB);
	CHECK(c == b);
	CHECK_EQ(p.maps, 1);
	/* writable and readable again (the kernel may have taken the pages:
	 * then they read as zeros, which the caller overwrites first) */
	memset(c->base, 5, 2 * MiB);
	CHECK(((unsigned char *)c->base)[2 * MiB - 1] == 5);
	bm_chunkmem_put(&p, c, 64 * MiB);
	bm_chunkmem_destroy(&p);
}

static void warm_serves_without_fresh_touch(void)
{
	struct bm_chunkmem p;
	bm_chunkmem_init(&p);
	/* up to the target, in buffers of the given size */
	CHECK_EQ(bm_chunkmem_warm(&p, 8 * MiB, 20 * MiB), 8 * MiB);
	CHECK_EQ(bm_chunkmem_warm(&p, 8 * MiB, 20 * MiB), 8 * MiB);
	CHECK_EQ(bm_chunkmem_warm(&p, 8 * MiB, 20 * MiB), 0); /* 24 > 20 */
	CHECK_EQ(p.resident, 16 * MiB);
	CHECK_EQ(p.idle_resident, 16 * MiB);
	CHECK_EQ(p.warmed, 16 * MiB);
	CHECK_EQ(p.fresh, 0);
	CHECK_EQ(p.maps, 2);
	/* chunks of that size or smaller take them: nothing touched fresh
	 * (the limit has no room for a fresh 4 MiB one beside them) */
	struct bm_chunkbuf *a = bm_chunkmem_get(&p, 8 * MiB, 16 * MiB);
	struct bm_chunkbuf *b = bm_chunkmem_get(&p, 4 * MiB, 16 * MiB);
	CHECK(a && b && a != b);
	CHECK_EQ(a->touched, 8 * MiB);
	CHECK_EQ(b->touched, 8 * MiB);
	CHECK_EQ(p.fresh, 0);
	CHECK_EQ(p.maps, 2);
	memset(a->base, 7, 8 * MiB);
	memset(b->base, 8, 4 * MiB);
	bm_chunkmem_put(&p, a, 16 * MiB);
	bm_chunkmem_put(&p, b, 16 * MiB);
	/* larger than the span: nothing warmed */
	CHECK_EQ(bm_chunkmem_warm(&p, (size_t)BM_CHUNKMEM_SPAN + 4096, 1ull << 30), 0);
	/* a lower limit: idle buffers go, the least touched first */
	bm_chunkmem_limit(&p, 8 * MiB);
	CHECK_EQ(p.resident, 8 * MiB);
	bm_chunkmem_limit(&p, 0);
	CHECK_EQ(p.resident, 0);
	CHECK(p.idle == NULL);
	/* warm keeps within the limit whatever its target */
	CHECK_EQ(bm_chunkmem_warm(&p, 2 * MiB, 64 * MiB), 0);
	bm_chunkmem_limit(&p, 4 * MiB);
	CHECK_EQ(bm_chunkmem_warm(&p, 2 * MiB, 64 * MiB), 2 * MiB);
	CHECK_EQ(bm_chunkmem_warm(&p, 2 * MiB, 64 * MiB), 2 * MiB);
	CHECK_EQ(bm_chunkmem_warm(&p, 2 * MiB, 64 * MiB), 0);
	CHECK_EQ(p.resident, 4 * MiB);
	bm_chunkmem_destroy(&p);
}

static void growth_at_the_limit_moves_pages(void)
{
	struct bm_chunkmem p;
	bm_chunkmem_init(&p);
	bm_chunkmem_limit(&p, 8 * MiB);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(bm_chunkmem_warm(&p, 2 * MiB, 8 * MiB), 2 * MiB);
	/* a 4 MiB chunk: a 2 MiB buffer grows by the pages of another (the
	 * limit has no room for fresh ones); the emptied one is unmapped */
	struct bm_chunkbuf *a = bm_chunkmem_get(&p, 4 * MiB, 8 * MiB);
	CHECK(a != NULL);
	CHECK_EQ(a->touched, 4 * MiB);
	CHECK_EQ(p.resident, 8 * MiB);
	CHECK_EQ(p.fresh, 0);
	CHECK_EQ(p.moved, 2 * MiB);
	CHECK_EQ(p.idle_resident, 4 * MiB);
	CHECK(a->received);
	memset(a->base, 9, 4 * MiB);
	CHECK(((unsigned char *)a->base)[4 * MiB - 1] == 9);
	/* 8 MiB: takes the remaining two (4 + 2 + 2), still nothing fresh */
	bm_chunkmem_put(&p, a, 8 * MiB);
	struct bm_chunkbuf *b = bm_chunkmem_get(&p, 8 * MiB, 8 * MiB);
	CHECK(b == a);
	CHECK_EQ(b->touched, 8 * MiB);
	CHECK_EQ(p.fresh, 0);
	CHECK_EQ(p.moved, 6 * MiB);
	CHECK(p.idle == NULL);
	memset(b->base, 10, 8 * MiB);
	bm_chunkmem_put(&p, b, 8 * MiB);
	/* a buffer that took part in BM_CHUNKMEM_MOVES moves grows fresh */
	b->moves = BM_CHUNKMEM_MOVES;
	bm_chunkmem_limit(&p, 12 * MiB);
	CHECK_EQ(bm_chunkmem_warm(&p, 4 * MiB, 12 * MiB), 4 * MiB);
	struct bm_chunkbuf *c = bm_chunkmem_get(&p, 12 * MiB, 12 * MiB);
	CHECK(c == b);
	CHECK_EQ(p.moved, 6 * MiB);
	CHECK_EQ(p.fresh, 4 * MiB);
	memset(c->base, 11, 12 * MiB);
	bm_chunkmem_put(&p, c, 12 * MiB);
	bm_chunkmem_destroy(&p);
}

/* A buffer that received pages is never a donor: its touched bytes may
 * be two mappings, and a move from across them fails (before 6.12: after
 * unmapping the destination). */
static void receivers_do_not_donate(void)
{
	struct bm_chunkmem p;
	bm_chunkmem_init(&p);
	bm_chunkmem_limit(&p, 8 * MiB);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(bm_chunkmem_warm(&p, 2 * MiB, 8 * MiB), 2 * MiB);
	for (struct bm_chunkbuf *i = p.idle; i; i = i->next)
		i->received = true;
	struct bm_chunkbuf *a = bm_chunkmem_get(&p, 4 * MiB, 8 * MiB);
	CHECK(a != NULL);
	CHECK_EQ(p.moved, 0);
	CHECK_EQ(p.fresh, 2 * MiB);   /* an idle one unmapped, 2 MiB fresh */
	CHECK_EQ(p.resident, 8 * MiB);
	memset(a->base, 12, 4 * MiB);
	bm_chunkmem_put(&p, a, 8 * MiB);
	bm_chunkmem_destroy(&p);
}

int main(void)
{
	growth_touches_the_difference();
	best_fit_then_furthest();
	limit_sheds_least_touched();
	above_span_not_kept();
	soft_trim_keeps_buffers();
	warm_serves_without_fresh_touch();
	growth_at_the_limit_moves_pages();
	receivers_do_not_donate();
	return check_exit();
}
