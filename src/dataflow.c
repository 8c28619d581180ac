/* SPDX-License-Identifier: MIT */
/* dataflow.c - data dependencies: tasks that say which addresses they read and write,
 * from which the edges are derived, as OpenMP's depend(in/out/inout) clauses and
 * StarPU's data handles do. Per address, the last writer and the readers since it: a
 * reader waits for the last writer (read after write); a writer waits for the last
 * writer (write after write) and for every reader since (write after read). Each task
 * is then a dependent task (then.c) of those futures, in the dataflow's group, so that
 * a wait covers them all and the first error cancels the rest.
 *
 * The history is a table keyed by address, under one lock: submits are ordered by the
 * lock, which is the order their edges follow. Futures that are done and succeeded are
 * dropped from it as they are met, since waiting for them costs nothing; failed ones
 * stay until a wait, so that their error reaches every task after them. Everything a submit could
 * fail on is allocated before the task is submitted, so a failed call changes
 * nothing. Waiting (heist_group_wait) happens outside the lock. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "future.h"
#include "internal.h"
#include "platform/platform.h"

struct slot {
	const void *addr;		/* NULL: free */
	struct heist_future *writer;	/* a counted reference, or NULL */
	struct heist_future **readers;	/* counted references since the writer */
	size_t nreaders, cap;
};

struct heist_dataflow {
	heist__mutex lock;
	heist_pool *pool;
	/* The tasks since the last wait; NULL after a wait until the next submit makes
	 * one (so that a wait allocates nothing and cannot fail), and then cancelled at
	 * once if cancel_next says heist_dataflow_cancel came meanwhile. */
	heist_group *group;
	bool cancel_next;
	struct slot *slots;
	size_t nslots;		/* a power of two, or 0 */
	size_t used;
};

enum { FIRST_SLOTS = 16, INPUTS_ON_STACK = 16 };

static size_t
hash(const void *addr, size_t nslots)
{
	uint64_t z = (uint64_t)(uintptr_t)addr * 0x9E3779B97F4A7C15ULL;
	return (size_t)(z >> 32) & (nslots - 1);
}

static struct slot *
find(struct heist_dataflow *df, const void *addr, bool insert)
{
	if (!df->nslots)
		return NULL;
	for (size_t i = hash(addr, df->nslots);; i = (i + 1) & (df->nslots - 1)) {
		struct slot *s = &df->slots[i];
		if (s->addr == addr)
			return s;
		if (!s->addr) {
			if (!insert)
				return NULL;
			s->addr = addr;
			df->used++;
			return s;
		}
	}
}

/* Room for n more addresses at a load of at most a half. */
static int
reserve_slots(struct heist_dataflow *df, size_t n)
{
	size_t want = df->nslots ? df->nslots : FIRST_SLOTS;
	while ((df->used + n) * 2 > want) {
		if (want > SIZE_MAX / 4 / sizeof(struct slot))
			return ENOMEM;
		want *= 2;
	}
	if (want == df->nslots)
		return 0;
	struct slot *old = df->slots;
	size_t old_n = df->nslots;
	df->slots = heist__calloc(want, sizeof(struct slot));
	if (!df->slots) {
		df->slots = old;
		return ENOMEM;
	}
	df->nslots = want;
	df->used = 0;
	for (size_t i = 0; i < old_n; i++)
		if (old[i].addr)
			*find(df, old[i].addr, true) = old[i];
	free(old);
	return 0;
}

/* Whether f is done and succeeded: a task that depends on it need not wait for it,
 * nor take its error (one that failed or was cancelled stays an input, so that its
 * error reaches the tasks after it however late they come). */
static bool
done_ok(heist_future *f)
{
	return heist_future_done(f) && heist_future_wait(f) == 0;	/* at once */
}

/* Drop the readers that are done: all of them after a wait (errors start anew), only
 * those that succeeded before (keeping the order of the rest). */
static void
prune_readers(struct slot *s, bool all)
{
	size_t k = 0;
	for (size_t i = 0; i < s->nreaders; i++) {
		if (all ? heist_future_done(s->readers[i]) : done_ok(s->readers[i]))
			heist__job_release(s->readers[i]);
		else
			s->readers[k++] = s->readers[i];
	}
	s->nreaders = k;
}

/* Room for one more reader of addr. */
static int
reserve_reader(struct heist_dataflow *df, const void *addr)
{
	struct slot *s = find(df, addr, true);	/* slots reserved already */
	prune_readers(s, false);
	if (s->nreaders < s->cap)
		return 0;
	size_t cap = s->cap ? s->cap * 2 : 4;
	if (cap > SIZE_MAX / sizeof(*s->readers))
		return ENOMEM;
	struct heist_future **r = heist__realloc(s->readers, cap * sizeof(*r));
	if (!r)
		return ENOMEM;
	s->readers = r;
	s->cap = cap;
	return 0;
}

static bool
access_valid(const struct heist_access *acc, size_t n)
{
	if (n && !acc)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!acc[i].addr || !acc[i].mode || (acc[i].mode & ~(unsigned)HEIST_INOUT))
			return false;
	return true;
}

/* Add f to inputs unless it is done and succeeded, or there already (for short
 * lists). */
static void
add_input(heist_future **inputs, size_t *k, struct heist_future *f)
{
	if (!f || done_ok(f))
		return;
	if (*k <= 64)
		for (size_t i = 0; i < *k; i++)
			if (inputs[i] == f)
				return;
	inputs[(*k)++] = f;
}

/* An upper bound of the inputs n accesses may have. */
static size_t
inputs_bound(struct heist_dataflow *df, const struct heist_access *acc, size_t n)
{
	size_t bound = 0;
	for (size_t i = 0; i < n; i++) {
		struct slot *s = find(df, acc[i].addr, false);
		if (s)
			bound += 1 + ((acc[i].mode & HEIST_OUT) ? s->nreaders : 0);
	}
	return bound;
}

static void
collect_inputs(struct heist_dataflow *df, const struct heist_access *acc, size_t n,
	       heist_future **inputs, size_t *k)
{
	for (size_t i = 0; i < n; i++) {
		struct slot *s = find(df, acc[i].addr, false);
		if (!s)
			continue;
		add_input(inputs, k, s->writer);	/* read or write after write */
		if (acc[i].mode & HEIST_OUT)
			for (size_t j = 0; j < s->nreaders; j++)	/* write after read */
				add_input(inputs, k, s->readers[j]);
	}
}

/* The history after f: it is the last writer of what it writes, a reader since of
 * what it only reads. Cannot fail: the room was reserved. */
static void
record(struct heist_dataflow *df, const struct heist_access *acc, size_t n,
       struct heist_future *f)
{
	for (size_t i = 0; i < n; i++) {
		struct slot *s = find(df, acc[i].addr, true);
		if (acc[i].mode & HEIST_OUT) {
			heist__job_ref(f);
			if (s->writer)
				heist__job_release(s->writer);
			for (size_t j = 0; j < s->nreaders; j++)
				heist__job_release(s->readers[j]);
			s->nreaders = 0;
			s->writer = f;
		} else if (s->writer != f &&
			   !(s->nreaders && s->readers[s->nreaders - 1] == f)) {
			/* Once per address: prepare reserved one reader's room. */
			heist__job_ref(f);
			s->readers[s->nreaders++] = f;
		}
	}
}

/* Reserve what recording n accesses needs; then collect the inputs. */
static int
prepare(struct heist_dataflow *df, const struct heist_access *acc, size_t n)
{
	int err = reserve_slots(df, n);
	for (size_t i = 0; i < n && !err; i++)
		if (!(acc[i].mode & HEIST_OUT))
			err = reserve_reader(df, acc[i].addr);
	return err;
}

static int
submit_locked(struct heist_dataflow *df, const struct heist_access *acc, size_t n,
	      heist_fn fn, void *arg, heist_future **f)
{
	int err = prepare(df, acc, n);
	if (!err && !df->group && !(err = heist_group_create(df->pool, &df->group)) &&
	    df->cancel_next)
		heist_group_cancel(df->group);
	if (err)
		return err;
	heist_future *on_stack[INPUTS_ON_STACK], **inputs = on_stack;
	size_t bound = inputs_bound(df, acc, n), k = 0;
	if (bound > INPUTS_ON_STACK) {
		if (bound > SIZE_MAX / sizeof(*inputs) ||
		    !(inputs = heist__malloc(bound * sizeof(*inputs))))
			return ENOMEM;
	}
	collect_inputs(df, acc, n, inputs, &k);
	struct heist_after opt = {.group = df->group};
	err = heist_submit_after(df->pool, inputs, k, fn, arg, &opt, f);
	if (inputs != on_stack)
		free(inputs);
	if (!err)
		record(df, acc, n, *f);
	return err;
}

HEIST_EXPORT int
heist_dataflow_submit(heist_dataflow *df, const struct heist_access *acc, size_t n,
		      heist_fn fn, void *arg, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!df || !fn || !access_valid(acc, n))
		return EINVAL;
	heist_future *f = NULL;
	heist__mutex_lock(&df->lock);
	int err = submit_locked(df, acc, n, fn, arg, &f);
	heist__mutex_unlock(&df->lock);
	if (err)
		return err;
	if (out)
		*out = f;
	else
		heist_future_release(f);	/* the history holds its own */
	return 0;
}

HEIST_EXPORT int
heist_dataflow_create(heist_pool *pool, heist_dataflow **out)
{
	if (out)
		*out = NULL;
	if (!pool || !out)
		return EINVAL;
	struct heist_dataflow *df = heist__calloc(1, sizeof(*df));
	if (!df)
		return ENOMEM;
	int err = heist__mutex_init(&df->lock);
	if (!err) {
		err = heist_group_create(pool, &df->group);
		if (err)
			heist__mutex_destroy(&df->lock);
	}
	if (err) {
		free(df);
		return err;
	}
	df->pool = pool;
	*out = df;
	return 0;
}

/* Drop every done future of the history, and the addresses left with none. */
static void
prune(struct heist_dataflow *df)
{
	struct slot *old = df->slots;
	size_t old_n = df->nslots;
	for (size_t i = 0; i < old_n; i++) {
		struct slot *s = &old[i];
		if (!s->addr)
			continue;
		prune_readers(s, true);
		if (s->writer && heist_future_done(s->writer)) {
			heist__job_release(s->writer);
			s->writer = NULL;
		}
	}
	/* Rehash what is left: an open table cannot just clear its dead slots. */
	df->slots = NULL;
	df->nslots = 0;
	df->used = 0;
	size_t live = 0;
	for (size_t i = 0; i < old_n; i++)
		live += old[i].addr && (old[i].writer || old[i].nreaders);
	if (live && reserve_slots(df, live)) {
		df->slots = old;	/* out of memory: keep the old table as it is */
		df->nslots = old_n;
		df->used = 0;
		for (size_t i = 0; i < old_n; i++)
			df->used += old[i].addr != NULL;
		return;
	}
	for (size_t i = 0; i < old_n; i++) {
		if (!old[i].addr)
			continue;
		if (old[i].writer || old[i].nreaders)
			*find(df, old[i].addr, true) = old[i];
		else
			free(old[i].readers);
	}
	free(old);
}

HEIST_EXPORT int
heist_dataflow_wait(heist_dataflow *df)
{
	if (!df)
		return EINVAL;
	heist__mutex_lock(&df->lock);
	heist_group *g = df->group;
	heist__mutex_unlock(&df->lock);
	int err = g ? heist_group_wait(g) : 0;	/* none: nothing since the last wait */
	if (err == EDEADLK)
		return err;	/* from one of the dataflow's own tasks */
	/* What comes next goes to a new group, which the next submit makes: the old
	 * one's first error (or cancel) would end it. */
	heist__mutex_lock(&df->lock);
	bool ours = df->group == g;	/* not a group a submit made since (g NULL) */
	if (ours) {
		df->group = NULL;
		df->cancel_next = false;
	}
	prune(df);
	heist__mutex_unlock(&df->lock);
	if (ours)
		heist_group_destroy(g);	/* waits for tasks submitted meanwhile */
	return err;
}

HEIST_EXPORT void
heist_dataflow_cancel(heist_dataflow *df)
{
	if (!df)
		return;
	heist__mutex_lock(&df->lock);
	heist_group_cancel(df->group);
	df->cancel_next = true;	/* for a group the next submit makes, until a wait */
	heist__mutex_unlock(&df->lock);
}

HEIST_EXPORT void
heist_dataflow_destroy(heist_dataflow *df)
{
	if (!df)
		return;
	heist_group_destroy(df->group);	/* waits for every task */
	for (size_t i = 0; i < df->nslots; i++) {
		struct slot *s = &df->slots[i];
		if (!s->addr)
			continue;
		if (s->writer)
			heist__job_release(s->writer);
		for (size_t j = 0; j < s->nreaders; j++)
			heist__job_release(s->readers[j]);
		free(s->readers);
	}
	free(df->slots);
	heist__mutex_destroy(&df->lock);
	free(df);
}
