/* Address windows of domains with the CUDA virtual memory management API (see
 * vmm_windows.h). Inside a window, allocations are placed first fit between the chunks
 * mapped there (a window holds one tenant's memory only, so reuse stays within it), and
 * the window's sink fills the rest of its reach (window_sink.h). */
#include "vmm_windows.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"
#include "window_sink.h"

typedef struct chunk {
    krange r;                       /* mapped part of the window, granularity-rounded */
    CUmemGenericAllocationHandle h;
} chunk;

typedef struct window {
    uint32_t domain;
    CUdeviceptr base;
    krange_table chunks;            /* chunk, sorted by address */
    kcuda_sink sink;                /* over the reach's holes */
} window;

struct kcuda_windows {
    pthread_mutex_t lock;
    CUmemAllocationProp prop;
    uint64_t size;                  /* of each window */
    size_t granularity;
    window *v;
    size_t n, cap;
};

int kcuda_windows_new(CUdevice dev, uint64_t window_bytes, kcuda_windows **out,
                      kbackend_error *err)
{
    if (!kbackend_window_size_valid(window_bytes))
        return kbackend_fail(err, KBACKEND_EINVAL, "window size %llu is not valid",
                             (unsigned long long)window_bytes);
    kcuda_windows *w = calloc(1, sizeof(*w));
    if (!w)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
    w->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    w->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    w->prop.location.id = dev;
    w->size = window_bytes;
    CUresult r = cuMemGetAllocationGranularity(&w->granularity, &w->prop,
                                               CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (r != CUDA_SUCCESS || !w->granularity || window_bytes % w->granularity) {
        free(w);
        return r != CUDA_SUCCESS ? kcuda_cu_fail(err, r, "cuMemGetAllocationGranularity")
                                 : kbackend_fail(err, KBACKEND_EDEVICE, "allocation "
                                                 "granularity does not divide the window");
    }
    pthread_mutex_init(&w->lock, NULL);
    *out = w;
    return 0;
}

static void unmap(const chunk *c)
{
    cuMemUnmap(c->r.base, c->r.size);
    cuMemRelease(c->h);
}

/* Unmaps every chunk of window i and gives its addresses back; removes it. */
static void drop_window(kcuda_windows *w, size_t i)
{
    window *win = &w->v[i];
    for (size_t k = 0; k < krange_count(&win->chunks); k++)
        unmap(krange_at(&win->chunks, k));
    krange_table_clear(&win->chunks);
    kcuda_sink_free(&win->sink);
    cuMemAddressFree(win->base, w->size);
    w->v[i] = w->v[--w->n];
}

void kcuda_windows_free(kcuda_windows *w)
{
    if (!w)
        return;
    while (w->n)
        drop_window(w, w->n - 1);
    free(w->v);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static window *find(kcuda_windows *w, uint32_t domain)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->v[i].domain == domain)
            return &w->v[i];
    return NULL;
}

/* domain's window, reserved when it has none; called with the lock held. */
static int window_of(kcuda_windows *w, uint32_t domain, window **out, kbackend_error *err)
{
    if (!domain)
        return kbackend_fail(err, KBACKEND_EINVAL, "domain 0 has no window");
    if ((*out = find(w, domain)))
        return 0;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 8;
        window *v = realloc(w->v, cap * sizeof(*v));
        if (!v)
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
        w->v = v;
        w->cap = cap;
    }
    CUdeviceptr base = 0;
    CUresult r = cuMemAddressReserve(&base, w->size, w->size, 0, 0);
    if (r == CUDA_SUCCESS && base % w->size) {    /* the alignment is only a request */
        cuMemAddressFree(base, w->size);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail_as(err, KBACKEND_EDEVMEM, r, "cuMemAddressReserve of a window");
    window *win = &w->v[w->n];
    *win = (window){.domain = domain, .base = base};
    if ((r = kcuda_sink_init(&win->sink, &w->prop, w->granularity, base, w->size)) !=
        CUDA_SUCCESS) {
        cuMemAddressFree(base, w->size);
        return kcuda_cu_fail_as(err, KBACKEND_EDEVMEM, r, "the sink of a window");
    }
    w->n++;
    krange_table_init(&win->chunks, sizeof(chunk));
    *out = win;
    return 0;
}

int kcuda_windows_get(kcuda_windows *w, uint32_t domain, kbackend_window *out,
                      kbackend_error *err)
{
    window *win;
    pthread_mutex_lock(&w->lock);
    int rc = window_of(w, domain, &win, err);
    if (!rc)
        *out = (kbackend_window){.base = win->base, .size = w->size, .reach = win->sink.reach};
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* Physical memory of span bytes mapped read-write at p. */
static CUresult map(const kcuda_windows *w, CUdeviceptr p, uint64_t span,
                    CUmemGenericAllocationHandle *h)
{
    CUmemAccessDesc access = {.location = w->prop.location,
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUresult r = cuMemCreate(h, span, &w->prop, 0);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = cuMemMap(p, span, 0, *h, 0)) != CUDA_SUCCESS) {
        cuMemRelease(*h);
        return r;
    }
    if ((r = cuMemSetAccess(p, span, &access, 1)) != CUDA_SUCCESS) {
        cuMemUnmap(p, span);
        cuMemRelease(*h);
    }
    return r;
}

/* Memory of span bytes at p of win, in place of the sink there, the reach grown to hold it;
 * on failure the window is as it was. */
static CUresult place(const kcuda_windows *w, window *win, CUdeviceptr p, uint64_t span,
                      CUmemGenericAllocationHandle *h)
{
    kcuda_sink_uncover(&win->sink, p, span);
    CUresult r = map(w, p, span, h);
    if (r == CUDA_SUCCESS &&
        (r = kcuda_sink_grow(&win->sink, &w->prop, p + span, p, span)) != CUDA_SUCCESS) {
        cuMemUnmap(p, span);
        cuMemRelease(*h);
    }
    if (r != CUDA_SUCCESS)
        kcuda_sink_cover(&win->sink, &w->prop, p, span);
    return r;
}

uint64_t kcuda_windows_span(const kcuda_windows *w, uint64_t bytes)
{
    return (bytes + w->granularity - 1) / w->granularity * w->granularity;
}

int kcuda_windows_alloc(kcuda_windows *w, uint32_t domain, uint64_t bytes, CUdeviceptr *out,
                        kbackend_error *err)
{
    window *win;
    if (!bytes || bytes > w->size)
        return kbackend_fail(err, bytes ? KBACKEND_EDEVMEM : KBACKEND_EINVAL,
                             "allocation of %llu bytes in a window of %llu",
                             (unsigned long long)bytes, (unsigned long long)w->size);
    uint64_t span = (bytes + w->granularity - 1) / w->granularity * w->granularity;
    pthread_mutex_lock(&w->lock);
    int rc = window_of(w, domain, &win, err);
    uint64_t p = 0;
    if (!rc && krange_first_fit(&win->chunks, win->base, win->base + w->size, span,
                                w->granularity, &p))
        rc = kbackend_fail(err, KBACKEND_EDEVMEM, "the address window of domain %u is full",
                           domain);
    chunk c = {.r = {.base = p, .size = span}};
    CUresult r = rc ? CUDA_SUCCESS : place(w, win, p, span, &c.h);
    if (r != CUDA_SUCCESS)
        rc = kcuda_cu_fail(err, r, "mapping memory into a window");
    chunk *slot = rc ? NULL : krange_insert(&win->chunks, p, span);
    if (!rc && !slot) {
        unmap(&c);
        kcuda_sink_cover(&win->sink, &w->prop, p, span);
        rc = kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
    }
    if (slot) {
        slot->h = c.h;
        *out = p;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

int kcuda_windows_release_ptr(kcuda_windows *w, CUdeviceptr p)
{
    int found = 0;
    if (!w)
        return 0;
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->n && !found; i++) {
        window *win = &w->v[i];
        if (p < win->base || p - win->base >= w->size)
            continue;
        chunk *c = krange_exact(&win->chunks, p);
        if (c) {
            krange r = c->r;
            unmap(c);
            krange_remove(&win->chunks, c);
            /* the reach keeps its size: fenced kernels may have it as their mask */
            kcuda_sink_cover(&win->sink, &w->prop, r.base, r.size);
        }
        found = 1;
    }
    pthread_mutex_unlock(&w->lock);
    return found;
}

void kcuda_windows_release(kcuda_windows *w, uint32_t domain)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    window *win = find(w, domain);
    if (win && !krange_count(&win->chunks))
        drop_window(w, (size_t)(win - w->v));
    pthread_mutex_unlock(&w->lock);
}
