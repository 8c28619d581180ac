/* SPDX-License-Identifier: MIT */
/* latency-open.c - heist-latency's open-loop submit load (-w submit --rate R): tasks
 * are due at fixed times, t0 + k / R, whatever happened to the ones before, and each
 * one's latency counts from when it was due. A closed loop (submit, wait, submit) or a
 * producer that measures from its own late submit would leave out exactly the delays
 * a stalled service causes: HdrHistogram's "coordinated omission", which wrk2 and
 * HdrHistogram measure this way to avoid.
 *
 * P producer threads share the schedule (producer p takes tasks p, p + P, ...). Each
 * sleeps until a task is nearly due and spins the last few microseconds, then stamps
 * the submit and calls heist_submit. The task stamps its start and its end itself,
 * with the same clock (CLOCK_MONOTONIC), into its own slot of three arrays, so no two
 * threads write one value; the main thread reads them once every task has counted
 * down (acq_rel below). The profiler meanwhile measures the scheduler's part, from the
 * actual submit, as for every workload. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include "latency.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <time.h>

enum {
	SPIN_NS = 10000,	/* spin, rather than sleep, this close to a task's due time */
};

static struct {
	uint64_t *submitted, *started, *ended;	/* ns, by task slot; 0: not (yet) */
	double *out;			/* the payload's results, for the checksum */
	unsigned payload;
	uint64_t t0;			/* ns: when this repeat's task 0 is due */
	double period_ns;		/* 1e9 / rate */
	atomic_uint_fast64_t left;	/* tasks of this repeat yet to finish */
	sem_t done;
} open;

struct producer {
	struct run *r;
	pthread_t thread;
	unsigned id;
	uint64_t slot;		/* the repeat's first slot */
	uint64_t submitted;
	int err;
};

static uint64_t
due_ns(uint64_t k)
{
	return open.t0 + (uint64_t)llround((double)k * open.period_ns);
}

static int
open_task(void *arg)
{
	uint64_t s = (uintptr_t)arg;
	open.started[s] = now_ns();
	open.out[s] = spin(open.payload, (double)s, 1e-7);
	open.ended[s] = now_ns();
	/* acq_rel: the last decrement sees every other task's stamps (each released its
	 * own decrement), and sem_post hands them to the main thread. */
	if (atomic_fetch_sub_explicit(&open.left, 1, memory_order_acq_rel) == 1)
		sem_post(&open.done);
	return 0;
}

static void
wait_until(uint64_t due)
{
	uint64_t now = now_ns();
	if (now + SPIN_NS < due) {
		uint64_t at = due - SPIN_NS;
		struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
		       !stop_requested())
			;
	}
	while (now_ns() < due)
		;
}

static void *
producer_main(void *arg)
{
	struct producer *p = arg;
	const struct options *o = p->r->o;
#if defined(__linux__)
	prctl(PR_SET_TIMERSLACK, 1UL);	/* wake when asked, not up to 50 us later */
#endif
	for (uint64_t k = p->id; k < p->r->open->tasks; k += o->producers) {
		if (stop_requested())
			break;
		wait_until(due_ns(k));
		uint64_t s = p->slot + k;
		open.submitted[s] = now_ns();
		p->err = heist_submit(p->r->pool, open_task, (void *)(uintptr_t)s, NULL);
		if (p->err) {
			open.submitted[s] = 0;
			break;
		}
		p->submitted++;
	}
	return NULL;
}

void
open_setup(struct run *r)
{
	const struct options *o = r->o;
	struct open_result *res = calloc(1, sizeof(*res));
	if (!res)
		die_err("calloc", ENOMEM);
	res->tasks = (uint64_t)llround(o->rate * o->duration);
	if (res->tasks < 1)
		res->tasks = 1;
	uint64_t slots = res->tasks * o->repeat;
	if (res->tasks > OPEN_MAX_TASKS || (o->repeat && slots / o->repeat != res->tasks) ||
	    slots > OPEN_MAX_TASKS) {	/* the product may wrap */
		fprintf(stderr, PROG ": --rate x --duration is %llu tasks a repeat, %llu "
			"repeats; the open loop keeps at most %llu in all\n",
			(unsigned long long)res->tasks, (unsigned long long)o->repeat,
			(unsigned long long)OPEN_MAX_TASKS);
		exit(EXIT_USAGE);
	}
	open.submitted = calloc(slots, sizeof(uint64_t));
	open.started = calloc(slots, sizeof(uint64_t));
	open.ended = calloc(slots, sizeof(uint64_t));
	open.out = calloc(slots, sizeof(double));
	res->repeat_start = calloc(o->repeat, sizeof(struct dist));
	res->repeat_end = calloc(o->repeat, sizeof(struct dist));
	if (!open.submitted || !open.started || !open.ended || !open.out ||
	    !res->repeat_start || !res->repeat_end)
		die_err("calloc", ENOMEM);
	if (sem_init(&open.done, 0, 0))
		die_err("sem_init", errno);
	open.payload = (unsigned)o->payload;
	open.period_ns = 1e9 / o->rate;
	r->open = res;
	r->expected = res->tasks;
}

void
open_run(struct run *r, uint64_t slot)
{
	const struct options *o = r->o;
	uint64_t n = r->open->tasks;
	memset(open.submitted + slot, 0, n * sizeof(uint64_t));
	memset(open.started + slot, 0, n * sizeof(uint64_t));
	memset(open.ended + slot, 0, n * sizeof(uint64_t));
	/* relaxed: each heist_submit hands its task over with release, after this. */
	atomic_store_explicit(&open.left, n, memory_order_relaxed);
	struct producer *p = calloc(o->producers, sizeof(*p));
	if (!p)
		die_err("calloc", ENOMEM);
	open.t0 = now_ns() + 2000000;	/* 2 ms: time to start the producers */
	unsigned started = 0;
	for (; started < o->producers; started++) {
		p[started] = (struct producer){.r = r, .id = started, .slot = slot};
		int err = pthread_create(&p[started].thread, NULL, producer_main, &p[started]);
		if (err)
			die_err("pthread_create", err);
	}
	uint64_t submitted = 0;
	int err = 0;
	for (unsigned i = 0; i < started; i++) {
		pthread_join(p[i].thread, NULL);
		submitted += p[i].submitted;
		if (p[i].err && !err)
			err = p[i].err;
	}
	free(p);
	/* Tasks never submitted (Ctrl-C, an error) will not count down. */
	uint64_t missing = n - submitted;
	bool wait = !missing ||
		    atomic_fetch_sub_explicit(&open.left, missing, memory_order_acq_rel) !=
			    missing;
	while (wait && sem_wait(&open.done) != 0 && errno == EINTR)
		;
	if (err)
		die_err("heist_submit", err);
	if (!r->recording)	/* the warm-up */
		return;
	r->tasks_ran += submitted;
	r->open->submitted += submitted;

	/* This repeat's latencies, and its achieved rates: a schedule met exactly has
	 * its last task (n - 1) submitted (n - 1) periods after the first. */
	uint64_t last_submit = 0, last_end = 0;
	struct dist *rs = &r->open->repeat_start[r->repeats_done];
	struct dist *re = &r->open->repeat_end[r->repeats_done];
	for (uint64_t k = 0; k < n; k++) {
		uint64_t s = slot + k, due = due_ns(k);
		if (!open.submitted[s])
			continue;
		if (open.submitted[s] > last_submit)
			last_submit = open.submitted[s];
		if (open.ended[s] > last_end)
			last_end = open.ended[s];
		uint64_t lag = open.submitted[s] > due ? open.submitted[s] - due : 0;
		uint64_t st = open.started[s] > due ? open.started[s] - due : 0;
		uint64_t en = open.ended[s] > due ? open.ended[s] - due : 0;
		dist_add(&r->open->lag, lag);
		dist_add(&r->open->start, st);
		dist_add(&r->open->end, en);
		dist_add(rs, st);
		dist_add(re, en);
		r->checksum += open.out[s];
	}
	dist_sort(rs);
	dist_sort(re);
	r->open->completed += submitted;
	if (submitted > 1 && last_submit > open.t0) {
		double span = (double)(last_submit - open.t0);
		/* the slowest repeat's rates: a warning is about the worst one */
		double rate = (double)(submitted - 1) * 1e9 / span;
		double done = (double)submitted * 1e9 / (double)(last_end - open.t0);
		if (!r->open->submit_rate || rate < r->open->submit_rate)
			r->open->submit_rate = rate;
		if (!r->open->complete_rate || done < r->open->complete_rate)
			r->open->complete_rate = done;
	}
}

void
open_finish(struct run *r)
{
	dist_sort(&r->open->lag);
	dist_sort(&r->open->start);
	dist_sort(&r->open->end);
}

void
open_free(struct run *r)
{
	if (!r->open)
		return;
	dist_free(&r->open->lag);
	dist_free(&r->open->start);
	dist_free(&r->open->end);
	for (uint64_t i = 0; i < r->o->repeat; i++) {
		dist_free(&r->open->repeat_start[i]);
		dist_free(&r->open->repeat_end[i]);
	}
	free(r->open->repeat_start);
	free(r->open->repeat_end);
	free(r->open);
	free(open.submitted);
	free(open.started);
	free(open.ended);
	free(open.out);
	sem_destroy(&open.done);
}
