/* The built-in GPU descriptions and their validation. Where each number comes from is in
 * docs/MODEL.md ("GPU table"). */
#include <math.h>
#include <stdio.h>
#include <strings.h>

#include "model_internal.h"

static const kmodel_gpu gpu_table[] = {
    {   /* Tesla C2050, Fermi GF100, compute capability 2.0; clock/bandwidth: paper's table */
        .name = "C2050", .sms = 14, .max_warps_per_sm = 48, .max_blocks_per_sm = 8,
        .max_warps_per_block = 32, .regs_per_sm = 32768, .max_regs_per_thread = 63,
        .reg_alloc_unit = 64, .smem_per_sm = 49152, .max_smem_per_block = 49152,
        .smem_alloc_unit = 128, .smem_reserved_per_block = 0, .schedulers_per_sm = 2,
        .peak_ipc = 1.0, .clock_mhz = 1147.0, .mem_bandwidth_gbs = 144.0,
        .mem_latency_cycles = 600.0, .txn_bytes = 128,
    },
    {   /* GTX 680, Kepler GK104, compute capability 3.0; clock/bandwidth: paper's table */
        .name = "GTX680", .sms = 8, .max_warps_per_sm = 64, .max_blocks_per_sm = 16,
        .max_warps_per_block = 32, .regs_per_sm = 65536, .max_regs_per_thread = 63,
        .reg_alloc_unit = 256, .smem_per_sm = 49152, .max_smem_per_block = 49152,
        .smem_alloc_unit = 256, .smem_reserved_per_block = 0, .schedulers_per_sm = 4,
        .peak_ipc = 8.0, .clock_mhz = 706.0, .mem_bandwidth_gbs = 192.0,
        .mem_latency_cycles = 600.0, .txn_bytes = 32,
    },
    {   /* H100 SXM5 80 GB, Hopper GH100, compute capability 9.0; L0 measured here */
        .name = "H100", .sms = 132, .max_warps_per_sm = 64, .max_blocks_per_sm = 32,
        .max_warps_per_block = 32, .regs_per_sm = 65536, .max_regs_per_thread = 255,
        .reg_alloc_unit = 256, .smem_per_sm = 233472, .max_smem_per_block = 232448,
        .smem_alloc_unit = 128, .smem_reserved_per_block = 1024, .schedulers_per_sm = 4,
        .peak_ipc = 4.0, .clock_mhz = 1980.0, .mem_bandwidth_gbs = 3350.0,
        .mem_latency_cycles = 420.0, .txn_bytes = 32,
    },
    {   /* H200 SXM 141 GB: the H100 SXM's GH100 with HBM3e; L0 assumed as on the H100 */
        .name = "H200", .sms = 132, .max_warps_per_sm = 64, .max_blocks_per_sm = 32,
        .max_warps_per_block = 32, .regs_per_sm = 65536, .max_regs_per_thread = 255,
        .reg_alloc_unit = 256, .smem_per_sm = 233472, .max_smem_per_block = 232448,
        .smem_alloc_unit = 128, .smem_reserved_per_block = 1024, .schedulers_per_sm = 4,
        .peak_ipc = 4.0, .clock_mhz = 1980.0, .mem_bandwidth_gbs = 4800.0,
        .mem_latency_cycles = 420.0, .txn_bytes = 32,
    },
};

/* Other spellings accepted by kmodel_gpu_lookup. */
static const struct { const char *alias; const char *name; } gpu_alias[] = {
    {"Tesla C2050", "C2050"}, {"Tesla-C2050", "C2050"}, {"Fermi", "C2050"},
    {"GTX 680", "GTX680"}, {"GTX-680", "GTX680"}, {"Kepler", "GTX680"},
    {"H100-SXM", "H100"}, {"H100 SXM", "H100"}, {"H100-SXM5", "H100"}, {"H100 SXM5", "H100"},
    {"H100 80GB HBM3", "H100"}, {"NVIDIA H100 80GB HBM3", "H100"},
    {"H200-SXM", "H200"}, {"H200 SXM", "H200"}, {"NVIDIA H200", "H200"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

size_t kmodel_gpu_count(void)
{
    return COUNT(gpu_table);
}

const kmodel_gpu *kmodel_gpu_at(size_t i)
{
    return i < COUNT(gpu_table) ? &gpu_table[i] : NULL;
}

const kmodel_gpu *kmodel_gpu_lookup(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < COUNT(gpu_alias); i++)
        if (strcasecmp(name, gpu_alias[i].alias) == 0)
            name = gpu_alias[i].name;
    for (size_t i = 0; i < COUNT(gpu_table); i++)
        if (strcasecmp(name, gpu_table[i].name) == 0)
            return &gpu_table[i];
    return NULL;
}

static int bad(char *msg, size_t msglen, const char *what)
{
    if (msg && msglen)
        snprintf(msg, msglen, "invalid GPU description: %s", what);
    return KMODEL_EINVAL;
}

static int positive(double v)
{
    return isfinite(v) && v > 0;
}

int kmodel_gpu_validate(const kmodel_gpu *g, char *msg, size_t msglen)
{
    if (!g)
        return bad(msg, msglen, "NULL");
    if (g->sms == 0)
        return bad(msg, msglen, "sms is 0");
    if (g->max_warps_per_sm == 0 || g->max_warps_per_sm > 1024)
        return bad(msg, msglen, "max_warps_per_sm must be 1..1024");
    if (g->max_blocks_per_sm == 0 || g->max_blocks_per_sm > 1024)
        return bad(msg, msglen, "max_blocks_per_sm must be 1..1024");
    if (g->max_warps_per_block == 0 || g->max_warps_per_block > g->max_warps_per_sm)
        return bad(msg, msglen, "max_warps_per_block must be 1..max_warps_per_sm");
    if (g->regs_per_sm == 0 || g->max_regs_per_thread == 0 || g->reg_alloc_unit == 0)
        return bad(msg, msglen, "register limits must be > 0");
    if (g->smem_alloc_unit == 0 || g->max_smem_per_block > g->smem_per_sm)
        return bad(msg, msglen, "shared memory limits are inconsistent");
    if (g->schedulers_per_sm == 0 || g->schedulers_per_sm > 64)
        return bad(msg, msglen, "schedulers_per_sm must be 1..64");
    if (!positive(g->peak_ipc) || !positive(g->clock_mhz) || !positive(g->mem_bandwidth_gbs))
        return bad(msg, msglen, "peak_ipc, clock_mhz and mem_bandwidth_gbs must be > 0");
    if (!isfinite(g->mem_latency_cycles) || g->mem_latency_cycles < 1)
        return bad(msg, msglen, "mem_latency_cycles must be >= 1");
    if (g->txn_bytes == 0 || g->txn_bytes > 4096)
        return bad(msg, msglen, "txn_bytes must be 1..4096");
    return KMODEL_OK;
}
