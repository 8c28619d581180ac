/* SPDX-License-Identifier: MIT */
/* submit.c - the thread-pool shape: submit jobs, wait on their futures. */
#include <heist/heist.h>
#include <stdio.h>

static int square(void *arg)
{
	long *x = arg;
	*x = *x * *x;
	return *x > 50 ? 1 : 0;	/* a nonzero result travels to the waiter */
}

int main(void)
{
	heist_pool *pool;
	if (heist_pool_create(&pool, NULL))	/* NULL: one worker per core */
		return 1;
	long v[10];
	heist_future *f[10];
	for (int i = 0; i < 10; i++) {
		v[i] = i;
		heist_submit(pool, square, &v[i], &f[i]);
	}
	for (int i = 0; i < 10; i++) {
		int err = heist_future_wait(f[i]);	/* the task's return value */
		printf("%d^2 = %ld%s\n", i, v[i], err ? " (over 50)" : "");
		heist_future_release(f[i]);
	}
	heist_pool_destroy(pool);	/* runs whatever is still queued, then joins */
	return 0;
}
