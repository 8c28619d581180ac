/* SPDX-License-Identifier: MIT */
/* win/types.h - platform.h's types on Windows, without <windows.h>: each is the size
 * and alignment of what win/thread.c keeps in it (a HANDLE, an SRWLOCK, an INIT_ONCE,
 * a fiber-local storage index), which that file checks with static_assert. */
#ifndef HEIST_PLATFORM_WIN_TYPES_H
#define HEIST_PLATFORM_WIN_TYPES_H

typedef struct { void *handle; } heist__thread;
typedef struct { void *srw; } heist__mutex;
typedef struct { void *init_once; } heist__once_flag;
typedef unsigned long heist__key;

#define HEIST__MUTEX_INIT {0}	/* SRWLOCK_INIT */
#define HEIST__ONCE_INIT {0}	/* INIT_ONCE_STATIC_INIT */
#define HEIST__HAS_FORK 0	/* heist__fork_handlers gives ENOSYS */

#endif
