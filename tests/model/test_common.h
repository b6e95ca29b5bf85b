/* Helpers shared by the model tests. */
#ifndef TEST_COMMON_H
#define TEST_COMMON_H

#include <glib.h>

#include "kernelet/model.h"

/* A GPU with roomy limits and peak IPC 1, so that IPC equals utilisation. */
static inline kmodel_gpu test_gpu(void)
{
    kmodel_gpu g = {
        .name = "test", .sms = 1, .max_warps_per_sm = 64, .max_blocks_per_sm = 64,
        .max_warps_per_block = 32, .regs_per_sm = 1 << 20, .max_regs_per_thread = 255,
        .reg_alloc_unit = 256, .smem_per_sm = 1 << 20, .max_smem_per_block = 1 << 20,
        .smem_alloc_unit = 128, .smem_reserved_per_block = 0, .schedulers_per_sm = 4,
        .peak_ipc = 1.0, .clock_mhz = 1000.0, .mem_bandwidth_gbs = 100.0,
        .mem_latency_cycles = 100.0, .txn_bytes = 32,
    };
    return g;
}

static inline kmodel_ctx *test_ctx(const kmodel_gpu *gpu, const kmodel_options *opt)
{
    char msg[256] = "";
    kmodel_ctx *ctx = NULL;
    int rc = kmodel_ctx_new(&ctx, gpu, opt, msg, sizeof(msg));
    if (rc)
        g_error("kmodel_ctx_new: %s", msg);
    return ctx;
}

/* Options for the plain chain: one scheduler for the SM, units exactly as asked. */
static inline kmodel_options exact_options(kmodel_granularity gran, double l0, double a0,
                                           double b0, double bw)
{
    kmodel_options o;
    kmodel_options_default(&o);
    o.granularity = gran;
    o.virtual_sm = 0;
    o.state_budget = 0;
    o.latency.form = KMODEL_LAT_LINEAR;
    o.latency.l0 = l0;
    o.latency.a0 = a0;
    o.latency.b0 = b0;
    o.latency.bandwidth = bw;
    return o;
}

static inline kmodel_kernel kernel_of(unsigned wpb, double rm, double u)
{
    kmodel_kernel k = {.warps_per_block = wpb, .rm = rm, .uncoalesced = u};
    return k;
}

#endif
