/* Black-Scholes workload (bs_sweep). Buffers: 0 spot, 1 strike, 2 expiry (in), 3 mean call,
 * 4 mean put (out). Tolerance BS_ATOL + BS_RTOL |want| (see bs.h).
 * Cost: create is O(options) (fast); the first verify prices 2M options under 4
 * volatilities in double at default size (0.8 s of CPU here) and keeps the prices in
 * priv; later verifies compare. */
#include "wl_common.h"

#include "../reference/bench_compare.h"
#include "../reference/bs.h"

#include <stdlib.h>

typedef struct {
    uint32_t n, n_vol;
    float *want; /* calls then puts */
} bs_priv;

extern const kw_kernel kw_bs;

static void bs_destroy(kw_instance *inst)
{
    if (!inst)
        return;
    bs_priv *p = (bs_priv *)inst->priv;
    if (p)
        free(p->want);
    wl_release(inst);
}

static int bs_create(kw_instance *inst, kw_size size, uint64_t seed)
{
    int rc = wl_check_create(inst, size);
    if (rc)
        return rc;
    wl_begin(inst, &kw_bs);
    int small = size == KW_SIZE_SMALL;
    bs_priv *p = (bs_priv *)calloc(1, sizeof *p);
    inst->priv = p;
    if (!p) {
        bs_destroy(inst);
        return KW_ENOMEM;
    }
    p->n = small ? BS_SMALL_OPTIONS : BS_DEFAULT_OPTIONS;
    p->n_vol = small ? BS_SMALL_VOLS : BS_DEFAULT_VOLS;
    for (int b = 0; b < 5; b++) {
        if (wl_buffer(inst, (size_t)p->n * 4, b < 3, b >= 3) < 0) {
            bs_destroy(inst);
            return KW_ENOMEM;
        }
        wl_arg_buffer(inst, (unsigned)b);
    }
    bs_generate((float *)wl_host(inst, 0), (float *)wl_host(inst, 1), (float *)wl_host(inst, 2),
                p->n, seed);
    wl_arg_f32(inst, BS_RATE);
    wl_arg_f32(inst, BS_VOL0);
    wl_arg_f32(inst, BS_DVOL);
    wl_arg_u32(inst, p->n_vol);
    wl_arg_u32(inst, p->n);
    wl_geometry(inst, p->n / BS_BLOCK_THREADS, 1, 1, BS_BLOCK_THREADS, 1, 1);
    return KW_OK;
}

static int bs_verify(kw_instance *inst, char *why, size_t why_len)
{
    if (!inst || inst->kernel != &kw_bs || !inst->priv)
        return KW_EINVAL;
    bs_priv *p = (bs_priv *)inst->priv;
    if (!p->want) {
        p->want = (float *)malloc((size_t)p->n * 8);
        if (!p->want)
            return KW_ENOMEM;
        bs_reference((const float *)wl_host(inst, 0), (const float *)wl_host(inst, 1),
                     (const float *)wl_host(inst, 2), p->want, p->want + p->n, p->n, BS_RATE,
                     BS_VOL0, BS_DVOL, p->n_vol);
    }
    char first[160] = "";
    size_t bad = bench_compare_f32((const float *)wl_host(inst, 3), p->want, p->n, BS_ATOL,
                                   BS_RTOL, first, sizeof first);
    bad += bench_compare_f32((const float *)wl_host(inst, 4), p->want + p->n, p->n, BS_ATOL,
                             BS_RTOL, bad ? NULL : first, sizeof first);
    return bad ? wl_fail(why, why_len, "bs", bad, first) : KW_OK;
}

const kw_kernel kw_bs = {
    .name = "bs",
    .title = "Black-Scholes",
    .entry = "bs_sweep",
    .ptx_file = "bs.ptx",
    .create = bs_create,
    .verify = bs_verify,
    .destroy = bs_destroy,
};
