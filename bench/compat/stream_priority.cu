/* Stream priorities: the range the device reports, streams created with a priority (values
 * beyond the range clamped to it, as CUDA does), the priority read back, and work queued on
 * a low and a high priority stream at once, each stream's results verified. */
#include "compat.h"

enum { N = 4096, LOW_LAUNCHES = 8 };

__global__ void add_one(unsigned *v, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] += 1;
}

__global__ void square_index(unsigned *v, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = i * i;
}

/* A stream created with priority asked, and the priority it reports. */
static int created_priority(int asked, cudaStream_t *s)
{
    int got = 12345;
    CHECK(cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, asked));
    CHECK(cudaStreamGetPriority(*s, &got));
    return got;
}

int main(void)
{
    int least = 1, greatest = 1;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    EXPECT(greatest <= least, "range %d (least) .. %d (greatest)", least, greatest);
    cudaStream_t low, high, below, above;
    EXPECT(created_priority(least, &low) == least, "least priority not kept");
    EXPECT(created_priority(greatest, &high) == greatest, "greatest priority not kept");
    EXPECT(created_priority(least + 10, &below) == least, "a value past the least not clamped");
    EXPECT(created_priority(greatest - 10, &above) == greatest,
           "a value past the greatest not clamped");

    unsigned *a, *b, host[N];
    CHECK(cudaMalloc((void **)&a, N * sizeof(unsigned)));
    CHECK(cudaMalloc((void **)&b, N * sizeof(unsigned)));
    CHECK(cudaMemsetAsync(a, 0, N * sizeof(unsigned), low));
    for (int i = 0; i < LOW_LAUNCHES; i++)
        add_one<<<N / 256, 256, 0, low>>>(a, N);
    square_index<<<N / 256, 256, 0, high>>>(b, N);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(high));
    CHECK(cudaMemcpy(host, b, sizeof(host), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < N; i++)
        EXPECT(host[i] == i * i, "high stream: element %u is %u", i, host[i]);
    CHECK(cudaStreamSynchronize(low));
    CHECK(cudaMemcpy(host, a, sizeof(host), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < N; i++)
        EXPECT(host[i] == LOW_LAUNCHES, "low stream: element %u is %u", i, host[i]);
    cudaStream_t streams[] = {low, high, below, above};
    for (cudaStream_t s : streams)
        CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    compat_pass("stream_priority");
    return 0;
}
