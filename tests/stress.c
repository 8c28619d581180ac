/* SPDX-License-Identifier: MIT */
/* stress.c - a randomized, seeded stress of everything at once, on two pools: outside
 * threads submit jobs whose bodies fork-join, loop, reduce, wait for earlier jobs' futures
 * (their own pool's or the other's), submit and wait for nested jobs, and nap; they
 * cancel some, wait with and without timeouts, run loops from outside (the guest
 * slot) and heist_run fork-join, and fire and forget; then the pools are destroyed
 * with work still queued. Every result is checked exactly, every accepted task must
 * run once, and no wait may hang (a watchdog aborts after 90 s without progress).
 *
 *     stress [--seed N] [--rounds N] [--seconds S]
 *
 * The seed is printed first, and again with any failure: `stress --seed N` replays
 * the same choices (the schedule itself is the machine's). Exit 0, or 1 on failure.
 * The program's own waits form no cycle, so any hang is the library's: a job waits
 * only for jobs created before it, and only pool 0's jobs wait for (or loop on, or
 * submit to) pool 1, never the other way (a job of one pool waiting for a job queued
 * in another needs a thread of that pool: pools that wait on each other can hold
 * each other's threads, as any two thread pools can), with two exceptions the liveness
 * theorem covers (docs/architecture.md) where the pools have spares to give: chains of
 * waits across both pools (a job of one runs a job of the other, which runs a job of
 * the first, ...), and loops of short timed waits on a job of the same pool. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"	/* fib_spawn, fib_serial */

enum {
	THREADS = 3,		/* outside threads per round */
	JOBS = 240,		/* table jobs per outside thread and round */
	STEPS = 480,		/* operations per outside thread and round */
	LOOP_MAX = 20000,	/* indices of a loop */
	FIB_MAX = 20,
};
static const uint64_t WATCHDOG_NS = 60ull * 1000 * 1000 * 1000;

static uint64_t seed;
static atomic_int failures;

/* The watchdog: every step, every job waited for and every phase of a round counts
 * progress; 90 s without any (an outside heist_run, loop or destroy that hangs, which
 * no timed wait guards) names what each thread was doing and aborts. */
static atomic_ulong progress;
static const char *_Atomic doing[THREADS + 1];	/* players, then main */

static void
now_doing(int who, const char *what)
{
	atomic_store(&doing[who], what);
	atomic_fetch_add(&progress, 1);
}

#define FAIL(...)                                                                     \
	do {                                                                          \
		fprintf(stderr, "stress: seed %llu: ", (unsigned long long)seed);     \
		fprintf(stderr, __VA_ARGS__);                                         \
		fputc('\n', stderr);                                                  \
		atomic_fetch_add(&failures, 1);                                       \
	} while (0)

static uint64_t
rnd(uint64_t *s)
{
	/* splitmix64: each thread and each job has its own stream from the seed. */
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static unsigned
pick(uint64_t *s, unsigned n)
{
	return (unsigned)(rnd(s) % n);
}

static void
nap_us(unsigned us)
{
	struct timespec ts = {0, (long)us * 1000};
	nanosleep(&ts, NULL);
}

/* ---- fork-join and loops, with known answers ---- */

/* Run fib(n) as fork-join (common.h's fib_spawn); 0 if the answer is right. */
static int
check_fib(int n)
{
	struct fib f = {n, 0};
	int rc = fib_spawn(&f);
	return rc ? rc : f.r == fib_serial(n) ? 0 : -100;
}

struct visits {
	atomic_uchar *seen;
	size_t n;
};

static int
visit_body(void *arg, size_t b, size_t e)
{
	struct visits *v = arg;
	for (size_t i = b; i < e; i++)
		atomic_fetch_add_explicit(&v->seen[i], 1, memory_order_relaxed);
	return 0;
}

/* A loop over n indices on pool, from wherever we are; 0 if each ran exactly once. */
static int
check_loop(heist_pool *pool, size_t n, size_t grain)
{
	struct visits v = {calloc(n ? n : 1, 1), n};
	if (!v.seen)
		return 0;	/* no memory: nothing to check */
	int rc = heist_for_each(pool, 0, n, grain, visit_body, &v);
	if (rc == 0)
		for (size_t i = 0; i < n; i++)
			if (atomic_load_explicit(&v.seen[i], memory_order_relaxed) != 1)
				rc = -101;
	free(v.seen);
	return rc == ESHUTDOWN ? 0 : rc;
}

/* A reduction of [0, n) on pool, either form, from wherever we are; 0 if its sum of
 * i * i is exact. */
static int
sum_body(void *arg, void *acc, size_t b, size_t e)
{
	(void)arg;
	for (size_t i = b; i < e; i++)
		*(uint64_t *)acc += (uint64_t)i * i;
	return 0;
}

static void
sum_combine(void *arg, void *into, const void *from)
{
	(void)arg;
	*(uint64_t *)into += *(const uint64_t *)from;
}

static int
check_reduce(heist_pool *pool, size_t n, size_t grain, bool deterministic)
{
	uint64_t s = 0, want = 0;
	for (size_t i = 0; i < n; i++)
		want += (uint64_t)i * i;
	int rc = (deterministic ? heist_reduce_deterministic : heist_reduce)(
		pool, 0, n, grain, &s, sizeof s, NULL, sum_body, sum_combine, NULL);
	if (rc == 0 && s != want)
		rc = -105;
	return rc == ESHUTDOWN ? 0 : rc;
}

/* ---- the jobs ---- */

enum kind {
	K_FIB, K_LOOP, K_WAIT, K_NEST, K_NAP, K_OTHER_LOOP, K_REDUCE, K_CHAIN, K_POLL, KINDS
};

struct round {
	heist_pool *pool[2];
	bool spares[2];			/* the pool has the default max_spares */
	atomic_long fired, ran_fired;	/* fire-and-forget: accepted, and run */
};

static int nested_fib(void *arg);

/* A chain of waits across the two pools: each link enters the other pool through
 * heist_run and returns its child's result + 1, so the first returns the depth. */
struct link {
	struct round *round;
	int pool, left;
};

static int
chain_link(void *arg)
{
	const struct link *l = arg;
	if (l->left == 0)
		return 0;
	struct link next = {l->round, !l->pool, l->left - 1};
	int r = heist_run(l->round->pool[next.pool], chain_link, &next);
	if (r == ESHUTDOWN)
		return -1000;
	return r < 0 ? r : r + 1;
}

/* Submit a job to pool and poll it with timed waits of step_us until it is done. */
static int
poll_nested(heist_pool *pool, int n, unsigned step_us)
{
	heist_future *f;
	int err = heist_submit_copy(pool, nested_fib, &n, sizeof(n), &f);
	if (err)
		return err == ESHUTDOWN ? 0 : -106;
	while (!heist_future_wait_for(f, (uint64_t)step_us * 1000))
		;
	int v = heist_future_wait(f);
	heist_future_release(f);
	return v;
}

struct job {
	struct round *round;
	int pool;			/* 0 or 1 */
	enum kind kind;
	uint64_t rng;
	struct job *dep;		/* K_WAIT: an earlier job, or NULL */
	heist_future *f;
	bool cancelled;			/* the submitter cancelled it */
	atomic_int runs;
};

static int
nested_fib(void *arg)
{
	return check_fib(*(int *)arg);
}

static int
job_body(void *arg)
{
	struct job *j = arg;
	struct round *r = j->round;
	heist_pool *own = r->pool[j->pool], *other = r->pool[!j->pool];
	atomic_fetch_add(&j->runs, 1);
	switch (j->kind) {
	case K_FIB:
		return check_fib((int)pick(&j->rng, FIB_MAX));
	case K_LOOP:
		return check_loop(own, pick(&j->rng, LOOP_MAX), pick(&j->rng, 64));
	case K_OTHER_LOOP:	/* pool 0 only: see the top of the file */
		return check_loop(j->pool ? own : other, pick(&j->rng, LOOP_MAX / 4), 0);
	case K_WAIT: {
		if (!j->dep)
			return 0;
		if (pick(&j->rng, 2))
			heist_future_wait_for(j->dep->f, pick(&j->rng, 200) * 1000);
		int v = heist_future_wait(j->dep->f);
		return v == 0 || v == ECANCELED ? 0 : -102;
	}
	case K_NEST: {
		int n = (int)pick(&j->rng, FIB_MAX);
		heist_future *f;
		heist_pool *to = j->pool == 0 && pick(&j->rng, 2) ? other : own;
		int err = heist_submit_copy(to, nested_fib, &n, sizeof(n), &f);
		if (err)
			return err == ESHUTDOWN ? 0 : -103;
		int v = heist_future_wait(f);
		heist_future_release(f);
		return v;
	}
	case K_NAP:
		nap_us(pick(&j->rng, 300));
		return 0;
	case K_REDUCE:
		return check_reduce(own, pick(&j->rng, LOOP_MAX), pick(&j->rng, 64),
				    pick(&j->rng, 2));
	case K_CHAIN: {	/* submitted only when both pools have spares (submit_job) */
		int depth = (int)pick(&j->rng, 40) + 1;
		struct link first = {r, !j->pool, depth - 1};
		int v = heist_run(other, chain_link, &first);
		return v == depth - 1 ? 0 : v < 0 ? v : -107;
	}
	case K_POLL:	/* submitted only when the pool has spares */
		return poll_nested(own, (int)pick(&j->rng, FIB_MAX), 1 + pick(&j->rng, 50));
	default:
		return -104;
	}
}

static int
fired_body(void *arg)
{
	struct round *r = arg;
	int rc = check_fib(10);
	atomic_fetch_add(&r->ran_fired, 1);
	return rc;
}

/* ---- the outside threads ---- */

struct player {
	struct round *round;
	int id;				/* its slot in doing[] */
	uint64_t rng;
	struct job jobs[JOBS];
	unsigned njobs;
};

static void
submit_job(struct player *p)
{
	if (p->njobs == JOBS)
		return;
	struct job *j = &p->jobs[p->njobs];
	*j = (struct job){.round = p->round, .pool = (int)pick(&p->rng, 2),
			  .kind = (enum kind)pick(&p->rng, KINDS), .rng = rnd(&p->rng)};
	if (j->kind == K_WAIT && p->njobs) {
		j->dep = &p->jobs[pick(&p->rng, p->njobs)];
		if (j->pool == 1 && j->dep->pool == 0)
			j->dep = NULL;	/* pool 1 never waits for pool 0 */
	}
	/* Chains need a stand-in per pool where they meet other waits across pools,
	 * polls one per poller (the theorem's C): only where spares may be had. */
	struct round *r = p->round;
	if ((j->kind == K_CHAIN && !(r->spares[0] && r->spares[1])) ||
	    (j->kind == K_POLL && !r->spares[j->pool]))
		j->kind = K_FIB;
	int err = heist_submit(p->round->pool[j->pool], job_body, j, &j->f);
	if (err) {
		FAIL("submit: %s", strerror(err));
		return;
	}
	p->njobs++;
}

static void
step(struct player *p)
{
	struct round *r = p->round;
	now_doing(p->id, "a step");
	switch (pick(&p->rng, 8)) {
	case 0:
	case 1:
	case 2:
		submit_job(p);
		break;
	case 3:	/* cancel one */
		if (p->njobs) {
			struct job *j = &p->jobs[pick(&p->rng, p->njobs)];
			heist_future_cancel(j->f);
			j->cancelled = true;
		}
		break;
	case 4:	/* a bounded wait for one */
		if (p->njobs)
			heist_future_wait_for(p->jobs[pick(&p->rng, p->njobs)].f,
					      pick(&p->rng, 500) * 1000);
		break;
	case 5: {	/* a loop or a reduction from outside: the guest slot, or heist_run */
		heist_pool *pool = r->pool[pick(&p->rng, 2)];
		size_t n = pick(&p->rng, LOOP_MAX);
		now_doing(p->id, "a loop or reduction from outside");
		int rc = pick(&p->rng, 4) ? check_loop(pool, n, 0)
					  : check_reduce(pool, n, 0, pick(&p->rng, 2));
		if (rc)
			FAIL("outside loop or reduce: %d", rc);
		break;
	}
	case 6: {	/* fork-join entered from outside */
		int n = (int)pick(&p->rng, FIB_MAX);
		struct fib f = {n, 0};
		now_doing(p->id, "heist_run from outside");
		int rc = heist_run(r->pool[pick(&p->rng, 2)], fib_spawn, &f);
		if (rc || f.r != fib_serial(n))
			FAIL("heist_run fib(%d): rc %d, %ld", n, rc, f.r);
		break;
	}
	case 7:	/* fire and forget */
		if (heist_submit(r->pool[pick(&p->rng, 2)], fired_body, r, NULL) == 0)
			atomic_fetch_add(&r->fired, 1);
		break;
	}
}

static void *
player_main(void *arg)
{
	struct player *p = arg;
	for (unsigned s = 0; s < STEPS; s++)
		step(p);
	for (unsigned i = 0; i < p->njobs; i++) {
		struct job *j = &p->jobs[i];
		now_doing(p->id, "waiting for its jobs");
		if (!heist_future_wait_for(j->f, WATCHDOG_NS)) {
			FAIL("job %u (kind %d) did not finish in 60 s: deadlock", i, j->kind);
			abort();	/* nothing sensible is left to do */
		}
		int v = heist_future_wait(j->f);
		int runs = atomic_load(&j->runs);
		if (v == ECANCELED ? !j->cancelled || runs != 0 : v != 0 || runs != 1)
			FAIL("job %u (kind %d): result %d, ran %d times, cancelled %d", i,
			     j->kind, v, runs, j->cancelled);
	}
	/* Only now, with every job done: a later job's body waits on an earlier job's
	 * future, so no future may go while a job that waits on it has yet to run. */
	for (unsigned i = 0; i < p->njobs; i++)
		heist_future_release(p->jobs[i].f);
	now_doing(p->id, "done");
	return NULL;
}

static void
one_round(uint64_t *rng)
{
	struct round r = {0};
	for (int i = 0; i < 2; i++) {
		static const unsigned spares[] = {0, 1, HEIST_SPARES_NONE};
		struct heist_config cfg = {.threads = 1 + pick(rng, 3),
					   .max_spares = spares[pick(rng, 3)],
					   .spin = pick(rng, 2) ? 0 : 16};
		r.spares[i] = cfg.max_spares == 0;
		int err = heist_pool_create(&r.pool[i], &cfg);
		if (err) {
			FAIL("pool create: %s", strerror(err));
			return;
		}
	}
	struct player *p = calloc(THREADS, sizeof(*p));
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++) {
		p[i].round = &r;
		p[i].id = i;
		p[i].rng = rnd(rng);
		if (pthread_create(&th[i], NULL, player_main, &p[i]))
			FAIL("pthread_create");
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	/* Some fire-and-forget work is still queued: destroy drains it. */
	for (int i = 0; i < 8; i++)
		if (heist_submit(r.pool[i % 2], fired_body, &r, NULL) == 0)
			atomic_fetch_add(&r.fired, 1);
	int first = (int)pick(rng, 2);
	now_doing(THREADS, "destroying the first pool");
	heist_pool_destroy(r.pool[first]);
	now_doing(THREADS, "destroying the second pool");
	heist_pool_destroy(r.pool[!first]);
	now_doing(THREADS, "between rounds");
	if (atomic_load(&r.ran_fired) != atomic_load(&r.fired))
		FAIL("fire-and-forget: %ld accepted, %ld ran", atomic_load(&r.fired),
		     atomic_load(&r.ran_fired));
	free(p);
}

static void *
watchdog_main(void *arg)
{
	(void)arg;
	unsigned long seen = atomic_load(&progress);
	for (int still = 0;; still++) {
		nap_us(1000 * 1000 - 1);
		unsigned long now = atomic_load(&progress);
		if (now != seen) {
			seen = now;
			still = -1;
			continue;
		}
		if (still < 90)
			continue;
		FAIL("no progress in 90 s: a hang");
		for (int i = 0; i <= THREADS; i++) {
			const char *what = atomic_load(&doing[i]);
			fprintf(stderr, "stress:   %s %d: %s\n", i < THREADS ? "player" : "main",
				i, what ? what : "not started");
		}
		abort();
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	long rounds = 0;
	double seconds = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	seed = (uint64_t)t0.tv_nsec ^ ((uint64_t)t0.tv_sec << 20);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else {
			fprintf(stderr, "usage: stress [--seed N] [--rounds N] [--seconds S]\n");
			return 2;
		}
	}
	if (!rounds && !seconds)
		rounds = 10;
	printf("stress: seed %llu\n", (unsigned long long)seed);
	fflush(stdout);
	uint64_t rng = seed;
	long done = 0;
	pthread_t dog;
	if (pthread_create(&dog, NULL, watchdog_main, NULL)) {
		fprintf(stderr, "stress: no watchdog thread\n");
		return 1;
	}
	pthread_detach(dog);
	for (;;) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		double el = (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9;
		if ((rounds && done >= rounds) || (seconds && el >= seconds))
			break;
		one_round(&rng);
		done++;
		if (atomic_load(&failures))
			break;
	}
	printf("stress: %ld rounds, %d failures\n", done, atomic_load(&failures));
	return atomic_load(&failures) ? 1 : 0;
}
