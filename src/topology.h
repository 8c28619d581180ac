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

/* Victims of one thief: slot indices (workers, then the guest slot at index n),
 * nearest rank first; rank k ends at order[rank_end[k]]. A list may hold the thief's
 * own index (the flat one holds every slot): thieves skip it. */
struct victims {
	unsigned *order;
	unsigned *rank_end;
	unsigned nranks;
};

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
