/* SPDX-License-Identifier: MIT */
/* promise.c - futures fed by an event source that is not heist: replies arrive on a
 * pipe, in any order, and an event loop of our own (poll) completes a promise for
 * each; the pool only computes, in continuations of those futures and in one
 * dependent task of them all. No worker ever blocks on the pipe. POSIX (pipe, poll). */
#define _POSIX_C_SOURCE 200809L
#include <heist/heist.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

enum { REQUESTS = 64 };

static heist_promise *promises[REQUESTS];
static long replies[REQUESTS];	/* written before the set, read after the wait */
static long squares[REQUESTS];
static int pipe_fds[2];

/* The remote side: answers request i with i + 1000, in a scrambled order. */
static void *
device(void *arg)
{
	(void)arg;
	for (int k = 0; k < REQUESTS; k++) {
		int i = (k * 37) % REQUESTS;	/* 37 is prime to 64: each once */
		long msg[2] = {i, i + 1000};
		if (write(pipe_fds[1], msg, sizeof msg) != (ssize_t)sizeof msg)
			return NULL;
	}
	close(pipe_fds[1]);
	return NULL;
}

/* Our event loop: poll the pipe, and complete the promise a reply is for. */
static void *
event_loop(void *arg)
{
	(void)arg;
	struct pollfd pfd = {.fd = pipe_fds[0], .events = POLLIN};
	long msg[2];
	while (poll(&pfd, 1, -1) > 0 &&
	       read(pipe_fds[0], msg, sizeof msg) == (ssize_t)sizeof msg) {
		replies[msg[0]] = msg[1];
		heist_promise_set(promises[msg[0]], 0);	/* publishes replies[i] */
	}
	return NULL;
}

static int
square(void *arg)
{
	long i = (long)(intptr_t)arg;
	squares[i] = replies[i] * replies[i];
	return 0;
}

static long total;

static int
sum(void *arg)
{
	(void)arg;
	for (int i = 0; i < REQUESTS; i++)
		total += squares[i];
	return 0;
}

int
main(void)
{
	heist_pool *pool;
	if (heist_pool_create(&pool, NULL) || pipe(pipe_fds))
		return 1;
	heist_future *replied[REQUESTS], *squared[REQUESTS], *done;
	for (long i = 0; i < REQUESTS; i++) {
		if (heist_promise_create(pool, &promises[i], &replied[i]) ||
		    heist_future_then(replied[i], square, (void *)(intptr_t)i, &squared[i]))
			return 1;
	}
	if (heist_submit_after(pool, squared, REQUESTS, sum, NULL, NULL, &done))
		return 1;
	pthread_t loop, remote;
	pthread_create(&loop, NULL, event_loop, NULL);
	pthread_create(&remote, NULL, device, NULL);
	int err = heist_future_wait(done);	/* 0, or the first error on the way */
	pthread_join(remote, NULL);
	pthread_join(loop, NULL);
	long expect = 0;
	for (long i = 0; i < REQUESTS; i++)
		expect += (i + 1000) * (i + 1000);
	printf("sum of squares %ld (expected %ld)\n", total, expect);
	for (int i = 0; i < REQUESTS; i++) {
		heist_promise_release(promises[i]);
		heist_future_release(replied[i]);
		heist_future_release(squared[i]);
	}
	heist_future_release(done);
	heist_pool_destroy(pool);
	close(pipe_fds[0]);
	return err || total != expect;
}
