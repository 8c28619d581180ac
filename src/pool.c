/* pool.c - a pool's life: create (workers started, each failure undone), submit,
 * destroy (drain, then stop and join), and the statistics. The loops the workers run
 * are in worker.c; the idle protocol in sleep.c. */
#include "pool.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "futex.h"
#include "future.h"
#include "profile.h"

enum {
	DEFAULT_SPIN = 1024,	/* about 0.3 ms of looking before sleeping */
	DEQUE_CAPACITY = 1024,
};
#define DEFAULT_STACK_SIZE ((size_t)64 << 20)

void
heist__pool_finished(struct heist_pool *pool, uint64_t n)
{
	/* seq_cst: announced before the decrement below, so a destroy that sees live
	 * reach 0 also sees us here (both seq_cst), and waits for our last access. */
	atomic_fetch_add_explicit(&pool->finishing, 1, memory_order_seq_cst);
	/* seq_cst, and seq_cst on shutting: destroy stores shutting and then loads
	 * live; we change live and then load shutting. One of us sees the other, so
	 * destroy never sleeps through the last finish. */
	uint64_t old = atomic_fetch_sub_explicit(&pool->live, n, memory_order_seq_cst);
	if (old == n && atomic_load_explicit(&pool->shutting, memory_order_seq_cst)) {
		atomic_fetch_add_explicit(&pool->drain_seq, 1, memory_order_release);
		heist__futex_wake(&pool->drain_seq, INT_MAX);
	}
	/* release, our last touch of the pool: pairs with destroy's acquire loads. */
	atomic_fetch_sub_explicit(&pool->finishing, 1, memory_order_release);
}

/* Stop and join the workers that were started, then free everything. */
static void
teardown(struct heist_pool *pool, unsigned started)
{
	atomic_store_explicit(&pool->stop, true, memory_order_seq_cst);
	heist__sleep_wake_all(&pool->sleep);
	bool grew = false;
	for (unsigned i = 0; i < started; i++)
		pthread_join(pool->workers[i].thread, NULL);
	for (unsigned i = 0; i < pool->slots; i++) {
		grew |= pool->workers[i].dq.grows != 0;
		heist__deque_fini(&pool->workers[i].dq);
		heist__profile_free(pool->workers[i].prof);
	}
	/* Retired deque arrays wait for a grace period; let them go now, so that
	 * nothing of the pool outlives it. Only when there are some: it takes a
	 * grace period. */
	if (grew)
		urcu_qsbr_barrier();
	heist__sleep_fini(&pool->sleep);
	heist__topology_free(pool->topo);
	free(pool->workers);
	free(pool);
}

static int
start_workers(struct heist_pool *pool)
{
	pthread_attr_t attr;
	int err = pthread_attr_init(&attr);
	if (err)
		return err;
	err = pthread_attr_setstacksize(&attr, pool->stack_size);
	unsigned i = 0;
	for (; !err && i < pool->n; i++)
		err = pthread_create(&pool->workers[i].thread, &attr, heist__worker_main,
				     &pool->workers[i]);
	pthread_attr_destroy(&attr);
	if (err) {
		teardown(pool, i ? i - 1 : 0);
		return err;
	}
	/* Wait for every worker to bind itself, so placement reports are final. */
	for (;;) {
		/* acquire: pairs with each worker's release increment. */
		uint32_t s = atomic_load_explicit(&pool->started, memory_order_acquire);
		if (s == pool->n)
			break;
		heist__futex_wait(&pool->started, s, 0);
	}
	return 0;
}

static struct heist_pool *
pool_new(unsigned n)
{
	struct heist_pool *pool = aligned_alloc(CACHE_LINE, sizeof(*pool));
	if (!pool)
		return NULL;
	memset(pool, 0, sizeof(*pool));
	unsigned slots = n + 1;	/* the workers and the guest slot */
	pool->workers = aligned_alloc(CACHE_LINE, sizeof(*pool->workers) * slots);
	if (!pool->workers) {
		free(pool);
		return NULL;
	}
	memset(pool->workers, 0, sizeof(*pool->workers) * slots);
	pool->n = n;
	pool->slots = slots;
	unsigned i = 0;
	for (; i < slots; i++) {
		if (heist__deque_init(&pool->workers[i].dq, DEQUE_CAPACITY))
			break;
	}
	if (i < slots || heist__sleep_init(&pool->sleep, n)) {
		while (i-- > 0)
			heist__deque_fini(&pool->workers[i].dq);
		free(pool->workers);
		free(pool);
		return NULL;
	}
	return pool;
}

HEIST_EXPORT int
heist_pool_create(heist_pool **out, const struct heist_config *cfg)
{
	static const struct heist_config defaults;
	if (!out)
		return EINVAL;
	*out = NULL;
	if (!cfg)
		cfg = &defaults;
	if (cfg->threads > HEIST_MAX_THREADS || (unsigned)cfg->pin > HEIST_PIN_PU)
		return EINVAL;
	unsigned n = cfg->threads;
	struct topology *topo;
	int err = heist__topology_new(&topo, &n, cfg->pin);
	if (err)
		return err;
	if (n > HEIST_MAX_THREADS)
		n = HEIST_MAX_THREADS;

	struct heist_pool *pool = pool_new(n);
	if (!pool) {
		heist__topology_free(topo);
		return ENOMEM;
	}
	pool->topo = topo;
	pool->spin = cfg->spin ? cfg->spin : DEFAULT_SPIN;
	pool->stack_size = cfg->stack_size ? cfg->stack_size : DEFAULT_STACK_SIZE;
	snprintf(pool->name, sizeof(pool->name), "%s", cfg->name ? cfg->name : "heist");
	heist__injector_init(&pool->injector, cfg->injector_limit);
	pool->profile = HEIST_PROFILER && cfg->profile;
	if (pool->profile)
		heist__tsc_calibrate();	/* before any task takes a timestamp */
	for (unsigned i = 0; i < pool->slots; i++) {
		struct worker *w = &pool->workers[i];
		w->pool = pool;
		w->index = i;
		w->rng = 0x9E3779B97F4A7C15ULL * (i + 1);
		if (pool->profile && !(w->prof = heist__profile_new())) {
			teardown(pool, 0);
			return ENOMEM;
		}
		w->profile = pool->profile;
		if (pool->profile)
			heist__deque_set_profile(&w->dq);
		w->victims = i < n ? heist__topology_victims(topo, i) : NULL;
	}
	err = start_workers(pool);
	if (err)
		return err;
	*out = pool;
	return 0;
}

HEIST_EXPORT void
heist_pool_destroy(heist_pool *pool)
{
	if (!pool)
		return;
	struct worker *self = heist__self;
	if (self && self->pool == pool) {
		fputs("heist: heist_pool_destroy called from a task of the same pool; "
		      "it would wait for itself forever\n", stderr);
		abort();
	}
	/* seq_cst: see heist__pool_finished and submit_outside. */
	atomic_store_explicit(&pool->shutting, true, memory_order_seq_cst);
	for (;;) {
		uint32_t seq = atomic_load_explicit(&pool->drain_seq, memory_order_acquire);
		if (atomic_load_explicit(&pool->live, memory_order_seq_cst) == 0)
			break;
		heist__futex_wait(&pool->drain_seq, seq, 0);
	}
	/* The thread that finished last may still be inside heist__pool_finished: a
	 * few instructions and a futex wake. acquire: pairs with its release. */
	while (atomic_load_explicit(&pool->finishing, memory_order_acquire))
		sched_yield();
	teardown(pool, pool->n);
}

static int
submit_outside(struct heist_pool *pool, struct heist_future *j)
{
	/* Count the job, then look at shutting (both seq_cst): destroy stores
	 * shutting and then loads live, so either it waits for this job or we see
	 * it shutting down and take the job back. */
	atomic_fetch_add_explicit(&pool->live, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&pool->shutting, memory_order_seq_cst)) {
		heist__pool_finished(pool, 1);
		return ESHUTDOWN;
	}
	heist__injector_reserve(&pool->injector);
	heist__injector_push(&pool->injector, &j->task);
	heist__sleep_notify(&pool->sleep);
	return 0;
}

static int
submit_local(struct worker *w, struct heist_future *j)
{
	/* relaxed: the task we are running is itself counted and is not finished,
	 * so live cannot reach 0 before this add, and the later subtraction of our
	 * own finish is ordered after it on the same variable. */
	atomic_fetch_add_explicit(&w->pool->live, 1, memory_order_relaxed);
	if (heist__deque_push(&w->dq, &j->task)) {
		atomic_fetch_sub_explicit(&w->pool->live, 1, memory_order_relaxed);
		return ENOMEM;
	}
	heist__worker_publish(w, 0);
	return 0;
}

int
heist__pool_submit_job(struct heist_pool *pool, struct heist_future *j, heist_future **out)
{
	struct worker *w = heist__self;
	if (HEIST_PROFILER && pool->profile)
		j->task.created_tsc = heist__tsc();
	int err = w && w->pool == pool ? submit_local(w, j) : submit_outside(pool, j);
	if (err) {
		heist__job_discard(j);
		return err;
	}
	if (out)
		*out = j;
	return 0;
}

HEIST_EXPORT int
heist_submit(heist_pool *pool, heist_fn fn, void *arg, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !fn)
		return EINVAL;
	struct heist_future *j = heist__job_new(fn, arg, out != NULL);
	if (!j)
		return ENOMEM;
	return heist__pool_submit_job(pool, j, out);
}

HEIST_EXPORT int
heist_submit_copy(heist_pool *pool, heist_fn fn, const void *arg, size_t size,
		  heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !fn || (!arg && size))
		return EINVAL;
	struct heist_future *j = heist__job_new(fn, NULL, out != NULL);
	if (!j)
		return ENOMEM;
	if (heist__job_copy_arg(j, arg, size)) {
		heist__job_discard(j);
		return ENOMEM;
	}
	return heist__pool_submit_job(pool, j, out);
}

HEIST_EXPORT unsigned
heist_pool_size(const heist_pool *pool)
{
	return pool ? pool->n : 0;
}

HEIST_EXPORT size_t
heist_pool_pending(const heist_pool *pool)
{
	if (!pool)
		return 0;
	struct heist_pool *p = (struct heist_pool *)pool;
	size_t n = atomic_load_explicit(&p->injector.depth, memory_order_relaxed);
	for (unsigned i = 0; i < p->slots; i++)
		n += heist__deque_size(&p->workers[i].dq);
	return n;
}

HEIST_EXPORT int
heist_worker_index(void)
{
	struct worker *w = heist__self;
	return w && w->index < w->pool->n ? (int)w->index : -1;	/* a guest is no worker */
}

static void
read_worker(const struct worker *w, struct heist_worker_stats *s)
{
	s->executed = counter_read(&w->stats.executed);
	s->spawned = counter_read(&w->stats.spawned);
	s->stolen = counter_read(&w->stats.stolen);
	s->steal_attempts = counter_read(&w->stats.steal_attempts);
	s->injector_pops = counter_read(&w->stats.injector_pops);
	s->sleeps = counter_read(&w->stats.sleeps);
	s->wakes = counter_read(&w->stats.wakes);
}

HEIST_EXPORT int
heist_pool_worker_stats(const heist_pool *pool, unsigned index,
			struct heist_worker_stats *out)
{
	if (!pool || !out || index >= pool->n)
		return EINVAL;
	read_worker(&pool->workers[index], out);
	return 0;
}

HEIST_EXPORT int
heist_pool_stats(const heist_pool *pool, struct heist_stats *out)
{
	if (!pool || !out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->workers = pool->n;
	for (unsigned i = 0; i < pool->slots; i++) {	/* the guest's work counts too */
		struct heist_worker_stats s;
		read_worker(&pool->workers[i], &s);
		out->executed += s.executed;
		out->spawned += s.spawned;
		out->stolen += s.stolen;
		out->steal_attempts += s.steal_attempts;
		out->injector_pops += s.injector_pops;
		out->sleeps += s.sleeps;
		out->wakes += s.wakes;
		out->bind_failures += pool->workers[i].bind_error != 0;
	}
	return 0;
}

HEIST_EXPORT int
heist_pool_placement(const heist_pool *pool, unsigned index, struct heist_placement *out,
		     unsigned *victims, unsigned *ranks, size_t cap)
{
	if (!pool || !out || index >= pool->n)
		return EINVAL;
	const struct worker *w = &pool->workers[index];
	memset(out, 0, sizeof(*out));
	bool pins = heist__topology_pins(pool->topo);
	out->error = w->bind_error;
	out->bound = !pins ? 0 : w->bind_error ? -1 : 1;
	heist__topology_cpus(pool->topo, index, out->cpus, sizeof(out->cpus));
	const struct victims *v = w->victims;
	out->nranks = v ? v->nranks : pool->n > 1;
	size_t k = 0, rank = 0;
	for (unsigned j = 0; j < pool->n && k < cap; j++) {
		unsigned victim = j;
		if (v) {
			if (j + 1 == pool->n)
				break;
			victim = v->order[j];
			while (j >= v->rank_end[rank])
				rank++;
		} else if (j == index) {
			continue;
		}
		if (victims)
			victims[k] = victim;
		if (ranks)
			ranks[k] = (unsigned)rank;
		k++;
	}
	return 0;
}
