/* SPDX-License-Identifier: MIT */
/* instr.c - heist-bench --instructions: what a spawn+sync pair costs, in instructions
 * counted by valgrind's callgrind, which do not move with the machine's noise (the
 * fork-join targets are stated in them). The program runs itself twice under
 * callgrind, `--instr-child serial N` (W1's serial fib) and `--instr-child heist N`
 * (W1's heist fib on a pool of one worker), with --separate-threads=yes, and takes
 * each run's busiest thread (the worker runs the whole heist tree; the main thread
 * only waits). Per pair: (heist - serial) / spawns, where a fib(n) tree has
 * fib(n + 1) - 1 calls above the leaves, one spawn+sync each. The same again for
 * heist-bench-user (bench/user_fib.c), W1 built as a user's program is: -O2, the
 * shared library, heist.h alone; once with heist_spawn of an argument struct, once
 * with a typed task (HEIST_TASK_1), as Lace's driver uses Lace's typed tasks, and once
 * with a worker-passing task (HEIST_WORKER_TASK_1), as Lace's tasks get their worker.
 *
 * W5-fine's row: what one heist_submit (fire-and-forget) costs, with the task's run and
 * finish on the worker, over running its body serially. `--instr-child submit N`: a
 * pool of one worker, held in a gate task (asleep in the kernel: no instructions), takes
 * N W5-fine submits from the main thread into its injector, then is let go and runs
 * them; `submit-serial N` is N bodies on a thread. Counted over every thread (the
 * submit is on one, the run on another), and the same with N = 0 subtracted, so that
 * the pool's start and end drop out: per task = ((submit N - submit 0) - (serial N -
 * serial 0)) / N. The queue is full when the worker starts, as when a storm's
 * submitter runs ahead of its workers; a pool that keeps up pays the wake-ups too.
 *
 * W10's rows: what a dependent task (heist_submit_after) costs beside a plain
 * heist_submit, in the same gate-held pool. `dep-base N`: main submits N input jobs
 * with futures, then releases the futures; the worker, let go, runs them. `dep-plain
 * N`, `dep-after1 N`, `dep-after2 N`, `dep-after3 N`: the same N inputs, and after them
 * N more tasks, fire-and-forget: plain submits, or dependent tasks of 1 input (input
 * k), of 2 (k, k + 1 mod N) or of 3 (k, k + 1, k + 2 mod N), submitted while their
 * inputs are still queued, so
 * each is linked to them and queued by the worker when the last one ends. Every task
 * only counts down. Per task, over every thread: (run - dep-base) / N, which is the
 * task's own cost (submit, link, queue, run, finish) with the inputs' taken out; the
 * submitting thread's share likewise from the main thread's counts.
 *
 * And what a node of a heist_graph costs when the graph is run again: `graph1-once
 * N`, `graph1-twice N` (and graph3-): a graph of N input nodes and N nodes after them,
 * of 1 input (input k) or 3 (k, k + 1, k + 2 mod N) as above, made, then run once or
 * twice on a one-worker pool from the main thread. The worker's count (every thread's
 * but the main one, which makes the graph, starts the runs and waits) of twice less
 * that of once is one run; per node, over 2N nodes. */
#include "workloads.h"

#include "kernels.h"

#if !defined(_WIN32)
#include <dirent.h>
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#include <sys/wait.h>
#endif
#include <unistd.h>

struct serial_run {
	int n;
	long r;
};

static void *
serial_thread(void *p)
{
	struct serial_run *s = p;
	s->r = w1_serial(s->n);
	return NULL;
}

/* W5-fine's submit row (above). */
enum { SUBMIT_ITERS = 50, SUBMIT_TASKS = 100000 };
/* W10's dependent-task rows (above): tasks per run. */
enum { DEP_TASKS = 100000 };
static double *submit_out;
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_state;		/* 0 shut, 1 the worker waits in it, 2 open */
static atomic_long submit_left;	/* tasks still to run; the last one wakes main */

/* A task is done: the last one wakes main. acq_rel: each task's writes reach the
 * last, whose broadcast (under the lock) hands them to main. */
static void
count_down(void)
{
	if (atomic_fetch_sub_explicit(&submit_left, 1, memory_order_acq_rel) == 1) {
		pthread_mutex_lock(&gate_lock);
		pthread_cond_broadcast(&gate_cond);
		pthread_mutex_unlock(&gate_lock);
	}
}

/* Task k's body, counted down in submit_left as the bench's latch does. */
static void
submit_body(double *slot)
{
	*slot = w5_body((size_t)(slot - submit_out), SUBMIT_ITERS);
	count_down();
}

static void *
submit_serial_thread(void *p)
{
	long n = *(long *)p;
	for (long k = 0; k < n; k++)
		submit_body(&submit_out[k]);
	return NULL;
}

static int
submit_task(void *arg)
{
	submit_body(arg);
	return 0;
}

static int
gate_task(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&gate_lock);
	gate_state = 1;
	pthread_cond_broadcast(&gate_cond);
	while (gate_state != 2)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	return 0;
}

/* Under the lock: set the gate's state (0: leave it), then wait until `until`. */
static void
gate_wait(int state, bool (*until)(void))
{
	pthread_mutex_lock(&gate_lock);
	if (state)
		gate_state = state;
	pthread_cond_broadcast(&gate_cond);
	while (!until())
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static bool
worker_in_gate(void)
{
	return gate_state == 1;
}

static bool
all_ran(void)
{
	return atomic_load_explicit(&submit_left, memory_order_acquire) == 0;
}

/* `submit N` or `submit-serial N`: 0 if every slot holds the serial answer. The pool
 * is not destroyed: its destroy (and the record trim there) is no part of a submit;
 * the process exits with the worker asleep. */
static int
submit_child(bool heist, long n)
{
	submit_out = calloc((size_t)n + 1, sizeof(*submit_out));
	if (!submit_out)
		return 1;
	atomic_store(&submit_left, n);
	if (!heist) {
		pthread_t t;
		if (pthread_create(&t, NULL, submit_serial_thread, &n) || pthread_join(t, NULL))
			return 1;
	} else {
		struct heist_config cfg = { .threads = 1, .spin = 1,
					    .max_spares = HEIST_SPARES_NONE };
		heist_pool *pool;
		if (heist_pool_create(&pool, &cfg) || heist_submit(pool, gate_task, NULL, NULL))
			return 1;
		gate_wait(0, worker_in_gate);
		for (long k = 0; k < n; k++)
			if (heist_submit(pool, submit_task, &submit_out[k], NULL))
				return 1;
		gate_wait(2, all_ran);
	}
	for (long k = 0; k < n; k++)
		if (submit_out[k] != w5_body((size_t)k, SUBMIT_ITERS))
			return 1;
	return 0;
}

/* W10's rows (above): N input jobs with futures, and after them N tasks of one kind
 * (none in dep-base), each only counting down; then the inputs' futures go. */
enum dep_kind { DEP_BASE, DEP_PLAIN, DEP_AFTER1, DEP_AFTER2, DEP_AFTER3 };

static int
count_task(void *arg)
{
	(void)arg;
	count_down();
	return 0;
}

static int
dep_child(enum dep_kind kind, long n)
{
	heist_future **in = calloc((size_t)n + 1, sizeof(*in));
	if (!in)
		return 1;
	atomic_store(&submit_left, kind == DEP_BASE ? n : 2 * n);
	struct heist_config cfg = { .threads = 1, .spin = 1, .max_spares = HEIST_SPARES_NONE };
	heist_pool *pool;
	if (heist_pool_create(&pool, &cfg) || heist_submit(pool, gate_task, NULL, NULL))
		return 1;
	gate_wait(0, worker_in_gate);
	for (long k = 0; k < n; k++)
		if (heist_submit(pool, count_task, NULL, &in[k]))
			return 1;
	for (long k = 0; k < n; k++) {
		/* dependent k waits for inputs k, k + 1, k + 2 (mod n): each input has
		 * up to three dependents, as a stencil's point */
		heist_future *three[3] = { in[k], in[(k + 1) % n], in[(k + 2) % n] };
		int err = 0;
		if (kind == DEP_PLAIN)
			err = heist_submit(pool, count_task, NULL, NULL);
		else if (kind == DEP_AFTER1)
			err = heist_submit_after(pool, three, 1, count_task, NULL, NULL, NULL);
		else if (kind == DEP_AFTER2)
			err = heist_submit_after(pool, three, 2, count_task, NULL, NULL, NULL);
		else if (kind == DEP_AFTER3)
			err = heist_submit_after(pool, three, 3, count_task, NULL, NULL, NULL);
		if (err)
			return 1;
	}
	for (long k = 0; k < n; k++)
		heist_future_release(in[k]);
	gate_wait(2, all_ran);
	free(in);
	return 0;
}

/* A run of a graph of 2n nodes, after its making: see the top of this file. */
static int
graph_child(unsigned inputs, unsigned runs, long n)
{
	struct heist_config cfg = { .threads = 1, .spin = 1, .max_spares = HEIST_SPARES_NONE };
	heist_pool *pool;
	heist_graph *g;
	heist_graph_node **node = calloc(2 * (size_t)n, sizeof *node);
	if (!node || heist_pool_create(&pool, &cfg) || heist_graph_create(&g))
		return 1;
	for (long k = 0; k < 2 * n; k++)
		if (heist_graph_add_task(g, count_task, NULL, &node[k]))
			return 1;
	for (long k = 0; k < n; k++)
		for (unsigned i = 0; i < inputs; i++)
			if (heist_graph_edge(node[(k + i) % n], node[n + k]))
				return 1;
	for (unsigned r = 0; r < runs; r++) {
		atomic_store(&submit_left, 2 * n);
		heist_future *f;
		if (heist_graph_run(pool, g, NULL, &f) || heist_future_wait(f) ||
		    atomic_load(&submit_left))
			return 1;
		heist_future_release(f);
	}
	heist_graph_destroy(g);
	heist_pool_destroy(pool);
	free(node);
	return 0;
}

int
bench_instr_child(const char *what, int n)
{
	static const char *const graphs[] = { "graph1-once", "graph1-twice", "graph3-once",
					      "graph3-twice" };
	for (unsigned k = 0; k < sizeof graphs / sizeof graphs[0]; k++)
		if (strcmp(what, graphs[k]) == 0)
			return graph_child(k < 2 ? 1 : 3, k % 2 + 1, n);
	if (strcmp(what, "submit") == 0 || strcmp(what, "submit-serial") == 0)
		return submit_child(strcmp(what, "submit") == 0, n);
	static const char *const deps[] = { "dep-base", "dep-plain", "dep-after1", "dep-after2",
					    "dep-after3" };
	for (unsigned k = 0; k < sizeof deps / sizeof deps[0]; k++)
		if (strcmp(what, deps[k]) == 0)
			return dep_child((enum dep_kind)k, n);
	long r;
	if (strcmp(what, "serial") == 0) {
		/* On a thread of its own, as the heist tree runs on its worker: the
		 * process's start-up stays on the main thread in both runs. */
		struct serial_run s = { n, 0 };
		pthread_t t;
		if (pthread_create(&t, NULL, serial_thread, &s) || pthread_join(t, NULL))
			return 1;
		r = s.r;
	} else if (strcmp(what, "heist") == 0) {
		/* spin 1: the worker's idle searches before and after the tree stay out
		 * of its count as far as they can. */
		struct heist_config cfg = { .threads = 1, .spin = 1 };
		heist_pool *pool;
		if (heist_pool_create(&pool, &cfg))
			return 1;
		r = w1_heist(pool, n);
		heist_pool_destroy(pool);
	} else {
		return 2;
	}
	return r == fib_expected(n) ? 0 : 1;
}

#if defined(_WIN32)
/* valgrind runs on Linux (and the parent side forks): the mode says so and does
 * nothing. The child side above builds everywhere. */
int
bench_instructions(const char *self, int n)
{
	(void)self;
	(void)n;
	printf("--instructions: not available on this system (callgrind: valgrind, fork)\n");
	return 0;
}
#else
/* A callgrind run's instructions: its busiest thread's, all its threads', and its
 * first (main) thread's. */
struct counts {
	uint64_t busiest, all, main;
};

/* The "summary:" (or "totals:") counts of the files dir/prefix*, one per thread (the
 * main thread's ends in "-01"); the files are removed. */
static struct counts
thread_counts(const char *dir, const char *prefix)
{
	struct counts c = { 0, 0, 0 };
	DIR *d = opendir(dir);
	if (!d)
		return c;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		char line[512];
		uint64_t file = 0;	/* the thread's count */
		while (fgets(line, sizeof line, f)) {
			uint64_t v;
			if ((sscanf(line, "summary: %" SCNu64, &v) == 1 ||
			     sscanf(line, "totals: %" SCNu64, &v) == 1) && v > file)
				file = v;
		}
		fclose(f);
		unlink(path);
		c.all += file;
		if (file > c.busiest)
			c.busiest = file;
		size_t len = strlen(e->d_name);
		if (len > 3 && strcmp(e->d_name + len - 3, "-01") == 0)
			c.main = file;
	}
	closedir(d);
	return c;
}

/* Run prog under callgrind: `self --instr-child what n`, or, when user is set, the
 * user-style build `user what n`. Its counts, all 0 if valgrind could not run it. */
static struct counts
count_run(const char *self, const char *user, const char *dir, const char *what, int n)
{
	struct counts none = { 0, 0, 0 };
	char out[4200], prefix[64], num[16];
	snprintf(prefix, sizeof prefix, "cg-%s-%s-%d.out", user ? "user" : "bench", what, n);
	snprintf(out, sizeof out, "--callgrind-out-file=%s/%s", dir, prefix);
	snprintf(num, sizeof num, "%d", n);
	pid_t pid = fork();
	if (pid < 0)
		return none;
	if (pid == 0) {
		char *bench[] = { "valgrind", "--tool=callgrind", "--separate-threads=yes",
				  "--quiet", out, (char *)self, "--instr-child", (char *)what,
				  num, NULL };
		char *users[] = { "valgrind", "--tool=callgrind", "--separate-threads=yes",
				  "--quiet", out, (char *)user, (char *)what, num, NULL };
		execvp("valgrind", user ? users : bench);
		fprintf(stderr, "heist-bench: cannot run valgrind: %s\n", strerror(errno));
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		thread_counts(dir, prefix);	/* remove what it left */
		return none;
	}
	return thread_counts(dir, prefix);
}

/* The busiest thread's instructions, or 0. */
static uint64_t
count(const char *self, const char *user, const char *dir, const char *what, int n)
{
	return count_run(self, user, dir, what, n).busiest;
}

/* heist-bench-user beside this program (bench/user_fib.c), or NULL. */
static const char *
user_build(const char *self, char *buf, size_t cap)
{
	const char *slash = strrchr(self, '/');
	int len = slash ? (int)(slash - self + 1) : 0;
	snprintf(buf, cap, "%.*sheist-bench-user", len, self);
	return access(buf, X_OK) == 0 ? buf : NULL;
}

/* W5-fine's row: per task, the submit + run + finish over the serial body (above). */
static int
submit_row(const char *self, const char *dir)
{
	const int n = SUBMIT_TASKS;
	struct counts s0 = count_run(self, NULL, dir, "submit-serial", 0);
	struct counts sn = count_run(self, NULL, dir, "submit-serial", n);
	struct counts h0 = count_run(self, NULL, dir, "submit", 0);
	struct counts hn = count_run(self, NULL, dir, "submit", n);
	if (!s0.all || !sn.all || !h0.all || !hn.all) {
		fprintf(stderr, "heist-bench: --instructions: the W5-fine submit runs failed\n");
		return 1;
	}
	double serial = (double)(sn.all - s0.all);
	double per = ((double)hn.all - (double)h0.all - serial) / n;
	/* The main thread checks the answers in both runs; the serial bodies run on a
	 * thread of their own. */
	double check = (double)sn.main - (double)s0.main;
	double submit = ((double)hn.main - (double)h0.main - check) / n;
	printf("W5-fine  %dk x %d  serial          1  %14" PRIu64 "  (all threads, less "
	       "the same with 0 tasks)\n", n / 1000, SUBMIT_ITERS, (uint64_t)serial);
	printf("W5-fine  %dk x %d  heist           1  %14" PRIu64
	       "  %.1f instructions per task over serial: submit %.1f (submitting thread), "
	       "run and finish %.1f (worker)\n",
	       n / 1000, SUBMIT_ITERS, hn.all - h0.all, per, submit, per - submit);
	return 0;
}

/* W10's rows: per task, a plain submit and a dependent task with 1, 2 and 3 inputs,
 * each over the same N input jobs alone (the comment at the top of this file). */
static int
dep_rows(const char *self, const char *dir)
{
	const int n = DEP_TASKS;
	struct counts base = count_run(self, NULL, dir, "dep-base", n);
	struct counts plain = count_run(self, NULL, dir, "dep-plain", n);
	struct counts after1 = count_run(self, NULL, dir, "dep-after1", n);
	struct counts after2 = count_run(self, NULL, dir, "dep-after2", n);
	struct counts after3 = count_run(self, NULL, dir, "dep-after3", n);
	if (!base.all || !plain.all || !after1.all || !after2.all || !after3.all) {
		fprintf(stderr, "heist-bench: --instructions: the W10 dependent-task runs failed\n");
		return 1;
	}
	const struct { const char *impl; struct counts c; } rows[] = {
		{ "heist-submit", plain }, { "heist-after1", after1 }, { "heist-after2", after2 },
		{ "heist-after3", after3 },
	};
	double plain_per = ((double)plain.all - (double)base.all) / n;
	for (unsigned k = 0; k < sizeof rows / sizeof rows[0]; k++) {
		const struct counts *c = &rows[k].c;
		double per = ((double)c->all - (double)base.all) / n;
		double submit = ((double)c->main - (double)base.main) / n;
		printf("W10      %dk tasks %-13s   1  %14" PRIu64 "  %.1f instructions per "
		       "task over the %dk inputs alone: submit %.1f (submitting thread), run "
		       "and finish %.1f (worker)", n / 1000, rows[k].impl, c->all - base.all,
		       per, n / 1000, submit, per - submit);
		if (k == 0)
			printf("  (heist_submit, fire-and-forget)\n");
		else
			printf("; %.2fx heist-submit's  (heist_submit_after, %u input%s)\n",
			       per / plain_per, k, k == 1 ? "" : "s");
	}
	/* Replay: one run of the graph, per node, beside the dependent task. */
	for (unsigned inputs = 1; inputs <= 3; inputs += 2) {
		char once[32], twice[32];
		snprintf(once, sizeof once, "graph%u-once", inputs);
		snprintf(twice, sizeof twice, "graph%u-twice", inputs);
		/* The worker's: every thread's but the main one, which makes the graph. */
		struct counts r1 = count_run(self, NULL, dir, once, n);
		struct counts r2 = r1.all ? count_run(self, NULL, dir, twice, n) : r1;
		uint64_t c1 = r1.all - r1.main, c2 = r2.all - r2.main;
		if (!r1.all || !r2.all || c2 <= c1) {
			fprintf(stderr, "heist-bench: --instructions: the W10 graph runs failed\n");
			return 1;
		}
		const struct counts *dep = inputs == 1 ? &after1 : &after3;
		double per = ((double)c2 - (double)c1) / (2.0 * n);
		double dep_per = ((double)dep->all - (double)base.all) / n;
		printf("W10      %dk nodes heist-graph%u    1  %14" PRIu64 "  %.1f instructions "
		       "per node of a run again (worker); %.2fx heist-after%u's, %.2fx "
		       "heist-submit's  (heist_graph_run of %dk nodes and %dk more with %u "
		       "input%s)\n", 2 * n / 1000, inputs, c2 - c1, per, per / dep_per, inputs,
		       per / plain_per, n / 1000, n / 1000, inputs, inputs == 1 ? "" : "s");
	}
	return 0;
}

int
bench_instructions(const char *self, int n)
{
	char dir[] = "/tmp/heist-bench-cg-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("heist-bench: mkdtemp");
		return 1;
	}
	char path[4200];
	const char *user = user_build(self, path, sizeof path);
	uint64_t serial = count(self, NULL, dir, "serial", n);
	uint64_t heist = serial ? count(self, NULL, dir, "heist", n) : 0;
	uint64_t user_serial = user && heist ? count(self, user, dir, "serial", n) : 0;
	uint64_t user_heist = user_serial ? count(self, user, dir, "heist", n) : 0;
	uint64_t user_typed = user_heist ? count(self, user, dir, "typed", n) : 0;
	uint64_t user_worker = user_typed ? count(self, user, dir, "worker", n) : 0;
	if (!serial || !heist || (user && !user_worker)) {
		fprintf(stderr, "heist-bench: --instructions needs valgrind (callgrind), and "
				"every run to succeed\n");
		rmdir(dir);
		return 1;
	}
	double pairs = (double)fib_expected(n + 1) - 1;
	double per = ((double)heist - (double)serial) / pairs;
	printf("workload size       impl          thr  instructions (busiest thread)  figures\n");
	printf("W1       fib(%d)    serial          1  %14" PRIu64 "\n", n, serial);
	printf("W1       fib(%d)    heist           1  %14" PRIu64
	       "  %.1f instructions per spawn+sync pair over serial (target <= 17: %s)\n",
	       n, heist, per, per <= 17 ? "met" : "MISSED");
	if (!user) {
		printf("W1       fib(%d)    heist-user      -  (heist-bench-user not found "
		       "beside heist-bench)\n", n);
	} else {
		double user_per = ((double)user_heist - (double)user_serial) / pairs;
		printf("W1       fib(%d)    serial-user     1  %14" PRIu64 "\n", n, user_serial);
		printf("W1       fib(%d)    heist-user      1  %14" PRIu64
		       "  %.1f instructions per pair over serial-user (target <= 35: %s)  (a "
		       "user's build: -O2, shared library)\n",
		       n, user_heist, user_per, user_per <= 35 ? "met" : "MISSED");
		double typed_per = ((double)user_typed - (double)user_serial) / pairs;
		printf("W1       fib(%d)    typed-user      1  %14" PRIu64
		       "  %.1f instructions per pair over serial-user (target <= 35: %s)  (the "
		       "same build, typed tasks: HEIST_TASK_1)\n",
		       n, user_typed, typed_per, typed_per <= 35 ? "met" : "MISSED");
		double worker_per = ((double)user_worker - (double)user_serial) / pairs;
		printf("W1       fib(%d)    worker-user     1  %14" PRIu64
		       "  %.1f instructions per pair over serial-user (issue 41's target <= 16: "
		       "%s)  (the same build, the worker passed down: HEIST_WORKER_TASK_1)\n",
		       n, user_worker, worker_per, worker_per <= 16 ? "met" : "MISSED");
	}
	fflush(stdout);
	int err = submit_row(self, dir);
	fflush(stdout);
	if (!err)
		err = dep_rows(self, dir);
	rmdir(dir);
	return err;
}
#endif
