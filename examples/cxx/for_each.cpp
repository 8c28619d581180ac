/* SPDX-License-Identifier: MIT */
// for_each.cpp - parallel loops in C++: over indices, over sub-ranges, over a
// container's elements; the first exception a body throws stops the loop and comes out.
#include <heist/heist.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <vector>

int main()
{
	heist::pool pool;
	std::vector<double> v(1000000);

	// body(i) per index; the calling thread takes part.
	pool.for_each(0, v.size(), [&v](std::size_t i) { v[i] = std::sqrt(double(i)); });

	// body(b, e) per sub-range (split lazily, only when a worker is idle).
	std::atomic<long> chunks{0};
	pool.for_each(0, v.size(), [&](std::size_t b, std::size_t e) {
		chunks++;
		for (std::size_t i = b; i < e; i++)
			v[i] *= 2;
	});

	// body(element) over random-access iterators.
	pool.for_each(v.begin(), v.end(), [](double &x) { x += 1; });
	std::printf("sum = %.0f in %ld sub-ranges\n", std::accumulate(v.begin(), v.end(), 0.0),
		    chunks.load());

	try {
		pool.for_each(0, 100, [](int i) {
			if (i == 42)
				throw std::out_of_range("index 42");
		});
	} catch (const std::out_of_range &e) {
		std::printf("loop stopped: %s\n", e.what());
	}
	return 0;
}
