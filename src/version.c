/* SPDX-License-Identifier: MIT */
/* version.c - the library's version at run time, for a program to compare with the
 * HEIST_VERSION it was compiled against. The numbers come from heist/version.h, which
 * meson generates from the project version (include/heist/version.h.in); what each
 * number promises is in docs/abi.md. */
#include "internal.h"

HEIST_EXPORT const char *
heist_version(void)
{
	return HEIST_VERSION;
}

HEIST_EXPORT unsigned
heist_version_number(void)
{
	return HEIST_VERSION_NUMBER;
}
