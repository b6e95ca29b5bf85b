/* Sparse matrix-vector multiplication y = A x with A in CSR form: CPU reference and input
 * generator. Rows hold a uniform random count of non-zeros in [min_nnz, max_nnz] at random
 * columns. Values of A and x are multiples of 1/8 in [-1, 1], so every product is a
 * multiple of 1/64 and every partial sum of fewer than 2^18 terms is exact in float: the
 * GPU result must equal the reference bit for bit, in any summation order. */
#ifndef BENCH_SPMV_H
#define BENCH_SPMV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPMV_BLOCK_THREADS 256
#define SPMV_DEFAULT_ROWS (1u << 21) /* 8192 thread blocks */
#define SPMV_DEFAULT_COLS (1u << 20)
#define SPMV_SMALL_ROWS 4096u
#define SPMV_SMALL_COLS 4096u
#define SPMV_MIN_NNZ 8u
#define SPMV_MAX_NNZ 24u /* 16 per row on average, as in the paper */

/* Fills row_ptr[0 .. rows] and returns the number of non-zeros. */
uint64_t spmv_generate_rows(uint32_t *row_ptr, uint32_t rows, uint32_t min_nnz,
                            uint32_t max_nnz, uint64_t seed);

/* Fills col_idx and vals (row_ptr[rows] entries) and x (cols entries). */
void spmv_generate_entries(const uint32_t *row_ptr, uint32_t rows, uint32_t cols,
                           uint32_t *col_idx, float *vals, float *x, uint64_t seed);

void spmv_reference(const uint32_t *row_ptr, const uint32_t *col_idx, const float *vals,
                    const float *x, float *y, uint32_t rows);

#ifdef __cplusplus
}
#endif

#endif
