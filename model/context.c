/* The model context: GPU, options, derived latency parameters, work buffers, last error. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

const char *kmodel_strerror(int err)
{
    switch (err) {
    case KMODEL_OK: return "success";
    case KMODEL_EINVAL: return "invalid parameter";
    case KMODEL_ENOFIT: return "blocks do not fit one SM";
    case KMODEL_ENOMEM: return "out of memory";
    case KMODEL_ETOOBIG: return "too many chain states";
    case KMODEL_ENOCONV: return "iteration did not converge";
    case KMODEL_ESINGULAR: return "steady state is numerically singular";
    case KMODEL_ENOTFOUND: return "unknown GPU";
    default: return "unknown error";
    }
}

void kmodel_options_default(kmodel_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof(*opt));
    opt->granularity = KMODEL_GRAN_BLOCK;
    opt->virtual_sm = 1;
    opt->solver = KMODEL_SOLVER_AUTO;
    opt->ratio_scope = KMODEL_RATIO_FULL;
    opt->latency.form = KMODEL_LAT_LINEAR;
    opt->latency.l0 = -1.0;
    opt->latency.a0 = 1.0;
    opt->latency.b0 = 0.0;
    opt->latency.bandwidth = 0.0;
    opt->tol = 1e-12;
    opt->max_iter = 100000;
    opt->max_states = 4096;
    opt->state_budget = 64;
}

int kmodel_fail(kmodel_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
    va_end(ap);
    return code;
}

static int set_msg(char *msg, size_t msglen, int code, const char *text)
{
    if (msg && msglen)
        snprintf(msg, msglen, "%s", text);
    return code;
}

/* Checks the options; returns a message or NULL when they are valid. */
static const char *options_problem(const kmodel_options *o)
{
    const kmodel_latency *l = &o->latency;
    if (o->granularity != KMODEL_GRAN_WARP && o->granularity != KMODEL_GRAN_BLOCK)
        return "unknown granularity";
    if (o->virtual_sm != 0 && o->virtual_sm != 1)
        return "virtual_sm must be 0 or 1";
    if (o->solver < KMODEL_SOLVER_AUTO || o->solver > KMODEL_SOLVER_POWER)
        return "unknown solver";
    if (o->ratio_scope != KMODEL_RATIO_FULL && o->ratio_scope != KMODEL_RATIO_ALL)
        return "unknown ratio scope";
    if (l->form < KMODEL_LAT_LINEAR || l->form > KMODEL_LAT_CUSTOM)
        return "unknown latency form";
    if (l->form == KMODEL_LAT_CUSTOM && !l->custom)
        return "custom latency form without a function";
    if (isnan(l->l0) || isinf(l->l0) || (l->l0 >= 0 && l->l0 < 1))
        return "latency l0 must be >= 1 cycle (or < 0 for the GPU's value)";
    if (!isfinite(l->a0) || l->a0 <= 0 || l->a0 > 1)
        return "latency a0 must be in (0, 1]";
    if (!isfinite(l->b0) || l->b0 < 0)
        return "latency b0 must be >= 0";
    if (!isfinite(l->bandwidth))
        return "latency bandwidth must be finite";
    if (!isfinite(o->tol) || o->tol <= 0 || o->tol >= 1)
        return "tol must be in (0, 1)";
    if (o->max_iter == 0)
        return "max_iter must be > 0";
    if (o->max_states < 2 || o->max_states > 65536)
        return "max_states must be 2..65536";
    if (o->state_budget == 1)
        return "state_budget must be 0 or >= 2";
    return NULL;
}

int kmodel_ctx_new(kmodel_ctx **out, const kmodel_gpu *gpu, const kmodel_options *opt,
                   char *msg, size_t msglen)
{
    if (!out)
        return set_msg(msg, msglen, KMODEL_EINVAL, "out is NULL");
    *out = NULL;
    int rc = kmodel_gpu_validate(gpu, msg, msglen);
    if (rc)
        return rc;
    kmodel_options o;
    if (opt)
        o = *opt;
    else
        kmodel_options_default(&o);
    const char *problem = options_problem(&o);
    if (problem)
        return set_msg(msg, msglen, KMODEL_EINVAL, problem);

    kmodel_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return set_msg(msg, msglen, KMODEL_ENOMEM, "out of memory");
    ctx->gpu = *gpu;
    snprintf(ctx->gpu_name, sizeof(ctx->gpu_name), "%s", gpu->name ? gpu->name : "custom");
    ctx->gpu.name = ctx->gpu_name;
    ctx->opt = o;
    ctx->ns = o.virtual_sm ? gpu->schedulers_per_sm : 1;
    if (o.latency.bandwidth > 0)
        ctx->bw = o.latency.bandwidth;
    else
        ctx->bw = gpu->mem_bandwidth_gbs * 1e9 / (gpu->clock_mhz * 1e6) / gpu->sms / ctx->ns;
    ctx->l0 = o.latency.l0 >= 0 ? o.latency.l0 : gpu->mem_latency_cycles;
    for (size_t k = 1; k < sizeof(ctx->recip) / sizeof(ctx->recip[0]); k++)
        ctx->recip[k] = 1.0 / (double)k;
    *out = ctx;
    return KMODEL_OK;
}

void kmodel_ctx_free(kmodel_ctx *ctx)
{
    if (!ctx)
        return;
    free(ctx->P);
    free(ctx->pi);
    free(ctx->pi2);
    free(ctx->row);
    free(ctx->perm);
    for (size_t i = 0; i < KMODEL_MAX_KERNELS; i++)
        free(ctx->dist[i]);
    free(ctx->loc_buf);
    free(ctx->pmf_buf);
    free(ctx->scratch);
    free(ctx);
}

const char *kmodel_ctx_error(const kmodel_ctx *ctx)
{
    return ctx ? ctx->err : "context is NULL";
}

const kmodel_gpu *kmodel_ctx_gpu(const kmodel_ctx *ctx)
{
    return ctx ? &ctx->gpu : NULL;
}

const kmodel_options *kmodel_ctx_options(const kmodel_ctx *ctx)
{
    return ctx ? &ctx->opt : NULL;
}

double kmodel_ctx_bandwidth(const kmodel_ctx *ctx)
{
    return ctx ? ctx->bw : NAN;
}

double kmodel_ctx_base_latency(const kmodel_ctx *ctx)
{
    return ctx ? ctx->l0 : NAN;
}

int kmodel_grow(void **buf, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap)
        return KMODEL_OK;
    if (n > SIZE_MAX / sz)
        return KMODEL_ENOMEM;
    void *p = realloc(*buf, n * sz);
    if (!p)
        return KMODEL_ENOMEM;
    *buf = p;
    *cap = n;
    return KMODEL_OK;
}

int kmodel_reserve(kmodel_ctx *ctx, size_t N)
{
    size_t cap = ctx->P_cap;
    if (kmodel_grow((void **)&ctx->P, &cap, N * N, sizeof(double)))
        return kmodel_fail(ctx, KMODEL_ENOMEM, "cannot allocate a %zu-state matrix", N);
    ctx->P_cap = cap;
    if (N > ctx->vec_cap) {
        double *a = realloc(ctx->pi, N * sizeof(double));
        if (a)
            ctx->pi = a;
        double *b = a ? realloc(ctx->pi2, N * sizeof(double)) : NULL;
        if (b)
            ctx->pi2 = b;
        double *c = b ? realloc(ctx->row, N * sizeof(double)) : NULL;
        if (c)
            ctx->row = c;
        size_t *d = c ? realloc(ctx->perm, N * sizeof(size_t)) : NULL;
        if (d)
            ctx->perm = d;
        if (!d)
            return kmodel_fail(ctx, KMODEL_ENOMEM, "cannot allocate %zu-state vectors", N);
        ctx->vec_cap = N;
    }
    return KMODEL_OK;
}
