/* SPDX-License-Identifier: MIT */
/* graph.c - task graphs: a 1-D stencil whose every point is a dependent task of its
 * neighbours one step back (heist_submit_after), in a group; then vectors updated by
 * tasks that only say what they read and write (heist_dataflow), from which heist
 * derives the order. Both are checked against a serial run. */
#include <heist/heist.h>
#include <stdio.h>
#include <string.h>

enum { WIDTH = 8, STEPS = 100, N = 1000 };

struct point {
	long value;
	const struct point *in[3];
	int nin;
};

static struct point grid[STEPS][WIDTH];

static int
point_run(void *arg)
{
	struct point *p = arg;
	long sum = 1;
	for (int k = 0; k < p->nin; k++)
		sum += p->in[k]->value;
	p->value = sum % 1000003;
	return 0;
}

/* Each point after its inputs: no thread waits in between, one record per point. */
static int
stencil(heist_pool *pool, heist_group *g)
{
	static heist_future *f[STEPS][WIDTH];
	struct heist_after in_group = {.group = g};
	for (int t = 0; t < STEPS; t++)
		for (int i = 0; i < WIDTH; i++) {
			struct point *p = &grid[t][i];
			heist_future *inputs[3];
			p->nin = 0;
			for (int j = i - 1; t > 0 && j <= i + 1; j++)
				if (j >= 0 && j < WIDTH) {
					inputs[p->nin] = f[t - 1][j];
					p->in[p->nin++] = &grid[t - 1][j];
				}
			int err = heist_submit_after(pool, inputs, (size_t)p->nin, point_run, p,
						     &in_group, &f[t][i]);
			if (err)
				return err;
			if (t >= 2)	/* nothing names step t - 2 any more */
				heist_future_release(f[t - 2][i]);
		}
	int err = heist_group_wait(g);	/* every point, or the first error */
	for (int t = STEPS - 2; t < STEPS; t++)
		for (int i = 0; i < WIDTH; i++)
			heist_future_release(f[t][i]);
	return err;
}

static double a[N], b[N], c[N];

static int fill_a(void *arg) { (void)arg; for (int i = 0; i < N; i++) a[i] = i; return 0; }
static int fill_b(void *arg) { (void)arg; for (int i = 0; i < N; i++) b[i] = 2 * i; return 0; }
static int add(void *arg) { (void)arg; for (int i = 0; i < N; i++) c[i] = a[i] + b[i]; return 0; }
static int scale_a(void *arg) { (void)arg; for (int i = 0; i < N; i++) a[i] *= 10; return 0; }

/* What each task reads and writes; heist orders them: add after both fills (read
 * after write), scale_a after add has read a (write after read). */
static int
vectors(heist_pool *pool)
{
	heist_dataflow *df;
	int err = heist_dataflow_create(pool, &df);
	if (err)
		return err;
	struct heist_access w_a = {a, HEIST_OUT}, w_b = {b, HEIST_OUT}, rw_a = {a, HEIST_INOUT};
	struct heist_access sum[3] = {{a, HEIST_IN}, {b, HEIST_IN}, {c, HEIST_OUT}};
	if (!err)
		err = heist_dataflow_submit(df, &w_a, 1, fill_a, NULL, NULL);
	if (!err)
		err = heist_dataflow_submit(df, &w_b, 1, fill_b, NULL, NULL);
	if (!err)
		err = heist_dataflow_submit(df, sum, 3, add, NULL, NULL);
	if (!err)
		err = heist_dataflow_submit(df, &rw_a, 1, scale_a, NULL, NULL);
	int waited = heist_dataflow_wait(df);
	heist_dataflow_destroy(df);
	return err ? err : waited;
}

int
main(void)
{
	heist_pool *pool;
	heist_group *g;
	int err = heist_pool_create(&pool, NULL);
	if (err) {
		fprintf(stderr, "pool: %s\n", strerror(err));
		return 1;
	}
	err = heist_group_create(pool, &g);
	if (!err)
		err = stencil(pool, g);
	if (!err)
		err = vectors(pool);
	heist_group_destroy(g);
	heist_pool_destroy(pool);
	if (err) {
		fprintf(stderr, "graph: %s\n", strerror(err));
		return 1;
	}
	long prev[WIDTH] = {0}, cur[WIDTH];	/* the stencil, serially */
	for (int t = 0; t < STEPS; t++) {
		for (int i = 0; i < WIDTH; i++) {
			long sum = 1;
			for (int j = i - 1; t > 0 && j <= i + 1; j++)
				sum += j >= 0 && j < WIDTH ? prev[j] : 0;
			cur[i] = sum % 1000003;
		}
		memcpy(prev, cur, sizeof prev);
	}
	int wrong = 0;
	for (int i = 0; i < WIDTH; i++)
		wrong += grid[STEPS - 1][i].value != cur[i];
	for (int i = 0; i < N; i++)
		wrong += c[i] != 3.0 * i || a[i] != 10.0 * i;
	printf("stencil %ld %ld ... %ld; vectors %s\n", cur[0], cur[1], cur[WIDTH - 1],
	       wrong ? "WRONG" : "ok");
	return wrong != 0;
}
