/* SPDX-License-Identifier: MIT */
/* nested.c - nested parallel loops: a for_each over the rows of C = A x B whose body
 * runs a for_each over the columns, with per-thread scratch indexed by
 * heist_thread_index(). */
#include <heist/heist.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 300 };
static double A[N][N], B[N][N], C[N][N];

struct rows {
	heist_pool *pool;
	unsigned long *dots;	/* per thread: dot products computed */
};

struct cols {
	struct rows *rows;
	size_t i;		/* the row */
};

static int
col_body(void *arg, size_t begin, size_t end)
{
	struct cols *c = arg;
	for (size_t j = begin; j < end; j++) {
		double s = 0;
		for (size_t k = 0; k < N; k++)
			s += A[c->i][k] * B[k][j];
		C[c->i][j] = s;
	}
	/* Every thread that runs a body has an index below heist_pool_threads(): the
	 * workers, the calling thread (guest slot) and spares. heist_worker_index()
	 * would be -1 on the last two. */
	c->rows->dots[heist_thread_index()] += end - begin;
	return 0;
}

static int
row_body(void *arg, size_t begin, size_t end)
{
	struct rows *r = arg;
	for (size_t i = begin; i < end; i++) {
		struct cols c = {r, i};
		/* Nested: on a worker this forks in place, on any pool size. */
		int err = heist_for_each(r->pool, 0, N, 16, col_body, &c);
		if (err)
			return err;
	}
	return 0;
}

int
main(void)
{
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++) {
			A[i][j] = (double)(i + j);
			B[i][j] = i == j ? 2.0 : 0.0;	/* C must be 2A */
		}
	heist_pool *pool;
	if (heist_pool_create(&pool, NULL))
		return 1;
	unsigned threads = heist_pool_threads(pool);
	struct rows r = {pool, calloc(threads, sizeof(unsigned long))};
	if (!r.dots)
		return 1;
	int err = heist_for_each(pool, 0, N, 1, row_body, &r);
	heist_pool_destroy(pool);
	unsigned long total = 0;
	for (unsigned t = 0; t < threads; t++)
		total += r.dots[t];
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++)
			if (C[i][j] != 2 * A[i][j])
				return 1;
	printf("for_each: %d; %lu dot products on %u thread slots\n", err, total, threads);
	free(r.dots);
	return err || total != (unsigned long)N * N;
}
