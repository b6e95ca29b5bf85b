/* The oracle (the paper's OPT): every pair of pending classes at every full split is
 * measured by the backend's trial op (cached per pair of classes, as the paper's offline
 * pre-execution), and the pair and split of highest measured CP run. No pruning. */
#include "policy.h"

#define MAX_CANDIDATES 256

static void opt_decide(ksched *s, void *state)
{
    (void)state;
    if (sched_solo_or_whole(s))
        return;
    sched_kernel *c[MAX_CANDIDATES];
    unsigned n = sched_pair_candidates(s, c, MAX_CANDIDATES);
    const pair_entry *best = NULL;
    sched_kernel *ba = NULL, *bb = NULL;
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = i + 1; j < n; j++) {
            const pair_entry *e = sched_pair_trial(s, c[i], c[j]);
            if (e && e->fits && (!best || e->cp > best->cp)) {
                best = e;
                ba = c[i];
                bb = c[j];
            }
        }
    if (best && best->cp > s->cfg.min_cp) {
        int swap = best->a != ba->cls->index;
        unsigned bps[2] = {best->bps[swap], best->bps[!swap]};
        double waves[2] = {best->wave_ns[swap], best->wave_ns[!swap]};
        sched_plan_pair(s, ba, bb, bps, waves);
    } else {
        sched_kernel *o = c[0];
        for (unsigned i = 1; i < n; i++)
            o = c[i]->seq < o->seq ? c[i] : o;
        sched_plan_solo(s, o);
    }
    sched_trace_decision(s, best ? best->cp : 0, n * (n - 1) / 2, 0, 0);
}

const sched_policy sched_policy_opt = {.name = "opt", .decide = opt_decide, .needs_trial = 1};
