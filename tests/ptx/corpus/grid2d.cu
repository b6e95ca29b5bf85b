// 2-D grids: a tiled transpose and a kernel that records its block coordinates.
#define TILE 16

extern "C" __global__ void transpose(float *out, const float *in, unsigned w, unsigned h)
{
    __shared__ float tile[TILE][TILE + 1];
    unsigned x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    if (x < w && y < h)
        tile[threadIdx.y][threadIdx.x] = in[y * w + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    if (x < h && y < w)
        out[y * h + x] = tile[threadIdx.x][threadIdx.y];
}

extern "C" __global__ void coords2d(uint2 *out)
{
    unsigned bid = blockIdx.y * gridDim.x + blockIdx.x;
    unsigned tid = threadIdx.y * blockDim.x + threadIdx.x;
    out[bid * blockDim.x * blockDim.y + tid] =
        make_uint2(blockIdx.x | (gridDim.x << 16), blockIdx.y | (gridDim.y << 16));
}
