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
 * shared library, heist.h alone. */
#include "workloads.h"

#include "kernels.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

int
bench_instr_child(const char *what, int n)
{
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

/* The largest "summary:" (or "totals:") count among the files dir/prefix*. */
static uint64_t
busiest_thread(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	uint64_t best = 0;
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
		while (fgets(line, sizeof line, f)) {
			uint64_t v;
			if (sscanf(line, "summary: %" SCNu64, &v) == 1 ||
			    sscanf(line, "totals: %" SCNu64, &v) == 1) {
				if (v > best)
					best = v;
			}
		}
		fclose(f);
		unlink(path);
	}
	closedir(d);
	return best;
}

/* Run prog under callgrind: `self --instr-child what n`, or, when user is set, the
 * user-style build `user what n`. Its busiest thread's instructions, or 0 if valgrind
 * could not run it. */
static uint64_t
count(const char *self, const char *user, const char *dir, const char *what, int n)
{
	char out[4200], prefix[64], num[16];
	snprintf(prefix, sizeof prefix, "cg-%s-%s.out", user ? "user" : "bench", what);
	snprintf(out, sizeof out, "--callgrind-out-file=%s/%s", dir, prefix);
	snprintf(num, sizeof num, "%d", n);
	pid_t pid = fork();
	if (pid < 0)
		return 0;
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
		busiest_thread(dir, prefix);	/* remove what it left */
		return 0;
	}
	return busiest_thread(dir, prefix);
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
	rmdir(dir);
	if (!serial || !heist || (user && !user_heist)) {
		fprintf(stderr, "heist-bench: --instructions needs valgrind (callgrind), and "
				"every run to succeed\n");
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
		return 0;
	}
	double user_per = ((double)user_heist - (double)user_serial) / pairs;
	printf("W1       fib(%d)    serial-user     1  %14" PRIu64 "\n", n, user_serial);
	printf("W1       fib(%d)    heist-user      1  %14" PRIu64
	       "  %.1f instructions per pair over serial-user (target <= 35: %s)  (a user's "
	       "build: -O2, shared library)\n",
	       n, user_heist, user_per, user_per <= 35 ? "met" : "MISSED");
	return 0;
}
