/* SPDX-License-Identifier: MIT */
/* posix/thread.c - platform.h's threads, locks, once, thread-exit keys and fork
 * handlers on pthreads. Names and pinning differ by system: linux/system.c,
 * posix/system.c. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "../platform.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

struct start {
	void (*fn)(void *);
	void *arg;
};

static void *
trampoline(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	s.fn(s.arg);
	return NULL;
}

int
heist__thread_start(heist__thread *t, size_t stack_bytes, void (*fn)(void *), void *arg)
{
	int saved = errno;	/* the caller's, which pthread_create must not change */
	struct start *s = malloc(sizeof(*s));
	if (!s) {
		errno = saved;
		return ENOMEM;
	}
	*s = (struct start){fn, arg};
	pthread_attr_t attr;
	int err = pthread_attr_init(&attr);
	if (!err && stack_bytes)
		err = pthread_attr_setstacksize(&attr, stack_bytes);
	if (!err)
		err = pthread_create(t, &attr, trampoline, s);
	pthread_attr_destroy(&attr);
	if (err)
		free(s);
	errno = saved;
	return err;
}

void
heist__thread_join(heist__thread t)
{
	pthread_join(t, NULL);
}

void
heist__thread_yield(void)
{
	sched_yield();
}

int
heist__mutex_init(heist__mutex *m)
{
	return pthread_mutex_init(m, NULL);
}

void
heist__mutex_destroy(heist__mutex *m)
{
	pthread_mutex_destroy(m);
}

void
heist__mutex_lock(heist__mutex *m)
{
	pthread_mutex_lock(m);
}

void
heist__mutex_unlock(heist__mutex *m)
{
	pthread_mutex_unlock(m);
}

void
heist__once(heist__once_flag *o, void (*fn)(void))
{
	pthread_once(o, fn);
}

int
heist__key_create(heist__key *k, void (*destructor)(void *))
{
	return pthread_key_create(k, destructor);
}

int
heist__key_set(heist__key k, void *value)
{
	return pthread_setspecific(k, value);
}

int
heist__fork_handlers(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	return pthread_atfork(prepare, parent, child);
}
