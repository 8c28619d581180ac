/* SPDX-License-Identifier: MIT */
// fib.cpp - fork-join in C++: heist::join runs two closures in parallel, with the task
// record and both closures in the caller's frame (no heap allocation).
#include <heist/heist.hpp>

#include <cstdio>
#include <cstdlib>

static long fib(int n)
{
	if (n < 2)
		return n;
	// The second closure is spawned (an idle worker may steal it), the first runs here.
	auto [a, b] = heist::join([n] { return fib(n - 2); }, [n] { return fib(n - 1); });
	return a + b;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 30;
	heist::pool pool;
	long r = pool.run([n] { return fib(n); });	// enter the pool and wait
	std::printf("fib(%d) = %ld\n", n, r);
	return 0;
}
