/* Seven-point 3-D stencil: one thread per grid point on a 3-D grid of 32x4x1 blocks. Eight
 * flops per 8 bytes of DRAM traffic (neighbours come from L1/L2): memory-bound. */
#ifndef BENCH_KERNEL_ST_CUH
#define BENCH_KERNEL_ST_CUH

extern "C" __global__ void st_stencil7(const float *in, float *out, unsigned nx, unsigned ny,
                                       unsigned nz, float c0, float c1)
{
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz)
        return;
    size_t sy = nx, sz = (size_t)nx * ny;
    size_t i = z * sz + y * sy + x;
    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
        out[i] = in[i];
        return;
    }
    float s = in[i - 1] + in[i + 1] + in[i - sy] + in[i + sy] + in[i - sz] + in[i + sz];
    out[i] = c1 * s - c0 * in[i];
}

#endif
