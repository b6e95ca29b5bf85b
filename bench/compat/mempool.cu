/* Stream-ordered allocation and memory pools: cudaMallocAsync/cudaFreeAsync on streams
 * (one allocation handed from one stream to another through an event), the device's
 * default pool and its attributes (release threshold, used-memory figures and their
 * high-water mark), and an explicit pool with cudaMallocFromPoolAsync. */
#include <string.h>

#include "compat.h"

__global__ void iota_times(int *v, int k, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = i * k;
}

__global__ void add_one(int *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] += 1;
}

static unsigned long long pool_u64(cudaMemPool_t pool, cudaMemPoolAttr a)
{
    unsigned long long v = 0;
    CHECK(cudaMemPoolGetAttribute(pool, a, &v));
    return v;
}

/* Allocates on s1, fills there, hands over to s2 through an event, adds one and frees
 * there; the result comes back through pinned memory. */
static void two_streams(int *h, int n)
{
    cudaStream_t s1, s2;
    cudaEvent_t filled;
    int *d;

    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
    CHECK(cudaMallocAsync((void **)&d, n * sizeof(int), s1));
    iota_times<<<(n + 255) / 256, 256, 0, s1>>>(d, 3, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(filled, s1));
    CHECK(cudaStreamWaitEvent(s2, filled, 0));
    add_one<<<(n + 255) / 256, 256, 0, s2>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, s2));
    CHECK(cudaFreeAsync(d, s2));
    CHECK(cudaStreamSynchronize(s2));
    for (int i = 0; i < n; i++)
        EXPECT(h[i] == 3 * i + 1, "two streams: element %d = %d", i, h[i]);
    CHECK(cudaEventDestroy(filled));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
}

static void default_pool(int *h, int n)
{
    cudaMemPool_t pool;
    cudaStream_t s;
    unsigned long long threshold = ~0ull;
    int *d;

    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    EXPECT(pool_u64(pool, cudaMemPoolAttrReleaseThreshold) == ~0ull, "release threshold");
    cudaMemPool_t current;
    CHECK(cudaDeviceGetMemPool(&current, 0));
    EXPECT(current == pool, "the current pool is not the default one");

    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMallocAsync((void **)&d, n * sizeof(int), s));
    iota_times<<<(n + 255) / 256, 256, 0, s>>>(d, 5, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(pool_u64(pool, cudaMemPoolAttrUsedMemCurrent) >= n * sizeof(int), "used memory");
    CHECK(cudaFreeAsync(d, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        EXPECT(h[i] == 5 * i, "default pool: element %d = %d", i, h[i]);
    EXPECT(pool_u64(pool, cudaMemPoolAttrUsedMemHigh) >= n * sizeof(int), "used high");
    EXPECT(pool_u64(pool, cudaMemPoolAttrUsedMemCurrent) == 0, "used after the free: %llu",
           (unsigned long long)pool_u64(pool, cudaMemPoolAttrUsedMemCurrent));
    unsigned long long zero = 0, one = 1;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
    cudaError_t e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &one);
    EXPECT(e == cudaErrorInvalidValue, "setting the high mark to 1: %s", cudaGetErrorName(e));
    (void)cudaGetLastError();
    CHECK(cudaMemPoolTrimTo(pool, 0));
    CHECK(cudaStreamDestroy(s));
}

static void explicit_pool(int *h, int n)
{
    cudaMemPoolProps props;
    cudaMemPool_t pool;
    cudaStream_t s;
    int *d;

    memset(&props, 0, sizeof(props));
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK(cudaMemPoolCreate(&pool, &props));
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMallocFromPoolAsync((void **)&d, n * sizeof(int), pool, s));
    iota_times<<<(n + 255) / 256, 256, 0, s>>>(d, 7, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaFreeAsync(d, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        EXPECT(h[i] == 7 * i, "explicit pool: element %d = %d", i, h[i]);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaMemPoolDestroy(pool));
}

int main(void)
{
    const int n = 1 << 16;
    int supported = 0, *h;

    CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
    EXPECT(supported, "memory pools not supported");
    CHECK(cudaMallocHost((void **)&h, n * sizeof(int)));
    two_streams(h, n);
    default_pool(h, n);
    explicit_pool(h, n);
    CHECK(cudaFreeHost(h));
    compat_pass("mempool");
    return 0;
}
