/* Sum of absolute differences: one 32-thread block per 8x8 macroblock on a 2-D grid. The
 * block stages the macroblock and its clamped search window in shared memory, then each
 * thread computes the SAD of every 32nd displacement. Reads are few; the work is byte
 * loads from shared memory and integer arithmetic. */
#ifndef BENCH_KERNEL_SAD_CUH
#define BENCH_KERNEL_SAD_CUH

extern "C" __global__ void sad_search(const unsigned char *cur, const unsigned char *ref,
                                      unsigned *sads, unsigned width, unsigned height,
                                      unsigned range)
{
    __shared__ unsigned char mb[8 * 8];
    __shared__ unsigned char win[(8 + 2 * 16) * (8 + 2 * 16)];
    if (range > 16)
        return;
    int side = 8 + 2 * (int)range;
    int x0 = (int)blockIdx.x * 8, y0 = (int)blockIdx.y * 8;
    for (int i = threadIdx.x; i < 64; i += blockDim.x)
        mb[i] = cur[(size_t)(y0 + i / 8) * width + x0 + i % 8];
    for (int i = threadIdx.x; i < side * side; i += blockDim.x) {
        int x = x0 - (int)range + i % side, y = y0 - (int)range + i / side;
        x = min(max(x, 0), (int)width - 1);
        y = min(max(y, 0), (int)height - 1);
        win[i] = ref[(size_t)y * width + x];
    }
    __syncthreads();
    int span = 2 * (int)range + 1, npos = span * span;
    unsigned *out = sads + ((size_t)blockIdx.y * (width / 8) + blockIdx.x) * npos;
    for (int p = threadIdx.x; p < npos; p += blockDim.x) {
        int ox = p % span, oy = p / span; /* window offset of this displacement */
        unsigned s = 0;
        for (int py = 0; py < 8; py++)
#pragma unroll
            for (int px = 0; px < 8; px++)
                s += abs((int)mb[py * 8 + px] - (int)win[(oy + py) * side + ox + px]);
        out[p] = s;
    }
}

#endif
