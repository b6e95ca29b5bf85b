/* Seven-point stencil on a regular 3-D grid (the Parboil stencil's update):
 *   out = c1 * (sum of the six neighbours) - c0 * centre, boundary points copied.
 * Inputs are multiples of 1/256 in [0, 1) and c0 = 1/4, c1 = 1/8, so every intermediate is
 * exact in float and the GPU result must equal the reference bit for bit. */
#ifndef BENCH_ST_H
#define BENCH_ST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ST_BLOCK_X 32
#define ST_BLOCK_Y 4
#define ST_Z_PER_THREAD 16 /* the kernel's ST_ZCHUNK */
#define ST_C0 0.25f
#define ST_C1 0.125f
#define ST_DEFAULT_NX 512u /* 512 x 512 x 128: 128 MiB per grid */
#define ST_DEFAULT_NY 512u
#define ST_DEFAULT_NZ 128u /* grid 16 x 128 x 8: 128 x 16384 threads, as in the paper */
#define ST_SMALL_NX 64u
#define ST_SMALL_NY 16u
#define ST_SMALL_NZ 32u

void st_generate(float *in, size_t n_points, uint64_t seed);

void st_reference(const float *in, float *out, uint32_t nx, uint32_t ny, uint32_t nz, float c0,
                  float c1);

#ifdef __cplusplus
}
#endif

#endif
