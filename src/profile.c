/* SPDX-License-Identifier: MIT */
/* profile.c - the latency profiler: per-worker sample buffers and log-linear
 * histograms, merged at report time. Workers write only their own buffers (owner-only
 * counters, relaxed: readers take a snapshot), so the hot path has no lock, no
 * allocation and no shared cache line. The clock and its calibration are clock.c's;
 * what the scheduler calls to record is declared in probe.h.
 *
 * The histogram is HdrHistogram's idea in its simplest form: values below 256 get a
 * bucket each; above, every power of two is split into 128 equal sub-buckets, so a
 * bucket is at most 1/128 (0.8%) of its values wide. 7424 buckets cover 64 bits.
 * A worker records a task as a raw sample while its buffer has room, and only the
 * samples that overflow go into its histograms and sums: reports fold the kept
 * samples in, so the hot path stays one 32-byte store and a count. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heist/profile.h"
#include "clock.h"
#include "internal.h"
#include "pool.h"
#include "probe.h"

enum {
	SUB_BITS = 7,
	SUB = 1 << SUB_BITS,		/* 128 sub-buckets per power of two */
	LINEAR = 2 * SUB,		/* values below 256: one bucket each */
	BUCKETS = LINEAR + (64 - SUB_BITS - 1) * SUB,
	DEFAULT_SAMPLES = 1 << 18,	/* per worker: 12 MiB of raw samples */
	MAX_SAMPLES = 1 << 26,		/* heist_config.profile_buffer's bound: 3 GiB */
};

struct latency_acc {
	counter sum, min, max;
	counter hist[BUCKETS];
};

enum { KINDS = 3 };	/* HEIST_LATENCY_DISPATCH, _END_TO_END, _STEAL */

struct profile {
	counter dropped;		/* samples that overflowed into acc[] */
	counter dropped_path[HEIST_PATHS];	/* the same by path (acc[] keeps none) */
	struct latency_acc acc[KINDS];	/* acc[STEAL]: the overflowed stolen ones */
	/* Samples [0, len) are complete: the owner stores len with release after
	 * writing one; readers load it with acquire. */
	_Atomic size_t len;
	size_t cap;			/* samples[] holds this many */
	struct heist_profile_sample samples[];
};

/* ---- recording ---- */

static unsigned
bucket_of(uint64_t v)
{
	if (v < LINEAR)
		return (unsigned)v;
	unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - SUB_BITS;
	return LINEAR + (shift - 1) * SUB + (unsigned)((v >> shift) - SUB);
}

/* The largest value that falls in bucket i. */
static uint64_t
bucket_high(unsigned i)
{
	if (i < LINEAR)
		return i;
	unsigned k = i - LINEAR, shift = k / SUB + 1;
	uint64_t low = (uint64_t)(k % SUB + SUB) << shift;
	return low + ((uint64_t)1 << shift) - 1;
}

static void
acc_init(struct latency_acc *a)
{
	atomic_store_explicit(&a->sum, 0, memory_order_relaxed);
	atomic_store_explicit(&a->min, UINT64_MAX, memory_order_relaxed);
	atomic_store_explicit(&a->max, 0, memory_order_relaxed);
	for (unsigned i = 0; i < BUCKETS; i++)
		atomic_store_explicit(&a->hist[i], 0, memory_order_relaxed);
}

/* The owner only. v's bucket last, with release: a report that counts v in it (its
 * acquire load, fold_acc) sees v in min and max too, so that its count never runs
 * ahead of its range. The sum is another matter: see fill. */
static void
acc_add(struct latency_acc *a, uint64_t v)
{
	if (v < counter_read(&a->min))
		atomic_store_explicit(&a->min, v, memory_order_relaxed);
	if (v > counter_read(&a->max))
		atomic_store_explicit(&a->max, v, memory_order_relaxed);
	counter_add(&a->sum, v);
	counter *c = &a->hist[bucket_of(v)];
	atomic_store_explicit(c, counter_read(c) + 1, memory_order_release);
}

static void
profile_clear(struct profile *p)
{
	atomic_store_explicit(&p->dropped, 0, memory_order_relaxed);
	for (int k = 0; k < HEIST_PATHS; k++)
		atomic_store_explicit(&p->dropped_path[k], 0, memory_order_relaxed);
	for (int k = 0; k < KINDS; k++)
		acc_init(&p->acc[k]);
	atomic_store_explicit(&p->len, 0, memory_order_relaxed);
}

size_t
heist__profile_capacity(size_t wanted)
{
	return wanted == 0 ? DEFAULT_SAMPLES : wanted > MAX_SAMPLES ? MAX_SAMPLES : wanted;
}

struct profile *
heist__profile_new(size_t samples)
{
	struct profile *p = heist__malloc(sizeof(*p) + samples * sizeof(p->samples[0]));
	if (p) {
		p->cap = samples;
		profile_clear(p);
	}
	return p;
}

void
heist__profile_free(struct profile *p)
{
	free(p);
}

static uint64_t
since(uint64_t from, uint64_t to)
{
	/* Counters of different cores may disagree by a few ticks. */
	return to > from ? to - from : 0;
}

HEIST__TLS uint32_t heist__profile_tick;

void
heist__profile_record(struct profile *p, unsigned worker, unsigned kind, uint64_t created,
		      uint64_t started, uint64_t ended, const struct heist__run_from *from)
{
	size_t n = atomic_load_explicit(&p->len, memory_order_relaxed);
	if (n == p->cap) {
		counter_add(&p->dropped, 1);
		counter_add(&p->dropped_path[from->path], 1);
		acc_add(&p->acc[HEIST_LATENCY_DISPATCH], since(created, started));
		acc_add(&p->acc[HEIST_LATENCY_END_TO_END], since(created, ended));
		if (from->published)
			acc_add(&p->acc[HEIST_LATENCY_STEAL], since(from->published, started));
		return;
	}
	p->samples[n] = (struct heist_profile_sample){
		.created = created, .started = started, .ended = ended, .worker = worker,
		.path = from->path, .published = from->published, .kind = kind,
		.victim = from->victim};
	/* release: the sample is complete before a reader that sees len > n. */
	atomic_store_explicit(&p->len, n + 1, memory_order_release);
}

/* ---- reporting ---- */

static int
check(heist_pool *pool)
{
	if (!HEIST_PROFILER)
		return ENOTSUP;
	if (!pool || !pool->workers[0].prof)
		return EINVAL;
	return 0;
}

/* The workers [first, last) merged. */
/* Workers [first, last) merged, all paths (path ALL_PATHS) or one. */
enum { ALL_PATHS = -1 };

struct merged {
	uint64_t dropped, kept;		/* samples of the path */
	uint64_t path_count[HEIST_PATHS];
	uint64_t count[KINDS], sum[KINDS], min[KINDS], max[KINDS];
	uint64_t folded[KINDS];		/* of count[]: the overflowed ones (histograms) */
	uint64_t *hist[KINDS];
	/* Each worker's samples [0, len[w - first]) as merged: workers may record more
	 * while a report is taken, and the sort must read the very samples counted. */
	size_t *len;
};

/* The latency of one kind of sample s, and whether s has one (only a stolen task has
 * a steal latency). */
static bool
latency_of(const struct heist_profile_sample *s, int kind, uint64_t *v)
{
	if (kind == HEIST_LATENCY_STEAL) {
		*v = since(s->published, s->started);
		return s->published != 0;
	}
	*v = since(s->created, kind == HEIST_LATENCY_END_TO_END ? s->ended : s->started);
	return true;
}

static void
merged_free(struct merged *m)
{
	for (int k = 0; k < KINDS; k++)
		free(m->hist[k]);
	free(m->len);
}

static void
fold_acc(struct merged *m, const struct profile *p)
{
	for (int k = 0; k < KINDS; k++) {
		const struct latency_acc *a = &p->acc[k];
		uint64_t n = 0;
		for (unsigned i = 0; i < BUCKETS; i++) {
			/* acquire: pairs with acc_add's release (min and max below). */
			uint64_t c = atomic_load_explicit((counter *)&a->hist[i],
							  memory_order_acquire);
			m->hist[k][i] += c;
			n += c;
		}
		m->count[k] += n;
		m->folded[k] += n;
		m->sum[k] += counter_read(&a->sum);
		if (n && counter_read(&a->min) < m->min[k])
			m->min[k] = counter_read(&a->min);
		if (n && counter_read(&a->max) > m->max[k])
			m->max[k] = counter_read(&a->max);
	}
}

static int
merge(heist_pool *pool, unsigned first, unsigned last, int path, struct merged *m)
{
	memset(m, 0, sizeof(*m));
	bool fail = !(m->len = heist__calloc(last - first + 1, sizeof(size_t)));
	for (int k = 0; k < KINDS; k++) {
		m->min[k] = UINT64_MAX;
		fail |= !(m->hist[k] = heist__calloc(BUCKETS, sizeof(uint64_t)));
	}
	if (fail) {
		merged_free(m);
		return ENOMEM;
	}
	for (unsigned w = first; w < last; w++) {
		struct profile *p = pool->workers[w].prof;
		size_t len = atomic_load_explicit(&p->len, memory_order_acquire);
		m->len[w - first] = len;
		for (int k = 0; k < HEIST_PATHS; k++)
			m->path_count[k] += counter_read(&p->dropped_path[k]);
		m->dropped += path == ALL_PATHS ? counter_read(&p->dropped)
						: counter_read(&p->dropped_path[path]);
		for (size_t i = 0; i < len; i++) {	/* fold the kept samples in */
			const struct heist_profile_sample *s = &p->samples[i];
			m->path_count[s->path < HEIST_PATHS ? s->path : 0]++;
			if (path != ALL_PATHS && s->path != (unsigned)path)
				continue;
			m->kept++;
			for (int k = 0; k < KINDS; k++) {
				uint64_t v;
				if (!latency_of(s, k, &v))
					continue;
				m->count[k]++;
				m->sum[k] += v;
				m->hist[k][bucket_of(v)]++;
				if (v < m->min[k])
					m->min[k] = v;
				if (v > m->max[k])
					m->max[k] = v;
			}
		}
		if (path == ALL_PATHS)	/* the histograms keep no path */
			fold_acc(m, p);
	}
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Every kept sample's latency of one kind (of the path), sorted; NULL if the merged
 * counts include overflowed samples (then the histogram answers) or there is no
 * memory. A path's report always sorts: its histograms hold only kept samples. The
 * samples are those merge counted (m->len), so there are m->count[kind] of them when
 * nothing was folded in, even while workers go on recording (an overflow counted
 * after merge read `dropped` shows in `folded`). */
static uint64_t *
sorted_latencies(heist_pool *pool, unsigned first, unsigned last, int path, int kind,
		 const struct merged *m)
{
	if ((path == ALL_PATHS && (m->dropped || m->folded[kind])) || !m->count[kind])
		return NULL;
	uint64_t *v = heist__malloc(m->count[kind] * sizeof(*v));
	if (!v)
		return NULL;
	size_t n = 0;
	for (unsigned w = first; w < last; w++) {
		const struct profile *p = pool->workers[w].prof;
		size_t len = m->len[w - first];	/* complete: merge's acquire load */
		for (size_t i = 0; i < len; i++) {
			const struct heist_profile_sample *s = &p->samples[i];
			if (path != ALL_PATHS && s->path != (unsigned)path)
				continue;
			uint64_t x;
			if (latency_of(s, kind, &x) && n < m->count[kind])
				v[n++] = x;
		}
	}
	assert(n == m->count[kind]);	/* the same samples merge counted */
	qsort(v, n, sizeof(*v), cmp_u64);
	return v;
}

/* Nearest rank: the smallest value with at least q of the samples at or below it. */
static uint64_t
rank_of(double q, uint64_t count)
{
	double r = q * (double)count;
	uint64_t k = (uint64_t)r;
	if ((double)k < r)
		k++;
	return k ? k : 1;
}

static uint64_t
quantile(const struct merged *m, int kind, const uint64_t *sorted, double q)
{
	uint64_t count = m->count[kind];
	if (!count)
		return 0;
	if (sorted)
		return sorted[rank_of(q, count) - 1];
	uint64_t want = rank_of(q, count), seen = 0;
	if (want == 1)
		return m->min[kind];	/* the smallest value, known exactly */
	for (unsigned i = 0; i < BUCKETS; i++) {
		seen += m->hist[kind][i];
		if (seen >= want) {
			/* The bucket's top, but never outside the exact min and max (the
			 * first and last values answer q = 0 and q = 1 exactly). */
			uint64_t v = bucket_high(i);
			if (v > m->max[kind])
				v = m->max[kind];
			return v < m->min[kind] ? m->min[kind] : v;
		}
	}
	return m->max[kind];
}

static void
fill(struct heist_latency *l, const struct merged *m, int kind, const uint64_t *sorted,
     double per_ns)
{
	memset(l, 0, sizeof(*l));
	l->count = m->count[kind];
	if (!l->count)
		return;
	l->min = m->min[kind];
	l->max = m->max[kind];
	l->mean = (double)m->sum[kind] / (double)l->count;
	/* While workers record, a worker's sum and its counts are read at different
	 * moments (no lock pairs them), so the mean of such a report is near, not exact,
	 * and may fall a little outside the range it reports: keep it inside. */
	if (l->mean < (double)l->min)
		l->mean = (double)l->min;
	if (l->mean > (double)l->max)
		l->mean = (double)l->max;
	l->p50 = quantile(m, kind, sorted, 0.50);
	l->p90 = quantile(m, kind, sorted, 0.90);
	l->p99 = quantile(m, kind, sorted, 0.99);
	l->p999 = quantile(m, kind, sorted, 0.999);
	l->p9999 = quantile(m, kind, sorted, 0.9999);
	l->min_ns = (double)l->min / per_ns;
	l->max_ns = (double)l->max / per_ns;
	l->mean_ns = l->mean / per_ns;
	l->p50_ns = (double)l->p50 / per_ns;
	l->p90_ns = (double)l->p90 / per_ns;
	l->p99_ns = (double)l->p99 / per_ns;
	l->p999_ns = (double)l->p999 / per_ns;
	l->p9999_ns = (double)l->p9999 / per_ns;
}

static int
report(heist_pool *pool, unsigned first, unsigned last, int path,
       struct heist_latency_report *out)
{
	struct merged m;
	int err = merge(pool, first, last, path, &m);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	out->clock = *heist__clock_info();
	out->samples_kept = m.kept;
	out->samples_dropped = m.dropped;
	out->buffer_samples = pool->workers[0].prof->cap;
	out->sampled_every = (uint64_t)pool->profile_mask + 1;
	memcpy(out->path_count, m.path_count, sizeof(out->path_count));
	struct heist_latency *dst[KINDS] = {&out->dispatch, &out->end_to_end, &out->steal};
	bool sorted_all = true;
	for (int k = 0; k < KINDS; k++) {
		uint64_t *sorted = sorted_latencies(pool, first, last, path, k, &m);
		sorted_all &= sorted != NULL || m.count[k] == 0;
		fill(dst[k], &m, k, sorted, out->clock.cycles_per_ns);
		free(sorted);
	}
	/* Exact when no sample of the report overflowed into the histograms (and
	 * there was memory to sort the kept ones). */
	out->exact = m.dropped == 0 && sorted_all;
	merged_free(&m);
	return 0;
}

HEIST_EXPORT int
heist_profile_clock(struct heist_profile_clock *out)
{
	if (!HEIST_PROFILER)
		return ENOTSUP;
	if (!out)
		return EINVAL;
	*out = *heist__clock_info();
	return 0;
}

HEIST_EXPORT uint64_t
heist_profile_now(void)
{
	if (!HEIST_PROFILER)
		return 0;
	/* Samples are in the calibrated counter's units (the TSC, or clock_gettime's
	 * nanoseconds where it is not invariant): a mark taken before any profiling pool
	 * was made calibrates first, and reads the fallback flag after the once. */
	heist__clock_calibrate();
	return heist__tsc();
}

HEIST_EXPORT int
heist_profile_report(heist_pool *pool, struct heist_latency_report *out)
{
	int err = check(pool);
	if (err)
		return err;
	if (!out)
		return EINVAL;
	/* The guest slot's and the spares' tasks too. */
	return report(pool, 0, heist__pool_slots_used(pool), ALL_PATHS, out);
}

HEIST_EXPORT int
heist_profile_path_report(heist_pool *pool, enum heist_dispatch_path path,
			  struct heist_latency_report *out)
{
	int err = check(pool);
	if (err)
		return err;
	if (!out || (unsigned)path >= HEIST_PATHS)
		return EINVAL;
	return report(pool, 0, heist__pool_slots_used(pool), (int)path, out);
}

HEIST_EXPORT int
heist_profile_worker_report(heist_pool *pool, unsigned index,
			    struct heist_latency_report *out)
{
	int err = check(pool);
	if (err)
		return err;
	if (!out || index >= pool->slots_max)
		return EINVAL;
	/* A spare slot never used has no buffers: an empty report. */
	unsigned last = index < heist__pool_slots_used(pool) ? index + 1 : index;
	return report(pool, index, last, ALL_PATHS, out);
}

HEIST_EXPORT int
heist_profile_percentiles(heist_pool *pool, enum heist_latency_kind kind, const double *q,
			  uint64_t *out, size_t n)
{
	int err = check(pool);
	if (err)
		return err;
	if ((n && (!q || !out)) || (kind != HEIST_LATENCY_DISPATCH &&
				    kind != HEIST_LATENCY_END_TO_END &&
				    kind != HEIST_LATENCY_STEAL))
		return EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!(q[i] >= 0.0 && q[i] <= 1.0))	/* NaN fails both */
			return EINVAL;
	struct merged m;
	unsigned slots = heist__pool_slots_used(pool);
	if ((err = merge(pool, 0, slots, ALL_PATHS, &m)))
		return err;
	uint64_t *sorted = sorted_latencies(pool, 0, slots, ALL_PATHS, (int)kind, &m);
	for (size_t i = 0; i < n; i++)
		out[i] = quantile(&m, (int)kind, sorted, q[i]);
	free(sorted);
	merged_free(&m);
	return 0;
}

HEIST_EXPORT int
heist_profile_samples(heist_pool *pool,
		      void (*fn)(void *ctx, const struct heist_profile_sample *s), void *ctx)
{
	int err = check(pool);
	if (err)
		return err;
	if (!fn)
		return EINVAL;
	for (unsigned w = 0, slots = heist__pool_slots_used(pool); w < slots; w++) {
		struct profile *p = pool->workers[w].prof;
		size_t len = atomic_load_explicit(&p->len, memory_order_acquire);
		for (size_t i = 0; i < len; i++)
			fn(ctx, &p->samples[i]);
	}
	return 0;
}

HEIST_EXPORT void
heist_profile_reset(heist_pool *pool)
{
	if (check(pool))
		return;
	for (unsigned w = 0, slots = heist__pool_slots_used(pool); w < slots; w++)
		profile_clear(pool->workers[w].prof);
}
