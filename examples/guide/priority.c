/* SPDX-License-Identifier: MIT */
/* priority.c - one pool for interactive requests and a background batch: the batch is
 * queued at low priority, the requests at high priority, a group of follow-up work at
 * high priority too. Each request notes how many batch tasks finished between its
 * submit and its start: a handful at most (what the workers were busy with when it
 * came), not the thousands queued before it. */
#include <heist/heist.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

enum { BATCH = 4000, REQUESTS = 10 };

static atomic_int batch_done;
static atomic_ulong checksum;

/* A piece of the background batch: some work, counted. */
static int
background(void *arg)
{
	(void)arg;
	unsigned long x = 0;
	for (unsigned long i = 0; i < 20000; i++)
		x = x * 31 + i;
	atomic_fetch_add(&checksum, x);
	atomic_fetch_add(&batch_done, 1);
	return 0;
}

/* A request, and how many batch tasks finished between its submit and its start. */
struct request {
	int done_at_submit;
	int done_before_start;
};

static int
request(void *arg)
{
	struct request *r = arg;
	r->done_before_start = atomic_load(&batch_done) - r->done_at_submit;
	return 0;
}

static atomic_int follow_ups;

static int
follow_up(void *arg)
{
	(void)arg;
	atomic_fetch_add(&follow_ups, 1);
	return 0;
}

int
main(void)
{
	heist_pool *pool;
	if (heist_pool_create(&pool, NULL))
		return 1;
	/* The batch first: thousands of tasks queued ahead of every request. */
	for (int i = 0; i < BATCH; i++)
		if (heist_submit_priority(pool, HEIST_PRIORITY_LOW, background, NULL, NULL))
			return 1;

	struct request req[REQUESTS];
	heist_future *f[REQUESTS];
	for (int i = 0; i < REQUESTS; i++) {
		req[i].done_at_submit = atomic_load(&batch_done);
		if (heist_submit_priority(pool, HEIST_PRIORITY_HIGH, request, &req[i], &f[i]))
			return 1;
	}
	heist_group *g;	/* follow-up work, also ahead of the batch */
	if (heist_group_create(pool, &g) || heist_group_set_priority(g, HEIST_PRIORITY_HIGH))
		return 1;
	for (int i = 0; i < REQUESTS; i++)
		if (heist_group_submit(g, follow_up, NULL))
			return 1;

	int failed = 0;
	for (int i = 0; i < REQUESTS; i++) {
		failed |= heist_future_wait(f[i]);
		heist_future_release(f[i]);
	}
	failed |= heist_group_wait(g);
	int most = 0;
	for (int i = 0; i < REQUESTS; i++)
		if (req[i].done_before_start > most)
			most = req[i].done_before_start;
	printf("%d requests: at most %d background tasks (of %d queued) finished between a "
	       "request's submit and its start\n", REQUESTS, most, BATCH);
	heist_group_destroy(g);
	heist_pool_destroy(pool);	/* runs the rest of the batch */
	printf("background tasks run: %d; follow-ups: %d\n", atomic_load(&batch_done),
	       atomic_load(&follow_ups));
	return failed || atomic_load(&batch_done) != BATCH || atomic_load(&follow_ups) != REQUESTS;
}
