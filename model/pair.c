/* Co-schedules of kernels: CP (paper eq. cp), the time difference of co-scheduled slices
 * (eq. executiontime), the balanced slice ratio and the ranking of all pairs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

static double cp_of(size_t n, const double cipc[], const double single[])
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += single[i] > 0 ? cipc[i] / single[i] : 0;
    return sum > 0 ? 1.0 - 1.0 / sum : -INFINITY;
}

static double insts_per_block(const kmodel_kernel *k)
{
    return (k->insts_per_warp > 0 ? k->insts_per_warp : 1.0) * k->warps_per_block;
}

/* One co-schedule, given both kernels' single IPCs; kernels already validated. */
static int pair_eval(kmodel_ctx *ctx, const kmodel_kernel *k1, unsigned b1,
                     const kmodel_kernel *k2, unsigned b2, const double single[2],
                     kmodel_pair_result *res)
{
    kmodel_kernel ks[2] = {*k1, *k2};
    unsigned blocks[2] = {b1, b2};
    double util[2];
    int rc = kmodel_mix_util(ctx, 2, ks, blocks, util, NULL, NULL);
    if (rc)
        return rc;
    memset(res, 0, sizeof(*res));
    res->k1 = 0;
    res->k2 = 1;
    double t[2];
    for (int i = 0; i < 2; i++) {
        res->blocks[i] = blocks[i];
        res->ipc[i] = util[i] * ctx->gpu.peak_ipc;
        res->single_ipc[i] = single[i];
        t[i] = res->ipc[i] > 0 ? insts_per_block(&ks[i]) * blocks[i] / res->ipc[i] : INFINITY;
    }
    res->cipc = res->ipc[0] + res->ipc[1];
    res->cp = cp_of(2, res->ipc, single);
    if (isfinite(t[0]) && isfinite(t[1])) {
        res->dt = fabs(t[0] - t[1]);
        res->dt_rel = res->dt / (t[0] > t[1] ? t[0] : t[1]);
    } else {
        res->dt = INFINITY;
        res->dt_rel = 1.0;
    }
    return KMODEL_OK;
}

int kmodel_pair(kmodel_ctx *ctx, const kmodel_kernel *k1, unsigned b1,
                const kmodel_kernel *k2, unsigned b2, kmodel_pair_result *res)
{
    if (!ctx)
        return KMODEL_EINVAL;
    if (!res || !k1 || !k2)
        return kmodel_fail(ctx, KMODEL_EINVAL, "NULL kernel or result");
    if (b1 == 0 || b2 == 0)
        return kmodel_fail(ctx, KMODEL_EINVAL, "a co-schedule needs >= 1 block of each kernel");
    kmodel_kernel ks[2] = {*k1, *k2};
    unsigned blocks[2] = {b1, b2};
    double single[2];
    int rc = kmodel_fits(ctx, 2, ks, blocks);
    if (!rc)
        rc = kmodel_ipc_single(ctx, k1, 0, &single[0]);
    if (!rc)
        rc = kmodel_ipc_single(ctx, k2, 0, &single[1]);
    if (!rc)
        rc = pair_eval(ctx, k1, b1, k2, b2, single, res);
    if (!rc)
        ctx->err[0] = 0;
    return rc;
}

/* One wave of kernel i of r (r->blocks[i] blocks on every SM) at the mix's rate: from the
 * kernel's measured time per block alone (block_ns, over the whole GPU) where given, else
 * from its instructions and the mix's IPC. */
static double wave_ns_of(const kmodel_ctx *ctx, const kmodel_kernel *k,
                         const kmodel_pair_result *r, int i, const double *block_ns)
{
    if (block_ns && block_ns[i] > 0)
        return r->blocks[i] * ctx->gpu.sms * block_ns[i] * r->single_ipc[i] / r->ipc[i];
    return insts_per_block(k) * r->blocks[i] / r->ipc[i] / ctx->gpu.clock_mhz * 1000.0;
}

int kmodel_launch_cp(kmodel_ctx *ctx, const kmodel_kernel *k1, const kmodel_kernel *k2,
                     const kmodel_pair_result *r, double launch_ns, const double *block_ns,
                     double *cp)
{
    if (!ctx)
        return KMODEL_EINVAL;
    if (!k1 || !k2 || !r || !cp)
        return kmodel_fail(ctx, KMODEL_EINVAL, "NULL argument");
    if (!(launch_ns >= 0) || !isfinite(launch_ns))
        return kmodel_fail(ctx, KMODEL_EINVAL, "launch cost must be finite and >= 0");
    const kmodel_kernel *ks[2] = {k1, k2};
    double share = 0;
    for (int i = 0; i < 2; i++) {
        if (!(r->ipc[i] > 0) || !(r->single_ipc[i] > 0))
            continue;       /* a kernel that makes no progress adds nothing */
        double wave_ns = wave_ns_of(ctx, ks[i], r, i, block_ns);
        share += r->ipc[i] / r->single_ipc[i] * wave_ns / (wave_ns + launch_ns);
    }
    *cp = share > 0 ? 1.0 - 1.0 / share : -INFINITY;
    ctx->err[0] = 0;
    return KMODEL_OK;
}

int kmodel_cp(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
              const unsigned blocks[], double *cp)
{
    if (!ctx)
        return KMODEL_EINVAL;
    if (!cp)
        return kmodel_fail(ctx, KMODEL_EINVAL, "cp is NULL");
    kmodel_mix_result mix;
    int rc = kmodel_mix(ctx, n, kernels, blocks, &mix);
    if (rc)
        return rc;
    double single[KMODEL_MAX_KERNELS];
    for (size_t i = 0; i < n; i++) {
        rc = kmodel_ipc_single(ctx, &kernels[i], 0, &single[i]);
        if (rc)
            return rc;
    }
    *cp = cp_of(n, mix.ipc, single);
    ctx->err[0] = 0;
    return KMODEL_OK;
}

static int fits2(const kmodel_ctx *ctx, const kmodel_kernel ks[2], unsigned b1, unsigned b2)
{
    unsigned blocks[2] = {b1, b2};
    return kmodel_fits_quiet(ctx, 2, ks, blocks);
}

/* Is a a better balanced ratio than b? Smaller dt_rel; ties (identical kernels): higher
 * cipc, then the more even split of warps. */
static int better(const kmodel_pair_result *a, const kmodel_pair_result *b,
                  const kmodel_kernel ks[2])
{
    if (a->dt_rel < b->dt_rel - 1e-12)
        return 1;
    if (a->dt_rel > b->dt_rel + 1e-12)
        return 0;
    if (fabs(a->cipc - b->cipc) > 1e-12)
        return a->cipc > b->cipc;
    double ea = fabs((double)a->blocks[0] * ks[0].warps_per_block -
                     (double)a->blocks[1] * ks[1].warps_per_block);
    double eb = fabs((double)b->blocks[0] * ks[0].warps_per_block -
                     (double)b->blocks[1] * ks[1].warps_per_block);
    return ea < eb;
}

/* Balanced ratio with known single IPCs; kernels validated. Every split of the scope is
 * evaluated: T1 - T2 is not monotone along the splits (a kernel's blocks run slower when the
 * other kernel's traffic grows), so a bisection on its sign can miss the best split. */
static int balanced_with(kmodel_ctx *ctx, const kmodel_kernel *k1, const kmodel_kernel *k2,
                         const double single[2], kmodel_pair_result *best)
{
    kmodel_kernel ks[2] = {*k1, *k2};
    unsigned max1, max2;
    int rc = kmodel_max_blocks(ctx, k1, &max1);
    if (!rc)
        rc = kmodel_max_blocks(ctx, k2, &max2);
    if (rc)
        return rc;
    int full = ctx->opt.ratio_scope == KMODEL_RATIO_FULL, found = 0;
    for (unsigned b1 = 1; b1 <= max1; b1++) {
        for (unsigned b2 = max2; b2 >= 1; b2--) {
            if (!fits2(ctx, ks, b1, b2))
                continue;
            /* FULL: only b2 = the largest that fits, and only if b1 cannot grow either */
            if (full && fits2(ctx, ks, b1 + 1, b2))
                break;
            kmodel_pair_result r;
            rc = pair_eval(ctx, k1, b1, k2, b2, single, &r);
            if (rc)
                return rc;
            if (!found || better(&r, best, ks))
                *best = r;
            found = 1;
            if (full)
                break;
        }
    }
    if (!found)
        return kmodel_fail(ctx, KMODEL_ENOFIT, "no block of each kernel fits one SM together");
    return KMODEL_OK;
}

int kmodel_balanced(kmodel_ctx *ctx, const kmodel_kernel *k1, const kmodel_kernel *k2,
                    kmodel_pair_result *best)
{
    if (!ctx)
        return KMODEL_EINVAL;
    if (!best || !k1 || !k2)
        return kmodel_fail(ctx, KMODEL_EINVAL, "NULL kernel or result");
    double single[2];
    int rc = kmodel_ipc_single(ctx, k1, 0, &single[0]);
    if (!rc)
        rc = kmodel_ipc_single(ctx, k2, 0, &single[1]);
    if (!rc)
        rc = balanced_with(ctx, k1, k2, single, best);
    if (!rc)
        ctx->err[0] = 0;
    return rc;
}

static int by_cp(const void *pa, const void *pb)
{
    const kmodel_pair_result *a = pa, *b = pb;
    if (a->cp != b->cp)
        return a->cp > b->cp ? -1 : 1;
    if (a->k1 != b->k1)
        return a->k1 < b->k1 ? -1 : 1;
    return (a->k2 > b->k2) - (a->k2 < b->k2);
}

int kmodel_rank_pairs(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
                      kmodel_pair_result out[], size_t *count)
{
    if (!ctx)
        return KMODEL_EINVAL;
    if (!kernels || !out || !count)
        return kmodel_fail(ctx, KMODEL_EINVAL, "NULL kernels, out or count");
    if (n > 1024)
        return kmodel_fail(ctx, KMODEL_EINVAL, "%zu kernels is too many to rank", n);
    *count = 0;
    double single[1024];
    for (size_t i = 0; i < n; i++) {
        int rc = kmodel_ipc_single(ctx, &kernels[i], 0, &single[i]);
        if (rc)
            return rc;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            double s[2] = {single[i], single[j]};
            int rc = balanced_with(ctx, &kernels[i], &kernels[j], s, &out[m]);
            if (rc == KMODEL_ENOFIT)
                continue;
            if (rc)
                return rc;
            out[m].k1 = (unsigned)i;
            out[m].k2 = (unsigned)j;
            m++;
        }
    }
    qsort(out, m, sizeof(*out), by_cp);
    *count = m;
    ctx->err[0] = 0;
    return KMODEL_OK;
}
