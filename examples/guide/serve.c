/* SPDX-License-Identifier: MIT */
/* serve.c - a request-serving pool: every request is a task with a future; the server
 * waits for each answer at most 50 ms and cancels the ones that are late. */
#define _POSIX_C_SOURCE 200809L	/* clock_gettime with -std=c11 */
#include <heist/heist.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct request {
	unsigned id;
	unsigned work_ms;	/* how long answering it takes */
};

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int
handle(void *arg)
{
	const struct request *rq = arg;	/* the task's own copy (heist_submit_copy) */
	uint64_t end = now_ns() + rq->work_ms * 1000000ull;
	volatile double x = rq->id;
	while (now_ns() < end) {	/* CPU work, in slices */
		if (heist_cancelled())	/* the server gave up on this request */
			return ECANCELED;
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
	}
	return 0;
}

int
main(void)
{
	/* injector_limit: back-pressure; submit blocks while 1024 requests are queued. */
	struct heist_config cfg = {.injector_limit = 1024};
	heist_pool *pool;
	int err = heist_pool_create(&pool, &cfg);
	if (err) {
		fprintf(stderr, "heist_pool_create: %s\n", strerror(err));
		return 1;
	}
	enum { N = 8 };
	heist_future *f[N];
	for (unsigned i = 0; i < N; i++) {
		struct request rq = {i, i % 4 == 3 ? 2000 : 5};	/* every 4th is slow */
		err = heist_submit_copy(pool, handle, &rq, sizeof rq, &f[i]);
		if (err) {
			fprintf(stderr, "submit: %s\n", strerror(err));
			return 1;
		}
	}
	for (unsigned i = 0; i < N; i++) {
		if (heist_future_wait_for(f[i], 50 * 1000000ull)) {
			int r = heist_future_wait(f[i]);	/* done: returns at once */
			printf("request %u: %s\n", i, r ? strerror(r) : "answered");
		} else {
			heist_future_cancel(f[i]);	/* queued: never runs; running: stops */
			printf("request %u: timed out, cancelled\n", i);
		}
		heist_future_release(f[i]);
	}
	heist_pool_destroy(pool);	/* runs what is left (the cancelled stop early) */
	return 0;
}
