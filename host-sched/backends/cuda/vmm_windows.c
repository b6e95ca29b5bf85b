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
    int busy;                       /* an allocation or free maps and unmaps in it, the lock
                                       released: a window's mappings change one at a time */
} window;

/* The lock guards the table and each window's chunks; the driver calls that map memory and
 * the sink run without it (a window marked busy meanwhile), so that one tenant's large
 * allocation does not hold up the others' launches, which read their windows here. */
struct kcuda_windows {
    pthread_mutex_t lock;
    pthread_cond_t idle;            /* a window stopped being busy */
    CUmemAllocationProp prop;
    uint64_t size;                  /* of each window */
    size_t granularity;
    window **v;                     /* each its own allocation: stable while unlocked */
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
    pthread_cond_init(&w->idle, NULL);
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
    window *win = w->v[i];
    for (size_t k = 0; k < krange_count(&win->chunks); k++)
        unmap(krange_at(&win->chunks, k));
    krange_table_clear(&win->chunks);
    kcuda_sink_free(&win->sink);
    cuMemAddressFree(win->base, w->size);
    free(win);
    w->v[i] = w->v[--w->n];
}

void kcuda_windows_free(kcuda_windows *w)
{
    if (!w)
        return;
    while (w->n)
        drop_window(w, w->n - 1);
    free(w->v);
    pthread_cond_destroy(&w->idle);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static window *find(kcuda_windows *w, uint32_t domain)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->v[i]->domain == domain)
            return w->v[i];
    return NULL;
}

/* With the lock held: the window holding address p, or NULL. */
static window *holding(kcuda_windows *w, CUdeviceptr p)
{
    for (size_t i = 0; i < w->n; i++)
        if (p >= w->v[i]->base && p - w->v[i]->base < w->size)
            return w->v[i];
    return NULL;
}

/* With the lock held: win is no longer busy, and whoever waits for one may go on. */
static void settle(kcuda_windows *w, window *win)
{
    win->busy = 0;
    pthread_cond_broadcast(&w->idle);
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
        window **v = realloc(w->v, cap * sizeof(*v));
        if (!v)
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
        w->v = v;
        w->cap = cap;
    }
    window *win = calloc(1, sizeof(*win));
    if (!win)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
    CUdeviceptr base = 0;
    CUresult r = cuMemAddressReserve(&base, w->size, w->size, 0, 0);
    if (r == CUDA_SUCCESS && base % w->size) {    /* the alignment is only a request */
        cuMemAddressFree(base, w->size);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r != CUDA_SUCCESS) {
        free(win);
        return kcuda_cu_fail_as(err, KBACKEND_EDEVMEM, r, "cuMemAddressReserve of a window");
    }
    *win = (window){.domain = domain, .base = base};
    if ((r = kcuda_sink_init(&win->sink, &w->prop, w->granularity, base, w->size)) !=
        CUDA_SUCCESS) {
        cuMemAddressFree(base, w->size);
        free(win);
        return kcuda_cu_fail_as(err, KBACKEND_EDEVMEM, r, "the sink of a window");
    }
    w->v[w->n++] = win;
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
        *out = (kbackend_window){.base = win->base, .size = w->size,
                                 .reach = kcuda_sink_reach(&win->sink)};
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

/* With the lock held: domain's window (made when it has none) once no allocation or free
 * is changing its mappings, then marked busy; the lock is released while waiting. */
static int claim(kcuda_windows *w, uint32_t domain, window **out, kbackend_error *err)
{
    int rc;
    while (!(rc = window_of(w, domain, out, err)) && (*out)->busy)
        pthread_cond_wait(&w->idle, &w->lock);
    if (!rc)
        (*out)->busy = 1;
    return rc;
}

/* With the lock held: where span bytes go in win, first fit; past the reach only unless
 * may_remap (vmm_windows.h). 0; KCUDA_WINDOWS_ONLY_HOLES when only a hole of the reach has
 * room and !may_remap; -1 when the window is full. */
static int place_at(const kcuda_windows *w, window *win, uint64_t span, int may_remap,
                    uint64_t *p)
{
    uint64_t end = win->base + w->size, reach = win->base + kcuda_sink_reach(&win->sink);
    if (!krange_first_fit(&win->chunks, may_remap ? win->base : reach, end, span,
                          w->granularity, p))
        return 0;
    if (may_remap)
        return -1;
    return krange_first_fit(&win->chunks, win->base, end, span, w->granularity, p)
               ? -1 : KCUDA_WINDOWS_ONLY_HOLES;
}

int kcuda_windows_alloc(kcuda_windows *w, uint32_t domain, uint64_t bytes, int may_remap,
                        CUdeviceptr *out, kbackend_error *err)
{
    window *win;
    if (!bytes || bytes > w->size)
        return kbackend_fail(err, bytes ? KBACKEND_EDEVMEM : KBACKEND_EINVAL,
                             "allocation of %llu bytes in a window of %llu",
                             (unsigned long long)bytes, (unsigned long long)w->size);
    uint64_t span = kcuda_windows_span(w, bytes);
    pthread_mutex_lock(&w->lock);
    int rc = claim(w, domain, &win, err);
    uint64_t p = 0;
    int placed = rc ? 0 : place_at(w, win, span, may_remap, &p);
    if (placed) {
        settle(w, win);
        rc = placed > 0 ? placed
                        : kbackend_fail(err, KBACKEND_EDEVMEM,
                                        "the address window of domain %u is full", domain);
    }
    pthread_mutex_unlock(&w->lock);
    if (rc)
        return rc;
    chunk c = {.r = {.base = p, .size = span}};
    CUresult r = place(w, win, p, span, &c.h);     /* busy: nobody else maps in win */
    pthread_mutex_lock(&w->lock);
    chunk *slot = r == CUDA_SUCCESS ? krange_insert(&win->chunks, p, span) : NULL;
    if (r != CUDA_SUCCESS) {
        rc = kcuda_cu_fail(err, r, "mapping memory into a window");
    } else if (!slot) {
        unmap(&c);
        kcuda_sink_cover(&win->sink, &w->prop, p, span);
        rc = kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
    } else {
        slot->h = c.h;
        *out = p;
    }
    settle(w, win);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

int kcuda_windows_release_ptr(kcuda_windows *w, CUdeviceptr p)
{
    if (!w)
        return 0;
    pthread_mutex_lock(&w->lock);
    window *win;
    while ((win = holding(w, p)) && win->busy)
        pthread_cond_wait(&w->idle, &w->lock);
    chunk *c = win ? krange_exact(&win->chunks, p) : NULL;
    chunk gone = c ? *c : (chunk){0};
    if (c) {
        krange_remove(&win->chunks, c);
        win->busy = 1;
    }
    pthread_mutex_unlock(&w->lock);
    if (!c)
        return win != NULL;
    unmap(&gone);
    /* the reach keeps its size: fenced kernels may have it as their mask */
    kcuda_sink_cover(&win->sink, &w->prop, gone.r.base, gone.r.size);
    pthread_mutex_lock(&w->lock);
    settle(w, win);
    pthread_mutex_unlock(&w->lock);
    return 1;
}

void kcuda_windows_release(kcuda_windows *w, uint32_t domain)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    window *win;
    while ((win = find(w, domain)) && win->busy)
        pthread_cond_wait(&w->idle, &w->lock);
    for (size_t i = 0; win && i < w->n; i++)
        if (w->v[i] == win && !krange_count(&win->chunks))
            drop_window(w, i);
    pthread_mutex_unlock(&w->lock);
}
