/* SPDX-License-Identifier: MIT */
/* win/system.c - platform.h's CPUs, clocks, pages and process on Windows. The CPU
 * count is the process's affinity mask's (its processor group's; a process on more
 * than 64 logical CPUs sees one group unless it asks for more). Without hwloc there is
 * no CPU list, so no pinning: heist_pool_placement says the pool is not pinned. The
 * clock is QueryPerformanceCounter. Pages come from VirtualAlloc, aligned by reserving
 * more and retrying at the aligned address inside it. New files: _open with _O_EXCL. */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include "../platform.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <windows.h>

unsigned
heist__cpu_count(void)
{
	DWORD_PTR process, system;
	if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system) && process) {
		unsigned n = 0;
		for (; process; process &= process - 1)
			n++;
		return n;
	}
	SYSTEM_INFO si;
	GetSystemInfo(&si);
	return si.dwNumberOfProcessors ? (unsigned)si.dwNumberOfProcessors : 1;
}

/* A job object's hard cap, in cycles per 10,000 of the whole machine's. */
unsigned
heist__cpu_quota(void)
{
	JOBOBJECT_CPU_RATE_CONTROL_INFORMATION info;
	DWORD last = GetLastError();	/* the caller's, kept */
	BOOL ok = QueryInformationJobObject(NULL, JobObjectCpuRateControlInformation, &info,
					    sizeof(info), NULL);
	SetLastError(last);
	DWORD capped = JOB_OBJECT_CPU_RATE_CONTROL_ENABLE | JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP;
	if (!ok || (info.ControlFlags & capped) != capped || !info.CpuRate)
		return 0;
	SYSTEM_INFO si;
	GetSystemInfo(&si);
	unsigned long long n = ((unsigned long long)info.CpuRate * si.dwNumberOfProcessors +
				9999) / 10000;
	return n ? (unsigned)n : 1;
}

unsigned
heist__cpu_list(int *cpus, unsigned max)
{
	(void)cpus;
	(void)max;
	return 0;
}

int
heist__cpu_pin(int cpu)
{
	(void)cpu;
	return ENOSYS;
}

static uint64_t
ticks_per_s(void)
{
	static _Atomic uint64_t cached;
	/* relaxed: every thread computes the same value (fixed at boot). */
	uint64_t f = atomic_load_explicit(&cached, memory_order_relaxed);
	if (!f) {
		LARGE_INTEGER q;
		QueryPerformanceFrequency(&q);
		f = q.QuadPart > 0 ? (uint64_t)q.QuadPart : 1;
		atomic_store_explicit(&cached, f, memory_order_relaxed);
	}
	return f;
}

uint64_t
heist__clock_ns(void)
{
	LARGE_INTEGER c;
	QueryPerformanceCounter(&c);
	uint64_t f = ticks_per_s(), t = (uint64_t)c.QuadPart;
	return t / f * 1000000000u + t % f * 1000000000u / f;
}

uint64_t
heist__clock_raw_ns(void)
{
	return heist__clock_ns();
}

size_t
heist__os_page_size(void)
{
	SYSTEM_INFO si;
	GetSystemInfo(&si);
	return si.dwPageSize;
}

void *
heist__os_pages_map(size_t bytes, size_t align)
{
	DWORD last = GetLastError();
	void *p = NULL;
	SYSTEM_INFO si;
	GetSystemInfo(&si);
	if (align <= si.dwAllocationGranularity) {
		p = VirtualAlloc(NULL, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
	} else if (bytes + align > bytes) {
		/* Reserve enough to hold an aligned block, let it go, and take the aligned
		 * part; another thread may take the range in between, so try again. */
		for (int tries = 0; !p && tries < 16; tries++) {
			char *r = VirtualAlloc(NULL, bytes + align, MEM_RESERVE, PAGE_NOACCESS);
			if (!r)
				break;
			uintptr_t a = ((uintptr_t)r + align - 1) & ~(uintptr_t)(align - 1);
			VirtualFree(r, 0, MEM_RELEASE);
			p = VirtualAlloc((void *)a, bytes, MEM_RESERVE | MEM_COMMIT,
					 PAGE_READWRITE);
		}
	}
	SetLastError(last);
	return p;
}

void
heist__os_pages_unmap(void *p, size_t bytes)
{
	(void)bytes;
	DWORD last = GetLastError();
	VirtualFree(p, 0, MEM_RELEASE);
	SetLastError(last);
}

void
heist__os_pages_prefault(void *p, size_t bytes)
{
	(void)p, (void)bytes;	/* committed pages fault in at their first write */
}

unsigned long
heist__process_id(void)
{
	return (unsigned long)GetCurrentProcessId();
}

bool
heist__process_setid(void)
{
	return false;	/* Windows has no set-user-ID programs */
}

FILE *
heist__file_create(const char *path)
{
	/* _O_EXCL: CREATE_NEW underneath, which fails on any name that exists. Text
	 * mode, as fopen's "w". */
	int fd = _open(path, _O_WRONLY | _O_CREAT | _O_EXCL | _O_TEXT | _O_NOINHERIT,
		       _S_IREAD | _S_IWRITE);
	if (fd < 0)
		return NULL;
	FILE *f = _fdopen(fd, "w");
	if (!f) {
		int err = errno;
		_close(fd);
		remove(path);
		errno = err;
	}
	return f;
}

void
heist__program_name(char *buf, size_t size)
{
	if (!size)
		return;
	buf[0] = '\0';
	char path[MAX_PATH];
	DWORD last = GetLastError();
	DWORD n = GetModuleFileNameA(NULL, path, sizeof(path));
	SetLastError(last);
	if (!n || n >= sizeof(path))
		return;
	const char *base = path;
	for (const char *c = path; *c; c++)
		if (*c == '\\' || *c == '/')
			base = c + 1;
	snprintf(buf, size, "%s", base);
	char *dot = strrchr(buf, '.');
	if (dot && !strcmp(dot, ".exe"))
		*dot = '\0';
}

void *
heist__os_aligned_alloc(size_t align, size_t size)
{
	return _aligned_malloc(size, align);
}

void
heist__os_aligned_free(void *p)
{
	_aligned_free(p);
}
