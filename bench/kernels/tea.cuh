/* Tiny Encryption Algorithm: one thread encrypts one 64-bit block (two words) with 32
 * cycles. About 600 integer instructions per 16 bytes moved: compute-bound on an H100. */
#ifndef BENCH_KERNEL_TEA_CUH
#define BENCH_KERNEL_TEA_CUH

extern "C" __global__ void tea_encrypt(const unsigned *in, unsigned *out, unsigned k0,
                                       unsigned k1, unsigned k2, unsigned k3, unsigned n_blocks)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_blocks)
        return;
    unsigned v0 = in[2 * i], v1 = in[2 * i + 1], sum = 0;
    for (int c = 0; c < 32; c++) {
        sum += 0x9E3779B9u;
        v0 += ((v1 << 4) + k0) ^ (v1 + sum) ^ ((v1 >> 5) + k1);
        v1 += ((v0 << 4) + k2) ^ (v0 + sum) ^ ((v0 >> 5) + k3);
    }
    out[2 * i] = v0;
    out[2 * i + 1] = v1;
}

#endif
