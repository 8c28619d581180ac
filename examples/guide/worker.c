/* SPDX-License-Identifier: MIT */
/* worker.c - the fastest fork-join form: tasks that receive their worker. fib and
 * nqueens (a task per safe square, each child with its own copy of the board), with
 * the worker passed down the recursion, so no spawn or sync looks it up. */
#include <heist/heist.h>
#include <stdio.h>
#include <string.h>

static long fib(heist_worker *w, int n);
HEIST_WORKER_TASK_1(fib_task, long, fib, int)	/* fib_task_spawn(w, &t, n) ... */

static long
fib(heist_worker *w, int n)
{
	if (n < 2)
		return n;
	struct fib_task t;
	fib_task_spawn(w, &t, n - 1);
	long b = fib(w, n - 2);
	return fib_task_sync(w, &t) + b;	/* not stolen: fib(w, n - 1), directly */
}

enum { N_MAX = 16 };

struct board {
	int n, rows;		/* queens placed in rows 0 .. rows - 1 */
	char col[N_MAX];
	long solutions;		/* out */
};

static int
safe(const struct board *b, int c)
{
	for (int r = 0; r < b->rows; r++) {
		int d = b->col[r] - c;
		if (d == 0 || d == b->rows - r || -d == b->rows - r)
			return 0;
	}
	return 1;
}

static void queens(heist_worker *w, struct board *b);
HEIST_WORKER_VOID_TASK_1(queens_task, queens, struct board *)

static void
queens(heist_worker *w, struct board *b)
{
	if (b->rows == b->n) {
		b->solutions = 1;
		return;
	}
	struct board child[N_MAX];	/* each child's own board, in this frame */
	struct queens_task t[N_MAX];
	int k = 0;
	for (int c = 0; c < b->n; c++) {
		if (!safe(b, c))
			continue;
		child[k] = *b;
		child[k].col[b->rows] = (char)c;
		child[k].rows = b->rows + 1;
		queens_task_spawn(w, &t[k], &child[k]);	/* a thief runs it with its own w */
		k++;
	}
	b->solutions = 0;
	while (k-- > 0) {	/* syncs in the reverse order of the spawns */
		queens_task_sync(w, &t[k]);
		b->solutions += child[k].solutions;
	}
}

struct job {
	int n;
	long fib;
	struct board board;
};

/* Entered with heist_run: the one look-up of the worker, then passed down. */
static int
root(void *arg)
{
	struct job *j = arg;
	heist_worker *w = heist_worker_self();
	j->fib = fib(w, j->n);
	queens(w, &j->board);
	return 0;
}

int
main(void)
{
	heist_pool *pool;
	if (heist_pool_create(&pool, NULL))
		return 1;
	struct job j = {.n = 32, .board = {.n = 11}};
	heist_run(pool, root, &j);
	heist_pool_destroy(pool);
	printf("fib(32) = %ld, 11 queens: %ld solutions\n", j.fib, j.board.solutions);
	return j.fib != 2178309 || j.board.solutions != 2680;
}
