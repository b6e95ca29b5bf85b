/* Launches as kernels of the pending set: start (class, profile), slices handed to the
 * backend, their completions, failure and cancellation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/policy.h"
#include "sched_internal.h"

/* A policy that runs whole kernels uses no profile: none is taken (a profile costs a new
 * kernel up to a second on the GPU). A class is profiled on a later launch if the operator
 * turns to a pairing policy. */
int sched_profiles_wanted(const ksched *s)
{
    return !sched_policy_get(s->cfg.policy)->whole_kernels;
}

/* Linked into its class's pending list; the tenant becomes backlogged. */
static void link_pending(ksched *s, sched_kernel *k)
{
    sched_class *c = k->cls;
    sched_tenant *t = k->tenant;
    k->cls_prev = c->tail;
    k->cls_next = NULL;
    if (c->tail)
        c->tail->cls_next = k;
    else
        c->head = k;
    c->tail = k;
    c->n_pending++;
    k->in_class = 1;
    s->n_pending++;
    k->priority = k->op->stream ? k->op->stream->priority : 0;
    t->pending_at[k->priority]++;
    if (!t->pending_kernels++)
        sched_tenant_level(s, t);
    s->dirty = 1;
}

void sched_tenant_level(ksched *s, sched_tenant *t)
{
    double least = -1;
    for (sched_tenant *o = s->tenants; o; o = o->next)
        if (o != t && o->pending_kernels && !sched_tenant_paused(o) &&
            (least < 0 || o->vtime < least))
            least = o->vtime;
    if (least > t->vtime)
        t->vtime = least;
}

void sched_kernel_unlink(ksched *s, sched_kernel *k)
{
    if (k->in_class) {
        sched_class *c = k->cls;
        if (k->cls_prev)
            k->cls_prev->cls_next = k->cls_next;
        else
            c->head = k->cls_next;
        if (k->cls_next)
            k->cls_next->cls_prev = k->cls_prev;
        else
            c->tail = k->cls_prev;
        c->n_pending--;
        k->in_class = 0;
        s->n_pending--;
        k->tenant->pending_kernels--;
        k->tenant->pending_at[k->priority]--;
        s->dirty = 1;
    }
    for (int i = 0; i < 2; i++)
        if (s->plan.k[i] == k)
            s->plan.kind = PLAN_NONE;
}

/* Blocks [first, first + count) of k as the backend gets them, with its tenant's kernel
 * time limit (sliced: through the sliced variant). */
static kbackend_slice backend_slice(const sched_kernel *k, int sliced, uint64_t first,
                                    uint64_t count)
{
    const ksched_op *op = &k->op->op;
    kbackend_slice sl = {.fn = sliced ? k->fn->sliced : k->fn->fn, .sliced = sliced,
                         .first = first, .count = count, .smem = op->u.launch.smem,
                         .params = op->u.launch.params,
                         .params_size = op->u.launch.params_size, .tag = k->op->id,
                         .time_limit_ns = k->tenant->pol.kernel_time_limit_ns,
                         .tenant = k->tenant->name, .domain = k->op->domain->id,
                         .polls_cancel = op->u.launch.polls_cancel,
                         .cooperative = op->u.launch.cooperative,
                         .timed = k->op->restamp && first == 0};
    memcpy(sl.cluster, op->u.launch.cluster, sizeof(sl.cluster));
    memcpy(sl.grid, op->u.launch.grid, sizeof(sl.grid));
    memcpy(sl.block, op->u.launch.block, sizeof(sl.block));
    return sl;
}

static int request_profile(ksched *s, sched_kernel *k)
{
    sched_sub *sub = calloc(1, sizeof(*sub));
    if (!sub)
        return -1;
    *sub = (sched_sub){.kind = SUB_PROFILE, .s = s, .kernel = k};
    /* the sliced variant lets the profiler run (and keep) a few blocks; a kernel that must
     * run whole is given unsliced, so that it runs none */
    kbackend_slice sl = backend_slice(k, !k->whole_only, 0, k->total);
    kbackend_error e;
    if (s->be.ops->profile(s->be.state, &sl, &k->prof_out, sched_backend_done, sub, &e)) {
        free(sub);
        return -1;
    }
    k->state = K_PROFILING;
    k->cls->profiling = 1;
    k->in_flight++;
    s->outstanding++;
    s->stats.profiles++;
    return 0;
}

int sched_kernel_start(ksched *s, sched_op *op)
{
    sched_tenant *t = op->tenant;
    sched_function *f = idmap_get(&t->functions, op->op.u.launch.function);
    sched_kernel *k = f ? calloc(1, sizeof(*k)) : NULL;
    if (!k)
        return f ? KSCHED_ENOMEM : KSCHED_ENOTFOUND;
    *k = (sched_kernel){.op = op, .tenant = t, .fn = f, .state = K_PENDING,
                        .seq = s->next_seq++, .pending_ns = sched_now(s),
                        .total = kbackend_grid_blocks(op->op.u.launch.grid),
                        .lane = -1, .lane_pin = -1};
    if (!(k->cls = sched_class_of(s, f, &op->op, NULL))) {
        free(k);
        return KSCHED_ENOMEM;
    }
    op->kernel = k;
    sched_restamp_arm(op);
    k->whole_only = !f->sliced || !t->pol.slicing || k->total >= (1ull << 32) ||
                    kbackend_launch_has_attrs(op->op.u.launch.cluster, op->op.u.launch.cooperative);
    if (kbackend_launch_has_attrs(op->op.u.launch.cluster, op->op.u.launch.cooperative) && !k->cls->profiled && !k->cls->profiling)
        k->cls->profiled = -1;  /* clusters and grid sync: the profiler cannot run it */
    if (sched_profiles_wanted(s) && !k->cls->profiled && !k->cls->profiling &&
        (!s->be.ops->profile || t->profile_faulted || request_profile(s, k))) {
        k->cls->profiled = -1;      /* no profile to be had: it runs whole */
        s->stats.unprofiled++;
    }
    link_pending(s, k);
    return 0;
}

static void trace_slice(ksched *s, ksched_trace_kind kind, const sched_kernel *k,
                        const sched_sub *sub, unsigned cap)
{
    if (!s->cfg.trace)
        return;
    ksched_trace t = {.kind = kind, .now_ns = sched_now(s), .first = sub->first,
                      .count = sub->count, .lane = sub->lane, .start_ns = sub->start_ns,
                      .end_ns = sub->end_ns, .status = sub->status, .tenant = k->tenant->id};
    t.op[0] = k->op->id;
    t.entry[0] = k->cls->entry;
    t.blocks_per_sm[0] = cap;
    s->cfg.trace(s->cfg.trace_user, &t);
}

int sched_kernel_launch(ksched *s, sched_kernel *k, uint64_t count, unsigned lane,
                        unsigned cap)
{
    uint64_t first = k->next;
    if (count > k->total - first)
        count = k->total - first;
    int sliced = !(first == 0 && count == k->total);
    sched_sub *sub = calloc(1, sizeof(*sub));
    if (!sub)
        return KSCHED_ENOMEM;
    *sub = (sched_sub){.kind = SUB_SLICE, .s = s, .kernel = k, .first = first, .count = count,
                       .lane = lane};
    kbackend_slice sl = backend_slice(k, sliced, first, count);
    sl.lane = lane;
    sl.max_blocks_per_sm = cap;
    kbackend_error e = {0};
    uint64_t t0 = s->deciding ? sched_mono_ns() : 0;
    int rc = s->be.ops->launch(s->be.state, &sl, sched_backend_done, sub, &e);
    if (s->deciding)
        s->decide_launch_ns += sched_mono_ns() - t0;
    if (rc) {
        free(sub);
        char msg[MSG_LEN];
        snprintf(msg, sizeof(msg), "launch refused: %.140s", e.msg);
        if (!k->op->status)
            k->op->backend_status = rc;
        sched_note_backend(s, rc, e.msg);
        sched_kernel_cancel(s, k, KSCHED_EBACKEND, msg);
        return KSCHED_EBACKEND;
    }
    k->next += count;
    k->in_flight++;
    k->lane = (int)lane;
    s->lanes[lane].in_flight++;
    s->outstanding++;
    s->stats.slices++;
    trace_slice(s, KSCHED_TRACE_SLICE, k, sub, cap);
    if (k->next == k->total) {
        k->state = K_DRAINING;
        sched_kernel_unlink(s, k);
        sched_stream_wake(s, k->op->stream);    /* its successor may start (sched_stream.c) */
    }
    return 0;
}

int sched_kernel_lane(const sched_kernel *k)
{
    return k->lane >= 0 ? k->lane : k->lane_pin;
}

/* Completes the launch op once nothing of k is in flight and nothing is left to run. */
static void maybe_complete(ksched *s, sched_kernel *k)
{
    sched_op *op = k->op;
    if (k->in_flight || (!op->status && k->next < k->total))
        return;
    sched_kernel_unlink(s, k);
    op->start_ns = k->first_start_ns ? k->first_start_ns : op->start_ns;
    op->end_ns = k->last_end_ns ? k->last_end_ns : sched_now(s);
    sched_restamp_apply(s, op);
    s->stats.kernels_completed++;
    char msg[MSG_LEN];
    snprintf(msg, sizeof(msg), "%s", op->msg);
    sched_op_complete(s, op, op->status, msg);     /* frees op and k */
}

void sched_kernel_cancel(ksched *s, sched_kernel *k, int status, const char *msg)
{
    sched_op *op = k->op;
    if (!op->status) {
        op->status = status;
        snprintf(op->msg, sizeof(op->msg), "%s", msg ? msg : "");
    }
    sched_kernel_unlink(s, k);
    maybe_complete(s, k);
}

static void release_lane(ksched *s, sched_kernel *k, unsigned lane)
{
    if (s->lanes[lane].in_flight)
        s->lanes[lane].in_flight--;
    if (!k->in_flight)
        k->lane = -1;
}

void sched_slice_done(ksched *s, sched_sub *sub)
{
    sched_kernel *k = sub->kernel;
    sched_tenant *t = k->tenant;
    k->in_flight--;
    s->outstanding--;
    release_lane(s, k, sub->lane);
    uint64_t dur = sub->end_ns > sub->start_ns ? sub->end_ns - sub->start_ns : 0;
    t->st.gpu_time_ns += dur;
    t->vtime += (double)dur / t->pol.weight;
    if (!k->first_start_ns || sub->start_ns < k->first_start_ns)
        k->first_start_ns = sub->start_ns;
    if (sub->end_ns > k->last_end_ns)
        k->last_end_ns = sub->end_ns;
    trace_slice(s, KSCHED_TRACE_SLICE_DONE, k, sub, 0);
    if (sub->status) {
        char msg[MSG_LEN];
        snprintf(msg, sizeof(msg), "%s", sub->msg[0] ? sub->msg : kbackend_strerror(sub->status));
        if (!k->op->status)
            k->op->backend_status = sub->status;
        sched_kernel_cancel(s, k, KSCHED_EBACKEND, msg);
        return;
    }
    k->done_blocks += sub->count;
    sched_tune_note(s, k, sub->count);
    if (sched_backlogged_tenants(s) > 1)
        s->dirty = 1;       /* weighted GPU time moved: eligibility may change */
    maybe_complete(s, k);
}

/* Blocks the profiler ran (blocks_done; usable profile or not) must not run again: the
 * first blocks of a sliced launch, or the whole of an unsliced one (whole_only kernels are
 * profiled unsliced, and then either none or all of it ran). A failed profile ran none.
 * Returns 1 when k failed (a count the contract does not allow; k may be gone). */
static int profile_ran_blocks(ksched *s, sched_kernel *k, const sched_sub *sub)
{
    uint64_t ran = sub->status ? 0 : k->prof_out.blocks_done;
    if (!ran)
        return 0;
    int fits = k->whole_only ? k->next == 0 && ran == k->total
                             : k->fn->sliced && ran <= k->total - k->next;
    if (!fits) {
        char msg[MSG_LEN];
        snprintf(msg, sizeof(msg), "profile reported %llu blocks run of %llu",
                 (unsigned long long)ran, (unsigned long long)k->total);
        s->dirty = 1;
        sched_kernel_cancel(s, k, KSCHED_EBACKEND, msg);
        return 1;
    }
    k->next += ran;
    k->done_blocks += ran;
    if (!k->first_start_ns || sub->start_ns < k->first_start_ns)
        k->first_start_ns = sub->start_ns;
    if (sub->end_ns > k->last_end_ns)
        k->last_end_ns = sub->end_ns;
    if (k->next == k->total)
        sched_kernel_unlink(s, k);
    return 0;
}

/* The profile of k's class arrived: every class of the same kernel identity takes it. */
void sched_profile_done(ksched *s, sched_sub *sub)
{
    sched_kernel *k = sub->kernel;
    sched_class *c = k->cls;
    k->in_flight--;
    s->outstanding--;
    c->profiling = 0;
    k->state = K_PENDING;
    const kbackend_profile *p = &k->prof_out;
    int ok = !sub->status && !ksched_profile_validate(p, NULL) &&
             !ksched_profile_cache_put(s->profiles, c->module_hash, c->entry, p, NULL);
    for (unsigned i = 0; i < s->n_classes; i++) {
        sched_class *o = s->classes[i];
        if (o->profiled || o->module_hash != c->module_hash || strcmp(o->entry, c->entry))
            continue;
        if (ok)
            sched_class_set_profile(s, o, p);
        else
            o->profiled = -1;
    }
    if (!ok)
        s->stats.unprofiled++;
    if (sub->status == KBACKEND_ELAUNCH) {
        /* the tenant's kernel itself failed while profiled (a fault, an assert, its time
         * limit): the launch fails as it would have run, instead of running it again */
        char msg[MSG_LEN];
        snprintf(msg, sizeof(msg), "%s", sub->msg[0] ? sub->msg : kbackend_strerror(sub->status));
        if (!k->op->status)
            k->op->backend_status = sub->status;
        k->tenant->profile_faulted = 1;
        s->dirty = 1;
        sched_kernel_cancel(s, k, KSCHED_EBACKEND, msg);
        return;
    }
    if (profile_ran_blocks(s, k, sub))
        return;
    s->dirty = 1;
    maybe_complete(s, k);
}
