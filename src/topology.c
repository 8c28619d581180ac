/* SPDX-License-Identifier: MIT */
/* topology.c - placement and victim order. With hwloc: the default worker count is
 * the number of cores in hwloc's allowed set that the process's affinity mask
 * touches, or the process's CPU quota where that is fewer (default_threads);
 * HEIST_PIN_CORE gives each worker a core, HEIST_PIN_PU one processing
 * unit, spread evenly over the list in hwloc's logical order (so fewer workers than
 * cores land on different packages); and a worker's victims are grouped by the depth
 * of their common ancestor with it (SMT sibling, shared L2, L3, package or NUMA group,
 * machine), nearest group first. Without hwloc: the affinity mask's CPU count, PU
 * pinning for both policies (cores are unknown), and one flat rank. hwloc's
 * "-1 and errno" convention ends here: everything returns an errno value. */
#include "topology.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

const char *heist__topology_synthetic;

enum { CPU_LIST_MAX = 1024 };	/* CPUs a pool pins to without hwloc, at most */

static unsigned
affinity_count(void)
{
	return heist__cpu_count();
}

/* The default worker count from n CPUs (cores or PUs): no more than the CPU time the
 * process may use where the system caps it (a container's quota, platform.h), since
 * workers beyond it only take turns; at least 1. A synthetic topology (tests) is the
 * machine it describes: no quota. */
static unsigned
default_threads(unsigned n)
{
	unsigned quota = heist__topology_synthetic ? 0 : heist__cpu_quota();
	if (quota && quota < n)
		n = quota;
	return n ? n : 1;
}

/* The flat list: every slot (the workers and the guest slot after them), one rank,
 * in index order. Shared by the workers of an unpinned pool and by the guest slot:
 * each thief skips its own index. */
static void
make_flat(struct victims *v, struct slot_range *all, unsigned n)
{
	*all = (struct slot_range){0, n + 1};
	*v = (struct victims){.order = NULL, .rank = all, .self = {0, 0}, .nranks = 1};
}

#ifdef HEIST_HAVE_HWLOC
#include <hwloc.h>

struct topology {
	hwloc_topology_t topo;
	enum heist_pin pin;
	unsigned n;
	hwloc_obj_t *place;		/* per worker: its core or PU; NULL unpinned */
	hwloc_bitmap_t usable;		/* with place: the CPUs the process may use */
	struct victims *victims;	/* per worker; NULL: everyone uses flat */
	unsigned *order;		/* the slots by place, for victims[i].order */
	struct slot_range *ranges;		/* every worker's rank ranges, one block */
	struct victims flat;
	struct slot_range all;		/* flat's one rank */
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

/* A slot and where it goes in the order by place: sorted by place, then index. */
struct by_place {
	size_t place;
	unsigned slot;
};

static int
cmp_by_place(const void *a, const void *b)
{
	const struct by_place *x = a, *y = b;
	if (x->place != y->place)
		return x->place < y->place ? -1 : 1;
	return (x->slot > y->slot) - (x->slot < y->slot);
}

/* Every worker's ranks, from the tree (topology.h's rings): the positions of the
 * workers under each object form one range, because hwloc's logical order is the
 * tree's depth-first order and workers are sorted by place; a worker's ranks are the
 * ranges of its ancestors that add someone, nearest first, and then the guest slot
 * (position n). kplace[i]: the index of worker i's place in the list of places. */
static int
rank_victims(struct topology *t, const size_t *kplace)
{
	unsigned n = t->n, depth = (unsigned)hwloc_topology_get_depth(t->topo);
	size_t nobjs = 0, *base = malloc(sizeof(size_t) * depth);
	struct slot_range *objr = NULL;	/* per object: its workers' positions */
	struct by_place *sorted = malloc(sizeof(*sorted) * n);
	unsigned *pos = malloc(sizeof(unsigned) * n);
	t->order = malloc(sizeof(unsigned) * (n + 1));
	t->ranges = malloc(sizeof(struct slot_range) * n * (depth + 1));
	int err = ENOMEM;
	if (!base || !sorted || !pos || !t->order || !t->ranges)
		goto out;
	for (unsigned d = 0; d < depth; d++) {
		base[d] = nobjs;
		nobjs += (size_t)hwloc_get_nbobjs_by_depth(t->topo, (int)d);
	}
	objr = malloc(sizeof(*objr) * (nobjs ? nobjs : 1));
	if (!objr)
		goto out;
	for (size_t k = 0; k < nobjs; k++)
		objr[k] = (struct slot_range){UINT32_MAX, 0};

	for (unsigned i = 0; i < n; i++)
		sorted[i] = (struct by_place){kplace[i], i};
	qsort(sorted, n, sizeof(*sorted), cmp_by_place);
	for (unsigned p = 0; p < n; p++) {
		t->order[p] = sorted[p].slot;
		pos[sorted[p].slot] = p;
		for (hwloc_obj_t a = t->place[sorted[p].slot]; a; a = a->parent) {
			struct slot_range *r = &objr[base[a->depth] + a->logical_index];
			if (p < r->lo)
				r->lo = p;
			if (p + 1 > r->hi)
				r->hi = p + 1;
		}
	}
	t->order[n] = n;	/* the guest slot, last */

	for (unsigned i = 0; i < n; i++) {
		struct slot_range *rank = &t->ranges[(size_t)i * (depth + 1)];
		struct slot_range prev = {pos[i], pos[i] + 1};
		unsigned m = 0;
		for (hwloc_obj_t a = t->place[i]; a; a = a->parent) {
			struct slot_range r = objr[base[a->depth] + a->logical_index];
			if (r.hi - r.lo > prev.hi - prev.lo)
				rank[m++] = prev = r;
		}
		rank[m++] = (struct slot_range){prev.lo, n + 1};	/* the guest slot */
		t->victims[i] = (struct victims){.order = t->order, .rank = rank,
						 .self = {pos[i], pos[i] + 1}, .nranks = m};
	}
	err = 0;
out:
	free(objr);
	free(base);
	free(sorted);
	free(pos);
	return err;
}

static int
place_workers(struct topology *t, hwloc_const_bitmap_t usable)
{
	hwloc_obj_type_t type = t->pin == HEIST_PIN_CORE ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
	unsigned count = usable_objs(t->topo, type, usable, NULL);
	if (!count)
		return 0;	/* nothing to pin to: run unpinned */
	hwloc_obj_t *objs = malloc(sizeof(*objs) * count);
	size_t *kplace = malloc(sizeof(size_t) * t->n);
	t->place = malloc(sizeof(*t->place) * t->n);
	t->victims = calloc(t->n, sizeof(*t->victims));
	if (!objs || !kplace || !t->place || !t->victims) {
		free(objs);
		free(kplace);
		return ENOMEM;
	}
	usable_objs(t->topo, type, usable, objs);
	for (unsigned i = 0; i < t->n; i++) {
		/* Spread: with fewer workers than places, every count/n-th place. */
		kplace[i] = t->n <= count ? (size_t)i * count / t->n : i % count;
		t->place[i] = objs[kplace[i]];
	}
	free(objs);
	int err = rank_victims(t, kplace);
	free(kplace);
	return err;
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
		make_flat(&t->flat, &t->all, t->n);
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
	errno = 0;	/* hwloc sets it on failure, mostly; a stale value is no answer */
	if (!err && hwloc_topology_load(t->topo)) {
		if (heist__topology_synthetic) {
			err = errno ? errno : EINVAL;
		} else {
			/* No topology to be had (a sandbox that hides /sys, say): as
			 * without hwloc, the affinity mask's CPUs, unpinned, one rank. */
			hwloc_topology_destroy(t->topo);
			t->topo = NULL;
			if (!*threads)
				*threads = default_threads(affinity_count());
			if (*threads > HEIST_MAX_THREADS)
				*threads = HEIST_MAX_THREADS;
			t->n = *threads;
			make_flat(&t->flat, &t->all, t->n);
			*out = t;
			return 0;
		}
	}
	hwloc_bitmap_t usable = err ? NULL : usable_cpus(t->topo);
	if (!err && !usable)
		err = ENOMEM;
	if (!err && !*threads) {
		unsigned cores = usable_objs(t->topo, HWLOC_OBJ_CORE, usable, NULL);
		*threads = default_threads(cores ? cores : affinity_count());
		if (*threads > HEIST_MAX_THREADS)
			*threads = HEIST_MAX_THREADS;
	}
	t->n = *threads;
	make_flat(&t->flat, &t->all, t->n);
	if (!err && pin != HEIST_PIN_NONE)
		err = place_workers(t, usable);
	if (t->place)
		t->usable = usable;	/* kept: a core's binding is its usable CPUs only */
	else
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
	free(t->victims);
	free(t->order);
	free(t->ranges);
	free(t->place);
	hwloc_bitmap_free(t->usable);
	if (t->topo)
		hwloc_topology_destroy(t->topo);
	free(t);
}

const struct victims *
heist__topology_victims(const struct topology *t, unsigned i)
{
	return t->victims && i < t->n ? &t->victims[i] : &t->flat;
}

/* Worker i's CPUs: its core's or PU's that the process may use (a core's sibling that
 * taskset left out is not one), or NULL without memory. Freed by the caller. */
static hwloc_bitmap_t
place_cpus(const struct topology *t, unsigned i)
{
	hwloc_bitmap_t set = hwloc_bitmap_dup(t->place[i]->cpuset);
	if (set && t->usable)
		hwloc_bitmap_and(set, set, t->usable);
	return set;
}

int
heist__topology_bind(struct topology *t, unsigned i)
{
	if (!t || !t->place)
		return 0;
	hwloc_bitmap_t set = place_cpus(t, i);
	if (!set)
		return ENOMEM;
	errno = 0;
	int err = hwloc_set_cpubind(t->topo, set, HWLOC_CPUBIND_THREAD) ? (errno ? errno : EINVAL)
									: 0;
	hwloc_bitmap_free(set);
	return err;
}

static void
format_cpus(const struct topology *t, unsigned i, char *buf, size_t len)
{
	hwloc_bitmap_t set = place_cpus(t, i);
	if (set)
		hwloc_bitmap_list_snprintf(buf, len, set);
	else if (len)
		buf[0] = '\0';
	hwloc_bitmap_free(set);
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
	struct slot_range all;	/* flat's one rank */
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
		*threads = default_threads(affinity_count());
	if (*threads > HEIST_MAX_THREADS)
		*threads = HEIST_MAX_THREADS;
	t->n = *threads;
	make_flat(&t->flat, &t->all, t->n);
	if (pin != HEIST_PIN_NONE) {
		int cpus[CPU_LIST_MAX];
		unsigned count = heist__cpu_list(cpus, CPU_LIST_MAX);
		if (count && !(t->cpu = malloc(sizeof(int) * t->n))) {
			heist__topology_free(t);
			return ENOMEM;
		}
		for (unsigned i = 0; count && i < t->n; i++)
			t->cpu[i] = cpus[t->n <= count ? (size_t)i * count / t->n : i % count];
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
	return heist__cpu_pin(t->cpu[i]);
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
