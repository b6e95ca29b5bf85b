/* Dense matrix multiplication with 16x16 shared-memory tiles, one output per thread. Each
 * tile loaded from L2 is used 16 times from shared memory; DRAM traffic is small and the
 * instruction pipelines (FMA and shared-memory loads) are the limit: compute-bound. */
#ifndef BENCH_KERNEL_MM_CUH
#define BENCH_KERNEL_MM_CUH

extern "C" __global__ void mm_tiled(const float *a, const float *b, float *c, unsigned m,
                                    unsigned n, unsigned k)
{
    __shared__ float as[16][16];
    __shared__ float bs[16][16];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    if (row >= m || col >= n) /* sizes are multiples of 16: whole blocks return together */
        return;
    float acc = 0.0f;
    for (unsigned t = 0; t < k; t += 16) {
        as[ty][tx] = a[(size_t)row * k + t + tx];
        bs[ty][tx] = b[(size_t)(t + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int p = 0; p < 16; p++)
            acc += as[ty][p] * bs[p][tx];
        __syncthreads();
    }
    c[(size_t)row * n + col] = acc;
}

#endif
