/* Seven-point 3-D stencil on a 3-D grid of 32x4x1 blocks: each thread updates ST_ZCHUNK
 * points of one (x, y) column, keeping the z neighbours in registers as it marches. About
 * eight flops and a dozen instructions per 8 bytes of DRAM traffic: memory-bound. (One
 * thread per point spent ~40 instructions per point on indexing and was issue-bound on an
 * H100: PUR 0.61 against MUR 0.47.) */
#ifndef BENCH_KERNEL_ST_CUH
#define BENCH_KERNEL_ST_CUH

#define ST_ZCHUNK 16 /* z points per thread; grid.z = ceil(nz / ST_ZCHUNK) */

extern "C" __global__ void st_stencil7(const float *in, float *out, unsigned nx, unsigned ny,
                                       unsigned nz, float c0, float c1)
{
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z0 = blockIdx.z * ST_ZCHUNK;
    if (x >= nx || y >= ny || z0 >= nz)
        return;
    unsigned z1 = min(z0 + ST_ZCHUNK, nz);
    size_t sy = nx, sz = (size_t)nx * ny;
    size_t i = z0 * sz + y * sy + x;
    if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) { /* boundary column: copy */
        for (unsigned z = z0; z < z1; z++, i += sz)
            out[i] = in[i];
        return;
    }
    float below = z0 > 0 ? in[i - sz] : 0.0f, cur = in[i];
    /* Not unrolled: unrolling hoists loads into 56 registers, halving occupancy, and on an
     * H100 ran at 41% of DRAM bandwidth against 62% for this loop (30 registers). */
#pragma unroll 1
    for (unsigned z = z0; z < z1; z++, i += sz) {
        float above = z + 1 < nz ? in[i + sz] : 0.0f;
        if (z == 0 || z == nz - 1)
            out[i] = cur;
        else
            out[i] = c1 * (in[i - 1] + in[i + 1] + in[i - sy] + in[i + sy] + below + above) -
                     c0 * cur;
        below = cur;
        cur = above;
    }
}

#endif
