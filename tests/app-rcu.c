/* SPDX-License-Identifier: MIT */
/* app-rcu.c - an application's use of one liburcu flavor beside heist, for
 * test-urcu.c: compiled twice, as memb_* (<urcu/urcu-memb.h>) and, with
 * -DFLAVOR_QSBR=1, as qsbr_* (<urcu/urcu-qsbr.h>), since one translation unit cannot
 * include two flavors (each maps the rcu_* names to its own). The pool's hooks register its
 * threads; tasks read a configuration under rcu_read_lock(); the updater replaces it
 * and retires the old one after synchronize_rcu() or through call_rcu(). A reader that
 * finds its configuration retired inside its read-side section is a violation. QSBR
 * threads stay offline except while they read, so an idle worker asleep in heist's
 * futex holds up no grace period. */
#define URCU_API_MAP	/* the rcu_* names for this flavor, as <urcu.h> asks */
#if FLAVOR_QSBR
#include <urcu/urcu-qsbr.h>
#define NAME(x) qsbr_##x
#else
#include <urcu/urcu-memb.h>
#define NAME(x) memb_##x
#endif

#include <stdatomic.h>
#include <stdlib.h>

#include "app-rcu.h"

/* ThreadSanitizer cannot see liburcu's orderings (rcu_assign_pointer's barrier,
 * rcu_dereference's dependent load, call_rcu's queue to its own thread are not
 * instrumented), so it would take a reader's first look at a new configuration, or the
 * callback's at an old one, for a race with its initialisation. Tell it what they pair
 * as: a release by the publisher, an acquire by the reader, on the same address. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(TSAN)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define PUBLISHED(addr) __tsan_release(addr)
#define SUBSCRIBED(addr) __tsan_acquire(addr)
#else
#define PUBLISHED(addr) ((void)(addr))
#define SUBSCRIBED(addr) ((void)(addr))
#endif

struct config {
	atomic_int alive;	/* 1 until retired after a grace period */
	long scale;
	struct rcu_head head;
	struct config *next_retired;
};

static struct config *current;	/* RCU-protected */
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static struct config *retired;
static atomic_long reads, violations, retirements;

/* After its grace period: no reader can still hold c. Kept, not freed, so that a
 * reader that wrongly still held it reads a 0 rather than freed memory. */
static void
retire(struct config *c)
{
	atomic_store(&c->alive, 0);
	atomic_fetch_add(&retirements, 1);
	pthread_mutex_lock(&retired_lock);
	c->next_retired = retired;
	retired = c;
	pthread_mutex_unlock(&retired_lock);
}

static void
retire_cb(struct rcu_head *head)
{
	struct config *c = caa_container_of(head, struct config, head);
	SUBSCRIBED(c);
	retire(c);
}

static void
online(void)
{
#if FLAVOR_QSBR
	rcu_thread_online();
#endif
}

static void
offline(void)
{
#if FLAVOR_QSBR
	rcu_thread_offline();
#endif
}

void
NAME(start_hook)(void *ctx, unsigned index)
{
	(void)ctx;
	(void)index;
	rcu_register_thread();
	offline();
}

void
NAME(stop_hook)(void *ctx, unsigned index)
{
	(void)ctx;
	(void)index;
	rcu_unregister_thread();	/* QSBR's puts the thread online first itself */
}

int
NAME(read_task)(void *arg)
{
	(void)arg;
	online();
	rcu_read_lock();
	struct config *c = rcu_dereference(current);
	SUBSCRIBED(&current);
	long bad = !atomic_load(&c->alive);
	for (volatile int i = 0; i < 200; i++)	/* a section that lasts */
		;
	bad |= !atomic_load(&c->alive) || c->scale <= 0;
	rcu_read_unlock();
	offline();
	atomic_fetch_add(&reads, 1);
	if (bad)
		atomic_fetch_add(&violations, 1);
	return 0;
}

static struct config *
make(long scale)
{
	struct config *c = calloc(1, sizeof(*c));
	if (c) {
		atomic_init(&c->alive, 1);
		c->scale = scale;
	}
	return c;
}

int
NAME(setup)(void)
{
	rcu_register_thread();	/* the updater: call_rcu reads under the lock */
	offline();
	struct config *c = make(1);
	if (!c)
		return -1;
	PUBLISHED(&current);
	rcu_assign_pointer(current, c);
	return 0;
}

int
NAME(update)(unsigned i)
{
	struct config *c = make(i + 2), *old = current;
	if (!c)
		return -1;
	PUBLISHED(&current);
	rcu_assign_pointer(current, c);
	if (i % 2) {
		online();
		PUBLISHED(old);
		call_rcu(&old->head, retire_cb);
		offline();
	} else {
		synchronize_rcu();	/* offline: QSBR's updater holds up nothing */
		retire(old);
	}
	return 0;
}

void
NAME(finish)(struct urcu_result *out)
{
	rcu_barrier();	/* every call_rcu callback has run */
	out->reads = atomic_load(&reads);
	out->violations = atomic_load(&violations);
	out->retirements = atomic_load(&retirements);
	pthread_mutex_lock(&retired_lock);	/* rcu_barrier() orders it, unseen by TSan */
	while (retired) {
		struct config *next = retired->next_retired;
		free(retired);
		retired = next;
	}
	pthread_mutex_unlock(&retired_lock);
	free(current);
	current = NULL;
	rcu_unregister_thread();
}
