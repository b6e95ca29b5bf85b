#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Thread block clusters (sm_90): a cluster launch and the cluster special registers.
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_rank(unsigned *out)
{
    cg::cluster_group c = cg::this_cluster();
    out[blockIdx.x] = c.block_rank();
    c.sync();
}

extern "C" __global__ void cluster_reg(unsigned *out)
{
    unsigned r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    out[blockIdx.x] = r;
}
