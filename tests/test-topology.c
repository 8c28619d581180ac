/* SPDX-License-Identifier: MIT */
/* test-topology.c - placement and victim ranks on synthetic hwloc topologies, up to
 * machines of 64 and 256 PUs (binding on a synthetic topology succeeds without effect,
 * so the whole path runs on any machine), pinning on the real machine, and the affinity
 * mask and a cgroup's CPU quota bounding the default worker count. Helpers: common.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#if defined(_WIN32)
#include <windows.h>
#else
#include <sched.h>
#endif
#include <string.h>

#include "common.h"
#include "topology.h"

enum { MAXW = 64 };

struct layout {
	struct heist_placement place[MAXW];
	unsigned victims[MAXW][MAXW], ranks[MAXW][MAXW];
};

#ifdef HEIST_HAVE_HWLOC
#define NEEDS_HWLOC() ((void)0)
#else
#define NEEDS_HWLOC() skip_because("synthetic topologies need hwloc")
#endif

static void
read_layout(heist_pool *pool, struct layout *l)
{
	unsigned n = heist_pool_size(pool);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(heist_pool_placement(pool, i, &l->place[i], l->victims[i],
						      l->ranks[i], MAXW),
				 0);
}

/* A pool on the synthetic topology desc, its layout read into l. */
static heist_pool *
synthetic_pool(const char *desc, unsigned threads, enum heist_pin pin, struct layout *l)
{
	heist__topology_synthetic = desc;
	struct heist_config cfg = {.threads = threads, .pin = pin};
	heist_pool *pool = NULL;
	int err = heist_pool_create(&pool, &cfg);
	heist__topology_synthetic = NULL;
	assert_int_equal(err, 0);
	read_layout(pool, l);
	return pool;
}

/* Every other worker appears exactly once, ranks never decrease. */
static void
check_victim_lists(const struct layout *l, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int seen[MAXW] = {0};
		for (unsigned k = 0; k + 1 < n; k++) {
			unsigned v = l->victims[i][k];
			assert_true(v < n);
			assert_int_not_equal(v, i);
			seen[v]++;
			if (k)
				assert_true(l->ranks[i][k] >= l->ranks[i][k - 1]);
			assert_true(l->ranks[i][k] < l->place[i].nranks);
		}
		for (unsigned v = 0; v < n; v++)
			assert_int_equal(seen[v], v == i ? 0 : 1);
	}
}

/* The set of victims of worker i in rank r, as a bit mask. */
static uint64_t
rank_set(const struct layout *l, unsigned n, unsigned i, unsigned r)
{
	uint64_t m = 0;
	for (unsigned k = 0; k + 1 < n; k++)
		if (l->ranks[i][k] == r)
			m |= (uint64_t)1 << l->victims[i][k];
	return m;
}

static void
smt_siblings_come_first(void **state)
{
	(void)state;
	NEEDS_HWLOC();
	static struct layout l;
	/* 2 packages, each 1 L3 over 2 L2 over 1 core of 2 PUs: 8 PUs. */
	heist_pool *pool = synthetic_pool("pack:2 l3:1 l2:2 core:1 pu:2", 8, HEIST_PIN_PU, &l);
	check_victim_lists(&l, 8);
	for (unsigned i = 0; i < 8; i++) {
		char want[8];
		snprintf(want, sizeof(want), "%u", i);	/* PU i, in logical order */
		assert_string_equal(l.place[i].cpus, want);
		assert_int_equal(l.place[i].bound, 1);
		assert_int_equal(l.place[i].nranks, 3);
		unsigned sib = i ^ 1, pkg = i / 4 * 4;
		assert_int_equal(rank_set(&l, 8, i, 0), (uint64_t)1 << sib);
		uint64_t same_l3 = ((uint64_t)0xf << pkg) & ~((uint64_t)3 << (i & ~1u));
		assert_int_equal(rank_set(&l, 8, i, 1), same_l3);
		assert_int_equal(rank_set(&l, 8, i, 2), (uint64_t)0xff & ~((uint64_t)0xf << pkg));
	}
	heist_pool_destroy(pool);

	/* Four workers pinned to cores on the same machine: one per core, in order. */
	pool = synthetic_pool("pack:2 l3:1 l2:2 core:1 pu:2", 4, HEIST_PIN_CORE, &l);
	check_victim_lists(&l, 4);
	const char *cores[] = {"0-1", "2-3", "4-5", "6-7"};
	for (unsigned i = 0; i < 4; i++) {
		assert_string_equal(l.place[i].cpus, cores[i]);
		assert_int_equal(l.place[i].nranks, 2);
		assert_int_equal(rank_set(&l, 4, i, 0), (uint64_t)1 << (i ^ 1));
	}
	heist_pool_destroy(pool);
}

static void
two_sockets_rank_the_own_socket_first(void **state)
{
	(void)state;
	NEEDS_HWLOC();
	static struct layout l;
	heist_pool *pool = synthetic_pool("pack:2 core:4 pu:1", 8, HEIST_PIN_CORE, &l);
	check_victim_lists(&l, 8);
	for (unsigned i = 0; i < 8; i++) {
		char want[8];
		snprintf(want, sizeof(want), "%u", i);
		assert_string_equal(l.place[i].cpus, want);
		assert_int_equal(l.place[i].nranks, 2);
		uint64_t own = (uint64_t)0xf << (i / 4 * 4);
		assert_int_equal(rank_set(&l, 8, i, 0), own & ~((uint64_t)1 << i));
		assert_int_equal(rank_set(&l, 8, i, 1), 0xff & ~own);
	}
	heist_pool_destroy(pool);

	/* Two workers spread over the packages, not packed on the first. */
	pool = synthetic_pool("pack:2 core:4 pu:1", 2, HEIST_PIN_CORE, &l);
	assert_string_equal(l.place[0].cpus, "0");
	assert_string_equal(l.place[1].cpus, "4");
	heist_pool_destroy(pool);
}

/* More workers than places: worker i on core i mod 4, so the workers sorted by place
 * (the order the ranks are ranges of) are not in index order. The worker on the same
 * core comes first, then the rest of the package, then the other package. */
static void
more_workers_than_cores_share_a_core_first(void **state)
{
	(void)state;
	NEEDS_HWLOC();
	static struct layout l;
	heist_pool *pool = synthetic_pool("pack:2 core:2 pu:1", 12, HEIST_PIN_CORE, &l);
	check_victim_lists(&l, 12);
	for (unsigned i = 0; i < 12; i++) {
		unsigned core = i % 4;
		uint64_t on_core = 0, in_pack = 0, all = 0xfff;
		for (unsigned j = 0; j < 12; j++) {
			on_core |= (uint64_t)(j % 4 == core) << j;
			in_pack |= (uint64_t)(j % 4 / 2 == core / 2) << j;
		}
		char want[8];
		snprintf(want, sizeof(want), "%u", core);
		assert_string_equal(l.place[i].cpus, want);
		assert_int_equal(l.place[i].nranks, 3);
		assert_int_equal(rank_set(&l, 12, i, 0), on_core & ~((uint64_t)1 << i));
		assert_int_equal(rank_set(&l, 12, i, 1), in_pack & ~on_core);
		assert_int_equal(rank_set(&l, 12, i, 2), all & ~in_pack);
	}
	heist_pool_destroy(pool);
}

static void
four_numa_nodes_rank_the_own_node_first(void **state)
{
	(void)state;
	NEEDS_HWLOC();
	static struct layout l;
	heist_pool *pool = synthetic_pool("node:4 core:8 pu:1", 32, HEIST_PIN_CORE, &l);
	check_victim_lists(&l, 32);
	for (unsigned i = 0; i < 32; i++) {
		assert_int_equal(l.place[i].nranks, 2);
		uint64_t own = (uint64_t)0xff << (i / 8 * 8);
		assert_int_equal(rank_set(&l, 32, i, 0), own & ~((uint64_t)1 << i));
		assert_int_equal(rank_set(&l, 32, i, 1), 0xffffffffu & ~own);
	}
	heist_pool_destroy(pool);
}

/* Machines of 64 and 256 PUs, a worker on each PU (worker i on PU i, in logical
 * order): every worker's victims come in the ranks of the tree above it, nearest
 * first. Checked index by index, so no bit masks: what is expected of victim v is a
 * function of the two PU numbers. */
enum { BIGW = 256 };

static struct {
	struct heist_placement place[BIGW];
	unsigned victims[BIGW][BIGW], ranks[BIGW][BIGW];
} big;

/* The rank of PU v seen from PU i when PUs come in groups of sizes[0] < sizes[1] <
 * ... (core, then each shared level): the first level whose group holds both. */
static unsigned
expected_rank(unsigned i, unsigned v, const unsigned *sizes, unsigned levels)
{
	for (unsigned r = 0; r < levels; r++)
		if (i / sizes[r] == v / sizes[r])
			return r;
	return levels;
}

static void
check_big(const char *desc, unsigned n, const unsigned *sizes, unsigned levels)
{
	heist__topology_synthetic = desc;
	struct heist_config cfg = {.threads = n, .pin = HEIST_PIN_PU};
	heist_pool *pool = NULL;
	int err = heist_pool_create(&pool, &cfg);
	heist__topology_synthetic = NULL;
	assert_int_equal(err, 0);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(heist_pool_placement(pool, i, &big.place[i], big.victims[i],
						      big.ranks[i], BIGW), 0);
		char want[8];
		snprintf(want, sizeof(want), "%u", i);
		assert_string_equal(big.place[i].cpus, want);
		assert_int_equal(big.place[i].nranks, levels + 1);
		unsigned seen[BIGW] = {0};
		for (unsigned k = 0; k + 1 < n; k++) {
			unsigned v = big.victims[i][k];
			assert_true(v < n && v != i);
			seen[v]++;
			assert_int_equal(big.ranks[i][k], expected_rank(i, v, sizes, levels));
			if (k)
				assert_true(big.ranks[i][k] >= big.ranks[i][k - 1]);
		}
		for (unsigned v = 0; v < n; v++)
			assert_int_equal(seen[v], v == i ? 0 : 1);
	}
	heist_pool_destroy(pool);
}

static void
machines_of_64_and_256_pus_rank_by_the_tree(void **state)
{
	(void)state;
	NEEDS_HWLOC();
	/* 2 packages x 16 cores x 2 PUs: the SMT sibling, the package, the rest. */
	static const unsigned sizes64[] = {2, 32};
	check_big("pack:2 core:16 pu:2", 64, sizes64, 2);
	/* 4 packages x 2 L3 x 16 cores x 2 PUs: sibling, L3, package, the rest. */
	static const unsigned sizes256[] = {2, 32, 64};
	check_big("pack:4 l3:2 core:16 pu:2", 256, sizes256, 3);
}

static void
unpinned_pools_have_one_flat_rank(void **state)
{
	(void)state;
	NEEDS_HWLOC();
	static struct layout l;
	heist_pool *pool = synthetic_pool("pack:2 core:4 pu:1", 8, HEIST_PIN_NONE, &l);
	check_victim_lists(&l, 8);
	for (unsigned i = 0; i < 8; i++) {
		assert_int_equal(l.place[i].nranks, 1);
		assert_int_equal(l.place[i].bound, 0);
		assert_string_equal(l.place[i].cpus, "");
	}
	heist_pool_destroy(pool);
}

#if !defined(_WIN32)
static int
where_am_i(void *arg)
{
	cpu_set_t *set = arg;
	return sched_getaffinity(0, sizeof(*set), set) ? errno : 0;
}

#endif

static void
pinning_to_pus_gives_one_cpu_each(void **state)
{
	(void)state;
#if defined(_WIN32)
	skip_because("reads each worker's CPU mask with Linux's sched_getaffinity");
#else
	struct heist_config cfg = {.threads = 2, .pin = HEIST_PIN_PU};
	heist_pool *pool;
	assert_int_equal(heist_pool_create(&pool, &cfg), 0);
	struct heist_stats s;
	assert_int_equal(heist_pool_stats(pool, &s), 0);
	if (s.bind_failures)
		skip_because("binding is not allowed here (the pool still works)");
	/* Each worker's own affinity, read inside a task on it: tasks submitted from a
	 * worker stay on it unless stolen, so use heist_run per worker until both seen. */
	cpu_set_t seen[2];
	int found[2] = {0, 0};
	for (int tries = 0; tries < 100000 && !(found[0] && found[1]); tries++) {
		cpu_set_t set;
		heist_future *f;
		assert_int_equal(heist_submit(pool, where_am_i, &set, &f), 0);
		assert_int_equal(heist_future_wait(f), 0);
		heist_future_release(f);
		int cpus = CPU_COUNT(&set);
		assert_int_equal(cpus, 1);
		for (int c = 0; c < 2; c++)
			if (CPU_ISSET(c, &set) && !found[c]) {
				found[c] = 1;
				seen[c] = set;
			}
	}
	(void)seen;
	struct heist_placement p0, p1;
	assert_int_equal(heist_pool_placement(pool, 0, &p0, NULL, NULL, 0), 0);
	assert_int_equal(heist_pool_placement(pool, 1, &p1, NULL, NULL, 0), 0);
	assert_int_equal(p0.bound, 1);
	assert_string_not_equal(p0.cpus, p1.cpus);
	heist_pool_destroy(pool);
#endif
}

#if defined(_WIN32)
/* Windows: the default worker count is the process's affinity mask's (a thread has no
 * mask of its own to read): the whole test process is narrowed to one CPU, then put
 * back. */
static void *
create_under_one_cpu(void *arg)
{
	(void)arg;
	DWORD_PTR process, system;
	if (!GetProcessAffinityMask(GetCurrentProcess(), &process, &system) || !process)
		return (void *)(intptr_t)-1;
	if (!SetProcessAffinityMask(GetCurrentProcess(), process & -process))
		return (void *)(intptr_t)-1;
	heist_pool *pool;
	int err = heist_pool_create(&pool, NULL);
	SetProcessAffinityMask(GetCurrentProcess(), process);
	if (err)
		return (void *)(intptr_t)-2;
	unsigned n = heist_pool_size(pool);
	heist_pool_destroy(pool);
	return (void *)(intptr_t)n;
}
#else
static void *
create_under_one_cpu(void *arg)
{
	(void)arg;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return (void *)(intptr_t)-1;
	heist_pool *pool;
	if (heist_pool_create(&pool, NULL))
		return (void *)(intptr_t)-2;
	unsigned n = heist_pool_size(pool);
	heist_pool_destroy(pool);
	return (void *)(intptr_t)n;
}
#endif

static void
affinity_mask_bounds_the_default_worker_count(void **state)
{
	(void)state;
	pthread_t th;
	void *ret;
	/* In a thread of its own, so the test process keeps its mask. */
	assert_int_equal(pthread_create(&th, NULL, create_under_one_cpu, NULL), 0);
	assert_int_equal(pthread_join(th, &ret), 0);
	assert_int_equal((intptr_t)ret, 1);
}

#if defined(HEIST_PLATFORM_LINUX)
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* linux/system.c: heist__cpu_quota, reading every file under prefix. */
unsigned heist__cpu_quota_under(const char *prefix);

/* Write text to prefix/rel, making its directories. */
static void
put_file(const char *prefix, const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", prefix, rel);
	for (char *p = path + strlen(prefix) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		assert_true(mkdir(path, 0700) == 0 || errno == EEXIST);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void
remove_tree(const char *prefix)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", prefix);
	assert_int_equal(system(cmd), 0);
}
#endif

/* The cgroup quota, from fake /proc and /sys trees: v2 (the smallest quota from the
 * process's cgroup up to the mount, rounded up), v1 (cpu,cpuacct mounted at a
 * container's own cgroup), none ("max", -1, no files), and the real machine's, which
 * only bounds. */
static void
cgroup_quotas_bound_the_default_worker_count(void **state)
{
	(void)state;
#if !defined(HEIST_PLATFORM_LINUX)
	skip_because("cgroups are Linux's");
#else
	char v2[] = "/tmp/heist-quota-XXXXXX";
	assert_non_null(mkdtemp(v2));
	put_file(v2, "proc/self/cgroup", "0::/user.slice/app.scope\n");
	put_file(v2, "proc/self/mountinfo",
		 "22 1 8:1 / / rw,relatime - ext4 /dev/vda1 rw\n"
		 "30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n");
	assert_int_equal(heist__cpu_quota_under(v2), 0);	/* no cpu.max anywhere */
	put_file(v2, "sys/fs/cgroup/user.slice/app.scope/cpu.max", "max 100000\n");
	put_file(v2, "sys/fs/cgroup/user.slice/cpu.max", "250000 100000\n");
	assert_int_equal(heist__cpu_quota_under(v2), 3);	/* 2.5 CPUs, from the parent */
	put_file(v2, "sys/fs/cgroup/user.slice/app.scope/cpu.max", "50000 100000\n");
	assert_int_equal(heist__cpu_quota_under(v2), 1);	/* the smaller, the own */
	put_file(v2, "sys/fs/cgroup/user.slice/app.scope/cpu.max", "400000 100000\n");
	assert_int_equal(heist__cpu_quota_under(v2), 3);	/* the parent's still */
	remove_tree(v2);

	char v1[] = "/tmp/heist-quota-XXXXXX";
	assert_non_null(mkdtemp(v1));
	put_file(v1, "proc/self/cgroup",
		 "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
	put_file(v1, "proc/self/mountinfo",
		 "40 30 0:30 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup "
		 "rw,cpu,cpuacct\n"
		 "41 30 0:31 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n");
	put_file(v1, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	put_file(v1, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
	put_file(v1, "sys/fs/cgroup/memory/cpu.cfs_quota_us", "100000\n");	/* not cpu */
	put_file(v1, "sys/fs/cgroup/memory/cpu.cfs_period_us", "100000\n");
	assert_int_equal(heist__cpu_quota_under(v1), 0);
	put_file(v1, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "150000\n");
	assert_int_equal(heist__cpu_quota_under(v1), 2);
	remove_tree(v1);

	assert_int_equal(heist__cpu_quota_under("/nonexistent"), 0);

	/* The real machine: a default pool has no more workers than the quota allows. */
	unsigned quota = heist__cpu_quota_under("");
	heist_pool *pool;
	assert_int_equal(heist_pool_create(&pool, NULL), 0);
	assert_true(heist_pool_size(pool) >= 1);
	if (quota)
		assert_true(heist_pool_size(pool) <= quota);
	heist_pool_destroy(pool);
#endif
}

static void
bad_synthetic_topology_is_einval(void **state)
{
	(void)state;
	NEEDS_HWLOC();
	heist__topology_synthetic = "no such thing:3";
	heist_pool *pool = (heist_pool *)1;
	assert_int_equal(heist_pool_create(&pool, NULL), EINVAL);
	assert_null(pool);
	heist__topology_synthetic = NULL;
	struct heist_placement p;
	assert_int_equal(heist_pool_placement(NULL, 0, &p, NULL, NULL, 0), EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(smt_siblings_come_first),
		cmocka_unit_test(two_sockets_rank_the_own_socket_first),
		cmocka_unit_test(more_workers_than_cores_share_a_core_first),
		cmocka_unit_test(four_numa_nodes_rank_the_own_node_first),
		cmocka_unit_test(machines_of_64_and_256_pus_rank_by_the_tree),
		cmocka_unit_test(unpinned_pools_have_one_flat_rank),
		cmocka_unit_test(pinning_to_pus_gives_one_cpu_each),
		cmocka_unit_test(affinity_mask_bounds_the_default_worker_count),
		cmocka_unit_test(cgroup_quotas_bound_the_default_worker_count),
		cmocka_unit_test(bad_synthetic_topology_is_einval),
	};
	return RUN_TESTS(tests);
}
