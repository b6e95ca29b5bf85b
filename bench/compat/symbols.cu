/* Module-scope variables and runtime queries that cudart turns into driver calls beyond
 * plain launches: __constant__ and __device__ symbols (cudaMemcpyToSymbol/FromSymbol,
 * cudaGetSymbolAddress), dynamic shared memory, cudaLaunchKernel with an argument array,
 * cudaFuncGetAttributes, occupancy, device properties, 2-D and device-to-device copies. */
#include "compat.h"

__constant__ float coeffs[16];
__device__ int launches;

__global__ void poly(const float *x, float *y, int n)
{
    extern __shared__ float c[]; /* dynamic: 16 floats staged from constant memory */
    if (threadIdx.x < 16)
        c[threadIdx.x] = coeffs[threadIdx.x];
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0)
        atomicAdd(&launches, 1);
    if (i < n) {
        float acc = 0.0f;
        for (int k = 15; k >= 0; k--)
            acc = acc * x[i] + c[k];
        y[i] = acc;
    }
}

int main(void)
{
    const int n = 4096;
    float h_c[16], h_x[n], h_y[n];
    for (int k = 0; k < 16; k++)
        h_c[k] = (k % 3) - 1.0f; /* -1, 0, 1, ... */
    for (int i = 0; i < n; i++)
        h_x[i] = (float)(i % 5 - 2) * 0.5f; /* powers of these are exact: no FMA rounding */
    CHECK(cudaMemcpyToSymbol(coeffs, h_c, sizeof h_c));
    int zero = 0, got = -1;
    CHECK(cudaMemcpyToSymbol(launches, &zero, sizeof zero));
    void *sym = NULL;
    CHECK(cudaGetSymbolAddress(&sym, launches));
    EXPECT(sym != NULL, "no address for a __device__ symbol");

    float *d_x, *d_y, *d_copy;
    CHECK(cudaMalloc((void **)&d_x, sizeof h_x));
    CHECK(cudaMalloc((void **)&d_y, sizeof h_y));
    CHECK(cudaMalloc((void **)&d_copy, sizeof h_y));
    CHECK(cudaMemcpy(d_x, h_x, sizeof h_x, cudaMemcpyDefault)); /* direction from UVA */

    /* Launch 1: <<<>>> with dynamic shared memory; launch 2: cudaLaunchKernel. */
    poly<<<n / 128, 128, 16 * sizeof(float)>>>(d_x, d_y, n);
    CHECK(cudaGetLastError());
    int nn = n;
    void *args[] = {&d_x, &d_y, &nn};
    CHECK(cudaLaunchKernel((const void *)poly, dim3(n / 128), dim3(128), args,
                           16 * sizeof(float), 0));
    CHECK(cudaMemcpy(d_copy, d_y, sizeof h_y, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(h_y, d_copy, sizeof h_y, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        for (int k = 15; k >= 0; k--)
            acc = acc * h_x[i] + h_c[k];
        EXPECT(h_y[i] == acc, "y[%d] = %g, want %g", i, h_y[i], acc);
    }
    CHECK(cudaMemcpyFromSymbol(&got, launches, sizeof got));
    EXPECT(got == 2, "launch counter %d", got);
    CHECK(cudaMemcpy(&got, sym, sizeof got, cudaMemcpyDeviceToHost));
    EXPECT(got == 2, "launch counter through its address %d", got);

    /* A 2-D copy: every other row of a 64x32 float matrix. */
    float h_m[32][64], h_back[16][64];
    for (int r = 0; r < 32; r++)
        for (int c = 0; c < 64; c++)
            h_m[r][c] = (float)(r * 64 + c);
    float *d_m;
    size_t pitch = 0;
    CHECK(cudaMallocPitch((void **)&d_m, &pitch, 64 * sizeof(float), 16));
    EXPECT(pitch >= 64 * sizeof(float), "pitch %zu", pitch);
    CHECK(cudaMemcpy2D(d_m, pitch, h_m, 2 * 64 * sizeof(float), 64 * sizeof(float), 16,
                       cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy2D(h_back, 64 * sizeof(float), d_m, pitch, 64 * sizeof(float), 16,
                       cudaMemcpyDeviceToHost));
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 64; c++)
            EXPECT(h_back[r][c] == h_m[2 * r][c], "2-D copy (%d,%d)", r, c);

    /* Queries. */
    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, poly));
    EXPECT(fa.maxThreadsPerBlock >= 128 && fa.numRegs > 0, "attributes: %d threads, %d regs",
           fa.maxThreadsPerBlock, fa.numRegs);
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, poly, 128, 16 * sizeof(float)));
    EXPECT(blocks >= 1, "occupancy %d blocks per SM", blocks);
    int dev = -1, sms = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, dev));
    EXPECT(sms > 0 && prop.multiProcessorCount == sms, "SM count %d vs %d", sms,
           prop.multiProcessorCount);
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    EXPECT(free_b > 0 && free_b <= total_b, "memory info %zu of %zu", free_b, total_b);

    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_y));
    CHECK(cudaFree(d_copy));
    CHECK(cudaFree(d_m));
    printf("PASS symbols (%s, %d SMs, %d blocks of 128 per SM)\n", prop.name, sms, blocks);
    return 0;
}
