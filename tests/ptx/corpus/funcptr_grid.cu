// An indirect call that may reach a function reading blockIdx: not sliceable, since the
// pointer would still reach the original function and not its rectified clone. (Any
// function whose address is taken in the module counts as a possible target.)
typedef unsigned (*op_fn)(unsigned);

__device__ unsigned op_double(unsigned x) { return 2u * x; }
__device__ unsigned op_block(unsigned x) { return x + blockIdx.x; }

__device__ op_fn grid_ops[2] = {op_double, op_block};

extern "C" __global__ void apply_grid(unsigned *out, unsigned which)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = grid_ops[(which + i) & 1u](i);
}
