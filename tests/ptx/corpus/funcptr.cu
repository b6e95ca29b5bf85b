// Indirect calls to functions that do not read blockIdx: the kernel can be sliced.
typedef unsigned (*op_fn)(unsigned);

__device__ unsigned op_double(unsigned x) { return 2u * x; }
__device__ unsigned op_square(unsigned x) { return x * x; }

__device__ op_fn pure_ops[2] = {op_double, op_square};

extern "C" __global__ void apply_pure(unsigned *out, unsigned which)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = pure_ops[(which + i) & 1u](i);
}
