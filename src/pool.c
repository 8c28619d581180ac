/* SPDX-License-Identifier: MIT */
/* pool.c - a pool's life: create (workers started, each failure undone), destroy
 * (drain, then stop and join), and what it reports: size, pending tasks, statistics,
 * placement. Admission and the drain are submit.c's; the loops the workers run are
 * worker.c's; the idle protocol sleep.c's. */
#include "pool.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "platform/platform.h"
#include "future.h"
#include "probe.h"
#include "report.h"
#include "submit.h"
#include "wait.h"

enum {
	DEFAULT_SPIN = 1024,	/* about 0.3 ms of looking before sleeping */
	/* A search round tries every other worker. Past this many, a search makes
	 * fewer rounds, so that it costs about spin x SEARCH_VICTIMS steal attempts
	 * whatever the pool size: with full rounds an idle 1,024-worker pool made
	 * 6.4e8 attempts, and took 3.2 s to create on 2 cores. */
	SEARCH_VICTIMS = 8,
	/* Spares at most, by default: the bound is for runaway programs, not for
	 * parallelism (a stand-in is called only where work would otherwise wait with
	 * no thread to run it; spare.h). Java's ForkJoinPool allows parallelism + 256. */
	DEFAULT_SPARES = 256,
};
/* Mapped lazily, so only address space: of which a 32-bit process has 3 or 4 GiB. */
#define DEFAULT_STACK_SIZE (sizeof(void *) >= 8 ? (size_t)64 << 20 : (size_t)8 << 20)

/* The live pools, so that destroying one twice (or something that is no pool) is
 * caught with a message instead of freeing memory twice. And every pool not yet
 * freed, live or being destroyed: a destroy waits, after its drain, until no thread of
 * any of them walks through its threads (wait.c), and it reads their threads' guards
 * under this lock, which keeps them from being freed meanwhile. */
static heist__mutex registry_lock = HEIST__MUTEX_INIT;
static struct heist_pool *registry;
static struct heist_pool *all_pools;

/* At exit, the reports of the pools never destroyed (HEIST_PROFILE, report.c), from
 * what their buffers hold then (heist/profile.h: a snapshot if tasks still run). */
static void
report_at_exit(void)
{
	heist__mutex_lock(&registry_lock);
	for (struct heist_pool *p = registry; p; p = p->next_live)
		heist__report_write(p->report, p, "exit");
	heist__mutex_unlock(&registry_lock);
}

static heist__once_flag report_at_exit_once = HEIST__ONCE_INIT;

static void
register_report_at_exit(void)
{
	atexit(report_at_exit);
}

static void lock_registry(void) { heist__mutex_lock(&registry_lock); }
static void unlock_registry(void) { heist__mutex_unlock(&registry_lock); }

static void
register_pool(struct heist_pool *pool, const struct report *report)
{
	if (report)
		heist__once(&report_at_exit_once, register_report_at_exit);
	heist__mutex_lock(&registry_lock);
	pool->next_live = registry;
	registry = pool;
	pool->next_all = all_pools;
	all_pools = pool;
	heist__mutex_unlock(&registry_lock);
}

/* After the drain and the joins: wait until no walker of another pool reads this
 * pool's threads, then take it off the list of pools not yet freed. A walker names the
 * pool in its guard before it checks that a job of the pool still runs, and reads
 * nothing of the pool unless it does (wait.c); after the drain no job of the pool
 * runs, so a guard set from now on is withdrawn untouched, and the ones seen here are
 * waited out. The pool is on the list from before its first thread starts until all
 * are joined: its threads' own walks (a hook's wait for another pool's job, say) are
 * seen by that other pool's destroy, which waits for them. */
static void
wait_unwalked(struct heist_pool *pool)
{
	heist__mutex_lock(&registry_lock);
	while (heist__wait_walked(pool, all_pools)) {
		heist__mutex_unlock(&registry_lock);
		heist__thread_yield();	/* a walk reads a few words, then lets go */
		heist__mutex_lock(&registry_lock);
	}
	struct heist_pool **p = &all_pools;
	while (*p != pool)
		p = &(*p)->next_all;
	*p = pool->next_all;
	heist__mutex_unlock(&registry_lock);
}

/* Take pool off the registry; false if it was not on it. */
static bool
unregister_pool(struct heist_pool *pool)
{
	heist__mutex_lock(&registry_lock);
	struct heist_pool **p = &registry;
	while (*p && *p != pool)
		p = &(*p)->next_live;
	bool found = *p != NULL;
	if (found)
		*p = pool->next_live;
	heist__mutex_unlock(&registry_lock);
	return found;
}

bool
heist__pool_inherited_if_alive(const struct heist_pool *pool)
{
	heist__mutex_lock(&registry_lock);
	const struct heist_pool *p = registry;
	while (p && p != pool)
		p = p->next_live;
	bool inherited = p && heist__pool_inherited(p);
	heist__mutex_unlock(&registry_lock);
	return inherited;
}

int
heist__pool_enter_if_alive(struct heist_pool *pool, unsigned *epoch)
{
	/* Under the registry's lock destroy cannot begin (it unregisters first), and
	 * once we have entered, destroy waits for us (submit.c). Only the enter is
	 * made under the lock: a push may block on a full injector. */
	heist__mutex_lock(&registry_lock);
	struct heist_pool *p = registry;
	while (p && p != pool)
		p = p->next_live;
	int err = p ? heist__pool_enter(pool, epoch) : ESHUTDOWN;
	heist__mutex_unlock(&registry_lock);
	return err;
}

int
heist__pool_slot_init(struct heist_pool *pool, unsigned i)
{
	struct worker *w = &pool->workers[i];
	w->pool = pool;
	w->index = i;
	w->rng = 0x9E3779B97F4A7C15ULL * (i + 1);
	w->hazard = &pool->hazards[i];
	w->victims = heist__topology_victims(pool->topo, i);
	if (heist__deque_init(&w->dq, DEQUE_CAPACITY, pool->hazards, pool->slots_max))
		return ENOMEM;
	if (pool->profile) {
		if (!(w->prof = heist__profile_new(pool->profile_samples))) {
			heist__deque_fini(&w->dq);
			return ENOMEM;
		}
		w->profile = true;
		w->sample_mask = pool->profile_mask;
		w->sample_tick = 0x9E3779B9u ^ (i + 1);	/* any nonzero seed */
		heist__deque_set_profile(&w->dq);
	}
	return 0;
}

/* heist_config.profile_every as a mask: the power of two at or above it, at most
 * 2^20, less one. */
static uint32_t
profile_mask(unsigned every)
{
	uint32_t n = 1;
	while (n < every && n < (1u << 20))
		n *= 2;
	return n - 1;
}

static void
free_slot(struct worker *w)
{
	heist__deque_fini(&w->dq);
	heist__profile_free(w->prof);
}

/* Free a pool whose slots [0, inited) are set up and whose threads are all gone. */
static void
pool_free(struct heist_pool *pool, unsigned inited)
{
	for (unsigned i = 0; i < inited; i++)
		free_slot(&pool->workers[i]);
	heist__spares_fini(&pool->spares);
	heist__sleep_fini(&pool->sleep);
	heist__timers_fini(&pool->timers);
	heist__mutex_destroy(&pool->idle_lock);
	heist__topology_free(pool->topo);
	heist__report_free(pool->report);
	heist__aligned_free(pool->hazards);
	heist__aligned_free(pool->workers);
	heist__aligned_free(pool);
}

/* Stop and join the workers that were started and every spare, write the pool's
 * report if the environment asked for one (all its threads gone, so it is whole),
 * then free it all. */
static void
teardown(struct heist_pool *pool, unsigned started)
{
	atomic_store_explicit(&pool->stop, true, memory_order_seq_cst);
	heist__sleep_wake_all(&pool->sleep);
	for (unsigned i = 0; i < started; i++)
		heist__thread_join(pool->workers[i].thread);
	heist__spares_join(pool);
	heist__report_write(pool->report, pool, "destroy");
	wait_unwalked(pool);
	pool_free(pool, heist__pool_slots_used(pool));
}

static int
start_workers(struct heist_pool *pool)
{
	int err = 0;
	unsigned i = 0;
	for (; !err && i < pool->n; i++)
		err = heist__thread_start(&pool->workers[i].thread, pool->stack_size,
					  heist__worker_main, &pool->workers[i]);
	if (err) {
		/* As a destroy: what the started workers' start hooks queued (the pool
		 * was registered for them) runs, or ends, before they stop. */
		unregister_pool(pool);
		heist__timers_close(pool);
		heist__pool_drain(pool);
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

/* A pool of n workers, set up but for its threads; NULL when out of memory. */
/* The rounds of an idle search over n workers' deques (see SEARCH_VICTIMS). */
static unsigned
search_rounds(unsigned spin, unsigned n)
{
	if (n <= SEARCH_VICTIMS + 1)
		return spin;
	uint64_t r = (uint64_t)spin * SEARCH_VICTIMS / (n - 1);
	return r ? (unsigned)r : 1;
}

static struct heist_pool *
pool_new(unsigned n, unsigned spares, struct topology *topo, const struct heist_config *cfg)
{
	struct heist_pool *pool = heist__aligned_alloc(CACHE_LINE, sizeof(*pool));
	if (!pool)
		return NULL;
	memset(pool, 0, sizeof(*pool));
	pool->n = n;
	pool->slots = n + 1;	/* the workers and the guest slot */
	pool->slots_max = pool->slots + spares;
	pool->topo = topo;
	pool->gen = heist__generation();
	pool->spin = search_rounds(cfg->spin ? cfg->spin : DEFAULT_SPIN, n);
	pool->stack_size = cfg->stack_size ? cfg->stack_size : DEFAULT_STACK_SIZE;
	snprintf(pool->name, sizeof(pool->name), "%s", cfg->name ? cfg->name : "heist");
	heist__injector_init(&pool->injector, cfg->injector_limit);
	heist__injector_init(&pool->high, cfg->injector_limit);
	heist__injector_init(&pool->low, cfg->injector_limit);
	pool->profile = HEIST_PROFILER && cfg->profile;
	pool->profile_mask = profile_mask(cfg->profile_every);
	pool->profile_samples = heist__profile_capacity(cfg->profile_buffer);
	pool->on_start = cfg->on_worker_start;
	pool->on_stop = cfg->on_worker_stop;
	pool->hook_ctx = cfg->hook_ctx;
	if (heist__mutex_init(&pool->idle_lock))
		goto fail_lock;
	if (heist__timers_init(&pool->timers)) {
		heist__mutex_destroy(&pool->idle_lock);
		goto fail_lock;
	}
	pool->workers = heist__aligned_alloc(CACHE_LINE, sizeof(*pool->workers) * pool->slots_max);
	pool->hazards = heist__aligned_alloc(CACHE_LINE, sizeof(*pool->hazards) * pool->slots_max);
	if (!pool->workers || !pool->hazards)
		goto fail;
	memset(pool->workers, 0, sizeof(*pool->workers) * pool->slots_max);
	for (unsigned i = 0; i < pool->slots_max; i++)
		atomic_init(&pool->hazards[i].array, NULL);
	if (heist__sleep_init(&pool->sleep, pool->slots_max))
		goto fail;
	if (heist__spares_init(&pool->spares, spares, pool->name)) {
		heist__sleep_fini(&pool->sleep);
		goto fail;
	}
	if (pool->profile)
		heist__clock_calibrate();	/* before any task takes a timestamp */
	for (unsigned i = 0; i < pool->slots; i++) {
		if (heist__pool_slot_init(pool, i)) {
			pool->topo = NULL;	/* the caller frees it */
			pool_free(pool, i);
			return NULL;
		}
	}
	return pool;
fail:
	heist__timers_fini(&pool->timers);
	heist__mutex_destroy(&pool->idle_lock);
fail_lock:
	heist__aligned_free(pool->hazards);
	heist__aligned_free(pool->workers);
	heist__aligned_free(pool);
	return NULL;
}

static int
create(heist_pool **out, const struct heist_config *cfg)
{
	static const struct heist_config defaults;
	struct heist_config with_env = cfg ? *cfg : defaults;
	struct env_files files;
	int err = heist__env_apply(&with_env, &files);
	if (err)
		return err;
	cfg = &with_env;
	if (cfg->threads > HEIST_MAX_THREADS || (unsigned)cfg->pin > HEIST_PIN_PU ||
	    (cfg->max_spares > HEIST_MAX_THREADS && cfg->max_spares != HEIST_SPARES_NONE)) {
		heist__env_files_free(&files);
		return EINVAL;
	}
	if ((err = heist__worker_slot_init())) {
		heist__env_files_free(&files);
		return err;
	}
	unsigned n = cfg->threads;
	struct topology *topo;
	if ((err = heist__topology_new(&topo, &n, cfg->pin))) {
		heist__env_files_free(&files);
		return err;
	}
	if (n > HEIST_MAX_THREADS)
		n = HEIST_MAX_THREADS;
	unsigned spares = cfg->max_spares == HEIST_SPARES_NONE ? 0
			  : cfg->max_spares		 ? cfg->max_spares
							 : DEFAULT_SPARES;
	struct heist_pool *pool = pool_new(n, spares, topo, cfg);
	if (!pool) {
		heist__env_files_free(&files);
		heist__topology_free(topo);
		return ENOMEM;
	}
	/* The registry is what a child process needs whole (inherit.h). Before the
	 * report takes its number, which a child forked from here on must not share
	 * (report.c counts per fork generation). */
	heist__inherit_init(lock_registry, unlock_registry);
	bool nomem;
	struct report *report = heist__report_new(&files, cfg, &nomem);
	if (nomem) {
		pool_free(pool, pool->slots);
		return ENOMEM;
	}
	/* Registered before its threads start, whose hooks may submit to it or wait
	 * for another pool's jobs (wait_unwalked). */
	register_pool(pool, report);
	if ((err = start_workers(pool))) {
		heist__report_free(report);
		return err;
	}
	pool->report = report;	/* not before: a pool that failed writes no report */
	*out = pool;
	return 0;
}

HEIST_EXPORT int
heist_pool_create(heist_pool **out, const struct heist_config *cfg)
{
	if (!out)
		return EINVAL;
	*out = NULL;
	/* hwloc, sysconf, thread creation and the environment's parsing may all set
	 * errno; heist_pool_create keeps the caller's (heist.h). */
	int saved = errno;
	int err = create(out, cfg);
	errno = saved;
	return err;
}

static void
destroy(heist_pool *pool)
{
	struct worker *self = heist__current();
	if (self && self->pool == pool) {
		fputs("heist: heist_pool_destroy called from a task of the same pool; "
		      "it would wait for itself forever\n", stderr);
		abort();
	}
	if (!unregister_pool(pool)) {
		fputs("heist: heist_pool_destroy of a pool that is not alive (destroyed "
		      "twice?)\n", stderr);
		abort();
	}
	if (heist__pool_inherited(pool))
		return;	/* a child's copy, without threads: let it go untouched (inherit.h) */
	heist__timers_close(pool);	/* timers not yet due end now, never run */
	heist__pool_drain(pool);
	teardown(pool, pool->n);
	heist__record_trim();	/* the records the caller submitted with (record.h) */
}

HEIST_EXPORT void
heist_pool_destroy(heist_pool *pool)
{
	if (!pool)
		return;
	int saved = errno;	/* joins, the report's files, hwloc's teardown */
	destroy(pool);
	errno = saved;
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
	/* relaxed: a count for the caller, stale as soon as it is read. */
	size_t n = atomic_load_explicit(&p->injector.depth, memory_order_relaxed) +
		   atomic_load_explicit(&p->high.depth, memory_order_relaxed) +
		   atomic_load_explicit(&p->low.depth, memory_order_relaxed);
	for (unsigned i = 0, slots = heist__pool_slots_used(p); i < slots; i++)
		n += heist__deque_size(&p->workers[i].dq);
	return n;
}

HEIST_EXPORT int
heist_thread_index(void)
{
	struct worker *w = heist__current();
	return w ? (int)w->index : -1;
}

HEIST_EXPORT unsigned
heist_pool_threads(const heist_pool *pool)
{
	return pool ? pool->slots_max : 0;
}

HEIST_EXPORT int
heist_worker_index(void)
{
	struct worker *w = heist__current();
	/* The guest slot and the spares are no workers of the pool's size. */
	return w && w->index < w->pool->n ? (int)w->index : -1;
}

static void
read_worker(const struct worker *w, struct heist_worker_stats *s)
{
	uint64_t pairs = counter_read(&w->stats.pairs);
	s->executed = counter_read(&w->stats.executed) + pairs;
	s->spawned = counter_read(&w->stats.spawned) + pairs;
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
	/* Every slot: the workers, the guest, the spares (zeros if never used). */
	if (!pool || !out || index >= pool->slots_max)
		return EINVAL;
	read_worker(&pool->workers[index], out);
	return 0;
}

HEIST_EXPORT int
heist_pool_stats(const heist_pool *pool, struct heist_stats *out)
{
	if (!pool || !out)
		return EINVAL;
	struct heist_pool *p = (struct heist_pool *)pool;
	memset(out, 0, sizeof(*out));
	out->workers = pool->n;
	heist__spares_count(p, &out->spares, &out->spares_started, &out->spares_exhausted);
	/* The guest's and the spares' work counts too. */
	for (unsigned i = 0, slots = heist__pool_slots_used(p); i < slots; i++) {
		struct heist_worker_stats s;
		read_worker(&pool->workers[i], &s);
		out->executed += s.executed;
		out->spawned += s.spawned;
		out->stolen += s.stolen;
		out->steal_attempts += s.steal_attempts;
		out->injector_pops += s.injector_pops;
		out->sleeps += s.sleeps;
		out->wakes += s.wakes;
		out->parks += counter_read(&pool->workers[i].stats.parks);
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
	/* The victims list holds the guest slot, and a flat list the worker itself:
	 * neither is reported. */
	const struct victims *v = w->victims;
	size_t k = 0;
	for (unsigned r = 0; r < v->nranks; r++) {
		bool any = false;
		for (unsigned j = 0, size = heist__ring_size(v, r); j < size; j++) {
			unsigned victim = heist__ring_slot(v, r, j);
			if (victim == index || victim >= pool->n)
				continue;
			any = true;
			if (k < cap) {
				if (victims)
					victims[k] = victim;
				if (ranks)
					ranks[k] = out->nranks;
				k++;
			}
		}
		out->nranks += any;
	}
	return 0;
}
