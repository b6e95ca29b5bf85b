// 1-D grid: every thread writes a value mixing its global index with blockIdx and gridDim.
extern "C" __global__ void grid1d(unsigned *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = i * 2654435761u ^ blockIdx.x ^ (gridDim.x << 16);
}

// Reads of blockIdx inside a loop and under a branch.
extern "C" __global__ void grid1d_loop(unsigned *out, unsigned n, unsigned rounds)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned acc = i;
    for (unsigned r = 0; r < (rounds & 15u); r++) {
        acc = acc * 33u + blockIdx.x;
        if (acc & 1u)
            acc ^= gridDim.x;
    }
    out[i] = acc;
}
