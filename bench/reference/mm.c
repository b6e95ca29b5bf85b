/* Matrix multiplication reference; see mm.h. */
#include "mm.h"
#include "bench_rng.h"

#include <stdlib.h>

void mm_generate(float *a, float *b, uint32_t m, uint32_t n, uint32_t k, uint64_t seed)
{
    bench_rng r;
    bench_rng_init(&r, seed, 0x6d6d); /* "mm" */
    for (size_t i = 0; i < (size_t)m * k; i++)
        a[i] = (float)((int)bench_rng_below(&r, 9) - 4) * 0.25f;
    for (size_t i = 0; i < (size_t)k * n; i++)
        b[i] = (float)((int)bench_rng_below(&r, 9) - 4) * 0.25f;
}

void mm_reference(const float *a, const float *b, float *c, uint32_t m, uint32_t n, uint32_t k)
{
    /* i-k-j order streams rows of B and C; sums are exact (see mm.h), so order is free. */
    for (uint32_t i = 0; i < m; i++) {
        float *ci = c + (size_t)i * n;
        for (uint32_t j = 0; j < n; j++)
            ci[j] = 0.0f;
        for (uint32_t p = 0; p < k; p++) {
            float aip = a[(size_t)i * k + p];
            const float *bp = b + (size_t)p * n;
            for (uint32_t j = 0; j < n; j++)
                ci[j] += aip * bp[j];
        }
    }
}
