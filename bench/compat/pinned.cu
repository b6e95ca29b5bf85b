/* Pinned host memory: cudaMallocHost and cudaHostAlloc buffers, copies in both directions
 * (synchronous and asynchronous) and a kernel between them; cudaFreeHost at the end. */
#include "compat.h"

__global__ void square(int *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = v[i] * v[i];
}

int main(void)
{
    const int n = 1 << 22;
    size_t bytes = n * sizeof(int);
    int *h_in, *h_out, *d;
    CHECK(cudaMallocHost((void **)&h_in, bytes));
    CHECK(cudaHostAlloc((void **)&h_out, bytes, cudaHostAllocPortable));
    unsigned flags = 0;
    CHECK(cudaHostGetFlags(&flags, h_out));
    EXPECT(flags & cudaHostAllocPortable, "flags %#x lack cudaHostAllocPortable", flags);
    for (int i = 0; i < n; i++)
        h_in[i] = i % 40000 - 20000;
    CHECK(cudaMalloc((void **)&d, bytes));

    /* Synchronous round. */
    CHECK(cudaMemcpy(d, h_in, bytes, cudaMemcpyHostToDevice));
    square<<<(n + 255) / 256, 256>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h_out, d, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        EXPECT(h_out[i] == h_in[i] * h_in[i], "sync element %d = %d", i, h_out[i]);

    /* Asynchronous round on a stream, from and to pinned memory. */
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    for (int i = 0; i < n; i++)
        h_in[i] = (n - i) % 30000;
    CHECK(cudaMemcpyAsync(d, h_in, bytes, cudaMemcpyHostToDevice, s));
    square<<<(n + 255) / 256, 256, 0, s>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h_out, d, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        EXPECT(h_out[i] == ((n - i) % 30000) * ((n - i) % 30000), "async element %d = %d", i,
               h_out[i]);

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d));
    CHECK(cudaFreeHost(h_in));
    CHECK(cudaFreeHost(h_out));
    compat_pass("pinned");
    return 0;
}
