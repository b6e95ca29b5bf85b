/* MRI-Q workload (mriq_computeq). Buffers: 0-2 voxel x, y, z, 3 k-space samples packed
 * (kx, ky, kz, |phi|^2) (in), 4 Qr, 5 Qi (out). Tolerance MRIQ_TOL * sum |phi|^2 (see mriq.h).
 * Cost: create is O(voxels) (fast); the first verify evaluates 67M sine/cosine pairs at
 * default size (1.5 s of CPU here) and keeps Q in priv; later verifies compare. */
#include "wl_common.h"

#include "../reference/bench_compare.h"
#include "../reference/mriq.h"

#include <stdlib.h>

typedef struct {
    uint32_t num_x, num_k;
    float *want; /* Qr then Qi */
} mriq_priv;

extern const kw_kernel kw_mriq;

static void mriq_destroy(kw_instance *inst)
{
    if (!inst)
        return;
    mriq_priv *p = (mriq_priv *)inst->priv;
    if (p)
        free(p->want);
    wl_release(inst);
}

static mriq_inputs mriq_view(const kw_instance *inst)
{
    mriq_inputs in = {(float *)wl_host(inst, 0), (float *)wl_host(inst, 1),
                      (float *)wl_host(inst, 2), (float *)wl_host(inst, 3)};
    return in;
}

static int mriq_create(kw_instance *inst, kw_size size, uint64_t seed)
{
    int rc = wl_check_create(inst, size);
    if (rc)
        return rc;
    wl_begin(inst, &kw_mriq);
    int small = size == KW_SIZE_SMALL;
    mriq_priv *p = (mriq_priv *)calloc(1, sizeof *p);
    inst->priv = p;
    if (!p) {
        mriq_destroy(inst);
        return KW_ENOMEM;
    }
    p->num_x = small ? MRIQ_SMALL_X : MRIQ_DEFAULT_X;
    p->num_k = small ? MRIQ_SMALL_K : MRIQ_DEFAULT_K;
    for (int b = 0; b < 6; b++) {
        size_t count = b == 3 ? (size_t)p->num_k * MRIQ_KV_FLOATS : p->num_x;
        if (wl_buffer(inst, count * 4, b < 4, b >= 4) < 0) {
            mriq_destroy(inst);
            return KW_ENOMEM;
        }
        wl_arg_buffer(inst, (unsigned)b);
    }
    mriq_inputs in = mriq_view(inst);
    mriq_generate(&in, p->num_x, p->num_k, seed);
    wl_arg_u32(inst, p->num_k);
    wl_arg_u32(inst, p->num_x);
    wl_geometry(inst, p->num_x / MRIQ_BLOCK_THREADS, 1, 1, MRIQ_BLOCK_THREADS, 1, 1);
    return KW_OK;
}

static int mriq_verify(kw_instance *inst, char *why, size_t why_len)
{
    if (!inst || inst->kernel != &kw_mriq || !inst->priv)
        return KW_EINVAL;
    mriq_priv *p = (mriq_priv *)inst->priv;
    mriq_inputs in = mriq_view(inst);
    if (!p->want) {
        p->want = (float *)malloc((size_t)p->num_x * 8);
        if (!p->want)
            return KW_ENOMEM;
        mriq_reference(&in, p->num_x, p->num_k, p->want, p->want + p->num_x);
    }
    double tol = mriq_tolerance(&in, p->num_k);
    char first[160] = "";
    size_t bad = bench_compare_f32((const float *)wl_host(inst, 4), p->want, p->num_x, tol, 0.0,
                                   first, sizeof first);
    bad += bench_compare_f32((const float *)wl_host(inst, 5), p->want + p->num_x, p->num_x, tol,
                             0.0, bad ? NULL : first, sizeof first);
    return bad ? wl_fail(why, why_len, "mriq", bad, first) : KW_OK;
}

const kw_kernel kw_mriq = {
    .name = "mriq",
    .title = "Magnetic Resonance Imaging - Q",
    .entry = "mriq_computeq",
    .ptx_file = "mriq.ptx",
    .create = mriq_create,
    .verify = mriq_verify,
    .destroy = mriq_destroy,
};
