/* Pointer-chasing workload (pc_chase). Buffers: 0 next[] (in), 1 end points (out).
 * Cost: create writes the 2^26-entry cycle (256 MiB, about 3 s of CPU here at default
 * size); verify needs no stored reference: each thread's end point has a closed form (see
 * pc.h), about 20 ns per thread (0.1 s for the default 4M threads). */
#include "wl_common.h"

#include "../reference/pc.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    pc_perm perm;
    uint32_t steps, n_threads;
} pc_priv;

extern const kw_kernel kw_pc;

static void pc_destroy(kw_instance *inst)
{
    if (inst)
        wl_release(inst);
}

static int pc_create(kw_instance *inst, kw_size size, uint64_t seed)
{
    int rc = wl_check_create(inst, size);
    if (rc)
        return rc;
    wl_begin(inst, &kw_pc);
    int small = size == KW_SIZE_SMALL;
    unsigned bits = small ? PC_SMALL_BITS : PC_DEFAULT_BITS;
    uint32_t threads = small ? PC_SMALL_THREADS : PC_DEFAULT_THREADS;
    pc_priv *p = (pc_priv *)calloc(1, sizeof *p);
    inst->priv = p;
    int next = wl_buffer(inst, ((size_t)1 << bits) * 4, 1, 0);
    int out = wl_buffer(inst, (size_t)threads * 4, 0, 1);
    if (!p || next < 0 || out < 0) {
        pc_destroy(inst);
        return KW_ENOMEM;
    }
    pc_perm_init(&p->perm, bits, seed);
    p->steps = small ? PC_SMALL_STEPS : PC_DEFAULT_STEPS;
    p->n_threads = threads;
    pc_generate((uint32_t *)wl_host(inst, (unsigned)next), &p->perm);
    wl_arg_buffer(inst, (unsigned)next);
    wl_arg_buffer(inst, (unsigned)out);
    wl_arg_u32(inst, p->perm.mask);
    wl_arg_u32(inst, p->steps);
    wl_arg_u32(inst, threads);
    wl_geometry(inst, threads / PC_BLOCK_THREADS, 1, 1, PC_BLOCK_THREADS, 1, 1);
    return KW_OK;
}

static int pc_verify(kw_instance *inst, char *why, size_t why_len)
{
    if (!inst || inst->kernel != &kw_pc || !inst->priv)
        return KW_EINVAL;
    const pc_priv *p = (const pc_priv *)inst->priv;
    const uint32_t *out = (const uint32_t *)wl_host(inst, 1);
    size_t bad = 0;
    char first[160] = "";
    for (uint32_t t = 0; t < p->n_threads; t++) {
        uint32_t want = pc_expected(&p->perm, t, p->steps);
        if (out[t] == want)
            continue;
        if (!bad)
            snprintf(first, sizeof first, "thread %u: got %u, want %u", t, out[t], want);
        bad++;
    }
    return bad ? wl_fail(why, why_len, "pc", bad, first) : KW_OK;
}

const kw_kernel kw_pc = {
    .name = "pc",
    .title = "Pointer Chasing",
    .entry = "pc_chase",
    .ptx_file = "pc.ptx",
    .create = pc_create,
    .verify = pc_verify,
    .destroy = pc_destroy,
};
