// A kernel without parameters: its output goes to module globals.
__device__ unsigned g_hits[1024];
__device__ unsigned g_last_grid;

extern "C" __global__ void noparams()
{
    unsigned b = blockIdx.x + gridDim.x * blockIdx.y;
    atomicAdd(&g_hits[b % 1024], threadIdx.x + 1);
    if (b == 0 && threadIdx.x == 0)
        g_last_grid = gridDim.x * gridDim.y;
}
