/* topology.c - placement and victim order. With hwloc: the default worker count is
 * the number of cores in hwloc's allowed set that the process's affinity mask
 * touches; HEIST_PIN_CORE gives each worker a core, HEIST_PIN_PU one processing
 * unit, spread evenly over the list in hwloc's logical order (so fewer workers than
 * cores land on different packages); and a worker's victims are grouped by the depth
 * of their common ancestor with it (SMT sibling, shared L2, L3, package or NUMA group,
 * machine), nearest group first. Without hwloc: the affinity mask's CPU count, PU
 * pinning for both policies (cores are unknown), and one flat rank. hwloc's
 * "-1 and errno" convention ends here: everything returns an errno value. */
#include "topology.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *heist__topology_synthetic;

static unsigned
affinity_count(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/* The flat list: every slot (the workers and the guest slot after them), one rank.
 * Shared by the workers of an unpinned pool and by the guest slot: each thief skips
 * its own index. */
static int
make_flat(struct victims *v, unsigned n)
{
	v->order = malloc(sizeof(unsigned) * (n + 1));
	v->rank_end = malloc(sizeof(unsigned));
	if (!v->order || !v->rank_end)
		return ENOMEM;
	for (unsigned i = 0; i <= n; i++)
		v->order[i] = i;
	v->rank_end[0] = n + 1;
	v->nranks = 1;
	return 0;
}

static void
free_flat(struct victims *v)
{
	free(v->order);
	free(v->rank_end);
}

#ifdef HEIST_HAVE_HWLOC
#include <hwloc.h>

static void
free_victims(struct victims *v, unsigned n)
{
	if (!v)
		return;
	for (unsigned i = 0; i < n; i++) {
		free(v[i].order);
		free(v[i].rank_end);
	}
	free(v);
}

struct topology {
	hwloc_topology_t topo;
	enum heist_pin pin;
	unsigned n;
	hwloc_obj_t *place;		/* per worker: its core or PU; NULL unpinned */
	struct victims *victims;	/* per worker; NULL: everyone uses flat */
	struct victims flat;
};

/* The CPUs workers may use: hwloc's allowed set, and on the real machine the
 * calling thread's affinity mask too (what taskset sets, and what the workers
 * inherit). */
static hwloc_bitmap_t
usable_cpus(hwloc_topology_t topo)
{
	hwloc_bitmap_t set = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
	if (set && hwloc_topology_is_thissystem(topo)) {
		hwloc_bitmap_t mask = hwloc_bitmap_alloc();
		if (mask && hwloc_get_cpubind(topo, mask, HWLOC_CPUBIND_THREAD) == 0)
			hwloc_bitmap_and(set, set, mask);
		hwloc_bitmap_free(mask);
	}
	return set;
}

/* Objects of one type that intersect the usable set, in logical order. */
static unsigned
usable_objs(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_const_bitmap_t usable,
	    hwloc_obj_t *out)
{
	unsigned k = 0;
	int all = hwloc_get_nbobjs_by_type(topo, type);
	for (int i = 0; i < all; i++) {
		hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, (unsigned)i);
		if (hwloc_bitmap_intersects(o->cpuset, usable)) {
			if (out)
				out[k] = o;
			k++;
		}
	}
	return k;
}

static int
cmp_desc(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return y - x;
}

/* Worker i's victims: every other worker, grouped by common-ancestor depth, and the
 * guest slot (index n) as a last rank of its own. The order within a group is chosen
 * at random on each steal round (steal.c). */
static int
rank_victims(struct topology *t, unsigned i, struct victims *v)
{
	unsigned n = t->n;
	int *depth = malloc(sizeof(int) * n), *levels = malloc(sizeof(int) * n);
	v->order = malloc(sizeof(unsigned) * n);
	v->rank_end = malloc(sizeof(unsigned) * n);
	if (!depth || !levels || !v->order || !v->rank_end) {
		free(depth);
		free(levels);
		return ENOMEM;
	}
	unsigned nl = 0;
	for (unsigned j = 0; j < n; j++) {
		if (j == i)
			continue;
		hwloc_obj_t a = t->place[i] == t->place[j]
					? t->place[i]
					: hwloc_get_common_ancestor_obj(t->topo, t->place[i],
									t->place[j]);
		depth[j] = a->depth;
		bool seen = false;
		for (unsigned k = 0; k < nl; k++)
			seen |= levels[k] == depth[j];
		if (!seen)
			levels[nl++] = depth[j];
	}
	qsort(levels, nl, sizeof(int), cmp_desc);	/* deepest (nearest) first */
	unsigned m = 0;
	for (unsigned k = 0; k < nl; k++) {
		for (unsigned j = 0; j < n; j++)
			if (j != i && depth[j] == levels[k])
				v->order[m++] = j;
		v->rank_end[k] = m;
	}
	v->order[m++] = n;	/* the guest slot */
	v->rank_end[nl] = m;
	v->nranks = nl + 1;
	free(depth);
	free(levels);
	return 0;
}

static int
place_workers(struct topology *t, hwloc_const_bitmap_t usable)
{
	hwloc_obj_type_t type = t->pin == HEIST_PIN_CORE ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
	unsigned count = usable_objs(t->topo, type, usable, NULL);
	if (!count)
		return 0;	/* nothing to pin to: run unpinned */
	hwloc_obj_t *objs = malloc(sizeof(*objs) * count);
	t->place = malloc(sizeof(*t->place) * t->n);
	t->victims = calloc(t->n, sizeof(*t->victims));
	if (!objs || !t->place || !t->victims) {
		free(objs);
		return ENOMEM;
	}
	usable_objs(t->topo, type, usable, objs);
	for (unsigned i = 0; i < t->n; i++) {
		/* Spread: with fewer workers than places, every count/n-th place. */
		size_t k = t->n <= count ? (size_t)i * count / t->n : i % count;
		t->place[i] = objs[k];
	}
	free(objs);
	for (unsigned i = 0; i < t->n; i++) {
		int err = rank_victims(t, i, &t->victims[i]);
		if (err)
			return err;
	}
	return 0;
}

int
heist__topology_new(struct topology **out, unsigned *threads, enum heist_pin pin)
{
	*out = NULL;
	struct topology *t = calloc(1, sizeof(*t));
	if (!t)
		return ENOMEM;
	t->pin = pin;
	t->n = *threads;
	if (*threads && pin == HEIST_PIN_NONE && !heist__topology_synthetic) {
		/* Nothing to ask hwloc: loading a topology costs ~3.5 MiB of peak RSS
		 * and a few milliseconds. One flat rank. */
		if (make_flat(&t->flat, t->n)) {
			heist__topology_free(t);
			return ENOMEM;
		}
		*out = t;
		return 0;
	}
	int err = 0;
	if (hwloc_topology_init(&t->topo)) {
		free(t);
		return ENOMEM;
	}
	if (heist__topology_synthetic &&
	    hwloc_topology_set_synthetic(t->topo, heist__topology_synthetic))
		err = EINVAL;
	if (!err && hwloc_topology_load(t->topo))
		err = errno ? errno : EINVAL;
	hwloc_bitmap_t usable = err ? NULL : usable_cpus(t->topo);
	if (!err && !usable)
		err = ENOMEM;
	if (!err && !*threads) {
		unsigned cores = usable_objs(t->topo, HWLOC_OBJ_CORE, usable, NULL);
		*threads = cores ? cores : affinity_count();
		if (*threads > HEIST_MAX_THREADS)
			*threads = HEIST_MAX_THREADS;
	}
	t->n = *threads;
	if (!err)
		err = make_flat(&t->flat, t->n);
	if (!err && pin != HEIST_PIN_NONE)
		err = place_workers(t, usable);
	hwloc_bitmap_free(usable);
	if (err) {
		heist__topology_free(t);
		return err;
	}
	*out = t;
	return 0;
}

void
heist__topology_free(struct topology *t)
{
	if (!t)
		return;
	free_victims(t->victims, t->n);
	free_flat(&t->flat);
	free(t->place);
	if (t->topo)
		hwloc_topology_destroy(t->topo);
	free(t);
}

const struct victims *
heist__topology_victims(const struct topology *t, unsigned i)
{
	return t->victims && i < t->n ? &t->victims[i] : &t->flat;
}

int
heist__topology_bind(struct topology *t, unsigned i)
{
	if (!t || !t->place)
		return 0;
	if (hwloc_set_cpubind(t->topo, t->place[i]->cpuset, HWLOC_CPUBIND_THREAD))
		return errno ? errno : EINVAL;
	return 0;
}

static void
format_cpus(const struct topology *t, unsigned i, char *buf, size_t len)
{
	hwloc_bitmap_list_snprintf(buf, len, t->place[i]->cpuset);
}

bool
heist__topology_pins(const struct topology *t)
{
	return t && t->place;
}

#else /* without hwloc: the affinity mask, PU pinning, one flat rank */

struct topology {
	unsigned n;
	int *cpu;	/* per worker: the CPU it is bound to; NULL unpinned */
	struct victims flat;
};

int
heist__topology_new(struct topology **out, unsigned *threads, enum heist_pin pin)
{
	*out = NULL;
	if (heist__topology_synthetic)
		return EINVAL;	/* synthetic topologies need hwloc */
	struct topology *t = calloc(1, sizeof(*t));
	if (!t)
		return ENOMEM;
	if (!*threads)
		*threads = affinity_count();
	if (*threads > HEIST_MAX_THREADS)
		*threads = HEIST_MAX_THREADS;
	t->n = *threads;
	if (make_flat(&t->flat, t->n)) {
		heist__topology_free(t);
		return ENOMEM;
	}
	cpu_set_t set;
	if (pin != HEIST_PIN_NONE && sched_getaffinity(0, sizeof(set), &set) == 0) {
		int cpus[CPU_SETSIZE], count = 0;
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[count++] = c;
		if (count && !(t->cpu = malloc(sizeof(int) * t->n))) {
			heist__topology_free(t);
			return ENOMEM;
		}
		for (unsigned i = 0; count && i < t->n; i++)
			t->cpu[i] = cpus[t->n <= (unsigned)count ? (size_t)i * count / t->n
								 : i % (unsigned)count];
	}
	*out = t;
	return 0;
}

void
heist__topology_free(struct topology *t)
{
	if (!t)
		return;
	free(t->cpu);
	free_flat(&t->flat);
	free(t);
}

const struct victims *
heist__topology_victims(const struct topology *t, unsigned i)
{
	(void)i;
	return &t->flat;
}

int
heist__topology_bind(struct topology *t, unsigned i)
{
	if (!t || !t->cpu)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(t->cpu[i], &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void
format_cpus(const struct topology *t, unsigned i, char *buf, size_t len)
{
	snprintf(buf, len, "%d", t->cpu[i]);
}

bool
heist__topology_pins(const struct topology *t)
{
	return t && t->cpu;
}
#endif

void
heist__topology_cpus(const struct topology *t, unsigned i, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	if (heist__topology_pins(t))
		format_cpus(t, i, buf, len);
}
