/* SPDX-License-Identifier: MIT */
/* test-fork.c - fork-join: spawn/sync and join checked on workloads with known answers
 * (W1 fib, W2 nqueens, W3 uts of docs/workloads.md), typed tasks (HEIST_TASK_n) with
 * their values and arguments, worker-passing tasks (HEIST_WORKER_TASK_n) beside them,
 * many spawns in one frame,
 * spawn/sync/join outside a worker (inline), heist_run from several threads at once, deep
 * recursion, no heap allocation on the spawn/sync path (counted by faults.c), and
 * futures mixed with spawns inside tasks; suite 'slow' runs the fib tests larger.
 * Submits are tested in test-submit.c, futures in test-future.c, the pool's lifetime
 * in test-pool.c. Rules and helpers (fib_spawn, fib_serial among them): common.h.
 * Tasks count what went wrong in `errors`, which the test thread checks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "faults.h"

/* fib sizes: fib(FIB_MIN .. max) on 1, 2 and 4 workers, fib(deep) on one. Suite 'slow'
 * runs the specified sizes, suite 'unit' a quarter of the work (n two less). Sanitizer
 * builds run 5-20x slower: smaller fib there. */
struct fib_sizes {
	int max, deep;
};

enum { FIB_MIN = 25 };
#ifdef TEST_SANITIZED
static const struct fib_sizes FIB_SLOW = { 28, 30 }, FIB_UNIT = { 27, 28 };
#else
static const struct fib_sizes FIB_SLOW = { 32, 34 }, FIB_UNIT = { 30, 32 };
#endif
static struct fib_sizes fib_sizes;	/* one of the two, chosen in main() */
enum { NQ_MAX = 12, UTS_ROOT_CHILDREN = 2000 };
enum { CHAIN_DEPTH = 10000 };

static atomic_uint errors;	/* anything a task saw go wrong */

/* ---------------------------------------------------------------------------------- */
/* W1 fib                                                                             */

/* W1 with join (fib_spawn, with spawn and sync, is common.h's). */
static int
fib_join(void *arg)
{
	struct fib *f = arg, a, b;
	int rc;

	if (f->n < 2) {
		f->r = f->n;
		return 0;
	}
	a.n = f->n - 1;
	b.n = f->n - 2;
	rc = heist_join(fib_join, &a, fib_join, &b);
	f->r = a.r + b.r;
	return rc;
}

/* W1 with spawn and sync written in this file, so that test-fork-outofline (built with
 * HEIST_NO_INLINE) runs it through the library's out-of-line functions, and test-fork
 * through heist/inline.h's fast paths. */
static int
fib_here(void *arg)
{
	struct fib *f = arg, a, b;
	heist_task t;
	int rc;

	if (f->n < 2) {
		f->r = f->n;
		return 0;
	}
	a.n = f->n - 1;
	b.n = f->n - 2;
	heist_spawn(&t, fib_here, &a);
	rc = fib_here(&b);
	rc |= heist_sync(&t);
	f->r = a.r + b.r;
	return rc;
}

#ifdef HEIST_NO_INLINE
#ifdef heist_spawn
#error "HEIST_NO_INLINE: heist_spawn must be the library's function"
#endif
#elif defined(__GNUC__) && !defined(heist_spawn)
#error "heist.h did not give this file the inline heist_spawn"
#endif

static void
check_fib_on_pools(heist_fn fn)
{
	static const unsigned sizes[] = { 1, 2, 4 };

	assert_int_equal(fib_serial(30), 832040);
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		heist_pool *pool = make_pool(sizes[s]);
		for (int n = FIB_MIN; n <= fib_sizes.max; n++) {
			struct fib f = { .n = n, .r = -1 };
			assert_int_equal(heist_run(pool, fn, &f), 0);
			if (f.r != fib_serial(n))
				fail_msg("fib(%d) = %ld on %u workers, expected %ld", n, f.r,
					 sizes[s], fib_serial(n));
		}
		heist_pool_destroy(pool);
	}
}

static void
fib_with_spawn_and_sync_is_right_on_1_2_4_workers(void **state)
{
	(void)state;
	check_fib_on_pools(fib_spawn);
}

static void
fib_with_join_is_right_on_1_2_4_workers(void **state)
{
	(void)state;
	check_fib_on_pools(fib_join);
}

static void
fib_with_this_files_spawn_and_sync_is_right_on_1_2_4_workers(void **state)
{
	(void)state;
	check_fib_on_pools(fib_here);
}

/* Every spawn counts once in spawned and once in executed, whichever path it took
 * (inline or not, stolen or not), once the computation is over; the root task is one
 * more executed. fib(n) spawns fib(n + 1) - 1 times. root computes fib into its
 * struct fib. */
static void
check_stats_count_every_spawn(heist_fn root)
{
	static const unsigned sizes[] = { 1, 2 };
	enum { N = 22 };
	const uint64_t spawns = (uint64_t)fib_serial(N + 1) - 1;

	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		heist_pool *pool = make_pool(sizes[s]);
		struct fib f = { .n = N, .r = -1 };
		struct heist_stats st;
		bool ok;

		assert_int_equal(heist_run(pool, root, &f), 0);
		assert_int_equal(f.r, fib_serial(N));
		/* The root's worker counts it once it has run: poll for that. */
		POLL(ok, heist_pool_stats(pool, &st) == 0 && st.executed >= spawns + 1);
		assert_true(ok);
		assert_int_equal(heist_pool_stats(pool, &st), 0);
		assert_int_equal(st.spawned, spawns);
		assert_int_equal(st.executed, spawns + 1);
		heist_pool_destroy(pool);
	}
}

static void
stats_count_every_spawn_of_this_file(void **state)
{
	(void)state;
	check_stats_count_every_spawn(fib_here);
}

/* ---------------------------------------------------------------------------------- */
/* Typed tasks (HEIST_TASK_n, HEIST_VOID_TASK_n)                                      */

/* W1 as a typed task: fib_typed's own value, the child's by its sync. */
static long fib_typed(int n);
HEIST_TASK_1(fib_child, long, fib_typed, int)

static long
fib_typed(int n)
{
	if (n < 2)
		return n;
	struct fib_child t;
	fib_child_spawn(&t, n - 1);
	long b = fib_typed(n - 2);
	return fib_child_sync(&t) + b;
}

static int
fib_typed_root(void *arg)
{
	struct fib *f = arg;
	f->r = fib_typed(f->n);
	return 0;
}

static void
typed_fib_is_right_on_1_2_4_workers(void **state)
{
	(void)state;
	check_fib_on_pools(fib_typed_root);
}

/* Typed spawns count as heist_spawn's do: once spawned and once executed each. */
static void
stats_count_every_typed_spawn(void **state)
{
	(void)state;
	check_stats_count_every_spawn(fib_typed_root);
}

/* Four arguments of four types and a struct for a value; and a void function that
 * records its runs. Each child checks its arguments: a wrong one is an error. */
struct mixed {
	double x;
	long long k;
};

static atomic_uint typed_runs[64];

static struct mixed
mixed_fn(double x, const int *p, char c, long long k)
{
	if (*p != (int)k || c != (char)('a' + k % 26))
		atomic_fetch_add(&errors, 1);
	return (struct mixed){ x * 2, k + 1 };
}
HEIST_TASK_4(mixed_child, struct mixed, mixed_fn, double, const int *, char, long long)

static void
note_run(unsigned i, unsigned expect)
{
	if (i != expect)
		atomic_fetch_add(&errors, 1);
	atomic_fetch_add(&typed_runs[i % 64], 1);
}
HEIST_VOID_TASK_2(note_child, note_run, unsigned, unsigned)

/* 64 of each spawned in one frame, synced in reverse, values checked. */
static int
typed_wide_task(void *arg)
{
	(void)arg;
	struct mixed_child m[64];
	struct note_child v[64];
	int keys[64];

	for (int i = 0; i < 64; i++) {
		keys[i] = i * 7;
		mixed_child_spawn(&m[i], i + 0.5, &keys[i], (char)('a' + (i * 7) % 26),
				  (long long)i * 7);
		note_child_spawn(&v[i], (unsigned)i, (unsigned)i);
	}
	for (int i = 64; i-- > 0;) {
		note_child_sync(&v[i]);
		struct mixed r = mixed_child_sync(&m[i]);
		if (r.x != (i + 0.5) * 2 || r.k != (long long)i * 7 + 1)
			atomic_fetch_add(&errors, 1);
	}
	return 0;
}

static void
typed_tasks_of_four_arguments_and_void_ones(void **state)
{
	(void)state;
	atomic_store(&errors, 0);
	for (int i = 0; i < 64; i++)
		atomic_store(&typed_runs[i], 0);
	unsigned rounds = 0;
	for (unsigned threads = 1; threads <= 4; threads *= 2) {
		heist_pool *pool = make_pool(threads);
		for (int rep = 0; rep < 200; rep++, rounds++)
			assert_int_equal(heist_run(pool, typed_wide_task, NULL), 0);
		heist_pool_destroy(pool);
	}
	/* Outside a worker: every child runs at once, inside its spawn. */
	assert_int_equal(typed_wide_task(NULL), 0);
	rounds++;
	struct fib_child t;
	fib_child_spawn(&t, 20);
	assert_int_equal(fib_child_sync(&t), 6765);
	assert_int_equal(atomic_load(&errors), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(atomic_load(&typed_runs[i]), rounds);
}

/* ---------------------------------------------------------------------------------- */
/* Worker-passing tasks (HEIST_WORKER_TASK_n, HEIST_WORKER_VOID_TASK_n)                */

/* W1 with the worker passed down. Every body checks that the worker it was given is
 * its thread's: the spawner's when its sync ran it, the thief's when it was stolen. */
static long fib_w(heist_worker *w, int n);
HEIST_WORKER_TASK_1(fib_w_child, long, fib_w, int)

static long
fib_w(heist_worker *w, int n)
{
	if (w != heist_worker_self())
		atomic_fetch_add(&errors, 1);
	if (n < 2)
		return n;
	struct fib_w_child t;
	fib_w_child_spawn(w, &t, n - 1);
	long b = fib_w(w, n - 2);
	return fib_w_child_sync(w, &t) + b;
}

static int
fib_w_root(void *arg)
{
	struct fib *f = arg;
	f->r = fib_w(heist_worker_self(), f->n);
	return 0;
}

static void
worker_fib_is_right_on_1_2_4_workers(void **state)
{
	(void)state;
	atomic_store(&errors, 0);
	check_fib_on_pools(fib_w_root);
	assert_int_equal(atomic_load(&errors), 0);
}

static void
stats_count_every_worker_spawn(void **state)
{
	(void)state;
	check_stats_count_every_spawn(fib_w_root);
}

/* Four arguments and a struct value; a void function; and, in the same frame, typed
 * tasks and heist_spawn of fib_spawn (common.h), all on the one deque: 32 of each
 * spawned, synced in reverse, every value checked. */
static struct mixed
mixed_w(heist_worker *w, double x, const int *p, char c, long long k)
{
	if (w != heist_worker_self())
		atomic_fetch_add(&errors, 1);
	return mixed_fn(x, p, c, k);
}
HEIST_WORKER_TASK_4(mixed_w_child, struct mixed, mixed_w, double, const int *, char, long long)

static void
note_w(heist_worker *w, unsigned i, unsigned expect)
{
	if (w != heist_worker_self())
		atomic_fetch_add(&errors, 1);
	note_run(i, expect);
}
HEIST_WORKER_VOID_TASK_2(note_w_child, note_w, unsigned, unsigned)

static int
worker_wide_task(void *arg)
{
	(void)arg;
	enum { WIDE = 32 };
	heist_worker *w = heist_worker_self();
	struct mixed_w_child m[WIDE];
	struct note_w_child v[WIDE];
	struct note_child plain_typed[WIDE];
	struct fib f[WIDE];
	heist_task t[WIDE];
	int keys[WIDE];

	for (int i = 0; i < WIDE; i++) {
		keys[i] = i * 7;
		mixed_w_child_spawn(w, &m[i], i + 0.5, &keys[i], (char)('a' + (i * 7) % 26),
				    (long long)i * 7);
		note_child_spawn(&plain_typed[i], (unsigned)i, (unsigned)i);
		f[i] = (struct fib){ .n = 10 + i % 8, .r = -1 };
		heist_spawn(&t[i], fib_spawn, &f[i]);
		note_w_child_spawn(w, &v[i], (unsigned)i, (unsigned)i);
	}
	for (int i = WIDE; i-- > 0;) {
		note_w_child_sync(w, &v[i]);
		if (heist_sync(&t[i]) != 0 || f[i].r != fib_serial(10 + i % 8))
			atomic_fetch_add(&errors, 1);
		note_child_sync(&plain_typed[i]);
		struct mixed r = mixed_w_child_sync(w, &m[i]);
		if (r.x != (i + 0.5) * 2 || r.k != (long long)i * 7 + 1)
			atomic_fetch_add(&errors, 1);
	}
	return 0;
}

static void
worker_tasks_mix_with_typed_and_plain_spawns(void **state)
{
	(void)state;
	atomic_store(&errors, 0);
	for (int i = 0; i < 64; i++)
		atomic_store(&typed_runs[i], 0);
	unsigned rounds = 0;
	for (unsigned threads = 1; threads <= 4; threads *= 2) {
		heist_pool *pool = make_pool(threads);
		for (int rep = 0; rep < 200; rep++, rounds++)
			assert_int_equal(heist_run(pool, worker_wide_task, NULL), 0);
		heist_pool_destroy(pool);
	}
	assert_int_equal(atomic_load(&errors), 0);
	for (int i = 0; i < 32; i++)	/* note_w_child and note_child: two per round */
		assert_int_equal(atomic_load(&typed_runs[i]), 2 * rounds);
}

/* On a thread that is no worker, heist_worker_self() is a stand-in: every spawn runs
 * its task at once, and its sync returns the value; the same inside a plain task
 * given that stand-in, where the stand-in's bounds send every spawn to the library. */
static int
stale_stand_in_task(void *arg)
{
	heist_worker *outside = arg;
	struct fib_w_child t;
	fib_w_child_spawn(outside, &t, 15);	/* pushed on this worker's deque */
	long b = fib_w(heist_worker_self(), 14);
	return fib_w_child_sync(outside, &t) + b == 987 ? 0 : EINVAL;
}

static void
worker_tasks_outside_a_pool_run_at_once(void **state)
{
	(void)state;
	atomic_store(&errors, 0);
	heist_worker *w = heist_worker_self();
	assert_non_null(w);
	assert_ptr_equal(w, (heist_worker_self)());
	struct fib_w_child t;
	fib_w_child_spawn(w, &t, 20);
	assert_int_equal(fib_w_child_sync(w, &t), 6765);
	struct note_w_child v;
	note_w_child_spawn(w, &v, 3, 3);
	note_w_child_sync(w, &v);
	assert_int_equal(worker_wide_task(NULL), 0);
	heist_pool *pool = make_pool(2);
	for (int rep = 0; rep < 100; rep++)
		assert_int_equal(heist_run(pool, stale_stand_in_task, w), 0);
	heist_pool_destroy(pool);
	assert_int_equal(atomic_load(&errors), 0);
}

/* ---------------------------------------------------------------------------------- */
/* W2 nqueens                                                                         */

enum { NQ_LIMIT = 16 };

struct nq {
	int n, row;
	long count;
	char board[NQ_LIMIT];	/* board[r]: the column of the queen in row r < row */
};

static bool
nq_safe(const char *board, int row, int col)
{
	for (int r = 0; r < row; r++) {
		int c = board[r];
		if (c == col || c - col == row - r || col - c == row - r)
			return false;
	}
	return true;
}

/* BOTS style: one task per safe column; each child gets its own copy of the board. */
static int
nq_task(void *arg)
{
	struct nq *q = arg;
	struct nq child[NQ_LIMIT];
	heist_task t[NQ_LIMIT];
	int k = 0;

	if (q->row == q->n) {
		q->count = 1;
		return 0;
	}
	for (int col = 0; col < q->n; col++) {
		if (!nq_safe(q->board, q->row, col))
			continue;
		child[k].n = q->n;
		child[k].row = q->row + 1;
		child[k].count = -1;
		memcpy(child[k].board, q->board, (size_t)q->row);
		child[k].board[q->row] = (char)col;
		heist_spawn(&t[k], nq_task, &child[k]);
		k++;
	}
	q->count = 0;
	while (k-- > 0) {
		if (heist_sync(&t[k]) != 0)
			atomic_fetch_add(&errors, 1);
		q->count += child[k].count;
	}
	return 0;
}

static void
nqueens_1_to_12_is_right(void **state)
{
	static const long answers[] = { 0, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200 };
	heist_pool *pool = make_pool(2);

	(void)state;
	atomic_store(&errors, 0);
	for (int n = 1; n <= NQ_MAX; n++) {
		struct nq q = { .n = n, .row = 0, .count = -1 };
		assert_int_equal(heist_run(pool, nq_task, &q), 0);
		if (q.count != answers[n])
			fail_msg("nqueens(%d) = %ld, expected %ld", n, q.count, answers[n]);
	}
	assert_int_equal(atomic_load(&errors), 0);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* W3 uts                                                                             */

static uint64_t
mix(uint64_t z)
{
	z += 0x9E3779B97F4A7C15u;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
	return z ^ (z >> 31);
}

struct uts {
	uint64_t seed;
	int depth;
	uint64_t nodes, sum;
};

static uint64_t
uts_work(uint64_t seed)
{
	uint64_t h = seed;

	for (int i = 0; i < 64; i++)
		h = mix(h);
	return h;
}

static unsigned
uts_children(const struct uts *u, uint64_t h)
{
	if (u->depth == 0)
		return UTS_ROOT_CHILDREN;
	return (double)(h >> 11) * 0x1.0p-53 < 0.124875 ? 8 : 0;
}

static void
uts_child(const struct uts *parent, unsigned i, struct uts *c)
{
	c->seed = mix(parent->seed ^ (0x9E3779B97F4A7C15u * (i + 1)));
	c->depth = parent->depth + 1;
	c->nodes = c->sum = 0;
}

static int uts_task(void *arg);

/* A node's children, each a task: spawned all at once, synced in reverse. */
static void
uts_spawn_children(struct uts *u, unsigned n, struct uts *c, heist_task *t)
{
	for (unsigned i = 0; i < n; i++) {
		uts_child(u, i, &c[i]);
		heist_spawn(&t[i], uts_task, &c[i]);
	}
	for (unsigned i = n; i-- > 0;) {
		if (heist_sync(&t[i]) != 0)
			atomic_fetch_add(&errors, 1);
		u->nodes += c[i].nodes;
		u->sum += c[i].sum;
	}
}

static int
uts_task(void *arg)
{
	struct uts *u = arg;
	uint64_t h = uts_work(u->seed);
	unsigned n = uts_children(u, h);

	u->nodes = 1;
	u->sum = h;
	if (n == 0)
		return 0;
	if (n <= 8) {
		struct uts c[8];
		heist_task t[8];
		uts_spawn_children(u, n, c, t);
	} else {
		struct uts *c = calloc(n, sizeof *c);
		heist_task *t = calloc(n, sizeof *t);
		if (c && t)
			uts_spawn_children(u, n, c, t);
		else
			atomic_fetch_add(&errors, 1);
		free(c);
		free(t);
	}
	return 0;
}

static void
uts_small_tree_is_right(void **state)
{
	struct uts root = { .seed = 3, .depth = 0 };
	heist_pool *pool = make_pool(2);

	(void)state;
	atomic_store(&errors, 0);
	assert_int_equal(heist_run(pool, uts_task, &root), 0);
	assert_int_equal(atomic_load(&errors), 0);
	assert_int_equal(root.nodes, 1028121);
	assert_int_equal(root.sum, 0x0a16600544d2c9d0u);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* Many spawns in one frame                                                           */

enum { WIDE = 64 };

/* A task that counts its runs, notes its worker and returns ret. */
struct counted {
	int ret;
	atomic_uint runs;
	atomic_int index;
};

static int
counted_task(void *arg)
{
	struct counted *c = arg;

	atomic_fetch_add(&c->runs, 1);
	atomic_store(&c->index, heist_worker_index());
	return c->ret;
}

/* Three spawns and a fourth part inline, on a pool of four, each waiting (with no heist
 * call) until all four have started: the three spawned must be taken by the three
 * idle workers while the spawner waits. Only the first used to be: the others stayed
 * private until the spawner's next spawn or sync, which its wait never reached. */
enum { INVOKE = 4 };
static atomic_int invoke_started;

static int
meet_all(void *arg)
{
	(void)arg;
	atomic_fetch_add(&invoke_started, 1);
	bool ok;
	POLL(ok, atomic_load(&invoke_started) >= INVOKE);
	return ok ? 0 : ETIMEDOUT;
}

static int
invoke_task(void *arg)
{
	(void)arg;
	heist_task t[INVOKE - 1];
	for (int i = 0; i < INVOKE - 1; i++)
		heist_spawn(&t[i], meet_all, NULL);
	int r = meet_all(NULL);
	for (int i = INVOKE - 1; i-- > 0;) {
		int ri = heist_sync(&t[i]);
		r = r ? r : ri;
	}
	return r;
}

static void
spawns_before_a_long_stretch_are_taken_by_idle_workers(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(INVOKE);
	for (int round = 0; round < 3; round++) {
		atomic_store(&invoke_started, 0);
		assert_int_equal(heist_run(pool, invoke_task, NULL), 0);
	}
	heist_pool_destroy(pool);
}

/* 64 spawns, then 64 syncs in reverse order, each giving its own child's value. */
static int
wide_task(void *arg)
{
	struct counted *slots = arg;
	heist_task t[WIDE];

	for (int i = 0; i < WIDE; i++) {
		slots[i].ret = i * 3 + 1;
		atomic_store(&slots[i].runs, 0);
		heist_spawn(&t[i], counted_task, &slots[i]);
	}
	for (int i = WIDE; i-- > 0;)
		if (heist_sync(&t[i]) != i * 3 + 1)
			atomic_fetch_add(&errors, 1);
	for (int i = 0; i < WIDE; i++)
		if (atomic_load(&slots[i].runs) != 1)
			atomic_fetch_add(&errors, 1);
	return 0;
}

static void
sixty_four_spawns_then_syncs_in_one_frame(void **state)
{
	struct counted slots[WIDE];

	(void)state;
	atomic_store(&errors, 0);
	for (unsigned threads = 1; threads <= 4; threads *= 2) {
		heist_pool *pool = make_pool(threads);
		for (int rep = 0; rep < 200; rep++)
			assert_int_equal(heist_run(pool, wide_task, slots), 0);
		heist_pool_destroy(pool);
	}
	assert_int_equal(atomic_load(&errors), 0);
}

/* ---------------------------------------------------------------------------------- */
/* Outside a worker                                                                   */

static void
check_join_semantics(void)
{
	struct counted a = { .ret = 0 }, b = { .ret = 5 };

	/* a's value when nonzero, else b's; both run either way. */
	if (heist_join(counted_task, &a, counted_task, &b) != 5)
		atomic_fetch_add(&errors, 1);
	a.ret = 3;
	if (heist_join(counted_task, &a, counted_task, &b) != 3)
		atomic_fetch_add(&errors, 1);
	b.ret = 0;
	a.ret = 0;
	if (heist_join(counted_task, &a, counted_task, &b) != 0)
		atomic_fetch_add(&errors, 1);
	/* A NULL function: EINVAL, and neither runs. */
	if (heist_join(NULL, &a, counted_task, &b) != EINVAL ||
	    heist_join(counted_task, &a, NULL, &b) != EINVAL)
		atomic_fetch_add(&errors, 1);
	if (atomic_load(&a.runs) != 3 || atomic_load(&b.runs) != 3)
		atomic_fetch_add(&errors, 1);
}

static int
join_semantics_task(void *arg)
{
	(void)arg;
	check_join_semantics();
	return 0;
}

static void
spawn_sync_join_run_inline_outside_a_worker(void **state)
{
	struct fib f = { .n = 20 };
	struct counted c = { .ret = 11, .index = 99 };
	struct counted slots[WIDE];
	heist_task t;

	(void)state;
	atomic_store(&errors, 0);
	assert_int_equal(heist_worker_index(), -1);
	assert_int_equal(fib_spawn(&f), 0);
	assert_int_equal(f.r, 6765);
	f.r = 0;
	assert_int_equal(fib_join(&f), 0);
	assert_int_equal(f.r, 6765);
	/* Outside a worker the spawned task runs at once, on this thread. */
	heist_spawn(&t, counted_task, &c);
	assert_int_equal(atomic_load(&c.runs), 1);
	assert_int_equal(atomic_load(&c.index), -1);
	assert_int_equal(heist_sync(&t), 11);
	assert_int_equal(atomic_load(&c.runs), 1);
	assert_int_equal(wide_task(slots), 0);
	check_join_semantics();
	assert_int_equal(atomic_load(&errors), 0);
}

static void
join_returns_the_first_nonzero_on_a_worker(void **state)
{
	heist_pool *pool = make_pool(2);

	(void)state;
	atomic_store(&errors, 0);
	for (int rep = 0; rep < 100; rep++)
		assert_int_equal(heist_run(pool, join_semantics_task, NULL), 0);
	assert_int_equal(atomic_load(&errors), 0);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* heist_run                                                                          */

struct runner {
	heist_pool *pool;
	int first_n;
	atomic_uint *bad;
};

static void *
runner_main(void *arg)
{
	struct runner *r = arg;

	for (int rep = 0; rep < 20; rep++) {
		struct fib f = { .n = r->first_n + rep % 3 };
		if (heist_run(r->pool, fib_spawn, &f) != 0 || f.r != fib_serial(f.n))
			atomic_fetch_add(r->bad, 1);
		if (heist_run(r->pool, ret_int, (void *)(intptr_t)(rep + 1)) != rep + 1)
			atomic_fetch_add(r->bad, 1);
	}
	return NULL;
}

static void
run_from_four_outside_threads_at_once(void **state)
{
	enum { THREADS = 4 };
	heist_pool *pool = make_pool(2);
	struct runner r[THREADS];
	pthread_t t[THREADS];
	atomic_uint bad = 0;

	(void)state;
	for (int i = 0; i < THREADS; i++) {
		r[i] = (struct runner){ pool, 14 + 2 * i, &bad };
		assert_int_equal(pthread_create(&t[i], NULL, runner_main, &r[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&bad), 0);
	heist_pool_destroy(pool);
}

struct nested_run {
	heist_pool *pool;
	struct fib f;
	int index_before, index_after;
	int other_thread;	/* inner runs that ran on another thread */
};

static int
record_thread(void *arg)
{
	*(pthread_t *)arg = pthread_self();
	return 0;
}

/* heist_run from inside a task of the same pool runs fn inline: at once, on this
 * thread, and gives its value. */
static int
nested_run_task(void *arg)
{
	struct nested_run *n = arg;
	int rc;

	n->index_before = heist_worker_index();
	rc = heist_run(n->pool, fib_spawn, &n->f);
	for (int i = 0; i < 100; i++) {
		pthread_t t;
		rc |= heist_run(n->pool, record_thread, &t);
		if (!pthread_equal(t, pthread_self()))
			n->other_thread++;
	}
	n->index_after = heist_worker_index();
	return rc == 0 ? heist_run(n->pool, ret_int, (void *)21) : -1;
}

static void
run_inside_a_task_runs_inline(void **state)
{
	struct nested_run n = { .f = { .n = 18 } };

	(void)state;
	n.pool = make_pool(2);
	assert_int_equal(heist_run(n.pool, nested_run_task, &n), 21);
	assert_int_equal(n.f.r, 2584);
	assert_true(n.index_before == 0 || n.index_before == 1);
	assert_int_equal(n.index_after, n.index_before);
	assert_int_equal(n.other_thread, 0);
	heist_pool_destroy(n.pool);
}

/* ---------------------------------------------------------------------------------- */
/* Deep recursion                                                                     */

static void
deep_fib_on_one_worker(void **state)
{
	heist_pool *pool = make_pool(1);
	struct fib f = { .n = fib_sizes.deep };

	(void)state;
	assert_int_equal(heist_run(pool, fib_spawn, &f), 0);
	assert_int_equal(f.r, fib_serial(fib_sizes.deep));
	heist_pool_destroy(pool);
}

/* A chain: each level spawns a leaf, recurses, then syncs. The worker's deque holds
 * one task per level (so it must grow far), and the stack is CHAIN_DEPTH frames deep
 * (so the default worker stack must be deep enough). */
struct chain {
	int depth;
	atomic_uint *leaves;
};

static int
leaf_task(void *arg)
{
	atomic_fetch_add((atomic_uint *)arg, 1);
	return 1;
}

static int
chain_task(void *arg)
{
	struct chain *c = arg, next;
	heist_task t;
	int below;

	if (c->depth == 0)
		return 0;
	heist_spawn(&t, leaf_task, c->leaves);
	next.depth = c->depth - 1;
	next.leaves = c->leaves;
	below = chain_task(&next);
	return below + heist_sync(&t);
}

static void
deep_chain_of_spawns_grows_deque_and_stack(void **state)
{
	(void)state;
	for (unsigned threads = 1; threads <= 2; threads++) {
		heist_pool *pool = make_pool(threads);
		atomic_uint leaves = 0;
		struct chain c = { CHAIN_DEPTH, &leaves };

		assert_int_equal(heist_run(pool, chain_task, &c), CHAIN_DEPTH);
		assert_int_equal(atomic_load(&leaves), CHAIN_DEPTH);
		heist_pool_destroy(pool);
	}
}

/* ---------------------------------------------------------------------------------- */
/* No allocation on the spawn/sync path                                               */

struct alloc_probe {
	struct fib f;
	uint64_t allocs;
};

static int
alloc_probe_task(void *arg)
{
	struct alloc_probe *p = arg;
	struct fib warm = { .n = 25 };
	uint64_t before;
	int rc;

	/* The first run may grow the deque to its working size; the second may not
	 * allocate at all. Counted over every thread, workers included. */
	rc = fib_spawn(&warm);
	before = fault_calls(FAULT_ALLOC);
	rc |= fib_spawn(&p->f);
	p->allocs = fault_calls(FAULT_ALLOC) - before;
	return rc;
}

static void
spawn_and_sync_do_not_allocate(void **state)
{
	heist_pool *pool = make_pool(1);
	struct alloc_probe p = { .f = { .n = 25 }, .allocs = 99 };

	(void)state;
	assert_int_equal(heist_run(pool, alloc_probe_task, &p), 0);
	assert_int_equal(p.f.r, 75025);
	assert_int_equal(p.allocs, 0);
	heist_pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------- */
/* Futures mixed with spawns                                                          */

static heist_pool *mix_pool;

/* Submits fib(15) as a future and spawns fib(14); computes fib(13) inline.
 * spawn_first: the future is waited for while the spawned task is still outstanding
 * (the wait helps; the sync must still find its own task). Otherwise the spawn is
 * synced before the wait. Returns 0 when every value is right. */
static int
mixed_task(void *arg)
{
	bool spawn_first = arg != NULL;
	struct fib sub = { .n = 15 }, sp = { .n = 14 }, in = { .n = 13 };
	heist_future *f = NULL;
	heist_task t;
	int rc = 0;

	if (spawn_first) {
		heist_spawn(&t, fib_spawn, &sp);
		rc |= heist_submit(mix_pool, fib_spawn, &sub, &f);
		rc |= fib_spawn(&in);
		rc |= f ? heist_future_wait(f) : 1;
		rc |= heist_sync(&t);
	} else {
		rc |= heist_submit(mix_pool, fib_spawn, &sub, &f);
		heist_spawn(&t, fib_spawn, &sp);
		rc |= fib_spawn(&in);
		rc |= heist_sync(&t);
		rc |= f ? heist_future_wait(f) : 1;
	}
	heist_future_release(f);
	if (rc != 0 || sub.r != 610 || sp.r != 377 || in.r != 233)
		atomic_fetch_add(&errors, 1);
	return 0;
}

/* Spawns 16 mixed tasks of one kind from one frame. */
static int
mixed_root(void *arg)
{
	enum { K = 16 };
	heist_task t[K];

	for (int i = 0; i < K; i++)
		heist_spawn(&t[i], mixed_task, arg);
	for (int i = K; i-- > 0;)
		if (heist_sync(&t[i]) != 0)
			atomic_fetch_add(&errors, 1);
	return 0;
}

static void
check_mixed(void *spawn_first)
{
	atomic_store(&errors, 0);
	for (unsigned threads = 1; threads <= 4; threads *= 2) {
		mix_pool = make_pool(threads);
		for (int rep = 0; rep < 10; rep++) {
			heist_future *f = NULL;
			assert_int_equal(heist_run(mix_pool, mixed_root, spawn_first), 0);
			/* The same from a submitted task, waited for from outside. */
			assert_int_equal(heist_submit(mix_pool, mixed_root, spawn_first, &f), 0);
			assert_int_equal(heist_future_wait(f), 0);
			heist_future_release(f);
		}
		heist_pool_destroy(mix_pool);
		mix_pool = NULL;
	}
	assert_int_equal(atomic_load(&errors), 0);
}

static void
tasks_mix_futures_and_spawns_sync_before_wait(void **state)
{
	(void)state;
	check_mixed(NULL);
}

static void
tasks_mix_futures_and_spawns_wait_with_spawn_outstanding(void **state)
{
	(void)state;
	check_mixed((void *)1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fib_with_spawn_and_sync_is_right_on_1_2_4_workers),
		cmocka_unit_test(fib_with_join_is_right_on_1_2_4_workers),
		cmocka_unit_test(fib_with_this_files_spawn_and_sync_is_right_on_1_2_4_workers),
		cmocka_unit_test(stats_count_every_spawn_of_this_file),
		cmocka_unit_test(nqueens_1_to_12_is_right),
		cmocka_unit_test(uts_small_tree_is_right),
		cmocka_unit_test(sixty_four_spawns_then_syncs_in_one_frame),
		cmocka_unit_test(spawns_before_a_long_stretch_are_taken_by_idle_workers),
		cmocka_unit_test(typed_fib_is_right_on_1_2_4_workers),
		cmocka_unit_test(stats_count_every_typed_spawn),
		cmocka_unit_test(typed_tasks_of_four_arguments_and_void_ones),
		cmocka_unit_test(worker_fib_is_right_on_1_2_4_workers),
		cmocka_unit_test(stats_count_every_worker_spawn),
		cmocka_unit_test(worker_tasks_mix_with_typed_and_plain_spawns),
		cmocka_unit_test(worker_tasks_outside_a_pool_run_at_once),
		cmocka_unit_test(spawn_sync_join_run_inline_outside_a_worker),
		cmocka_unit_test(join_returns_the_first_nonzero_on_a_worker),
		cmocka_unit_test(run_from_four_outside_threads_at_once),
		cmocka_unit_test(run_inside_a_task_runs_inline),
		cmocka_unit_test(deep_fib_on_one_worker),
		cmocka_unit_test(deep_chain_of_spawns_grows_deque_and_stack),
		cmocka_unit_test(spawn_and_sync_do_not_allocate),
		cmocka_unit_test(tasks_mix_futures_and_spawns_sync_before_wait),
		cmocka_unit_test(tasks_mix_futures_and_spawns_wait_with_spawn_outstanding),
	};
	/* The fib tests again, at the specified sizes. */
	const struct CMUnitTest slow_tests[] = {
		cmocka_unit_test(fib_with_spawn_and_sync_is_right_on_1_2_4_workers),
		cmocka_unit_test(fib_with_join_is_right_on_1_2_4_workers),
		cmocka_unit_test(deep_fib_on_one_worker),
	};
	fib_sizes = test_slow() ? FIB_SLOW : FIB_UNIT;
	return RUN_TESTS_OR_SLOW(tests, slow_tests);
}
