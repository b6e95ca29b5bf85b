/* Every benchmark kernel at the default size: the whole launch verifies against the CPU
 * reference; then random slicing plans (slices from one block to the whole grid) must give
 * outputs bit-identical to the whole launch, and verify too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_instance.h"

#define MAX_SLICES 8192

/* Copies of the copy-out buffers after the whole launch. */
static void **save_outputs(const bench_instance *b)
{
    void **ref = calloc(KW_MAX_BUFFERS, sizeof *ref);
    for (unsigned i = 0; ref && i < b->in.n_buffers; i++) {
        if (!b->in.buffers[i].copy_out)
            continue;
        ref[i] = malloc(b->in.buffers[i].size);
        if (ref[i])
            memcpy(ref[i], b->in.buffers[i].host, b->in.buffers[i].size);
    }
    return ref;
}

static bool same_outputs(const bench_instance *b, void **ref)
{
    for (unsigned i = 0; i < b->in.n_buffers; i++)
        if (b->in.buffers[i].copy_out &&
            (!ref[i] || memcmp(ref[i], b->in.buffers[i].host, b->in.buffers[i].size) != 0))
            return false;
    return true;
}

static void free_outputs(void **ref)
{
    for (unsigned i = 0; ref && i < KW_MAX_BUFFERS; i++)
        free(ref[i]);
    free(ref);
}

/* Plan p: 0 one slice of the whole grid; 1 slices of one block (at most MAX_SLICES); the
 * others random. */
static unsigned make_plan(unsigned p, uint64_t *rng, uint32_t total, uint32_t *sizes)
{
    if (p == 0)
        return plan_uniform(total, total, sizes, MAX_SLICES);
    if (p == 1)
        return plan_uniform(total, 1, sizes, MAX_SLICES);
    return plan_random(rng, total, sizes, MAX_SLICES);
}

static int check_one(const char *dir, const kw_kernel *k, uint64_t seed, unsigned plans,
                     uint32_t *sizes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, k->ptx_file);
    sliced_module sm;
    kernel_pair kp;
    bench_instance b;
    memset(&b, 0, sizeof b);
    memset(&kp, 0, sizeof kp);
    if (!sliced_module_load(path, &sm))
        return 1;
    int bad = 1;
    void **ref = NULL;
    char why[256] = "";
    if (!kernel_pair_get(&sm, k->entry, &kp) ||
        !bench_instance_setup(&b, k, &kp, KW_SIZE_DEFAULT, seed) || !bench_instance_reset(&b) ||
        !launch_whole(&kp, b.params, &b.shape, NULL) ||
        cu_failed(cuCtxSynchronize(), "whole launch", k->name) || !bench_instance_copy_out(&b))
        goto out;
    if (k->verify(&b.in, why, sizeof why) != KW_OK) {
        printf("WHOLE name=%s verified=no why=%s\n", k->name, why);
        goto out;
    }
    ref = save_outputs(&b);
    uint64_t rng = seed * 7919 + 17;
    uint32_t total = shape_blocks(&b.shape);
    bad = 0;
    for (unsigned p = 0; p < plans && !bad; p++) {
        unsigned n = make_plan(p, &rng, total, sizes);
        if (!bench_instance_reset(&b) || !launch_slices(&kp, b.params, &b.shape, sizes, n, NULL) ||
            cu_failed(cuCtxSynchronize(), "sliced launches", k->name) ||
            !bench_instance_copy_out(&b)) {
            bad = 1;
            break;
        }
        bool same = same_outputs(&b, ref);
        bool verified = k->verify(&b.in, why, sizeof why) == KW_OK;
        printf("SLICED name=%s plan=%u slices=%u blocks=%u identical=%s verified=%s%s%s\n",
               k->name, p, n, total, same ? "yes" : "no", verified ? "yes" : "no",
               verified ? "" : " why=", verified ? "" : why);
        bad = !same || !verified;
    }
out:
    free_outputs(ref);
    bench_instance_free(&b);
    kernel_pair_clear(&kp);
    sliced_module_unload(&sm);
    if (bad)
        printf("FAIL bench %s\n", k->name);
    return bad;
}

int check_bench(const char *bench_dir, uint64_t seed, unsigned plans)
{
    size_t n;
    const kw_kernel *const *all = kw_kernels(&n);
    uint32_t *sizes = malloc(MAX_SLICES * sizeof *sizes);
    if (!sizes)
        return 1;
    int failures = 0;
    for (size_t i = 0; i < n; i++)
        failures += check_one(bench_dir, all[i], seed + i, plans, sizes);
    free(sizes);
    return failures;
}
