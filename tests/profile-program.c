/* SPDX-License-Identifier: MIT */
/* profile-program.c - a heist program that knows nothing of the profiler (it includes
 * heist.h only), for check-profile-env.py to run with HEIST_PROFILE and HEIST_TRACE:
 *   profile-program pools N   N pools one after another, each runs the work, destroyed
 *   profile-program exit      one pool that runs the work and is never destroyed
 *   profile-program fork      a pool runs the work; then in a child process, after the
 *                             parent destroyed its pool, another pool runs the work;
 *                             then, the child gone, a second pool of the parent's
 * The work: fork-join fib(16) through heist_run, 200 submitted tasks waited on, and a
 * heist_for_each over 10,000 indices. Exits 1 if any answer is wrong. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <heist/heist.h>

struct fib {
	int n;
	long r;
};

static int
fib_task(void *arg)
{
	struct fib *f = arg;
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

static int
square(void *arg)
{
	long *v = arg;
	*v = *v * *v;
	return 0;
}

static int
count_range(void *arg, size_t begin, size_t end)
{
	atomic_fetch_add((atomic_size_t *)arg, end - begin);
	return 0;
}

enum { JOBS = 200, RANGE = 10000 };

static int
work(heist_pool *pool)
{
	struct fib f = {16, 0};
	if (heist_run(pool, fib_task, &f) || f.r != 987)
		return 1;
	long v[JOBS];
	heist_future *fs[JOBS];
	for (int i = 0; i < JOBS; i++) {
		v[i] = i;
		if (heist_submit(pool, square, &v[i], &fs[i]))
			return 1;
	}
	int bad = 0;
	for (int i = 0; i < JOBS; i++) {
		bad |= heist_future_wait(fs[i]) != 0 || v[i] != (long)i * i;
		heist_future_release(fs[i]);
	}
	atomic_size_t n = 0;
	bad |= heist_for_each(pool, 0, RANGE, 0, count_range, &n) != 0;
	bad |= atomic_load(&n) != RANGE;
	return bad;
}

static heist_pool *
make_pool(void)
{
	struct heist_config cfg = {.threads = 2};
	heist_pool *pool = NULL;
	if (heist_pool_create(&pool, &cfg)) {
		fputs("profile-program: heist_pool_create failed\n", stderr);
		exit(1);
	}
	return pool;
}

static int
forked(void)
{
	heist_pool *pool = make_pool();
	int bad = work(pool);
	int go[2];
	if (pipe(go))
		return 1;
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		/* The parent's pool has no threads here: never touch it. Wait until the
		 * parent has written its report, so that a report of the parent's pool
		 * written here would be the one left in its file. */
		char byte;
		close(go[1]);
		if (read(go[0], &byte, 1) != 1)
			exit(1);
		heist_pool *own = make_pool();
		int child_bad = work(own);
		heist_pool_destroy(own);
		exit(child_bad);	/* atexit runs: it must not write the parent's pool */
	}
	close(go[0]);
	heist_pool_destroy(pool);
	if (write(go[1], "", 1) != 1)
		bad = 1;
	close(go[1]);
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		bad = 1;
	/* The parent's second pool: its report must not replace the child's. */
	heist_pool *second = make_pool();
	bad |= work(second);
	heist_pool_destroy(second);
	return bad;
}

int
main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "pools")) {
		int n = argc >= 3 ? atoi(argv[2]) : 1, bad = 0;
		for (int i = 0; i < n; i++) {
			heist_pool *pool = make_pool();
			bad |= work(pool);
			heist_pool_destroy(pool);
		}
		return bad;
	}
	if (argc >= 2 && !strcmp(argv[1], "exit")) {
		heist_pool *pool = make_pool();
		return work(pool);	/* the pool's report is written at exit */
	}
	if (argc >= 2 && !strcmp(argv[1], "fork"))
		return forked();
	fputs("usage: profile-program pools N | exit | fork\n", stderr);
	return 2;
}
