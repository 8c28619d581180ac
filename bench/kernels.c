/* kernels.c - the out-of-line W5 body (see kernels.h for why it is out of line). */
#include "kernels.h"

double
w5_body(size_t k, unsigned iters)
{
	double x = (double)k;
	for (unsigned i = 0; i < iters; i++)
		x = x * 1.0000001 + 1e-7;
	return x;
}
