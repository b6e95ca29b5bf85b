/* A device assert is reported as CUDA reports it: the launch returns success,
 * cudaDeviceSynchronize returns cudaErrorAssert, and the error is sticky for the context
 * (later calls fail with it too). Through kerneletd the assert ends only this tenant's
 * launch: the fencing pass turns it into a fault word and an exit, the GPU's context (and
 * every other tenant's work on it) survives. */
#include <assert.h>

#include "compat.h"

enum { N = 256, BAD = 77 };

__global__ void doubled(const int *v, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 2 * v[i];
    assert(v[i] != -1);
}

int main(void)
{
    int host[N], *v, *out;
    for (int i = 0; i < N; i++)
        host[i] = i;
    CHECK(cudaMalloc((void **)&v, sizeof(host)));
    CHECK(cudaMalloc((void **)&out, sizeof(host)));
    CHECK(cudaMemcpy(v, host, sizeof(host), cudaMemcpyHostToDevice));
    doubled<<<N / 64, 64>>>(v, out);
    CHECK(cudaDeviceSynchronize());         /* no thread asserts: a normal launch */
    int got[N];
    CHECK(cudaMemcpy(got, out, sizeof(got), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        EXPECT(got[i] == 2 * i, "out[%d] = %d", i, got[i]);

    host[BAD] = -1;
    CHECK(cudaMemcpy(v, host, sizeof(host), cudaMemcpyHostToDevice));
    doubled<<<N / 64, 64>>>(v, out);
    cudaError_t launch = cudaGetLastError();
    EXPECT(launch == cudaSuccess, "launch itself reported %s", cudaGetErrorName(launch));
    cudaError_t sync = cudaDeviceSynchronize();
    EXPECT(sync == cudaErrorAssert, "cudaDeviceSynchronize returned %s (%d)",
           cudaGetErrorName(sync), (int)sync);
    void *p = NULL;
    cudaError_t later = cudaMalloc(&p, 16);
    EXPECT(later == sync, "the error is not sticky: cudaMalloc returned %s",
           cudaGetErrorName(later));
    printf("device assert reported as %s\n", cudaGetErrorName(sync));
    compat_pass("device_assert");
    return 0;
}
