/* SPDX-License-Identifier: MIT */
/* latch.h - a one-shot countdown latch: tasks count down, one thread waits for zero.
 * Used where an implementation has fire-and-forget tasks but nothing to wait for them
 * with (heist W5, oneTBB W6). The waiter spins briefly, then sleeps on a futex (Linux;
 * elsewhere it yields). Plain C11; usable from C++ through the functions only. */
#ifndef HEIST_BENCH_LATCH_H
#define HEIST_BENCH_LATCH_H

#ifdef __cplusplus
extern "C" {
#endif

struct latch;

/* A latch that opens after count count-downs; exit(1) on ENOMEM. */
struct latch *latch_create(long count);
void latch_destroy(struct latch *l);

/* Re-arm for another round; nobody may be counting down or waiting. */
void latch_reset(struct latch *l, long count);

/* One count-down; the last one opens the latch and wakes the waiter. Everything the
 * counting threads wrote before it is visible to the waiter once latch_wait returns. */
void latch_count_down(struct latch *l);

/* Wait until the latch is open. */
void latch_wait(struct latch *l);

#ifdef __cplusplus
}
#endif

#endif /* HEIST_BENCH_LATCH_H */
