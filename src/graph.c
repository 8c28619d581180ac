/* SPDX-License-Identifier: MIT */
/* graph.c - graphs built once and run many times (heist_graph): nodes that call a
 * function, run a loop or run another graph, and the edges between them. The model
 * is Taskflow's taskflow run by an executor and OpenMP 6.0's taskgraph (record once,
 * replay); the mechanism is ours: a run is one job, and its nodes are fork-join tasks
 * of that job, so a run allocates nothing per node.
 *
 * Each node carries its spawn record and a count of predecessors still to finish.
 * A frame (frame_run) runs a node, counts its successors down, runs the first that
 * became ready itself and spawns the others on its deque, where idle workers steal
 * them; when it has nothing ready it takes its newest spawn back (fork.h) and runs it
 * in the same loop, or, if a thief has it, syncs it (the helping wait of wait.c). So
 * a frame's stack depth does not grow with the graph's; a thief runs what it stole in
 * a frame of its own. Before each node it runs inline, a frame publishes the nodes it
 * spawned (fork.h): a node may run long without a heist call, and a worker that goes
 * idle meanwhile could not take a private spawn (a request is answered only by the
 * next spawn or sync), so a sibling would wait for the whole node. Strict fork-join
 * holds: a frame takes back or syncs every node it spawned, newest first, before it
 * returns, so the run's job ends after its last node and its waiters may help with its
 * nodes through its runner's deque (wait.c).
 *
 * The counts are re-armed as the nodes start (every predecessor has counted down by
 * then), so a run ends with the graph ready for the next; runs of one graph follow
 * each other (each a dependent task of the runs before it not yet done,
 * heist_submit_after), for they share the counts. A node with one predecessor is never counted: that predecessor
 * starts it. What a run shares (its first error, its job, the graph that holds it as
 * a node) lives in the graph while it runs; a graph runs once at a time (busy). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "fork.h"
#include "future.h"
#include "internal.h"
#include "platform/platform.h"

enum node_kind { NODE_TASK, NODE_LOOP, NODE_GRAPH };

struct heist_graph_node {
	heist_task spawn;	/* the node's record while it is spawned */
	/* Predecessors yet to finish in this run, for a node with more than one: at
	 * rest preds; each finishing predecessor counts it down (acq_rel: releases its
	 * writes to, and acquires those of the others for, the one that reaches 0 and
	 * starts it); the node stores preds back as it starts (relaxed: every
	 * predecessor has counted down by then; the run's end publishes the store to
	 * the next run, whose job starts after this one's). */
	_Atomic uint32_t pending;
	uint32_t preds;
	enum node_kind kind;
	struct heist_graph *graph;		/* the graph it belongs to */
	struct heist_graph_node *spawned_below;	/* frame_run's list, while spawned */
	union {
		struct {
			heist_fn fn;
			void *arg;
		} task;
		struct {
			size_t begin, end, grain;
			heist_range_fn body;
			void *arg;
		} loop;
		struct heist_graph *sub;
	};
	struct heist_graph_node **succ;
	size_t nsucc, succ_cap;
};

struct heist_graph {
	struct heist_graph_node **nodes;
	size_t n, cap;
	size_t nsubs;	/* nodes that run a graph */
	struct heist_graph_node **roots;	/* the nodes with no predecessor */
	size_t nroots;
	bool dirty;	/* nodes or edges added since roots were found */

	/* While a run (or a graph that holds this one) runs it; written by the
	 * thread that starts it, before its first spawn publishes them. */
	_Atomic bool busy;		/* acq_rel exchange: one run at a time */
	_Atomic int error;		/* the first nonzero result; relaxed CAS, read after
					   the last sync, which orders every node's store */
	struct heist_future *job;	/* the run's job, for its cancellation */
	struct heist_pool *pool;	/* the run's pool, for loops */
	struct heist_graph *outer;	/* the graph whose node runs this one, or NULL */

	/* heist_graph_run's: the runs not known to be done (counted references), in
	 * call order. A run waits for all of them, not only the newest: a queued run
	 * that is cancelled ends at once, and the one after it must still wait for
	 * the one running. */
	heist__mutex lock;
	struct heist_future **runs;
	size_t nruns, runs_cap;
};

/* Node records sit on lines of their own: their counts are written by the workers
 * that finish their predecessors. */
static size_t
node_bytes(void)
{
	return (sizeof(struct heist_graph_node) + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
}

/* ---- running ---------------------------------------------------------------------- */

/* Whether the run should start no more nodes: an error in it or in a graph holding
 * it, or its job cancelled (by its future or its token). relaxed: a late look starts
 * one node more, as a cancellation that comes while a node starts does. */
static bool
stopped(const struct heist_graph *g)
{
	for (const struct heist_graph *o = g; o; o = o->outer)
		if (atomic_load_explicit(&o->error, memory_order_relaxed))
			return true;
	const struct heist_future *j = g->job;
	return (atomic_load_explicit(&j->state, memory_order_relaxed) & FUT_CANCEL_ASKED) ||
	       heist__job_token_cancelled(j);
}

static void
fail(struct heist_graph *g, int r)
{
	int none = 0;
	/* relaxed: only the first result matters; the run's end reads it after the
	 * syncs that order every node before it. */
	atomic_compare_exchange_strong_explicit(&g->error, &none, r, memory_order_relaxed,
						memory_order_relaxed);
}

static int run_graph(struct heist_graph *g, struct heist_future *job,
		     struct heist_pool *pool, struct heist_graph *outer);

/* A loop node's body on one range: as the run's job, so that heist_cancelled()
 * answers for the run in ranges a thief took too (a thief runs them as its own). */
static int
loop_range(void *arg, size_t begin, size_t end)
{
	const struct heist_graph_node *n = arg;
	struct heist_future *outer = heist__current_job_swap(n->graph->job);
	int r = n->loop.body(n->loop.arg, begin, end);
	heist__current_job_swap(outer);
	return r;
}

static int
call(const struct heist_graph_node *n)
{
	const struct heist_graph *g = n->graph;
	switch (n->kind) {
	case NODE_TASK:
		return n->task.fn(n->task.arg);
	case NODE_LOOP:
		return heist_for_each(g->pool, n->loop.begin, n->loop.end, n->loop.grain,
				      loop_range, (void *)n);
	case NODE_GRAPH:
		break;
	}
	return run_graph(n->sub, g->job, g->pool, n->graph);
}

/* The nodes a frame spawned and has not taken back, newest first. */
struct frame {
	struct heist_graph_node *spawned;
};

static int node_task(void *arg);

static void
frame_spawn(struct frame *f, struct heist_graph_node *n)
{
	n->spawned_below = f->spawned;
	f->spawned = n;
	heist_spawn(&n->spawn, node_task, n);
}

/* Run n (unless the run stopped), and count its successors down: return the first
 * that became ready, to run next, and spawn the others. */
static struct heist_graph_node *
run_node(struct frame *f, struct heist_graph_node *n)
{
	struct heist_graph *g = n->graph;
	if (n->preds > 1)
		atomic_store_explicit(&n->pending, n->preds, memory_order_relaxed);
	if (!stopped(g)) {
		int r = call(n);
		if (r)
			fail(g, r);
	} else if (!atomic_load_explicit(&g->error, memory_order_relaxed)) {
		fail(g, ECANCELED);	/* relaxed: as in stopped */
	}
	struct heist_graph_node *next = NULL;
	for (size_t i = 0; i < n->nsucc; i++) {
		struct heist_graph_node *s = n->succ[i];
		if (s->preds > 1 &&
		    atomic_fetch_sub_explicit(&s->pending, 1, memory_order_acq_rel) != 1)
			continue;
		if (!next)
			next = s;
		else
			frame_spawn(f, s);
	}
	return next;
}

static void
frame_run(struct frame *f, struct heist_graph_node *cur)
{
	for (;;) {
		while (cur) {
			heist__spawn_publish();	/* cur's siblings, for idle workers */
			cur = run_node(f, cur);
		}
		struct heist_graph_node *n = f->spawned;
		if (!n)
			return;
		f->spawned = n->spawned_below;
		if (heist__spawn_take_back(&n->spawn))
			cur = n;
		else
			(void)heist_sync(&n->spawn);	/* its frame records its errors */
	}
}

/* A spawned node that a thief took (or that spawn had to run at once): a frame of
 * its own. heist_cancelled() in its nodes answers for the run, as on its runner. */
static int
node_task(void *arg)
{
	struct heist_graph_node *n = arg;
	struct heist_future *outer = heist__current_job_swap(n->graph->job);
	struct frame f = {NULL};
	frame_run(&f, n);
	heist__current_job_swap(outer);
	return 0;
}

static int
run_graph(struct heist_graph *g, struct heist_future *job, struct heist_pool *pool,
	  struct heist_graph *outer)
{
	/* acq_rel: acquire the last run's writes to the graph (its counts, its
	 * state), release ours to the next one that finds it free. */
	if (atomic_exchange_explicit(&g->busy, true, memory_order_acq_rel))
		return EBUSY;
	g->job = job;
	g->pool = pool;
	g->outer = outer;
	atomic_store_explicit(&g->error, 0, memory_order_relaxed);	/* before any spawn */
	if (g->nroots) {
		struct frame f = {NULL};
		for (size_t i = g->nroots; --i > 0;)
			frame_spawn(&f, g->roots[i]);
		frame_run(&f, g->roots[0]);
	}
	/* relaxed: every node's store came before a sync or take-back of ours. */
	int r = atomic_load_explicit(&g->error, memory_order_relaxed);
	atomic_store_explicit(&g->busy, false, memory_order_release);
	return r;
}

/* The run's job. */
static int
run_job(void *arg)
{
	struct heist_graph *g = arg;
	struct heist_future *j = heist__job_current();
	return run_graph(g, j, j->task.pool, NULL);
}

/* ---- building --------------------------------------------------------------------- */

HEIST_EXPORT int
heist_graph_create(heist_graph **out)
{
	if (!out)
		return EINVAL;
	*out = NULL;
	struct heist_graph *g = heist__calloc(1, sizeof(*g));
	if (!g)
		return ENOMEM;
	int err = heist__mutex_init(&g->lock);
	if (err) {
		free(g);
		return err;
	}
	atomic_init(&g->busy, false);
	atomic_init(&g->error, 0);
	*out = g;
	return 0;
}

/* Drop the runs that are done; whether any is left (queued or running). Under g's
 * lock. */
static bool
pending(struct heist_graph *g)
{
	size_t k = 0;
	for (size_t i = 0; i < g->nruns; i++) {
		if (heist__job_done(g->runs[i]))
			heist__job_release(g->runs[i]);
		else
			g->runs[k++] = g->runs[i];
	}
	g->nruns = k;
	return k > 0;
}

/* Grow *arr (of *cap pointers) to hold one more than n. */
static int
make_room(void *arr, size_t n, size_t *cap)
{
	void ***a = arr;
	if (n < *cap)
		return 0;
	size_t want = *cap ? 2 * *cap : 4;
	void **p = heist__realloc(*a, want * sizeof(void *));
	if (!p)
		return ENOMEM;
	*a = p;
	*cap = want;
	return 0;
}

static int
add(struct heist_graph *g, const struct heist_graph_node *proto, heist_graph_node **out)
{
	if (out)
		*out = NULL;
	heist__mutex_lock(&g->lock);
	int err = pending(g) ? EBUSY : make_room(&g->nodes, g->n, &g->cap);
	struct heist_graph_node *n = NULL;
	if (!err && !(n = heist__aligned_alloc(CACHE_LINE, node_bytes())))
		err = ENOMEM;
	if (!err) {
		memcpy(n, proto, sizeof(*n));
		n->graph = g;
		g->nsubs += n->kind == NODE_GRAPH;
		atomic_init(&n->pending, 0);
		g->nodes[g->n++] = n;
		g->dirty = true;
		if (out)
			*out = n;
	}
	heist__mutex_unlock(&g->lock);
	return err;
}

HEIST_EXPORT int
heist_graph_add_task(heist_graph *g, heist_fn fn, void *arg, heist_graph_node **out)
{
	if (!g || !fn) {
		if (out)
			*out = NULL;
		return EINVAL;
	}
	struct heist_graph_node proto = {.kind = NODE_TASK, .task = {fn, arg}};
	return add(g, &proto, out);
}

HEIST_EXPORT int
heist_graph_add_loop(heist_graph *g, size_t begin, size_t end, size_t grain,
		     heist_range_fn body, void *arg, heist_graph_node **out)
{
	if (!g || !body || end < begin) {
		if (out)
			*out = NULL;
		return EINVAL;
	}
	struct heist_graph_node proto = {.kind = NODE_LOOP,
					 .loop = {begin, end, grain, body, arg}};
	return add(g, &proto, out);
}

/* Whether g holds target as a node, directly or through its subgraphs. The caller
 * holds the lock of the graph it adds to, not g's: graphs that hold each other are
 * refused, so the walk ends, and they are not being changed meanwhile (heist.h). */
static bool
holds(const struct heist_graph *g, const struct heist_graph *target)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct heist_graph_node *n = g->nodes[i];
		if (n->kind == NODE_GRAPH && (n->sub == target || holds(n->sub, target)))
			return true;
	}
	return false;
}

HEIST_EXPORT int
heist_graph_add_graph(heist_graph *g, heist_graph *sub, heist_graph_node **out)
{
	if (!g || !sub || sub == g || holds(sub, g)) {
		if (out)
			*out = NULL;
		return EINVAL;
	}
	struct heist_graph_node proto = {.kind = NODE_GRAPH, .sub = sub};
	return add(g, &proto, out);
}

HEIST_EXPORT int
heist_graph_edge(heist_graph_node *before, heist_graph_node *after)
{
	if (!before || !after || before == after || before->graph != after->graph)
		return EINVAL;
	struct heist_graph *g = before->graph;
	heist__mutex_lock(&g->lock);
	int err = pending(g) ? EBUSY : make_room(&before->succ, before->nsucc, &before->succ_cap);
	if (!err) {
		before->succ[before->nsucc++] = after;
		after->preds++;
		atomic_store_explicit(&after->pending, after->preds, memory_order_relaxed);
		g->dirty = true;
	}
	heist__mutex_unlock(&g->lock);
	return err;
}

/* Find g's roots, and whether every node is reachable from them in an order that
 * respects the edges (Kahn's algorithm): EDEADLK if not (a cycle), or ENOMEM; the
 * same for its subgraphs. Under g's lock, no run of g pending. */
static int
prepare(struct heist_graph *g)
{
	for (size_t i = 0; g->nsubs && i < g->n; i++) {
		struct heist_graph_node *n = g->nodes[i];
		if (n->kind == NODE_GRAPH) {
			heist__mutex_lock(&n->sub->lock);
			int err = prepare(n->sub);
			heist__mutex_unlock(&n->sub->lock);
			if (err)
				return err;
		}
	}
	if (!g->dirty)
		return 0;
	struct heist_graph_node **order = heist__malloc((g->n ? g->n : 1) * sizeof(*order));
	uint32_t *left = heist__malloc((g->n ? g->n : 1) * sizeof(*left));
	if (!order || !left) {
		free(order);
		free(left);
		return ENOMEM;
	}
	/* A node's place in g->nodes, for its count in left: through spawned_below,
	 * unused while no run is pending, holding the index as a pointer value. */
	size_t nroots = 0, done = 0;
	for (size_t i = 0; i < g->n; i++) {
		g->nodes[i]->spawned_below = (struct heist_graph_node *)(uintptr_t)i;
		left[i] = g->nodes[i]->preds;
		if (!left[i])
			order[nroots++] = g->nodes[i];
	}
	for (size_t end = nroots; done < end; done++) {
		const struct heist_graph_node *n = order[done];
		for (size_t k = 0; k < n->nsucc; k++) {
			size_t s = (size_t)(uintptr_t)n->succ[k]->spawned_below;
			if (--left[s] == 0)
				order[end++] = n->succ[k];
		}
	}
	free(left);
	if (done < g->n) {
		free(order);
		return EDEADLK;
	}
	free(g->roots);
	g->roots = order;	/* its first nroots entries */
	g->nroots = nroots;
	g->dirty = false;
	return 0;
}

HEIST_EXPORT int
heist_graph_run(heist_pool *pool, heist_graph *g, heist_cancel *cancel, heist_future **out)
{
	if (out)
		*out = NULL;
	if (!pool || !g)
		return EINVAL;
	heist__mutex_lock(&g->lock);
	pending(g);
	int err = prepare(g);
	if (!err)
		err = make_room(&g->runs, g->nruns, &g->runs_cap);
	heist_future *f = NULL;
	if (!err) {
		/* After the runs before, whatever their end: runs share the counts. */
		const struct heist_after opt = {.cancel = cancel, .flags = HEIST_AFTER_ALWAYS};
		err = heist_submit_after(pool, g->runs, g->nruns, run_job, g, &opt, &f);
	}
	if (!err) {
		heist__job_ref(f);	/* the graph's, until it is done */
		g->runs[g->nruns++] = f;
	}
	heist__mutex_unlock(&g->lock);
	if (err)
		return err;
	if (out)
		*out = f;
	else
		heist_future_release(f);
	return 0;
}

HEIST_EXPORT void
heist_graph_destroy(heist_graph *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nruns; i++) {
		(void)heist_future_wait(g->runs[i]);
		heist__job_release(g->runs[i]);
	}
	free(g->runs);
	for (size_t i = 0; i < g->n; i++) {
		free(g->nodes[i]->succ);
		heist__aligned_free(g->nodes[i]);
	}
	free(g->nodes);
	free(g->roots);
	heist__mutex_destroy(&g->lock);
	free(g);
}
