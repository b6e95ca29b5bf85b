/* count_blocks as SASS only (nvcc -cubin -arch=sm_90): the cubin test_sched_fake loads with
 * ksched_module_load_cubin. The fake driver runs kernels by name (fake_driver.h); on a GPU
 * this body does the same: counts[linear block id] += 1. */
__device__ unsigned cubin_launches;

extern "C" __global__ void count_blocks(unsigned *counts, unsigned tag)
{
    unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0)
        atomicAdd(&counts[block], 1u);
    if (block == 0 && threadIdx.x == 0)
        atomicAdd(&cubin_launches, tag + 1);
}
