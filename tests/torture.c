/* SPDX-License-Identifier: MIT */
/* torture.c - the edges of a pool's life, at random (issue 43): several pools per
 * round, outside threads that submit (plain, copied, with tokens, in groups), chain
 * continuations, when_alls and dependent tasks across pools, set and break promises,
 * start timed and periodic tasks (cancelled or not, on pools about to be destroyed),
 * cancel, wait with and without timeouts, run loops, fork the process, and make
 * allocations fail; a pool of each round is destroyed while the other pools' workers
 * are still queueing continuations into it, and the rest with work still queued.
 * stress.c hammers the waits; this one, the lifetimes.
 *
 *     torture [--seed N] [--rounds N] [--seconds S]
 *
 * The seed is printed first and with any failure; `torture --seed N` replays the same
 * choices (the schedule is the machine's). Exit 0, or 1 on failure; a watchdog aborts
 * after 90 s without progress. What is checked: every call gives 0 or the error its
 * contract names (an allocation made to fail gives ENOMEM, a submit to a pool being
 * destroyed ESHUTDOWN); every job a call accepted runs exactly once, unless it was
 * cancelled first, and none that was refused runs; every future ends with its exact
 * result, ECANCELED or ESHUTDOWN as the case allows; a forked child finds its
 * inherited pools refusing at once and exits cleanly. Under sanitizers, any access to
 * freed memory or race is theirs to report. The program's waits form no cycle: a job
 * waits only for jobs of pools made before its own (pool i waits on pools < i). */
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
#if !defined(_WIN32)
#include <sys/wait.h>
#endif
#include <time.h>
#include <unistd.h>

#include "common.h"	/* fib_spawn, fib_serial */
#include "faults.h"

/* ThreadSanitizer stops a child that a multithreaded process forked when it starts
 * threads; the child here starts none, and tells TSan not to mind the fork. */
const char *__tsan_default_options(void);
const char *
__tsan_default_options(void)
{
	return "die_after_fork=0";
}

enum {
	POOLS = 3,		/* per round: pool 2 is the one destroyed mid-round */
	DOOMED = POOLS - 1,
	PLAYERS = 3,		/* outside threads per round */
	JOBS = 200,		/* jobs with futures per player and round */
	STEPS = 400,		/* operations per player and round */
	FIB_MAX = 18,
};

static uint64_t seed;
static atomic_int failures;
static atomic_ulong progress;

#define FAIL(...)                                                                     \
	do {                                                                          \
		fprintf(stderr, "torture: seed %llu: ", (unsigned long long)seed);    \
		fprintf(stderr, __VA_ARGS__);                                         \
		fputc('\n', stderr);                                                  \
		atomic_fetch_add(&failures, 1);                                       \
	} while (0)

static uint64_t
rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);	/* splitmix64 */
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static unsigned
pick(uint64_t *s, unsigned n)
{
	return (unsigned)(rnd(s) % n);
}

/* ---- a round's shared state ---- */

struct round {
	heist_pool *pool[POOLS];
	/* Outside calls on the doomed pool count themselves in here, and stop once
	 * it is closing: destroy begins when none is inside (its continuations from
	 * other pools' workers are what races with it). */
	atomic_int doomed_users;
	atomic_bool doomed_closing;
	atomic_long fired, ran_fired;	/* fire-and-forget: accepted, ran */
	atomic_bool signal_ran;		/* the doomed pool ran the signal: destroy it */
	heist_cancel *token;		/* shared by the cancellable submits */
};

struct job {
	struct round *round;
	heist_future *f;
	int pool;
	int value;		/* what its task returns */
	atomic_int runs;
	bool cancelled;		/* its future, or the round's token */
	bool tokened;
};

struct player {
	struct round *round;
	int id;
	unsigned doom_step;	/* player 0: when it dooms the doomed pool */
	uint64_t rng;
	struct job jobs[JOBS];
	unsigned njobs;
	heist_future *derived[JOBS];	/* continuations and when_alls */
	int derived_kind[JOBS];		/* 0: then; 1: when_all on DOOMED; 2: then of that;
					   3, 4: dependent task on DOOMED, run anyway or not */
	unsigned nderived;
};

static int
job_body(void *arg)
{
	struct job *j = arg;
	atomic_fetch_add(&j->runs, 1);
	atomic_fetch_add(&progress, 1);
	if (j->value % 3 == 0) {
		struct fib f = {j->value % FIB_MAX, 0};
		if (fib_spawn(&f) || f.r != fib_serial(j->value % FIB_MAX))
			return -1;
	}
	return j->value;
}

static int
copied_body(void *arg)
{
	return job_body(*(struct job **)arg);
}

static int
fired_body(void *arg)
{
	atomic_fetch_add(&((struct round *)arg)->ran_fired, 1);
	return 0;
}

static int
ret_zero(void *arg)
{
	(void)arg;
	return 0;
}

static int
ret_value(void *arg)
{
	return (int)(intptr_t)arg;
}

/* The doomed pool, for one outside call, or NULL once it is closing. */
static heist_pool *
use_doomed(struct round *r)
{
	atomic_fetch_add(&r->doomed_users, 1);	/* seq_cst: against closing */
	if (atomic_load(&r->doomed_closing)) {
		atomic_fetch_sub(&r->doomed_users, 1);
		return NULL;
	}
	return r->pool[DOOMED];
}

static void
done_with_doomed(struct round *r)
{
	atomic_fetch_sub(&r->doomed_users, 1);
}

static int
signal_body(void *arg)
{
	atomic_store(&((struct round *)arg)->signal_ran, true);
	return 0;
}

/* Player 0, once a round: close the doomed pool to the other players, and submit
 * the task whose run tells the main thread to destroy it at once, while this thread
 * may still be inside that submit, waking a worker (the other half of issue 43's
 * shape; the contract allows it: the submit began before the destroy). */
static void
doom(struct round *r)
{
	atomic_store(&r->doomed_closing, true);
	while (atomic_load(&r->doomed_users))
		sched_yield();
	int err = heist_submit(r->pool[DOOMED], signal_body, r, NULL);
	if (err) {
		FAIL("the signal's submit: %s", strerror(err));
		atomic_store(&r->signal_ran, true);	/* let the round go on */
	}
}

/* ---- the players' operations ---- */

static void
submit_one(struct player *p)
{
	struct round *r = p->round;
	if (p->njobs == JOBS)
		return;
	struct job *j = &p->jobs[p->njobs];
	*j = (struct job){.round = r, .pool = (int)pick(&p->rng, DOOMED),
			  .value = 1000 + (int)pick(&p->rng, 1000)};	/* no errno value */
	int err;
	switch (pick(&p->rng, 4)) {
	case 0:
		err = heist_submit(r->pool[j->pool], job_body, j, &j->f);
		break;
	case 3:	/* high or low: the pool's other queues */
		err = heist_submit_priority(r->pool[j->pool],
					    pick(&p->rng, 2) ? HEIST_PRIORITY_HIGH
							     : HEIST_PRIORITY_LOW,
					    job_body, j, &j->f);
		break;
	case 1: {	/* the copy holds the job's address */
		struct job *copy = j;
		err = heist_submit_copy(r->pool[j->pool], copied_body, &copy, sizeof(copy),
					&j->f);
		break;
	}
	default:
		j->tokened = true;
		err = heist_submit_cancellable(r->pool[j->pool], r->token, job_body, j, &j->f);
		break;
	}
	if (err) {
		FAIL("submit to pool %d: %s", j->pool, strerror(err));
		return;
	}
	p->njobs++;
}

/* A continuation of one of our futures on its own pool, or a when_all on the doomed
 * pool over some of them: queued, when their inputs end, by the threads that end
 * them, possibly while the doomed pool is being destroyed. */
static void
derive(struct player *p)
{
	struct round *r = p->round;
	if (!p->njobs || p->nderived == JOBS)
		return;
	heist_future *out = NULL;
	int err, kind = (int)pick(&p->rng, 3);
	if (kind == 2) {
		/* A dependent task on the doomed pool of 1-5 of our futures (a table in a
		 * record up to 3, from malloc beyond): run anyway (kind 3), or ended by
		 * its first input's nonzero value (kind 4; every job's is nonzero). */
		heist_pool *d = use_doomed(r);
		if (!d)
			return;
		heist_future *in[5];
		unsigned n = 1 + pick(&p->rng, 5);
		for (unsigned i = 0; i < n; i++)
			in[i] = p->jobs[pick(&p->rng, p->njobs)].f;
		kind = 3 + (int)pick(&p->rng, 2);
		struct heist_after opt = {.flags = kind == 3 ? HEIST_AFTER_ALWAYS : 0};
		err = heist_submit_after(d, in, n, ret_value, (void *)(intptr_t)7, &opt, &out);
		done_with_doomed(r);
		if (err == ESHUTDOWN)
			return;	/* its inputs were done, and the pool going */
	} else if (kind == 0) {
		struct job *j = &p->jobs[pick(&p->rng, p->njobs)];
		err = heist_future_then(j->f, ret_value, (void *)(intptr_t)7, &out);
	} else {
		/* A continuation on the doomed pool of a when_all there: queued into
		 * it by whichever thread ends the when_all's last input, a worker of
		 * another pool (issue 43's shape), maybe while it is destroyed. */
		if (p->nderived + 2 > JOBS)
			return;
		heist_pool *d = use_doomed(r);
		if (!d)
			return;
		heist_future *in[3], *all;
		unsigned n = 1 + pick(&p->rng, 3);
		for (unsigned i = 0; i < n; i++)
			in[i] = p->jobs[pick(&p->rng, p->njobs)].f;
		err = heist_when_all(d, in, n, &all);
		if (!err) {
			p->derived_kind[p->nderived] = 1;
			p->derived[p->nderived++] = all;
			err = heist_future_then(all, ret_value, (void *)(intptr_t)7, &out);
			kind = 2;
		}
		done_with_doomed(r);
	}
	if (err) {
		FAIL("derive kind %d: %s", kind, strerror(err));
		return;
	}
	p->derived_kind[p->nderived] = kind;
	p->derived[p->nderived++] = out;
}

/* Make this thread's allocations fail for one call: the call says ENOMEM and
 * accepts nothing, or succeeds without allocating. */
static void
starve(struct player *p)
{
	struct round *r = p->round;
	heist_pool *pool = r->pool[pick(&p->rng, DOOMED)];
	char big[256] = {0};	/* more than a job record holds: a heap copy */
	/* faults.c has one switch per kind: one player starves at a time (the others
	 * allocate normally meanwhile; the switch watches only this thread). */
	static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&one_at_a_time);
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	heist_future *f = SENTINEL;
	int err;
	switch (pick(&p->rng, 4)) {
	case 0:
		err = heist_submit_copy(pool, ret_zero, big, sizeof(big), &f);
		break;
	case 1: {
		heist_group *g = SENTINEL;
		err = heist_group_create(pool, &g);
		if (!err)
			heist_group_destroy(g);
		else if (g != NULL)
			FAIL("group_create failed with %d but left its out-parameter", err);
		f = NULL;
		break;
	}
	case 2: {
		heist_pool *np = SENTINEL;
		err = heist_pool_create(&np, &(struct heist_config){.threads = 1});
		if (!err)
			heist_pool_destroy(np);
		else if (np != NULL)
			FAIL("pool_create failed with %d but left its out-parameter", err);
		f = NULL;
		break;
	}
	default:
		err = heist_submit(pool, ret_value, NULL, &f);
		break;
	}
	fault_disarm(FAULT_ALLOC);
	pthread_mutex_unlock(&one_at_a_time);
	if (err && err != ENOMEM && err != EAGAIN)
		FAIL("a starved call gave %s", strerror(err));
	if (err && f != NULL)
		FAIL("a failed submit left its future");
	if (!err && f) {
		int v = heist_future_wait(f);
		if (v != 0)
			FAIL("a starved submit's task gave %d", v);
		heist_future_release(f);
	}
}

/* fork(): the child checks that its inherited pools refuse at once, then exits.
 * Without fork (Windows) the step does nothing, as main() says at the start. */
static void
fork_and_check(struct player *p)
{
#if defined(TEST_NO_FORK)
	(void)p;
#else
	struct round *r = p->round;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return;	/* no process to spare: nothing to check */
	if (pid == 0) {
		int bad = 0;
		for (int i = 0; i < DOOMED; i++) {
			heist_future *f = SENTINEL;
			bad |= heist_submit(r->pool[i], ret_value, NULL, &f) != ESHUTDOWN ||
			       f != NULL;
			bad |= (heist_pool_wait_idle(r->pool[i]) != ESHUTDOWN) << 1;
		}
		for (unsigned i = 0; i < p->njobs; i++) {
			int v = heist_future_wait(p->jobs[i].f);
			/* Done before the fork: its result; else refused at once. */
			bad |= (v != p->jobs[i].value && v != ESHUTDOWN && v != ECANCELED &&
				v != -1) << 2;
		}
		_exit(bad);
	}
	int status;
	bool ok;
	POLL(ok, waitpid(pid, &status, WNOHANG) == pid);
	if (!ok)
		FAIL("a forked child hung");
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		FAIL("a forked child failed: status %#x", status);
#endif
}

/* The operations, and how many of 40 draws pick each. */
enum op { SUBMIT, DERIVE, CANCEL, TIMED_WAIT, FIRE, GROUP, RUN, STARVE, FORK, TOKEN, GRAPH,
	  PROMISE, TIMER, OPS };
static const unsigned char weight[OPS] = {8, 6, 3, 3, 4, 3, 2, 4, 1, 2, 2, 1, 1};

static enum op
draw(uint64_t *rng)
{
	unsigned x = pick(rng, 40);
	enum op o = SUBMIT;
	while (x >= weight[o])
		x -= weight[o++];
	return o;
}

static void
fire(struct round *r, unsigned i)
{
	heist_pool *pool = i == DOOMED ? use_doomed(r) : r->pool[i];
	if (!pool)
		return;
	int err = heist_submit(pool, fired_body, r, NULL);
	if (i == DOOMED)
		done_with_doomed(r);
	if (!err)
		atomic_fetch_add(&r->fired, 1);
	else if (err != ESHUTDOWN || i != DOOMED)
		FAIL("fire-and-forget to pool %u: %s", i, strerror(err));
}

static void
group_round(heist_pool *pool, unsigned n)
{
	heist_group *g;
	if (heist_group_create(pool, &g)) {
		FAIL("group_create");
		return;
	}
	for (unsigned i = 0; i < n; i++)
		if (heist_group_submit(g, ret_value, (void *)(intptr_t)(i == 7 ? 9 : 0)))
			FAIL("group_submit");
	int v = heist_group_wait(g);
	if (v != (n > 7 ? 9 : 0))
		FAIL("group of %u: %d", n, v);
	heist_group_destroy(g);
}

/* A graph of 1-8 nodes, one of which may fail, run twice on one pool, the doomed one
 * too (ESHUTDOWN once it closes): the first run's future is waited for, maybe after
 * the pool is destroyed; the second run has none, and the graph's destroy waits for
 * it. */
static void
graph_round(struct player *p)
{
	struct round *r = p->round;
	heist_graph *g;
	heist_graph_node *n[8];
	unsigned k = 1 + pick(&p->rng, 8), failing = pick(&p->rng, 12);
	unsigned pool_i = pick(&p->rng, POOLS);
	if (heist_graph_create(&g)) {
		FAIL("graph_create");
		return;
	}
	for (unsigned u = 0; u < k; u++) {
		void *ret = (void *)(intptr_t)(u == failing ? 9 : 0);
		if (heist_graph_add_task(g, ret_value, ret, &n[u]) ||
		    (u && heist_graph_edge(n[pick(&p->rng, u)], n[u])))
			FAIL("graph_add_task or graph_edge");
	}
	heist_pool *pool = pool_i == DOOMED ? use_doomed(r) : r->pool[pool_i];
	if (!pool) {
		heist_graph_destroy(g);
		return;
	}
	heist_future *f = NULL;
	int err = heist_graph_run(pool, g, NULL, &f);
	if (!err)
		err = heist_graph_run(pool, g, NULL, NULL);
	if (pool_i == DOOMED)
		done_with_doomed(r);
	if (err)
		FAIL("graph_run on pool %u: %s", pool_i, strerror(err));
	if (f) {
		int v = heist_future_wait(f);
		if (v != (failing < k ? 9 : 0))
			FAIL("graph of %u nodes, failing %u: %d", k, failing, v);
		heist_future_release(f);
	}
	heist_graph_destroy(g);
}

static int
wait_promised(void *arg)
{
	return heist_future_wait(arg);
}

/* A promise of a random pool (the doomed one too), with a continuation and a task of
 * another pool that wait on it, then set from this thread (at once or after a nap)
 * or released unset (broken). The waiter gives what it was set to, or ECANCELED; the
 * continuation 5, ESHUTDOWN (its pool closed first) or ECANCELED (broken: it never
 * runs). The setter is this thread, so no pool's wait can be behind it. */
static void
promise_round(struct player *p)
{
	struct round *r = p->round;
	unsigned pool_i = pick(&p->rng, POOLS), waiter_i = pick(&p->rng, DOOMED);
	bool broken = pick(&p->rng, 4) == 0, late = pick(&p->rng, 2);
	heist_pool *pool = pool_i == DOOMED ? use_doomed(r) : r->pool[pool_i];
	if (!pool)
		return;
	heist_promise *pr;
	heist_future *f, *then = NULL, *waiter = NULL;
	int err = heist_promise_create(pool, &pr, &f);
	if (pool_i == DOOMED)
		done_with_doomed(r);
	if (err) {
		FAIL("promise_create: %s", strerror(err));
		return;
	}
	if (heist_future_then(f, ret_value, (void *)(intptr_t)5, &then) ||
	    heist_submit(r->pool[waiter_i], wait_promised, f, &waiter))
		FAIL("then or submit on a promise");
	if (late)
		nap(NAP_NS);
	if (!broken && (err = heist_promise_set(pr, 3)))
		FAIL("promise_set: %s", strerror(err));
	heist_promise_release(pr);
	int v = waiter ? heist_future_wait(waiter) : 3;
	if (v != (broken ? ECANCELED : 3))
		FAIL("a task waiting on a %s promise: %d", broken ? "broken" : "set", v);
	v = then ? heist_future_wait(then) : 5;
	if (broken ? v != ECANCELED : v != 5 && v != ESHUTDOWN)
		FAIL("a continuation of a %s promise: %d", broken ? "broken" : "set", v);
	heist_future_release(waiter);
	heist_future_release(then);
	heist_future_release(f);
}

struct ticks {
	atomic_int runs;
	int stop_at;	/* the run that returns 6 */
};

static int
tick_body(void *arg)
{
	struct ticks *t = arg;
	return atomic_fetch_add(&t->runs, 1) + 1 == t->stop_at ? 6 : 0;
}

/* A timed task of a random pool (the doomed one too), due in 0-2 ms, once or periodic
 * (every 100-400 us, ending with 6 on its 1st-4th run), maybe cancelled by its future
 * at once or after a nap, with a continuation, waited for by a task of another pool.
 * Once: 6 (it ran), ECANCELED (never ran) or ESHUTDOWN (its pool went first, never
 * ran). Periodic: the same, never more runs than stop_at, and stop_at of them for 6. */
static void
timer_round(struct player *p)
{
	struct round *r = p->round;
	unsigned pool_i = pick(&p->rng, POOLS), waiter_i = pick(&p->rng, DOOMED);
	bool periodic = pick(&p->rng, 2), cancel = pick(&p->rng, 4) == 0;
	bool late = pick(&p->rng, 2);
	/* The rule of the file: a task waits for pools below its own, or for the doomed
	 * one, whose threads never wait. A one-shot timer of its own pool too (a waiter
	 * runs it itself once due); not a periodic one, which no waiter runs (heist.h):
	 * on a pool without spares, its only worker waiting for it would wait forever. */
	if (pool_i != DOOMED && (pool_i > waiter_i || (periodic && pool_i == waiter_i))) {
		if (pool_i == waiter_i)
			pool_i = waiter_i ? 0 : DOOMED;
		else {
			unsigned x = pool_i;
			pool_i = waiter_i;
			waiter_i = x;
		}
	}
	struct ticks *t = malloc(sizeof(*t));	/* freed after the future is done */
	if (!t)
		return;
	atomic_init(&t->runs, 0);
	t->stop_at = periodic ? 1 + (int)pick(&p->rng, 4) : 1;
	struct heist_timing when = {
		.delay_ns = pick(&p->rng, 2000) * 1000,
		.period_ns = periodic ? (100 + pick(&p->rng, 300)) * 1000 : 0,
	};
	heist_pool *pool = pool_i == DOOMED ? use_doomed(r) : r->pool[pool_i];
	if (!pool) {
		free(t);
		return;
	}
	heist_future *f, *then = NULL, *waiter = NULL;
	int err = heist_submit_timed(pool, &when, tick_body, t, &f);
	if (pool_i == DOOMED)
		done_with_doomed(r);
	if (err) {
		if (err != ESHUTDOWN || pool_i != DOOMED)
			FAIL("submit_timed: %s", strerror(err));
		free(t);
		return;
	}
	if (heist_future_then(f, ret_value, (void *)(intptr_t)5, &then) ||
	    heist_submit(r->pool[waiter_i], wait_promised, f, &waiter))
		FAIL("then or submit on a timed future");
	if (cancel) {
		if (late)
			nap(NAP_NS);
		heist_future_cancel(f);
	}
	int v = waiter ? heist_future_wait(waiter) : heist_future_wait(f);
	int runs = atomic_load(&t->runs);
	if (v == 6 ? runs != t->stop_at
		   : (v != ECANCELED && v != ESHUTDOWN) || runs >= t->stop_at ||
			     (!periodic && runs))
		FAIL("a %s timer: %d after %d runs (stops at %d)", periodic ? "periodic" : "timed",
		     v, runs, t->stop_at);
	v = then ? heist_future_wait(then) : 5;
	if (v != 5 && v != ECANCELED && v != ESHUTDOWN)
		FAIL("a continuation of a timer: %d", v);
	heist_future_release(waiter);
	heist_future_release(then);
	heist_future_release(f);
	free(t);
}

static void
step(struct player *p)
{
	struct round *r = p->round;
	atomic_fetch_add(&progress, 1);
	switch (draw(&p->rng)) {
	case SUBMIT:
		submit_one(p);
		break;
	case DERIVE:
		derive(p);
		break;
	case CANCEL:
		if (p->njobs) {
			struct job *j = &p->jobs[pick(&p->rng, p->njobs)];
			heist_future_cancel(j->f);
			j->cancelled = true;
		}
		break;
	case TIMED_WAIT:
		if (p->njobs)
			heist_future_wait_for(p->jobs[pick(&p->rng, p->njobs)].f,
					      pick(&p->rng, 200) * 1000);
		break;
	case FIRE:
		fire(r, pick(&p->rng, POOLS));
		break;
	case GROUP:
		group_round(r->pool[pick(&p->rng, DOOMED)], pick(&p->rng, 20));
		break;
	case RUN: {	/* fork-join entered from outside */
		struct fib f = {(int)pick(&p->rng, FIB_MAX), 0};
		int v = heist_run(r->pool[pick(&p->rng, DOOMED)], fib_spawn, &f);
		if (v || f.r != fib_serial(f.n))
			FAIL("heist_run fib(%d): %d, %ld", f.n, v, f.r);
		break;
	}
	case STARVE:
		starve(p);
		break;
	case FORK:
		if (pick(&p->rng, 8) == 0)
			fork_and_check(p);
		break;
	case GRAPH:
		graph_round(p);
		break;
	case PROMISE:
		promise_round(p);
		break;
	case TIMER:
		timer_round(p);
		break;
	default:
		if (pick(&p->rng, 4) == 0)
			heist_cancel_request(r->token);	/* every tokened job may be skipped */
		break;
	}
}

static void
check_player(struct player *p)
{
	bool token = heist_cancel_requested(p->round->token);
	for (unsigned i = 0; i < p->njobs; i++) {
		struct job *j = &p->jobs[i];
		if (!heist_future_wait_for(j->f, LONG_WAIT_NS)) {
			FAIL("job %u did not finish: a hang", i);
			abort();
		}
		int v = heist_future_wait(j->f), runs = atomic_load(&j->runs);
		bool may_cancel = j->cancelled || (j->tokened && token);
		if (v == ECANCELED ? !may_cancel || runs != 0 : v != j->value || runs != 1)
			FAIL("job %u: result %d (want %d), ran %d times, cancelled %d", i, v,
			     j->value, runs, may_cancel);
	}
	for (unsigned i = 0; i < p->nderived; i++) {
		heist_future *f = p->derived[i];
		if (!heist_future_wait_for(f, LONG_WAIT_NS)) {
			FAIL("derived %u did not finish: a hang", i);
			abort();
		}
		int v = heist_future_wait(f);
		/* then: 7, or ECANCELED (its input cancelled); when_all: an input's
		 * value (1000..1999, -1 for a wrong fib) or ECANCELED; a continuation on the doomed pool: 7,
		 * ECANCELED, or ESHUTDOWN (the pool was gone when it became runnable). */
		int k = p->derived_kind[i];
		bool input_value = v == ECANCELED || v == -1 || (v >= 1000 && v < 2000);
		bool ok = k == 0   ? v == 7 || v == ECANCELED
			  : k == 1 ? input_value
			  : k == 2 ? v == 7 || v == ECANCELED || v == ESHUTDOWN
			  : k == 3 ? v == 7 || v == ESHUTDOWN
				   : input_value;
		if (!ok)
			FAIL("derived %u (kind %d): %d", i, p->derived_kind[i], v);
	}
	/* Only now: later derived futures name earlier ones. */
	for (unsigned i = 0; i < p->nderived; i++)
		heist_future_release(p->derived[i]);
	for (unsigned i = 0; i < p->njobs; i++)
		heist_future_release(p->jobs[i].f);
}

static void *
player_main(void *arg)
{
	struct player *p = arg;
	for (unsigned s = 0; s < STEPS; s++) {
		if (p->id == 0 && s == p->doom_step)
			doom(p->round);
		step(p);
	}
	check_player(p);
	return NULL;
}

/* The doomed pool goes as soon as the signal ran, while the others' workers may be
 * queueing continuations into it and player 0 may still be in its submit. */
static void
destroy_doomed(struct round *r)
{
	while (!atomic_load(&r->signal_ran))
		sched_yield();
	heist_pool_destroy(r->pool[DOOMED]);
	r->pool[DOOMED] = NULL;
}

static void
one_round(uint64_t *rng)
{
	struct round *r = calloc(1, sizeof(*r));
	if (!r || heist_cancel_create(&r->token)) {
		FAIL("round setup");
		free(r);
		return;
	}
	for (int i = 0; i < POOLS; i++) {
		static const unsigned spares[] = {0, 1, HEIST_SPARES_NONE};
		struct heist_config cfg = {.threads = 1 + pick(rng, 3),
					   .max_spares = spares[pick(rng, 3)],
					   .spin = pick(rng, 2) ? 0 : 16};
		if (heist_pool_create(&r->pool[i], &cfg)) {
			FAIL("pool create");
			return;
		}
	}
	struct player *p = calloc(PLAYERS, sizeof(*p));
	pthread_t th[PLAYERS];
	for (int i = 0; i < PLAYERS; i++) {
		p[i].round = r;
		p[i].id = i;
		p[i].rng = rnd(rng);
		p[i].doom_step = STEPS / 4 + pick(rng, STEPS / 2);
		if (pthread_create(&th[i], NULL, player_main, &p[i]))
			FAIL("pthread_create");
	}
	destroy_doomed(r);
	for (int i = 0; i < PLAYERS; i++)
		pthread_join(th[i], NULL);
	int first = (int)pick(rng, 2);
	heist_pool_destroy(r->pool[first]);	/* with fire-and-forget work queued */
	heist_pool_destroy(r->pool[!first]);
	if (atomic_load(&r->ran_fired) != atomic_load(&r->fired))
		FAIL("fire-and-forget: %ld accepted, %ld ran", atomic_load(&r->fired),
		     atomic_load(&r->ran_fired));
	heist_cancel_release(r->token);
	free(p);
	free(r);
}

static void *
watchdog_main(void *arg)
{
	(void)arg;
	unsigned long seen = atomic_load(&progress);
	for (int still = 0;; still++) {
		struct timespec ts = {1, 0};
		nanosleep(&ts, NULL);
		unsigned long now = atomic_load(&progress);
		if (now != seen) {
			seen = now;
			still = -1;
		} else if (still >= 90) {
			FAIL("no progress in 90 s: a hang");
			abort();
		}
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
			fprintf(stderr, "usage: torture [--seed N] [--rounds N] [--seconds S]\n");
			return 2;
		}
	}
	if (!rounds && !seconds)
		rounds = 5;
	printf("torture: seed %llu\n", (unsigned long long)seed);
#if defined(TEST_NO_FORK)
	printf("torture: fork steps skipped: this system has no fork()\n");
#endif
	fflush(stdout);
	pthread_t dog;
	if (pthread_create(&dog, NULL, watchdog_main, NULL)) {
		fprintf(stderr, "torture: no watchdog thread\n");
		return 1;
	}
	pthread_detach(dog);
	uint64_t rng = seed;
	long done = 0;
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
	printf("torture: %ld rounds, %d failures\n", done, atomic_load(&failures));
	return atomic_load(&failures) ? 1 : 0;
}
