/* SPDX-License-Identifier: MIT */
/* heist/inline.h - the fast paths of heist_spawn and heist_sync, compiled into the
 * caller. heist.h includes it; do not include it yourself, and do not use anything in
 * it: every name here is internal (heist__), and may change with the layout version.
 *
 * heist_spawn and heist_sync are macros over the functions below. Each does what the
 * library's out-of-line function of the same name does in the common case (a worker's
 * deque with room, no thief asking for work, no profiler or one that does not record
 * this task: heist_config.profile_every) and otherwise calls that
 * function, which handles every case from the start. The out-of-line functions stay
 * exported, for other languages, for taking their address ((heist_spawn) or
 * &heist_spawn), and for programs that define HEIST_NO_INLINE before including
 * heist.h.
 *
 * The layout. The inline code reads and writes the start of the library's worker
 * (struct heist__worker_view) and a task record (heist_task's fields), so that part of
 * the layout is ABI, with this rule: the library static_asserts every offset below
 * (src/worker.c), and a change to any of them bumps HEIST__LAYOUT and renames the
 * thread-local variable the inline code starts from (heist__self_v1 for layout 1), in
 * a new symbol-version node. A program compiled against one layout then fails to load
 * with a library of another ("undefined symbol heist__self_v1") instead of writing
 * into the wrong fields. docs/abi.md has the rule in full.
 *
 * Atomics: the library declares these fields _Atomic; C++ has no _Atomic, so this
 * header reaches them with the compilers' __atomic builtins (gcc and clang), with the
 * same orders the library uses: relaxed everywhere, because the owner is the only
 * writer of everything here but the flags, and its private slots become visible to
 * thieves only through the library's publish (a release store). */
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

/* Casts a strict C++ build accepts (-Wold-style-cast): named casts in C++, plain ones
 * in C. */
#ifdef __cplusplus
#define HEIST__STATIC(type, x) static_cast<type>(x)
#define HEIST__REINTERPRET(type, x) reinterpret_cast<type>(x)
#else
#define HEIST__STATIC(type, x) ((type)(x))
#define HEIST__REINTERPRET(type, x) ((type)(x))
#endif

#define HEIST__LAYOUT 1
#define HEIST__LINE 128		/* the library's cache-line stride */
#define HEIST__TASK_PENDING 0x7a5c0de0u
#define HEIST__TASK_SYNCED 0x7a5c0de3u
#define HEIST__FLAG_PROFILE 2	/* the flag byte's profiler bit */

/* The deque's array: its capacity - 1, then its slots. */
struct heist__array_view {
	void *heist__retired;
	int64_t mask;
};

/* The first bytes of the library's struct worker (struct deque first). */
struct heist__worker_view {
	/* The owner's line. */
	int64_t bottom;			/* the next push's index; _Atomic in the library */
	int64_t public_cache;		/* below it: slots thieves may take */
	int64_t top_cache;		/* a top seen lately: never above the real one */
	struct heist__array_view *array;
	unsigned char heist__pad0[3 * HEIST__LINE - 32];
	/* Its own line: set by thieves, read by the owner. Any bit (a thief's request,
	 * the profiler) sends both fast paths to the library, but for a task the
	 * profiler does not record, the profiler's bit alone does not. */
	unsigned char flags;
	unsigned char heist__pad1[HEIST__LINE - 1];
	/* The worker's line. */
	unsigned epoch;			/* what a spawned task's thief word starts as */
	uint32_t sample_mask;		/* the profiler records one spawn in mask + 1 */
	uint32_t sample_tick;		/* its last draw (heist__sample_draw) */
	uint32_t heist__pad2;
	uint64_t pairs;			/* statistics: spawns synced here; each counts as
					   one spawned and one executed (src/pool.c) */
};

/* The worker on this thread. On a thread that is no worker, a stand-in whose deque is
 * full and empty, so that both fast paths fall through to the library without a test
 * of their own. initial-exec: one thread-pointer-relative load (the library is linked
 * at start-up, or dlopen'd while static TLS space is left, as glibc keeps some). */
extern __thread void *heist__self_v1 __attribute__((tls_model("initial-exec")));

HEIST__FAST void **
heist__slots(struct heist__array_view *a)
{
	return HEIST__REINTERPRET(void **, a + 1);
}

/* A statistics counter: only the owner writes it, others read it with relaxed loads,
 * so a relaxed load and store cannot lose an increment. */
HEIST__FAST void
heist__count(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* Fill t and push it: the deque has room at b. */
HEIST__FAST void
heist__push(struct heist__worker_view *w, heist_task *t, heist_fn fn, void *arg, int64_t b,
	    void **slot)
{
	uintptr_t epoch = w->epoch;
	t->heist__fn = fn;
	t->heist__arg = arg;
	__atomic_store_n(&t->heist__state, HEIST__TASK_PENDING, __ATOMIC_RELAXED);
	__atomic_store_n(&t->heist__thief, HEIST__REINTERPRET(void *, epoch), __ATOMIC_RELAXED);
	__atomic_store_n(slot, HEIST__STATIC(void *, t), __ATOMIC_RELAXED);
	__atomic_store_n(&w->bottom, b + 1, __ATOMIC_RELAXED);
}

/* The profiler's sampling draws (heist_config.profile_every): xorshift32 (Marsaglia
 * 2003), never 0 from a nonzero state. A spawn is recorded when the draw's high bits
 * under the mask are all 0: each one by itself with chance 1 / (mask + 1), so that the
 * sample does not follow the program's own rhythm as every n-th spawn would (in a
 * recursion, every n-th spawn is at the same few depths). */
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

/* Under the profiler (flags == HEIST__FLAG_PROFILE alone): whether the next spawn is
 * one the profiler skips; if so, its draw is used up. A spawn to record goes to the
 * library, which makes the same draw, uses it up and stamps the task. */
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
heist__spawn_inline(heist_task *t, heist_fn fn, void *arg)
{
	struct heist__worker_view *w = HEIST__STATIC(struct heist__worker_view *, heist__self_v1);
	int64_t b = __atomic_load_n(&w->bottom, __ATOMIC_RELAXED);
	struct heist__array_view *a = w->array;
	int64_t mask = a->mask;
	if (__builtin_expect(b - w->top_cache <= mask, 1)) {
		void **slot = &heist__slots(a)[b & mask];
		unsigned char f = __atomic_load_n(&w->flags, __ATOMIC_RELAXED);
		if (__builtin_expect(f == 0, 1)) {
			heist__push(w, t, fn, arg, b, slot);
			return;
		}
		if (f == HEIST__FLAG_PROFILE && heist__unsampled(w)) {
			t->heist__tsc = 0;	/* not recorded when it runs */
			heist__push(w, t, fn, arg, b, slot);
			return;
		}
	}
	(heist_spawn)(t, fn, arg);
}

HEIST__FAST int
heist__sync_inline(heist_task *t)
{
	struct heist__worker_view *w = HEIST__STATIC(struct heist__worker_view *, heist__self_v1);
	int64_t b = __atomic_load_n(&w->bottom, __ATOMIC_RELAXED);
	struct heist__array_view *a = w->array;
	if (__builtin_expect(b > w->public_cache, 1) &&
	    __builtin_expect(__atomic_load_n(&heist__slots(a)[(b - 1) & a->mask],
					     __ATOMIC_RELAXED) == HEIST__STATIC(void *, t), 1)) {
		unsigned char f = __atomic_load_n(&w->flags, __ATOMIC_RELAXED);
		/* Nothing asked of us; or only the profiler, and t is not to be timed. */
		if (__builtin_expect(f == 0, 1) ||
		    (f == HEIST__FLAG_PROFILE && t->heist__tsc == 0)) {
			__atomic_store_n(&w->bottom, b - 1, __ATOMIC_RELAXED);
			heist__count(&w->pairs);
#ifndef NDEBUG
			/* So that a second sync aborts (heist_sync's comment). */
			__atomic_store_n(&t->heist__state, HEIST__TASK_SYNCED, __ATOMIC_RELAXED);
#endif
			return t->heist__fn(t->heist__arg);
		}
	}
	return (heist_sync)(t);
}

/* Variadic, so that a C++ argument with a comma in it (a template's arguments) passes
 * through whole. */
#define heist_spawn(...) heist__spawn_inline(__VA_ARGS__)
#define heist_sync(...) heist__sync_inline(__VA_ARGS__)

#endif /* HEIST_INLINE_H */
