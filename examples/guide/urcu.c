/* SPDX-License-Identifier: MIT */
/* urcu.c - heist beside an application that uses liburcu itself. heist does not use
 * liburcu, so the two never interact; the application's own rules still apply on
 * heist's threads. Here tasks read a shared configuration under rcu_read_lock() with
 * the "bulletproof" flavor (liburcu-bp), which registers each thread by itself: heist
 * creates its workers and spare threads, so nothing else would register them. */
#include <heist/heist.h>
#include <urcu-bp.h>
#include <stdio.h>
#include <stdlib.h>

struct config {
	int scale;
};

static struct config *current;	/* RCU-protected */

static int
task(void *arg)
{
	long *out = arg;
	rcu_read_lock();
	struct config *c = rcu_dereference(current);	/* the old one or the new one */
	*out = *out * c->scale;
	rcu_read_unlock();
	return 0;
}

int
main(void)
{
	struct config *c = malloc(sizeof *c);
	if (!c)
		return 1;
	c->scale = 2;
	rcu_assign_pointer(current, c);

	heist_pool *pool;
	if (heist_pool_create(&pool, NULL))
		return 1;
	long v[100];
	for (int i = 0; i < 100; i++) {
		v[i] = i;
		if (i == 50) {	/* publish a new configuration while tasks run */
			struct config *n = malloc(sizeof *n), *old = current;
			if (!n)
				return 1;
			n->scale = 3;
			rcu_assign_pointer(current, n);
			synchronize_rcu();	/* no task still reads old */
			free(old);
		}
		if (heist_submit(pool, task, &v[i], NULL))
			return 1;
	}
	heist_pool_destroy(pool);	/* drains: every task has run */
	long sum = 0;
	for (int i = 0; i < 100; i++)
		sum += v[i];
	printf("sum %ld\n", sum);
	free(current);
	return 0;
}
