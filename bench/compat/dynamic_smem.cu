/* Dynamic shared memory above the default 48 KiB: a kernel opts into 64 KiB with
 * cudaFuncSetAttribute(MaxDynamicSharedMemorySize), as tensor-core GEMMs do, and each block
 * reverses a 64 KiB tile through shared memory. Launches above the opt-in, and opt-ins
 * above the device's limit, fail with cudaErrorInvalidValue as on a GPU. */
#include "compat.h"

#define TILE_BYTES (64 * 1024)
#define TILE (TILE_BYTES / (int)sizeof(float))

__global__ void reverse_tiles(const float *in, float *out)
{
    extern __shared__ float tile[];
    const float *src = in + (size_t)blockIdx.x * TILE;
    float *dst = out + (size_t)blockIdx.x * TILE;

    for (int i = threadIdx.x; i < TILE; i += blockDim.x)
        tile[i] = src[i];
    __syncthreads();
    for (int i = threadIdx.x; i < TILE; i += blockDim.x)
        dst[i] = tile[TILE - 1 - i];
}

static void expect_launch_error(size_t smem, const char *what)
{
    reverse_tiles<<<1, 32, smem>>>(NULL, NULL);
    cudaError_t e = cudaGetLastError();
    EXPECT(e == cudaErrorInvalidValue, "%s: %s", what, cudaGetErrorName(e));
}

int main(void)
{
    const int blocks = 4, n = blocks * TILE;
    float *h = (float *)malloc(n * sizeof(float)), *d_in, *d_out;
    int optin = 0;
    CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    EXPECT(optin >= TILE_BYTES, "opt-in limit %d below 64 KiB", optin);

    /* Without the opt-in, 64 KiB is refused at the launch. */
    expect_launch_error(TILE_BYTES, "64 KiB before the opt-in");
    cudaError_t e = cudaFuncSetAttribute(reverse_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         optin + 1);
    EXPECT(e == cudaErrorInvalidValue, "opt-in above the device limit: %s", cudaGetErrorName(e));
    (void)cudaGetLastError(); /* the runtime keeps that error as the last one */
    CHECK(cudaFuncSetAttribute(reverse_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               TILE_BYTES));
    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, reverse_tiles));
    EXPECT(fa.maxDynamicSharedSizeBytes == TILE_BYTES, "maxDynamicSharedSizeBytes %d",
           fa.maxDynamicSharedSizeBytes);
    expect_launch_error(TILE_BYTES + 4, "4 bytes above the opt-in");

    for (int i = 0; i < n; i++)
        h[i] = (float)(i * 7 % 10007);
    CHECK(cudaMalloc((void **)&d_in, n * sizeof(float)));
    CHECK(cudaMalloc((void **)&d_out, n * sizeof(float)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    cudaEvent_t done;
    CHECK(cudaEventCreate(&done));
    reverse_tiles<<<blocks, 256, TILE_BYTES>>>(d_in, d_out);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(done, 0));
    CHECK(cudaEventSynchronize(done));
    CHECK(cudaMemcpy(h, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++)
        for (int i = 0; i < TILE; i++) {
            int src = b * TILE + (TILE - 1 - i);
            EXPECT(h[b * TILE + i] == (float)(src * 7 % 10007), "block %d element %d = %g", b, i,
                   h[b * TILE + i]);
        }
    CHECK(cudaEventDestroy(done));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    free(h);
    compat_pass("dynamic_smem");
    return 0;
}
