/* SPDX-License-Identifier: MIT */
/* then.c - what runs when jobs are done: continuations (heist_future_then) and
 * when_all futures. Both hang a struct heist__then (future.h) on the jobs they wait
 * for, fired by whichever thread makes such a job final; nothing blocks a thread or
 * polls in between.
 *
 * A continuation C of job F is a job record like any other, made at the call and
 * queued only once F is done: its node lives in C's own inline_copy, and the list of
 * F holds C's queue reference meanwhile. F done: the thread that made it so queues C
 * (submit.c): a worker of the pool as its own submit, counted in the epoch of the job
 * it is finishing, accepted during a drain; any other thread from outside, through
 * the registry of live pools (pool.c), so that a pool already destroyed is refused
 * (ESHUTDOWN), not touched. F cancelled (by its future or its token; not a job that
 * ran and returned ECANCELED): C is cancelled too, without running. C cancelled first
 * (its own future): it is simply dropped when F fires. If F is final before C is
 * linked, the caller does what firing would do.
 *
 * A when_all future W is a job record that never runs: one allocation holds a node per
 * input and a count of inputs not yet final (and one for the setup itself, so that W
 * cannot complete while inputs are still being linked). The last input to end computes
 * W's result, the first nonzero in array order, and makes W final; W holds a reference
 * to each input until then. W cancelled by its own future: it ends at once, with
 * ECANCELED; the inputs go on.
 *
 * Both lend what they wait for to their waiters: a worker waiting for C may run F,
 * one waiting for W may run W's inputs (wait.c), which is what keeps such waits from
 * needing another thread. The lease below keeps those jobs alive while a waiter reads
 * them, and lets them go once the wait is over and the last reader is out. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "cancel.h"
#include "platform/platform.h"
#include "future.h"
#include "group.h"
#include "pool.h"
#include "submit.h"
#include "worker.h"

/* The result a waiter of a final job sees. acquire: pairs with the final release. */
static int
final_result(const struct heist_future *j)
{
	uint32_t s = atomic_load_explicit((_Atomic uint32_t *)&j->state, memory_order_acquire);
	return (s & FUT_MASK) == FUT_CANCELLED ? ECANCELED : j->task.result;
}

/* Whether a final job was cancelled (by its future or its token) rather than run: a
 * job that ran and returned ECANCELED was not. acquire: as final_result. */
static bool
was_cancelled(const struct heist_future *j)
{
	return (atomic_load_explicit((_Atomic uint32_t *)&j->state, memory_order_acquire) &
		FUT_MASK) == FUT_CANCELLED;
}

/* A job that will never run makes itself final with ECANCELED, if nobody did yet. */
static void
abandon(struct heist_future *j)
{
	heist__job_cancel_queued(j);
	heist__job_release(j);	/* the reference the list (or the caller) held */
}

/* ---- what a waiting job waits for, lent to its waiters ---- */

/* A continuation or when_all future J waits for other jobs; a worker that waits for J
 * may run those (wait.c), but must not read them once J's wait is over and they are
 * let go. The lease says whether they may still be read (LEASE_OPEN) and how many
 * waiters are reading them; whoever brings it to 0, the one who closes it or the last
 * reader, lets them go (lease_done). */
#define LEASE_OPEN ((uint32_t)1 << 31)

/* Try to become a reader. relaxed: the jobs are let go only by the read-modify-write
 * that brings the word to 0 (acq_rel, lease_return), after our own return (release)
 * in the word's order, so every read we make in between comes before it; what we
 * read was set before J could be seen, and reached us with J's future. */
static bool
lease_borrow(_Atomic uint32_t *lease)
{
	uint32_t v = atomic_load_explicit(lease, memory_order_relaxed);
	while (v & LEASE_OPEN)
		if (atomic_compare_exchange_weak_explicit(lease, &v, v + 1, memory_order_relaxed,
							  memory_order_relaxed))
			return true;
	return false;
}

/* Stop reading (a reader) or close the lease (its owner, once): whether the lease is
 * now 0, and the caller must let the jobs go. acq_rel: the last one out lets go after
 * every other reader's reads. */
static bool
lease_return(_Atomic uint32_t *lease, uint32_t what)
{
	return atomic_fetch_sub_explicit(lease, what, memory_order_acq_rel) == what;
}

/* ---- continuations ---- */

/* What a continuation (struct cont) or a when_all (struct all_ref) keeps in its job
 * record's inline_copy, which its own argument never uses. */
#define OWN_FIELDS(type, j) ((type *)(void *)(j)->inline_copy)

/* A continuation C keeps, in its inline_copy: its node on F's list, F itself (with a
 * reference, for C's waiters to help with) and the lease on F. */
struct cont {
	struct heist__then node;
	struct heist_future *dep;
	_Atomic uint32_t lease;
	uint32_t after_flags;	/* a dependent task of one input (after1_fire): its flags */
};
static_assert(sizeof(struct cont) <= JOB_INLINE_COPY, "a continuation's record");

static struct heist_future *
cont_job(struct heist__then *n)
{
	return (struct heist_future *)(void *)((unsigned char *)n -
					       offsetof(struct heist_future, inline_copy));
}

/* C's wait for F is over: close the lease, and let F go unless a reader still has it.
 * Before C is queued, while C is surely alive. */
static void
cont_close(struct heist_future *c)
{
	struct cont *k = OWN_FIELDS(struct cont, c);
	struct heist_future *f = k->dep;	/* before the close: C may go after it */
	if (lease_return(&k->lease, LEASE_OPEN))
		heist__job_release(f);
}

/* C may run: queue it on its pool, from wherever we are (submit.c). If it cannot be
 * queued, C ends with the error, never run. Consumes the caller's reference (it
 * becomes the queue's). */
static void
queue_continuation(struct heist_future *c)
{
	int err = heist__submit_continuation(c);
	if (err) {
		heist__job_forgo(c, err);	/* unless cancelled meanwhile */
		heist__job_release(c);
	}
}

/* F is final, on the thread that made it so (F is alive until we return). */
static void
cont_fire(struct heist__then *n, struct heist_future *f)
{
	struct heist_future *c = cont_job(n);
	cont_close(c);
	/* relaxed: a peek; C's own cancel or the queue's take decides later. */
	bool queued = (atomic_load_explicit(&c->state, memory_order_relaxed) & FUT_MASK) ==
		      FUT_QUEUED;
	if (queued && !was_cancelled(f))
		queue_continuation(c);
	else
		abandon(c);	/* F cancelled (or C itself): C never runs */
}

HEIST_EXPORT int
heist_future_then(heist_future *f, heist_fn fn, void *arg, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!f || !fn)
		return EINVAL;
	struct heist_future *c = heist__job_new(fn, arg, out != NULL);
	if (!c)
		return ENOMEM;
	c->task.pool = f->task.pool;
	heist__job_set_flag(c, REF_UNQUEUED | REF_DEPS, true);	/* not before F is done */
	struct cont *k = OWN_FIELDS(struct cont, c);
	k->node.fire = cont_fire;
	k->dep = f;
	heist__job_ref(f);	/* C's, until its lease is over */
	atomic_init(&k->lease, LEASE_OPEN);
	if (out)
		*out = c;
	if (heist__job_then(f, &k->node))
		return 0;
	/* F is final already: do what firing would. The pool may be gone: nothing is
	 * queued then, and the call fails rather than hand out a future that will
	 * never run. */
	cont_close(c);
	if (was_cancelled(f)) {
		abandon(c);
		return 0;
	}
	int err = heist__submit_continuation(c);
	if (err) {
		if (out)
			*out = NULL;
		heist__job_discard(c);	/* nobody else has seen it */
	}
	return err;
}

/* ---- callbacks on a job's end ---- */

/* heist_future_on_done's node, on the heap: the callback and the reference it holds. */
struct on_done {
	struct heist__then node;
	heist_done_fn fn;
	void *arg;
};

static void
on_done_fire(struct heist__then *n, struct heist_future *f)
{
	struct on_done *d = (struct on_done *)(void *)n;
	d->fn(d->arg, final_result(f));
	heist__job_release(f);	/* the call's; f's finisher holds its own meanwhile */
	free(d);
}

HEIST_EXPORT int
heist_future_on_done(heist_future *f, heist_done_fn fn, void *arg)
{
	if (!f || !fn)
		return EINVAL;
	struct on_done *d = heist__malloc(sizeof(*d));
	if (!d)
		return ENOMEM;
	d->node.fire = on_done_fire;
	d->fn = fn;
	d->arg = arg;
	heist__job_ref(f);	/* until fn has run */
	if (!heist__job_then(f, &d->node))
		on_done_fire(&d->node, f);	/* final already: ours to fire */
	return 0;
}

/* ---- when_all and dependent tasks ---- */

/* A when_all future W and a dependent task D both wait for n inputs with a table: a
 * node per input, hung on the input's list, and a count of inputs not yet final (and
 * one for the setup itself, so that the end cannot come while inputs are still being
 * linked). The last input to end settles the table: W completes with the first
 * nonzero input result in array order; D is queued, or ends with that result without
 * running. The table holds a reference to each input until its lease is over, and one
 * to W or D until it is settled (D's becomes the queue's). Up to ALL_IN_RECORD inputs
 * the table is a record from the thread's cache (record.h), beyond that one malloc. */

struct all;

struct all_input {
	struct heist__then node;
	struct heist_future *f;
	struct all *all;
};

struct all {
	struct heist_future *w;	/* W or D */
	_Atomic size_t left;	/* inputs not final, + 1 while the setup runs */
	uint32_t n;
	uint32_t flags;		/* D's heist_after.flags */
	struct all_input in[];
};

enum { ALL_IN_RECORD = (RECORD_BYTES - sizeof(struct all)) / sizeof(struct all_input) };
static_assert(ALL_IN_RECORD >= 3, "a dependent task of 3 inputs: a table in a record");

/* W and D keep, in their inline_copy, their table and the lease on it: the inputs are
 * let go, and the table freed, when the lease is over. At ALL_OWN, after the node a
 * dependent task of a group keeps first (group.h); a continuation's struct cont is at
 * the start, which is how heist__job_each_dep tells the kinds apart. */
struct all_ref {
	struct all *all;
	_Atomic uint32_t lease;
};
#define ALL_OWN ((GROUP_NODE_BYTES + 15) / 16 * 16)
static_assert(ALL_OWN + sizeof(struct all_ref) <= JOB_INLINE_COPY, "a dependent's record");

static struct all_ref *
all_ref(struct heist_future *j)
{
	return (struct all_ref *)(void *)(j->inline_copy + ALL_OWN);
}

static struct all *
all_alloc(size_t n)
{
	if (n <= ALL_IN_RECORD)
		return heist__record_alloc();
	if (n > (SIZE_MAX - sizeof(struct all)) / sizeof(struct all_input) || n > UINT32_MAX)
		return NULL;
	return heist__malloc(sizeof(struct all) + n * sizeof(struct all_input));
}

static void
all_dealloc(struct all *a, size_t n)
{
	if (n <= ALL_IN_RECORD)
		heist__record_free(a);
	else
		free(a);
}

/* The inputs are let go. */
static void
all_free(struct all *a)
{
	size_t n = a->n;
	for (size_t i = 0; i < n; i++)
		heist__job_release(a->in[i].f);
	all_dealloc(a, n);
}

/* Every input is final: the first nonzero result among them in array order, or 0;
 * the inputs are let go once no waiter of W or D reads them. */
static int
all_settle(struct all *a)
{
	int r = 0;
	for (size_t i = 0; i < a->n && !r; i++)
		r = final_result(a->in[i].f);
	if (lease_return(&all_ref(a->w)->lease, LEASE_OPEN))
		all_free(a);
	return r;
}

/* D's inputs are final, with result r (all_settle): queue it, or end it without
 * running. Consumes the table's reference to D. */
static void
after_ready(struct heist_future *d, int r, uint32_t flags)
{
	/* relaxed: a peek; D's own cancel or the queue's take decides later. */
	bool queued = (atomic_load_explicit(&d->state, memory_order_relaxed) & FUT_MASK) ==
		      FUT_QUEUED;
	if (queued && (!r || (flags & HEIST_AFTER_ALWAYS))) {
		queue_continuation(d);
	} else {
		heist__job_forgo(d, r);	/* unless its future cancelled it first */
		heist__job_release(d);
	}
}

/* A dependent task D of one input F, outside a group, keeps a continuation's struct
 * cont in its record instead of a table in another (a table's record, its count and
 * its settling cost a third of D's instructions): F is final, on the thread that made
 * it so; D gets the dependent's rule, not a continuation's (after_ready). */
static void
after1_fire(struct heist__then *n, struct heist_future *f)
{
	struct heist_future *d = cont_job(n);
	uint32_t flags = OWN_FIELDS(struct cont, d)->after_flags;
	int r = final_result(f);	/* before the close: F may go with it */
	cont_close(d);
	after_ready(d, r, flags);
}

/* D's inputs were all final at the call, with result r (its flags: flags): queue it
 * now, or end it, as the last input would have; but a D that cannot be queued is taken
 * back (nobody else has seen it; g, its group or NULL, counts it out) and the call
 * fails. */
static int
after_at_once(struct heist_future *d, int r, uint32_t flags, struct heist_group *g,
	      heist_future **out)
{
	if (r && !(flags & HEIST_AFTER_ALWAYS)) {
		after_ready(d, r, 0);
		return 0;
	}
	int err = heist__submit_continuation(d);
	if (err) {
		if (out)
			*out = NULL;
		heist__job_discard(d);
		if (g)
			heist__group_count_out(g);	/* counted in, never fired */
	}
	return err;
}

/* Hang D's struct cont on its one input f; as heist_submit_after returns. */
static int
after1_link(struct heist_future *d, struct heist_future *f, uint32_t flags,
	    heist_future **out)
{
	struct cont *k = OWN_FIELDS(struct cont, d);
	k->node.fire = after1_fire;
	k->dep = f;
	k->after_flags = flags;
	heist__job_ref(f);	/* D's, until its lease is over */
	atomic_init(&k->lease, LEASE_OPEN);
	if (heist__job_then(f, &k->node))
		return 0;
	int r = final_result(f);	/* final already: do what firing would */
	cont_close(d);
	return after_at_once(d, r, flags, NULL, out);
}

static void
all_complete(struct all *a)
{
	struct heist_future *w = a->w;
	uint32_t flags = a->flags;	/* before the settle: a may go with it */
	int r = all_settle(a);
	if (w->task.fn) {
		after_ready(w, r, flags);
		return;
	}
	heist__job_complete(w, r);	/* unless W's own future cancelled it */
	heist__job_release(w);
}

/* Whether this count down was the last. */
static bool
all_count_down(struct all *a)
{
	/* acq_rel: the last to count down sees every input's final state, which each
	 * firer saw (or stored) before its own count down. */
	return atomic_fetch_sub_explicit(&a->left, 1, memory_order_acq_rel) == 1;
}

static void
all_fire(struct heist__then *n, struct heist_future *f)
{
	(void)f;
	struct all *a = ((struct all_input *)(void *)n)->all;
	if (all_count_down(a))
		all_complete(a);
}

/* Hang j's table on the n inputs; returns whether the setup's own count down was the
 * last (every input was final already): then settling is the caller's. a->w holds
 * the caller's counted reference to j until it is settled. */
static bool
all_link(struct all *a, struct heist_future *j, heist_future *const *fs, size_t n,
	 uint32_t flags)
{
	a->w = j;
	a->n = (uint32_t)n;
	a->flags = flags;
	atomic_init(&a->left, n + 1);
	struct all_ref *r = all_ref(j);
	r->all = a;
	atomic_init(&r->lease, LEASE_OPEN);
	for (size_t i = 0; i < n; i++) {
		a->in[i] = (struct all_input){{NULL, all_fire}, fs[i], a};
		heist__job_ref(fs[i]);
		if (!heist__job_then(fs[i], &a->in[i].node) && all_count_down(a))
			all_complete(a);	/* final already; never the last here */
	}
	return all_count_down(a);	/* the setup's own count */
}

static bool
futures_valid(heist_future *const *fs, size_t n)
{
	if (n && !fs)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!fs[i])
			return false;
	return true;
}

HEIST_EXPORT int
heist_when_all(heist_pool *pool, heist_future *const *fs, size_t n, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !out || !futures_valid(fs, n))
		return EINVAL;
	struct heist_future *w = heist__job_new(NULL, NULL, true);
	struct all *a = all_alloc(n);
	if (!w || !a) {
		if (a)
			all_dealloc(a, n);
		if (w)
			heist__job_discard(w);
		return ENOMEM;
	}
	w->task.pool = pool;
	heist__job_set_flag(w, REF_UNQUEUED | REF_DEPS, true);	/* W never runs */
	*out = w;
	if (all_link(a, w, fs, n, 0))
		all_complete(a);
	return 0;
}

static int
after_check(heist_pool **pool, heist_future *const *inputs, size_t n, heist_fn fn,
	    const struct heist_after *opt)
{
	struct heist_after none = {0};
	if (!opt)
		opt = &none;
	if (!*pool && opt->group)
		*pool = opt->group->pool;
	if (!*pool || !fn || !futures_valid(inputs, n) || (opt->flags & ~HEIST_AFTER_ALWAYS) ||
	    (opt->group && (opt->group->pool != *pool || opt->cancel)) ||
	    !heist__priority_valid(opt->priority))
		return EINVAL;
	return 0;
}

/* D's table settled at the call (every input final): after_at_once. */
static int
after_settled_at_once(struct heist_future *d, struct all *a, struct heist_group *g,
		      heist_future **out)
{
	uint32_t flags = a->flags;	/* before the settle: a may go with it */
	int r = all_settle(a);
	return after_at_once(d, r, flags, g, out);
}

HEIST_EXPORT int
heist_submit_after(heist_pool *pool, heist_future *const *inputs, size_t n, heist_fn fn,
		   void *arg, const struct heist_after *opt, heist_future **out)
{
	if (out)
		*out = NULL;
	int err = after_check(&pool, inputs, n, fn, opt);
	if (err)
		return err;
	struct heist_group *g = opt ? opt->group : NULL;
	bool one = n == 1 && !g;	/* no table: after1_link */
	struct heist_future *d = heist__job_new(fn, arg, out != NULL);
	struct all *a = one ? NULL : all_alloc(n);
	if (!d || (!one && !a)) {
		if (a)
			all_dealloc(a, n);
		if (d)
			heist__job_discard(d);
		return ENOMEM;
	}
	d->task.pool = pool;
	heist__job_set_flag(d, REF_UNQUEUED | REF_DEPS, true);	/* not before its inputs */
	if (g) {
		heist__group_adopt(g, d);
	} else {
		/* Not a continuation's (heist__job_each_dep reads this). */
		OWN_FIELDS(struct cont, d)->node.fire = NULL;
		if (opt && opt->cancel) {
			heist__cancel_acquire(opt->cancel);
			d->token = opt->cancel;
		}
	}
	if (opt && opt->priority != HEIST_PRIORITY_NORMAL)
		heist__job_set_priority(d, opt->priority);	/* over the group's */
	uint32_t flags = opt ? opt->flags : 0;
	if (out)
		*out = d;
	if (one)
		return after1_link(d, inputs[0], flags, out);
	if (!all_link(a, d, inputs, n, flags))
		return 0;
	return after_settled_at_once(d, a, g, out);
}

/* ---- helping ---- */

void
heist__job_each_dep(struct heist_future *j, void (*each)(void *ctx, struct heist_future *d),
		    void *ctx)
{
	/* relaxed: REF_DEPS was set before anyone could see j. */
	if (!(atomic_load_explicit(&j->refs, memory_order_relaxed) & REF_DEPS))
		return;
	if (j->task.fn && (OWN_FIELDS(struct cont, j)->node.fire == cont_fire ||
			   OWN_FIELDS(struct cont, j)->node.fire == after1_fire)) {
		struct cont *k = OWN_FIELDS(struct cont, j);
		if (!lease_borrow(&k->lease))
			return;
		struct heist_future *f = k->dep;
		if (!heist__job_done(f))
			each(ctx, f);
		if (lease_return(&k->lease, 1))
			heist__job_release(f);
		return;
	}
	struct all_ref *r = all_ref(j);
	if (!lease_borrow(&r->lease))
		return;
	struct all *a = r->all;
	for (size_t i = 0; i < a->n; i++)
		if (!heist__job_done(a->in[i].f))
			each(ctx, a->in[i].f);
	if (lease_return(&r->lease, 1))
		all_free(a);
}
