/* Per-domain control words of fenced kernels (control.h). The fault word lives in mapped
 * pinned host memory: a kernel writes it only when it traps or asserts, and the backend
 * reads it as plain memory when a launch completes. The cancel word, which every fenced
 * loop reads every KPTX_CANCEL_POLL_PERIOD iterations, lives in device memory: in host
 * memory each read crossed the bus and a kernel of short loops ran 33 to 115 times slower
 * on the H100 (docs/perf/isolation.md). The backend writes it with a copy on a stream of
 * its own (a hardware queue of its own: CUDA_DEVICE_MAX_CONNECTIONS), which the H100 ran
 * within 0.3 ms while a never-ending kernel filled the GPU (tests/gpu/ptx/fence_probe.c).
 * CUPTI's kernel replay restores device memory between the passes of a profiled launch,
 * which would clear a cancel set during the first pass: a profiled launch polls a copy of
 * the word in the mapped host block instead (kcuda_control_replay_cancel), which the
 * backend sets along with the device one; while a profile runs a cancel stores to host
 * memory only: with a copy, contain.sh hung on the H100, most likely the watchdog's driver
 * call waiting for the replay of the never-ending kernel it was to stop. */
#include "control.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_internal.h"
#include "kernelet/ptx.h"

enum { W_FAULT, W_CANCEL, N_WORDS };

typedef struct domain_words {
    uint32_t domain;
    volatile uint32_t *host;    /* pinned, mapped: the fault word, then the cancel word's
                                   copy for profiled launches */
    CUdeviceptr host_dev;       /* host as the device sees it */
    CUdeviceptr cancel;         /* device memory */
    unsigned launches;          /* on the device now */
    int raised;                 /* the cancel word is set */
} domain_words;

struct kcuda_control {
    pthread_mutex_t lock;
    pthread_cond_t idle;        /* a domain's last launch on the device ended */
    CUstream stream;            /* the cancel words' copies */
    uint32_t *values;           /* pinned: 0 and 1, what the copies write */
    int replaying;              /* a profile runs: no driver call may wait on it */
    domain_words *v;
    size_t n, cap;
};

int kcuda_control_new(kcuda_control **out, kbackend_error *err)
{
    kcuda_control *c = calloc(1, sizeof(*c));
    if (!c)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->idle, NULL);
    void *values = NULL;
    CUresult r = cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = cuMemHostAlloc(&values, 2 * sizeof(uint32_t), 0);
    c->values = values;
    if (r != CUDA_SUCCESS) {
        kcuda_control_free(c);
        return kcuda_cu_fail(err, r, "the control words' stream");
    }
    c->values[0] = 0;
    c->values[1] = 1;
    *out = c;
    return 0;
}

static void words_free(domain_words *d)
{
    if (d->host)
        cuMemFreeHost((void *)d->host);
    if (d->cancel)
        cuMemFree(d->cancel);
}

void kcuda_control_free(kcuda_control *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        words_free(&c->v[i]);
    if (c->stream)
        cuStreamDestroy(c->stream);
    if (c->values)
        cuMemFreeHost(c->values);
    free(c->v);
    pthread_cond_destroy(&c->idle);
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

/* Sets the device cancel word at `word` to v (0 or 1) with a copy on the control stream; a
 * clear is waited for, so that no later launch of the domain can see the word still set. */
static CUresult copy_cancel(kcuda_control *c, CUdeviceptr word, uint32_t v)
{
    CUresult r = cuMemcpyHtoDAsync(word, &c->values[v ? 1 : 0], sizeof(uint32_t), c->stream);
    return r == CUDA_SUCCESS && !v ? cuStreamSynchronize(c->stream) : r;
}

/* Sets d's cancel word, and its host copy, to v. */
static CUresult write_cancel(kcuda_control *c, domain_words *d, uint32_t v)
{
    __atomic_store_n(&d->host[W_CANCEL], v, __ATOMIC_SEQ_CST);
    if (c->replaying)           /* the profiled launch polls the host copy; a copy now would
                                   wait for CUPTI's replay, which waits for the cancel */
        return CUDA_SUCCESS;
    return copy_cancel(c, d->cancel, v);
}

/* A domain's words, both clear, made without the lock: the device word's first clear is
 * waited for, which during a profile lasts until CUPTI's replay ends, and a cancel (the
 * watchdog's, for that very replay) must not wait behind it for the lock. */
static CUresult make_words(kcuda_control *c, uint32_t domain, domain_words *d)
{
    *d = (domain_words){.domain = domain};
    void *host = NULL;
    CUresult r = cuMemHostAlloc(&host, N_WORDS * sizeof(uint32_t), CU_MEMHOSTALLOC_DEVICEMAP);
    d->host = host;
    if (r == CUDA_SUCCESS) {
        memset(host, 0, N_WORDS * sizeof(uint32_t));
        r = cuMemHostGetDevicePointer(&d->host_dev, host, 0);
    }
    if (r == CUDA_SUCCESS)
        r = cuMemAlloc(&d->cancel, sizeof(uint32_t));
    if (r == CUDA_SUCCESS)      /* always on the device: it holds whatever was there before */
        r = copy_cancel(c, d->cancel, 0);
    if (r != CUDA_SUCCESS)
        words_free(d);
    return r;
}

/* Adds d to the table unless domain got words meanwhile (then d is freed); the entry. */
static domain_words *insert_locked(kcuda_control *c, domain_words *d, kbackend_error *err)
{
    domain_words *had = find_locked(c, d->domain);
    if (had) {
        words_free(d);
        return had;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        domain_words *v = realloc(c->v, cap * sizeof(*v));
        if (!v) {
            words_free(d);
            kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
            return NULL;
        }
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n] = *d;
    return &c->v[c->n++];
}

int kcuda_control_words(kcuda_control *c, uint32_t domain, uint64_t *cancel, uint64_t *fault,
                        kbackend_error *err)
{
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    if (!d) {
        pthread_mutex_unlock(&c->lock);
        domain_words made;
        CUresult r = make_words(c, domain, &made);
        if (r != CUDA_SUCCESS)
            return kcuda_cu_fail(err, r, "a domain's control words");
        pthread_mutex_lock(&c->lock);
        d = insert_locked(c, &made, err);
    }
    if (d) {
        *cancel = d->cancel;
        *fault = d->host_dev + W_FAULT * sizeof(uint32_t);
    }
    pthread_mutex_unlock(&c->lock);
    return d ? 0 : KBACKEND_ENOMEM;
}

void kcuda_control_replaying(kcuda_control *c, int on)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->replaying = on;
    pthread_mutex_unlock(&c->lock);
}

uint64_t kcuda_control_replay_cancel(kcuda_control *c, uint32_t domain, uint64_t cancel)
{
    uint64_t host = 0;
    if (!c || !domain)
        return 0;
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    if (d && d->cancel == cancel)
        host = d->host_dev + W_CANCEL * sizeof(uint32_t);
    pthread_mutex_unlock(&c->lock);
    return host;
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

int kcuda_control_busy(kcuda_control *c, uint32_t domain)
{
    if (!c || !domain)
        return 0;
    pthread_mutex_lock(&c->lock);
    domain_words *d = find_locked(c, domain);
    int busy = d && d->launches;
    pthread_mutex_unlock(&c->lock);
    return busy;
}

int kcuda_control_wait_idle(kcuda_control *c, uint32_t domain, uint64_t timeout_ns)
{
    if (!c || !domain)
        return 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + timeout_ns;
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&c->lock);
    domain_words *d;
    int timed_out = 0;
    while ((d = find_locked(c, domain)) && d->launches && !timed_out)
        timed_out = pthread_cond_timedwait(&c->idle, &c->lock, &until) != 0;
    int busy = d && d->launches;
    pthread_mutex_unlock(&c->lock);
    return busy ? -1 : 0;
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
        if (d->launches && !--d->launches)
            pthread_cond_broadcast(&c->idle);
        if (d->raised && !d->launches) {
            write_cancel(c, d, 0);
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
            write_cancel(c, &c->v[i], 1);
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
        write_cancel(c, d, 1);
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
    if (fault != KPTX_FAULT_NONE) {     /* any code a fenced kernel writes ends its launch */
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
