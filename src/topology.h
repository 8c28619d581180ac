/* SPDX-License-Identifier: MIT */
/* topology.h - where workers run and whom they steal from: the worker count for
 * threads == 0, each worker's CPU set under a pin policy, and each worker's victims
 * ranked by distance (hwloc), or one flat rank without hwloc or without pinning. The
 * steal loop over them is steal.c's. */
#ifndef HEIST_TOPOLOGY_H
#define HEIST_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>

#include "heist/heist.h"

struct topology;

/* A range of positions [lo, hi) in a victims' order. */
struct slot_range {
	unsigned lo, hi;
};

/* Victims of one thief, nearest rank first. Slots (workers, then the guest slot at
 * index n) are listed once per pool in `order`, by their place in the machine (NULL:
 * position p is slot p); every worker under one topology object then has a
 * contiguous range of positions. The ranges rank[0] ⊂ rank[1] ⊂ ... nest, and rank k
 * is rank[k] less rank[k - 1] (less `self` for k == 0): a ring around the thief. So a
 * worker's ranks take nranks ranges, not a list of every other worker: O(workers x
 * tree depth) for a pool, not O(workers^2). A ring may hold the thief's own slot (the
 * flat list holds every slot): thieves skip it. */
struct victims {
	const unsigned *order;
	const struct slot_range *rank;
	struct slot_range self;	/* inside rank[0]: empty, or the thief's own position */
	unsigned nranks;
};

/* The k-th slot of rank r's ring (0 <= k < heist__ring_size(v, r)), in position
 * order: the part of rank[r] below the nearer ranks, then the part above them. */
static inline struct slot_range
heist__ring_inner(const struct victims *v, unsigned r)
{
	return r ? v->rank[r - 1] : v->self;
}

static inline unsigned
heist__ring_size(const struct victims *v, unsigned r)
{
	struct slot_range in = heist__ring_inner(v, r);
	return (v->rank[r].hi - v->rank[r].lo) - (in.hi - in.lo);
}

static inline unsigned
heist__ring_slot(const struct victims *v, unsigned r, unsigned k)
{
	struct slot_range out = v->rank[r], in = heist__ring_inner(v, r);
	unsigned left = in.lo - out.lo;
	unsigned p = k < left ? out.lo + k : in.hi + (k - left);
	return v->order ? v->order[p] : p;
}

/* Tests only: an hwloc synthetic description ("pack:2 core:4 pu:1") to load instead
 * of the machine's topology, for the pools created while it is set. */
extern const char *heist__topology_synthetic;

/* *threads == 0: fill in the default. Returns 0, ENOMEM, or EINVAL for a synthetic
 * description hwloc rejects. */
int heist__topology_new(struct topology **out, unsigned *threads, enum heist_pin pin);
void heist__topology_free(struct topology *t);

/* Victims of slot i: ranked for a worker of a pinned pool, else the flat list of
 * every slot, one rank (choose uniformly at random). Never NULL. */
const struct victims *heist__topology_victims(const struct topology *t, unsigned i);

/* The calling thread is worker i: bind it. 0 when bound or not pinned, else errno. */
int heist__topology_bind(struct topology *t, unsigned i);

/* Worker i's CPU set as a list ("0-3,8"), "" when unpinned. */
void heist__topology_cpus(const struct topology *t, unsigned i, char *buf, size_t len);

/* Whether this pool pins its workers. */
bool heist__topology_pins(const struct topology *t);

#endif
