/* stack-probe: what PTX's stacksave reads in a recursion on this GPU, so that the fence can
 * stop a runaway recursion before it overflows the thread's stack (docs/perf/isolation.md).
 * A tool for GPU rounds, not a test: prints the context's stack limit and, for each depth
 * of a recursion of a function with a 64-byte frame, the stack pointer stacksave gives. */
#include "kw_cuda.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call, what) kwc_or_exit((call), "stack-probe", (what))

#define DEPTH 64

/* rec(out, d, low): records stacksave and a frame's address at depth d (16 bytes at
 * out + 16 d), then calls itself with d + 1 unless d reached 63 or, with low non-zero, the
 * stack pointer is below low: then it writes d at out + 1024 and returns. The kernel's
 * own stacksave goes to out + 1040. */
static const char probe_ptx[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".func rec(.param .u64 out, .param .u32 d, .param .u64 low)\n{\n"
    "\t.local .align 8 .b8 frame[64];\n"
    "\t.reg .u64 %o, %sp, %p, %f, %low;\n\t.reg .u32 %d, %d1;\n\t.reg .pred %q;\n"
    "\tld.param.u64 %o, [out];\n\tld.param.u32 %d, [d];\n\tld.param.u64 %low, [low];\n"
    "\tstacksave.u64 %sp;\n\tmov.u64 %f, frame;\n"
    "\tst.local.u64 [frame], %sp;\n"                 /* keep the frame alive */
    "\tsetp.lt.u64 %q, %sp, %low;\n\t@%q bra guard;\n"
    "\tsetp.ge.u32 %q, %d, 63;\n\t@%q bra done;\n"
    "\tmul.wide.u32 %p, %d, 16;\n\tadd.u64 %p, %o, %p;\n"
    "\tst.global.u64 [%p], %sp;\n\tst.global.u64 [%p+8], %f;\n"
    "\tadd.u32 %d1, %d, 1;\n"
    "\t{\n\t.param .u64 p0;\n\t.param .u32 p1;\n\t.param .u64 p2;\n\tst.param.u64 [p0], %o;\n"
    "\tst.param.u32 [p1], %d1;\n\tst.param.u64 [p2], %low;\n\tcall rec, (p0, p1, p2);\n\t}\n"
    "\tld.local.u64 %sp, [frame];\n\tst.global.u64 [%o+1032], %sp;\n"
    "\tbra done;\n"
    "guard:\n\tst.global.u32 [%o+1024], %d;\n"
    "done:\n\tret;\n}\n"
    ".visible .entry probe(.param .u64 out, .param .u64 low)\n{\n\t.reg .u64 %o, %low, %sp;\n"
    "\tld.param.u64 %o, [out];\n\tld.param.u64 %low, [low];\n"
    "\tstacksave.u64 %sp;\n\tst.global.u64 [%o+1040], %sp;\n"
    "\t{\n\t.param .u64 p0;\n\t.param .u32 p1;\n\t.param .u64 p2;\n\tst.param.u64 [p0], %o;\n"
    "\tst.param.u32 [p1], 0;\n\tst.param.u64 [p2], %low;\n\tcall rec, (p0, p1, p2);\n\t}\n"
    "\tret;\n}\n"
    /* rec0(out, d): the same without a frame of its own, its call's result used after it
     * (not a tail call): stacksave at depth d to out + 8 d, 63 deep */
    ".func (.param .b32 r) rec0(.param .u64 out, .param .u32 d)\n{\n"
    "\t.reg .u64 %o, %sp, %p;\n\t.reg .u32 %d, %d1, %v;\n\t.reg .pred %q;\n"
    "\tld.param.u64 %o, [out];\n\tld.param.u32 %d, [d];\n\tstacksave.u64 %sp;\n"
    "\tmul.wide.u32 %p, %d, 8;\n\tadd.u64 %p, %o, %p;\n\tst.global.u64 [%p], %sp;\n"
    "\tmov.u32 %v, 0;\n\tsetp.ge.u32 %q, %d, 63;\n\t@%q bra done;\n\tadd.u32 %d1, %d, 1;\n"
    "\t{\n\t.param .u64 p0;\n\t.param .u32 p1;\n\t.param .b32 rv;\n\tst.param.u64 [p0], %o;\n"
    "\tst.param.u32 [p1], %d1;\n\tcall (rv), rec0, (p0, p1);\n\tld.param.b32 %v, [rv];\n\t}\n"
    "\tadd.u32 %v, %v, %d;\n"
    "done:\n\tst.param.b32 [r], %v;\n\tret;\n}\n"
    ".visible .entry probe0(.param .u64 out)\n{\n\t.reg .u64 %o;\n\t.reg .u32 %v;\n"
    "\tld.param.u64 %o, [out];\n"
    "\t{\n\t.param .u64 p0;\n\t.param .u32 p1;\n\t.param .b32 rv;\n\tst.param.u64 [p0], %o;\n"
    "\tst.param.u32 [p1], 0;\n\tcall (rv), rec0, (p0, p1);\n\tld.param.b32 %v, [rv];\n\t}\n"
    "\tst.global.u32 [%o+512], %v;\n\tret;\n}\n";

/* Runs the probe once with stack limit LIMIT (0: the context's) and guard LOW; prints what
 * it saw and returns the stack pointer at depth 0 (0 on a failed launch). */
static unsigned long long run(CUfunction fn, size_t limit, unsigned long long low)
{
    CUdeviceptr out;
    unsigned long long host[131] = {0};
    size_t stack = 0, free0 = 0, free1 = 0, total = 0;
    CHECK(cuMemGetInfo(&free0, &total), "cuMemGetInfo");
    if (limit)
        CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, limit), "cuCtxSetLimit");
    CHECK(cuMemGetInfo(&free1, &total), "cuMemGetInfo");
    if (free1 != free0)
        printf("stack limit %zu: device memory free %+.1f MiB\n", limit,
               ((double)free1 - (double)free0) / 1048576.0);
    CHECK(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE), "cuCtxGetLimit");
    CHECK(cuMemAlloc(&out, sizeof(host)), "cuMemAlloc");
    CHECK(cuMemcpyHtoD(out, host, sizeof(host)), "cuMemcpyHtoD");
    void *args[] = {&out, &low};
    CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), "cuLaunchKernel");
    CUresult r = cuCtxSynchronize();
    const char *name = "?";
    cuGetErrorName(r, &name);
    if (r != CUDA_SUCCESS) {
        printf("stack limit %zu, guard %#llx: %s\n", stack, low, name);
        return 0;
    }
    CHECK(cuMemcpyDtoH(host, out, sizeof(host)), "cuMemcpyDtoH");
    printf("stack limit %zu, guard %#llx: %s, kernel's stacksave %#llx, stopped by the guard "
           "at depth %llu\n", stack, low, name, host[130], host[128] & 0xffffffffull);
    for (int d = 0; d < 64; d += d < 4 ? 1 : 15)
        if (host[2 * d])
            printf("  depth %2d: stacksave %#llx  frame %#llx\n", d, host[2 * d],
                   host[2 * d + 1]);
    cuMemFree(out);
    return host[130];
}

/* stack-probe FENCED.ptx ENTRY: launches a fenced ENTRY(int *out) of 528 blocks of 128
 * threads with the window wide open and its own control words, under a 4 KiB stack; prints
 * how it ended, in how long, and its fault word. */
static int run_fenced(const char *path, const char *entry)
{
    FILE *f = fopen(path, "rb");
    static char text[1 << 20];
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = 0;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr out, words;
    CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096), "cuCtxSetLimit");
    CHECK(cuModuleLoadData(&mod, text), "cuModuleLoadData");
    CHECK(cuModuleGetFunction(&fn, mod, entry), "cuModuleGetFunction");
    CHECK(cuMemAlloc(&out, 528 * 128 * 4), "cuMemAlloc");
    CHECK(cuMemAlloc(&words, 8), "cuMemAlloc");
    CHECK(cuMemsetD8(words, 0, 8), "cuMemsetD8");
    unsigned long long base = 0, mask = ~0ull, cancel = words, fault = words + 4;
    void *args[] = {&out, &base, &mask, &cancel, &fault};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(cuLaunchKernel(fn, 528, 1, 1, 128, 1, 1, 0, NULL, args, NULL), "cuLaunchKernel");
    CUresult r = cuCtxSynchronize();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const char *name = "?";
    cuGetErrorName(r, &name);
    unsigned w[2] = {0, 0};
    if (r == CUDA_SUCCESS)
        CHECK(cuMemcpyDtoH(w, words, 8), "cuMemcpyDtoH");
    printf("%s: %s in %.3f s, cancel word %u, fault word %u\n", entry, name,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9, w[0], w[1]);
    return r != CUDA_SUCCESS;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CHECK(cuInit(0), "cuInit");
    CHECK(cuDeviceGet(&dev, 0), "cuDeviceGet");
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    CHECK(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    if (argc == 3)
        return run_fenced(argv[1], argv[2]);
    CHECK(cuModuleLoadData(&mod, probe_ptx), "cuModuleLoadData");
    CHECK(cuModuleGetFunction(&fn, mod, "probe"), "cuModuleGetFunction");
    int local = 0;
    CHECK(cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn), "cuFuncGetAttribute");
    printf("kernel local size %d bytes\n", local);
    /* a function without a frame of its own: does its stack pointer move? */
    CUfunction fn0;
    CUdeviceptr out0;
    unsigned long long sp0[65] = {0};
    CHECK(cuModuleGetFunction(&fn0, mod, "probe0"), "cuModuleGetFunction");
    CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 32768), "cuCtxSetLimit");
    CHECK(cuMemAlloc(&out0, sizeof(sp0)), "cuMemAlloc");
    void *args0[] = {&out0};
    CHECK(cuLaunchKernel(fn0, 1, 1, 1, 1, 1, 1, 0, NULL, args0, NULL), "cuLaunchKernel");
    CHECK(cuCtxSynchronize(), "cuCtxSynchronize");
    CHECK(cuMemcpyDtoH(sp0, out0, sizeof(sp0)), "cuMemcpyDtoH");
    for (int d = 0; d < 64; d += d < 4 ? 1 : 15)
        printf("no frame, depth %2d: stacksave %#llx\n", d, sp0[d]);
    /* 64 frames fit in 32 KiB: where the stack starts and which way it grows */
    if (!run(fn, 32768, 0))
        return 1;
    /* for each limit: the kernel's stack pointer (a guard that stops at once), then a guard
     * a quarter of the limit above where the stack would end if it grows down */
    for (size_t limit = 32768; limit >= 1024; limit /= 4) {
        run(fn, 1024, ~0ull);          /* from the driver's default, for the memory it takes */
        unsigned long long top = run(fn, limit, ~0ull);
        if (!top || top < limit)
            return 1;
        if (!run(fn, limit, top - limit + limit / 4))
            return 1;
    }
    return 0;
}
