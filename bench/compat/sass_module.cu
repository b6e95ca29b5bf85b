/* SASS-only modules (issue 14): a cubin built for sm_90 with no PTX, loaded with
 * cuModuleLoadData (as CuPy loads NVRTC output), and this program's own kernel, built as
 * SASS only too (`-gencode arch=compute_90,code=sm_90`: cudart registers a fatbin with one
 * cubin, as PyTorch's libraries do).
 *
 * On a GPU every step must work and the results verify: PASS, exit 0. A backend that runs
 * PTX only (the emulator) cannot run SASS; there the modules must still load and describe
 * their functions, and both launches must be refused with CUDA's "no binary for the GPU"
 * error: the program then prints "SASS-ONLY sass_module: ..." and exits SASS_ONLY_EXIT, a
 * distinct result its test checks for (not a pass). A kerneletd that fences kernels in a
 * shared context refuses SASS (it cannot be fenced) with CUDA_ERROR_NOT_SUPPORTED: the
 * program prints "SASS-REFUSED ..." and exits SASS_REFUSED_EXIT. Anything else is a
 * failure, exit 1. */
#include <cuda.h>
#include <string.h>

#include "compat.h"
#include "sass_kernels_cubin.h"

#define SASS_ONLY_EXIT 3
#define SASS_REFUSED_EXIT 4

#define CU(call)                                                                            \
    do {                                                                                    \
        CUresult cu_err_ = (call);                                                          \
        if (cu_err_ != CUDA_SUCCESS) {                                                      \
            const char *cu_name_ = "?";                                                     \
            cuGetErrorName(cu_err_, &cu_name_);                                             \
            fprintf(stderr, "FAIL %s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #call,         \
                    cu_name_, (int)cu_err_);                                                \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

__global__ void square(int *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = v[i] * v[i];
}

/* The cubin's module and its function, described as the cubin says. */
static CUfunction load_saxpy(CUmodule *mod)
{
    CUfunction f;
    unsigned count = 0;
    size_t off, size;
    static const size_t want_off[] = {0, 8, 16, 24}, want_size[] = {4, 8, 8, 4};

    CU(cuModuleLoadData(mod, sass_kernels_cubin));
    CU(cuModuleGetFunctionCount(&count, *mod));
    EXPECT(count == 1, "%u functions in the cubin, want 1", count);
    CU(cuModuleGetFunction(&f, *mod, "saxpy_sass"));
    for (size_t i = 0; i < 4; i++) {
        CU(cuFuncGetParamInfo(f, i, &off, &size));
        EXPECT(off == want_off[i] && size == want_size[i], "parameter %zu at %zu+%zu", i, off,
               size);
    }
    return f;
}

/* Runs saxpy through the Driver API; returns the launch's result (CUDA_SUCCESS once the
 * output verified). */
static CUresult run_saxpy(CUmodule mod, CUfunction f)
{
    enum { N = 4096 };
    static float x[N], y[N], back[N];
    float a = 2.0f;
    int n = N;
    CUdeviceptr dx, dy;

    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 7);
        y[i] = (float)(i % 5);
    }
    CU(cuMemAlloc(&dx, sizeof(x)));
    CU(cuMemAlloc(&dy, sizeof(y)));
    CU(cuMemcpyHtoD(dx, x, sizeof(x)));
    CU(cuMemcpyHtoD(dy, y, sizeof(y)));
    void *params[] = {&a, &dx, &dy, &n};
    CUresult r = cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL);
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    if (r == CUDA_SUCCESS) {
        CU(cuMemcpyDtoH(back, dy, sizeof(back)));
        for (int i = 0; i < N; i++)
            EXPECT(back[i] == a * x[i] + y[i], "y[%d] = %g, want %g", i, back[i], a * x[i] + y[i]);
        CUdeviceptr calls;
        size_t bytes = 0;
        int got = 0;
        CU(cuModuleGetGlobal(&calls, &bytes, mod, "sass_calls"));
        EXPECT(bytes == sizeof(int), "sass_calls of %zu bytes", bytes);
        CU(cuMemcpyDtoH(&got, calls, sizeof(got)));
        EXPECT(got == 1, "sass_calls = %d after one launch", got);
    }
    CU(cuMemFree(dx));
    CU(cuMemFree(dy));
    return r;
}

/* The program's own SASS-only kernel through cudart; returns the launch's result. */
static cudaError_t run_square(void)
{
    enum { N = 1000 };
    int v[N], *d;

    for (int i = 0; i < N; i++)
        v[i] = i - 500;
    CHECK(cudaMalloc((void **)&d, sizeof(v)));
    CHECK(cudaMemcpy(d, v, sizeof(v), cudaMemcpyHostToDevice));
    square<<<(N + 127) / 128, 128>>>(d, N);
    cudaError_t r = cudaGetLastError();
    if (r == cudaSuccess)
        r = cudaDeviceSynchronize();
    if (r == cudaSuccess) {
        CHECK(cudaMemcpy(v, d, sizeof(v), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++)
            EXPECT(v[i] == (i - 500) * (i - 500), "v[%d] = %d", i, v[i]);
    }
    CHECK(cudaFree(d));
    return r;
}

int main(void)
{
    int devices = 0;
    CUmodule mod;

    /* PyTorch's first call: fails with error 209 when SASS-only fatbins are refused. */
    CHECK(cudaGetDeviceCount(&devices));
    EXPECT(devices >= 1, "%d devices", devices);
    CHECK(cudaFree(0));         /* the primary context, current for the Driver API calls */
    CUfunction f = load_saxpy(&mod);
    CUresult dr = run_saxpy(mod, f);
    cudaError_t rr = run_square();
    CU(cuModuleUnload(mod));
    if (dr == CUDA_SUCCESS && rr == cudaSuccess) {
        compat_pass("sass_module");
        return 0;
    }
    if (dr == CUDA_ERROR_NOT_SUPPORTED && rr == cudaErrorNotSupported) {
        /* kerneletd's shared, fenced context: SASS cannot be fenced there */
        printf("SASS-REFUSED sass_module: the modules loaded; both launches were refused "
               "with CUDA_ERROR_NOT_SUPPORTED (SASS in a shared, fenced context; "
               "KERNELET_ISOLATE=1 gives the program a context of its own)\n");
        return SASS_REFUSED_EXIT;
    }
    EXPECT(dr == CUDA_ERROR_NO_BINARY_FOR_GPU, "saxpy_sass launch gave %d", (int)dr);
    EXPECT(rr == cudaErrorNoKernelImageForDevice, "square launch gave %s",
           cudaGetErrorName(rr));
    printf("SASS-ONLY sass_module: the modules loaded; both launches were refused with "
           "CUDA_ERROR_NO_BINARY_FOR_GPU (this backend runs PTX only)\n");
    return SASS_ONLY_EXIT;
}
