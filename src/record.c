/* SPDX-License-Identifier: MIT */
/* record.c - per-thread record caches. The owning thread allocates from its local
 * free list; any other thread frees by pushing onto the owner's remote stack (a
 * Treiber stack that the owner empties with one exchange, so there is no ABA),
 * OUT_BATCH records at a time: a thread holds what it freed of one other cache (and
 * of one other cache of wide records) until it has that many, frees one of another
 * cache of that size, trims or exits. When the owner exits, the stack is sealed with
 * ORPHANED: records that come back later only count down, and the last one frees the
 * cache. Records are carved from slabs of SLAB_BYTES, aligned to their size so that a
 * record's slab is its address rounded down, so even a thread whose tasks in flight
 * reach a new high calls malloc once per slab of them. A thread has a cache of records
 * and, once it asks for one, a cache of wide records beside it (record.h), each with
 * slabs of its own. Slabs are pages from the system (pages.h), given back when
 * freed. The high-water mark: heist__record_trim, on the owner at a
 * quiet moment (after a burst drained: heist_pool_wait_idle, heist_pool_destroy; on a
 * worker asleep, heist__record_trim_idle, once the cache has carved nothing for
 * heist__record_idle_ns), frees every slab whose records are all home but KEEP_SLABS;
 * the rest goes at thread exit. Nothing on the alloc and free paths counts for it. */
#include "record.h"

#include <assert.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "internal.h"
#include "pages.h"

enum {
	/* A power of two: slabs are aligned to it. Pages from the system (pages.h),
	 * so a slab a trim frees leaves the process's resident memory; 256 KiB, so a
	 * burst of millions of jobs maps a few thousand of them, not tens. */
	SLAB_BYTES = 256 * 1024,
	KEEP_SLABS = 1,		/* whole free slabs a trim keeps, for the next burst */
	OUT_BATCH = 32,		/* records of another cache held before one push */
};

/* How long after a cache's last new slab a worker's sleep may give back its surplus
 * (heist__record_trim_idle): 10 s, as jemalloc's dirty pages decay, so that bursts
 * made every few milliseconds or seconds reuse the last one's pages rather than fault
 * in new ones each time (a fault a page, and the unmap's shootdown: a graph of 8,000
 * dependent tasks built every few milliseconds spent 80% of its time there on a
 * 2-vCPU KVM guest when every sleep trimmed). Counted from the last new slab, not the
 * last use, which would need the alloc path to count: bursts that fit the slabs they
 * have are trimmed once every 10 s, and the next one faults its pages in again. */
_Atomic uint64_t heist__record_idle_ns = 10 * UINT64_C(1000000000);

/* Under AddressSanitizer a free record's body is poisoned, so that a job used after its
 * record was freed is reported where it happens, and a record freed twice is caught
 * (it would make a cycle in a free list: a hang, far from the fault). */
#if defined(__SANITIZE_ADDRESS__)
#define RECORDS_POISONED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RECORDS_POISONED 1
#endif
#endif
#ifdef RECORDS_POISONED
#include <sanitizer/asan_interface.h>
/* All but the free list's link, which a free record keeps in its first bytes. */
#define POISON(c, r) ASAN_POISON_MEMORY_REGION((unsigned char *)(r) + LINK_BYTES, \
					   (c)->bytes - LINK_BYTES)
#define UNPOISON(c, r) ASAN_UNPOISON_MEMORY_REGION((r), (c)->bytes)
#define UNPOISON_SLAB(s) ASAN_UNPOISON_MEMORY_REGION((s), SLAB_BYTES)
#define IS_POISONED(r) __asan_address_is_poisoned((unsigned char *)(r) + LINK_BYTES)
#else
#define POISON(c, r) ((void)(c), (void)(r))
#define UNPOISON(c, r) ((void)(c), (void)(r))
#define UNPOISON_SLAB(s) ((void)(s))
#define IS_POISONED(r) ((void)(r), 0)
#endif

struct cache;

/* A record is its cache's size (RECORD_BYTES or WIDE_RECORD_BYTES), aligned to it:
 * whole cache lines, none shared with another record (which another thread may be
 * writing). Free, it keeps the free list's link in its first bytes; its cache is its
 * slab's. */
struct record {
	struct record *next;	/* while free */
};
enum { LINK_BYTES = sizeof(struct record *) };

/* A slab's first record's place holds its header; its records follow, each the
 * cache's size. */
struct slab {
	struct slab *next;
	struct cache *cache;	/* whose records these are */
	long home;		/* heist__record_trim's count of its records home */
};

static_assert(sizeof(struct slab) <= RECORD_BYTES, "a slab's header takes one record");
static_assert((RECORD_BYTES & (RECORD_BYTES - 1)) == 0 &&
	      (WIDE_RECORD_BYTES & (WIDE_RECORD_BYTES - 1)) == 0 &&
	      RECORD_BYTES >= 64 && WIDE_RECORD_BYTES <= SLAB_BYTES / 2,
	      "records of whole cache lines, aligned to their size, in slabs");

static struct slab *
slab_of(struct record *r)
{
	return (struct slab *)((uintptr_t)r & ~(uintptr_t)(SLAB_BYTES - 1));
}

static struct cache *
home_of(struct record *r)
{
	return slab_of(r)->cache;
}

static void
slab_free(struct slab *slab)
{
	UNPOISON_SLAB(slab);
	heist__pages_free(slab, SLAB_BYTES);
}

#define ORPHANED ((struct record *)1)

struct cache {
	struct record *local;			/* owner only */
	struct slab *slabs;			/* owner only until orphaned */
	long total;				/* records carved from the slabs */
	size_t bytes;				/* of each record */
	uint64_t carved_ns;			/* the last carve (heist__now_ns) */
	/* The thread's cache of wide records, made at its first wide record, or NULL;
	 * in the cache of (narrow) records only. Owner only. */
	struct cache *wide;
	/* Other threads push freed records here; the owner takes them all. */
	struct record *_Atomic remote;
	/* After ORPHANED: records still out; whoever brings it to 0 frees the cache. */
	_Atomic long outstanding;
};

/* A thread's records of another cache, home, that it freed and holds: a lane for a
 * cache of records, one for a cache of wide records (a job and the dependent task it
 * ends may be of either, and of one thread). In TLS, not in a cache: a thread that
 * only frees needs no cache (nor leaves one behind, where a process exits with its
 * workers still running). */
struct held_lane {
	struct cache *home;
	struct record *head, *tail;
	unsigned n;
};

struct held {
	struct held_lane lane[2];	/* [lane_of(home)] */
	bool keyed;		/* held_key's destructor sends them home at exit */
	bool gone;		/* that destructor ran: later frees push at once
				   (a later key's destructor may free records) */
};

static heist__key cache_key, held_key;
static heist__once_flag cache_key_once = HEIST__ONCE_INIT;

/* This thread's cache and held records. HEIST__TLS variables; where those may be gone
 * before the keys' destructors run (platform.h: Windows), TLS slots, which last, and
 * the held records on the heap, made at the first free of another cache's record:
 * until then held_none, after the destructor held_gone, both only read. */
#if !HEIST__TLS_FREED_BEFORE_KEYS
static HEIST__TLS struct cache *my_cache;
static HEIST__TLS struct held my_held;

static inline struct cache *cache_mine(void) { return my_cache; }
static inline bool cache_set_mine(struct cache *c) { my_cache = c; return true; }
static inline struct held *held_mine(void) { return &my_held; }
static inline bool slots_ready(void) { return true; }
#else
static const struct held held_none, held_gone = {.gone = true};

static inline struct cache *
cache_mine(void)
{
	return heist__thread_slot_get(HEIST__SLOT_RECORDS);
}

static inline bool
cache_set_mine(struct cache *c)
{
	return heist__thread_slot_set(HEIST__SLOT_RECORDS, c);
}

static inline struct held *
held_mine(void)
{
	struct held *h = heist__thread_slot_get(HEIST__SLOT_HELD);
	return h ? h : (struct held *)&held_none;
}

static inline bool slots_ready(void) { return heist__thread_slot_init() == 0; }
#endif

static long
list_length(struct record *r)
{
	long n = 0;
	for (; r; r = r->next)
		n++;
	return n;
}

static void
cache_release(struct cache *c, long n)
{
	/* acq_rel: the thread that brings the count to zero frees the cache, after
	 * every other thread's last use of it. Counts may dip below zero when records
	 * come home before the owner adds its total; only the last change reaches 0. */
	if (atomic_fetch_add_explicit(&c->outstanding, n, memory_order_acq_rel) + n != 0)
		return;
	while (c->slabs) {
		struct slab *next = c->slabs->next;
		slab_free(c->slabs);
		c->slabs = next;
	}
	free(c);
}

/* Push the list head..tail of n records onto their home c's remote stack (or count
 * them home, if c's thread has exited). */
static void
push_remote(struct cache *c, struct record *head, struct record *tail, long n)
{
	struct record *top = atomic_load_explicit(&c->remote, memory_order_relaxed);
	for (;;) {
		if (top == ORPHANED) {
			cache_release(c, -n);	/* their slabs go with the cache */
			return;
		}
		tail->next = top;
		/* release: the owner's acquire exchange sees the links and the
		 * records' contents. */
		if (atomic_compare_exchange_weak_explicit(&c->remote, &top, head,
							  memory_order_release,
							  memory_order_relaxed))
			return;
	}
}

/* Push r alone (a thread that cannot hold records). */
static noinline void
push_one(struct cache *c, struct record *r)
{
	push_remote(c, r, r, 1);
}

static unsigned
lane_of(const struct cache *c)
{
	return c->bytes != RECORD_BYTES;
}

/* Send the records a lane holds to their home. Out of line: heist__record_free calls it
 * once in OUT_BATCH, and inlined it would make every free save and restore registers. */
static noinline void
send_lane(struct held_lane *l)
{
	if (!l->n)
		return;
	push_remote(l->home, l->head, l->tail, l->n);
	l->home = NULL;
	l->head = l->tail = NULL;
	l->n = 0;
}

/* Send all the records h holds to their homes. */
static void
send_held(struct held *h)
{
	send_lane(&h->lane[0]);
	send_lane(&h->lane[1]);
}

static void
held_exit(void *p)
{
	struct held *h = p;
	send_held(h);
#if !HEIST__TLS_FREED_BEFORE_KEYS
	h->keyed = false;	/* glibc cleared our value: nothing would send more */
	h->gone = true;
#else
	heist__thread_slot_set(HEIST__SLOT_HELD, (void *)&held_gone);
	free(h);
#endif
}

/* Records of c's size that fill a slab after its header. */
static long
slab_records(const struct cache *c)
{
	return (long)(SLAB_BYTES / c->bytes) - 1;
}

/* c's thread exits: records that come home later only count down. */
static void
cache_seal(struct cache *c)
{
	/* acquire: pairs with the release CAS of remote frees, so their records'
	 * contents are ours to free. */
	struct record *r = atomic_exchange_explicit(&c->remote, ORPHANED, memory_order_acquire);
	long home = list_length(r) + list_length(c->local);
	c->local = NULL;
	cache_release(c, c->total - home);	/* the records still out */
}

static void
cache_exit(void *p)
{
	struct cache *c = p;
	cache_set_mine(NULL);	/* a record freed later goes home as another's */
	if (c->wide)
		cache_seal(c->wide);	/* before c, which may go at once */
	cache_seal(c);
}

/* Whether cache_key exists: without it a thread's cache could not be freed when the
 * thread exits, so there are no caches, and records cannot be had (ENOMEM to the
 * caller, as when memory runs out). Without held_key, frees push at once. Written
 * once under cache_key_once. */
static bool cache_key_made, held_key_made;

static void
make_key(void)
{
	bool slots = slots_ready();
	cache_key_made = slots && heist__key_create(&cache_key, cache_exit) == 0;
	held_key_made = slots && heist__key_create(&held_key, held_exit) == 0;
}

/* Where the held records live for this thread from now on, with held_key set so that
 * they go home at its exit; NULL if it may hold none (its destructor ran, or no key or
 * memory): each record then goes home at once. h: held_mine(), not keyed. */
static noinline struct held *
start_holding(struct held *h)
{
	if (h->gone)
		return NULL;
	heist__once(&cache_key_once, make_key);
	if (!held_key_made)
		return NULL;
#if HEIST__TLS_FREED_BEFORE_KEYS
	h = heist__calloc(1, sizeof(*h));	/* h was held_none */
	if (!h)
		return NULL;
	if (!heist__thread_slot_set(HEIST__SLOT_HELD, h)) {
		free(h);
		return NULL;
	}
	if (heist__key_set(held_key, h)) {
		heist__thread_slot_set(HEIST__SLOT_HELD, NULL);
		free(h);
		return NULL;
	}
#else
	if (heist__key_set(held_key, h))
		return NULL;
#endif
	h->keyed = true;
	return h;
}

static struct cache *
cache_new(size_t bytes)
{
	struct cache *c = heist__calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->bytes = bytes;
	atomic_init(&c->remote, NULL);
	atomic_init(&c->outstanding, 0);
	return c;
}

static struct cache *
cache_get(void)
{
	struct cache *c = cache_mine();
	if (c)
		return c;
	heist__once(&cache_key_once, make_key);
	if (!cache_key_made)
		return NULL;
	c = cache_new(RECORD_BYTES);
	if (!c)
		return NULL;
	if (!cache_set_mine(c)) {
		free(c);
		return NULL;
	}
	if (heist__key_set(cache_key, c)) {
		cache_set_mine(NULL);
		free(c);
		return NULL;
	}
	return c;
}

/* A new slab's records, linked; NULL when out of memory. */
static noinline struct record *
carve(struct cache *c)
{
	struct slab *slab = heist__pages_alloc(SLAB_BYTES, SLAB_BYTES);
	if (!slab)
		return NULL;
	heist__pages_prefault(slab, SLAB_BYTES);	/* the loop below writes every page */
	slab->next = c->slabs;
	slab->cache = c;
	c->slabs = slab;
	c->carved_ns = heist__now_ns();	/* a slab's worth of records: rare */
	long n = slab_records(c);
	c->total += n;
	struct record *r = NULL;
	for (long i = n; i > 0; i--) {
		struct record *x = (struct record *)(void *)((unsigned char *)slab +
							     (size_t)i * c->bytes);
		x->next = r;
		r = x;
		POISON(c, r);
	}
	return r;
}

static inline void *
alloc_from(struct cache *c)
{
	struct record *r = c->local;
	if (!r) {
		/* acquire: pairs with the release CAS in heist__record_free. */
		r = atomic_exchange_explicit(&c->remote, NULL, memory_order_acquire);
	}
	if (!r && !(r = carve(c)))
		return NULL;
	c->local = r->next;
	UNPOISON(c, r);
	return r;
}

void *
heist__record_alloc(void)
{
	struct cache *c = cache_get();
	return c ? alloc_from(c) : NULL;
}

/* c's cache of wide records, made now; NULL when out of memory. */
static noinline struct cache *
wide_new(struct cache *c)
{
	return c->wide = cache_new(WIDE_RECORD_BYTES);
}

void *
heist__record_alloc_wide(void)
{
	struct cache *c = cache_get();
	if (!c)
		return NULL;
	struct cache *w = c->wide;
	if (!w && !(w = wide_new(c)))
		return NULL;
	return alloc_from(w);
}

static void
freed_twice(void *p)
{
	fprintf(stderr, "heist: job record %p freed twice\n", p);
	abort();
}

/* Free r, of a cache c other than this thread's cache of records, with what h
 * (held_mine) holds: home, if c is this thread's cache of wide records; else start
 * holding, or push. */
static noinline void
free_elsewhere(struct held *h, struct cache *c, struct record *r)
{
	struct cache *mine = cache_mine();
	if (mine && c == mine->wide) {
		r->next = c->local;
		c->local = r;
		return;
	}
	if (!h->keyed && !(h = start_holding(h))) {
		push_one(c, r);
		return;
	}
	struct held_lane *l = &h->lane[lane_of(c)];
	if (l->home != c) {
		send_lane(l);
		l->home = c;
		l->tail = r;
	}
	r->next = l->head;
	l->head = r;
	if (++l->n == OUT_BATCH)
		send_lane(l);
}

void
heist__record_free(void *p)
{
	if (!p)
		return;
	struct record *r = p;
	if (IS_POISONED(r))
		freed_twice(p);
	struct cache *c = home_of(r);
	POISON(c, r);
	if (c == cache_mine()) {
		r->next = c->local;
		c->local = r;
		return;
	}
	/* Another cache's: held, and pushed there OUT_BATCH at a time, so that the
	 * threads that finish another thread's jobs do not all CAS its stack for each
	 * one. The common case here, the rest out of line (no registers to save). A
	 * cache is held in one lane only (lane_of), and an unkeyed h holds none. */
	struct held *h = held_mine();
	struct held_lane *l = h->lane[0].home == c   ? &h->lane[0]
			      : h->lane[1].home == c ? &h->lane[1]
						     : NULL;
	if (l && l->n < OUT_BATCH - 1) {
		r->next = l->head;
		l->head = r;
		l->n++;
		return;
	}
	free_elsewhere(h, c, r);
}

/* Which slabs a trim frees: those whose every record is on the free lists, but the
 * first KEEP_SLABS of them. Marked with home = -1. */
static bool
mark_free_slabs(struct cache *c)
{
	for (struct slab *s = c->slabs; s; s = s->next)
		s->home = 0;
	for (struct record *r = c->local; r; r = r->next)
		slab_of(r)->home++;
	unsigned kept = 0;
	bool any = false;
	for (struct slab *s = c->slabs; s; s = s->next) {
		if (s->home == slab_records(c) && kept++ >= KEEP_SLABS) {
			s->home = -1;
			any = true;
		}
	}
	return any;
}

/* Free c's slabs whose records are all home, but KEEP_SLABS of them. Owner only. */
static void
trim(struct cache *c)
{
	if (c->total <= KEEP_SLABS * slab_records(c))
		return;
	/* acquire: pairs with the release CAS in heist__record_free, so the records
	 * freed elsewhere are ours to count and unlink. Only the owner (we) seals the
	 * stack, at exit, so it is not ORPHANED here. */
	struct record *r = atomic_exchange_explicit(&c->remote, NULL, memory_order_acquire);
	if (r) {
		struct record *tail = r;
		while (tail->next)
			tail = tail->next;
		tail->next = c->local;
		c->local = r;
	}
	if (!mark_free_slabs(c))
		return;
	for (struct record **p = &c->local; *p;) {
		if (slab_of(*p)->home < 0)
			*p = (*p)->next;
		else
			p = &(*p)->next;
	}
	for (struct slab **p = &c->slabs; *p;) {
		struct slab *s = *p;
		if (s->home < 0) {
			*p = s->next;
			c->total -= slab_records(c);
			slab_free(s);
		} else {
			p = &s->next;
		}
	}
}

void
heist__record_trim(void)
{
	send_held(held_mine());	/* what we hold of others' goes home too */
	struct cache *c = cache_mine();
	if (!c)
		return;
	trim(c);
	if (c->wide)
		trim(c->wide);
}

/* Whether c holds slabs beyond the reserve a trim keeps (some may be out). */
static bool
has_surplus(const struct cache *c)
{
	return c && c->total > KEEP_SLABS * slab_records(c);
}

/* c's surplus may go once c has needed no new slab for heist__record_idle_ns: trims
 * it if that is past by now, else returns when it will be. */
static uint64_t
trim_if_idle(struct cache *c, uint64_t now)
{
	if (!has_surplus(c))
		return HEIST_NEVER;
	/* relaxed: a setting (record.h). */
	uint64_t idle = atomic_load_explicit(&heist__record_idle_ns, memory_order_relaxed);
	uint64_t due = idle >= HEIST_NEVER - c->carved_ns ? HEIST_NEVER : c->carved_ns + idle;
	if (due > now)
		return due;
	trim(c);
	return HEIST_NEVER;
}

uint64_t
heist__record_trim_idle(uint64_t now)
{
	send_held(held_mine());
	struct cache *c = cache_mine();
	if (!c)
		return HEIST_NEVER;
	uint64_t due = trim_if_idle(c, now);
	uint64_t wide_due = trim_if_idle(c->wide, now);
	return due < wide_due ? due : wide_due;
}
