/* Cooperative launches (cudaLaunchCooperativeKernel): a grid-wide reduction whose blocks
 * meet at grid.sync() twice, so the launch works only with every block resident at once;
 * the grid is sized from the occupancy calculator, as programs do. Where the device says
 * it cannot launch cooperative kernels (cudaDevAttrCooperativeLaunch 0: the emulator) the
 * launch must fail with cudaErrorNotSupported (or the program skips it) and the program
 * says so with its own line and exit code 3 (not a pass). */
#include <cooperative_groups.h>

#include "compat.h"

namespace cg = cooperative_groups;

__global__ void grid_sum(const int *in, int n, long long *partial, long long *out)
{
    cg::grid_group grid = cg::this_grid();
    long long mine = 0;
    for (int i = (int)grid.thread_rank(); i < n; i += (int)grid.size())
        mine += in[i];
    atomicAdd((unsigned long long *)&partial[blockIdx.x], (unsigned long long)mine);
    grid.sync();
    if (grid.thread_rank() == 0) {
        long long total = 0;
        for (unsigned b = 0; b < gridDim.x; b++)
            total += partial[b];
        *out = total;
    }
    grid.sync();
    /* every block reads the total the first thread wrote before the second sync */
    if (threadIdx.x == 0)
        partial[blockIdx.x] = *out;
}

int main(void)
{
    const int n = 1 << 20, threads = 256;
    int coop = 0, sms = 0, per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sum, threads, 0));
    int blocks = sms * (per_sm < 2 ? per_sm : 2);
    EXPECT(blocks > 0, "no block fits (%d SMs, %d per SM)", sms, per_sm);

    int *h = (int *)malloc(n * sizeof(int)), *d_in;
    long long *d_partial, *d_out, expect = 0, got = 0;
    for (int i = 0; i < n; i++) {
        h[i] = (int)(((long long)i * 7919) % 1000) - 500;
        expect += h[i];
    }
    CHECK(cudaMalloc((void **)&d_in, n * sizeof(int)));
    CHECK(cudaMalloc((void **)&d_partial, blocks * sizeof(long long)));
    CHECK(cudaMalloc((void **)&d_out, sizeof(long long)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_partial, 0, blocks * sizeof(long long)));

    int nn = n;
    void *args[] = {&d_in, &nn, &d_partial, &d_out};
    cudaError_t e = cudaLaunchCooperativeKernel((void *)grid_sum, blocks, threads, args, 0, 0);
    if (!coop) {
        EXPECT(e == cudaErrorNotSupported || e == cudaErrorInvalidConfiguration ||
               e == cudaErrorCooperativeLaunchTooLarge,
               "a cooperative launch on a device without them: %s", cudaGetErrorName(e));
        printf("UNSUPPORTED cooperative: the device cannot launch cooperative kernels (%s)\n",
               cudaGetErrorName(e));
        return 3;
    }
    CHECK(e);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(&got, d_out, sizeof(got), cudaMemcpyDeviceToHost));
    EXPECT(got == expect, "grid sum %lld, expected %lld", got, expect);
    long long *back = (long long *)malloc(blocks * sizeof(long long));
    CHECK(cudaMemcpy(back, d_partial, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++)
        EXPECT(back[b] == expect, "block %d read %lld after the grid sync", b, back[b]);
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_partial));
    CHECK(cudaFree(d_out));
    free(h);
    free(back);
    compat_pass("cooperative");
    return 0;
}
