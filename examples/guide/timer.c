/* SPDX-License-Identifier: MIT */
/* timer.c - timed tasks in a small service: each request gets a deadline (a delayed
 * task that cancels the request's token), called off once the request is done; a
 * periodic task reports progress until the service stops it. No thread of our own
 * sleeps: pools fire their timers themselves. The deadlines live on a one-worker pool
 * of their own: a timer runs on its pool's workers, and the requests may keep every
 * worker of theirs busy until their deadlines cut them short. */
#include <heist/heist.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define MS (1000ull * 1000)
enum { REQUESTS = 8, STUCK = 3 };	/* request 3 never ends on its own */

/* A request: quick, but for the stuck one, which runs until told to stop. */
static int
handle(void *arg)
{
	long i = (long)(intptr_t)arg;
	volatile unsigned long spin = 0;
	while (i == STUCK || spin < 1000) {
		if (heist_cancelled())
			return ECANCELED;	/* the deadline passed: give up */
		spin++;
	}
	return 0;
}

/* The deadline: cancel the request's token. */
static int
expire(void *arg)
{
	heist_cancel_request(arg);
	return 0;
}

static atomic_int done_count;

static int
report(void *arg)
{
	(void)arg;
	printf("progress: %d of %d requests done\n", atomic_load(&done_count), REQUESTS);
	return 0;	/* nonzero would end the periodic task with that result */
}

int
main(void)
{
	heist_pool *pool, *deadline_pool;
	if (heist_pool_create(&pool, NULL) ||
	    heist_pool_create(&deadline_pool, &(struct heist_config){.threads = 1}))
		return 1;
	/* Every 5 ms until its token says stop. */
	heist_cancel *stop;
	heist_future *reporter;
	if (heist_cancel_create(&stop))
		return 1;
	struct heist_timing every = {.delay_ns = 5 * MS, .period_ns = 5 * MS, .cancel = stop};
	if (heist_submit_timed(pool, &every, report, NULL, &reporter))
		return 1;

	heist_cancel *tokens[REQUESTS];
	heist_future *requests[REQUESTS], *deadlines[REQUESTS];
	for (long i = 0; i < REQUESTS; i++) {
		if (heist_cancel_create(&tokens[i]) ||
		    heist_submit_cancellable(pool, tokens[i], handle, (void *)(intptr_t)i,
					     &requests[i]) ||
		    heist_submit_delayed(deadline_pool, 20 * MS, expire, tokens[i],
					 &deadlines[i]))
			return 1;
	}
	int timed_out = 0, failed = 0;
	for (int i = 0; i < REQUESTS; i++) {
		int r = heist_future_wait(requests[i]);
		heist_future_cancel(deadlines[i]);	/* not needed any more, if not yet due */
		heist_future_wait(deadlines[i]);	/* 0 if it fired, ECANCELED if not */
		if (r == ECANCELED)
			timed_out++;
		else if (r != 0)
			failed++;
		failed += i == STUCK && r != ECANCELED;
		atomic_fetch_add(&done_count, 1);
		heist_future_release(requests[i]);
		heist_future_release(deadlines[i]);
		heist_cancel_release(tokens[i]);	/* the deadline task held its own */
	}
	heist_cancel_request(stop);	/* the reporter runs no more */
	int r = heist_future_wait(reporter);
	printf("%d requests, %d past their deadline; reporter ended with %s\n", REQUESTS,
	       timed_out, r == ECANCELED ? "ECANCELED" : "something else");
	heist_future_release(reporter);
	heist_cancel_release(stop);
	heist_pool_destroy(deadline_pool);
	heist_pool_destroy(pool);
	return failed || r != ECANCELED;
}
