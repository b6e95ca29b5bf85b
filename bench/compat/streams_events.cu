/* Streams, events and asynchronous copies: four streams each copy in, run a chain of
 * kernels and copy out from pinned memory; a fifth stream waits on the others' events
 * (cudaStreamWaitEvent) and combines their results. Event timing and queries are checked
 * for sane values. */
#include "compat.h"

#define NSTREAMS 4

__global__ void add_const(float *v, float c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] += c;
}

__global__ void sum4(const float *a, const float *b, const float *c, const float *d, float *out,
                     int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i] + c[i] + d[i];
}

int main(void)
{
    const int n = 1 << 20;
    size_t bytes = n * sizeof(float);
    cudaStream_t s[NSTREAMS + 1];
    cudaEvent_t done[NSTREAMS], t0, t1;
    float *h[NSTREAMS], *d[NSTREAMS], *h_sum, *d_sum;
    for (int k = 0; k <= NSTREAMS; k++)
        CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    CHECK(cudaMallocHost((void **)&h_sum, bytes));
    CHECK(cudaMalloc((void **)&d_sum, bytes));
    for (int k = 0; k < NSTREAMS; k++) {
        CHECK(cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming));
        CHECK(cudaMallocHost((void **)&h[k], bytes));
        CHECK(cudaMalloc((void **)&d[k], bytes));
        for (int i = 0; i < n; i++)
            h[k][i] = (float)(i % 1000) + 1000.0f * (float)k;
    }

    CHECK(cudaEventRecord(t0, s[0]));
    for (int k = 0; k < NSTREAMS; k++) {
        CHECK(cudaMemcpyAsync(d[k], h[k], bytes, cudaMemcpyHostToDevice, s[k]));
        for (int rep = 0; rep < 10; rep++)
            add_const<<<(n + 255) / 256, 256, 0, s[k]>>>(d[k], 0.5f, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(h[k], d[k], bytes, cudaMemcpyDeviceToHost, s[k]));
        CHECK(cudaEventRecord(done[k], s[k]));
        CHECK(cudaStreamWaitEvent(s[NSTREAMS], done[k], 0));
    }
    sum4<<<(n + 255) / 256, 256, 0, s[NSTREAMS]>>>(d[0], d[1], d[2], d[3], d_sum, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h_sum, d_sum, bytes, cudaMemcpyDeviceToHost, s[NSTREAMS]));
    CHECK(cudaEventRecord(t1, s[NSTREAMS]));
    CHECK(cudaEventSynchronize(t1));
    EXPECT(cudaEventQuery(t1) == cudaSuccess, "event query after synchronize");
    EXPECT(cudaStreamQuery(s[NSTREAMS]) == cudaSuccess, "stream query after its last event");
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    /* a sane elapsed time, not a speed target: the emulator on a loaded machine took 10 s */
    EXPECT(ms > 0.0f && ms < 120000.0f, "elapsed %g ms", ms);
    /* Events without timing must refuse elapsed time. */
    EXPECT(cudaEventElapsedTime(&ms, done[0], done[1]) != cudaSuccess,
           "elapsed time between events without timing");
    cudaGetLastError();
    CHECK(cudaDeviceSynchronize());

    for (int k = 0; k < NSTREAMS; k++)
        for (int i = 0; i < n; i++) {
            float want = (float)(i % 1000) + 1000.0f * (float)k + 5.0f;
            EXPECT(h[k][i] == want, "stream %d element %d = %g, want %g", k, i, h[k][i], want);
        }
    for (int i = 0; i < n; i++) {
        float want = 4.0f * (float)(i % 1000) + 6000.0f + 20.0f;
        EXPECT(h_sum[i] == want, "sum element %d = %g, want %g", i, h_sum[i], want);
    }

    for (int k = 0; k < NSTREAMS; k++) {
        CHECK(cudaEventDestroy(done[k]));
        CHECK(cudaFreeHost(h[k]));
        CHECK(cudaFree(d[k]));
    }
    for (int k = 0; k <= NSTREAMS; k++)
        CHECK(cudaStreamDestroy(s[k]));
    CHECK(cudaEventDestroy(t0));
    CHECK(cudaEventDestroy(t1));
    CHECK(cudaFreeHost(h_sum));
    CHECK(cudaFree(d_sum));
    compat_pass("streams_events");
    return 0;
}
