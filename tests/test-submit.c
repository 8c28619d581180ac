/* SPDX-License-Identifier: MIT */
/* test-submit.c - submits from threads outside the pool, seen from the public API:
 * many producers at once, each task run once; bursts after every worker went to
 * sleep, from one thread and from several, which finish only if every sleeper is woken;
 * back-pressure at the injector limit, which blocks outside submits and never a
 * worker's; and a submit that cannot allocate, which fails with ENOMEM, queues nothing
 * and leaves the pool working (injected by faults.c); a light load, whose workers
 * sleep between its tasks however long their searches may spin. The injector and the sleep
 * protocol alone are tested in test-injector.c and test-sleep.c, submits during
 * destroy in test-pool.c. Rules and helpers: common.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common.h"
#include "faults.h"
#include "clock.h"	/* white-box: heist__now_ns */
#include "pool.h"	/* white-box: the idle epoch */
#include "record.h"	/* white-box: heist__record_idle_ns */

/* Sizes. Sanitizer builds run these as they are. */
enum { PRODUCERS = 4, PRODUCER_TASKS = 100000, BURSTS = 50 };

/* ---------------------------------------------------------------------------------- */
/* Many outside producers                                                             */

struct producer {
	heist_pool *pool;
	uintptr_t first, count;
	atomic_uint *errors;
};

static void *
producer_main(void *arg)
{
	struct producer *p = arg;

	for (uintptr_t i = p->first; i < p->first + p->count; i++)
		if (heist_submit(p->pool, id_task, (void *)i, NULL) != 0)
			atomic_fetch_add(p->errors, 1);
	return NULL;
}

static void
outside_producers_run_each_task_once(void **state)
{
	heist_pool *pool = make_pool(2);
	static struct producer p[PRODUCERS];
	static atomic_uint errors;
	pthread_t t[PRODUCERS];

	(void)state;
	atomic_store(&errors, 0);
	ids_alloc((size_t)PRODUCERS * PRODUCER_TASKS);
	for (int i = 0; i < PRODUCERS; i++) {
		p[i] = (struct producer){ pool, (uintptr_t)i * PRODUCER_TASKS, PRODUCER_TASKS,
					  &errors };
		assert_int_equal(pthread_create(&t[i], NULL, producer_main, &p[i]), 0);
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&errors), 0);
	ids_expect(0, (size_t)PRODUCERS * PRODUCER_TASKS, 1);
	ids_free();
}

/* ---------------------------------------------------------------------------------- */
/* Sleep and wake-up                                                                  */

/* One burst: `extras` counting tasks, then one rendezvous task per worker. A
 * rendezvous task holds its worker until every worker holds one, so a burst only
 * completes if every sleeping worker was woken: a lost wake-up leaves tasks queued. */
struct burst {
	atomic_uint arrived;
	atomic_uint finished;
	atomic_uint extras_done;
	atomic_uint stuck;
	atomic_int release;
};

static int
rendezvous_task(void *arg)
{
	struct burst *b = arg;
	bool ok;

	atomic_fetch_add(&b->arrived, 1);
	POLL(ok, atomic_load(&b->release));
	if (!ok)
		atomic_fetch_add(&b->stuck, 1);
	atomic_fetch_add(&b->finished, 1);
	return 0;
}

struct burst_submitter {
	heist_pool *pool;
	struct burst *b;
	unsigned self, submitters, extras, workers;
	atomic_int *go;
	atomic_uint *errors;
};

static void *
burst_submitter_main(void *arg)
{
	struct burst_submitter *s = arg;

	while (!atomic_load(s->go))
		nap(NAP_NS / 4);
	/* Task k of the burst is this submitter's when k % submitters == self. */
	for (unsigned k = s->self; k < s->extras + s->workers; k += s->submitters) {
		int rc = k < s->extras
			? heist_submit(s->pool, count_task, &s->b->extras_done, NULL)
			: heist_submit(s->pool, rendezvous_task, s->b, NULL);
		if (rc != 0)
			atomic_fetch_add(s->errors, 1);
	}
	return NULL;
}

static void
read_sleeps(heist_pool *pool, uint64_t *sleeps, unsigned workers)
{
	for (unsigned w = 0; w < workers; w++) {
		struct heist_worker_stats ws;
		assert_int_equal(heist_pool_worker_stats(pool, w, &ws), 0);
		sleeps[w] = ws.sleeps;
	}
}

static bool
all_slept_since(heist_pool *pool, const uint64_t *base, unsigned workers)
{
	for (unsigned w = 0; w < workers; w++) {
		struct heist_worker_stats ws;
		if (heist_pool_worker_stats(pool, w, &ws) != 0 || ws.sleeps <= base[w])
			return false;
	}
	return true;
}

static void
run_bursts(unsigned submitters)
{
	enum { WORKERS = 4, MAX_SUBMITTERS = 4 };
	heist_pool *pool = make_pool(WORKERS);
	uint64_t base[WORKERS];
	static struct burst b;
	static struct burst_submitter s[MAX_SUBMITTERS];
	static atomic_int go;
	static atomic_uint errors;
	bool ok;

	assert_true(submitters >= 1 && submitters <= MAX_SUBMITTERS);
	atomic_store(&errors, 0);
	for (unsigned n = 0; n < BURSTS; n++) {
		pthread_t t[MAX_SUBMITTERS];
		unsigned extras = n % 4;	/* plain tasks, submitted before the rendezvous */
		heist_future *f = NULL;

		/* Rendezvous tasks of the last burst have all finished with b. */
		b = (struct burst){ 0 };
		atomic_store(&go, 0);
		/* Every fifth burst opens with one task waited for through a future. */
		if (n % 5 == 0) {
			assert_int_equal(heist_submit(pool, ret_int, (void *)9, &f), 0);
			assert_true(heist_future_wait_for(f, LONG_WAIT_NS));
			assert_int_equal(heist_future_wait(f), 9);
			heist_future_release(f);
		}
		for (unsigned i = 0; i < submitters; i++) {
			s[i] = (struct burst_submitter){ pool, &b, i, submitters, extras,
							 WORKERS, &go, &errors };
			assert_int_equal(pthread_create(&t[i], NULL, burst_submitter_main,
							&s[i]), 0);
		}
		atomic_store(&go, 1);
		for (unsigned i = 0; i < submitters; i++)
			pthread_join(t[i], NULL);
		POLL(ok, atomic_load(&b.arrived) == WORKERS);
		if (!ok)
			fail_msg("burst %u: %u of %u workers woke up", n,
				 atomic_load(&b.arrived), WORKERS);
		/* Every worker is awake, inside a rendezvous task: any sleep counted from
		 * here on happened after this burst. */
		read_sleeps(pool, base, WORKERS);
		atomic_store(&b.release, 1);
		POLL(ok, atomic_load(&b.finished) == WORKERS &&
			 atomic_load(&b.extras_done) == extras);
		if (!ok)
			fail_msg("burst %u: %u extra tasks of %u ran", n,
				 atomic_load(&b.extras_done), extras);
		assert_int_equal(atomic_load(&b.stuck), 0);
		/* Now the idle gap: wait until every worker has gone to sleep. */
		POLL(ok, all_slept_since(pool, base, WORKERS));
		if (!ok)
			fail_msg("burst %u: the idle workers never went to sleep", n);
	}
	assert_int_equal(atomic_load(&errors), 0);
	heist_pool_destroy(pool);
}

static void
bursts_after_all_workers_sleep_complete(void **state)
{
	(void)state;
	run_bursts(1);
}

static void
bursts_from_several_threads_after_all_workers_sleep_complete(void **state)
{
	(void)state;
	run_bursts(3);
}

/* ---------------------------------------------------------------------------------- */
/* Injector back-pressure                                                             */

struct limited_producer {
	heist_pool *pool;
	struct hold *hold;
	atomic_uint submitted;	/* submits that returned */
	atomic_uint errors;
	atomic_uint runs;
};

static void *
limited_producer_main(void *arg)
{
	struct limited_producer *p = arg;

	/* The first task holds the only worker; wait until it does, so that the worker
	 * cannot have taken any other task with it. */
	if (heist_submit(p->pool, hold_task, p->hold, NULL) != 0)
		atomic_fetch_add(&p->errors, 1);
	atomic_fetch_add(&p->submitted, 1);
	while (atomic_load(&p->hold->entered) == 0)
		nap(NAP_NS / 4);
	for (int i = 1; i < 100; i++) {
		if (heist_submit(p->pool, count_task, &p->runs, NULL) != 0)
			atomic_fetch_add(&p->errors, 1);
		atomic_fetch_add(&p->submitted, 1);
	}
	return NULL;
}

static void
outside_submit_blocks_at_the_injector_limit(void **state)
{
	enum { LIMIT = 4 };
	struct heist_config cfg = { .threads = 1, .injector_limit = LIMIT };
	static struct hold h;
	static struct limited_producer p;
	heist_pool *pool = NULL;
	pthread_t t;
	size_t pending;
	bool ok;

	(void)state;
	h = (struct hold){ 0 };
	p = (struct limited_producer){ .hold = &h };
	assert_int_equal(heist_pool_create(&pool, &cfg), 0);
	p.pool = pool;
	assert_int_equal(pthread_create(&t, NULL, limited_producer_main, &p), 0);
	POLL(ok, heist_pool_pending(pool) >= LIMIT);
	assert_true(ok);
	/* Give a producer that does not block the chance to run ahead. */
	for (int i = 0; i < 50; i++) {
		nap(2 * 1000 * 1000);
		pending = heist_pool_pending(pool);
		if (pending > LIMIT)
			fail_msg("%zu tasks pending, limit %d", pending, LIMIT);
	}
	assert_int_equal(heist_pool_pending(pool), LIMIT);
	assert_true(atomic_load(&p.submitted) <= LIMIT + 1);	/* + the gated one */
	assert_int_equal(atomic_load(&p.runs), 0);
	atomic_store(&h.open, 1);
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&p.submitted), 100);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&p.errors), 0);
	assert_int_equal(atomic_load(&p.runs), 99);
	assert_int_equal(atomic_load(&h.left), 1);
}

/* A task on the only worker submits more tasks than the limit: worker submits go to
 * its own deque, so they must not block (blocking here could never end). */
struct fan {
	heist_pool *pool;
	atomic_uint runs;
	atomic_uint errors;
};

static int
fan_out_task(void *arg)
{
	struct fan *fan = arg;

	for (int i = 0; i < 100; i++)
		if (heist_submit(fan->pool, count_task, &fan->runs, NULL) != 0)
			atomic_fetch_add(&fan->errors, 1);
	return 0;
}

static void
worker_submits_do_not_block_at_the_injector_limit(void **state)
{
	struct heist_config cfg = { .threads = 1, .injector_limit = 2 };
	static struct fan fan;
	heist_future *f = NULL;

	(void)state;
	fan = (struct fan){ 0 };
	assert_int_equal(heist_pool_create(&fan.pool, &cfg), 0);
	assert_int_equal(heist_submit(fan.pool, fan_out_task, &fan, &f), 0);
	assert_true(heist_future_wait_for(f, LONG_WAIT_NS));
	assert_int_equal(heist_future_wait(f), 0);
	heist_future_release(f);
	heist_pool_destroy(fan.pool);
	assert_int_equal(atomic_load(&fan.errors), 0);
	assert_int_equal(atomic_load(&fan.runs), 100);
}

/* ---------------------------------------------------------------------------------- */
/* Out of memory                                                                      */

/* A thread that has never submitted, with every allocation it makes failing, submits
 * until a submit has to allocate (the worker is held, so no task record comes back
 * for reuse): that submit must fail with ENOMEM and queue nothing. */
enum { OOM_MAX = 1 << 16 };

struct oom {
	heist_pool *pool;
	bool with_futures;
	uintptr_t first_id;
	heist_future **futs;
	unsigned accepted;
	int rc;
	void *failed_out;
	size_t pending_before, pending_after;
	uint64_t failures;
	int rc_after;
	heist_future *f_after;
};

static void *
oom_main(void *arg)
{
	struct oom *o = arg;

	o->rc = 0;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	for (unsigned i = 0; i < OOM_MAX; i++) {
		heist_future *f = SENTINEL;
		size_t before = heist_pool_pending(o->pool);
		int rc = heist_submit(o->pool, id_task, (void *)(o->first_id + i),
				      o->with_futures ? &f : NULL);
		if (rc != 0) {
			o->rc = rc;
			o->failed_out = f;
			o->pending_before = before;
			o->pending_after = heist_pool_pending(o->pool);
			break;
		}
		if (o->with_futures)
			o->futs[o->accepted] = f;
		o->accepted++;
	}
	o->failures = fault_disarm(FAULT_ALLOC);
	/* Disarmed: the same thread can submit again. */
	o->rc_after = heist_submit(o->pool, id_task, (void *)(o->first_id + OOM_MAX),
				   &o->f_after);
	return NULL;
}

static void
submit_reports_enomem_and_the_pool_recovers(void **state)
{
	heist_pool *pool = make_pool(1);
	static struct hold h;
	static struct oom o[2];
	pthread_t t;
	size_t queued = 0;

	(void)state;
	h = (struct hold){ 0 };
	ids_alloc(2 * (OOM_MAX + 1));
	hold_worker(pool, &h, NULL);
	for (int k = 0; k < 2; k++) {
		o[k] = (struct oom){ .pool = pool, .with_futures = k == 0,
				     .first_id = (uintptr_t)k * (OOM_MAX + 1) };
		o[k].futs = calloc(OOM_MAX, sizeof *o[k].futs);
		assert_non_null(o[k].futs);
		assert_int_equal(pthread_create(&t, NULL, oom_main, &o[k]), 0);
		pthread_join(t, NULL);
		if (o[k].rc == 0)
			fail_msg("%d submits%s never allocated", OOM_MAX,
				 k == 0 ? " with futures" : "");
		assert_int_equal(o[k].rc, ENOMEM);
		assert_true(o[k].failures >= 1);
		if (k == 0)
			assert_null(o[k].failed_out);
		/* Nothing was queued by the failed submit (the worker is held). */
		assert_int_equal(o[k].pending_before, queued + o[k].accepted);
		assert_int_equal(o[k].pending_after, o[k].pending_before);
		assert_int_equal(o[k].rc_after, 0);
		queued += o[k].accepted + 1;
		assert_int_equal(heist_pool_pending(pool), queued);
	}
	atomic_store(&h.open, 1);
	for (int k = 0; k < 2; k++) {
		for (unsigned i = 0; i < o[k].accepted && o[k].with_futures; i++) {
			uintptr_t id = o[k].first_id + i;
			assert_int_equal(heist_future_wait(o[k].futs[i]), (int)(id % 1000) + 1);
			heist_future_release(o[k].futs[i]);
		}
		assert_int_equal(heist_future_wait(o[k].f_after),
				 (int)((o[k].first_id + OOM_MAX) % 1000) + 1);
		heist_future_release(o[k].f_after);
	}
	check_pool_works(pool);
	heist_pool_destroy(pool);
	for (int k = 0; k < 2; k++) {
		uintptr_t first = o[k].first_id;
		ids_expect(first, first + o[k].accepted, 1);
		ids_expect(first + o[k].accepted, first + OOM_MAX, 0);	/* the failed one */
		ids_expect(first + OOM_MAX, first + OOM_MAX + 1, 1);
		free(o[k].futs);
	}
	ids_free();
}

/* ---------------------------------------------------------------------------------- */
/* heist_pool_wait_idle                                                               */

enum { IDLE_ROOTS = 50, IDLE_KIDS = 8, IDLE_GRANDKIDS = 4 };

struct family {
	heist_pool *pool;
	atomic_uint done;
	atomic_uint errors;
};

static int
grandkid(void *arg)
{
	nap(20 * 1000);
	atomic_fetch_add(&((struct family *)arg)->done, 1);
	return 0;
}

static int
kid(void *arg)
{
	struct family *f = arg;
	for (int i = 0; i < IDLE_GRANDKIDS; i++)
		if (heist_submit(f->pool, grandkid, f, NULL))
			atomic_fetch_add(&f->errors, 1);
	atomic_fetch_add(&f->done, 1);
	return 0;
}

static int
root(void *arg)
{
	struct family *f = arg;
	for (int i = 0; i < IDLE_KIDS; i++)
		if (heist_submit(f->pool, kid, f, NULL))
			atomic_fetch_add(&f->errors, 1);
	atomic_fetch_add(&f->done, 1);
	return 0;
}

static void
wait_idle_waits_for_every_task_and_all_they_submit(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	struct family f = {pool, 0, 0};
	assert_int_equal(heist_pool_wait_idle(pool), 0);	/* idle: at once */
	for (int i = 0; i < IDLE_ROOTS; i++)
		assert_int_equal(heist_submit(pool, root, &f, NULL), 0);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	/* Exact at return: no poll. */
	assert_int_equal(atomic_load(&f.done),
			 IDLE_ROOTS * (1 + IDLE_KIDS + IDLE_KIDS * IDLE_GRANDKIDS));
	assert_int_equal(atomic_load(&f.errors), 0);
	heist_pool_destroy(pool);
}

/* Submitters keep the pool busy while waiters wait, again and again: every wait must
 * return (a wait for "no task at all" would not), and by then every task that was
 * accepted before it was called has finished. The injector limit keeps the submitters
 * from queueing millions ahead of the workers, which a wait would have to drain. */
enum { IDLE_WAITERS = 4, IDLE_SUBMITTERS = 4, IDLE_ROUNDS = 20 };

struct busy {
	heist_pool *pool;
	atomic_ulong accepted, finished;
	atomic_int waiters_left;
	atomic_uint early;	/* a wait returned before a task accepted before it ended */
};

static int
busy_task(void *arg)
{
	atomic_fetch_add(&((struct busy *)arg)->finished, 1);
	return 0;
}

static void *
busy_submitter(void *arg)
{
	struct busy *b = arg;
	while (atomic_load(&b->waiters_left) > 0) {
		if (heist_submit(b->pool, busy_task, b, NULL) == 0)
			atomic_fetch_add(&b->accepted, 1);
	}
	return NULL;
}

static void *
busy_waiter(void *arg)
{
	struct busy *b = arg;
	for (int r = 0; r < IDLE_ROUNDS; r++) {
		unsigned long before = atomic_load(&b->accepted);
		if (heist_pool_wait_idle(b->pool) != 0 || atomic_load(&b->finished) < before)
			atomic_fetch_add(&b->early, 1);
	}
	atomic_fetch_sub(&b->waiters_left, 1);
	return NULL;
}

static void
wait_idle_returns_while_others_keep_submitting(void **state)
{
	(void)state;
	struct heist_config cfg = {.threads = 2, .injector_limit = 256};
	heist_pool *pool = make_pool_cfg(&cfg);
	struct busy b = {.pool = pool, .waiters_left = IDLE_WAITERS};
	pthread_t s[IDLE_SUBMITTERS], w[IDLE_WAITERS];
	for (int i = 0; i < IDLE_SUBMITTERS; i++)
		assert_int_equal(pthread_create(&s[i], NULL, busy_submitter, &b), 0);
	for (int i = 0; i < IDLE_WAITERS; i++)
		assert_int_equal(pthread_create(&w[i], NULL, busy_waiter, &b), 0);
	for (int i = 0; i < IDLE_WAITERS; i++)
		pthread_join(w[i], NULL);
	for (int i = 0; i < IDLE_SUBMITTERS; i++)
		pthread_join(s[i], NULL);
	assert_int_equal(atomic_load(&b.early), 0);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	assert_int_equal(atomic_load(&b.finished), atomic_load(&b.accepted));
	heist_pool_destroy(pool);
}

/* A fork-join child that another worker stole counts what it submits in its parent
 * job's epoch: a wait that began before the parent was submitted does not wait for
 * it. (Before, a stolen child counted in the epoch being waited for while a wait was
 * under way, so a pool whose stolen children kept submitting kept that epoch from
 * ever draining.) Here what the child submits is held until the wait has returned. */
static struct hold idle_old_hold, idle_late_hold;

struct late_parent {
	heist_pool *pool;
	atomic_int parent_worker, child_worker;
	atomic_int submitted;
};

static int
late_child(void *arg)
{
	struct late_parent *lp = arg;
	atomic_store(&lp->child_worker, heist_worker_index());
	if (heist_submit(lp->pool, hold_task, &idle_late_hold, NULL) == 0)
		atomic_store(&lp->submitted, 1);
	return 0;
}

static int
noop_task(void *arg)
{
	(void)arg;
	return 0;
}

static int
late_parent_task(void *arg)
{
	struct late_parent *lp = arg;
	atomic_store(&lp->parent_worker, heist_worker_index());
	heist_task t;
	heist_spawn(&t, late_child, lp);
	/* A submit publishes the deque, the child included, for an idle worker. */
	(void)heist_submit(lp->pool, noop_task, NULL, NULL);
	bool stolen;	/* if not within the bound, sync runs it: the test says so */
	POLL(stolen, atomic_load(&lp->child_worker) != -2);
	(void)stolen;
	return heist_sync(&t);
}

struct idle_wait {
	heist_pool *pool;
	int result;
	atomic_int returned;
};

static void *
idle_wait_main(void *arg)
{
	struct idle_wait *iw = arg;
	iw->result = heist_pool_wait_idle(iw->pool);
	atomic_store(&iw->returned, 1);
	return NULL;
}

static void
wait_idle_does_not_wait_for_later_work_of_stolen_children(void **state)
{
	(void)state;
	idle_old_hold = (struct hold){0};
	idle_late_hold = (struct hold){0};
	struct heist_config cfg = {.threads = 3, .max_spares = HEIST_SPARES_NONE};
	heist_pool *pool = make_pool_cfg(&cfg);
	heist_future *old, *parent;
	hold_worker(pool, &idle_old_hold, &old);	/* what the wait waits for */
	struct idle_wait iw = {pool, -1, 0};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, idle_wait_main, &iw), 0);
	bool ok;
	/* White-box: the waiter moved the epoch on; what comes now is later work. */
	POLL(ok, atomic_load(&pool->epoch) == 1);
	assert_true(ok);
	struct late_parent lp = {pool, -2, -2, 0};
	assert_int_equal(heist_submit(pool, late_parent_task, &lp, &parent), 0);
	assert_true(heist_future_wait_for(parent, LONG_WAIT_NS));
	assert_int_equal(heist_future_wait(parent), 0);
	heist_future_release(parent);
	assert_int_equal(atomic_load(&lp.submitted), 1);
	assert_true(atomic_load(&lp.child_worker) >= 0);
	assert_int_not_equal(atomic_load(&lp.child_worker), atomic_load(&lp.parent_worker));
	atomic_store(&idle_old_hold.open, 1);
	POLL(ok, atomic_load(&iw.returned));	/* the late hold is still closed */
	if (!ok)
		fail_msg("heist_pool_wait_idle waited for work submitted after it began");
	pthread_join(th, NULL);
	assert_int_equal(iw.result, 0);
	atomic_store(&idle_late_hold.open, 1);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	assert_int_equal(atomic_load(&idle_late_hold.left), 1);
	assert_int_equal(heist_future_wait(old), 0);
	heist_future_release(old);
	heist_pool_destroy(pool);
}

static int
wait_idle_inside(void *arg)
{
	return heist_pool_wait_idle(arg);
}

static void
wait_idle_from_a_task_is_edeadlk(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	assert_int_equal(heist_pool_wait_idle(NULL), EINVAL);
	assert_int_equal(heist_run(pool, wait_idle_inside, pool), EDEADLK);
	heist_pool_destroy(pool);
}

/* Memory after bursts (heist.h, "Memory"): two bursts of fire-and-forget submits from
 * this thread, each one all in flight at once (both workers held until it is queued),
 * leave the process's heap, after heist_pool_wait_idle, within a few slabs of where it
 * was before the burst; and no more after heist_pool_destroy. Without the trim the
 * records of a burst (BURST x 128 bytes, 6.4 MB) stayed in this thread's cache. */
static struct hold burst_holds[2];

static void
bursts_give_their_records_back_after_wait_idle(void **state)
{
	enum { BURST = 50000, SLACK = 1 << 20 };
	(void)state;
	heist_pool *pool = make_pool(2);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	size_t before = heap_in_use();
	if (!before) {
		heist_pool_destroy(pool);
		skip_because("no allocator statistics here (common.c, heap_in_use)");
	}
	static atomic_uint ran;
	for (int round = 0; round < 2; round++) {
		for (int k = 0; k < 2; k++) {
			atomic_store(&burst_holds[k].open, 0);
			atomic_store(&burst_holds[k].entered, 0);
			hold_worker(pool, &burst_holds[k], NULL);
		}
		for (int i = 0; i < BURST; i++)
			assert_int_equal(heist_submit(pool, count_task, &ran, NULL), 0);
		size_t full = heap_in_use();
		for (int k = 0; k < 2; k++)
			atomic_store(&burst_holds[k].open, 1);
		assert_int_equal(heist_pool_wait_idle(pool), 0);
		size_t after = heap_in_use();
		print_message("burst %d: heap %zu -> %zu -> %zu bytes\n", round + 1, before,
			      full, after);
		/* Half the burst at least in new slabs: the slab a trim keeps holds
		 * 2,047 records of it. */
		assert_true(full >= before + (size_t)BURST / 2 * 128);
		assert_true(after <= before + SLACK);
	}
	assert_int_equal(atomic_load(&ran), 2 * BURST);
	heist_pool_destroy(pool);
	assert_true(heap_in_use() <= before);
}

/* Memory after a burst submitted from a task (heist.h, "Memory"): the records come
 * from the worker's cache, and go back once the worker is idle and the cache has
 * needed no new slab for heist__record_idle_ns (lowered here to IDLE_NS): not at its
 * first sleep, which would unmap them for the next burst to fault in again, and not
 * never. Its last new slab came after t0, so memory seen given back at time t says
 * the trim came before t: it must be IDLE_NS after t0 at least. Nothing here fails
 * because the machine is slow: a slow one only sees the trim later. With a timer
 * pending far ahead, the sleeping worker keeps the timers (keep_timers) and trims
 * from there. */
enum { TASK_BURST = 50000 };

/* The heap with the whole burst queued: read on the worker, which cannot trim while it
 * runs this task (a reading after the burst ran could come after the trim). */
static _Atomic size_t burst_heap;

static int
burst_from_a_task(void *arg)
{
	heist_pool *pool = *(heist_pool **)arg;
	static atomic_uint ran;
	for (int i = 0; i < TASK_BURST; i++) {
		int err = heist_submit(pool, count_task, &ran, NULL);
		if (err)
			return err;
	}
	atomic_store(&burst_heap, heap_in_use());
	return 0;
}

static void
worker_gives_back_a_burst_once_idle(bool timer_pending)
{
	enum { SLACK = 1 << 20 };
	const uint64_t IDLE_NS = 300 * 1000 * 1000;
	uint64_t saved = heist__record_idle_ns;
	heist__record_idle_ns = IDLE_NS;	/* before the pool's threads start */
	atomic_store(&burst_heap, 0);
	heist_pool *pool = make_pool(1);
	heist_future *timer = NULL;
	if (timer_pending)
		assert_int_equal(heist_submit_delayed(pool, 3600 * UINT64_C(1000000000),
						      ret_int, NULL, &timer), 0);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	size_t before = heap_in_use();
	if (!before) {
		heist_future_release(timer);
		heist_pool_destroy(pool);
		heist__record_idle_ns = saved;
		skip_because("no allocator statistics here (common.c, heap_in_use)");
	}
	uint64_t t0 = heist__now_ns();
	assert_int_equal(heist_run(pool, burst_from_a_task, &pool), 0);
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	size_t full = atomic_load(&burst_heap);
	assert_true(full >= before + (size_t)TASK_BURST / 2 * 128);	/* half in new slabs */
	bool ok;
	POLL(ok, heap_in_use() <= before + SLACK);
	uint64_t seen = heist__now_ns();
	print_message("heap %zu -> %zu -> %zu bytes, given back %.3f s after the burst "
		      "began\n", before, full, heap_in_use(), (double)(seen - t0) / 1e9);
	if (!ok)
		fail_msg("the idle worker kept its burst's records");
	assert_true(seen - t0 >= IDLE_NS);
	if (timer) {
		/* The one worker keeps the timers as it sleeps: unless the burst ran
		 * for IDLE_NS and its sleep began with the trim, keep_timers trimmed. */
		assert_int_equal(atomic_load(&pool->timers.keeper), 0);
		heist_future_cancel(timer);
		assert_int_equal(heist_future_wait(timer), ECANCELED);
		heist_future_release(timer);
	}
	heist_pool_destroy(pool);
	heist__record_idle_ns = saved;
}

static void
a_worker_gives_back_a_burst_once_idle(void **state)
{
	(void)state;
	worker_gives_back_a_burst_once_idle(false);
}

static void
a_timer_keeper_gives_back_a_burst_once_idle(void **state)
{
	(void)state;
	worker_gives_back_a_burst_once_idle(true);
}

/* A light load: tasks submitted from outside at least 100 us apart, to a pool whose
 * searches would otherwise spin a million rounds (seconds) before sleeping. Work that
 * comes that far apart to an idle pool ends its idle searches after microseconds
 * (worker.c, search_over), so the workers sleep between the tasks: at least one
 * sleep per two tasks, where the full searches slept hardly ever. Not timed: the
 * gaps can only be longer than 100 us, never shorter, and that is all it relies on. */
static void
a_light_load_lets_the_workers_sleep_between_tasks(void **state)
{
	(void)state;
	enum { TASKS = 200, GAP_NS = 100 * 1000 };
	struct heist_config cfg = {.threads = 2, .spin = 1u << 20};
	heist_pool *pool = make_pool_cfg(&cfg);
	atomic_uint ran = 0;
	struct heist_stats a, b;
	assert_int_equal(heist_pool_stats(pool, &a), 0);
	for (int i = 0; i < TASKS; i++) {
		nap(GAP_NS);
		assert_int_equal(heist_submit(pool, count_task, &ran, NULL), 0);
	}
	assert_int_equal(heist_pool_wait_idle(pool), 0);
	assert_int_equal(heist_pool_stats(pool, &b), 0);
	print_message("%d tasks %d us apart: %llu sleeps\n", TASKS, GAP_NS / 1000,
		      (unsigned long long)(b.sleeps - a.sleeps));
	assert_int_equal(atomic_load(&ran), TASKS);
	assert_true(b.sleeps - a.sleeps >= TASKS / 2);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(outside_producers_run_each_task_once),
		cmocka_unit_test(bursts_after_all_workers_sleep_complete),
		cmocka_unit_test(bursts_from_several_threads_after_all_workers_sleep_complete),
		cmocka_unit_test(outside_submit_blocks_at_the_injector_limit),
		cmocka_unit_test(worker_submits_do_not_block_at_the_injector_limit),
		cmocka_unit_test(submit_reports_enomem_and_the_pool_recovers),
		cmocka_unit_test(wait_idle_waits_for_every_task_and_all_they_submit),
		cmocka_unit_test(wait_idle_returns_while_others_keep_submitting),
		cmocka_unit_test(wait_idle_from_a_task_is_edeadlk),
		cmocka_unit_test(wait_idle_does_not_wait_for_later_work_of_stolen_children),
		cmocka_unit_test(bursts_give_their_records_back_after_wait_idle),
		cmocka_unit_test(a_worker_gives_back_a_burst_once_idle),
		cmocka_unit_test(a_timer_keeper_gives_back_a_burst_once_idle),
		cmocka_unit_test(a_light_load_lets_the_workers_sleep_between_tasks),
	};
	return RUN_TESTS(tests);
}
