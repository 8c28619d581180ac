/* SPDX-License-Identifier: MIT */
// strict-consumer.cpp - a C++17 program over heist.hpp (and through it heist.h and
// heist/inline.h), compiled by tests/check-strict.py with -Wold-style-cast,
// -Wuseless-cast, -Wconversion, -Wsign-conversion and -Werror through -I: the
// header's templates are instantiated here in the common forms (submit, post, then,
// cancel tokens, every for_each, reduce, join, task_group, run, submit_after, when_all,
// task_graph, promises), so that a warning in
// any of them fails here before it fails in a user's build. Only compiled and linked.
#include <heist/heist.hpp>
#include <heist/profile.h>

#include <cstdio>
#include <string>
#include <vector>

static long fib(int n)
{
	if (n < 2)
		return n;
	auto [a, b] = heist::join([n] { return fib(n - 2); }, [n] { return fib(n - 1); });
	return a + b;
}

// The C typed tasks (HEIST_TASK_1) compile as C++ too.
static long fib_typed(int n);
HEIST_TASK_1(fib_child, long, fib_typed, int)

static long fib_typed(int n)
{
	if (n < 2)
		return n;
	fib_child t;
	fib_child_spawn(&t, n - 1);
	long b = fib_typed(n - 2);
	return fib_child_sync(&t) + b;
}

// The worker-passing forms: the C macro, and heist::join with the worker.
static long fib_w(heist_worker *w, int n);
HEIST_WORKER_TASK_1(fib_w_child, long, fib_w, int)

static long fib_w(heist_worker *w, int n)
{
	if (n < 2)
		return n;
	fib_w_child t;
	fib_w_child_spawn(w, &t, n - 1);
	long b = fib_w(w, n - 2);
	return fib_w_child_sync(w, &t) + b;
}

static long fib_join_w(heist::worker w, int n)
{
	if (n < 2)
		return n;
	auto [a, b] = heist::join(w, [n](heist::worker v) { return fib_join_w(v, n - 1); },
				  [n](heist::worker v) { return fib_join_w(v, n - 2); });
	return a + b;
}

int main()
{
	heist::pool pool(2);
	long r = pool.run([] { return fib(20) + fib_typed(10); });
	r += pool.run([] {
		heist::worker w = heist::worker::self();
		return fib_w(w.get(), 10) + fib_join_w(w, 10);
	});
	auto f = pool.submit([](int a, int b) { return a + b; }, 2, 3);
	auto s = pool.submit([](const std::string &x) { return x + "!"; }, std::string("heist"));
	auto chained = pool.submit([] { return 20; }).then([](int x) { return x + 1; });
	heist::cancel_token token;
	auto c = pool.submit_cancellable(token, [] { return 1; });
	pool.post([] {});
	std::vector<double> v(1000);
	pool.for_each(0, v.size(), [&v](std::size_t i) { v[i] = double(i); });
	pool.for_each(0, v.size(), [&v](std::size_t b, std::size_t e) {
		for (std::size_t i = b; i < e; i++)
			v[i] *= 2;
	});
	pool.for_each(v.begin(), v.end(), [](double &x) { x += 1; });
	double sum = pool.reduce(0, v.size(), 0.0, [&v](std::size_t b, std::size_t e, double acc) {
		for (std::size_t i = b; i < e; i++)
			acc += v[i];
		return acc;
	}, [](double a, double b) { return a + b; });
	long g = pool.run([] {
		long out[2] = {0, 0};
		heist::task_group<> tg;
		tg.spawn([&out] { out[0] = fib(10); });
		tg.spawn([&out] { out[1] = fib(11); });
		tg.wait();
		return out[0] + out[1];
	});
	auto after = pool.submit_after({f, s}, [](int x) { return x * 2; }, 4);
	auto always = pool.submit_after(heist::after_always, {after}, [] {});
	std::vector<heist::future<long>> many;
	for (int i = 0; i < 10; i++)
		many.push_back(pool.submit([i] { return long(i); }));
	auto all = heist::when_all(pool, many);
	auto after_many = pool.submit_after(many, [] { return 1; });
	heist::promise<std::string> pr(pool);
	heist::promise<void> pv(pool);
	auto from_promise = pr.get_future().then([](std::string x) { return x.size(); });
	auto from_void = pv.get_future();
	pr.set_value(std::string("promised"));
	pv.set_exception(std::make_exception_ptr(1));
	heist::when_all(pool, f, s, chained, after, always, all, from_promise).get();
	try {
		from_void.get();
	} catch (int) {
	}
	heist::task_graph graph;
	long cells[3] = {0, 0, 0};
	auto n0 = graph.emplace([&cells] { cells[0] = 1; });
	auto n1 = graph.emplace([&cells] { cells[1] = cells[0] + 1; });
	graph.emplace([&cells] { cells[2] = cells[1] + cells[0]; }).succeed(n0, n1);
	n0.precede(n1);
	graph.run(pool).get();
	pool.wait_idle();
	std::printf("%ld %d %s %d %d %.0f %ld %d %d %ld %zu\n", r, f.get(), s.get().c_str(),
		    chained.get(), c.get(), sum, g, after.get(), after_many.get(), cells[2],
		    from_promise.get());
	return r == 6765 + 55 + 55 + 55 ? 0 : 1;	// fib(20) + fib(10), thrice
}
