/* Black-Scholes pricing of European options: CPU reference and input generator.
 * Each option (spot S, strike X, expiry T years) is priced under n_vol volatilities
 * v0, v0 + dv, ... (a volatility scenario sweep) at risk-free rate r; the outputs are the
 * mean call and mean put prices over the sweep. The sweep raises the arithmetic per byte so
 * that the kernel stays compute-bound on an H100, as it was on the paper's Fermi GPU.
 * Ranges as in the CUDA samples: S in [5, 30), X in [1, 100), T in [0.25, 10).
 * Tolerance: |got - want| <= BS_ATOL + BS_RTOL |want| (float GPU with a polynomial normal
 * CDF against a double reference with erfc). */
#ifndef BENCH_BS_H
#define BENCH_BS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BS_BLOCK_THREADS 128
#define BS_DEFAULT_OPTIONS (1u << 21) /* 16384 blocks, about 8 waves on an H100 */
#define BS_DEFAULT_VOLS 4u
#define BS_SMALL_OPTIONS 4096u
#define BS_SMALL_VOLS 2u
#define BS_RATE 0.02f
#define BS_VOL0 0.10f
#define BS_DVOL 0.05f
#define BS_ATOL 2e-3
#define BS_RTOL 1e-4

void bs_generate(float *s, float *x, float *t, size_t n, uint64_t seed);

/* Call price of one option; the put price into *put. */
double bs_price(double s, double x, double t, double r, double v, double *put);

void bs_reference(const float *s, const float *x, const float *t, float *call, float *put,
                  size_t n, float r, float v0, float dv, uint32_t n_vol);

#ifdef __cplusplus
}
#endif

#endif
