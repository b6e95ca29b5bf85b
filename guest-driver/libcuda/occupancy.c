/* Occupancy: how many blocks of a function fit one SM, from the device's limits and the
 * function's registers and shared memory (the usual CUDA occupancy rules). */
#include "libcuda_internal.h"

/* Shared memory the driver reserves per block on sm_80 and later. */
#define RESERVED_SMEM_PER_BLOCK 1024

static int blocks_per_sm(const struct kcu_function *f, int dev, int block_size, size_t dyn_smem)
{
    int warps = (block_size + 31) / 32;
    int max_threads = kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    int max_blocks = kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    int regs_sm = kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    long smem_sm = kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    int regs = f->attrs[CU_FUNC_ATTRIBUTE_NUM_REGS];
    long smem = (long)dyn_smem + f->attrs[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES];
    int n = max_blocks > 0 ? max_blocks : 32;

    if (max_threads > 0 && max_threads / (warps * 32) < n)
        n = max_threads / (warps * 32);
    if (regs > 0 && regs_sm > 0) {
        int per_warp = (regs * 32 + 255) / 256 * 256;
        if (regs_sm / (per_warp * warps) < n)
            n = regs_sm / (per_warp * warps);
    }
    if (smem_sm > 0) {
        long per_block = smem + RESERVED_SMEM_PER_BLOCK;
        if (smem_sm / per_block < n)
            n = (int)(smem_sm / per_block);
    }
    return n < 0 ? 0 : n;
}

static CUresult context_device(int *dev)
{
    struct kcu_ctx *x;
    CUresult r = kcu_ctx_require(&x);

    if (r == CUDA_SUCCESS)
        *dev = x->device;
    return r;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks,
                                                                      CUfunction func,
                                                                      int blockSize,
                                                                      size_t dynamicSMemSize,
                                                                      unsigned int flags)
{
    struct kcu_function *f = kcu_function_from(func);
    int dev;
    CUresult r;

    (void)flags;
    if (!numBlocks || blockSize <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = context_device(&dev)) != CUDA_SUCCESS)
        return r;
    if (blockSize > kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK))
        return CUDA_ERROR_INVALID_VALUE;
    *numBlocks = blocks_per_sm(f, dev, blockSize, dynamicSMemSize);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                             int blockSize, size_t dynamicSMemSize)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                dynamicSMemSize, 0);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize,
                                                           CUfunction func,
                                                           CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                           size_t dynamicSMemSize,
                                                           int blockSizeLimit, unsigned int flags)
{
    struct kcu_function *f = kcu_function_from(func);
    int dev, best = 0, best_warps = -1, best_blocks = 0, limit;
    CUresult r;

    (void)flags;
    if (!minGridSize || !blockSize)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = context_device(&dev)) != CUDA_SUCCESS)
        return r;
    limit = kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    if (f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] > 0 &&
        f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] < limit)
        limit = f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    if (blockSizeLimit > 0 && blockSizeLimit < limit)
        limit = blockSizeLimit;
    for (int bs = (limit + 31) / 32 * 32; bs >= 32; bs -= 32) {
        int size = bs > limit ? limit : bs;
        size_t smem = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(size) : dynamicSMemSize;
        int n = blocks_per_sm(f, dev, size, smem);
        int warps = n * ((size + 31) / 32);
        if (warps > best_warps) {
            best_warps = warps;
            best = size;
            best_blocks = n;
        }
    }
    *blockSize = best;
    *minGridSize = best_blocks * kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize,
                                                  CUfunction func,
                                                  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                  size_t dynamicSMemSize, int blockSizeLimit)
{
    return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func,
                                                     blockSizeToDynamicSMemSize, dynamicSMemSize,
                                                     blockSizeLimit, 0);
}

CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func,
                                                         int numBlocks, int blockSize)
{
    struct kcu_function *f = kcu_function_from(func);
    long per_block;
    int dev;
    CUresult r;

    (void)blockSize;
    if (!dynamicSmemSize || numBlocks <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = context_device(&dev)) != CUDA_SUCCESS)
        return r;
    per_block = kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) / numBlocks -
                RESERVED_SMEM_PER_BLOCK - f->attrs[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES];
    *dynamicSmemSize = per_block > 0 ? (size_t)per_block : 0;
    return CUDA_SUCCESS;
}

/* Blocks of a cluster launch by config (its CLUSTER_DIMENSION attribute), 1 without one. */
static unsigned cluster_blocks(const CUlaunchConfig *config)
{
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs && config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            const CUlaunchAttributeValue *v = &config->attrs[i].value;
            return v->clusterDim.x * v->clusterDim.y * v->clusterDim.z;
        }
    return 1;
}

/* Thread block clusters are not launched on a shared GPU here (cuLaunchKernelEx refuses
 * them; the device reports CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH 0): no cluster of more than
 * one block can be resident, and one of one block is a block. cuBLAS asks at
 * cublasCreate and chooses kernels without clusters when the answer is 0. */
CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
                                              const CUlaunchConfig *config)
{
    struct kcu_function *f = kcu_function_from(func);
    int dev;
    CUresult r;

    if (!numClusters || !config || config->blockDimX == 0 || config->blockDimY == 0 ||
        config->blockDimZ == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = context_device(&dev)) != CUDA_SUCCESS)
        return r;
    if (cluster_blocks(config) > 1) {
        *numClusters = 0;
        return CUDA_SUCCESS;
    }
    int block = (int)(config->blockDimX * config->blockDimY * config->blockDimZ);
    *numClusters = blocks_per_sm(f, dev, block, config->sharedMemBytes) *
                   kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func,
                                                    const CUlaunchConfig *config)
{
    if (!clusterSize || !config)
        return CUDA_ERROR_INVALID_VALUE;
    if (!kcu_function_from(func))
        return CUDA_ERROR_INVALID_HANDLE;
    *clusterSize = 1;
    return CUDA_SUCCESS;
}
