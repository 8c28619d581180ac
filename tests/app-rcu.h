/* SPDX-License-Identifier: MIT */
/* app-rcu.h - one liburcu flavor used by an application beside heist
 * (app-rcu.c, built as memb_* and as qsbr_*), for test-urcu.c. */
#ifndef HEIST_TESTS_APP_RCU_H
#define HEIST_TESTS_APP_RCU_H

struct urcu_result {
	long reads, violations, retirements;
};

#define URCU_FLAVOR_API(f)                                                           \
	void f##_start_hook(void *ctx, unsigned index);	/* heist_config hooks */     \
	void f##_stop_hook(void *ctx, unsigned index);                               \
	int f##_read_task(void *arg);		/* a heist task: one read section */ \
	int f##_setup(void);			/* on the updater: register, publish */ \
	int f##_update(unsigned i);		/* replace; retire the old one */    \
	void f##_finish(struct urcu_result *out);	/* barrier, results, free */

URCU_FLAVOR_API(memb)
URCU_FLAVOR_API(qsbr)

#endif
