/* Monte Carlo co-schedules (the paper's MC): a random pair of pending classes at a random
 * full split, from the scheduler's seeded generator, so a seed fixes the whole run. */
#include <stdlib.h>

#include "policy.h"

#define MAX_CANDIDATES 256
#define MAX_SPLITS 64

/* The generator's state: seeded once per scheduler (ksched_config.seed) and kept across
 * policy switches, so that a seed fixes the whole run. */
typedef struct mc_state {
    uint64_t rng;
} mc_state;

static void *mc_state_new(const ksched_config *cfg)
{
    mc_state *m = malloc(sizeof(*m));
    if (m)
        m->rng = cfg->seed;
    return m;
}

/* splitmix64 */
static uint64_t next_random(mc_state *m)
{
    uint64_t z = (m->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void mc_decide(ksched *s, void *state)
{
    mc_state *gen = state;
    if (sched_solo_or_whole(s))
        return;
    sched_kernel *c[MAX_CANDIDATES];
    unsigned n = sched_pair_candidates(s, c, MAX_CANDIDATES);
    if (n < 2) {
        sched_plan_solo(s, c[0]);
        sched_trace_decision(s, 0, 0, 0, 0);
        return;
    }
    unsigned i = (unsigned)(next_random(gen) % n);
    unsigned j = (unsigned)(next_random(gen) % (n - 1));
    j += j >= i;
    unsigned splits[MAX_SPLITS][2];
    int m = sched_full_splits(s, c[i]->cls, c[j]->cls, splits, MAX_SPLITS);
    if (m <= 0) {
        sched_plan_solo(s, c[i]);
    } else {
        unsigned k = (unsigned)(next_random(gen) % (unsigned)m);
        double waves[2] = {0, 0};
        sched_model_waves(s, c[i]->cls, c[j]->cls, splits[k], waves, NULL);
        sched_plan_pair(s, c[i], c[j], splits[k], waves);
    }
    sched_trace_decision(s, 0, n * (n - 1) / 2, 0, 0);
}

const sched_policy sched_policy_mc = {
    .name = "mc", .decide = mc_decide, .state_new = mc_state_new, .state_free = free,
};
