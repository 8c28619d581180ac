/* SPDX-License-Identifier: MIT */
/* pipeline.c - dependent stages: each input is loaded by a task and parsed by its
 * continuation; a when_all of the parses starts the combine step, which sums the
 * inputs in a task group; a last continuation reports. No thread blocks in between. */
#include <heist/heist.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 4, VALUES = 16 };

static struct input {
	char text[128];		/* load's output */
	long values[VALUES];	/* parse's output */
	long sum;		/* its group task's output */
} in[N];

static heist_pool *pool;
static long total;
static int idle_in_task, reports;

static int
load(void *arg)	/* stands for reading a file (which belongs on a thread of your own) */
{
	struct input *it = arg;
	for (int k = 0, len = 0; k < VALUES; k++)
		len += snprintf(it->text + len, sizeof it->text - len, "%td ", (it - in) * 100 + k);
	return 0;
}

static int
parse(void *arg)	/* load's continuation: queued once load is done */
{
	struct input *it = arg;
	char *p = it->text, *end;
	for (int k = 0; k < VALUES; k++, p = end) {
		it->values[k] = strtol(p, &end, 10);
		if (end == p)
			return EINVAL;	/* reaches the when_all, and so combine */
	}
	return 0;
}

static int
sum_one(void *arg)	/* a task of combine's group */
{
	struct input *it = arg;
	for (int k = 0; k < VALUES; k++)
		it->sum += it->values[k];
	return 0;
}

static int
combine(void *arg)	/* the when_all's continuation: every parse has ended */
{
	idle_in_task = heist_pool_wait_idle(pool);	/* EDEADLK: it would wait for itself */
	heist_group *g;
	int err = heist_future_wait(arg);	/* the when_all: done, 0 or a parse's error */
	if (err || (err = heist_group_create(pool, &g)) != 0)
		return err;
	for (int i = 0; i < N && !err; i++)
		err = heist_group_submit(g, sum_one, &in[i]);
	int r = heist_group_wait(g);	/* runs those still on this worker's deque */
	heist_group_destroy(g);
	for (int i = 0; i < N; i++)
		total += in[i].sum;
	return err ? err : r;
}

static int
report(void *arg)	/* a continuation of a done future, fire and forget */
{
	printf("%d inputs, total %ld\n", N, *(const long *)arg);
	reports++;
	return 0;
}

int
main(void)
{
	if (heist_pool_create(&pool, NULL))
		return 1;
	heist_future *loaded, *parsed[N], *all, *combined;
	for (int i = 0; i < N; i++) {
		if (heist_submit(pool, load, &in[i], &loaded) ||
		    heist_future_then(loaded, parse, &in[i], &parsed[i]))
			return 1;
		heist_future_release(loaded);	/* detached: it runs, and then parse */
	}
	if (heist_when_all(pool, parsed, N, &all))
		return 1;
	for (int i = 0; i < N; i++)
		heist_future_release(parsed[i]);	/* the when_all needs them no more */
	if (heist_future_then(all, combine, all, &combined))	/* combine waits for all too */
		return 1;
	int err = heist_future_wait(combined);	/* combine's result */
	heist_future_release(all);	/* not before: combine used it */
	if (heist_future_then(combined, report, &total, NULL))	/* done: queued at once */
		return 1;
	heist_future_release(combined);
	int idle = heist_pool_wait_idle(pool);	/* all of the above, report included */
	int wrong = err || idle || idle_in_task != EDEADLK || reports != 1 ||
		    total != 100L * VALUES * N * (N - 1) / 2 + N * VALUES * (VALUES - 1) / 2;
	heist_pool_destroy(pool);
	return wrong;
}
