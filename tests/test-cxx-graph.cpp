/* SPDX-License-Identifier: MIT */
// test-cxx-graph.cpp - dependent tasks in heist.hpp: pool::submit_after (results of
// every future kind as inputs, inputs that stay usable, one future feeding many,
// exceptions and cancellations that propagate in argument order, after_always, the
// dependent's own cancel, many inputs, a pool gone before the inputs end, bad input,
// what it allocates), heist::when_all, and heist::task_graph (a diamond, a stencil
// checked against the serial answer, failures, cycles, runs that overlap the graph's
// end). Checks as in test-cxx-api.cpp: they print the line and abort, in release
// builds too. Inputs that must not end yet wait on a gate the test opens; nothing
// passes or fails because something was fast. TEST_FILTER=word runs the tests whose
// names contain it.
#include <heist/heist.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// ---- checks ----------------------------------------------------------------------

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,   \
				     __LINE__, #cond);                                \
			std::abort();                                                 \
		}                                                                     \
	} while (0)

#define CHECK_THROWS(E, expr)                                                         \
	do {                                                                          \
		bool thrown_ = false;                                                 \
		try {                                                                 \
			(void)(expr);                                                 \
		} catch (const E &) {                                                 \
			thrown_ = true;                                               \
		}                                                                     \
		if (!thrown_) {                                                       \
			std::fprintf(stderr, "%s:%d: CHECK failed: %s did not throw %s\n", \
				     __FILE__, __LINE__, #expr, #E);                  \
			std::abort();                                                 \
		}                                                                     \
	} while (0)

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifdef TEST_SANITIZED
static const int SCALE = 1;
#else
static const int SCALE = 4;
#endif

// ---- heap allocations through operator new (as test-cxx-api.cpp) -----------------

static std::atomic<long> news{0};

#define NOINLINE __attribute__((noinline))

NOINLINE void *
operator new(std::size_t n)
{
	news.fetch_add(1, std::memory_order_relaxed);
	if (void *p = std::malloc(n ? n : 1))
		return p;
	throw std::bad_alloc();
}
NOINLINE void *
operator new[](std::size_t n)
{
	return operator new(n);
}
NOINLINE void *
operator new(std::size_t n, const std::nothrow_t &) noexcept
{
	news.fetch_add(1, std::memory_order_relaxed);
	return std::malloc(n ? n : 1);
}
NOINLINE void *
operator new[](std::size_t n, const std::nothrow_t &t) noexcept
{
	return operator new(n, t);
}
NOINLINE void operator delete(void *p) noexcept { std::free(p); }
NOINLINE void operator delete[](void *p) noexcept { std::free(p); }
NOINLINE void operator delete(void *p, std::size_t) noexcept { std::free(p); }
NOINLINE void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
NOINLINE void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
NOINLINE void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }

static long allocs() { return news.load(std::memory_order_relaxed); }

// ---- helpers ---------------------------------------------------------------------

static void nap() { std::this_thread::sleep_for(std::chrono::microseconds(100)); }

// Poll cond with a bound (30 s of naps) that only a broken library reaches.
template <class C>
static bool
poll(C cond)
{
	for (long i = 0; i < 300000; i++) {
		if (cond())
			return true;
		nap();
	}
	return false;
}

// Holds the tasks that call hold() until opened.
struct gate {
	std::atomic<bool> open{false};
	std::atomic<int> entered{0};
	void
	hold()
	{
		entered++;
		while (!open.load())
			nap();
	}
};

// Occupy the only worker of a 1-worker pool until g is opened.
static heist::future<void>
occupy(heist::pool_ref p, gate &g)
{
	int before = g.entered.load();
	auto f = p.submit([&g] { g.hold(); });
	CHECK(poll([&] { return g.entered.load() > before; }));
	return f;
}

// Live objects of a move-only type, to see that each callable ends exactly once.
static std::atomic<int> live{0};
struct tracked {
	int v;
	explicit tracked(int x) : v(x) { live++; }
	tracked(tracked &&o) noexcept : v(o.v) { live++; }
	tracked(const tracked &) = delete;
	tracked &operator=(const tracked &) = delete;
	~tracked() { live--; }
};

struct my_error : std::runtime_error {
	int code;
	explicit my_error(int c) : std::runtime_error("my_error"), code(c) {}
};

// The code of the my_error that f's get() throws; -1 if it throws none.
template <class R>
static int
error_code(heist::future<R> &f)
{
	try {
		f.get();
	} catch (const my_error &e) {
		return e.code;
	}
	return -1;
}

// ---- submit_after ----------------------------------------------------------------

// The dependent runs once, after every input has returned, whatever kind each input
// is (inline int, inline void without a ticket, heap string, heap long, a
// continuation, an int that collides with a reserved code), and they stay readable.
static void
after_runs_after_inputs()
{
	static gate g;
	heist::pool pool(2);
	std::atomic<int> done{0}, early{0}, runs{0};
	auto a = pool.submit([&] { g.hold(); done++; return 7; });		// inline int
	auto b = pool.submit([&]() noexcept { g.hold(); done++; });		// no ticket
	auto c = pool.submit([&] { g.hold(); done++; return std::string("s"); });	// heap
	auto d = pool.submit([&] { g.hold(); done++; return 40L; });		// heap long
	auto e = pool.submit([&] { g.hold(); done++; return 1; }).then([](int x) { return x + 1; });
	auto f = pool.submit([&] { g.hold(); done++; return ECANCELED; });	// side table
	auto h = pool.submit([&] { g.hold(); done++; return INT_MIN; });	// side table
	auto dep = pool.submit_after({a, b, c, d, e, f, h}, [&] {
		if (done.load() != 7)
			early++;
		runs++;
		return 99;
	});
	CHECK(!dep.ready() && runs.load() == 0);	// its inputs cannot end: the gate
	g.open = true;
	CHECK(dep.get() == 99);
	CHECK(runs.load() == 1 && early.load() == 0);
	CHECK(a.get() == 7);
	b.get();
	CHECK(c.get() == "s");
	CHECK(d.get() == 40L);
	CHECK(e.get() == 2);
	CHECK(f.get() == ECANCELED);
	CHECK(h.get() == INT_MIN);
	// Inputs done already: runnable at once. No inputs: as submit.
	auto x = pool.submit([] { return 1; });
	x.wait();
	CHECK(pool.submit_after({x}, [](int k) { return k * 3; }, 5).get() == 15);
	CHECK(pool.submit_after({}, [] { return 4; }).get() == 4);
	CHECK(x.get() == 1);
}

// Inputs are not consumed: one future feeds many dependents (also from several
// threads at once), may be read, moved, given to then(), or dropped right after the
// call (a temporary), and the dependents still wait for it.
static void
after_inputs_stay_usable()
{
	static gate g;
	heist::pool pool(2);
	std::atomic<int> sum{0};
	auto root = pool.submit([] { g.hold(); return 5; });		// inline
	auto heap = pool.submit([] { g.hold(); return std::string("abc"); });	// heap
	std::vector<heist::future<int>> fan;
	for (int i = 0; i < 50; i++)
		fan.push_back(pool.submit_after({root, heap}, [&sum, i] {
			sum += i;
			return i;
		}));
	// A temporary input: dropped at the end of the statement, still waited for.
	std::atomic<int> tmp_done{0};
	auto after_tmp = pool.submit_after({pool.submit([&tmp_done] { g.hold(); tmp_done++; })},
					   [&tmp_done] { return tmp_done.load(); });
	// Moving an input after the call does not disturb its dependents.
	heist::future<int> moved = std::move(root);
	CHECK(!root.valid());
	// Several threads hold the same (const) future at once.
	const heist::future<int> &shared = moved;
	std::vector<heist::future<int>> from_threads[4];
	std::vector<std::thread> ts;
	for (int t = 0; t < 4; t++)
		ts.emplace_back([&, t] {
			for (int i = 0; i < 25; i++)
				from_threads[t].push_back(
					pool.submit_after({shared}, [t, i] { return t * 100 + i; }));
		});
	for (auto &t : ts)
		t.join();
	g.open = true;
	for (int i = 0; i < 50; i++)
		CHECK(fan[static_cast<std::size_t>(i)].get() == i);
	CHECK(sum.load() == 49 * 50 / 2);
	CHECK(after_tmp.get() == 1);
	for (int t = 0; t < 4; t++)
		for (int i = 0; i < 25; i++)
			CHECK(from_threads[t][static_cast<std::size_t>(i)].get() == t * 100 + i);
	// Still the caller's: a continuation, then get.
	auto next = moved.then([](int v) { return v + 1; });
	CHECK(next.get() == 6);
	CHECK(heap.get() == "abc");
	// An input read (get) before its dependent has run: the dependent still sees it.
	static gate g2;
	heist::pool one(1);
	auto held = occupy(one, g2);
	auto thrower = pool.submit([]() -> int { throw my_error(3); });
	thrower.wait();
	auto late = one.submit_after({thrower}, [] { return 0; });	// queued behind the gate
	CHECK(error_code(thrower) == 3);				// taken by the owner first
	g2.open = true;
	CHECK(error_code(late) == 3);
	held.get();
}

// An input's exception goes to the dependent, which never runs: the first failure in
// argument order, for inline and heap inputs, through chains; after_always runs it.
static void
after_exceptions_propagate()
{
	heist::pool pool(2);
	std::atomic<int> ran{0};
	auto ok = pool.submit([] { return 1; });
	auto e1 = pool.submit([]() -> int { throw my_error(1); });		// inline int
	auto e2 = pool.submit([]() -> std::string { throw my_error(2); });	// heap
	auto e3 = pool.submit([] { throw my_error(3); });			// inline void
	heist::when_all(pool, ok, e1, e2, e3).wait();
	auto d12 = pool.submit_after({ok, e1, e2}, [&ran] { ran++; });
	auto d21 = pool.submit_after({e2, ok, e1}, [&ran] { ran++; });
	auto d3 = pool.submit_after({e3}, [&ran] { ran++; return 5; });
	CHECK(error_code(d12) == 1);
	CHECK(error_code(d21) == 2);
	CHECK(error_code(d3) == 3);
	CHECK(ran.load() == 0);
	// Through a chain of dependents: each passes it on unrun.
	heist::future<int> chain = pool.submit_after({e2}, [&ran] { ran++; return 0; });
	for (int i = 0; i < 20; i++)
		chain = pool.submit_after({chain}, [&ran] { ran++; return 0; });
	CHECK(error_code(chain) == 2);
	CHECK(ran.load() == 0);
	// after_always: f runs, its own result is the future's; it may read the inputs.
	auto always = pool.submit_after(heist::after_always, {e1, ok}, [&] {
		ran++;
		return error_code(e1) * 10;
	});
	CHECK(always.get() == 10);
	CHECK(ran.load() == 1);
	// The dependent's own exception.
	auto own = pool.submit_after({ok}, []() -> int { throw my_error(9); });
	CHECK(error_code(own) == 9);
	CHECK(ok.get() == 1);
	CHECK(error_code(e2) == 2);
	CHECK(error_code(e3) == 3);
}

// A cancelled input (its future, its token; inline and heap) ends the dependent unrun
// with cancelled_error. The dependent's own cancel ends it unrun and frees its
// callable at once; its inputs go on.
static void
after_cancellation()
{
	static gate g;
	heist::pool pool(1);
	auto held = occupy(pool, g);
	int base = live.load();
	std::atomic<int> ran{0};
	auto a = pool.submit([&ran] { ran++; return 1; });			// inline
	auto b = pool.submit([&ran, t = tracked(1)] { ran++; return t.v; });	// heap
	heist::cancel_token tok;
	auto c = pool.submit_cancellable(tok, [&ran] { ran++; });		// inline + token
	auto d = pool.submit_cancellable(tok, [&ran] { ran++; return std::string(); });	// heap
	auto e = pool.submit([&ran] { ran++; return 5; });
	std::vector<heist::future<int>> deps;
	deps.push_back(pool.submit_after({a}, [&ran, t = tracked(2)] { ran++; return t.v; }));
	deps.push_back(pool.submit_after({b}, [&ran] { ran++; return 0; }));
	deps.push_back(pool.submit_after({c}, [&ran] { ran++; return 0; }));
	deps.push_back(pool.submit_after({d}, [&ran] { ran++; return 0; }));
	deps.push_back(pool.submit_after({e, a}, [&ran] { ran++; return 0; }));	// e ok, a not
	auto own = pool.submit_after({e}, [&ran, t = tracked(3)] { ran++; return t.v; });
	CHECK(live.load() == base + 3);
	a.cancel();
	b.cancel();
	tok.request();
	own.cancel();				// before its input ends: unrun, callable freed
	CHECK(own.ready());
	CHECK(live.load() == base + 1);		// b's callable and own's went
	g.open = true;
	for (auto &f : deps)
		CHECK_THROWS(heist::cancelled_error, f.get());
	CHECK_THROWS(heist::cancelled_error, own.get());
	CHECK(e.get() == 5);			// own's input went on
	CHECK(ran.load() == 1);			// e alone ran
	CHECK_THROWS(heist::cancelled_error, a.get());
	CHECK_THROWS(heist::cancelled_error, c.get());
	held.get();
	pool.wait_idle();
	CHECK(live.load() == base);
}

// More inputs than the dependent keeps in place (4) and than the call puts on the
// stack (8), up to a thousand, of mixed kinds; a range of future_ref.
static void
after_many_inputs()
{
	heist::pool pool(2);
	for (int n : {5, 9, 1000}) {
		std::vector<heist::future<int>> ins;
		std::atomic<long> total{0};
		for (int i = 0; i < n; i++)
			ins.push_back(pool.submit([&total, i] {
				total += i;
				return i;
			}));
		auto d = pool.submit_after(ins, [&total] { return total.load(); });
		CHECK(d.get() == static_cast<long>(n) * (n - 1) / 2);
		auto w = heist::when_all(pool, ins);
		w.get();
		for (int i = 0; i < n; i++)
			CHECK(ins[static_cast<std::size_t>(i)].get() == i);
	}
	// Mixed result types through future_ref.
	std::vector<heist::future<int>> ints;
	std::vector<heist::future<std::string>> strs;
	std::vector<heist::future_ref> refs;
	for (int i = 0; i < 30; i++) {
		ints.push_back(pool.submit([i] { return i; }));
		strs.push_back(pool.submit([i] { return std::to_string(i); }));
	}
	for (int i = 0; i < 30; i++) {
		refs.emplace_back(ints[static_cast<std::size_t>(i)]);
		refs.emplace_back(strs[static_cast<std::size_t>(i)]);
	}
	CHECK(pool.submit_after(refs, [] { return 1; }).get() == 1);
	// Two failing inputs after sixty good ones: the first one's exception.
	auto bad = pool.submit([]() -> int { throw my_error(57); });
	auto worse = pool.submit([]() -> int { throw my_error(58); });
	refs.emplace_back(bad);
	refs.emplace_back(worse);
	auto d = pool.submit_after(refs, [] { return 1; });
	CHECK(error_code(d) == 57);
	CHECK(error_code(bad) == 57 && error_code(worse) == 58);
}

// From inside a task on a one-worker pool: the task waits for a dependent of its own
// inputs; the waiting worker runs the inputs, then the dependent.
static void
after_from_a_task()
{
	heist::pool pool(1);
	int r = pool.submit([&pool] {
		auto a = pool.submit([] { return 20; });
		auto b = pool.submit([] { return 22; });
		auto d = pool.submit_after({a, b}, [] { return 1; });
		int one = d.get();
		return a.get() + b.get() + one;
	}).get();
	CHECK(r == 43);
}

// A dependent's pool destroyed before its last input ends: it ends unrun with
// ESHUTDOWN, and what it held is freed by its future.
static void
after_pool_gone()
{
	static gate g;
	heist::pool inputs(1);
	int base = live.load();
	heist::future<int> d;
	auto in = inputs.submit([] { g.hold(); return 1; });
	{
		heist::pool other(1);
		d = other.submit_after({in}, [t = tracked(4)] { return t.v; });
	}
	g.open = true;
	try {
		d.get();
		CHECK(false);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == ESHUTDOWN);
	}
	CHECK(live.load() == base);
	CHECK(in.get() == 1);
}

// Bad input: an empty future (nothing queued, the callable freed), an empty pool.
static void
after_bad_input()
{
	heist::pool pool(2);
	int base = live.load();
	std::atomic<int> ran{0};
	auto a = pool.submit([] { return 1; });
	heist::future<int> empty;
	CHECK_THROWS(std::future_error,
		     pool.submit_after({a, empty}, [&ran, t = tracked(5)] { ran++; }));
	std::vector<heist::future<int>> with_empty;
	with_empty.push_back(pool.submit([] { return 2; }));
	with_empty.emplace_back();
	CHECK_THROWS(std::future_error, pool.submit_after(with_empty, [&ran] { ran++; }));
	CHECK_THROWS(std::future_error, heist::when_all(pool, a, empty));
	heist::pool moved(std::move(pool));
	try {
		(void)pool.submit_after({a}, [&ran] { ran++; });
		CHECK(false);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL);
	}
	moved.wait_idle();
	CHECK(ran.load() == 0);
	CHECK(live.load() == base);
	CHECK(a.get() == 1);	// inputs of a failed call are unchanged
	CHECK(with_empty[0].get() == 2);
}

// What a dependent allocates: its block; the first time an inline future is an input,
// one block that keeps it (none again, none for a heap future); beyond 4 inputs the
// list of them, beyond 8 the C array for the call.
static void
after_allocations()
{
	heist::pool pool(1);
	auto inl = pool.submit([] { return 1; });		// inline
	auto heap = pool.submit([] { return 2L; });		// heap
	auto w = heist::when_all(pool, inl, heap);		// shares inl (one block)
	w.get();
	pool.wait_idle();
	long before = allocs();
	auto d1 = pool.submit_after({inl, heap}, [] { return 3; });
	CHECK(allocs() == before + 1);		// the dependent's block
	d1.get();
	pool.wait_idle();
	auto inl2 = pool.submit([] { return 4; });
	inl2.wait();
	before = allocs();
	auto d2 = pool.submit_after({inl2}, [] { return 3; });
	CHECK(allocs() == before + 2);		// and inl2's share
	d2.get();
	pool.wait_idle();
	std::vector<heist::future<long>> nine;
	for (int i = 0; i < 9; i++)
		nine.push_back(pool.submit([i] { return static_cast<long>(i); }));
	heist::when_all(pool, nine).get();
	pool.wait_idle();
	before = allocs();
	auto d3 = pool.submit_after(nine, [] { return 0; });
	CHECK(allocs() == before + 3);		// block, input list, C array
	d3.get();
}

// ---- when_all --------------------------------------------------------------------

static void
when_all_forms()
{
	static gate g;
	heist::pool pool(2);
	auto a = pool.submit([] { g.hold(); return 1; });
	auto b = pool.submit([] { g.hold(); return std::string("b"); });
	auto c = pool.submit([] { g.hold(); });
	auto w1 = heist::when_all(pool, a, b, c);		// variadic
	auto w2 = heist::when_all(pool, {a, b});		// braced list
	std::vector<heist::future<int>> v;
	v.push_back(pool.submit([] { g.hold(); return 10; }));
	auto w3 = heist::when_all(pool, v);			// range
	auto w0 = heist::when_all(pool);			// none: a task queued at once
	CHECK(!w1.ready() && !w2.ready() && !w3.ready());
	g.open = true;
	w0.get();
	w1.get();
	CHECK(a.ready() && b.ready() && c.ready());
	w2.get();
	w3.get();
	CHECK(a.get() + v[0].get() == 11 && b.get() == "b");
	c.get();
	// The first failure in argument order; the inputs keep their own.
	auto ok = pool.submit([] { return 1; });
	auto x = pool.submit([]() -> int { throw my_error(1); });
	auto y = pool.submit([]() -> long { throw my_error(2); });
	auto wx = heist::when_all(pool, ok, x, y);
	auto wy = heist::when_all(pool, y, ok, x);
	CHECK(error_code(wx) == 1 && error_code(wy) == 2);
	CHECK(error_code(x) == 1 && error_code(y) == 2 && ok.get() == 1);
	// when_all is an input like any other.
	auto p = pool.submit([] { return 3; });
	auto q = pool.submit([] { return 4; });
	auto both = heist::when_all(pool, p, q);
	auto sum = pool.submit_after({both}, [&p, &q] { return p.get() + q.get(); });
	CHECK(sum.get() == 7);
}

// Cancelling a when_all ends it (cancelled_error); its inputs go on.
static void
when_all_cancelled()
{
	static gate g;
	heist::pool pool(1);
	auto held = occupy(pool, g);
	auto a = pool.submit([] { return 1; });
	auto w = heist::when_all(pool, a);
	auto after_w = pool.submit_after({w}, [] { return 0; });
	w.cancel();
	CHECK(w.ready());
	g.open = true;
	CHECK_THROWS(heist::cancelled_error, w.get());
	CHECK_THROWS(heist::cancelled_error, after_w.get());
	CHECK(a.get() == 1);
	held.get();
}

// ---- graphs of dependent tasks ---------------------------------------------------

// a -> b, c -> d, with submit_after and with task_graph.
static void
diamond()
{
	heist::pool pool(2);
	for (int round = 0; round < 20 * SCALE; round++) {
		auto a = pool.submit([round] { return round; });
		auto b = pool.submit_after({a}, [] { return 0; });
		auto c = pool.submit_after({a}, [] { return std::string("c"); });
		auto d = pool.submit_after({b, c}, [] { return 1; });
		CHECK(d.get() == 1);
		CHECK(a.get() == round && b.get() == 0 && c.get() == "c");
	}
	heist::task_graph g;
	std::atomic<int> order{0};
	int at[4] = {-1, -1, -1, -1};
	auto a = g.emplace([&] { at[0] = order++; });
	auto b = g.emplace([&] { at[1] = order++; });
	auto c = g.emplace([&] { at[2] = order++; });
	auto d = g.emplace([&] { at[3] = order++; });
	a.precede(b, c);
	d.succeed(b, c);
	CHECK(g.size() == 4 && a.index() == 0 && d.index() == 3);
	for (int round = 0; round < 20 * SCALE; round++) {
		order = 0;
		g.run(pool).get();
		CHECK(at[0] == 0 && at[3] == 3);
		CHECK((at[1] == 1 && at[2] == 2) || (at[1] == 2 && at[2] == 1));
	}
}

// W10's stencil_1d shape (tests/test-after.c): point (t, i) needs (t-1, i-1..i+1).
enum { WIDTH = 8, STEPS = 100 };

static std::uint64_t
stencil_value(int t, int i, const std::uint64_t *prev)
{
	std::uint64_t sum = static_cast<std::uint64_t>(t) * 31u + static_cast<std::uint64_t>(i);
	if (t > 0)
		for (int j = i - 1; j <= i + 1; j++)
			if (j >= 0 && j < WIDTH)
				sum += prev[j] % 1000003u;
	return sum;
}

static std::vector<std::uint64_t>
stencil_serial()
{
	std::vector<std::uint64_t> grid(STEPS * WIDTH);
	for (int t = 0; t < STEPS; t++)
		for (int i = 0; i < WIDTH; i++)
			grid[static_cast<std::size_t>(t * WIDTH + i)] =
				stencil_value(t, i, t ? &grid[static_cast<std::size_t>((t - 1) * WIDTH)]
						      : nullptr);
	return grid;
}

static void
stencil()
{
	const std::vector<std::uint64_t> want = stencil_serial();
	heist::pool pool(2);
	auto at = [](int t, int i) { return static_cast<std::size_t>(t * WIDTH + i); };
	// Dependent tasks submitted directly, each point's future the input of up to
	// three: the values through shared storage, the order through the futures.
	for (int round = 0; round < 3; round++) {
		std::vector<std::uint64_t> grid(STEPS * WIDTH, 0);
		std::vector<heist::future<void>> f(STEPS * WIDTH);
		for (int t = 0; t < STEPS; t++)
			for (int i = 0; i < WIDTH; i++) {
				std::vector<heist::future_ref> in;
				for (int j = i - 1; t > 0 && j <= i + 1; j++)
					if (j >= 0 && j < WIDTH)
						in.emplace_back(f[at(t - 1, j)]);
				f[at(t, i)] = pool.submit_after(in, [t, i, &grid, at] {
					grid[at(t, i)] = stencil_value(
						t, i, t ? &grid[at(t - 1, 0)] : nullptr);
				});
			}
		heist::when_all(pool, f).get();
		CHECK(grid == want);
	}
	// The same as a task_graph, run several times, and from inside a task.
	std::vector<std::uint64_t> grid(STEPS * WIDTH, 0);
	heist::task_graph g;
	std::vector<heist::task_graph::node> nodes;
	for (int t = 0; t < STEPS; t++)
		for (int i = 0; i < WIDTH; i++) {
			nodes.push_back(g.emplace([t, i, &grid, at] {
				grid[at(t, i)] = stencil_value(t, i, t ? &grid[at(t - 1, 0)] : nullptr);
			}));
			for (int j = i - 1; t > 0 && j <= i + 1; j++)
				if (j >= 0 && j < WIDTH)
					nodes.back().succeed(nodes[at(t - 1, j)]);
		}
	for (int round = 0; round < 3; round++) {
		std::fill(grid.begin(), grid.end(), 0);
		g.run(pool).get();
		CHECK(grid == want);
	}
	std::fill(grid.begin(), grid.end(), 0);
	pool.submit([&g, &pool] { g.run(pool).get(); }).get();
	CHECK(grid == want);
}

// A node that throws: its successors do not run, the others do; the run rethrows it.
// A cycle is refused before anything runs; an edge to another graph's node too.
static void
graph_failures()
{
	heist::pool pool(2);
	heist::task_graph g;
	std::atomic<int> ran[5] = {};
	auto a = g.emplace([&] { ran[0]++; });
	auto b = g.emplace([&] { ran[1]++; throw my_error(7); });
	auto c = g.emplace([&] { ran[2]++; });		// after b
	auto d = g.emplace([&] { ran[3]++; });		// after c
	auto e = g.emplace([&] { ran[4]++; });		// after a
	b.succeed(a);
	c.succeed(b);
	d.succeed(c);
	e.succeed(a);
	auto r = g.run(pool);
	CHECK(error_code(r) == 7);
	CHECK(ran[0] == 1 && ran[1] == 1 && ran[2] == 0 && ran[3] == 0 && ran[4] == 1);
	// A cycle: EDEADLK, nothing runs.
	auto x = g.emplace([&] { ran[0]++; });
	a.succeed(x);
	x.succeed(d);
	try {
		(void)g.run(pool);
		CHECK(false);
	} catch (const std::system_error &err) {
		CHECK(err.code().value() == EDEADLK);
	}
	auto self = heist::task_graph();
	auto s = self.emplace([] {});
	s.succeed(s);
	CHECK_THROWS(std::system_error, self.run(pool));
	pool.wait_idle();
	CHECK(ran[0] == 1);
	// Nodes of another graph, and empty nodes.
	heist::task_graph other;
	auto o = other.emplace([] {});
	CHECK_THROWS(std::system_error, o.succeed(a));
	CHECK_THROWS(std::system_error, heist::task_graph::node().succeed(o));
	// An empty graph is done at once.
	heist::task_graph none;
	none.run(pool).get();
}

// Runs that overlap, and a graph moved or destroyed while a run is in flight: each
// run keeps the callables; node handles follow the graph's move.
static void
graph_lifetime()
{
	static gate g;
	heist::pool pool(2);
	int base = live.load();
	std::atomic<int> ran{0};
	std::vector<heist::future<void>> runs;
	{
		heist::task_graph graph;
		auto first = graph.emplace([&ran, t = std::make_shared<tracked>(1)] {
			g.hold();
			ran++;
		});
		heist::task_graph moved(std::move(graph));
		CHECK(graph.size() == 0 && moved.size() == 1);
		auto second = moved.emplace([&ran] { ran++; });
		second.succeed(first);		// a handle made before the move
		for (int i = 0; i < 3; i++)
			runs.push_back(moved.run(pool));
		CHECK(live.load() == base + 1);
		graph = std::move(moved);	// moved back, then destroyed with runs in flight
		graph.emplace([] {});
	}
	CHECK(live.load() == base + 1);		// the runs keep the callable
	g.open = true;
	for (auto &r : runs)
		r.get();
	CHECK(ran.load() == 6);
	pool.wait_idle();
	CHECK(poll([&] { return live.load() == base; }));
}

// ---- heist::graph (heist_graph underneath) ----------------------------------------

// A stencil of nodes built once and run 20 times, each run giving the serial answer;
// runs queued back to back follow each other (each starts from a zeroed grid that
// the run before it left complete); a graph moved keeps its handles; runs allocate
// nothing per node (the C++ side: one block per run, whatever the node count).
static void
replay_stencil()
{
	const std::vector<std::uint64_t> want = stencil_serial();
	heist::pool pool(2);
	auto at = [](int t, int i) { return static_cast<std::size_t>(t * WIDTH + i); };
	std::vector<std::uint64_t> grid(STEPS * WIDTH, 0);
	heist::graph built;
	std::vector<heist::graph::node> nodes;
	for (int t = 0; t < STEPS; t++)
		for (int i = 0; i < WIDTH; i++) {
			nodes.push_back(built.emplace([t, i, &grid, at] {
				grid[at(t, i)] = stencil_value(t, i, t ? &grid[at(t - 1, 0)] : nullptr);
			}));
			for (int j = i - 1; t > 0 && j <= i + 1; j++)
				if (j >= 0 && j < WIDTH)
					nodes.back().succeed(nodes[at(t - 1, j)]);
		}
	heist::graph g(std::move(built));
	CHECK(g.size() == STEPS * WIDTH && built.size() == 0);
	long before = allocs();
	for (int round = 0; round < 20; round++) {
		std::fill(grid.begin(), grid.end(), 0);
		g.run(pool).get();
		CHECK(grid == want);
	}
	long per_run = (allocs() - before) / 20;
	CHECK(per_run <= 2);	// the run's block (and the list's growth, rarely)
	// From inside a task.
	std::fill(grid.begin(), grid.end(), 0);
	pool.submit([&g, &pool] { g.run(pool).get(); }).get();
	CHECK(grid == want);
	// Runs queued at once: a node that copies the last row out sees it complete.
	std::vector<std::uint64_t> last(WIDTH, 0);
	std::atomic<int> complete{0};
	heist::graph tail;
	auto whole = tail.subgraph(g);
	tail.emplace([&] {
		bool ok = std::equal(grid.begin() + at(STEPS - 1, 0), grid.end(),
				     want.begin() + at(STEPS - 1, 0));
		complete += ok;
		std::fill(grid.begin(), grid.end(), 0);
	}).succeed(whole);
	std::vector<heist::future<void>> runs;
	for (int round = 0; round < 5; round++)
		runs.push_back(tail.run(pool));
	for (auto &r : runs)
		r.get();
	CHECK(complete.load() == 5);
	pool.wait_idle();
}

// A node that throws: its run's get() rethrows it, the nodes after it did not run,
// the others did; the next run runs every node. With runs queued back to back, each
// future gets its own run's exception, whichever is read first.
static void
replay_exceptions()
{
	heist::pool pool(2);
	std::atomic<int> ran[4] = {};
	std::atomic<int> throw_on{1};	// the run (1, 2, ...) whose b throws; 0: none
	std::atomic<int> run_no{0};
	heist::graph g;
	auto a = g.emplace([&] { ran[0]++; run_no++; });
	auto b = g.emplace([&] {
		ran[1]++;
		if (run_no.load() == throw_on.load())
			throw my_error(run_no.load());
	});
	auto c = g.emplace([&] { ran[2]++; });	// after b
	auto d = g.emplace([&] { ran[3]++; });	// after c
	a.precede(b);
	b.precede(c);
	c.precede(d);
	auto r = g.run(pool);
	CHECK(error_code(r) == 1);
	CHECK(ran[0] == 1 && ran[1] == 1 && ran[2] == 0 && ran[3] == 0);
	g.run(pool).get();
	CHECK(ran[0] == 2 && ran[1] == 2 && ran[2] == 1 && ran[3] == 1);
	// Queued together, read in either order: runs 3 (throws), 4, 5 (throws), 6.
	for (int k = 0; k < 10 * SCALE; k++) {
		int first = run_no.load() + 1;
		throw_on = first;
		auto r1 = g.run(pool);
		auto r2 = g.run(pool);
		auto r3 = g.run(pool);
		r3.wait();		// all three are done: r1's error is still r1's
		CHECK(error_code(r3) == -1);
		CHECK(error_code(r1) == first);
		CHECK(error_code(r2) == -1);
		throw_on = first + 6;	// r7
		auto r4 = g.run(pool);
		auto r5 = g.run(pool);
		auto r6 = g.run(pool);
		r6.wait();
		CHECK(error_code(r4) == -1 && error_code(r5) == -1);
		auto r7 = g.run(pool);	// throws
		(void)g.run(pool);	// dropped before it ends
		r7.wait();
		CHECK(error_code(r6) == -1);
		CHECK(error_code(r7) == first + 6);
		pool.wait_idle();	// the dropped run too, before run_no is read
	}
	// An exception as an input of a dependent task (future::hold on a graph run).
	throw_on = run_no.load() + 1;
	auto failed = g.run(pool);
	auto dep = pool.submit_after({failed}, [] { return 1; });
	CHECK(error_code(dep) == throw_on.load());
	CHECK(error_code(failed) == throw_on.load());
	pool.wait_idle();
}

// A loop node fills a range; a subgraph node runs another graph inside the run; an
// exception in the subgraph's node (or in a loop body) is the outer run's.
static void
replay_loop_and_subgraph()
{
	heist::pool pool(2);
	enum { N = 10000 };
	std::vector<int> v(N, 0);
	std::atomic<long> sum{0};
	std::atomic<int> inner_ran{0}, after_ran{0};
	std::atomic<bool> inner_throws{false}, loop_throws{false};
	heist::graph inner;
	auto i1 = inner.emplace([&] { inner_ran++; });
	auto i2 = inner.emplace([&] {
		inner_ran++;
		if (inner_throws.load())
			throw my_error(42);
	});
	i1.precede(i2);
	heist::graph outer;
	auto fill = outer.loop(0, N, [&](std::size_t b, std::size_t e) {
		if (loop_throws.load() && b <= N / 2 && N / 2 < e)
			throw my_error(43);
		for (std::size_t i = b; i < e; i++)
			v[i] = static_cast<int>(i);
	}, 64);
	auto sub = outer.subgraph(inner);
	auto total = outer.emplace([&] {
		long s = 0;
		for (int x : v)
			s += x;
		sum = s;
		after_ran++;
	});
	fill.precede(sub);
	sub.precede(total);
	for (int round = 0; round < 5; round++) {
		std::fill(v.begin(), v.end(), 0);
		outer.run(pool).get();
		CHECK(sum.load() == static_cast<long>(N) * (N - 1) / 2);
	}
	CHECK(inner_ran.load() == 10 && after_ran.load() == 5);
	// The subgraph's node throws: the outer run rethrows it, total does not run.
	inner_throws = true;
	auto r = outer.run(pool);
	CHECK(error_code(r) == 42);
	CHECK(inner_ran.load() == 12 && after_ran.load() == 5);
	// The inner graph on its own reports its own exception, and then works again.
	auto alone = inner.run(pool);
	CHECK(error_code(alone) == 42);
	inner_throws = false;
	inner.run(pool).get();
	CHECK(inner_ran.load() == 16);
	// A loop body throws: the rest of the run does not run.
	loop_throws = true;
	auto l = outer.run(pool);
	CHECK(error_code(l) == 43);
	CHECK(inner_ran.load() == 16 && after_ran.load() == 5);
	loop_throws = false;
	outer.run(pool).get();
	CHECK(after_ran.load() == 6);
	// Bad arguments: a reversed range, a graph holding itself, either way round.
	CHECK_THROWS(std::system_error, outer.loop(5, 4, [](std::size_t, std::size_t) {}));
	CHECK_THROWS(std::system_error, outer.subgraph(outer));
	CHECK_THROWS(std::system_error, inner.subgraph(outer));
	outer.run(pool).get();	// the failed adds left nothing that runs
	CHECK(after_ran.load() == 7);
}

// Cancelled by its token (while a node runs, or before the run starts) or by its
// future: get() throws cancelled_error and the nodes not started did not run;
// heist::cancelled() is true in the node that runs. The next run runs every node.
static void
replay_cancel()
{
	static gate hold;
	heist::pool pool(2);
	std::atomic<int> first{0}, second{0};
	std::atomic<bool> saw_cancel{false};
	heist::graph g;
	auto a = g.emplace([&] {
		first++;
		hold.hold();
		saw_cancel = heist::cancelled();
	});
	auto b = g.emplace([&] { second++; });
	a.precede(b);
	heist::cancel_token token;
	auto r = g.run(pool, token);
	CHECK(poll([&] { return hold.entered.load() == 1; }));
	token.request();
	hold.open = true;
	CHECK_THROWS(heist::cancelled_error, r.get());
	CHECK(first == 1 && second == 0 && saw_cancel.load());
	// A token cancelled already: nothing runs.
	auto none = g.run(pool, token);
	CHECK_THROWS(heist::cancelled_error, none.get());
	CHECK(first == 1 && second == 0);
	// The future's own cancel, while a run before it holds the graph.
	hold.open = false;
	auto busy = g.run(pool);
	CHECK(poll([&] { return hold.entered.load() == 2; }));
	auto queued = g.run(pool);
	queued.cancel();
	hold.open = true;
	busy.get();
	CHECK_THROWS(heist::cancelled_error, queued.get());
	CHECK(first == 2 && second == 1);
	g.run(pool).get();
	CHECK(first == 3 && second == 2);
	heist::cancel_token moved(std::move(token));	// token is empty now
	CHECK_THROWS(std::system_error, g.run(pool, token));
}

// A cycle: EDEADLK and nothing runs; through a subgraph too. Adding a node or an
// edge while a run is pending: EBUSY; once it ended, the graph can be changed.
static void
replay_errors()
{
	static gate hold;
	heist::pool pool(2);
	std::atomic<int> ran{0};
	heist::graph g;
	auto a = g.emplace([&] { ran++; });
	auto b = g.emplace([&] { ran++; });
	auto c = g.emplace([&] { ran++; });
	a.precede(b);
	b.precede(c);
	c.precede(a);
	try {
		(void)g.run(pool);
		CHECK(false);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EDEADLK);
	}
	heist::graph holder;
	holder.subgraph(g);
	CHECK_THROWS(std::system_error, holder.run(pool));
	pool.wait_idle();
	CHECK(ran.load() == 0);
	// Nodes of another graph, and empty nodes.
	heist::graph other;
	auto o = other.emplace([] {});
	CHECK_THROWS(std::system_error, o.succeed(a));
	CHECK_THROWS(std::system_error, heist::graph::node().precede(o));
	// EBUSY while a run is pending.
	heist::graph busy;
	auto h = busy.emplace([] { hold.hold(); });
	auto r = busy.run(pool);
	CHECK(poll([] { return hold.entered.load() == 1; }));
	try {
		busy.emplace([] {});
		CHECK(false);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EBUSY);
	}
	CHECK_THROWS(std::system_error, busy.loop(0, 1, [](std::size_t, std::size_t) {}));
	CHECK_THROWS(std::system_error, busy.subgraph(other));
	CHECK_THROWS(std::system_error, h.precede(h));
	CHECK(busy.size() == 1);
	hold.open = true;
	r.get();
	auto later = busy.emplace([&] { ran++; });
	h.precede(later);
	busy.run(pool).get();
	CHECK(ran.load() == 1);
	// An empty graph is done at once; a moved-from one starts again empty.
	heist::graph none;
	none.run(pool).get();
	heist::graph taken(std::move(none));
	none.run(pool).get();
	CHECK(none.size() == 0);
}

// ---- main ------------------------------------------------------------------------

struct test {
	const char *name;
	void (*fn)();
};

#define T(f) {#f, f}
static const test tests[] = {
	T(after_runs_after_inputs),
	T(after_inputs_stay_usable),
	T(after_exceptions_propagate),
	T(after_cancellation),
	T(after_many_inputs),
	T(after_from_a_task),
	T(after_pool_gone),
	T(after_bad_input),
	T(after_allocations),
	T(when_all_forms),
	T(when_all_cancelled),
	T(diamond),
	T(stencil),
	T(graph_failures),
	T(graph_lifetime),
	T(replay_stencil),
	T(replay_exceptions),
	T(replay_loop_and_subgraph),
	T(replay_cancel),
	T(replay_errors),
};

int
main()
{
	const char *filter = std::getenv("TEST_FILTER");
	int passed = 0;
	for (const test &t : tests) {
		if (filter && !std::strstr(t.name, filter))
			continue;
		std::printf("[ RUN      ] %s\n", t.name);
		std::fflush(stdout);
		t.fn();
		std::printf("[       OK ] %s\n", t.name);
		passed++;
	}
	// Nothing left in the side table once every future is gone.
	{
		auto &s = heist::detail::sides();
		std::lock_guard<std::mutex> l(s.lock);
		CHECK(s.map.empty());
	}
	CHECK(live.load() == 0);
	std::printf("%d passed, 0 failed\n", passed);
	return 0;
}
