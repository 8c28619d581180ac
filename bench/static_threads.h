/* SPDX-License-Identifier: MIT */
/* static_threads.h - the machine's ceiling for a loop of even work: N plain pthreads
 * (the calling thread is one), thread k runs share k of every repetition, k n / N on,
 * and all meet at a spinning barrier after each repetition. No scheduler, no sleeping,
 * no stealing: what a loop costs when nothing but the loop and its join is paid. Used
 * by W4's `threads` row (bench/README.md). The threads are created per timed run, so
 * the row suits runs of many loops (W4's), not one loop of a few milliseconds: a new
 * thread may wait that long for a CPU of its own. */
#ifndef HEIST_BENCH_STATIC_THREADS_H
#define HEIST_BENCH_STATIC_THREADS_H

#include <stddef.h>

/* Run share(arg, begin, end) for every one of reps repetitions of [0, n) on threads
 * threads (threads - 1 created for the call and joined before it returns); repetition
 * r + 1 starts on no thread before every share of repetition r has returned. exit(1)
 * if a thread cannot be created. */
void static_threads_run(unsigned threads, size_t n, unsigned reps,
			void (*share)(void *arg, size_t begin, size_t end), void *arg);

#endif
