/* PUR, MUR, Rm and the uncoalesced fraction from one profiled launch. */
#include "characterise.h"

#include <math.h>

/* A warp's 32-bit access touches 4 sectors when coalesced and 32 when every lane hits its
 * own sector; sectors per request in between are read as a mix of the two. Wider accesses
 * (8 or 16 bytes a lane) read as slightly uncoalesced; the model only needs the split
 * between cheap and expensive accesses, so this approximation is documented, not fixed. */
#define SECTORS_COALESCED 4.0
#define SECTORS_UNCOALESCED 32.0

static int usable(double v)
{
    return isfinite(v) && v >= 0;
}

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* Bytes one memory instruction moves from DRAM: a coalesced warp 128 (32 lanes x 4 bytes),
 * an uncoalesced one a sector per lane (docs/MODEL.md; the H100 data file's derivation). */
#define BYTES_COALESCED 128.0
#define BYTES_UNCOALESCED (32.0 * 32.0)

static double uncoalesced_fraction(const kprof_counters *c)
{
    if (c->global_requests <= 0)
        return 0;
    double per_request = c->global_sectors / c->global_requests;
    return clamp01((per_request - SECTORS_COALESCED) / (SECTORS_UNCOALESCED - SECTORS_COALESCED));
}

/* The model's Rm: memory instructions that reach DRAM (their warp waits the DRAM latency L)
 * per instruction. With global traffic, the memory instructions scaled by the fraction of
 * L1's sectors that missed L2; without (local memory only), the data file's estimate from
 * DRAM bytes and bytes per instruction. Never above rm_all. */
static double dram_rm(const kprof_counters *c, double uncoalesced, double rm_all)
{
    double rm;
    if (c->global_sectors > 0) {
        rm = rm_all * clamp01(c->l2_miss_sectors / c->global_sectors);
    } else {
        double per_inst = BYTES_COALESCED * (1 - uncoalesced) + BYTES_UNCOALESCED * uncoalesced;
        rm = (c->dram_read_bytes + c->dram_write_bytes) / per_inst / c->warp_insts;
    }
    return rm < rm_all ? rm : rm_all;
}

int kprof_characterise(const kprof_counters *c, const kmodel_gpu *gpu, kprof_profile *out)
{
    if (!c || !gpu || !out || gpu->sms == 0 || !(gpu->peak_ipc > 0) ||
        !(gpu->mem_bandwidth_gbs > 0))
        return KPROF_EINVAL;
    const double fields[] = {c->warp_insts, c->mem_insts, c->global_requests, c->global_sectors,
                             c->l2_miss_sectors, c->dram_read_bytes, c->dram_write_bytes,
                             c->sm_cycles, c->duration_ns};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!usable(fields[i]))
            return KPROF_EINVAL;
    if (c->warp_insts <= 0 || c->sm_cycles <= 0 || c->duration_ns <= 0 ||
        c->mem_insts > c->warp_insts)
        return KPROF_EINVAL;

    out->ipc = c->warp_insts / (c->sm_cycles * gpu->sms);
    out->pur = out->ipc / gpu->peak_ipc;
    double bytes_per_ns = gpu->mem_bandwidth_gbs; /* 1 GB/s = 1 byte/ns */
    out->mur = (c->dram_read_bytes + c->dram_write_bytes) / (c->duration_ns * bytes_per_ns);
    out->uncoalesced = uncoalesced_fraction(c);
    out->rm_all = c->mem_insts / c->warp_insts;
    out->rm = dram_rm(c, out->uncoalesced, out->rm_all);
    return KPROF_OK;
}
