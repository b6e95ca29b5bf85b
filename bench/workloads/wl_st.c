/* Stencil workload (st_stencil7), a 3-D grid of 32x4x1 blocks, each thread a column of
 * ST_Z_PER_THREAD points. Buffers: 0 in, 1 out.
 * Cost: create fills 33.5M points at default size (0.5 s); the first verify runs the
 * stencil once on the CPU (1.2 s) and keeps it in priv; results must match exactly. */
#include "wl_common.h"

#include "../reference/bench_compare.h"
#include "../reference/st.h"

#include <stdlib.h>

typedef struct {
    uint32_t nx, ny, nz;
    float *want;
} st_priv;

extern const kw_kernel kw_st;

static void st_destroy(kw_instance *inst)
{
    if (!inst)
        return;
    st_priv *p = (st_priv *)inst->priv;
    if (p)
        free(p->want);
    wl_release(inst);
}

static size_t st_points(const st_priv *p)
{
    return (size_t)p->nx * p->ny * p->nz;
}

static int st_create(kw_instance *inst, kw_size size, uint64_t seed)
{
    int rc = wl_check_create(inst, size);
    if (rc)
        return rc;
    wl_begin(inst, &kw_st);
    int small = size == KW_SIZE_SMALL;
    st_priv *p = (st_priv *)calloc(1, sizeof *p);
    inst->priv = p;
    if (!p) {
        st_destroy(inst);
        return KW_ENOMEM;
    }
    p->nx = small ? ST_SMALL_NX : ST_DEFAULT_NX;
    p->ny = small ? ST_SMALL_NY : ST_DEFAULT_NY;
    p->nz = small ? ST_SMALL_NZ : ST_DEFAULT_NZ;
    int in = wl_buffer(inst, st_points(p) * 4, 1, 0), out = wl_buffer(inst, st_points(p) * 4, 0, 1);
    if (in < 0 || out < 0) {
        st_destroy(inst);
        return KW_ENOMEM;
    }
    st_generate((float *)wl_host(inst, (unsigned)in), st_points(p), seed);
    wl_arg_buffer(inst, (unsigned)in);
    wl_arg_buffer(inst, (unsigned)out);
    wl_arg_u32(inst, p->nx);
    wl_arg_u32(inst, p->ny);
    wl_arg_u32(inst, p->nz);
    wl_arg_f32(inst, ST_C0);
    wl_arg_f32(inst, ST_C1);
    wl_geometry(inst, p->nx / ST_BLOCK_X, p->ny / ST_BLOCK_Y,
                (p->nz + ST_Z_PER_THREAD - 1) / ST_Z_PER_THREAD, ST_BLOCK_X, ST_BLOCK_Y, 1);
    return KW_OK;
}

static int st_verify(kw_instance *inst, char *why, size_t why_len)
{
    if (!inst || inst->kernel != &kw_st || !inst->priv)
        return KW_EINVAL;
    st_priv *p = (st_priv *)inst->priv;
    if (!p->want) {
        p->want = (float *)malloc(st_points(p) * 4);
        if (!p->want)
            return KW_ENOMEM;
        st_reference((const float *)wl_host(inst, 0), p->want, p->nx, p->ny, p->nz, ST_C0, ST_C1);
    }
    char first[160] = "";
    size_t bad = bench_compare_f32((const float *)wl_host(inst, 1), p->want, st_points(p), 0.0,
                                   0.0, first, sizeof first);
    return bad ? wl_fail(why, why_len, "st", bad, first) : KW_OK;
}

const kw_kernel kw_st = {
    .name = "st",
    .title = "Stencil",
    .entry = "st_stencil7",
    .ptx_file = "st.ptx",
    .create = st_create,
    .verify = st_verify,
    .destroy = st_destroy,
};
