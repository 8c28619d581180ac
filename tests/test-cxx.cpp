/* SPDX-License-Identifier: MIT */
// test-cxx.cpp - the public headers compile as C++ and the library links from C++:
// a submit, a fork-join and a for_each through the C API.
#include <heist/heist.h>
#include <heist/profile.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

static std::atomic<long> total{0};

static int add_range(void *, size_t begin, size_t end)
{
	for (size_t i = begin; i < end; i++)
		total += static_cast<long>(i);
	return 0;
}

static int fib(void *arg)
{
	std::intptr_t n = reinterpret_cast<std::intptr_t>(arg);	// long is 32 bits on Windows
	if (n < 2)
		return static_cast<int>(n);
	heist_task t;
	heist_spawn(&t, fib, reinterpret_cast<void *>(n - 1));
	int b = fib(reinterpret_cast<void *>(n - 2));
	return heist_sync(&t) + b;
}

int main()
{
	heist_pool *pool = nullptr;
	heist_config cfg{};
	cfg.threads = 2;
	if (heist_pool_create(&pool, &cfg) != 0)
		return 1;
	int failures = 0;
	heist_future *f = nullptr;
	failures += heist_submit(pool, fib, reinterpret_cast<void *>(std::intptr_t{20}), &f) != 0;
	failures += heist_future_wait(f) != 6765;
	heist_future_release(f);
	failures += heist_run(pool, fib, reinterpret_cast<void *>(22L)) != 17711;
	failures += heist_for_each(pool, 0, 1000, 0, add_range, nullptr) != 0;
	failures += total.load() != 499500;
	heist_pool_destroy(pool);
	std::printf("%d failed\n", failures);
	return failures != 0;
}
