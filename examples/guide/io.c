/* SPDX-License-Identifier: MIT */
/* io.c - keep blocking I/O out of tasks: the main thread reads the file (blocking is
 * fine there), and tasks only compute. A task blocked in read() holds a worker the
 * pool cannot replace. Usage: example-guide-io [FILE] (default: standard input). */
#include <heist/heist.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_ulong words;

static int
count_words(void *arg)
{
	const char *line = arg;	/* the task's own copy of the line */
	unsigned long n = 0;
	for (const char *p = line; *p; p++)
		if (*p != ' ' && *p != '\n' && (p == line || p[-1] == ' '))
			n++;
	atomic_fetch_add_explicit(&words, n, memory_order_relaxed);
	return 0;
}

int
main(int argc, char **argv)
{
	FILE *in = argc > 1 ? fopen(argv[1], "r") : stdin;
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	heist_pool *pool;
	if (heist_pool_create(&pool, &(struct heist_config){.injector_limit = 4096}))
		return 1;
	char line[512];
	unsigned long lines = 0;
	while (fgets(line, sizeof line, in)) {	/* blocking: on this thread, not a worker */
		/* Fire and forget (no future); the copy lets us reuse the buffer at once. */
		if (heist_submit_copy(pool, count_words, line, strlen(line) + 1, NULL))
			return 1;
		lines++;
	}
	heist_pool_destroy(pool);	/* runs every accepted task, then joins: never from a task */
	printf("%lu lines, %lu words\n", lines, atomic_load(&words));
	return in == stdin ? 0 : fclose(in) != 0;
}
