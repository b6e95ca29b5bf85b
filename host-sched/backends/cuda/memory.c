/* Device memory, copies and memsets (see cuda_backend.h). */
#include <stdio.h>
#include <stdlib.h>

#include "backend_internal.h"

static void release(kcuda *kc, kbackend_devptr ptr)
{
    if (kcuda_windows_release_ptr(kc->windows, ptr))
        return;
    if (kc->use_pool)
        cuMemFreeAsync(ptr, kc->alloc_stream);
    else
        cuMemFree(ptr);
}

int kcuda_domain_window(void *state, uint32_t domain, kbackend_window *out,
                        kbackend_error *err)
{
    kcuda *kc = state;
    if (!kc->windows || !out)
        return kbackend_fail(err, KBACKEND_EUNSUPPORTED, "no address windows");
    int rc = kcuda_bind(kc, err);
    if (!rc)
        rc = kcuda_windows_get(kc->windows, domain, out, err);
    return rc ? rc : kcuda_control_words(kc->control, domain, &out->cancel, &out->fault, err);
}

void kcuda_domain_release(void *state, uint32_t domain)
{
    kcuda *kc = state;
    if (!kcuda_bind(kc, NULL)) {
        kcuda_windows_release(kc->windows, domain);
        kcuda_control_release(kc->control, domain);
    }
}

/* Zeroes bytes at p and waits for it. Not cuMemsetD8: that one runs on the legacy stream,
 * with which the lanes' non-blocking streams are not ordered, and may still be running
 * when the tenant's first copy arrives on a lane, which it would then wipe (seen on the
 * H100 as a device printf %s of a string just copied in reading empty). */
CUresult kcuda_zero_now(kcuda *kc, CUdeviceptr p, uint64_t bytes)
{
    CUresult r = cuMemsetD8Async(p, 0, bytes, kc->alloc_stream);
    return r == CUDA_SUCCESS ? cuStreamSynchronize(kc->alloc_stream) : r;
}

/* How long an allocation that only a hole of its window's reach can hold waits for its
 * tenant's kernels to end (their time limit ends them sooner, the default's included). */
#define ONLY_HOLES_WAIT_NS (60ull * 1000000000ull)

/* Memory of a domain (> 0) in its window, zeroed to the end of its mapping: the domain's
 * fenced kernels reach the whole granule, whose memory may hold a past tenant's data.
 * The scheduler starts no launch of the domain across the allocation (its tenant is
 * paused, ksched_mem_alloc, and this call holds no lock of the scheduler's), so with none
 * on the device a hole of its reach may be reused; with some there it goes past the reach,
 * and where only a hole has room it waits for them to end: remapping a hole under a
 * running kernel of the domain could let that kernel fault the shared context. */
static CUresult alloc_in_window(kcuda *kc, uint32_t domain, uint64_t bytes, CUdeviceptr *p,
                                kbackend_error *err, int *rc)
{
    CUresult r = CUDA_SUCCESS;
    int quiet = !kcuda_control_busy(kc->control, domain);
    *rc = kcuda_windows_alloc(kc->windows, domain, bytes, quiet, p, err);
    if (*rc == KCUDA_WINDOWS_ONLY_HOLES) {
        *rc = kcuda_control_wait_idle(kc->control, domain, ONLY_HOLES_WAIT_NS)
                  ? kbackend_fail(err, KBACKEND_EDEVMEM, "the address window of domain %u "
                                  "has room only in holes its running kernels could reach",
                                  domain)
                  : kcuda_windows_alloc(kc->windows, domain, bytes, 1, p, err);
    }
    if (*rc)
        return CUDA_SUCCESS;
    if ((r = kcuda_zero_now(kc, *p, kcuda_windows_span(kc->windows, bytes))) != CUDA_SUCCESS)
        kcuda_windows_release_ptr(kc->windows, *p);
    return r;
}

/* In the domain's window when the backend has windows (domain 0 has none), else from the
 * driver or its pool. */
int kcuda_mem_alloc(void *state, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                    kbackend_error *err)
{
    kcuda *kc = state;
    if (!out || !bytes)
        return kbackend_fail(err, KBACKEND_EINVAL, "allocation of 0 bytes");
    pthread_mutex_lock(&kc->lock);
    int rc = kcuda_refuse_if_broken(kc, err);
    pthread_mutex_unlock(&kc->lock);
    if (rc || (rc = kcuda_bind(kc, err)))
        return rc;
    CUdeviceptr p = 0;
    CUresult r;
    /* Zeroed before it is handed out: freed memory goes back to the driver (or the pool)
     * with the last tenant's data in it, and the next tenant must never read that. */
    if (domain && kc->windows) {
        r = alloc_in_window(kc, domain, bytes, &p, err, &rc);
        if (rc)
            return rc;
    } else if (kc->use_pool) {
        /* the allocation stream only ever holds allocations and frees: this wait is short */
        r = cuMemAllocAsync(&p, bytes, kc->alloc_stream);
        if (r == CUDA_SUCCESS && (r = cuMemsetD8Async(p, 0, bytes, kc->alloc_stream)) != CUDA_SUCCESS)
            release(kc, p);
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(kc->alloc_stream);
    } else {
        r = cuMemAlloc(&p, bytes);
        if (r == CUDA_SUCCESS && (r = kcuda_zero_now(kc, p, bytes)) != CUDA_SUCCESS)
            cuMemFree(p);
    }
    if (r != CUDA_SUCCESS) {
        char what[64];
        snprintf(what, sizeof(what), "allocation of %llu bytes", (unsigned long long)bytes);
        return kcuda_cu_fail(err, r, what);
    }
    pthread_mutex_lock(&kc->lock);
    rc = kcuda_alloc_add(&kc->allocs, p, bytes, err);
    pthread_mutex_unlock(&kc->lock);
    if (rc) {
        release(kc, p);
        return rc;
    }
    *out = p;
    return 0;
}

/* Frees held back while a profile or trial ran (kernel replay restores memory it saved). */
void kcuda_flush_frees_locked(kcuda *kc)
{
    pending_free *f;
    while ((f = kc->frees)) {
        kc->frees = f->next;
        release(kc, f->ptr);
        free(f);
    }
}

int kcuda_mem_free(void *state, kbackend_devptr ptr, kbackend_error *err)
{
    kcuda *kc = state;
    int rc = kcuda_bind(kc, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&kc->lock);
    rc = kcuda_alloc_remove(&kc->allocs, ptr, NULL, err);
    int now = !rc && !kc->exclusive;
    if (!rc && !now) {
        pending_free *f = malloc(sizeof(*f));
        if (f) {
            *f = (pending_free){.next = kc->frees, .ptr = ptr};
            kc->frees = f;
        }
        /* without memory for the note, the allocation stays until the backend goes */
    }
    pthread_mutex_unlock(&kc->lock);
    if (now)
        release(kc, ptr);
    return rc;
}

void kcuda_free_all(kcuda *kc)
{
    pthread_mutex_lock(&kc->lock);
    kcuda_flush_frees_locked(kc);
    /* each release fails harmlessly on a lost context */
    for (size_t i = 0; i < krange_count(&kc->allocs.ranges); i++)
        release(kc, ((const krange *)krange_at(&kc->allocs.ranges, i))->base);
    kcuda_alloc_table_clear(&kc->allocs);
    pthread_mutex_unlock(&kc->lock);
    if (kc->alloc_stream)
        cuStreamSynchronize(kc->alloc_stream);
}

static int check_range(kcuda *kc, kbackend_devptr p, uint64_t bytes, const char *what,
                       kbackend_error *err)
{
    pthread_mutex_lock(&kc->lock);
    int ok = kcuda_alloc_contains(&kc->allocs, p, bytes) ||
             kcuda_alloc_contains(&kc->vars, p, bytes) ||
             kcuda_alloc_contains(&kc->reserved, p, bytes) ||
             kcuda_alloc_contains(&kc->host_mapped, p, bytes);
    pthread_mutex_unlock(&kc->lock);
    return ok ? 0 : kbackend_fail(err, KBACKEND_EINVAL, "%s: [0x%llx, +%llu) is not inside one "
                               "allocation, module variable, reservation or mapped host range",
                               what, (unsigned long long)p,
                               (unsigned long long)bytes);
}

/* A copy or memset job for queue qc, checked and submitted. */
static int submit_copy(kcuda *kc, const kcuda_job *proto, unsigned qc, kbackend_done_fn done,
                       void *user, kbackend_error *err)
{
    static const char *const what[] = {
        [JOB_H2D] = "copy to device", [JOB_D2H] = "copy to host",
        [JOB_D2D] = "copy on device", [JOB_MEMSET] = "memset",
    };
    const char *w = what[proto->kind];
    if (!done)
        return kbackend_fail(err, KBACKEND_EINVAL, "no completion callback");
    if (!proto->bytes)
        return kbackend_fail(err, KBACKEND_EINVAL, "%s of 0 bytes", w);
    if ((proto->kind == JOB_H2D && !proto->host_src) ||
        (proto->kind == JOB_D2H && !proto->host_dst))
        return kbackend_fail(err, KBACKEND_EINVAL, "%s: NULL host pointer", w);
    int rc = 0;
    if (proto->kind != JOB_D2H)
        rc = check_range(kc, proto->dst, proto->bytes, w, err);
    if (!rc && (proto->kind == JOB_D2H || proto->kind == JOB_D2D))
        rc = check_range(kc, proto->src, proto->bytes, w, err);
    kcuda_job *job = NULL;
    if (!rc)
        rc = kcuda_bind(kc, err);
    if (!rc)
        rc = kcuda_job_new(kc, proto->kind, kc->cfg.lanes + qc, 0, done, user, &job, err);
    if (rc)
        return rc;
    job->dst = proto->dst;
    job->src = proto->src;
    job->host_dst = proto->host_dst;
    job->host_src = proto->host_src;
    job->bytes = proto->bytes;
    job->value = proto->value;
    if ((rc = kcuda_submit(kc, job, err)))
        kcuda_job_free(kc, job);
    return rc;
}

int kcuda_copy_h2d(void *state, kbackend_devptr dst, const void *src, uint64_t bytes,
                   kbackend_done_fn done, void *user, kbackend_error *err)
{
    kcuda_job p = {.kind = JOB_H2D, .dst = dst, .host_src = src, .bytes = bytes};
    return submit_copy(state, &p, QC_H2D, done, user, err);
}

int kcuda_copy_d2h(void *state, void *dst, kbackend_devptr src, uint64_t bytes,
                   kbackend_done_fn done, void *user, kbackend_error *err)
{
    kcuda_job p = {.kind = JOB_D2H, .src = src, .host_dst = dst, .bytes = bytes};
    return submit_copy(state, &p, QC_D2H, done, user, err);
}

int kcuda_copy_d2d(void *state, kbackend_devptr dst, kbackend_devptr src, uint64_t bytes,
                   kbackend_done_fn done, void *user, kbackend_error *err)
{
    kcuda_job p = {.kind = JOB_D2D, .dst = dst, .src = src, .bytes = bytes};
    return submit_copy(state, &p, QC_DEV, done, user, err);
}

int kcuda_memset_d8(void *state, kbackend_devptr dst, uint8_t value, uint64_t bytes,
                    kbackend_done_fn done, void *user, kbackend_error *err)
{
    kcuda_job p = {.kind = JOB_MEMSET, .dst = dst, .value = value, .bytes = bytes};
    return submit_copy(state, &p, QC_DEV, done, user, err);
}

/* On the queue's thread: pageable host memory may make these calls wait, which is why they
 * are not made by the caller. */
void kcuda_issue_copy(kcuda *kc, kcuda_job *job, CUstream stream)
{
    job->issued_ns = kcuda_now();
    CUresult r = job->start ? cuEventRecord(job->start, stream) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        switch (job->kind) {
        case JOB_H2D: r = cuMemcpyHtoDAsync(job->dst, job->host_src, job->bytes, stream); break;
        case JOB_D2H: r = cuMemcpyDtoHAsync(job->host_dst, job->src, job->bytes, stream); break;
        case JOB_D2D: r = cuMemcpyDtoDAsync(job->dst, job->src, job->bytes, stream); break;
        default: r = cuMemsetD8Async(job->dst, job->value, job->bytes, stream); break;
        }
    }
    if (r == CUDA_SUCCESS)
        r = cuEventRecord(job->end, stream);
    if (r == CUDA_SUCCESS) {
        job->issued = 1;
        return;
    }
    int sticky = kcuda_error_is_sticky(r);
    if (sticky)
        kcuda_mark_broken(kc, r, "a copy");
    kbackend_error e = {0};
    job->status = kcuda_cu_fail_as(&e, sticky ? KBACKEND_ELOST : kcuda_error_code(r), r,
                                   "copy or memset");
    snprintf(job->msg, sizeof(job->msg), "%s", e.msg);
}

/* Host memory of the daemon pinned and mapped for the device (a tenant's shared-memory
 * region): the driver copies it by DMA, without its own staging, and with unified
 * addressing a kernel reaches it at the host address; copies and memsets may name it at
 * its device address (kc->host_mapped), as CUDA's mapped pinned memory. */
int kcuda_host_register(void *state, void *base, uint64_t bytes, kbackend_devptr *device,
                        kbackend_error *err)
{
    kcuda *kc = state;
    if (!base || !bytes)
        return kbackend_fail(err, KBACKEND_EINVAL, "registration of an empty host range");
    int rc = kcuda_bind(kc, err);
    if (rc)
        return rc;
    CUresult r = cuMemHostRegister(base, bytes, CU_MEMHOSTREGISTER_PORTABLE |
                                                    CU_MEMHOSTREGISTER_DEVICEMAP);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail(err, r, "cuMemHostRegister");
    CUdeviceptr d = 0;
    if ((r = cuMemHostGetDevicePointer(&d, base, 0)) != CUDA_SUCCESS) {
        cuMemHostUnregister(base);
        return kcuda_cu_fail(err, r, "cuMemHostGetDevicePointer");
    }
    pthread_mutex_lock(&kc->lock);
    rc = kcuda_alloc_add(&kc->host_mapped, d, bytes, err);
    pthread_mutex_unlock(&kc->lock);
    if (rc) {
        cuMemHostUnregister(base);
        return rc;
    }
    if (device)
        *device = d;
    return 0;
}

void kcuda_host_unregister(void *state, void *base)
{
    kcuda *kc = state;
    CUdeviceptr d = 0;
    if (kcuda_bind(kc, NULL))
        return;
    if (cuMemHostGetDevicePointer(&d, base, 0) == CUDA_SUCCESS) {
        pthread_mutex_lock(&kc->lock);
        kcuda_alloc_remove(&kc->host_mapped, d, NULL, NULL);
        pthread_mutex_unlock(&kc->lock);
    }
    cuMemHostUnregister(base); /* fails harmlessly on a lost context */
}
