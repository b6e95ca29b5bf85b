/* fence-probe: what one fenced kernel costs on the GPU, part by part (docs/perf/isolation.md).
 * Loads a PTX file whose first entry is fenced (kernelet-ptx print --fence) or not, and
 * times `launches` launches of it with CUDA events, the tenant's control words in mapped
 * host memory (as the cuda backend keeps them) or in device memory:
 *   fence-probe PTX ENTRY host|device|plain GRID BLOCK LAUNCHES U32...
 * The entry takes two device buffers of GRID*BLOCK floats, then the U32 arguments; a
 * fenced entry also its window (base 0, mask all ones: every address unchanged) and the
 * control words. Prints "RESULT ... ms_per_launch=...".
 * With LAUNCHES 0 the entry is one that never ends, the control words are in device
 * memory, and after 200 ms the cancel word is written from the host while it runs, as
 * CANCEL_BY says: "memcpy" (cuMemcpyHtoDAsync) or "memop" (cuStreamWriteValue32), on a
 * stream of its own of the highest priority; prints whether and when the kernel ended. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kw_cuda.h"

#define CHECK(call)                                                                     \
    do {                                                                                \
        CUresult r_ = (call);                                                           \
        if (r_ != CUDA_SUCCESS) {                                                       \
            const char *n_ = "?";                                                       \
            cuGetErrorName(r_, &n_);                                                    \
            fprintf(stderr, "fence-probe: %s: %s\n", #call, n_);                        \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

/* The control words (cancel, fault) where `where` says; 0 for "plain". */
static CUdeviceptr control_words(const char *where)
{
    CUdeviceptr d = 0;
    if (!strcmp(where, "host")) {
        void *h;
        CHECK(cuMemHostAlloc(&h, 8, CU_MEMHOSTALLOC_DEVICEMAP));
        memset(h, 0, 8);
        CHECK(cuMemHostGetDevicePointer(&d, h, 0));
    } else if (!strcmp(where, "device")) {
        CHECK(cuMemAlloc(&d, 8));
        CHECK(cuMemsetD8(d, 0, 8));
    }
    return d;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The never-ending kernel (already launched on `running`) is cancelled through its device
 * cancel word at ctl; prints how it went. */
static int cancel_running(CUstream running, CUdeviceptr ctl)
{
    const char *by = getenv("CANCEL_BY") ? getenv("CANCEL_BY") : "memop";
    int lo, hi;
    CUstream s;
    CHECK(cuCtxGetStreamPriorityRange(&lo, &hi));
    CHECK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, hi));
    double t0 = now_ms();
    while (now_ms() - t0 < 200) {
    }
    static uint32_t one = 1;
    double t1 = now_ms();
    if (!strcmp(by, "memcpy"))
        CHECK(cuMemcpyHtoDAsync(ctl, &one, 4, s));
    else
        CHECK(cuStreamWriteValue32(s, ctl, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
    CUresult r = CUDA_ERROR_NOT_READY;
    while (r == CUDA_ERROR_NOT_READY && now_ms() - t1 < 5000)
        r = cuStreamQuery(running);
    printf("RESULT cancel_by=%s stopped=%s after_ms=%.2f write_done=%s\n", by,
           r == CUDA_SUCCESS ? "yes" : "no", now_ms() - t1,
           cuStreamQuery(s) == CUDA_SUCCESS ? "yes" : "no");
    return r == CUDA_SUCCESS ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: fence-probe PTX ENTRY host|device|plain GRID BLOCK LAUNCHES "
                        "U32...\n");
        return 2;
    }
    unsigned grid = (unsigned)atoi(argv[4]), block = (unsigned)atoi(argv[5]);
    int launches = atoi(argv[6]), n_u32 = argc - 7;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    char *ptx = kw_read_file(argv[1], NULL);
    if (!ptx) {
        fprintf(stderr, "fence-probe: cannot read %s\n", argv[1]);
        return 1;
    }
    CHECK(cuModuleLoadData(&mod, ptx));
    CHECK(cuModuleGetFunction(&fn, mod, argv[2]));
    size_t n = (size_t)grid * block;
    CUdeviceptr in, out;
    CHECK(cuMemAlloc(&in, n * 4));
    CHECK(cuMemAlloc(&out, n * 4));
    CHECK(cuMemsetD32(in, 0x3f000000u, n)); /* 0.5f */
    CUdeviceptr ctl = control_words(launches ? argv[3] : "device");

    /* the parameters as one buffer: two pointers, the u32s, then (fenced) four u64s at
     * the next multiple of 8 */
    unsigned char params[256] = {0};
    size_t off = 0;
    memcpy(params + off, &in, 8), off += 8;
    memcpy(params + off, &out, 8), off += 8;
    for (int i = 0; i < n_u32 && off + 4 <= 200; i++, off += 4) {
        unsigned v = (unsigned)strtoul(argv[7 + i], NULL, 0);
        memcpy(params + off, &v, 4);
    }
    if (ctl) {
        off = (off + 7) & ~(size_t)7;
        unsigned long long extra[4] = {0, ~0ull, ctl, ctl + 4};
        memcpy(params + off, extra, sizeof extra), off += sizeof extra;
    }
    void *config[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params, CU_LAUNCH_PARAM_BUFFER_SIZE,
                      &off, CU_LAUNCH_PARAM_END};
    if (!launches) {
        CUstream running;
        CHECK(cuStreamCreate(&running, CU_STREAM_NON_BLOCKING));
        CHECK(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, running, NULL, config));
        return cancel_running(running, ctl);
    }
    CUevent t0, t1;
    CHECK(cuEventCreate(&t0, 0));
    CHECK(cuEventCreate(&t1, 0));
    CHECK(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, NULL, config)); /* warm-up */
    CHECK(cuEventRecord(t0, NULL));
    for (int i = 0; i < launches; i++)
        CHECK(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, NULL, config));
    CHECK(cuEventRecord(t1, NULL));
    CHECK(cuEventSynchronize(t1));
    float ms;
    CHECK(cuEventElapsedTime(&ms, t0, t1));
    printf("RESULT ptx=%s control=%s ms_per_launch=%.4f\n", argv[1], argv[3], ms / launches);
    return 0;
}
