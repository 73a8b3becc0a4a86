/*
 * Read balance: which component serves a read.
 *
 *   round-robin  the next readable component in turn (one shared cursor).
 *   load         the component with the fewest requests outstanding,
 *                counted across every connection and thread (atomics);
 *                ties are broken from a rotating start, never always 0.
 *   prefer       the readable component with the highest priority.
 *   split        (compio.c) a request longer than the slice is cut into one
 *                piece per readable component; shorter ones go by load.
 *   stream       (readahead.c) sequential streams read ahead from every
 *                component at once; other reads go by load, where a
 *                rotating component's read next to its head position
 *                counts one request less.
 *
 * Only ACTIVE components are readable: a SYNCHRONIZING one may not hold the
 * range yet, a FAILED or ABSENT one may hold old data.
 */
#include <errno.h>
#include <string.h>

#include "mirror.h"
#include "sendbatch.h"

static const char *const balance_names[BM_BALANCE_COUNT] = {
	[BM_BALANCE_ROUND_ROBIN] = "round-robin",
	[BM_BALANCE_LOAD] = "load",
	[BM_BALANCE_PREFER] = "prefer",
	[BM_BALANCE_SPLIT] = "split",
	[BM_BALANCE_STREAM] = "stream",
};

const char *bm_balance_name(int balance)
{
	if (balance < 0 || balance >= BM_BALANCE_COUNT)
		return NULL;
	return balance_names[balance];
}

int bm_balance_parse(const char *name)
{
	for (int i = 0; i < BM_BALANCE_COUNT; i++)
		if (strcmp(name, balance_names[i]) == 0)
			return i;
	return -EINVAL;
}

static bool readable(struct bm_mirror *m, int i, uint32_t exclude)
{
	return !(exclude & (1u << i)) &&
	       atomic_load(&m->comp[i].state) == BM_CS_ACTIVE;
}

int bm_readable_count(struct bm_mirror *m)
{
	int n = 0;
	for (int i = 0; i < m->ncomp; i++)
		n += readable(m, i, 0);
	return n;
}

static int pick_round_robin(struct bm_mirror *m, uint32_t exclude)
{
	unsigned start = atomic_fetch_add(&m->rr_cursor, 1);

	for (int k = 0; k < m->ncomp; k++) {
		int i = (int)((start + (unsigned)k) % (unsigned)m->ncomp);
		if (readable(m, i, exclude))
			return i;
	}
	return -1;
}

/* Whether c says it rotates: its backend read under a user count (a
 * remove closes it once unused). */
static bool comp_rotational(struct bm_component *c)
{
	struct bm_backend *be = bm_comp_get(c);
	bool rotational = be && be->rotational;

	if (be)
		bm_comp_put(c);
	return rotational;
}

/*
 * Batch affinity.  A thread that handles several requests in a row (the
 * NBD server's reader after one read brought several) sends them at its
 * next flush, one message per component (sendbatch.c).  Alternating those
 * reads between components costs a message, a wake-up of the disk and one
 * of our receiver per component per batch; on fast disks that per-message
 * cost is what limits small random reads.  So within one batch a read goes
 * to the component this thread's previous read of the batch went to, as
 * long as every other readable component is busy too (never leave a disk
 * idle: two requests in flight still go to two disks) and the chosen one
 * has at most AFFINITY_SLACK more outstanding than the least loaded one.
 * Not for rotating components: there the head position decides.
 */
#define AFFINITY_SLACK 4

static __thread struct {
	const struct bm_mirror *m;
	unsigned epoch;
	int comp;
} last_pick;

static int pick_affine(struct bm_mirror *m, uint32_t exclude, unsigned epoch)
{
	if (epoch == 0 || last_pick.m != m || last_pick.epoch != epoch)
		return -1;
	int i = last_pick.comp;
	if (i < 0 || i >= m->ncomp || !readable(m, i, exclude) ||
	    comp_rotational(&m->comp[i]))
		return -1;
	int load = atomic_load(&m->comp[i].inflight), min_load = load;
	for (int k = 0; k < m->ncomp; k++) {
		if (k == i || !readable(m, k, exclude))
			continue;
		int l = atomic_load(&m->comp[k].inflight);
		if (l == 0)
			return -1; /* an idle disk gets the read */
		if (l < min_load)
			min_load = l;
	}
	return load <= min_load + AFFINITY_SLACK ? i : -1;
}

static int pick_load(struct bm_mirror *m, uint32_t exclude, uint64_t off,
                     bool head_bonus)
{
	unsigned epoch = bm_sendbatch_epoch();
	int affine = pick_affine(m, exclude, epoch);
	if (affine >= 0)
		return affine;

	unsigned start = atomic_fetch_add(&m->rr_cursor, 1);
	int best = -1, best_load = 0;

	for (int k = 0; k < m->ncomp; k++) {
		int i = (int)((start + (unsigned)k) % (unsigned)m->ncomp);
		if (!readable(m, i, exclude))
			continue;
		int load = atomic_load(&m->comp[i].inflight);
		if (head_bonus && comp_rotational(&m->comp[i])) {
			uint64_t head = atomic_load(&m->comp[i].head_pos);
			uint64_t d = off > head ? off - head : head - off;
			if (d < (1u << 20) && load > 0)
				load--;
		}
		if (best < 0 || load < best_load) {
			best = i;
			best_load = load;
		}
	}
	last_pick.m = m;
	last_pick.epoch = epoch;
	last_pick.comp = best;
	return best;
}

static int pick_prefer(struct bm_mirror *m, uint32_t exclude)
{
	int best = -1;

	for (int i = 0; i < m->ncomp; i++) {
		if (!readable(m, i, exclude))
			continue;
		if (best < 0 ||
		    m->comp[i].label.priority > m->comp[best].label.priority)
			best = i;
	}
	return best;
}

int bm_balance_pick(struct bm_mirror *m, uint64_t off, uint32_t len,
                    uint32_t exclude)
{
	(void)len;
	switch (atomic_load(&m->balance)) {
	case BM_BALANCE_ROUND_ROBIN:
		return pick_round_robin(m, exclude);
	case BM_BALANCE_PREFER:
		return pick_prefer(m, exclude);
	case BM_BALANCE_STREAM:
		return pick_load(m, exclude, off, true);
	default: /* load, and split's short requests and pieces */
		return pick_load(m, exclude, off, false);
	}
}
