/* Each GPU thread's call stack, for the fencing pass's stack guard (kptx_fence_opts):
 * its size, raised to cfg.stack_bytes, and where it starts, read once by a kernel of one
 * thread (stacksave in an entry). On the H100 a stack starts at 0xfffdc0, just below 2^24,
 * and grows down (tests/gpu/ptx/stack_probe.c); the guard counts the stack down from the
 * top of that 64 KiB, since what the driver reserves above a kernel's first frame may be
 * part of the size it gives. Where the kernel cannot run, the top stays 0 (the fencing
 * pass then takes KPTX_STACK_TOP, the H100's). The same reading, not rounded, is where the
 * fence's clamp of local addresses ends (kbackend_device_info.local_top): an entry's frame
 * lies just below it. */
#include "backend_internal.h"

#include "kernelet/ptx.h"

/* The granule a stack's top is rounded up to. */
#define STACK_TOP_ALIGN ((uint64_t)64 << 10)

static const char stack_top_ptx[] =
    ".version 7.8\n.target sm_52\n.address_size 64\n"
    ".visible .entry kcuda_stack_top(.param .u64 out)\n{\n"
    "\t.reg .u64 %o, %sp;\n\tld.param.u64 %o, [out];\n\tstacksave.u64 %sp;\n"
    "\tst.global.u64 [%o], %sp;\n\tret;\n}\n";

/* What stacksave reads in an entry without locals (the H100: 0xfffdc0); 0 when unknown. */
static uint64_t measure_stack_pointer(void)
{
    CUmodule mod = NULL;
    CUfunction fn;
    CUdeviceptr out = 0;
    unsigned long long sp = 0;
    CUresult r = cuModuleLoadData(&mod, stack_top_ptx);
    if (r == CUDA_SUCCESS)
        r = cuModuleGetFunction(&fn, mod, "kcuda_stack_top");
    if (r == CUDA_SUCCESS)
        r = cuMemAlloc(&out, sizeof(sp));
    if (r == CUDA_SUCCESS)
        r = cuMemsetD8(out, 0, sizeof(sp));
    void *args[] = {&out};
    if (r == CUDA_SUCCESS)
        r = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    if (r == CUDA_SUCCESS)
        r = cuMemcpyDtoHAsync(&sp, out, sizeof(sp), NULL);
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    if (out)
        cuMemFree(out);
    if (mod)
        cuModuleUnload(mod);
    return r != CUDA_SUCCESS || sp > KPTX_STACK_TOP << 8 ? 0 : sp;
}

CUresult kcuda_stack_setup(kcuda *kc)
{
    size_t have = 0;
    CUresult r = cuCtxGetLimit(&have, CU_LIMIT_STACK_SIZE);
    if (r == CUDA_SUCCESS && have < kc->cfg.stack_bytes &&
        (r = cuCtxSetLimit(CU_LIMIT_STACK_SIZE, kc->cfg.stack_bytes)) == CUDA_SUCCESS)
        r = cuCtxGetLimit(&have, CU_LIMIT_STACK_SIZE);
    kc->info.stack_bytes = r == CUDA_SUCCESS ? have : 0;
    uint64_t sp = r == CUDA_SUCCESS ? measure_stack_pointer() : 0;
    /* the guard's top, rounded up; the local clamp's, exact (fence_local.c) */
    kc->info.stack_top = sp ? (sp + STACK_TOP_ALIGN - 1) & ~(STACK_TOP_ALIGN - 1) : 0;
    kc->info.local_top = sp;
    return r;
}
