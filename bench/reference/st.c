/* Stencil reference; see st.h. */
#include "st.h"
#include "bench_rng.h"

void st_generate(float *in, size_t n_points, uint64_t seed)
{
    bench_rng r;
    bench_rng_init(&r, seed, 0x7374); /* "st" */
    for (size_t i = 0; i < n_points; i++)
        in[i] = (float)bench_rng_below(&r, 256) * (1.0f / 256.0f);
}

void st_reference(const float *in, float *out, uint32_t nx, uint32_t ny, uint32_t nz, float c0,
                  float c1)
{
    size_t sx = 1, sy = nx, sz = (size_t)nx * ny;
    for (uint32_t z = 0; z < nz; z++)
        for (uint32_t y = 0; y < ny; y++)
            for (uint32_t x = 0; x < nx; x++) {
                size_t i = z * sz + y * sy + x;
                if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
                    out[i] = in[i];
                    continue;
                }
                double s = (double)in[i - sx] + in[i + sx] + in[i - sy] + in[i + sy] +
                           in[i - sz] + in[i + sz];
                out[i] = (float)(c1 * s - c0 * (double)in[i]);
            }
}
