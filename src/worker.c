/* worker.c - the worker loop and the helping loops. In order of preference a worker
 * takes: the bottom of its own deque, a batch from the injector, one task stolen from
 * the top of a random victim's deque; after `spin` empty rounds it sleeps (sleep.h).
 * Waits inside a worker (a stolen sync, a future) never block the thread: they run
 * other work, stealing back from the thief first (leapfrogging, Wagner and Calder).
 *
 * RCU: workers are registered readers of liburcu's QSBR flavor. Its read side costs
 * nothing at all, which matters because every steal reads a victim's array; the price
 * is that each worker must report quiescent states, which it does between tasks and
 * in every idle round, and go offline while it sleeps. The memory-barrier flavor
 * would put a barrier on every steal, and the bulletproof one a lookup. */
#include "worker.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "futex.h"
#include "future.h"
#include "pool.h"
#include "profile.h"

__thread struct worker *heist__self __attribute__((tls_model("initial-exec")));

enum {
	BATCH_MAX = 32,		/* injector tasks taken at once */
	STEAL_RETRIES = 4,	/* tries on one victim that keeps losing CAS races */
	NAP_AFTER = 64,		/* empty helping rounds before a waiting worker naps */
	NAP_NS = 100000,	/* and for how long, at most, before it looks again */
};

static uint32_t
rng_next(struct worker *w)
{
	/* xorshift64*: a victim choice needs speed, not quality. */
	uint64_t x = w->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	w->rng = x;
	return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

/* Between empty looks for work: a few pauses, never long (a pause is up to ~65 cycles
 * on recent x86), so that a worker sees new work within a few hundred nanoseconds. */
static void
backoff(unsigned round)
{
	unsigned n = round < 3 ? 1u << round : 8;
	for (unsigned i = 0; i < n; i++)
		cpu_relax();
}

/* After many empty looks: give the core to a thread that may be what we wait for
 * (a preempted thief, a submitter on an oversubscribed machine). */
static void
backoff_long(unsigned round, unsigned patience)
{
	if (round < patience)
		backoff(round);
	else
		sched_yield();
}

static void
flush_done(struct worker *w)
{
	if (w->done_unflushed) {
		heist__pool_finished(w->pool, w->done_unflushed);
		w->done_unflushed = 0;
	}
}

void
heist__worker_publish(struct worker *w, int64_t keep)
{
	heist__deque_publish(&w->dq, keep);
	heist__sleep_notify(&w->pool->sleep);
}

noinline int
heist__worker_run_profiled(struct worker *w, struct task *t)
{
	uint64_t created = t->created_tsc, started = heist__tsc();
	int r = t->fn(t->arg);
	heist__profile_record(w->prof, w->index, created, started, heist__tsc_end());
	return r;
}

void
heist__worker_run(struct worker *w, struct task *t)
{
	/* relaxed: the kind never changes after the task was queued, and the queue's
	 * hand-off (deque publish or injector link, both release) ordered it. */
	if (atomic_load_explicit(&t->state, memory_order_relaxed) == TASK_JOB) {
		heist__job_run((struct heist_future *)t, w);	/* counts executed */
		w->done_unflushed++;
		return;
	}
	counter_add(&w->stats.executed, 1);
	/* relaxed: a hint for the owner's leapfrogging, not a publication. */
	atomic_store_explicit(&t->thief, w, memory_order_relaxed);
	/* The task belongs to another job than any this thread may be waiting in. */
	struct heist_future *outer = heist__job_swap_current(NULL);
	if (HEIST_PROFILER && unlikely(w->profile))
		t->result = heist__worker_run_profiled(w, t);	/* recorded before DONE */
	else
		t->result = t->fn(t->arg);
	heist__job_swap_current(outer);
	/* release: publishes result (and the task's writes) to the owner's acquire
	 * load in heist_sync. After this store the task record may be gone. */
	atomic_store_explicit(&t->state, TASK_DONE, memory_order_release);
}

static struct task *
steal_from(struct worker *w, struct worker *victim)
{
	for (int i = 0; i < STEAL_RETRIES; i++) {
		struct task *t;
		counter_add(&w->stats.steal_attempts, 1);
		switch (heist__deque_steal(&victim->dq, &t)) {
		case STEAL_OK:
			counter_add(&w->stats.stolen, 1);
			return t;
		case STEAL_EMPTY:
			return NULL;
		case STEAL_ABORT:
			cpu_relax();
			break;
		}
	}
	return NULL;
}

/* One pass over ranked victims: nearer ranks first, a random start in each. */
static struct task *
steal_ranked(struct worker *w, const struct victims *v)
{
	unsigned begin = 0;
	for (unsigned r = 0; r < v->nranks; r++) {
		unsigned size = v->rank_end[r] - begin, k = rng_next(w) % size;
		for (unsigned i = 0; i < size; i++) {
			unsigned victim = v->order[begin + (k + i) % size];
			struct task *t = steal_from(w, &w->pool->workers[victim]);
			if (t)
				return t;
		}
		begin = v->rank_end[r];
	}
	return steal_from(w, &w->pool->workers[w->pool->n]);	/* the guest slot */
}

/* One pass over every other worker, from a random one on. */
static struct task *
steal_round(struct worker *w)
{
	struct heist_pool *pool = w->pool;
	unsigned n = pool->slots;	/* the guest slot is a victim too */
	if (w->victims)
		return steal_ranked(w, w->victims);
	unsigned v = rng_next(w) % n;
	for (unsigned i = 0; i < n; i++, v = v + 1 == n ? 0 : v + 1) {
		if (v == w->index)
			continue;
		struct task *t = steal_from(w, &pool->workers[v]);
		if (t)
			return t;
	}
	return NULL;
}

/* Take a batch from the injector: run the first, queue the rest (publicly, so the
 * other workers can share it). */
static struct task *
take_injector(struct worker *w)
{
	struct heist_pool *pool = w->pool;
	struct task *batch[BATCH_MAX];
	/* relaxed: a hint; heist__injector_take decides. A guest takes no batch: it
	 * would leave the rest in a deque that no thread owns after the guest leaves. */
	size_t depth = atomic_load_explicit(&pool->injector.depth, memory_order_relaxed);
	if (!depth || w->index >= pool->n)
		return NULL;
	size_t want = depth / pool->n + 1;
	if (want > BATCH_MAX)
		want = BATCH_MAX;
	size_t k = heist__injector_take(&pool->injector, batch, want);
	if (!k)
		return NULL;
	counter_add(&w->stats.injector_pops, k);
	/* Pushed newest first, so that our own LIFO pops keep the injector's order. */
	for (size_t i = k - 1; i >= 1; i--) {
		if (heist__deque_push(&w->dq, batch[i]))
			heist__worker_run(w, batch[i]);	/* no memory to queue it */
	}
	if (k > 1)
		heist__worker_publish(w, 0);
	return batch[0];
}

static struct task *
find_work(struct worker *w)
{
	struct task *t = heist__worker_pop(w);
	if (!t)
		t = take_injector(w);
	if (!t)
		t = steal_round(w);
	return t;
}

/* Anything public anywhere, without asking owners to publish. */
static bool
more_visible(struct heist_pool *pool)
{
	/* seq_cst fence: orders our looks after the state RMW of stop_search, against
	 * a notifier's seq_cst publish that saw us searching (sleep.h). */
	atomic_thread_fence(memory_order_seq_cst);
	if (heist__injector_depth(&pool->injector))
		return true;
	for (unsigned i = 0; i < pool->slots; i++)
		if (heist__deque_has_public(&pool->workers[i].dq))
			return true;
	return false;
}

static void
stop_searching(struct heist_pool *pool)
{
	if (heist__sleep_stop_search(&pool->sleep) && more_visible(pool))
		heist__sleep_notify_slow(&pool->sleep);
}

/* The last look before sleeping (step (2) of sleep.h): anything public anywhere?
 * Also asks every owner to publish its private tasks, which it does at its next push
 * or pop, waking a sleeper then. */
static bool
work_visible(struct heist_pool *pool)
{
	bool found = heist__injector_depth(&pool->injector) != 0 ||
		     atomic_load_explicit(&pool->stop, memory_order_seq_cst);
	for (unsigned i = 0; i < pool->slots && !found; i++) {
		struct deque *dq = &pool->workers[i].dq;
		if (heist__deque_has_public(dq))
			found = true;
		else
			heist__deque_request(dq);
	}
	return found;
}

static void
sleep_until_woken(struct worker *w)
{
	struct heist_pool *pool = w->pool;
	counter_add(&w->stats.sleeps, 1);
	urcu_qsbr_thread_offline();
	heist__sleep_wait(&pool->sleep, w->index);
	urcu_qsbr_thread_online();
	counter_add(&w->stats.wakes, 1);
}

/* The main loop's source of tasks. NULL when the pool stops. */
static struct task *
next_task(struct worker *w)
{
	struct heist_pool *pool = w->pool;
	struct task *t = heist__worker_pop(w);
	if (!t)
		t = take_injector(w);
	if (t)
		return t;
	flush_done(w);
	heist__sleep_start_search(&pool->sleep);
	for (;;) {
		for (unsigned round = 0; round < pool->spin; round++) {
			t = take_injector(w);
			if (!t)
				t = steal_round(w);
			if (t) {
				stop_searching(pool);
				return t;
			}
			/* relaxed: stop is set only once everything has run; a late
			 * look costs a round, and the sleep path looks with seq_cst. */
			if (atomic_load_explicit(&pool->stop, memory_order_relaxed)) {
				stop_searching(pool);
				return NULL;
			}
			urcu_qsbr_quiescent_state();
			backoff_long(round, pool->spin / 2);
		}
		heist__sleep_prepare(&pool->sleep, w->index);
		if (work_visible(pool)) {
			heist__sleep_cancel(&pool->sleep, w->index);
			if (atomic_load_explicit(&pool->stop, memory_order_relaxed)) {
				stop_searching(pool);
				return NULL;
			}
			continue;
		}
		sleep_until_woken(w);
	}
}

void *
heist__worker_main(void *arg)
{
	struct worker *w = arg;
	struct heist_pool *pool = w->pool;
	char name[16];
	char suffix[12];
	int slen = snprintf(suffix, sizeof(suffix), "-%u", w->index);
	snprintf(name, sizeof(name), "%.*s%s", (int)(sizeof(name) - 1) - slen, pool->name,
		 suffix);
	pthread_setname_np(pthread_self(), name);
	w->bind_error = heist__topology_bind(pool->topo, w->index);
	/* release: publishes bind_error to heist_pool_create's acquire load. */
	if (atomic_fetch_add_explicit(&pool->started, 1, memory_order_release) + 1 == pool->n)
		heist__futex_wake(&pool->started, INT_MAX);
	heist__self = w;
	urcu_qsbr_register_thread();
	struct task *t;
	while ((t = next_task(w))) {
		heist__worker_run(w, t);
		urcu_qsbr_quiescent_state();
	}
	flush_done(w);
	urcu_qsbr_unregister_thread();
	heist__self = NULL;
	return NULL;
}

bool
heist__worker_guest_enter(struct heist_pool *pool, int *err)
{
	*err = 0;
	bool free_slot = false;
	/* relaxed peek first; acquire on success: see pool.h. */
	if (atomic_load_explicit(&pool->guest_busy, memory_order_relaxed) ||
	    !atomic_compare_exchange_strong_explicit(&pool->guest_busy, &free_slot, true,
						     memory_order_acquire,
						     memory_order_relaxed))
		return false;
	/* A thread that is already a QSBR reader of its own (the application's) must
	 * not be registered twice, nor have quiescent states reported for it. */
	if (urcu_qsbr_read_ongoing()) {
		atomic_store_explicit(&pool->guest_busy, false, memory_order_release);
		return false;
	}
	/* Counted as a live job, so destroy waits for the guest (see submit_outside). */
	atomic_fetch_add_explicit(&pool->live, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&pool->shutting, memory_order_seq_cst)) {
		/* Free the slot first: once live may reach 0, destroy may free it. */
		atomic_store_explicit(&pool->guest_busy, false, memory_order_release);
		heist__pool_finished(pool, 1);
		*err = ESHUTDOWN;
		return false;
	}
	urcu_qsbr_register_thread();	/* it will read other deques' arrays */
	heist__self = &pool->workers[pool->n];
	return true;
}

void
heist__worker_guest_leave(struct heist_pool *pool)
{
	struct worker *g = &pool->workers[pool->n];
	flush_done(g);
	heist__self = NULL;
	urcu_qsbr_unregister_thread();
	/* release: pairs with the next guest's acquire CAS. Before the last finish:
	 * once live may reach 0, destroy may free the pool. */
	atomic_store_explicit(&pool->guest_busy, false, memory_order_release);
	heist__pool_finished(pool, 1);
}

/* Wait for a spawned task that a thief took: steal back from the thief first (its
 * deque holds t's children), then anything. Never sleeps: the thief is running. */
static int
wait_stolen(struct worker *w, struct task *t)
{
	unsigned idle = 0;
	/* acquire: pairs with the thief's release store of TASK_DONE. */
	while (atomic_load_explicit(&t->state, memory_order_acquire) != TASK_DONE) {
		struct worker *thief = atomic_load_explicit(&t->thief, memory_order_relaxed);
		struct task *x = NULL;
		if (thief && thief != w)
			x = steal_from(w, thief);
		if (!x)
			x = find_work(w);
		if (x) {
			heist__worker_run(w, x);
			idle = 0;
			continue;
		}
		urcu_qsbr_quiescent_state();
		backoff_long(idle, 256);
		idle += idle < 256;
	}
	return t->result;
}

int
heist__worker_sync_slow(struct worker *w, struct task *t)
{
	for (;;) {
		/* acquire: pairs with the release store of TASK_DONE (by a thief, or by
		 * heist_spawn when it had to run t at once). */
		if (atomic_load_explicit(&t->state, memory_order_acquire) == TASK_DONE)
			return t->result;
		struct task *x = heist__worker_pop(w);
		if (x == t) {
			counter_add(&w->stats.executed, 1);
			if (HEIST_PROFILER && unlikely(w->profile))
				return heist__worker_run_profiled(w, t);
			return t->fn(t->arg);
		}
		if (!x)
			return wait_stolen(w, t);
		/* Above t: a job this task submitted to its own deque. A spawned task
		 * here means syncs came out of order. */
		assert(atomic_load_explicit(&x->state, memory_order_relaxed) == TASK_JOB &&
		       "heist_sync: syncs must come in the reverse order of their spawns");
		heist__worker_run(w, x);
	}
}

bool
heist__worker_wait_job_until(struct worker *w, struct heist_future *j, uint64_t deadline_ns)
{
	unsigned idle = 0;
	while (!heist__job_done(j)) {
		struct task *x = find_work(w);
		if (x) {
			heist__worker_run(w, x);
			idle = 0;
			continue;
		}
		uint64_t nap = NAP_NS;
		if (deadline_ns) {
			uint64_t now = heist__now_ns();
			if (now >= deadline_ns)
				return false;
			if (deadline_ns - now < nap)
				nap = deadline_ns - now;
		}
		urcu_qsbr_quiescent_state();
		if (idle < NAP_AFTER) {
			backoff(idle++);
			continue;
		}
		/* Nothing to do but wait: sleep on the future, looking for new work
		 * again every NAP_NS. */
		flush_done(w);
		urcu_qsbr_thread_offline();
		heist__job_nap(j, nap);
		urcu_qsbr_thread_online();
	}
	return true;
}

void
heist__worker_wait_job(struct worker *w, struct heist_future *j)
{
	heist__worker_wait_job_until(w, j, 0);
}
