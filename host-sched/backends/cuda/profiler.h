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
typedef struct kprof_setup kprof_setup;

/* Sets up counter collection on ctx (device ordinal `device`). With keep, the metrics'
 * configuration (which needs no context) is made once into *keep, for the caller to pass
 * to later opens of the same device and to free with kprof_setup_free; NULL: made and
 * freed with this profiler. */
int kprof_open(CUcontext ctx, int device, kprof_setup **keep, kprof **out, char *msg,
               size_t msglen);

/* Frees a configuration kept by kprof_open (NULL is fine). */
void kprof_setup_free(kprof_setup *s);

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

/* Milliseconds kprof_open spent enabling the range profiler on the context, reading the
 * counters' availability, building the metrics' configuration (these two 0 with a kept
 * one) and sizing the counter data (all 0 for NULL). */
#define KPROF_OPEN_STAGES 4
void kprof_open_stages(const kprof *p, double ms[KPROF_OPEN_STAGES]);

/* How many passes (kernel replays) a measurement takes; 0 when CUPTI did not say. */
size_t kprof_passes(const kprof *p);

void kprof_close(kprof *p);

#ifdef __cplusplus
}
#endif

#endif
