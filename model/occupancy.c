/* Kernel validation and occupancy: how many blocks of which kernels fit one SM. The limits
 * follow the CUDA occupancy calculation: resident warps, resident blocks, registers
 * (allocated per warp in units of reg_alloc_unit) and shared memory (per block, rounded to
 * smem_alloc_unit, plus the per-block reservation). */
#include <math.h>

#include "model_internal.h"

static unsigned long round_up(unsigned long v, unsigned long unit)
{
    return (v + unit - 1) / unit * unit;
}

static unsigned long regs_per_block(const kmodel_gpu *g, const kmodel_kernel *k)
{
    unsigned long per_warp = round_up((unsigned long)k->regs_per_thread * 32, g->reg_alloc_unit);
    return per_warp * k->warps_per_block;
}

static unsigned long smem_per_block(const kmodel_gpu *g, const kmodel_kernel *k)
{
    return round_up((unsigned long)k->smem_per_block + g->smem_reserved_per_block,
                    g->smem_alloc_unit);
}

static int in_unit(double v)
{
    return !isnan(v) && v >= 0 && v <= 1;
}

int kmodel_check_kernel(kmodel_ctx *ctx, const kmodel_kernel *k)
{
    const kmodel_gpu *g = &ctx->gpu;
    if (!k)
        return kmodel_fail(ctx, KMODEL_EINVAL, "kernel is NULL");
    if (k->warps_per_block == 0 || k->warps_per_block > g->max_warps_per_block)
        return kmodel_fail(ctx, KMODEL_EINVAL, "warps_per_block %u outside 1..%u on %s",
                           k->warps_per_block, g->max_warps_per_block, g->name);
    if (k->regs_per_thread > g->max_regs_per_thread)
        return kmodel_fail(ctx, KMODEL_EINVAL, "regs_per_thread %u above %s's limit %u",
                           k->regs_per_thread, g->name, g->max_regs_per_thread);
    if (k->smem_per_block > g->max_smem_per_block)
        return kmodel_fail(ctx, KMODEL_EINVAL, "smem_per_block %u above %s's limit %u",
                           k->smem_per_block, g->name, g->max_smem_per_block);
    if (!in_unit(k->rm))
        return kmodel_fail(ctx, KMODEL_EINVAL, "rm %g is not in [0, 1]", k->rm);
    if (!in_unit(k->uncoalesced))
        return kmodel_fail(ctx, KMODEL_EINVAL, "uncoalesced %g is not in [0, 1]",
                           k->uncoalesced);
    if (!isfinite(k->insts_per_warp) || k->insts_per_warp < 0)
        return kmodel_fail(ctx, KMODEL_EINVAL, "insts_per_warp %g must be finite and >= 0",
                           k->insts_per_warp);
    if (regs_per_block(g, k) > g->regs_per_sm)
        return kmodel_fail(ctx, KMODEL_EINVAL, "one block needs %lu registers, %s has %u",
                           regs_per_block(g, k), g->name, g->regs_per_sm);
    if (smem_per_block(g, k) > g->smem_per_sm)
        return kmodel_fail(ctx, KMODEL_EINVAL, "one block needs %lu bytes of shared memory",
                           smem_per_block(g, k));
    return KMODEL_OK;
}

int kmodel_kernel_validate(kmodel_ctx *ctx, const kmodel_kernel *k)
{
    if (!ctx)
        return KMODEL_EINVAL;
    return kmodel_check_kernel(ctx, k);
}

int kmodel_fits_quiet(const kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
                      const unsigned blocks[])
{
    const kmodel_gpu *g = &ctx->gpu;
    unsigned long warps = 0, nblocks = 0, regs = 0, smem = 0;
    for (size_t i = 0; i < n; i++) {
        nblocks += blocks[i];
        warps += (unsigned long)blocks[i] * kernels[i].warps_per_block;
        regs += blocks[i] * regs_per_block(g, &kernels[i]);
        smem += blocks[i] * smem_per_block(g, &kernels[i]);
    }
    return nblocks <= g->max_blocks_per_sm && warps <= g->max_warps_per_sm &&
           regs <= g->regs_per_sm && smem <= g->smem_per_sm;
}

int kmodel_fits(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
                const unsigned blocks[])
{
    if (!ctx)
        return KMODEL_EINVAL;
    if (!kernels || !blocks || n == 0)
        return kmodel_fail(ctx, KMODEL_EINVAL, "no kernels");
    const kmodel_gpu *g = &ctx->gpu;
    unsigned long warps = 0, nblocks = 0, regs = 0, smem = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = kmodel_check_kernel(ctx, &kernels[i]);
        if (rc)
            return rc;
        if (blocks[i] > g->max_blocks_per_sm)
            return kmodel_fail(ctx, KMODEL_ENOFIT, "%u blocks exceed %s's %u blocks per SM",
                               blocks[i], g->name, g->max_blocks_per_sm);
        nblocks += blocks[i];
        warps += (unsigned long)blocks[i] * kernels[i].warps_per_block;
        regs += blocks[i] * regs_per_block(g, &kernels[i]);
        smem += blocks[i] * smem_per_block(g, &kernels[i]);
    }
    if (nblocks > g->max_blocks_per_sm)
        return kmodel_fail(ctx, KMODEL_ENOFIT, "%lu blocks exceed %s's %u blocks per SM",
                           nblocks, g->name, g->max_blocks_per_sm);
    if (warps > g->max_warps_per_sm)
        return kmodel_fail(ctx, KMODEL_ENOFIT, "%lu warps exceed %s's %u warps per SM",
                           warps, g->name, g->max_warps_per_sm);
    if (regs > g->regs_per_sm)
        return kmodel_fail(ctx, KMODEL_ENOFIT, "%lu registers exceed %s's %u per SM",
                           regs, g->name, g->regs_per_sm);
    if (smem > g->smem_per_sm)
        return kmodel_fail(ctx, KMODEL_ENOFIT, "%lu bytes of shared memory exceed %s's %u",
                           smem, g->name, g->smem_per_sm);
    return KMODEL_OK;
}

int kmodel_max_blocks(kmodel_ctx *ctx, const kmodel_kernel *k, unsigned *blocks)
{
    if (!ctx)
        return KMODEL_EINVAL;
    int rc = kmodel_check_kernel(ctx, k);
    if (rc)
        return rc;
    if (!blocks)
        return kmodel_fail(ctx, KMODEL_EINVAL, "blocks is NULL");
    const kmodel_gpu *g = &ctx->gpu;
    unsigned long best = g->max_blocks_per_sm;
    unsigned long by_warps = g->max_warps_per_sm / k->warps_per_block;
    unsigned long r = regs_per_block(g, k), s = smem_per_block(g, k);
    if (by_warps < best)
        best = by_warps;
    if (r && g->regs_per_sm / r < best)
        best = g->regs_per_sm / r;
    if (s && g->smem_per_sm / s < best)
        best = g->smem_per_sm / s;
    *blocks = (unsigned)best;
    ctx->err[0] = 0;
    return KMODEL_OK;
}
