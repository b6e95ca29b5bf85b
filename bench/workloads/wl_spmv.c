/* SpMV workload (spmv_csr). Buffers: 0 row_ptr, 1 col_idx, 2 vals, 3 x (in), 4 y (out).
 * Cost: create draws 33M random non-zeros at default size (about 1 s); the first verify
 * runs the CSR product once (0.15 s) and keeps y in priv; results must match exactly. */
#include "wl_common.h"

#include "../reference/bench_compare.h"
#include "../reference/spmv.h"

#include <stdlib.h>

typedef struct {
    uint32_t rows;
    float *want;
} spmv_priv;

extern const kw_kernel kw_spmv;

static void spmv_destroy(kw_instance *inst)
{
    if (!inst)
        return;
    spmv_priv *p = (spmv_priv *)inst->priv;
    if (p)
        free(p->want);
    wl_release(inst);
}

static int spmv_create(kw_instance *inst, kw_size size, uint64_t seed)
{
    int rc = wl_check_create(inst, size);
    if (rc)
        return rc;
    wl_begin(inst, &kw_spmv);
    int small = size == KW_SIZE_SMALL;
    uint32_t rows = small ? SPMV_SMALL_ROWS : SPMV_DEFAULT_ROWS;
    uint32_t cols = small ? SPMV_SMALL_COLS : SPMV_DEFAULT_COLS;
    spmv_priv *p = (spmv_priv *)calloc(1, sizeof *p);
    inst->priv = p;
    int rp = wl_buffer(inst, ((size_t)rows + 1) * 4, 1, 0);
    if (!p || rp < 0) {
        spmv_destroy(inst);
        return KW_ENOMEM;
    }
    uint32_t *row_ptr = (uint32_t *)wl_host(inst, (unsigned)rp);
    uint64_t nnz = spmv_generate_rows(row_ptr, rows, SPMV_MIN_NNZ, SPMV_MAX_NNZ, seed);
    int ci = wl_buffer(inst, nnz * 4, 1, 0), va = wl_buffer(inst, nnz * 4, 1, 0);
    int x = wl_buffer(inst, (size_t)cols * 4, 1, 0), y = wl_buffer(inst, (size_t)rows * 4, 0, 1);
    if (ci < 0 || va < 0 || x < 0 || y < 0) {
        spmv_destroy(inst);
        return KW_ENOMEM;
    }
    p->rows = rows;
    spmv_generate_entries(row_ptr, rows, cols, (uint32_t *)wl_host(inst, (unsigned)ci),
                          (float *)wl_host(inst, (unsigned)va), (float *)wl_host(inst, (unsigned)x),
                          seed);
    for (int b = 0; b < 5; b++)
        wl_arg_buffer(inst, (unsigned)b);
    wl_arg_u32(inst, rows);
    wl_geometry(inst, rows / SPMV_BLOCK_THREADS, 1, 1, SPMV_BLOCK_THREADS, 1, 1);
    return KW_OK;
}

static int spmv_verify(kw_instance *inst, char *why, size_t why_len)
{
    if (!inst || inst->kernel != &kw_spmv || !inst->priv)
        return KW_EINVAL;
    spmv_priv *p = (spmv_priv *)inst->priv;
    if (!p->want) {
        p->want = (float *)malloc((size_t)p->rows * 4);
        if (!p->want)
            return KW_ENOMEM;
        spmv_reference((const uint32_t *)wl_host(inst, 0), (const uint32_t *)wl_host(inst, 1),
                       (const float *)wl_host(inst, 2), (const float *)wl_host(inst, 3), p->want,
                       p->rows);
    }
    char first[160] = "";
    size_t bad = bench_compare_f32((const float *)wl_host(inst, 4), p->want, p->rows, 0.0, 0.0,
                                   first, sizeof first);
    return bad ? wl_fail(why, why_len, "spmv", bad, first) : KW_OK;
}

const kw_kernel kw_spmv = {
    .name = "spmv",
    .title = "Sparse Matrix-Vector Multiplication",
    .entry = "spmv_csr",
    .ptx_file = "spmv.ptx",
    .create = spmv_create,
    .verify = spmv_verify,
    .destroy = spmv_destroy,
};
