/* SPDX-License-Identifier: MIT */
/* strict-consumer.c - a C program that includes every public header and uses the inline
 * fast paths, as tests/check-strict.py compiles it: with the strictest flags users
 * commonly set (-std=c11 -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion
 * -Werror, and more), through -I rather than -isystem, so that a warning in a header
 * fails here before it fails in a user's build. Only compiled and linked. */
#include <heist/heist.h>
#include <heist/profile.h>

#include <errno.h>
#include <stdio.h>

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

/* A typed task (HEIST_TASK_1) and a void one (HEIST_VOID_TASK_2). */
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

static void
add_to(long *sum, long x)
{
	*sum += x;
}
HEIST_VOID_TASK_2(add_child, add_to, long *, long)

/* A worker-passing task (HEIST_WORKER_TASK_1) and a void one. */
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

static void
add_w(heist_worker *w, long *sum, long x)
{
	(void)w;
	*sum += x;
}
HEIST_WORKER_VOID_TASK_2(add_w_child, add_w, long *, long)

static int
typed_root(void *arg)
{
	long *r = arg;
	struct add_child t;
	add_child_spawn(&t, r, fib_typed(15));
	add_child_sync(&t);
	heist_worker *w = heist_worker_self();
	struct add_w_child u;
	add_w_child_spawn(w, &u, r, fib_w(w, 10));
	add_w_child_sync(w, &u);
	return 0;
}

static int
sum_range(void *arg, size_t begin, size_t end)
{
	(void)arg;
	(void)begin;
	(void)end;
	return 0;
}

int
main(void)
{
	heist_pool *pool = NULL;
	struct heist_config cfg = {.threads = 2, .profile = true};
	int err = heist_pool_create(&pool, &cfg);
	if (err)
		return 1;
	struct fib f = {20, 0};
	err = heist_run(pool, fib_task, &f);
	heist_future *fut = NULL;
	if (!err)
		err = heist_submit(pool, fib_task, &f, &fut);
	if (!err) {
		err = heist_future_wait(fut);
		heist_future_release(fut);
	}
	long typed = 0;
	if (!err)
		err = heist_run(pool, typed_root, &typed);
	if (!err && typed != 610 + 55)	/* fib(15) + fib(10) */
		err = EINVAL;
	if (!err)
		err = heist_for_each(pool, 0, 1000, 0, sum_range, NULL);
	struct heist_latency_report rep;
	if (!err)
		err = heist_profile_report(pool, &rep);
	heist_pool_destroy(pool);
	printf("%s %ld %ld %d\n", heist_version(), f.r, typed, err);
	return err != 0;
}
