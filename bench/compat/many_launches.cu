/* Many small launches: 20000 one-block kernels in a row on the default stream, then 20000
 * spread over four streams; each adds one to a counter per thread. Exercises launch
 * overhead and ordering in the guest library and the host queues. */
#include "compat.h"

#define LAUNCHES 20000
#define THREADS 64

__global__ void bump(unsigned *count)
{
    count[threadIdx.x] += 1; /* launches on one stream are ordered: no atomics needed */
}

__global__ void bump_atomic(unsigned *count)
{
    atomicAdd(&count[threadIdx.x], 1u);
}

int main(void)
{
    unsigned *d, h[THREADS];
    CHECK(cudaMalloc((void **)&d, sizeof h));
    CHECK(cudaMemset(d, 0, sizeof h));
    for (int i = 0; i < LAUNCHES; i++) {
        bump<<<1, THREADS>>>(d);
        if (i % 1000 == 0)
            CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int t = 0; t < THREADS; t++)
        EXPECT(h[t] == LAUNCHES, "counter %d = %u after one stream", t, h[t]);

    cudaStream_t s[4];
    for (int k = 0; k < 4; k++)
        CHECK(cudaStreamCreate(&s[k]));
    for (int i = 0; i < LAUNCHES; i++)
        bump_atomic<<<1, THREADS, 0, s[i % 4]>>>(d);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int t = 0; t < THREADS; t++)
        EXPECT(h[t] == 2 * LAUNCHES, "counter %d = %u after four streams", t, h[t]);
    for (int k = 0; k < 4; k++)
        CHECK(cudaStreamDestroy(s[k]));
    CHECK(cudaFree(d));
    compat_pass("many_launches");
    return 0;
}
