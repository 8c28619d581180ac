/* SPDX-License-Identifier: MIT */
/* test-version.c - the version macros generated from the project version agree with
 * heist_version() and heist_version_number() (src/version.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>	/* cmocka 1.1 needs the four headers above */

#include <stdio.h>

#include "heist/heist.h"

static void
string_is_the_headers_version(void **state)
{
	(void)state;
	assert_non_null(heist_version());
	assert_string_equal(heist_version(), HEIST_VERSION);
	char buf[32];
	snprintf(buf, sizeof(buf), "%d.%d.%d", HEIST_VERSION_MAJOR, HEIST_VERSION_MINOR,
		 HEIST_VERSION_PATCH);
	assert_string_equal(buf, HEIST_VERSION);
}

static void
number_is_major_minor_patch(void **state)
{
	(void)state;
	assert_int_equal(heist_version_number(), HEIST_VERSION_NUMBER);
	assert_int_equal(HEIST_VERSION_NUMBER, HEIST_VERSION_MAJOR * 1000000 +
			 HEIST_VERSION_MINOR * 1000 + HEIST_VERSION_PATCH);
}

static void
at_least_compares_every_part(void **state)
{
	(void)state;
	assert_true(HEIST_VERSION_AT_LEAST(HEIST_VERSION_MAJOR, HEIST_VERSION_MINOR,
					   HEIST_VERSION_PATCH));
	assert_true(HEIST_VERSION_AT_LEAST(0, 0, 0));
	assert_false(HEIST_VERSION_AT_LEAST(HEIST_VERSION_MAJOR, HEIST_VERSION_MINOR,
					    HEIST_VERSION_PATCH + 1));
	assert_false(HEIST_VERSION_AT_LEAST(HEIST_VERSION_MAJOR, HEIST_VERSION_MINOR + 1, 0));
	assert_false(HEIST_VERSION_AT_LEAST(HEIST_VERSION_MAJOR + 1, 0, 0));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(string_is_the_headers_version),
		cmocka_unit_test(number_is_major_minor_patch),
		cmocka_unit_test(at_least_compares_every_part),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
