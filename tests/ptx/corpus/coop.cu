#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Grid-wide synchronisation: needs a cooperative launch of the whole grid.
extern "C" __global__ void coop_sum(unsigned *data, unsigned *total)
{
    cg::grid_group g = cg::this_grid();
    atomicAdd(total, data[g.thread_rank()]);
    g.sync();
    data[g.thread_rank()] = *total;
}
