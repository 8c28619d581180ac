/* SPDX-License-Identifier: MIT */
/* baseline_pool.c - mutex + condvar FIFO thread pool (see baseline_pool.h). Deliberately
 * plain: one lock for everything, a node per task, a signal per submit. */
#define _POSIX_C_SOURCE 200809L

#include "baseline_pool.h"

#include <errno.h>
#include <stdlib.h>

struct node {
	struct node *next;
	void (*fn)(void *);
	void *arg;
};

struct baseline_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;	/* queue became non-empty, or stop */
	pthread_cond_t idle;	/* pending dropped to zero */
	struct node *head, *tail;
	unsigned long pending;	/* submitted and not yet finished */
	bool stop;
	unsigned nthreads;
	pthread_t *threads;
};

static void *
worker(void *arg)
{
	struct baseline_pool *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->work, &p->lock);
		struct node *n = p->head;
		if (!n)
			break;	/* stop, and nothing left to run */
		p->head = n->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);

		n->fn(n->arg);
		free(n);

		pthread_mutex_lock(&p->lock);
		if (--p->pending == 0)
			pthread_cond_broadcast(&p->idle);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void
stop_and_join(struct baseline_pool *p, unsigned started)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(p->threads[i], NULL);
}

static void
free_pool(struct baseline_pool *p)
{
	pthread_cond_destroy(&p->idle);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}

int
baseline_pool_create(struct baseline_pool **out, unsigned threads)
{
	*out = NULL;
	if (threads == 0)
		return EINVAL;
	struct baseline_pool *p = calloc(1, sizeof *p);
	if (!p)
		return ENOMEM;
	p->threads = calloc(threads, sizeof *p->threads);
	if (!p->threads) {
		free(p);
		return ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->nthreads = threads;
	for (unsigned i = 0; i < threads; i++) {
		int err = pthread_create(&p->threads[i], NULL, worker, p);
		if (err) {
			stop_and_join(p, i);
			free_pool(p);
			return err;
		}
	}
	*out = p;
	return 0;
}

int
baseline_submit(struct baseline_pool *p, void (*fn)(void *), void *arg)
{
	struct node *n = malloc(sizeof *n);
	if (!n)
		return ENOMEM;
	n->next = NULL;
	n->fn = fn;
	n->arg = arg;
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = n;
	else
		p->head = n;
	p->tail = n;
	p->pending++;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

void
baseline_wait_all(struct baseline_pool *p)
{
	pthread_mutex_lock(&p->lock);
	while (p->pending)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void
baseline_pool_destroy(struct baseline_pool *p)
{
	if (!p)
		return;
	stop_and_join(p, p->nthreads);
	free_pool(p);
}

void
baseline_future_init(struct baseline_future *f)
{
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->done = false;
	f->result = 0;
}

void
baseline_future_fini(struct baseline_future *f)
{
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
}

void
baseline_future_set(struct baseline_future *f, int result)
{
	pthread_mutex_lock(&f->lock);
	f->result = result;
	f->done = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

int
baseline_future_wait(struct baseline_future *f)
{
	pthread_mutex_lock(&f->lock);
	while (!f->done)
		pthread_cond_wait(&f->cond, &f->lock);
	int r = f->result;
	pthread_mutex_unlock(&f->lock);
	return r;
}
