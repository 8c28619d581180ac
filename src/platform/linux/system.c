/* SPDX-License-Identifier: MIT */
/* linux/system.c - the parts of platform.h that Linux does its own way: the affinity
 * mask (sched_getaffinity, what taskset and cgroups' cpusets set) for the CPU count and
 * list, the cgroups' CPU quota (v2 cpu.max, v1 cpu.cfs_quota_us, from the process's
 * cgroup up to its hierarchy's mount, as /proc/self/cgroup and mountinfo name them),
 * pthread_setaffinity_np for pinning, pthread_setname_np (15 bytes) for names,
 * prctl's timer slack for precise timeouts, and /proc/self/comm for the program's name. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../platform.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

void
heist__thread_name(const char *name)
{
	char short_name[16];	/* the kernel keeps 15 bytes and refuses more */
	snprintf(short_name, sizeof(short_name), "%s", name);
	pthread_setname_np(pthread_self(), short_name);
}

void
heist__thread_precise_timeouts(void)
{
	int saved = errno;
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	errno = saved;
}

unsigned
heist__cpu_count(void)
{
	int saved = errno;
	cpu_set_t set;
	unsigned n = 0;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
		n = (unsigned)CPU_COUNT(&set);
	} else {
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		n = online > 0 ? (unsigned)online : 1;
	}
	errno = saved;
	return n;
}

unsigned
heist__cpu_list(int *cpus, unsigned max)
{
	int saved = errno;
	cpu_set_t set;
	unsigned count = 0;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (unsigned c = 0; c < CPU_SETSIZE && count < max; c++)
			if (CPU_ISSET(c, &set))
				cpus[count++] = (int)c;
	errno = saved;
	return count;
}

int
heist__cpu_pin(int cpu)
{
	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return EINVAL;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((unsigned)cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void
heist__program_name(char *buf, size_t size)
{
	if (!size)
		return;
	buf[0] = '\0';
	int saved = errno;
	FILE *f = fopen("/proc/self/comm", "r");
	if (f) {
		if (!fgets(buf, (int)size, f))
			buf[0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	errno = saved;
}

/* ---- the CPU quota of the process's cgroups --------------------------------------- */

enum { QUOTA_PATH = 1024, QUOTA_LINE = 2048 };

/* Whether word is one of the comma list's items. */
static bool
in_list(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, word, n) && (p[n] == ',' || p[n] == '\0'))
			return true;
	}
	return false;
}

/* A small file's first line, without its newline; false if it cannot be read. */
static bool
read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* The CPUs a quota of `quota` per `period` allows, rounded up; 0 for none. */
static unsigned
cpus_of(unsigned long long quota, unsigned long long period)
{
	if (!period || !quota)
		return 0;
	unsigned long long n = quota / period + (quota % period != 0);
	return n > 65536 ? 65536 : (unsigned)n;
}

/* The quota set on one cgroup directory: cpu.max (v2: "max 100000" or "150000
 * 100000"), or cpu.cfs_quota_us and cpu.cfs_period_us (v1: -1 for none). 0: none. */
static unsigned
dir_quota(const char *dir, bool v2)
{
	char path[QUOTA_PATH + 32], a[64], b[64];	/* dir: at most QUOTA_PATH */
	unsigned long long quota, period;
	if (v2) {
		snprintf(path, sizeof(path), "%s/cpu.max", dir);
		if (!read_line(path, a, sizeof(a)) || sscanf(a, "%llu %llu", &quota, &period) != 2)
			return 0;	/* "max", or no such controller here */
		return cpus_of(quota, period);
	}
	snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
	if (!read_line(path, a, sizeof(a)) || a[0] == '-' || sscanf(a, "%llu", &quota) != 1)
		return 0;
	snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
	if (!read_line(path, b, sizeof(b)) || sscanf(b, "%llu", &period) != 1)
		return 0;
	return cpus_of(quota, period);
}

static unsigned
smaller_quota(unsigned a, unsigned b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/* The smallest quota from the process's cgroup `cg` up to the hierarchy's mount,
 * which is mounted at point and shows the hierarchy's root as root (mountinfo). */
static unsigned
hierarchy_quota(const char *prefix, const char *point, const char *root, const char *cg,
		bool v2)
{
	/* cg is under root unless the mount shows another part of the hierarchy (a
	 * container's namespace): then the mount point itself is the process's. */
	size_t rl = strcmp(root, "/") ? strlen(root) : 0;
	const char *rel = !strncmp(cg, root, rl) && (cg[rl] == '/' || !cg[rl]) ? cg + rl : "";
	char dir[QUOTA_PATH];
	int n = snprintf(dir, sizeof(dir), "%s%s%s", prefix, point, rel);
	if (n < 0 || (size_t)n >= sizeof(dir))
		return 0;
	size_t top = strlen(prefix) + strlen(point);	/* the mount point: the last */
	unsigned q = 0;
	for (;;) {
		q = smaller_quota(q, dir_quota(dir, v2));
		char *slash = strrchr(dir + top, '/');
		if (!slash)
			return q;
		*slash = '\0';
	}
}

/* The process's cgroup in the v2 hierarchy and in the v1 one with the cpu controller,
 * from /proc/self/cgroup ("0::/path", "4:cpu,cpuacct:/path"); empty if none. */
static void
own_cgroups(const char *prefix, char *v2, char *v1)
{
	char path[QUOTA_PATH], line[QUOTA_LINE];
	v2[0] = v1[0] = '\0';
	snprintf(path, sizeof(path), "%s/proc/self/cgroup", prefix);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *controllers = strchr(line, ':');
		char *cg = controllers ? strchr(controllers + 1, ':') : NULL;
		if (!cg || cg[1] != '/' || strlen(cg + 1) >= QUOTA_PATH)
			continue;
		*cg++ = '\0';
		*controllers++ = '\0';	/* line: the hierarchy's id */
		if (!strcmp(line, "0") && !*controllers)
			strcpy(v2, cg);
		else if (in_list(controllers, "cpu"))
			strcpy(v1, cg);
	}
	fclose(f);
}

/* What heist__cpu_quota_under reads with, on the heap: pools are made on threads of
 * any stack size. */
struct quota_scratch {
	char v2[QUOTA_PATH], v1[QUOTA_PATH], path[QUOTA_PATH], line[QUOTA_LINE];
	char root[QUOTA_PATH], point[QUOTA_PATH], fstype[64], super[QUOTA_PATH];
};

/* heist__cpu_quota, reading every file under prefix ("" for the system's): tests give
 * a tree of their own. */
unsigned heist__cpu_quota_under(const char *prefix);

unsigned
heist__cpu_quota_under(const char *prefix)
{
	int saved = errno;
	struct quota_scratch *s = malloc(sizeof(*s));
	if (!s)
		return 0;	/* a pool then sizes itself by its CPUs */
	own_cgroups(prefix, s->v2, s->v1);
	unsigned q = 0;
	snprintf(s->path, sizeof(s->path), "%s/proc/self/mountinfo", prefix);
	FILE *f = (s->v2[0] || s->v1[0]) ? fopen(s->path, "re") : NULL;
	while (f && fgets(s->line, sizeof(s->line), f)) {
		/* "id parent dev root point options [tags] - fstype source super" */
		const char *dash = strstr(s->line, " - ");
		if (!dash || sscanf(s->line, "%*s %*s %*s %1023s %1023s", s->root, s->point) != 2 ||
		    sscanf(dash, " - %63s %*s %1023s", s->fstype, s->super) != 2)
			continue;
		if (!strcmp(s->fstype, "cgroup2") && s->v2[0])
			q = smaller_quota(q, hierarchy_quota(prefix, s->point, s->root, s->v2, true));
		else if (!strcmp(s->fstype, "cgroup") && s->v1[0] && in_list(s->super, "cpu"))
			q = smaller_quota(q, hierarchy_quota(prefix, s->point, s->root, s->v1, false));
	}
	if (f)
		fclose(f);
	free(s);
	errno = saved;
	return q;
}

unsigned
heist__cpu_quota(void)
{
	return heist__cpu_quota_under("");
}
