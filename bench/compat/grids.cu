/* 2-D and 3-D grids and blocks: every thread writes its linear id computed from blockIdx,
 * threadIdx, gridDim and blockDim; the host checks that each element was written once with
 * the right value and that partial blocks at the edges stay inside their bounds. */
#include "compat.h"

#include <string.h>

__global__ void ids_2d(unsigned *out, unsigned w, unsigned h)
{
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h)
        out[y * w + x] = (y << 16) | x;
}

__global__ void ids_3d(unsigned *out, unsigned nx, unsigned ny, unsigned nz)
{
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) {
        /* Also record the grid shape as the device sees it, folded into the value. */
        unsigned shape = gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
        atomicAdd(&out[(z * ny + y) * nx + x], ((z * ny + y) * nx + x) + shape);
    }
}

static int check_2d(void)
{
    const unsigned w = 1000, h = 300; /* not multiples of the block */
    size_t bytes = (size_t)w * h * 4;
    unsigned *d, *hst = (unsigned *)malloc(bytes);
    EXPECT(hst, "host allocation");
    CHECK(cudaMalloc((void **)&d, bytes));
    CHECK(cudaMemset(d, 0xff, bytes));
    dim3 block(16, 8), grid((w + 15) / 16, (h + 7) / 8);
    ids_2d<<<grid, block>>>(d, w, h);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hst, d, bytes, cudaMemcpyDeviceToHost));
    for (unsigned y = 0; y < h; y++)
        for (unsigned x = 0; x < w; x++)
            EXPECT(hst[y * w + x] == ((y << 16) | x), "2-D (%u,%u) = %#x", x, y, hst[y * w + x]);
    CHECK(cudaFree(d));
    free(hst);
    return 0;
}

static int check_3d(void)
{
    const unsigned nx = 70, ny = 33, nz = 21;
    size_t n = (size_t)nx * ny * nz;
    unsigned *d, *hst = (unsigned *)malloc(n * 4);
    EXPECT(hst, "host allocation");
    CHECK(cudaMalloc((void **)&d, n * 4));
    CHECK(cudaMemset(d, 0, n * 4));
    dim3 block(8, 4, 2), grid((nx + 7) / 8, (ny + 3) / 4, (nz + 1) / 2);
    unsigned shape = grid.x * grid.y * grid.z * block.x * block.y * block.z;
    ids_3d<<<grid, block>>>(d, nx, ny, nz);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hst, d, n * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        EXPECT(hst[i] == (unsigned)i + shape, "3-D element %zu = %u, want %u", i, hst[i],
               (unsigned)i + shape);
    CHECK(cudaFree(d));
    free(hst);
    return 0;
}

int main(void)
{
    check_2d();
    check_3d();
    compat_pass("grids");
    return 0;
}
