/* SpMV benchmark: y = A x with a random CSR matrix (8..24 non-zeros per row); exact check
 * against the CPU reference (values are chosen so that float sums are exact). */
#include "bench_common.h"

#include "../kernels/spmv.cuh"
#include "../reference/bench_compare.c"
#include "../reference/spmv.c"

typedef struct {
    dim3 grid, block;
    const unsigned *row_ptr, *col_idx;
    const float *vals, *x;
    float *y;
    unsigned rows;
} spmv_launch;

static void launch(void *p)
{
    spmv_launch *l = (spmv_launch *)p;
    spmv_csr<<<l->grid, l->block>>>(l->row_ptr, l->col_idx, l->vals, l->x, l->y, l->rows);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--rows", "--cols", NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names, "spmv [--rows=N] [--cols=N]");
    unsigned long long rows = bench_opt_u64(&o, "--rows", SPMV_SMALL_ROWS, SPMV_DEFAULT_ROWS);
    unsigned long long cols = bench_opt_u64(&o, "--cols", SPMV_SMALL_COLS, SPMV_DEFAULT_COLS);
    if (rows < 1 || rows > (1ull << 26) || cols < 1 || cols > (1ull << 30)) {
        fprintf(stderr, "spmv: --rows in 1..2^26, --cols in 1..2^30\n");
        return 2;
    }
    uint32_t *row_ptr = (uint32_t *)bench_host_alloc((rows + 1) * 4);
    uint64_t nnz = spmv_generate_rows(row_ptr, (uint32_t)rows, SPMV_MIN_NNZ, SPMV_MAX_NNZ, o.seed);
    uint32_t *col_idx = (uint32_t *)bench_host_alloc(nnz * 4);
    float *vals = (float *)bench_host_alloc(nnz * 4), *x = (float *)bench_host_alloc(cols * 4);
    float *y = (float *)bench_host_alloc(rows * 4), *want = (float *)bench_host_alloc(rows * 4);
    spmv_generate_entries(row_ptr, (uint32_t)rows, (uint32_t)cols, col_idx, vals, x, o.seed);
    spmv_reference(row_ptr, col_idx, vals, x, want, (uint32_t)rows);

    spmv_launch l;
    unsigned *d_row_ptr, *d_col_idx;
    float *d_vals, *d_x, *d_y;
    BENCH_CHECK(cudaMalloc((void **)&d_row_ptr, (rows + 1) * 4));
    BENCH_CHECK(cudaMalloc((void **)&d_col_idx, nnz * 4));
    BENCH_CHECK(cudaMalloc((void **)&d_vals, nnz * 4));
    BENCH_CHECK(cudaMalloc((void **)&d_x, cols * 4));
    BENCH_CHECK(cudaMalloc((void **)&d_y, rows * 4));
    BENCH_CHECK(cudaMemcpy(d_row_ptr, row_ptr, (rows + 1) * 4, cudaMemcpyHostToDevice));
    BENCH_CHECK(cudaMemcpy(d_col_idx, col_idx, nnz * 4, cudaMemcpyHostToDevice));
    BENCH_CHECK(cudaMemcpy(d_vals, vals, nnz * 4, cudaMemcpyHostToDevice));
    BENCH_CHECK(cudaMemcpy(d_x, x, cols * 4, cudaMemcpyHostToDevice));
    l.block = dim3(SPMV_BLOCK_THREADS);
    l.grid = dim3((unsigned)((rows + SPMV_BLOCK_THREADS - 1) / SPMV_BLOCK_THREADS));
    l.row_ptr = d_row_ptr;
    l.col_idx = d_col_idx;
    l.vals = d_vals;
    l.x = d_x;
    l.y = d_y;
    l.rows = (unsigned)rows;
    float ms = bench_time_median(launch, &l, o.repeat);
    BENCH_CHECK(cudaMemcpy(y, d_y, rows * 4, cudaMemcpyDeviceToHost));

    char why[160] = "", sizes[96];
    size_t bad = bench_compare_f32(y, want, rows, 0.0, 0.0, why, sizeof why);
    snprintf(sizes, sizeof sizes, "rows=%llu cols=%llu nnz=%llu", rows, cols,
             (unsigned long long)nnz);
    int rc = bench_report("spmv", bad, why, ms, o.repeat, l.grid, l.block, sizes);
    cudaFree(d_row_ptr);
    cudaFree(d_col_idx);
    cudaFree(d_vals);
    cudaFree(d_x);
    cudaFree(d_y);
    free(row_ptr);
    free(col_idx);
    free(vals);
    free(x);
    free(y);
    free(want);
    return rc;
}
