/* kernels.h - the per-task work of the workloads of WORKLOADS.md, shared by every
 * implementation (serial, heist, baseline pool, OpenMP, oneTBB) so that all of them run
 * exactly the same operations; only the way tasks are made differs. Compiles as C11
 * and as C++ (peer_tbb.cpp includes it). The expected answers live here too. */
#ifndef HEIST_BENCH_KERNELS_H
#define HEIST_BENCH_KERNELS_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
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

/* ---- W5 submit storm ------------------------------------------------------------- */

/* Task k of the storm: x = k; iters times x = x * 1.0000001 + 1e-7. Defined in
 * kernels.c, out of line on purpose: every implementation, the serial loop included,
 * calls the same compiled body, so results match bit for bit and the serial loop is not
 * vectorised across tasks (which no task-based version could be). */
double w5_body(size_t k, unsigned iters);

#ifdef __cplusplus
}
#endif

#endif /* HEIST_BENCH_KERNELS_H */
