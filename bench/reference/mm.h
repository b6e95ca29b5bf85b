/* Dense matrix multiplication C = A B (A is M x K, B is K x N, row-major): CPU reference and
 * input generator. Entries are multiples of 1/4 in [-1, 1], so products are multiples of
 * 1/16 and all partial sums stay exact in float while K <= 2^16: the GPU result must equal
 * the reference bit for bit. */
#ifndef BENCH_MM_H
#define BENCH_MM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MM_TILE 16 /* thread blocks are MM_TILE x MM_TILE; sizes must be multiples */
#define MM_DEFAULT_M 2048u /* 16384 blocks of 256 threads, as in the paper */
#define MM_DEFAULT_N 2048u
#define MM_DEFAULT_K 512u
#define MM_SMALL_M 64u
#define MM_SMALL_N 64u
#define MM_SMALL_K 32u
#define MM_MAX_K 65536u

void mm_generate(float *a, float *b, uint32_t m, uint32_t n, uint32_t k, uint64_t seed);

void mm_reference(const float *a, const float *b, float *c, uint32_t m, uint32_t n, uint32_t k);

#ifdef __cplusplus
}
#endif

#endif
