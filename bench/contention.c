/* SPDX-License-Identifier: MIT */
/* contention.c - what one shared cache line costs, for docs/scaling.md: the time of
 * an operation on a line that one thread owns, that two threads write, and that one
 * thread writes while another reads, as the scheduler's shared words are used (the
 * live count, the injector's tail and depth, the sleep state word, a deque's top).
 *
 *     bench/contention [--ops N]
 *
 * Each case runs its threads on the same number of operations and reports ns per
 * operation on the measuring thread (the median of 5 runs). With more than two
 * threads on a line the cost grows with the number of threads that write it; the
 * machine here has two cores, so docs/scaling.md reasons from the two-thread figure. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LINE = 64, RUNS = 5 };

struct line {
	_Alignas(LINE) _Atomic uint64_t word;
};

static struct line shared, other;
static uint64_t ops = 10u * 1000 * 1000;
static atomic_bool go, stop;

static uint64_t
now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

enum role { IDLE, WRITER, READER };

/* The second thread: writes (fetch_add) or reads its line until told to stop. */
static void *
partner(void *arg)
{
	enum role r = (enum role)(intptr_t)arg;
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	uint64_t sink = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (r == WRITER)
			atomic_fetch_add_explicit(&shared.word, 1, memory_order_relaxed);
		else if (r == READER)
			sink += atomic_load_explicit(&shared.word, memory_order_relaxed);
	}
	return (void *)(uintptr_t)sink;
}

/* ns per fetch_add on `target` while the partner does `r` on the shared line. */
static double
run_once(struct line *target, enum role r)
{
	pthread_t t;
	atomic_store(&go, false);
	atomic_store(&stop, false);
	if (pthread_create(&t, NULL, partner, (void *)(intptr_t)r)) {
		perror("contention: pthread_create");
		exit(1);
	}
	atomic_store_explicit(&go, true, memory_order_release);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < ops; i++)
		atomic_fetch_add_explicit(&target->word, 1, memory_order_relaxed);
	uint64_t t1 = now_ns();
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	return (double)(t1 - t0) / (double)ops;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double
median(struct line *target, enum role r)
{
	double v[RUNS];
	for (int k = 0; k < RUNS; k++)
		v[k] = run_once(target, r);
	qsort(v, RUNS, sizeof v[0], cmp);
	return v[RUNS / 2];
}

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
			ops = strtoull(argv[++i], NULL, 10);
		} else {
			fprintf(stderr, "usage: contention [--ops N]\n");
			return 2;
		}
	}
	if (!ops)
		ops = 1;
	printf("one fetch_add (relaxed; a locked instruction on x86), ns per operation:\n");
	printf("  own line, the other thread idle          %6.1f\n", median(&other, IDLE));
	printf("  own line, the other writing its own line %6.1f\n", median(&other, WRITER));
	printf("  a line the other thread also writes      %6.1f\n", median(&shared, WRITER));
	printf("  a line the other thread keeps reading    %6.1f\n", median(&shared, READER));
	return 0;
}
