/* SAD workload (sad_search), a 2-D grid of one 32-thread block per 8x8 macroblock.
 * Buffers: 0 current frame, 1 reference frame (in), 2 SADs (out).
 * Cost: create is O(pixels) (fast); the first verify computes all 9.3M SADs of 64 pixels at
 * default size (0.9 s of CPU here) and keeps them in priv; exact match required. */
#include "wl_common.h"

#include "../reference/bench_compare.h"
#include "../reference/sad.h"

#include <stdlib.h>

typedef struct {
    uint32_t width, height, range;
    size_t n;
    uint32_t *want;
} sad_priv;

extern const kw_kernel kw_sad;

static void sad_destroy(kw_instance *inst)
{
    if (!inst)
        return;
    sad_priv *p = (sad_priv *)inst->priv;
    if (p)
        free(p->want);
    wl_release(inst);
}

static int sad_create(kw_instance *inst, kw_size size, uint64_t seed)
{
    int rc = wl_check_create(inst, size);
    if (rc)
        return rc;
    wl_begin(inst, &kw_sad);
    int small = size == KW_SIZE_SMALL;
    sad_priv *p = (sad_priv *)calloc(1, sizeof *p);
    inst->priv = p;
    if (!p) {
        sad_destroy(inst);
        return KW_ENOMEM;
    }
    p->width = small ? SAD_SMALL_WIDTH : SAD_DEFAULT_WIDTH;
    p->height = small ? SAD_SMALL_HEIGHT : SAD_DEFAULT_HEIGHT;
    p->range = small ? SAD_SMALL_RANGE : SAD_DEFAULT_RANGE;
    size_t pixels = (size_t)p->width * p->height;
    p->n = pixels / (SAD_MB * SAD_MB) * sad_positions(p->range);
    int cur = wl_buffer(inst, pixels, 1, 0), ref = wl_buffer(inst, pixels, 1, 0);
    int out = wl_buffer(inst, p->n * 4, 0, 1);
    if (cur < 0 || ref < 0 || out < 0) {
        sad_destroy(inst);
        return KW_ENOMEM;
    }
    sad_generate((uint8_t *)wl_host(inst, (unsigned)cur), (uint8_t *)wl_host(inst, (unsigned)ref),
                 p->width, p->height, seed);
    wl_arg_buffer(inst, (unsigned)cur);
    wl_arg_buffer(inst, (unsigned)ref);
    wl_arg_buffer(inst, (unsigned)out);
    wl_arg_u32(inst, p->width);
    wl_arg_u32(inst, p->height);
    wl_arg_u32(inst, p->range);
    wl_geometry(inst, p->width / SAD_MB, p->height / SAD_MB, 1, SAD_BLOCK_THREADS, 1, 1);
    return KW_OK;
}

static int sad_verify(kw_instance *inst, char *why, size_t why_len)
{
    if (!inst || inst->kernel != &kw_sad || !inst->priv)
        return KW_EINVAL;
    sad_priv *p = (sad_priv *)inst->priv;
    if (!p->want) {
        p->want = (uint32_t *)malloc(p->n * 4);
        if (!p->want)
            return KW_ENOMEM;
        sad_reference((const uint8_t *)wl_host(inst, 0), (const uint8_t *)wl_host(inst, 1),
                      p->width, p->height, p->range, p->want);
    }
    char first[160] = "";
    size_t bad = bench_compare_u32((const uint32_t *)wl_host(inst, 2), p->want, p->n, first,
                                   sizeof first);
    return bad ? wl_fail(why, why_len, "sad", bad, first) : KW_OK;
}

const kw_kernel kw_sad = {
    .name = "sad",
    .title = "Sum of Absolute Differences",
    .entry = "sad_search",
    .ptx_file = "sad.ptx",
    .create = sad_create,
    .verify = sad_verify,
    .destroy = sad_destroy,
};
