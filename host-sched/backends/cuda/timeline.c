/* The GPU timeline, for performance work: with KERNELET_CUDA_TIMELINE=FILE in the daemon's
 * environment, every launch that completes appends one line to FILE:
 *     lane  function  blocks  start_ns  end_ns
 * with start and end on the GPU's clock (events), relative to an event recorded when the
 * backend started. Shows what no counter does: how long the GPU idled between slices and
 * how long the two kernels of a pair really overlapped (tests/gpu/tenants/timeline.py). */
#include <stdio.h>
#include <stdlib.h>

#include "backend_internal.h"

void kcuda_timeline_open(kcuda *kc)
{
    const char *path = getenv("KERNELET_CUDA_TIMELINE");
    if (!path || !*path || !kc->alloc_stream)
        return;
    if (cuEventCreate(&kc->timeline_base, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return;
    if (cuEventRecord(kc->timeline_base, kc->alloc_stream) != CUDA_SUCCESS ||
        cuEventSynchronize(kc->timeline_base) != CUDA_SUCCESS ||
        !(kc->timeline = fopen(path, "a")) || setvbuf(kc->timeline, NULL, _IOLBF, 0)) {
        if (kc->timeline)
            fclose(kc->timeline);
        kc->timeline = NULL;
        cuEventDestroy(kc->timeline_base);
        kc->timeline_base = NULL;
    }
}

/* Called by a completion thread once job's end event has completed. */
void kcuda_timeline_note(kcuda *kc, const kcuda_job *job)
{
    if (!kc->timeline || job->kind != JOB_LAUNCH || !job->issued || !job->start)
        return;     /* no timing events (kcuda_config.timed_events) */
    float s, e;
    if (cuEventElapsedTime(&s, kc->timeline_base, job->start) != CUDA_SUCCESS ||
        cuEventElapsedTime(&e, kc->timeline_base, job->end) != CUDA_SUCCESS)
        return;
    const unsigned *g = job->shape.grid;
    fprintf(kc->timeline, "%u %s %llu %.0f %.0f\n", job->queue, job->fn->name,
            (unsigned long long)g[0] * g[1] * g[2], (double)s * 1e6, (double)e * 1e6);
}

void kcuda_timeline_close(kcuda *kc)
{
    if (kc->timeline)
        fclose(kc->timeline);
    if (kc->timeline_base)
        cuEventDestroy(kc->timeline_base);
    kc->timeline = NULL;
    kc->timeline_base = NULL;
}
