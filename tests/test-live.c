/* SPDX-License-Identifier: MIT */
/* test-live.c - liveness: waits that always finish (src/wait.c, src/spare.c,
 * docs/architecture.md's theorem), with a bounded number of threads. The shapes that
 * hung before transitive helping: chains of waits across two pools (a task of A runs a
 * job of B, whose task runs a job of A, ...), loops of short timed waits, chains of
 * continuations and when_all futures deeper than any fixed limit, nested timed polls;
 * each at several depths, from one and two outside threads, on one- and two-worker
 * pools, with the default max_spares and with HEIST_SPARES_NONE where the theorem says
 * the shape needs no spare. Every result is exact, and the peak number of the pools'
 * threads (counted by the start and stop hooks, and read in /proc/self/task) stays
 * within the theorem's bound. Also: workers parked behind another pool's long jobs
 * get a stand-in for the work queued behind them, however slowly threads run; an
 * outside heist_for_each body that polls with timed waits gets one as a worker's
 * poll does; a spare that ran queued jobs exits after its keep-alive; entries of
 * jobs taken already that a waiter cannot drop call none; a stand-in that cannot be
 * had is counted and said once on stderr; what a submit from a hook does; a when_all
 * whose pool is destroyed first; and a walk across pools racing the destroy of the
 * pool it walks (for ASan and TSan).
 *
 * Rules: nothing passes because something was fast. Outside threads wait with a
 * watchdog (WATCHDOG_NS), so a hang fails the test instead of stopping the suite. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(_WIN32)
#include <windows.h>
#include <tlhelp32.h>
#endif

#include "common.h"
#include "pool.h"	/* white-box: the injector's consumer flag */
#include "spare.h"	/* heist__spare_keepalive_ns, COMPENSATE_ROUNDS */

#define WATCHDOG_NS (60ull * 1000 * 1000 * 1000)
#define DEFAULT_SPARES 0u	/* heist_config.max_spares: the default bound */

/* ---------------------------------------------------------------------------------- */
/* Counting the pools' threads                                                        */

static atomic_int live_threads, peak_threads;

static void
thread_started(void *ctx, unsigned index)
{
	(void)ctx;
	(void)index;
	int n = atomic_fetch_add(&live_threads, 1) + 1;
	int p = atomic_load(&peak_threads);
	while (n > p && !atomic_compare_exchange_weak(&peak_threads, &p, n))
		;
}

static void
thread_stopped(void *ctx, unsigned index)
{
	(void)ctx;
	(void)index;
	atomic_fetch_sub(&live_threads, 1);
}

/* With TEST_VERBOSE set, one line per shape run: what ran, its peak and its bound, the
 * figures an issue note quotes. */
static void
shape_report(const char *fmt, ...)
{
	if (!getenv("TEST_VERBOSE"))
		return;
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static heist_pool *
counted_pool(unsigned threads, unsigned max_spares)
{
	struct heist_config cfg = {.threads = threads, .max_spares = max_spares,
				   .on_worker_start = thread_started,
				   .on_worker_stop = thread_stopped};
	return make_pool_cfg(&cfg);
}

/* The threads of this process now. */
static int
tasks_now(void)
{
#if defined(_WIN32)
	/* A snapshot of the system's threads, this process's counted. */
	HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
	if (snap == INVALID_HANDLE_VALUE)
		return -1;
	DWORD me = GetCurrentProcessId();
	int n = 0;
	THREADENTRY32 e = {.dwSize = sizeof(e)};
	for (BOOL more = Thread32First(snap, &e); more; more = Thread32Next(snap, &e))
		n += e.th32OwnerProcessID == me;
	CloseHandle(snap);
	return n;
#else
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
#endif
}

/* A sampler of /proc/self/task while a shape runs. It is static, not on a test's
 * stack: a test that fails between start and stop leaves it running, and the next
 * start stops it first. */
struct sampler {
	pthread_t th;
	bool running;
	atomic_bool stop;
	atomic_int peak;
};

static struct sampler sampler;

static void *
sampler_main(void *arg)
{
	struct sampler *s = arg;
	while (!atomic_load(&s->stop)) {
		int n = tasks_now();
		if (n > atomic_load(&s->peak))
			atomic_store(&s->peak, n);
		nap(200 * 1000);
	}
	return NULL;
}

static int
sampler_stop(struct sampler *s)
{
	if (s->running) {
		atomic_store(&s->stop, true);
		pthread_join(s->th, NULL);
		s->running = false;
	}
	return atomic_load(&s->peak);
}

static void
sampler_start(struct sampler *s)
{
	sampler_stop(s);
	atomic_store(&s->stop, false);
	atomic_store(&s->peak, 0);
	assert_int_equal(pthread_create(&s->th, NULL, sampler_main, s), 0);
	s->running = true;
}

/* The pools' threads now are the peak from here on. */
static void
peak_reset(void)
{
	atomic_store(&peak_threads, atomic_load(&live_threads));
}

/* Outside threads that each submit one job and wait for it with the watchdog. */
struct outside {
	pthread_t th;
	heist_pool *pool;
	heist_fn fn;
	void *arg;
	atomic_int result;
	atomic_bool hung;
};

static void *
outside_main(void *arg)
{
	struct outside *o = arg;
	heist_future *f;
	int err = heist_submit(o->pool, o->fn, o->arg, &f);
	if (err) {
		atomic_store(&o->result, -10000 - err);
		return NULL;
	}
	if (!heist_future_wait_for(f, WATCHDOG_NS)) {
		atomic_store(&o->hung, true);
		return NULL;	/* leave f: its task may still run */
	}
	atomic_store(&o->result, heist_future_wait(f));
	heist_future_release(f);
	return NULL;
}

/* Run n outside threads at once; fail on a hang. */
static void
run_outside(struct outside *o, int n)
{
	for (int i = 0; i < n; i++) {
		atomic_init(&o[i].result, -1);
		atomic_init(&o[i].hung, false);
		assert_int_equal(pthread_create(&o[i].th, NULL, outside_main, &o[i]), 0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(o[i].th, NULL);
	for (int i = 0; i < n; i++)
		if (atomic_load(&o[i].hung))
			fail_msg("an outside wait did not finish in 60 s: the shape hung");
}

/* ---------------------------------------------------------------------------------- */
/* Chains of waits across two pools                                                   */

/* Level k runs on pool[(start + k) % 2] and enters the other pool for level k + 1,
 * through heist_run or through heist_submit and heist_future_wait; the last level
 * returns 0, each other one its child's result + 1: the root returns the depth. */
struct chain {
	heist_pool *pool[2];
	int depth;
	bool via_run;
};

struct link {
	const struct chain *c;
	int level;
	int side;
};

static int
link_task(void *arg)
{
	const struct link *l = arg;
	const struct chain *c = l->c;
	if (l->level == c->depth)
		return 0;
	struct link next = {c, l->level + 1, !l->side};
	heist_pool *to = c->pool[next.side];
	int r;
	if (c->via_run) {
		r = heist_run(to, link_task, &next);
	} else {
		heist_future *f;
		int err = heist_submit(to, link_task, &next, &f);
		if (err)
			return -10000 - err;
		r = heist_future_wait(f);
		heist_future_release(f);
	}
	return r < 0 ? r : r + 1;
}

struct chain_run {
	int depth;
	unsigned workers;	/* per pool */
	unsigned max_spares;
	int outside;		/* 1 or 2 */
	bool cross_start;	/* the second outside thread starts at pool 1 */
	bool via_run;
};

/* Compensation (spare.h) calls a stand-in once COMPENSATE_ROUNDS rounds of the vote
 * have completed with no progress of the pool while work waits, or COMPENSATE_NS have
 * passed over COMPENSATE_MIN_ROUNDS of them; a round takes a look of every parked
 * waiter, and each naps 200 us between looks (wait.c, PARK_NS) unless a wake cuts the
 * nap short. A stalled chain wakes nobody: so at least COMPENSATE_NS (250 ms). */
_Static_assert(COMPENSATE_NS <= (uint64_t)COMPENSATE_ROUNDS * 200 * 1000,
	       "compensation comes no later than its rounds would bring it");

/* Stand-ins compensation may have called in a run that lasted elapsed_ns: at most one
 * per pool per COMPENSATE_NS. Never for a chain that runs as it should (microseconds
 * per link), but a link's thread preempted between its submit and its wait for that
 * long (an overloaded machine: CI runs tests side by side on two cores) stalls the pool
 * it submitted to, whose waiters' chains end at that thread, running. */
static int
chain_compensation(uint64_t elapsed_ns)
{
	return 2 * (int)(elapsed_ns / COMPENSATE_NS);
}

/* The theorem's bound for chains (docs/architecture.md): a pool runs its workers, no
 * stand-in at all for one chain (its own links need none), and for each further chain
 * at most two: one for its root, which waits queued while the first chain runs, and
 * one where the two cross (each waits, in one pool, for a link queued in the other,
 * with the pools' threads taken: the deadlock of two fixed-size pools). Beyond that
 * only compensation may call one. */
static int
chain_bound(const struct chain_run *r, uint64_t elapsed_ns)
{
	int others = r->outside - 1;
	return 2 * (int)r->workers + 2 * 2 * others + chain_compensation(elapsed_ns);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
run_chain(const struct chain_run *r)
{
	struct sampler *s = &sampler;
	int base = tasks_now();
	sampler_start(s);
	struct chain c = {{counted_pool(r->workers, r->max_spares),
			   counted_pool(r->workers, r->max_spares)},
			  r->depth, r->via_run};
	peak_reset();
	struct link roots[2] = {{&c, 0, 0}, {&c, 0, r->cross_start ? 1 : 0}};
	struct outside o[2];
	for (int i = 0; i < r->outside; i++)
		o[i] = (struct outside){.pool = c.pool[roots[i].side], .fn = link_task,
					.arg = &roots[i]};
	uint64_t t0 = now_ns();
	run_outside(o, r->outside);
	uint64_t elapsed = now_ns() - t0;
	int bound = chain_bound(r, elapsed);
	int peak = atomic_load(&peak_threads);
	int proc = sampler_stop(s);
	for (int i = 0; i < r->outside; i++)
		assert_int_equal(atomic_load(&o[i].result), r->depth);
	struct heist_stats st[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(heist_pool_stats(c.pool[i], &st[i]), 0);
	heist_pool_destroy(c.pool[0]);
	heist_pool_destroy(c.pool[1]);
	shape_report("chain%s depth %d via %s, %u workers, %d outside, spares %s: peak %d "
		     "pool threads, bound %d, spares started %llu", r->cross_start ? " (both pools)" : "",
		     r->depth, r->via_run ? "run" : "submit+wait", r->workers, r->outside,
		     r->max_spares == HEIST_SPARES_NONE ? "none" : "default", peak, bound,
		     (unsigned long long)(st[0].spares_started + st[1].spares_started));
	if (peak > bound || proc > base + 1 + r->outside + bound + 1)
		fail_msg("chain depth %d, %u workers, %d outside, spares %u: %d pool threads "
			 "at once (%d in /proc over a base of %d), bound %d; spares started %llu "
			 "and %llu in %.1f ms", r->depth, r->workers, r->outside, r->max_spares,
			 peak, proc, base, bound, (unsigned long long)st[0].spares_started,
			 (unsigned long long)st[1].spares_started, elapsed / 1e6);
	/* One chain never needs a stand-in, with spares allowed or not, unless it ran
	 * long enough for compensation; with none allowed there is none. */
	uint64_t started = st[0].spares_started + st[1].spares_started;
	int allowed = r->max_spares == HEIST_SPARES_NONE ? 0
		    : r->outside == 1		     ? chain_compensation(elapsed)
						     : -1;
	if (allowed >= 0 && started > (uint64_t)allowed)
		fail_msg("chain depth %d, %u workers, %d outside, spares %u: %llu spares "
			 "started in %.1f ms, %d allowed", r->depth, r->workers, r->outside,
			 r->max_spares, (unsigned long long)started, elapsed / 1e6, allowed);
}

static const int chain_depths[] = {16, 64, 200, 1000};

static void
chains_across_pools_finish_on_the_threads_they_have(void **state)
{
	(void)state;
	static const unsigned spares[] = {DEFAULT_SPARES, HEIST_SPARES_NONE};
	for (size_t d = 0; d < sizeof(chain_depths) / sizeof(chain_depths[0]); d++)
		for (unsigned workers = 1; workers <= 2; workers++)
			for (int sp = 0; sp < 2; sp++)
				for (int outside = 1; outside <= 2; outside++)
					for (int via = 0; via < 2; via++)
						run_chain(&(struct chain_run){
							.depth = chain_depths[d],
							.workers = workers,
							.max_spares = spares[sp],
							.outside = outside,
							.via_run = via});
}

/* Two chains that start in different pools: each pool's only worker waits for a job
 * queued in the other one, which no thread of that pool can reach. This is the
 * deadlock of any two fixed-size thread pools; a stand-in breaks it (one per pool at
 * most), so it needs spares, and finishes with them. */
static void
chains_started_in_both_pools_finish_with_a_stand_in_each(void **state)
{
	(void)state;
	for (size_t d = 0; d < sizeof(chain_depths) / sizeof(chain_depths[0]); d++)
		for (unsigned workers = 1; workers <= 2; workers++)
			run_chain(&(struct chain_run){.depth = chain_depths[d],
						      .workers = workers,
						      .max_spares = DEFAULT_SPARES,
						      .outside = 2, .cross_start = true});
}

/* ---------------------------------------------------------------------------------- */
/* Loops of short timed waits                                                         */

static int
answer(void *arg)
{
	(void)arg;
	return 42;
}

/* A task that submits a job to its own pool and polls it with timed waits of step_ns
 * until it is done; with depth > 1 the job is itself such a poller, one level down. */
struct poll {
	heist_pool *pool;
	uint64_t step_ns;
	int depth;
};

struct poll_level {
	const struct poll *p;
	int level;
};

static int
poller(void *arg)
{
	const struct poll_level *l = arg;
	const struct poll *p = l->p;
	struct poll_level next = {p, l->level + 1};
	heist_future *f;
	int err = next.level < p->depth ? heist_submit(p->pool, poller, &next, &f)
					: heist_submit(p->pool, answer, NULL, &f);
	if (err)
		return -10000 - err;
	while (!heist_future_wait_for(f, p->step_ns))
		;
	int r = heist_future_wait(f);
	heist_future_release(f);
	return r;
}

static void
run_polls(unsigned workers, unsigned max_spares, int outside, uint64_t step_ns, int depth)
{
	struct sampler *s = &sampler;
	int base = tasks_now();
	sampler_start(s);
	struct poll p = {counted_pool(workers, max_spares), step_ns, depth};
	peak_reset();
	struct poll_level root = {&p, 0};
	struct outside o[2];
	for (int i = 0; i < outside; i++)
		o[i] = (struct outside){.pool = p.pool, .fn = poller, .arg = &root};
	run_outside(o, outside);
	int peak = atomic_load(&peak_threads);
	int proc = sampler_stop(s);
	for (int i = 0; i < outside; i++)
		assert_int_equal(atomic_load(&o[i].result), 42);
	heist_pool_destroy(p.pool);
	/* The theorem: each timed wait that cannot finish alone holds its thread; the
	 * pool runs its workers, and a stand-in per poll beyond them. */
	int bound = (int)workers + outside * depth;
	shape_report("timed polls of %llu ns, depth %d, %u workers, %d outside, spares %s: "
		     "peak %d pool threads, bound %d", (unsigned long long)step_ns, depth,
		     workers, outside, max_spares == HEIST_SPARES_NONE ? "none" : "default",
		     peak, bound);
	if (peak > bound || proc > base + 1 + outside + bound + 1)
		fail_msg("polls of %llu ns, depth %d, %u workers, %d outside: %d pool threads "
			 "at once (%d in /proc over %d), bound %d", (unsigned long long)step_ns,
			 depth, workers, outside, peak, proc, base, bound);
}

static const uint64_t poll_steps[] = {1000, 10 * 1000, 100 * 1000, 1000 * 1000};

static void
loops_of_short_timed_waits_make_progress(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(poll_steps) / sizeof(poll_steps[0]); k++) {
		for (int outside = 1; outside <= 2; outside++)
			run_polls(1, DEFAULT_SPARES, outside, poll_steps[k], 1);
		/* Without spares, another worker that is free runs the job. */
		run_polls(2, HEIST_SPARES_NONE, 1, poll_steps[k], 1);
	}
}

static void
nested_timed_polls_take_one_thread_each(void **state)
{
	(void)state;
	static const int depths[] = {4, 16};
	for (size_t d = 0; d < sizeof(depths) / sizeof(depths[0]); d++)
		for (int outside = 1; outside <= 2; outside++)
			run_polls(1, DEFAULT_SPARES, outside, 10 * 1000, depths[d]);
}

/* 64 pollers spin on two cores; under a sanitizer that is minutes, not seconds. */
static void
nested_timed_polls_take_one_thread_each_slow(void **state)
{
	(void)state;
#ifdef TEST_SANITIZED
	run_polls(1, DEFAULT_SPARES, 1, 10 * 1000, 24);
#else
	run_polls(1, DEFAULT_SPARES, 1, 10 * 1000, 64);
#endif
}

/* A heist_for_each body on the calling thread (the guest slot) that polls a job of its
 * pool with timed waits, while the pool's only worker runs a task that ends only once
 * that job has run: the job waits and no worker is idle, where a worker's timed wait
 * calls a stand-in at once (spare.h), and so must the guest's. Nothing is timed:
 * without the stand-in the body polls forever and the test hangs (the meson timeout
 * fails it), as it did when the guest's timed wait called none. */
struct guest_poll {
	heist_pool *pool;
	pthread_t caller;
	atomic_int blocking;	/* the worker is in blocker() */
	atomic_int job_ran;
	atomic_int on_caller;	/* the body ran on the for_each caller's thread */
};

static struct guest_poll guest_poll;

static int
only_a_stand_in_runs(void *arg)
{
	(void)arg;
	atomic_store(&guest_poll.job_ran, 1);
	return 42;
}

static int
blocker(void *arg)
{
	(void)arg;
	atomic_store(&guest_poll.blocking, 1);
	while (!atomic_load(&guest_poll.job_ran))
		nap(NAP_NS);
	return 7;
}

static int
polling_body(void *arg, size_t begin, size_t end)
{
	(void)arg;
	(void)begin;
	(void)end;
	atomic_store(&guest_poll.on_caller, pthread_equal(pthread_self(), guest_poll.caller));
	heist_future *f;
	int err = heist_submit(guest_poll.pool, only_a_stand_in_runs, NULL, &f);
	if (err)
		return -10000 - err;
	while (!heist_future_wait_for(f, 10 * 1000))
		;
	int r = heist_future_wait(f);
	heist_future_release(f);
	return r == 42 ? 0 : -1;
}

static void
a_guests_timed_poll_gets_a_stand_in(void **state)
{
	(void)state;
	heist_pool *pool = counted_pool(1, DEFAULT_SPARES);
	guest_poll = (struct guest_poll){.pool = pool, .caller = pthread_self()};
	heist_future *b;
	assert_int_equal(heist_submit(pool, blocker, NULL, &b), 0);
	bool ok;
	POLL(ok, atomic_load(&guest_poll.blocking));
	assert_true(ok);
	assert_int_equal(heist_for_each(pool, 0, 1, 1, polling_body, NULL), 0);
	assert_true(atomic_load(&guest_poll.on_caller));	/* in the guest slot */
	assert_int_equal(watched(b), 7);
	struct heist_stats st;
	assert_int_equal(heist_pool_stats(pool, &st), 0);
	assert_true(st.spares_started >= 1);
	heist_pool_destroy(pool);
}

/* The two halves of a loop called from outside (the guest slot) on a one-worker pool
 * whose worker sleeps: the half the caller runs first waits (untimed) for a promise
 * that only the other half sets. That wait can help with nothing (a promise ends the
 * chain), so the other half, offered in the guest's deque, must be run by another
 * thread: the worker the guest took the place of, or a stand-in. Nothing is timed:
 * without either the caller waits forever and the meson timeout fails the test. */
struct halves {
	heist_promise *p;
	heist_future *f;
};

static int
halves_body(void *arg, size_t begin, size_t end)
{
	struct halves *h = arg;
	for (size_t i = begin; i < end; i++) {
		int r = i == 0 ? heist_future_wait(h->f) : heist_promise_set(h->p, 0);
		if (r)
			return r;
	}
	return 0;
}

static void
a_guests_untimed_wait_gets_its_other_half_run(void **state)
{
	(void)state;
	for (int spares = 0; spares < 2; spares++) {
		heist_pool *pool = counted_pool(1, spares ? DEFAULT_SPARES : HEIST_SPARES_NONE);
		for (int round = 0; round < 20; round++) {
			static struct halves h;
			assert_int_equal(heist_promise_create(pool, &h.p, &h.f), 0);
			wait_until_parked(pool);
			assert_int_equal(heist_for_each(pool, 0, 2, 1, halves_body, &h), 0);
			heist_promise_release(h.p);
			heist_future_release(h.f);
		}
		heist_pool_destroy(pool);
	}
}

/* ---------------------------------------------------------------------------------- */
/* Chains of continuations and when_all futures                                       */

enum chain_kind { THEN, WHEN_ALL, MIXED };

/* Link k of a dependency chain: a continuation of link k - 1 (which returns its
 * antecedent's result + 1), or a when_all of link k - 1 and a job that returns 0. */
struct deps {
	heist_pool *pool;
	int depth;
	enum chain_kind kind;
	heist_future **f;	/* depth + 1 links; f[0] is a job that returns 1 */
	heist_future **extra;	/* when_all's second inputs */
	atomic_int extras_ran;
};

static int
plus_one(void *arg)
{
	int r = heist_future_wait(*(heist_future **)arg);	/* done: at once */
	return r < 0 ? r : r + 1;
}

static int
extra_job(void *arg)
{
	atomic_fetch_add(&((struct deps *)arg)->extras_ran, 1);
	return 0;
}

static bool
link_is_then(const struct deps *d, int k)
{
	return d->kind == THEN || (d->kind == MIXED && k % 2);
}

/* Build the chain and wait for its last link; returns the last link's result. On a
 * one-worker pool and from a task, nothing of it can have run before the wait. */
static int
build_and_wait(void *arg)
{
	struct deps *d = arg;
	int err = heist_submit(d->pool, ret_int, (void *)1, &d->f[0]);
	if (err)
		return -10000 - err;
	for (int k = 1; k <= d->depth; k++) {
		if (link_is_then(d, k)) {
			err = heist_future_then(d->f[k - 1], plus_one, &d->f[k - 1], &d->f[k]);
		} else {
			err = heist_submit(d->pool, extra_job, d, &d->extra[k]);
			heist_future *in[2] = {d->f[k - 1], d->extra[k]};
			if (!err)
				err = heist_when_all(d->pool, in, 2, &d->f[k]);
		}
		if (err)
			return -20000 - err;
	}
	return heist_future_wait(d->f[d->depth]);
}

/* What the last link returns: every continuation adds one to its antecedent, a
 * when_all gives its first input's (nonzero) result. */
static int
deps_expected(const struct deps *d)
{
	int r = 1;
	for (int k = 1; k <= d->depth; k++)
		r += link_is_then(d, k);
	return r;
}

static void
deps_free(struct deps *d)
{
	for (int k = 0; k <= d->depth; k++) {
		heist_future_release(d->f[k]);
		heist_future_release(d->extra[k]);
	}
	free(d->f);
	free(d->extra);
}

static int
extras_expected(const struct deps *d)
{
	int n = 0;
	for (int k = 1; k <= d->depth; k++)
		n += !link_is_then(d, k);
	return n;
}

/* One chain per outside thread, each built and waited for by a task of a one-worker
 * pool without spares: its waiter alone runs it all. */
static void
run_deps(int depth, enum chain_kind kind, int outside, unsigned max_spares)
{
	heist_pool *pool = counted_pool(1, max_spares);
	peak_reset();
	struct deps d[2];
	struct outside o[2];
	for (int i = 0; i < outside; i++) {
		d[i] = (struct deps){.pool = pool, .depth = depth, .kind = kind,
				     .f = calloc((size_t)depth + 1, sizeof(heist_future *)),
				     .extra = calloc((size_t)depth + 1, sizeof(heist_future *))};
		assert_non_null(d[i].f);
		assert_non_null(d[i].extra);
		o[i] = (struct outside){.pool = pool, .fn = build_and_wait, .arg = &d[i]};
	}
	run_outside(o, outside);
	for (int i = 0; i < outside; i++) {
		assert_int_equal(atomic_load(&o[i].result), deps_expected(&d[i]));
		/* A when_all's inputs all ran before it was done. */
		assert_int_equal(atomic_load(&d[i].extras_ran), extras_expected(&d[i]));
	}
	int peak = atomic_load(&peak_threads);
	struct heist_stats st;
	assert_int_equal(heist_pool_stats(pool, &st), 0);
	heist_pool_destroy(pool);
	for (int i = 0; i < outside; i++)
		deps_free(&d[i]);
	static const char *const kinds[] = {"continuations", "when_alls", "both"};
	shape_report("chain of %s, depth %d, 1 worker, %d outside, spares %s: "
		     "peak %d pool threads, spares started %llu", kinds[kind], depth, outside,
		     max_spares == HEIST_SPARES_NONE ? "none" : "default", peak,
		     (unsigned long long)st.spares_started);
	if (max_spares == HEIST_SPARES_NONE)
		assert_int_equal(st.spares_started, 0);
	if (peak > 1 + (max_spares == HEIST_SPARES_NONE ? 0 : outside - 1))
		fail_msg("a chain of %d: %d pool threads at once", depth, peak);
}

static void
chains_of_continuations_and_when_all_need_no_spare(void **state)
{
	(void)state;
	static const int depths[] = {16, 64, 200, 1000};
	for (size_t k = 0; k < sizeof(depths) / sizeof(depths[0]); k++)
		for (int kind = THEN; kind <= MIXED; kind++)
			for (int outside = 1; outside <= 2; outside++) {
				run_deps(depths[k], (enum chain_kind)kind, outside,
					 HEIST_SPARES_NONE);
				run_deps(depths[k], (enum chain_kind)kind, outside,
					 DEFAULT_SPARES);
			}
}

/* The same chain waited for from an outside thread: the worker runs each link in turn
 * as it becomes runnable. */
static void
chains_of_continuations_waited_from_outside(void **state)
{
	(void)state;
	heist_pool *pool = counted_pool(1, HEIST_SPARES_NONE);
	for (int kind = THEN; kind <= MIXED; kind++) {
		struct deps d = {.pool = pool, .depth = 1000, .kind = (enum chain_kind)kind,
				 .f = calloc(1001, sizeof(heist_future *)),
				 .extra = calloc(1001, sizeof(heist_future *))};
		assert_non_null(d.f);
		assert_non_null(d.extra);
		assert_int_equal(build_and_wait(&d), deps_expected(&d));
		deps_free(&d);
	}
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* Groups whose jobs come from outside                                                */

/* A task of a one-worker pool without spares waits for a group whose jobs an outside
 * thread submits (to the injector): the waiter runs them itself. */
struct outside_group {
	heist_group *g;
	atomic_int ran;
	atomic_bool waiting;
	int jobs;
};

static int
group_job(void *arg)
{
	atomic_fetch_add(&((struct outside_group *)arg)->ran, 1);
	return 0;
}

static int
group_waiter(void *arg)
{
	struct outside_group *o = arg;
	atomic_store(&o->waiting, true);
	return heist_group_wait(o->g);
}

static void
a_group_waited_in_a_task_runs_jobs_submitted_from_outside(void **state)
{
	(void)state;
	static struct hold hold;
	hold = (struct hold){0};
	heist_pool *pool = counted_pool(1, HEIST_SPARES_NONE);
	struct outside_group o = {.jobs = 200};
	assert_int_equal(heist_group_create(pool, &o.g), 0);
	/* The first job holds the group open until the waiter waits. */
	assert_int_equal(heist_group_submit(o.g, hold_task, &hold), 0);
	heist_future *w;
	assert_int_equal(heist_submit(pool, group_waiter, &o, &w), 0);
	bool ok;
	POLL(ok, atomic_load(&o.waiting) || atomic_load(&hold.entered));
	assert_true(ok);
	for (int i = 0; i < o.jobs; i++)
		assert_int_equal(heist_group_submit(o.g, group_job, &o), 0);
	atomic_store(&hold.open, 1);
	assert_int_equal(watched(w), 0);
	assert_int_equal(atomic_load(&o.ran), o.jobs);
	struct heist_stats st;
	assert_int_equal(heist_pool_stats(pool, &st), 0);
	assert_int_equal(st.spares_started, 0);
	heist_group_destroy(o.g);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* Spares: they go away, and their bound is never met in silence                      */

/* A task of pool P that waits for a held job of another pool, so that P's worker
 * parks and the jobs queued behind it need a stand-in. */
static int
wait_for_future(void *arg)
{
	return heist_future_wait(*(heist_future **)arg);
}

static void
a_spare_that_ran_queued_jobs_exits_after_its_keep_alive(void **state)
{
	(void)state;
	uint64_t keep = heist__spare_keepalive_ns;
	heist__spare_keepalive_ns = 10 * 1000 * 1000;	/* 10 ms */
	static struct hold hold;
	hold = (struct hold){0};
	heist_pool *p = counted_pool(1, DEFAULT_SPARES), *other = make_pool(1);
	heist_future *held, *waiter, *f[20];
	hold_worker(other, &hold, &held);
	assert_int_equal(heist_submit(p, wait_for_future, &held, &waiter), 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(heist_submit(p, ret_int, (void *)(intptr_t)i, &f[i]), 0);
	for (int i = 0; i < 20; i++)	/* a stand-in runs them while the worker waits */
		assert_int_equal(watched(f[i]), i);
	struct heist_stats st;
	assert_int_equal(heist_pool_stats(p, &st), 0);
	assert_true(st.spares_started > 0);
	/* The worker still waits; the spare has nothing left to do: it goes. */
	bool ok;
	POLL(ok, heist_pool_stats(p, &st) == 0 && st.spares == 0);
	assert_true(ok);
	atomic_store(&hold.open, 1);
	assert_int_equal(watched(waiter), 0);
	assert_int_equal(watched(held), 0);
	heist_pool_destroy(p);
	heist_pool_destroy(other);
	heist__spare_keepalive_ns = keep;
}

/* Both workers of A wait for jobs of B that run until the test lets them go, and 30
 * jobs are queued in A behind them: compensation must give A a stand-in that runs
 * them, however slowly the threads run (a sanitizer, an overloaded host). B's jobs go
 * only once A's 30 are done, and nothing here is timed: without the stand-in the test
 * hangs (the meson timeout fails it). The rule once measured 250 ms of wall time per
 * waiter, started over by any look that could not tell, such as one that found the
 * other waiter at A's injector (wait.c, needs_stand_in); TSan makes those looks long,
 * and its runs often went 1.5 s without a stand-in. The second form makes such looks
 * certain: a thread takes A's injector for 1 ms every 20 ms (as a consumer would)
 * until the first of the 30 jobs runs. Under the old rule no waiter ever saw 250 ms
 * without one, and the test hung. */
struct parked_on_b {
	heist_pool *a;
	heist_future *held[2];
	atomic_int waiting;
	atomic_int ran;		/* of the 30 */
};

static struct parked_on_b parked_on_b;

static int
wait_for_held(void *arg)
{
	atomic_fetch_add(&parked_on_b.waiting, 1);
	return heist_future_wait(parked_on_b.held[(intptr_t)arg]);
}

static int
queued_in_a(void *arg)
{
	atomic_fetch_add(&parked_on_b.ran, 1);
	return (int)(intptr_t)arg;
}

/* Another thread at A's injector now and then, until a stand-in runs A's jobs. */
static void *
injector_visitor(void *arg)
{
	struct injector *q = &((struct parked_on_b *)arg)->a->injector;
	while (!atomic_load(&parked_on_b.ran)) {
		/* acquire, release: as consumer_enter and consumer_leave (injector.c);
		 * the head is handed on untouched. */
		while (atomic_exchange_explicit(&q->consuming, true, memory_order_acquire))
			nap(NAP_NS);
		nap(1000 * 1000);
		atomic_store_explicit(&q->consuming, false, memory_order_release);
		nap(20 * 1000 * 1000);
	}
	return NULL;
}

static void
run_parked_on_b(bool visited)
{
	enum { QUEUED = 30 };
	static struct hold hold;
	hold = (struct hold){.ret = 3};
	parked_on_b = (struct parked_on_b){0};
	heist_pool *a = counted_pool(2, DEFAULT_SPARES), *b = make_pool(2);
	parked_on_b.a = a;
	for (int i = 0; i < 2; i++)
		assert_int_equal(heist_submit(b, hold_task, &hold, &parked_on_b.held[i]), 0);
	heist_future *w[2], *f[QUEUED];
	for (intptr_t i = 0; i < 2; i++)
		assert_int_equal(heist_submit(a, wait_for_held, (void *)i, &w[i]), 0);
	bool ok;
	POLL(ok, atomic_load(&hold.entered) == 2 && atomic_load(&parked_on_b.waiting) == 2);
	assert_true(ok);
	uint64_t t0 = now_ns();
	for (int i = 0; i < QUEUED; i++)
		assert_int_equal(heist_submit(a, queued_in_a, (void *)(intptr_t)i, &f[i]), 0);
	pthread_t visitor;
	if (visited)
		assert_int_equal(pthread_create(&visitor, NULL, injector_visitor, &parked_on_b),
				 0);
	for (int i = 0; i < QUEUED; i++) {	/* untimed: a stand-in must run them */
		assert_int_equal(heist_future_wait(f[i]), i);
		heist_future_release(f[i]);
	}
	uint64_t elapsed = now_ns() - t0;
	if (visited)
		pthread_join(visitor, NULL);
	assert_int_equal(atomic_load(&hold.left), 0);	/* B's jobs still run */
	atomic_store(&hold.open, 1);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(watched(w[i]), 3);
		assert_int_equal(watched(parked_on_b.held[i]), 3);
	}
	struct heist_stats st;
	assert_int_equal(heist_pool_stats(a, &st), 0);
	shape_report("A's 2 workers parked on B, %d queued in A%s: ran in %.1f ms, spares "
		     "started %llu", QUEUED, visited ? ", A's injector visited" : "",
		     elapsed / 1e6, (unsigned long long)st.spares_started);
	assert_int_equal(atomic_load(&parked_on_b.ran), QUEUED);
	assert_true(st.spares_started >= 1);
	heist_pool_destroy(a);
	heist_pool_destroy(b);
}

static void
workers_parked_on_another_pool_get_a_stand_in(void **state)
{
	(void)state;
	run_parked_on_b(false);
	run_parked_on_b(true);
}

struct exhaust {
	unsigned max_spares;
	uint64_t exhausted;
	int results;
	bool counted;	/* the count reached 3 (checked once stderr is back) */
	int held_result;
};

/* Three tasks of a one-worker pool wait for a held job of another pool: the worker
 * runs one, a stand-in the second, and the third finds no spare left to have. */
static void
exhaust_spares(void *arg)
{
	struct exhaust *e = arg;
	static struct hold hold;
	hold = (struct hold){0};
	struct heist_config cfg = {.threads = 1, .max_spares = e->max_spares,
				   .name = "tight"};
	heist_pool *p = make_pool_cfg(&cfg), *other = make_pool(1);
	heist_future *held, *w[3];
	hold_worker(other, &hold, &held);
	for (int i = 0; i < 3; i++)
		assert_int_equal(heist_submit(p, wait_for_future, &held, &w[i]), 0);
	struct heist_stats st;
	bool ok;
	/* Long enough that a reporter would have said it many times over. */
	POLL(ok, heist_pool_stats(p, &st) == 0 && st.spares_exhausted >= 3);
	e->counted = ok;
	e->exhausted = st.spares_exhausted;
	atomic_store(&hold.open, 1);
	for (int i = 0; i < 3; i++)
		e->results += watched(w[i]) == 0;
	e->held_result = watched(held);
	heist_pool_destroy(p);
	heist_pool_destroy(other);
}

static void
an_exhausted_bound_is_counted_and_said_once(void **state)
{
	(void)state;
	static const unsigned bounds[] = {1, HEIST_SPARES_NONE};
	for (int k = 0; k < 2; k++) {
		struct exhaust e = {.max_spares = bounds[k]};
		char buf[4096];
		capture_stderr(exhaust_spares, &e, buf, sizeof(buf));
		if (!e.counted)
			fail_msg("spares %u: %llu exhausted moments counted, not 3", bounds[k],
				 (unsigned long long)e.exhausted);
		assert_int_equal(e.results, 3);
		assert_int_equal(e.held_result, 0);
		const char *first = strstr(buf, "heist: pool \"tight\"");
		if (bounds[k] == HEIST_SPARES_NONE) {
			/* Asked for no spares: counted, in silence. */
			if (first)
				fail_msg("a report with HEIST_SPARES_NONE: \"%s\"", buf);
			continue;
		}
		/* One line, naming the pool, the bound and the setting to raise. */
		if (!first || !strstr(first, "max_spares") || !strstr(first, "all 1 spare"))
			fail_msg("no report of the exhausted bound on stderr: \"%s\"", buf);
		if (strstr(first + 1, "heist: pool \"tight\""))
			fail_msg("the report came more than once: \"%s\"", buf);
	}
}

/* A job claimed where it sat (or cancelled) leaves its entry in the injector, and a
 * parked waiter drops such entries before it looks for work that no thread runs
 * (wait.c, drop_taken); it cannot while another thread is the injector's consumer: a
 * worker between two tasks taking a batch of such entries, neither idle nor blocked,
 * whose takes leave the pool's progress as it was. Counting them as work then called
 * a stand-in for a single chain of waits across pools (chains_across_pools_..., under
 * TSan, 2 runs in 36). Here the test thread is that consumer (it takes the flag as
 * injector.c's consumer_enter does) while P's only worker waits for a job queued in
 * Q, whose worker is held, and P's injector holds cancelled entries only. Without the
 * fix a stand-in comes at the worker's first look (one per 200 us); the test gives it
 * 30 ms at least, and passes however long it waits. */
static int
run_in_other(void *arg)
{
	return heist_run(arg, answer, NULL);
}

static void
taken_entries_behind_a_busy_injector_call_no_stand_in(void **state)
{
	(void)state;
	enum { ENTRIES = 8 };
	static struct hold hold;
	hold = (struct hold){0};
	heist_pool *p = make_pool(1), *q = make_pool(1);
	heist_future *held, *w, *f[ENTRIES];
	hold_worker(q, &hold, &held);
	assert_int_equal(heist_submit(p, run_in_other, q, &w), 0);
	struct heist_stats st;
	bool ok;
	POLL(ok, heist_pool_stats(p, &st) == 0 && st.parks > 0);
	assert_true(ok);
	/* acquire: as consumer_enter, whose flag P's worker may hold for a moment. */
	while (atomic_exchange_explicit(&p->injector.consuming, true, memory_order_acquire))
		nap(NAP_NS);
	for (int i = 0; i < ENTRIES; i++) {
		assert_int_equal(heist_submit(p, answer, NULL, &f[i]), 0);
		heist_future_cancel(f[i]);
	}
	for (int i = 0; i < 300; i++) {
		assert_int_equal(heist_pool_stats(p, &st), 0);
		if (st.spares_started)
			break;
		nap(NAP_NS);
	}
	/* release: hands the head as we left it (untouched) to the next consumer. */
	atomic_store_explicit(&p->injector.consuming, false, memory_order_release);
	atomic_store(&hold.open, 1);
	assert_int_equal(watched(w), 42);
	assert_int_equal(watched(held), 0);
	for (int i = 0; i < ENTRIES; i++)
		assert_int_equal(watched(f[i]), ECANCELED);
	assert_int_equal(heist_pool_stats(p, &st), 0);
	heist_pool_destroy(p);
	heist_pool_destroy(q);
	if (st.spares_started)
		fail_msg("%llu stand-ins for entries of cancelled jobs, with P's worker waiting "
			 "in Q", (unsigned long long)st.spares_started);
}

/* ---------------------------------------------------------------------------------- */
/* Hooks that submit, and a when_all whose pool is destroyed first                    */

struct hook_submit {
	heist_pool *_Atomic pool;
	atomic_bool started, stopped;	/* the first spare's hooks have submitted */
	atomic_int accepted, refused, ran;
	unsigned workers;
};

static struct hook_submit hs;

static int
hook_job(void *arg)
{
	(void)arg;
	atomic_fetch_add(&hs.ran, 1);
	return 0;
}

/* The first start hook and the first stop hook of a spare (an index above the
 * workers and the guest slot) submit a job to their own pool. */
static void
submit_from_hook(atomic_bool *once, unsigned index)
{
	heist_pool *pool = atomic_load(&hs.pool);
	if (!pool || index <= hs.workers || atomic_exchange(once, true))
		return;
	if (heist_submit(pool, hook_job, NULL, NULL) == 0)
		atomic_fetch_add(&hs.accepted, 1);
	else
		atomic_fetch_add(&hs.refused, 1);
}

static void
spare_start_submits(void *ctx, unsigned index)
{
	(void)ctx;
	submit_from_hook(&hs.started, index);
}

static void
spare_stop_submits(void *ctx, unsigned index)
{
	(void)ctx;
	submit_from_hook(&hs.stopped, index);
}

/* heist.h: a submit from a hook is an outside submit. A spare's hooks run while the
 * pool is alive (its start when it is first called, its stop when its keep-alive
 * ends), so their submits are accepted, and run (by another stand-in here: the
 * worker still waits). */
static void
a_spares_hooks_may_submit(void **state)
{
	(void)state;
	uint64_t keep = heist__spare_keepalive_ns;
	heist__spare_keepalive_ns = 10 * 1000 * 1000;
	hs = (struct hook_submit){.workers = 1};
	static struct hold hold;
	hold = (struct hold){0};
	struct heist_config cfg = {.threads = 1, .on_worker_start = spare_start_submits,
				   .on_worker_stop = spare_stop_submits};
	heist_pool *p = make_pool_cfg(&cfg), *other = make_pool(1);
	atomic_store(&hs.pool, p);
	heist_future *held, *waiter, *f;
	hold_worker(other, &hold, &held);
	assert_int_equal(heist_submit(p, wait_for_future, &held, &waiter), 0);
	assert_int_equal(heist_submit(p, answer, NULL, &f), 0);
	assert_int_equal(watched(f), 42);	/* a stand-in ran it */
	bool ok;
	struct heist_stats st;
	POLL(ok, atomic_load(&hs.ran) == 2 && heist_pool_stats(p, &st) == 0 &&
		 st.spares == 0);
	assert_true(ok);
	atomic_store(&hold.open, 1);
	assert_int_equal(watched(waiter), 0);
	assert_int_equal(watched(held), 0);
	heist_pool_destroy(p);
	heist_pool_destroy(other);
	assert_int_equal(atomic_load(&hs.accepted), 2);
	assert_int_equal(atomic_load(&hs.refused), 0);
	assert_int_equal(atomic_load(&hs.ran), 2);
	heist__spare_keepalive_ns = keep;
}

/* A when_all of pool P over a held job of pool Q, and a continuation of it (which runs
 * on P). P is destroyed first (neither counts in its drain: neither is queued yet);
 * then the input ends: the when_all completes with its result all the same, and the
 * continuation, which has no pool left to run on, ends with ESHUTDOWN. */
static void
a_when_all_whose_pool_is_gone_still_completes(void **state)
{
	(void)state;
	static struct hold hold;
	hold = (struct hold){.ret = 7};
	heist_pool *p = make_pool(1), *q = make_pool(1);
	heist_future *held, *all, *cont;
	hold_worker(q, &hold, &held);
	assert_int_equal(heist_when_all(p, &held, 1, &all), 0);
	assert_int_equal(heist_future_then(all, answer, NULL, &cont), 0);
	heist_pool_destroy(p);
	atomic_store(&hold.open, 1);
	assert_int_equal(watched(held), 7);
	assert_int_equal(watched(all), 7);
	assert_int_equal(watched(cont), ESHUTDOWN);
	heist_pool_destroy(q);
}

/* ---------------------------------------------------------------------------------- */
/* A walk across pools racing the destroy of the pool it walks                        */

/* A's task T waits for a when_all (of pool A) over B's job X; X waits for a job Y of
 * pool C, whose worker is held from it for a moment, so A's worker walks into B (X's
 * runner, blocked in Y) again and again. Then Y runs and X ends, and the test thread,
 * which waited for X itself, destroys B at once, while A's worker may still be in a
 * walk that saw X running. Under ASan or TSan a read of B's memory after its free, or
 * a race with it, fails the test. */
struct race {
	heist_future *y, *all;
};

static int
x_task(void *arg)
{
	return heist_future_wait(((struct race *)arg)->y);
}

static int
t_task(void *arg)
{
	return heist_future_wait(((struct race *)arg)->all);
}

static void
race_walks_and_destroys(int rounds)
{
	heist_pool *a = make_pool(1), *c = make_pool(1);
	for (int i = 0; i < rounds; i++) {
		static struct hold hold;
		hold = (struct hold){.ret = 5};
		struct race r = {NULL, NULL};
		heist_pool *b = make_pool(1);
		heist_future *gate, *x, *t;
		hold_worker(c, &hold, &gate);	/* C's worker busy: Y waits */
		assert_int_equal(heist_submit(c, answer, NULL, &r.y), 0);
		assert_int_equal(heist_submit(b, x_task, &r, &x), 0);
		assert_int_equal(heist_when_all(a, &x, 1, &r.all), 0);
		assert_int_equal(heist_submit(a, t_task, &r, &t), 0);
		nap((i % 4) * 50 * 1000);
		atomic_store(&hold.open, 1);
		assert_int_equal(watched(x), 42);
		heist_pool_destroy(b);
		assert_int_equal(watched(t), 42);
		assert_int_equal(watched(gate), 5);
		heist_future_release(r.all);
		heist_future_release(r.y);
	}
	heist_pool_destroy(a);
	heist_pool_destroy(c);
}

static void
a_walk_across_pools_survives_their_destroy(void **state)
{
	(void)state;
	race_walks_and_destroys(test_slow() ? 2000 : 100);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(chains_across_pools_finish_on_the_threads_they_have),
		cmocka_unit_test(chains_started_in_both_pools_finish_with_a_stand_in_each),
		cmocka_unit_test(loops_of_short_timed_waits_make_progress),
		cmocka_unit_test(nested_timed_polls_take_one_thread_each),
		cmocka_unit_test(a_guests_timed_poll_gets_a_stand_in),
		cmocka_unit_test(a_guests_untimed_wait_gets_its_other_half_run),
		cmocka_unit_test(chains_of_continuations_and_when_all_need_no_spare),
		cmocka_unit_test(chains_of_continuations_waited_from_outside),
		cmocka_unit_test(a_group_waited_in_a_task_runs_jobs_submitted_from_outside),
		cmocka_unit_test(a_spare_that_ran_queued_jobs_exits_after_its_keep_alive),
		cmocka_unit_test(taken_entries_behind_a_busy_injector_call_no_stand_in),
		cmocka_unit_test(workers_parked_on_another_pool_get_a_stand_in),
		cmocka_unit_test(an_exhausted_bound_is_counted_and_said_once),
		cmocka_unit_test(a_spares_hooks_may_submit),
		cmocka_unit_test(a_when_all_whose_pool_is_gone_still_completes),
		cmocka_unit_test(a_walk_across_pools_survives_their_destroy),
	};
	const struct CMUnitTest slow_tests[] = {
		cmocka_unit_test(nested_timed_polls_take_one_thread_each_slow),
		cmocka_unit_test(a_walk_across_pools_survives_their_destroy),
	};
	return RUN_TESTS_OR_SLOW(tests, slow_tests);
}
