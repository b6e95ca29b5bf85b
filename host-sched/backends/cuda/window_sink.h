/* The sink of a domain's address window: one granule of physical memory mapped over every
 * part of the window's reach that holds no allocation (see vmm_windows.h). A fenced kernel
 * confines its addresses to [base, base + reach), so an address it makes up lands in the
 * tenant's own memory or in its sink, never in an unmapped hole: on the GPU that would be
 * an illegal address, which ends the context that every tenant shares. The sink is the
 * domain's own (what one tenant writes there, no other tenant can read).
 * Not thread-safe but for kcuda_sink_reach: vmm_windows.c lets one thread at a time change
 * a window's mappings. */
#ifndef KERNELET_CUDA_WINDOW_SINK_H
#define KERNELET_CUDA_WINDOW_SINK_H

#include <cuda.h>
#include <stdint.h>

typedef struct kcuda_sink {
    CUmemGenericAllocationHandle h;     /* one granule; 0: none yet */
    CUdeviceptr base;                   /* of the window */
    uint64_t granule;
    uint64_t reach;                     /* [base, base + reach) is mapped, all of it */
    uint8_t *mapped;                    /* per granule of the window: the sink is there */
    size_t n;                           /* granules in the window */
} kcuda_sink;

/* The sink of the window [base, base + size): one granule made and mapped at its start
 * (reach: one granule), so that a domain with no allocation yet has a reach too. */
CUresult kcuda_sink_init(kcuda_sink *s, const CUmemAllocationProp *prop, uint64_t granule,
                         CUdeviceptr base, uint64_t size);
/* Unmaps the sink everywhere and releases it. */
void kcuda_sink_free(kcuda_sink *s);
/* Takes the sink away from [p, p + span) (granule-aligned), where an allocation goes. */
void kcuda_sink_uncover(kcuda_sink *s, CUdeviceptr p, uint64_t span);
/* Maps the sink over [p, p + span) inside the reach, where an allocation was. */
CUresult kcuda_sink_cover(kcuda_sink *s, const CUmemAllocationProp *prop, CUdeviceptr p,
                          uint64_t span);
/* The reach, read by any thread (the lock-free reader of vmm_windows.c): only ever grows,
 * and a new value is published once everything below it is mapped. */
uint64_t kcuda_sink_reach(const kcuda_sink *s);
/* Extends the reach to the power of two that holds end (an allocation's end), the sink
 * over all of the new part but [p, p + span) (that allocation); on failure nothing changes. */
CUresult kcuda_sink_grow(kcuda_sink *s, const CUmemAllocationProp *prop, CUdeviceptr end,
                         CUdeviceptr p, uint64_t span);

#endif
