/* Error paths that leave the context usable: each call must fail with the documented error
 * code, cudaGetLastError must report and then clear launch-configuration errors, and a
 * good launch afterwards must still work. */
#include "compat.h"

__global__ void fill(int *v, int x)
{
    v[threadIdx.x] = x;
}

/* Accepts either of two codes where the CUDA documentation allows both. */
static void expect_code(cudaError_t got, cudaError_t a, cudaError_t b, const char *what)
{
    EXPECT(got == a || got == b, "%s returned %s (%d), want %s or %s", what,
           cudaGetErrorName(got), (int)got, cudaGetErrorName(a), cudaGetErrorName(b));
}

int main(void)
{
    int *d, h[32];
    CHECK(cudaMalloc((void **)&d, sizeof h));

    /* Copies from a pointer that is no device allocation. */
    void *bogus = (void *)(uintptr_t)0x10;
    expect_code(cudaMemcpy(h, bogus, sizeof h, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
                cudaErrorInvalidDevicePointer, "cudaMemcpy from an invalid device pointer");
    cudaGetLastError();

    /* Freeing a pointer that was never allocated. */
    expect_code(cudaFree(bogus), cudaErrorInvalidValue, cudaErrorInvalidDevicePointer,
                "cudaFree of an invalid pointer");
    cudaGetLastError();

    /* A device that does not exist. */
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    expect_code(cudaSetDevice(count + 7), cudaErrorInvalidDevice, cudaErrorInvalidDevice,
                "cudaSetDevice beyond the device count");
    cudaGetLastError();

    /* Too many threads per block: the launch itself fails, reported by cudaGetLastError,
     * which then clears it. */
    fill<<<1, 4096>>>(d, 1);
    /* CUDA 13 on an H100 answers cudaErrorInvalidValue here; older releases documented
     * cudaErrorInvalidConfiguration. */
    expect_code(cudaGetLastError(), cudaErrorInvalidConfiguration, cudaErrorInvalidValue,
                "launch with 4096 threads per block");
    EXPECT(cudaGetLastError() == cudaSuccess, "cudaGetLastError did not clear the error");

    /* Too much dynamic shared memory. */
    fill<<<1, 32, 1 << 30>>>(d, 1);
    expect_code(cudaGetLastError(), cudaErrorInvalidValue, cudaErrorInvalidConfiguration,
                "launch with 1 GiB of dynamic shared memory");

    /* A huge allocation fails cleanly. */
    void *huge = NULL;
    expect_code(cudaMalloc(&huge, (size_t)1 << 50), cudaErrorMemoryAllocation,
                cudaErrorMemoryAllocation, "cudaMalloc of 1 PiB");
    cudaGetLastError();

    /* The context is still good. */
    fill<<<1, 32>>>(d, 42);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++)
        EXPECT(h[i] == 42, "element %d = %d after the error paths", i, h[i]);
    EXPECT(cudaGetErrorString(cudaErrorInvalidValue) != NULL, "no error string");
    CHECK(cudaFree(d));
    compat_pass("errors");
    return 0;
}
