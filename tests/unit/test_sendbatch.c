/* sendbatch.c: no batch, no deferral; a deferred send runs once per object
 * at the flush, in order, not before; "first" once per object; a full
 * batch sends at once; nested opens flush only at the outermost close; a
 * send that defers again while the batch flushes goes out at once (never
 * lost); each thread has its own batch. */
#include <pthread.h>

#include "check.h"
#include "sendbatch.h"

struct obj {
	int sent;       /* times its deferred send ran */
	int order;      /* when, among all sends */
	int pins;
	bool redefer;   /* its send defers another object's send */
	struct obj *other;
};

static int clock_;

static void send_obj(void *p)
{
	struct obj *o = p;
	o->sent++;
	o->order = ++clock_;
	o->pins--;
	if (o->redefer) {
		bool first = false;
		/* while flushing: not deferred, the caller sends now */
		CHECK(!bm_sendbatch_defer(send_obj, o->other, &first));
	}
}

/* defers o's send; pins it when first, as callers do */
static bool defer(struct obj *o)
{
	bool first = false;
	if (!bm_sendbatch_defer(send_obj, o, &first))
		return false;
	if (first)
		o->pins++;
	return true;
}

static void *other_thread(void *arg)
{
	struct obj *o = arg;
	/* the main thread's open batch is not this thread's */
	if (defer(o))
		o->sent = 100; /* would be deferred into another's batch */
	bm_sendbatch_open();
	CHECK(defer(o));
	bm_sendbatch_close();
	return NULL;
}

int main(void)
{
	struct obj a = {0}, b = {0}, c = {0};
	bool first = true;

	/* no batch open: the caller sends */
	CHECK(!bm_sendbatch_defer(send_obj, &a, &first));
	bm_sendbatch_flush(); /* nothing to do, no batch */
	CHECK(a.sent == 0);

	bm_sendbatch_open();
	CHECK(defer(&a));
	CHECK(a.pins == 1);
	CHECK(defer(&b));
	CHECK(defer(&a)); /* again: deferred, not first */
	CHECK(a.pins == 1);
	CHECK(a.sent == 0 && b.sent == 0); /* not before the flush */
	bm_sendbatch_flush();
	CHECK(a.sent == 1 && b.sent == 1 && a.pins == 0 && b.pins == 0);
	CHECK(a.order < b.order); /* in the order deferred */
	bm_sendbatch_flush(); /* nothing left */
	CHECK(a.sent == 1 && b.sent == 1);

	/* still open after a flush */
	CHECK(defer(&c));
	CHECK(c.sent == 0);

	/* nested: only the outermost close flushes */
	bm_sendbatch_open();
	CHECK(defer(&a));
	bm_sendbatch_close();
	CHECK(a.sent == 1 && c.sent == 0);
	bm_sendbatch_close();
	CHECK(a.sent == 2 && c.sent == 1);
	CHECK(a.pins == 0 && c.pins == 0);

	/* closed: no deferral again; an extra close is harmless */
	CHECK(!bm_sendbatch_defer(send_obj, &a, &first));
	bm_sendbatch_close();
	CHECK(!bm_sendbatch_defer(send_obj, &a, &first));

	/* full: the seventeenth object is sent by its caller */
	struct obj many[17] = {{0}};
	bm_sendbatch_open();
	for (int i = 0; i < 16; i++)
		CHECK(defer(&many[i]));
	CHECK(!defer(&many[16]));
	CHECK(defer(&many[3])); /* one already in: still deferred */
	bm_sendbatch_close();
	for (int i = 0; i < 16; i++)
		CHECK(many[i].sent == 1 && many[i].pins == 0);
	CHECK(many[16].sent == 0);

	/* a send that would defer again while flushing: told to send now */
	struct obj d = {0}, e = {0};
	d.redefer = true;
	d.other = &e;
	bm_sendbatch_open();
	CHECK(defer(&d));
	bm_sendbatch_flush();
	CHECK(d.sent == 1 && e.sent == 0 && e.pins == 0);
	/* and after the flush, deferral works again */
	CHECK(defer(&e));
	bm_sendbatch_close();
	CHECK(e.sent == 1);

	/* per thread */
	struct obj f = {0};
	pthread_t t;
	bm_sendbatch_open();
	CHECK(pthread_create(&t, NULL, other_thread, &f) == 0);
	pthread_join(t, NULL);
	CHECK(f.sent == 1 && f.pins == 0); /* its own batch, flushed there */
	bm_sendbatch_close();
	CHECK(f.sent == 1);
	return check_exit();
}
