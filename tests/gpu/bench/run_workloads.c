/* Runs every kernel of kernelet-workloads through the CUDA Driver API exactly as the host
 * harness will: load the kernel's PTX file (JIT for the GPU at hand), allocate and copy the
 * instance's buffers, build kernelParams from its argument list, launch its geometry,
 * copy back and verify. Prints one line per kernel with the event-timed launch.
 *   run-workloads PTX_DIR [small|default] [seed]
 * Exit 0 when all verify, 1 on a failure, 77 when no CUDA device can be used. */
#include "kernelet/workload.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed(CUresult r, const char *what, const char *kernel)
{
    if (r == CUDA_SUCCESS)
        return 0;
    const char *name = "?";
    cuGetErrorName(r, &name);
    fprintf(stderr, "%s: %s: %s (%d)\n", kernel, what, name, (int)r);
    return 1;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

/* One kernel: returns 0 when it verified. */
static int run_one(const kw_kernel *k, const char *dir, kw_size size, uint64_t seed)
{
    kw_instance in;
    CUdeviceptr dev[KW_MAX_BUFFERS] = {0};
    union {
        uint64_t u64;
        uint32_t u32;
        float f32;
        double f64;
    } vals[KW_MAX_ARGS];
    void *params[KW_MAX_ARGS];
    char path[4096], why[256] = "";
    int bad = 1;
    CUmodule mod = NULL;
    CUfunction fn;
    CUevent e0 = NULL, e1 = NULL;
    float ms = 0;

    if (k->create(&in, size, seed) != KW_OK) {
        fprintf(stderr, "%s: create failed\n", k->name);
        return 1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, k->ptx_file);
    char *ptx = read_file(path);
    if (!ptx) {
        fprintf(stderr, "%s: cannot read %s\n", k->name, path);
        goto out;
    }
    if (failed(cuModuleLoadData(&mod, ptx), "cuModuleLoadData", k->name) ||
        failed(cuModuleGetFunction(&fn, mod, k->entry), "cuModuleGetFunction", k->name))
        goto out;
    for (unsigned b = 0; b < in.n_buffers; b++) {
        if (failed(cuMemAlloc(&dev[b], in.buffers[b].size), "cuMemAlloc", k->name))
            goto out;
        if (in.buffers[b].copy_in &&
            failed(cuMemcpyHtoD(dev[b], in.buffers[b].host, in.buffers[b].size), "copy in", k->name))
            goto out;
        if (!in.buffers[b].copy_in &&
            failed(cuMemsetD8(dev[b], 0, in.buffers[b].size), "cuMemsetD8", k->name))
            goto out;
    }
    for (unsigned a = 0; a < in.n_args; a++) {
        const kw_arg *arg = &in.args[a];
        switch (arg->kind) {
        case KW_ARG_BUFFER: vals[a].u64 = (uint64_t)dev[arg->value.buffer]; break;
        case KW_ARG_U32: vals[a].u32 = arg->value.u32; break;
        case KW_ARG_U64: vals[a].u64 = arg->value.u64; break;
        case KW_ARG_F32: vals[a].f32 = arg->value.f32; break;
        case KW_ARG_F64: vals[a].f64 = arg->value.f64; break;
        }
        params[a] = &vals[a];
    }
    if (failed(cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate", k->name) ||
        failed(cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate", k->name))
        goto out;
    /* Warm-up launch (JIT, caches), then one timed launch; both write the same output. */
    for (int rep = 0; rep < 2; rep++) {
        if (failed(cuEventRecord(e0, NULL), "cuEventRecord", k->name) ||
            failed(cuLaunchKernel(fn, in.grid[0], in.grid[1], in.grid[2], in.block[0],
                                  in.block[1], in.block[2], in.dynamic_shared_bytes, NULL,
                                  params, NULL),
                   "cuLaunchKernel", k->name) ||
            failed(cuEventRecord(e1, NULL), "cuEventRecord", k->name) ||
            failed(cuEventSynchronize(e1), "kernel", k->name) ||
            failed(cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime", k->name))
            goto out;
    }
    for (unsigned b = 0; b < in.n_buffers; b++)
        if (in.buffers[b].copy_out &&
            failed(cuMemcpyDtoH(in.buffers[b].host, dev[b], in.buffers[b].size), "copy out", k->name))
            goto out;
    int rc = k->verify(&in, why, sizeof why);
    bad = rc != KW_OK;
    printf("WORKLOAD name=%s verified=%s kernel_ms=%.4f blocks=%llu block=%ux%ux%u%s%s\n",
           k->name, bad ? "no" : "yes", ms, (unsigned long long)kw_total_blocks(&in),
           in.block[0], in.block[1], in.block[2], bad ? " why=" : "", bad ? why : "");
out:
    if (e0)
        cuEventDestroy(e0);
    if (e1)
        cuEventDestroy(e1);
    for (unsigned b = 0; b < KW_MAX_BUFFERS; b++)
        if (dev[b])
            cuMemFree(dev[b]);
    if (mod)
        cuModuleUnload(mod);
    free(ptx);
    k->destroy(&in);
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
