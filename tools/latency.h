/* SPDX-License-Identifier: MIT */
/* latency.h - the parts of heist-latency, the profiler's command-line tool, and what
 * they share: the options (heist-latency.c, which also holds main), the workloads and
 * how a run is followed and stopped (latency-run.c), the open-loop submit load
 * (latency-open.c), the report as a table, JSON and .hgrm files (latency-report.c),
 * and the Chrome/Perfetto trace (latency-trace.c). Only heist's public API is used:
 * the tool is also an example of reading the profiler. docs/profiler.md describes the
 * output. */
#ifndef HEIST_TOOLS_LATENCY_H
#define HEIST_TOOLS_LATENCY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heist/heist.h"
#include "heist/profile.h"

#define PROG "heist-latency"

enum {
	MAX_DEPTH = 30,		/* 2^31 - 1 tasks: the tree's count still fits an int */
	TICKS_PER_HALF = 5,	/* HdrHistogram's default percentile ticks per half distance */
	MAX_HALVINGS = 62,	/* far beyond any count a run can reach */
	MAX_TICKS = TICKS_PER_HALF * (MAX_HALVINGS + 1) + 1,
	EXIT_USAGE = 2,
	EXIT_INTERRUPTED = 130,	/* 128 + SIGINT, as a shell reports it */
};

/* The open-loop load keeps three timestamps a task: at most this many tasks a run
 * (rate x duration x repeats), 768 MiB. */
#define OPEN_MAX_TASKS (UINT64_C(1) << 25)

enum workload { FORK_JOIN, SUBMIT, FOR_EACH };

extern const char *const workload_names[3];
extern const char *const pin_names[3];
extern const char *const path_names[HEIST_PATHS];
extern const char *const kind_names[3];	/* enum heist_task_kind, for the trace */

/* What the command line asked for. The *_set flags say "given": the defaults depend
 * on the workload (W8, W5 and W4 define different payloads). */
struct options {
	enum workload workload;
	unsigned threads;
	unsigned depth;
	uint64_t payload, tasks, loops, repeat, warmup;
	unsigned sample;	/* heist_config.profile_every; 0: every task */
	uint64_t buffer;	/* heist_config.profile_buffer; 0: the library's default */
	uint64_t injector_limit; /* heist_config.injector_limit; 0: unbounded */
	unsigned spin;		/* heist_config.spin; 0: the library's default */
	double rate;		/* submit: tasks a second, open loop; 0: closed loop */
	double duration;	/* open loop: seconds a repeat */
	unsigned producers;	/* open loop: submitting threads */
	bool force_steal;	/* fork-join: the root waits until a thief took a subtree */
	bool depth_set, payload_set, tasks_set, loops_set;
	enum heist_pin pin;
	bool json;
	const char *hgrm, *trace;
};

/* Latencies sorted for exact percentiles: the tool's own measurements (open loop,
 * per repeat, per path), in cycles or nanoseconds as the owner says. */
struct dist {
	uint64_t *v;
	size_t n, cap;
};

void dist_add(struct dist *d, uint64_t v);
void dist_sort(struct dist *d);
uint64_t dist_at(const struct dist *d, double q);	/* nearest rank; 0 if empty */
double dist_mean(const struct dist *d);
double dist_stddev(const struct dist *d);
void dist_free(struct dist *d);

/* The open loop's results (latency-open.c), nanoseconds from each task's intended
 * start: the producer's own delay, the wait for a worker, and the whole. */
struct open_result {
	uint64_t tasks;		/* scheduled a repeat: rate x duration */
	uint64_t submitted, completed;	/* over the recorded repeats */
	double submit_rate, complete_rate;	/* achieved, tasks a second */
	struct dist lag, start, end;	/* intended -> submitted, -> started, -> finished */
	struct dist *repeat_start, *repeat_end;	/* the same, repeat by repeat */
};

/* One run of the tool: the workload's state, and what it measured. */
struct run {
	const struct options *o;
	heist_pool *pool;
	double *array;		/* submit: out[]; for-each: a[] */
	uint64_t expected;	/* tasks per repeat, or 0 when not known beforehand */
	double checksum;
	uint64_t repeats_done;	/* recorded repeats that finished (fewer if stopped) */
	uint64_t *repeat_ns;	/* wall time of each recorded repeat */
	uint64_t *repeat_mark;	/* heist_profile_now() at each one's start, and the end */
	uint64_t wall_ns;
	bool recording;		/* past the warm-up */
	bool interrupted;	/* Ctrl-C (SIGINT) stopped the run early */
	uint64_t tasks_ran;	/* tasks of the recorded repeats that ran (W8: counted) */
	struct heist_stats base;	/* the statistics after the warm-up */
	struct heist_worker_stats *base_thread;	/* the same, thread by thread */
	struct open_result *open;	/* --rate; else NULL */
	atomic_uint current;	/* the progress line: 1-based repeat being run */
	double t0;
};

/* Messages (heist-latency.c). */
_Noreturn void die_err(const char *what, int err);
void fmt_count(char *buf, size_t size, uint64_t v);
const char *plural(uint64_t n);	/* "s", or "" for 1: "%s task%s", a, plural(n) */
void fmt_time(char *buf, size_t size, double ns);
void describe_workload(char *buf, size_t size, const struct options *o);
uint64_t now_ns(void);
double spin(unsigned iters, double x, double c);

/* latency-run.c: the warm-up, then the recorded repeats; returns when they are done
 * or when Ctrl-C stopped them (r->interrupted). */
void run_workload(struct run *r);
/* Set once by SIGINT's handler; the workloads stop at their next look. */
extern int latency_stop;
static inline bool
stop_requested(void)
{
	return __atomic_load_n(&latency_stop, __ATOMIC_RELAXED);
}

/* latency-open.c: one open-loop repeat; `slot` is where its tasks' timestamps start
 * (0 for the warm-up, which is overwritten). */
void open_setup(struct run *r);
void open_run(struct run *r, uint64_t slot);
void open_finish(struct run *r);
void open_free(struct run *r);

/* latency-report.c */
struct result;
struct result *collect(const struct run *r);
void print_table(const struct run *r, const struct result *res);
void print_json(const struct run *r, const struct result *res);
void write_hgrms(const char *base, const struct run *r, const struct result *res);
void result_free(struct result *res);
const struct heist_latency_report *result_report(const struct result *res);
const struct heist_stats *result_stats(const struct result *res);

/* latency-trace.c */
void write_trace(FILE *f, const char *path, const struct run *r, const struct result *res);

/* Files (heist-latency.c). */
FILE *open_or_die(const char *path);
void close_or_die(FILE *f, const char *path);
char *with_infix(const char *path, const char *infix);

#endif /* HEIST_TOOLS_LATENCY_H */
