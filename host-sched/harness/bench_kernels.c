/* The eight benchmark kernels at bench/'s default sizes (docs/perf/bench.md) and the
 * paper's workload table (CI, MI, MIX, ALL). */
#include <string.h>
#include <strings.h>

#include "bench.h"

static const bench_kernel kernels[BENCH_KERNELS] = {
    {"pc", "pc_chase", {16384, 1, 1}, {256, 1, 1}},
    {"sad", "sad_search", {240, 134, 1}, {32, 1, 1}},
    {"spmv", "spmv_csr", {8192, 1, 1}, {256, 1, 1}},
    {"st", "st_stencil7", {16, 128, 8}, {32, 4, 1}},
    {"mm", "mm_tiled", {128, 128, 1}, {16, 16, 1}},
    {"mriq", "mriq_computeq", {8192, 1, 1}, {256, 1, 1}},
    {"bs", "bs_sweep", {16384, 1, 1}, {128, 1, 1}},
    {"tea", "tea_encrypt", {32768, 1, 1}, {128, 1, 1}},
};

/* The paper's table "Workload configurations" (indices into kernels[]). */
static const bench_workload workloads[BENCH_WORKLOADS] = {
    {"CI", 4, {6, 4, 7, 5}},                  /* BS, MM, TEA, MRIQ */
    {"MI", 4, {0, 2, 3, 1}},                  /* PC, SPMV, ST, SAD */
    {"MIX", 4, {0, 6, 7, 1}},                 /* PC, BS, TEA, SAD */
    {"ALL", 8, {0, 2, 3, 6, 4, 7, 5, 1}},     /* PC, SPMV, ST, BS, MM, TEA, MRIQ, SAD */
};

const bench_kernel *bench_kernels(void)
{
    return kernels;
}

const bench_workload *bench_workloads(void)
{
    return workloads;
}

int bench_kernel_find(const char *name)
{
    for (int i = 0; i < BENCH_KERNELS; i++)
        if (!strcasecmp(kernels[i].name, name))
            return i;
    return -1;
}
