/* SPDX-License-Identifier: MIT */
// test-cxx-api.cpp - the C++ API of heist.hpp: pools, submit and post (inline and heap
// jobs, move-only callables, void and non-int results, exceptions), futures (get,
// wait, wait_for, ready, cancel, then), promises, cancellation tokens, for_each,
// reduce, join, task_group, run, and the heap allocations each makes (a replaced
// operator new counts them). Plain checks that print the line and abort, in release
// builds too, so they may run on any thread (a body inside pool.run, say). Waits poll
// a condition with a bound that only a broken library reaches; nothing passes or fails
// because something was fast. TEST_FILTER=word runs the tests whose names contain it.
#include <heist/heist.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
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

// expr must throw E (and pred(e) hold for the exception caught).
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

// ---- heap allocations through operator new ---------------------------------------
// Everything heist.hpp allocates goes through operator new; the C library allocates
// with malloc (its record caches, not counted here: their steady state allocates
// nothing, which the C tests check). Counted on every thread.

static std::atomic<long> news{0};

// None inlined: gcc would see free() on operator new's pointer, or operator delete on
// malloc's, and warn (-Wmismatched-new-delete).
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

// Holds a worker until opened: a task that runs gate.hold() naps, runs nothing else.
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

// ---- pools -----------------------------------------------------------------------

static void
pool_constructors()
{
	heist::pool a(2);
	CHECK(a.size() == 2);
	heist::config cfg;
	CHECK(cfg.threads == 0 && cfg.name == nullptr && cfg.stack_size == 0);
	cfg.threads = 1;
	cfg.name = "cxx";
	heist::pool b(cfg);
	CHECK(b.size() == 1);
	heist::pool c;	// one worker per CPU
	CHECK(c.size() >= 1);
	CHECK(b.submit([] { return heist_worker_index(); }).get() == 0);

	cfg.threads = HEIST_MAX_THREADS + 1;
	CHECK_THROWS(std::system_error, heist::pool(cfg));
	try {
		heist::pool bad(cfg);
		CHECK(false);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL);
	}
}

static void
pool_move()
{
	heist::pool a(1);
	heist_pool *raw = a.native_handle();
	heist::pool b(std::move(a));
	CHECK(b.native_handle() == raw && a.native_handle() == nullptr);
	CHECK(a.size() == 0);
	CHECK(b.submit([] { return 4; }).get() == 4);
	// A moved-from pool's operations fail with EINVAL.
	try {
		a.post([] {});
		CHECK(false);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL);
	}
	heist::pool c(2);
	c = std::move(b);	// destroys c's pool, takes b's
	CHECK(c.native_handle() == raw && c.size() == 1);
	CHECK(c.submit([] { return 5; }).get() == 5);
}

// The destructor drains: every accepted task runs, every future is satisfied, and
// futures outlive the pool.
static void
pool_destructor_drains()
{
	static gate g;
	std::atomic<int> ran{0};
	std::vector<heist::future<int>> fs;
	std::thread opener;
	{
		heist::pool p(1);
		auto held = occupy(p, g);
		for (int i = 0; i < 100; i++)
			fs.push_back(p.submit([&ran, i] {
				ran++;
				return i;
			}));
		for (int i = 0; i < 100; i++)
			p.post([&ran] { ran++; });
		CHECK(ran.load() == 0);
		opener = std::thread([] {
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
			g.open = true;
		});
	}	// ~pool waits for the gate, then runs the 200 queued tasks
	opener.join();
	CHECK(ran.load() == 200);
	for (int i = 0; i < 100; i++) {
		CHECK(fs[i].ready());
		CHECK(fs[i].get() == i);
	}
}

// A submit after destruction began gets ESHUTDOWN as a std::system_error.
static void
pool_shutdown_error()
{
	static gate g;
	heist_pool *raw = nullptr;
	heist::config cfg;
	cfg.threads = 1;
	CHECK(heist_pool_create(&raw, &cfg) == 0);
	heist::pool_ref ref(raw);
	auto held = occupy(ref, g);
	std::thread destroyer([raw] { heist_pool_destroy(raw); });
	std::atomic<int> ran{0};
	int accepted = 0;
	bool refused = poll([&] {
		try {
			ref.post([&ran] { ran++; });
			accepted++;
			return false;
		} catch (const std::system_error &e) {
			CHECK(e.code().value() == ESHUTDOWN);
			return true;
		}
	});
	CHECK(refused);
	g.open = true;
	destroyer.join();
	CHECK(ran.load() == accepted);	// everything accepted ran in the drain
	held.get();
}

static void
pool_wait_idle()
{
	heist::pool p(2);
	std::atomic<int> ran{0};
	for (int i = 0; i < 50; i++)
		p.post([&ran] { ran++; });
	p.wait_idle();
	CHECK(ran.load() == 50);
	// From one of the pool's own tasks it would wait for itself.
	std::atomic<int> code{0};
	p.submit([&p, &code] {
		try {
			p.wait_idle();
		} catch (const std::system_error &e) {
			code = e.code().value();
		}
	}).get();
	CHECK(code.load() == EDEADLK);
}

// pool_ref works on a pool that C code owns.
static void
pool_ref_over_c()
{
	heist_pool *raw = nullptr;
	CHECK(heist_pool_create(&raw, nullptr) == 0);
	{
		heist::pool_ref r(raw);
		CHECK(r.size() == heist_pool_size(raw));
		CHECK(r.submit([](int x) { return x * 2; }, 21).get() == 42);
		CHECK(r.run([] { return 7; }) == 7);
	}
	heist_pool_destroy(raw);
}

// ---- submit ----------------------------------------------------------------------

// The example: no heap allocation for a small trivially copyable callable.
static void
submit_example_no_allocation()
{
	heist::pool pool(2);
	auto add = [](int a, int b) { return a + b; };
	static_assert(heist::submit_is_inline<decltype(add), int, int>);
	{
		auto f = pool.submit(add, 2, 3);	// warm the record caches
		CHECK(f.get() == 5);
	}
	long before = allocs();
	for (int i = 0; i < 100; i++) {
		auto f = pool.submit([](int a, int b) { return a + b; }, i, 3);
		int r = f.get();
		CHECK(r == i + 3);
	}
	CHECK(allocs() == before);
}

static void
submit_void_results()
{
	heist::pool pool(2);
	std::atomic<int> ran{0};
	auto f = pool.submit([&ran] { ran++; });
	static_assert(std::is_same_v<decltype(f), heist::future<void>>);
	f.get();
	CHECK(ran.load() == 1);
	CHECK(!f.valid());
	// noexcept void callables need no ticket: still inline, still allocation-free
	auto nx = [&ran]() noexcept { ran++; };
	static_assert(heist::submit_is_inline<decltype(nx)>);
	long before = allocs();
	for (int i = 0; i < 50; i++)
		pool.submit(nx).get();
	CHECK(allocs() == before);
	CHECK(ran.load() == 51);
	// A void task that throws.
	auto g = pool.submit([] { throw my_error(3); });
	try {
		g.get();
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 3);
	}
}

// Exceptions thrown by tasks are rethrown by get(), their type and contents intact,
// inline and heap jobs alike; the side table holds nothing afterwards.
static void
submit_exceptions()
{
	heist::pool pool(2);
	auto f = pool.submit([](int c) -> int { throw my_error(c); }, 9);
	try {
		f.get();
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 9);
	}
	auto g = pool.submit([]() -> long { throw 42; });	// heap job (long result)
	try {
		g.get();
		CHECK(false);
	} catch (int x) {
		CHECK(x == 42);
	}
	auto h = pool.submit([] { throw std::string("text"); return 1; });
	try {
		h.get();
		CHECK(false);
	} catch (const std::string &s) {
		CHECK(s == "text");
	}
	// Many at once, from both workers.
	std::vector<heist::future<int>> fs;
	for (int i = 0; i < 200; i++)
		fs.push_back(pool.submit([i] {
			if (i % 2)
				throw my_error(i);
			return i;
		}));
	for (int i = 0; i < 200; i++) {
		if (i % 2 == 0) {
			CHECK(fs[i].get() == i);
			continue;
		}
		try {
			fs[i].get();
			CHECK(false);
		} catch (const my_error &e) {
			CHECK(e.code == i);
		}
	}
	// Dropped futures of throwing tasks leave nothing behind.
	for (int i = 0; i < 100; i++)
		(void)pool.submit([] { throw my_error(0); });
	pool.wait_idle();
	CHECK(poll([] {
		auto &s = heist::detail::sides();
		std::lock_guard<std::mutex> l(s.lock);
		return s.map.empty();
	}));
}

// Results that are not int-sized, references, and ints that collide with the codes
// the int channel reserves.
static void
submit_result_types()
{
	heist::pool pool(2);
	CHECK(pool.submit([] { return std::string(100, 'x'); }).get() == std::string(100, 'x'));
	CHECK(pool.submit([] { return 2.5; }).get() == 2.5);
	CHECK(pool.submit([] { return 1LL << 40; }).get() == 1LL << 40);
	CHECK(pool.submit([] { return std::vector<int>{1, 2, 3}; }).get().size() == 3);
	CHECK(pool.submit([] { return true; }).get());
	CHECK(pool.submit([] { return 'c'; }).get() == 'c');
	CHECK(pool.submit([] { return -1.5f; }).get() == -1.5f);
	static int cell = 5;
	int &ref = pool.submit([]() -> int & { return cell; }).get();
	CHECK(&ref == &cell);
	for (int v : {ECANCELED, INT_MIN, INT_MIN + 1, INT_MAX, 0, -1}) {
		static_assert(heist::submit_is_inline<int (*)(int), int>);
		CHECK(pool.submit([](int x) { return x; }, v).get() == v);
	}
	auto u = pool.submit([] { return std::make_unique<int>(11); });	// move-only result
	std::unique_ptr<int> p = u.get();
	CHECK(*p == 11);
}

// Move-only callables and arguments: moved into the task, ended once, on the worker.
static void
submit_move_only()
{
	heist::pool pool(2);
	int base = live.load();
	{
		auto p = std::make_unique<int>(7);
		auto fn = [q = std::move(p)] { return *q + 1; };
		static_assert(!heist::submit_is_inline<decltype(fn)>);
		auto f = pool.submit(std::move(fn));
		CHECK(f.get() == 8);
		CHECK(p == nullptr);
	}
	{
		tracked t(3);
		auto f = pool.submit([](tracked a, std::unique_ptr<int> b) { return a.v * *b; },
				     std::move(t), std::make_unique<int>(5));
		CHECK(f.get() == 15);
	}
	CHECK(live.load() == base);	// the callable and its arguments ended
	{
		// Dropped before the task ran: it still runs, and everything ends once.
		static gate g;
		heist::pool one(1);
		auto held = occupy(one, g);
		std::atomic<int> ran{0};
		for (int i = 0; i < 10; i++)
			(void)one.submit([t = tracked(i), &ran] { ran += t.v >= 0; });
		CHECK(live.load() == base + 10);
		g.open = true;
		held.get();
		one.wait_idle();
		CHECK(ran.load() == 10);
		CHECK(poll([&] { return live.load() == base; }));
	}
	// The heap path takes one allocation per submit (the block).
	auto big = [a = std::array<long long, 8>{}] { return a[0]; };
	static_assert(!heist::submit_is_inline<decltype(big)>);
	pool.submit(big).get();
	long before = allocs();
	pool.submit(big).get();
	CHECK(allocs() - before == 1);
}

// ---- futures ---------------------------------------------------------------------

static void
future_wait_ready_wait_for()
{
	static gate g;
	heist::pool pool(1);
	heist::future<int> empty;
	CHECK(!empty.valid() && !empty.ready());
	CHECK_THROWS(std::future_error, empty.get());
	auto held = occupy(pool, g);
	auto f = pool.submit([] { return 3; });
	CHECK(!f.ready());
	CHECK(f.wait_for(std::chrono::milliseconds(5)) == std::future_status::timeout);
	CHECK(f.wait_for(std::chrono::seconds(-1)) == std::future_status::timeout);
	g.open = true;
	CHECK(f.wait_for(std::chrono::hours(24 * 365 * 1000)) == std::future_status::ready);
	CHECK(f.ready());
	f.wait();
	CHECK(f.valid());
	heist::future<int> moved(std::move(f));
	CHECK(!f.valid() && moved.valid());
	CHECK(moved.get() == 3);
	CHECK(!moved.valid());
	CHECK_THROWS(std::future_error, moved.get());
	held.get();
}

// cancel() before the task starts: it never runs, get() throws cancelled_error, and
// what it held (a heap callable, a token reference) ends at once.
static void
future_cancel_queued()
{
	static gate g;
	heist::pool pool(1);
	int base = live.load();
	auto held = occupy(pool, g);
	std::atomic<int> ran{0};
	auto a = pool.submit([&ran] { ran++; return 1; });			// inline
	auto b = pool.submit([&ran, t = tracked(1)] { ran++; return t.v; });	// heap
	heist::cancel_token tok;
	auto c = pool.submit_cancellable(tok, [&ran] { ran++; });		// inline + token
	auto d = pool.submit([&ran] { ran++; return 4; });
	CHECK(live.load() == base + 1);
	a.cancel();
	b.cancel();
	c.cancel();
	CHECK(live.load() == base);	// b's callable ended at the cancel
	CHECK(a.ready() && b.ready() && c.ready());
	g.open = true;
	CHECK(d.get() == 4);
	CHECK_THROWS(heist::cancelled_error, a.get());
	CHECK_THROWS(heist::cancelled_error, b.get());
	CHECK_THROWS(heist::cancelled_error, c.get());
	CHECK(ran.load() == 1);
	try {
		pool.submit([] {}).get();
		heist::future<void> e = pool.submit([] {});
		e.wait();
		e.cancel();	// done: nothing changes
		e.get();
	} catch (...) {
		CHECK(false);
	}
	held.get();
}

// cancel() while it runs: heist::cancelled() turns true inside, its value is delivered.
static void
future_cancel_running()
{
	heist::pool pool(1);
	std::atomic<bool> started{false};
	auto f = pool.submit([&started] {
		started = true;
		while (!heist::cancelled())
			nap();
		return 17;
	});
	CHECK(poll([&] { return started.load(); }));
	CHECK(!heist::cancelled());	// not in a task
	f.cancel();
	CHECK(f.get() == 17);
}

static void
future_then()
{
	heist::pool pool(2);
	// value form, chained, across result kinds
	auto f = pool.submit([] { return 20; })
			 .then([](int x) { return x + 1; })
			 .then([](int x) { return std::to_string(x); })
			 .then([](std::string s) { return s + "!"; });
	CHECK(f.get() == "21!");
	// void antecedent, void continuation
	std::atomic<int> ran{0};
	auto v = pool.submit([&ran] { ran++; }).then([&ran] { ran += 10; });
	v.get();
	CHECK(ran.load() == 11);
	// future form: sees the antecedent's exception itself
	auto w = pool.submit([]() -> int { throw my_error(5); }).then([](heist::future<int> a) {
		try {
			return a.get();
		} catch (const my_error &e) {
			return -e.code;
		}
	});
	CHECK(w.get() == -5);
	// value form: an exception skips the continuation
	std::atomic<int> skipped{0};
	auto x = pool.submit([]() -> int { throw my_error(6); }).then([&skipped](int) {
		skipped++;
		return 0;
	});
	try {
		x.get();
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 6);
	}
	CHECK(skipped.load() == 0);
	// a continuation that throws
	auto y = pool.submit([] { return 1; }).then([](int) -> int { throw my_error(7); });
	CHECK_THROWS(my_error, y.get());
	// then() empties its future; on an empty one it throws
	auto z = pool.submit([] { return 1; });
	auto z2 = z.then([](int a) { return a; });
	CHECK(!z.valid());
	CHECK_THROWS(std::future_error, z.then([](int a) { return a; }));
	CHECK(z2.get() == 1);
	// dropped continuations still run, and end what they hold
	int base = live.load();
	for (int i = 0; i < 20; i++)
		(void)pool.submit([] { return 1; }).then([t = tracked(2), &ran](int a) {
			ran += a * t.v;
		});
	pool.wait_idle();
	CHECK(poll([&] { return live.load() == base; }));
	CHECK(ran.load() == 11 + 40);
}

// A task cancelled before it ran: its continuation never runs, and gives cancelled_error.
static void
future_then_cancelled()
{
	static gate g;
	heist::pool pool(1);
	auto held = occupy(pool, g);
	int base = live.load();
	std::atomic<int> ran{0};
	auto a = pool.submit([] { return 1; });
	a.cancel();
	auto c = a.then([&ran, t = tracked(0)](int) { ran++; });
	auto tok = heist::cancel_token();
	auto b = pool.submit_cancellable(tok, [] { return 2; });
	std::atomic<int> saw_cancel{0};
	auto d = b.then([&ran, &saw_cancel](heist::future<int> x) {
		ran++;
		try {
			x.get();
		} catch (const heist::cancelled_error &) {
			saw_cancel++;
		}
	});
	tok.request();
	g.open = true;
	CHECK_THROWS(heist::cancelled_error, c.get());
	d.get();	// token-cancelled: the future form runs, and sees the cancellation
	CHECK(ran.load() == 1 && saw_cancel.load() == 1);
	CHECK(live.load() == base);
	held.get();
}

// then() on a done future whose pool is gone: ESHUTDOWN, the future unchanged.
static void
future_then_after_pool()
{
	heist::future<int> f;
	{
		heist::pool pool(1);
		f = pool.submit([] { return 3; });
		f.wait();
	}
	try {
		(void)f.then([](int x) { return x; });
		CHECK(false);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == ESHUTDOWN);
	}
	CHECK(f.valid() && f.get() == 3);
}

// ---- promises --------------------------------------------------------------------

// A value whose copy throws on demand: a set that throws leaves the promise unset.
struct fragile {
	int v;
	bool bomb;
	fragile(int x, bool b) : v(x), bomb(b) {}
	fragile(const fragile &o) : v(o.v), bomb(o.bomb)
	{
		if (bomb)
			throw my_error(v);
	}
	fragile(fragile &&o) noexcept : v(o.v), bomb(false) {}
	fragile &operator=(const fragile &) = delete;
	fragile &operator=(fragile &&) = delete;
};

// set_value from a std::thread wakes a get() that waits, and publishes what the
// setter wrote before it; from a task of a one-worker pool too (a spare stands in).
static void
promise_set_from_thread()
{
	heist::pool pool(1);
	for (int i = 0; i < 20 * SCALE; i++) {
		heist::promise<std::string> p(pool);
		auto f = p.get_future();
		static_assert(std::is_same_v<decltype(f), heist::future<std::string>>);
		CHECK(f.valid() && !f.ready());
		int written = 0;	// plain: the set publishes it
		std::thread t([&p, &written, i] {
			if (i % 2)
				nap();	// now and then get() is waiting already
			written = i + 1;
			p.set_value(std::to_string(i));
		});
		CHECK(f.get() == std::to_string(i));
		CHECK(written == i + 1);
		t.join();
	}
	// Waited for on a worker: the only worker waits, a later task sets it. The
	// waiter may return before set_value does: p ends after the setter's future.
	heist::promise<int> p(pool);
	auto waiter = pool.submit([f = p.get_future()]() mutable { return f.get() + 1; });
	auto setter = pool.submit([&p] { p.set_value(41); });
	CHECK(waiter.get() == 42);
	setter.get();
	// Set before anyone waits: kept.
	heist::promise<int> q(pool);
	q.set_value(ECANCELED);	// a code the int channel reserves: no matter here
	auto g = q.get_future();
	CHECK(g.ready());
	CHECK(g.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
	CHECK(g.get() == ECANCELED);
}

// set_exception: get() rethrows it; a null one, a second set and a throwing copy are
// refused, each with the promise as it was.
static void
promise_set_exception()
{
	heist::pool pool(1);
	heist::promise<int> p(pool);
	auto f = p.get_future();
	try {
		p.set_exception(nullptr);
		CHECK(false);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL);
	}
	CHECK(!f.ready());
	std::thread t([&p] { p.set_exception(std::make_exception_ptr(my_error(3))); });
	try {
		f.get();
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 3);
	}
	t.join();
	try {
		p.set_value(1);
		CHECK(false);
	} catch (const std::future_error &e) {
		CHECK(e.code() == std::future_errc::promise_already_satisfied);
	}
	CHECK_THROWS(std::future_error, p.set_exception(std::make_exception_ptr(1)));
	try {
		(void)p.get_future();
		CHECK(false);
	} catch (const std::future_error &e) {
		CHECK(e.code() == std::future_errc::future_already_retrieved);
	}
	// A copy that throws: the caller gets the exception, the promise stays unset.
	heist::promise<fragile> r(pool);
	auto g = r.get_future();
	fragile bad(7, true);
	CHECK_THROWS(my_error, r.set_value(bad));
	CHECK(!g.ready());
	r.set_value(fragile(8, false));
	CHECK(g.get().v == 8);
	// Two setters at once: one wins, the other is refused.
	for (int i = 0; i < 50 * SCALE; i++) {
		heist::promise<int> two(pool);
		auto h = two.get_future();
		std::atomic<int> won{0}, refused{0};
		auto set = [&](int v) {
			try {
				two.set_value(v);
				won++;
			} catch (const std::future_error &) {
				refused++;
			}
		};
		std::thread a(set, 1), b(set, 2);
		int v = h.get();
		a.join();
		b.join();
		CHECK(won.load() == 1 && refused.load() == 1);
		CHECK(v == 1 || v == 2);
	}
}

// A promise destroyed unset is broken: get() throws cancelled_error, also to a thread
// waiting in it already; what it held ends.
static void
promise_broken()
{
	heist::pool pool(1);
	heist::future<int> f;
	{
		heist::promise<int> p(pool);
		f = p.get_future();
	}
	CHECK(f.ready());
	CHECK_THROWS(heist::cancelled_error, f.get());
	// Broken while a thread waits in get().
	auto p = std::make_unique<heist::promise<long>>(pool);
	auto g = p->get_future();
	std::atomic<bool> threw{false};
	std::thread t([&g, &threw] {
		try {
			g.get();
		} catch (const heist::cancelled_error &e) {
			threw = e.code().value() == ECANCELED;
		}
	});
	nap();
	p.reset();
	t.join();
	CHECK(threw.load());
	// Never asked for its future, set or not: nothing leaks (ASan, live).
	int base = live.load();
	{
		heist::promise<tracked> unset(pool);
		heist::promise<tracked> set(pool);
		set.set_value(tracked(1));
		CHECK(live.load() == base + 1);
	}
	CHECK(live.load() == base);
	// Move-assigning onto an unset promise breaks it.
	heist::promise<int> a(pool), b(pool);
	auto fa = a.get_future(), fb = b.get_future();
	a = std::move(b);
	CHECK_THROWS(heist::cancelled_error, fa.get());
	a.set_value(5);
	CHECK(fb.get() == 5);
}

// The void form, and the reference form.
static void
promise_void_and_reference()
{
	heist::pool pool(1);
	heist::promise<void> p(pool);
	auto f = p.get_future();
	static_assert(std::is_same_v<decltype(f), heist::future<void>>);
	std::thread t([&p] { p.set_value(); });
	f.get();
	t.join();
	CHECK_THROWS(std::future_error, p.set_value());
	heist::promise<void> e(pool);
	auto g = e.get_future();
	e.set_exception(std::make_exception_ptr(my_error(4)));
	CHECK_THROWS(my_error, g.get());
	{
		heist::promise<void> broken(pool);
		g = broken.get_future();
	}
	CHECK_THROWS(heist::cancelled_error, g.get());
	static int cell = 9;
	heist::promise<int &> r(pool);
	auto h = r.get_future();
	r.set_value(cell);
	CHECK(&h.get() == &cell);
}

// then() on a promise's future runs on the pool once the promise is set, not before;
// when_all and submit_after take the future as an input; a broken promise ends them
// unrun.
static void
promise_then_and_when_all()
{
	heist::pool pool(2);
	heist::promise<int> p(pool);
	std::atomic<int> ran{0};
	auto c = p.get_future().then([&ran](int x) {
		ran++;
		return x + 1;
	});
	for (int i = 0; i < 10; i++)
		nap();
	CHECK(ran.load() == 0 && !c.ready());	// nothing runs before the set
	std::thread t([&p] { p.set_value(41); });
	CHECK(c.get() == 42);
	CHECK(ran.load() == 1);
	t.join();
	// The future form sees the exception.
	heist::promise<int> q(pool);
	auto d = q.get_future().then([](heist::future<int> a) {
		try {
			return a.get();
		} catch (const my_error &e) {
			return -e.code;
		}
	});
	q.set_exception(std::make_exception_ptr(my_error(6)));
	CHECK(d.get() == -6);
	// A broken promise: its continuations never run, in either form.
	auto e = heist::promise<int>(pool).get_future().then([&ran](int) { ran++; });
	CHECK_THROWS(heist::cancelled_error, e.get());
	auto e2 = heist::promise<int>(pool).get_future().then([&ran](heist::future<int>) {
		ran++;
	});
	CHECK_THROWS(heist::cancelled_error, e2.get());
	CHECK(ran.load() == 1);
	// Inputs of dependent tasks, not consumed.
	heist::promise<int> a(pool);
	heist::promise<void> b(pool);
	auto fa = a.get_future();
	auto fb = b.get_future();
	auto after = pool.submit_after({fa, fb}, [] { return 1; });
	auto all = heist::when_all(pool, fa, fb, pool.submit([] { return 1; }));
	CHECK(!all.ready());
	std::thread ta([&a] { a.set_value(3); }), tb([&b] { b.set_value(); });
	all.get();
	CHECK(after.get() == 1);
	CHECK(fa.get() == 3);
	fb.get();
	ta.join();
	tb.join();
	heist::promise<int> gone(pool);
	auto fg = gone.get_future();
	auto waits = heist::when_all(pool, fg);
	gone = heist::promise<int>(pool);	// breaks the first
	CHECK_THROWS(heist::cancelled_error, waits.get());
	CHECK_THROWS(heist::cancelled_error, fg.get());
}

// Moved from: empty, every call throws no_state, its destruction does nothing; the
// promise it moved to goes on. A cancelled future takes a later set without a word.
static void
promise_moved_from_and_cancel()
{
	heist::pool pool(1);
	{
		// An empty pool: EINVAL. One block per promise, its future's included.
		heist::pool moved(std::move(pool));
		CHECK_THROWS(std::system_error, heist::promise<int>(pool));
		long before = allocs();
		heist::promise<std::string> s(moved);
		auto fs = s.get_future();
		CHECK(allocs() - before == 1);
		pool = std::move(moved);
	}
	heist::promise<int> a(pool);
	auto f = a.get_future();
	heist::promise<int> b(std::move(a));
	try {
		a.set_value(1);
		CHECK(false);
	} catch (const std::future_error &e) {
		CHECK(e.code() == std::future_errc::no_state);
	}
	CHECK_THROWS(std::future_error, a.set_exception(std::make_exception_ptr(1)));
	CHECK_THROWS(std::future_error, a.set_exception(nullptr));
	CHECK_THROWS(std::future_error, (void)a.get_future());
	{
		heist::promise<int> c(std::move(b));
		swap(b, c);	// b holds it again, c is empty
		heist::promise<int> d(std::move(c));	// empty too
	}
	CHECK(!f.ready());
	b.set_value(2);
	CHECK(f.get() == 2);
	heist::promise<int> e(pool);
	a = std::move(e);	// an empty promise takes one
	auto g = a.get_future();
	a.set_value(3);
	CHECK(g.get() == 3);
	// The consumer gives up first.
	int base = live.load();
	heist::promise<tracked> p(pool);
	auto h = p.get_future();
	h.cancel();
	CHECK(h.ready());
	p.set_value(tracked(4));	// accepted, dropped
	CHECK_THROWS(std::future_error, p.set_value(tracked(5)));
	CHECK_THROWS(heist::cancelled_error, h.get());
	{
		heist::promise<tracked> gone(std::move(p));
	}
	CHECK(live.load() == base);
}

// ---- cancellation tokens ---------------------------------------------------------

static void
token_cancels_queued()
{
	static gate g;
	heist::pool pool(1);
	auto held = occupy(pool, g);
	std::atomic<int> ran{0};
	int base = live.load();
	std::vector<heist::future<int>> fs;
	{
		heist::cancel_token tok;
		heist::cancel_token copy = tok;	// copies share the token
		CHECK(!copy.requested());
		for (int i = 0; i < 20; i++)
			fs.push_back(pool.submit_cancellable(copy, [&ran, i] { ran++; return i; }));
		for (int i = 0; i < 5; i++)	// heap jobs too
			fs.push_back(pool.submit_cancellable(tok, [&ran, t = tracked(i)] {
				ran++;
				return t.v;
			}));
		for (int i = 0; i < 5; i++)	// dropped futures
			(void)pool.submit_cancellable(tok, [&ran, t = tracked(i)] { ran++; });
		tok.request();
		CHECK(copy.requested() && tok.requested());
	}	// both copies gone; the queued tasks hold the token
	auto after = pool.submit([] { return -1; });
	g.open = true;
	CHECK(after.get() == -1);
	for (auto &f : fs)
		CHECK_THROWS(heist::cancelled_error, f.get());
	CHECK(ran.load() == 0);
	CHECK(poll([&] { return live.load() == base; }));
	held.get();
}

static void
token_running_and_misuse()
{
	heist::pool pool(1);
	heist::cancel_token tok;
	std::atomic<bool> started{false};
	auto f = pool.submit_cancellable(tok, [&started] {
		started = true;
		while (!heist::cancelled())
			nap();
		return heist::cancelled();
	});
	CHECK(poll([&] { return started.load(); }));
	tok.request();
	CHECK(f.get());
	// Tasks without the token do not see it.
	CHECK(!pool.submit([] { return heist::cancelled(); }).get());
	// The C handle is the same token.
	CHECK(heist_cancel_requested(tok.native_handle()));
	heist::cancel_token moved(std::move(tok));
	CHECK(!tok.requested() && tok.native_handle() == nullptr && moved.requested());
	tok.request();	// a no-op
	try {
		(void)pool.submit_cancellable(tok, [] {});
		CHECK(false);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL);
	}
	static_assert(heist::submit_cancellable_is_inline<int (*)(int), int>);
}

// ---- post ------------------------------------------------------------------------

static std::atomic<int> reported{0};
static void
count_report(std::exception_ptr e) noexcept
{
	try {
		std::rethrow_exception(e);
	} catch (const my_error &x) {
		reported += x.code;
	} catch (...) {
	}
}

static void
post_runs_and_reports()
{
	heist::pool pool(2);
	std::atomic<int> ran{0};
	auto inc = [&ran] { ran++; };
	static_assert(heist::post_is_inline<decltype(inc)>);
	pool.post(inc);
	pool.wait_idle();
	long before = allocs();
	for (int i = 0; i < 100; i++)
		pool.post([&ran](int k) { ran += k; }, 1);
	pool.wait_idle();
	CHECK(allocs() == before);
	CHECK(ran.load() == 101);
	pool.post([p = std::make_unique<int>(2), &ran] { ran += *p; });	// heap job
	pool.wait_idle();
	CHECK(ran.load() == 103);
	// Exceptions go to the handler.
	heist::exception_handler old = heist::set_exception_handler(&count_report);
	pool.post([] { throw my_error(5); });
	pool.post([u = std::make_unique<int>(1)] { throw my_error(*u); });
	pool.wait_idle();
	CHECK(reported.load() == 6);
	CHECK(heist::set_exception_handler(old) == &count_report);
}

// submit_priority and post_priority: on one worker held busy while the queue fills,
// the high tasks start first, then normal, then low, in order within each; results,
// exceptions and the handler as submit and post; a bad priority throws EINVAL.
static void
priorities_order_queued_work()
{
	heist::pool pool(1);
	gate g;
	auto held = occupy(pool, g);
	std::mutex m;
	std::vector<int> order;
	auto note = [&m, &order](int k) {
		std::lock_guard<std::mutex> l(m);
		order.push_back(k);
		return k;
	};
	std::vector<heist::future<int>> fs;
	fs.push_back(pool.submit_priority(HEIST_PRIORITY_LOW, note, 20));
	fs.push_back(pool.submit(note, 10));
	fs.push_back(pool.submit_priority(HEIST_PRIORITY_HIGH, note, 0));
	fs.push_back(pool.submit_priority(HEIST_PRIORITY_NORMAL, note, 11));
	pool.post_priority(HEIST_PRIORITY_LOW, note, 21);
	pool.post_priority(HEIST_PRIORITY_HIGH, note, 1);
	auto thrown = pool.submit_priority(HEIST_PRIORITY_HIGH, [] { throw my_error(3); });
	g.open = true;
	held.get();
	pool.wait_idle();
	CHECK((order == std::vector<int>{0, 1, 10, 11, 20, 21}));
	const int expect[] = {20, 10, 0, 11};
	for (std::size_t i = 0; i < fs.size(); i++)
		CHECK(fs[i].get() == expect[i]);
	try {
		thrown.get();
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 3);
	}
	heist::exception_handler old = heist::set_exception_handler(&count_report);
	long before = reported.load();
	pool.post_priority(HEIST_PRIORITY_LOW, [] { throw my_error(4); });
	pool.wait_idle();
	CHECK(reported.load() == before + 4);
	heist::set_exception_handler(old);
	CHECK_THROWS(std::system_error, (void)pool.submit_priority(7, [] { return 1; }));
	CHECK_THROWS(std::system_error, pool.post_priority(-2, [] {}));
}

// ---- for_each --------------------------------------------------------------------

static void
for_each_integers()
{
	heist::pool pool(2);
	const int n = 10000 * SCALE;
	std::vector<std::atomic<int>> hits(n);
	pool.for_each(0, n, [&hits](int i) { hits[i]++; });
	for (auto &h : hits)
		CHECK(h.load() == 1);
	// range form, size_t with an int begin, a grain
	std::atomic<long> sum{0};
	std::atomic<int> calls{0};
	pool.for_each(0, std::size_t(n), [&](std::size_t b, std::size_t e) {
		calls++;
		long s = 0;
		for (std::size_t i = b; i < e; i++)
			s += static_cast<long>(i);
		sum += s;
	}, 100);
	CHECK(sum.load() == static_cast<long>(n) * (n - 1) / 2);
	CHECK(calls.load() >= n / 200);	// about grain-sized pieces
	// signed ranges below zero
	std::atomic<long> neg{0};
	pool.for_each(-50, 50, [&neg](int i) { neg += i; });
	CHECK(neg.load() == -50);
	long before = allocs();
	pool.for_each(-50, 50, [&neg](int i) { neg += i; });
	std::atomic<int> empty{0};
	pool.for_each(0, 0, [&empty](int) { empty++; });
	CHECK(allocs() == before);
	CHECK(empty.load() == 0);
	CHECK_THROWS(std::system_error, pool.for_each(5, 1, [](int) {}));
}

static void
for_each_iterators()
{
	heist::pool pool(2);
	std::vector<int> v(5000);
	std::iota(v.begin(), v.end(), 0);
	pool.for_each(v.begin(), v.end(), [](int &x) { x *= 2; });
	for (int i = 0; i < 5000; i++)
		CHECK(v[i] == 2 * i);
	std::atomic<long> sum{0};
	pool.for_each(v.cbegin(), v.cend(), [&sum](auto b, auto e) {
		sum += std::accumulate(b, e, 0L);
	});
	CHECK(sum.load() == 2L * 4999 * 5000 / 2);
	double a[64];
	pool.for_each(a, a + 64, [](double &x) { x = 1.5; });
	CHECK(std::all_of(a, a + 64, [](double x) { return x == 1.5; }));
}

// The first exception stops the loop and propagates; a worker that calls for_each
// (nested loops) sees it too.
static void
for_each_exceptions()
{
	heist::pool pool(2);
	const int n = 20000;
	std::vector<std::atomic<int>> hits(n);
	try {
		pool.for_each(0, n, [&hits](int i) {
			hits[i]++;
			if (i % 1000 == 999)
				throw my_error(i);
		});
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code % 1000 == 999);
	}
	for (auto &h : hits)
		CHECK(h.load() <= 1);
	// From inside a task: a nested loop, its exception out of the task's future.
	auto f = pool.submit([&pool] {
		pool.for_each(0, 100, [&pool](int i) {
			pool.for_each(0, 10, [i](int j) {
				if (i == 50 && j == 5)
					throw my_error(55);
			});
		});
	});
	try {
		f.get();
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 55);
	}
	std::vector<int> three(3);
	CHECK_THROWS(std::runtime_error, pool.for_each(three.begin(), three.end(), [](int &) {
		throw std::runtime_error("x");
	}));
}

// ---- reduce ----------------------------------------------------------------------

static void
reduce_sums_and_order()
{
	for (unsigned n : {1u, 2u, 3u}) {
		heist::pool pool(n);
		// Integers: exact, from outside and inside a task; long index types.
		auto sum = [](long lo, long hi, long long acc) {
			for (long i = lo; i < hi; i++)
				acc += i;
			return acc;
		};
		auto add = [](long long a, long long b) { return a + b; };
		CHECK(pool.reduce(0L, 100001L, 0LL, sum, add) == 100001LL * 100000 / 2);
		CHECK(pool.reduce(5, 5, 42LL, sum, add) == 42);	// empty: the identity
		CHECK(pool.submit([&] { return pool.reduce_deterministic(0L, 1000L, 0LL, sum,
									 add, 3); })
			      .get() == 999LL * 1000 / 2);
		// Index order with a combine that is not commutative: spans [lo, hi).
		struct span {
			long lo, hi;
			bool ok;
		};
		auto body = [](long lo, long hi, span acc) {
			if (acc.lo < 0)
				return span{lo, hi, acc.ok};
			return span{acc.lo, hi, acc.ok && acc.hi == lo};
		};
		auto join = [](span a, span b) {
			if (a.lo < 0)
				return b;
			if (b.lo < 0)
				return a;
			return span{a.lo, b.hi, a.ok && b.ok && a.hi == b.lo};
		};
		span s = pool.reduce(3, 50003, span{-1, -1, true}, body, join, 7);
		CHECK(s.lo == 3 && s.hi == 50003 && s.ok);
		// Doubles: the deterministic form is the same bit for bit every time.
		auto terms = [](long lo, long hi, double acc) {
			for (long i = lo; i < hi; i++)
				acc += (i % 3 ? 1.0 : 1e10) / double(i + 1);
			return acc;
		};
		auto plus = [](double a, double b) { return a + b; };
		double first = pool.reduce_deterministic(0, 200003, 0.0, terms, plus);
		for (int r = 0; r < 5; r++) {
			double again = pool.reduce_deterministic(0, 200003, 0.0, terms, plus);
			CHECK(std::memcmp(&again, &first, sizeof again) == 0);
		}
		static double one_worker = 0;
		if (n == 1)
			one_worker = first;
		CHECK(std::memcmp(&one_worker, &first, sizeof first) == 0);
	}
}

static void
reduce_exceptions()
{
	heist::pool pool(2);
	auto add = [](int a, int b) { return a + b; };
	CHECK_THROWS(my_error, pool.reduce(0, 100000, 0,
					   [](int lo, int hi, int acc) {
						   if (lo <= 777 && 777 < hi)
							   throw my_error(3);
						   return acc + (hi - lo);
					   },
					   add, 10));
	CHECK_THROWS(my_error, pool.reduce_deterministic(
				       0, 1000, 0, [](int lo, int hi, int acc) { return acc + hi - lo; },
				       [](int, int) -> int { throw my_error(4); }, 10));
	CHECK_THROWS(std::system_error,
		     pool.reduce(5, 1, 0, [](int, int, int acc) { return acc; }, add));
	// The pool still works.
	CHECK(pool.reduce(0, 10, 0, [](int lo, int hi, int acc) { return acc + hi - lo; }, add) ==
	      10);
}

// ---- fork-join -------------------------------------------------------------------

static long
fib(int n)
{
	if (n < 2)
		return n;
	auto [a, b] = heist::join([n] { return fib(n - 2); }, [n] { return fib(n - 1); });
	return a + b;
}

static long
fib_serial(int n)
{
	return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

static void
join_results_and_no_allocation()
{
	heist::pool pool(2);
	int n = 18 + SCALE;
	CHECK(pool.run([n] { return fib(n); }) == fib_serial(n));
	long before = allocs();
	CHECK(pool.run([n] { return fib(n); }) == fib_serial(n));
	CHECK(allocs() == before);
	// void halves, references, and both void
	static int cell = 1;
	auto r = pool.run([] {
		return heist::join([]() -> int & { return cell; }, [] {});
	});
	static_assert(std::is_same_v<decltype(r), std::pair<int &, std::monostate>>);
	CHECK(&r.first == &cell);
	std::atomic<int> both{0};
	pool.run([&both] { heist::join([&both] { both++; }, [&both] { both += 2; }); });
	CHECK(both.load() == 3);
	// Outside a worker both run inline, b first.
	std::vector<int> order;
	heist::join([&order] { order.push_back(1); }, [&order] { order.push_back(2); });
	CHECK(order.size() == 2 && order[0] == 2 && order[1] == 1);
	// Move-only closures, passed as rvalues, are not copied.
	auto p = pool.run([] {
		auto [x, y] = heist::join([u = std::make_unique<int>(3)] { return *u; },
					  [u = std::make_unique<int>(4)] { return *u; });
		return x * y;
	});
	CHECK(p == 12);
}

static void
join_exceptions()
{
	heist::pool pool(2);
	std::atomic<int> ran{0};
	auto thrower = [](int c) { return [c]() -> int { throw my_error(c); }; };
	for (int side = 0; side < 3; side++) {
		try {
			pool.run([&] {
				auto work = [&ran] { ran++; return 1; };
				if (side == 0)
					return heist::join(thrower(1), work).second;
				if (side == 1)
					return heist::join(work, thrower(2)).first;
				return heist::join(thrower(3), thrower(4)).first;
			});
			CHECK(false);
		} catch (const my_error &e) {
			CHECK(e.code == (side == 0 ? 1 : side == 1 ? 2 : 3));	// a's first
		}
	}
	CHECK(ran.load() == 2);	// the other half ran to its end
	// Exceptions deep in a recursion propagate out of every level.
	std::function<long(int)> f = [&f](int n) -> long {
		if (n == 3)
			throw my_error(3);
		if (n < 2)
			return n;
		auto [a, b] = heist::join([&f, n] { return f(n - 1); }, [&f, n] { return f(n - 2); });
		return a + b;
	};
	try {
		pool.run([&f] { return f(20); });
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 3);
	}
}

// join(worker, a, b): each half receives the worker of the thread that runs it (a
// thief's when stolen), results and exceptions as join(a, b), no allocation.
static std::atomic<int> wrong_worker{0};

static long
fib_w(heist::worker w, int n)
{
	if (w != heist::worker::self())
		wrong_worker++;
	if (n < 2)
		return n;
	auto [a, b] = heist::join(w, [n](heist::worker v) { return fib_w(v, n - 1); },
				  [n](heist::worker v) { return fib_w(v, n - 2); });
	return a + b;
}

static void
join_with_the_worker()
{
	heist::pool pool(2);
	int n = 18 + SCALE;
	CHECK(pool.run([n] { return fib_w(heist::worker::self(), n); }) == fib_serial(n));
	long before = allocs();
	CHECK(pool.run([n] { return fib_w(heist::worker::self(), n); }) == fib_serial(n));
	CHECK(allocs() == before);
	CHECK(wrong_worker.load() == 0);
	std::atomic<int> both{0};
	pool.run([&both] {
		heist::join(heist::worker::self(), [&both](heist::worker) { both++; },
			    [&both](heist::worker) { both += 2; });
	});
	CHECK(both.load() == 3);
	try {
		pool.run([] {
			return heist::join(heist::worker::self(),
					   [](heist::worker) -> int { throw my_error(5); },
					   [](heist::worker) -> int { throw my_error(6); }).first;
		});
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 5);	// a's first
	}
	// Outside a worker: the stand-in; b runs at once, then a.
	std::vector<int> order;
	heist::join(heist::worker::self(), [&order](heist::worker) { order.push_back(1); },
		    [&order](heist::worker) { order.push_back(2); });
	CHECK(order.size() == 2 && order[0] == 2 && order[1] == 1);
	CHECK(fib_w(heist::worker::self(), 15) == 610);
	CHECK(wrong_worker.load() == 0);
}

static void
task_group_spawns()
{
	heist::pool pool(2);
	std::atomic<int> hits[20] = {};
	auto body = [&hits] {
		heist::task_group<8> g;
		for (int i = 0; i < 20; i++)	// 12 beyond the capacity run inline
			g.spawn([&hits, i] { hits[i]++; });
		CHECK(g.pending() == 8);
		g.wait();
		CHECK(g.pending() == 0);
		g.spawn([&hits] { hits[0]++; });	// usable again
		g.wait();
	};
	pool.run(body);
	CHECK(hits[0].load() == 2);
	for (int i = 1; i < 20; i++)
		CHECK(hits[i].load() == 1);
	long before = allocs();
	pool.run(body);
	CHECK(allocs() == before);
	// std::ref keeps a large callable in the caller's frame
	struct big {
		std::array<long long, 16> a{};	// long long: 128 bytes where long has 32 bits too
		std::atomic<int> *n;
		void operator()() { ++*n; }
	};
	std::atomic<int> n{0};
	big b{{}, &n};
	pool.run([&b] {
		heist::task_group<2, 16> g;
		g.spawn(std::ref(b));
		g.spawn(std::ref(b));
		g.wait();
	});
	CHECK(n.load() == 2);
}

static void
task_group_exceptions()
{
	heist::pool pool(2);
	std::atomic<int> ran{0};
	try {
		pool.run([&ran] {
			heist::task_group<4> g;
			g.spawn([&ran] { ran++; });
			g.spawn([] { throw my_error(1); });
			g.spawn([] { throw my_error(2); });
			g.spawn([&ran] { ran++; });
			g.spawn([] { throw my_error(3); });	// inline: the group is full
			g.wait();
		});
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 1);	// the earliest spawned
	}
	CHECK(ran.load() == 2);
	// The destructor waits for the children (and drops their exceptions), also while
	// an exception unwinds the frame.
	int base = live.load();
	try {
		pool.run([&ran] {
			heist::task_group<4> g;
			g.spawn([&ran, t = tracked(1)] {
				ran++;
				throw my_error(t.v);
			});
			g.spawn([&ran] { ran++; });
			throw my_error(9);
		});
		CHECK(false);
	} catch (const my_error &e) {
		CHECK(e.code == 9);
	}
	CHECK(ran.load() == 4);
	CHECK(live.load() == base);
}

static void
run_from_outside_and_inside()
{
	heist::pool pool(2);
	CHECK(pool.run([] { return heist_worker_index() >= 0; }));
	CHECK_THROWS(my_error, pool.run([]() -> int { throw my_error(1); }));
	pool.run([] {});
	// On a worker of the pool, run() is inline.
	CHECK(pool.submit([&pool] {
		int outer = heist_worker_index();
		return pool.run([outer] { return heist_worker_index() == outer; });
	}).get());
	auto u = pool.run([] { return std::make_unique<int>(6); });
	CHECK(*u == 6);
}

// A task that submits to its own pool and waits (a one-worker pool runs the waited-for
// task itself), and futures waited on from tasks.
static void
nested_submit_and_wait()
{
	heist::pool pool(1);
	auto f = pool.submit([&pool] {
		auto inner = pool.submit([](int x) { return x * 3; }, 5);
		auto thrower = pool.submit([]() -> int { throw my_error(8); });
		int r = inner.get();
		try {
			thrower.get();
		} catch (const my_error &e) {
			r += e.code;
		}
		return r;
	});
	CHECK(f.get() == 23);
}

// Many threads submitting at once, each result checked.
static void
concurrent_submitters()
{
	heist::pool pool(2);
	int per = 500 * SCALE;
	std::atomic<int> bad{0};
	std::vector<std::thread> ts;
	for (int t = 0; t < 4; t++)
		ts.emplace_back([&pool, &bad, t, per] {
			std::vector<heist::future<int>> fs;
			for (int i = 0; i < per; i++)
				fs.push_back(pool.submit([](int a, int b) {
					if (b % 97 == 0)
						throw my_error(b);
					return a + b;
				}, t, i));
			for (int i = 0; i < per; i++) {
				try {
					bad += fs[i].get() != t + i;
				} catch (const my_error &e) {
					bad += e.code != i || i % 97 != 0;
				}
			}
		});
	for (auto &t : ts)
		t.join();
	CHECK(bad.load() == 0);
}

// ---- main ------------------------------------------------------------------------

struct test {
	const char *name;
	void (*fn)();
};

#define T(f) {#f, f}
// A continuation or dependent task whose future was dropped before its job ended, and
// which then ends without running (its input's promise broken, its pool destroyed
// before its input ended), still ends its callable and what that captured.
static void
dropped_futures_of_unrun_jobs_end_what_they_hold()
{
	int base = live.load();
	{
		heist::pool pool(1);
		auto p = std::make_unique<heist::promise<int>>(pool);
		{
			auto f = p->get_future();
			auto c = f.then([t = tracked(1)](int v) { return v + t.v; });
		}	// dropped, its continuation waiting
		CHECK(live.load() == base + 1);
		p.reset();	// broken: the continuation ends unrun
		CHECK(live.load() == base);
	}
	{
		heist::pool other(1);
		heist::promise<int> q(other);
		{
			heist::pool pool(1);
			auto d = pool.submit_after({q.get_future()}, [t = tracked(2)] { return t.v; });
		}	// dropped, then its pool destroyed: d still waits for q
		CHECK(live.load() == base + 1);
		q.set_value(1);	// d becomes runnable on a pool that is gone: unrun
		CHECK(live.load() == base);
	}
	CHECK(live.load() == base);
}

static const test tests[] = {
	T(pool_constructors),
	T(pool_move),
	T(pool_destructor_drains),
	T(pool_shutdown_error),
	T(pool_wait_idle),
	T(pool_ref_over_c),
	T(submit_example_no_allocation),
	T(submit_void_results),
	T(submit_exceptions),
	T(submit_result_types),
	T(submit_move_only),
	T(future_wait_ready_wait_for),
	T(future_cancel_queued),
	T(future_cancel_running),
	T(future_then),
	T(future_then_cancelled),
	T(future_then_after_pool),
	T(promise_set_from_thread),
	T(promise_set_exception),
	T(promise_broken),
	T(promise_void_and_reference),
	T(promise_then_and_when_all),
	T(promise_moved_from_and_cancel),
	T(dropped_futures_of_unrun_jobs_end_what_they_hold),
	T(token_cancels_queued),
	T(token_running_and_misuse),
	T(post_runs_and_reports),
	T(priorities_order_queued_work),
	T(for_each_integers),
	T(for_each_iterators),
	T(for_each_exceptions),
	T(reduce_sums_and_order),
	T(reduce_exceptions),
	T(join_results_and_no_allocation),
	T(join_with_the_worker),
	T(join_exceptions),
	T(task_group_spawns),
	T(task_group_exceptions),
	T(run_from_outside_and_inside),
	T(nested_submit_and_wait),
	T(concurrent_submitters),
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
