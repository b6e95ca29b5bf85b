/* Profiler control: cudaProfilerStart/Stop bracket a kernel, as profiled programs do. With
 * no profiler attached they succeed and change nothing; the kernel's results are checked. */
#include <cuda_profiler_api.h>

#include "compat.h"

__global__ void scale(float *v, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] *= a;
}

int main(void)
{
    const int n = 1 << 16;
    float *h = (float *)malloc(n * sizeof(float)), *d;
    for (int i = 0; i < n; i++)
        h[i] = (float)(i % 1000);
    CHECK(cudaMalloc((void **)&d, n * sizeof(float)));
    CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));

    CHECK(cudaProfilerStart());
    scale<<<(n + 255) / 256, 256>>>(d, 3.0f, n);
    CHECK(cudaGetLastError());
    CHECK(cudaProfilerStop());
    /* Stopping twice, and starting again, are harmless without a profiler too. */
    CHECK(cudaProfilerStop());
    CHECK(cudaProfilerStart());
    CHECK(cudaProfilerStop());

    CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        EXPECT(h[i] == 3.0f * (float)(i % 1000), "element %d = %g", i, h[i]);
    CHECK(cudaFree(d));
    free(h);
    compat_pass("profiler");
    return 0;
}
