/* SPDX-License-Identifier: MIT */
/* kernels.c - the per-range kernels of W4 (and its sum), W5 and W7, out of line and opaque to their
 * callers (kernels.h says why). */
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
