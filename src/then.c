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
 * A when_all future W is a job record that never runs, with a node per input and a count
 * of inputs not yet final (and one for the setup itself, so that W cannot complete
 * while inputs are still being linked): in its own wide record up to three inputs
 * (inline tables, below), else in a table. The last input to end computes W's result,
 * the first nonzero in array order, and makes W final. W cancelled by its own future:
 * it ends at once, with ECANCELED; the inputs go on. A dependent task D is the same
 * with a task to queue at the end (heist_submit_after).
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

/* Try to become a reader. The jobs are let go only by the read-modify-write that
 * brings the word to 0 (acq_rel, lease_return), after our own return (release) in
 * the word's order, so every read we make in between comes before it; what we read
 * was set before J could be seen, and reached us with J's future. seq_cst on
 * success: the reader's side of the Dekker pair with an inline table's firer
 * (inline_fired), whose input we may read next; relaxed otherwise. */
static bool
lease_borrow(_Atomic uint32_t *lease)
{
	uint32_t v = atomic_load_explicit(lease, memory_order_relaxed);
	while (v & LEASE_OPEN)
		if (atomic_compare_exchange_weak_explicit(lease, &v, v + 1, memory_order_seq_cst,
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

/* A when_all future W and a dependent task D of more than INLINE_INPUTS inputs, or D
 * in a group, wait for n inputs with a table: a node per input, hung on the input's
 * list, and a count of inputs not yet final (and one for the setup itself, so that the
 * end cannot come while inputs are still being linked). The last input to end settles
 * the table: W completes with the first nonzero input result in array order; D is
 * queued, or ends with that result without running. The table holds a reference to
 * each input until its lease is over, and one to W or D until it is settled (D's
 * becomes the queue's). Up to ALL_IN_RECORD inputs the table is a record from the
 * thread's cache (record.h), beyond that one malloc. Fewer inputs outside a group:
 * an inline table (below). */

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

/* ---- up to three inputs, in the waiting job's own record ---- */

/* A when_all future W or a dependent task D of at most INLINE_INPUTS inputs, outside a
 * group, keeps its wait in its own inline_copy instead of a table in another record,
 * and holds no reference to its inputs: each input's node notes its result when it
 * fires, and the last to fire settles W or D as the table would. Its waiters may still
 * read the inputs (heist__job_each_dep): a Dekker pair between the reader's borrow of
 * the lease and the firer's mark on its slot tells the firer when one may be reading
 * it, and the firer then takes a reference for the reader, let go with the lease. */
enum { INLINE_INPUTS = 3 };	/* as many as inline_link names fires for */

#define INPUT_HELD ((uintptr_t)1)	/* a fired input's reference, for its readers */

struct inline_input {
	struct heist__then node;
	/* The input until it fires; then 0, or the input | INPUT_HELD if a waiter may
	 * have been reading it: a counted reference, released when the lease ends. */
	_Atomic uintptr_t f;
};

/* in[0].node first: its fire (inline_fire0) tells heist__job_each_dep the kind. */
struct inline_all {
	struct inline_input in[INLINE_INPUTS];
	/* The failed input first in array order: (INLINE_INPUTS - index) << 32 | its
	 * result, the largest of the failures noted; 0 if none. */
	_Atomic uint64_t first_error;
	_Atomic uint32_t left;	/* inputs not fired, + 1 while the setup runs */
	_Atomic uint32_t lease;
	_Atomic bool held;	/* a slot is INPUT_HELD */
	uint16_t n;
	uint16_t flags;		/* D's heist_after.flags */
};
static_assert(sizeof(struct inline_all) <= JOB_WIDE_BYTES, "a dependent's inputs in its record");

/* In a wide record (heist__job_new_waiting), from its inline_copy on. */
static struct inline_all *
inline_all(struct heist_future *j)
{
	return (struct inline_all *)(void *)heist__job_wide(j);
}

/* Input i's result r is not 0: keep it if no input before i failed. relaxed: the count
 * down after it publishes it to the one who settles. */
static void
note_error(struct inline_all *t, unsigned i, int r)
{
	uint64_t mine = (uint64_t)(INLINE_INPUTS - i) << 32 | (uint32_t)r;
	uint64_t e = atomic_load_explicit(&t->first_error, memory_order_relaxed);
	while (mine > e && !atomic_compare_exchange_weak_explicit(&t->first_error, &e, mine,
								   memory_order_relaxed,
								   memory_order_relaxed))
		;
}

/* The lease is over: let go the references taken for readers. relaxed: as below. */
static noinline void
inline_let_go(struct inline_all *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		/* relaxed: the lease's acq_rel read-modify-writes order the stores. */
		uintptr_t p = atomic_load_explicit(&t->in[i].f, memory_order_relaxed);
		if (p & INPUT_HELD)
			heist__job_release((struct heist_future *)(p & ~INPUT_HELD));
	}
}

/* Every input fired: the first failed input's result, or 0; the lease closed. The
 * caller made the last count down. */
static inline int
inline_close(struct inline_all *t)
{
	/* relaxed: the last count down's acquire saw every firer's note. */
	uint64_t e = atomic_load_explicit(&t->first_error, memory_order_relaxed);
	if (lease_return(&t->lease, LEASE_OPEN) &&
	    atomic_load_explicit(&t->held, memory_order_relaxed))
		inline_let_go(t);
	return (int)(uint32_t)e;	/* 0 if none failed */
}

/* Every input fired: settle j (W or D) as all_complete would. Out of line: the last
 * firer's tail, which the others' fast path should not make room for. */
static noinline void
inline_settle(struct heist_future *j)
{
	struct inline_all *t = inline_all(j);
	int r = inline_close(t);
	if (j->task.fn) {
		after_ready(j, r, t->flags);
		return;
	}
	heist__job_complete(j, r);	/* unless W's own future cancelled it */
	heist__job_release(j);
}

/* Input i, f, is final (fired, or found final at the link): f is alive meanwhile.
 * Inline: each slot's fire is this with its i. */
static inline void
inline_fired(struct heist_future *j, unsigned i, struct heist_future *f)
{
	struct inline_all *t = inline_all(j);
	int r = final_result(f);
	if (r)
		note_error(t, i, r);
	/* seq_cst, store and load: the firer's side of a Dekker pair with the reader's
	 * borrow (lease_borrow, seq_cst) and its load of the slot (seq_cst). Either the
	 * reader sees the slot empty, or we see it reading and keep f for it. A
	 * reader that returned already is done with f: our acquire saw its release. */
	atomic_store_explicit(&t->in[i].f, 0, memory_order_seq_cst);
	if (atomic_load_explicit(&t->lease, memory_order_seq_cst) != LEASE_OPEN) {
		heist__job_ref(f);
		/* relaxed: read only once the lease is over, after our count down. */
		atomic_store_explicit(&t->in[i].f, (uintptr_t)f | INPUT_HELD,
				      memory_order_relaxed);
		atomic_store_explicit(&t->held, true, memory_order_relaxed);
	}
	/* acq_rel: the last to count down sees every firer's note and slot. */
	if (atomic_fetch_sub_explicit(&t->left, 1, memory_order_acq_rel) == 1)
		inline_settle(j);
}

static struct heist_future *
inline_job(struct heist__then *n, unsigned i)
{
	struct inline_input *in = (struct inline_input *)(void *)n - i;
	return cont_job(&in->node);	/* in[0] is where a struct cont's node would be */
}

/* Input 0, 1 or 2 fired: which slot a node is, its fire says. */
static void
inline_fire0(struct heist__then *n, struct heist_future *f)
{
	inline_fired(inline_job(n, 0), 0, f);
}

static void
inline_fire1(struct heist__then *n, struct heist_future *f)
{
	inline_fired(inline_job(n, 1), 1, f);
}

static void
inline_fire2(struct heist__then *n, struct heist_future *f)
{
	inline_fired(inline_job(n, 2), 2, f);
}

/* Input i, f, was final when linked: what its firer would have done. Never the last
 * count down (the setup holds one). Out of line: rare. */
static noinline void
inline_found_final(struct heist_future *j, unsigned i, struct heist_future *f)
{
	inline_fired(j, i, f);
}

/* Hang j's inputs on the n inputs (n <= INLINE_INPUTS); returns whether the setup's
 * own count down was the last (every input was final already): then settling is the
 * caller's. j holds the caller's counted reference until it is settled. Nobody but
 * the firers sees j meanwhile (not in a group). */
static inline bool
inline_link(struct heist_future *j, heist_future *const *fs, size_t n, uint32_t flags)
{
	struct inline_all *t = inline_all(j);
	/* in[0]'s fire: the kind, even with no input. */
	t->in[0].node.fire = inline_fire0;
	t->in[1].node.fire = inline_fire1;
	t->in[2].node.fire = inline_fire2;
	atomic_init(&t->first_error, 0);
	atomic_init(&t->left, (uint32_t)n + 1);
	atomic_init(&t->lease, LEASE_OPEN);
	atomic_init(&t->held, false);
	t->n = (uint16_t)n;
	t->flags = (uint16_t)flags;
	/* A slot is set before its node is linked: its firer reads it. */
	for (size_t i = 0; i < n; i++) {
		struct heist_future *f = fs[i];
		atomic_init(&t->in[i].f, (uintptr_t)f);
		if (!heist__job_then(f, &t->in[i].node))
			inline_found_final(j, (unsigned)i, f);
	}
	/* acq_rel: as inline_fired's. */
	return atomic_fetch_sub_explicit(&t->left, 1, memory_order_acq_rel) == 1;
}

/* A waiter's look at j's inputs (heist__job_each_dep). */
static void
inline_each(struct heist_future *j, void (*each)(void *ctx, struct heist_future *d), void *ctx)
{
	struct inline_all *t = inline_all(j);
	if (!lease_borrow(&t->lease))
		return;
	for (uint32_t i = 0; i < t->n; i++) {
		/* seq_cst: the reader's load of the pair in inline_fired. Not 0 and not
		 * held: not fired yet, so alive, and its firer will see our borrow. */
		uintptr_t p = atomic_load_explicit(&t->in[i].f, memory_order_seq_cst);
		if (p && !(p & INPUT_HELD) && !heist__job_done((struct heist_future *)p))
			each(ctx, (struct heist_future *)p);
	}
	if (lease_return(&t->lease, 1) && atomic_load_explicit(&t->held, memory_order_relaxed))
		inline_let_go(t);
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
	struct heist_future *w;
	if (n <= INLINE_INPUTS) {
		if (!(w = heist__job_new_waiting(pool, NULL, NULL, true)))	/* never runs */
			return ENOMEM;
		*out = w;
		if (inline_link(w, fs, n, 0))
			inline_settle(w);
		return 0;
	}
	w = heist__job_new(NULL, NULL, true);
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
	OWN_FIELDS(struct cont, w)->node.fire = NULL;	/* not inline (heist__job_each_dep) */
	if (all_link(a, w, fs, n, 0))
		all_complete(a);
	return 0;
}

/* Whether heist_submit_after's options are valid; a NULL pool becomes the group's. */
static bool
after_opt_valid(heist_pool **pool, const struct heist_after *opt)
{
	if (!*pool && opt->group)
		*pool = opt->group->pool;
	return !(opt->flags & ~HEIST_AFTER_ALWAYS) &&
	       (!opt->group || (opt->group->pool == *pool && !opt->cancel)) &&
	       heist__priority_valid(opt->priority);
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

/* D's inline table settled at the call: after_at_once, as inline_settle would. */
static int
inline_settled_at_once(struct heist_future *d, heist_future **out)
{
	struct inline_all *t = inline_all(d);
	int r = inline_close(t);
	return after_at_once(d, r, t->flags, NULL, out);
}

/* What heist_after asks of a new dependent task d, a group's (g) or not. */
static inline void
after_options(struct heist_future *d, const struct heist_after *opt, struct heist_group *g)
{
	if (g) {
		heist__group_adopt(g, d);
	} else if (opt && opt->cancel) {
		heist__cancel_acquire(opt->cancel);
		d->token = opt->cancel;
	}
	if (opt && opt->priority != HEIST_PRIORITY_NORMAL)
		heist__job_set_priority(d, opt->priority);	/* over the group's */
}

/* heist_submit_after of 0, 2 or 3 inputs outside a group: an inline table. */
static int
after_inline(heist_pool *pool, heist_future *const *inputs, size_t n, heist_fn fn, void *arg,
	     const struct heist_after *opt, uint32_t flags, heist_future **out)
{
	struct heist_future *d = heist__job_new_waiting(pool, fn, arg, out != NULL);
	if (!d)
		return ENOMEM;
	after_options(d, opt, NULL);
	if (out)
		*out = d;
	if (!inline_link(d, inputs, n, flags))
		return 0;
	return inline_settled_at_once(d, out);
}

HEIST_EXPORT int
heist_submit_after(heist_pool *pool, heist_future *const *inputs, size_t n, heist_fn fn,
		   void *arg, const struct heist_after *opt, heist_future **out)
{
	/* NULL first, before the inputs are read: an out that is one of them is then a
	 * NULL input (EINVAL), never a task that waits for itself. */
	if (out)
		*out = NULL;
	if ((opt && !after_opt_valid(&pool, opt)) || !pool || !fn || !futures_valid(inputs, n))
		return EINVAL;
	struct heist_group *g = opt ? opt->group : NULL;
	uint32_t flags = opt ? opt->flags : 0;
	/* Outside a group: 1 input, a continuation's fields; up to INLINE_INPUTS, an
	 * inline table; else a table in another record or allocation. */
	bool table = g || n > INLINE_INPUTS;
	if (!table && n != 1)
		return after_inline(pool, inputs, n, fn, arg, opt, flags, out);
	struct heist_future *d = heist__job_new(fn, arg, out != NULL);
	struct all *a = table ? all_alloc(n) : NULL;
	if (!d || (table && !a)) {
		if (a)
			all_dealloc(a, n);
		if (d)
			heist__job_discard(d);
		return ENOMEM;
	}
	d->task.pool = pool;
	heist__job_set_flag(d, REF_UNQUEUED | REF_DEPS, true);	/* not before its inputs */
	after_options(d, opt, g);
	if (out)
		*out = d;
	if (!table)
		return after1_link(d, inputs[0], flags, out);
	if (!g)
		OWN_FIELDS(struct cont, d)->node.fire = NULL;	/* a table (each_dep) */
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
	/* An inline table's first node is where a continuation's is (OWN_FIELDS). */
	if (OWN_FIELDS(struct cont, j)->node.fire == inline_fire0) {
		inline_each(j, each, ctx);
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
