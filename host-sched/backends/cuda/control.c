/* Per-domain control words of fenced kernels (control.h). The words of a domain live in
 * one small block each: the cancel word in device memory (the kernels read it often, so it
 * must be near), the fault word in mapped pinned host memory (the kernels write it at most
 * once, and the backend reads it after every launch without a copy). The cancel word is
 * written with a copy from pinned memory on a stream of its own: a copy engine does it
 * while the runaway kernel still holds every SM. */
#include "control.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"

typedef struct domain_words {
    uint32_t domain;
    CUdeviceptr cancel;         /* device memory, one .u32 */
    volatile uint32_t *host;    /* pinned: [0] the fault word, [1] the value a copy writes */
    CUdeviceptr fault;          /* host[0] as the device sees it */
    unsigned launches;          /* on the device now */
    int raised;                 /* the cancel word is set */
} domain_words;

struct kcuda_control {
    pthread_mutex_t lock;
    CUstream stream;            /* the cancel word's writes */
    domain_words *v;
    size_t n, cap;
};

int kcuda_control_new(kcuda_control **out, kbackend_error *err)
{
    kcuda_control *c = calloc(1, sizeof(*c));
    if (!c)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    CUresult r = cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        free(c);
        return kcuda_cu_fail(err, r, "cuStreamCreate (control words)");
    }
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return 0;
}

static void words_free(domain_words *d)
{
    if (d->cancel)
        cuMemFree(d->cancel);
    if (d->host)
        cuMemFreeHost((void *)d->host);
}

void kcuda_control_free(kcuda_control *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        words_free(&c->v[i]);
    free(c->v);
    cuStreamDestroy(c->stream);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static domain_words *find_locked(kcuda_control *c, uint32_t domain)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].domain == domain)
            return &c->v[i];
    return NULL;
}

/* Writes v to the cancel word of d and waits for the copy (not for any kernel). */
static CUresult write_cancel_locked(kcuda_control *c, domain_words *d, uint32_t v)
{
    d->host[1] = v;
    CUresult r = cuMemcpyHtoDAsync(d->cancel, (const void *)&d->host[1], sizeof(uint32_t),
                                   c->stream);
    return r == CUDA_SUCCESS ? cuStreamSynchronize(c->stream) : r;
}

static int make_locked(kcuda_control *c, uint32_t domain, domain_words **out,
                       kbackend_error *err)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        domain_words *v = realloc(c->v, cap * sizeof(*v));
        if (!v)
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
        c->v = v;
        c->cap = cap;
    }
    domain_words d = {.domain = domain};
    void *host = NULL;
    CUresult r = cuMemAlloc(&d.cancel, sizeof(uint32_t));
    if (r == CUDA_SUCCESS)
        r = cuMemHostAlloc(&host, 2 * sizeof(uint32_t), CU_MEMHOSTALLOC_DEVICEMAP);
    d.host = host;
    if (r == CUDA_SUCCESS) {
        memset(host, 0, 2 * sizeof(uint32_t));
        r = cuMemHostGetDevicePointer(&d.fault, host, 0);
    }
    if (r == CUDA_SUCCESS)
        r = write_cancel_locked(c, &d, 0);
    if (r != CUDA_SUCCESS) {
        words_free(&d);
        return kcuda_cu_fail(err, r, "a domain's control words");
    }
    c->v[c->n] = d;
    *out = &c->v[c->n++];
    return 0;
}

int kcuda_control_words(kcuda_control *c, uint32_t domain, uint64_t *cancel, uint64_t *fault,
                        kbackend_error *err)
{
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    int rc = d ? 0 : make_locked(c, domain, &d, err);
    if (!rc) {
        *cancel = d->cancel;
        *fault = d->fault;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void kcuda_control_release(kcuda_control *c, uint32_t domain)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    if (d && !d->launches) {
        words_free(d);
        *d = c->v[--c->n];
    }
    pthread_mutex_unlock(&c->lock);
}

void kcuda_control_launch_begin(kcuda_control *c, uint32_t domain)
{
    if (!c || !domain)
        return;
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    if (d)
        d->launches++;
    pthread_mutex_unlock(&c->lock);
}

void kcuda_control_launch_end(kcuda_control *c, uint32_t domain, uint32_t *fault,
                              int *cancelled)
{
    *fault = 0;
    *cancelled = 0;
    if (!c || !domain)
        return;
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    if (d) {
        *fault = d->host[0];
        d->host[0] = 0;
        *cancelled = d->raised;
        if (d->launches)
            d->launches--;
        if (d->raised && !d->launches && write_cancel_locked(c, d, 0) == CUDA_SUCCESS)
            d->raised = 0;
    }
    pthread_mutex_unlock(&c->lock);
}

int kcuda_control_cancel(kcuda_control *c, uint32_t domain)
{
    if (!c || !domain)
        return -1;
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    int rc = d && write_cancel_locked(c, d, 1) == CUDA_SUCCESS ? 0 : -1;
    if (!rc)
        d->raised = 1;
    pthread_mutex_unlock(&c->lock);
    return rc;
}
