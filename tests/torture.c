/* SPDX-License-Identifier: MIT */
/* torture.c - the edges of a pool's life, at random (issue 43): several pools per
 * round, outside threads that submit (plain, copied, with tokens, in groups), chain
 * continuations, when_alls and dependent tasks across pools, set and break promises,
 * start timed and periodic tasks (cancelled or not, on pools about to be destroyed),
 * cancel, wait with and without timeouts, run loops, fork the process, and make
 * allocations fail; a pool of each round is destroyed while the other pools' workers
 * are still queueing continuations into it, and the rest with work still queued.
 * Also: graphs built (with an allocation made to fail) and run several times, cancelled,
 * destroyed with runs in flight; dataflows whose tasks check the order their accesses
 * imply; bulk loops and reductions; on_done callbacks on every kind of future; groups
 * of dependent tasks; priorities, from outside and from tasks.
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

/* A callback of heist_future_on_done: how often it ran, with what. */
struct done_watch {
	atomic_int calls;
	atomic_int result;
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
	bool derived_cancelled[JOBS];	/* by its own future (CANCEL) */
	/* heist_future_on_done watches on those (watch_one): the result each must get,
	 * known once check_player waited for it, checked once the round is over. */
	struct done_watch *watches;	/* JOBS of them */
	heist_future *watched[JOBS];
	int watch_want[JOBS];
	unsigned nwatches;
	/* One watch's callback sets this promise of pool 0 to its result instead. */
	heist_promise *relay;
	heist_future *relay_f;
	atomic_int relay_err;
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
		struct heist_after opt = {.flags = kind == 3 ? HEIST_AFTER_ALWAYS : 0,
					  .priority = (int)pick(&p->rng, 3) - 1};
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

/* faults.c has one allocation switch for the process: one thread arms it at a time
 * (starve() and the operations below that make allocations fail). */
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

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
	pthread_mutex_lock(&fault_lock);
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
	pthread_mutex_unlock(&fault_lock);
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
	  PROMISE, TIMER, GRAPH_LIFE, DATAFLOW, BULK, REDUCE, WATCH, GROUP_AFTER, NEST, OPS };
static const unsigned char weight[OPS] = {8, 6, 3, 3, 4, 3, 2, 4, 1, 2, 2, 1, 1,
					  2, 2, 2, 2, 3, 2, 2};

static enum op
draw(uint64_t *rng)
{
	unsigned total = 0;
	for (int o = 0; o < OPS; o++)
		total += weight[o];
	unsigned x = pick(rng, total);
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

static void
done_count(void *arg, int result)
{
	struct done_watch *d = arg;
	atomic_store(&d->result, result);
	atomic_fetch_add(&d->calls, 1);
}

/* Hang a watch on f: false if the call failed (ENOMEM, where allowed: then fn never
 * runs). */
static bool
watch(heist_future *f, struct done_watch *d, bool may_fail)
{
	atomic_init(&d->calls, 0);
	atomic_init(&d->result, -12345);
	int err = heist_future_on_done(f, done_count, d);
	if (err && !(may_fail && err == ENOMEM))
		FAIL("future_on_done: %s", strerror(err));
	return !err;
}

/* After f gave v to a waiter: its watch runs once, with v, right after the waiters
 * see f done (on the thread that made it so): a bounded poll for the call. */
static void
watch_check(struct done_watch *d, int v, const char *what)
{
	bool ok;
	POLL(ok, atomic_load(&d->calls) != 0);
	int calls = atomic_load(&d->calls), r = atomic_load(&d->result);
	if (!ok || calls != 1 || r != v)
		FAIL("on_done of %s: %d calls, result %d (the wait gave %d)", what, calls, r, v);
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
	struct done_watch dw;
	bool watched = watch(f, &dw, false);
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
	if (watched)
		watch_check(&dw, heist_future_wait(f), "a promise");
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
		.priority = (int)pick(&p->rng, 3) - 1,
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
	struct done_watch dw;
	bool watched = watch(f, &dw, false);
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
	if (watched)
		watch_check(&dw, heist_future_wait(f), "a timer");
	v = then ? heist_future_wait(then) : 5;
	if (v != 5 && v != ECANCELED && v != ESHUTDOWN)
		FAIL("a continuation of a timer: %d", v);
	heist_future_release(waiter);
	heist_future_release(then);
	heist_future_release(f);
	free(t);
}

/* ---- the later API areas: graphs, dataflow, bulk loops, reductions, on_done, groups
 * of dependent tasks, priorities. Each checks exact counts and results. ---- */


/* The pool for an outside call: pool i, or the doomed one while it is open (NULL
 * after). Undone by put_pool. */
static heist_pool *
get_pool(struct round *r, unsigned i)
{
	return i == DOOMED ? use_doomed(r) : r->pool[i];
}

static void
put_pool(struct round *r, unsigned i)
{
	if (i == DOOMED)
		done_with_doomed(r);
}

/* ---- graphs: built once (with failures injected), run several times ---- */

enum { GNODES = 10, GRUNS = 5, GLOOP = 300, GSUB = 3 };

struct glife;

struct gnode {
	struct glife *gl;
	unsigned id;
};

struct glife {
	struct gnode node[GNODES];
	atomic_int runs[GNODES];	/* a task node: its runs; a loop node: its index 0s */
	uint32_t preds[GNODES];		/* bit p: node p is a predecessor */
	unsigned first_run[GNODES];	/* the first run that holds the node */
	int kind[GNODES];		/* 0 task, 1 loop, 2 subgraph */
	unsigned n, failing;
	atomic_long loop_indices;
	atomic_int sub_runs[GSUB];
	atomic_int bad;
};

/* A node's start: every predecessor has run in this run, so it has run more often
 * than this node has (before this run). */
static void
gnode_enter(struct glife *gl, unsigned id)
{
	int mine = atomic_load(&gl->runs[id]);
	for (unsigned p = 0; p < gl->n; p++)
		if ((gl->preds[id] >> p & 1) && gl->kind[p] != 2 &&	/* uncounted */
		    atomic_load(&gl->runs[p]) <= mine)
			atomic_fetch_add(&gl->bad, 1);
	atomic_fetch_add(&gl->runs[id], 1);
	atomic_fetch_add(&progress, 1);
}

static int
gnode_task(void *arg)
{
	struct gnode *n = arg;
	gnode_enter(n->gl, n->id);
	return n->id == n->gl->failing ? 9 : 0;
}

static int
gnode_loop(void *arg, size_t begin, size_t end)
{
	struct gnode *n = arg;
	if (begin == 0)
		gnode_enter(n->gl, n->id);
	atomic_fetch_add(&n->gl->loop_indices, (long)(end - begin));
	return 0;
}

static int
gsub_task(void *arg)
{
	atomic_fetch_add((atomic_int *)arg, 1);
	return 0;
}

/* Add node u of kind k (a subgraph node runs sub); false on ENOMEM (nothing added). */
static bool
glife_add(struct glife *gl, heist_graph *g, heist_graph *sub, unsigned k,
	  heist_graph_node **out)
{
	unsigned u = gl->n;
	gl->node[u] = (struct gnode){gl, u};
	int err = k == 0   ? heist_graph_add_task(g, gnode_task, &gl->node[u], out)
		  : k == 1 ? heist_graph_add_loop(g, 0, GLOOP, 1 + u, gnode_loop, &gl->node[u],
						  out)
			   : heist_graph_add_graph(g, sub, out);
	if (err) {
		if (err != ENOMEM && err != EBUSY)
			FAIL("graph_add kind %u: %s", k, strerror(err));
		if (*out)
			FAIL("graph_add failed with %d but left its node", err);
		return false;
	}
	gl->kind[u] = (int)k;
	gl->preds[u] = 0;
	gl->n++;
	return true;
}

/* One graph of up to GNODES nodes (tasks, loops, a subgraph of GSUB chained tasks),
 * random edges forward, one task that may fail; built with one allocation of this
 * thread made to fail at random (or none), then run GRUNS times at most, on random
 * pools (the doomed one too), each with a token requested before or after the call,
 * or its future cancelled, or no future at all; a node added between runs is refused
 * (EBUSY) while a run is pending; the graph destroyed with runs in flight. Checks:
 * every call gives 0 or the error it may; a run gives 0, 9 (its failing node ran),
 * ECANCELED only if cancelled, ESHUTDOWN only on the doomed pool; every node starts
 * after its predecessors; each node ran at least once per run that gave 0 and at most
 * once per run that could have run it. */
static void
graph_life(struct player *p)
{
	struct round *r = p->round;
	struct glife *gl = calloc(1, sizeof(*gl));
	if (!gl)
		return;
	bool faults = pick(&p->rng, 3) == 0;
	unsigned k = 1 + pick(&p->rng, GNODES - 2);
	gl->failing = pick(&p->rng, 3) == 0 ? pick(&p->rng, k) : GNODES;
	heist_graph *g = SENTINEL, *sub = SENTINEL;
	bool has_sub = false;
	heist_graph_node *nodes[GNODES], *sn[GSUB];
	if (faults) {
		pthread_mutex_lock(&fault_lock);
		fault_fail_nth(FAULT_ALLOC, pick(&p->rng, 24), FAULT_THIS_THREAD);
	}
	int err = heist_graph_create(&sub);
	if (err) {
		if (err != ENOMEM || sub)
			FAIL("graph_create: %s, out %p", strerror(err), (void *)sub);
		sub = NULL;
	}
	for (unsigned i = 0; sub && i < GSUB; i++) {
		err = heist_graph_add_task(sub, gsub_task, &gl->sub_runs[i], &sn[i]);
		if (!err && i)
			err = heist_graph_edge(sn[i - 1], sn[i]);
		if (err) {	/* a subgraph that could not be built whole is not used */
			if (err != ENOMEM)
				FAIL("subgraph build: %s", strerror(err));
			heist_graph_destroy(sub);
			sub = NULL;
		}
	}
	err = heist_graph_create(&g);
	if (err) {
		if (err != ENOMEM || g)
			FAIL("graph_create: %s, out %p", strerror(err), (void *)g);
		if (faults) {
			fault_disarm(FAULT_ALLOC);
			pthread_mutex_unlock(&fault_lock);
		}
		heist_graph_destroy(sub);
		free(gl);
		return;
	}
	for (unsigned u = 0; u < k; u++) {
		unsigned kind = pick(&p->rng, 6);
		kind = kind < 4 || (kind == 5 && (!sub || has_sub)) ? 0 : kind - 3;
		if (u == gl->failing)
			kind = 0;
		has_sub |= kind == 2;	/* one use: two unordered ones could give EBUSY */
		heist_graph_node *nd = SENTINEL;
		if (!glife_add(gl, g, sub, kind, &nd)) {
			if (u == gl->failing)
				gl->failing = GNODES;
			continue;
		}
		unsigned id = gl->n - 1;
		nodes[id] = nd;
		gl->node[id].id = id;
		if (gl->failing == u)
			gl->failing = id;
		for (unsigned e = pick(&p->rng, 3); id && e; e--) {
			unsigned before = pick(&p->rng, id);
			err = heist_graph_edge(nodes[before], nd);
			if (!err)
				gl->preds[id] |= 1u << before;
			else if (err != ENOMEM)
				FAIL("graph_edge: %s", strerror(err));
		}
	}
	if (gl->failing != GNODES && gl->failing >= gl->n)
		gl->failing = GNODES;
	/* Misuse the contract names: EINVAL, nothing added. */
	if (gl->n >= 2 && heist_graph_edge(nodes[0], nodes[0]) != EINVAL)
		FAIL("graph_edge of a node to itself");
	if (heist_graph_add_graph(g, g, NULL) != EINVAL)
		FAIL("a graph held itself");
	for (unsigned u = 0; u < gl->n; u++)
		if (gl->kind[u] == 2 && heist_graph_add_graph(sub, g, NULL) != EINVAL)
			FAIL("a graph held a graph that holds it");

	heist_future *f[GRUNS];
	int want_cancel[GRUNS], res[GRUNS];
	unsigned pool_of[GRUNS];
	heist_cancel *tok[GRUNS];
	struct done_watch dw[GRUNS];
	bool watched[GRUNS];
	unsigned nruns = 1 + pick(&p->rng, GRUNS);
	for (unsigned i = 0; i < nruns; i++) {
		f[i] = NULL;
		tok[i] = NULL;
		want_cancel[i] = 0;
		watched[i] = false;
		res[i] = -1;	/* unknown: no future, or the call failed */
		pool_of[i] = pick(&p->rng, POOLS);
		unsigned how = pick(&p->rng, 6);	/* 0 token before, 1 after, 2 cancel */
		bool keep = how != 5;
		if ((how == 0 || how == 1) && (err = heist_cancel_create(&tok[i]))) {
			if (err != ENOMEM)
				FAIL("cancel_create: %s", strerror(err));
			tok[i] = NULL;
		}
		if (how == 0 && tok[i])
			heist_cancel_request(tok[i]);
		heist_pool *pool = get_pool(r, pool_of[i]);
		if (!pool) {
			heist_cancel_release(tok[i]);
			tok[i] = NULL;
			res[i] = -2;	/* not run */
			continue;
		}
		heist_future *out = SENTINEL;
		err = heist_graph_run(pool, g, tok[i], keep ? &out : NULL);
		put_pool(r, pool_of[i]);
		if (err) {
			if (err != ENOMEM || (keep && out))
				FAIL("graph_run: %s", strerror(err));
			res[i] = -2;
			heist_cancel_release(tok[i]);
			tok[i] = NULL;
			continue;
		}
		if (keep) {
			f[i] = out;
			watched[i] = watch(out, &dw[i], faults);
		}
		if (tok[i]) {
			want_cancel[i] = 1;
			if (how == 1)
				heist_cancel_request(tok[i]);
			heist_cancel_release(tok[i]);
		}
		if (how == 2 && f[i]) {
			heist_future_cancel(f[i]);
			want_cancel[i] = 1;
		}
		/* A node more: refused while a run is pending, else part of the later
		 * runs. */
		if (gl->n < GNODES && pick(&p->rng, 3) == 0) {
			heist_graph_node *nd = SENTINEL;
			if (glife_add(gl, g, sub, 0, &nd)) {
				nodes[gl->n - 1] = nd;
				gl->first_run[gl->n - 1] = i + 1;
			}
		}
	}
	if (faults) {
		fault_disarm(FAULT_ALLOC);
		pthread_mutex_unlock(&fault_lock);
	}
	bool early = pick(&p->rng, 2);
	if (early)
		heist_graph_destroy(g);	/* runs in flight: it waits for them */
	for (unsigned i = 0; i < nruns; i++) {
		if (!f[i])
			continue;
		if (!heist_future_wait_for(f[i], LONG_WAIT_NS)) {
			FAIL("graph run %u did not finish: a hang", i);
			abort();
		}
		int v = res[i] = heist_future_wait(f[i]);
		bool fails = gl->failing < gl->n && gl->first_run[gl->failing] <= i;
		bool ok = v == (fails ? 9 : 0) || (v == ECANCELED && want_cancel[i]) ||
			  (v == ESHUTDOWN && pool_of[i] == DOOMED);
		if (!ok)
			FAIL("graph run %u of %u nodes (failing %u, cancel %d, pool %u): %d", i,
			     gl->n, gl->failing, want_cancel[i], pool_of[i], v);
		if (watched[i])
			watch_check(&dw[i], v, "a graph run");
		heist_future_release(f[i]);
	}
	if (!early)
		heist_graph_destroy(g);	/* after its runs' futures: the runs it waits for */
	/* Every run is over: count. */
	for (unsigned u = 0; u < gl->n; u++) {
		int lo = 0, hi = 0, runs = atomic_load(&gl->runs[u]);
		for (unsigned i = gl->first_run[u]; i < nruns; i++) {
			lo += res[i] == 0 || (res[i] == 9 && u == gl->failing);
			hi += res[i] != -2 && res[i] != ESHUTDOWN;
		}
		if (gl->kind[u] == 2)
			continue;	/* counted through its subgraph */
		if (runs < lo || runs > hi)
			FAIL("graph node %u (kind %d) ran %d times, want %d..%d", u, gl->kind[u],
			     runs, lo, hi);
	}
	long loops = 0;
	for (unsigned u = 0; u < gl->n; u++)
		if (gl->kind[u] == 1)
			loops += (long)atomic_load(&gl->runs[u]) * GLOOP;
	if (atomic_load(&gl->loop_indices) != loops)
		FAIL("graph loops: %ld indices, want %ld", atomic_load(&gl->loop_indices), loops);
	for (unsigned s = 1; sub && s < GSUB; s++)
		if (atomic_load(&gl->sub_runs[s]) > atomic_load(&gl->sub_runs[s - 1]))
			FAIL("subgraph node %u ran more often than its predecessor", s);
	if (atomic_load(&gl->bad))
		FAIL("graph: %d node starts before a predecessor's end", atomic_load(&gl->bad));
	heist_graph_destroy(sub);
	free(gl);
}

/* ---- dataflow: tasks that read and write a few cells ---- */

enum { DCELLS = 4, DTASKS = 24 };


struct dcell {
	atomic_int version;	/* the id of the last writer that ran; -1 at first */
	atomic_int readers;	/* readers that ran since that writer */
};

struct dtask {
	struct dflow *df;
	int id;
	unsigned n;
	struct heist_access acc[3];
	int want_version[3];	/* per access: the last writer before it in submit order */
	int want_readers[3];	/* per written access: the readers since that writer */
	int ret;		/* 0, or 11 */
	atomic_int runs;
	heist_future *f;
	bool submitted;
	bool fails;	/* it would give 11, uncancelled (dflow_mark) */
};

struct dflow {
	struct dcell cell[DCELLS];
	struct dtask task[DTASKS];
	atomic_int bad;
	/* the history as the submits made it: the last writer and readers since */
	int last_writer[DCELLS];
	int readers_since[DCELLS];
};

static int
dtask_body(void *arg)
{
	struct dtask *t = arg;
	atomic_fetch_add(&t->runs, 1);
	atomic_fetch_add(&progress, 1);
	/* A task runs only after every task it depends on ran and succeeded: the
	 * cells hold exactly what the submit order says. */
	for (unsigned i = 0; i < t->n; i++) {
		struct dcell *c = (struct dcell *)(uintptr_t)t->acc[i].addr;
		if (atomic_load(&c->version) != t->want_version[i])
			atomic_fetch_add(&t->df->bad, 1);
	}
	for (unsigned i = 0; i < t->n; i++) {
		struct dcell *c = (struct dcell *)(uintptr_t)t->acc[i].addr;
		if (t->acc[i].mode & HEIST_OUT) {
			if (atomic_load(&c->readers) != t->want_readers[i])
				atomic_fetch_add(&t->df->bad, 1 << 8);
			atomic_store(&c->readers, 0);
			atomic_store(&c->version, t->id);
		}
	}
	for (unsigned i = 0; i < t->n; i++) {
		struct dcell *c = (struct dcell *)(uintptr_t)t->acc[i].addr;
		if (t->acc[i].mode == HEIST_IN)
			atomic_fetch_add(&c->readers, 1);
	}
	return t->ret;
}

/* Submit task id with 1-3 random accesses (distinct cells); record the history. */
static void
dflow_submit(struct player *p, struct dflow *d, heist_dataflow *df, unsigned id, bool starve)
{
	struct dtask *t = &d->task[id];
	*t = (struct dtask){.df = d, .id = (int)id, .n = 1 + pick(&p->rng, 3),
			    .ret = pick(&p->rng, 10) == 0 ? 11 : 0};
	atomic_init(&t->runs, 0);
	unsigned first = pick(&p->rng, DCELLS);
	for (unsigned i = 0; i < t->n; i++) {
		unsigned c = (first + i) % DCELLS;
		static const unsigned modes[] = {HEIST_IN, HEIST_IN, HEIST_OUT, HEIST_INOUT};
		t->acc[i] = (struct heist_access){&d->cell[c], modes[pick(&p->rng, 4)]};
		t->want_version[i] = d->last_writer[c];
		t->want_readers[i] = d->readers_since[c];
	}
	if (starve) {
		pthread_mutex_lock(&fault_lock);
		fault_fail_nth(FAULT_ALLOC, pick(&p->rng, 4), FAULT_THIS_THREAD);
	}
	heist_future *out = SENTINEL;
	int err = heist_dataflow_submit(df, t->acc, t->n, dtask_body, t, &out);
	if (starve) {
		fault_disarm(FAULT_ALLOC);
		pthread_mutex_unlock(&fault_lock);
	}
	if (err) {
		if (err != ENOMEM || !starve || out)
			FAIL("dataflow_submit: %s", strerror(err));
		return;	/* the history is unchanged */
	}
	t->f = out;
	t->submitted = true;
	for (unsigned i = 0; i < t->n; i++) {
		unsigned c = (unsigned)((struct dcell *)(uintptr_t)t->acc[i].addr - d->cell);
		if (t->acc[i].mode & HEIST_OUT) {
			d->last_writer[c] = (int)id;
			d->readers_since[c] = 0;
		} else {
			d->readers_since[c]++;
		}
	}
}

/* Mark the tasks of [from, to) that would give 11 with no cancellation: those that
 * return it, and those that depend on one (an earlier task of the phase that touches
 * a cell they touch, one of the two writing it), which end unrun with its result. */
static void
dflow_mark(struct dflow *d, unsigned from, unsigned to)
{
	for (unsigned id = from; id < to; id++) {
		struct dtask *t = &d->task[id];
		t->fails = t->submitted && t->ret;
		for (unsigned j = from; t->submitted && j < id; j++) {
			struct dtask *u = &d->task[j];
			for (unsigned a = 0; u->fails && a < t->n; a++)
				for (unsigned b = 0; b < u->n; b++)
					t->fails |= t->acc[a].addr == u->acc[b].addr &&
						    ((t->acc[a].mode | u->acc[b].mode) & HEIST_OUT);
		}
	}
}

/* Phase [from, to): wait, then check each task: run once with its value, or not run
 * with 11 or ECANCELED (a failed input, the dataflow's first error or its cancel),
 * and the wait's result: 11 iff some task would fail, 0 else (or ECANCELED if
 * cancelled). */
static void
dflow_check(struct dflow *d, heist_dataflow *df, unsigned from, unsigned to, bool cancelled,
	    bool starve)
{
	/* Starved, the wait still waits and gives its result (its @returns has no
	 * ENOMEM), and the next phase still starts with no error. */
	if (starve) {
		pthread_mutex_lock(&fault_lock);
		fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	}
	int v = df ? heist_dataflow_wait(df) : 0;	/* NULL: destroyed, no result */
	if (starve) {
		fault_disarm(FAULT_ALLOC);
		pthread_mutex_unlock(&fault_lock);
	}
	bool any_fails = false, all_ran = true;
	dflow_mark(d, from, to);
	for (unsigned id = from; id < to; id++)
		any_fails |= d->task[id].fails;
	for (unsigned id = from; id < to; id++) {
		struct dtask *t = &d->task[id];
		if (!t->submitted)
			continue;
		bool fails = t->fails;
		if (!heist_future_done(t->f))
			FAIL("dataflow task %u not done after the wait", id);
		int r = heist_future_wait(t->f), runs = atomic_load(&t->runs);
		all_ran &= runs == 1;
		if (runs == 1 ? r != t->ret
			      : runs != 0 || (r != 11 && r != ECANCELED) ||
					(!any_fails && !cancelled) || (r == 11 && !fails))
			FAIL("dataflow task %u (ret %d, fails %d): result %d, ran %d times", id,
			     t->ret, fails, r, runs);
		heist_future_release(t->f);
		t->f = NULL;
	}
	if (df && (any_fails ? v != 11 && !(cancelled && v == ECANCELED)
			     : v != 0 && !(cancelled && v == ECANCELED && !all_ran)))
		FAIL("dataflow_wait: %d (a task fails %d, cancelled %d)", v, any_fails, cancelled);
	if (atomic_load(&d->bad))
		FAIL("dataflow: %#x order violations", atomic_load(&d->bad));
	/* The cells now: each holds its last writer that ran (writers of a cell run in
	 * order, and one that did not run stops the rest), and the readers of it that
	 * ran. The next phase's history follows from there. */
	for (unsigned c = 0; c < DCELLS; c++) {
		int w = -1, readers = 0;
		for (unsigned id = 0; id < to; id++) {
			struct dtask *t = &d->task[id];
			for (unsigned a = 0; t->submitted && a < t->n; a++) {
				if (t->acc[a].addr != &d->cell[c] || !atomic_load(&t->runs))
					continue;
				if (t->acc[a].mode & HEIST_OUT) {
					w = (int)id;
					readers = 0;
				} else {
					readers++;
				}
			}
		}
		if (atomic_load(&d->cell[c].version) != w ||
		    atomic_load(&d->cell[c].readers) != readers)
			FAIL("dataflow cell %u: writer %d, %d readers; want %d, %d", c,
			     atomic_load(&d->cell[c].version), atomic_load(&d->cell[c].readers),
			     w, readers);
		d->last_writer[c] = w;
		d->readers_since[c] = readers;
	}
}

/* A dataflow on pool 0 or 1: a phase of tasks (some failing, some submits with an
 * allocation failure, maybe cancelled), a wait, a second phase from the history the
 * first left, then destroy with the second phase's futures released or not. */
static void
dataflow_round(struct player *p)
{
	struct round *r = p->round;
	struct dflow *d = calloc(1, sizeof(*d));
	if (!d)
		return;
	for (unsigned c = 0; c < DCELLS; c++) {
		atomic_init(&d->cell[c].version, -1);
		atomic_init(&d->cell[c].readers, 0);
		d->last_writer[c] = -1;
	}
	heist_dataflow *df;
	int err = heist_dataflow_create(r->pool[pick(&p->rng, DOOMED)], &df);
	if (err) {
		FAIL("dataflow_create: %s", strerror(err));
		free(d);
		return;
	}
	unsigned half = 1 + pick(&p->rng, DTASKS / 2), n = half + pick(&p->rng, DTASKS / 2);
	bool cancel = pick(&p->rng, 4) == 0;
	for (unsigned id = 0; id < half; id++) {
		dflow_submit(p, d, df, id, pick(&p->rng, 8) == 0);
		if (cancel && id == half / 2)
			heist_dataflow_cancel(df);
	}
	dflow_check(d, df, 0, half, cancel, pick(&p->rng, 6) == 0);
	for (unsigned id = half; id < n; id++)
		dflow_submit(p, d, df, id, pick(&p->rng, 8) == 0);
	if (pick(&p->rng, 2)) {
		dflow_check(d, df, half, n, false, false);
		heist_dataflow_destroy(df);
	} else {
		heist_dataflow_destroy(df);	/* waits; the futures stay valid */
		for (unsigned id = half; id < n; id++)
			if (d->task[id].submitted && !heist_future_done(d->task[id].f))
				FAIL("dataflow task %u not done after destroy", id);
		dflow_check(d, NULL, half, n, false, false);
	}
	free(d);
}

/* ---- bulk loops and reductions ---- */

enum { BULK_N = 2000 };

struct bulk {
	atomic_uchar seen[BULK_N];
	size_t fail_at;		/* the index whose body returns 13, or BULK_N */
	atomic_int bad;
};

static int
bulk_body(void *arg, size_t begin, size_t end)
{
	struct bulk *b = arg;
	atomic_fetch_add(&progress, 1);
	for (size_t i = begin; i < end; i++)
		if (atomic_fetch_add(&b->seen[i], 1))
			atomic_fetch_add(&b->bad, 1);
	return b->fail_at >= begin && b->fail_at < end ? 13 : 0;
}

/* A bulk loop on a random pool (the doomed one too), at a random priority, with a
 * watch, maybe cancelled, maybe with an index that fails: it gives 0 (every index
 * once), 13 (the failing index ran; none twice), ECANCELED (only if cancelled: no
 * index ran) or ESHUTDOWN at the call on the doomed pool. */
static void
bulk_round(struct player *p)
{
	struct round *r = p->round;
	struct bulk *b = calloc(1, sizeof(*b));
	if (!b)
		return;
	size_t begin = pick(&p->rng, 100), end = begin + pick(&p->rng, BULK_N - 100);
	b->fail_at = pick(&p->rng, 4) ? BULK_N : begin + pick(&p->rng, (unsigned)(end - begin + 1));
	unsigned pool_i = pick(&p->rng, POOLS), pr = pick(&p->rng, 4);
	bool cancel = pick(&p->rng, 4) == 0;
	heist_pool *pool = get_pool(r, pool_i);
	if (!pool) {
		free(b);
		return;
	}
	heist_future *f = SENTINEL;
	size_t grain = pick(&p->rng, 3) ? 0 : 1 + pick(&p->rng, 64);
	int err = pr == 3 ? heist_submit_bulk(pool, begin, end, grain, bulk_body, b, &f)
			  : heist_submit_bulk_priority(pool, (int)pr - 1, begin, end, grain,
						       bulk_body, b, &f);
	put_pool(r, pool_i);
	if (err) {
		if (err != ESHUTDOWN || pool_i != DOOMED || f)
			FAIL("submit_bulk: %s", strerror(err));
		free(b);
		return;
	}
	struct done_watch dw;
	bool watched = watch(f, &dw, false);
	if (cancel)
		heist_future_cancel(f);
	int v = heist_future_wait(f);
	size_t ran = 0;
	for (size_t i = 0; i < BULK_N; i++)
		ran += atomic_load(&b->seen[i]) != 0;
	bool fails = b->fail_at < end;
	bool ok = v == 0	   ? !fails && ran == end - begin
		  : v == 13	   ? fails && atomic_load(&b->seen[b->fail_at]) == 1
		  : v == ECANCELED ? cancel && ran == 0
				   : false;
	if (!ok || atomic_load(&b->bad))
		FAIL("bulk [%zu, %zu) fail at %zu, cancel %d: %d, %zu indices ran, %d twice",
		     begin, end, b->fail_at, cancel, v, ran, atomic_load(&b->bad));
	if (watched)
		watch_check(&dw, v, "a bulk loop");
	heist_future_release(f);
	free(b);
}

/* A reduction's accumulator: small (in the frames) or large (allocated per split). */
struct racc {
	uint64_t sum, count;
	uint64_t pad[14];	/* 128 bytes in all */
};

static int
reduce_body(void *arg, void *acc, size_t begin, size_t end)
{
	(void)arg;
	struct racc *a = acc;
	for (size_t i = begin; i < end; i++) {
		a->sum += i;
		a->count++;
	}
	return 0;
}

static void
reduce_combine(void *arg, void *into, const void *from)
{
	(void)arg;
	struct racc *a = into;
	const struct racc *b = from;
	a->sum += b->sum;
	a->count += b->count;
}

/* One reduction over [begin, end): exact, or ENOMEM when allocations fail (starve;
 * heist_reduce itself may then go on without splitting). */
static void
reduce_one(heist_pool *pool, size_t begin, size_t end, size_t size, bool det, bool starve)
{
	struct racc acc, id = {.sum = 0};
	memset(&acc, 0xa5, sizeof(acc));
	if (starve) {
		pthread_mutex_lock(&fault_lock);
		fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	}
	int err = det ? heist_reduce_deterministic(pool, begin, end, 0, &acc, size, &id,
						   reduce_body, reduce_combine, NULL)
		      : heist_reduce(pool, begin, end, 0, &acc, size, pick(&(uint64_t){end}, 2) ? &id : NULL,
				     reduce_body, reduce_combine, NULL);
	if (starve) {
		fault_disarm(FAULT_ALLOC);
		pthread_mutex_unlock(&fault_lock);
	}
	uint64_t n = end - begin, sum = (uint64_t)(begin + end - 1) * n / 2;
	if (err ? err != ENOMEM || !starve : acc.sum != sum || acc.count != n)
		FAIL("reduce%s [%zu, %zu) size %zu%s: %s, sum %llu count %llu", det ? "_det" : "",
		     begin, end, size, starve ? " starved" : "", strerror(err),
		     (unsigned long long)acc.sum, (unsigned long long)acc.count);
}

struct nested_reduce {
	heist_pool *inner;
	size_t end, size;
	bool det;
};

static int
nested_reduce_task(void *arg)
{
	struct nested_reduce *n = arg;
	reduce_one(n->inner, 0, n->end, n->size, n->det, false);
	return 0;
}

/* From outside, on pool 0 or 1; or from a task of pool 1 on pool 0 (a wait on a pool
 * made before its own, or its own: in place). */
static void
reduce_round(struct player *p)
{
	struct round *r = p->round;
	size_t begin = pick(&p->rng, 50), end = begin + pick(&p->rng, 5000);
	size_t size = pick(&p->rng, 2) ? sizeof(struct racc) : 2 * sizeof(uint64_t);
	bool det = pick(&p->rng, 2);
	unsigned how = pick(&p->rng, 4);
	if (how == 0) {
		struct nested_reduce n = {r->pool[0], end, size, det};
		heist_future *f;
		unsigned outer = pick(&p->rng, 2);	/* pool 0 reduces in place */
		if (heist_submit(r->pool[outer], nested_reduce_task, &n, &f)) {
			FAIL("submit of a nested reduce");
			return;
		}
		if (heist_future_wait(f))
			FAIL("a nested reduce's task");
		heist_future_release(f);
		return;
	}
	reduce_one(r->pool[pick(&p->rng, DOOMED)], begin, end, size, det, how == 1);
}

/* ---- groups of dependent tasks ---- */

enum { GA_PLAIN = 6, GA_DEPS = 10 };

struct gmember {
	atomic_int runs;
	int ret;		/* what it returns if it runs: 0 or 9 */
	bool always;
	unsigned nin;
	bool runs_it;		/* with no cancellation: no failed input, or always */
	int natural;		/* its result with no cancellation */
	heist_future *f;
	bool accepted;
};

struct gdeps {
	struct gmember m[GA_PLAIN + GA_DEPS];
	heist_future *outside[4];
	int outside_v[4];
};

static int
gmember_body(void *arg)
{
	struct gmember *m = arg;
	atomic_fetch_add(&m->runs, 1);
	atomic_fetch_add(&progress, 1);
	return m->ret;
}

/* A group on pool 0 or 1 with plain members (heist_group_submit can give no future:
 * plain members here are dependent tasks of no input, with futures), and dependent
 * members of outside futures (jobs of pool 0 or 1, giving 0 or 9) and of earlier
 * members, run anyway or not, at random priorities (the group's, or their own);
 * maybe cancelled. The group gives 9 iff some member's natural result is 9 (the first
 * error is a natural one: nothing is cancelled before it); each member ends with its
 * natural result, or ECANCELED once an error or the cancel came. */
static void
group_after_round(struct player *p)
{
	struct round *r = p->round;
	struct gdeps *gd = calloc(1, sizeof(*gd));
	if (!gd)
		return;
	unsigned pool_i = pick(&p->rng, POOLS);
	bool doomed = pool_i == DOOMED;
	heist_pool *pool = get_pool(r, pool_i);
	heist_group *g;
	if (!pool) {
		free(gd);
		return;
	}
	if (heist_group_create(pool, &g)) {
		FAIL("group_create");
		put_pool(r, pool_i);
		free(gd);
		return;
	}
	if (pick(&p->rng, 2) && heist_group_set_priority(g, (int)pick(&p->rng, 3) - 1))
		FAIL("group_set_priority");
	if (heist_group_set_priority(g, 2) != EINVAL)
		FAIL("group_set_priority(2)");
	/* Inputs: jobs of pool 0 or 1, and maybe a promise set once every member is
	 * submitted (the doomed pool may be gone by then). */
	unsigned nout = 1 + pick(&p->rng, 3);
	heist_promise *pr = NULL;
	if (pick(&p->rng, 2)) {
		if (heist_promise_create(r->pool[pick(&p->rng, DOOMED)], &pr, &gd->outside[nout]))
			FAIL("promise_create");
		gd->outside_v[nout++] = pick(&p->rng, 6) == 0 ? 9 : 0;
	}
	for (unsigned i = 0; i < nout - (pr != NULL); i++) {
		gd->outside_v[i] = pick(&p->rng, 6) == 0 ? 9 : 0;
		if (heist_submit(r->pool[pick(&p->rng, DOOMED)], ret_value,
				 (void *)(intptr_t)gd->outside_v[i], &gd->outside[i])) {
			FAIL("submit");
			gd->outside[i] = NULL;
		}
	}
	unsigned nplain = pick(&p->rng, GA_PLAIN + 1), n = nplain + pick(&p->rng, GA_DEPS + 1);
	bool cancel = pick(&p->rng, 5) == 0, any9 = false;
	for (unsigned i = 0; i < n; i++) {
		struct gmember *m = &gd->m[i];
		atomic_init(&m->runs, 0);
		m->ret = pick(&p->rng, 8) == 0 ? 9 : 0;
		m->always = pick(&p->rng, 3) == 0;
		heist_future *in[4];
		unsigned want = i < nplain ? 0 : 1 + pick(&p->rng, 4);
		int first_bad = 0;
		m->nin = 0;
		for (unsigned k = 0; k < want; k++) {
			unsigned w = pick(&p->rng, nout + i);
			int wv;
			if (w >= nout && gd->m[w - nout].accepted) {
				in[m->nin] = gd->m[w - nout].f;
				wv = gd->m[w - nout].natural;
			} else if (gd->outside[w % nout]) {
				in[m->nin] = gd->outside[w % nout];
				wv = gd->outside_v[w % nout];
			} else {
				continue;
			}
			m->nin++;
			if (!first_bad)
				first_bad = wv;
		}
		m->runs_it = m->always || !first_bad;
		m->natural = m->always || !first_bad ? m->ret : first_bad;
		struct heist_after opt = {.group = g, .flags = m->always ? HEIST_AFTER_ALWAYS : 0,
					  .priority = (int)pick(&p->rng, 3) - 1};
		heist_future *out = SENTINEL;
		int err = heist_submit_after(pick(&p->rng, 2) ? NULL : pool, in,
					     m->nin, gmember_body, m, &opt, &out);
		if (err) {
			FAIL("submit_after in a group: %s", strerror(err));
			continue;
		}
		m->f = out;
		m->accepted = true;
		any9 |= m->natural == 9;
		if (cancel && i == n / 2)
			heist_group_cancel(g);
	}
	/* Misuse: a group of another pool, or a token with a group. */
	struct heist_after bad = {.group = g};
	if (heist_submit_after(r->pool[!pool_i], NULL, 0, gmember_body, &gd->m[0], &bad, NULL) !=
	    EINVAL)
		FAIL("submit_after to a group of another pool");
	bad.cancel = r->token;
	if (heist_submit_after(NULL, NULL, 0, gmember_body, &gd->m[0], &bad, NULL) != EINVAL)
		FAIL("submit_after with a group and a token");
	bad = (struct heist_after){.group = g, .priority = 2};
	if (heist_submit_after(NULL, NULL, 0, gmember_body, &gd->m[0], &bad, NULL) != EINVAL)
		FAIL("submit_after at priority 2");
	put_pool(r, pool_i);
	if (pr) {
		if (pick(&p->rng, 2))
			nap(NAP_NS);
		if (heist_promise_set(pr, gd->outside_v[nout - 1]))
			FAIL("promise_set");
		heist_promise_release(pr);
	}
	int v = heist_group_wait(g);
	for (unsigned i = 0; i < n; i++) {
		struct gmember *m = &gd->m[i];
		if (!m->accepted)
			continue;
		int w = heist_future_wait(m->f), runs = atomic_load(&m->runs);
		/* ECANCELED: cancelled by the group (after its first error, or its
		 * cancel), or the first failed input was (then it never ran).
		 * ESHUTDOWN: its pool was gone when it became runnable. */
		bool ok = w == m->natural  ? runs == m->runs_it
			  : w == ECANCELED ? runs == 0 && (any9 || cancel || doomed)
			  : w == ESHUTDOWN ? runs == 0 && doomed
					   : false;
		if (!ok)
			FAIL("group member %u (ret %d, always %d, natural %d): %d, ran %d", i,
			     m->ret, m->always, m->natural, w, runs);
	}
	if (v != (any9 ? 9 : 0) && !(cancel && v == ECANCELED) && !(doomed && v == ESHUTDOWN))
		FAIL("group of dependent tasks: %d (a 9 %d, cancel %d)", v, any9, cancel);
	heist_group_destroy(g);
	for (unsigned i = 0; i < n; i++)
		heist_future_release(gd->m[i].f);
	for (unsigned i = 0; i < nout; i++)
		heist_future_release(gd->outside[i]);
	free(gd);
}

/* ---- priorities from inside a task: queued past the worker's own deque ---- */

struct nest {
	heist_pool *inner;	/* a pool made before the task's, or its own */
	unsigned how;
	int prio;
	int got;
};

static int
nest_bulk_body(void *arg, size_t begin, size_t end)
{
	atomic_fetch_add((atomic_long *)arg, (long)(end - begin));
	return 0;
}

/* A task that submits at a priority to its own pool or an earlier one and waits: a
 * plain submit, a bulk loop, a dependent task of a job, or a group's tasks; each
 * gives its exact result (a waiter runs what it waits for, queued at any priority). */
static int
nest_task(void *arg)
{
	struct nest *n = arg;
	heist_future *f = NULL, *in = NULL;
	atomic_long count;
	atomic_init(&count, 0);
	int err;
	switch (n->how) {
	case 0:
		err = heist_submit_priority(n->inner, n->prio, ret_value, (void *)(intptr_t)21, &f);
		break;
	case 1:
		err = heist_submit_bulk_priority(n->inner, n->prio, 0, 500, 0, nest_bulk_body,
						 &count, &f);
		break;
	case 2: {
		err = heist_submit_priority(n->inner, -n->prio, ret_zero, NULL, &in);
		struct heist_after opt = {.priority = n->prio};
		if (!err)
			err = heist_submit_after(n->inner, &in, 1, ret_value, (void *)(intptr_t)22,
						 &opt, &f);
		heist_future_release(in);
		break;
	}
	default: {
		heist_group *g;
		err = heist_group_create(n->inner, &g);
		if (err)
			break;
		heist_group_set_priority(g, n->prio);
		for (int i = 0; i < 5 && !err; i++)
			err = heist_group_submit(g, ret_value, (void *)(intptr_t)(i == 3 ? 23 : 0));
		int v = heist_group_wait(g);
		heist_group_destroy(g);
		n->got = err ? -err : v;
		return 0;
	}
	}
	if (err) {
		n->got = -err;
		return 0;
	}
	int v = heist_future_wait(f);
	heist_future_release(f);
	n->got = n->how == 1 ? (v ? v : atomic_load(&count) == 500 ? 0 : -1) : v;
	return 0;
}

static void
nest_round(struct player *p)
{
	struct round *r = p->round;
	unsigned outer = pick(&p->rng, DOOMED);
	struct nest n = {r->pool[pick(&p->rng, outer + 1)], pick(&p->rng, 4),
			 (int)pick(&p->rng, 3) - 1, -99};
	static const int want[] = {21, 0, 22, 23};
	heist_future *f;
	if (heist_submit_priority(r->pool[outer], (int)pick(&p->rng, 3) - 1, nest_task, &n, &f)) {
		FAIL("submit of a nesting task");
		return;
	}
	if (heist_future_wait(f) || n.got != want[n.how])
		FAIL("a task's submit at priority %d, kind %u: %d, want %d", n.prio, n.how, n.got,
		     want[n.how]);
	heist_future_release(f);
}

/* ---- on_done on the players' futures ---- */

static void
done_relay(void *arg, int result)
{
	struct player *p = arg;
	done_count(&p->watches[JOBS - 1], result);
	int err = heist_promise_set(p->relay, result);
	if (err)
		atomic_store(&p->relay_err, err);
	heist_promise_release(p->relay);
}

/* Watch one of our jobs or derived futures, with done_count, or (once) with the relay
 * to a promise; maybe with allocations failing (ENOMEM: the callback never runs). The
 * relay takes the last watch's place. */
static void
watch_one(struct player *p)
{
	if (!p->watches || p->nwatches >= JOBS - 1 || !p->njobs)
		return;
	heist_future *f = p->nderived && pick(&p->rng, 2) ? p->derived[pick(&p->rng, p->nderived)]
							  : p->jobs[pick(&p->rng, p->njobs)].f;
	bool starve = pick(&p->rng, 6) == 0;
	if (!p->relay_f && !starve && pick(&p->rng, 8) == 0) {
		if (heist_promise_create(p->round->pool[0], &p->relay, &p->relay_f)) {
			FAIL("promise_create");
			return;
		}
		atomic_init(&p->watches[JOBS - 1].calls, 0);
		atomic_init(&p->watches[JOBS - 1].result, -12345);
		p->watched[JOBS - 1] = f;
		int err = heist_future_on_done(f, done_relay, p);
		if (err)
			FAIL("future_on_done (relay): %s", strerror(err));
		return;
	}
	struct done_watch *d = &p->watches[p->nwatches];
	if (starve) {
		pthread_mutex_lock(&fault_lock);
		fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	}
	bool ok = watch(f, d, starve);
	if (starve) {
		fault_disarm(FAULT_ALLOC);
		pthread_mutex_unlock(&fault_lock);
	}
	if (ok)
		p->watched[p->nwatches++] = f;
	else if (atomic_load(&d->calls))
		FAIL("an on_done that failed called its function");
}

/* After the round, every pool gone: each watch ran once, with the result its future
 * gave. */
static void
watches_check(struct player *p)
{
	for (unsigned i = 0; i < p->nwatches; i++) {
		int calls = atomic_load(&p->watches[i].calls);
		int v = atomic_load(&p->watches[i].result);
		if (calls != 1 || v != p->watch_want[i])
			FAIL("on_done %u: %d calls, result %d, want %d", i, calls, v,
			     p->watch_want[i]);
	}
	if (p->relay_f && p->watches) {
		int calls = atomic_load(&p->watches[JOBS - 1].calls);
		if (calls != 1 || atomic_load(&p->relay_err))
			FAIL("on_done relay: %d calls, promise_set %d", calls,
			     atomic_load(&p->relay_err));
	}
	free(p->watches);
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
		if (p->nderived && pick(&p->rng, 3) == 0) {
			unsigned i = pick(&p->rng, p->nderived);
			heist_future_cancel(p->derived[i]);
			p->derived_cancelled[i] = true;
		} else if (p->njobs) {
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
	case GRAPH_LIFE:
		graph_life(p);
		break;
	case DATAFLOW:
		dataflow_round(p);
		break;
	case BULK:
		bulk_round(p);
		break;
	case REDUCE:
		reduce_round(p);
		break;
	case WATCH:
		watch_one(p);
		break;
	case GROUP_AFTER:
		group_after_round(p);
		break;
	case NEST:
		nest_round(p);
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
		ok |= v == ECANCELED && p->derived_cancelled[i];
		if (!ok)
			FAIL("derived %u (kind %d): %d", i, p->derived_kind[i], v);
	}
	for (unsigned i = 0; i < p->nwatches; i++)
		p->watch_want[i] = heist_future_wait(p->watched[i]);
	if (p->relay_f) {
		int want = heist_future_wait(p->watched[JOBS - 1]);
		if (!heist_future_wait_for(p->relay_f, LONG_WAIT_NS)) {
			FAIL("the on_done relay's promise was never set: a hang");
			abort();
		}
		int v = heist_future_wait(p->relay_f);
		if (v != want)
			FAIL("the on_done relay's promise: %d, want %d", v, want);
		heist_future_release(p->relay_f);
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
		p[i].watches = calloc(JOBS, sizeof(*p[i].watches));
		atomic_init(&p[i].relay_err, 0);
		if (pthread_create(&th[i], NULL, player_main, &p[i]))
			FAIL("pthread_create");
	}
	destroy_doomed(r);
	for (int i = 0; i < PLAYERS; i++)
		pthread_join(th[i], NULL);
	int first = (int)pick(rng, 2);
	heist_pool_destroy(r->pool[first]);	/* with fire-and-forget work queued */
	heist_pool_destroy(r->pool[!first]);
	for (int i = 0; i < PLAYERS; i++)
		watches_check(&p[i]);
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
