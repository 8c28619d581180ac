/* SPDX-License-Identifier: MIT */
/* bench.c - the harness of heist-bench: clock, options helpers, the driver that runs
 * every workload's table of variants (pools, warm-up, alternating repetitions, medians,
 * answer checks, malloc counting, the --rss peaks), statistics, result rows and their
 * printing (table or JSON). Nothing here knows a workload; those are in w_*.c. */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include "baseline_pool.h"
#include "malloc_count.h"
#include "peers.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

enum { OMP_SETTLE_MS = 20 };

uint64_t
bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
bench_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void
bench_fail(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("\nheist-bench: FAILED: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

bool bench_quiet;

void
bench_progress(const char *fmt, ...)
{
	va_list ap;
	if (bench_quiet)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

/* Whether the comma list has word (case-insensitive, whole items only). */
static bool
list_has(const char *list, const char *word)
{
	size_t len = strlen(word);
	const char *p = list;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == len && strncasecmp(p, word, len) == 0)
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

bool
bench_selected(const struct bench_opts *o, const char *group, const char *name)
{
	return !o->only || (!o->exact && list_has(o->only, group)) || list_has(o->only, name);
}

bool
bench_impl_enabled(const struct bench_opts *o, const char *impl)
{
	if (!o->impls || list_has(o->impls, impl))
		return true;
	const char *dash = strchr(impl, '-');
	if (o->exact || !dash)
		return false;
	char base[32];
	snprintf(base, sizeof base, "%.*s", (int)(dash - impl), impl);
	return list_has(o->impls, base);
}

heist_pool *
bench_heist_pool(unsigned threads)
{
	return bench_heist_pool_with(threads, HEIST_PIN_NONE, 0);
}

heist_pool *
bench_heist_pool_with(unsigned threads, enum heist_pin pin, unsigned profile)
{
	struct heist_config cfg = {
		.threads = threads, .pin = pin, .profile = profile != 0, .name = "bench",
		.profile_every = profile,
	};
	heist_pool *pool = NULL;
	int err = heist_pool_create(&pool, &cfg);
	if (err)
		bench_fail("heist_pool_create(%u threads, pin %d, profile %d): %s", threads,
			   (int)pin, (int)profile, strerror(err));
	if (heist_pool_size(pool) != threads)
		bench_fail("heist_pool_size() = %u, asked for %u", heist_pool_size(pool), threads);
	return pool;
}

/* ---- statistics ------------------------------------------------------------------ */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void
bench_sort(uint64_t *x, size_t n)
{
	qsort(x, n, sizeof *x, cmp_u64);
}

uint64_t
bench_median(uint64_t *x, size_t n)
{
	if (n == 0)
		return 0;
	bench_sort(x, n);
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

uint64_t
bench_percentile(const uint64_t *sorted, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);	/* nearest rank, 1-based */
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* --rss child: the peak RSS over the last size measured, for the rows added after it. */
static long measure_peak_kib = -1;

/* ---- the driver ------------------------------------------------------------------ */

/* After a run, let the implementation's idle threads stop spinning before the next
 * one starts: on two cores a spinning idle thread halves the next run's CPU. libgomp
 * spins for about 300,000 pause instructions (~7 ms measured here) after a parallel
 * region unless OMP_WAIT_POLICY says otherwise, and that can only be set before the
 * program starts, so OpenMP runs get a longer pause. */
static void
settle(const struct bench_opts *o, const struct variant *v)
{
	unsigned ms = o->settle_ms;
	if (strcmp(v->job.impl, "omp") == 0 && ms < OMP_SETTLE_MS)
		ms = OMP_SETTLE_MS;
	bench_sleep_ms(ms);
}

/* One run of v: reset, the timed run, check. Returns the nanoseconds of run() alone. */
static uint64_t
run_one(const struct bench_workload *w, struct variant *v, int rep)
{
	struct bench_job *j = &v->job;
	bool count = v->spec->count_allocs && rep == 0;
	j->rep = rep;
	if (w->reset)
		w->reset(j);
	if (count)
		malloc_count_start();
	uint64_t t0 = bench_now_ns();
	v->spec->run(j);
	uint64_t ns = bench_now_ns() - t0;
	if (count) {
		v->allocs = malloc_count_stop();
		v->counted = malloc_count_available();
	}
	if (w->check)
		w->check(j);
	return ns;
}

/* Warm up each variant once, then o->reps repetitions, in each of which every variant
 * runs once, in table order; fills ns[] and median_ns. */
static void
measure(const struct bench_opts *o, struct bench_set *s)
{
	struct variant *v = s->v;
	unsigned n = s->n;
	bool peak = o->rss_child && bench_rss_reset_peak();
	for (unsigned i = 0; i < n; i++) {
		bench_progress(" %s/%u%s", v[i].job.impl, v[i].job.threads, i + 1 < n ? "" : " |");
		run_one(s->w, &v[i], -1);
		settle(o, &v[i]);
	}
	for (unsigned rep = 0; rep < o->reps; rep++) {
		for (unsigned i = 0; i < n; i++) {
			v[i].ns[rep] = run_one(s->w, &v[i], (int)rep);
			settle(o, &v[i]);
		}
		bench_progress(" %u", rep + 1);
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t tmp[BENCH_MAX_REPS];
		memcpy(tmp, v[i].ns, o->reps * sizeof tmp[0]);
		v[i].median_ns = bench_median(tmp, o->reps);
	}
	if (peak)
		measure_peak_kib = bench_rss_peak_kib();
	bench_progress("\n");
}

/* The pools of the workload being measured, made when a variant first needs one and
 * kept until its last size is done, so they live across repetitions and sizes. */
struct pools {
	unsigned n;
	struct {
		enum bench_pool kind;
		unsigned threads;
		heist_pool *heist;
		struct baseline_pool *baseline;
	} p[6];
};

static void
pool_for(struct pools *ps, struct bench_job *j)
{
	if (j->kind == POOL_NONE || j->kind == POOL_PEER)
		return;
	unsigned i = 0;
	while (i < ps->n && !(ps->p[i].kind == j->kind && ps->p[i].threads == j->threads))
		i++;
	if (i == ps->n) {
		if (ps->n == sizeof ps->p / sizeof ps->p[0])
			bench_fail("too many pools in one workload (raise struct pools' size)");
		ps->p[i].kind = j->kind;
		ps->p[i].threads = j->threads;
		ps->p[i].heist = NULL;
		ps->p[i].baseline = NULL;
		if (j->kind == POOL_BASELINE) {
			int err = baseline_pool_create(&ps->p[i].baseline, j->threads);
			if (err)
				bench_fail("baseline_pool_create: %s", strerror(err));
		} else {
			ps->p[i].heist = bench_heist_pool_with(j->threads,
				j->kind == POOL_HEIST_PIN ? HEIST_PIN_CORE : HEIST_PIN_NONE,
				j->kind == POOL_HEIST_PROF ? 1 :
				j->kind == POOL_HEIST_SAMPLE ? BENCH_PROFILE_EVERY : 0);
		}
		ps->n++;
	}
	j->pool = ps->p[i].heist;
	j->bpool = ps->p[i].baseline;
}

static void
pools_destroy(struct pools *ps)
{
	for (unsigned i = 0; i < ps->n; i++) {
		heist_pool_destroy(ps->p[i].heist);
		baseline_pool_destroy(ps->p[i].baseline);
	}
	ps->n = 0;
}

void *
bench_alloc(struct bench_set *s, size_t n, size_t size)
{
	if (s->nallocs == sizeof s->allocs / sizeof s->allocs[0])
		bench_fail("%s: too many inputs (raise struct bench_set's allocs)", s->name);
	void *p = calloc(n, size);
	if (!p)
		bench_fail("%s: out of memory for %zu x %zu bytes", s->name, n, size);
	s->allocs[s->nallocs++] = p;
	return p;
}

const struct peer *
bench_peer(const char *impl)
{
	static const struct peer *const built[] = {
#ifdef HEIST_BENCH_OMP
		&peer_omp,
#endif
#ifdef HEIST_BENCH_TBB
		&peer_tbb,
#endif
		NULL,
	};
	for (const struct peer *const *p = built; *p; p++)
		if (strcmp((*p)->impl, impl) == 0)
			return *p;
	return NULL;
}

/* The variants of size s that --impl enables and the table keeps for this size; a
 * line that would repeat an earlier one (heist with 1 and with --threads 1), or names
 * a peer that was not built, is left out. */
static void
add_variants(struct bench_set *s, struct pools *ps)
{
	const struct bench_workload *w = s->w;
	for (unsigned k = 0; k < w->nimpls; k++) {
		const struct bench_impl *spec = &w->impls[k];
		unsigned threads = spec->threads == THREADS ? s->o->threads : spec->threads;
		const struct peer *peer = spec->pool == POOL_PEER ? bench_peer(spec->impl) : NULL;
		if (!bench_impl_enabled(s->o, spec->impl) || (spec->when && !spec->when(s)) ||
		    bench_find(s, spec->impl, threads) || (spec->pool == POOL_PEER && !peer))
			continue;
		if (s->n == BENCH_MAX_VARIANTS)
			bench_fail("%s: too many variants (raise BENCH_MAX_VARIANTS)", s->name);
		struct variant *v = &s->v[s->n];
		memset(v, 0, sizeof *v);
		v->spec = spec;
		v->job.p = s->p;
		v->job.impl = spec->impl;
		v->job.threads = threads;
		v->job.kind = spec->pool;
		v->job.peer = peer;
		v->job.slot = s->n++;
		pool_for(ps, &v->job);
	}
}

static void
one_size(const struct bench_opts *o, const struct bench_workload *w, unsigned index,
	 struct pools *ps)
{
	struct bench_set *s = calloc(1, sizeof *s);
	if (!s)
		bench_fail("out of memory");
	s->o = o;
	s->w = w;
	s->index = index;
	s->name = w->sizes[index].name;
	s->p = o->quick ? w->sizes[index].quick : w->sizes[index].full;
	snprintf(s->size, sizeof s->size, "%s", s->p.label ? s->p.label : "");
	add_variants(s, ps);
	if (s->n == 0) {	/* --impl, or the table's when(), left nothing to measure */
		free(s);
		return;
	}
	s->in = w->setup ? w->setup(s) : NULL;
	bench_progress("%s%s%s %s%s:", s->name, w->title[0] ? " " : "", w->title, s->size,
		       s->detail);
	for (unsigned i = 0; i < s->n; i++)
		s->v[i].job.in = s->in;

	measure(o, s);
	if (w->times)
		w->times(s);
	for (unsigned i = 0; i < s->n; i++) {
		struct variant *v = &s->v[i];
		v->row = bench_row(s->name, s->size, v->job.impl, v->job.threads,
				   (double)v->median_ns);
	}
	if (w->figures)
		w->figures(s);
	for (unsigned i = 0; i < s->n; i++)
		if (s->v[i].spec->note)
			row_note(s->v[i].row, "%s", s->v[i].spec->note);

	if (w->teardown)
		w->teardown(s->in);
	for (unsigned i = 0; i < s->nallocs; i++)
		free(s->allocs[i]);
	free(s);
}

void
bench_run(const struct bench_opts *o, const struct bench_workload *const *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct pools ps = { 0 };
		if (w[i]->only_named && !o->only)
			continue;
		for (unsigned k = 0; k < w[i]->nsizes; k++)
			if (bench_selected(o, w[i]->group, w[i]->sizes[k].name))
				one_size(o, w[i], k, &ps);
		pools_destroy(&ps);
	}
}

void
bench_check(const char *workload, const char *impl, unsigned threads, long long got,
	    long long want)
{
	if (got != want)
		bench_fail("WRONG ANSWER: %s, %s with %u thread%s: got %lld, expected %lld",
			   workload, impl, threads, threads == 1 ? "" : "s", got, want);
}

void
bench_check_sum(const char *what, const struct bench_job *j, uint64_t got, uint64_t want)
{
	if (got != want)
		bench_fail("WRONG ANSWER: %s, %s with %u threads: got 0x%016" PRIx64
			   ", expected 0x%016" PRIx64, what, j->impl, j->threads, got, want);
}

void
bench_check_array(const char *what, const struct bench_job *j, const double *got,
		  const double *want, size_t n, const char *cause)
{
	if (memcmp(got, want, n * sizeof got[0]) == 0)
		return;
	size_t i = 0;
	while (i < n && memcmp(&got[i], &want[i], sizeof got[i]) == 0)
		i++;
	bench_fail("WRONG ANSWER: %s, %s with %u threads: [%zu] = %.17g, expected %.17g "
		   "(%s)", what, j->impl, j->threads, i, got[i], want[i], cause);
}

struct variant *
bench_find(struct bench_set *s, const char *impl, unsigned threads)
{
	for (unsigned i = 0; i < s->n; i++)
		if (strcmp(s->v[i].job.impl, impl) == 0 && s->v[i].job.threads == threads)
			return &s->v[i];
	return NULL;
}

struct row *
bench_set_row(struct bench_set *s, const char *impl, unsigned threads)
{
	struct variant *v = bench_find(s, impl, threads);
	return v ? v->row : NULL;
}

void
bench_pin_note(struct bench_set *s)
{
	struct variant *v = bench_find(s, "heist-pin", s->o->threads);
	if (!v)
		return;
	struct row *r = v->row;
	const heist_pool *pool = v->job.pool;
	char where[96] = "";
	size_t used = 0;
	unsigned n = heist_pool_size(pool);
	for (unsigned i = 0; i < n && used + 1 < sizeof where; i++) {
		struct heist_placement p;
		if (heist_pool_placement(pool, i, &p, NULL, NULL, 0) != 0)
			continue;
		int k = snprintf(where + used, sizeof where - used, "%sw%u:%s", i ? " " : "", i,
				 p.bound == 1 ? p.cpus : p.bound == 0 ? "unpinned" : "FAILED");
		if (k < 0)
			break;
		used += (size_t)k;
	}
	struct heist_stats st;
	if (heist_pool_stats(pool, &st) == 0 && st.bind_failures)
		row_note(r, "%u binding failures", st.bind_failures);
	row_note(r, "pin=core %s; expect little difference on %u cores", where, n);
}

void
bench_figure_per(struct bench_set *s, const char *key, double per, int decimals,
		 const char *unit)
{
	for (unsigned i = 0; i < s->n; i++) {
		double x = (double)s->v[i].median_ns / per;
		row_metric(s->v[i].row, key, x, "%.*f %s", decimals, x, unit);
	}
}

void
bench_figure_rate(struct bench_set *s, const char *key, double count, int decimals,
		  const char *unit)
{
	for (unsigned i = 0; i < s->n; i++) {
		double rate = count / ((double)s->v[i].median_ns / 1e9);
		row_metric(s->v[i].row, key, rate, "%.*f M%s/s", decimals, rate / 1e6, unit);
	}
}

/* ---- rows ------------------------------------------------------------------------ */

struct metric {
	char key[32];
	double value;
	char text[64];
};

struct row {
	char workload[16];
	char size[24];
	char impl[16];
	unsigned threads;
	double time_ns;
	long rss_kib;		/* --rss child: peak RSS of the measure that made it, or -1 */
	struct metric m[ROW_MAX_METRICS];
	unsigned nm;
	char note[200];
};

static struct row rows[BENCH_MAX_ROWS];
static unsigned nrows;

struct row *
bench_row(const char *workload, const char *size, const char *impl, unsigned threads,
	  double time_ns)
{
	if (nrows == BENCH_MAX_ROWS)
		bench_fail("too many result rows (raise BENCH_MAX_ROWS)");
	struct row *r = &rows[nrows++];
	memset(r, 0, sizeof *r);
	snprintf(r->workload, sizeof r->workload, "%s", workload);
	snprintf(r->size, sizeof r->size, "%s", size);
	snprintf(r->impl, sizeof r->impl, "%s", impl);
	r->threads = threads;
	r->time_ns = time_ns;
	r->rss_kib = measure_peak_kib;
	return r;
}

void
row_metric(struct row *r, const char *key, double value, const char *fmt, ...)
{
	if (!r)
		return;
	if (r->nm == ROW_MAX_METRICS)
		bench_fail("too many metrics on row %s %s", r->workload, r->impl);
	struct metric *m = &r->m[r->nm++];
	snprintf(m->key, sizeof m->key, "%s", key);
	m->value = value;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->text, sizeof m->text, fmt, ap);
	va_end(ap);
}

void
row_note(struct row *r, const char *fmt, ...)
{
	if (!r)
		return;
	size_t used = strlen(r->note);
	if (used && used + 2 < sizeof r->note) {
		strcpy(r->note + used, "; ");
		used += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->note + used, sizeof r->note - used, fmt, ap);
	va_end(ap);
}

unsigned
bench_row_count(void)
{
	return nrows;
}

struct row *
bench_row_at(unsigned i)
{
	return i < nrows ? &rows[i] : NULL;
}

const char *
row_workload(const struct row *r)
{
	return r->workload;
}

const char *
row_size(const struct row *r)
{
	return r->size;
}

const char *
row_impl(const struct row *r)
{
	return r->impl;
}

unsigned
row_threads(const struct row *r)
{
	return r->threads;
}

long
row_rss_kib(const struct row *r)
{
	return r->rss_kib;
}

double
bench_row_metric(const struct row *r, const char *key)
{
	for (unsigned k = 0; k < r->nm; k++)
		if (strcmp(r->m[k].key, key) == 0)
			return r->m[k].value;
	return -1;
}

struct row *
bench_row_for(const char *workload, const char *size, const char *impl, unsigned threads)
{
	for (unsigned i = 0; i < nrows; i++) {
		struct row *r = &rows[i];
		if (strcmp(r->workload, workload) == 0 && strcmp(r->size, size) == 0 &&
		    strcmp(r->impl, impl) == 0 && r->threads == threads)
			return r;
	}
	return NULL;
}

/* The time of the row with the same workload and size and the given impl (and thread
 * count, unless threads is 0), or NAN. */
static double
ref_time(const struct row *r, const char *impl, unsigned threads)
{
	for (unsigned i = 0; i < nrows; i++) {
		const struct row *q = &rows[i];
		if (strcmp(q->workload, r->workload) == 0 && strcmp(q->size, r->size) == 0 &&
		    strcmp(q->impl, impl) == 0 && (threads == 0 || q->threads == threads) &&
		    q->time_ns > 0)
			return q->time_ns;
	}
	return NAN;
}

/* Three significant digits in the largest unit that keeps the number >= 1. */
static void
format_time(char *buf, size_t len, double ns)
{
	static const struct { double div; const char *unit; } units[] = {
		{ 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" }, { 1, "ns" },
	};
	if (!(ns >= 0)) {
		snprintf(buf, len, "-");
		return;
	}
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		double x = ns / units[i].div;
		if (x >= 1 || units[i].div == 1) {
			int decimals = x >= 100 ? 0 : x >= 10 ? 1 : 2;
			snprintf(buf, len, "%.*f %s", decimals, x, units[i].unit);
			return;
		}
	}
}

static void
format_ratio(char *buf, size_t len, double x)
{
	if (isnan(x))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2f", x);
}

static void
print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void
print_json_number(double x)
{
	if (isnan(x) || isinf(x))
		fputs("null", stdout);
	else
		printf("%.10g", x);
}

void
bench_print(const struct bench_opts *o)
{
	if (o->json) {
		printf("{\"threads\": %u, \"reps\": %u, \"quick\": %s, \"rows\": [\n", o->threads,
		       o->reps, o->quick ? "true" : "false");
		for (unsigned i = 0; i < nrows; i++) {
			const struct row *r = &rows[i];
			double t = r->time_ns >= 0 ? r->time_ns : NAN;
			printf("  {\"workload\": ");
			print_json_string(r->workload);
			printf(", \"size\": ");
			print_json_string(r->size);
			printf(", \"impl\": ");
			print_json_string(r->impl);
			printf(", \"threads\": %u, \"median_ns\": ", r->threads);
			print_json_number(t);
			printf(", \"ratio_to_serial\": ");
			print_json_number(t / ref_time(r, "serial", 0));
			printf(", \"ratio_to_heist\": ");
			print_json_number(t / ref_time(r, "heist", o->threads));
			for (unsigned k = 0; k < r->nm; k++) {
				printf(", ");
				print_json_string(r->m[k].key);
				printf(": ");
				print_json_number(r->m[k].value);
			}
			if (r->note[0]) {
				printf(", \"note\": ");
				print_json_string(r->note);
			}
			printf("}%s\n", i + 1 < nrows ? "," : "");
		}
		printf("]}\n");
		return;
	}

	printf("%-8s %-10s %-13s %3s %10s %8s %8s  %s\n", "workload", "size", "impl", "thr",
	       "median", "t/serial", "t/heist", "figures");
	const char *prev = "";
	for (unsigned i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		char t[32], rs[16], rh[16];
		double ns = r->time_ns >= 0 ? r->time_ns : NAN;
		if (strcmp(prev, r->workload) != 0 && i > 0)
			putchar('\n');
		prev = r->workload;
		format_time(t, sizeof t, r->time_ns);
		format_ratio(rs, sizeof rs, ns / ref_time(r, "serial", 0));
		format_ratio(rh, sizeof rh, ns / ref_time(r, "heist", o->threads));
		printf("%-8s %-10s %-13s %3u %10s %8s %8s ", r->workload, r->size, r->impl,
		       r->threads, t, rs, rh);
		for (unsigned k = 0; k < r->nm; k++)
			printf(" %s", r->m[k].text);
		if (r->note[0])
			printf("%s(%s)", r->nm ? "  " : " ", r->note);
		putchar('\n');
	}
}
