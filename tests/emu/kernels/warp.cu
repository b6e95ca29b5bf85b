// Warp-level operations: shuffles, votes, match, reduce, activemask (tests/emu/test_emu_kernels.c).
#define FULL 0xffffffffu

extern "C" __global__ void shfl_ops(const int *in, int *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    int v = in[t];
    out[4 * t + 0] = __shfl_sync(FULL, v, (lane * 7 + 3) % 32);
    out[4 * t + 1] = __shfl_up_sync(FULL, v, 3);
    out[4 * t + 2] = __shfl_down_sync(FULL, v, 5, 16);
    out[4 * t + 3] = __shfl_xor_sync(FULL, v, 9);
}

extern "C" __global__ void vote_ops(const int *in, unsigned *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    int p = in[t] & 1;
    out[5 * t + 0] = __ballot_sync(FULL, p);
    out[5 * t + 1] = __all_sync(FULL, p);
    out[5 * t + 2] = __any_sync(FULL, p);
    out[5 * t + 3] = 0;
    if (in[t] % 3 == 0)
        out[5 * t + 3] = __activemask();
    out[5 * t + 4] = 0;
    if (lane & 1)
        out[5 * t + 4] = __ballot_sync(0xaaaaaaaau, in[t] > 0);
}

// Classic shuffle reduction, the sm_80 reduce instruction and match.any.
extern "C" __global__ void reduce_ops(const int *in, int *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    int v = in[t];
    int sum = v;
    for (int o = 16; o > 0; o /= 2)
        sum += __shfl_down_sync(FULL, sum, o);
    if (lane == 0)
        out[3 * (t / 32)] = sum;
    out[3 * (t / 32) + 1] = __reduce_add_sync(FULL, v);
    unsigned m = __match_any_sync(FULL, v & 3);
    unsigned most = __reduce_max_sync(FULL, (unsigned)__popc(m));
    if (lane == 0)
        out[3 * (t / 32) + 2] = (int)most;
}
