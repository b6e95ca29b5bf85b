/* Per-domain control words of fenced kernels (control.h). Both words of a domain live in
 * one block of mapped pinned host memory: the kernels reach it over the bus, the backend
 * reads and writes it as plain memory. A cancel word in device memory, written with an
 * asynchronous copy on a stream of its own, was tried first on the H100 and never stopped
 * a runaway kernel: the watchdog's copy did not complete while the kernel ran (most likely
 * queued behind it: streams share the device's few hardware queues). Host memory needs no
 * copy, and CUPTI's kernel replay, which restores device memory between the passes of a
 * profiled launch, leaves it alone.
 * The kernels read it only every KPTX_CANCEL_POLL_PERIOD back-edges of a thread. */
#include "control.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"
#include "kernelet/ptx.h"

enum { W_FAULT, W_CANCEL, N_WORDS };

typedef struct domain_words {
    uint32_t domain;
    volatile uint32_t *host;    /* pinned, mapped: the fault word, then the cancel word */
    CUdeviceptr dev;            /* host as the device sees it */
    unsigned launches;          /* on the device now */
    int raised;                 /* the cancel word is set */
} domain_words;

struct kcuda_control {
    pthread_mutex_t lock;
    domain_words *v;
    size_t n, cap;
};

int kcuda_control_new(kcuda_control **out, kbackend_error *err)
{
    kcuda_control *c = calloc(1, sizeof(*c));
    if (!c)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return 0;
}

static void words_free(domain_words *d)
{
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

/* The device sees a store to mapped memory once it leaves the CPU: no copy, no stream. */
static void write_cancel(domain_words *d, uint32_t v)
{
    __atomic_store_n(&d->host[W_CANCEL], v, __ATOMIC_SEQ_CST);
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
    CUresult r = cuMemHostAlloc(&host, N_WORDS * sizeof(uint32_t), CU_MEMHOSTALLOC_DEVICEMAP);
    d.host = host;
    if (r == CUDA_SUCCESS) {
        memset(host, 0, N_WORDS * sizeof(uint32_t));
        r = cuMemHostGetDevicePointer(&d.dev, host, 0);
    }
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
        *cancel = d->dev + W_CANCEL * sizeof(uint32_t);
        *fault = d->dev + W_FAULT * sizeof(uint32_t);
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
        *fault = __atomic_exchange_n(&d->host[W_FAULT], 0, __ATOMIC_SEQ_CST);
        *cancelled = d->raised;
        if (d->launches)
            d->launches--;
        if (d->raised && !d->launches) {
            write_cancel(d, 0);
            d->raised = 0;
        }
    }
    pthread_mutex_unlock(&c->lock);
}

uint32_t kcuda_control_take_fault(kcuda_control *c, uint32_t domain)
{
    uint32_t fault = 0;
    if (!c || !domain)
        return 0;
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    if (d)
        fault = __atomic_exchange_n(&d->host[W_FAULT], 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&c->lock);
    return fault;
}

void kcuda_control_cancel_all(kcuda_control *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].launches) {
            write_cancel(&c->v[i], 1);
            c->v[i].raised = 1;
        }
    pthread_mutex_unlock(&c->lock);
}

int kcuda_control_cancel(kcuda_control *c, uint32_t domain)
{
    if (!c || !domain)
        return -1;
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    /* with nothing on the device the word would stay raised for the next launch */
    int rc = d && d->launches ? 0 : -1;
    if (!rc) {
        write_cancel(d, 1);
        d->raised = 1;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int kcuda_control_settle(kcuda *kc, const kcuda_job *job, int fired, int status, char *msg,
                         size_t len)
{
    uint32_t fault;
    int cancelled;
    kcuda_control_launch_end(kc->control, job->domain, &fault, &cancelled);
    if (status)
        return status;
    if (fault == KPTX_FAULT_ASSERT || fault == KPTX_FAULT_TRAP || fault == KPTX_FAULT_ADDRESS) {
        snprintf(msg, len, "%s: device %s (the launch ended; the context is intact)",
                 job->fn->name, kptx_fault_name(fault));
        if (kc->cfg.note) {     /* at most once per tenant context: the error is sticky */
            char note[2 * MSG_LEN];
            snprintf(note, sizeof(note), "tenant '%s': %s", job->tenant[0] ? job->tenant : "?",
                     msg);
            kc->cfg.note(kc->cfg.note_user, note);
        }
        return KBACKEND_ELAUNCH;
    }
    /* a kernel that polls no cancel word ran to its end, cancel or not */
    if (cancelled && !fired && job->polls_cancel) {
        snprintf(msg, len, "%s: stopped early: its tenant's kernel time limit cancelled the "
                 "tenant's running kernels", job->fn->name);
        return KBACKEND_ELAUNCH;
    }
    return 0;
}
