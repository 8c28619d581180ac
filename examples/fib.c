/* SPDX-License-Identifier: MIT */
/* fib.c - fork-join: task records live in the caller's stack frame. */
#include <heist/heist.h>
#include <stdio.h>
#include <stdlib.h>

struct fib { int n; long result; };

static int fib(void *arg)
{
	struct fib *f = arg;
	if (f->n < 2) {
		f->result = f->n;
		return 0;
	}
	struct fib a = {f->n - 1, 0}, b = {f->n - 2, 0};
	heist_task t;
	heist_spawn(&t, fib, &a);	/* a may be stolen by an idle worker */
	fib(&b);
	heist_sync(&t);			/* runs a here unless it was stolen */
	f->result = a.result + b.result;
	return 0;
}

int main(int argc, char **argv)
{
	struct fib f = {argc > 1 ? atoi(argv[1]) : 30, 0};
	heist_pool *pool;
	if (heist_pool_create(&pool, NULL))
		return 1;
	heist_run(pool, fib, &f);	/* enter the pool and wait */
	printf("fib(%d) = %ld\n", f.n, f.result);
	heist_pool_destroy(pool);
	return 0;
}
