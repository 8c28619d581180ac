/* SPDX-License-Identifier: MIT */
/* peer_tbb.cpp - the workloads with oneTBB, for comparison (see peers.h). Fork-join is
 * tbb::task_group (run per child, wait), inside a task_arena of `threads` slots that the
 * calling thread enters, so `threads` counts it, as with OpenMP. Worker stacks keep
 * oneTBB's default size: asking for 64 MiB (heist's default) made W3 lose most of its
 * parallelism (109 ms -> 169 ms for seed 3 on two cores), and the default fits W3's
 * depth. W4 and W7 use tbb::parallel_for on a blocked_range with the default (auto)
 * partitioner, in the same arena. W6 uses a second arena with
 * no slot for the caller: the task goes to a worker (enqueue), as heist_submit's does.
 * W10's graphs are tbb::flow::graph with a continue_node per point, in the same arena.
 * Built only with oneTBB (HEIST_BENCH_TBB). */
#include "peers.h"
#include "latch.h"

#include <deque>
#include <memory>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

namespace {

std::unique_ptr<tbb::global_control> parallelism;
std::unique_ptr<tbb::task_arena> arena;		/* the caller joins: threads slots in all */
std::unique_ptr<tbb::task_arena> workers_only;	/* threads workers, no caller slot (W6) */
struct latch *round_trip_latch;

/* ---- W1 fib --------------------------------------------------------------------- */

long
fib(int n)
{
	if (n < 2)
		return n;
	long a, b;
	tbb::task_group g;
	g.run([&a, n] { a = fib(n - 1); });
	b = fib(n - 2);
	g.wait();
	return a + b;
}

/* ---- W2 nqueens ----------------------------------------------------------------- */

void
nqueens(nq_arg *a)
{
	if (nq_solved(a))
		return;
	nq_arg kid[NQ_MAX];
	int k = 0;
	tbb::task_group g;
	for (int col = nq_next(a, 0); col < a->n; col = nq_next(a, col + 1)) {
		nq_child(&kid[k], a, col);
		nq_arg *c = &kid[k++];
		g.run([c] { nqueens(c); });
	}
	g.wait();
	a->count = nq_sum(kid, k);
}

/* ---- W3 uts --------------------------------------------------------------------- */

void uts(uts_node *node);

/* The children of a node, in a frame-local array (the root's 2000 on the heap). */
template <int N>
void
uts_kids(uts_node *node, int n)
{
	uts_node local[N];
	std::vector<uts_node> big;
	uts_node *kid = local;
	if (n > N) {
		big.resize((size_t)n);
		kid = big.data();
	}
	tbb::task_group g;
	for (int i = 0; i < n; i++) {
		uts_child(&kid[i], node, i);
		uts_node *c = &kid[i];
		g.run([c] { uts(c); });
	}
	g.wait();
	for (int i = n - 1; i >= 0; i--)
		uts_add(node, &kid[i]);
}

void
uts(uts_node *node)
{
	int n = uts_visit(node);
	if (n > 0)
		uts_kids<UTS_CHILDREN>(node, n);
}

/* ---- W8 latency tree: both children are tasks ---------------------------------- */

void
tree(w8_node *n)
{
	if (!w8_visit(n))
		return;
	w8_node kid[2];
	w8_children(kid, n);
	tbb::task_group g;
	g.run([&kid] { tree(&kid[0]); });
	g.run([&kid] { tree(&kid[1]); });
	g.wait();
	w8_gather(n, kid);
}

/* ---- the workloads' entry points: each enters the arena, whose size peer_tbb_start
 * fixed (the threads argument is that count) ---------------------------------------- */

long
tbb_fib(unsigned, int n)
{
	return arena->execute([=] { return fib(n); });
}

long
tbb_nqueens(unsigned, int n)
{
	nq_arg root{};
	root.n = n;
	arena->execute([&] { nqueens(&root); });
	return root.count;
}

uts_result
tbb_uts(unsigned, uint64_t seed)
{
	uts_node root{};
	root.seed = seed;
	arena->execute([&] { uts(&root); });
	return root.r;
}

void
tbb_storm(unsigned, double *out, size_t ntasks, unsigned iters)
{
	arena->execute([&] {
		tbb::task_group g;
		for (size_t k = 0; k < ntasks; k++)
			g.run([out, k, iters] { out[k] = w5_body(k, iters); });
		g.wait();
	});
}

int
tbb_round_trip(unsigned)
{
	static int result;
	result = 0;
	latch_reset(round_trip_latch, 1);
	workers_only->enqueue([] {
		result = 1;
		latch_count_down(round_trip_latch);
	});
	latch_wait(round_trip_latch);
	return result;
}

void
tbb_for_each(unsigned, double *a, size_t n, unsigned reps)
{
	arena->execute([&] {
		for (unsigned r = 0; r < reps; r++)
			tbb::parallel_for(tbb::blocked_range<size_t>(0, n),
					  [a](const tbb::blocked_range<size_t> &br) {
						  w4_range(a, br.begin(), br.end());
					  });
	});
}

double
tbb_reduce(unsigned, const double *a, size_t n, unsigned reps)
{
	double total = 0;
	arena->execute([&] {
		for (unsigned r = 0; r < reps; r++)
			total += tbb::parallel_reduce(
				tbb::blocked_range<size_t>(0, n), 0.0,
				[a](const tbb::blocked_range<size_t> &br, double s) {
					return s + w4_sum(a, br.begin(), br.end());
				},
				[](double x, double y) { return x + y; });
	});
	return total;
}

void
tbb_matmul(unsigned, const double *A, const double *B, double *C, size_t n)
{
	arena->execute([&] {
		tbb::parallel_for(tbb::blocked_range<size_t>(0, n),
				  [=](const tbb::blocked_range<size_t> &br) {
					  w7_rows(A, B, C, n, br.begin(), br.end());
				  });
	});
}

w8_result
tbb_tree(unsigned, unsigned depth, unsigned payload)
{
	w8_node root = w8_root(depth, payload);
	arena->execute([&] { tree(&root); });
	return root.r;
}

/* ---- W10 task graphs: a flow::graph with a continue_node per point and an edge per
 * input; the sources (step 0) are put once every node and edge is made, then
 * wait_for_all. The graph is made inside the timed region, as heist's and OpenMP's
 * tasks are: each run is a new graph (an edge to a node that has already fired would
 * never be served, so it cannot grow while it runs). The default policy: each node's
 * body is a task of its own. -------------------------------------------------------- */

void
tbb_graph(unsigned, const w10_graph *g)
{
	using node = tbb::flow::continue_node<tbb::flow::continue_msg>;
	arena->execute([g] {
		tbb::flow::graph fg;
		std::deque<node> nodes;	/* never moves a node once made */
		std::vector<node *> at((size_t)g->steps * g->width);
		for (unsigned t = 0; t < g->steps; t++) {
			unsigned n = w10_points(g, t);
			for (unsigned i = 0; i < n; i++) {
				nodes.emplace_back(fg, [g, t, i](const tbb::flow::continue_msg &) {
					w10_point(g, t, i);
					return tbb::flow::continue_msg();
				});
				node &me = nodes.back();
				at[(size_t)t * g->width + i] = &me;
				unsigned in[3] = { 0, 0, 0 };
				unsigned k = w10_inputs(g, t, i, in);
				for (unsigned m = 0; m < k; m++)
					tbb::flow::make_edge(*at[(size_t)(t - 1) * g->width + in[m]],
							     me);
			}
		}
		for (unsigned i = 0; i < w10_points(g, 0); i++)
			at[i]->try_put(tbb::flow::continue_msg());
		fg.wait_for_all();
	});
}

} // namespace

extern "C" {

void
peer_tbb_start(unsigned threads)
{
	peer_tbb_stop();
	/* One slot more than threads: the W6 arena has threads workers and no caller. */
	parallelism = std::make_unique<tbb::global_control>(
		tbb::global_control::max_allowed_parallelism, (size_t)threads + 1);
	arena = std::make_unique<tbb::task_arena>((int)threads);
	arena->initialize();
	workers_only = std::make_unique<tbb::task_arena>((int)threads, 0);
	workers_only->initialize();
	round_trip_latch = latch_create(1);
}

void
peer_tbb_stop(void)
{
	workers_only.reset();
	arena.reset();
	parallelism.reset();
	if (round_trip_latch)
		latch_destroy(round_trip_latch);
	round_trip_latch = nullptr;
}

const struct peer peer_tbb = {
	"tbb", tbb_fib, tbb_nqueens, tbb_uts, tbb_for_each, tbb_reduce, tbb_storm,
	tbb_round_trip, tbb_matmul, tbb_tree, tbb_graph,
};

} // extern "C"
