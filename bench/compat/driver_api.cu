/* The CUDA Driver API without the runtime: cuInit, the primary context, cuModuleLoadData
 * with a PTX string written here by hand, cuModuleGetFunction / cuModuleGetGlobal,
 * cuLaunchKernel with kernelParams and with the `extra` parameter buffer, synchronous
 * copies, attributes, and cleanup. y = a x + y is run twice and checked. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DCHECK(call)                                                                        \
    do {                                                                                    \
        CUresult drv_err_ = (call);                                                         \
        if (drv_err_ != CUDA_SUCCESS) {                                                     \
            const char *drv_name_ = "?";                                                    \
            cuGetErrorName(drv_err_, &drv_name_);                                           \
            fprintf(stderr, "FAIL %s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #call,         \
                    drv_name_, (int)drv_err_);                                              \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define EXPECT(cond, ...)                                                                   \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fputc('\n', stderr);                                                            \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* y[i] = a * x[i] + y[i] for i < n; counts launches in the global `launches` (thread 0). */
static const char saxpy_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    ".visible .global .align 4 .u32 launches;\n"
    ".visible .entry saxpy(\n"
    "    .param .u64 p_x,\n"
    "    .param .u64 p_y,\n"
    "    .param .f32 p_a,\n"
    "    .param .u32 p_n\n"
    ")\n"
    "{\n"
    "    .reg .pred %p<3>;\n"
    "    .reg .b32 %r<8>;\n"
    "    .reg .f32 %f<4>;\n"
    "    .reg .b64 %rd<8>;\n"
    "    ld.param.u64 %rd1, [p_x];\n"
    "    ld.param.u64 %rd2, [p_y];\n"
    "    ld.param.f32 %f1, [p_a];\n"
    "    ld.param.u32 %r1, [p_n];\n"
    "    mov.u32 %r2, %ctaid.x;\n"
    "    mov.u32 %r3, %ntid.x;\n"
    "    mov.u32 %r4, %tid.x;\n"
    "    mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "    setp.ne.u32 %p2, %r5, 0;\n"
    "    @%p2 bra SKIP_COUNT;\n"
    "    atom.global.add.u32 %r6, [launches], 1;\n"
    "SKIP_COUNT:\n"
    "    setp.ge.u32 %p1, %r5, %r1;\n"
    "    @%p1 bra DONE;\n"
    "    cvta.to.global.u64 %rd3, %rd1;\n"
    "    cvta.to.global.u64 %rd4, %rd2;\n"
    "    mul.wide.u32 %rd5, %r5, 4;\n"
    "    add.s64 %rd6, %rd3, %rd5;\n"
    "    add.s64 %rd7, %rd4, %rd5;\n"
    "    ld.global.f32 %f2, [%rd6];\n"
    "    ld.global.f32 %f3, [%rd7];\n"
    "    fma.rn.f32 %f3, %f1, %f2, %f3;\n"
    "    st.global.f32 [%rd7], %f3;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

int main(void)
{
    const unsigned n = 100000; /* not a multiple of the block size */
    size_t bytes = n * sizeof(float);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr dx, dy, dcount;
    size_t count_size = 0;
    int sms = 0, version = 0;
    char name[256];

    DCHECK(cuInit(0));
    DCHECK(cuDriverGetVersion(&version));
    EXPECT(version >= 12000, "driver version %d", version);
    DCHECK(cuDeviceGet(&dev, 0));
    DCHECK(cuDeviceGetName(name, sizeof name, dev));
    DCHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    EXPECT(sms > 0, "multiprocessor count %d", sms);
    DCHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    DCHECK(cuCtxSetCurrent(ctx));

    DCHECK(cuModuleLoadData(&mod, saxpy_ptx));
    DCHECK(cuModuleGetFunction(&fn, mod, "saxpy"));
    EXPECT(cuModuleGetFunction(&fn, mod, "no_such_kernel") == CUDA_ERROR_NOT_FOUND,
           "lookup of a missing kernel");
    DCHECK(cuModuleGetFunction(&fn, mod, "saxpy"));
    DCHECK(cuModuleGetGlobal(&dcount, &count_size, mod, "launches"));
    EXPECT(count_size == 4, "global size %zu", count_size);

    float *x = (float *)malloc(bytes), *y = (float *)malloc(bytes);
    EXPECT(x && y, "host allocation");
    for (unsigned i = 0; i < n; i++) {
        x[i] = (float)(i % 100);
        y[i] = 1.0f;
    }
    DCHECK(cuMemAlloc(&dx, bytes));
    DCHECK(cuMemAlloc(&dy, bytes));
    DCHECK(cuMemcpyHtoD(dx, x, bytes));
    DCHECK(cuMemcpyHtoD(dy, y, bytes));
    DCHECK(cuMemsetD32(dcount, 0, 1));

    /* Launch 1: kernelParams. */
    float a = 2.0f;
    void *params[] = {&dx, &dy, &a, (void *)&n};
    unsigned blocks = (n + 127) / 128;
    DCHECK(cuLaunchKernel(fn, blocks, 1, 1, 128, 1, 1, 0, NULL, params, NULL));

    /* Launch 2: one packed parameter buffer through `extra` (layout of the .param list). */
    struct {
        uint64_t x, y;
        float a;
        uint32_t n;
    } packed = {(uint64_t)dx, (uint64_t)dy, 3.0f, n};
    size_t packed_size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &packed_size, CU_LAUNCH_PARAM_END};
    DCHECK(cuLaunchKernel(fn, blocks, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
    DCHECK(cuCtxSynchronize());

    DCHECK(cuMemcpyDtoH(y, dy, bytes));
    for (unsigned i = 0; i < n; i++) {
        float want = 1.0f + 5.0f * (float)(i % 100);
        EXPECT(y[i] == want, "y[%u] = %g, want %g", i, y[i], want);
    }
    unsigned launches = 0;
    DCHECK(cuMemcpyDtoH(&launches, dcount, 4));
    EXPECT(launches == 2, "launch counter %u", launches);

    DCHECK(cuMemFree(dx));
    DCHECK(cuMemFree(dy));
    DCHECK(cuModuleUnload(mod));
    DCHECK(cuDevicePrimaryCtxRelease(dev));
    free(x);
    free(y);
    printf("PASS driver_api (%s, %d SMs, driver %d)\n", name, sms, version);
    return 0;
}
