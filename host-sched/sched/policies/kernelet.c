/* Kernelet (the paper's Algorithm 1, FindCoSchedule): among the pending kernels, one per
 * class, the pairs whose PUR and MUR both differ enough (alpha_p, alpha_m) are evaluated
 * with the model at their balanced slice ratio; the pair of highest CP runs. When every
 * pair is pruned the thresholds are halved until one survives (after eight halvings, or
 * when they reach 0, nothing is pruned). A kernel past the aging bound (sched_aging.c)
 * comes first, beside its best partner. */
#include <math.h>

#include "policy.h"

#define MAX_CANDIDATES 256
#define MAX_WIDENINGS 8

typedef struct {
    sched_kernel *a, *b;
    unsigned bps[2];
    double wave_ns[2];
    double cp;
    pair_entry *entry;
} choice;

static int pruned(const sched_kernel *a, const sched_kernel *b, double ap, double am)
{
    return fabs(a->cls->prof.pur - b->cls->prof.pur) < ap ||
           fabs(a->cls->prof.mur - b->cls->prof.mur) < am;
}

/* The operator's fixed split (ksched_config.pair_split) in place of the model's: the more
 * compute-bound kernel gets the first number. Each wave's time scales with the blocks it
 * holds, a first-order guess that only sizes the slices. */
static void force_split(const ksched *s, choice *c)
{
    int a_compute = c->a->cls->prof.pur >= c->b->cls->prof.pur;
    unsigned want[2] = {s->cfg.pair_split[!a_compute], s->cfg.pair_split[a_compute]};
    kmodel_kernel ks[2] = {c->a->cls->k, c->b->cls->k};
    if (kmodel_fits(s->model, 2, ks, want) != 0)
        return;                 /* the SM cannot hold that split: the model's stands */
    for (int i = 0; i < 2; i++) {
        if (c->bps[i])
            c->wave_ns[i] *= (double)want[i] / c->bps[i];
        c->bps[i] = want[i];
    }
}

static sched_kernel *oldest(sched_kernel **c, unsigned n)
{
    sched_kernel *o = c[0];
    for (unsigned i = 1; i < n; i++)
        if (c[i]->seq < o->seq)
            o = c[i];
    return o;
}

/* Makes (a, b) the best choice when it fits and beats *found's best; 1 when it did, -1 when
 * tuning found that the pair gains nothing. */
static int consider(ksched *s, sched_kernel *a, sched_kernel *b, int *found, choice *best)
{
    pair_entry *e = sched_pair_model(s, a->cls, b->cls);
    if (e && e->fits && s->cfg.pair_tune && sched_tune_no_gain(e))
        return -1;
    if (!e || !e->fits || (*found && e->cp <= best->cp))
        return 0;
    int swap = e->a != a->cls->index;
    *best = (choice){.a = a, .b = b, .bps = {e->bps[swap], e->bps[!swap]},
                     .wave_ns = {e->wave_ns[swap], e->wave_ns[!swap]}, .cp = e->cp,
                     .entry = e};
    *found = 1;
    return 1;
}

/* Half of what fits of each kernel on an SM alone, when both halves fit together, with the
 * model's wave times there; else the split stays the model's. */
static void even_split(ksched *s, const choice *c, unsigned bps[2], double wave_ns[2])
{
    const sched_class *a = c->a->cls, *b = c->b->cls;
    unsigned half[2] = {a->max_blocks / 2 ? a->max_blocks / 2 : 1,
                        b->max_blocks / 2 ? b->max_blocks / 2 : 1};
    kmodel_kernel ks[2] = {a->k, b->k};
    double w[2];
    if (kmodel_fits(s->model, 2, ks, half) != 0 || sched_model_waves(s, a, b, half, w, NULL))
        return;
    for (int i = 0; i < 2; i++) {
        bps[i] = half[i];
        wave_ns[i] = w[i];
    }
}

/* The kernels run whole, side by side, as base runs them: where pairing gains nothing. */
static void run_as_base(ksched *s)
{
    sched_run_whole(s, s->cfg.base_lanes);
    s->plan.kind = PLAN_NONE;
}

/* The chosen pair runs: under the model's plan, or under the plan its tuning tries or
 * kept (which may be not to pair: both whole, side by side, as base runs them). */
static void run_choice(ksched *s, const choice *c)
{
    if (!s->cfg.pair_tune) {
        sched_plan_pair(s, c->a, c->b, c->bps, c->wave_ns);
        return;
    }
    tune_plan t = sched_tune_plan(c->entry);
    sched_tune_begin(s, c->entry, t.index);
    if (!t.whole) {
        unsigned bps[2] = {c->bps[0], c->bps[1]};
        double wave_ns[2] = {c->wave_ns[0], c->wave_ns[1]};
        if (t.even)
            even_split(s, c, bps, wave_ns);
        sched_plan_pair_as(s, c->a, c->b, bps, wave_ns, t.waves, t.uncapped);
        return;
    }
    run_as_base(s);
}

/* Nothing to pair: the oldest kernel runs alone, sliced so that a partner can join it, or
 * whole where its tenant is the only one launching (no partner is in sight); where tuning
 * found that the pairs at hand gain nothing, the kernels run whole, as base. */
static void run_unpaired(ksched *s, sched_kernel **c, unsigned n, int no_gain)
{
    sched_kernel *o = oldest(c, n);
    if (no_gain)
        run_as_base(s);
    else if (o->op->stream && sched_stream_alone(s, o->op->stream))
        sched_plan_lone(s, o);
    else
        sched_plan_solo(s, o);
}

/* The best unpruned pair; *n_pruned counts the pruned ones, *no_gain those tuning found
 * not worth pairing. */
static int best_pair(ksched *s, sched_kernel **c, unsigned n, double ap, double am,
                     unsigned *n_pruned, unsigned *no_gain, choice *best)
{
    int found = 0;
    *n_pruned = 0;
    *no_gain = 0;
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = i + 1; j < n; j++) {
            if (pruned(c[i], c[j], ap, am))
                (*n_pruned)++;
            else
                *no_gain += consider(s, c[i], c[j], &found, best) < 0;
        }
    return found;
}

/* An overdue kernel o runs now: beside its best partner by the model (one row of pairs,
 * none pruned), or alone when no partner gains. */
static void plan_overdue(ksched *s, sched_kernel *o, sched_kernel **c, unsigned n)
{
    choice best;
    int found = 0;
    for (unsigned i = 0; i < n; i++)
        if (c[i] != o)
            consider(s, o, c[i], &found, &best);
    if (found && s->cfg.pair_split[0])
        force_split(s, &best);
    if (found && best.cp > s->cfg.min_cp)
        run_choice(s, &best);
    else
        sched_plan_solo(s, o);
    s->stats.aged++;
    sched_trace_decision(s, found ? best.cp : 0, n - 1, 0, 0);
}

/* Whether k is worth a partner: it lasts at least pair_short_ns by the model, or more of
 * its stream's launches wait behind it (a pipeline, whose next launches the pair's slices
 * run into). */
static int worth_pairing(const ksched *s, const sched_kernel *k)
{
    if (!s->cfg.pair_short_ns)
        return 1;
    if (k->op->stream && k->op->stream->launches_open > 1)
        return 1;
    return (double)k->total * k->cls->block_ns >= (double)s->cfg.pair_short_ns;
}

/* Keeps in c those worth pairing; how many. */
static unsigned keep_worth_pairing(const ksched *s, sched_kernel **c, unsigned n)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < n; i++)
        if (worth_pairing(s, c[i]))
            c[kept++] = c[i];
    return kept;
}

static void kernelet_decide(ksched *s, void *state)
{
    (void)state;
    if (sched_solo_or_whole(s))
        return;
    sched_kernel *c[MAX_CANDIDATES];
    unsigned all = sched_pair_candidates(s, c, MAX_CANDIDATES);
    unsigned n = keep_worth_pairing(s, c, all);
    if (n < all && n < 2) {
        run_as_base(s);         /* short kernels of waiting programs: whole, side by side */
        return;
    }
    sched_kernel *overdue = sched_overdue(s, c, n);
    if (overdue) {
        plan_overdue(s, overdue, c, n);
        return;
    }
    unsigned considered = n * (n - 1) / 2, n_pruned = 0, no_gain = 0, widenings = 0;
    double ap = s->cfg.alpha_p, am = s->cfg.alpha_m;
    choice best;
    int found = 0;
    while (n >= 2) {
        found = best_pair(s, c, n, ap, am, &n_pruned, &no_gain, &best);
        if (found || n_pruned < considered || (ap == 0 && am == 0))
            break;
        widenings++;            /* everything was pruned: relax the thresholds */
        ap = widenings >= MAX_WIDENINGS ? 0 : ap / 2;
        am = widenings >= MAX_WIDENINGS ? 0 : am / 2;
    }
    if (found && s->cfg.pair_split[0])
        force_split(s, &best);
    /* found but not gaining: the pairs at hand lose to running the kernels whole (their
     * launches cost more than pairing gains), so they run as base runs them */
    if (found && best.cp > s->cfg.min_cp)
        run_choice(s, &best);
    else
        run_unpaired(s, c, n, no_gain > 0 || found);
    sched_trace_decision(s, found ? best.cp : 0, considered, n_pruned, widenings);
}

const sched_policy sched_policy_kernelet = {.name = "kernelet", .decide = kernelet_decide};
