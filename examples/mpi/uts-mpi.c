/* SPDX-License-Identifier: MIT */
/* uts-mpi.c - W3 of docs/workloads.md, the unbalanced tree search, across MPI ranks:
 * how a C program uses heist on more than one machine. Each rank runs one heist pool.
 * Every rank expands the top of the tree (SPLIT_DEPTH levels) by itself; the nodes of
 * the level below are dealt out to the ranks (node i to rank i mod P); each rank
 * searches its subtrees with fork-join on its pool; and MPI_Reduce adds up the counts
 * on rank 0, which checks them against the exact answers of workloads.md.
 *
 *     mpirun -np 2 build/examples/mpi/example-uts-mpi [seed [threads [split_depth]]]
 *
 * seed: the root seed, 3 (small, the default: 1,028,121 nodes) or 2 (the headline tree,
 * 5,083,761 nodes); another seed runs without a check. threads: each rank's pool size;
 * 0 (the default) is heist's default, one worker per core the rank may run on, so a
 * rank that mpirun binds to a few cores (--bind-to, --map-by) gets as many workers.
 * docs/scaling.md says how to run it on a cluster.
 *
 * The split is static, and UTS is the hard case for that: the tree is thin and deep,
 * and nearly all of it hangs from a few lines that branch rarely. Dealing out the
 * root's 2000 children gave one of two ranks 98% of seed 2's nodes; the frontier
 * 256 levels down splits it 52:48 (docs/scaling.md has the measurements), at the cost
 * of every rank expanding those levels itself (a few percent of the tree). Rank 0
 * prints each rank's nodes and time: how far apart they are is what balancing across
 * ranks (work stealing between processes, e.g. with MPI one-sided calls) would win
 * back. Within a rank, heist balances the rank's share over its workers.
 *
 * The thread level. Only the main thread of each rank calls MPI, and only outside the
 * pool's work (before heist_run and after it returns); heist's worker threads never do.
 * That is MPI_THREAD_FUNNELED: other threads exist, one makes the MPI calls.
 * MPI_THREAD_SINGLE would promise that the process has one thread, which is false
 * once the pool starts; MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE would be needed
 * only if tasks called MPI themselves, and cost locking inside MPI for nothing here. */
#include <heist/heist.h>
#include <mpi.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

enum { ROOT_CHILDREN = 2000, CHILDREN = 8 };
enum { SPLIT_DEPTH = 256 };	/* levels every rank expands before the split */

struct node {
	uint64_t seed;
	int depth;
	uint64_t nodes, sum;	/* the subtree's count and sum of h, mod 2^64 */
};

static uint64_t
mix(uint64_t z)
{
	z += 0x9E3779B97F4A7C15u;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
	return z ^ (z >> 31);
}

/* The node's own work: count it, and return how many children it has. */
static int
visit(struct node *n)
{
	uint64_t h = n->seed;
	for (int i = 0; i < 64; i++)
		h = mix(h);
	n->nodes = 1;
	n->sum = h;
	if (n->depth == 0)
		return ROOT_CHILDREN;
	return (double)(h >> 11) * 0x1p-53 < 0.124875 ? CHILDREN : 0;
}

static void
make_child(struct node *kid, const struct node *parent, int i)
{
	kid->seed = mix(parent->seed ^ (0x9E3779B97F4A7C15u * (uint64_t)(i + 1)));
	kid->depth = parent->depth + 1;
}

/* A node below the root: its children are tasks, synced in reverse order. */
static int
search(void *arg)
{
	struct node *n = arg;
	int k = visit(n);
	struct node kid[CHILDREN];
	heist_task t[CHILDREN];

	for (int i = 0; i < k; i++) {
		make_child(&kid[i], n, i);
		heist_spawn(&t[i], search, &kid[i]);
	}
	for (int i = k - 1; i >= 0; i--) {
		heist_sync(&t[i]);
		n->nodes += kid[i].nodes;
		n->sum += kid[i].sum;
	}
	return 0;
}

/* This rank's part of the tree. Every rank expands the top SPLIT_DEPTH levels itself,
 * breadth first (the same nodes on every rank; rank 0 counts them), and then searches
 * the nodes of the level below, the frontier, dealt out by index: node i to rank
 * i mod P, each a task on the rank's pool. */
struct share {
	uint64_t seed;
	int rank, ranks, split_depth;
	uint64_t nodes, sum;	/* the rank's part */
};

/* A growable array of nodes. */
struct level {
	struct node *v;
	size_t n, cap;
};

static int
level_add(struct level *l, const struct node *x)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4096;
		struct node *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return 1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *x;
	return 0;
}

static int
search_share(void *arg)
{
	struct share *s = arg;
	struct level cur = {0}, next = {0};
	struct node root = {.seed = s->seed, .depth = 0};
	int err = level_add(&cur, &root);

	for (int d = 0; d < s->split_depth && !err && cur.n; d++) {
		next.n = 0;
		for (size_t i = 0; i < cur.n && !err; i++) {
			struct node *n = &cur.v[i];
			int k = visit(n);
			if (s->rank == 0) {
				s->nodes += n->nodes;
				s->sum += n->sum;
			}
			for (int c = 0; c < k && !err; c++) {
				struct node kid;
				make_child(&kid, n, c);
				err = level_add(&next, &kid);
			}
		}
		struct level t = cur;
		cur = next;
		next = t;
	}
	/* cur is the frontier: search this rank's share of it. */
	size_t mine = 0;
	for (size_t i = (size_t)s->rank; i < cur.n; i += (size_t)s->ranks)
		cur.v[mine++] = cur.v[i];
	heist_task *t = err ? NULL : calloc(mine ? mine : 1, sizeof(*t));
	if (!t)
		err = 1;
	for (size_t j = 0; j < mine && !err; j++)
		heist_spawn(&t[j], search, &cur.v[j]);
	for (size_t j = mine; j-- > 0 && !err;) {
		heist_sync(&t[j]);
		s->nodes += cur.v[j].nodes;
		s->sum += cur.v[j].sum;
	}
	free(t);
	free(cur.v);
	free(next.v);
	return err;
}

int
main(int argc, char **argv)
{
	int provided, rank, ranks;
	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
		return 1;
	if (provided < MPI_THREAD_FUNNELED) {
		fprintf(stderr, "uts-mpi: this MPI gives thread level %d, below FUNNELED\n",
			provided);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);

	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 3;
	unsigned threads = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 0;
	int split_depth = argc > 3 ? atoi(argv[3]) : SPLIT_DEPTH;
	struct heist_config cfg = {.threads = threads};
	heist_pool *pool;
	int err = heist_pool_create(&pool, &cfg);
	if (err) {
		fprintf(stderr, "uts-mpi: rank %d: heist_pool_create: error %d\n", rank, err);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	unsigned workers = heist_pool_size(pool);

	double t0 = MPI_Wtime();
	struct share s = {.seed = seed, .rank = rank, .ranks = ranks, .split_depth = split_depth};
	err = heist_run(pool, search_share, &s);
	heist_pool_destroy(pool);
	if (err) {
		fprintf(stderr, "uts-mpi: rank %d: the search failed (%d)\n", rank, err);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	double mine = MPI_Wtime() - t0;

	/* Unsigned sums wrap mod 2^64, as the workload's sum is defined. */
	uint64_t local[2] = {s.nodes, s.sum}, total[2] = {0, 0};
	double slowest = 0;
	unsigned all_workers = 0;
	MPI_Reduce(local, total, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Reduce(&workers, &all_workers, 1, MPI_UNSIGNED, MPI_SUM, 0, MPI_COMM_WORLD);
	/* Each rank's share, for the balance line (rank 0 only allocates). */
	uint64_t *nodes = rank == 0 ? calloc((size_t)ranks, sizeof(uint64_t)) : NULL;
	double *secs = rank == 0 ? calloc((size_t)ranks, sizeof(double)) : NULL;
	MPI_Gather(&s.nodes, 1, MPI_UINT64_T, nodes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	MPI_Gather(&mine, 1, MPI_DOUBLE, secs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

	int status = 0;
	if (rank == 0) {
		printf("uts seed %" PRIu64 ": %" PRIu64 " nodes, sum 0x%016" PRIx64 " (%d ranks, "
		       "%u workers in all, %.3f s)\n", seed, total[0], total[1], ranks,
		       all_workers, slowest);
		for (int r = 0; nodes && secs && r < ranks; r++)
			printf("  rank %d: %" PRIu64 " nodes in %.3f s\n", r, nodes[r], secs[r]);
		static const struct {
			uint64_t seed, nodes, sum;
		} known[] = {{3, 1028121, 0x0a16600544d2c9d0u}, {2, 5083761, 0x35a6761379d0cd44u}};
		for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
			if (known[i].seed != seed)
				continue;
			if (total[0] != known[i].nodes || total[1] != known[i].sum) {
				fprintf(stderr, "uts-mpi: WRONG: expected %" PRIu64 " nodes, sum "
					"0x%016" PRIx64 "\n", known[i].nodes, known[i].sum);
				status = 1;
			} else {
				printf("exact: matches docs/workloads.md\n");
			}
		}
	}
	free(nodes);
	free(secs);
	MPI_Finalize();
	return status;
}
