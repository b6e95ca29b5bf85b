// Shared memory: a static per-block reduction and a dynamic-size in-block reversal.
extern "C" __global__ void block_sum(unsigned *out, const unsigned *in, unsigned n)
{
    __shared__ unsigned part[256];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = part[0];
}

extern "C" __global__ void reverse_dyn(float *data, unsigned n)
{
    extern __shared__ float buf[];
    unsigned base = blockIdx.x * blockDim.x, i = base + threadIdx.x;
    if (i < n)
        buf[threadIdx.x] = data[i];
    __syncthreads();
    unsigned j = blockDim.x - 1 - threadIdx.x;
    if (i < n && base + j < n)
        data[i] = buf[j];
}
