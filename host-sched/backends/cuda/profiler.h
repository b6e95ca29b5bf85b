/* Hardware-counter profiler of kernel launches (host-sched/backends/cuda/, library
 * kernelet-profiler).
 *
 * kerneletd characterises each kernel the first time it sees it: it runs one slice of it
 * under CUPTI's range profiler (kernel replay: CUPTI saves and restores device memory
 * between the passes it needs, so the slice's side effects happen once) and turns the
 * counters into the paper's PUR, MUR and Rm (kprof_characterise). Profiling needs access to
 * the GPU's performance counters (root, or the driver's RmProfilingAdminOnly=0).
 *
 * A kprof belongs to one CUDA context and is not shared between threads. Functions return
 * 0 or a negative KPROF_E* code with a message in msg (which may be NULL); nothing prints.
 */
#ifndef KERNELET_HOST_PROFILER_H
#define KERNELET_HOST_PROFILER_H

#include <stddef.h>

#include <cuda.h>

#include "characterise.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kprof kprof;

/* Sets up counter collection on ctx (device ordinal `device`). */
int kprof_open(CUcontext ctx, int device, kprof **out, char *msg, size_t msglen);

/* Launches f once on the context's NULL stream under the profiler, waits for it and fills
 * *out. params and extra as for cuLaunchKernel (one of them, or neither for a kernel
 * without parameters). */
int kprof_measure(kprof *p, CUfunction f, const unsigned grid[3], const unsigned block[3],
                  unsigned smem_bytes, void **params, void **extra, kprof_counters *out,
                  char *msg, size_t msglen);

/* Which metric measures each quantity on this chip, and which quantities are missing
 * (profiler_metrics.h), as text in buf; returns the length needed, as snprintf does. */
size_t kprof_describe(const kprof *p, char *buf, size_t len);

/* Calls fn with every base metric name the chip offers (for finding names on a new GPU). */
int kprof_each_base_metric(kprof *p, void (*fn)(const char *name, void *ctx), void *ctx,
                           char *msg, size_t msglen);

/* How many passes (kernel replays) a measurement takes; 0 when CUPTI did not say. */
size_t kprof_passes(const kprof *p);

void kprof_close(kprof *p);

#ifdef __cplusplus
}
#endif

#endif
