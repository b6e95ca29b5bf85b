/* Online tuning of pair plans (ksched_config.pair_tune): how a pair's slices should be cut
 * and launched is a property of the GPU and of both kernels that no model here predicts
 * (docs/perf/scheduling.md: on an H100 the same pair gains 27% with one-wave capped slices
 * and nothing with them when compiled differently, where three-wave uncapped slices gain
 * 12%). So each pair of classes runs under every candidate plan in turn, on its real work,
 * for EXPLORE_NS of wall-clock time each; the work completed per time is measured as the
 * time those blocks take alone (the classes' block_ns), so 1.0 is as fast as running them
 * one after the other; the best candidate is kept. A pair whose best does not beat running
 * its kernels whole side by side (the last candidate, base's way) is not paired again.
 *
 * Work is counted when it completes, in the interval in which it completes: work queued
 * under one candidate and finished under the next is counted for the next. Intervals are
 * short (one decision to the next) and each candidate gets many, so the error is small. */
#include "sched_internal.h"

#define EXPLORE_NS 3000000.0         /* wall-clock time each candidate runs */

static const tune_plan candidates[PAIR_TUNE_CANDIDATES] = {
    {.index = 0, .waves = -1},               /* the configuration's (paper's) sizing */
    {.index = 1, .waves = 1},                /* one-wave slices, capped */
    {.index = 2, .waves = 2, .uncapped = 1},
    {.index = 3, .waves = 3, .uncapped = 1},
    {.index = 4, .waves = 4, .uncapped = 1},
    {.index = 5, .whole = 1},                /* no pairing */
};

static double gain(const pair_tune *t, unsigned i)
{
    return t->wall_ns[i] > 0 ? t->work_ns[i] / t->wall_ns[i] : 0;
}

tune_plan sched_tune_plan(const pair_entry *e)
{
    return candidates[e->tune.chosen >= 0 ? (unsigned)e->tune.chosen : e->tune.current];
}

int sched_tune_no_gain(const pair_entry *e)
{
    return e->tune.chosen >= 0 && candidates[e->tune.chosen].whole;
}

static void keep_best(ksched *s, pair_tune *t)
{
    unsigned best = 0;
    for (unsigned i = 1; i < PAIR_TUNE_CANDIDATES; i++)
        if (gain(t, i) > gain(t, best))
            best = i;
    t->chosen = (int)best;
    s->stats.pairs_tuned++;
    s->stats.pairs_not_gaining += candidates[best].whole;
}

void sched_tune_close(ksched *s)
{
    pair_entry *e = s->tune_now.e;
    if (!e)
        return;
    uint64_t now = sched_now(s);
    pair_tune *t = &e->tune;
    unsigned c = s->tune_now.cand;
    t->wall_ns[c] += (double)(now - s->tune_now.since);
    t->work_ns[c] += s->tune_now.work_ns;
    s->tune_now.e = NULL;
    if (t->chosen >= 0 || c != t->current || t->wall_ns[c] < EXPLORE_NS)
        return;
    if (++t->current == PAIR_TUNE_CANDIDATES)
        keep_best(s, t);
}

void sched_tune_begin(ksched *s, pair_entry *e, unsigned cand)
{
    sched_tune_close(s);
    s->tune_now.e = e;
    s->tune_now.cand = cand;
    s->tune_now.since = sched_now(s);
    s->tune_now.work_ns = 0;
}

void sched_tune_note(ksched *s, const sched_kernel *k, uint64_t blocks)
{
    const pair_entry *e = s->tune_now.e;
    if (e && (k->cls->index == e->a || k->cls->index == e->b))
        s->tune_now.work_ns += (double)blocks * k->cls->block_ns;
}
