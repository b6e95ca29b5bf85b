/* The sink of a domain's address window (see window_sink.h). */
#include "window_sink.h"

#include <stdlib.h>

static size_t index_of(const kcuda_sink *s, CUdeviceptr p)
{
    return (size_t)((p - s->base) / s->granule);
}

/* Read-write access for the device to count granules of mappings from p: one call for the
 * run (the driver's range may span several mappings), else one per granule. */
static CUresult allow(const kcuda_sink *s, const CUmemAllocationProp *prop, CUdeviceptr p,
                      size_t count)
{
    CUmemAccessDesc access = {.location = prop->location,
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUresult r = cuMemSetAccess(p, count * s->granule, &access, 1);
    if (r == CUDA_SUCCESS || count == 1)
        return r;
    for (size_t k = 0; k < count; k++)
        if ((r = cuMemSetAccess(p + (CUdeviceptr)k * s->granule, s->granule, &access, 1)) !=
            CUDA_SUCCESS)
            return r;
    return CUDA_SUCCESS;
}

/* The sink at granules [first, first + count), then readable and writable by the device
 * with one access call for the whole run rather than one per granule (a tenant's reach of
 * tens of GiB has thousands of granules); on failure none of them. */
static CUresult map_run(kcuda_sink *s, const CUmemAllocationProp *prop, size_t first,
                        size_t count)
{
    CUdeviceptr p = s->base + (CUdeviceptr)first * s->granule;
    CUresult r = CUDA_SUCCESS;
    size_t i;
    for (i = 0; i < count && r == CUDA_SUCCESS; i++)
        r = cuMemMap(p + (CUdeviceptr)i * s->granule, s->granule, 0, s->h, 0);
    if (r == CUDA_SUCCESS)
        r = allow(s, prop, p, count);
    else
        i--;        /* the one that failed is not mapped */
    if (r != CUDA_SUCCESS) {
        for (size_t k = 0; k < i; k++)
            cuMemUnmap(p + (CUdeviceptr)k * s->granule, s->granule);
        return r;
    }
    for (i = 0; i < count; i++)
        s->mapped[first + i] = 1;
    return CUDA_SUCCESS;
}

/* The sink at every granule of [from, to) that has nothing mapped, a run at a time. */
static CUresult map_holes(kcuda_sink *s, const CUmemAllocationProp *prop, size_t from,
                          size_t to)
{
    CUresult r = CUDA_SUCCESS;
    for (size_t i = from; r == CUDA_SUCCESS && i < to;) {
        if (s->mapped[i]) {
            i++;
            continue;
        }
        size_t run = 1;
        while (i + run < to && !s->mapped[i + run])
            run++;
        r = map_run(s, prop, i, run);
        i += run;
    }
    return r;
}

static void unmap_granule(kcuda_sink *s, size_t i)
{
    cuMemUnmap(s->base + (CUdeviceptr)i * s->granule, s->granule);
    s->mapped[i] = 0;
}

CUresult kcuda_sink_init(kcuda_sink *s, const CUmemAllocationProp *prop, uint64_t granule,
                         CUdeviceptr base, uint64_t size)
{
    *s = (kcuda_sink){.base = base, .granule = granule, .n = (size_t)(size / granule)};
    s->mapped = calloc(s->n ? s->n : 1, 1);
    if (!s->mapped)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = cuMemCreate(&s->h, granule, prop, 0);
    if (r == CUDA_SUCCESS)
        r = map_run(s, prop, 0, 1);
    if (r != CUDA_SUCCESS) {
        kcuda_sink_free(s);
        return r;
    }
    __atomic_store_n(&s->reach, granule, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

void kcuda_sink_free(kcuda_sink *s)
{
    for (size_t i = 0; s->mapped && i < s->n; i++)
        if (s->mapped[i])
            unmap_granule(s, i);
    if (s->h)
        cuMemRelease(s->h);
    free(s->mapped);
    *s = (kcuda_sink){0};
}

void kcuda_sink_uncover(kcuda_sink *s, CUdeviceptr p, uint64_t span)
{
    for (size_t i = index_of(s, p); i < index_of(s, p + span) && i < s->n; i++)
        if (s->mapped[i])
            unmap_granule(s, i);
}

CUresult kcuda_sink_cover(kcuda_sink *s, const CUmemAllocationProp *prop, CUdeviceptr p,
                          uint64_t span)
{
    size_t end = index_of(s, s->base + s->reach), to = index_of(s, p + span);
    return map_holes(s, prop, index_of(s, p), to < end ? to : end);
}

/* v held to [lo, hi]. */
static size_t within(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static uint64_t pow2_at_least(uint64_t v)
{
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

CUresult kcuda_sink_grow(kcuda_sink *s, const CUmemAllocationProp *prop, CUdeviceptr end,
                         CUdeviceptr p, uint64_t span)
{
    uint64_t want = pow2_at_least(end - s->base);
    if (want <= s->reach)
        return CUDA_SUCCESS;
    size_t from = index_of(s, s->base + s->reach), to = index_of(s, s->base + want);
    to = to < s->n ? to : s->n;
    /* the new part but the allocation [p, p + span): before it, then after it */
    CUresult r = map_holes(s, prop, from, within(index_of(s, p), from, to));
    if (r == CUDA_SUCCESS)
        r = map_holes(s, prop, within(index_of(s, p + span), from, to), to);
    if (r != CUDA_SUCCESS) {
        for (size_t k = from; k < to; k++)
            if (s->mapped[k])
                unmap_granule(s, k);
        return r;
    }
    __atomic_store_n(&s->reach, want, __ATOMIC_RELEASE);   /* all below it mapped now */
    return CUDA_SUCCESS;
}

uint64_t kcuda_sink_reach(const kcuda_sink *s)
{
    return __atomic_load_n(&s->reach, __ATOMIC_ACQUIRE);
}
