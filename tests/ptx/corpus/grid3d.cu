// 3-D grid: each block writes its coordinates and the grid's shape; a 3-D stencil.
extern "C" __global__ void coords3d(uint4 *out)
{
    unsigned bid = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    unsigned tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
    out[bid * nthreads + tid] = make_uint4(blockIdx.x, blockIdx.y, blockIdx.z,
                                           gridDim.x ^ (gridDim.y << 10) ^ (gridDim.z << 20));
}

extern "C" __global__ void stencil3d(float *out, const float *in, unsigned nx, unsigned ny,
                                     unsigned nz)
{
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x == 0 || y == 0 || z == 0 || x + 1 >= nx || y + 1 >= ny || z + 1 >= nz)
        return;
    size_t i = ((size_t)z * ny + y) * nx + x;
    out[i] = 0.5f * in[i] + 0.1f * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] +
                                    in[i - (size_t)nx * ny] + in[i + (size_t)nx * ny]);
}
