/* SPDX-License-Identifier: MIT */
/* w_cxx.cpp - W1, W5 and W6 through the C++ API (heist.hpp), behind the C interface of
 * cxx.h: heist::join for W1's spawns, pool.post and pool.submit lambdas for W5,
 * pool.submit + future::get() for W6's round trip. They run on the driver's heist
 * pools (heist::pool_ref), so each heist-cxx row and its C row share one pool.
 * Built only with a C++ compiler (HEIST_BENCH_CXX). */
#include "cxx.h"

#include "kernels.h"
#include "latch.h"

#include <heist/heist.hpp>

#include <vector>

namespace {

long
fib(int n)
{
	if (n < 2)
		return n;
	auto [a, b] = heist::join([n] { return fib(n - 2); }, [n] { return fib(n - 1); });
	return a + b;
}

/* W5's futures, kept across repetitions so that only the warm-up grows it. */
std::vector<heist::future<void>> storm_futures;

} // namespace

extern "C" {

long
cxx_fib(heist_pool *pool, int n)
{
	return heist::pool_ref(pool).run([n] { return fib(n); });
}

void
cxx_storm_post(heist_pool *pool, double *out, size_t n, unsigned iters, struct latch *l)
{
	heist::pool_ref p(pool);
	for (size_t k = 0; k < n; k++) {
		auto task = [out, k, iters, l] {
			out[k] = w5_body(k, iters);
			latch_count_down(l);
		};
		static_assert(heist::post_is_inline<decltype(task)>, "no heap block per task");
		p.post(task);
	}
	latch_wait(l);
}

void
cxx_storm_futures(heist_pool *pool, double *out, size_t n, unsigned iters)
{
	heist::pool_ref p(pool);
	storm_futures.reserve(n);
	for (size_t k = 0; k < n; k++) {
		auto task = [out, k, iters] { out[k] = w5_body(k, iters); };
		static_assert(heist::submit_is_inline<decltype(task)>, "no heap block per task");
		storm_futures.push_back(p.submit(task));
	}
	for (auto &f : storm_futures)
		f.get();
	storm_futures.clear();
}

int
cxx_round_trip(heist_pool *pool)
{
	auto task = [] { return 1; };
	static_assert(heist::submit_is_inline<decltype(task)>, "no heap block per round trip");
	return heist::pool_ref(pool).submit(task).get();
}

} // extern "C"
