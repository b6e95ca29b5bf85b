/* The sim's kernel shapes (variants) and its cache of model rates per resident mix. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sim_internal.h"

static int model_fail(ksim *s, kbackend_error *err, int rc)
{
    return kbackend_fail(err, rc == KMODEL_ENOFIT ? KBACKEND_EINVAL : KBACKEND_EDEVICE, "model: %s",
                      kmodel_ctx_error(s->model));
}

/* Fills v from the kernel's truth and the launch shape; 0 or a KBACKEND code. */
static int variant_fill(ksim *s, sim_variant *v, unsigned kernel, unsigned wpb,
                        unsigned smem_total, kbackend_error *err)
{
    const kbackend_profile *p = &s->kernels[kernel].p;
    v->kernel = kernel;
    v->k = (kmodel_kernel){.warps_per_block = wpb, .regs_per_thread = p->regs_per_thread,
                           .smem_per_block = smem_total, .rm = p->rm,
                           .uncoalesced = p->uncoalesced, .insts_per_warp = p->insts_per_warp};
    v->block_insts = p->insts_per_warp * wpb;
    int rc = kmodel_max_blocks(s->model, &v->k, &v->max_blocks);
    if (rc)
        return model_fail(s, err, rc);
    rc = kmodel_ipc_single(s->model, &v->k, v->max_blocks, &v->alone_ipc);
    return rc ? model_fail(s, err, rc) : 0;
}

int sim_variant_of(ksim *s, unsigned kernel, const unsigned block[3], unsigned smem,
                   unsigned *out, kbackend_error *err)
{
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    unsigned wpb = (unsigned)((threads + 31) / 32);
    uint64_t smem_total = (uint64_t)s->kernels[kernel].p.smem_per_block + smem;
    if (smem_total > UINT32_MAX)
        return kbackend_fail(err, KBACKEND_EINVAL, "shared memory too large");
    for (unsigned i = 0; i < s->n_variants; i++) {
        const sim_variant *v = &s->variants[i];
        if (v->kernel == kernel && v->k.warps_per_block == wpb &&
            v->k.smem_per_block == smem_total) {
            *out = i;
            return 0;
        }
    }
    if (s->n_variants >= 0xfffe)
        return kbackend_fail(err, KBACKEND_ENOMEM, "too many kernel shapes");
    if (grow_array(&s->variants, &s->cap_variants, s->n_variants + 1, sizeof(*s->variants)))
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
    int rc = variant_fill(s, &s->variants[s->n_variants], kernel, wpb, (unsigned)smem_total,
                          err);
    if (rc)
        return rc;
    *out = s->n_variants++;
    return 0;
}

void sim_rates_reset(ksim *s)
{
    for (size_t i = 0; i < s->cap_rates; i++)
        s->rates[i].used = 0;
    s->n_rates = 0;
}

/* Recomputes the variants of a kernel whose truth changed. */
int sim_kernel_refresh(ksim *s, unsigned kernel, kbackend_error *err)
{
    for (unsigned i = 0; i < s->n_variants; i++) {
        sim_variant *v = &s->variants[i];
        if (v->kernel != kernel)
            continue;
        int rc = variant_fill(s, v, kernel, v->k.warps_per_block, v->k.smem_per_block, err);
        if (rc)
            return rc;
    }
    sim_rates_reset(s);
    return 0;
}

int sim_fits(ksim *s, unsigned n, const unsigned variants[], const unsigned counts[])
{
    kmodel_kernel ks[KMODEL_MAX_KERNELS];
    for (unsigned i = 0; i < n; i++)
        ks[i] = s->variants[variants[i]].k;
    return kmodel_fits(s->model, n, ks, counts) == 0;
}

static uint64_t mix_hash(const uint64_t key[2])
{
    uint64_t h = key[0] * 0x9e3779b97f4a7c15ull ^ key[1] * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

static int rates_grow(ksim *s)
{
    size_t cap = s->cap_rates ? s->cap_rates * 2 : 256;
    rate_entry *t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < s->cap_rates; i++) {
        if (!s->rates[i].used)
            continue;
        size_t j = (size_t)mix_hash(s->rates[i].key) & (cap - 1);
        while (t[j].used)
            j = (j + 1) & (cap - 1);
        t[j] = s->rates[i];
    }
    free(s->rates);
    s->rates = t;
    s->cap_rates = cap;
    return 0;
}

/* The cache slot of key: the entry holding it or an empty one. */
static rate_entry *rates_slot(ksim *s, const uint64_t key[2])
{
    size_t mask = s->cap_rates - 1, j = (size_t)mix_hash(key) & mask;
    while (s->rates[j].used && (s->rates[j].key[0] != key[0] || s->rates[j].key[1] != key[1]))
        j = (j + 1) & mask;
    return &s->rates[j];
}

/* Orders the mix canonically (by variant, then count) so that permutations share a slot. */
static void canonical_order(unsigned n, const unsigned v[], const unsigned c[], unsigned ord[])
{
    for (unsigned i = 0; i < n; i++)
        ord[i] = i;
    for (unsigned i = 1; i < n; i++)
        for (unsigned j = i; j > 0; j--) {
            unsigned a = ord[j - 1], b = ord[j];
            if (v[a] < v[b] || (v[a] == v[b] && c[a] <= c[b]))
                break;
            ord[j - 1] = b;
            ord[j] = a;
        }
}

int sim_rates(ksim *s, unsigned n, const unsigned variants[], const unsigned counts[],
              double ipc[], kbackend_error *err)
{
    unsigned ord[KMODEL_MAX_KERNELS];
    canonical_order(n, variants, counts, ord);
    uint64_t key[2] = {0, (uint64_t)n << 32};
    for (unsigned i = 0; i < n; i++) {
        key[0] |= (uint64_t)(variants[ord[i]] + 1) << (16 * i);
        key[1] |= (uint64_t)(counts[ord[i]] & 0xff) << (8 * i);
    }
    if ((s->n_rates + 1) * 2 > s->cap_rates && rates_grow(s))
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
    rate_entry *e = rates_slot(s, key);
    if (!e->used) {
        kmodel_kernel ks[KMODEL_MAX_KERNELS];
        unsigned cs[KMODEL_MAX_KERNELS];
        for (unsigned i = 0; i < n; i++) {
            ks[i] = s->variants[variants[ord[i]]].k;
            cs[i] = counts[ord[i]];
        }
        kmodel_mix_result r;
        int rc = kmodel_mix(s->model, n, ks, cs, &r);
        if (rc)
            return model_fail(s, err, rc);
        s->stats.model_evals++;
        e->key[0] = key[0];
        e->key[1] = key[1];
        memcpy(e->ipc, r.ipc, sizeof(e->ipc));
        e->used = 1;
        s->n_rates++;
    }
    for (unsigned i = 0; i < n; i++)
        ipc[ord[i]] = e->ipc[i];
    return 0;
}
