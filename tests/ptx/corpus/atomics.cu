// Atomics: global and shared histograms, maximum and bit-or. Integer atomics commute, so
// the result does not depend on the order in which blocks run.
extern "C" __global__ void histogram(unsigned *bins, const unsigned *in, unsigned n)
{
    __shared__ unsigned local[64];
    if (threadIdx.x < 64)
        local[threadIdx.x] = 0;
    __syncthreads();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[in[i] % 64u], 1u);
    __syncthreads();
    if (threadIdx.x < 64)
        atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

extern "C" __global__ void max_or(unsigned *result, const unsigned *in, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMax(&result[0], in[i]);
        atomicOr(&result[1], in[i] & 0x0f0f0f0fu);
        atomicAdd((unsigned long long *)&result[2], (unsigned long long)in[i]);
    }
}
