/* SPDX-License-Identifier: MIT */
/* user_fib.c - heist-bench-user: W1's fib as a user's program is built, for
 * heist-bench --instructions. It includes only <heist/heist.h>, links the shared
 * library, and is compiled at -O2 with no flag of the bench's own, so the spawn and
 * sync it counts are those a user's build gets (bench/w_fib.c, built with the
 * project's flags, may be inlined and optimised differently).
 *
 *     heist-bench-user serial|heist|typed|worker N [workers]
 *
 * runs fib(N) serially on a thread of its own, or as fork-join on a pool of one
 * worker (or of `workers`, for W1's time beside Lace's -w 2), and exits 0 if the
 * answer is right: `heist` with heist_spawn and heist_sync of an argument struct, as
 * a peer driver of plain calls is written, `typed` with a typed task (HEIST_TASK_1),
 * as Lace's driver is written with its typed tasks, `worker` with a worker-passing
 * task (HEIST_WORKER_TASK_1), as Lace's tasks receive their worker. */
#include <heist/heist.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	fib_task(&b);
	heist_sync(&t);
	f->r = a.r + b.r;
	return 0;
}

static long
fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

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

static int
typed_root(void *p)
{
	struct fib *f = p;
	f->r = fib_typed(f->n);
	return 0;
}

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
worker_root(void *p)
{
	struct fib *f = p;
	f->r = fib_w(heist_worker_self(), f->n);
	return 0;
}

static void *
serial_thread(void *p)
{
	struct fib *f = p;
	f->r = fib(f->n);
	return NULL;
}

static long
fib_closed(int n)
{
	long a = 0, b = 1;
	while (n-- > 0) {
		long c = a + b;
		a = b;
		b = c;
	}
	return a;
}

int
main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: heist-bench-user serial|heist|typed|worker N [workers]\n");
		return 2;
	}
	struct fib f = {atoi(argv[2]), 0};
	if (strcmp(argv[1], "serial") == 0) {
		/* On a thread of its own, as the heist tree runs on its worker. */
		pthread_t t;
		if (pthread_create(&t, NULL, serial_thread, &f) || pthread_join(t, NULL))
			return 1;
	} else if (strcmp(argv[1], "heist") == 0 || strcmp(argv[1], "typed") == 0 ||
		   strcmp(argv[1], "worker") == 0) {
		unsigned workers = argc == 4 ? (unsigned)atoi(argv[3]) : 1;
		struct heist_config cfg = {.threads = workers, .spin = workers == 1 ? 1 : 0};
		heist_pool *pool;
		if (heist_pool_create(&pool, &cfg))
			return 1;
		heist_fn root = argv[1][0] == 'h' ? fib_task
				: argv[1][0] == 't' ? typed_root : worker_root;
		int rc = heist_run(pool, root, &f);
		heist_pool_destroy(pool);
		if (rc)
			return 1;
	} else {
		return 2;
	}
	return f.r == fib_closed(f.n) ? 0 : 1;
}
