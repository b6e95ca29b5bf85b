/* Mapped pinned memory (zero copy): cudaHostAlloc(cudaHostAllocMapped) buffers that a
 * kernel reads and writes in place, through cudaHostGetDevicePointer's address and, where
 * that is the host pointer itself (unified addressing), through the host pointer; the
 * results are checked on the host with no copy, and a second round sees what the host
 * wrote in between; memsets and device-to-device copies name it by device address. Where kernels cannot read host memory (cudaDevAttrCanMapHostMemory is
 * 0: a tenant whose kernels are fenced, a VM) the allocation fails with
 * cudaErrorNotSupported and the program computes the same through device memory. The
 * PASS line names the path taken. */
#include "compat.h"

__global__ void scale_add(const int *in, int *out, int a, int b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * in[i] + b;
}

static void fill(int *v, int n, int seed)
{
    for (int i = 0; i < n; i++)
        v[i] = (i * seed) % 7919 - 3000;
}

static void verify(const int *in, const int *out, int a, int b, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        EXPECT(out[i] == a * in[i] + b, "%s: element %d = %d", what, i, out[i]);
}

/* One kernel over in and out as kernels address them, checked in place. */
static void round_trip(const int *h_in, int *h_out, const int *d_in, int *d_out, int a, int b,
                       int n, const char *what)
{
    memset(h_out, 0, n * sizeof(int));
    scale_add<<<(n + 255) / 256, 256>>>(d_in, d_out, a, b, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    verify(h_in, h_out, a, b, n, what);
}

static void mapped(int *h_in, int *h_out, int n)
{
    int *d_in = NULL, *d_out = NULL;
    unsigned flags = 0;

    CHECK(cudaHostGetFlags(&flags, h_in));
    EXPECT(flags & cudaHostAllocMapped, "flags %#x lack cudaHostAllocMapped", flags);
    CHECK(cudaHostGetDevicePointer((void **)&d_in, h_in, 0));
    CHECK(cudaHostGetDevicePointer((void **)&d_out, h_out, 0));
    fill(h_in, n, 11);
    round_trip(h_in, h_out, d_in, d_out, 3, -7, n, "mapped");
    fill(h_in, n, 23); /* the host writes, the next kernel sees it: no copy in between */
    round_trip(h_in, h_out, d_in, d_out, -2, 5, n, "mapped, second round");
    if (d_in == h_in && d_out == h_out) /* unified addressing: the host pointers work too */
        round_trip(h_in, h_out, h_in, h_out, 4, 1, n, "host pointers");
    /* memsets and device-to-device copies may name mapped memory (XLA clears pinned
     * buffers with cuMemsetD8Async on their device address) */
    size_t bytes = n * sizeof(int);
    int *d_copy = NULL;
    CHECK(cudaMemsetAsync(d_out, 0x5a, bytes, 0));
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++)
        EXPECT(h_out[i] == 0x5a5a5a5a, "memset of mapped memory: element %d = %#x", i, h_out[i]);
    CHECK(cudaMalloc((void **)&d_copy, bytes));
    CHECK(cudaMemcpy(d_copy, d_in, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemset(d_out, 0, bytes));
    CHECK(cudaMemcpy(d_out, d_copy, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaDeviceSynchronize()); /* copies between device addresses do not wait */
    EXPECT(memcmp(h_out, h_in, bytes) == 0, "mapped -> device -> mapped copy differs");
    CHECK(cudaFree(d_copy));
    /* a pointer inside the allocation maps to the same offset */
    int *d_mid = NULL;
    CHECK(cudaHostGetDevicePointer((void **)&d_mid, h_in + 1000, 0));
    EXPECT(d_mid == d_in + 1000, "device pointer of an interior address %p, expected %p",
           (void *)d_mid, (void *)(d_in + 1000));
}

static void through_device_memory(int n)
{
    size_t bytes = n * sizeof(int);
    int *h_in = (int *)malloc(bytes), *h_out = (int *)malloc(bytes), *d_in, *d_out;

    CHECK(cudaMalloc((void **)&d_in, bytes));
    CHECK(cudaMalloc((void **)&d_out, bytes));
    fill(h_in, n, 11);
    CHECK(cudaMemcpy(d_in, h_in, bytes, cudaMemcpyHostToDevice));
    scale_add<<<(n + 255) / 256, 256>>>(d_in, d_out, 3, -7, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h_out, d_out, bytes, cudaMemcpyDeviceToHost));
    verify(h_in, h_out, 3, -7, n, "copies");
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    free(h_in);
    free(h_out);
}

int main(void)
{
    const int n = 1 << 18;
    int can_map = 0, *h_in = NULL, *h_out = NULL;

    CHECK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, 0));
    cudaError_t e = cudaHostAlloc((void **)&h_in, n * sizeof(int), cudaHostAllocMapped);
    if (e == cudaSuccess) {
        EXPECT(can_map, "mapped allocation succeeded on a device that cannot map");
        CHECK(cudaHostAlloc((void **)&h_out, n * sizeof(int), cudaHostAllocMapped));
        mapped(h_in, h_out, n);
        CHECK(cudaFreeHost(h_in));
        CHECK(cudaFreeHost(h_out));
        compat_pass("mapped_memory (mapped)");
        return 0;
    }
    EXPECT(!can_map, "mapped allocation failed (%s) on a device that can map",
           cudaGetErrorName(e));
    EXPECT(e == cudaErrorNotSupported || e == cudaErrorInvalidValue,
           "mapped allocation: %s", cudaGetErrorName(e));
    (void)cudaGetLastError();
    through_device_memory(n);
    compat_pass("mapped_memory (copies)");
    return 0;
}
