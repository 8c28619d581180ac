/* SPDX-License-Identifier: MIT */
/* injector.c - the multi-producer queue for submissions from outside the pool.
 * Dmitry Vyukov's intrusive MPSC node-based queue: the tasks themselves are the nodes
 * (task.next is the link), producers exchange the tail and then link the old tail to
 * their node, and one consumer walks from the head, putting the sentinel (Vyukov's
 * dummy node) back behind the last node when it must hand that node out. Workers take
 * turns at being the consumer with a try-flag and take a batch each time, so the flag
 * is held briefly and rarely. */
#include "injector.h"

#include <limits.h>

#include "platform/platform.h"

void
heist__injector_init(struct injector *q, size_t limit)
{
	atomic_init(&q->sentinel.next, NULL);
	atomic_init(&q->tail, &q->sentinel);
	q->head = &q->sentinel;
	atomic_init(&q->consuming, false);
	atomic_init(&q->depth, 0);
	q->limit = limit;
	atomic_init(&q->room_seq, 0);
	atomic_init(&q->room_waiters, 0);
}

size_t
heist__injector_reserve(struct injector *q)
{
	if (!q->limit) {
		/* seq_cst: see injector.h. */
		return atomic_fetch_add_explicit(&q->depth, 1, memory_order_seq_cst);
	}
	for (;;) {
		size_t d = atomic_load_explicit(&q->depth, memory_order_relaxed);
		if (d < q->limit) {
			if (atomic_compare_exchange_weak_explicit(&q->depth, &d, d + 1,
								  memory_order_seq_cst,
								  memory_order_relaxed))
				return d;
			continue;
		}
		/* Full. Announce ourselves, then look again: the consumer subtracts
		 * from depth and then reads room_waiters (both seq_cst), we add to
		 * room_waiters and then read depth, so one of us sees the other. */
		uint32_t seq = atomic_load_explicit(&q->room_seq, memory_order_acquire);
		atomic_fetch_add_explicit(&q->room_waiters, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&q->depth, memory_order_seq_cst) >= q->limit)
			heist__futex_wait(&q->room_seq, seq, 0);
		atomic_fetch_sub_explicit(&q->room_waiters, 1, memory_order_relaxed);
	}
}

size_t
heist__injector_requeue(struct injector *q, struct task *t)
{
	/* seq_cst: see injector.h. */
	size_t before = atomic_fetch_add_explicit(&q->depth, 1, memory_order_seq_cst);
	heist__injector_push(q, t);
	return before;
}

void
heist__injector_push(struct injector *q, struct task *t)
{
	atomic_store_explicit(&t->next, NULL, memory_order_relaxed);
	/* acq_rel: acquire so that our link below follows the previous producer's
	 * store of prev itself; release so the consumer that reaches t through a
	 * later producer's link sees t's fields. */
	struct task *prev = atomic_exchange_explicit(&q->tail, t, memory_order_acq_rel);
	/* release: publishes t's fields (fn, arg, the job) to the consumer's acquire
	 * load of prev->next in take_one. Until this store the consumer sees a gap and
	 * stops (take_one returns NULL with depth still counting t). */
	atomic_store_explicit(&prev->next, t, memory_order_release);
}

/* Consumer only. NULL when empty or when a producer is between exchange and link. */
static struct task *
take_one(struct injector *q)
{
	struct task *head = q->head;
	/* acquire: pairs with the release store of the link in heist__injector_push. */
	struct task *next = atomic_load_explicit(&head->next, memory_order_acquire);
	if (head == &q->sentinel) {
		if (!next)
			return NULL;
		q->head = head = next;
		next = atomic_load_explicit(&head->next, memory_order_acquire);
	}
	if (next) {
		q->head = next;
		return head;
	}
	/* head is the last linked node. If it is also the tail, put the sentinel behind
	 * it so that head can be handed out; otherwise a producer is mid-push. */
	if (atomic_load_explicit(&q->tail, memory_order_acquire) != head)
		return NULL;
	heist__injector_push(q, &q->sentinel);
	next = atomic_load_explicit(&head->next, memory_order_acquire);
	if (!next)
		return NULL;
	q->head = next;
	return head;
}

/* Become the consumer, or fail fast: nobody else is, and the queue looks non-empty.
 * relaxed peeks: a stale value only delays the take to the next look. acquire: pairs
 * with the release store that frees the flag (consumer_leave), so we see the head the
 * previous consumer left. */
static bool
consumer_enter(struct injector *q)
{
	return atomic_load_explicit(&q->depth, memory_order_relaxed) != 0 &&
	       !atomic_load_explicit(&q->consuming, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&q->consuming, true, memory_order_acquire);
}

/* Stop being the consumer, having taken n tasks. */
static void
consumer_leave(struct injector *q, size_t n)
{
	/* release: hands our head to the next consumer's acquire exchange. */
	atomic_store_explicit(&q->consuming, false, memory_order_release);
	if (!n)
		return;
	/* seq_cst: pairs with the producers' reserve (see there). */
	atomic_fetch_sub_explicit(&q->depth, n, memory_order_seq_cst);
	if (q->limit && atomic_load_explicit(&q->room_waiters, memory_order_seq_cst)) {
		/* release: nothing rides on it but the wake; the waiters re-read depth
		 * themselves. */
		atomic_fetch_add_explicit(&q->room_seq, 1, memory_order_release);
		heist__futex_wake(&q->room_seq, INT_MAX);
	}
}

size_t
heist__injector_take(struct injector *q, struct task **out, size_t max)
{
	if (!consumer_enter(q))
		return 0;
	size_t n = 0;
	while (n < max) {
		struct task *t = take_one(q);
		if (!t)
			break;
		out[n++] = t;
	}
	consumer_leave(q, n);
	return n;
}

struct task *
heist__injector_take_if(struct injector *q, bool (*match)(void *ctx, struct task *t),
			void *ctx, bool *busy)
{
	if (!consumer_enter(q)) {
		/* Not empty: another thread is the consumer, or was a moment ago and
		 * left tasks behind, or a producer has just come; either way we did not
		 * look at the oldest task. seq_cst (heist__injector_depth): in the order
		 * of the producers' and consumers' seq_cst RMWs of depth, so that if we
		 * call the queue empty, the caller's later seq_cst look
		 * (heist__pool_work_visible) that finds tasks finds newer pushes, not
		 * old entries a stale peek passed over. */
		*busy = heist__injector_depth(q) != 0;
		return NULL;
	}
	*busy = false;
	/* The task take_one would hand out next: the head, past the sentinel.
	 * acquire: as in take_one. */
	struct task *t = q->head;
	if (t == &q->sentinel)
		t = atomic_load_explicit(&t->next, memory_order_acquire);
	if (t && match(ctx, t))
		t = take_one(q);	/* that one, or NULL (a producer is mid-push) */
	else
		t = NULL;
	consumer_leave(q, t != NULL);
	return t;
}

struct task *
heist__injector_find(struct injector *q, bool (*match)(void *ctx, struct task *t), void *ctx)
{
	if (!consumer_enter(q))
		return NULL;
	struct task *found = NULL;
	/* acquire: pairs with the release store of each link in heist__injector_push, so
	 * a node reached through a link is fully written. Producers touch only the tail
	 * and the link of the node before theirs; nothing here changes the list. */
	for (struct task *t = q->head; t && !found;
	     t = atomic_load_explicit(&t->next, memory_order_acquire))
		if (t != &q->sentinel && match(ctx, t))
			found = t;
	consumer_leave(q, 0);
	return found;
}
