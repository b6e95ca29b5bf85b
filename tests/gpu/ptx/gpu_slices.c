/* See gpu_slices.h. */
#include "gpu_slices.h"
#include "kw_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARAM_BLOCK 32768

bool cu_failed(CUresult r, const char *what, const char *who)
{
    if (r == CUDA_SUCCESS)
        return false;
    const char *name = "?";
    cuGetErrorName(r, &name);
    fprintf(stderr, "%s: %s: %s (%d)\n", who, what, name, (int)r);
    return true;
}

bool sliced_module_load(const char *path, sliced_module *sm)
{
    memset(sm, 0, sizeof *sm);
    size_t len;
    char *text = kw_read_file(path, &len);
    if (!text) {
        fprintf(stderr, "%s: cannot read\n", path);
        return false;
    }
    kptx_error err = {0};
    char *sliced = NULL;
    size_t slen;
    bool ok = kptx_parse(text, len, &sm->ptx, &err) == 0 &&
              kptx_slice_module(sm->ptx, NULL, &err) == 0 &&
              kptx_print(sm->ptx, &sliced, &slen, &err) == 0;
    if (!ok)
        fprintf(stderr, "%s: %u:%u: %s\n", path, err.line, err.column, err.message);
    else
        ok = !cu_failed(cuModuleLoadData(&sm->mod, sliced), "cuModuleLoadData", path);
    free(sliced);
    free(text);
    if (!ok)
        sliced_module_unload(sm);
    return ok;
}

void sliced_module_unload(sliced_module *sm)
{
    if (sm->mod)
        cuModuleUnload(sm->mod);
    kptx_module_free(sm->ptx);
    memset(sm, 0, sizeof *sm);
}

bool kernel_pair_get(const sliced_module *sm, const char *name, kernel_pair *k)
{
    memset(k, 0, sizeof *k);
    k->name = name;
    char sname[1024];
    kptx_error err = {0};
    if (kptx_slice_name(name, sname, sizeof sname) ||
        kptx_kernel_info_get(sm->ptx, name, &k->info, &err) ||
        kptx_kernel_info_get(sm->ptx, sname, &k->sinfo, &err)) {
        fprintf(stderr, "%s: no sliced variant: %s\n", name, err.message);
        return false;
    }
    if (!k->info.sliceable) {
        fprintf(stderr, "%s: not sliceable: %s\n", name, k->info.why_not);
        return false;
    }
    return !cu_failed(cuModuleGetFunction(&k->whole, sm->mod, name), "cuModuleGetFunction", name) &&
           !cu_failed(cuModuleGetFunction(&k->sliced, sm->mod, sname), "cuModuleGetFunction", sname);
}

void kernel_pair_clear(kernel_pair *k)
{
    kptx_kernel_info_clear(&k->info);
    kptx_kernel_info_clear(&k->sinfo);
}

uint32_t shape_blocks(const launch_shape *s)
{
    return s->grid[0] * s->grid[1] * s->grid[2];
}

static bool launch(CUfunction fn, const char *who, void *params, size_t size, unsigned gx,
                   unsigned gy, unsigned gz, const launch_shape *s, CUstream stream)
{
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    /* a kernel without parameters takes no parameter buffer */
    return !cu_failed(cuLaunchKernel(fn, gx, gy, gz, s->block[0], s->block[1], s->block[2],
                                     s->shared, stream, NULL, size ? extra : NULL),
                      "cuLaunchKernel", who);
}

bool launch_whole(const kernel_pair *k, const uint8_t *params, const launch_shape *s,
                  CUstream stream)
{
    uint8_t buf[MAX_PARAM_BLOCK] = {0};
    if (k->info.param_bytes > sizeof buf)
        return false;
    memcpy(buf, params, k->info.param_bytes);
    return launch(k->whole, k->name, buf, k->info.param_bytes, s->grid[0], s->grid[1],
                  s->grid[2], s, stream);
}

bool launch_slices(const kernel_pair *k, const uint8_t *params, const launch_shape *s,
                   const uint32_t *sizes, unsigned n, CUstream stream)
{
    uint8_t buf[MAX_PARAM_BLOCK] = {0};
    if (k->sinfo.param_bytes > sizeof buf)
        return false;
    memcpy(buf, params, k->info.param_bytes);
    const kptx_param_info *extra = &k->sinfo.params[k->sinfo.n_params - KPTX_SLICE_EXTRA_PARAMS];
    uint32_t first = 0;
    for (unsigned i = 0; i < n; i++) {
        uint32_t vals[4] = {first, s->grid[0], s->grid[1], s->grid[2]};
        for (int e = 0; e < 4; e++)
            memcpy(buf + extra[e].offset, &vals[e], 4);
        if (!launch(k->sliced, k->name, buf, k->sinfo.param_bytes, sizes[i], 1, 1, s, stream))
            return false;
        first += sizes[i];
    }
    return true;
}

uint64_t rng_next(uint64_t *state)
{
    /* splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

unsigned plan_random(uint64_t *rng, uint32_t total, uint32_t *sizes, unsigned max)
{
    unsigned n = 0;
    for (uint32_t first = 0; first < total; n++) {
        uint32_t left = total - first;
        double u = (double)(rng_next(rng) >> 11) / 9007199254740992.0;
        uint32_t size = (uint32_t)exp(u * log((double)left + 1.0));
        if (size < 1)
            size = 1;
        if (size > left || n + 1 == max)
            size = left;
        sizes[n] = size;
        first += size;
    }
    return n;
}

unsigned plan_uniform(uint32_t total, uint32_t size, uint32_t *sizes, unsigned max)
{
    unsigned n = 0;
    for (uint32_t first = 0; first < total && n < max; n++) {
        uint32_t left = total - first;
        sizes[n] = size < left && n + 1 < max ? size : left;
        first += sizes[n];
    }
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
