/* SPDX-License-Identifier: MIT */
/* posix/process.c - platform.h's process id (getpid), whether it runs set-user-ID or
 * set-group-ID (its real and effective ids differ), and its new files (open with
 * O_EXCL). The program's name differs by system: linux/system.c, posix/system.c. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "../platform.h"

#include <errno.h>
#include <fcntl.h>
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

FILE *
heist__file_create(const char *path)
{
	/* O_EXCL with O_CREAT fails on any name that exists, a symbolic link too (POSIX:
	 * it is not followed); O_NOFOLLOW says so again for systems that bend that. */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int err = errno;
		close(fd);
		unlink(path);
		errno = err;
	}
	return f;
}
