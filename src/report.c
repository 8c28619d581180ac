/* SPDX-License-Identifier: MIT */
/* report.c - the profile any heist program writes when its environment asks
 * (HEIST_PROFILE=path, HEIST_TRACE=path; env.c reads them): at each pool's destroy,
 * or at exit for a pool that is never destroyed (pool.c calls us), the report
 * heist-latency --json prints (the same keys, so plot-latency reads either; the
 * workload is "program"), and the same Chrome/Perfetto trace as heist-latency
 * --trace. Only the public profiler and statistics calls are used, as the tool uses
 * them. Each file is written beside its name and renamed over it, so a reader never
 * sees half a report, and two pools or processes never mix theirs in one file. */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "heist/profile.h"
#include "heist/version.h"
#include "inherit.h"
#include "platform/platform.h"

struct report {
	char *profile, *trace;	/* HEIST_PROFILE's and HEIST_TRACE's names, or NULL */
	unsigned number;	/* among the process's reporting pools, from 1 */
	unsigned long pid;	/* the process that made the pool: only it writes */
	bool forked;		/* made in a forked child: its names carry its pid */
	bool written;
	char name[16];		/* heist_config.name */
	unsigned threads, spin;	/* heist_config's, as the program (or env) gave them */
	enum heist_pin pin;
	size_t injector_limit;
};

enum {
	TICKS_PER_HALF = 5,	/* HdrHistogram's percentile ticks, as heist-latency's */
	MAX_HALVINGS = 62,
	MAX_TICKS = TICKS_PER_HALF * (MAX_HALVINGS + 1) + 1,
};

static const char *const pin_names[] = {"none", "core", "pu"};
static const char *const path_names[HEIST_PATHS] = {"inline", "own", "stolen",
						    "injector", "helping", "guest"};
static const char *const kind_names[] = {"spawned", "submitted", "for-each range"};

/* Reporting pools made so far, in the low 32 bits, by the fork generation (inherit.h)
 * in the high 32: a forked child inherits its parent's count, and its first pool,
 * finding another generation there, counts its own from 1. */
static _Atomic uint64_t reporting_pools;

/* The next pool's number in this process. relaxed: a count that only names files;
 * nothing is published with it. */
static unsigned
next_number(void)
{
	uint64_t gen = heist__generation();
	uint64_t old = atomic_load_explicit(&reporting_pools, memory_order_relaxed), next;
	do {
		next = (old >> 32 == gen ? old : gen << 32) + 1;
	} while (!atomic_compare_exchange_weak_explicit(&reporting_pools, &old, next,
							memory_order_relaxed,
							memory_order_relaxed));
	return (unsigned)next;
}

struct report *
heist__report_new(struct env_files *files, const struct heist_config *cfg, bool *nomem)
{
	*nomem = false;
	if (!files->profile && !files->trace)
		return NULL;
	struct report *r = calloc(1, sizeof(*r));
	if (!r) {
		heist__env_files_free(files);
		*nomem = true;
		return NULL;
	}
	r->profile = files->profile;
	r->trace = files->trace;
	files->profile = files->trace = NULL;
	r->number = next_number();
	r->pid = heist__process_id();
	r->forked = heist__generation() > 0;
	snprintf(r->name, sizeof(r->name), "%s", cfg->name ? cfg->name : "heist");
	r->threads = cfg->threads;
	r->spin = cfg->spin;
	r->pin = cfg->pin;
	r->injector_limit = cfg->injector_limit;
	return r;
}

void
heist__report_free(struct report *r)
{
	if (!r)
		return;
	free(r->profile);
	free(r->trace);
	free(r);
}

/* ---------------------------------------------------------------------------------- */
/* File names                                                                         */

/* Put `text` before the last extension of the file name out (of length n, room for
 * text), or at its end when it has none. */
static void
before_extension(char *out, size_t n, const char *text)
{
	char *base = strrchr(out, '/');
	base = base ? base + 1 : out;
	char *dot = strrchr(base, '.');
	if (!dot || dot == base)	/* no extension, or a hidden file's name */
		dot = out + n;
	size_t len = strlen(text);
	memmove(dot + len, dot, strlen(dot) + 1);
	memcpy(dot, text, len);
}

/* The name a pool writes: %p is the process id, %% a percent sign. A forked child's
 * pools, where the name has no %p, put "-pid" before the last extension, since the
 * parent's pools and theirs would have the same names (out.json, out-4242.json).
 * From a process's second pool on, ".number" goes there too (out.2.json,
 * out-4242.2.json). NULL when out of memory. */
static char *
file_name(const char *tmpl, const struct report *r)
{
	size_t cap = strlen(tmpl) * 8 + 64, n = 0;	/* a pid is 10 digits at most */
	char *out = malloc(cap);
	if (!out)
		return NULL;
	bool named_pid = false;
	for (const char *c = tmpl; *c; c++) {
		if (c[0] == '%' && c[1] == 'p') {
			n += (size_t)snprintf(out + n, cap - n, "%lu", r->pid);
			named_pid = true;
			c++;
		} else {
			if (c[0] == '%' && c[1] == '%')
				c++;
			out[n++] = *c;
		}
	}
	out[n] = '\0';
	char text[32];
	if (r->forked && !named_pid) {
		snprintf(text, sizeof(text), "-%lu", r->pid);
		before_extension(out, n, text);
		n = strlen(out);
	}
	if (r->number > 1) {
		snprintf(text, sizeof(text), ".%u", r->number);
		before_extension(out, n, text);
	}
	return out;
}

/* ---------------------------------------------------------------------------------- */
/* The JSON report                                                                    */

static void
json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
json_latency(FILE *f, const char *name, const struct heist_latency *l)
{
	fprintf(f, "  \"%s\": {\"count\": %" PRIu64 ", \"min\": %" PRIu64 ", \"max\": %" PRIu64
		", \"mean\": %.3f, \"p50\": %" PRIu64 ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
		", \"p999\": %" PRIu64 ", \"p9999\": %" PRIu64 ",\n    \"min_ns\": %.3f, "
		"\"max_ns\": %.3f, \"mean_ns\": %.3f, \"p50_ns\": %.3f, \"p90_ns\": %.3f, "
		"\"p99_ns\": %.3f, \"p999_ns\": %.3f, \"p9999_ns\": %.3f, \"stddev_ns\": null}",
		name, l->count, l->min, l->max, l->mean, l->p50, l->p90, l->p99, l->p999,
		l->p9999, l->min_ns, l->max_ns, l->mean_ns, l->p50_ns, l->p90_ns, l->p99_ns,
		l->p999_ns, l->p9999_ns);
}

/* The nearest rank profile.c uses: ceil(q * count), at least 1 (no libm: the
 * library links none). */
static uint64_t
rank_of(double q, uint64_t count)
{
	double r = q * (double)count;
	uint64_t k = (uint64_t)r;
	k += (double)k < r;
	return k < 1 ? 1 : k;
}

/* HdrHistogram's percentile ticks, as heist-latency's: TICKS_PER_HALF steps in each
 * half of the distance left to 100%, up to the tick of the last sample, then 100%. */
static size_t
make_ticks(uint64_t count, double *q)
{
	size_t n = 0;
	double left = 1.0;	/* 2^-h, the distance left to 100% */
	for (int h = 0; h <= MAX_HALVINGS; h++, left /= 2) {
		double base = 1.0 - left, step = left / 2 / TICKS_PER_HALF;
		for (int j = 0; j < TICKS_PER_HALF; j++) {
			double p = base + j * step;
			if (p >= 1.0)
				goto last;
			q[n++] = p;
			if (rank_of(p, count) >= count)
				goto last;
		}
	}
last:
	q[n++] = 1.0;
	return n;
}

static int
json_percentiles(FILE *f, heist_pool *pool, const struct heist_latency_report *rep)
{
	double q[MAX_TICKS];
	uint64_t at[2][MAX_TICKS];
	size_t n = make_ticks(rep->end_to_end.count, q);
	int err = heist_profile_percentiles(pool, HEIST_LATENCY_DISPATCH, q, at[0], n);
	if (!err)
		err = heist_profile_percentiles(pool, HEIST_LATENCY_END_TO_END, q, at[1], n);
	if (err)
		return err;
	double per_ns = rep->clock.cycles_per_ns;
	fprintf(f, "  \"percentiles\": [\n");
	for (size_t i = 0; rep->end_to_end.count && i < n; i++)
		fprintf(f, "    {\"p\": %.15g, \"dispatch_cycles\": %" PRIu64 ", \"dispatch_ns\": "
			"%.3f, \"end_to_end_cycles\": %" PRIu64 ", \"end_to_end_ns\": %.3f}%s\n",
			q[i], at[0][i], (double)at[0][i] / per_ns, at[1][i],
			(double)at[1][i] / per_ns, i + 1 < n ? "," : "");
	fprintf(f, "  ],\n");
	return 0;
}

/* Each path's dispatch latencies from the kept samples, for path_percentiles. */
struct by_path {
	uint64_t *v[HEIST_PATHS];
	size_t n[HEIST_PATHS], cap[HEIST_PATHS];
	bool nomem;
};

static void
add_to_path(void *ctx, const struct heist_profile_sample *s)
{
	struct by_path *b = ctx;
	unsigned k = s->path;
	if (k >= HEIST_PATHS || b->nomem)
		return;
	if (b->n[k] == b->cap[k]) {
		size_t cap = b->cap[k] ? b->cap[k] * 2 : 1024;
		uint64_t *v = realloc(b->v[k], cap * sizeof(*v));
		if (!v) {
			b->nomem = true;
			return;
		}
		b->v[k] = v;
		b->cap[k] = cap;
	}
	b->v[k][b->n[k]++] = s->started > s->created ? s->started - s->created : 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int
json_path_percentiles(FILE *f, heist_pool *pool, double per_ns)
{
	struct by_path b = {0};
	int err = heist_profile_samples(pool, add_to_path, &b);
	if (!err && b.nomem)
		err = ENOMEM;
	fprintf(f, "  \"path_percentiles\": {");
	bool first = true;
	for (int k = 0; !err && k < HEIST_PATHS; k++) {
		if (!b.n[k])
			continue;
		qsort(b.v[k], b.n[k], sizeof(uint64_t), cmp_u64);
		double q[MAX_TICKS];
		size_t n = make_ticks(b.n[k], q);
		fprintf(f, "%s\n    \"%s\": [", first ? "" : ",", path_names[k]);
		for (size_t i = 0; i < n; i++) {
			uint64_t r = rank_of(q[i], b.n[k]);
			uint64_t v = b.v[k][(r > b.n[k] ? b.n[k] : r) - 1];
			fprintf(f, "%s{\"p\": %.15g, \"dispatch_ns\": %.3f}", i ? ", " : "", q[i],
				(double)v / per_ns);
		}
		fprintf(f, "]");
		first = false;
	}
	fprintf(f, "\n  }\n");
	for (int k = 0; k < HEIST_PATHS; k++)
		free(b.v[k]);
	return err;
}

static int
json_paths(FILE *f, heist_pool *pool, const struct heist_latency_report *rep)
{
	fprintf(f, "  \"paths\": {\n");
	for (int k = 0; k < HEIST_PATHS; k++) {
		struct heist_latency_report pr;
		int err = heist_profile_path_report(pool, (enum heist_dispatch_path)k, &pr);
		if (err)
			return err;
		fprintf(f, "  \"%s\": {\"count\": %" PRIu64 ", \"exact\": %s,\n", path_names[k],
			rep->path_count[k], pr.exact ? "true" : "false");
		json_latency(f, "dispatch", &pr.dispatch);
		fprintf(f, ",\n");
		json_latency(f, "end_to_end", &pr.end_to_end);
		fprintf(f, "}%s\n", k + 1 < HEIST_PATHS ? "," : "");
	}
	fprintf(f, "  },\n");
	return 0;
}

static int
json_stats(FILE *f, heist_pool *pool)
{
	struct heist_stats s;
	int err = heist_pool_stats(pool, &s);
	if (err)
		return err;
	fprintf(f, "  \"stats\": {\"workers\": %u, \"executed\": %" PRIu64 ", \"spawned\": %"
		PRIu64 ", \"stolen\": %" PRIu64 ", \"steal_attempts\": %" PRIu64
		", \"injector_pops\": %" PRIu64 ", \"sleeps\": %" PRIu64 ", \"wakes\": %" PRIu64
		", \"bind_failures\": %u, \"spares_started\": %" PRIu64 ", \"parks\": %" PRIu64
		"},\n", s.workers, s.executed, s.spawned, s.stolen, s.steal_attempts,
		s.injector_pops, s.sleeps, s.wakes, s.bind_failures, s.spares_started, s.parks);
	/* The workers and the guest slot; a spare slot only if a spare ever used it. */
	fprintf(f, "  \"threads\": [");
	unsigned workers = heist_pool_size(pool);
	for (unsigned i = 0, n = heist_pool_threads(pool); i < n; i++) {
		struct heist_worker_stats t;
		if ((err = heist_pool_worker_stats(pool, i, &t)))
			return err;
		if (i > workers && !t.executed && !t.steal_attempts)
			continue;
		const char *role = i < workers ? "worker" : i == workers ? "guest" : "spare";
		fprintf(f, "%s\n    {\"index\": %u, \"role\": \"%s\", \"executed\": %" PRIu64
			", \"spawned\": %" PRIu64 ", \"stolen\": %" PRIu64 ", \"steal_attempts\": %"
			PRIu64 ", \"injector_pops\": %" PRIu64 ", \"sleeps\": %" PRIu64
			", \"wakes\": %" PRIu64, i ? "," : "", i, role, t.executed, t.spawned,
			t.stolen, t.steal_attempts, t.injector_pops, t.sleeps, t.wakes);
		struct heist_placement p;
		if (i < workers && !heist_pool_placement(pool, i, &p, NULL, NULL, 0))
			fprintf(f, ", \"placement\": {\"bound\": %d, \"error\": %d, \"cpus\": "
				"\"%s\", \"victim_ranks\": %u}", p.bound, p.error, p.cpus, p.nranks);
		fprintf(f, "}");
	}
	fprintf(f, "\n  ],\n");
	return 0;
}

/* The program's name, for the report's title: the system's (on Linux the kernel's,
 * 15 characters; platform.h), or "program" where it has none. */
static void
program_name(char *buf, size_t size)
{
	heist__program_name(buf, size);
	if (!buf[0])
		snprintf(buf, size, "program");
}

static int
write_json(FILE *f, const struct report *r, heist_pool *pool, const char *when)
{
	struct heist_latency_report rep;
	int err = heist_profile_report(pool, &rep);
	if (err)
		return err;
	char program[64];
	program_name(program, sizeof(program));
	fprintf(f, "{\n  \"tool\": \"libheist\", \"version\": \"%s\",\n", HEIST_VERSION);
	fprintf(f, "  \"workload\": \"program\", \"program\": ");
	json_string(f, program);
	fprintf(f, ", \"pid\": %lu, \"pool\": %u, \"pool_name\": ", r->pid, r->number);
	json_string(f, r->name);
	fprintf(f, ", \"written_at\": \"%s\",\n", when);
	fprintf(f, "  \"parameters\": {\"threads\": %u, \"workers\": %u, \"pin\": \"%s\", "
		"\"merged\": true, \"injector_limit\": %zu, \"spin\": %u},\n", r->threads,
		heist_pool_size(pool), pin_names[r->pin], r->injector_limit, r->spin);
	fprintf(f, "  \"clock\": {\"name\": \"%s\", \"cycles_per_ns\": %.6f, \"invariant\": %d, "
		"\"calibration\": %d},\n", rep.clock.name, rep.clock.cycles_per_ns,
		rep.clock.invariant, rep.clock.calibration);
	fprintf(f, "  \"exact\": %s, \"samples_kept\": %" PRIu64 ", \"samples_dropped\": %"
		PRIu64 ", \"buffer_samples_per_worker\": %" PRIu64 ",\n", rep.exact ? "true"
		: "false", rep.samples_kept, rep.samples_dropped, rep.buffer_samples);
	fprintf(f, "  \"sampled_every\": %" PRIu64 ",\n", rep.sampled_every);
	json_latency(f, "dispatch", &rep.dispatch);
	fprintf(f, ",\n");
	json_latency(f, "end_to_end", &rep.end_to_end);
	fprintf(f, ",\n");
	json_latency(f, "steal", &rep.steal);
	fprintf(f, ",\n");
	if ((err = json_paths(f, pool, &rep)) || (err = json_stats(f, pool)) ||
	    (err = json_percentiles(f, pool, &rep)) ||
	    (err = json_path_percentiles(f, pool, rep.clock.cycles_per_ns)))
		return err;
	fprintf(f, "}\n");
	return 0;
}

/* ---------------------------------------------------------------------------------- */
/* The trace (heist-latency --trace's format: docs/profiler.md)                      */

struct trace {
	FILE *f;
	uint64_t t0;		/* the earliest timestamp among the samples */
	double per_ns;
	unsigned max_thread;
	uint64_t flows;
};

static uint64_t
since(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;	/* skew between cores' counters */
}

static void
trace_origin(void *ctx, const struct heist_profile_sample *s)
{
	struct trace *t = ctx;
	uint64_t first = s->created < s->started ? s->created : s->started;
	if (s->published && s->published < first)
		first = s->published;
	if (first < t->t0)
		t->t0 = first;
	if (s->worker > t->max_thread)
		t->max_thread = s->worker;
	if (s->victim >= 0 && (unsigned)s->victim > t->max_thread)
		t->max_thread = (unsigned)s->victim;
}

/* Nanoseconds since t0, printed as microseconds with three decimals. */
static uint64_t
trace_ns(const struct trace *t, uint64_t cycles)
{
	return (uint64_t)((double)since(t->t0, cycles) / t->per_ns + 0.5);
}

#define US_FMT "%" PRIu64 ".%03u"
#define US(ns) (ns) / 1000, (unsigned)((ns) % 1000)

static void
trace_event(void *ctx, const struct heist_profile_sample *s)
{
	struct trace *t = ctx;
	uint64_t start = trace_ns(t, s->started), created = trace_ns(t, s->created);
	uint64_t dur = since(start, trace_ns(t, s->ended)), wait = since(created, start);
	const char *kind = s->kind < 3 ? kind_names[s->kind] : "task";
	const char *path = s->path < HEIST_PATHS ? path_names[s->path] : "?";
	fprintf(t->f, ",\n{\"name\":\"%s%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,"
		"\"ts\":" US_FMT ",\"dur\":" US_FMT ",\"args\":{\"path\":\"%s\","
		"\"dispatch_us\":" US_FMT, s->path == HEIST_PATH_GUEST ? "guest " : "", kind,
		path, s->worker, US(start), US(dur), path, US(wait));
	if (!s->published) {
		fprintf(t->f, "}}");
		return;
	}
	uint64_t from = trace_ns(t, s->published);
	fprintf(t->f, ",\"steal_us\":" US_FMT ",\"victim\":%d}}", US(since(from, start)),
		s->victim);
	if (s->victim < 0)
		return;
	/* The arrow from the victim's track, when the task was published, to the
	 * thief's slice. */
	uint64_t id = ++t->flows;
	if (from > start)
		from = start;
	fprintf(t->f, ",\n{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"s\",\"id\":%" PRIu64
		",\"pid\":1,\"tid\":%d,\"ts\":" US_FMT "}", id, s->victim, US(from));
	fprintf(t->f, ",\n{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"f\",\"bp\":\"e\","
		"\"id\":%" PRIu64 ",\"pid\":1,\"tid\":%u,\"ts\":" US_FMT "}", id, s->worker,
		US(start));
}

static void
trace_threads(const struct trace *t, const struct report *r, unsigned workers)
{
	for (unsigned i = 0; i <= workers || i <= t->max_thread; i++) {
		char name[48];
		if (i < workers)
			snprintf(name, sizeof(name), "%s-%u", r->name, i);
		else if (i == workers)
			snprintf(name, sizeof(name), "guest (outside heist_for_each)");
		else
			snprintf(name, sizeof(name), "spare-%u", i - workers - 1);
		fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
			"\"args\":{\"name\":\"%s\"}},\n{\"name\":\"thread_sort_index\",\"ph\":"
			"\"M\",\"pid\":1,\"tid\":%u,\"args\":{\"sort_index\":%u}}", i, name, i, i);
	}
}

static int
write_trace(FILE *f, const struct report *r, heist_pool *pool, const char *when)
{
	struct heist_latency_report rep;
	int err = heist_profile_report(pool, &rep);
	if (err)
		return err;
	struct trace t = {.f = f, .t0 = UINT64_MAX, .per_ns = rep.clock.cycles_per_ns};
	if ((err = heist_profile_samples(pool, trace_origin, &t)))
		return err;
	if (t.t0 == UINT64_MAX)
		t.t0 = 0;
	char program[64];
	program_name(program, sizeof(program));
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"tool\":\"libheist %s\","
		"\"workload\":\"program\",\"program\":", HEIST_VERSION);
	json_string(f, program);
	fprintf(f, ",\"pid\":%ld,\"pool\":%u,\"written_at\":\"%s\",\"clock\":\"%s\","
		"\"cycles_per_ns\":%.6f,\"tasks\":%" PRIu64 ",\"samples_kept\":%" PRIu64
		",\"samples_dropped\":%" PRIu64 ",\"buffer_samples_per_worker\":%" PRIu64 "},\n"
		"\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
		"\"args\":{\"name\":", (long)r->pid, r->number, when, rep.clock.name,
		rep.clock.cycles_per_ns, rep.end_to_end.count, rep.samples_kept,
		rep.samples_dropped, rep.buffer_samples);
	json_string(f, program);
	fprintf(f, "}}");
	trace_threads(&t, r, heist_pool_size(pool));
	if ((err = heist_profile_samples(pool, trace_event, &t)))
		return err;
	fprintf(f, "\n]}\n");
	return 0;
}

/* ---------------------------------------------------------------------------------- */

enum { TMP_TRIES = 8 };

/* A new file beside path, named into tmp (room for path and 48 bytes more): path.tmpPID,
 * or, if that name is taken (a stale one, or one another user made in a shared
 * directory to make us write through it), path.tmpPID.N with N from the clock. NULL
 * with errno set if none can be made. */
static FILE *
create_tmp(char *tmp, const char *path, unsigned long pid)
{
	sprintf(tmp, "%s.tmp%lu", path, pid);
	FILE *f = heist__file_create(tmp);
	for (unsigned k = 1; !f && errno == EEXIST && k < TMP_TRIES; k++) {
		uint64_t n = (heist__clock_ns() + k) * 0x9e3779b97f4a7c15ull;
		sprintf(tmp, "%s.tmp%lu.%08lx", path, pid, (unsigned long)(n >> 32));
		f = heist__file_create(tmp);
	}
	return f;
}

/* Write one file: beside its name, then renamed over it. */
static void
write_file(const char *var, const char *tmpl, const struct report *r, heist_pool *pool,
	   const char *when,
	   int (*write)(FILE *, const struct report *, heist_pool *, const char *))
{
	char *path = file_name(tmpl, r);
	char *tmp = path ? malloc(strlen(path) + 48) : NULL;
	int err = ENOMEM;
	if (tmp) {
		FILE *f = create_tmp(tmp, path, r->pid);
		if (!f) {
			err = errno;
		} else {
			err = write(f, r, pool, when);
			if (ferror(f) && !err)
				err = EIO;
			if (fclose(f) && !err)
				err = errno;
			/* Windows' rename will not replace a file (EEXIST, or EACCES from
			 * msvcrt): remove it, and try again. Any other failure leaves the
			 * old file where it is. */
			if (!err && rename(tmp, path)) {
				err = errno;
				if ((err == EEXIST || err == EACCES) && !remove(path))
					err = rename(tmp, path) ? errno : 0;
			}
			if (err)
				remove(tmp);
		}
	}
	if (err) {
		/* Escaped, as env.c's values are: one line, whatever the name holds. */
		char *shown = heist__env_escape(path ? path : tmpl);
		fprintf(stderr, "heist: %s: cannot write %s: %s\n", var,
			shown ? shown : "(name not shown: out of memory)", strerror(err));
		free(shown);
	}
	free(tmp);
	free(path);
}

void
heist__report_write(struct report *r, heist_pool *pool, const char *when)
{
	if (!r || r->written || r->pid != heist__process_id())
		return;
	int saved = errno;
	r->written = true;
	if (r->profile)
		write_file("HEIST_PROFILE", r->profile, r, pool, when, write_json);
	if (r->trace)
		write_file("HEIST_TRACE", r->trace, r, pool, when, write_trace);
	errno = saved;
}
