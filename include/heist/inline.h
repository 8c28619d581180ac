/* SPDX-License-Identifier: MIT */
/* heist/inline.h - the fast paths of heist_spawn and heist_sync, compiled into the
 * caller. heist.h includes it; do not include it yourself, and do not use anything in
 * it: every name here is internal (heist__), and may change with the layout version.
 *
 * heist_spawn and heist_sync are macros over the functions below. Each does what the
 * library's out-of-line function of the same name does in the common case (a worker's
 * deque with room, no thief asking for work, no profiler) and otherwise calls that
 * function, which handles every case from the start. The out-of-line functions stay
 * exported, for other languages, for taking their address ((heist_spawn) or
 * &heist_spawn), and for programs that define HEIST_NO_INLINE before including
 * heist.h. Each fast path is a compare and branch with the bounds on top of the push
 * or pop itself (two for a spawn): every other case (no room, a thief's request, the
 * profiler, no worker) shows in the bounds it compares with (src/deque.h).
 *
 * The layout. The inline code reads and writes the start of the library's worker
 * (struct heist__worker_view) and a task record (heist_task's fields), so that part of
 * the layout is ABI, with this rule: the library static_asserts every offset below
 * (src/worker.c), and a change to any of them bumps HEIST__LAYOUT and renames the
 * thread-local variable the inline code starts from (heist__self_v2 for layout 2), in
 * a new symbol-version node. A program compiled against one layout then fails to load
 * with a library of another ("undefined symbol heist__self_v2") instead of writing
 * into the wrong fields. docs/abi.md has the rule in full.
 *
 * Atomics: the library declares these fields _Atomic; C++ has no _Atomic, so this
 * header reaches them with the compilers' __atomic builtins (gcc and clang), with the
 * same orders the library uses: relaxed everywhere, because the owner is the only
 * writer of everything here but the bounds (which a thief's request only ever closes),
 * and its private slots become visible to thieves only through the library's publish
 * (a release store). */
#ifndef HEIST_INLINE_H
#define HEIST_INLINE_H

/* The fast paths are inlined whatever the compiler's size heuristics say: a user's
 * plain -O2 build called heist__spawn_inline out of line (a call, a frame and a return
 * on every spawn). Not at -O0 nor with -fno-inline (__NO_INLINE__), where a build asks
 * for calls: that is how the library's own -fno-inline CI cell tests them as calls. */
#ifdef __NO_INLINE__
#define HEIST__FAST static inline
#else
#define HEIST__FAST static inline __attribute__((always_inline))
#endif

#define HEIST__LAYOUT 2
#define HEIST__LINE 128		/* the library's cache-line stride */
#define HEIST__TASK_PENDING 0x7a5c0de0u
#define HEIST__TASK_SYNCED 0x7a5c0de3u

/* The owner's line's fields, alone: where they end (int64_t's alignment, and so the
 * padding before origin, differs between 32-bit ABIs). */
struct heist__worker_line0 {
	void **head;
	int64_t origin;
	uintptr_t zero;
	void **room;
	void **floor;
};
#define HEIST__LINE0_END (offsetof(struct heist__worker_line0, floor) + sizeof(void **))

/* The first bytes of the library's struct worker (its deque first). */
struct heist__worker_view {
	/* The owner's line: where the next push goes (_Atomic in the library), and the
	 * true bounds, which limit and split hold when nothing closed them: used here
	 * only under the profiler, whose shut bounds send every spawn and sync this
	 * way, to push and pop a task it does not sample. */
	void **head;
	int64_t heist__origin;
	uintptr_t heist__zero;
	void **room;
	void **floor;
	unsigned char heist__pad0[HEIST__LINE - HEIST__LINE0_END];
	/* The bounds' line: a push below limit has room, a pop above split takes a
	 * task no thief can reach. The library computes both in its slow paths; a
	 * thief that asks for work, or the profiler, sets them so that every push and
	 * pop fails its compare and goes to the library. */
	uintptr_t limit;
	uintptr_t split;
	unsigned char heist__pad1[3 * HEIST__LINE - 2 * sizeof(uintptr_t)];
	/* The worker's line. */
	unsigned epoch;			/* what a spawned task's thief word starts as */
	uint32_t sample_mask;		/* the profiler records one spawn in mask + 1 */
	uint32_t sample_tick;		/* its last draw (heist__sample_draw) */
	uint32_t heist__pad2;
	uint64_t pairs;			/* statistics: spawns synced here; each counts as
					   one spawned and one executed (src/pool.c) */
};

/* The bounds' values of a pool that profiles (src/deque.h, DQ_SHUT_*). */
#define HEIST__SHUT_LIMIT HEIST__STATIC(uintptr_t, 1)
#define HEIST__SHUT_SPLIT (~HEIST__STATIC(uintptr_t, 1))

/* The worker on this thread. On a thread that is no worker, a stand-in whose bounds
 * send both fast paths to the library without a test of their own. initial-exec: one
 * thread-pointer-relative load (the library is linked at start-up, or dlopen'd while
 * static TLS space is left, as glibc keeps some). */
#if defined(_WIN32) || defined(__CYGWIN__)
/* Windows: a DLL cannot export a thread-local variable, so the inline code asks the
 * library for it: one call per fast path (the same call in a static link). */
HEIST_EXPORT void *heist__self_get(void);
#else
extern __thread void *heist__self_v2 __attribute__((tls_model("initial-exec")));
#endif

/* The worker on this thread, read anew at every call. On x86-64 (ELF) an asm that the
 * compiler may not move or merge: two instructions at each fast path, where a plain
 * read lets the compiler keep the variable's address in a callee-saved register from
 * spawn to sync, across the user's own calls, and every function that spawns then
 * pays a push and a pop of that register on each call, leaves included (gcc and
 * clang at -O2: 3 instructions more per spawn+sync pair of W1's fib). */
HEIST__FAST struct heist__worker_view *
heist__self(void)
{
#if defined(_WIN32) || defined(__CYGWIN__)
	return HEIST__STATIC(struct heist__worker_view *, heist__self_get());
#elif defined(__x86_64__) && defined(__ELF__)
	void *w;
	__asm__ __volatile__("movq heist__self_v2@gottpoff(%%rip), %0\n\t"
			     "movq %%fs:(%0), %0"
			     : "=r"(w));
	return HEIST__STATIC(struct heist__worker_view *, w);
#else
	return HEIST__STATIC(struct heist__worker_view *, heist__self_v2);
#endif
}

/* t's address, made here from t's own addressing (an lea on x86-64), for the same
 * reason: a record in the caller's frame is rsp plus a constant, which the compiler
 * would otherwise keep in a callee-saved register from spawn to sync (3 more
 * instructions per pair). Elsewhere t itself. */
HEIST__FAST heist_task *
heist__here(heist_task *t)
{
#if defined(__x86_64__)
	heist_task *p;
	__asm__("lea %1, %0" : "=r"(p) : "m"(*t));
	return p;
#else
	return t;
#endif
}

/* A statistics counter: only the owner writes it, others read it with relaxed loads.
 * On x86-64 one add to memory: its store is a single aligned 8-byte write, which a
 * reader sees whole, and with one writer no increment is lost. Elsewhere a relaxed
 * load and store, which compile to the same three instructions an add would. */
HEIST__FAST void
heist__count(uint64_t *c)
{
#if defined(__x86_64__)
	__asm__("incq %0" : "+m"(*c));
#else
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
#endif
}

/* The profiler's sampling draws (heist_config.profile_every): xorshift32 (Marsaglia
 * 2003), never 0 from a nonzero state. A task is recorded when the draw's high bits
 * under the mask are all 0: each one by itself with chance 1 / (mask + 1), so that the
 * sample does not follow the program's own rhythm as every n-th spawn would (in a
 * recursion, every n-th spawn is at the same few depths). The library draws the same
 * way (src/probe.h). */
static inline uint32_t
heist__sample_draw(uint32_t x)
{
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

static inline int
heist__sample_hit(uint32_t draw, uint32_t mask)
{
	return ((draw >> 12) & mask) == 0;
}

/* Under the profiler: whether the next spawn is one it skips; if so, its draw is used
 * up. A spawn to record goes to the library, which makes the same draw, uses it up
 * and stamps the task. */
static inline int
heist__unsampled(struct heist__worker_view *w)
{
	if (!w->sample_mask)
		return 0;	/* every task is recorded: no draw */
	uint32_t x = heist__sample_draw(w->sample_tick);
	if (heist__sample_hit(x, w->sample_mask))
		return 0;
	w->sample_tick = x;
	return 1;
}

HEIST__FAST void
heist__push(struct heist__worker_view *w, void **h, heist_task *t, heist_fn fn, void *arg)
{
	t->heist__fn = fn;
	t->heist__arg = arg;
	__atomic_store_n(&t->heist__state, HEIST__TASK_PENDING, __ATOMIC_RELAXED);
	/* The epoch widened by addition: a cast of unsigned to uintptr_t is useless where
	 * they are one type (32-bit ABIs), which -Wuseless-cast refuses. */
	__atomic_store_n(&t->heist__thief,
			 HEIST__REINTERPRET(void *, HEIST__STATIC(uintptr_t, 0) + w->epoch),
			 __ATOMIC_RELAXED);
	__atomic_store_n(h, HEIST__STATIC(void *, t), __ATOMIC_RELAXED);
	__atomic_store_n(&w->head, h + 1, __ATOMIC_RELAXED);
}

/* What a spawn+sync pair costs, and why each part is there. x86-64, gcc 12 -O2, W1 in
 * a user's build (bench/user_fib.c): 46.6 instructions over serial fib, the 29 below
 * and the driver's own (its argument structs, the stores of fn and arg, the call of
 * the child through the record's pointer: a driver whose spawn and sync do only that
 * measures 20.1 over serial); a typed task (heist.h, HEIST_TASK_1) needs few of
 * those: 30.0 in all.
 *
 * spawn, 16:
 *   2  the worker: the TLS offset and the %fs-relative load (heist__self);
 *   1  head;
 *   3  limit, compare, branch: one test for room in the array, the window's end, a
 *      thief's request, the profiler and a thread that is no worker;
 *   3  split, compare, branch: for time, not safety (heist__spawn_inline);
 *   1  the state PENDING: heist_sync's slow path tells a spawned record from a stale
 *      or zeroed one by it (and aborts with a message), and the thief's exchange to
 *      DONE must find a known value;
 *   2  the epoch into the thief word: what a stolen child submits counts in its
 *      spawner's idle epoch (heist_pool_wait_idle, src/submit.c);
 *   4  the slot, the lea of t, head + 1 and its store.
 * sync, 13:
 *   2  the worker again (not kept from the spawn: see heist__self);
 *   1  head;
 *   3  split, compare, branch: the slot below head is private (no thief can take
 *      it, so no fence), and no request or profiler waits;
 *   4  the slot, the lea of t (heist__here), compare, branch: it is t, not a task
 *      that spawn ran at once for want of memory, nor one of an out-of-order sync;
 *   2  head - 1 and its store;
 *   1  incq pairs: each synced pair is one spawned and one executed task in
 *      heist_pool_stats, exactly.
 * Lace's pair is 16.7 over its serial fib: its head is passed down the recursion in a
 * register (no TLS), its records are in the deque itself (no slot, no compare of t),
 * it keeps no statistics and no epoch, and its macros call the function directly. */

/* Push t: a store into the slot at head, then head moves up. The record's fields
 * first: a thief reaches t only through the library's publish, a release store that
 * orders all of these before it. */
HEIST__FAST void
heist__spawn_on(struct heist__worker_view *w, heist_task *t, heist_fn fn, void *arg)
{
	void **h = __atomic_load_n(&w->head, __ATOMIC_RELAXED);
	uintptr_t limit = __atomic_load_n(&w->limit, __ATOMIC_RELAXED);
	/* head between split and limit: the owner's private window as its last slow
	 * path left it, and no ring on either bound. The lower compare is not needed
	 * for safety (a ring closes limit first), but it is for time: without it,
	 * W1's plain driver ran 557 ms against 423 ms with it (fib(38), gcc -O2, one
	 * worker, the Xeon of docs/benchmarks.md's 2026-12-06 runs; clang 509 against
	 * 418), for 3 instructions more; a typed task and heist::join ran the same.
	 * Why a load more makes this spawn faster we could not see without the
	 * processor's counters, which this machine does not give; see the runs. */
	if (__builtin_expect(HEIST__REINTERPRET(uintptr_t, h) < limit, 1) &&
	    __builtin_expect(HEIST__REINTERPRET(uintptr_t, h) >=
				     __atomic_load_n(&w->split, __ATOMIC_RELAXED), 1)) {
		heist__push(w, h, t, fn, arg);
		return;
	}
	/* The profiler shut the bounds: a task it does not sample is pushed here all
	 * the same, unstamped (a request rings over shut bounds, and goes on). */
	if (limit == HEIST__SHUT_LIMIT && h < w->room && heist__unsampled(w)) {
		t->heist__tsc = 0;	/* not recorded when it runs */
		heist__push(w, h, t, fn, arg);
		return;
	}
	(heist_spawn)(t, fn, arg);
}

HEIST__FAST void
heist__spawn_inline(heist_task *t, heist_fn fn, void *arg)
{
	heist__spawn_on(heist__self(), t, fn, arg);
}

/* Take t back from the bottom: whether it was there, private (above split), so that
 * its sync runs it now (heist_sync's fast path calls t's fn, a typed task's calls its
 * function directly: heist.h, HEIST_TASK_1). It is not there when spawn had to run t
 * at once, or a thief may have it, or the syncs came out of order: then the library's
 * heist_sync does all. */
HEIST__FAST int
heist__pop_on(struct heist__worker_view *w, heist_task *t)
{
	void **h = __atomic_load_n(&w->head, __ATOMIC_RELAXED);
	uintptr_t split = __atomic_load_n(&w->split, __ATOMIC_RELAXED);
	/* Private and t (the fast case); or, under the profiler, private, t, and not
	 * sampled (its spawn left it unstamped). */
	if ((__builtin_expect(HEIST__REINTERPRET(uintptr_t, h) > split, 1) ||
	     (split == HEIST__SHUT_SPLIT && h > w->floor && t->heist__tsc == 0)) &&
	    __builtin_expect(__atomic_load_n(h - 1, __ATOMIC_RELAXED) == HEIST__STATIC(void *, heist__here(t)), 1)) {
		__atomic_store_n(&w->head, h - 1, __ATOMIC_RELAXED);
		heist__count(&w->pairs);
#ifndef NDEBUG
		/* So that a second sync aborts (heist_sync's comment). */
		__atomic_store_n(&t->heist__state, HEIST__TASK_SYNCED, __ATOMIC_RELAXED);
#endif
		return 1;
	}
	return 0;
}

HEIST__FAST int
heist__pop_inline(heist_task *t)
{
	return heist__pop_on(heist__self(), t);
}

HEIST__FAST int
heist__sync_inline(heist_task *t)
{
	if (__builtin_expect(heist__pop_inline(t), 1))
		return t->heist__fn(t->heist__arg);
	return (heist_sync)(heist__here(t));
}

/* Variadic, so that a C++ argument with a comma in it (a template's arguments) passes
 * through whole. */
#define heist_spawn(...) heist__spawn_inline(__VA_ARGS__)
#define heist_sync(...) heist__sync_inline(__VA_ARGS__)

#endif /* HEIST_INLINE_H */
