/* SPDX-License-Identifier: MIT */
// submit.cpp - the thread-pool shape in C++: submit callables with arguments, get
// their results, and see a task's exception come back out of get().
#include <heist/heist.hpp>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

int main()
{
	heist::pool pool;	// one worker per core; the destructor drains and joins

	auto f = pool.submit([](int a, int b) { return a + b; }, 2, 3);
	int r = f.get();	// 5; this one allocated nothing (see docs/cxx.md)
	std::printf("2 + 3 = %d\n", r);

	// Move-only callables and arguments are moved into the task.
	auto big = pool.submit([p = std::make_unique<std::string>("heist")](int n) {
		return *p + std::string(static_cast<std::size_t>(n), '!');
	}, 3);
	std::printf("%s\n", big.get().c_str());

	// A task's exception is rethrown by get(), on the caller's side.
	auto bad = pool.submit([] { throw std::runtime_error("no luck"); });
	try {
		bad.get();
	} catch (const std::exception &e) {
		std::printf("caught: %s\n", e.what());
	}

	// Continuations run on the pool once the task is done; nothing blocks meanwhile.
	auto chained = pool.submit([] { return 20; }).then([](int x) { return x + 1; });
	std::printf("then: %d\n", chained.get());
	return 0;
}
