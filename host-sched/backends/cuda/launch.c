/* The launch op: whole kernels and slices on their lane's stream (see cuda_backend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"

int kcuda_prepare_launch(kcuda *kc, const kbackend_slice *s, kcuda_job *job, kbackend_error *err)
{
    const struct kbackend_function *fn = s->fn;
    if (kbackend_launch_has_attrs(s->cluster, s->cooperative) && s->sliced)
        return kbackend_fail(err, KBACKEND_EINVAL, "a cluster or cooperative launch runs whole");
    int rc = kcuda_launch_shape_of(s, fn->sliced, fn->info.max_threads_per_block, &kc->limits,
                                   &job->shape, err);
    if (rc)
        return rc;
    uint64_t smem = (uint64_t)s->smem + fn->info.static_smem;
    if (smem > kc->info.max_smem_per_block)
        return kbackend_fail(err, KBACKEND_EINVAL, "%llu bytes of shared memory per block (limit %u)",
                          (unsigned long long)smem, kc->info.max_smem_per_block);
    rc = kcuda_param_block(&fn->layout, s->params, s->params_size,
                           job->shape.sliced ? job->shape.extra : NULL, &job->params,
                           &job->params_size, err);
    if (rc)
        return rc;
    job->fn = fn;
    job->smem = s->smem;
    job->time_limit_ns = s->time_limit_ns;
    job->domain = s->domain;
    job->polls_cancel = s->polls_cancel;
    /* the fence's four addresses end the tenant's parameters: the cancel word's third */
    job->cancel_offset = s->params_size >= 16 ? s->params_size - 16 : 0;
    job->cooperative = s->cooperative;
    for (int i = 0; i < 3; i++)
        job->cluster[i] = s->cluster[i] ? s->cluster[i] : 1;
    snprintf(job->tenant, sizeof(job->tenant), "%s", s->tenant ? s->tenant : "");
    job->total_blocks = kbackend_grid_blocks(s->grid);
    job->wave_blocks = kc->cfg.cap_by_waves && job->shape.sliced && s->max_blocks_per_sm
                           ? (uint64_t)s->max_blocks_per_sm * kc->info.sms : 0;
    return 0;
}

/* The slice as launches of at most wave_blocks blocks each, in order on one stream: the
 * sliced variant's first-block parameter moves on by one launch's blocks each time (the
 * driver copies the parameters during the call, so one buffer serves them all). */
static CUresult launch_waves(kcuda_job *job, CUstream stream, void **extra)
{
    const unsigned *b = job->shape.block;
    uint32_t first = job->shape.extra[0], left = job->shape.grid[0];
    size_t at = kcuda_param_extra_offset(&job->fn->layout, job->params_size);
    CUresult r = CUDA_SUCCESS;
    while (left && r == CUDA_SUCCESS) {
        uint32_t n = left < job->wave_blocks ? left : (uint32_t)job->wave_blocks;
        memcpy((unsigned char *)job->params + at, &first, sizeof(first));
        r = cuLaunchKernel(job->fn->f, n, 1, 1, b[0], b[1], b[2], job->smem, stream, NULL,
                           extra);
        first += n;
        left -= n;
    }
    return r;
}

/* A whole launch with its clusters and cooperative flag. */
static CUresult launch_with_attrs(const kcuda_job *job, CUstream stream, void **extra)
{
    const unsigned *g = job->shape.grid, *b = job->shape.block;
    CUlaunchAttribute attrs[2];
    unsigned n = 0;
    memset(attrs, 0, sizeof(attrs));
    if (job->cluster[0] * job->cluster[1] * job->cluster[2] > 1) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n].value.clusterDim.x = job->cluster[0];
        attrs[n].value.clusterDim.y = job->cluster[1];
        attrs[n++].value.clusterDim.z = job->cluster[2];
    }
    if (job->cooperative) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n++].value.cooperative = 1;
    }
    CUlaunchConfig c = {.gridDimX = g[0], .gridDimY = g[1], .gridDimZ = g[2],
                        .blockDimX = b[0], .blockDimY = b[1], .blockDimZ = b[2],
                        .sharedMemBytes = job->smem, .hStream = stream, .attrs = attrs,
                        .numAttrs = n};
    return cuLaunchKernelEx(&c, job->fn->f, NULL, extra);
}

/* Dynamic shared memory beyond the default needs the function's opt-in. */
CUresult kcuda_allow_smem_locked(struct kbackend_function *fn, unsigned smem)
{
    if (smem <= fn->dyn_smem_limit)
        return CUDA_SUCCESS;
    CUresult r = cuFuncSetAttribute(fn->f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    (int)smem);
    if (r == CUDA_SUCCESS)
        fn->dyn_smem_limit = smem;
    return r;
}

/* Whether job may go without its end event (kcuda_config.shared_end_max): its kernel ran
 * short last time, and the jobs that share an event, each that short, would have to run
 * twenty times longer than seen to reach the tenant's time limit together (the watchdog
 * times a shared event's first job until the event ends). */
static int may_share_end(const kcuda *kc, const kcuda_job *job)
{
    uint64_t recent = __atomic_load_n(&job->fn->recent_ns, __ATOMIC_RELAXED);
    uint64_t short_ns = kc->cfg.shared_end_short_ns;
    uint64_t together = 20ull * kc->cfg.shared_end_max * short_ns;
    return kc->cfg.shared_end_max > 1 && !job->start && recent && recent <= short_ns &&
           (!job->time_limit_ns || job->time_limit_ns >= together);
}

int kcuda_issue_launch(kcuda *kc, kcuda_job *job, CUstream stream, kbackend_error *err)
{
    struct kbackend_function *fn = (struct kbackend_function *)job->fn;   /* the backend's own */
    size_t size = job->params_size;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, job->params, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &size, CU_LAUNCH_PARAM_END};
    const unsigned *g = job->shape.grid, *b = job->shape.block;
    const char *what = "cuFuncSetAttribute (dynamic shared memory)";
    job->issued_ns = kcuda_now();
    CUresult r = kcuda_allow_smem_locked(fn, job->smem);
    if (r == CUDA_SUCCESS && job->start) {
        what = "cuEventRecord";
        r = cuEventRecord(job->start, stream);
    }
    if (r == CUDA_SUCCESS) {
        what = "cuLaunchKernel";
        r = kbackend_launch_has_attrs(job->cluster, job->cooperative)
                ? launch_with_attrs(job, stream, size ? extra : NULL)
            : job->wave_blocks && g[0] > job->wave_blocks
                ? launch_waves(job, stream, extra)
                : cuLaunchKernel(fn->f, g[0], g[1], g[2], b[0], b[1], b[2], job->smem, stream,
                                 NULL, size ? extra : NULL);
    }
    job->shared_end = r == CUDA_SUCCESS && may_share_end(kc, job);
    if (r == CUDA_SUCCESS && !job->shared_end) {
        what = "cuEventRecord";
        r = cuEventRecord(job->end, stream);
    }
    if (r != CUDA_SUCCESS) {
        if (kcuda_error_is_sticky(r))
            kcuda_mark_broken_locked(kc, r, fn->name);
        char ctx[MSG_LEN];
        snprintf(ctx, sizeof(ctx), "%s of %.120s", what, fn->name);
        return kcuda_cu_fail_as(err, kcuda_error_is_sticky(r) ? KBACKEND_ELOST
                                                              : kcuda_error_code(r), r, ctx);
    }
    job->issued = 1;
    kc->stats.launches++;
    return 0;
}

int kcuda_launch(void *state, const kbackend_slice *s, kbackend_done_fn done, void *user,
                 kbackend_error *err)
{
    kcuda *kc = state;
    if (!s || !s->fn || !done || (s->params_size && !s->params))
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    if (s->lane >= kc->cfg.lanes)
        return kbackend_fail(err, KBACKEND_EINVAL, "lane %u (the backend has %u)", s->lane,
                          kc->cfg.lanes);
    kcuda_job *job = NULL;
    int rc = kcuda_bind(kc, err);
    if (!rc)
        rc = kcuda_job_new(kc, JOB_LAUNCH, s->lane, s->timed, done, user, &job, err);
    if (rc)
        return rc;
    rc = kcuda_prepare_launch(kc, s, job, err);
    if (!rc)
        rc = kcuda_submit(kc, job, err);
    if (rc)
        kcuda_job_free(kc, job);
    return rc;
}
