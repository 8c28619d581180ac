/* SPDX-License-Identifier: MIT */
/* inline-consumer.c - a user's fork-join code, as tests/check-inlined.py compiles it:
 * with plain flags at -O1 and above, every heist_spawn and heist_sync here must be
 * inline, with no function of the fast paths' own (heist__spawn_inline, ...) that a
 * call reaches. A fib, a loop of spawns, a typed task (HEIST_TASK_1), a worker-passing
 * one (HEIST_WORKER_TASK_1) and a function
 * of four spawn sites: with one site gcc inlines anyway; with these it did not, before
 * the fast paths were always_inline (gcc 12 -O2 kept heist__spawn_inline out of
 * line). Only compiled. */
#include <heist/heist.h>

struct fib {
	int n;
	long r;
};

static int
fib_task(void *p)
{
	struct fib *f = p;
	if (f->n < 2) {
		f->r = f->n;
		return 0;
	}
	struct fib a = {f->n - 1, 0}, b = {f->n - 2, 0};
	heist_task t;
	heist_spawn(&t, fib_task, &a);
	int rc = fib_task(&b);
	int rc_a = heist_sync(&t);
	f->r = a.r + b.r;
	return rc ? rc : rc_a;
}

/* A tree of fanout n to depth n: a spawn per child in a loop, synced newest first. */
struct fan {
	int n, depth;
	long r;
};

static int
fan_task(void *p)
{
	struct fan *x = p;
	if (x->depth == x->n || x->n > 16) {
		x->r = 1;
		return 0;
	}
	heist_task t[16];
	struct fan kids[16];
	for (int c = 0; c < x->n; c++) {
		kids[c] = (struct fan){x->n, x->depth + 1, 0};
		heist_spawn(&t[c], fan_task, &kids[c]);
	}
	long s = 0;
	int rc = 0;
	for (int c = x->n; c-- > 0;) {
		int r = heist_sync(&t[c]);
		rc = rc ? rc : r;
		s += kids[c].r;
	}
	x->r = s;
	return rc;
}

/* A typed task (HEIST_TASK_1): its spawn and sync, and the pop inside the sync, are
 * inline too. */
static long fib_typed(int n);
HEIST_TASK_1(fib_child, long, fib_typed, int)

static long
fib_typed(int n)
{
	if (n < 2)
		return n;
	struct fib_child t;
	fib_child_spawn(&t, n - 1);
	long b = fib_typed(n - 2);
	return fib_child_sync(&t) + b;
}

/* A worker-passing task (HEIST_WORKER_TASK_1): inline too, and no heist_worker_self
 * call but the root's. */
static long fib_w(heist_worker *w, int n);
HEIST_WORKER_TASK_1(fib_w_child, long, fib_w, int)

static long
fib_w(heist_worker *w, int n)
{
	if (n < 2)
		return n;
	struct fib_w_child t;
	fib_w_child_spawn(w, &t, n - 1);
	long b = fib_w(w, n - 2);
	return fib_w_child_sync(w, &t) + b;
}

static int
four_task(void *p)
{
	heist_task t[4];
	struct fib f[4];
	struct fan g = {3, 0, 0};
	for (int i = 0; i < 4; i++)
		f[i] = (struct fib){i + 20, 0};
	heist_spawn(&t[0], fib_task, &f[0]);
	heist_spawn(&t[1], fib_task, &f[1]);
	heist_spawn(&t[2], fan_task, &g);
	heist_spawn(&t[3], fib_task, &f[3]);
	int rc = heist_sync(&t[3]);
	rc |= heist_sync(&t[2]);
	rc |= heist_sync(&t[1]);
	rc |= heist_sync(&t[0]);
	*(long *)p = f[0].r + f[1].r + g.r + f[3].r + fib_typed(20) +
		     fib_w(heist_worker_self(), 20);
	return rc;
}

long consumer_run(heist_pool *pool);

long
consumer_run(heist_pool *pool)
{
	struct fib f = {30, 0};
	struct fan x = {6, 0, 0};
	long r = 0;
	if (heist_run(pool, fib_task, &f) || heist_run(pool, fan_task, &x) ||
	    heist_run(pool, four_task, &r))
		return -1;
	return f.r + x.r + r;
}
