/* SPDX-License-Identifier: MIT */
/* forkjoin.c - recursive fork-join: a parallel quicksort. Each call partitions, then
 * sorts the two halves in parallel with heist_join; small ranges sort serially. */
#include <heist/heist.h>
#include <stdio.h>
#include <stdlib.h>

struct range {
	int *a;
	size_t n;
};

static int
cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return (a > b) - (a < b);
}

static int
psort(void *arg)
{
	struct range *r = arg;
	int *a = r->a;
	size_t n = r->n;
	if (n < 4096) {		/* below a cutoff a task costs more than it saves */
		qsort(a, n, sizeof *a, cmp_int);
		return 0;
	}
	int pivot = a[n / 2];	/* Lomuto partition around the middle element */
	a[n / 2] = a[n - 1];
	a[n - 1] = pivot;
	size_t store = 0;
	for (size_t i = 0; i + 1 < n; i++)
		if (a[i] < pivot) {
			int t = a[i];
			a[i] = a[store];
			a[store++] = t;
		}
	a[n - 1] = a[store];
	a[store] = pivot;
	struct range left = {a, store}, right = {a + store + 1, n - store - 1};
	/* Same as: heist_spawn(&t, psort, &right); psort(&left); heist_sync(&t).
	 * The records live in this frame; nothing is allocated. */
	return heist_join(psort, &left, psort, &right);
}

int
main(void)
{
	size_t n = 2000000;
	int *a = malloc(n * sizeof *a);
	if (!a)
		return 1;
	srand(1);
	for (size_t i = 0; i < n; i++)
		a[i] = rand();
	heist_pool *pool;
	if (heist_pool_create(&pool, NULL))
		return 1;
	struct range all = {a, n};
	heist_run(pool, psort, &all);	/* an outside thread enters the pool and waits */
	heist_pool_destroy(pool);
	for (size_t i = 1; i < n; i++)
		if (a[i - 1] > a[i]) {
			printf("not sorted at %zu\n", i);
			return 1;
		}
	printf("sorted %zu integers\n", n);
	free(a);
	return 0;
}
