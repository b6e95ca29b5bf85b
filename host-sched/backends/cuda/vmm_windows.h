/* Address windows of domains on the GPU (executor.h, "Domains"), with the CUDA virtual
 * memory management API: each domain's window is one reservation of window_bytes of
 * device addresses aligned to its size (cuMemAddressReserve), and each allocation of the
 * domain is physical memory (cuMemCreate) mapped into a free part of it (cuMemMap,
 * cuMemSetAccess), in multiples of the allocation granularity; the window's reach (the
 * power of two its fenced kernels' mask covers) has the domain's sink wherever it holds no
 * allocation (window_sink.h), so that no address a fenced kernel makes is unmapped. The
 * driver places module
 * variables outside the windows; module_reloc.c moves a domain's .global ones into its
 * window (kbackend_device_info.module_vars_relocated).
 * Thread-safe (its own lock): frees come from the caller and from the queue threads. */
#ifndef KERNELET_CUDA_VMM_WINDOWS_H
#define KERNELET_CUDA_VMM_WINDOWS_H

#include <cuda.h>
#include <stdint.h>

#include "kernelet/executor.h"

typedef struct kcuda_windows kcuda_windows;

/* Windows of window_bytes (kbackend_window_size_valid) on device dev. */
int kcuda_windows_new(CUdevice dev, uint64_t window_bytes, kcuda_windows **out,
                      kbackend_error *err);
/* Unmaps and releases everything; the context must be current. */
void kcuda_windows_free(kcuda_windows *w);
/* The window of domain (> 0), reserved on first use. */
int kcuda_windows_get(kcuda_windows *w, uint32_t domain, kbackend_window *out,
                      kbackend_error *err);
/* bytes of new device memory in domain's window (not cleared). With may_remap 0 (a kernel
 * of the domain may be running) it goes past the reach, so that no part of the reach is
 * unmapped for a moment while the sink makes way for it (such a kernel could hit the gap
 * and fault the shared context); where only a hole of the reach has room it maps nothing
 * and returns KCUDA_WINDOWS_ONLY_HOLES, for the caller to try again with may_remap 1 once
 * none of the domain's kernels runs. */
#define KCUDA_WINDOWS_ONLY_HOLES 1
int kcuda_windows_alloc(kcuda_windows *w, uint32_t domain, uint64_t bytes, int may_remap,
                        CUdeviceptr *out, kbackend_error *err);
/* The bytes an allocation of bytes maps (rounded up to the allocation granularity): all
 * of them are reachable by the domain's fenced kernels. */
uint64_t kcuda_windows_span(const kcuda_windows *w, uint64_t bytes);
/* Unmaps and releases the allocation at p: 1 when p was one of the windows', else 0. */
int kcuda_windows_release_ptr(kcuda_windows *w, CUdeviceptr p);
/* domain's window, when nothing is mapped in it any more, goes back to the driver. */
void kcuda_windows_release(kcuda_windows *w, uint32_t domain);

#endif
