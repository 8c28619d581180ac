/* SPDX-License-Identifier: MIT */
/* posix/types.h - platform.h's types on POSIX systems: pthreads'. */
#ifndef HEIST_PLATFORM_POSIX_TYPES_H
#define HEIST_PLATFORM_POSIX_TYPES_H

#include <pthread.h>

typedef pthread_t heist__thread;
typedef pthread_mutex_t heist__mutex;
typedef pthread_once_t heist__once_flag;
typedef pthread_key_t heist__key;

#define HEIST__MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define HEIST__ONCE_INIT PTHREAD_ONCE_INIT
#define HEIST__HAS_FORK 1

#endif
