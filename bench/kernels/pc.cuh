/* Pointer chasing: each thread starts at element (thread id mod n) of a random cycle
 * next[] and follows it `steps` times; every hop after the first is a dependent load from
 * a random place in an array far larger than the L2: memory-bound. */
#ifndef BENCH_KERNEL_PC_CUH
#define BENCH_KERNEL_PC_CUH

extern "C" __global__ void pc_chase(const unsigned *next, unsigned *out, unsigned n_mask,
                                    unsigned steps, unsigned n_threads)
{
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads)
        return;
    unsigned i = t & n_mask;
    for (unsigned s = 0; s < steps; s++)
        i = next[i];
    out[t] = i;
}

#endif
