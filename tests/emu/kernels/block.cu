// Block-level synchronisation and shared memory (tests/emu/test_emu_kernels.c).

extern "C" __global__ void block_reverse(const int *in, int *out)
{
    __shared__ int s[256];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = in[t];
    __syncthreads();
    out[t] = s[blockDim.x - 1 - threadIdx.x];
}

// Tree reduction with a barrier in a loop; block size is a power of two.
extern "C" __global__ void block_sum(const int *in, int *out)
{
    extern __shared__ int buf[];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = in[t];
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s)
            buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = buf[0];
}

extern "C" __global__ void block_votes(const int *in, int *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int p = in[t] > 0;
    int count = __syncthreads_count(p);
    int all = __syncthreads_and(p);
    int any = __syncthreads_or(in[t] > 1000000);
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = count;
        out[3 * blockIdx.x + 1] = all;
        out[3 * blockIdx.x + 2] = any;
    }
}

// Threads past `active` leave before the barrier; the others still meet there.
extern "C" __global__ void early_exit(const int *in, int *out, int active)
{
    __shared__ int s[256];
    if ((int)threadIdx.x >= active)
        return;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = in[t] * 2;
    __syncthreads();
    out[t] = s[(threadIdx.x + 1) % active];
}

// Asynchronous copies into shared memory (cp.async, sm_80); the second zero-fills all 4
// bytes (copies nothing) in even threads.
#include <cuda_pipeline.h>

extern "C" __global__ void staged(const float4 *in, float *out)
{
    __shared__ float4 tile[64];
    __shared__ float part[64];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    __pipeline_memcpy_async(&tile[threadIdx.x], &in[t], sizeof(float4));
    __pipeline_memcpy_async(&part[threadIdx.x], &in[t].y, sizeof(float), threadIdx.x & 1 ? 0 : 4);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    float4 v = tile[(threadIdx.x + 1) % blockDim.x];
    out[t] = v.x + v.y + v.z + v.w + part[threadIdx.x];
}
