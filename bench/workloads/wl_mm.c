/* Matrix-multiplication workload (mm_tiled), a 2-D grid of 16x16 blocks. Buffers: 0 A,
 * 1 B (in), 2 C (out). Cost: create is O(M K + K N) (fast); the first verify multiplies on
 * the CPU, 2^31 multiply-adds at default size (0.7 s of CPU here), and keeps C in
 * priv; results must match exactly. */
#include "wl_common.h"

#include "../reference/bench_compare.h"
#include "../reference/mm.h"

#include <stdlib.h>

typedef struct {
    uint32_t m, n, k;
    float *want;
} mm_priv;

extern const kw_kernel kw_mm;

static void mm_destroy(kw_instance *inst)
{
    if (!inst)
        return;
    mm_priv *p = (mm_priv *)inst->priv;
    if (p)
        free(p->want);
    wl_release(inst);
}

static int mm_create(kw_instance *inst, kw_size size, uint64_t seed)
{
    int rc = wl_check_create(inst, size);
    if (rc)
        return rc;
    wl_begin(inst, &kw_mm);
    int small = size == KW_SIZE_SMALL;
    mm_priv *p = (mm_priv *)calloc(1, sizeof *p);
    inst->priv = p;
    if (!p) {
        mm_destroy(inst);
        return KW_ENOMEM;
    }
    p->m = small ? MM_SMALL_M : MM_DEFAULT_M;
    p->n = small ? MM_SMALL_N : MM_DEFAULT_N;
    p->k = small ? MM_SMALL_K : MM_DEFAULT_K;
    int a = wl_buffer(inst, (size_t)p->m * p->k * 4, 1, 0);
    int b = wl_buffer(inst, (size_t)p->k * p->n * 4, 1, 0);
    int c = wl_buffer(inst, (size_t)p->m * p->n * 4, 0, 1);
    if (a < 0 || b < 0 || c < 0) {
        mm_destroy(inst);
        return KW_ENOMEM;
    }
    mm_generate((float *)wl_host(inst, (unsigned)a), (float *)wl_host(inst, (unsigned)b), p->m,
                p->n, p->k, seed);
    wl_arg_buffer(inst, (unsigned)a);
    wl_arg_buffer(inst, (unsigned)b);
    wl_arg_buffer(inst, (unsigned)c);
    wl_arg_u32(inst, p->m);
    wl_arg_u32(inst, p->n);
    wl_arg_u32(inst, p->k);
    wl_geometry(inst, p->n / MM_TILE, p->m / MM_TILE, 1, MM_TILE, MM_TILE, 1);
    return KW_OK;
}

static int mm_verify(kw_instance *inst, char *why, size_t why_len)
{
    if (!inst || inst->kernel != &kw_mm || !inst->priv)
        return KW_EINVAL;
    mm_priv *p = (mm_priv *)inst->priv;
    size_t n = (size_t)p->m * p->n;
    if (!p->want) {
        p->want = (float *)malloc(n * 4);
        if (!p->want)
            return KW_ENOMEM;
        mm_reference((const float *)wl_host(inst, 0), (const float *)wl_host(inst, 1), p->want,
                     p->m, p->n, p->k);
    }
    char first[160] = "";
    size_t bad = bench_compare_f32((const float *)wl_host(inst, 2), p->want, n, 0.0, 0.0, first,
                                   sizeof first);
    return bad ? wl_fail(why, why_len, "mm", bad, first) : KW_OK;
}

const kw_kernel kw_mm = {
    .name = "mm",
    .title = "Matrix Multiplication",
    .entry = "mm_tiled",
    .ptx_file = "mm.ptx",
    .create = mm_create,
    .verify = mm_verify,
    .destroy = mm_destroy,
};
