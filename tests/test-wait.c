/* test-wait.c - waiting that never deadlocks (src/wait.c, src/spare.c): the shapes that
 * hung before the waiting rule (a job that waits in heist_sync or heist_future_wait
 * while jobs queued behind it wait for it), with and without spare threads; spares
 * that stand in while workers are parked, stay within their bound and go away when
 * idle; timed waits on a worker that run nothing but the awaited job; timeouts too
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
#include <sys/wait.h>
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

/* heist_sync shape: a for_each of two indices in Z. Z splits off index 1, which the
 * idle worker steals (Z publishes a split at once while a worker is idle) and holds;
 * Z runs index 0, which returns only once the thief has index 1, so Z's sync of it
 * always finds it stolen, and waits. */
static int
shape_body(void *arg, size_t b, size_t e)
{
	struct shape *s = arg;
	for (size_t i = b; i < e; i++) {
		if (i == 1) {
			hold_pass(&s->hold);
		} else {
			bool ok;
			POLL(ok, atomic_load(&s->hold.entered) == 1);
			atomic_store(&s->z_waiting, ok);	/* Z syncs next */
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

/* Run one shape on a two-worker pool with the given spare bound; checks that every X
 * and Z finish, and returns the pool's statistics from before the destroy. */
static struct heist_stats
run_shape(bool through_future, unsigned max_spares)
{
	struct shape s = {.z_worker = -2};
	s.pool = make_spare_pool(2, max_spares);
	heist_future *fz = NULL, *fx[WAITERS] = {0};
	bool ok;

	if (through_future) {
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
	assert_true(ok);
	for (int i = 0; i < WAITERS; i++)
		assert_int_equal(heist_submit(s.pool, x_task, &s, &fx[i]), 0);
	nap(20 * 1000 * 1000);	/* a chance for Z's worker to take an X while it waits */
	struct heist_stats during = stats_of(s.pool);
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
	heist_pool_destroy(s.pool);
	assert_int_equal(atomic_load(&s.x_done), WAITERS);
	assert_int_equal(atomic_load(&s.x_bad), 0);
	/* The rule itself: Z's worker ran no X on top of Z. */
	assert_int_equal(atomic_load(&s.x_on_z_worker), 0);
	/* Spares too have a thread index within the pool's range. */
	assert_int_equal(atomic_load(&s.bad_thread_index), 0);
	return during;
}

static void
job_waiting_in_sync_is_not_buried_by_its_waiters(void **state)
{
	(void)state;
	run_shape(false, 0);
}

static void
job_waiting_on_a_future_is_not_buried_by_its_waiters(void **state)
{
	(void)state;
	run_shape(true, 0);
}

static void
shapes_complete_without_spare_threads(void **state)
{
	(void)state;
	struct heist_stats a = run_shape(false, HEIST_SPARES_NONE);
	struct heist_stats b = run_shape(true, HEIST_SPARES_NONE);
	assert_int_equal(a.spares_started + b.spares_started, 0);
}

/* While Z's worker is parked and X jobs wait in the injector, a spare stands in: the X
 * jobs start (and park in their own waits, each with a stand-in of its own, within
 * the bound) before the test lets Z finish. */
static void
spares_stand_in_for_parked_workers_within_their_bound(void **state)
{
	(void)state;
	enum { BOUND = 2 };
	struct heist_stats s = run_shape(true, BOUND);
	assert_true(s.parks > 0);
	assert_true(s.spares_started > 0);
	assert_true(s.spares <= BOUND);
}

static void
idle_spares_go_away(void **state)
{
	(void)state;
	uint64_t keep = heist__spare_keepalive_ns;
	heist__spare_keepalive_ns = 10 * 1000 * 1000;	/* 10 ms */
	struct shape s = {.z_worker = -2};
	s.pool = make_spare_pool(2, 0);
	heist_future *fz, *fx[WAITERS];
	bool ok;

	assert_int_equal(heist_submit(s.pool, y_hold, &s, &s.y), 0);
	POLL(ok, atomic_load(&s.hold.entered) == 1);
	assert_true(ok);
	assert_int_equal(heist_submit(s.pool, z_future, &s, &fz), 0);
	atomic_store(&s.z, fz);
	POLL(ok, atomic_load(&s.z_waiting));
	assert_true(ok);
	for (int i = 0; i < WAITERS; i++)
		assert_int_equal(heist_submit(s.pool, x_task, &s, &fx[i]), 0);
	/* Y holds one worker, Z parks on it, the X jobs are queued: spares must come. */
	POLL(ok, stats_of(s.pool).spares > 0);
	assert_true(ok);
	atomic_store(&s.hold.open, true);
	for (int i = 0; i < WAITERS; i++) {
		assert_int_equal(watched_wait(fx[i]), 0);
		heist_future_release(fx[i]);
	}
	assert_int_equal(watched_wait(fz), 0);
	heist_future_release(fz);
	heist_future_release(s.y);
	POLL(ok, stats_of(s.pool).spares == 0);	/* idle for the keep-alive: gone */
	assert_true(ok);
	heist_pool_destroy(s.pool);
	heist__spare_keepalive_ns = keep;
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

struct claim {
	heist_pool *pool;
	pthread_t waiter;
	atomic_int same_thread;
	atomic_int done;
};

static int
claimed_job(void *arg)
{
	struct claim *c = arg;
	atomic_store(&c->same_thread, pthread_equal(pthread_self(), c->waiter) ? 1 : 0);
	return 5;
}

static int
claim_waiter(void *arg)
{
	struct claim *c = arg;
	heist_future *f;
	c->waiter = pthread_self();
	if (heist_submit(c->pool, claimed_job, c, &f))
		return -1;
	/* The only worker is here: the job is queued, and the wait runs it. */
	bool done = heist_future_wait_for(f, WATCHDOG_NS);
	int r = heist_future_wait(f);
	heist_future_release(f);
	atomic_store(&c->done, done && r == 5);
	return 0;
}

static void
timed_wait_on_a_worker_runs_the_awaited_job_itself(void **state)
{
	(void)state;
	struct claim c = {.same_thread = -1};
	c.pool = make_spare_pool(1, HEIST_SPARES_NONE);
	assert_int_equal(heist_run(c.pool, claim_waiter, &c), 0);
	assert_int_equal(atomic_load(&c.done), 1);
	assert_int_equal(atomic_load(&c.same_thread), 1);
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

/* Spares cannot start (every pthread_create fails): the shapes still complete. */
static void
shapes_complete_when_spares_cannot_start(void **state)
{
	(void)state;
	struct shape s = {.z_worker = -2};
	s.pool = make_spare_pool(2, 0);
	heist_future *fz, *fx[WAITERS];
	bool ok;
	fault_fail_all(FAULT_THREAD, FAULT_ANY_THREAD);	/* after the workers started */
	assert_int_equal(heist_submit(s.pool, y_hold, &s, &s.y), 0);
	POLL(ok, atomic_load(&s.hold.entered) == 1);
	assert_true(ok);
	assert_int_equal(heist_submit(s.pool, z_future, &s, &fz), 0);
	atomic_store(&s.z, fz);
	POLL(ok, atomic_load(&s.z_waiting));
	assert_true(ok);
	for (int i = 0; i < WAITERS; i++)
		assert_int_equal(heist_submit(s.pool, x_task, &s, &fx[i]), 0);
	nap(20 * 1000 * 1000);
	atomic_store(&s.hold.open, true);
	for (int i = 0; i < WAITERS; i++) {
		assert_int_equal(watched_wait(fx[i]), 0);
		heist_future_release(fx[i]);
	}
	assert_int_equal(watched_wait(fz), 0);
	heist_future_release(fz);
	heist_future_release(s.y);
	fault_disarm(FAULT_THREAD);
	assert_int_equal(stats_of(s.pool).spares_started, 0);
	heist_pool_destroy(s.pool);
}

/* ---------------------------------------------------------------------------------- */
/* Misuse aborts with a message                                                       */

/* Run fn in a forked child; expect it to abort, with `what` in its stderr. */
static void
expect_abort(void (*fn)(void), const char *what)
{
#ifdef TEST_TSAN
	(void)fn;
	(void)what;
	skip();	/* ThreadSanitizer does not follow a multi-threaded fork well */
#else
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		fn();
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
misuse_sync_unspawned(void)
{
	heist_pool *pool;
	struct heist_config cfg = {.threads = 1};
	if (heist_pool_create(&pool, &cfg) == 0)
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
misuse_sync_twice(void)
{
	heist_pool *pool;
	struct heist_config cfg = {.threads = 1};
	if (heist_pool_create(&pool, &cfg) == 0)
		heist_run(pool, sync_twice, NULL);
}
#endif

static void
misuse_release_twice(void)
{
	heist_pool *pool;
	struct heist_config cfg = {.threads = 1};
	static struct hold hold;
	heist_future *f, *queued;
	if (heist_pool_create(&pool, &cfg))
		return;
	heist_submit(pool, hold_task, &hold, &f);	/* occupies the worker */
	heist_submit(pool, leaf, NULL, &queued);	/* stays queued */
	heist_future_release(queued);
	heist_future_release(queued);
}

static void
misuse_destroy_twice(void)
{
	heist_pool *pool;
	struct heist_config cfg = {.threads = 1};
	if (heist_pool_create(&pool, &cfg))
		return;
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
		cmocka_unit_test(timed_wait_on_a_worker_runs_the_awaited_job_itself),
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
