/* Online tuning of pair plans (ksched_config.pair_tune): how a pair's slices should be cut
 * and launched is a property of the GPU and of both kernels that no model here predicts
 * (docs/perf/scheduling.md: on an H100 the same pair gains 27% with one-wave capped slices
 * and nothing with them when compiled differently, where three-wave uncapped slices gain
 * 12%). So each pair of classes runs under every candidate plan in turn, on its real work,
 * for EXPLORE_NS (2 ms) of wall-clock time each; the work completed per time is measured as the
 * time those blocks take alone (the classes' block_ns), so 1.0 is as fast as running them
 * one after the other; the best candidate is kept. A pair whose best does not beat running
 * its kernels whole side by side (the first candidate, base's way) is not paired again.
 *
 * Work is counted when it completes, in the interval in which it completes: work queued
 * under one candidate and finished under the next is counted for the next. Intervals are
 * short (one decision to the next) and each candidate gets many; and the first WARM_NS of
 * each candidate are not measured, which leaves the error small. */
#include "sched_internal.h"

#define EXPLORE_NS 2000000.0         /* wall-clock time each candidate runs */

#define WARM_NS 500000.0            /* and before that, unmeasured */

/* Not pairing and the configured plan come first: a pair whose configured plan does clearly
 * worse than not pairing at all (short kernels of programs that wait for each launch, on
 * the H100: 0.10 against 0.27) stops there instead of trying the other ways of pairing. */
#define UNPAIRED 0
#define CONFIGURED 1
#define CLEARLY_WORSE 0.9

static const tune_plan candidates[PAIR_TUNE_CANDIDATES] = {
    {.index = UNPAIRED, .whole = 1},
    {.index = CONFIGURED, .waves = -1},      /* the configuration's (paper's) sizing */
    {.index = 2, .waves = 2, .uncapped = 1},
    {.index = 3, .waves = 3, .uncapped = 1},
    {.index = 4, .waves = 1, .even = 1},     /* half an SM each, one-wave capped slices */
    {.index = 5, .waves = 3, .uncapped = 1, .even = 1},
};

static const char *const plan_names[PAIR_TUNE_CANDIDATES] = {
    "unpaired", "configured", "2 waves", "3 waves", "even 1 wave capped", "even 3 waves",
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

/* Tells the trace which plan e kept and what each gave. */
static void trace_tuned(ksched *s, const pair_entry *e)
{
    if (!s->cfg.trace)
        return;
    double gains[PAIR_TUNE_CANDIDATES];
    for (unsigned i = 0; i < PAIR_TUNE_CANDIDATES; i++)
        gains[i] = gain(&e->tune, i);
    ksched_trace t = {.kind = KSCHED_TRACE_TUNED, .now_ns = sched_now(s),
                      .entry = {s->classes[e->a]->entry, s->classes[e->b]->entry},
                      .first = (uint64_t)e->tune.chosen, .tune_plans = plan_names,
                      .tune_gain = gains, .n_tune_plans = PAIR_TUNE_CANDIDATES};
    s->cfg.trace(s->cfg.trace_user, &t);
}

/* Keeps the best of the candidates measured so far (the first `tried`). */
static void keep_best(ksched *s, pair_entry *e, unsigned tried)
{
    pair_tune *t = &e->tune;
    unsigned best = 0;
    for (unsigned i = 1; i < tried; i++)
        if (gain(t, i) > gain(t, best))
            best = i;
    t->chosen = (int)best;
    s->stats.pairs_tuned++;
    s->stats.pairs_not_gaining += candidates[best].whole;
    trace_tuned(s, e);
}

void sched_tune_close(ksched *s)
{
    pair_entry *e = s->tune_now.e;
    if (!e)
        return;
    uint64_t now = sched_now(s);
    pair_tune *t = &e->tune;
    unsigned c = s->tune_now.cand;
    s->tune_now.e = NULL;
    double span = (double)(now - s->tune_now.since);
    if (t->chosen < 0 && c == t->current && t->warm_ns < WARM_NS) {
        t->warm_ns += span;     /* still finishing the previous candidate's work */
        return;
    }
    t->wall_ns[c] += span;
    t->work_ns[c] += s->tune_now.work_ns;
    if (t->chosen >= 0 || c != t->current || t->wall_ns[c] < EXPLORE_NS)
        return;
    t->warm_ns = 0;
    if (++t->current == PAIR_TUNE_CANDIDATES)
        keep_best(s, e, PAIR_TUNE_CANDIDATES);
    else if (c == CONFIGURED && gain(t, CONFIGURED) < CLEARLY_WORSE * gain(t, UNPAIRED))
        keep_best(s, e, CONFIGURED + 1);
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
