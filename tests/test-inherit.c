/* SPDX-License-Identifier: MIT */
/* test-inherit.c - fork() with pools (heist.h, "fork()"; src/inherit.h): in the child,
 * every call that would need an inherited pool's threads fails with ESHUTDOWN at once
 * (never a hang), heist_pool_destroy of an inherited pool returns, and new pools work;
 * a task that forked may go on in the child, but returning from it there aborts with a
 * message. Forked while the workers sleep, while tasks run and are queued, and from a
 * task. The parent's pools go on as if nothing happened.
 *
 * The child never calls cmocka (its asserts would longjmp into the child's copy of the
 * runner): CHILD_CHECK ends it with the failing line as its exit status, which the
 * parent reports. POSIX only; the child's work is bounded, and the parent's wait for
 * it has the usual bound (a hang fails). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

/* ThreadSanitizer ends a child that starts threads after a multithreaded fork unless
 * told not to; these tests do exactly that on purpose. */
const char *__tsan_default_options(void);
const char *
__tsan_default_options(void)
{
	return "die_after_fork=0";
}

/* In the child: on failure, exit with the line (1..255 folded) for the parent to see. */
#define CHILD_CHECK(cond)                                                            \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__,    \
				#cond);                                              \
			_exit(__LINE__ % 250 + 1);                                   \
		}                                                                    \
	} while (0)

/* Wait for child pid with the usual bound; returns its wait status. */
static int
reap(pid_t pid)
{
	int status = 0;
	bool ok;
	POLL(ok, waitpid(pid, &status, WNOHANG) == pid);
	if (!ok) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("the child hung");
	}
	return status;
}

static void
expect_child_passed(pid_t pid)
{
	int status = reap(pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child failed: %s %d", WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* A new pool in the child runs work, nested and submitted. Not under TSan, whose
 * registry of threads keeps the parent's after fork and stops the child when a new
 * thread gets the id of one of them ("dup thread with used id"), nor under qemu-user
 * (CI's aarch64 cell), which asserts in its own code when a forked child of a threaded
 * process starts a thread; the rest of each child's checks start no thread and run
 * there too. */
static void
child_new_pool_works(void)
{
#if defined(TEST_TSAN) || defined(TEST_UNDER_EMULATOR)
	return;
#endif
	heist_pool *mine;
	CHILD_CHECK(heist_pool_create(&mine, &(struct heist_config){.threads = 2}) == 0);
	for (intptr_t i = 0; i < 100; i++) {
		heist_future *f;
		CHILD_CHECK(heist_submit(mine, ret_int, (void *)i, &f) == 0);
		CHILD_CHECK(heist_future_wait(f) == (int)i);
		heist_future_release(f);
	}
	struct fib fb = {18, 0};
	CHILD_CHECK(heist_run(mine, fib_spawn, &fb) == 0 && fb.r == fib_serial(18));
	heist_pool_destroy(mine);
}

/* What every call on an inherited, idle pool does in the child. */
static void
child_inherited_pool_refuses(heist_pool *pool)
{
	heist_future *f = SENTINEL;
	CHILD_CHECK(heist_submit(pool, ret_int, NULL, &f) == ESHUTDOWN && f == NULL);
	CHILD_CHECK(heist_submit(pool, ret_int, NULL, NULL) == ESHUTDOWN);
	CHILD_CHECK(heist_run(pool, ret_int, NULL) == ESHUTDOWN);
	CHILD_CHECK(heist_pool_wait_idle(pool) == ESHUTDOWN);
	CHILD_CHECK(heist_for_each(pool, 0, 100, 1, NULL, NULL) == EINVAL);
	heist_group *g;
	CHILD_CHECK(heist_group_create(pool, &g) == 0);
	CHILD_CHECK(heist_group_submit(g, ret_int, NULL) == ESHUTDOWN);
	CHILD_CHECK(heist_group_wait(g) == 0);	/* nothing was accepted */
	heist_group_destroy(g);
	CHILD_CHECK(heist_pool_size(pool) > 0);	/* what it reports still reads */
}

static int
range_ok(void *arg, size_t begin, size_t end)
{
	(void)arg, (void)begin, (void)end;
	return 0;
}

static void
fork_while_the_workers_sleep(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	check_pool_works(pool);
	wait_until_parked(pool);
	fflush(stdout);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child_inherited_pool_refuses(pool);
		CHILD_CHECK(heist_for_each(pool, 0, 100, 1, range_ok, NULL) == ESHUTDOWN);
		child_new_pool_works();
		heist_pool_destroy(pool);	/* returns: nothing of it is waited for */
		child_new_pool_works();		/* and again, after that */
		_exit(0);
	}
	expect_child_passed(pid);
	check_pool_works(pool);
	heist_pool_destroy(pool);
}

/* Forked while both workers run held tasks and more are queued: in the child, a wait
 * for any of them, or for what depends on them, is ESHUTDOWN at once. */
static struct hold running[2];

static void
fork_while_tasks_run_and_wait(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	heist_future *held[2], *queued, *then, *all_done;
	for (int i = 0; i < 2; i++) {
		running[i] = (struct hold){.ret = 7};
		hold_worker(pool, &running[i], &held[i]);
	}
	assert_int_equal(heist_submit(pool, ret_int, (void *)5, &queued), 0);
	assert_int_equal(heist_future_then(queued, ret_int, (void *)6, &then), 0);
	heist_future *done_one;
	assert_int_equal(heist_submit(pool, ret_int, (void *)0, &done_one), 0);
	heist_group *g;
	assert_int_equal(heist_group_create(pool, &g), 0);
	assert_int_equal(heist_group_submit(g, ret_int, NULL), 0);
	heist_pool *other = make_pool(1);
	/* A when_all on another pool over the inherited one's futures. */
	assert_int_equal(heist_when_all(other, held, 2, &all_done), 0);
	fflush(stdout);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		CHILD_CHECK(!heist_future_done(held[0]));
		CHILD_CHECK(heist_future_wait(held[0]) == ESHUTDOWN);
		CHILD_CHECK(heist_future_wait(queued) == ESHUTDOWN);
		CHILD_CHECK(!heist_future_wait_for(queued, LONG_WAIT_NS));
		CHILD_CHECK(heist_future_wait(then) == ESHUTDOWN);
		CHILD_CHECK(heist_future_wait(all_done) == ESHUTDOWN);
		CHILD_CHECK(heist_group_wait(g) == ESHUTDOWN);
		/* A when_all and a continuation made in the child over inherited futures. */
		heist_future *mine_all, *mine_then;
		CHILD_CHECK(heist_when_all(other, &queued, 1, &mine_all) == 0);
		CHILD_CHECK(heist_future_wait(mine_all) == ESHUTDOWN);
		CHILD_CHECK(heist_future_then(queued, ret_int, NULL, &mine_then) == 0);
		CHILD_CHECK(heist_future_wait(mine_then) == ESHUTDOWN);
		heist_future_release(mine_all);
		heist_future_release(mine_then);
		heist_future_release(queued);	/* releases work on inherited futures */
		child_inherited_pool_refuses(pool);
		child_new_pool_works();
		heist_pool_destroy(pool);
		heist_pool_destroy(other);	/* idle and inherited: returns too */
		_exit(0);
	}
	expect_child_passed(pid);
	for (int i = 0; i < 2; i++)
		atomic_store(&running[i].open, 1);
	assert_int_equal(watched(queued), 5);
	assert_int_equal(watched(then), 6);
	assert_int_equal(watched(done_one), 0);
	assert_int_equal(heist_future_wait(all_done), 7);
	heist_future_release(all_done);
	for (int i = 0; i < 2; i++)
		assert_int_equal(watched(held[i]), 7);
	assert_int_equal(heist_group_wait(g), 0);
	heist_group_destroy(g);
	heist_pool_destroy(other);
	heist_pool_destroy(pool);
}

/* Forked from a task: the child goes on with the task as an outside thread. */
struct forker {
	heist_pool *pool;
	bool child_returns;	/* the child returns from the task (it must abort) */
	pid_t pid;
};

static int
fork_inside(void *arg)
{
	struct forker *k = arg;
	fflush(stdout);
	pid_t pid = fork();
	if (pid != 0) {
		k->pid = pid;
		return pid > 0 ? 0 : -1;
	}
	if (k->child_returns)
		return 0;	/* back into a loop of the inherited pool: abort */
	CHILD_CHECK(heist_worker_index() == -1);
	heist_task t;	/* fork-join runs inline here, as on any outside thread */
	heist_spawn(&t, ret_int, (void *)3);
	CHILD_CHECK(heist_sync(&t) == 3);
	child_inherited_pool_refuses(k->pool);
	child_new_pool_works();
	_exit(0);
}

static void
fork_from_a_task(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	struct forker k = {pool, false, 0};
	assert_int_equal(heist_run(pool, fork_inside, &k), 0);
	expect_child_passed(k.pid);
	check_pool_works(pool);
	heist_pool_destroy(pool);
}

static void
a_task_returning_in_the_child_aborts_it(void **state)
{
	(void)state;
	heist_pool *pool = make_pool(2);
	struct forker k = {pool, true, 0};
	assert_int_equal(heist_run(pool, fork_inside, &k), 0);
	int status = reap(k.pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	check_pool_works(pool);
	heist_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fork_while_the_workers_sleep),
		cmocka_unit_test(fork_while_tasks_run_and_wait),
		cmocka_unit_test(fork_from_a_task),
		cmocka_unit_test(a_task_returning_in_the_child_aborts_it),
	};
	return RUN_TESTS(tests);
}
