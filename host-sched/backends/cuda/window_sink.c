/* The sink of a domain's address window (see window_sink.h). */
#include "window_sink.h"

#include <stdlib.h>

static size_t index_of(const kcuda_sink *s, CUdeviceptr p)
{
    return (size_t)((p - s->base) / s->granule);
}

/* The sink at granule i, readable and writable by the device. */
static CUresult map_granule(kcuda_sink *s, const CUmemAllocationProp *prop, size_t i)
{
    CUdeviceptr p = s->base + (CUdeviceptr)i * s->granule;
    CUmemAccessDesc access = {.location = prop->location,
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUresult r = cuMemMap(p, s->granule, 0, s->h, 0);
    if (r == CUDA_SUCCESS && (r = cuMemSetAccess(p, s->granule, &access, 1)) != CUDA_SUCCESS)
        cuMemUnmap(p, s->granule);
    if (r == CUDA_SUCCESS)
        s->mapped[i] = 1;
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
        r = map_granule(s, prop, 0);
    if (r != CUDA_SUCCESS) {
        kcuda_sink_free(s);
        return r;
    }
    s->reach = granule;
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
    CUresult r = CUDA_SUCCESS;
    size_t end = index_of(s, s->base + s->reach);
    for (size_t i = index_of(s, p); r == CUDA_SUCCESS && i < index_of(s, p + span) && i < end;
         i++)
        if (!s->mapped[i])
            r = map_granule(s, prop, i);
    return r;
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
    size_t skip_from = index_of(s, p), skip_to = index_of(s, p + span), i;
    CUresult r = CUDA_SUCCESS;
    for (i = from; r == CUDA_SUCCESS && i < to && i < s->n; i++)
        if (i < skip_from || i >= skip_to)
            r = map_granule(s, prop, i);
    if (r != CUDA_SUCCESS) {
        for (size_t k = from; k < i; k++)
            if (s->mapped[k])
                unmap_granule(s, k);
        return r;
    }
    s->reach = want;
    return CUDA_SUCCESS;
}
