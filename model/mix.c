/* IPC of one kernel or a mix of kernels on one SM: maps blocks to chain units (virtual SM,
 * granularity), builds and solves the chain, and scales utilisation to IPC. */
#include <math.h>
#include <string.h>

#include "model_internal.h"

void kmodel_units(const kmodel_ctx *ctx, const kmodel_kernel *k, unsigned b, unsigned *n,
                  double *g)
{
    double w = (double)b * k->warps_per_block / ctx->ns;   /* warps per scheduler */
    if (ctx->opt.granularity == KMODEL_GRAN_BLOCK) {
        /* A block puts warps_per_block / ns warps on each scheduler; they move together.
         * Blocks smaller than one warp per scheduler are grouped into one-warp units. */
        long cap = lround(w);
        *n = cap < 1 ? 1 : (b < cap ? b : (unsigned)cap);
        *g = w / *n;
        return;
    }
    long nw = lround(w);
    *n = nw < 1 ? 1 : (unsigned)nw;
    *g = 1.0;
}

static double local_states(unsigned n, double u)
{
    return u > 0 && u < 1 ? (n + 1.0) * (n + 2.0) / 2.0 : n + 1.0;
}

/* Which kernel to merge first: more local states, then smaller units, then by rm and u,
 * so that the choice does not depend on the order the kernels were given in. */
static int merge_before(double ma, double ga, const kmodel_kernel *a, double mb, double gb,
                        const kmodel_kernel *b)
{
    if (ma != mb)
        return ma > mb;
    if (ga != gb)
        return ga < gb;
    if (a->rm != b->rm)
        return a->rm < b->rm;
    return a->uncoalesced < b->uncoalesced;
}

/* Block granularity: merges units of the kernel with the most until the chain fits the
 * state budget; the kernel keeps its warps, in fewer, larger units. */
static void fit_budget(const kmodel_ctx *ctx, size_t nk, const kmodel_kernel kernels[],
                       unsigned n[], double g[])
{
    size_t budget = ctx->opt.state_budget;
    if (ctx->opt.granularity != KMODEL_GRAN_BLOCK || budget == 0)
        return;
    for (;;) {
        double N = 1, most = 0;
        size_t big = nk;
        for (size_t k = 0; k < nk; k++) {
            double m = local_states(n[k], kernels[k].uncoalesced);
            N *= m;
            if (n[k] > 1 && (big == nk || merge_before(m, g[k], &kernels[k], most, g[big],
                                                        &kernels[big]))) {
                most = m;
                big = k;
            }
        }
        if (N <= (double)budget || big == nk)
            return;
        double w = g[big] * n[big];
        n[big]--;
        g[big] = w / n[big];
    }
}

int kmodel_mix_util(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
                    const unsigned blocks[], double util[], double *idle, size_t *states)
{
    unsigned units[KMODEL_MAX_KERNELS];
    double g[KMODEL_MAX_KERNELS], rm[KMODEL_MAX_KERNELS], u[KMODEL_MAX_KERNELS];
    for (size_t i = 0; i < n; i++) {
        kmodel_units(ctx, &kernels[i], blocks[i], &units[i], &g[i]);
        rm[i] = kernels[i].rm;
        u[i] = kernels[i].uncoalesced;
    }
    fit_budget(ctx, n, kernels, units, g);
    kchain ch;
    int rc = kchain_setup(ctx, &ch, n, units, g, rm, u);
    if (!rc)
        rc = kchain_transitions(ctx, &ch);
    if (!rc)
        rc = kmodel_solve(ctx, ch.N);
    if (rc)
        return rc;
    kchain_ipc(&ch, ctx->pi, util, idle);
    if (states)
        *states = ch.N;
    return KMODEL_OK;
}

int kmodel_mix(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
               const unsigned blocks[], kmodel_mix_result *res)
{
    if (!ctx)
        return KMODEL_EINVAL;
    if (!res)
        return kmodel_fail(ctx, KMODEL_EINVAL, "result is NULL");
    if (n == 0 || n > KMODEL_MAX_KERNELS)
        return kmodel_fail(ctx, KMODEL_EINVAL, "%zu kernels (1..%d)", n, KMODEL_MAX_KERNELS);
    if (!blocks)
        return kmodel_fail(ctx, KMODEL_EINVAL, "blocks is NULL");
    for (size_t i = 0; i < n; i++)
        if (blocks[i] == 0)
            return kmodel_fail(ctx, KMODEL_EINVAL, "kernel %zu has 0 blocks", i);
    int rc = kmodel_fits(ctx, n, kernels, blocks);
    if (rc)
        return rc;
    double util[KMODEL_MAX_KERNELS];
    memset(res, 0, sizeof(*res));
    rc = kmodel_mix_util(ctx, n, kernels, blocks, util, &res->idle_fraction, &res->states);
    if (rc)
        return rc;
    res->n = n;
    for (size_t i = 0; i < n; i++) {
        res->ipc[i] = util[i] * ctx->gpu.peak_ipc;
        res->total_ipc += res->ipc[i];
    }
    ctx->err[0] = 0;
    return KMODEL_OK;
}

int kmodel_ipc_single(kmodel_ctx *ctx, const kmodel_kernel *k, unsigned blocks, double *ipc)
{
    if (!ctx)
        return KMODEL_EINVAL;
    if (!ipc)
        return kmodel_fail(ctx, KMODEL_EINVAL, "ipc is NULL");
    int rc = blocks ? 0 : kmodel_max_blocks(ctx, k, &blocks);
    if (!rc)
        rc = kmodel_fits(ctx, 1, k, &blocks);
    double util;
    if (!rc)
        rc = kmodel_mix_util(ctx, 1, k, &blocks, &util, NULL, NULL);
    if (rc)
        return rc;
    *ipc = util * ctx->gpu.peak_ipc;
    ctx->err[0] = 0;
    return KMODEL_OK;
}

int kmodel_homogeneous(kmodel_ctx *ctx, unsigned warps, double rm, double *P, double *pi,
                       double *util)
{
    if (!ctx)
        return KMODEL_EINVAL;
    if (warps == 0 || warps > KMODEL_MAX_UNITS)
        return kmodel_fail(ctx, KMODEL_EINVAL, "warps %u outside 1..%d", warps,
                           KMODEL_MAX_UNITS);
    if (isnan(rm) || rm < 0 || rm > 1)
        return kmodel_fail(ctx, KMODEL_EINVAL, "rm %g is not in [0, 1]", rm);
    double g = 1.0, u = 0.0, ut;
    kchain ch;
    int rc = kchain_setup(ctx, &ch, 1, &warps, &g, &rm, &u);
    if (!rc)
        rc = kchain_transitions(ctx, &ch);
    if (rc)
        return rc;
    if (P)
        memcpy(P, ctx->P, ch.N * ch.N * sizeof(double));
    rc = kmodel_solve(ctx, ch.N);
    if (rc)
        return rc;
    if (pi)
        memcpy(pi, ctx->pi, ch.N * sizeof(double));
    kchain_ipc(&ch, ctx->pi, &ut, NULL);
    if (util)
        *util = ut;
    ctx->err[0] = 0;
    return KMODEL_OK;
}
