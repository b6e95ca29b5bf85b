/* ptx-slice-gpu: the slicer on a real GPU.
 *   ptx-slice-gpu BENCH_PTX_DIR CORPUS_PTX_DIR [--csv FILE] [--seed N] [--plans N] [--reps N]
 *                 [--skip-overhead]
 * 1. every benchmark kernel (kernelet-workloads, default size): whole launch verified
 *    against the CPU reference, then random slicing plans: bit-identical outputs, verified;
 * 2. every corpus kernel of the sidecar table: slicing plans bit-identical to the whole run;
 * 3. slicing overhead per benchmark kernel and slice size (table, CSV).
 * Exit 0 when everything matched, 1 on a failure, 77 when no CUDA device can be used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_slices.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s BENCH_PTX_DIR CORPUS_PTX_DIR [--csv FILE] [--seed N] "
                        "[--plans N] [--reps N] [--skip-overhead]\n", argv[0]);
        return 2;
    }
    const char *csv = "ptx-slice-overhead.csv";
    uint64_t seed = 1;
    unsigned plans = 4, reps = 7;
    int overhead = 1;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
            csv = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--plans") == 0 && i + 1 < argc)
            plans = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--skip-overhead") == 0)
            overhead = 0;
        else {
            fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (plans < 1 || reps < 1) {
        fprintf(stderr, "--plans and --reps must be at least 1\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "no usable CUDA device\n");
        return 77;
    }
    char name[256] = "?";
    cuDeviceGetName(name, sizeof name, dev);
    printf("device: %s\n", name);
    int failures = check_bench(argv[1], seed, plans);
    failures += check_corpus(argv[2], seed, plans);
    if (overhead)
        failures += measure_overhead(argv[1], seed, reps, csv);
    printf("\n%s: %d failure%s\n", failures ? "FAILED" : "PASSED", failures,
           failures == 1 ? "" : "s");
    cuDevicePrimaryCtxRelease(dev);
    return failures ? 1 : 0;
}
