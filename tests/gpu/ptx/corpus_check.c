/* The corpus kernels through a generic runner: buffers and by-value structures filled with
 * seeded random bytes, parameters placed at the offsets the PTX gives them, one whole
 * launch, then random slicing plans; after every run all buffers and the listed module
 * globals must be bit-identical to the whole launch's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_table.h"
#include "gpu_slices.h"

#define MAX_ITEMS 16
#define MAX_SLICES 4096

typedef struct region {
    CUdeviceptr dev;
    bool owned;         /* a buffer allocated here (not a module global) */
    size_t size;
    uint8_t *init;      /* contents before each run */
    uint8_t *after;     /* contents after the whole launch */
    uint8_t *now;       /* contents after the run being checked */
} region;

typedef struct corpus_run {
    const corpus_case *c;
    kernel_pair kp;
    launch_shape shape;
    uint8_t *params;
    region r[MAX_ITEMS];
    unsigned n_regions;
} corpus_run;

static void fill_random(uint64_t *rng, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(rng_next(rng) >> 56);
}

static region *add_region(corpus_run *run, CUdeviceptr dev, size_t size, uint64_t *rng,
                          bool buffer)
{
    region *g = &run->r[run->n_regions++];
    g->dev = dev;
    g->owned = buffer;
    g->size = size;
    g->init = calloc(1, size);
    g->after = malloc(size);
    g->now = malloc(size);
    if (!g->init || !g->after || !g->now)
        return NULL;
    if (buffer)
        fill_random(rng, g->init, size);
    return g;
}

/* One parameter item of the table at its PTX offset. */
static bool place_item(corpus_run *run, const char *item, const kptx_param_info *p, uint64_t *rng)
{
    uint8_t *dst = run->params + p->offset;
    if (strncmp(item, "buf:", 4) == 0) {
        size_t size = strtoull(item + 4, NULL, 10);
        CUdeviceptr d;
        if (p->size != 8 || run->n_regions == MAX_ITEMS ||
            cu_failed(cuMemAlloc(&d, size), "cuMemAlloc", run->c->kernel))
            return false;
        if (!add_region(run, d, size, rng, true))
            return false;
        uint64_t v = d;
        memcpy(dst, &v, 8);
    } else if (strncmp(item, "u32:", 4) == 0 && p->size == 4) {
        uint32_t v = (uint32_t)strtoul(item + 4, NULL, 0);
        memcpy(dst, &v, 4);
    } else if (strncmp(item, "f32:", 4) == 0 && p->size == 4) {
        float v = strtof(item + 4, NULL);
        memcpy(dst, &v, 4);
    } else if (strncmp(item, "f64:", 4) == 0 && p->size == 8) {
        double v = strtod(item + 4, NULL);
        memcpy(dst, &v, 8);
    } else if (strcmp(item, "raw") == 0) {
        fill_random(rng, dst, p->size);
    } else {
        fprintf(stderr, "%s: item '%s' does not fit parameter %s (%u bytes)\n", run->c->kernel,
                item, p->name, p->size);
        return false;
    }
    return true;
}

static bool setup(corpus_run *run, const sliced_module *sm, uint64_t seed)
{
    const corpus_case *c = run->c;
    uint64_t rng = seed;
    if (!kernel_pair_get(sm, c->kernel, &run->kp))
        return false;
    run->params = calloc(1, run->kp.info.param_bytes + 1);
    char *items = strdup(c->params);
    if (!run->params || !items)
        return false;
    unsigned n = 0;
    bool ok = true;
    for (char *save = NULL, *it = strtok_r(items, ",", &save); ok && it;
         it = strtok_r(NULL, ",", &save), n++)
        ok = n < run->kp.info.n_params && n < MAX_ITEMS &&
             place_item(run, it, &run->kp.info.params[n], &rng);
    free(items);
    if (ok && n != run->kp.info.n_params) {
        fprintf(stderr, "%s: %u items for %u parameters\n", c->kernel, n, run->kp.info.n_params);
        ok = false;
    }
    char *globals = c->globals ? strdup(c->globals) : NULL;
    for (char *save = NULL, *g = globals ? strtok_r(globals, ",", &save) : NULL; ok && g;
         g = strtok_r(NULL, ",", &save)) {
        CUdeviceptr d;
        size_t size;
        ok = run->n_regions < MAX_ITEMS &&
             !cu_failed(cuModuleGetGlobal(&d, &size, sm->mod, g), "cuModuleGetGlobal", g) &&
             add_region(run, d, size, &rng, false);
    }
    free(globals);
    memcpy(run->shape.grid, c->grid, sizeof run->shape.grid);
    memcpy(run->shape.block, c->block, sizeof run->shape.block);
    run->shape.shared = c->shared;
    return ok;
}

static bool reset(corpus_run *run)
{
    for (unsigned i = 0; i < run->n_regions; i++)
        if (cu_failed(cuMemcpyHtoD(run->r[i].dev, run->r[i].init, run->r[i].size), "reset",
                      run->c->kernel))
            return false;
    return true;
}

static bool fetch(corpus_run *run, bool whole)
{
    if (cu_failed(cuCtxSynchronize(), "kernel", run->c->kernel))
        return false;
    for (unsigned i = 0; i < run->n_regions; i++) {
        region *g = &run->r[i];
        if (cu_failed(cuMemcpyDtoH(whole ? g->after : g->now, g->dev, g->size), "copy out",
                      run->c->kernel))
            return false;
    }
    return true;
}

static bool identical(const corpus_run *run)
{
    for (unsigned i = 0; i < run->n_regions; i++)
        if (memcmp(run->r[i].after, run->r[i].now, run->r[i].size) != 0)
            return false;
    return true;
}

static void teardown(corpus_run *run)
{
    for (unsigned i = 0; i < run->n_regions; i++) {
        if (run->r[i].owned)
            cuMemFree(run->r[i].dev);
        free(run->r[i].init);
        free(run->r[i].after);
        free(run->r[i].now);
    }
    free(run->params);
    kernel_pair_clear(&run->kp);
}

static int check_case(const char *dir, const corpus_case *c, uint64_t seed, unsigned plans,
                      uint32_t *sizes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, c->file);
    sliced_module sm;
    if (!sliced_module_load(path, &sm))
        return 1;
    corpus_run run;
    memset(&run, 0, sizeof run);
    run.c = c;
    int bad = 1;
    if (setup(&run, &sm, seed) && reset(&run) && launch_whole(&run.kp, run.params, &run.shape, NULL) &&
        fetch(&run, true)) {
        uint64_t rng = seed ^ 0x5eed;
        uint32_t total = shape_blocks(&run.shape);
        bad = 0;
        for (unsigned p = 0; p < plans && !bad; p++) {
            unsigned n = p == 0 ? plan_uniform(total, 1, sizes, MAX_SLICES)
                                : plan_random(&rng, total, sizes, MAX_SLICES);
            bad = !reset(&run) || !launch_slices(&run.kp, run.params, &run.shape, sizes, n, NULL) ||
                  !fetch(&run, false);
            bool same = !bad && identical(&run);
            printf("CORPUS file=%s kernel=%s plan=%u slices=%u blocks=%u identical=%s\n", c->file,
                   c->kernel, p, n, total, same ? "yes" : "no");
            bad |= !same;
        }
    }
    teardown(&run);
    sliced_module_unload(&sm);
    if (bad)
        printf("FAIL corpus %s %s\n", c->file, c->kernel);
    return bad;
}

int check_corpus(const char *corpus_dir, uint64_t seed, unsigned plans)
{
    uint32_t *sizes = malloc(MAX_SLICES * sizeof *sizes);
    if (!sizes)
        return 1;
    int failures = 0;
    for (size_t i = 0; i < n_corpus_cases; i++)
        failures += check_case(corpus_dir, &corpus_cases[i], seed + 1000 + i, plans, sizes);
    free(sizes);
    return failures;
}
