/* Seeded generator shared by every benchmark input generator (splitmix64).
 * Header-only so that the standalone CUDA programs can include it next to the references. */
#ifndef BENCH_RNG_H
#define BENCH_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t state;
} bench_rng;

/* Starts a stream; salt separates the streams of different kernels under one seed. */
static inline void bench_rng_init(bench_rng *r, uint64_t seed, uint64_t salt)
{
    r->state = seed * 0x2545F4914F6CDD1DULL ^ salt;
}

static inline uint64_t bench_rng_next(bench_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint32_t bench_rng_u32(bench_rng *r)
{
    return (uint32_t)(bench_rng_next(r) >> 32);
}

/* Uniform in [0, n) for n >= 1 (multiply-shift; the bias is below 2^-32). */
static inline uint32_t bench_rng_below(bench_rng *r, uint32_t n)
{
    return (uint32_t)(((uint64_t)bench_rng_u32(r) * n) >> 32);
}

/* Uniform float in [lo, hi) with 24 random bits. */
static inline float bench_rng_float(bench_rng *r, float lo, float hi)
{
    float u = (float)(bench_rng_next(r) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

#endif
