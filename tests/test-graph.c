/* SPDX-License-Identifier: MIT */
/* test-graph.c - graphs built once and run many times (heist_graph, src/graph.c): in
 * random graphs every node runs once per run and only after all its predecessors
 * ended, run after run, on 1, 2 and 4 workers; a stencil computed by its nodes gives
 * the serial answer in every run; runs queued back to back never overlap, even when
 * one between them is cancelled; a node's
 * error ends the run with it and skips what had not started, and the next run runs
 * everything again; a token or the run's future cancels a run, and heist_cancelled()
 * says so in its nodes; loop and subgraph nodes; a run waited for from a task of a
 * one-worker pool; cycles (EDEADLK), changes while a run is pending (EBUSY), bad
 * input (EINVAL) and allocation failures (ENOMEM). Helpers: common.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "faults.h"
#include "platform/platform.h"	/* heist__clock_ns */

/* ---- random graphs: order and counts ---------------------------------------------- */

enum { MAX_NODES = 200 };

/* A logical clock: each node takes a tick when it starts and one when it ends. */
static atomic_ulong ticks;

struct probe {
	atomic_ulong start, end;	/* this run's ticks */
	atomic_uint runs;
	int ret;			/* what the node returns */
};

static struct probe probes[MAX_NODES];

static int
probe_task(void *arg)
{
	struct probe *p = arg;
	atomic_store(&p->start, atomic_fetch_add(&ticks, 1) + 1);
	atomic_fetch_add(&p->runs, 1);
	atomic_store(&p->end, atomic_fetch_add(&ticks, 1) + 1);
	return p->ret;
}

static uint64_t
next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Edges go from a lower index to a higher one, so the graph has no cycle. */
struct shape {
	size_t n, nedges;
	size_t from[MAX_NODES * 4], to[MAX_NODES * 4];
};

static void
random_shape(struct shape *sh, uint64_t seed)
{
	sh->n = 1 + next_rand(&seed) % MAX_NODES;
	sh->nedges = 0;
	for (size_t b = 1; b < sh->n; b++) {
		size_t k = next_rand(&seed) % 4;	/* 0-3 predecessors */
		for (size_t e = 0; e < k; e++) {
			sh->from[sh->nedges] = next_rand(&seed) % b;
			sh->to[sh->nedges++] = b;
		}
	}
}

static heist_graph *
build(const struct shape *sh, heist_graph_node **nodes)
{
	heist_graph *g = SENTINEL;
	assert_int_equal(heist_graph_create(&g), 0);
	assert_non_null(g);
	for (size_t i = 0; i < sh->n; i++) {
		memset(&probes[i], 0, sizeof probes[i]);
		assert_int_equal(heist_graph_add_task(g, probe_task, &probes[i], &nodes[i]), 0);
	}
	for (size_t e = 0; e < sh->nedges; e++)
		assert_int_equal(heist_graph_edge(nodes[sh->from[e]], nodes[sh->to[e]]), 0);
	return g;
}

/* After run number `runs` (counting from 1): every node ran that often, and each
 * started after each predecessor ended. */
static void
check_run(const struct shape *sh, unsigned runs)
{
	for (size_t i = 0; i < sh->n; i++)
		assert_int_equal(atomic_load(&probes[i].runs), runs);
	for (size_t e = 0; e < sh->nedges; e++)
		assert_true(atomic_load(&probes[sh->from[e]].end) <
			    atomic_load(&probes[sh->to[e]].start));
}

static void
random_graphs_run_in_order_run_after_run(void **state)
{
	(void)state;
	static struct shape sh;
	static heist_graph_node *nodes[MAX_NODES];
	const unsigned threads[] = {1, 2, 4};
	for (unsigned t = 0; t < 3; t++) {
		heist_pool *pool = make_pool(threads[t]);
		for (uint64_t seed = 1; seed <= 12; seed++) {
			random_shape(&sh, seed * 7919 + t);
			heist_graph *g = build(&sh, nodes);
			for (unsigned run = 1; run <= 8; run++) {
				heist_future *f = NULL;
				assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
				assert_int_equal(watched(f), 0);
				check_run(&sh, run);
			}
			heist_graph_destroy(g);
		}
		heist_pool_destroy(pool);
	}
}

/* ---- a stencil: data from predecessors --------------------------------------------- */

enum { WIDTH = 8, STEPS = 24 };

struct cell {
	long *grid;	/* [STEPS + 1][WIDTH] */
	int step, x;
};

static int
stencil_cell(void *arg)
{
	const struct cell *c = arg;
	long *prev = c->grid + (size_t)(c->step - 1) * WIDTH, *cur = prev + WIDTH;
	long sum = prev[c->x];
	if (c->x > 0)
		sum += prev[c->x - 1];
	if (c->x < WIDTH - 1)
		sum += prev[c->x + 1];
	cur[c->x] = sum % 1000003 + c->step;
	return 0;
}

static void
stencil_serial(long *grid)
{
	for (int s = 1; s <= STEPS; s++)
		for (int x = 0; x < WIDTH; x++) {
			struct cell c = {grid, s, x};
			stencil_cell(&c);
		}
}

static void
a_stencil_gives_the_serial_answer_in_every_run(void **state)
{
	(void)state;
	static long grid[(STEPS + 1) * WIDTH], expect[(STEPS + 1) * WIDTH];
	static struct cell cells[STEPS][WIDTH];
	static heist_graph_node *nodes[STEPS][WIDTH];
	heist_pool *pool = make_pool(2);
	heist_graph *g;
	assert_int_equal(heist_graph_create(&g), 0);
	for (int s = 1; s <= STEPS; s++)
		for (int x = 0; x < WIDTH; x++) {
			cells[s - 1][x] = (struct cell){grid, s, x};
			assert_int_equal(heist_graph_add_task(g, stencil_cell, &cells[s - 1][x],
							      &nodes[s - 1][x]), 0);
			for (int d = -1; s > 1 && d <= 1; d++)
				if (x + d >= 0 && x + d < WIDTH)
					assert_int_equal(heist_graph_edge(nodes[s - 2][x + d],
									  nodes[s - 1][x]), 0);
		}
	for (int run = 0; run < 30; run++) {
		for (int x = 0; x < WIDTH; x++)
			grid[x] = expect[x] = run * 31 + x;	/* the caller's writes, before */
		stencil_serial(expect);
		heist_future *f;
		assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
		assert_int_equal(watched(f), 0);
		assert_memory_equal(grid, expect, sizeof grid);
	}
	heist_graph_destroy(g);
	heist_pool_destroy(pool);
}

/* ---- runs queued back to back ------------------------------------------------------ */

/* A chain a -> b -> c where each node checks that the one before it ran exactly as
 * often as itself has plus one: two runs that overlapped would break it. */
struct chain {
	atomic_uint count[3];
	atomic_int overlap;
};

struct link {
	struct chain *c;
	int i;
};

static int
chain_step(void *arg)
{
	struct link *l = arg;
	unsigned mine = atomic_load(&l->c->count[l->i]);
	if (l->i > 0 && atomic_load(&l->c->count[l->i - 1]) != mine + 1)
		atomic_store(&l->c->overlap, 1);
	if (l->i == 0 && atomic_load(&l->c->count[2]) != mine)
		atomic_store(&l->c->overlap, 1);
	nap(1000);	/* room for another run to start, if it could */
	atomic_fetch_add(&l->c->count[l->i], 1);
	return 0;
}

static void
runs_queued_back_to_back_never_overlap(void **state)
{
	(void)state;
	enum { RUNS = 40 };
	static struct chain c;
	static struct link links[3];
	memset(&c, 0, sizeof c);
	heist_pool *pool = make_pool(2);
	heist_graph *g;
	heist_graph_node *n[3];
	assert_int_equal(heist_graph_create(&g), 0);
	for (int i = 0; i < 3; i++) {
		links[i] = (struct link){&c, i};
		assert_int_equal(heist_graph_add_task(g, chain_step, &links[i], &n[i]), 0);
	}
	assert_int_equal(heist_graph_edge(n[0], n[1]), 0);
	assert_int_equal(heist_graph_edge(n[1], n[2]), 0);
	heist_future *fs[RUNS];
	for (int r = 0; r < RUNS; r++)
		assert_int_equal(heist_graph_run(pool, g, NULL, r % 2 ? &fs[r] : NULL), 0);
	for (int r = 1; r < RUNS; r += 2)
		assert_int_equal(watched(fs[r]), 0);
	heist_graph_destroy(g);	/* waits for the last, which had no future */
	for (int i = 0; i < 3; i++)
		assert_int_equal(atomic_load(&c.count[i]), RUNS);
	assert_int_equal(atomic_load(&c.overlap), 0);
	heist_pool_destroy(pool);
}

/* A run cancelled while it waits for the one before ends at once; the run after it
 * still waits for the one running, and runs whole (not EBUSY). */
static void
a_cancelled_queued_run_keeps_the_next_one_waiting(void **state)
{
	(void)state;
	static struct hold gate;
	memset(&gate, 0, sizeof gate);
	memset(&probes[0], 0, sizeof probes[0]);
	heist_pool *pool = make_pool(2);
	heist_graph *g;
	heist_graph_node *held, *after;
	assert_int_equal(heist_graph_create(&g), 0);
	assert_int_equal(heist_graph_add_task(g, hold_task, &gate, &held), 0);
	assert_int_equal(heist_graph_add_task(g, probe_task, &probes[0], &after), 0);
	assert_int_equal(heist_graph_edge(held, after), 0);
	heist_future *first, *second, *third;
	assert_int_equal(heist_graph_run(pool, g, NULL, &first), 0);
	{
		bool ok;
		POLL(ok, atomic_load(&gate.entered) == 1);
		assert_true(ok);
	}
	assert_int_equal(heist_graph_run(pool, g, NULL, &second), 0);
	assert_int_equal(heist_graph_run(pool, g, NULL, &third), 0);
	heist_future_cancel(second);
	assert_int_equal(heist_future_wait(second), ECANCELED);
	heist_future_release(second);
	assert_false(heist_future_done(third));	/* the first still holds the gate */
	atomic_store(&gate.open, 1);
	assert_int_equal(watched(first), 0);
	assert_int_equal(watched(third), 0);
	assert_int_equal(atomic_load(&gate.entered), 2);
	assert_int_equal(atomic_load(&probes[0].runs), 2);
	heist_graph_destroy(g);
	heist_pool_destroy(pool);
}

/* ---- errors ------------------------------------------------------------------------ */

static void
an_error_ends_the_run_and_the_next_run_runs_everything(void **state)
{
	(void)state;
	/* 0 -> 1 -> 2, and 3 alone: 1 fails, so 2 never starts in that run. */
	static const struct shape sh = {4, 2, {0, 1}, {1, 2}};
	static heist_graph_node *nodes[4];
	heist_pool *pool = make_pool(2);
	heist_graph *g = build(&sh, nodes);
	probes[1].ret = 7;
	heist_future *f;
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
	assert_int_equal(watched(f), 7);
	assert_int_equal(atomic_load(&probes[0].runs), 1);
	assert_int_equal(atomic_load(&probes[1].runs), 1);
	assert_int_equal(atomic_load(&probes[2].runs), 0);
	probes[1].ret = 0;
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
	assert_int_equal(watched(f), 0);
	assert_int_equal(atomic_load(&probes[0].runs), 2);
	assert_int_equal(atomic_load(&probes[1].runs), 2);
	assert_int_equal(atomic_load(&probes[2].runs), 1);
	heist_graph_destroy(g);
	heist_pool_destroy(pool);
}

/* ---- cancellation ------------------------------------------------------------------- */

static struct hold cancel_gate;
static heist_cancel *the_token;
static atomic_int saw_cancelled, ran_after;

/* A root: cancels the token once both roots are in (or the test let it go), then
 * records whether heist_cancelled() says so. */
static int
cancelling_root(void *arg)
{
	(void)arg;
	hold_pass(&cancel_gate);
	heist_cancel_request(the_token);
	if (heist_cancelled())
		atomic_fetch_add(&saw_cancelled, 1);
	return 0;
}

static int
after_cancel(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ran_after, 1);
	return 0;
}

static void
a_token_or_the_future_cancels_a_run(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_graph *g;
	heist_graph_node *r0, *r1, *tail;
	assert_int_equal(heist_graph_create(&g), 0);
	assert_int_equal(heist_graph_add_task(g, cancelling_root, NULL, &r0), 0);
	assert_int_equal(heist_graph_add_task(g, cancelling_root, NULL, &r1), 0);
	assert_int_equal(heist_graph_add_task(g, after_cancel, NULL, &tail), 0);
	assert_int_equal(heist_graph_edge(r0, tail), 0);
	assert_int_equal(heist_graph_edge(r1, tail), 0);

	/* Cancelled from inside: the roots that ran saw it, the tail never ran. */
	memset(&cancel_gate, 0, sizeof cancel_gate);
	atomic_store(&cancel_gate.open, 1);
	assert_int_equal(heist_cancel_create(&the_token), 0);
	heist_future *f;
	assert_int_equal(heist_graph_run(pool, g, the_token, &f), 0);
	assert_int_equal(watched(f), ECANCELED);
	assert_true(atomic_load(&saw_cancelled) >= 1);
	assert_int_equal(atomic_load(&cancel_gate.entered), atomic_load(&saw_cancelled));
	assert_int_equal(atomic_load(&ran_after), 0);

	/* Cancelled before it starts: no node runs. */
	atomic_store(&saw_cancelled, 0);
	atomic_store(&cancel_gate.entered, 0);
	assert_int_equal(heist_graph_run(pool, g, the_token, &f), 0);
	assert_int_equal(watched(f), ECANCELED);
	assert_int_equal(atomic_load(&cancel_gate.entered), 0);
	heist_cancel_release(the_token);

	/* The run's future, while queued behind a run held in its roots: that one
	 * ends as it would (its token is cancelled by its own roots), the second never
	 * starts; a third, not cancelled, runs whole. */
	memset(&cancel_gate, 0, sizeof cancel_gate);
	assert_int_equal(heist_cancel_create(&the_token), 0);
	heist_future *first, *second;
	assert_int_equal(heist_graph_run(pool, g, the_token, &first), 0);
	{
		bool ok;
		POLL(ok, atomic_load(&cancel_gate.entered) >= 1);
		assert_true(ok);
	}
	assert_int_equal(heist_graph_run(pool, g, NULL, &second), 0);
	heist_future_cancel(second);
	assert_int_equal(heist_future_wait(second), ECANCELED);
	heist_future_release(second);
	atomic_store(&cancel_gate.open, 1);
	assert_int_equal(watched(first), ECANCELED);
	heist_cancel_release(the_token);
	/* A run with no token: the token its roots cancel is not its own. */
	assert_int_equal(heist_cancel_create(&the_token), 0);
	atomic_store(&saw_cancelled, 0);
	heist_future *third;
	assert_int_equal(heist_graph_run(pool, g, NULL, &third), 0);
	assert_int_equal(watched(third), 0);
	assert_int_equal(atomic_load(&saw_cancelled), 0);
	assert_int_equal(atomic_load(&ran_after), 1);
	heist_cancel_release(the_token);
	the_token = NULL;
	heist_graph_destroy(g);
	heist_pool_destroy(pool);
}

static struct hold running_gate;
static atomic_int saw_future_cancel;

static int
waits_for_its_cancel(void *arg)
{
	(void)arg;
	hold_pass(&running_gate);
	if (heist_cancelled())
		atomic_store(&saw_future_cancel, 1);
	return 0;
}

static void
cancelling_the_future_of_a_running_run_stops_it(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_graph *g;
	heist_graph_node *a, *b;
	assert_int_equal(heist_graph_create(&g), 0);
	assert_int_equal(heist_graph_add_task(g, waits_for_its_cancel, NULL, &a), 0);
	assert_int_equal(heist_graph_add_task(g, after_cancel, NULL, &b), 0);
	assert_int_equal(heist_graph_edge(a, b), 0);
	memset(&running_gate, 0, sizeof running_gate);
	atomic_store(&ran_after, 0);
	heist_future *f;
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
	{
		bool ok;
		POLL(ok, atomic_load(&running_gate.entered) == 1);
		assert_true(ok);
	}
	heist_future_cancel(f);
	atomic_store(&running_gate.open, 1);
	assert_int_equal(watched(f), ECANCELED);
	assert_int_equal(atomic_load(&saw_future_cancel), 1);
	assert_int_equal(atomic_load(&ran_after), 0);
	/* The next run, not cancelled, runs both. */
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
	assert_int_equal(watched(f), 0);
	assert_int_equal(atomic_load(&ran_after), 1);
	heist_graph_destroy(g);
	heist_pool_destroy(pool);
}

/* A loop node's ranges spin until heist_cancelled() says the run is cancelled (60 s
 * at most, far past watched()'s 30 s): ranges a thief took too, which it ran as its
 * own job before, so they never saw the run's cancel and the run never ended. */
static atomic_int ranges_started;

static int
spins_until_cancelled(void *arg, size_t begin, size_t end)
{
	(void)arg;
	(void)begin;
	(void)end;
	atomic_fetch_add(&ranges_started, 1);
	uint64_t t0 = heist__clock_ns();
	while (!heist_cancelled())
		if (heist__clock_ns() - t0 > 60 * (uint64_t)1000000000)
			return ETIMEDOUT;
	return 0;
}

static void
every_range_of_a_loop_node_sees_the_runs_cancel(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	for (int round = 0; round < 10; round++) {
		heist_graph *g;
		heist_graph_node *loop;
		assert_int_equal(heist_graph_create(&g), 0);
		assert_int_equal(heist_graph_add_loop(g, 0, 4, 1, spins_until_cancelled, NULL,
						      &loop), 0);
		atomic_store(&ranges_started, 0);
		heist_future *f;
		assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
		bool ok;
		POLL(ok, atomic_load(&ranges_started) >= 2);	/* both workers in it */
		assert_true(ok);
		heist_future_cancel(f);
		/* Its one node had started: the run gives the loop's result (heist.h). */
		assert_int_equal(watched(f), 0);
		heist_graph_destroy(g);
	}
	heist_pool_destroy(pool);
}

/* ---- a node's siblings are there for idle workers while it runs ------------------ */

static atomic_int b_started, c_started;

static int
until_b_started(void *arg)
{
	(void)arg;
	bool ok;
	POLL(ok, atomic_load(&b_started));
	return ok ? 0 : ETIMEDOUT;
}

static int
until_c_started(void *arg)
{
	(void)arg;
	atomic_store(&b_started, 1);
	bool ok;
	POLL(ok, atomic_load(&c_started));
	return ok ? 0 : ETIMEDOUT;
}

static int
c_starts(void *arg)
{
	(void)arg;
	atomic_store(&c_started, 1);
	return 0;
}

/* Q -> {B, C}, and a root P beside Q that keeps the other worker busy until B has
 * started: C is spawned while no worker is idle, then B waits (making no heist call)
 * for C to start, which only the other worker can do once P is over. A C kept private
 * under B waited for ever (the other worker could only ask for it). */
static void
a_sibling_spawned_before_a_long_node_is_taken_by_an_idle_worker(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_graph *g;
	heist_graph_node *q, *p, *b, *c;
	assert_int_equal(heist_graph_create(&g), 0);
	assert_int_equal(heist_graph_add_task(g, probe_task, &probes[0], &q), 0);
	assert_int_equal(heist_graph_add_task(g, until_b_started, NULL, &p), 0);
	assert_int_equal(heist_graph_add_task(g, until_c_started, NULL, &b), 0);
	assert_int_equal(heist_graph_add_task(g, c_starts, NULL, &c), 0);
	assert_int_equal(heist_graph_edge(q, b), 0);
	assert_int_equal(heist_graph_edge(q, c), 0);
	for (int round = 0; round < 3; round++) {
		atomic_store(&b_started, 0);
		atomic_store(&c_started, 0);
		heist_future *f;
		assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
		assert_int_equal(watched(f), 0);
	}
	heist_graph_destroy(g);
	heist_pool_destroy(pool);
}

/* ---- loop and subgraph nodes ------------------------------------------------------- */

enum { LOOP_N = 10000 };
static atomic_long loop_sum;
static atomic_int loop_done_before;	/* the node after the loop saw the whole sum */

static int
loop_body(void *arg, size_t begin, size_t end)
{
	long s = 0;
	for (size_t i = begin; i < end; i++)
		s += (long)i;
	atomic_fetch_add(&loop_sum, s);
	return arg ? (int)(intptr_t)arg : 0;
}

static int
after_loop(void *arg)
{
	(void)arg;
	if (atomic_load(&loop_sum) == (long)LOOP_N * (LOOP_N - 1) / 2)
		atomic_fetch_add(&loop_done_before, 1);
	return 0;
}

static void
loop_and_subgraph_nodes_run_inside_the_run(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_graph *sub, *g;
	heist_graph_node *loop, *check, *s1, *s2, *pre, *post;
	assert_int_equal(heist_graph_create(&sub), 0);
	assert_int_equal(heist_graph_add_loop(sub, 0, LOOP_N, 0, loop_body, NULL, &loop), 0);
	assert_int_equal(heist_graph_add_task(sub, after_loop, NULL, &check), 0);
	assert_int_equal(heist_graph_edge(loop, check), 0);
	/* g: pre -> sub -> (reset) -> sub again -> post: one subgraph used twice in order. */
	assert_int_equal(heist_graph_create(&g), 0);
	memset(&probes[0], 0, sizeof probes[0]);
	memset(&probes[1], 0, sizeof probes[1]);
	assert_int_equal(heist_graph_add_task(g, probe_task, &probes[0], &pre), 0);
	assert_int_equal(heist_graph_add_graph(g, sub, &s1), 0);
	assert_int_equal(heist_graph_add_graph(g, sub, &s2), 0);
	assert_int_equal(heist_graph_add_task(g, probe_task, &probes[1], &post), 0);
	assert_int_equal(heist_graph_edge(pre, s1), 0);
	assert_int_equal(heist_graph_edge(s1, s2), 0);
	assert_int_equal(heist_graph_edge(s2, post), 0);
	for (int run = 1; run <= 5; run++) {
		atomic_store(&loop_sum, 0);
		atomic_store(&loop_done_before, 0);
		heist_future *f;
		assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
		assert_int_equal(watched(f), 0);
		/* The second use saw the first's sum too: only its own half counts. */
		assert_int_equal(atomic_load(&loop_sum), (long)LOOP_N * (LOOP_N - 1));
		assert_int_equal(atomic_load(&loop_done_before), 1);
		assert_int_equal(atomic_load(&probes[1].runs), run);
		assert_true(atomic_load(&probes[0].end) < atomic_load(&probes[1].start));
	}
	/* A subgraph run on its own too, between runs of g. */
	atomic_store(&loop_sum, 0);
	heist_future *f;
	assert_int_equal(heist_graph_run(pool, sub, NULL, &f), 0);
	assert_int_equal(watched(f), 0);
	assert_int_equal(atomic_load(&loop_sum), (long)LOOP_N * (LOOP_N - 1) / 2);
	/* A loop's error is the subgraph node's, and g's. */
	heist_graph *bad;
	assert_int_equal(heist_graph_create(&bad), 0);
	assert_int_equal(heist_graph_add_loop(bad, 0, 100, 1, loop_body, (void *)(intptr_t)5,
					      NULL), 0);
	assert_int_equal(heist_graph_add_graph(g, bad, NULL), 0);
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
	assert_int_equal(watched(f), 5);
	/* A graph may not hold itself. */
	assert_int_equal(heist_graph_add_graph(g, g, NULL), EINVAL);
	assert_int_equal(heist_graph_add_graph(sub, g, NULL), EINVAL);
	assert_int_equal(heist_graph_add_graph(bad, g, NULL), EINVAL);
	heist_graph_destroy(g);
	heist_graph_destroy(sub);
	heist_graph_destroy(bad);
	heist_pool_destroy(pool);
}

/* ---- waits from inside the pool ---------------------------------------------------- */

struct nested {
	heist_pool *pool;
	heist_graph *g;
};

static int
runs_and_waits(void *arg)
{
	struct nested *n = arg;
	heist_future *f;
	int err = heist_graph_run(n->pool, n->g, NULL, &f);
	if (err)
		return err;
	err = heist_future_wait(f);
	heist_future_release(f);
	return err ? err : 100;
}

static void
a_task_of_a_lone_worker_runs_a_graph_and_waits_for_it(void **state)
{
	(void)state;
	static struct shape sh;
	static heist_graph_node *nodes[MAX_NODES];
	random_shape(&sh, 99);
	struct heist_config cfg = {.threads = 1};
	heist_pool *pool = make_pool_cfg(&cfg);
	heist_graph *g = build(&sh, nodes);
	struct nested n = {pool, g};
	for (unsigned run = 1; run <= 5; run++) {
		heist_future *f;
		assert_int_equal(heist_submit(pool, runs_and_waits, &n, &f), 0);
		assert_int_equal(watched(f), 100);
		check_run(&sh, run);
	}
	heist_graph_destroy(g);
	heist_pool_destroy(pool);
}

/* ---- what is refused --------------------------------------------------------------- */

static void
cycles_changes_while_pending_and_bad_input_are_refused(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_graph *g = SENTINEL, *other;
	heist_graph_node *a, *b, *c, *x = SENTINEL;
	assert_int_equal(heist_graph_create(NULL), EINVAL);
	assert_int_equal(heist_graph_create(&g), 0);
	assert_int_equal(heist_graph_create(&other), 0);
	assert_int_equal(heist_graph_add_task(NULL, ret_int, NULL, &x), EINVAL);
	assert_null(x);
	x = SENTINEL;
	assert_int_equal(heist_graph_add_task(g, NULL, NULL, &x), EINVAL);
	assert_null(x);
	assert_int_equal(heist_graph_add_loop(g, 5, 4, 0, loop_body, NULL, NULL), EINVAL);
	assert_int_equal(heist_graph_add_loop(g, 0, 4, 0, NULL, NULL, NULL), EINVAL);
	assert_int_equal(heist_graph_add_graph(g, NULL, NULL), EINVAL);
	assert_int_equal(heist_graph_run(NULL, g, NULL, NULL), EINVAL);
	assert_int_equal(heist_graph_run(pool, NULL, NULL, NULL), EINVAL);

	/* An empty graph runs, and succeeds. */
	heist_future *f = SENTINEL;
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
	assert_int_equal(watched(f), 0);

	/* Edges: the same node, other graphs, NULL. */
	static struct hold gate;
	memset(&gate, 0, sizeof gate);
	assert_int_equal(heist_graph_add_task(g, hold_task, &gate, &a), 0);
	assert_int_equal(heist_graph_add_task(g, ret_int, NULL, &b), 0);
	assert_int_equal(heist_graph_add_task(other, ret_int, NULL, &c), 0);
	assert_int_equal(heist_graph_edge(a, a), EINVAL);
	assert_int_equal(heist_graph_edge(a, c), EINVAL);
	assert_int_equal(heist_graph_edge(NULL, a), EINVAL);
	assert_int_equal(heist_graph_edge(a, NULL), EINVAL);
	assert_int_equal(heist_graph_edge(a, b), 0);

	/* While a run is pending, no change. */
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
	{
		bool ok;
		POLL(ok, atomic_load(&gate.entered) == 1);
		assert_true(ok);
	}
	x = SENTINEL;
	assert_int_equal(heist_graph_add_task(g, ret_int, NULL, &x), EBUSY);
	assert_null(x);
	assert_int_equal(heist_graph_edge(b, a), EBUSY);
	atomic_store(&gate.open, 1);
	assert_int_equal(watched(f), 0);

	/* A cycle: no run. */
	assert_int_equal(heist_graph_edge(b, a), 0);
	f = SENTINEL;
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), EDEADLK);
	assert_null(f);
	/* Also through a subgraph. */
	heist_graph_node *s;
	assert_int_equal(heist_graph_add_graph(other, g, &s), 0);
	assert_int_equal(heist_graph_run(pool, other, NULL, NULL), EDEADLK);
	heist_graph_destroy(other);
	heist_graph_destroy(g);
	heist_graph_destroy(NULL);
	heist_pool_destroy(pool);
}

static void
allocation_failures_are_enomem(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(1);
	heist_graph *g = SENTINEL;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	assert_int_equal(heist_graph_create(&g), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_null(g);
	assert_int_equal(heist_graph_create(&g), 0);
	heist_graph_node *a = SENTINEL, *b;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	assert_int_equal(heist_graph_add_task(g, ret_int, NULL, &a), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_null(a);
	assert_int_equal(heist_graph_add_task(g, ret_int, NULL, &a), 0);
	assert_int_equal(heist_graph_add_task(g, ret_int, NULL, &b), 0);
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	assert_int_equal(heist_graph_edge(a, b), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_int_equal(heist_graph_edge(a, b), 0);
	heist_future *f = SENTINEL;
	fault_fail_all(FAULT_ALLOC, FAULT_THIS_THREAD);
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), ENOMEM);
	fault_disarm(FAULT_ALLOC);
	assert_null(f);
	/* Once prepared, a run needs only its job's record. */
	assert_int_equal(heist_graph_run(pool, g, NULL, &f), 0);
	assert_int_equal(watched(f), 0);
	heist_graph_destroy(g);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_graphs_run_in_order_run_after_run),
		cmocka_unit_test(a_stencil_gives_the_serial_answer_in_every_run),
		cmocka_unit_test(runs_queued_back_to_back_never_overlap),
		cmocka_unit_test(a_cancelled_queued_run_keeps_the_next_one_waiting),
		cmocka_unit_test(an_error_ends_the_run_and_the_next_run_runs_everything),
		cmocka_unit_test(a_token_or_the_future_cancels_a_run),
		cmocka_unit_test(cancelling_the_future_of_a_running_run_stops_it),
		cmocka_unit_test(every_range_of_a_loop_node_sees_the_runs_cancel),
		cmocka_unit_test(loop_and_subgraph_nodes_run_inside_the_run),
		cmocka_unit_test(a_sibling_spawned_before_a_long_node_is_taken_by_an_idle_worker),
		cmocka_unit_test(a_task_of_a_lone_worker_runs_a_graph_and_waits_for_it),
		cmocka_unit_test(cycles_changes_while_pending_and_bad_input_are_refused),
		cmocka_unit_test(allocation_failures_are_enomem),
	};
	return RUN_TESTS(tests);
}
