/* What is eligible to run (priority, weights), the plans the pair policies choose, and the
 * dispatch loop that turns decisions into slices on lanes. */
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "policies/policy.h"
#include "sched_internal.h"

unsigned sched_backlogged_tenants(const ksched *s)
{
    unsigned n = 0;
    for (const sched_tenant *t = s->tenants; t; t = t->next)
        n += t->pending_kernels > 0;
    return n;
}

/* Whether t has kernels that may be handed out: pending ones, and not paused (a memory
 * call of its in the backend: it counts as having nothing runnable). */
static int runnable(const sched_tenant *t)
{
    return t->pending_kernels && !sched_tenant_paused(t);
}

/* Priority is strict; among the top priority, weights act through a window on weighted
 * GPU time: a tenant that ran ahead of the least-served one by more than the window waits. */
static void mark_eligible(ksched *s)
{
    int top = 0, any = 0;
    for (sched_tenant *t = s->tenants; t; t = t->next)
        if (runnable(t) && (!any || t->pol.priority > top)) {
            top = t->pol.priority;
            any = 1;
        }
    double least = 0;
    any = 0;
    for (sched_tenant *t = s->tenants; t; t = t->next)
        if (runnable(t) && t->pol.priority == top && (!any || t->vtime < least)) {
            least = t->vtime;
            any = 1;
        }
    for (sched_tenant *t = s->tenants; t; t = t->next)
        t->eligible = runnable(t) && t->pol.priority == top &&
                      t->vtime <= least + (double)s->cfg.fairness_window_ns;
}

/* Whether t has a pending kernel on a stream of higher priority than k's. */
static int outranked(const sched_tenant *t, const sched_kernel *k)
{
    for (unsigned p = k->priority + 1; p <= KSCHED_STREAM_PRIORITY_MAX; p++)
        if (t->pending_at[p])
            return 1;
    return 0;
}

/* A kernel that may be handed out now; pair policies also need its class's profile. */
static int ready(const sched_kernel *k, int pair_policy)
{
    return k->tenant->eligible && k->state != K_PROFILING && !outranked(k->tenant, k) &&
           (!pair_policy || k->cls->profiled != 0);
}

/* The oldest kernel of class c that passes ready() (and sliceable, if asked). Lists are in
 * arrival order; only their first SCAN_DEPTH kernels are looked at, which bounds a
 * decision's cost when a class holds thousands of kernels of tenants that must wait. */
#define SCAN_DEPTH 64

static sched_kernel *class_first(const sched_class *c, int pair_policy, int sliceable)
{
    unsigned seen = 0;
    for (sched_kernel *k = c->head; k && seen < SCAN_DEPTH; k = k->cls_next, seen++)
        if (ready(k, pair_policy) && (!sliceable || !k->whole_only))
            return k;
    return NULL;
}

sched_kernel *sched_oldest_eligible(ksched *s, int pair_policy)
{
    sched_kernel *best = NULL;
    for (unsigned i = 0; i < s->n_classes; i++) {
        sched_kernel *k = class_first(s->classes[i], pair_policy, 0);
        if (k && (!best || k->seq < best->seq))
            best = k;
    }
    return best;
}

unsigned sched_pair_candidates(ksched *s, sched_kernel **out, unsigned cap)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->n_classes && n < cap; i++) {
        sched_kernel *k = s->classes[i]->profiled == 1 ? class_first(s->classes[i], 1, 1)
                                                       : NULL;
        if (k)
            out[n++] = k;
    }
    return n;
}

void sched_trace_decision(ksched *s, double cp, unsigned considered, unsigned pruned,
                          unsigned widenings)
{
    s->stats.pairs_pruned += pruned;
    s->stats.widenings += widenings > 0;
    if (!s->cfg.trace)
        return;
    ksched_trace t = {.kind = KSCHED_TRACE_DECISION, .now_ns = sched_now(s), .cp = cp,
                      .pairs_considered = considered, .pairs_pruned = pruned,
                      .widenings = widenings};
    int n = s->plan.kind == PLAN_PAIR ? 2 : s->plan.kind == PLAN_NONE ? 0 : 1;
    for (int i = 0; i < n; i++) {
        t.op[i] = s->plan.k[i]->op->id;
        t.entry[i] = s->plan.k[i]->cls->entry;
        t.blocks_per_sm[i] = s->plan.bps[i];
        t.slice_blocks[i] = s->plan.slice[i];
    }
    s->cfg.trace(s->cfg.trace_user, &t);
}

/* The pair policies queue in lanes 0 and 1 (up to the pipeline depth each), so that the
 * next slices are already waiting when the running ones end. A kernel with slices in
 * flight stays in its lane; the two kernels of a pair never share one. */
static void assign_lanes(ksched *s, sched_plan *p, int n)
{
    if (s->n_lanes < 2) {           /* a backend with one lane: everything queues there */
        p->lane[0] = p->lane[1] = 0;
        return;
    }
    int l0 = sched_kernel_lane(p->k[0]), l1 = n > 1 ? sched_kernel_lane(p->k[1]) : -1;
    if (l0 > 1)
        l0 = -1;            /* a lane of another policy: queue in a pair lane from now on */
    if (l1 > 1)
        l1 = -1;
    if (l0 < 0 && l1 < 0)
        l0 = s->lanes[1].in_flight < s->lanes[0].in_flight;
    if (l0 < 0)
        l0 = !l1;
    if (l1 < 0 || l1 == l0)
        l1 = !l0;
    p->lane[0] = (unsigned)l0;
    p->lane[1] = (unsigned)l1;
}

void sched_plan_whole(ksched *s, sched_kernel *k)
{
    s->plan = (sched_plan){.kind = PLAN_WHOLE, .k = {k, NULL}, .slice = {k->total, 0},
                           .budget = {UINT64_MAX, 0}};
    assign_lanes(s, &s->plan, 1);
    s->stats.solo++;
}

/* One kernel alone: slices of at least the minimum size, full occupancy, no cap. */
void sched_plan_solo(ksched *s, sched_kernel *k)
{
    uint64_t wave = (uint64_t)k->cls->max_blocks * s->gpu.sms;
    uint64_t waves = (k->cls->min_slice + wave - 1) / wave;
    s->plan = (sched_plan){.kind = PLAN_SOLO, .k = {k, NULL},
                           .slice = {(waves ? waves : 1) * wave, 0}, .budget = {UINT64_MAX, 0}};
    assign_lanes(s, &s->plan, 1);
    s->stats.solo++;
}

void sched_plan_lone(ksched *s, sched_kernel *k)
{
    sched_plan_solo(s, k);
    uint64_t wave = (uint64_t)k->cls->max_blocks * s->gpu.sms;
    double blocks = (double)s->cfg.lone_slice_ns / k->cls->block_ns;
    if (!(k->cls->block_ns > 0) || blocks >= (double)k->total) {
        s->plan.slice[0] = k->total;    /* unpredicted or short: whole */
        return;
    }
    uint64_t waves = ((uint64_t)blocks + wave - 1) / wave;
    if (waves * wave > s->plan.slice[0])
        s->plan.slice[0] = waves * wave;
}

/* Slices of a pair queued per lane: enough that the lane holds at least the kernel's
 * minimum slice, so short slices do not leave the GPU waiting on the host. */
static unsigned pair_depth(const ksched *s, const sched_kernel *k, uint64_t slice)
{
    uint64_t need = (k->cls->min_slice + slice - 1) / slice, depth = s->cfg.pipeline_depth;
    if (need > depth)
        depth = need;
    return depth > 64 ? 64 : (unsigned)depth;
}

/* Two kernels side by side at bps blocks per SM each (capped there), wave_ns[i] the time of
 * one wave of kernel i (bps[i] blocks on every SM) beside the other. With pair_waves set,
 * each kernel's slices are that many waves and the lanes queue deeper instead (a GPU mixes
 * two kernels on its SMs only when their launches are small); else both slices last about
 * the same time D: long enough for each kernel's minimum slice, no longer than the shorter
 * kernel has left. Each kernel gets only as many blocks under this plan as fit in the time
 * its partner has left: slices queued beyond the partner's end would run alone at the
 * pair's cap. */
void sched_plan_pair(ksched *s, sched_kernel *a, sched_kernel *b, const unsigned bps[2],
                     const double wave_ns[2])
{
    sched_plan_pair_as(s, a, b, bps, wave_ns, -1, 0);
}

void sched_plan_pair_as(ksched *s, sched_kernel *a, sched_kernel *b, const unsigned bps[2],
                        const double wave_ns[2], int waves_asked, int uncapped)
{
    unsigned pair_waves = waves_asked >= 0 ? (unsigned)waves_asked : s->cfg.pair_waves;
    uint64_t sms = s->gpu.sms, wave[2], left[2];
    double min_d = 0, left_d[2];
    const sched_kernel *k[2] = {a, b};
    double w[2] = {wave_ns[0] > 0 ? wave_ns[0] : 1, wave_ns[1] > 0 ? wave_ns[1] : 1};
    for (int i = 0; i < 2; i++) {
        wave[i] = (uint64_t)bps[i] * sms;
        left[i] = (k[i]->total - k[i]->next + wave[i] - 1) / wave[i];
        left_d[i] = (double)left[i] * w[i];
        double need = (double)((k[i]->cls->min_slice + wave[i] - 1) / wave[i]) * w[i];
        if (need > min_d)
            min_d = need;
    }
    double d = min_d < left_d[0] && min_d < left_d[1] ? min_d
               : left_d[0] < left_d[1] ? left_d[0] : left_d[1];
    s->plan = (sched_plan){.kind = PLAN_PAIR, .k = {a, b}, .bps = {bps[0], bps[1]},
                           .uncapped = uncapped};
    for (int i = 0; i < 2; i++) {
        double waves = pair_waves ? fmax(pair_waves, ceil((double)s->cfg.pair_min_ns / w[i]))
                                  : floor(d / w[i] + 0.5);
        double budget = ceil(left_d[!i] / w[i]);
        if (waves < 1)
            waves = 1;
        s->plan.slice[i] = waves * (double)wave[i];
        s->plan.budget[i] = (budget < waves ? waves : budget) * (double)wave[i];
        s->plan.depth[i] = pair_waves ? pair_depth(s, k[i], s->plan.slice[i]) : 0;
    }
    assign_lanes(s, &s->plan, 2);
    s->stats.coschedules++;
}

/* Decides for the pair policies when the oldest ready kernel must run whole (its tenant
 * does not allow slicing, it has no sliced variant, or no profile): returns 1 then. */
int sched_solo_or_whole(ksched *s)
{
    sched_kernel *k = sched_oldest_eligible(s, 1);
    if (!k) {
        s->plan.kind = PLAN_NONE;
        return 1;
    }
    if (!k->whole_only && k->cls->profiled == 1)
        return 0;
    sched_plan_whole(s, k);
    sched_trace_decision(s, 0, 0, 0, 0);
    return 1;
}

/* Hands out slices of plan kernel i in its lane up to the pipeline depth and its budget;
 * 1 when it launched any. */
static int run_kernel(ksched *s, sched_plan *p, int i)
{
    sched_kernel *k = p->k[i];
    int pinned = sched_kernel_lane(k);
    unsigned lane = pinned >= 0 ? (unsigned)pinned : p->lane[i];
    unsigned depth = p->depth[i] ? p->depth[i] : s->cfg.pipeline_depth;
    /* a kernel that goes out whole commits no slices a partner could have shared */
    if (!p->depth[i] && p->slice[i] >= k->total && s->cfg.whole_depth > depth)
        depth = s->cfg.whole_depth;
    int launched = 0;
    while (k->in_class && p->budget[i] && s->lanes[lane].in_flight < depth) {
        uint64_t n = p->slice[i] < p->budget[i] ? p->slice[i] : p->budget[i];
        uint64_t before = k->next;
        if (sched_kernel_launch(s, k, n, lane, p->uncapped ? 0 : p->bps[i]))
            return launched;    /* k was canceled (and may be gone) */
        uint64_t got = k->next - before;
        p->budget[i] = got < p->budget[i] ? p->budget[i] - got : 0;
        launched = 1;
    }
    return launched;
}

static int run_plan(ksched *s)
{
    if (s->plan.kind == PLAN_NONE)
        return 0;
    /* run on a copy: a launch that uses up k[0] ends s->plan, yet k[1] goes on */
    sched_plan p = s->plan;
    int a = run_kernel(s, &p, 0);
    int b = p.kind == PLAN_PAIR ? run_kernel(s, &p, 1) : 0;
    if (s->plan.kind == p.kind && s->plan.k[0] == p.k[0] && s->plan.k[1] == p.k[1]) {
        s->plan.budget[0] = p.budget[0];
        s->plan.budget[1] = p.budget[1];
    }
    return a || b;
}

uint64_t sched_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A decision that took dt ns, in the statistics. */
static void count_decision(ksched *s, uint64_t dt)
{
    s->stats.decisions++;
    s->stats.decision_ns_total += dt;
    if (dt > s->stats.decision_ns_max)
        s->stats.decision_ns_max = dt;
}

/* One decision of a plan policy, timed without the backend's launch calls it makes (kernelet
 * runs kernels as base from inside its decision: on the H100 those calls were most of its
 * decision time, where fifo's and base's launches are made after their choice is timed). */
static void decide(ksched *s, const sched_policy *p)
{
    uint64_t t0 = sched_mono_ns();
    s->deciding = 1;
    s->decide_launch_ns = 0;
    s->aging_next_ns = UINT64_MAX;      /* the kernelet policy sets it again */
    sched_tune_close(s);                /* the policy starts the next interval, if any */
    p->decide(s, s->policy_state[s->cfg.policy]);
    s->deciding = 0;
    uint64_t elapsed = sched_mono_ns() - t0;
    count_decision(s, elapsed > s->decide_launch_ns ? elapsed - s->decide_launch_ns : 0);
    s->dirty = 0;
}

void sched_run_whole(ksched *s, unsigned lanes)
{
    unsigned depth = s->cfg.whole_depth ? s->cfg.whole_depth : s->cfg.pipeline_depth;
    for (;;) {
        uint64_t t0 = sched_mono_ns();
        sched_kernel *k = sched_oldest_eligible(s, 0);
        int lane = -1, pinned = k ? sched_kernel_lane(k) : -1;
        if (pinned >= 0 && s->lanes[pinned].in_flight < depth)
            lane = pinned;      /* behind its stream predecessor, wherever that runs */
        for (unsigned l = 0; k && pinned < 0 && l < lanes && l < s->n_lanes; l++)
            if (s->lanes[l].in_flight < depth &&
                (lane < 0 || s->lanes[l].in_flight < s->lanes[lane].in_flight))
                lane = (int)l;
        if (lane < 0)
            return;
        if (!s->deciding)       /* inside a plan policy's decision: that one counts */
            count_decision(s, sched_mono_ns() - t0);
        s->stats.solo++;
        sched_kernel_launch(s, k, k->total - k->next, (unsigned)lane, 0);
    }
}

void sched_dispatch(ksched *s)
{
    if (s->lost)
        sched_fail_pending_lost(s);
    if (!s->n_pending)
        return;
    mark_eligible(s);
    const sched_policy *p = sched_policy_get(s->cfg.policy);
    if (p->whole_kernels) {
        p->decide(s, s->policy_state[s->cfg.policy]);
        return;
    }
    for (int round = 0; round < 64 && s->n_pending; round++) {
        /* a kernel passing the aging bound changes the decision as an arrival would */
        if (s->dirty || s->plan.kind == PLAN_NONE ||
            (s->aging_next_ns != UINT64_MAX && sched_now(s) >= s->aging_next_ns)) {
            decide(s, p);
            if (s->plan.kind == PLAN_NONE)
                return;
        }
        if (!run_plan(s))
            return;
    }
}
