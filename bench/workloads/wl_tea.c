/* TEA workload (tea_encrypt). Buffers: 0 plaintext (in), 1 ciphertext (out).
 * Cost: create generates 2 words per block (default 4M blocks, 32 MiB: tens of ms); the
 * first verify encrypts every block on the CPU (0.6 s of CPU here at default size)
 * and keeps the result in priv; later verifies only compare. */
#include "wl_common.h"

#include "../reference/bench_compare.h"
#include "../reference/tea.h"

#include <stdlib.h>

typedef struct {
    size_t n;
    uint32_t key[4];
    uint32_t *want;
} tea_priv;

extern const kw_kernel kw_tea;

static void tea_destroy(kw_instance *inst)
{
    if (!inst)
        return;
    tea_priv *p = (tea_priv *)inst->priv;
    if (p)
        free(p->want);
    wl_release(inst);
}

static int tea_create(kw_instance *inst, kw_size size, uint64_t seed)
{
    int rc = wl_check_create(inst, size);
    if (rc)
        return rc;
    wl_begin(inst, &kw_tea);
    size_t n = size == KW_SIZE_SMALL ? TEA_SMALL_BLOCKS : TEA_DEFAULT_BLOCKS;
    tea_priv *p = (tea_priv *)calloc(1, sizeof *p);
    inst->priv = p;
    int in = wl_buffer(inst, n * 8, 1, 0), out = wl_buffer(inst, n * 8, 0, 1);
    if (!p || in < 0 || out < 0) {
        tea_destroy(inst);
        return KW_ENOMEM;
    }
    p->n = n;
    tea_generate((uint32_t *)wl_host(inst, (unsigned)in), n, p->key, seed);
    wl_arg_buffer(inst, (unsigned)in);
    wl_arg_buffer(inst, (unsigned)out);
    for (int i = 0; i < 4; i++)
        wl_arg_u32(inst, p->key[i]);
    wl_arg_u32(inst, (uint32_t)n);
    wl_geometry(inst, (unsigned)(n / TEA_BLOCK_THREADS), 1, 1, TEA_BLOCK_THREADS, 1, 1);
    return KW_OK;
}

static int tea_verify(kw_instance *inst, char *why, size_t why_len)
{
    if (!inst || inst->kernel != &kw_tea || !inst->priv)
        return KW_EINVAL;
    tea_priv *p = (tea_priv *)inst->priv;
    if (!p->want) {
        p->want = (uint32_t *)malloc(p->n * 8);
        if (!p->want)
            return KW_ENOMEM;
        tea_reference((const uint32_t *)wl_host(inst, 0), p->want, p->n, p->key);
    }
    char first[160] = "";
    size_t bad = bench_compare_u32((const uint32_t *)wl_host(inst, 1), p->want, 2 * p->n, first,
                                   sizeof first);
    return bad ? wl_fail(why, why_len, "tea", bad, first) : KW_OK;
}

const kw_kernel kw_tea = {
    .name = "tea",
    .title = "Tiny Encryption Algorithm",
    .entry = "tea_encrypt",
    .ptx_file = "tea.ptx",
    .create = tea_create,
    .verify = tea_verify,
    .destroy = tea_destroy,
};
