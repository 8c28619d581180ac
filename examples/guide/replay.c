/* SPDX-License-Identifier: MIT */
/* replay.c - a graph built once and run many times (heist_graph): every frame of a toy
 * particle simulation is one run of the same graph, two loops and the tasks after
 * them, checked against the same frames computed serially. */
#include <heist/heist.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum { N = 100000, FRAMES = 200 };

struct sim {
	double x[N], v[N];
	double energy, lo, hi;	/* this frame's, by the tasks after the loops */
	double energy_sum;	/* over all frames, by the last node */
};

static struct sim par, ser;

static int
forces(void *arg, size_t begin, size_t end)
{
	struct sim *s = arg;
	for (size_t i = begin; i < end; i++)
		s->v[i] += -0.01 * s->x[i];	/* a spring towards 0 */
	return 0;
}

static int
moves(void *arg, size_t begin, size_t end)
{
	struct sim *s = arg;
	for (size_t i = begin; i < end; i++)
		s->x[i] += 0.1 * s->v[i];
	return 0;
}

static int
energy(void *arg)
{
	struct sim *s = arg;
	s->energy = 0;
	for (size_t i = 0; i < N; i++)
		s->energy += 0.5 * s->v[i] * s->v[i];
	return 0;
}

static int
bounds(void *arg)
{
	struct sim *s = arg;
	s->lo = s->hi = s->x[0];
	for (size_t i = 1; i < N; i++) {
		s->lo = s->x[i] < s->lo ? s->x[i] : s->lo;
		s->hi = s->x[i] > s->hi ? s->x[i] : s->hi;
	}
	return s->hi - s->lo > 1e6 ? ERANGE : 0;	/* an error ends the run */
}

static int
record(void *arg)
{
	struct sim *s = arg;
	s->energy_sum += s->energy;
	return 0;
}

static void
start(struct sim *s)
{
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < N; i++)
		s->x[i] = (double)(i % 1000) / 1000.0 - 0.5;
}

int
main(void)
{
	heist_pool *pool;
	heist_graph *frame;
	heist_graph_node *f, *m, *e, *b, *r;
	int err = heist_pool_create(&pool, NULL);
	if (err || (err = heist_graph_create(&frame)))
		return fprintf(stderr, "replay: %s\n", strerror(err)), 1;
	/* forces -> moves -> {energy, bounds} -> record: made once. */
	start(&par);
	if ((err = heist_graph_add_loop(frame, 0, N, 0, forces, &par, &f)) ||
	    (err = heist_graph_add_loop(frame, 0, N, 0, moves, &par, &m)) ||
	    (err = heist_graph_add_task(frame, energy, &par, &e)) ||
	    (err = heist_graph_add_task(frame, bounds, &par, &b)) ||
	    (err = heist_graph_add_task(frame, record, &par, &r)) ||
	    (err = heist_graph_edge(f, m)) || (err = heist_graph_edge(m, e)) ||
	    (err = heist_graph_edge(m, b)) || (err = heist_graph_edge(e, r)) ||
	    (err = heist_graph_edge(b, r)))
		return fprintf(stderr, "replay: %s\n", strerror(err)), 1;

	/* Run it once per frame: the runs queue in order, each with its own future.
	 * Here each frame is waited for, as a program that reads the frame would. */
	for (int k = 0; k < FRAMES && !err; k++) {
		heist_future *run;
		err = heist_graph_run(pool, frame, NULL, &run);
		if (!err) {
			err = heist_future_wait(run);
			heist_future_release(run);
		}
	}
	heist_graph_destroy(frame);
	heist_pool_destroy(pool);
	if (err)
		return fprintf(stderr, "replay: %s\n", strerror(err)), 1;

	start(&ser);	/* the same frames, serially */
	for (int k = 0; k < FRAMES; k++) {
		forces(&ser, 0, N);
		moves(&ser, 0, N);
		energy(&ser);
		bounds(&ser);
		record(&ser);
	}
	int same = memcmp(par.x, ser.x, sizeof par.x) == 0 && par.energy_sum == ser.energy_sum;
	printf("%d frames: energy %.6f, x in [%.4f, %.4f]: %s\n", FRAMES, par.energy_sum,
	       par.lo, par.hi, same ? "same as serial" : "DIFFERENT");
	return !same;
}
