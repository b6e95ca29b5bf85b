/* One run of the harness: a fresh backend and scheduler, one tenant holding every
 * application (kernel), every arrival on a stream of its own at its time, then the
 * figures; on a backend that computes, each application's launches work on real data
 * (bench_data.c), checked after the run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct run_ctx {
    bench_progress *prog;
    uint64_t base, done;
    char label[48];
    char failure[200];      /* the first failed launch's message */
} run_ctx;

typedef struct slot {
    run_ctx *ctx;
    bench_instance *inst;
} slot;

/* One tenant holds every application: the paper's evaluation has no tenants, so no
 * weights or priorities get between the policy and its choices. */
typedef struct setup {
    bench_backend *bb;
    kbackend be;
    ksched *s;
    uint32_t tenant;
    uint32_t function[BENCH_KERNELS];
    int small;                          /* the kernels' small sizes (computing backends) */
    bench_data data[BENCH_KERNELS];     /* a computing backend's, per kernel */
} setup;

static void teardown(setup *st)
{
    for (unsigned k = 0; k < BENCH_KERNELS && st->s; k++)
        bench_data_free(st->s, st->tenant, &st->data[k]);
    ksched_free(st->s);
    bench_backend_free(st->bb);
}

static int add_app(setup *st, unsigned k, char *msg, size_t len)
{
    const bench_kernel *bk = &bench_kernels()[k];
    ksched_err e;
    char *text = NULL;
    size_t tlen;
    uint32_t module;
    if (bench_module_text(st->bb, bk, &text, &tlen, msg, len))
        return -1;
    int rc = ksched_module_load(st->s, st->tenant, text, tlen, &module, &e);
    free(text);
    if (!rc)
        rc = ksched_function_get(st->s, st->tenant, module, bk->entry, &st->function[k], NULL,
                                 &e);
    if (rc) {
        snprintf(msg, len, "%s: %s", bk->name, e.msg);
        return -1;
    }
    return bench_backend_computes(st->bb) ? bench_data_create(st->s, st->tenant, bk, st->small,
                                                              &st->data[k], msg, len)
                                          : 0;
}

static int make_setup(const bench_options *o, const ksched_profile_cache *profiles,
                      const bench_workload *wl, ksched_policy policy, uint64_t seed,
                      setup *st, char *msg, size_t len)
{
    memset(st, 0, sizeof(*st));
    st->small = o->small;
    if (bench_backend_new(o, profiles, &st->bb, &st->be, msg, len))
        return -1;
    ksched_config cfg;
    ksched_config_default(&cfg);
    cfg.policy = policy;
    cfg.seed = seed;
    cfg.alpha_p = o->alpha_p;
    cfg.alpha_m = o->alpha_m;
    cfg.aging = o->aging;
    cfg.pair_tune = o->pair_tune;
    cfg.pipeline_depth = o->depth;
    cfg.model.latency.a0 = o->a0;
    ksched_err e;
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    pol.max_inflight = 0;       /* the harness queues every arrival */
    if (ksched_new(&st->s, &st->be, &cfg, profiles, &e) ||
        ksched_tenant_add(st->s, "bench", &pol, &st->tenant, &e)) {
        snprintf(msg, len, "scheduler: %s", e.msg);
        teardown(st);
        return -1;
    }
    for (unsigned i = 0; i < wl->n; i++)
        if (add_app(st, wl->kernel[i], msg, len)) {
            teardown(st);
            return -1;
        }
    return 0;
}

static void on_done(void *user, const ksched_op_result *r)
{
    slot *sl = user;
    sl->inst->start_ns = r->start_ns;
    sl->inst->end_ns = r->end_ns;
    sl->inst->status = r->status;
    run_ctx *c = sl->ctx;
    if (r->status && !c->failure[0])
        snprintf(c->failure, sizeof(c->failure), "%s", r->msg && *r->msg ? r->msg : "failed");
    c->done++;
    bench_progress_step(c->prog, c->base + c->done, c->label);
}

static int submit(setup *st, unsigned k, slot *sl, char *msg, size_t len)
{
    const bench_kernel *bk = &bench_kernels()[k];
    const bench_data *d = &st->data[k];
    ksched_op op = {.kind = KSCHED_OP_LAUNCH};
    op.u.launch.function = st->function[k];
    memcpy(op.u.launch.grid, d->kernel ? d->in.grid : bk->grid, sizeof(bk->grid));
    memcpy(op.u.launch.block, d->kernel ? d->in.block : bk->block, sizeof(bk->block));
    if (d->kernel) {
        op.u.launch.smem = d->in.dynamic_shared_bytes;
        op.u.launch.params = d->params;
        op.u.launch.params_size = d->params_size;
    }
    ksched_err e;
    uint32_t stream;
    int rc = ksched_stream_create(st->s, st->tenant, &stream, &e);
    if (!rc)
        rc = ksched_submit(st->s, st->tenant, stream, &op, on_done, sl, &sl->inst->op, &e);
    if (!rc)
        rc = ksched_stream_destroy(st->s, st->tenant, stream, &e);  /* once it is done */
    if (rc)
        snprintf(msg, len, "submit %s: %s", bk->name, e.msg);
    return rc;
}

/* A computing backend's outputs against the CPU: how many kernels differ; msg names the
 * first. */
static unsigned wrong_outputs(setup *st, const bench_workload *wl, char *msg, size_t len)
{
    unsigned wrong = 0;
    for (unsigned i = 0; i < wl->n && bench_backend_computes(st->bb); i++) {
        char why[256];
        if (bench_data_verify(st->s, st->tenant, &st->data[wl->kernel[i]], why, sizeof(why))) {
            if (!wrong++)
                snprintf(msg, len, "%s", why);
        }
    }
    return wrong;
}

static void summarise(const setup *st, const double alone_ns[], bench_result *r)
{
    uint64_t first = UINT64_MAX, last = 0;
    double sum[BENCH_KERNELS] = {0};
    unsigned cnt[BENCH_KERNELS] = {0};
    for (size_t i = 0; i < r->n; i++) {
        const bench_instance *x = &r->inst[i];
        const bench_kernel *bk = &bench_kernels()[x->kernel];
        if (x->arrival_ns < first)
            first = x->arrival_ns;
        if (x->status || !x->end_ns) {
            r->failed++;
            continue;
        }
        if (x->end_ns > last)
            last = x->end_ns;
        const unsigned *grid = st->data[x->kernel].kernel ? st->data[x->kernel].in.grid
                                                          : bk->grid;
        if (bench_backend_blocks_once(st->bb, x->op, kbackend_grid_blocks(grid)) == 0)
            r->block_errors++;
        double slowdown = (double)(x->end_ns - x->arrival_ns) / alone_ns[x->kernel];
        sum[x->kernel] += slowdown;
        cnt[x->kernel]++;
        if (slowdown > r->slowdown_max[x->kernel])
            r->slowdown_max[x->kernel] = slowdown;
    }
    r->total_ns = last > first ? last - first : 0;
    r->throughput = r->total_ns ? (double)(r->n - r->failed) / (r->total_ns * 1e-9) : 0;
    for (unsigned k = 0; k < BENCH_KERNELS; k++)
        r->slowdown[k] = cnt[k] ? sum[k] / cnt[k] : 0;
    ksched_get_stats(st->s, &r->stats);
}

int bench_run(const bench_options *o, const ksched_profile_cache *profiles,
              const bench_workload *wl, ksched_policy policy, uint64_t seed,
              const bench_arrival *arr, size_t n, const double alone_ns[BENCH_KERNELS],
              bench_progress *prog, uint64_t prog_base, bench_result *out, char *msg,
              size_t len)
{
    memset(out, 0, sizeof(*out));
    out->wl = wl;
    out->policy = policy;
    out->seed = seed;
    setup st;
    if (make_setup(o, profiles, wl, policy, seed, &st, msg, len))
        return -1;
    run_ctx ctx = {.prog = prog, .base = prog_base};
    snprintf(ctx.label, sizeof(ctx.label), "%s %s", wl->name, ksched_policy_name(policy));
    out->inst = calloc(n, sizeof(*out->inst));
    slot *slots = calloc(n, sizeof(*slots));
    int rc = out->inst && slots ? 0 : -1;
    if (rc)
        snprintf(msg, len, "out of memory");
    ksched_err e = {0};
    uint64_t t0 = ksched_now(st.s);
    for (size_t i = 0; !rc && i < n; i++) {
        if (ksched_run_until(st.s, t0 + arr[i].t_ns, &e)) {
            snprintf(msg, len, "run: %s", e.msg);
            rc = -1;
            break;
        }
        out->inst[i] = (bench_instance){.kernel = arr[i].kernel, .arrival_ns = ksched_now(st.s)};
        slots[i] = (slot){.ctx = &ctx, .inst = &out->inst[i]};
        rc = submit(&st, arr[i].kernel, &slots[i], msg, len);
        out->n = i + 1;
    }
    if (!rc && ksched_run_until_idle(st.s, &e)) {
        snprintf(msg, len, "run: %s", e.msg);
        rc = -1;
    }
    if (!rc) {
        summarise(&st, alone_ns, out);
        out->wrong = wrong_outputs(&st, wl, msg, len);
        if (out->failed)        /* a failed launch explains wrong outputs */
            snprintf(msg, len, "%s", ctx.failure);
    }
    teardown(&st);
    free(slots);
    if (rc) {
        free(out->inst);
        out->inst = NULL;
    }
    return rc;
}

void bench_result_free(bench_result *r)
{
    if (r) {
        free(r->inst);
        r->inst = NULL;
    }
}

int bench_alone_times(const bench_options *o, const ksched_profile_cache *profiles,
                      double alone_ns[BENCH_KERNELS], char *msg, size_t len)
{
    for (unsigned k = 0; k < BENCH_KERNELS; k++) {
        bench_workload one = {.name = "alone", .n = 1, .kernel = {k}};
        bench_arrival a = {.t_ns = 0, .kernel = k};
        bench_result r;
        double ones[BENCH_KERNELS] = {1, 1, 1, 1, 1, 1, 1, 1};
        char why[256] = "";
        if (bench_run(o, profiles, &one, KSCHED_FIFO, o->seed, &a, 1, ones, NULL, 0, &r, why,
                      sizeof(why))) {
            snprintf(msg, len, "%s", why);
            return -1;
        }
        int ok = r.n == 1 && !r.failed && !r.wrong && r.inst[0].end_ns > r.inst[0].start_ns;
        alone_ns[k] = ok ? (double)(r.inst[0].end_ns - r.inst[0].start_ns) : 0;
        bench_result_free(&r);
        if (!ok) {
            snprintf(msg, len, "%s did not run alone: %s", bench_kernels()[k].name,
                     why[0] ? why : "no time measured");
            return -1;
        }
    }
    return 0;
}
