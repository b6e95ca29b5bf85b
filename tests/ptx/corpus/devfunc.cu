// Device functions that read blockIdx/gridDim and are not inlined (also built with -G).
__device__ __noinline__ unsigned linear_block()
{
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

__device__ __noinline__ unsigned grid_blocks()
{
    return gridDim.x * gridDim.y * gridDim.z;
}

// Recursion through a function that reads gridDim.
__device__ __noinline__ unsigned depth_mix(unsigned v, unsigned d)
{
    if (d == 0)
        return v ^ gridDim.x;
    return depth_mix(v * 31u + blockIdx.y, d - 1) + 1u;
}

// Calls the others: cloned as a caller of functions that read the grid.
__device__ __noinline__ unsigned block_key(unsigned t)
{
    return linear_block() * 1000003u + grid_blocks() * 7u + t;
}

extern "C" __global__ void devfunc(unsigned *out)
{
    unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
    unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    unsigned b = linear_block();
    out[b * nthreads + t] = block_key(t) ^ depth_mix(t, b % 4u);
}
