/* Monte Carlo co-schedules (the paper's MC): a random pair of pending classes at a random
 * full split, from the scheduler's seeded generator, so a seed fixes the whole run. */
#include "sched_internal.h"

#define MAX_CANDIDATES 256
#define MAX_SPLITS 64

/* splitmix64 */
static uint64_t next_random(ksched *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void sched_policy_mc(ksched *s)
{
    if (sched_solo_or_whole(s))
        return;
    sched_kernel *c[MAX_CANDIDATES];
    unsigned n = sched_pair_candidates(s, c, MAX_CANDIDATES);
    if (n < 2) {
        sched_plan_solo(s, c[0]);
        sched_trace_decision(s, 0, 0, 0, 0);
        return;
    }
    unsigned i = (unsigned)(next_random(s) % n);
    unsigned j = (unsigned)(next_random(s) % (n - 1));
    j += j >= i;
    unsigned splits[MAX_SPLITS][2];
    int m = sched_full_splits(s, c[i]->cls, c[j]->cls, splits, MAX_SPLITS);
    if (m <= 0) {
        sched_plan_solo(s, c[i]);
    } else {
        unsigned k = (unsigned)(next_random(s) % (unsigned)m);
        double waves[2] = {0, 0};
        sched_model_waves(s, c[i]->cls, c[j]->cls, splits[k], waves, NULL);
        sched_plan_pair(s, c[i], c[j], splits[k], waves);
    }
    sched_trace_decision(s, 0, n * (n - 1) / 2, 0, 0);
}
