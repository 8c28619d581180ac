/* SPDX-License-Identifier: MIT */
/* posix/process.c - platform.h's process id (getpid) and whether it runs set-user-ID
 * or set-group-ID (its real and effective ids differ). The program's name differs by
 * system: linux/system.c, posix/system.c. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "../platform.h"

#include <unistd.h>

unsigned long
heist__process_id(void)
{
	return (unsigned long)getpid();
}

bool
heist__process_setid(void)
{
	return getuid() != geteuid() || getgid() != getegid();
}
