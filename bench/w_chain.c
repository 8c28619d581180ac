/* SPDX-License-Identifier: MIT */
/* w_chain.c - chain: a chain of N links, each run after the one before it, two ways.
 * heist-then: continuations (heist_future_then), made from the main thread as it goes,
 * each released at once (the chain holds what it needs), the last one waited for: no
 * thread blocks between links. heist-wait: one task on a worker submits link k and
 * waits for its future, N times (the wait runs the link itself, claiming it). The
 * figure is the cost per link. Not one of WORKLOADS.md's: issue 14's continuation
 * benchmark. Every link checks it is the next one; the answer is the count. */
#include "workloads.h"

#include <stdatomic.h>

struct chain {
	size_t n;
	_Atomic size_t next;	/* the index the next link must have */
	_Atomic size_t bad;	/* links that ran out of order */
};

/* The chain the running links belong to (set before a run; published by its
 * submits). A link's argument is its index. */
static struct chain *active;

static int
link_task(void *arg)
{
	size_t k = (size_t)(uintptr_t)arg;
	if (atomic_fetch_add_explicit(&active->next, 1, memory_order_relaxed) != k)
		atomic_fetch_add_explicit(&active->bad, 1, memory_order_relaxed);
	return 0;
}

static void
reset(struct bench_job *j)
{
	struct chain *c = j->in;
	atomic_store(&c->next, 0);
	atomic_store(&c->bad, 0);
	active = c;
}

static void
check(const struct bench_job *j)
{
	const struct chain *c = j->in;
	bench_check("chain", j->impl, j->threads, (long long)atomic_load(&c->next),
		    (long long)c->n);
	bench_check("chain order", j->impl, j->threads, (long long)atomic_load(&c->bad), 0);
}

static void
run_then(struct bench_job *j)
{
	struct chain *c = j->in;
	heist_future *prev, *next;
	if (heist_submit(j->pool, link_task, (void *)(uintptr_t)0, &prev))
		bench_fail("chain: heist_submit failed");
	for (size_t k = 1; k < c->n; k++) {
		if (heist_future_then(prev, link_task, (void *)(uintptr_t)k, &next))
			bench_fail("chain: heist_future_then failed at %zu", k);
		heist_future_release(prev);
		prev = next;
	}
	heist_future_wait(prev);
	heist_future_release(prev);
}

struct wait_arg {
	struct chain *c;
	heist_pool *pool;
};

static int
wait_links(void *p)
{
	struct wait_arg *a = p;
	for (size_t k = 0; k < a->c->n; k++) {
		heist_future *f;
		if (heist_submit(a->pool, link_task, (void *)(uintptr_t)k, &f))
			return -1;
		heist_future_wait(f);
		heist_future_release(f);
	}
	return 0;
}

static void
run_wait(struct bench_job *j)
{
	struct wait_arg a = {j->in, j->pool};
	if (heist_run(j->pool, wait_links, &a))
		bench_fail("chain: heist_run of the waits failed");
}

static const struct bench_impl impls[] = {
	{ "heist-then", THREADS, POOL_HEIST, .run = run_then, .count_allocs = true,
	  .note = "heist_future_then from the main thread, each link released at once" },
	{ "heist-wait", THREADS, POOL_HEIST, .run = run_wait,
	  .note = "one task submits and waits for each link" },
};

static void *
setup(struct bench_set *s)
{
	struct chain *c = bench_alloc(s, 1, sizeof *c);
	c->n = (size_t)s->p.a;
	return c;
}

static void
figures(struct bench_set *s)
{
	const struct chain *c = s->in;
	bench_figure_per(s, "ns_per_link", (double)c->n, 1, "ns/link");
}

const struct bench_workload w_chain = {
	.group = "chain", .title = "continuations",
	.nsizes = 1,
	.sizes = {
		{ "chain", { "100k links", 100000, 0 }, { "10k links", 10000, 0 } },
	},
	.setup = setup, .reset = reset, .check = check, .figures = figures,
	BENCH_IMPLS(impls),
};
