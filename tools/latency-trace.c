/* SPDX-License-Identifier: MIT */
/* latency-trace.c - heist-latency --trace: every kept sample as a Chrome/Perfetto
 * trace (trace-event JSON; ui.perfetto.dev or chrome://tracing opens it). One track
 * per thread of the pool, named: the workers, the guest slot (an outside
 * heist_for_each's caller) and the spares. Each task is a complete event named by
 * its kind (spawned, submitted, for-each range; "guest" ones when the guest ran them),
 * with its path and dispatch latency; a stolen task also gets a flow arrow from its
 * victim's track, at the moment its owner published it, to the thief's, where it
 * started. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* meson passes it too */
#endif
#include "latency.h"

#include <inttypes.h>
#include <math.h>

const char *const kind_names[3] = {"spawned", "submitted", "for-each range"};

struct trace {
	FILE *f;
	uint64_t t0;		/* the earliest timestamp among the samples */
	double per_ns;
	unsigned workers;	/* heist_pool_size: the guest's index */
	unsigned max_thread;
	uint64_t flows;		/* flow ids given so far */
};

static uint64_t
since(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;	/* the library clamps skew the same way */
}

static void
trace_origin(void *ctx, const struct heist_profile_sample *s)
{
	struct trace *t = ctx;
	if (s->created < t->t0)
		t->t0 = s->created;
	if (s->started < t->t0)	/* skew between cores' counters */
		t->t0 = s->started;
	if (s->published && s->published < t->t0)
		t->t0 = s->published;
	if (s->worker > t->max_thread)
		t->max_thread = s->worker;
	if (s->victim >= 0 && (unsigned)s->victim > t->max_thread)
		t->max_thread = (unsigned)s->victim;
}

/* Nanoseconds since t0, rounded the same way for every timestamp, so that an event
 * nested in another (a child synced inline) stays nested after rounding. Printed as
 * microseconds with three decimals, the trace format's unit. */
static uint64_t
trace_ns(const struct trace *t, uint64_t cycles)
{
	return (uint64_t)llround((double)since(t->t0, cycles) / t->per_ns);
}

#define US_FMT "%" PRIu64 ".%03u"
#define US(ns) (ns) / 1000, (unsigned)((ns) % 1000)

static void
trace_event(void *ctx, const struct heist_profile_sample *s)
{
	struct trace *t = ctx;
	uint64_t start = trace_ns(t, s->started), end = trace_ns(t, s->ended);
	uint64_t created = trace_ns(t, s->created);
	uint64_t dur = end > start ? end - start : 0, wait = start > created ? start - created : 0;
	const char *kind = s->kind < 3 ? kind_names[s->kind] : "task";
	const char *path = s->path < HEIST_PATHS ? path_names[s->path] : "?";
	bool guest = s->path == HEIST_PATH_GUEST;
	fprintf(t->f, ",\n{\"name\":\"%s%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,"
		"\"ts\":" US_FMT ",\"dur\":" US_FMT ",\"args\":{\"path\":\"%s\","
		"\"dispatch_us\":" US_FMT, guest ? "guest " : "", kind, path, s->worker,
		US(start), US(dur), path, US(wait));
	if (s->published) {
		uint64_t steal = start > trace_ns(t, s->published)
					 ? start - trace_ns(t, s->published) : 0;
		fprintf(t->f, ",\"steal_us\":" US_FMT ",\"victim\":%d", US(steal), s->victim);
	}
	fprintf(t->f, "}}");
	if (s->published && s->victim >= 0) {
		/* The arrow: from the slice running on the victim's track when the task
		 * was published (its spawner) to the stolen task's own slice. */
		uint64_t id = ++t->flows, from = trace_ns(t, s->published);
		if (from > start)	/* counter skew */
			from = start;
		fprintf(t->f, ",\n{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"s\",\"id\":%"
			PRIu64 ",\"pid\":1,\"tid\":%d,\"ts\":" US_FMT "}", id, s->victim, US(from));
		fprintf(t->f, ",\n{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"f\",\"bp\":\"e\","
			"\"id\":%" PRIu64 ",\"pid\":1,\"tid\":%u,\"ts\":" US_FMT "}", id, s->worker,
			US(start));
	}
}

static void
thread_names(const struct trace *t)
{
	for (unsigned i = 0; i <= t->workers || i <= t->max_thread; i++) {
		char name[48];
		if (i < t->workers)
			snprintf(name, sizeof(name), "heist-%u", i);
		else if (i == t->workers)
			snprintf(name, sizeof(name), "guest (outside heist_for_each)");
		else
			snprintf(name, sizeof(name), "spare-%u", i - t->workers - 1);
		fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
			"\"args\":{\"name\":\"%s\"}}", i, name);
		/* keep the tracks in index order, the guest and spares below the workers */
		fprintf(t->f, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,"
			"\"tid\":%u,\"args\":{\"sort_index\":%u}}", i, i);
	}
}

void
write_trace(FILE *f, const char *path, const struct run *r, const struct result *res)
{
	const struct heist_latency_report *rep = result_report(res);
	struct trace t = {.f = f, .t0 = UINT64_MAX, .per_ns = rep->clock.cycles_per_ns,
			  .workers = result_stats(res)->workers};
	int err = heist_profile_samples(r->pool, trace_origin, &t);
	if (err)
		die_err("heist_profile_samples", err);
	if (t.t0 == UINT64_MAX)
		t.t0 = 0;
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"tool\":\"" PROG " %s\","
		"\"workload\":\"%s\",\"clock\":\"%s\",\"cycles_per_ns\":%.6f,"
		"\"tasks\":%" PRIu64 ",\"samples_kept\":%" PRIu64 ",\"samples_dropped\":%" PRIu64
		",\"buffer_samples_per_worker\":%" PRIu64 ",\"note\":\"%s\"},\n\"traceEvents\":[\n",
		HEIST_VERSION, workload_names[r->o->workload], rep->clock.name,
		rep->clock.cycles_per_ns, rep->end_to_end.count, rep->samples_kept,
		rep->samples_dropped, rep->buffer_samples,
		rep->samples_dropped ? "the profiler keeps at most buffer_samples_per_worker "
				       "samples per worker; later tasks are missing here"
				     : "every task is here");
	fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
		"\"args\":{\"name\":\"" PROG " %s\"}}", workload_names[r->o->workload]);
	thread_names(&t);
	if ((err = heist_profile_samples(r->pool, trace_event, &t)))
		die_err("heist_profile_samples", err);
	fprintf(f, "\n]}\n");
	close_or_die(f, path);
	if (rep->samples_dropped) {
		char a[32], b[32], c[32];
		fmt_count(a, sizeof(a), rep->samples_dropped);
		fmt_count(b, sizeof(b), rep->end_to_end.count);
		fmt_count(c, sizeof(c), rep->buffer_samples);
		fprintf(stderr, PROG ": %s: %s of %s tasks are not in the trace (the profiler "
			"keeps %s samples per worker)\n", path, a, b, c);
	}
}
