/*
 * The benchmark's temporary mirror (bench verb): the same engine a served
 * mirror runs, assembled without touching the disks.
 *
 * Why not label and serve: benchmarking a disk must not change it.  A label
 * is a write at the component's end, a lease another, DIRTY marking and
 * idle clean more; a read error would even be repaired by rewriting.  So:
 *  - every component is wrapped in a guard backend that forwards reads and
 *    refuses writes, trims and zeroes with -EROFS (flush does nothing)
 *    unless the mirror is writable: read-only holds by construction, below
 *    anything the engine might try;
 *  - m->no_metadata makes the engine's one label writer (meta.c) keep
 *    labels in memory, so a writable benchmark mirror leaves no label;
 *  - there is no lease (nobody else serves these) and no sync thread:
 *    every component starts ACTIVE (the data need not be identical to
 *    measure speed).
 * The event and recovery threads run as usual: failures found on the data
 * path are applied, and a read error's repair goes through the guard (and
 * fails on a read-only mirror, which fails that component).  A component
 * that disconnects never comes back: the recovery thread's reopen wants a
 * data area as large as the mirror, which spans whole components.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchmirror.h"
#include "error.h"
#include "mirror.h"

struct guard {
	struct bm_backend base;
	struct bm_backend *inner;
	bool writable;
};

static struct guard *guard_of(struct bm_backend *be)
{
	return (struct guard *)be;
}

static bool modifies(enum bm_bop op)
{
	return op == BM_BOP_WRITE || op == BM_BOP_TRIM || op == BM_BOP_ZERO;
}

static int guard_submit(struct bm_backend *be, struct bm_breq *r)
{
	struct guard *g = guard_of(be);

	if (!g->writable && modifies(r->op))
		return -EROFS;
	if (!g->writable && r->op == BM_BOP_FLUSH) {
		r->done(r, 0);
		return 0;
	}
	return g->inner->ops->submit(g->inner, r);
}

static int guard_pread(struct bm_backend *be, void *buf, size_t len,
                       uint64_t off)
{
	struct guard *g = guard_of(be);
	return g->inner->ops->pread_sync(g->inner, buf, len, off);
}

static int guard_pwrite(struct bm_backend *be, const void *buf, size_t len,
                        uint64_t off)
{
	struct guard *g = guard_of(be);

	if (!g->writable)
		return -EROFS;
	return g->inner->ops->pwrite_sync(g->inner, buf, len, off);
}

static int guard_flush(struct bm_backend *be)
{
	struct guard *g = guard_of(be);
	return g->writable ? g->inner->ops->flush_sync(g->inner) : 0;
}

/* The inner backend is the caller's: only the guard goes. */
static void guard_close(struct bm_backend *be)
{
	free(guard_of(be));
}

static void guard_abort(struct bm_backend *be)
{
	struct guard *g = guard_of(be);
	if (g->inner->ops->abort)
		g->inner->ops->abort(g->inner);
}

static int guard_check(struct bm_backend *be)
{
	struct guard *g = guard_of(be);
	return g->inner->ops->check ? g->inner->ops->check(g->inner) : 0;
}

static const struct bm_backend_ops guard_ops = {
	.kind = "bench-guard",
	.submit = guard_submit,
	.pread_sync = guard_pread,
	.pwrite_sync = guard_pwrite,
	.flush_sync = guard_flush,
	.close = guard_close,
	.abort = guard_abort,
	.check = guard_check,
};

static struct bm_backend *guard_new(struct bm_backend *inner, bool writable)
{
	struct guard *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->base.ops = &guard_ops;
	snprintf(g->base.path, sizeof(g->base.path), "%s", inner->path);
	g->base.size = inner->size;
	g->base.rotational = inner->rotational;
	g->base.st_dev = inner->st_dev;
	g->base.st_ino = inner->st_ino;
	g->base.st_rdev = inner->st_rdev;
	g->inner = inner;
	g->writable = writable;
	return &g->base;
}

static void free_mirror(struct bm_mirror *m)
{
	for (int i = 0; i < m->ncomp; i++)
		if (m->comp[i].be)
			m->comp[i].be->ops->close(m->comp[i].be);
	bm_rangelock_destroy(&m->rl);
	pthread_mutex_destroy(&m->meta_lock);
	pthread_mutex_destroy(&m->info_lock);
	pthread_mutex_destroy(&m->drain_lock);
	pthread_cond_destroy(&m->drain_cond);
	free(m);
}

int bm_bench_mirror_open(struct bm_backend *const *be, size_t n,
                         bool writable, bm_mirror **out)
{
	struct bm_mirror *m;
	pthread_condattr_t ca;
	int err;

	if (n == 0 || n > BM_MAX_COMPONENTS)
		return bm_error(EINVAL, "a mirror has 1 to %d components",
		                BM_MAX_COMPONENTS);
	m = calloc(1, sizeof(*m));
	if (!m)
		return bm_error(ENOMEM, "out of memory");
	snprintf(m->name, sizeof(m->name), "bench");
	m->ncomp = (int)n;
	m->no_metadata = true;
	pthread_mutex_init(&m->meta_lock, NULL);
	pthread_mutex_init(&m->info_lock, NULL);
	pthread_mutex_init(&m->drain_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->drain_cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&m->io_timeout_ms, BM_IO_TIMEOUT_MS_DEFAULT);
	atomic_init(&m->read_error_limit, BM_READ_ERRORS_DEFAULT);
	atomic_init(&m->balance, BM_BALANCE_STREAM);
	atomic_init(&m->slice, 4096);
	bm_rangelock_init(&m->rl);
	bm_ra_init(m);
	m->size = UINT64_MAX;
	m->genid = m->syncid = 1;
	for (size_t i = 0; i < n; i++) {
		struct bm_component *c = &m->comp[i];
		c->index = (int)i;
		snprintf(c->path, sizeof(c->path), "%s", be[i]->path);
		c->be = guard_new(be[i], writable);
		if (!c->be) {
			err = bm_error(ENOMEM, "out of memory");
			goto fail;
		}
		c->label.genid = c->label.syncid = 1;
		atomic_store(&c->state, BM_CS_ACTIVE);
		if (be[i]->size < m->size)
			m->size = be[i]->size;
	}
	m->size &= ~(uint64_t)4095;
	bm_recover_init(m);
	err = bm_workers_start(m);
	if (err < 0) {
		bm_recover_free(m);
		goto fail;
	}
	atomic_store(&m->last_write_ms, bm_now_ms());
	*out = m;
	return 0;
fail:
	bm_ra_destroy(m, -1);
	free_mirror(m);
	return err;
}

void bm_bench_mirror_close(bm_mirror *m)
{
	bm_recover_request_stop(m);
	bm_mirror_drain(m);
	bm_recover_stop(m);
	bm_ra_destroy(m, -1);
	bm_ev_stop(m);
	/* what the event thread gave up on may still hold requests */
	for (int i = 0; i < m->ncomp; i++) {
		struct bm_component *c = &m->comp[i];
		if (c->be && (atomic_load(&c->inflight) > 0 ||
		              atomic_load(&c->be->detached) > 0) &&
		    c->be->ops->abort)
			c->be->ops->abort(c->be);
	}
	bm_recover_free(m);
	bm_ev_free(m);
	free_mirror(m);
}
