/* SPDX-License-Identifier: MIT */
/* errors.c - how errors travel: API calls return a positive errno value, a task's
 * nonzero return reaches whoever waits for it, and the first nonzero loop body stops
 * a for_each and is returned. */
#include <heist/heist.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static int
parse(void *arg)
{
	const char *s = arg;
	return strspn(s, "0123456789") == strlen(s) ? 0 : EINVAL;	/* C's exception */
}

static const double values[] = {1, 2, 3, -4, 5, 6, -7, 8};

static int
check_range(void *arg, size_t begin, size_t end)
{
	(void)arg;
	for (size_t i = begin; i < end; i++)
		if (values[i] < 0)
			return ERANGE;	/* stops the sub-ranges not yet started */
	return 0;
}

int
main(void)
{
	heist_pool *pool;
	int err = heist_pool_create(&pool, &(struct heist_config){.threads = 100000});
	printf("create with 100000 threads: %s\n", strerror(err));	/* EINVAL */
	if ((err = heist_pool_create(&pool, NULL)) != 0) {
		fprintf(stderr, "heist_pool_create: %s\n", strerror(err));
		return 1;
	}
	heist_future *ok, *bad;
	if (heist_submit(pool, parse, "12345", &ok) || heist_submit(pool, parse, "12a45", &bad))
		return 1;
	printf("\"12345\": %s\n", strerror(heist_future_wait(ok)));	/* Success */
	printf("\"12a45\": %s\n", strerror(heist_future_wait(bad)));	/* EINVAL */
	heist_future_release(ok);
	heist_future_release(bad);

	err = heist_for_each(pool, 0, sizeof values / sizeof values[0], 1, check_range, NULL);
	printf("for_each: %s\n", strerror(err));	/* ERANGE */

	printf("submit(NULL fn): %s\n", strerror(heist_submit(pool, NULL, NULL, NULL)));
	heist_pool_destroy(pool);
	return 0;
}
