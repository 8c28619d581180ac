/* SPDX-License-Identifier: MIT */
/* kernels.h - the per-task work of the workloads of docs/workloads.md, shared by every
 * implementation (serial, heist, baseline pool, OpenMP, oneTBB) so that all of them run
 * exactly the same operations; only the way tasks are made (and waited for) differs.
 * Compiles as C11 and as C++ (peer_tbb.cpp includes it). The expected answers live
 * here too. W8's tree is in w8.h, which heist-latency shares. */
#ifndef HEIST_BENCH_KERNELS_H
#define HEIST_BENCH_KERNELS_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernels of W4, W5, W7 and W8 (w8.c) are defined once, out of line, and opaque
 * to their callers: no caller can inline, clone or specialise them (gcc's noipa; clang
 * has no interprocedural change across translation units without LTO, and noinline
 * for the rest). So every row, the serial one included, runs the same machine code
 * per range, and the ratios measure scheduling, not code generation (bench/README.md). */
#if defined(__GNUC__) && !defined(__clang__)
#define BENCH_KERNEL __attribute__((noipa))
#else
#define BENCH_KERNEL __attribute__((noinline))
#endif

/* ---- W1 fib ---------------------------------------------------------------------- */

/* fib(n) for the check, by iteration. */
static inline long
fib_expected(int n)
{
	long a = 0, b = 1;
	for (int i = 0; i < n; i++) {
		long t = a + b;
		a = b;
		b = t;
	}
	return a;
}

/* ---- W2 nqueens ------------------------------------------------------------------ */

enum { NQ_MAX = 16 };

/* A task's argument: the board prefix (row r holds its queen's column in board[r]) is
 * the task's own copy; count receives the solutions below it. */
struct nq_arg {
	int n, rows;		/* board size; rows already placed */
	long count;
	char board[NQ_MAX];
};

/* Whether a queen in row `rows`, column col, is safe from those in board[0..rows-1]. */
static inline int
nq_safe(const char *board, int rows, int col)
{
	for (int r = 0; r < rows; r++) {
		int d = rows - r, c = board[r];
		if (c == col || c == col - d || c == col + d)
			return 0;
	}
	return 1;
}

/* The child of parent for column col: a fresh copy of the prefix plus the new queen. */
static inline void
nq_child(struct nq_arg *child, const struct nq_arg *parent, int col)
{
	child->n = parent->n;
	child->rows = parent->rows + 1;
	child->count = 0;
	for (int r = 0; r < parent->rows; r++)
		child->board[r] = parent->board[r];
	child->board[parent->rows] = (char)col;
}

/* A leaf: all n queens are placed, which is one solution. Returns whether a is one. */
static inline int
nq_solved(struct nq_arg *a)
{
	if (a->rows != a->n)
		return 0;
	a->count = 1;
	return 1;
}

/* The first safe column for the next queen from col on, or n when there is none:
 * `for (col = nq_next(a, 0); col < a->n; col = nq_next(a, col + 1))` visits every
 * child of a in column order. */
static inline int
nq_next(const struct nq_arg *a, int col)
{
	while (col < a->n && !nq_safe(a->board, a->rows, col))
		col++;
	return col;
}

/* The children's solutions, summed last child first (the order of the syncs). */
static inline long
nq_sum(const struct nq_arg *kid, int k)
{
	long count = 0;
	while (k--)
		count += kid[k].count;
	return count;
}

static inline long
nq_expected(int n)
{
	switch (n) {
	case 8: return 92;
	case 9: return 352;
	case 10: return 724;
	case 11: return 2680;
	case 12: return 14200;
	case 13: return 73712;
	case 14: return 365596;
	default: return -1;
	}
}

/* ---- W3 uts ---------------------------------------------------------------------- */

struct uts_result {
	uint64_t nodes, sum;	/* sum of h over the nodes, mod 2^64 */
};

static inline uint64_t
uts_mix(uint64_t z)
{
	z += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The per-node work (~200 ns): 64 rounds of mix. */
static inline uint64_t
uts_work(uint64_t seed)
{
	uint64_t h = seed;
	for (int i = 0; i < 64; i++)
		h = uts_mix(h);
	return h;
}

enum { UTS_ROOT_CHILDREN = 2000, UTS_CHILDREN = 8 };

static inline int
uts_children(uint64_t h, int depth)
{
	if (depth == 0)
		return UTS_ROOT_CHILDREN;
	/* (h >> 11) * 2^-53 < 0.124875 */
	return (double)(h >> 11) * (1.0 / 9007199254740992.0) < 0.124875 ? UTS_CHILDREN : 0;
}

static inline uint64_t
uts_child_seed(uint64_t seed, int i)
{
	return uts_mix(seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(i + 1)));
}

/* A node of the tree: the task's argument, in its parent's frame, and where it leaves
 * its subtree's result. */
struct uts_node {
	uint64_t seed;
	int depth;
	struct uts_result r;
};

/* A node's own work (uts_work): its result so far is itself. Returns its number of
 * children. */
static inline int
uts_visit(struct uts_node *node)
{
	uint64_t h = uts_work(node->seed);
	node->r.nodes = 1;
	node->r.sum = h;
	return uts_children(h, node->depth);
}

/* Child i of node, with nothing found yet. */
static inline void
uts_child(struct uts_node *kid, const struct uts_node *node, int i)
{
	kid->seed = uts_child_seed(node->seed, i);
	kid->depth = node->depth + 1;
}

/* Add a finished child's result to its parent's. */
static inline void
uts_add(struct uts_node *node, const struct uts_node *kid)
{
	node->r.nodes += kid->r.nodes;
	node->r.sum += kid->r.sum;
}

/* The expected answer for a root seed; nodes == 0 if unknown. */
static inline struct uts_result
uts_expected(uint64_t seed)
{
	struct uts_result r = { 0, 0 };
	if (seed == 3) {
		r.nodes = 1028121;
		r.sum = 0x0a16600544d2c9d0ull;
	} else if (seed == 2) {
		r.nodes = 5083761;
		r.sum = 0x35a6761379d0cd44ull;
	}
	return r;
}

/* ---- W4 for_each ----------------------------------------------------------------- */

/* The body over a[begin, end): a[i] = 8 rounds of x = x * 1.0000001 + 1e-9 for each
 * i, what every implementation runs per sub-range (kernels.c). Elements are
 * independent, so the result is the same whatever the split and whether the compiler
 * vectorises (no FMA contraction: -ffp-contract=off). */
BENCH_KERNEL void w4_range(double *a, size_t begin, size_t end);

/* The sum of a[begin, end), in index order (the reduce rows; kernels.c). */
BENCH_KERNEL double w4_sum(const double *a, size_t begin, size_t end);

/* ---- W7 matmul ------------------------------------------------------------------- */

/* Rows [r0, r1) of C = A x B (n x n, row-major), naive i-k-j: each C row is zeroed,
 * then C[i][j] += A[i][k] * B[k][j] for k in order, so every element sums the same
 * products in the same order in every implementation (kernels.c). */
BENCH_KERNEL void w7_rows(const double *A, const double *B, double *C, size_t n, size_t r0,
			  size_t r1);

/* ---- W5 submit storm ------------------------------------------------------------- */

/* Task k of the storm: x = k; iters times x = x * 1.0000001 + 1e-7 (kernels.c). The
 * serial loop is not vectorised across tasks either (which no task-based version
 * could be). */
BENCH_KERNEL double w5_body(size_t k, unsigned iters);

/* ---- W10 task graphs ------------------------------------------------------------ */

/* The shapes of Task Bench (Slaughter et al., SC'20) that W10 runs. */
enum w10_shape { W10_STENCIL, W10_FFT, W10_TREE, W10_NO_COMM };

/* A point's buffer: one cache line, written by its point alone. word is the answer
 * (the sum of the inputs' words + t + i, mod 2^64); x keeps the spin alive. */
struct w10_buf {
	uint64_t word;
	double x;
	unsigned char pad[48];
};

/* One graph: steps x width points, (t, i)'s buffer at buf[t * width + i] (64-byte
 * aligned), each point spinning iter times. fft_bits is log2(width) for fft. */
struct w10_graph {
	unsigned shape;		/* enum w10_shape */
	unsigned width, steps, fft_bits;
	unsigned iter;
	struct w10_buf *buf;
};

/* The points of step t: width, but min(2^t, width) for tree. */
static inline unsigned
w10_points(const struct w10_graph *g, unsigned t)
{
	if (g->shape == W10_TREE && t < 32 && (1u << t) < g->width)
		return 1u << t;
	return g->width;
}

/* The inputs of (t, i), as indices into step t - 1 (in[0..return)): none at step 0;
 * stencil (i - 1, i, i + 1 where they exist), fft (i and i XOR 2^((t - 1) mod
 * log2 width)), tree (i / 2), no_comm (i). */
static inline unsigned
w10_inputs(const struct w10_graph *g, unsigned t, unsigned i, unsigned in[3])
{
	unsigned n = 0;
	if (t == 0)
		return 0;
	switch (g->shape) {
	case W10_STENCIL:
		if (i > 0)
			in[n++] = i - 1;
		in[n++] = i;
		if (i + 1 < g->width)
			in[n++] = i + 1;
		break;
	case W10_FFT:
		in[n++] = i;
		if (g->fft_bits)
			in[n++] = i ^ (1u << ((t - 1) % g->fft_bits));
		break;
	case W10_TREE:
		in[n++] = i / 2;
		break;
	default:
		in[n++] = i;
		break;
	}
	return n;
}

/* Whether a point of step t + 1 has (t, i) among its inputs: false on the last step,
 * and for tree's points beyond twice the next step's (when the width is reached,
 * (t, i) for i >= width / 2 feeds nobody). Every other point is an input of (t + 1, i). */
static inline int
w10_consumed(const struct w10_graph *g, unsigned t, unsigned i)
{
	if (t + 1 >= g->steps)
		return 0;
	return g->shape != W10_TREE || 2 * i < w10_points(g, t + 1);
}

/* Point (t, i): its word = the sum of its inputs' words + t + i, then x = i spun iter
 * times (x = x * 1.0000001 + 1e-7), stored (kernels.c). Reads only step t - 1's
 * buffers, writes only its own. */
BENCH_KERNEL void w10_point(const struct w10_graph *g, unsigned t, unsigned i);

#ifdef __cplusplus
}
#endif

#endif /* HEIST_BENCH_KERNELS_H */
