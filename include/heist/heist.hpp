/* SPDX-License-Identifier: MIT */
/* heist.hpp - the C++17 API of heist, header-only, over the C library (heist.h).
 *
 * What lives here: heist::pool (RAII over heist_pool) and heist::pool_ref (a view of a
 * heist_pool the caller owns), submit and post of any callable with arguments,
 * heist::future<R> (a result or an exception, then, cancel), heist::promise<R> (a
 * future the program completes, over heist_promise), heist::cancel_token and
 * heist::cancelled(), parallel loops and reductions (pool::for_each, pool::reduce,
 * pool::reduce_deterministic), fork-join with zero heap allocation (heist::join,
 * heist::task_group, pool::run), and dependent tasks: pool::submit_after (a task that
 * runs once futures of any types are done, without consuming them), heist::when_all
 * and heist::task_graph (a graph built once and run many times), and heist::graph (the
 * C heist_graph: replay with nothing allocated per node per run). What does not: any
 * scheduling; every task runs through the C calls, so the same scheduler, the same
 * profiler and the same statistics see C and C++ tasks alike.
 *
 * Exceptions never cross the C library's frames: every function the library calls
 * (a trampoline) is noexcept, catches everything the user's code throws, and stores
 * it where the caller's side rethrows it (future::get, for_each, reduce, join, run,
 * task_group::wait; a dependent task hands an input's on). Storage, by operation (docs/cxx.md has the full table):
 *  - submit/post/submit_cancellable of a callable whose decayed callable and
 *    arguments are trivially copyable and fit the C job record's 48 inline bytes
 *    (with 8 bytes for a ticket when the future may carry an exception or a value,
 *    and 8 for a token): heist_submit_copy, no heap allocation. The result travels
 *    in the C future's int when the result type is void or a trivially copyable
 *    type of at most sizeof(int) bytes; an exception (or a value that collides with
 *    a code reserved here) goes through a side table keyed by the ticket, on that
 *    path only.
 *  - anything else (a move-only callable such as a lambda holding a std::unique_ptr,
 *    a larger capture, a larger or non-trivial result): one heap block holding the
 *    callable, its arguments and the result or exception; heist_submit.
 *  - future::then: one heap block (the C continuation record keeps its inline bytes
 *    for itself).
 *  - submit_after, when_all: one heap block per dependent task (heist_submit_after,
 *    always with HEIST_AFTER_ALWAYS: the trampoline reads each input as get() would),
 *    and the first time an inline future is an input, one small block that keeps
 *    its C future for every dependent (a heap future's own block does that);
 *    task_graph::run: that, once per node, and one when_all.
 *  - promise: one heap block shared by the promise and its future (the value or the
 *    exception, and the C future), and the C library's job record.
 *  - graph::run: one heap block per run (its future's, which holds the run's first
 *    exception) and the C library's job record; nothing per node. graph::emplace,
 *    loop, subgraph: one block per node, once, owned by the graph.
 *  - for_each, join, task_group, run: nothing; closures and records live in the
 *    caller's frame.
 * The idea of a per-job ticket and a side table for the rare path is ours; the
 * implicit-object rule that makes the memcpy'd bytes a live object is P0593R6,
 * applied to C++17 as a defect report.
 */
#ifndef HEIST_HEIST_HPP
#define HEIST_HEIST_HPP

#include <heist/heist.h>

/* Each requirement unmet stops the header with one #error that says so, and skips the
 * rest of it (closed at its end), rather than failing at every line that needs it.
 * C++17: CMake's heist::heist_cxx asks for it. Exceptions: errors, and the exceptions
 * a task throws, reach the caller as C++ exceptions (docs/cxx.md); code built with
 * -fno-exceptions uses the C API, heist.h, which compiles as C++. */
#if !defined(__cplusplus) || __cplusplus < 201703L
#error "heist.hpp needs C++17 (-std=c++17; in CMake, link heist::heist_cxx); C code includes heist/heist.h"
#elif !defined(__cpp_exceptions) && !defined(__EXCEPTIONS)
#error "heist.hpp needs C++ exceptions (no -fno-exceptions); without them use heist/heist.h"
#else	/* the rest of the header, closed at its end */

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace heist {

/* ---------------------------------------------------------------------------------- */
/* Errors                                                                             */

/**
 * Thrown by future::get() (and by join/for_each callers that wait for it) for a task
 * that was cancelled before it ran, by its future or by its token.
 */
class cancelled_error : public std::system_error {
public:
	cancelled_error() : std::system_error(ECANCELED, std::generic_category(),
					      "heist: task cancelled") {}
};

/**
 * The handler for an exception that nobody can receive: one thrown by a task given to
 * pool::post. It runs on the worker that ran the task, and must not throw. The default
 * prints the exception's what() to stderr and calls std::terminate, as an exception
 * escaping a std::thread does.
 */
using exception_handler = void (*)(std::exception_ptr) noexcept;

namespace detail {

[[noreturn]] inline void
throw_error(int err, const char *what)
{
	if (err == ENOMEM)
		throw std::bad_alloc();
	if (err == ECANCELED)
		throw cancelled_error();
	throw std::system_error(err, std::generic_category(), what);
}

inline void
default_handler(std::exception_ptr e) noexcept
{
	const char *what = "an exception not derived from std::exception";
	try {
		std::rethrow_exception(e);
	} catch (const std::exception &x) {
		what = x.what();
	} catch (...) {
	}
	std::fprintf(stderr, "heist: a task given to heist::pool::post threw: %s\n", what);
	std::terminate();
}

inline std::atomic<exception_handler> &
handler_slot() noexcept
{
	static std::atomic<exception_handler> h{&default_handler};
	return h;
}

inline void
report(std::exception_ptr e) noexcept
{
	handler_slot().load(std::memory_order_acquire)(std::move(e));
}

} // namespace detail

/** Set the handler of exceptions thrown by posted tasks; nullptr restores the
 *  default. Returns the previous one. Any thread. */
inline exception_handler
set_exception_handler(exception_handler h) noexcept
{
	return detail::handler_slot().exchange(h ? h : &detail::default_handler,
					       std::memory_order_acq_rel);
}

/* ---------------------------------------------------------------------------------- */
/* Internals shared by everything below                                               */

namespace detail {

/* Results a trampoline of a job with inline bytes returns besides the value itself.
 * ECANCELED is the library's: the job never ran. A value whose int is one of the three
 * goes through the side table instead (code_side). */
enum : int {
	code_side = INT_MIN,		/* look up the ticket in the side table */
	code_token = INT_MIN + 1,	/* the trampoline found its token cancelled */
};

/* The C++ token a running C++ task was submitted with, for heist::cancelled(). Every
 * trampoline of a submitted job sets it (its token or none) and restores it. */
inline thread_local heist_cancel *current_token = nullptr;

struct token_scope {
	heist_cancel *saved;
	explicit token_scope(heist_cancel *c) noexcept : saved(current_token)
	{
		current_token = c;
	}
	~token_scope() { current_token = saved; }
	token_scope(const token_scope &) = delete;
	token_scope &operator=(const token_scope &) = delete;
};

/* A heist_cancel with a count of our own: the C token has no public add-ref, and a
 * job's inline bytes must hold a counted reference as a plain pointer. */
struct token_block {
	std::atomic<std::size_t> refs{1};
	heist_cancel *c = nullptr;

	static token_block *
	make()
	{
		heist_cancel *c = nullptr;
		int err = heist_cancel_create(&c);
		if (err)
			throw_error(err, "heist::cancel_token");
		token_block *b = new (std::nothrow) token_block;
		if (!b) {
			heist_cancel_release(c);
			throw std::bad_alloc();
		}
		b->c = c;
		return b;
	}
	void
	acquire() noexcept
	{
		/* relaxed: the caller holds a reference already. */
		refs.fetch_add(1, std::memory_order_relaxed);
	}
	void
	release() noexcept
	{
		/* acq_rel: the last holder frees after every other holder's use. */
		if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
			heist_cancel_release(c);
			delete this;
		}
	}
};

/* Tickets name a job's entry in the side table. Each thread takes a block of them at
 * a time, so that submitting threads do not share a counter's cache line; 0 means
 * none. */
using ticket = std::uintptr_t;

inline ticket
next_ticket() noexcept
{
	enum : ticket { block = 4096 };
	static std::atomic<ticket> blocks{1};
	static thread_local ticket next = 0, end = 0;
	if (next == end) {
		/* relaxed: only uniqueness matters. */
		next = blocks.fetch_add(block, std::memory_order_relaxed);
		end = next + block;
		if (next == 0)	/* wrapped (32-bit): skip the "none" value */
			next = 1;
	}
	return next++;
}

/* What a job with inline bytes could not return in its int: an exception, or a value
 * that collides with a reserved code. Entries exist only between the trampoline that
 * made one and the future that takes it (or the continuation that erases it for a
 * future dropped before its job was done). Never destroyed: a task may still finish
 * while static destructors run. */
struct side_entry {
	std::exception_ptr error;
	int value = 0;
};

struct side_table {
	std::mutex lock;
	std::unordered_map<ticket, side_entry> map;
};

inline side_table &
sides() noexcept
{
	static side_table *t = new side_table;
	return *t;
}

/* On a worker, inside a noexcept trampoline: out of memory here terminates (there is
 * no other way to deliver the exception), as std::terminate does for an exception
 * that cannot be stored. */
inline void
side_put(ticket t, side_entry e) noexcept
{
	side_table &s = sides();
	std::lock_guard<std::mutex> g(s.lock);
	s.map.insert_or_assign(t, std::move(e));
}

inline std::optional<side_entry>
side_take(ticket t) noexcept
{
	side_table &s = sides();
	std::lock_guard<std::mutex> g(s.lock);
	auto it = s.map.find(t);
	if (it == s.map.end())
		return std::nullopt;
	std::optional<side_entry> e(std::move(it->second));
	s.map.erase(it);
	return e;
}

inline int
side_erase_job(void *t) noexcept
{
	side_take(reinterpret_cast<ticket>(t));
	return 0;
}

/* Callable arguments, stored as the callable gets them: trivially copyable when they
 * all are (std::tuple is not, in libstdc++). */
template <std::size_t I, class T>
struct leaf {
	T value;
};

template <class Seq, class... T>
struct pack_impl;

template <std::size_t... I, class... T>
struct pack_impl<std::index_sequence<I...>, T...> : leaf<I, T>... {
	template <class... A>
	explicit pack_impl(std::in_place_t, A &&...a) : leaf<I, T>{std::forward<A>(a)}...
	{
	}
	/* Call f with every argument moved out, as std::thread and std::async do. */
	template <class F>
	decltype(auto)
	call(F &&f)
	{
		return std::invoke(std::forward<F>(f),
				   std::move(static_cast<leaf<I, T> &>(*this).value)...);
	}
};

template <class... T>
using pack = pack_impl<std::index_sequence_for<T...>, T...>;

/* A result on its way to the caller: void, a reference (as a pointer) or an object. */
template <class R>
struct result_slot {
	std::optional<R> v;
	template <class F>
	void set(F &&f) { v.emplace(std::forward<F>(f)()); }
	R take() { return std::move(*v); }
};

template <class R>
struct result_slot<R &> {
	R *v = nullptr;
	template <class F>
	void set(F &&f) { v = &std::forward<F>(f)(); }
	R &take() { return *v; }
};

template <>
struct result_slot<void> {
	template <class F>
	void set(F &&f) { std::forward<F>(f)(); }
	void take() {}
};

/* Whether a result can travel in the C future's int. */
template <class R, bool Object = std::is_object_v<R>>
struct int_sized_impl : std::false_type {};
template <class R>
struct int_sized_impl<R, true>
	: std::bool_constant<std::is_trivially_copyable_v<R> && sizeof(R) <= sizeof(int) &&
			     alignof(R) <= alignof(int)> {};
template <>
struct int_sized_impl<void, false> : std::true_type {};

template <class R>
inline constexpr bool int_sized = int_sized_impl<R>::value;

template <class R>
inline int
encode(const R &r, ticket t) noexcept
{
	int v = 0;
	std::memcpy(&v, &r, sizeof(R));
	if (v == ECANCELED || v == code_side || v == code_token) {
		side_entry e;
		e.value = v;
		side_put(t, std::move(e));
		return code_side;
	}
	return v;
}

template <class R>
inline R
decode(int v) noexcept
{
	static_assert(std::is_trivially_copyable_v<R>);
	alignas(R) unsigned char buf[sizeof(R)];
	std::memcpy(buf, &v, sizeof(R));
	return *std::launder(reinterpret_cast<R *>(buf));
}

/* ---- jobs whose bytes live in the C job record (heist_submit_copy) ---- */

enum : std::size_t { record_bytes = 48, record_align = 16 };	/* heist.h's promise */

template <bool Ticket, bool Token>
struct job_tail;
template <>
struct job_tail<false, false> {
	static constexpr ticket get_ticket() noexcept { return 0; }
	static constexpr token_block *get_token() noexcept { return nullptr; }
};
template <>
struct job_tail<true, false> {
	ticket t;
	ticket get_ticket() const noexcept { return t; }
	static constexpr token_block *get_token() noexcept { return nullptr; }
};
template <>
struct job_tail<true, true> {
	ticket t;
	token_block *tok;
	ticket get_ticket() const noexcept { return t; }
	token_block *get_token() const noexcept { return tok; }
};
template <>
struct job_tail<false, true> {
	token_block *tok;
	static constexpr ticket get_ticket() noexcept { return 0; }
	token_block *get_token() const noexcept { return tok; }
};

template <class Fn, class P, bool Ticket, bool Token>
struct inline_job : job_tail<Ticket, Token> {
	Fn fn;
	P args;
	template <class F, class... A>
	inline_job(job_tail<Ticket, Token> tail, F &&f, A &&...a)
		: job_tail<Ticket, Token>(tail), fn(std::forward<F>(f)),
		  args(std::in_place, std::forward<A>(a)...)
	{
	}
};

/* The trampoline of an inline job: the bytes heist_submit_copy made are the job.
 * Post: no future; an exception goes to the handler. Otherwise: the result in the
 * int, or code_side with the exception (or a colliding value) in the side table. */
template <class J, class R, bool Post>
int
run_inline(void *p) noexcept
{
	J &j = *std::launder(static_cast<J *>(p));
	token_block *tok = j.get_token();
	int r = 0;
	token_scope scope(tok ? tok->c : nullptr);
	if (tok && heist_cancel_requested(tok->c)) {
		r = code_token;
	} else {
		try {
			if constexpr (Post || std::is_void_v<R>)
				j.args.call(std::move(j.fn));
			else
				r = encode<R>(j.args.call(std::move(j.fn)), j.get_ticket());
		} catch (...) {
			if constexpr (Post) {
				report(std::current_exception());
			} else {
				side_entry e;
				e.error = std::current_exception();
				side_put(j.get_ticket(), std::move(e));
				r = code_side;
			}
		}
	}
	if (tok)
		tok->release();
	return r;	/* the bytes are trivially destructible: nothing to end */
}

/* ---- jobs in one heap block (heist_submit, heist_future_then) ---- */

/* The exception throw_error(err, what) throws, as a pointer: what an input's get()
 * would throw, handed on to a dependent task. */
inline std::exception_ptr
error_ptr(int err, const char *what) noexcept
{
	try {
		throw_error(err, what);
	} catch (...) {
		return std::current_exception();
	}
}

/* The block's count: the job's reference (dropped by its trampoline, or by the future
 * when the job never ran), the future's, and one per dependent task that has the
 * future among its inputs (future::hold, which also shares inline futures through a
 * block of this kind: inline_share). */
struct state_base {
	std::atomic<unsigned> refs;
	explicit state_base(unsigned n) noexcept : refs(n) {}
	virtual ~state_base() = default;
	state_base(const state_base &) = delete;
	state_base &operator=(const state_base &) = delete;
	/* The job will never run: end what it holds now (its callable), as its
	 * trampoline would have. */
	virtual void unrun() noexcept {}
	/* The job is final and was shared (future::hold): null if get() would return,
	 * else what it would throw. Called by dependent tasks, on any thread, at once. */
	virtual std::exception_ptr failure() noexcept = 0;
	void
	acquire() noexcept
	{
		/* relaxed: the caller holds a reference already. */
		refs.fetch_add(1, std::memory_order_relaxed);
	}
	void
	release() noexcept
	{
		/* acq_rel: the last holder deletes after the other's writes. */
		if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
			delete this;
	}
};

enum class status : unsigned char { none, value, error, cancelled };

/* What every heap block's future reads but the value: written by the trampoline
 * before its job is final, read after. */
struct result_base : state_base {
	explicit result_base(unsigned n) noexcept : state_base(n) {}
	status st = status::none;
	std::exception_ptr error;
	/* The C future, once a dependent task shares the block (future::hold): from then
	 * on the block keeps it, so that a dependent can read its code after the future
	 * object is gone, and releases it with its last reference. */
	std::atomic<heist_future *> shared{nullptr};
	/* A graph run's block (heist::graph::run) or a promise's (heist::promise): the C
	 * future's int is the run's or the promise's own result, not "the job never
	 * ran": 0, code_side for the exception in error, or a C code (ECANCELED, a
	 * loop's or a subgraph's error; a broken or cancelled promise's). Such a block
	 * has no job reference (no trampoline of the C library's releases it): it keeps
	 * its C future in shared from the start, and the future and the graph (or the
	 * promise) hold it. */
	bool coded = false;

	~result_base() override
	{
		/* relaxed: the last release (acq_rel) ordered every store before this. */
		if (heist_future *f = shared.load(std::memory_order_relaxed))
			heist_future_release(f);
	}
	std::exception_ptr
	failure() noexcept override
	{
		/* acquire: pairs with hold()'s compare-exchange (the submit of the
		 * dependent orders it too). */
		heist_future *f = shared.load(std::memory_order_acquire);
		int code = f ? heist_future_wait(f) : 0;	/* final: returns at once */
		if (coded)
			return coded_failure(code);
		if (code != 0)	/* never ran: cancelled, or a continuation not queued */
			return error_ptr(code, "heist::future::get");
		if (st == status::error)
			return error;
		if (st == status::cancelled)
			return error_ptr(ECANCELED, "heist::future::get");
		return nullptr;
	}
	/* A coded block's failure, given its run's result: what get() throws. */
	std::exception_ptr
	coded_failure(int code) noexcept
	{
		if (code == code_side && error)
			return error;
		if (code != 0)
			return error_ptr(code, "heist::graph::run");
		return nullptr;
	}
};

template <class R>
struct result_state : result_base {
	using result_base::result_base;
	result_slot<R> value;
};

/* Erase what the job of f leaves under t in the side table: now if it is final, else
 * once it is (a continuation), for an inline future dropped before it took it. A
 * continuation runs unless the job was cancelled before it ran, when it left
 * nothing. */
inline void
drop_side(heist_future *f, ticket t) noexcept
{
	if (heist_future_done(f)) {
		side_take(t);
		return;
	}
	int err = heist_future_then(f, &side_erase_job, reinterpret_cast<void *>(t), nullptr);
	if (err) {	/* ENOMEM (or the pool just went): wait instead */
		heist_future_wait(f);
		side_take(t);
	}
}

/* A future dropped before its job is final (future::reset): what settle() would do
 * for a job that ends without running (end its callable, let go of the job's reference
 * to the block; or of the token the job held) is done when the job ends, on the thread
 * that ends it (heist_future_on_done): a continuation ended unrun, its input cancelled
 * or its pool destroyed, has no trampoline to do it. The callback holds the block. */
inline void
settle_dropped_block(void *arg, int code) noexcept
{
	result_base *s = static_cast<result_base *>(arg);
	if (code != 0) {
		s->unrun();
		s->release();	/* the job's */
	}
	s->release();	/* the callback's */
}

inline void
settle_dropped_token(void *arg, int code) noexcept
{
	if (code == ECANCELED)
		static_cast<token_block *>(arg)->release();
}

inline void
settle_when_done(heist_future *f, result_base *s, token_block *tok) noexcept
{
	/* Without the memory for the callback (ENOMEM) nothing is done: waiting here,
	 * in a destructor, could wait for what only the caller's next step ends (the
	 * promise it sets next, say), and a job that runs settles itself anyway. */
	if (s) {
		if (s->coded)
			return;	/* no job reference: nothing to settle */
		s->acquire();
		if (heist_future_on_done(f, &settle_dropped_block, s) != 0)
			s->release();	/* the callback's */
	} else if (tok) {
		heist_future_on_done(f, &settle_dropped_token, tok);
	}
}

/* An inline future shared with dependent tasks (future::hold): the C future and the
 * job's ticket, kept until the future object and every dependent are done with them.
 * What the job left in the side table (an exception, a colliding value) is moved here
 * by whoever reads it first, the future's get() or a dependent, so that all of them
 * read it. The count: the future object's reference and one per dependent. */
struct inline_share final : state_base {
	heist_future *f = nullptr;	/* nullptr: lost the race to be installed */
	ticket t = 0;
	bool taken = false;		/* under sides().lock: entry is what t held */
	std::optional<side_entry> entry;

	inline_share() noexcept : state_base(1) {}
	~inline_share() override
	{
		if (!f)
			return;
		if (t && !taken)
			drop_side(f, t);
		heist_future_release(f);
	}

	/* The job is final and returned code_side: what it left in the side table.
	 * Written once under the table's lock, read-only afterwards. */
	const side_entry *
	side() noexcept
	{
		side_table &s = sides();
		std::lock_guard<std::mutex> g(s.lock);
		if (!taken) {
			auto it = s.map.find(t);
			if (it != s.map.end()) {
				entry.emplace(std::move(it->second));
				s.map.erase(it);
			}
			taken = true;
		}
		return entry ? &*entry : nullptr;
	}

	std::exception_ptr
	failure() noexcept override
	{
		int code = heist_future_wait(f);	/* final: returns at once */
		if (code == ECANCELED || code == code_token)
			return error_ptr(ECANCELED, "heist::future::get");
		if (code == code_side) {
			const side_entry *e = side();
			return e ? e->error : nullptr;	/* no error: a colliding value */
		}
		return nullptr;
	}
};

/* A callable and its arguments in a heap block (heap_job, after_job). */
template <class Fn, class... T>
struct bound {
	Fn fn;
	pack<T...> args;
	template <class F, class... A>
	bound(std::in_place_t, F &&f, A &&...a)
		: fn(std::forward<F>(f)), args(std::in_place, std::forward<A>(a)...)
	{
	}
};

template <class R, bool Post, class Fn, class... T>
struct heap_job final : result_state<R> {
	std::optional<bound<Fn, T...>> b;
	token_block *tok;

	template <class F, class... A>
	heap_job(unsigned nrefs, token_block *t, F &&f, A &&...a)
		: result_state<R>(nrefs), tok(t)
	{
		b.emplace(std::in_place, std::forward<F>(f), std::forward<A>(a)...);
		if (tok)
			tok->acquire();
	}
	~heap_job() override
	{
		if (tok)
			tok->release();
	}
	void
	unrun() noexcept override
	{
		b.reset();
		if (tok)
			tok->release();
		tok = nullptr;
	}

	static int
	run(void *p) noexcept
	{
		auto *s = static_cast<heap_job *>(p);
		token_scope scope(s->tok ? s->tok->c : nullptr);
		if (s->tok && heist_cancel_requested(s->tok->c)) {
			s->st = status::cancelled;
		} else {
			try {
				bound<Fn, T...> &bd = *s->b;
				if constexpr (Post)
					bd.args.call(std::move(bd.fn));
				else
					s->value.set([&]() -> decltype(auto) {
						return bd.args.call(std::move(bd.fn));
					});
				s->st = status::value;
			} catch (...) {
				if constexpr (Post)
					report(std::current_exception());
				s->error = std::current_exception();
				s->st = status::error;
			}
		}
		s->b.reset();	/* the callable and its arguments end on the worker */
		s->release();	/* the job's reference */
		return 0;	/* always 0: anything else means it never ran */
	}
};

template <class F, class... A>
using result_of = std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>;

template <class Fn, class P, bool Ticket, bool Token>
inline constexpr bool fits_inline =
	std::is_trivially_copyable_v<inline_job<Fn, P, Ticket, Token>> &&
	sizeof(inline_job<Fn, P, Ticket, Token>) <= record_bytes &&
	alignof(inline_job<Fn, P, Ticket, Token>) <= record_align;

} // namespace detail

template <class R>
class future;

class pool_ref;
class graph;

namespace detail {
template <class U, class G, class R>
struct cont_job;
template <class R>
class promise_base;

/* A ticket when the int may not say it all: an exception, or a value colliding with
 * a reserved code. A noexcept callable returning void needs none; post needs none. */
template <bool Post, class R, class Fn, class... T>
inline constexpr bool needs_ticket =
	!Post && !(std::is_void_v<R> && std::is_nothrow_invocable_v<Fn, T...>);

template <bool Post, bool Token, class F, class... A>
inline constexpr bool goes_inline =
	(Post || int_sized<result_of<F, A...>>) &&
	fits_inline<std::decay_t<F>, pack<std::decay_t<A>...>,
		    needs_ticket<Post, result_of<F, A...>, std::decay_t<F>, std::decay_t<A>...>,
		    Token>;
} // namespace detail

/** Whether pool::submit(f, args...) with these types keeps the callable and its
 *  arguments in the C job record (no heap allocation); see the file comment. */
template <class F, class... A>
inline constexpr bool submit_is_inline = detail::goes_inline<false, false, F, A...>;

/** The same for pool::post (no ticket; any result, which is dropped). */
template <class F, class... A>
inline constexpr bool post_is_inline = detail::goes_inline<true, false, F, A...>;

/** The same for pool::submit_cancellable (a ticket and a token). */
template <class F, class... A>
inline constexpr bool submit_cancellable_is_inline = detail::goes_inline<false, true, F, A...>;

/* ---------------------------------------------------------------------------------- */
/* Cancellation                                                                       */

/**
 * A cancellation token shared by any number of tasks (.NET CancellationToken
 * semantics, as heist_cancel): request() cancels the tasks submitted with it that have
 * not started (their futures throw cancelled_error) and makes heist::cancelled() true
 * in those running. Copies share one token; it lives while a copy or a queued task
 * holds it. A moved-from token is empty: request() does nothing, requested() is false,
 * and submitting with it throws std::system_error (EINVAL).
 */
class cancel_token {
public:
	/** A new token. Throws std::bad_alloc. */
	cancel_token() : b_(detail::token_block::make()) {}
	cancel_token(const cancel_token &o) noexcept : b_(o.b_)
	{
		if (b_)
			b_->acquire();
	}
	cancel_token(cancel_token &&o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
	cancel_token &
	operator=(const cancel_token &o) noexcept
	{
		cancel_token(o).swap(*this);
		return *this;
	}
	cancel_token &
	operator=(cancel_token &&o) noexcept
	{
		cancel_token moved(std::move(o));	/* not a cast: -Wuseless-cast */
		moved.swap(*this);
		return *this;
	}
	~cancel_token()
	{
		if (b_)
			b_->release();
	}
	void swap(cancel_token &o) noexcept { std::swap(b_, o.b_); }

	/** Cancel every task submitted with this token. Any thread; idempotent. What the
	 *  caller wrote before is visible to a task that sees the cancellation. */
	void
	request() noexcept
	{
		if (b_)
			heist_cancel_request(b_->c);
	}
	/** Whether request() was called. */
	bool requested() const noexcept { return b_ && heist_cancel_requested(b_->c); }
	/** The C token, for heist_submit_cancellable from C code; owned by this object. */
	heist_cancel *native_handle() const noexcept { return b_ ? b_->c : nullptr; }

private:
	friend class pool_ref;
	detail::token_block *b_;
};

/**
 * Inside a task: whether it should stop early. True when its future was cancelled
 * (future::cancel, as the C heist_cancelled()) or the token it was submitted with
 * (submit_cancellable) was cancelled; false elsewhere. A fork-join child (join,
 * task_group) that runs on its parent's thread sees its parent's answer; one that
 * another worker stole sees false, as in C (see docs/cxx.md for the one exception).
 */
inline bool
cancelled() noexcept
{
	heist_cancel *c = detail::current_token;
	return heist_cancelled() || (c && heist_cancel_requested(c));
}

/* ---------------------------------------------------------------------------------- */
/* Futures                                                                            */

/**
 * The result of a submitted task: a value of type R (or nothing, for void), or the
 * exception the task threw, or its cancellation. Move-only; one owner at a time (as
 * std::future). The destructor releases the C future: a task whose future was
 * dropped still runs, and its result or exception is dropped. A heist::promise<R>
 * makes one that the program completes instead of a task (get_future).
 */
template <class R>
class future {
public:
	using value_type = R;

	/** An empty future: valid() is false. */
	future() noexcept = default;
	future(future &&o) noexcept
		: f_(std::exchange(o.f_, nullptr)), s_(std::exchange(o.s_, nullptr)),
		  ticket_(std::exchange(o.ticket_, 0)), token_(std::exchange(o.token_, nullptr)),
		  code_(o.code_), settled_(std::exchange(o.settled_, false)),
		  /* relaxed: a move has the object to itself (no const call beside it). */
		  sh_(o.sh_.exchange(nullptr, std::memory_order_relaxed))
	{
	}
	future &
	operator=(future &&o) noexcept
	{
		if (this != &o) {
			reset();
			f_ = std::exchange(o.f_, nullptr);
			s_ = std::exchange(o.s_, nullptr);
			ticket_ = std::exchange(o.ticket_, 0);
			token_ = std::exchange(o.token_, nullptr);
			code_ = o.code_;
			settled_ = std::exchange(o.settled_, false);
			/* relaxed: as in the move constructor. */
			sh_.store(o.sh_.exchange(nullptr, std::memory_order_relaxed),
				  std::memory_order_relaxed);
		}
		return *this;
	}
	future(const future &) = delete;
	future &operator=(const future &) = delete;
	/** Releases the task; it still runs. A continuation or dependent task dropped so
	 * that later ends without running ends its callable on the thread that ends it
	 * (docs/cxx.md): what it captured must not block in its destructor. */
	~future() { reset(); }

	/** Whether the future refers to a task (false once get() or then() took it). */
	bool valid() const noexcept { return f_ != nullptr; }

	/** Whether the task has finished or was cancelled; never blocks. */
	bool ready() const noexcept { return f_ && heist_future_done(f_); }

	/** Wait until the task has finished or was cancelled. On a worker it runs other
	 *  work meanwhile, as heist_future_wait does. */
	void
	wait() noexcept
	{
		if (f_ && !settled_)
			settle(heist_future_wait(f_));
	}

	/** Wait at most d (heist_future_wait_for). */
	template <class Rep, class Period>
	std::future_status
	wait_for(const std::chrono::duration<Rep, Period> &d) noexcept
	{
		if (!f_)
			return std::future_status::timeout;
		/* In double nanoseconds, so that no duration overflows; beyond ~584 years
		 * is forever (UINT64_MAX, as heist_future_wait_for reads it). */
		double ns = std::chrono::duration<double, std::nano>(d).count();
		std::uint64_t t = !(ns > 0) ? 0
				  : ns >= 1.8e19 ? UINT64_MAX
						 : static_cast<std::uint64_t>(ns);
		if (!heist_future_wait_for(f_, t))
			return std::future_status::timeout;
		settle();
		return std::future_status::ready;
	}

	/**
	 * Wait, then return the task's result or rethrow its exception; cancelled_error
	 * if it was cancelled before it ran. Once: the future is empty afterwards, as
	 * std::future. std::future_error (no_state) on an empty future.
	 */
	R
	get()
	{
		if (!f_)
			throw std::future_error(std::future_errc::no_state);
		future own(std::move(*this));	/* releases on every way out */
		own.wait();
		return own.take();
	}

	/**
	 * Cancel the task: if it has not started it never runs (get() throws
	 * cancelled_error); if it runs, heist::cancelled() turns true inside it and its
	 * own result is delivered; if it is done, nothing changes.
	 */
	void
	cancel() noexcept
	{
		if (!f_)
			return;
		heist_future_cancel(f_);
		/* After the C cancel the job is final or running, never still queued: a
		 * final one is settled now, so that what a job that never ran holds is
		 * freed while we still know it. */
		if (heist_future_done(f_))
			settle();
	}

	/**
	 * Run g on the task's pool once the task is done, without blocking a thread
	 * (heist_future_then), and return its future. g takes either this future (ready;
	 * g calls get() and sees the exception, if any) or the value (nothing for void):
	 * then an exception or a cancellation of the task skips g and goes to the
	 * returned future. If the task was cancelled before it ran, g never runs and the
	 * returned future throws cancelled_error. This future is empty afterwards. One
	 * heap block. Throws std::bad_alloc, std::system_error (ESHUTDOWN: the pool is
	 * gone), std::future_error on an empty future; then this future is unchanged.
	 */
	template <class G>
	auto then(G &&g);

	/** The C future; still owned by this object. */
	heist_future *native_handle() const noexcept { return f_; }

private:
	template <class>
	friend class future;
	friend class pool_ref;
	friend class future_ref;
	friend class graph;
	template <class, class, class>
	friend struct detail::cont_job;
	template <class>
	friend class detail::promise_base;

	future(heist_future *f, detail::result_state<R> *s, detail::ticket t,
	       detail::token_block *tok) noexcept
		: f_(f), s_(s), ticket_(t), token_(tok)
	{
	}

	/* The job is final: note its code, and free what a job that never ran holds
	 * (its trampoline would have). Idempotent. */
	void
	settle() noexcept
	{
		if (!settled_ && f_)
			settle(heist_future_wait(f_));	/* final: returns at once */
	}

	/* The same with the code a wait just returned. */
	void
	settle(int code) noexcept
	{
		code_ = code;
		settled_ = true;
		if (s_) {
			if (code_ != 0 && !s_->coded) {	/* ECANCELED, or a continuation
							   that could not queue */
				s_->unrun();
				s_->release();	/* the job's reference */
			}
		} else if (code_ == ECANCELED && token_) {
			token_->release();
		}
		token_ = nullptr;
	}

	/* The settled result, or its exception. */
	R
	take()
	{
		if (s_) {
			if (s_->coded) {	/* a graph run: its code is its result */
				if (std::exception_ptr e = s_->coded_failure(code_))
					std::rethrow_exception(e);
				return s_->value.take();
			}
			if (code_ != 0)
				detail::throw_error(code_, "heist::future::get");
			if (s_->st == detail::status::error)
				std::rethrow_exception(s_->error);
			if (s_->st == detail::status::cancelled)
				throw cancelled_error();
			return s_->value.take();
		}
		int v = code_;
		if (v == ECANCELED || v == detail::code_token)
			throw cancelled_error();
		if (v == detail::code_side) {
			/* relaxed: hold() is a const call, ordered before this non-const
			 * one by whatever lets the owner use the object again. */
			detail::inline_share *sh = sh_.load(std::memory_order_relaxed);
			std::optional<detail::side_entry> e;
			if (sh) {
				if (const detail::side_entry *se = sh->side())
					e = *se;
			} else {
				e = detail::side_take(ticket_);
			}
			ticket_ = 0;
			if (!e)	/* cannot happen: the trampoline put it before returning */
				std::terminate();
			if (e->error)
				std::rethrow_exception(e->error);
			v = e->value;
		}
		if constexpr (std::is_void_v<R>)
			return;
		else if constexpr (detail::int_sized<R>)
			return detail::decode<R>(v);
		else
			std::terminate();	/* such results always have a heap block */
	}

	void
	reset() noexcept
	{
		if (!f_)
			return;
		if (!settled_ && heist_future_done(f_))
			settle();
		else if (!settled_)	/* settled when it ends, maybe unrun */
			detail::settle_when_done(f_, s_, token_);
		/* relaxed: as in take(). A shared future's C future belongs to its block
		 * (hold), which releases it, and erases the side entry, with its last
		 * reference. */
		detail::inline_share *sh = sh_.exchange(nullptr, std::memory_order_relaxed);
		bool kept = sh || (s_ && s_->shared.load(std::memory_order_relaxed) == f_);
		if (sh) {
			/* the share's */
		} else if (settled_) {
			if (!s_ && code_ == detail::code_side && ticket_)
				detail::side_take(ticket_);
		} else if (!s_ && ticket_) {
			/* Dropped before its job is done: whatever the job leaves in the
			 * side table is erased when it is. */
			detail::drop_side(f_, ticket_);
		}
		if (s_)
			s_->release();
		if (sh)
			sh->release();
		if (!kept)
			heist_future_release(f_);
		f_ = nullptr;
		s_ = nullptr;
		ticket_ = 0;
		token_ = nullptr;
		settled_ = false;
	}

	/*
	 * For a dependent task (submit_after, when_all): a counted reference to a block
	 * that can tell, once the job is final, whether get() would throw and what
	 * (state_base::failure), whatever this object does meanwhile (get, then, its
	 * destruction). The block keeps the C future from now on: the heap block itself
	 * for a heap job, an inline_share made at the first call for an inline one.
	 * Const, and safe beside other const calls: one future may feed any number of
	 * dependents, from any threads. Throws std::future_error on an empty future,
	 * std::bad_alloc.
	 */
	detail::state_base *
	hold() const
	{
		if (!f_)
			throw std::future_error(std::future_errc::no_state);
		if (s_) {
			heist_future *none = nullptr;
			/* acq_rel: publishes f_ to failure() on the dependent's thread (its
			 * submit orders it too); a failed exchange found f_ already. */
			s_->shared.compare_exchange_strong(none, f_, std::memory_order_acq_rel);
			s_->acquire();
			return s_;
		}
		/* acquire: pairs with the exchange below in another const call. */
		detail::inline_share *sh = sh_.load(std::memory_order_acquire);
		if (!sh) {
			auto *made = new detail::inline_share;
			made->f = f_;
			made->t = ticket_;
			/* acq_rel: publishes made's fields; on failure, sees the winner's. */
			if (sh_.compare_exchange_strong(sh, made, std::memory_order_acq_rel,
							std::memory_order_acquire)) {
				sh = made;
			} else {
				made->f = nullptr;
				delete made;
			}
		}
		sh->acquire();
		return sh;
	}

	heist_future *f_ = nullptr;
	detail::result_state<R> *s_ = nullptr;	/* heap jobs; nullptr: inline */
	detail::ticket ticket_ = 0;		/* inline jobs with a side entry possible */
	detail::token_block *token_ = nullptr;	/* inline jobs: the job's token, freed here
						   if the job never runs */
	int code_ = 0;				/* settled: the C future's result */
	bool settled_ = false;
	/* Inline jobs given to a dependent (hold): the block that keeps the C future. */
	mutable std::atomic<detail::inline_share *> sh_{nullptr};
};

/* ---- continuations ---- */

namespace detail {

template <class R, class G, bool Whole>
struct cont_result_impl;
template <class R, class G>
struct cont_result_impl<R, G, true> {
	using type = std::invoke_result_t<G, future<R>>;
};
template <class R, class G>
struct cont_result_impl<R, G, false> {
	using type = std::invoke_result_t<G, R>;
};
template <class G>
struct cont_result_impl<void, G, false> {
	using type = std::invoke_result_t<G>;
};

template <class R, class G>
inline constexpr bool takes_future = std::is_invocable_v<G, future<R>>;

template <class R, class G>
using cont_result = typename cont_result_impl<R, G, takes_future<R, G>>::type;

/* The heap block of a continuation: its callable, the antecedent's future, and the
 * continuation's result. g is made before ante takes the antecedent, so that a
 * throwing move of g leaves the caller's future as it was. */
template <class U, class G, class R>
struct cont_job final : result_state<U> {
	std::optional<G> g;
	future<R> ante;

	template <class G2>
	cont_job(G2 &&g2, future<R> &a)
		: result_state<U>(2), g(std::in_place, std::forward<G2>(g2)), ante(std::move(a))
	{
	}
	void
	unrun() noexcept override
	{
		g.reset();
		ante = future<R>();
	}

	static int
	run(void *p) noexcept
	{
		auto *s = static_cast<cont_job *>(p);
		token_scope scope(nullptr);
		try {
			if constexpr (takes_future<R, G>) {
				s->ante.settle();
				s->value.set([&]() -> decltype(auto) {
					return std::invoke(std::move(*s->g), std::move(s->ante));
				});
			} else if constexpr (std::is_void_v<R>) {
				s->ante.get();
				s->value.set([&]() -> decltype(auto) {
					return std::invoke(std::move(*s->g));
				});
			} else {
				s->value.set([&]() -> decltype(auto) {
					return std::invoke(std::move(*s->g), s->ante.get());
				});
			}
			s->st = status::value;
		} catch (...) {
			s->error = std::current_exception();
			s->st = status::error;
		}
		s->g.reset();
		s->ante = future<R>();
		s->release();
		return 0;
	}
};

} // namespace detail

template <class R>
template <class G>
auto
future<R>::then(G &&g)
{
	using Gd = std::decay_t<G>;
	using U = detail::cont_result<R, Gd>;
	using S = detail::cont_job<U, Gd, R>;
	if (!f_)
		throw std::future_error(std::future_errc::no_state);
	S *s = new S(std::forward<G>(g), *this);
	heist_future *out = nullptr;
	int err = heist_future_then(s->ante.f_, &S::run, s, &out);
	if (err) {
		*this = std::move(s->ante);
		delete s;
		detail::throw_error(err, "heist::future::then");
	}
	return future<U>(out, s, 0, nullptr);
}

/* ---------------------------------------------------------------------------------- */
/* Dependent tasks                                                                    */

/**
 * A reference to a heist::future of any result type, naming it as an input of a
 * dependent task (pool::submit_after, heist::when_all): neither owns nor consumes it.
 * Made implicitly from a future, so that inputs of different types go in one list
 * ({a, b, c}); it lives only for the call it is passed to, and the future may then be
 * moved, waited for, read with get() or dropped, as the dependent does not need it.
 */
class future_ref {
public:
	template <class R>
	future_ref(const future<R> &f) noexcept
		: p_(&f), hold_(&hold_of<R>), c_(f.native_handle())
	{
	}

	/** The C future (nullptr for an empty future), still owned by the future. */
	heist_future *native_handle() const noexcept { return c_; }

private:
	friend class pool_ref;

	template <class R>
	static detail::state_base *
	hold_of(const void *p)
	{
		return static_cast<const future<R> *>(p)->hold();
	}

	/* A counted reference for the dependent (future::hold). */
	detail::state_base *hold() const { return hold_(p_); }

	const void *p_;
	detail::state_base *(*hold_)(const void *);
	heist_future *c_;
};

/** The tag of pool::submit_after's form that runs the task even when an input failed
 *  or was cancelled (HEIST_AFTER_ALWAYS). */
struct after_always_t {
	explicit after_always_t() = default;
};
inline constexpr after_always_t after_always{};

namespace detail {

/* A dependent's counted references to its inputs (future::hold), in argument order: up
 * to 4 in place, more in one block. */
class input_list {
public:
	explicit input_list(std::size_t n) : big_(n > in_place ? new state_base *[n] : nullptr) {}
	input_list(const input_list &) = delete;
	input_list &operator=(const input_list &) = delete;
	~input_list() { clear(); }

	void push(state_base *s) noexcept { data()[n_++] = s; }
	std::size_t size() const noexcept { return n_; }
	state_base *operator[](std::size_t i) noexcept { return data()[i]; }

	/* Let every input go. Idempotent. */
	void
	clear() noexcept
	{
		state_base **d = data();
		for (std::size_t i = 0; i < n_; i++)
			d[i]->release();
		n_ = 0;
	}

private:
	enum : std::size_t { in_place = 4 };
	state_base **data() noexcept { return big_ ? big_.get() : small_; }

	state_base *small_[in_place] = {};
	std::unique_ptr<state_base *[]> big_;
	std::size_t n_ = 0;
};

/* The heap block of a dependent task: its callable and arguments, its inputs, its
 * result. The C job is submitted with HEIST_AFTER_ALWAYS whatever the form: the C
 * library reads an input's failure in its int, and a C++ future's int is not that (an
 * int result is the value itself; a heap job's exception is in its block, its int 0),
 * so the trampoline reads each input as get() would (state_base::failure) and, unless
 * Always, ends with the first failure in argument order without calling f. */
template <class R, class Fn, class... T>
struct after_job final : result_state<R> {
	std::optional<bound<Fn, T...>> b;
	input_list ins;
	bool always;

	template <class F, class... A>
	after_job(std::size_t n, bool all, F &&f, A &&...a)
		: result_state<R>(2), ins(n), always(all)
	{
		b.emplace(std::in_place, std::forward<F>(f), std::forward<A>(a)...);
	}
	void
	unrun() noexcept override
	{
		b.reset();
		ins.clear();
	}

	static int
	run(void *p) noexcept
	{
		auto *s = static_cast<after_job *>(p);
		token_scope scope(nullptr);
		std::exception_ptr failed;
		for (std::size_t i = 0; !s->always && !failed && i < s->ins.size(); i++)
			failed = s->ins[i]->failure();
		s->ins.clear();	/* before the call: nothing in f needs them */
		if (failed) {
			s->error = std::move(failed);
			s->st = status::error;
		} else {
			try {
				bound<Fn, T...> &bd = *s->b;
				s->value.set([&]() -> decltype(auto) {
					return bd.args.call(std::move(bd.fn));
				});
				s->st = status::value;
			} catch (...) {
				s->error = std::current_exception();
				s->st = status::error;
			}
		}
		s->b.reset();	/* the callable and its arguments end on the worker */
		s->release();	/* the job's reference */
		return 0;	/* always 0: anything else means it never ran */
	}
};

/* Whether Range is a range whose elements name futures (future<R> or future_ref). */
template <class Range, class = void>
struct is_future_range : std::false_type {};
template <class Range>
struct is_future_range<
	Range, std::void_t<decltype(std::begin(std::declval<const Range &>())),
			   decltype(std::end(std::declval<const Range &>()))>>
	: std::is_convertible<decltype(*std::begin(std::declval<const Range &>())), future_ref> {
};

template <class Range>
inline constexpr bool is_future_range_v = is_future_range<Range>::value;

} // namespace detail

/* ---------------------------------------------------------------------------------- */
/* Fork-join                                                                          */

namespace detail {

/* A closure called by the C library (the spawned half of join, the function of
 * pool::run): the caller's closure, by pointer, its result and its exception, all in
 * the caller's frame. */
template <class B, class RB>
struct call_frame {
	std::remove_reference_t<B> *fn;
	result_slot<RB> result;
	std::exception_ptr error;

	static int
	run(void *p) noexcept
	{
		auto *fr = static_cast<call_frame *>(p);
		try {
			fr->result.set(
				[fr]() -> decltype(auto) { return std::invoke(std::forward<B>(*fr->fn)); });
		} catch (...) {
			fr->error = std::current_exception();
		}
		return 0;
	}
};

template <class R>
using join_part = std::conditional_t<std::is_void_v<R>, std::monostate, R>;

template <class RA, class RB>
using join_result = std::conditional_t<std::is_void_v<RA> && std::is_void_v<RB>, void,
				       std::pair<join_part<RA>, join_part<RB>>>;

template <class R>
join_part<R>
take_part(result_slot<R> &s)
{
	if constexpr (std::is_void_v<R>)
		return std::monostate{};
	else
		return s.take();
}

} // namespace detail

/**
 * Run a() and b() in parallel and return their results as a std::pair (void when both
 * return void; a void half is std::monostate). b is spawned (another worker may steal
 * it), a runs on the calling thread, then b is synced, as heist_join. No heap
 * allocation: the task record and both closures stay in the caller's frame. An
 * exception from either is rethrown once both are done (a's first). Outside a worker
 * heist_spawn runs b at once, so both run on the calling thread, b first: enter the
 * pool with pool::run.
 */
template <class A, class B>
auto
join(A &&a, B &&b) -> detail::join_result<std::invoke_result_t<A>, std::invoke_result_t<B>>
{
	using RA = std::invoke_result_t<A>;
	using RB = std::invoke_result_t<B>;
	detail::call_frame<B, RB> fb{&b, {}, {}};
	heist_task t;
	heist_spawn(&t, &detail::call_frame<B, RB>::run, &fb);
	detail::result_slot<RA> ra;
	std::exception_ptr ea;
	try {
		ra.set([&a]() -> decltype(auto) { return std::invoke(std::forward<A>(a)); });
	} catch (...) {
		ea = std::current_exception();
	}
	/* Not stolen: run b here, by a direct call the compiler can inline (its type
	 * is known), not through the record's pointer (heist.h, HEIST__POP). */
	if (HEIST__POP(&t))
		detail::call_frame<B, RB>::run(&fb);
	else
		(heist_sync)(&t);
	if (ea)
		std::rethrow_exception(ea);
	if (fb.error)
		std::rethrow_exception(fb.error);
	if constexpr (!(std::is_void_v<RA> && std::is_void_v<RB>))
		return {detail::take_part(ra), detail::take_part(fb.result)};
}

/**
 * The worker a fork-join computation runs on (heist_worker in C), for the join below
 * whose halves receive it: passed down a recursion, it spares each spawn and sync the
 * look-up of the thread's worker (on Windows a call each: there a recursion of joins
 * runs several times faster with it; with gcc on x86-64 Linux the same instructions,
 * and somewhat less time: docs/benchmarks.md). Belongs to the calling thread and to
 * the frame that asked for it: pass it down, never to another thread.
 */
class worker {
public:
	/** The calling thread's worker, or a stand-in on a thread that is no worker
	 *  (heist_worker_self). */
	static worker self() noexcept { return worker(heist_worker_self()); }
	explicit worker(heist_worker *w) noexcept : w_(w) {}
	heist_worker *get() const noexcept { return w_; }
	friend bool operator==(worker a, worker b) noexcept { return a.w_ == b.w_; }
	friend bool operator!=(worker a, worker b) noexcept { return a.w_ != b.w_; }

private:
	heist_worker *w_;
};

namespace detail {

/* join(worker, a, b)'s spawned half: b called with the worker of the thread that
 * runs it (the spawner's by the sync's direct call, a thief's by the library). */
template <class B, class RB>
struct call_frame_w {
	std::remove_reference_t<B> *fn;
	result_slot<RB> result;
	std::exception_ptr error;

	void
	call(heist_worker *w) noexcept
	{
		try {
			result.set([this, w]() -> decltype(auto) {
				return std::invoke(std::forward<B>(*fn), worker(w));
			});
		} catch (...) {
			error = std::current_exception();
		}
	}

	static int
	run(void *p) noexcept
	{
		static_cast<call_frame_w *>(p)->call(heist_worker_self());
		return 0;
	}
};

} // namespace detail

/**
 * join(a, b) for halves that receive the worker: a(w) runs on the calling thread, b
 * is spawned with w and called with the worker that runs it (w itself unless a thief
 * took it), as HEIST_WORKER_TASK_n does in C. w is the worker the caller received, or
 * worker::self(). Results, exceptions and the rules are join(a, b)'s.
 *
 *     long fib(heist::worker w, int n)
 *     {
 *             if (n < 2)
 *                     return n;
 *             auto [a, b] = heist::join(w, [n](heist::worker v) { return fib(v, n - 1); },
 *                                       [n](heist::worker v) { return fib(v, n - 2); });
 *             return a + b;
 *     }
 */
template <class A, class B>
auto
join(worker w, A &&a, B &&b)
	-> detail::join_result<std::invoke_result_t<A, worker>, std::invoke_result_t<B, worker>>
{
	using RA = std::invoke_result_t<A, worker>;
	using RB = std::invoke_result_t<B, worker>;
	detail::call_frame_w<B, RB> fb{&b, {}, {}};
	heist_task t;
	heist_fn run_b = &detail::call_frame_w<B, RB>::run;
	HEIST__SPAWN_ON(w.get(), &t, run_b, &fb);
	detail::result_slot<RA> ra;
	std::exception_ptr ea;
	try {
		ra.set([&a, w]() -> decltype(auto) { return std::invoke(std::forward<A>(a), w); });
	} catch (...) {
		ea = std::current_exception();
	}
	if (HEIST__POP_ON(w.get(), &t))
		fb.call(w.get());
	else
		(heist_sync)(&t);
	if (ea)
		std::rethrow_exception(ea);
	if (fb.error)
		std::rethrow_exception(fb.error);
	if constexpr (!(std::is_void_v<RA> && std::is_void_v<RB>))
		return {detail::take_part(ra), detail::take_part(fb.result)};
}

/**
 * A fork-join scope (not oneTBB's task_group, whose dynamic use, any number of
 * submitted jobs waited for together, is heist_group_* in C): spawning in a scope,
 * with zero heap allocation: up to N children at once,
 * each callable moved into one of the group's slots of Bytes bytes (a static_assert
 * says when one does not fit: capture by reference, or use std::ref), with a
 * heist_task record beside it, all in the caller's frame. spawn() pushes the child
 * (another worker may steal it); wait() syncs the children in reverse order and then
 * rethrows the exception of the earliest-spawned child that threw. A spawn beyond N
 * runs the child at once, inline (a legal fork-join schedule). The destructor waits
 * too, and drops the children's exceptions (it cannot throw): call wait().
 * Syncs must nest: a group waits before anything spawned earlier in the same frame
 * (another group, a join) is synced, which the reverse order of destructors gives.
 * Not heist_group (a set of submitted jobs, heist_group_*), which allocates.
 */
template <std::size_t N = 8, std::size_t Bytes = 48>
class task_group {
public:
	task_group() noexcept = default;
	task_group(const task_group &) = delete;
	task_group &operator=(const task_group &) = delete;
	~task_group() { sync_all(); }

	/** Spawn f() (its result is dropped). Throws what moving f throws; then nothing
	 *  was spawned. */
	template <class F>
	void
	spawn(F &&f)
	{
		using Fn = std::decay_t<F>;
		static_assert(sizeof(Fn) <= Bytes,
			      "heist::task_group: the callable does not fit a slot; capture by "
			      "reference, pass std::ref(f), or raise the Bytes parameter");
		static_assert(alignof(Fn) <= alignof(std::max_align_t),
			      "heist::task_group: the callable is over-aligned");
		if (n_ == N) {
			try {
				Fn fn(std::forward<F>(f));
				std::invoke(std::move(fn));
			} catch (...) {
				if (!overflow_)
					overflow_ = std::current_exception();
			}
			return;
		}
		slot &s = slots_[n_];
		::new (static_cast<void *>(s.buf)) Fn(std::forward<F>(f));
		heist_spawn(&s.task, &run<Fn>, &s);
		n_++;
	}

	/** Sync every child spawned since the last wait, then rethrow the first
	 *  exception (in spawn order; a child run inline because the group was full
	 *  comes after the spawned ones). The group may be used again afterwards. */
	void
	wait()
	{
		std::exception_ptr e = sync_all();
		if (e)
			std::rethrow_exception(e);
	}

	/** Children spawned and not yet synced. */
	std::size_t pending() const noexcept { return n_; }
	static constexpr std::size_t capacity() noexcept { return N; }

private:
	struct slot {
		heist_task task;
		alignas(std::max_align_t) unsigned char buf[Bytes];
		std::exception_ptr error;
	};

	template <class Fn>
	static int
	run(void *p) noexcept
	{
		slot *s = static_cast<slot *>(p);
		Fn *fn = std::launder(reinterpret_cast<Fn *>(s->buf));
		try {
			std::invoke(std::move(*fn));
		} catch (...) {
			s->error = std::current_exception();
		}
		fn->~Fn();
		return 0;
	}

	std::exception_ptr
	sync_all() noexcept
	{
		std::exception_ptr first;
		while (n_ > 0) {
			slot &s = slots_[--n_];
			heist_sync(&s.task);
			if (s.error)
				first = std::move(s.error);	/* the earliest wins: it comes last */
			s.error = nullptr;
		}
		if (!first && overflow_)
			first = overflow_;
		overflow_ = nullptr;
		return first;
	}

	slot slots_[N];
	std::size_t n_ = 0;
	std::exception_ptr overflow_;
};

/* ---------------------------------------------------------------------------------- */
/* Pools                                                                              */

/** heist_config, zero-filled (every field's default) by its constructor. */
struct config : ::heist_config {
	config() noexcept : ::heist_config() {}
};

namespace detail {

template <class It, class = void>
struct is_random_access : std::false_type {};
template <class It>
struct is_random_access<It, std::void_t<typename std::iterator_traits<It>::iterator_category>>
	: std::is_base_of<std::random_access_iterator_tag,
			  typename std::iterator_traits<It>::iterator_category> {};

/* A for_each in flight: the body, how to turn the C indices into the user's, and the
 * first exception. Lives in the caller's frame. */
template <class Body, class Map>
struct loop {
	Body *body;
	Map map;
	std::atomic<bool> failed{false};
	std::exception_ptr error;

	static int
	run(void *arg, std::size_t b, std::size_t e) noexcept
	{
		auto *l = static_cast<loop *>(arg);
		/* relaxed: a hint to skip work; the error itself is read after the loop,
		 * which heist_for_each orders after every body. */
		if (l->failed.load(std::memory_order_relaxed))
			return code_side;
		try {
			l->map(*l->body, b, e);
		} catch (...) {
			bool expected = false;
			if (l->failed.compare_exchange_strong(expected, true,
							      std::memory_order_acq_rel))
				l->error = std::current_exception();
			return code_side;
		}
		return 0;
	}
};

/* A reduce in flight: body(lo, hi, acc) -> acc and combine(a, b) -> a (+) b over T,
 * the index map, and the first exception. Lives in the caller's frame; the C library
 * keeps the accumulators (T is trivially copyable). */
template <class T, class Body, class Combine, class Map>
struct reduction {
	Body *body;
	Combine *combine;
	Map map;
	std::atomic<bool> failed{false};
	std::exception_ptr error;

	void
	fail() noexcept
	{
		bool expected = false;
		if (failed.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
			error = std::current_exception();
	}

	static int
	run(void *arg, void *acc, std::size_t b, std::size_t e) noexcept
	{
		auto *r = static_cast<reduction *>(arg);
		/* relaxed: a hint, as in loop::run. */
		if (r->failed.load(std::memory_order_relaxed))
			return code_side;
		try {
			T a;
			std::memcpy(&a, acc, sizeof a);
			a = r->map(*r->body, b, e, std::move(a));
			std::memcpy(acc, &a, sizeof a);
		} catch (...) {
			r->fail();
			return code_side;
		}
		return 0;
	}

	static void
	join(void *arg, void *into, const void *from) noexcept
	{
		auto *r = static_cast<reduction *>(arg);
		try {
			T a, b;
			std::memcpy(&a, into, sizeof a);
			std::memcpy(&b, from, sizeof b);
			a = std::invoke(*r->combine, std::move(a), std::move(b));
			std::memcpy(into, &a, sizeof a);
		} catch (...) {
			r->fail();
		}
	}
};

} // namespace detail

/**
 * A view of a heist_pool owned elsewhere (by a heist::pool, or by C code): every
 * operation of a pool, no ownership. Copyable; the pool must outlive its use.
 */
class pool_ref {
public:
	explicit pool_ref(heist_pool *p) noexcept : p_(p) {}

	/** The C pool. */
	heist_pool *native_handle() const noexcept { return p_; }
	/** Workers (heist_pool_size). */
	unsigned size() const noexcept { return heist_pool_size(p_); }
	/** Tasks queued, not yet started (heist_pool_pending). */
	std::size_t pending() const noexcept { return heist_pool_pending(p_); }

	/** heist_pool_wait_idle. Throws std::system_error (EDEADLK from a task of this
	 *  pool, EINVAL for an empty pool, ESHUTDOWN once another thread began to
	 *  destroy it, or in a forked child). */
	void
	wait_idle() const
	{
		int err = heist_pool_wait_idle(p_);
		if (err)
			detail::throw_error(err, "heist::pool::wait_idle");
	}

	/**
	 * Run f(args...) on the pool; its result or exception in the returned future.
	 * f and args are decay-copied (moved when given rvalues) into the task and f is
	 * invoked with them as rvalues, as std::async does. Small trivially copyable
	 * ones (submit_is_inline) take no heap allocation; others one block.
	 * From a worker of this pool the task goes on the worker's own deque. Throws
	 * std::bad_alloc, std::system_error (ESHUTDOWN after the pool's destruction
	 * began, EINVAL for an empty pool); nothing was queued then.
	 */
	template <class F, class... Args>
	[[nodiscard]] auto
	submit(F &&f, Args &&...args) -> future<detail::result_of<F, Args...>>
	{
		return submit_with<false, false>(nullptr, std::forward<F>(f),
						 std::forward<Args>(args)...);
	}

	/**
	 * submit with a token: if the token is cancelled before a worker takes the task,
	 * the task never runs and its future throws cancelled_error; if during,
	 * heist::cancelled() turns true in it. The token is checked by the task's
	 * trampoline (the C token is not attached to the C job; see docs/cxx.md).
	 */
	template <class F, class... Args>
	[[nodiscard]] auto
	submit_cancellable(const cancel_token &token, F &&f, Args &&...args)
		-> future<detail::result_of<F, Args...>>
	{
		if (!token.b_)
			detail::throw_error(EINVAL, "heist::pool::submit_cancellable");
		return submit_with<false, true>(token.b_, std::forward<F>(f),
						std::forward<Args>(args)...);
	}

	/**
	 * Fire and forget: run f(args...) on the pool, its result dropped. An exception
	 * it throws goes to the exception handler (set_exception_handler; by default
	 * std::terminate with a message). Small trivially copyable callables
	 * (post_is_inline) take no heap allocation. Throws as submit.
	 */
	template <class F, class... Args>
	void
	post(F &&f, Args &&...args)
	{
		submit_with<true, false>(nullptr, std::forward<F>(f), std::forward<Args>(args)...);
	}

	/**
	 * submit at a priority (heist_submit_priority: HEIST_PRIORITY_HIGH, _NORMAL or
	 * _LOW): a worker takes the oldest high task before any other queued work, low
	 * tasks only when it finds nothing else (one every 64 task starts at least). At
	 * HEIST_PRIORITY_NORMAL this is submit; at the others the task takes one heap
	 * block whatever its size. Throws as submit, and std::system_error (EINVAL) for a
	 * priority that is none of the three; nothing was queued then.
	 */
	template <class F, class... Args>
	[[nodiscard]] auto
	submit_priority(int priority, F &&f, Args &&...args)
		-> future<detail::result_of<F, Args...>>
	{
		if (priority == HEIST_PRIORITY_NORMAL)
			return submit(std::forward<F>(f), std::forward<Args>(args)...);
		return submit_heap<false>(priority, nullptr, std::forward<F>(f),
					  std::forward<Args>(args)...);
	}

	/** post at a priority, as submit_priority: fire and forget. Throws as it. */
	template <class F, class... Args>
	void
	post_priority(int priority, F &&f, Args &&...args)
	{
		if (priority == HEIST_PRIORITY_NORMAL)
			post(std::forward<F>(f), std::forward<Args>(args)...);
		else
			submit_heap<true>(priority, nullptr, std::forward<F>(f),
					  std::forward<Args>(args)...);
	}

	/**
	 * Run f(args...) on the pool once every input is done (heist_submit_after), and
	 * return its future; no thread waits or polls meanwhile. inputs: futures of any
	 * result types and any pools, as a braced list ({a, b, c}) or a range (a
	 * std::vector<heist::future<R>>, of heist::future_ref). They are not consumed:
	 * the caller keeps them, and may get() them, hand them to other dependents, or
	 * drop them at once (the task still waits for them). If an input failed (its
	 * get() would throw) or was cancelled, f never runs and the returned future
	 * rethrows the first such input's exception in argument order (cancelled_error
	 * for one cancelled), as the C default does; the after_always form runs f
	 * anyway. No inputs: runnable at once, as submit. f and args are stored as
	 * submit stores a heap job's; plus, per input, a counted reference, and the
	 * first time an inline future (submit_is_inline) is an input, one small block
	 * that then keeps its C future for every dependent. The task is queued by the
	 * thread that finishes the last input; a waiter of its future never runs it
	 * early, and cancelling the future before it runs ends it unrun (the inputs go
	 * on). Throws std::future_error (no_state) for an empty input, std::bad_alloc,
	 * std::system_error (EINVAL for an empty pool; ESHUTDOWN when every input is
	 * done and the pool is being destroyed); nothing was queued then. A pool
	 * destroyed before the last input ends ends the task unrun: its future throws
	 * std::system_error (ESHUTDOWN).
	 */
	template <class F, class... Args>
	[[nodiscard]] auto
	submit_after(std::initializer_list<future_ref> inputs, F &&f, Args &&...args)
		-> future<detail::result_of<F, Args...>>
	{
		return after_impl(false, inputs.begin(), inputs.size(), std::forward<F>(f),
				  std::forward<Args>(args)...);
	}

	/** submit_after with the inputs as a range (a std::vector<heist::future<R>>, say). */
	template <class Range, class F, class... Args,
		  std::enable_if_t<detail::is_future_range_v<Range>, int> = 0>
	[[nodiscard]] auto
	submit_after(const Range &inputs, F &&f, Args &&...args)
		-> future<detail::result_of<F, Args...>>
	{
		return after_impl(false, std::begin(inputs), range_size(inputs),
				  std::forward<F>(f), std::forward<Args>(args)...);
	}

	/**
	 * submit_after that runs f even when an input failed or was cancelled
	 * (HEIST_AFTER_ALWAYS): f sees each input's outcome through its future, which
	 * stays the caller's (f may call get() on it if the caller keeps it alive for
	 * f and does not read it itself). The returned future is f's.
	 */
	template <class F, class... Args>
	[[nodiscard]] auto
	submit_after(after_always_t, std::initializer_list<future_ref> inputs, F &&f,
		     Args &&...args) -> future<detail::result_of<F, Args...>>
	{
		return after_impl(true, inputs.begin(), inputs.size(), std::forward<F>(f),
				  std::forward<Args>(args)...);
	}

	/** The after_always form with the inputs as a range. */
	template <class Range, class F, class... Args,
		  std::enable_if_t<detail::is_future_range_v<Range>, int> = 0>
	[[nodiscard]] auto
	submit_after(after_always_t, const Range &inputs, F &&f, Args &&...args)
		-> future<detail::result_of<F, Args...>>
	{
		return after_impl(true, std::begin(inputs), range_size(inputs),
				  std::forward<F>(f), std::forward<Args>(args)...);
	}

	/**
	 * Run f() on the pool and wait for it, returning its result or rethrowing its
	 * exception (heist_run): how an outside thread enters the pool for fork-join; on
	 * a worker of this pool f runs inline. No heap allocation. Throws
	 * std::system_error (ESHUTDOWN, EINVAL) or std::bad_alloc if it could not enter.
	 */
	template <class F>
	std::invoke_result_t<F>
	run(F &&f)
	{
		using R = std::invoke_result_t<F>;
		detail::call_frame<F, R> fr{&f, {}, {}};
		int err = heist_run(p_, &detail::call_frame<F, R>::run, &fr);
		if (err)
			detail::throw_error(err, "heist::pool::run");
		if (fr.error)
			std::rethrow_exception(fr.error);
		return fr.result.take();
	}

	/**
	 * Parallel loop over the integers [begin, end) (any integer types; their common
	 * type is the index type), split lazily as heist_for_each does; grain 0:
	 * automatic. body(i) per index, or body(b, e) per sub-range when it takes two
	 * indices. The body is called from several threads at once. The calling thread
	 * takes part; on a worker the loop forks in place, so loops nest. The first
	 * exception a body throws stops the sub-ranges not yet started, waits for those
	 * running, and is rethrown (first one wins; the others are dropped). No heap
	 * allocation. begin > end throws std::system_error (EINVAL), as in C.
	 */
	template <class I, class J, class Body,
		  std::enable_if_t<std::is_integral_v<I> && std::is_integral_v<J>, int> = 0>
	void
	for_each(I begin, J end, Body &&body, std::size_t grain = 0)
	{
		using T = std::common_type_t<I, J>;
		using U = std::make_unsigned_t<T>;
		using B = std::remove_reference_t<Body>;
		static_assert(sizeof(U) <= sizeof(std::size_t), "heist::for_each: index too wide");
		T b = static_cast<T>(begin), e = static_cast<T>(end);
		if (e < b)
			detail::throw_error(EINVAL, "heist::pool::for_each");
		std::size_t n = static_cast<std::size_t>(static_cast<U>(e) - static_cast<U>(b));
		auto index = [b](std::size_t i) {
			return static_cast<T>(static_cast<U>(b) + static_cast<U>(i));
		};
		if constexpr (std::is_invocable_v<B &, T, T>) {
			auto map = [index](B &f, std::size_t lo, std::size_t hi) {
				std::invoke(f, index(lo), index(hi));
			};
			loop_impl<B>(body, map, n, grain);
		} else {
			static_assert(std::is_invocable_v<B &, T>,
				      "heist::for_each: the body takes an index, or two (a range)");
			auto map = [index](B &f, std::size_t lo, std::size_t hi) {
				for (std::size_t i = lo; i < hi; i++)
					std::invoke(f, index(i));
			};
			loop_impl<B>(body, map, n, grain);
		}
	}

	/**
	 * Parallel loop over random-access iterators [first, last): body(element) per
	 * element, or body(b, e) per sub-range of iterators when it takes two. As the
	 * integer form otherwise.
	 */
	template <class It, class Body,
		  std::enable_if_t<!std::is_integral_v<It> && detail::is_random_access<It>::value,
				   int> = 0>
	void
	for_each(It first, It last, Body &&body, std::size_t grain = 0)
	{
		using B = std::remove_reference_t<Body>;
		auto d = last - first;
		if (d < 0)
			detail::throw_error(EINVAL, "heist::pool::for_each");
		using D = typename std::iterator_traits<It>::difference_type;
		if constexpr (std::is_invocable_v<B &, It, It>) {
			auto map = [first](B &f, std::size_t lo, std::size_t hi) {
				std::invoke(f, first + static_cast<D>(lo), first + static_cast<D>(hi));
			};
			loop_impl<B>(body, map, static_cast<std::size_t>(d), grain);
		} else {
			static_assert(std::is_invocable_v<B &, typename std::iterator_traits<It>::reference>,
				      "heist::for_each: the body takes an element, or two iterators");
			auto map = [first](B &f, std::size_t lo, std::size_t hi) {
				for (std::size_t i = lo; i < hi; i++)
					std::invoke(f, first[static_cast<D>(i)]);
			};
			loop_impl<B>(body, map, static_cast<std::size_t>(d), grain);
		}
	}

	/**
	 * Parallel reduction over the integers [begin, end), over heist_reduce:
	 * body(lo, hi, acc) returns acc with [lo, hi) accumulated into it, and
	 * combine(a, b) returns a (+) b, where a covers lower indices than b (it must be
	 * associative with identity as its neutral element; it need not be
	 * commutative). Returns identity (+) everything, combined in index order. T is
	 * trivially copyable and default-constructible (the C library keeps the
	 * accumulators). Where the combines
	 * fall depends on the schedule, so a floating-point result may differ in its
	 * last bits from run to run: see reduce_deterministic. The calling thread takes
	 * part and reductions nest, as for for_each. The first exception from body or
	 * combine stops the sub-ranges not yet started and is rethrown. begin > end
	 * throws std::system_error (EINVAL).
	 */
	template <class I, class J, class T, class Body, class Combine,
		  std::enable_if_t<std::is_integral_v<I> && std::is_integral_v<J>, int> = 0>
	T
	reduce(I begin, J end, T identity, Body &&body, Combine &&combine, std::size_t grain = 0)
	{
		return reduce_impl(heist_reduce, begin, end, identity, body, combine, grain);
	}

	/**
	 * reduce with a result that is the same bit for bit for every pool size and
	 * schedule (heist_reduce_deterministic): floating-point sums reproduce.
	 */
	template <class I, class J, class T, class Body, class Combine,
		  std::enable_if_t<std::is_integral_v<I> && std::is_integral_v<J>, int> = 0>
	T
	reduce_deterministic(I begin, J end, T identity, Body &&body, Combine &&combine,
			     std::size_t grain = 0)
	{
		return reduce_impl(heist_reduce_deterministic, begin, end, identity, body, combine,
				   grain);
	}

protected:
	heist_pool *p_;

private:
	using c_reduce = int (*)(heist_pool *, std::size_t, std::size_t, std::size_t, void *,
				 std::size_t, const void *, heist_reduce_fn, heist_combine_fn,
				 void *);

	template <class I, class J, class T, class Body, class Combine>
	T
	reduce_impl(c_reduce form, I begin, J end, const T &identity, Body &body,
		    Combine &combine, std::size_t grain)
	{
		static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>,
			      "heist::reduce: the accumulator is trivially copyable and "
			      "default-constructible");
		using X = std::common_type_t<I, J>;
		using U = std::make_unsigned_t<X>;
		using B = std::remove_reference_t<Body>;
		using C = std::remove_reference_t<Combine>;
		static_assert(sizeof(U) <= sizeof(std::size_t), "heist::reduce: index too wide");
		static_assert(std::is_invocable_r_v<T, B &, X, X, T>,
			      "heist::reduce: body(lo, hi, acc) returns the accumulator");
		static_assert(std::is_invocable_r_v<T, C &, T, T>,
			      "heist::reduce: combine(a, b) returns a (+) b");
		X b = static_cast<X>(begin), e = static_cast<X>(end);
		if (e < b)
			detail::throw_error(EINVAL, "heist::pool::reduce");
		std::size_t n = static_cast<std::size_t>(static_cast<U>(e) - static_cast<U>(b));
		auto map = [b](B &f, std::size_t lo, std::size_t hi, T acc) -> T {
			auto index = [b](std::size_t i) {
				return static_cast<X>(static_cast<U>(b) + static_cast<U>(i));
			};
			return std::invoke(f, index(lo), index(hi), std::move(acc));
		};
		using R = detail::reduction<T, B, C, decltype(map)>;
		R r{&body, &combine, map, {}, {}};
		T result;
		int err = form(p_, 0, n, grain, &result, sizeof result, &identity, &R::run, &R::join,
			       &r);
		/* acquire: pairs with fail()'s compare-exchange (the C call orders it too). */
		if (r.failed.load(std::memory_order_acquire))
			std::rethrow_exception(r.error);
		if (err)
			detail::throw_error(err, "heist::pool::reduce");
		return result;
	}

	template <class Range>
	static std::size_t
	range_size(const Range &r)
	{
		return static_cast<std::size_t>(std::distance(std::begin(r), std::end(r)));
	}

	/* One dependent task over n inputs from first (each converts to future_ref). */
	template <class It, class F, class... Args>
	auto
	after_impl(bool always, It first, std::size_t n, F &&f, Args &&...args)
		-> future<detail::result_of<F, Args...>>
	{
		using R = detail::result_of<F, Args...>;
		using S = detail::after_job<R, std::decay_t<F>, std::decay_t<Args>...>;
		enum : std::size_t { on_stack = 8 };
		heist_future *small[on_stack];
		std::unique_ptr<heist_future *[]> big(n > on_stack ? new heist_future *[n]
								   : nullptr);
		heist_future **cf = big ? big.get() : small;
		std::unique_ptr<S> s(new S(n, always, std::forward<F>(f), std::forward<Args>(args)...));
		for (std::size_t i = 0; i < n; i++, ++first) {
			const future_ref r = *first;
			s->ins.push(r.hold());	/* on a throw, s lets the others go */
			cf[i] = r.native_handle();
		}
		::heist_after opt{};
		opt.flags = HEIST_AFTER_ALWAYS;	/* see detail::after_job */
		heist_future *out = nullptr;
		int err = heist_submit_after(p_, n ? cf : nullptr, n, &S::run, s.get(), &opt, &out);
		if (err)
			detail::throw_error(err, "heist::pool::submit_after");
		return future<R>(out, s.release(), 0, nullptr);
	}

	template <class B, class Map>
	void
	loop_impl(B &body, Map map, std::size_t n, std::size_t grain)
	{
		detail::loop<B, Map> l{&body, map, {}, {}};
		int err = heist_for_each(p_, 0, n, grain, &detail::loop<B, Map>::run, &l);
		/* acquire: pairs with the body's compare-exchange (heist_for_each orders
		 * it too). */
		if (l.failed.load(std::memory_order_acquire))
			std::rethrow_exception(l.error);
		if (err)
			detail::throw_error(err, "heist::pool::for_each");
	}

	/* Post: no future, exceptions to the handler. Token: tok is the token. */
	template <bool Post, bool Token, class F, class... Args>
	auto
	submit_with(detail::token_block *tok, F &&f, Args &&...args)
		-> std::conditional_t<Post, void, future<detail::result_of<F, Args...>>>
	{
		using Fn = std::decay_t<F>;
		using R = detail::result_of<F, Args...>;
		using P = detail::pack<std::decay_t<Args>...>;
		constexpr bool ticket =
			detail::needs_ticket<Post, R, Fn, std::decay_t<Args>...>;
		if constexpr (detail::goes_inline<Post, Token, F, Args...>) {
			using J = detail::inline_job<Fn, P, ticket, Token>;
			detail::job_tail<ticket, Token> tail;
			if constexpr (ticket)
				tail.t = detail::next_ticket();
			if constexpr (Token)
				tail.tok = tok;
			J j(tail, std::forward<F>(f), std::forward<Args>(args)...);
			if constexpr (Token)
				tok->acquire();	/* the job's; its trampoline releases it */
			heist_future *out = nullptr;
			int err = heist_submit_copy(p_, &detail::run_inline<J, R, Post>, &j, sizeof j,
						    Post ? nullptr : &out);
			if (err) {
				if constexpr (Token)
					tok->release();
				detail::throw_error(err, Post ? "heist::pool::post"
							      : "heist::pool::submit");
			}
			if constexpr (!Post)
				return future<R>(out, nullptr, j.get_ticket(), j.get_token());
		} else {
			return submit_heap<Post>(HEIST_PRIORITY_NORMAL, tok, std::forward<F>(f),
						 std::forward<Args>(args)...);
		}
	}

	/* submit_with's job in one heap block, queued at priority. */
	template <bool Post, class F, class... Args>
	auto
	submit_heap(int priority, detail::token_block *tok, F &&f, Args &&...args)
		-> std::conditional_t<Post, void, future<detail::result_of<F, Args...>>>
	{
		using Fn = std::decay_t<F>;
		using R = detail::result_of<F, Args...>;
		using S = detail::heap_job<R, Post, Fn, std::decay_t<Args>...>;
		S *s = new S(Post ? 1 : 2, tok, std::forward<F>(f), std::forward<Args>(args)...);
		heist_future *out = nullptr;
		int err = priority == HEIST_PRIORITY_NORMAL
				  ? heist_submit(p_, &S::run, s, Post ? nullptr : &out)
				  : heist_submit_priority(p_, priority, &S::run, s,
							  Post ? nullptr : &out);
		if (err) {
			delete s;
			detail::throw_error(err, Post ? "heist::pool::post" : "heist::pool::submit");
		}
		if constexpr (!Post)
			return future<R>(out, s, 0, nullptr);
	}
};

/**
 * A pool of worker threads (RAII over heist_pool). Non-copyable, movable; a moved-from
 * pool is empty (its operations fail with EINVAL). The destructor drains, as
 * heist_pool_destroy: every accepted task runs and every future is satisfied, then
 * the workers are joined. Destroying a pool from one of its own tasks aborts.
 */
class pool : public pool_ref {
public:
	/** One worker per core (per CPU without hwloc), as threads = 0. */
	pool() : pool(config()) {}
	/** threads workers (0: one per core, as heist_config.threads). */
	explicit pool(unsigned threads) : pool(with_threads(threads)) {}
	/** Throws std::system_error (EINVAL for a bad config, pthread_create's error) or
	 *  std::bad_alloc. */
	explicit pool(const ::heist_config &cfg) : pool_ref(nullptr)
	{
		int err = heist_pool_create(&p_, &cfg);
		if (err)
			detail::throw_error(err, "heist::pool");
	}
	pool(pool &&o) noexcept : pool_ref(std::exchange(o.p_, nullptr)) {}
	pool &
	operator=(pool &&o) noexcept
	{
		if (this != &o) {
			heist_pool_destroy(p_);
			p_ = std::exchange(o.p_, nullptr);
		}
		return *this;
	}
	pool(const pool &) = delete;
	pool &operator=(const pool &) = delete;
	~pool() { heist_pool_destroy(p_); }

private:
	static config
	with_threads(unsigned n) noexcept
	{
		config c;
		c.threads = n;
		return c;
	}
};

/* ---------------------------------------------------------------------------------- */
/* Promises: futures the program completes (std::promise, over heist_promise)         */

namespace detail {

/* The block a promise and its future share: the value or the exception, and the C
 * future, which the block keeps from the start (coded, as a graph run's: the C
 * future's int is the promise's own result, 0 for a value, code_side for the exception
 * in error, ECANCELED for a broken promise or a cancelled future). Counted: the
 * promise's reference and, once get_future() made it, the future's; either may go
 * first. */
template <class R>
struct promise_state final : result_state<R> {
	/* Set by the set_value or set_exception that writes the slot: two setters
	 * never write it at once, and the second one throws. */
	std::atomic<bool> claimed{false};

	promise_state() noexcept : result_state<R>(1) { this->coded = true; }
};

/* What heist::promise<R> does for every R; its set_value forms are its own. */
template <class R>
class promise_base {
public:
	promise_base(const promise_base &) = delete;
	promise_base &operator=(const promise_base &) = delete;

	/**
	 * The promise's future: get() waits for the set and returns the value or
	 * rethrows the exception, and throws cancelled_error if the promise was broken.
	 * It is a heist::future<R> like any other (then, cancel, when_all, submit_after),
	 * and may outlive the promise. Once: a second call throws std::future_error
	 * (future_already_retrieved), a moved-from promise std::future_error
	 * (no_state). Any thread.
	 */
	[[nodiscard]] future<R>
	get_future()
	{
		if (!p_)
			throw std::future_error(std::future_errc::no_state);
		if (retrieved_)
			throw std::future_error(std::future_errc::future_already_retrieved);
		retrieved_ = true;
		s_->acquire();	/* the future's */
		/* relaxed: set in the constructor, on this thread or before a move. */
		return future<R>(s_->shared.load(std::memory_order_relaxed), s_, 0, nullptr);
	}

	/**
	 * Complete the future with e: its get() rethrows it, and a continuation in the
	 * value form (then) or a dependent task is skipped with it, as for a task that
	 * threw. As set_value otherwise. Throws std::system_error (EINVAL) for a null e,
	 * and as set_value; the promise is then still unset.
	 */
	void
	set_exception(std::exception_ptr e)
	{
		if (p_ && !e)
			throw_error(EINVAL, "heist::promise::set_exception");
		complete(code_side, [&] { s_->error = std::move(e); });
	}

	/** Exchange two promises (their futures stay with their own). */
	void
	swap(promise_base &o) noexcept
	{
		std::swap(p_, o.p_);
		std::swap(s_, o.s_);
		std::swap(retrieved_, o.retrieved_);
	}

protected:
	explicit promise_base(pool_ref pool)
	{
		std::unique_ptr<promise_state<R>> s(new promise_state<R>);
		heist_future *f = nullptr;
		int err = heist_promise_create(pool.native_handle(), &p_, &f);
		if (err)
			throw_error(err, "heist::promise");
		/* relaxed: the block is ours alone until get_future() hands it on. */
		s->shared.store(f, std::memory_order_relaxed);	/* the block keeps f */
		s_ = s.release();
	}
	promise_base(promise_base &&o) noexcept
		: p_(std::exchange(o.p_, nullptr)), s_(std::exchange(o.s_, nullptr)),
		  retrieved_(std::exchange(o.retrieved_, false))
	{
	}
	promise_base &
	operator=(promise_base &&o) noexcept
	{
		promise_base moved(std::move(o));	/* not a cast: -Wuseless-cast */
		moved.swap(*this);	/* moved breaks what this held, if unset */
		return *this;
	}
	~promise_base()
	{
		if (!p_)
			return;
		heist_promise_release(p_);	/* unset: broken, its future cancelled */
		s_->release();
	}

	/* Write the slot with write(), then set the C promise to code. What write() throws
	 * leaves the promise unset. */
	template <class W>
	void
	complete(int code, W &&write)
	{
		if (!p_)
			throw std::future_error(std::future_errc::no_state);
		bool expected = false;
		/* acq_rel: a setter whose write threw gives the slot back (the release
		 * store below); the next one's writes come after its own. */
		if (!s_->claimed.compare_exchange_strong(expected, true,
							 std::memory_order_acq_rel))
			throw std::future_error(std::future_errc::promise_already_satisfied);
		try {
			write();
		} catch (...) {
			s_->claimed.store(false, std::memory_order_release);
			throw;
		}
		/* Publishes the slot to whoever sees the future done (heist.h). ECANCELED:
		 * the future was cancelled first, and nobody will read the slot; the block
		 * ends what it holds with its last reference. EINVAL (set twice) cannot
		 * happen past the claim. */
		heist_promise_set(p_, code);
	}

	heist_promise *p_ = nullptr;
	promise_state<R> *s_ = nullptr;
	bool retrieved_ = false;
};

} // namespace detail

/**
 * The writing end of a heist::future<R> that no task completes, as std::promise is of
 * std::future (heist_promise_create): the program sets a value or an exception once,
 * from any thread (an I/O callback, another event loop, a std::thread), and the
 * future is done: its waiters wake, its continuations are queued on the pool given
 * here, and what the setter wrote before the set is visible to whoever sees the future
 * done, as a task's writes are. Nothing of the promise runs on the pool. A worker
 * waiting on the future follows heist_future_wait's rule (a spare thread stands in),
 * so a task queued behind the waiter may be the one that sets it.
 *
 * Move-only. The destructor of a promise still unset breaks it: its future throws
 * cancelled_error, as for a task cancelled before it ran, and its continuations, in
 * either form, do not run: theirs throw cancelled_error too (heist_promise_release).
 * A moved-from promise is empty: every call throws std::future_error (no_state), its
 * destruction does nothing. get_future and a set may run on different threads at
 * once, and so may two sets (one wins, the other throws std::future_error,
 * promise_already_satisfied); a move or the destructor may not run beside any call.
 * A future seen done does not mean that the set has returned: end the promise on the
 * setting thread (move it there), or once that thread is joined or has said so. A set
 * after the future was cancelled (future::cancel) is accepted and the value dropped:
 * the future already throws cancelled_error. Storage: one heap block shared by the
 * promise and its future (the value or the exception, and the C future), and the C
 * library's job record.
 */
template <class R>
class promise : public detail::promise_base<R> {
public:
	/** A promise whose future's continuations run on pool. Throws std::bad_alloc,
	 *  std::system_error (EINVAL for an empty pool). */
	explicit promise(pool_ref pool) : detail::promise_base<R>(pool) {}
	promise(promise &&) noexcept = default;
	/** Breaks the promise this held, if it was unset, then takes o's. */
	promise &operator=(promise &&) noexcept = default;
	~promise() = default;

	/**
	 * Complete the future with a copy (or a move) of v, then wake its waiters and
	 * queue its continuations. Any thread, once. Throws std::future_error
	 * (promise_already_satisfied) after a set, (no_state) on a moved-from promise,
	 * and what copying or moving v throws; the promise is then unchanged.
	 */
	void
	set_value(const R &v)
	{
		this->complete(0, [&] {
			this->s_->value.set([&]() -> const R & { return v; });
		});
	}
	/** set_value, moving v. */
	void
	set_value(R &&v)
	{
		this->complete(0, [&] {
			this->s_->value.set([&]() -> R && { return std::move(v); });
		});
	}
};

/** A promise of a reference: its future's get() returns r itself. */
template <class R>
class promise<R &> : public detail::promise_base<R &> {
public:
	explicit promise(pool_ref pool) : detail::promise_base<R &>(pool) {}
	promise(promise &&) noexcept = default;
	promise &operator=(promise &&) noexcept = default;
	~promise() = default;

	/** Complete the future with r, which must outlive its use through the future. */
	void
	set_value(R &r)
	{
		this->complete(0, [&] { this->s_->value.set([&]() -> R & { return r; }); });
	}
};

/** A promise of nothing: a signal, with an exception or a break as its failures. */
template <>
class promise<void> : public detail::promise_base<void> {
public:
	explicit promise(pool_ref pool) : detail::promise_base<void>(pool) {}
	promise(promise &&) noexcept = default;
	promise &operator=(promise &&) noexcept = default;
	~promise() = default;

	/** Complete the future; as promise<R>::set_value. */
	void
	set_value()
	{
		this->complete(0, [] {});
	}
};

/** Exchange two promises. */
template <class R>
void
swap(promise<R> &a, promise<R> &b) noexcept
{
	a.swap(b);
}

/* ---------------------------------------------------------------------------------- */
/* when_all and task graphs                                                           */

namespace detail {
struct nothing {
	void operator()() const noexcept {}
};
} // namespace detail

/**
 * A future that is ready once every input is done, with no thread waiting meanwhile:
 * a dependent task (pool::submit_after) that runs no code of the caller's, on pool.
 * Its get() returns nothing, or rethrows the first failure among the inputs in
 * argument order (an input's exception, cancelled_error for one cancelled), as
 * heist_when_all gives the first nonzero result. The inputs (futures of any result
 * types and any pools) are not consumed: once it is ready they are ready too, and
 * each one's get() gives its result (std::experimental::when_all moves the futures
 * into a tuple instead, which a future that also feeds other dependents cannot
 * allow). No inputs: ready once the pool runs it. Cancelling it ends it
 * (cancelled_error); the inputs go on. Throws as submit_after.
 */
[[nodiscard]] inline future<void>
when_all(pool_ref pool, std::initializer_list<future_ref> inputs)
{
	return pool.submit_after(inputs, detail::nothing{});
}

/** when_all over each future given (of any result types). */
template <class... R>
[[nodiscard]] future<void>
when_all(pool_ref pool, const future<R> &...inputs)
{
	return when_all(pool, {future_ref(inputs)...});
}

/** when_all over a range of futures (a std::vector<heist::future<R>>, say). */
template <class Range, std::enable_if_t<detail::is_future_range_v<Range>, int> = 0>
[[nodiscard]] future<void>
when_all(pool_ref pool, const Range &inputs)
{
	return pool.submit_after(inputs, detail::nothing{});
}

/**
 * A graph of tasks, built once and run any number of times: each node a callable with
 * no arguments, each edge "this node runs after that one". Every run submits each node
 * as a dependent task of its predecessors' futures of that run (pool::submit_after),
 * so a run blocks no thread and costs one dependent task per node (a C job record and
 * a heap block for it, and a counted reference per edge) plus one when_all over the
 * nodes with no successors. A node that throws ends its successors, transitively,
 * unrun, with its exception; the other nodes run. The graph is not thread-safe: build
 * and run it from one thread at a time. Runs may overlap, and a node's callable may
 * then run concurrently with itself. Each run shares ownership of the callables, so
 * the graph may be changed or destroyed while runs are in flight; edges added after a
 * run started do not apply to it. Movable, not copyable; node handles stay valid
 * across a move.
 */
class task_graph {
	struct callable {
		virtual ~callable() = default;
		virtual void call() = 0;
	};
	template <class F>
	struct holder final : callable {
		F f;
		template <class G>
		explicit holder(G &&g) : f(std::forward<G>(g))
		{
		}
		void call() override { std::invoke(f); }
	};
	struct node_data {
		std::shared_ptr<callable> fn;
		std::vector<std::size_t> preds;	/* indices; may repeat */
		bool has_succ = false;
	};
	using nodes = std::vector<node_data>;

public:
	/** A handle to a node of one graph. Copyable; an empty one (default) names no
	 *  node. */
	class node {
	public:
		node() noexcept = default;

		/** Make this node run after each of others (nodes of the same graph).
		 *  Throws std::system_error (EINVAL) for an empty node or one of another
		 *  graph (nothing added then), std::bad_alloc. A cycle is found by run. */
		template <class... N>
		node &
		succeed(const N &...others)
		{
			static_assert((std::is_same_v<N, node> && ...), "heist::task_graph::node");
			check(others...);
			((*g_)[i_].preds.push_back(others.i_), ...);
			(((*g_)[others.i_].has_succ = true), ...);
			return *this;
		}

		/** Make each of others run after this node. As succeed otherwise. */
		template <class... N>
		node &
		precede(const N &...others)
		{
			static_assert((std::is_same_v<N, node> && ...), "heist::task_graph::node");
			check(others...);
			((*g_)[others.i_].preds.push_back(i_), ...);
			if (sizeof...(N) > 0)
				(*g_)[i_].has_succ = true;
			return *this;
		}

		/** The node's number in its graph: 0, 1, ... in emplace order. */
		std::size_t index() const noexcept { return i_; }

	private:
		friend class task_graph;
		node(nodes *g, std::size_t i) noexcept : g_(g), i_(i) {}

		template <class... N>
		void
		check(const N &...others) const
		{
			if (!g_ || ((others.g_ != g_) || ...))
				detail::throw_error(EINVAL, "heist::task_graph::node");
		}

		nodes *g_ = nullptr;
		std::size_t i_ = 0;
	};

	task_graph() : g_(new nodes) {}
	task_graph(task_graph &&o) noexcept : g_(std::exchange(o.g_, nullptr)) {}
	task_graph &
	operator=(task_graph &&o) noexcept
	{
		g_ = std::exchange(o.g_, nullptr);
		return *this;
	}
	task_graph(const task_graph &) = delete;
	task_graph &operator=(const task_graph &) = delete;

	/** Add a node that calls f() (an lvalue call, once per run; its result is
	 *  dropped). f is decay-copied, as submit does. Throws std::bad_alloc. */
	template <class F>
	node
	emplace(F &&f)
	{
		using Fn = std::decay_t<F>;
		static_assert(std::is_invocable_v<Fn &>,
			      "heist::task_graph::emplace: the node's callable takes no arguments");
		if (!g_)
			g_.reset(new nodes);
		std::shared_ptr<callable> c = std::make_shared<holder<Fn>>(std::forward<F>(f));
		g_->push_back(node_data{std::move(c), {}, false});
		return node(g_.get(), g_->size() - 1);
	}

	/** Nodes in the graph. */
	std::size_t size() const noexcept { return g_ ? g_->size() : 0; }

	/**
	 * Submit every node to pool, each once its predecessors are done, and return a
	 * future that is ready when every node of this run has ended. Its get() rethrows
	 * a failed node's exception (the first in emplace order among the nodes with no
	 * successors, which carry their predecessors' failures). Throws
	 * std::system_error (EDEADLK: the graph has a cycle, and nothing was submitted;
	 * or what submit_after throws) or std::bad_alloc; if a submit fails midway, the
	 * nodes already submitted are cancelled (those running finish) and waited for
	 * before the exception leaves.
	 */
	[[nodiscard]] future<void>
	run(pool_ref pool)
	{
		std::size_t n = size();
		std::vector<std::size_t> order = topological_order();
		std::vector<future<void>> fs(n);
		std::vector<future_ref> ins;
		try {
			for (std::size_t v : order) {
				node_data &d = (*g_)[v];
				ins.clear();
				for (std::size_t u : d.preds)
					ins.push_back(fs[u]);
				fs[v] = pool.submit_after(ins, [c = d.fn] { c->call(); });
			}
			ins.clear();
			for (std::size_t v = 0; v < n; v++)
				if (!(*g_)[v].has_succ)
					ins.push_back(fs[v]);
			return when_all(pool, ins);
		} catch (...) {
			for (future<void> &f : fs)
				f.cancel();
			for (future<void> &f : fs)
				f.wait();
			throw;
		}
	}

private:
	/* Every node after its predecessors (depth-first over predecessors). Throws
	 * EDEADLK for a cycle. */
	std::vector<std::size_t>
	topological_order() const
	{
		std::size_t n = size();
		std::vector<std::size_t> order;
		order.reserve(n);
		enum : unsigned char { unseen, open_now, done };
		std::vector<unsigned char> mark(n, unseen);
		std::vector<std::pair<std::size_t, std::size_t>> stack;	/* node, next pred */
		for (std::size_t root = 0; root < n; root++) {
			if (mark[root] != unseen)
				continue;
			mark[root] = open_now;
			stack.emplace_back(root, 0);
			while (!stack.empty()) {
				auto &[v, k] = stack.back();
				const std::vector<std::size_t> &preds = (*g_)[v].preds;
				if (k < preds.size()) {
					std::size_t u = preds[k++];
					if (mark[u] == open_now)
						detail::throw_error(EDEADLK, "heist::task_graph::run: a cycle");
					if (mark[u] == unseen) {
						mark[u] = open_now;
						stack.emplace_back(u, 0);	/* v and k dangle now */
					}
				} else {
					mark[v] = done;
					order.push_back(v);
					stack.pop_back();
				}
			}
		}
		return order;
	}

	std::unique_ptr<nodes> g_;
};

/* ---------------------------------------------------------------------------------- */
/* Graphs built once and run many times, over heist_graph                             */

namespace detail {

/* A run of a heist::graph: its future's block (coded: the C run's int is its result),
 * and the first exception a node of the run threw. Counted: the future's reference
 * and the graph's (graph_impl::runs), which it drops once the run is done. */
struct graph_run final : result_state<void> {
	std::atomic<bool> failed{false};

	graph_run() noexcept : result_state<void>(2) { coded = true; }

	/* The first exception of the run wins; the others are dropped, as for_each
	 * drops all but its first. */
	void
	fail(std::exception_ptr e) noexcept
	{
		bool expected = false;
		/* acq_rel: one writer of error; the future reads it after the run's job
		 * is final, which the C library orders after every node. */
		if (failed.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
			error = std::move(e);
	}
};

/* What a node's C function gets as its argument: owned by the graph, made at build
 * time, called every run. */
struct graph_callable {
	virtual ~graph_callable() = default;
};

/*
 * A heist::graph's state, on the heap so that the node records the C graph points at
 * survive a move of the graph object. The user's nodes live in g. run() runs top,
 * which is enter (a node of ours) then g as a subgraph, so that enter runs first in
 * every run and names the run for the nodes (ctx): a node that throws can only tell
 * which run it is part of through state that something of the run set. Why not a
 * plain slot per graph, read by get(): runs are queued, and a later run would
 * overwrite the slot before an earlier run's get() reads it. Why enter and not
 * run(): run() returns before its run starts (a run waits for the one before).
 */
struct graph_impl {
	heist_graph *g = nullptr;	/* the user's nodes */
	heist_graph *top = nullptr;	/* enter, then g: what run() runs */
	/* The run of this graph (or of the graph holding it as a subgraph) that runs
	 * now, or a finished one. Stored by enter (or by a subgraph's link node) before
	 * any node of the run starts; loaded by nodes that throw. acquire/release
	 * rather than relaxed for clarity only: the C library's edges already order
	 * the store before every node of the run. */
	std::atomic<graph_run *> ctx{nullptr};
	std::mutex lock;
	/* Under lock: a reference to each run queued by run() that may not be done,
	 * oldest first. Runs of top end in the order they were queued, each before the
	 * next starts (heist_graph_run), so the first not done is the run that runs
	 * now, if one does. */
	std::deque<graph_run *> runs;
	std::vector<std::unique_ptr<graph_callable>> fns;	/* the nodes' arguments */
	std::size_t nodes = 0;	/* the user's: emplace, loop, subgraph */
	bool broken = false;	/* a subgraph node was left without its link */

	graph_impl()
	{
		heist_graph_node *e = nullptr, *s = nullptr;
		int err = heist_graph_create(&g);
		if (!err)
			err = heist_graph_create(&top);
		if (!err)
			err = heist_graph_add_task(top, &enter, this, &e);
		if (!err)
			err = heist_graph_add_graph(top, g, &s);
		if (!err)
			err = heist_graph_edge(e, s);
		if (err) {
			heist_graph_destroy(top);
			heist_graph_destroy(g);
			throw_error(err, "heist::graph");
		}
	}
	graph_impl(const graph_impl &) = delete;
	graph_impl &operator=(const graph_impl &) = delete;
	~graph_impl()
	{
		heist_graph_destroy(top);	/* waits for the runs */
		heist_graph_destroy(g);
		for (graph_run *r : runs)
			r->release();
	}

	/* Drop the runs that are done (under lock). */
	void
	prune() noexcept
	{
		/* relaxed: shared was stored under lock, before the run was listed. */
		while (!runs.empty() &&
		       heist_future_done(runs.front()->shared.load(std::memory_order_relaxed))) {
			runs.front()->release();
			runs.pop_front();
		}
	}

	/* Throw EBUSY while a run queued by run() is pending, as the C calls do for a
	 * graph run directly (g never is: top is). */
	void
	check_idle(const char *what)
	{
		std::lock_guard<std::mutex> l(lock);
		prune();
		if (!runs.empty())
			throw_error(EBUSY, what);
	}

	/* In a node of a run, inside its catch: the exception is the run's, or the
	 * handler's if no run is known (cannot happen: enter runs first). */
	void
	fail() noexcept
	{
		if (graph_run *r = ctx.load(std::memory_order_acquire))
			r->fail(std::current_exception());
		else
			report(std::current_exception());
	}

	/* top's first node: name the run that starts, the first not done. It drops
	 * none of the done ones (prune, on the caller's thread, does): the last
	 * reference to a block may hold an exception the caller has just caught, and
	 * an exception_ptr's count lives in libstdc++, which ThreadSanitizer does not
	 * see, so a free here, on a worker, would look like a race with the caller's
	 * catch. The list is as long as the runs queued since the last run(). */
	static int
	enter(void *p) noexcept
	{
		auto *im = static_cast<graph_impl *>(p);
		std::lock_guard<std::mutex> l(im->lock);
		graph_run *now = nullptr;
		for (graph_run *r : im->runs)
			/* relaxed: as in prune. */
			if (!heist_future_done(r->shared.load(std::memory_order_relaxed))) {
				now = r;
				break;
			}
		/* release: see ctx. */
		im->ctx.store(now, std::memory_order_release);
		return 0;
	}
};

/* A node that calls f() every run. */
template <class F>
struct graph_task final : graph_callable {
	graph_impl *owner;
	F f;
	template <class G>
	graph_task(graph_impl *o, G &&g) : owner(o), f(std::forward<G>(g))
	{
	}
	static int
	run(void *p) noexcept
	{
		auto *t = static_cast<graph_task *>(p);
		token_scope scope(nullptr);	/* heist_cancelled() answers for the run */
		try {
			std::invoke(t->f);
		} catch (...) {
			t->owner->fail();
			return code_side;	/* nonzero: the run starts no more nodes */
		}
		return 0;
	}
};

/* A node that runs body(b, e) over sub-ranges (heist_graph_add_loop). */
template <class B>
struct graph_loop final : graph_callable {
	graph_impl *owner;
	B body;
	template <class G>
	graph_loop(graph_impl *o, G &&g) : owner(o), body(std::forward<G>(g))
	{
	}
	static int
	run(void *p, std::size_t b, std::size_t e) noexcept
	{
		auto *l = static_cast<graph_loop *>(p);
		token_scope scope(nullptr);
		try {
			std::invoke(l->body, b, e);
		} catch (...) {
			l->owner->fail();
			return code_side;	/* heist_for_each stops the rest */
		}
		return 0;
	}
};

/* The node before a subgraph node: hands the run that runs now to the subgraph, whose
 * nodes report to it. Inert until the subgraph node and the edge exist. */
struct graph_link final : graph_callable {
	graph_impl *outer, *inner;
	bool armed = false;
	graph_link(graph_impl *o, graph_impl *i) noexcept : outer(o), inner(i) {}
	static int
	run(void *p) noexcept
	{
		auto *k = static_cast<graph_link *>(p);
		/* acquire/release: see graph_impl::ctx. */
		if (k->armed)
			k->inner->ctx.store(k->outer->ctx.load(std::memory_order_acquire),
					    std::memory_order_release);
		return 0;
	}
};

} // namespace detail

/**
 * A graph built once and run many times over the C heist_graph: each node a callable
 * with no arguments, a parallel loop, or another graph; each edge "this node runs
 * after that one". A run allocates nothing per node: the callables are stored once,
 * when the node is added (one heap block each, owned by the graph), and each run
 * calls them through the C graph's fork-join tasks. Unlike task_graph, runs of one
 * graph follow each other in the order of their run() calls (never overlap), and the
 * first node that throws ends the run: nodes not started by then do not run, and the
 * run's get() rethrows that exception; the next run runs every node again.
 *
 * Who may call: build (emplace, loop, subgraph, edges) from one thread at a time,
 * while no run is pending (queued or running): EBUSY otherwise. run() from any
 * thread, a task included, but not from a node of the graph itself (its run would
 * wait for its own). A graph held as a subgraph must outlive the graphs that hold it
 * and must not be changed while they may run (not detected, as in C); it may be run
 * on its own too, if no two of its uses run at once (else a use fails with EBUSY, and
 * an exception thrown meanwhile may be reported by the other use).
 *
 * Storage: per node, one heap block for its callable (emplace, loop) or for its link
 * (subgraph); the C graph's node records. Per run: one C job record (heist_graph_run)
 * and one heap block, the run's future's, which also holds the run's first exception.
 * How that exception reaches the right future: every run() starts with a node of the
 * wrapper's own that names the run it belongs to (runs of one graph never overlap, so
 * one name per graph suffices), and a node that throws stores the exception in that
 * run's block, which the run's future shares: a later run writes to its own block,
 * never to one a future may still read. A subgraph node carries a hidden node before
 * it that hands the name on to the subgraph. So a run costs two nodes more than the
 * user's (its first node and the subgraph node that holds the user's nodes).
 *
 * Movable, not copyable; node handles stay valid across a move. The destructor waits
 * for every pending run (heist_graph_destroy); a moved-from graph is empty, and gets
 * a fresh state when used again.
 */
class graph {
public:
	/** A handle to a node of one graph. Copyable; an empty one (default) names no
	 *  node. */
	class node {
	public:
		node() noexcept = default;

		/** Make each of others (nodes of the same graph) run after this node, in
		 *  every run (heist_graph_edge). Throws std::system_error (EINVAL for an
		 *  empty node or one of another graph, EBUSY while a run is pending) or
		 *  std::bad_alloc; the edges before the failing one stay. A cycle is found
		 *  by run(). */
		template <class... N>
		node &
		precede(const N &...others)
		{
			static_assert((std::is_same_v<N, node> && ...), "heist::graph::node");
			(edge(*this, others), ...);
			return *this;
		}

		/** Make this node run after each of others. As precede otherwise. */
		template <class... N>
		node &
		succeed(const N &...others)
		{
			static_assert((std::is_same_v<N, node> && ...), "heist::graph::node");
			(edge(others, *this), ...);
			return *this;
		}

	private:
		friend class graph;
		node(detail::graph_impl *g, heist_graph_node *in, heist_graph_node *out) noexcept
			: g_(g), in_(in), out_(out)
		{
		}

		static void
		edge(const node &before, const node &after)
		{
			if (!before.g_ || before.g_ != after.g_)
				detail::throw_error(EINVAL, "heist::graph::node");
			before.g_->check_idle("heist::graph::node");
			int err = heist_graph_edge(before.out_, after.in_);
			if (err)
				detail::throw_error(err, "heist::graph::node");
		}

		detail::graph_impl *g_ = nullptr;
		heist_graph_node *in_ = nullptr;	/* where edges into the node go */
		heist_graph_node *out_ = nullptr;	/* where edges out of it start */
	};

	/** An empty graph. Throws std::bad_alloc. */
	graph() : g_(new detail::graph_impl) {}
	graph(graph &&) noexcept = default;
	/** Waits for the runs of the graph it replaces. */
	graph &operator=(graph &&) noexcept = default;
	graph(const graph &) = delete;
	graph &operator=(const graph &) = delete;
	/** Waits for every pending run, then frees the nodes and their callables. */
	~graph() = default;

	/**
	 * Add a node that calls f() (an lvalue call, once per run; its result is
	 * dropped). f is decay-copied, once, into a heap block the graph owns. An
	 * exception f throws ends the run (see the class). Throws std::bad_alloc,
	 * std::system_error (EBUSY while a run is pending); nothing was added then.
	 */
	template <class F>
	node
	emplace(F &&f)
	{
		using Fn = std::decay_t<F>;
		static_assert(std::is_invocable_v<Fn &>,
			      "heist::graph::emplace: the node's callable takes no arguments");
		using T = detail::graph_task<Fn>;
		detail::graph_impl &im = self();
		im.check_idle("heist::graph::emplace");
		auto t = std::make_unique<T>(&im, std::forward<F>(f));
		im.fns.reserve(im.fns.size() + 1);	/* so that the push cannot throw */
		heist_graph_node *n = nullptr;
		int err = heist_graph_add_task(im.g, &T::run, t.get(), &n);
		if (err)
			detail::throw_error(err, "heist::graph::emplace");
		im.fns.push_back(std::move(t));
		im.nodes++;
		return node(&im, n, n);
	}

	/**
	 * Add a node that runs a parallel loop over [begin, end) on the run's pool, as
	 * pool::for_each with a range body: body(b, e) per sub-range, called from several
	 * threads at once; grain 0: automatic (heist_graph_add_loop). The first exception
	 * a body throws stops the sub-ranges not yet started and ends the run. body is
	 * decay-copied once, as emplace's f. Throws std::system_error (EINVAL if end <
	 * begin, EBUSY) or std::bad_alloc; nothing was added then.
	 */
	template <class Body>
	node
	loop(std::size_t begin, std::size_t end, Body &&body, std::size_t grain = 0)
	{
		using B = std::decay_t<Body>;
		static_assert(std::is_invocable_v<B &, std::size_t, std::size_t>,
			      "heist::graph::loop: the body takes a range (begin, end)");
		using L = detail::graph_loop<B>;
		detail::graph_impl &im = self();
		im.check_idle("heist::graph::loop");
		auto l = std::make_unique<L>(&im, std::forward<Body>(body));
		im.fns.reserve(im.fns.size() + 1);
		heist_graph_node *n = nullptr;
		int err = heist_graph_add_loop(im.g, begin, end, grain, &L::run, l.get(), &n);
		if (err)
			detail::throw_error(err, "heist::graph::loop");
		im.fns.push_back(std::move(l));
		im.nodes++;
		return node(&im, n, n);
	}

	/**
	 * Add a node that runs sub (a whole run of it, inside this graph's run: its
	 * first exception or error ends this run too, and is this run's), through
	 * heist_graph_add_graph. sub must outlive this graph's runs; see the class for
	 * its other uses. Throws std::system_error (EINVAL if sub is this graph or holds
	 * it, EBUSY) or std::bad_alloc; nothing was added then, but for one case: a
	 * std::bad_alloc after the C node was made leaves the graph unable to run
	 * (run() throws std::bad_alloc).
	 */
	node
	subgraph(graph &sub)
	{
		detail::graph_impl &im = self();
		detail::graph_impl &in = sub.self();
		im.check_idle("heist::graph::subgraph");
		auto k = std::make_unique<detail::graph_link>(&im, &in);
		im.fns.reserve(im.fns.size() + 1);
		heist_graph_node *e = nullptr, *s = nullptr;
		/* The link node first: left alone after a failure it is inert (armed). */
		int err = heist_graph_add_task(im.g, &detail::graph_link::run, k.get(), &e);
		if (err)
			detail::throw_error(err, "heist::graph::subgraph");
		detail::graph_link *link = k.get();
		im.fns.push_back(std::move(k));
		err = heist_graph_add_graph(im.g, in.g, &s);
		if (err)
			detail::throw_error(err, "heist::graph::subgraph");
		err = heist_graph_edge(e, s);
		if (err) {	/* ENOMEM: s would run sub unnamed */
			im.broken = true;
			detail::throw_error(err, "heist::graph::subgraph");
		}
		link->armed = true;	/* published to runs by heist_graph_run */
		im.nodes++;
		return node(&im, e, s);
	}

	/** Nodes added (emplace, loop, subgraph). */
	std::size_t size() const noexcept { return g_ ? g_->nodes : 0; }

	/**
	 * Run the graph on pool (heist_graph_run) and return the run's future: once the
	 * previous run has ended, each node runs after its predecessors, on whatever
	 * worker is free; everything before the call is visible to the nodes, and
	 * everything a node wrote to its successors and to whoever get()s the future.
	 * get() returns once every node of the run has ended; it rethrows the first
	 * exception a node threw in this run (later ones are dropped), throws
	 * cancelled_error if the run was cancelled (future::cancel, or the token) before
	 * a node failed, and std::system_error for an error of the C library's (a loop's
	 * ENOMEM, a subgraph busy elsewhere: EBUSY). Inside the nodes heist::cancelled()
	 * answers for the run. Storage: see the class. Throws std::system_error (EDEADLK:
	 * the graph or a subgraph has a cycle; ESHUTDOWN: the pool is being destroyed;
	 * EINVAL for an empty pool) or std::bad_alloc; nothing runs then.
	 */
	[[nodiscard]] future<void>
	run(pool_ref pool)
	{
		return run_with(pool, nullptr);
	}

	/** run() with a token that cancels this run (a reference is taken): nodes not
	 *  started when it is requested do not run. std::system_error (EINVAL) for an
	 *  empty token. */
	[[nodiscard]] future<void>
	run(pool_ref pool, const cancel_token &token)
	{
		if (!token.native_handle())
			detail::throw_error(EINVAL, "heist::graph::run");
		return run_with(pool, token.native_handle());
	}

private:
	detail::graph_impl &
	self()
	{
		if (!g_)
			g_.reset(new detail::graph_impl);
		return *g_;
	}

	future<void>
	run_with(pool_ref pool, heist_cancel *cancel)
	{
		detail::graph_impl &im = self();
		if (im.broken)
			detail::throw_error(ENOMEM, "heist::graph::run");
		std::unique_ptr<detail::graph_run> r(new detail::graph_run);
		std::lock_guard<std::mutex> l(im.lock);	/* its enter waits for the list */
		im.prune();
		im.runs.push_back(r.get());
		heist_future *f = nullptr;
		int err = heist_graph_run(pool.native_handle(), im.top, cancel, &f);
		if (err) {
			im.runs.pop_back();
			detail::throw_error(err, "heist::graph::run");
		}
		/* relaxed: read under the lock (prune), or after the future hands it on. */
		r->shared.store(f, std::memory_order_relaxed);	/* the block keeps f */
		return future<void>(f, r.release(), 0, nullptr);
	}

	std::unique_ptr<detail::graph_impl> g_;
};

} // namespace heist

#endif /* C++17 and exceptions */

#endif /* HEIST_HEIST_HPP */
