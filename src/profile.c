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
	SAMPLES_PER_WORKER = 1 << 18,	/* 6 MiB of raw samples per worker */
};

struct latency_acc {
	counter sum, min, max;
	counter hist[BUCKETS];
};

struct profile {
	counter dropped;		/* samples that overflowed into acc[] */
	struct latency_acc acc[2];	/* HEIST_LATENCY_DISPATCH, _END_TO_END */
	/* Samples [0, len) are complete: the owner stores len with release after
	 * writing one; readers load it with acquire. */
	_Atomic size_t len;
	struct heist_profile_sample samples[SAMPLES_PER_WORKER];
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

static void
acc_add(struct latency_acc *a, uint64_t v)
{
	counter_add(&a->sum, v);
	counter_add(&a->hist[bucket_of(v)], 1);
	if (v < counter_read(&a->min))
		atomic_store_explicit(&a->min, v, memory_order_relaxed);
	if (v > counter_read(&a->max))
		atomic_store_explicit(&a->max, v, memory_order_relaxed);
}

static void
profile_clear(struct profile *p)
{
	atomic_store_explicit(&p->dropped, 0, memory_order_relaxed);
	acc_init(&p->acc[0]);
	acc_init(&p->acc[1]);
	atomic_store_explicit(&p->len, 0, memory_order_relaxed);
}

struct profile *
heist__profile_new(void)
{
	struct profile *p = malloc(sizeof(*p));
	if (p)
		profile_clear(p);
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

__thread uint32_t heist__profile_tick __attribute__((tls_model("initial-exec")));

void
heist__profile_record(struct profile *p, unsigned worker, uint64_t created,
		      uint64_t started, uint64_t ended)
{
	size_t n = atomic_load_explicit(&p->len, memory_order_relaxed);
	if (n == SAMPLES_PER_WORKER) {
		counter_add(&p->dropped, 1);
		acc_add(&p->acc[HEIST_LATENCY_DISPATCH], since(created, started));
		acc_add(&p->acc[HEIST_LATENCY_END_TO_END], since(created, ended));
		return;
	}
	p->samples[n] = (struct heist_profile_sample){created, started, ended, worker};
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
struct merged {
	uint64_t count, dropped, kept;
	uint64_t sum[2], min[2], max[2];
	uint64_t *hist[2];
};

static int
merge(heist_pool *pool, unsigned first, unsigned last, struct merged *m)
{
	memset(m, 0, sizeof(*m));
	m->hist[0] = calloc(BUCKETS, sizeof(uint64_t));
	m->hist[1] = calloc(BUCKETS, sizeof(uint64_t));
	if (!m->hist[0] || !m->hist[1]) {
		free(m->hist[0]);
		free(m->hist[1]);
		return ENOMEM;
	}
	m->min[0] = m->min[1] = UINT64_MAX;
	for (unsigned w = first; w < last; w++) {
		struct profile *p = pool->workers[w].prof;
		size_t len = atomic_load_explicit(&p->len, memory_order_acquire);
		m->dropped += counter_read(&p->dropped);
		m->kept += len;
		m->count += len + counter_read(&p->dropped);
		for (size_t i = 0; i < len; i++) {	/* fold the kept samples in */
			const struct heist_profile_sample *s = &p->samples[i];
			uint64_t v[2] = {since(s->created, s->started),
					 since(s->created, s->ended)};
			for (int k = 0; k < 2; k++) {
				m->sum[k] += v[k];
				m->hist[k][bucket_of(v[k])]++;
				if (v[k] < m->min[k])
					m->min[k] = v[k];
				if (v[k] > m->max[k])
					m->max[k] = v[k];
			}
		}
		for (int k = 0; k < 2; k++) {
			struct latency_acc *a = &p->acc[k];
			m->sum[k] += counter_read(&a->sum);
			if (counter_read(&a->min) < m->min[k])
				m->min[k] = counter_read(&a->min);
			if (counter_read(&a->max) > m->max[k])
				m->max[k] = counter_read(&a->max);
			for (unsigned i = 0; i < BUCKETS; i++)
				m->hist[k][i] += counter_read(&a->hist[i]);
		}
	}
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Every kept sample's latency of one kind, sorted; NULL if any sample was dropped
 * (then the histogram answers) or there is no memory. */
static uint64_t *
sorted_latencies(heist_pool *pool, unsigned first, unsigned last, int kind,
		 const struct merged *m)
{
	if (m->dropped || !m->kept)
		return NULL;
	uint64_t *v = malloc(m->kept * sizeof(*v));
	if (!v)
		return NULL;
	size_t n = 0;
	for (unsigned w = first; w < last; w++) {
		struct profile *p = pool->workers[w].prof;
		size_t len = atomic_load_explicit(&p->len, memory_order_acquire);
		for (size_t i = 0; i < len && n < m->kept; i++) {
			const struct heist_profile_sample *s = &p->samples[i];
			v[n++] = since(s->created, kind ? s->ended : s->started);
		}
	}
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
	uint64_t count = m->count;
	if (!count)
		return 0;
	if (sorted)
		return sorted[rank_of(q, count) - 1];
	uint64_t want = rank_of(q, count), seen = 0;
	for (unsigned i = 0; i < BUCKETS; i++) {
		seen += m->hist[kind][i];
		if (seen >= want) {
			uint64_t v = bucket_high(i);
			return v > m->max[kind] ? m->max[kind] : v;
		}
	}
	return m->max[kind];
}

static void
fill(struct heist_latency *l, const struct merged *m, int kind, const uint64_t *sorted,
     double per_ns)
{
	memset(l, 0, sizeof(*l));
	l->count = m->count;
	if (!m->count)
		return;
	l->min = m->min[kind];
	l->max = m->max[kind];
	l->mean = (double)m->sum[kind] / (double)m->count;
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
report(heist_pool *pool, unsigned first, unsigned last, struct heist_latency_report *out)
{
	struct merged m;
	int err = merge(pool, first, last, &m);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	out->clock = *heist__clock_info();
	out->samples_kept = m.kept;
	out->samples_dropped = m.dropped;
	out->buffer_samples = SAMPLES_PER_WORKER;
	out->sampled_every = (uint64_t)pool->profile_mask + 1;
	for (int k = 0; k < 2; k++) {
		uint64_t *sorted = sorted_latencies(pool, first, last, k, &m);
		if (k == 0)
			out->exact = sorted != NULL || m.count == 0;
		fill(k ? &out->end_to_end : &out->dispatch, &m, k, sorted,
		     out->clock.cycles_per_ns);
		free(sorted);
	}
	free(m.hist[0]);
	free(m.hist[1]);
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

HEIST_EXPORT int
heist_profile_report(heist_pool *pool, struct heist_latency_report *out)
{
	int err = check(pool);
	if (err)
		return err;
	if (!out)
		return EINVAL;
	/* The guest slot's and the spares' tasks too. */
	return report(pool, 0, heist__pool_slots_used(pool), out);
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
	return report(pool, index, last, out);
}

HEIST_EXPORT int
heist_profile_percentiles(heist_pool *pool, enum heist_latency_kind kind, const double *q,
			  uint64_t *out, size_t n)
{
	int err = check(pool);
	if (err)
		return err;
	if ((n && (!q || !out)) || (kind != HEIST_LATENCY_DISPATCH &&
				    kind != HEIST_LATENCY_END_TO_END))
		return EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!(q[i] >= 0.0 && q[i] <= 1.0))	/* NaN fails both */
			return EINVAL;
	struct merged m;
	unsigned slots = heist__pool_slots_used(pool);
	if ((err = merge(pool, 0, slots, &m)))
		return err;
	uint64_t *sorted = sorted_latencies(pool, 0, slots, (int)kind, &m);
	for (size_t i = 0; i < n; i++)
		out[i] = quantile(&m, (int)kind, sorted, q[i]);
	free(sorted);
	free(m.hist[0]);
	free(m.hist[1]);
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
