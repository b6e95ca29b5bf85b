/* The policies that never slice, the paper's baselines: fifo runs one whole kernel at a time
 * in arrival order; base (kernel consolidation) runs whole kernels side by side on
 * ksched_config.base_lanes lanes. */
#include "policy.h"

static void fifo_decide(ksched *s, void *state)
{
    (void)state;
    sched_run_whole(s, 1);
}

static void base_decide(ksched *s, void *state)
{
    (void)state;
    sched_run_whole(s, s->cfg.base_lanes);
}

const sched_policy sched_policy_fifo = {
    .name = "fifo", .decide = fifo_decide, .whole_kernels = 1,
};

const sched_policy sched_policy_base = {
    .name = "base", .decide = base_decide, .whole_kernels = 1,
};
