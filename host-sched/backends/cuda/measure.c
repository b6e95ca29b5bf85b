/* Launches and timings outside the lanes, with the device to themselves: the trial op and
 * kcuda_time_launch run kernels directly on two streams of their own and time them with
 * events. Their blocks run again with the caller's real parameters. */
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"
#include "sizing.h"

/* A fault during a trial loses the context like any other. */
int kcuda_measure_fail(kcuda *kc, kbackend_error *err, CUresult r, const char *what)
{
    int sticky = kcuda_error_is_sticky(r);
    if (sticky)
        kcuda_mark_broken(kc, r, what);
    return kcuda_cu_fail_as(err, sticky ? KBACKEND_ELOST : kcuda_error_code(r), r, what);
}

/* Launches blocks [first, first + count) of s (its sliced variant), or the whole grid when
 * whole is set, on stream st. */
int kcuda_measure_launch(kcuda *kc, const kbackend_slice *s, const struct kbackend_function *fn,
                         int whole, uint64_t first, uint64_t count, CUstream st,
                         kbackend_error *err)
{
    kbackend_slice sl = *s;
    sl.fn = fn;
    sl.sliced = !whole;
    sl.first = whole ? 0 : first;
    sl.count = whole ? kbackend_grid_blocks(s->grid) : count;
    sl.lane = 0;
    kcuda_job job = {0};
    int rc = kcuda_prepare_launch(kc, &sl, &job, err);
    if (rc)
        return rc;
    size_t size = job.params_size;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, job.params, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &size, CU_LAUNCH_PARAM_END};
    const unsigned *g = job.shape.grid, *b = job.shape.block;
    pthread_mutex_lock(&kc->lock);
    CUresult r = kcuda_allow_smem_locked((struct kbackend_function *)fn, job.smem);
    pthread_mutex_unlock(&kc->lock);
    if (r == CUDA_SUCCESS)
        r = cuLaunchKernel(fn->f, g[0], g[1], g[2], b[0], b[1], b[2], job.smem, st, NULL,
                           size ? extra : NULL);
    free(job.params);     /* the driver copied the parameters during the call */
    return r == CUDA_SUCCESS ? 0 : kcuda_measure_fail(kc, err, r, fn->name);
}

int kcuda_measure_events(kcuda *kc, size_t n, kbackend_error *err)
{
    if (kc->n_trial_events >= n)
        return 0;
    CUevent *grown = realloc(kc->trial_events, n * sizeof(*grown));
    if (!grown)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    kc->trial_events = grown;
    for (; kc->n_trial_events < n; kc->n_trial_events++) {
        CUresult r = cuEventCreate(&grown[kc->n_trial_events], CU_EVENT_DEFAULT);
        if (r != CUDA_SUCCESS)
            return kcuda_cu_fail(err, r, "cuEventCreate");
    }
    return 0;
}

int kcuda_measure_streams(kcuda *kc, kbackend_error *err)
{
    for (int i = 0; i < 3; i++) {
        CUresult r = kc->trial_stream[i] ? CUDA_SUCCESS
                                         : cuStreamCreate(&kc->trial_stream[i],
                                                          CU_STREAM_NON_BLOCKING);
        if (r != CUDA_SUCCESS)
            return kcuda_cu_fail(err, r, "cuStreamCreate");
    }
    return 0;
}

/* Stream memory operations may be off (an old driver, a virtualised GPU): a refusal is
 * remembered and the trial runs ungated, submitting as it goes. */
int kcuda_gate_close(kcuda *kc)
{
    if (kc->trial_gate_failed)
        return 0;
    CUresult r = kc->trial_gate ? CUDA_SUCCESS : cuMemAlloc(&kc->trial_gate, sizeof(uint32_t));
    if (r == CUDA_SUCCESS)
        r = cuStreamWriteValue32(kc->trial_stream[2], kc->trial_gate, 0, 0);
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(kc->trial_stream[2]);
    for (int i = 0; i < 2 && r == CUDA_SUCCESS; i++)
        r = cuStreamWaitValue32(kc->trial_stream[i], kc->trial_gate, 1, CU_STREAM_WAIT_VALUE_GEQ);
    if (r != CUDA_SUCCESS) {
        kc->trial_gate_failed = 1;
        kcuda_gate_open(kc);   /* a stream that did start waiting must not wait forever */
        return 0;
    }
    return 1;
}

void kcuda_gate_open(kcuda *kc)
{
    if (kc->trial_gate)
        cuStreamWriteValue32(kc->trial_stream[2], kc->trial_gate, 1, 0);
}

double kcuda_elapsed_ns(CUevent a, CUevent b)
{
    float ms = 0;
    return cuEventElapsedTime(&ms, a, b) == CUDA_SUCCESS ? (double)ms * 1e6 : -1;
}

/* One timed run of s: whole, or as consecutive slices of `slice` blocks. */
static int timed_run(kcuda *kc, const kbackend_slice *s, const struct kbackend_function *sliced,
                     uint64_t slice, double *ns, kbackend_error *err)
{
    CUstream st = kc->trial_stream[0];
    CUevent *ev = kc->trial_events;
    uint64_t total = kbackend_grid_blocks(s->grid);
    CUresult r = cuEventRecord(ev[0], st);
    int rc = r == CUDA_SUCCESS ? 0 : kcuda_measure_fail(kc, err, r, "cuEventRecord");
    if (!slice && !rc)
        rc = kcuda_measure_launch(kc, s, s->fn, 1, 0, total, st, err);
    for (uint64_t first = 0; slice && !rc && first < total; first += slice)
        rc = kcuda_measure_launch(kc, s, sliced, 0, first,
                                  total - first < slice ? total - first : slice, st, err);
    if (!rc && (r = cuEventRecord(ev[1], st)) == CUDA_SUCCESS)
        r = cuStreamSynchronize(st);
    if (!rc && r != CUDA_SUCCESS)
        rc = kcuda_measure_fail(kc, err, r, "timed run");
    *ns = rc ? -1 : kcuda_elapsed_ns(ev[0], ev[1]);
    return rc;
}

int kcuda_time_launch(kcuda *kc, const kbackend_slice *launch, uint64_t slice_blocks,
                      unsigned reps, double *median_ns, kbackend_error *err)
{
    if (!kc || !launch || !launch->fn || !median_ns || !reps || reps > 1000)
        return kbackend_fail(err, KBACKEND_EINVAL, "bad argument");
    if (launch->sliced || launch->fn->sliced)
        return kbackend_fail(err, KBACKEND_EINVAL, "time the whole launch (its unsliced function)");
    const struct kbackend_function *sliced = NULL;
    int rc = kcuda_bind(kc, err);
    if (!rc && slice_blocks && !(sliced = kcuda_sliced_sibling(kc, launch->fn)))
        rc = kbackend_fail(err, KBACKEND_EUNSUPPORTED, "%s has no sliced variant", launch->fn->name);
    double *t = rc ? NULL : calloc(reps + 1, sizeof(*t));
    if (!rc && !t)
        rc = kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    if (rc)
        return rc;
    kcuda_exclusive_begin(kc);
    rc = kcuda_measure_streams(kc, err);
    if (!rc)
        rc = kcuda_measure_events(kc, 2, err);
    for (unsigned i = 0; !rc && i <= reps; i++)    /* t[0]: warm-up */
        rc = timed_run(kc, launch, sliced, slice_blocks, &t[i], err);
    kcuda_exclusive_end(kc);
    if (!rc) {
        *median_ns = kcuda_median(t + 1, reps);
    }
    free(t);
    return rc;
}

void kcuda_measure_release(kcuda *kc)
{
    for (size_t i = 0; i < kc->n_trial_events; i++)
        cuEventDestroy(kc->trial_events[i]);
    free(kc->trial_events);
    kc->trial_events = NULL;
    kc->n_trial_events = 0;
    for (int i = 0; i < 3; i++)
        if (kc->trial_stream[i])
            cuStreamDestroy(kc->trial_stream[i]);
    if (kc->trial_gate)
        cuMemFree(kc->trial_gate);
    kc->trial_gate = 0;
}
