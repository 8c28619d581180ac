/* SPDX-License-Identifier: MIT */
/* pages.c - whole pages from the system, given back at once when freed (platform.h's
 * heist__os_pages_map: mmap, VirtualAlloc), and the count of what is held. */
#include "pages.h"

#include <stdatomic.h>
#include <stdint.h>

#include "platform/platform.h"

/* relaxed: a statistic, read by tests when nothing allocates. */
static _Atomic size_t in_use;

static size_t
round_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

void *
heist__pages_alloc(size_t bytes, size_t align)
{
	size_t page = heist__os_page_size();
	if (align < page)
		align = page;
	if (bytes == 0 || bytes + page < bytes)
		return NULL;
	bytes = round_up(bytes, page);
	void *p = heist__os_pages_map(bytes, align);
	if (!p)
		return NULL;
	atomic_fetch_add_explicit(&in_use, bytes, memory_order_relaxed);
	return p;
}

void
heist__pages_prefault(void *p, size_t bytes)
{
	heist__os_pages_prefault(p, round_up(bytes, heist__os_page_size()));
}

void
heist__pages_free(void *p, size_t bytes)
{
	if (!p)
		return;
	bytes = round_up(bytes, heist__os_page_size());
	heist__os_pages_unmap(p, bytes);
	atomic_fetch_sub_explicit(&in_use, bytes, memory_order_relaxed);
}

size_t
heist__pages_in_use(void)
{
	return atomic_load_explicit(&in_use, memory_order_relaxed);
}
