/* SPDX-License-Identifier: MIT */
/* kernels.c - the per-range kernels of W4 (and its sum), W5 and W7, and W10's point,
 * out of line and opaque to their callers (kernels.h says why). */
#include "kernels.h"

BENCH_KERNEL void
w4_range(double *a, size_t begin, size_t end)
{
	for (size_t i = begin; i < end; i++) {
		double x = a[i];
		for (int k = 0; k < 8; k++)
			x = x * 1.0000001 + 1e-9;
		a[i] = x;
	}
}

BENCH_KERNEL double
w4_sum(const double *a, size_t begin, size_t end)
{
	double s = 0;
	for (size_t i = begin; i < end; i++)
		s += a[i];
	return s;
}

BENCH_KERNEL void
w7_rows(const double *A, const double *B, double *C, size_t n, size_t r0, size_t r1)
{
	for (size_t i = r0; i < r1; i++) {
		double *c = C + i * n;
		for (size_t j = 0; j < n; j++)
			c[j] = 0.0;
		for (size_t k = 0; k < n; k++) {
			double a = A[i * n + k];
			const double *b = B + k * n;
			for (size_t j = 0; j < n; j++)
				c[j] += a * b[j];
		}
	}
}

BENCH_KERNEL double
w5_body(size_t k, unsigned iters)
{
	double x = (double)k;
	for (unsigned i = 0; i < iters; i++)
		x = x * 1.0000001 + 1e-7;
	return x;
}

_Static_assert(sizeof(struct w10_buf) == 64, "a W10 buffer is one cache line");

BENCH_KERNEL void
w10_point(const struct w10_graph *g, unsigned t, unsigned i)
{
	unsigned in[3];
	unsigned n = w10_inputs(g, t, i, in);
	uint64_t word = (uint64_t)t + i;
	if (n) {
		const struct w10_buf *prev = g->buf + (size_t)(t - 1) * g->width;
		for (unsigned k = 0; k < n; k++)
			word += prev[in[k]].word;
	}
	struct w10_buf *me = g->buf + (size_t)t * g->width + i;
	me->word = word;
	double x = (double)i;
	for (unsigned k = 0; k < g->iter; k++)
		x = x * 1.0000001 + 1e-7;
	me->x = x;
}
