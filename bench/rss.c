/* SPDX-License-Identifier: MIT */
/* rss.c - heist-bench --rss: the peak resident memory of each implementation on each
 * workload and size. Peak RSS is per process, so each (workload, impl) pair that has
 * rows runs again in a child process of its own: this program re-executed with
 * --only W --impl I --exact --reps 1 --rss-child. In the child, the driver resets
 * the peak before each size's warm-up (writing 5 to /proc/self/clear_refs sets VmHWM
 * to the current RSS, Linux 4.0+) and reads VmHWM after its last run, so each size's
 * figure covers what is resident while that size runs: the inputs and the reference
 * answer (built before), the pools and the runtime, and the peak of the runs. The
 * child prints one line per row; the parent adds the figure and its difference from
 * the serial child of the same size, which has the same inputs and no runtime.
 *
 * Why the child reports and the parent does not read ru_maxrss from wait4: on Linux,
 * exec carries the pre-exec image's high-water mark into ru_maxrss (fs/exec.c,
 * exec_mmap), and a forked child starts with a copy of the parent's resident pages,
 * so a child's ru_maxrss is at least its parent's RSS at fork time: one that ran
 * /bin/true reported 205 MB after its parent had touched 200 MB (1.3 MB otherwise).
 * Linux only; where /proc says nothing the figure is left out. */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#if defined(_WIN32)
#include <windows.h>
#include <psapi.h>
#else
#include <sys/wait.h>
#endif

#if defined(_WIN32)
/* Windows: the peak working set (K32GetProcessMemoryInfo); it cannot be reset, and
 * the parent's child per pair (fork and exec) is not there: --rss says it is not
 * available. */
long
bench_rss_peak_kib(void)
{
	PROCESS_MEMORY_COUNTERS c = {.cb = sizeof(c)};
	if (!K32GetProcessMemoryInfo(GetCurrentProcess(), &c, sizeof(c)))
		return -1;
	return (long)(c.PeakWorkingSetSize / 1024);
}

bool
bench_rss_reset_peak(void)
{
	return false;
}
#else
long
bench_rss_peak_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

bool
bench_rss_reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f)
		return false;
	bool ok = fputs("5", f) >= 0;
	return fclose(f) == 0 && ok;
}
#endif

void
bench_rss_report(void)
{
	long whole = bench_rss_peak_kib();
	for (unsigned i = 0; i < bench_row_count(); i++) {
		const struct row *r = bench_row_at(i);
		long kib = row_rss_kib(r);
		/* No measure behind the row (idle), or no reset possible: the whole run. */
		printf("rss\t%s\t%s\t%s\t%u\t%ld\n", row_workload(r), row_size(r), row_impl(r),
		       row_threads(r), kib >= 0 ? kib : whole);
	}
	fflush(stdout);
}

#if defined(_WIN32)
void
bench_rss(const struct bench_opts *o, const char *self)
{
	(void)o;
	(void)self;
	bench_progress("rss: not available on this system (a child per workload: fork, "
		       "/proc/self/clear_refs)\n");
}
#else
/* Run one child for (workload, impl) and record what it reports in the rows. */
static void
run_child(const struct bench_opts *o, const char *self, const char *workload,
	  const char *impl)
{
	char threads[16], settle[16];
	snprintf(threads, sizeof threads, "%u", o->threads);
	snprintf(settle, sizeof settle, "%u", o->settle_ms);
	char *argv[16];
	int n = 0;
	argv[n++] = (char *)self;
	argv[n++] = "--only";
	argv[n++] = (char *)workload;
	argv[n++] = "--impl";
	argv[n++] = (char *)impl;
	argv[n++] = "--exact";
	argv[n++] = "--reps";
	argv[n++] = "1";
	argv[n++] = "--threads";
	argv[n++] = threads;
	argv[n++] = "--settle";
	argv[n++] = settle;
	if (o->quick)
		argv[n++] = "--quick";
	argv[n++] = "--rss-child";
	argv[n] = NULL;

	int fd[2];
	if (pipe(fd) != 0)
		bench_fail("--rss: pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		bench_fail("--rss: fork: %s", strerror(errno));
	if (pid == 0) {
		close(fd[0]);
		if (dup2(fd[1], STDOUT_FILENO) < 0)
			_exit(126);
		close(fd[1]);
		execv(self, argv);
		_exit(127);
	}
	close(fd[1]);
	FILE *f = fdopen(fd[0], "r");
	if (!f)
		bench_fail("--rss: fdopen: %s", strerror(errno));
	char line[256];
	while (fgets(line, sizeof line, f)) {
		/* rss \t workload \t size \t impl \t threads \t KiB */
		char *field[6], *save = NULL;
		int k = 0;
		for (char *t = strtok_r(line, "\t\n", &save); t && k < 6;
		     t = strtok_r(NULL, "\t\n", &save))
			field[k++] = t;
		if (k != 6 || strcmp(field[0], "rss") != 0)
			continue;
		long kib = strtol(field[5], NULL, 10);
		struct row *r = bench_row_for(field[1], field[2], field[3],
					      (unsigned)strtoul(field[4], NULL, 10));
		if (r && kib >= 0)
			row_metric(r, "peak_rss_kib", (double)kib, "rss %.1f MiB",
				   (double)kib / 1024.0);
	}
	fclose(f);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			bench_fail("--rss: waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_fail("--rss: the child for %s %s failed (%s %d)", workload, impl,
			   WIFEXITED(status) ? "exit status" : "signal",
			   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* The RSS figure already on row r (from run_child), or -1. */
static double
rss_of(const struct row *r)
{
	return r ? bench_row_metric(r, "peak_rss_kib") : -1;
}

void
bench_rss(const struct bench_opts *o, const char *self)
{
	unsigned n = bench_row_count();
	bench_progress("rss: a child per workload and implementation:");
	for (unsigned i = 0; i < n; i++) {
		const struct row *r = bench_row_at(i);
		const char *w = row_workload(r), *impl = row_impl(r);
		bool seen = false;	/* pair already run for an earlier row */
		for (unsigned j = 0; j < i && !seen; j++) {
			const struct row *q = bench_row_at(j);
			seen = strcmp(row_workload(q), w) == 0 && strcmp(row_impl(q), impl) == 0;
		}
		if (seen)
			continue;
		bench_progress(" %s/%s", w, impl);
		run_child(o, self, w, impl);
	}
	bench_progress("\n");

	/* The difference from serial on the same size: the runtime's own footprint. */
	for (unsigned i = 0; i < n; i++) {
		struct row *r = bench_row_at(i);
		if (strcmp(row_impl(r), "serial") == 0)
			continue;
		double kib = rss_of(r);
		double base = rss_of(bench_row_for(row_workload(r), row_size(r), "serial", 1));
		if (kib < 0 || base < 0)
			continue;
		double mib = (kib - base) / 1024.0;
		row_metric(r, "peak_rss_over_serial_kib", kib - base, "(%+.1f vs serial)",
			   mib > -0.05 && mib < 0.05 ? 0.0 : mib);	/* no "-0.0" */
	}
}
#endif
