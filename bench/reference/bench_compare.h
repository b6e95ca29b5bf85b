/* Element-wise comparison of a kernel's output with its CPU reference. Each returns the
 * number of mismatching elements (0 when all match) and describes the first one in why. */
#ifndef BENCH_COMPARE_H
#define BENCH_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* got[i] matches want[i] when |got - want| <= atol + rtol * |want| (NaN never matches). */
size_t bench_compare_f32(const float *got, const float *want, size_t n, double atol,
                         double rtol, char *why, size_t why_len);

/* Exact comparison of 32-bit words. */
size_t bench_compare_u32(const uint32_t *got, const uint32_t *want, size_t n, char *why,
                         size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
