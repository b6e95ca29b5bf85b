/* Device printf on the program's own stdout. The daemon rewrites each module's vprintf
 * calls into records appended to a ring, a variable of the module (kernelet/ptx.h, "Device
 * printf"). A module that has the ring is remembered at load; at each synchronisation
 * point the rings are copied back like any other device memory, their complete records are
 * formatted (printf_records.c) and written to stdout in record order. When no kernel can be
 * writing (the context was synchronised, a module is unloaded), the used part of a ring is
 * cleared and it starts over; otherwise how far it was read is remembered.
 *
 * Format strings and %s literals live in the module's own variables, which copies reach
 * only once looked up: the pass lists their names in a second variable, and the first
 * drain that finds records looks them all up. Format texts are cached by address. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "kernelet/ptx.h"
#include "le_bytes.h"
#include "libcuda_internal.h"
#include "printf_records.h"

struct pf_format {
    struct pf_format *next;
    uint64_t addr;
    char *text;
};

struct pf_ring {
    struct pf_ring *next;
    struct kcu_module *mod;
    CUdeviceptr base;
    size_t size;
    uint32_t read;                  /* data bytes consumed since the ring was last cleared */
    bool names_known;               /* the strings table was looked up */
    struct pf_format *formats;
};

static struct {
    pthread_mutex_t lock;
    struct pf_ring *rings;
    CUstream stream;                /* a non-blocking stream of its own for the copies */
    struct kcu_ctx *stream_ctx;
    bool atexit_done;
} pf = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- device memory --------------------------------------------------------------------- */

/* The stream the copies go on: a non-blocking one of its own, so that reading a ring never
 * waits for other streams' work (the legacy stream would). Made once, in the context
 * current then (the daemon's streams serve every context of the process); the legacy
 * stream until a context is current. */
static uint64_t copy_stream(void)
{
    struct kcu_ctx *ctx = kcu_ctx_current();
    uint64_t h;

    if (!pf.stream && ctx && cuStreamCreate(&pf.stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS)
        pf.stream_ctx = ctx;
    if (!pf.stream || kcu_stream_handle(pf.stream, false, &h) != CUDA_SUCCESS)
        h = KERNELET_STREAM_LEGACY;
    return h;
}

static CUresult dev_read(void *dst, CUdeviceptr src, size_t n)
{
    struct kcu_copy c = {
        .dst_side = KCU_HOST, .src_side = KCU_DEVICE, .dst_host = dst, .src_dev = src,
        .width = n, .height = 1, .dst_pitch = n, .src_pitch = n, .stream = copy_stream(),
    };
    return kcu_copy_run(&c);
}

/* Clears the first n bytes of the ring, and waits for it (a kernel launched next must find
 * the ring empty). */
static void dev_clear(CUdeviceptr p, size_t n)
{
    uint64_t s = copy_stream();

    if (kcu_memset_run(p, n, 0, 1, n, 1, s) == CUDA_SUCCESS)
        kcu_call_handle(kcu.client, KERNELET_OP_STREAM_SYNC, s);
}

/* ---- texts the records point to ----------------------------------------------------- */

/* Looks up every name of the module's strings table, so that copies may reach them. */
static void learn_names(struct pf_ring *r)
{
    CUdeviceptr p;
    size_t size;
    char *t;

    r->names_known = true;
    if (kcu_module_global(r->mod, KPTX_PRINTF_STRINGS, &p, &size) != CUDA_SUCCESS ||
        size == 0 || size > KPTX_PRINTF_STRINGS_MAX || !(t = malloc(size + 1)))
        return;
    if (dev_read(t, p, size) == CUDA_SUCCESS) {
        t[size] = '\0';         /* a table changed by a kernel still ends here */
        for (size_t i = 0; i < size && t[i]; i += strlen(t + i) + 1)
            kcu_module_global(r->mod, t + i, NULL, NULL);
    }
    free(t);
}

/* The text at addr, bounded by the memory holding it and by cap. */
static bool read_device_text(uint64_t addr, char *buf, size_t cap)
{
    CUdeviceptr base;
    size_t size, n;

    if (!kcu_device_lookup(addr, &base, &size))
        return false;
    n = size - (addr - base);
    n = n < cap - 1 ? n : cap - 1;
    if (dev_read(buf, addr, n) != CUDA_SUCCESS)
        return false;
    buf[n] = '\0';
    return true;
}

static bool cached_format(struct pf_ring *r, uint64_t addr, char *buf, size_t cap)
{
    for (struct pf_format *f = r->formats; f; f = f->next)
        if (f->addr == addr) {
            snprintf(buf, cap, "%s", f->text);
            return true;
        }
    return false;
}

static void cache_format(struct pf_ring *r, uint64_t addr, const char *text)
{
    struct pf_format *f = malloc(sizeof(*f));

    if (f && (f->text = strdup(text))) {
        f->addr = addr;
        f->next = r->formats;
        r->formats = f;
    } else {
        free(f);
    }
}

/* kcu_pf_read_text for the records of ring user. */
static bool read_text(void *user, uint64_t addr, bool format, char *buf, size_t cap)
{
    struct pf_ring *r = user;

    if (format && cached_format(r, addr, buf, cap))
        return true;
    if (!kcu_device_lookup(addr, NULL, NULL) && !r->names_known)
        learn_names(r);
    if (!read_device_text(addr, buf, cap))
        return false;
    if (format)
        cache_format(r, addr, buf);
    return true;
}

/* ---- draining ------------------------------------------------------------------------ */

/* Formats ring r's records not yet read into out; clears it when quiescent. */
static void drain_ring(struct pf_ring *r, bool quiescent, struct kcu_pf_out *out)
{
    uint8_t head[KPTX_PRINTF_RING_HEADER];
    size_t cap = r->size - KPTX_PRINTF_RING_HEADER, used;
    struct kcu_pf_walk res;
    uint8_t *data;

    if (dev_read(head, r->base, sizeof(head)) != CUDA_SUCCESS)
        return;
    /* the header is the tenant's to scribble on: only the ring's own bounds count */
    used = kcu_le32(head) < cap ? kcu_le32(head) & ~7u : cap;
    if (used > r->read && (data = malloc(used - r->read))) {
        if (dev_read(data, r->base + KPTX_PRINTF_RING_HEADER + r->read, used - r->read) ==
            CUDA_SUCCESS) {
            kcu_pf_walk_records(data, used - r->read, read_text, r, out, &res);
            r->read += (uint32_t)res.consumed;
            if (res.malformed || res.unreadable)
                kcu_log("printf: ring of module %llu: %u records unreadable%s",
                        (unsigned long long)r->mod->handle, res.unreadable,
                        res.malformed ? ", a malformed record" : "");
        }
        free(data);
    }
    if (quiescent && kcu_le32(head + 4))
        kcu_log("printf: %u records dropped (the ring was full)", kcu_le32(head + 4));
    if (quiescent && (kcu_le32(head) || kcu_le32(head + 4) || r->read)) {
        /* all that was written, also past a header a kernel made smaller: a stale total
         * left there would later pass for a complete record */
        dev_clear(r->base, KPTX_PRINTF_RING_HEADER + (used > r->read ? used : r->read));
        r->read = 0;
    }
}

static void write_out(struct kcu_pf_out *out)
{
    if (out->len) {
        /* through stdio, so that the program's own buffered output keeps its place */
        fwrite(out->p, 1, out->len, stdout);
        fflush(stdout);
    }
    free(out->p);
}

void kcu_printf_drain(bool quiescent)
{
    struct kcu_pf_out out = {0};

    if (!__atomic_load_n(&pf.rings, __ATOMIC_ACQUIRE) || kcu_ready() != CUDA_SUCCESS ||
        kcu_capture_any())
        return;
    pthread_mutex_lock(&pf.lock);
    for (struct pf_ring *r = pf.rings; r; r = r->next)
        drain_ring(r, quiescent, &out);
    pthread_mutex_unlock(&pf.lock);
    write_out(&out);
}

/* At exit: what the last kernels printed, if the program never synchronised. */
static void drain_at_exit(void)
{
    kcu_printf_drain(false);
}

/* ---- modules and contexts ---------------------------------------------------------- */

void kcu_printf_module_loaded(struct kcu_module *mod)
{
    struct pf_ring *r;
    CUdeviceptr p;
    size_t size;

    if (kcu_module_global(mod, KPTX_PRINTF_RING, &p, &size) != CUDA_SUCCESS ||
        size <= KPTX_PRINTF_RING_HEADER || size > KPTX_PRINTF_RING_BYTES ||
        !(r = calloc(1, sizeof(*r))))
        return;     /* no ring: the module has no printf the daemon could rewrite */
    r->mod = mod;
    r->base = p;
    r->size = size;
    pthread_mutex_lock(&pf.lock);
    r->next = pf.rings;
    __atomic_store_n(&pf.rings, r, __ATOMIC_RELEASE);
    if (!pf.atexit_done)
        pf.atexit_done = atexit(drain_at_exit) == 0;
    pthread_mutex_unlock(&pf.lock);
}

static void ring_free(struct pf_ring *r)
{
    while (r->formats) {
        struct pf_format *f = r->formats;
        r->formats = f->next;
        free(f->text);
        free(f);
    }
    free(r);
}

void kcu_printf_module_unloading(struct kcu_module *mod)
{
    struct pf_ring **pp, *r = NULL;

    pthread_mutex_lock(&pf.lock);
    for (pp = &pf.rings; *pp && (*pp)->mod != mod; pp = &(*pp)->next)
        ;
    r = *pp;
    pthread_mutex_unlock(&pf.lock);
    if (!r)
        return;
    /* as natively, unloading waits for the work that may still print */
    if (kcu_ready() == CUDA_SUCCESS &&
        kcu_call(kcu.client, KERNELET_OP_CTX_SYNC, NULL, 0, NULL, 0, NULL, 0, NULL) ==
            CUDA_SUCCESS)
        kcu_printf_drain(true);
    pthread_mutex_lock(&pf.lock);
    for (pp = &pf.rings; *pp && *pp != r; pp = &(*pp)->next)
        ;
    if (*pp)
        *pp = r->next;
    pthread_mutex_unlock(&pf.lock);
    ring_free(r);
}

void kcu_printf_ctx_gone(struct kcu_ctx *ctx)
{
    pthread_mutex_lock(&pf.lock);
    if (pf.stream_ctx == ctx) {
        cuStreamDestroy_v2(pf.stream);
        pf.stream_ctx = NULL;
        pf.stream = NULL;
    }
    pthread_mutex_unlock(&pf.lock);
}
