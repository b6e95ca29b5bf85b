/* MRI-Q (Parboil): for every voxel x, Q(x) = sum over k of |phi(k)|^2 e^{i 2 pi k.x}, real
 * and imaginary parts. CPU reference and input generator. Voxels lie in [-1/2, 1/2)^3,
 * k-space samples in [-8, 8)^3 and |phi|^2 in [0, 1).
 * Tolerance: |got - want| <= MRIQ_TOL * sum_k |phi(k)|^2 per element. The GPU forms the
 * phase in float (argument up to ~75 rad, error ~1e-5 rad per term); the reference reduces
 * the phase in double. */
#ifndef BENCH_MRIQ_H
#define BENCH_MRIQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MRIQ_BLOCK_THREADS 256
#define MRIQ_DEFAULT_X (1u << 21) /* voxels: 8192 blocks, about 8 waves on an H100 */
#define MRIQ_DEFAULT_K 32u
#define MRIQ_SMALL_X 4096u
#define MRIQ_SMALL_K 16u
#define MRIQ_TOL 1e-4

/* k-space samples are packed as in Parboil's kValues: kx, ky, kz, |phi|^2 per sample. */
#define MRIQ_KV_FLOATS 4

typedef struct {
    float *x, *y, *z; /* num_x voxel coordinates */
    float *kv;        /* num_k samples, MRIQ_KV_FLOATS floats each */
} mriq_inputs;

void mriq_generate(const mriq_inputs *in, uint32_t num_x, uint32_t num_k, uint64_t seed);

void mriq_reference(const mriq_inputs *in, uint32_t num_x, uint32_t num_k, float *qr,
                    float *qi);

/* The absolute tolerance for every element: MRIQ_TOL * sum of phi. */
double mriq_tolerance(const mriq_inputs *in, uint32_t num_k);

#ifdef __cplusplus
}
#endif

#endif
