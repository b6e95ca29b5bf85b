// Warp shuffles, votes and a warp-level reduction per block.
extern "C" __global__ void warp_reduce(unsigned *out, const unsigned *in, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = i < n ? in[i] : 0;
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    unsigned odd = __ballot_sync(0xffffffffu, (i < n ? in[i] : 0) & 1u);
    unsigned x = __shfl_xor_sync(0xffffffffu, v, 1);
    if ((threadIdx.x & 31) == 0)
        out[i / 32] = v ^ odd ^ (x << 1);
}
