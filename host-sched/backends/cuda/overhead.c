/* The launch overhead of the device (kcuda_measure_launch_overhead): what one more launch
 * costs in a busy lane, the `o` of the minimum slice rule (sizing.h). A kernel of equal
 * blocks that only compute (no memory traffic, so nothing but launches differs) runs as 16
 * waves in one launch, then as 16 one-wave launches back to back on the same stream; the
 * difference over the 15 extra launches, median of 7 pairs after a warm-up pair. */
#include <stdlib.h>

#include "backend_internal.h"
#include "sizing.h"

#define WAVES 16
#define PAIRS 7
#define SPIN_THREADS 128
#define SPIN_ITERS 1024     /* a few microseconds per block */

/* Each thread runs a chain of dependent FMAs; the store only happens when `store` is set,
 * which it never is, but the compiler cannot know and so keeps the loop. */
static const char spin_ptx[] =
    ".version 7.5\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry kcuda_spin(.param .u32 iters, .param .u32 store, .param .u64 sink)\n"
    "{\n"
    "    .reg .pred %p<3>;\n"
    "    .reg .b32 %r<5>;\n"
    "    .reg .f32 %f<2>;\n"
    "    .reg .b64 %rd<3>;\n"
    "\n"
    "    ld.param.u32 %r1, [iters];\n"
    "    mov.u32 %r2, %tid.x;\n"
    "    cvt.rn.f32.u32 %f1, %r2;\n"
    "    mov.u32 %r3, 0;\n"
    "LOOP:\n"
    "    fma.rn.f32 %f1, %f1, 0f3F7FFFFE, 0f3F800000;\n"
    "    add.u32 %r3, %r3, 1;\n"
    "    setp.lt.u32 %p1, %r3, %r1;\n"
    "    @%p1 bra LOOP;\n"
    "    ld.param.u32 %r4, [store];\n"
    "    setp.eq.u32 %p2, %r4, 0;\n"
    "    @%p2 bra DONE;\n"
    "    ld.param.u64 %rd1, [sink];\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    st.global.f32 [%rd2], %f1;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

typedef struct spin {
    CUmodule mod;
    CUfunction f;
    CUstream stream;
    CUevent ev[3];
    unsigned wave;          /* blocks in one wave */
} spin;

static void spin_release(spin *s)
{
    for (int i = 0; i < 3; i++)
        if (s->ev[i])
            cuEventDestroy(s->ev[i]);
    if (s->stream)
        cuStreamDestroy(s->stream);
    if (s->mod)
        cuModuleUnload(s->mod);
}

static CUresult spin_setup(kcuda *kc, spin *s)
{
    int per_sm = 0;
    CUresult r = cuModuleLoadData(&s->mod, spin_ptx);
    if (r == CUDA_SUCCESS)
        r = cuModuleGetFunction(&s->f, s->mod, "kcuda_spin");
    if (r == CUDA_SUCCESS)
        r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, s->f, SPIN_THREADS, 0);
    if (r == CUDA_SUCCESS)
        r = cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < 3 && r == CUDA_SUCCESS; i++)
        r = cuEventCreate(&s->ev[i], CU_EVENT_DEFAULT);
    s->wave = kc->info.sms * (unsigned)(per_sm > 0 ? per_sm : 1);
    return r;
}

static CUresult spin_launch(spin *s, unsigned blocks)
{
    unsigned iters = SPIN_ITERS, store = 0;
    unsigned long long sink = 0;
    void *args[] = {&iters, &store, &sink};
    return cuLaunchKernel(s->f, blocks, 1, 1, SPIN_THREADS, 1, 1, 0, s->stream, args, NULL);
}

/* One pair: whole, then sliced; the extra time per extra launch in ns into *diff. */
static CUresult spin_pair(spin *s, double *diff)
{
    CUresult r = cuEventRecord(s->ev[0], s->stream);
    if (r == CUDA_SUCCESS)
        r = spin_launch(s, WAVES * s->wave);
    if (r == CUDA_SUCCESS)
        r = cuEventRecord(s->ev[1], s->stream);
    for (int i = 0; i < WAVES && r == CUDA_SUCCESS; i++)
        r = spin_launch(s, s->wave);
    if (r == CUDA_SUCCESS)
        r = cuEventRecord(s->ev[2], s->stream);
    if (r == CUDA_SUCCESS)
        r = cuEventSynchronize(s->ev[2]);
    float whole = 0, sliced = 0;
    if (r == CUDA_SUCCESS)
        r = cuEventElapsedTime(&whole, s->ev[0], s->ev[1]);
    if (r == CUDA_SUCCESS)
        r = cuEventElapsedTime(&sliced, s->ev[1], s->ev[2]);
    *diff = ((double)sliced - (double)whole) * 1e6 / (WAVES - 1);
    return r;
}

int kcuda_measure_launch_overhead(kcuda *kc, uint64_t *ns, kbackend_error *err)
{
    if (!kc || !ns)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    int rc = kcuda_bind(kc, err);
    if (rc)
        return rc;
    kcuda_exclusive_begin(kc);
    spin s = {0};
    double d[PAIRS + 1];
    CUresult r = spin_setup(kc, &s);
    for (int i = 0; i <= PAIRS && r == CUDA_SUCCESS; i++)
        r = spin_pair(&s, &d[i]);
    spin_release(&s);
    kcuda_exclusive_end(kc);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail_as(err, KBACKEND_EDEVICE, r, "launch overhead measurement");
    double median = kcuda_median(d + 1, PAIRS);    /* d[0] was the warm-up */
    *ns = median >= 1 ? (uint64_t)(median + 0.5) : 1;  /* 0 would mean "unknown" */
    return 0;
}
