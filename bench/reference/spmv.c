/* SpMV reference; see spmv.h. */
#include "spmv.h"
#include "bench_rng.h"

uint64_t spmv_generate_rows(uint32_t *row_ptr, uint32_t rows, uint32_t min_nnz,
                            uint32_t max_nnz, uint64_t seed)
{
    bench_rng r;
    bench_rng_init(&r, seed, 0x73706d76); /* "spmv" */
    uint64_t nnz = 0;
    row_ptr[0] = 0;
    for (uint32_t i = 0; i < rows; i++) {
        nnz += min_nnz + bench_rng_below(&r, max_nnz - min_nnz + 1);
        row_ptr[i + 1] = (uint32_t)nnz;
    }
    return nnz;
}

static float spmv_eighth(bench_rng *r)
{
    return (float)((int)bench_rng_below(r, 17) - 8) * 0.125f;
}

void spmv_generate_entries(const uint32_t *row_ptr, uint32_t rows, uint32_t cols,
                           uint32_t *col_idx, float *vals, float *x, uint64_t seed)
{
    bench_rng r;
    bench_rng_init(&r, seed, 0x656e74); /* entries */
    for (uint32_t j = 0; j < row_ptr[rows]; j++) {
        col_idx[j] = bench_rng_below(&r, cols);
        vals[j] = spmv_eighth(&r);
    }
    for (uint32_t c = 0; c < cols; c++)
        x[c] = spmv_eighth(&r);
}

void spmv_reference(const uint32_t *row_ptr, const uint32_t *col_idx, const float *vals,
                    const float *x, float *y, uint32_t rows)
{
    for (uint32_t i = 0; i < rows; i++) {
        double acc = 0;
        for (uint32_t j = row_ptr[i]; j < row_ptr[i + 1]; j++)
            acc += (double)vals[j] * x[col_idx[j]];
        y[i] = (float)acc;
    }
}
