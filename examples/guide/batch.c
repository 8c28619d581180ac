/* SPDX-License-Identifier: MIT */
/* batch.c - a batch of jobs under one cancellation token: the first job that fails
 * cancels the rest. Jobs not yet started never run; running ones stop early. */
#include <heist/heist.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

struct job {
	unsigned index;
	heist_cancel *token;	/* the batch's token, to cancel the others */
	double result;
};

static int
work(void *arg)
{
	struct job *j = arg;
	double x = j->index;
	for (long i = 0; i < 4000000; i++) {
		if (i % 65536 == 0 && heist_cancelled())
			return ECANCELED;	/* someone else failed: stop */
		x = x * 1.0000001 + 1e-9;
	}
	if (j->index == 13) {		/* this job fails */
		heist_cancel_request(j->token);
		return EIO;
	}
	j->result = x;
	return 0;
}

int
main(void)
{
	enum { N = 64 };
	static struct job jobs[N];
	heist_future *f[N];
	heist_pool *pool;
	heist_cancel *token;
	if (heist_pool_create(&pool, NULL) || heist_cancel_create(&token))
		return 1;
	for (unsigned i = 0; i < N; i++) {
		jobs[i] = (struct job){i, token, 0};
		int err = heist_submit_cancellable(pool, token, work, &jobs[i], &f[i]);
		if (err) {
			fprintf(stderr, "submit: %s\n", strerror(err));
			return 1;
		}
	}
	unsigned done = 0, cancelled = 0, failed = 0;
	for (unsigned i = 0; i < N; i++) {
		int r = heist_future_wait(f[i]);	/* ECANCELED if it never ran */
		if (r == 0) {
			done++;
		} else if (r == ECANCELED) {
			cancelled++;
		} else {
			failed++;
			printf("job %u failed: %s\n", i, strerror(r));
		}
		heist_future_release(f[i]);
	}
	printf("%u done, %u cancelled, %u failed\n", done, cancelled, failed);
	heist_cancel_release(token);	/* queued tasks held their own references */
	heist_pool_destroy(pool);
	return failed == 1 ? 0 : 1;
}
