/* Runs every kernel of kernelet-workloads through the CUDA Driver API exactly as the host
 * harness will: load the kernel's PTX file (JIT for the GPU at hand), allocate and copy the
 * instance's buffers, build kernelParams from its argument list, launch its geometry,
 * copy back and verify. Prints one line per kernel with the event-timed launch.
 *   run-workloads PTX_DIR [small|default] [seed]
 * Exit 0 when all verify, 1 on a failure, 77 when no CUDA device can be used. */
#include "kw_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One kernel: a warm-up launch (JIT, caches), then one timed launch; returns 0 when the
 * output verified. */
static int run_one(const kw_kernel *k, const char *dir, kw_size size, uint64_t seed)
{
    kwc_run r;
    char msg[256] = "";
    CUevent e0 = NULL, e1 = NULL;
    float ms = 0;
    int bad = 1;

    if (kwc_prepare(&r, k, dir, size, seed, msg, sizeof msg) ||
        kwc_failed(cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate", msg, sizeof msg) ||
        kwc_failed(cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate", msg, sizeof msg))
        goto out;
    for (int rep = 0; rep < 2; rep++) {
        if (kwc_failed(cuEventRecord(e0, NULL), "cuEventRecord", msg, sizeof msg) ||
            kwc_failed(kwc_launch(&r, NULL), "cuLaunchKernel", msg, sizeof msg) ||
            kwc_failed(cuEventRecord(e1, NULL), "cuEventRecord", msg, sizeof msg) ||
            kwc_failed(cuEventSynchronize(e1), "kernel", msg, sizeof msg) ||
            kwc_failed(cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime", msg, sizeof msg))
            goto out;
    }
    bad = kwc_verify(&r, msg, sizeof msg);
    printf("WORKLOAD name=%s verified=%s kernel_ms=%.4f blocks=%llu block=%ux%ux%u%s%s\n",
           k->name, bad ? "no" : "yes", ms, (unsigned long long)kw_total_blocks(&r.in),
           r.in.block[0], r.in.block[1], r.in.block[2], bad ? " why=" : "", bad ? msg : "");
    msg[0] = '\0';
out:
    if (msg[0])
        fprintf(stderr, "%s: %s\n", k->name, msg);
    if (e0)
        cuEventDestroy(e0);
    if (e1)
        cuEventDestroy(e1);
    kwc_release(&r);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s PTX_DIR [small|default] [seed]\n", argv[0]);
        return 2;
    }
    kw_size size = argc > 2 && strcmp(argv[2], "default") == 0 ? KW_SIZE_DEFAULT : KW_SIZE_SMALL;
    if (argc > 2 && strcmp(argv[2], "default") != 0 && strcmp(argv[2], "small") != 0) {
        fprintf(stderr, "size must be small or default\n");
        return 2;
    }
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "no usable CUDA device\n");
        return 77;
    }
    size_t n;
    const kw_kernel *const *all = kw_kernels(&n);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= run_one(all[i], argv[1], size, seed);
    cuDevicePrimaryCtxRelease(dev);
    return bad;
}
