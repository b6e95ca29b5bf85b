/* A scheduling policy: one row of the policy table (policy_table.c). Adding a policy is a
 * file that defines its row, the row in the table and the file in meson.build. */
#ifndef KERNELET_SCHED_POLICY_H
#define KERNELET_SCHED_POLICY_H

#include "sched_internal.h"

typedef struct sched_policy {
    const char *name;           /* as ksched_policy_name gives it and the operator types it */
    /* One decision, with the scheduler's lock held. A pair policy sets s->plan (a pair, a
     * kernel alone or a kernel whole) and the dispatcher hands out its slices until the
     * pending set changes; a whole-kernel policy (whole_kernels) launches whole kernels
     * itself with sched_run_whole and leaves no plan. */
    void (*decide)(ksched *s, void *state);
    int needs_trial;            /* measures pairs with the backend's trial op */
    int whole_kernels;          /* decide launches whole kernels, timing each itself */
    /* Private state, one per scheduler, made when the scheduler is (so that switching
     * policies keeps it); NULL when the policy keeps none. */
    void *(*state_new)(const ksched_config *cfg);
    void (*state_free)(void *state);
} sched_policy;

/* The row of policy p (an index of the table), NULL when out of range. */
const sched_policy *sched_policy_get(ksched_policy p);

/* Makes and frees every policy's private state in s->policy_state. */
int sched_policy_states_new(ksched *s);
void sched_policy_states_free(ksched *s);

#endif
