/* SPDX-License-Identifier: MIT */
/* test-wait.c - waiting that never deadlocks (src/wait.c, src/spare.c): the shapes that
 * hung before the waiting rule (a job that waits in heist_sync or heist_future_wait
 * while jobs queued behind it wait for it), with and without spare threads; spares
 * that stand in while workers are parked, stay within their bound and go away when
 * idle; timed waits on a worker that run nothing, not even the awaited job (the
 * reviewer's shape: a frame that cancels what it waited for); timeouts too
 * large to add to the clock; pools destroyed while another pool's task, and an outside
 * for_each body, are blocked; deque growth and spare creation without memory or
 * threads; and misuse (a sync of a record never spawned, a future released twice, a
 * pool destroyed twice) aborting with a message, in a forked child.
 *
 * Rules: nothing passes because something was fast. A hang is caught by a bound that
 * only a broken library reaches (POLL_MAX naps, or a 30 s heist_future_wait_for from
 * the test thread); a nap is only a chance for a bug to show. Tasks never call cmocka:
 * they record what they saw in atomics, and the test thread checks. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#include <sys/wait.h>
#endif
#include <unistd.h>

#include "common.h"
#include "faults.h"
#include "spare.h"	/* heist__spare_keepalive_ns */

#define WATCHDOG_NS LONG_WAIT_NS
enum { WAITERS = 4 };	/* the shape: four X jobs waiting on Z */

static heist_pool *
make_spare_pool(unsigned threads, unsigned max_spares)
{
	struct heist_config cfg = {.threads = threads, .max_spares = max_spares};
	return make_pool_cfg(&cfg);
}

static struct heist_stats
stats_of(heist_pool *pool)
{
	struct heist_stats s;
	assert_int_equal(heist_pool_stats(pool, &s), 0);
	return s;
}

/* Wait for a future with the watchdog; a hang fails the test. */
static int
watched_wait(heist_future *f)
{
	if (!heist_future_wait_for(f, WATCHDOG_NS))
		fail_msg("a wait did not finish in 30 s: deadlock");
	return heist_future_wait(f);
}

/* ---------------------------------------------------------------------------------- */
/* Z waits, X waits for Z                                                             */

/* The shared state of one deadlock shape: Z (a job) ends up waiting while WAITERS
 * jobs X, queued after it, wait for Z's future. Before the waiting rule, Z's worker
 * took an X from the injector while it waited and ran it on top of Z: X waited for
 * Z, and Z could never resume. */
struct shape {
	heist_pool *pool;
	struct hold hold;		/* keeps the thing Z waits for from finishing */
	atomic_bool z_waiting;		/* Z reached its wait */
	heist_future *_Atomic z;	/* Z's future, for the X jobs */
	heist_future *y;		/* heist_future_wait shape: what Z waits for */
	atomic_int x_done, x_bad;
	atomic_int z_worker;		/* where Z ran */
	atomic_int x_on_z_worker;	/* X jobs run by Z's worker while Z waited */
	atomic_int bad_thread_index;	/* heist_thread_index() out of its range */
};

static int
noop(void *arg)
{
	(void)arg;
	return 0;
}

/* heist_sync shape: a for_each of two indices in Z. Z splits off index 1, which the
 * other worker steals and holds; Z runs index 0, which returns only once the thief has
 * index 1, so Z's sync of it always finds it stolen, and waits. Index 0 first submits
 * a job from the worker, which publishes its deque, index 1 included: a split is
 * published at once only if a worker is idle when it is made, and the other one may
 * not have started searching yet (it would then ask, and Z, polling, never answer). */
static int
shape_body(void *arg, size_t b, size_t e)
{
	struct shape *s = arg;
	for (size_t i = b; i < e; i++) {
		if (i == 1) {
			hold_pass(&s->hold);
		} else {
			bool submitted = heist_submit(s->pool, noop, NULL, NULL) == 0, ok;
			POLL(ok, atomic_load(&s->hold.entered) == 1);
			atomic_store(&s->z_waiting, submitted && ok);	/* Z syncs next */
		}
	}
	return 0;
}

static int
z_sync(void *arg)
{
	struct shape *s = arg;
	atomic_store(&s->z_worker, heist_worker_index());
	return heist_for_each(s->pool, 0, 2, 1, shape_body, s);
}

/* heist_future_wait shape: Z waits for Y, which holds the other worker. */
static int
y_hold(void *arg)
{
	hold_pass(&((struct shape *)arg)->hold);
	return 7;
}

static int
z_future(void *arg)
{
	struct shape *s = arg;
	atomic_store(&s->z_worker, heist_worker_index());
	atomic_store(&s->z_waiting, true);
	return heist_future_wait(s->y) == 7 ? 0 : -1;
}

static int
x_task(void *arg)
{
	struct shape *s = arg;
	int ti = heist_thread_index(), wi = heist_worker_index();
	if (ti < 0 || (unsigned)ti >= heist_pool_threads(s->pool) || (wi >= 0 && wi != ti))
		atomic_fetch_add(&s->bad_thread_index, 1);
	if (heist_worker_index() >= 0 && heist_worker_index() == atomic_load(&s->z_worker) &&
	    !atomic_load(&s->hold.open))
		atomic_fetch_add(&s->x_on_z_worker, 1);
	if (heist_future_wait(atomic_load(&s->z)) != 0)
		atomic_fetch_add(&s->x_bad, 1);
	atomic_fetch_add(&s->x_done, 1);
	return 0;
}

/* How to run a shape on a two-worker pool. */
struct shape_run {
	bool through_future;	/* else through heist_sync */
	unsigned max_spares;
	bool no_threads;	/* every pthread_create fails once the workers run */
	bool spare_must_come;	/* poll until a spare stands in, rather than nap */
	bool spares_must_go;	/* at the end, poll until every spare has exited */
	struct heist_stats during;	/* out: the pool's statistics while Z waited */
};

/* Run one shape; checks that every X and Z finish, and that Z's worker ran no X. */
static void
run_shape(struct shape_run *r)
{
	struct shape s = {.z_worker = -2};
	s.pool = make_spare_pool(2, r->max_spares);
	heist_future *fz = NULL, *fx[WAITERS] = {0};
	bool ok;

	/* Both workers idle first: a split is published at once only while some worker
	 * is counted idle (searching or asleep), and a worker that has not yet entered
	 * its loop is neither. Z's index 0 then holds its worker without touching the
	 * deque, so a split left private would wait for the thief's request until Z's
	 * poll gave up (30 s). Each worker sleeps once before it has any work. */
	POLL(ok, stats_of(s.pool).sleeps >= 2);
	assert_true(ok);
	if (r->no_threads)
		fault_fail_all(FAULT_THREAD, FAULT_ANY_THREAD);
	if (r->through_future) {
		assert_int_equal(heist_submit(s.pool, y_hold, &s, &s.y), 0);
		POLL(ok, atomic_load(&s.hold.entered) == 1);	/* Y holds one worker */
		assert_true(ok);
		assert_int_equal(heist_submit(s.pool, z_future, &s, &fz), 0);
	} else {
		assert_int_equal(heist_submit(s.pool, z_sync, &s, &fz), 0);
		POLL(ok, atomic_load(&s.hold.entered) == 1);	/* the thief holds index 1 */
		assert_true(ok);
	}
	atomic_store(&s.z, fz);
	POLL(ok, atomic_load(&s.z_waiting));
	if (!ok) {
		struct heist_stats st = stats_of(s.pool);
		fail_msg("Z never reached its wait (%s shape): hold entered %d, Z on worker "
			 "%d, pending %zu, executed %llu, sleeps %llu, wakes %llu, parks %llu",
			 r->through_future ? "future" : "sync", atomic_load(&s.hold.entered),
			 atomic_load(&s.z_worker), heist_pool_pending(s.pool),
			 (unsigned long long)st.executed, (unsigned long long)st.sleeps,
			 (unsigned long long)st.wakes, (unsigned long long)st.parks);
	}
	for (int i = 0; i < WAITERS; i++)
		assert_int_equal(heist_submit(s.pool, x_task, &s, &fx[i]), 0);
	if (r->spare_must_come) {
		/* Something holds a worker, Z parks, the X jobs are queued: a spare. */
		POLL(ok, stats_of(s.pool).spares > 0);
		assert_true(ok);
	} else if (r->no_threads) {
		/* The same, and the spare cannot start: counted (and said), not silent. */
		POLL(ok, stats_of(s.pool).spares_exhausted > 0);
		assert_true(ok);
	} else {
		nap(20 * 1000 * 1000);	/* a chance for Z's worker to take an X */
	}
	r->during = stats_of(s.pool);
	atomic_store(&s.hold.open, true);

	assert_int_equal(watched_wait(fz), 0);
	for (int i = 0; i < WAITERS; i++) {
		assert_int_equal(watched_wait(fx[i]), 0);
		heist_future_release(fx[i]);
	}
	heist_future_release(fz);
	if (s.y) {
		assert_int_equal(watched_wait(s.y), 7);
		heist_future_release(s.y);
	}
	if (r->no_threads) {
		fault_disarm(FAULT_THREAD);
		assert_int_equal(stats_of(s.pool).spares_started, 0);
	}
	if (r->spares_must_go) {
		POLL(ok, stats_of(s.pool).spares == 0);	/* idle for the keep-alive */
		assert_true(ok);
	}
	heist_pool_destroy(s.pool);
	assert_int_equal(atomic_load(&s.x_done), WAITERS);
	assert_int_equal(atomic_load(&s.x_bad), 0);
	/* The rule itself: Z's worker ran no X on top of Z. */
	assert_int_equal(atomic_load(&s.x_on_z_worker), 0);
	/* Spares too have a thread index within the pool's range. */
	assert_int_equal(atomic_load(&s.bad_thread_index), 0);
}

static void
job_waiting_in_sync_is_not_buried_by_its_waiters(void **state)
{
	(void)state;
	run_shape(&(struct shape_run){.through_future = false});
}

static void
job_waiting_on_a_future_is_not_buried_by_its_waiters(void **state)
{
	(void)state;
	run_shape(&(struct shape_run){.through_future = true});
}

static void
shapes_complete_without_spare_threads(void **state)
{
	(void)state;
	for (int via = 0; via < 2; via++) {
		struct shape_run r = {.through_future = via, .max_spares = HEIST_SPARES_NONE};
		run_shape(&r);
		assert_int_equal(r.during.spares_started, 0);
	}
}

/* While Z's worker is parked and X jobs wait in the injector, a spare stands in: the X
 * jobs start (and park in their own waits, each with a stand-in of its own, within
 * the bound) before the test lets Z finish. */
static void
spares_stand_in_for_parked_workers_within_their_bound(void **state)
{
	(void)state;
	enum { BOUND = 2 };
	struct shape_run r = {.through_future = true, .max_spares = BOUND,
			      .spare_must_come = true};
	run_shape(&r);
	assert_true(r.during.parks > 0);
	assert_true(r.during.spares_started > 0);
	assert_true(r.during.spares <= BOUND);
}

static void
idle_spares_go_away(void **state)
{
	(void)state;
	uint64_t keep = heist__spare_keepalive_ns;
	heist__spare_keepalive_ns = 10 * 1000 * 1000;	/* 10 ms */
	run_shape(&(struct shape_run){.through_future = true, .spare_must_come = true,
				      .spares_must_go = true});
	heist__spare_keepalive_ns = keep;
}

/* Spares cannot start (every pthread_create fails): each stand-in that could not be
 * had is counted (spares_exhausted), and the shapes still complete. */
static void
shapes_complete_when_spares_cannot_start(void **state)
{
	(void)state;
	for (int via = 0; via < 2; via++)
		run_shape(&(struct shape_run){.through_future = via, .no_threads = true});
}

/* ---------------------------------------------------------------------------------- */
/* Timed waits                                                                        */

struct timed {
	heist_pool *pool;
	heist_future *other;		/* a job of another pool, held */
	atomic_bool waiting;		/* the timed wait is under way */
	pthread_t waiter;
	atomic_int ran_inside_wait;	/* the queued job ran on the waiter during its wait */
	atomic_int queued_ran;
	atomic_int result;
};

static int
queued_job(void *arg)
{
	struct timed *t = arg;
	if (atomic_load(&t->waiting) && pthread_equal(pthread_self(), t->waiter))
		atomic_store(&t->ran_inside_wait, 1);
	atomic_fetch_add(&t->queued_ran, 1);
	return 0;
}

/* On the only worker: queue a job, then wait 5 ms for a job that will not finish. */
static int
timed_waiter(void *arg)
{
	struct timed *t = arg;
	t->waiter = pthread_self();
	if (heist_submit(t->pool, queued_job, t, NULL))
		return -1;
	atomic_store(&t->waiting, true);
	bool done = heist_future_wait_for(t->other, 5 * 1000 * 1000);
	atomic_store(&t->waiting, false);
	atomic_store(&t->result, done ? 1 : 0);
	return 0;
}

static void
timed_wait_on_a_worker_runs_no_other_job(void **state)
{
	(void)state;
	heist_pool *other = make_spare_pool(1, 0);
	struct hold hold = {0};
	struct timed t = {.result = -1};
	t.pool = make_spare_pool(1, HEIST_SPARES_NONE);
	bool ok;

	assert_int_equal(heist_submit(other, hold_task, &hold, &t.other), 0);
	heist_future *f;
	assert_int_equal(heist_submit(t.pool, timed_waiter, &t, &f), 0);
	assert_int_equal(watched_wait(f), 0);
	heist_future_release(f);
	assert_int_equal(atomic_load(&t.result), 0);		/* timed out */
	assert_int_equal(atomic_load(&t.ran_inside_wait), 0);	/* ran nothing else */
	POLL(ok, atomic_load(&t.queued_ran) == 1);		/* and it did run later */
	assert_true(ok);
	atomic_store(&hold.open, true);
	assert_true(heist_future_wait_for(t.other, WATCHDOG_NS));
	heist_future_release(t.other);
	heist_pool_destroy(t.pool);
	heist_pool_destroy(other);
}

/* The reviewer's shape: X waits 10 ms for F, then cancels it; F runs until it is
 * cancelled. Had X's worker run F inside the timed wait (F is queued in X's pool, and
 * nobody else can run it), F would sit on top of X forever. */
struct timed_cancel {
	heist_pool *pool;
	pthread_t waiter;
	atomic_int f_ran_on_waiter;
	atomic_int timed_out;
	atomic_int result;
};

static int
until_cancelled(void *arg)
{
	struct timed_cancel *c = arg;
	if (pthread_equal(pthread_self(), c->waiter))
		atomic_store(&c->f_ran_on_waiter, 1);
	bool ok;
	POLL(ok, heist_cancelled());
	return ok ? 0 : -1;
}

static int
wait_then_cancel(void *arg)
{
	struct timed_cancel *c = arg;
	heist_future *f;
	c->waiter = pthread_self();
	if (heist_submit(c->pool, until_cancelled, c, &f))
		return -1;
	atomic_store(&c->timed_out, !heist_future_wait_for(f, 10 * 1000 * 1000));
	heist_future_cancel(f);
	atomic_store(&c->result, heist_future_wait(f));
	heist_future_release(f);
	return 0;
}

static void
timed_wait_on_a_worker_runs_not_even_the_awaited_job(void **state)
{
	(void)state;
	struct timed_cancel c = {.result = -2};
	c.pool = make_spare_pool(1, HEIST_SPARES_NONE);
	heist_future *x;
	assert_int_equal(heist_submit(c.pool, wait_then_cancel, &c, &x), 0);
	assert_int_equal(watched_wait(x), 0);
	heist_future_release(x);
	assert_int_equal(atomic_load(&c.timed_out), 1);
	assert_int_equal(atomic_load(&c.f_ran_on_waiter), 0);
	/* Cancelled while still queued: it never ran. */
	assert_int_equal(atomic_load(&c.result), ECANCELED);
	heist_pool_destroy(c.pool);
}

static void *
open_later(void *arg)
{
	nap(20 * 1000 * 1000);
	atomic_store(&((struct hold *)arg)->open, true);
	return NULL;
}

struct huge {
	heist_future *f;
	uint64_t timeout;
	atomic_int result;
};

static int
huge_waiter(void *arg)
{
	struct huge *h = arg;
	atomic_store(&h->result, heist_future_wait_for(h->f, h->timeout) ? 1 : 0);
	return 0;
}

/* UINT64_MAX and UINT64_MAX - 1 mean "forever": the wait returns true once the task
 * is done, on an outside thread and on a worker (of another pool, so that it parks). */
static void
huge_timeouts_mean_forever(void **state)
{
	(void)state;
	static const uint64_t timeouts[] = {UINT64_MAX, UINT64_MAX - 1, UINT64_MAX / 2};
	heist_pool *pool = make_spare_pool(1, 0), *waiters = make_spare_pool(1, 0);
	for (size_t k = 0; k < sizeof(timeouts) / sizeof(timeouts[0]); k++) {
		for (int on_worker = 0; on_worker < 2; on_worker++) {
			struct hold hold = {0};
			struct huge h = {.timeout = timeouts[k], .result = -1};
			pthread_t opener;
			bool ok;
			assert_int_equal(heist_submit(pool, hold_task, &hold, &h.f), 0);
			POLL(ok, atomic_load(&hold.entered) == 1);
			assert_true(ok);
			assert_int_equal(pthread_create(&opener, NULL, open_later, &hold), 0);
			if (on_worker)
				assert_int_equal(heist_run(waiters, huge_waiter, &h), 0);
			else
				huge_waiter(&h);
			pthread_join(opener, NULL);
			assert_int_equal(atomic_load(&h.result), 1);
			assert_true(heist_future_done(h.f));
			heist_future_release(h.f);
		}
	}
	heist_pool_destroy(waiters);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* Independent pools                                                                  */

enum { WIDE = 5000 };	/* spawns in one frame: the deque (1024 slots) grows */

static int
leaf(void *arg)
{
	(void)arg;
	return 1;
}

/* WIDE spawns, then their syncs; the records are the caller's (no allocation here). */
struct wide {
	heist_task *t;
	int sum;
};

static int
wide(void *arg)
{
	struct wide *w = arg;
	w->sum = 0;
	for (int i = 0; i < WIDE; i++)
		heist_spawn(&w->t[i], leaf, NULL);
	for (int i = WIDE; i-- > 0;)
		w->sum += heist_sync(&w->t[i]);
	return 0;
}

static struct wide
wide_new(void)
{
	struct wide w = {malloc(sizeof(heist_task) * WIDE), 0};
	assert_non_null(w.t);
	return w;
}

static int
blocked_body(void *arg, size_t b, size_t e)
{
	(void)b;
	(void)e;
	hold_pass(arg);
	return 0;
}

struct outside_loop {
	heist_pool *pool;
	struct hold *hold;
	atomic_int result;
};

static void *
outside_loop_main(void *arg)
{
	struct outside_loop *o = arg;
	atomic_store(&o->result, heist_for_each(o->pool, 0, 1, 1, blocked_body, o->hold));
	return NULL;
}

struct destroyer {
	heist_pool *pool;
	atomic_bool done;
};

static void *
destroy_main(void *arg)
{
	struct destroyer *d = arg;
	heist_pool_destroy(d->pool);
	atomic_store(&d->done, true);
	return NULL;
}

static void
destroying_a_pool_waits_for_nothing_of_other_pools(void **state)
{
	(void)state;
	heist_pool *a = make_spare_pool(1, 0), *c = make_spare_pool(1, 0);
	struct hold hold = {0};
	heist_future *fa;
	bool ok;

	/* A task of pool A and an outside for_each body on pool C, both blocked. */
	assert_int_equal(heist_submit(a, hold_task, &hold, &fa), 0);
	struct outside_loop o = {.pool = c, .hold = &hold, .result = -1};
	pthread_t outside;
	assert_int_equal(pthread_create(&outside, NULL, outside_loop_main, &o), 0);
	POLL(ok, atomic_load(&hold.entered) == 2);
	assert_true(ok);

	/* Pool B grows its deque (one worker: nobody steals, all WIDE are queued at
	 * once), then another thread destroys it. */
	struct destroyer d = {.pool = make_spare_pool(1, 0)};
	struct wide w = wide_new();
	assert_int_equal(heist_run(d.pool, wide, &w), 0);
	assert_int_equal(w.sum, WIDE);
	free(w.t);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, destroy_main, &d), 0);
	POLL(ok, atomic_load(&d.done));
	atomic_store(&hold.open, true);	/* free A and C whatever happened */
	assert_true(ok);
	pthread_join(th, NULL);

	pthread_join(outside, NULL);
	assert_int_equal(atomic_load(&o.result), 0);
	assert_int_equal(watched_wait(fa), 0);
	heist_future_release(fa);
	heist_pool_destroy(a);
	heist_pool_destroy(c);
}

/* ---------------------------------------------------------------------------------- */
/* No memory, no threads                                                              */

/* The first growth of a deque with every allocation failing: each spawn that finds no
 * room runs its child at once, as heist_spawn promises; nothing aborts. */
static void
first_growth_without_memory_runs_children_inline(void **state)
{
	(void)state;
	heist_pool *pool = make_spare_pool(1, 0);
	struct wide w = wide_new();
	/* Warm this thread's record cache, so that heist_run's own submit needs no
	 * allocation while they fail. */
	assert_int_equal(heist_run(pool, leaf, NULL), 1);
	fault_fail_all(FAULT_ALLOC, FAULT_ANY_THREAD);
	int r = heist_run(pool, wide, &w);
	uint64_t failed = fault_disarm(FAULT_ALLOC);
	assert_int_equal(r, 0);
	assert_int_equal(w.sum, WIDE);
	assert_true(failed > 0);	/* the growth was tried, and failed */
	free(w.t);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* Misuse aborts with a message                                                       */

/* In a forked child, create a one-worker pool and hand it to misuse; expect the child
 * to abort, with `what` in its stderr. */
static void
expect_abort(void (*misuse)(heist_pool *), const char *what)
{
#if defined(TEST_TSAN)
	(void)misuse;
	(void)what;
	skip();	/* ThreadSanitizer does not follow a multi-threaded fork well */
#elif defined(TEST_NO_FORK)
	(void)misuse;
	(void)what;
	SKIP_WITHOUT_FORK();
#else
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct heist_config cfg = {.threads = 1};
		heist_pool *pool;
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		if (heist_pool_create(&pool, &cfg) == 0)
			misuse(pool);
		_exit(0);	/* it did not abort */
	}
	close(fds[1]);
	char buf[1024];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(buf) - 1 && (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fds[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
		fail_msg("expected an abort (%s); status 0x%x, stderr: %s", what, status, buf);
	if (!strstr(buf, what))
		fail_msg("the message lacks \"%s\": %s", what, buf);
#endif
}

static int
sync_unspawned(void *arg)
{
	(void)arg;
	heist_task t;
	memset(&t, 0, sizeof(t));
	return heist_sync(&t);
}

static void
misuse_sync_unspawned(heist_pool *pool)
{
	heist_run(pool, sync_unspawned, NULL);
}

#ifndef NDEBUG
static int
sync_twice(void *arg)
{
	(void)arg;
	heist_task t;
	heist_spawn(&t, leaf, NULL);
	heist_sync(&t);
	return heist_sync(&t);
}

static void
misuse_sync_twice(heist_pool *pool)
{
	heist_run(pool, sync_twice, NULL);
}
#endif

static void
misuse_release_twice(heist_pool *pool)
{
	static struct hold hold;
	heist_future *f, *queued;
	heist_submit(pool, hold_task, &hold, &f);	/* occupies the worker */
	heist_submit(pool, leaf, NULL, &queued);	/* stays queued */
	heist_future_release(queued);
	heist_future_release(queued);
}

static void
misuse_destroy_twice(heist_pool *pool)
{
	heist_pool_destroy(pool);
	heist_pool_destroy(pool);
}

static void
sync_of_a_record_never_spawned_aborts(void **state)
{
	(void)state;
	expect_abort(misuse_sync_unspawned, "no spawned task");
}

static void
second_sync_of_a_record_aborts_in_debug_builds(void **state)
{
	(void)state;
#ifdef NDEBUG
	skip();	/* release builds do not mark synced records (heist.h) */
#else
	expect_abort(misuse_sync_twice, "synced already");
#endif
}

static void
second_release_of_a_future_aborts(void **state)
{
	(void)state;
	expect_abort(misuse_release_twice, "already released");
}

static void
second_destroy_of_a_pool_aborts(void **state)
{
	(void)state;
	expect_abort(misuse_destroy_twice, "not alive");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(job_waiting_in_sync_is_not_buried_by_its_waiters),
		cmocka_unit_test(job_waiting_on_a_future_is_not_buried_by_its_waiters),
		cmocka_unit_test(shapes_complete_without_spare_threads),
		cmocka_unit_test(spares_stand_in_for_parked_workers_within_their_bound),
		cmocka_unit_test(idle_spares_go_away),
		cmocka_unit_test(timed_wait_on_a_worker_runs_no_other_job),
		cmocka_unit_test(timed_wait_on_a_worker_runs_not_even_the_awaited_job),
		cmocka_unit_test(huge_timeouts_mean_forever),
		cmocka_unit_test(destroying_a_pool_waits_for_nothing_of_other_pools),
		cmocka_unit_test(first_growth_without_memory_runs_children_inline),
		cmocka_unit_test(shapes_complete_when_spares_cannot_start),
		cmocka_unit_test(sync_of_a_record_never_spawned_aborts),
		cmocka_unit_test(second_sync_of_a_record_aborts_in_debug_builds),
		cmocka_unit_test(second_release_of_a_future_aborts),
		cmocka_unit_test(second_destroy_of_a_pool_aborts),
	};
	return RUN_TESTS(tests);
}
