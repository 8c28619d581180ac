/* SPDX-License-Identifier: MIT */
/* cxx.h - the C++ API's versions of W1, W5 and W6 (w_cxx.cpp, built when meson finds a
 * C++ compiler: HEIST_BENCH_CXX), for the heist-cxx rows beside the C API's heist rows,
 * on the same pools. Each runs one repetition's work through include/heist/heist.hpp
 * and returns its answer; the workload files time and check them as their C rows. */
#ifndef HEIST_BENCH_CXX_H
#define HEIST_BENCH_CXX_H

#include <stddef.h>

#include <heist/heist.h>

#ifdef __cplusplus
extern "C" {
#endif

struct latch;

/* W1: fib(n) with heist::join on every call above the leaves, entered with
 * pool.run; the same shape as w_fib.c's fib_task (the n - 1 half spawned). */
long cxx_fib(heist_pool *pool, int n);

/* W5: a pool.post lambda per k, out[k] = w5_body(k, iters), each counting l down;
 * then the latch wait (as w_storm.c's heist row). */
void cxx_storm_post(heist_pool *pool, double *out, size_t n, unsigned iters,
		    struct latch *l);

/* W5: a pool.submit lambda per k, then get() on every future (as heist-futures). */
void cxx_storm_futures(heist_pool *pool, double *out, size_t n, unsigned iters);

/* W6: pool.submit of a lambda returning 1, then future::get(); returns its value. */
int cxx_round_trip(heist_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* HEIST_BENCH_CXX_H */
