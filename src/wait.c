/* SPDX-License-Identifier: MIT */
/* wait.c - waiting for a task to finish: a sync whose child was stolen, a future or a
 * group on a worker, a future on any other thread.
 *
 * The waiting rule (docs/architecture.md has the safety and liveness arguments). A
 * worker that waits for X runs, on top of the frame that waits, only work that X
 * itself needs, so that nothing it runs can in turn wait for that frame; and it looks
 * for such work along the whole chain of what X waits for:
 *  - X itself, if X is a job still queued in the worker's own pool (it claims it);
 *  - if X runs on another worker of the pool (a thief of the spawned child X, or the
 *    worker that took job X from a queue): a spawned task from the top of that
 *    worker's deque at or above the floor it recorded when it started X. Everything
 *    pushed there since is X's own or its descendants' (strict fork-join: each is
 *    synced by a frame of X before X returns), as long as X runs, which is checked
 *    between reading the slot and taking it (deque.c). This is leapfrogging (Wagner
 *    and Calder). A job found there is no part of X (jobs are detached): it goes back
 *    to the injector, for any worker.
 *  - if X is a job that may not run yet (a continuation, a when_all future): what X
 *    waits for (its antecedent, its inputs), and so on with no limit of depth, which X
 *    needs as much;
 *  - if X is running, in this pool or another: what its runner is blocked in (a job,
 *    or a stolen child and then what that child's thief is blocked in), and so on:
 *    the frames above X's on that thread are X's own work, so what they wait for X
 *    needs. This is how a chain of waits across pools (A's task waits for B's job,
 *    which waits for A's queued job) runs on the threads it has, as Java's
 *    ForkJoinPool helps the chain of a join's stealers. A job of another pool is
 *    never run here (it runs on its own pool's threads, with their hooks and
 *    indices): the walk only learns from it how the chain ends;
 *  - for a group: its jobs queued at the bottom of our own deque or in the pool's
 *    injector (the group keeps no list of its jobs; those elsewhere are in the deques
 *    of threads that run them in time).
 * Nothing else: not the injector at large, not other deques, not our own older tasks.
 * When it can help with nothing it publishes what it is blocked in (for other pools'
 * walkers), and after a while parks, looking again every PARK_NS and when the runner
 * of what it follows blocks in turn; a spare stands in while work waits that nobody
 * can run (spare.h). A timed wait runs nothing at all, not even X (whose completion
 * may depend on what the waiting frame does after its deadline), and nobody follows
 * it: it calls a stand-in at once when work waits, and returns by its deadline.
 *
 * Any other thread spins briefly, then sleeps on the future's futex. */
#include "wait.h"

#include <stdlib.h>

#include "cancel.h"
#include "clock.h"
#include "platform/platform.h"
#include "future.h"
#include "group.h"
#include "pool.h"
#include "worker.h"

enum {
	/* An outside waiter's spin, about 3 us, of which QUEUED_PAUSES while no
	 * worker has taken the task. */
	SPIN_PAUSES = 128,
	QUEUED_PAUSES = 32,
	/* A worker with nothing to help with: rounds of short pauses, then rounds
	 * yielding its core (the thread it waits for may be preempted here), then it
	 * parks. */
	PATIENCE_SPINS = 256,
	PATIENCE_YIELDS = 64,
	HELP_RETRIES = 4,	/* tries on a thief that keeps winning races */
	/* Jobs one walk looks at, at most: the chains of a program whose waits form
	 * no cycle are finite, so only a cycle (a deadlock of the program's own) or a
	 * graph of this size meets it; the next walk starts over. */
	WALK_VISITS = 1 << 20,
	WALK_INLINE = 16,	/* jobs a walk holds without allocating */
	/* Threads one walk steps through (to what a runner, or a stolen child's thief,
	 * is blocked in): the waits of distinct threads, unless they form a cycle. */
	HOPS_MAX = 4096,
	/* futex bits: a wake of the walkers that follow a job's runner, and of
	 * everyone else who sleeps on the job (heist__futex_wake_bits). */
	WAKE_WALKERS = 2,
	WAKE_OTHERS = 1,
};
/* A parked worker looks again this often: for work it may help with, and for work
 * that needs a stand-in (its vote; compensation counts rounds of these looks,
 * spare.h). */
#define PARK_NS ((uint64_t)200000)

static bool
awaited_done(const struct awaited *a)
{
	if (a->job)
		return heist__job_done(a->job);
	if (a->group)
		return heist__group_done(a->group);
	/* acquire: pairs with the thief's release exchange of TASK_DONE (worker.c). */
	return atomic_load_explicit(&a->task->state, memory_order_acquire) == TASK_DONE;
}

static bool
task_pending(const void *t)
{
	/* acquire: as awaited_done. */
	return atomic_load_explicit(&((const struct task *)t)->state, memory_order_acquire) !=
	       TASK_DONE;
}

static bool
job_running(const void *j)
{
	/* seq_cst: the walker's load of the guard's Dekker pair (guard_check). */
	return (atomic_load_explicit(&((const struct heist_future *)j)->state,
				     memory_order_seq_cst) &
		FUT_MASK) == FUT_RUNNING;
}

/* ---------------------------------------------------------------------------------- */
/* What a thread is blocked in, for the walkers of other pools                        */

/* The walker's side. A walker that learned that a job X runs on thread r (of another
 * pool) reads r->blocked_in as a reader: it counts itself in r->readers, loads the
 * pointer, and then checks that X still runs. blocked_in is set only while r is
 * blocked at the top of its stack (published before it spins or parks, withdrawn
 * before it runs anything on top), and r unpublished before it took X; so a pointer
 * seen while X still runs was published above X's frame: what X needs. The awaited
 * struct and what it names stay alive while r is blocked in it, and r does not leave
 * the wait while a reader is in (withdraw). */
static void
read_in(struct worker *r)
{
	/* seq_cst: the reader's half of the Dekker pair with withdraw: either we see
	 * blocked_in NULL, or withdraw sees us counted and waits. */
	atomic_fetch_add_explicit(&r->readers, 1, memory_order_seq_cst);
}

static void
read_out(struct worker *r)
{
	/* release: our reads of r's wait happen before the withdraw that sees 0. */
	atomic_fetch_sub_explicit(&r->readers, 1, memory_order_release);
}

/* The waiter's side: blocked in a, at the top of its stack. release: what we did
 * before (the end of a job we ran, say) is visible to a reader that sees a, so its
 * check that the job still runs sees it ended. Then wake the walkers parked on the
 * job we run, which follow its runner: they may run what we wait for. */
static void
publish(struct worker *w, const struct awaited *a)
{
	atomic_store_explicit(&w->blocked_in, a, memory_order_release);
	struct heist_future *mine = heist__job_current();
	/* relaxed: a hint; a walker that set the bit after this load naps PARK_NS. */
	if (mine && (atomic_load_explicit(&mine->state, memory_order_relaxed) & FUT_WALKERS))
		heist__futex_wake_bits(&mine->state, INT32_MAX, WAKE_WALKERS);
}

/* About to run something on top of the wait: no longer blocked. The wait's frame and
 * what it awaits stay alive, so a reader still in may go on reading. release: before
 * whatever we take next (a claim's CAS, a steal) in the order a reader sees it. */
static void
unpublish(struct worker *w)
{
	atomic_store_explicit(&w->blocked_in, NULL, memory_order_release);
}

/* The wait is over: nobody may read its frame once we return. */
static void
withdraw(struct worker *w)
{
	/* seq_cst exchange and loads: the waiter's half of the Dekker pair with
	 * read_in; an exchange, not a store, as every store of such a pair is
	 * (internal.h, dekker_store). A reader reads a few words, then leaves, so
	 * this wait is short; acquire (seq_cst) on the load that sees 0 pairs with the
	 * readers' release. */
	dekker_store(&w->blocked_in, NULL);
	for (unsigned i = 0; atomic_load_explicit(&w->readers, memory_order_seq_cst); i++)
		if (i < 64)
			cpu_relax();
		else
			heist__thread_yield();
}

/* The guard: before a walker reads a thread of another pool p, it names p in its own
 * guard and then checks that a job of p still runs (guard_check). After its drain,
 * p's destroy waits until no guard names p (heist__wait_walked), and no job of p runs
 * then; so either the check fails, and the walker reads nothing of p, or destroy sees
 * the guard and waits for it. Both seq_cst: in their single order, the guard's store
 * precedes the check, which precedes the end of the job (or it would see it), which
 * precedes the end of the drain and destroy's look at the guard. The guard's store is
 * an exchange (internal.h, dekker_store). */
static bool
guard_check(struct worker *w, struct heist_pool *p, struct heist_future *x)
{
	dekker_store(&w->guard, p);
	return job_running(x);
}

static void
guard_clear(struct worker *w)
{
	/* release: our reads of p's threads happen before destroy's look that sees
	 * the guard cleared (seq_cst, so acquire). */
	atomic_store_explicit(&w->guard, NULL, memory_order_release);
}

bool
heist__wait_walked(struct heist_pool *p, struct heist_pool *pools)
{
	for (struct heist_pool *q = pools; q; q = q->next_all)
		for (unsigned i = 0, n = heist__pool_slots_used(q); i < n; i++)
			/* seq_cst: destroy's load of the guard pair above. */
			if (atomic_load_explicit(&q->workers[i].guard, memory_order_seq_cst) == p)
				return true;
	return false;
}

/* How a chain of waits ends, as far as a walk sees: at something it may run (it runs
 * that instead), at a thread that is running (not blocked: what we wait for is being
 * worked on), or stuck (at a queued job of another pool, which only that pool's
 * threads may run, or at a wait a walk does not follow). Only a waiter whose chain is
 * stuck may ask for a stand-in at once (spare.h). */
enum chain_end { END_RUNNING = 1, END_STUCK = 2 };

/* What thread r, which runs what still(ctx) asks about, is blocked in, as a job we hold
 * a reference to; through stolen children (r waits for a child, its thief waits for
 * ...) within r's pool. NULL if r is not blocked in a job's wait, or what it ran has
 * ended; *end then says how the chain ends there. If r is of another pool than ours,
 * the caller holds the guard. */
static struct heist_future *
blocked_job(struct worker *r, bool (*still)(const void *ctx), const void *ctx,
	    unsigned *end)
{
	struct worker *owner = NULL;	/* a thread we read in, whose frame holds ctx */
	for (unsigned hops = 0; hops < HOPS_MAX; hops++) {
		read_in(r);
		/* seq_cst: the reader's load of the pair with withdraw. */
		const struct awaited *a = atomic_load_explicit(&r->blocked_in,
							      memory_order_seq_cst);
		bool ok = a && still(ctx);	/* then a is above what ctx names */
		if (owner)
			read_out(owner);	/* ctx is no longer read */
		owner = NULL;
		if (!ok) {
			read_out(r);
			*end |= END_RUNNING;	/* running, or what it ran just ended */
			return NULL;
		}
		if (a->job) {
			struct heist_future *y = a->job;
			heist__job_ref(y);	/* alive while r is blocked in it */
			read_out(r);
			return y;
		}
		if (!a->task) {
			read_out(r);	/* a group: not followed */
			*end |= END_STUCK;
			return NULL;
		}
		/* acquire: pairs with the thief's release store (worker.c), after its
		 * floor and before it runs the child. */
		struct worker *q = task_thief(atomic_load_explicit(&a->task->thief,
								   memory_order_acquire));
		if (!q) {
			read_out(r);
			*end |= END_RUNNING;
			return NULL;
		}
		owner = r;	/* keeps a->task, in r's frame, while we read q */
		ctx = a->task;
		still = task_pending;
		r = q;
	}
	if (owner)
		read_out(owner);
	*end |= END_STUCK;
	return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* What to run                                                                        */

/* What a look found to run on top of the wait: a job of our pool to claim (held by a
 * reference of ours unless it is the awaited job itself), or a task taken from a
 * deque. */
struct to_run {
	struct heist_future *claim;
	bool claim_held;
	struct task *stolen;
};

/* A job X may not run on top of the frame that found it: give it to any worker. */
static void
requeue(struct worker *w, struct task *x)
{
	heist__injector_requeue(&w->pool->injector, x);
	heist__sleep_notify(&w->pool->sleep);
}

/* Put back t, which we just popped from the bottom of our own deque, and make it public
 * again. A plain push: our cached top may be stale by more than the array holds (thieves
 * took much since we last looked), and try_push would then refuse the slot we just
 * freed; push refreshes it (and, the slot being free, never grows). Should it fail all
 * the same, the task goes to the injector, where any worker takes it as a thief would. */
static void
put_back(struct worker *w, struct task *t)
{
	if (heist__deque_push(&w->dq, t))
		requeue(w, t);
	else
		heist__worker_publish(w, 0);
}

/* A spawned task from the top of runner's deque, at or above floor, while still(ctx):
 * the work of a task of our pool that runner runs. A job found there goes back to the
 * injector (and counts as help: something moved). */
static bool
help_runner(struct worker *w, struct worker *runner, int64_t floor,
	    bool (*still)(const void *), const void *ctx, struct to_run *td)
{
	if (!runner || runner == w)
		return false;
	for (int i = 0; i < HELP_RETRIES; i++) {
		struct task *x;
		counter_add(&w->stats.steal_attempts, 1);
		switch (heist__deque_steal_above(&runner->dq, floor, still, ctx, &x,
						 w->hazard)) {
		case STEAL_OK:
			counter_add(&w->stats.stolen, 1);
			/* relaxed: the kind never changes once queued (worker.c). */
			if (atomic_load_explicit(&x->state, memory_order_relaxed) == TASK_JOB) {
				requeue(w, x);
			} else {
				w->stolen_from = runner->index;
				td->stolen = x;
			}
			return true;
		case STEAL_EMPTY:
			return false;
		case STEAL_ABORT:
			cpu_relax();
			break;
		}
	}
	return false;
}

/* The walk: the jobs of the chain still to look at, each held by a reference. */
struct walk {
	struct worker *w;
	struct heist_future **held;
	size_t n, cap;
	unsigned visits;
	unsigned hops;		/* steps to a runner's wait (only a cycle repeats one) */
	unsigned end;		/* enum chain_end bits, over every branch looked at */
	/* The last job of another pool the walk reached, not final, held: where a
	 * parked waiter sleeps (its runner's next wait, or its end, wakes it). */
	struct heist_future *tip;
	struct heist_future *inline_held[WALK_INLINE];
};

/* Hold d (alive: the caller keeps it so) for a later look. Without memory to hold it
 * the walk leaves it out: a later walk looks again. */
static void
hold(void *ctx, struct heist_future *d)
{
	struct walk *k = ctx;
	if (k->n == k->cap) {
		size_t cap = k->cap * 2;
		struct heist_future **h = k->held == k->inline_held ? heist__malloc(cap * sizeof(*h))
								    : heist__realloc(k->held, cap * sizeof(*h));
		if (!h)
			return;
		if (k->held == k->inline_held)
			for (size_t i = 0; i < k->n; i++)
				h[i] = k->held[i];
		k->held = h;
		k->cap = cap;
	}
	heist__job_ref(d);
	k->held[k->n++] = d;
}

static void
set_tip(struct walk *k, struct heist_future *j)
{
	if (k->tip == j)
		return;
	heist__job_ref(j);
	if (k->tip)
		heist__job_release(k->tip);
	k->tip = j;
}

/* j runs on runner: hold what runner is blocked in, under the guard if runner is a
 * thread of another pool. */
static void
follow(struct walk *k, struct heist_future *j, struct worker *runner)
{
	struct worker *w = k->w;
	struct heist_pool *p = j->task.pool;	/* set before j was queued */
	bool foreign = p != w->pool;
	struct heist_future *y = NULL;
	if (runner == w || ++k->hops > HOPS_MAX) {
		/* We run j ourselves, below this frame, or the walk goes round: the
		 * program's waits form a cycle, which nothing can finish. */
		k->end |= END_STUCK;
		return;
	}
	if (!foreign || guard_check(w, p, j))
		y = blocked_job(runner, job_running, j, &k->end);
	else
		k->end |= END_RUNNING;	/* it has just ended */
	if (foreign)
		guard_clear(w);
	if (y) {
		hold(k, y);
		heist__job_release(y);	/* hold took its own */
	}
}

/* Look at job j (alive while we look): something to run in td, or more to look at. */
static bool
look(struct walk *k, struct heist_future *j, struct to_run *td)
{
	struct worker *w = k->w;
	k->visits++;
	/* acquire: pairs with the final release; and with the take, for the runner. */
	uint32_t s = atomic_load_explicit(&j->state, memory_order_acquire) & FUT_MASK;
	bool own = j->task.pool == w->pool;
	if (s == FUT_QUEUED) {
		/* acquire: pairs with the release that cleared REF_UNQUEUED
		 * (heist__job_admit_shared), so that a continuation or dependent task
		 * we claim sees its inputs' writes; the claim's CAS decides who runs. */
		uint32_t refs = atomic_load_explicit(&j->refs, memory_order_acquire);
		if (heist__job_ends_chain(refs)) {
			/* Only the program sets it, or its time comes: the chain
			 * ends here, and no thread of the pool is about to run it
			 * (a stand-in may come). */
			set_tip(k, j);
			k->end |= END_STUCK;
			return false;
		}
		if (refs & REF_UNQUEUED) {
			size_t n = k->n;
			heist__job_each_dep(j, hold, k);	/* not runnable yet */
			if (k->n == n)
				k->end |= END_RUNNING;	/* being made runnable now */
			return false;
		}
		if (own) {
			td->claim = j;
			return true;
		}
		set_tip(k, j);
		k->end |= END_STUCK;	/* only its own pool's threads may run it */
		return false;
	}
	if (s != FUT_RUNNING)
		return false;	/* final */
	bool floor_known;
	struct worker *r = heist__job_runner(j, &floor_known);
	if (!r) {
		k->end |= END_RUNNING;	/* its runner is about to say who it is */
		return false;
	}
	if (own && floor_known && help_runner(w, r, j->task.floor, job_running, j, td))
		return true;
	if (!own)
		set_tip(k, j);
	follow(k, j, r);
	return false;
}

/* Apply the rule to the awaited job and its chain. The awaited job is the caller's;
 * every other one we look at we hold, and let go unless we claim it. */
static bool
walk_job(struct worker *w, struct heist_future *x, struct heist_future **tip,
	 struct to_run *td, unsigned *end)
{
	struct walk k = {.w = w, .cap = WALK_INLINE, .tip = *tip};
	k.held = k.inline_held;
	bool found = look(&k, x, td);
	while (!found && k.n && k.visits < WALK_VISITS) {
		struct heist_future *j = k.held[--k.n];
		found = look(&k, j, td);
		if (found && td->claim == j)
			td->claim_held = true;	/* our reference goes with it */
		else
			heist__job_release(j);
	}
	if (!found && k.visits >= WALK_VISITS)
		k.end |= END_STUCK;
	while (k.n)
		heist__job_release(k.held[--k.n]);
	if (k.held != k.inline_held)
		free(k.held);
	*tip = k.tip;
	*end |= k.end;
	return found;
}

/* A group job of g, still queued in the injector: hold it and stop. (It is alive while
 * the injector's consumer looks, heist__injector_find.) */
struct group_match {
	struct heist_group *g;
	struct heist_future *found;
};

static bool
queued_of_group(void *ctx, struct task *t)
{
	struct group_match *m = ctx;
	/* relaxed: the kind never changes once queued; the state is a peek, which
	 * the claim's CAS decides. */
	if (atomic_load_explicit(&t->state, memory_order_relaxed) != TASK_JOB)
		return false;
	struct heist_future *j = (struct heist_future *)t;
	if ((atomic_load_explicit(&j->state, memory_order_relaxed) & FUT_MASK) != FUT_QUEUED ||
	    !heist__group_owns(m->g, j))
		return false;
	heist__job_ref(j);
	m->found = j;
	return true;
}

/* A group's wait: the group's jobs at the bottom of our own deque (submitted by this
 * frame, say), which the frame requires; a job of another kind there goes to the
 * injector, a spawned task goes back where it was (taken first, so that we read no
 * record a thief may have run and freed meanwhile; put_back) and public again. With
 * `deep`, then the group's jobs queued in the injector. */
static bool
help_group(struct worker *w, struct heist_group *g, bool deep, struct to_run *td)
{
	if (g->pool != w->pool)
		return false;	/* another pool's group: its threads run its jobs */
	struct task *x = heist__deque_pop(&w->dq);
	if (x) {
		/* relaxed: the kind never changes once queued (worker.c). */
		if (atomic_load_explicit(&x->state, memory_order_relaxed) == TASK_JOB) {
			if (heist__group_owns(g, (struct heist_future *)x)) {
				heist__worker_took(w, HEIST_PATH_HELPING, x, false);
				td->stolen = x;
			} else {
				requeue(w, x);
			}
			return true;
		}
		put_back(w, x);
	}
	if (!deep)
		return false;
	struct group_match m = {g, NULL};
	struct heist_pool *pool = w->pool;
	if (!heist__injector_find(&pool->high, queued_of_group, &m) &&
	    !heist__injector_find(&pool->injector, queued_of_group, &m) &&
	    !heist__injector_find(&pool->low, queued_of_group, &m))
		return false;	/* its other jobs: we cannot tell where (stuck) */
	td->claim = m.found;
	td->claim_held = true;
	return true;
}

/* The stolen child t that we wait for: the work of its thief above t's floor, and then
 * what the thief is blocked in, which t needs. */
static bool
help_thief(struct worker *w, struct task *t, struct heist_future **tip, struct to_run *td,
	   unsigned *end)
{
	/* acquire: pairs with the thief's release store, made after it set floor. */
	struct worker *thief = task_thief(atomic_load_explicit(&t->thief,
							       memory_order_acquire));
	if (!thief) {
		*end |= END_RUNNING;
		return false;
	}
	if (help_runner(w, thief, t->floor, task_pending, t, td))
		return true;
	struct heist_future *y = blocked_job(thief, task_pending, t, end);
	if (!y)
		return false;
	bool found = walk_job(w, y, tip, td, end);
	if (found && td->claim == y)
		td->claim_held = true;	/* our reference goes with it */
	else
		heist__job_release(y);
	return found;
}

/* One look by the rule. Returns whether it found something to run (in td) or moved
 * something; if not, *end says how the chain ends. deep: also the costlier looks (a
 * group's injector scan). */
static bool
find(struct worker *w, const struct awaited *a, bool deep, struct heist_future **tip,
     struct to_run *td, unsigned *end)
{
	*end = 0;
	if (a->group) {
		*end = END_STUCK;
		return help_group(w, a->group, deep, td);
	}
	if (a->job)
		return walk_job(w, a->job, tip, td, end);
	return help_thief(w, a->task, tip, td, end);
}

/* Run what find found, on top of the wait. */
static void
run(struct worker *w, struct to_run *td)
{
	if (td->claim) {
		heist__job_claim(td->claim, w);	/* nothing, if someone took it first */
		if (td->claim_held)
			heist__job_release(td->claim);
	} else if (td->stolen) {
		if (atomic_load_explicit(&td->stolen->state, memory_order_relaxed) != TASK_JOB)
			heist__worker_took(w, HEIST_PATH_HELPING, td->stolen, true);
		heist__worker_run(w, td->stolen);
	}
}

/* ---------------------------------------------------------------------------------- */
/* Parking                                                                            */

/* The value of job j's state word to sleep on, with FUT_WAITERS (and, for a walker,
 * FUT_WALKERS) set so that the finisher (and a runner that blocks) wakes us; 0 if j is
 * done, or the word changed under us (look again). relaxed: the bits only ask for a
 * wake; the kernel's compare of the word orders the sleep against the finisher's
 * exchange, which reads them. */
static uint32_t
sleep_word(struct heist_future *j, uint32_t s, uint32_t bits)
{
	if ((s & FUT_MASK) >= FUT_DONE)
		return 0;
	if ((s & bits) != bits &&
	    !atomic_compare_exchange_strong_explicit(&j->state, &s, s | bits,
						     memory_order_relaxed, memory_order_relaxed))
		return 0;
	return s | bits;
}

/* A walker sleeps on job j (the awaited one, or the tip of its chain in another pool)
 * for at most timeout_ns: until j ends, or its runner blocks in a new wait. */
static void
walker_sleep(struct heist_future *j, uint64_t timeout_ns)
{
	uint32_t v = sleep_word(j, atomic_load_explicit(&j->state, memory_order_relaxed),
				FUT_WAITERS | FUT_WALKERS);
	if (v)
		heist__futex_wait_bits(&j->state, v, timeout_ns, WAKE_WALKERS);
}

/* Sleep on what we wait for, for at most timeout_ns unless it is done. For a spawned
 * task the mark is TASK_SLEEPER, which the thief's exchange reads (relaxed CAS, for
 * the reason given at sleep_word). */
static void
nap(const struct awaited *a, struct heist_future *tip, uint64_t timeout_ns)
{
	if (a->group) {
		heist__group_sleep(a->group, timeout_ns);
		return;
	}
	if (a->job) {
		/* The tip ends before the awaited job can: a wake from it comes first. */
		walker_sleep(tip && !heist__job_done(a->job) ? tip : a->job, timeout_ns);
		return;
	}
	uint32_t s = TASK_PENDING;
	if (!atomic_compare_exchange_strong_explicit(&a->task->state, &s, TASK_SLEEPER,
						     memory_order_relaxed, memory_order_relaxed) &&
	    s != TASK_SLEEPER)
		return;	/* done */
	heist__futex_wait(&a->task->state, TASK_SLEEPER, timeout_ns);
}

/* A job taken already (claimed by a waiter, or cancelled) whose queue entry is still at
 * the injector's head. */
static bool
taken_already(void *ctx, struct task *t)
{
	(void)ctx;
	return heist__job_taken(t);
}

/* A job a waiter claimed stays where it was queued, and there it would pass for work
 * that waits (needs_stand_in; a chain's links, claimed one by one, pile up in the
 * injector). Take those off the injector's head and the bottom of our own deque:
 * running them runs nothing (heist__job_run skips a job taken already), so a waiter
 * may do it on top of any frame. Anything else at our bottom goes back where it was
 * (taken first, so that we read no record a thief may have run and freed meanwhile;
 * put_back), public again. Returns false if another thread was at the injector, so
 * that we could not see past its head: what it counts may be claimed entries only. */
static bool
drop_taken(struct worker *w, bool own_deque)
{
	struct task *t;
	struct heist_pool *pool = w->pool;
	struct injector *queues[] = {&pool->high, &pool->injector, &pool->low};
	bool busy_any = false;
	for (size_t i = 0; i < sizeof(queues) / sizeof(queues[0]); i++) {
		bool busy;
		while ((t = heist__injector_take_if(queues[i], taken_already, NULL, &busy))) {
			/* Counted as a take, so that heist__pool_progress (depth +
			 * takes) only grows: a drop and a new submission must not
			 * look like no change. */
			counter_add(&w->stats.injector_pops, 1);
			heist__worker_run(w, t);
		}
		busy_any |= busy;
	}
	while (own_deque && (t = heist__deque_pop(&w->dq))) {
		if (!taken_already(NULL, t)) {
			put_back(w, t);
			break;
		}
		heist__worker_run(w, t);
	}
	return !busy_any;
}

/* Whether a parked thread should ask for a spare: only when there is work it leaves
 * undone (queued in the injector or public in some deque) and no worker is idle to
 * take it (searching or asleep: the sleep protocol wakes those). Asked by every wait
 * of a worker, a spare or the guest slot (park() keeps the guest out of the vote: its
 * untimed wait gives back its place instead). own_deque: also clear our own deque of claimed jobs (a
 * parked untimed wait, once a nap; not a timed one, which a poll loop calls again and
 * again, taking its own job out of thieves' reach each time). A parked untimed wait
 * does not ask while another thread is at the injector, so that it could not drop
 * what is at its head: a worker between two tasks that takes claimed entries off it,
 * say (neither idle nor blocked, and its takes leave heist__pool_progress as it was),
 * whose entries it would take for work that no thread of the pool runs; its next
 * look, a nap later, sees (a single chain of waits across pools called a stand-in
 * so: tests/test-live.c, taken_entries_behind_a_busy_injector_call_no_stand_in). A
 * timed wait asks once per call and has no next look: it rather has a stand-in for
 * entries that may be claimed ones (one per parked thread at most, spare.h) than
 * wait out its deadline. */
static bool
needs_stand_in(struct worker *w, bool own_deque)
{
	struct heist_pool *pool = w->pool;
	if (heist__sleep_has_idle(&pool->sleep))
		return false;
	if (!drop_taken(w, own_deque) && own_deque)
		return false;
	return heist__pool_work_visible(pool);
}

/* A timed wait counts its thread among the parked ones until the thread moves on: its
 * wait succeeds, the task it runs returns (heist__worker_run), it waits untimed, or,
 * in the guest slot, its loop ends (heist__worker_guest_leave). So a loop of short
 * timed waits is parked the whole time it polls, not for the few microseconds of each
 * call, and its stand-in does not find itself surplus between two calls (spare.h).
 * The guest too: an outside heist_for_each body that polls holds a place of the
 * pool's (sleep.h, lend) and runs nothing while it polls, as a worker's task would;
 * leaving it out called no stand-in where a worker's poll would, and the job it
 * polled waited for ever behind a busy worker (tests/test-live.c,
 * a_guests_timed_poll_gets_a_stand_in). */
static void
timed_park(struct worker *w)
{
	if (w->timed_parked)
		return;
	heist__worker_flush_done(w);
	counter_add(&w->stats.parks, 1);
	heist__spare_park(w->pool);
	w->timed_parked = true;
}

void
heist__wait_timed_over(struct worker *w)
{
	heist__spare_unpark(w->pool);
	w->timed_parked = false;
}

struct park {
	bool parked;		/* counted among the pool's parked threads */
	struct heist__vote vote;	/* our part in the stall rounds (spare.h) */
};

/* Count ourselves parked (once per stretch of parking). */
static void
park_enter(struct worker *w, struct park *p)
{
	if (p->parked)
		return;
	heist__worker_flush_done(w);
	counter_add(&w->stats.parks, 1);
	if (!heist__worker_is_guest(w))
		heist__spare_park(w->pool);
	p->parked = true;
}

static void
unpark(struct worker *w, struct park *p)
{
	if (p->parked && !heist__worker_is_guest(w))
		heist__spare_unpark(w->pool);
	p->parked = false;
}

/* The threads of w's pool blocked in untimed waits now (published, from their first
 * look that found nothing until they run something or their wait ends), but the
 * guest, which never votes. relaxed: a count for the vote's quorum; a thread that
 * blocks after this look has looked itself and found nothing to run. */
static unsigned
blocked_threads(struct worker *w)
{
	struct heist_pool *pool = w->pool;
	unsigned n = 0;
	for (unsigned i = 0, slots = heist__pool_slots_used(pool); i < slots; i++)
		n += i != pool->n &&
		     atomic_load_explicit(&pool->workers[i].blocked_in, memory_order_relaxed);
	return n;
}

/* A parked thread is no keeper of its pool's timers (timer.h): when every worker waits,
 * none sleeps as one, and what they wait for may be a timer. So each nap of theirs
 * (PARK_NS at most) begins by firing what is due; what it fired, the awaited timer
 * say, the next look finds in the injector. */
static void
fire_timers(struct worker *w)
{
	if (heist__timers_due(&w->pool->timers))
		heist__timers_fire(w->pool);
}

/* One nap of the parked phase of an untimed wait, after a vote for a stand-in if work
 * waits that nobody may run (spare.h). `before` is the pool's progress from before the
 * look that found nothing, and `end` how that look saw the chain end: a vote counts
 * only for a look that saw the pool as it is (work that came during the look, the
 * next link of a chain say, may be ours to run). A look that casts no vote changes
 * nothing in the vote: compensation counts rounds, and only progress starts its count
 * over (spare.c), so looks that cannot tell, however many, only delay it. */
static void
park(struct worker *w, const struct awaited *a, struct park *p, struct heist_future *tip,
     uint64_t before, unsigned end)
{
	park_enter(w, p);
	if (needs_stand_in(w, true) && heist__pool_progress(w->pool) == before) {
		bool stuck = (end & END_STUCK) && !(end & END_RUNNING);
		/* The guest never votes: it is not in the quorum (blocked_threads). It
		 * gives back the place it took instead (sleep.h). */
		if (heist__worker_is_guest(w))
			heist__sleep_recall(&w->pool->sleep);
		else
			heist__spare_vote(w->pool, before, &p->vote, stuck, blocked_threads(w));
	}
	fire_timers(w);
	nap(a, tip, PARK_NS);
}

/* ---------------------------------------------------------------------------------- */
/* The helping wait                                                                   */

/* An untimed wait: apply the rule until a is done; between looks, spin, then yield,
 * then park. */
static void
help_until_done(struct worker *w, const struct awaited *a)
{
	unsigned idle = 0;
	struct park p = {false, {0, false}};
	struct heist_future *tip = NULL;	/* held: see struct walk */
	bool shown = false, ever_shown = false;	/* published in blocked_in */
	while (!awaited_done(a)) {
		struct to_run td = {NULL, false, NULL};
		bool parking = idle >= PATIENCE_SPINS + PATIENCE_YIELDS;
		uint64_t before = parking ? heist__pool_progress(w->pool) : 0;
		unsigned end;
		if (find(w, a, idle == 0 || parking, &tip, &td, &end)) {
			if (shown)
				unpublish(w);
			shown = false;
			unpark(w, &p);
			run(w, &td);
			idle = 0;
			continue;
		}
		if (!shown) {
			publish(w, a);
			shown = ever_shown = true;
		}
		if (idle < PATIENCE_SPINS) {
			heist__backoff(idle++);
		} else if (idle < PATIENCE_SPINS + PATIENCE_YIELDS) {
			heist__thread_yield();
			idle++;
		} else {
			park(w, a, &p, tip, before, end);
		}
	}
	unpark(w, &p);
	if (ever_shown)
		withdraw(w);
	if (tip)
		heist__job_release(tip);
}

/* A timed wait runs nothing: even the awaited job may need the waiting frame to go on
 * after its deadline (to cancel it, say), so it may not be buried under that frame;
 * nor is it published, for the same reason (a walker would run what it waits for).
 * If work waits that nobody may run, a stand-in is called at once (spare.h). */
static bool
wait_timed(struct worker *w, const struct awaited *a, uint64_t deadline_ns)
{
	unsigned idle = 0;
	bool asked = false;
	while (!awaited_done(a)) {
		uint64_t now = heist__now_ns();
		if (now >= deadline_ns)
			break;
		if (!asked) {
			asked = true;
			timed_park(w);
			if (needs_stand_in(w, false))
				heist__spare_call(w->pool);
		}
		uint64_t left = deadline_ns - now < PARK_NS ? deadline_ns - now : PARK_NS;
		if (idle < PATIENCE_SPINS) {
			heist__backoff(idle++);
		} else if (idle < PATIENCE_SPINS + PATIENCE_YIELDS) {
			heist__thread_yield();
			idle++;
		} else {
			fire_timers(w);
			nap(a, NULL, left);
		}
	}
	bool done = awaited_done(a);
	if (done && w->timed_parked)
		heist__wait_timed_over(w);
	return done;
}

/* The one helping wait. */
static bool
help_until(struct worker *w, const struct awaited *a, uint64_t deadline_ns)
{
	/* What we hold below this frame is not ours to run now: let others have it. */
	if (heist__deque_private_count(&w->dq))
		heist__worker_publish(w, 0);
	if (deadline_ns != HEIST_NEVER)
		return wait_timed(w, a, deadline_ns);
	if (w->timed_parked)
		heist__wait_timed_over(w);	/* counted again as this wait parks */
	help_until_done(w, a);
	return true;
}

void
heist__wait_group(struct heist_group *g)
{
	struct worker *w = heist__current();
	if (w) {
		struct awaited a = {NULL, NULL, g};
		help_until(w, &a, HEIST_NEVER);
		return;
	}
	while (!heist__group_done(g))
		heist__group_sleep(g, 0);
}

int
heist__wait_stolen(struct worker *w, struct task *t)
{
	struct awaited a = {t, NULL, NULL};
	help_until(w, &a, HEIST_NEVER);
	return t->result;
}

/* An outside thread's wait: spin a few microseconds (a result from a hot worker
 * arrives in well under one), then sleep: spinning longer can keep a worker that the
 * kernel woke on this CPU from running the very task we wait for. It sleeps with the
 * WAKE_OTHERS bit, so that the wakes meant for walkers (publish) pass it by. */
static bool
block(struct heist_future *j, uint64_t deadline_ns)
{
	for (int i = 0; i < SPIN_PAUSES; i++) {
		uint32_t s = atomic_load_explicit(&j->state, memory_order_acquire);
		if ((s & FUT_MASK) >= FUT_DONE)
			return true;
		if ((s & FUT_MASK) == FUT_QUEUED && i >= QUEUED_PAUSES)
			break;	/* no worker has it yet: it may need this CPU */
		cpu_relax();
	}
	for (;;) {
		/* acquire: pairs with the final release store (finish, cancel). */
		uint32_t s = atomic_load_explicit(&j->state, memory_order_acquire);
		if ((s & FUT_MASK) >= FUT_DONE)
			return true;
		uint64_t timeout = 0;	/* none */
		if (deadline_ns != HEIST_NEVER) {
			uint64_t now = heist__now_ns();
			if (now >= deadline_ns)
				return false;
			timeout = deadline_ns - now;
		}
		uint32_t v = sleep_word(j, s, FUT_WAITERS);
		if (!v)
			continue;	/* it changed: look again */
		/* The kernel sleeps only while the word still reads v; the finishing
		 * exchange changes it and then sees WAITERS and wakes us. */
		heist__futex_wait_bits(&j->state, v, timeout, WAKE_OTHERS);
	}
}

bool
heist__wait_job(struct heist_future *j, uint64_t deadline_ns)
{
	struct worker *w = heist__current();
	if (!w)
		return block(j, deadline_ns);
	struct awaited a = {NULL, j, NULL};
	return help_until(w, &a, deadline_ns);
}
