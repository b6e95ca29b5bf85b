/* From hardware counters to the paper's kernel characteristics (host-sched/backends/cuda/).
 *
 * Plain arithmetic on the counters of one launch (kprof_counters, filled by profiler.h on
 * a GPU) and a kmodel_gpu, kept apart from the CUPTI code so that it is tested without a
 * GPU. docs/MODEL.md ("Kernel characteristics") gives the definitions; docs/perf/bench.md
 * uses the same ones with Nsight Compute.
 */
#ifndef KERNELET_HOST_CHARACTERISE_H
#define KERNELET_HOST_CHARACTERISE_H

#include "kernelet/model.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    KPROF_OK = 0,
    KPROF_EINVAL = -1,    /* NULL pointer, empty grid */
    KPROF_ECUDA = -2,     /* a Driver API call failed (the launch itself, too) */
    KPROF_ECUPTI = -3,    /* CUPTI refused (no counter access, unknown metric, ...) */
    KPROF_ENOMEM = -4,
};

/* Counters of one launch, summed over the whole GPU unless marked otherwise. */
typedef struct kprof_counters {
    double warp_insts;        /* warp instructions executed (sm__inst_executed.sum) */
    double mem_insts;         /* warp-level global and local loads, stores, atomics, reductions */
    double global_requests;   /* L1 requests of global loads and stores */
    double global_sectors;    /* 32-byte sectors those requests touched */
    double l2_miss_sectors;   /* sectors L1 asked of L2 that missed L2 (went to DRAM) */
    double dram_read_bytes;
    double dram_write_bytes;
    double sm_cycles;         /* cycles the launch lasted, averaged over SMs */
    double duration_ns;       /* GPU time of the launch */
} kprof_counters;

typedef struct kprof_profile {
    double ipc;          /* warp instructions per SM cycle */
    double pur;          /* ipc / peak_ipc: processor utilisation ratio, [0, 1] */
    double mur;          /* DRAM bytes / (time x peak bandwidth): memory utilisation ratio */
    double rm;           /* memory instructions whose warp waits for DRAM / instructions,
                            [0, 1]: the model's Rm (docs/MODEL.md, "Kernel
                            characteristics") */
    double rm_all;       /* every global and local memory instruction / instructions (cache
                            hits included; for reports) */
    double uncoalesced;  /* estimated fraction of uncoalesced memory instructions, [0, 1] */
} kprof_profile;

/* Derives a profile from counters of a launch on gpu. KPROF_EINVAL when the counters are
 * not usable (no instructions, no cycles, no time, negative or NaN values). */
int kprof_characterise(const kprof_counters *c, const kmodel_gpu *gpu, kprof_profile *out);

#ifdef __cplusplus
}
#endif

#endif
