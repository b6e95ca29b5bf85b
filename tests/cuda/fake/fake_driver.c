/* A fake CUDA driver for the backend's tests (see fake_driver.h). */
#include "fake_driver.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernelet/cubin.h"
#include "kernelet/ptx.h"

#define EXPORT __attribute__((visibility("default")))
#define SLICE_SUFFIX "__kslice"

struct CUctx_st {
    int unused;
};

struct CUstream_st {
    double now;             /* virtual ns */
    uint64_t busy_until;    /* CLOCK_MONOTONIC ns: a stall kernel holds the stream */
    const volatile uint32_t *cancel; /* a spin kernel holds it until this word is set */
};

struct CUevent_st {
    double t;
    bool timing;            /* created without CU_EVENT_DISABLE_TIMING */
    uint64_t busy_until;    /* of its stream when recorded: a wait lasts until then */
    const volatile uint32_t *cancel; /* of its stream when recorded: ends the wait too */
    struct CUstream_st *stream;         /* where it was recorded */
};

struct CUmemPoolHandle_st {
    int unused;
};

struct CUfunc_st {
    struct CUfunc_st *next;
    kptx_kernel_info info;
    char *name;
};

struct fake_var {
    const char *name;       /* in the parsed module */
    void *mem;
    size_t bytes;
};

struct CUmod_st {
    kptx_module *m;         /* from PTX, or */
    kcubin *cb;             /* from a cubin */
    struct CUfunc_st *fns;
    struct fake_var *vars;
    unsigned n_vars;
};

static struct {
    pthread_mutex_t lock;
    CUresult sticky;
    int pending_fault;      /* a fault kernel ran: the next wait sees it */
    unsigned busy_queries;  /* cuEventQuery answers NOT_READY this many more times */
    struct CUctx_st ctx;
    struct CUstream_st legacy;
    struct CUmemPoolHandle_st pool;
    fake_stats stats;
    char *last_ptx;         /* the text of the last PTX module loaded */
    uint64_t stack_top;     /* what stacksave reads in an entry (0: the H100's 0xfffdc0) */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

EXPORT void fake_driver_set_stack_top(uint64_t sp)
{
    pthread_mutex_lock(&g.lock);
    g.stack_top = sp;
    pthread_mutex_unlock(&g.lock);
}

EXPORT void fake_driver_stats(fake_stats *out)
{
    pthread_mutex_lock(&g.lock);
    *out = g.stats;
    pthread_mutex_unlock(&g.lock);
}

/* The sticky error, under the lock. */
static CUresult lost(void)
{
    return g.sticky;
}

/* A wait: a fault that happened on the device shows now and from now on. */
static CUresult waited(void)
{
    if (g.pending_fault) {
        g.pending_fault = 0;
        g.sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    return g.sticky;
}

#define LOCKED(expr)                                                                       \
    do {                                                                                   \
        pthread_mutex_lock(&g.lock);                                                       \
        CUresult r_ = (expr);                                                              \
        pthread_mutex_unlock(&g.lock);                                                     \
        return r_;                                                                         \
    } while (0)

/* ---- errors -------------------------------------------------------------------------- */

static const struct { CUresult r; const char *name, *text; } errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
};

EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
    for (unsigned i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (errors[i].r == r) {
            *s = errors[i].name;
            return CUDA_SUCCESS;
        }
    *s = "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s)
{
    for (unsigned i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (errors[i].r == r) {
            *s = errors[i].text;
            return CUDA_SUCCESS;
        }
    *s = "unknown error";
    return CUDA_SUCCESS;
}

/* ---- device and context ---------------------------------------------------------------- */

EXPORT CUresult cuInit(unsigned flags)
{
    return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    (void)d;
    snprintf(name, (size_t)len, "%s", FAKE_DEVICE_NAME);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
    (void)d;
    *bytes = (size_t)80 << 30;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    return fake_h100_attribute(a, v) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned flags)
{
    (void)d;
    (void)flags;
    return CUDA_SUCCESS;
}

/* FAKE_CUDA_STICKY_PROCESS=1 in the environment: as on a real GPU, a sticky error outlives
 * cuDevicePrimaryCtxReset in this process, and the context cannot be retained again. */
static int sticky_process(void)
{
    const char *v = getenv("FAKE_CUDA_STICKY_PROCESS");
    return v && *v == '1';
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    (void)d;
    pthread_mutex_lock(&g.lock);
    CUresult r = sticky_process() ? g.sticky : CUDA_SUCCESS;
    pthread_mutex_unlock(&g.lock);
    *c = &g.ctx;
    return r;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
    (void)d;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice d)
{
    (void)d;
    pthread_mutex_lock(&g.lock);
    if (!sticky_process())
        g.sticky = CUDA_SUCCESS;
    g.pending_fault = 0;
    g.stats.ctx_resets++;
    pthread_mutex_unlock(&g.lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
    return c == &g.ctx || !c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    LOCKED(waited());
}

/* The stack size only (the one limit the backend sets), 1024 as the driver's default. */
EXPORT CUresult cuCtxGetLimit(size_t *value, CUlimit limit)
{
    if (!value || limit != CU_LIMIT_STACK_SIZE)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    pthread_mutex_lock(&g.lock);
    *value = g.stats.stack_bytes ? g.stats.stack_bytes : 1024;
    pthread_mutex_unlock(&g.lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    if (limit != CU_LIMIT_STACK_SIZE)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    pthread_mutex_lock(&g.lock);
    g.stats.stack_bytes = value;
    pthread_mutex_unlock(&g.lock);
    return CUDA_SUCCESS;
}

/* ---- streams and events ---------------------------------------------------------------- */

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
    (void)flags;
    *s = calloc(1, sizeof(**s));
    return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuStreamDestroy(CUstream s)
{
    free(s);
    return CUDA_SUCCESS;
}

static CUstream stream_of(CUstream s)
{
    return s ? s : &g.legacy;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    (void)s;
    LOCKED(waited());
}

EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
    (void)flags;
    pthread_mutex_lock(&g.lock);
    CUstream st = stream_of(s);
    if (e->t > st->now)
        st->now = e->t;
    CUresult r = lost();
    pthread_mutex_unlock(&g.lock);
    return r;
}

/* Stream memory operations: the fake's streams never wait, so a gate costs no time. */
EXPORT CUresult cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t v, unsigned flags)
{
    (void)s, (void)addr, (void)v, (void)flags;
    LOCKED(lost());
}

EXPORT CUresult cuStreamWriteValue32(CUstream s, CUdeviceptr addr, cuuint32_t v, unsigned flags)
{
    (void)s, (void)addr, (void)v, (void)flags;
    LOCKED(lost());
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    *e = calloc(1, sizeof(**e));
    if (*e)
        (*e)->timing = !(flags & CU_EVENT_DISABLE_TIMING);
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuEventDestroy(CUevent e)
{
    free(e);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    pthread_mutex_lock(&g.lock);
    e->t = stream_of(s)->now;
    e->busy_until = stream_of(s)->busy_until;
    e->cancel = stream_of(s)->cancel;
    e->stream = stream_of(s);
    g.stats.event_records++;
    CUresult r = lost();
    pthread_mutex_unlock(&g.lock);
    return r;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether the stall or spin kernels before e still run. A spin seen cancelled has ended:
 * its stream is free from now on (the backend lowers the word again later). Called with
 * the lock held. */
static bool event_busy(struct CUevent_st *e)
{
    if (e->cancel && __atomic_load_n(e->cancel, __ATOMIC_SEQ_CST)) {
        if (e->stream && e->stream->cancel == e->cancel) {
            e->stream->busy_until = wall_ns();
            e->stream->cancel = NULL;
        }
        e->cancel = NULL;
        e->busy_until = 0;
        return false;
    }
    return wall_ns() < e->busy_until;
}

/* Waits out the stall kernels before e, in real time (a spin kernel: until cancelled). */
EXPORT CUresult cuEventSynchronize(CUevent e)
{
    pthread_mutex_lock(&g.lock);
    while (event_busy(e)) {
        pthread_mutex_unlock(&g.lock);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&g.lock);
    }
    pthread_mutex_unlock(&g.lock);
    pthread_mutex_lock(&g.lock);
    g.stats.event_syncs++;
    g.busy_queries = 0;
    CUresult r = waited();
    pthread_mutex_unlock(&g.lock);
    return r;
}

/* Not ready while a stall kernel before e runs, or while fake_driver_events_busy says so. */
EXPORT CUresult cuEventQuery(CUevent e)
{
    pthread_mutex_lock(&g.lock);
    g.stats.event_queries++;
    CUresult r = g.busy_queries ? (g.busy_queries--, CUDA_ERROR_NOT_READY)
                 : event_busy(e) ? CUDA_ERROR_NOT_READY
                                             : waited();
    pthread_mutex_unlock(&g.lock);
    return r;
}

EXPORT void fake_driver_events_busy(unsigned n)
{
    pthread_mutex_lock(&g.lock);
    g.busy_queries = n;
    pthread_mutex_unlock(&g.lock);
}

EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    if (!a->timing || !b->timing)
        return CUDA_ERROR_INVALID_HANDLE;     /* as the driver answers */
    pthread_mutex_lock(&g.lock);
    *ms = (float)((b->t - a->t) / 1e6);
    CUresult r = lost();
    pthread_mutex_unlock(&g.lock);
    return r;
}

/* ---- memory ---------------------------------------------------------------------------- */

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *p, CUdevice d)
{
    (void)d;
    *p = &g.pool;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
    (void)p;
    (void)a;
    (void)v;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes)
{
    pthread_mutex_lock(&g.lock);
    CUresult r = lost();
    void *m = NULL;
    if (r == CUDA_SUCCESS && bytes > ((size_t)1 << 36))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && !(m = aligned_alloc(256, (bytes + 255) / 256 * 256)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        /* What a real device hands out: whatever the last user left there. */
        memset(m, 0xa5, bytes);
        *p = (CUdeviceptr)(uintptr_t)m;
        g.stats.live_allocations++;
    }
    pthread_mutex_unlock(&g.lock);
    return r;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s)
{
    (void)s;
    return cuMemAlloc(p, bytes);
}

EXPORT CUresult cuMemFree(CUdeviceptr p)
{
    pthread_mutex_lock(&g.lock);
    free((void *)(uintptr_t)p);
    g.stats.live_allocations--;
    pthread_mutex_unlock(&g.lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    (void)s;
    return cuMemFree(p);
}

/* Pinned host memory mapped for the device: host memory, which the fake's "device"
 * reaches at the same address. */
EXPORT CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    (void)flags;
    pthread_mutex_lock(&g.lock);
    CUresult r = lost();
    if (r == CUDA_SUCCESS && !(*p = calloc(1, bytes ? bytes : 1)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&g.lock);
    return r;
}

EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned int flags)
{
    (void)flags;
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* Registered host memory: the fake's "device" reaches it where it lies. */
EXPORT CUresult cuMemHostRegister(void *p, size_t bytes, unsigned int flags)
{
    pthread_mutex_lock(&g.lock);
    CUresult r = lost();
    if (r == CUDA_SUCCESS && (!p || !bytes))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        g.stats.host_registered++;
        g.stats.last_register_flags = flags;
    }
    pthread_mutex_unlock(&g.lock);
    return r;
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
    pthread_mutex_lock(&g.lock);
    CUresult r = p && g.stats.host_registered ? CUDA_SUCCESS
                                              : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    if (r == CUDA_SUCCESS)
        g.stats.host_registered--;
    pthread_mutex_unlock(&g.lock);
    return r;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    free(p);
    return CUDA_SUCCESS;
}

static CUresult copy(void *dst, const void *src, size_t n)
{
    pthread_mutex_lock(&g.lock);
    CUresult r = lost();
    if (r == CUDA_SUCCESS)
        memmove(dst, src, n);
    pthread_mutex_unlock(&g.lock);
    return r;
}

EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
    (void)s;
    return copy((void *)(uintptr_t)d, h, n);
}

EXPORT CUresult cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n)
{
    return copy((void *)(uintptr_t)d, h, n);
}

EXPORT CUresult cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s)
{
    (void)s;
    return copy(h, (const void *)(uintptr_t)d, n);
}

EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s)
{
    (void)s;
    return copy((void *)(uintptr_t)d, (const void *)(uintptr_t)src, n);
}

EXPORT CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n)
{
    return cuMemsetD8Async(d, v, n, NULL);
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    (void)s;
    pthread_mutex_lock(&g.lock);
    CUresult r = lost();
    if (r == CUDA_SUCCESS)
        memset((void *)(uintptr_t)d, v, n);
    pthread_mutex_unlock(&g.lock);
    return r;
}

/* ---- modules and functions ------------------------------------------------------------- */

static void write_log(unsigned n, const CUjit_option *opt, void **val, const kptx_error *e)
{
    char *buf = NULL;
    size_t size = 0;
    for (unsigned i = 0; i < n; i++) {
        if (opt[i] == CU_JIT_ERROR_LOG_BUFFER)
            buf = val[i];
        else if (opt[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            size = (size_t)(uintptr_t)val[i];
    }
    if (buf && size)
        snprintf(buf, size, "ptxas info    : fake\nptxas application ptx input, line %u; "
                 "error   : %s\nptxas fatal   : Ptx assembly aborted due to errors\n",
                 e->line, e->message);
}

/* Bytes of one element of a PTX type: the number in its name in bits (".u32", ".b8",
 * ".f64"), 8 for the references (".texref"). */
static size_t type_bytes(const char *type)
{
    size_t n = strlen(type), i = n;
    while (i > 0 && type[i - 1] >= '0' && type[i - 1] <= '9')
        i--;
    return i < n ? (size_t)strtoul(type + i, NULL, 10) / 8 : 8;
}

static size_t var_bytes(const kptx_var *v)
{
    size_t elem = type_bytes(v->type) * (v->vec ? v->vec : 1), n = 1;
    for (unsigned d = 1; d < v->n_dims; d++)
        n *= v->dims[d];
    if (v->n_dims && v->dims[0])
        n *= v->dims[0];
    else if (v->n_dims)     /* "[]": sized by the initialiser */
        n = v->n_init ? (v->n_init + n - 1) / n * n : n;
    size_t bytes = elem * n;
    return bytes ? bytes : 1;
}

/* Zeroed memory for every module-scope .global and .const variable that is not .extern. */
static CUresult alloc_vars(struct CUmod_st *mod)
{
    for (unsigned i = 0; i < mod->m->n_items; i++) {
        const kptx_item *it = &mod->m->items[i];
        if (it->kind != KPTX_ITEM_VAR)
            continue;
        const kptx_var *v = &it->u.var;
        if ((v->space != KPTX_SPACE_GLOBAL && v->space != KPTX_SPACE_CONST) ||
            (v->linkage && !strcmp(v->linkage, ".extern")))
            continue;
        struct fake_var *grown = realloc(mod->vars, (mod->n_vars + 1) * sizeof(*grown));
        if (!grown)
            return CUDA_ERROR_OUT_OF_MEMORY;
        mod->vars = grown;
        struct fake_var *fv = &mod->vars[mod->n_vars];
        fv->name = v->name;
        fv->bytes = var_bytes(v);
        if (!(fv->mem = calloc(1, fv->bytes)))
            return CUDA_ERROR_OUT_OF_MEMORY;
        mod->n_vars++;
    }
    return CUDA_SUCCESS;
}

/* A cubin's variables: from its symbol table. */
static CUresult alloc_cubin_vars(struct CUmod_st *mod)
{
    if (!(mod->vars = calloc(mod->cb->n_globals + 1, sizeof(*mod->vars))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < mod->cb->n_globals; i++) {
        struct fake_var *fv = &mod->vars[mod->n_vars];
        fv->name = mod->cb->globals[i].name;
        fv->bytes = mod->cb->globals[i].size;
        if (!(fv->mem = calloc(1, fv->bytes ? fv->bytes : 1)))
            return CUDA_ERROR_OUT_OF_MEMORY;
        mod->n_vars++;
    }
    return CUDA_SUCCESS;
}

/* An nvcc cubin ends with its section headers: its size from the ELF header. */
static size_t cubin_size(const unsigned char *p)
{
    uint64_t shoff;
    uint16_t entsize, count;
    memcpy(&shoff, p + 0x28, 8);
    memcpy(&entsize, p + 0x3a, 2);
    memcpy(&count, p + 0x3c, 2);
    return (size_t)(shoff + (uint64_t)entsize * count);
}

static CUresult load_module(struct CUmod_st *mod, const void *image, unsigned n,
                            CUjit_option *opt, void **val)
{
    kptx_error e;
    if (!memcmp(image, "\177ELF", 4)) {
        if (kcubin_open(image, cubin_size(image), &mod->cb, &e))
            return CUDA_ERROR_INVALID_IMAGE;
        return alloc_cubin_vars(mod);
    }
    const char *text = image;
    kptx_module *m;
    if (kptx_parse(text, strlen(text), &m, &e)) {
        write_log(n, opt, val, &e);
        return CUDA_ERROR_INVALID_PTX;
    }
    mod->m = m;
    char *copy = strdup(text);
    pthread_mutex_lock(&g.lock);
    free(g.last_ptx);
    g.last_ptx = copy;
    pthread_mutex_unlock(&g.lock);
    return alloc_vars(mod);
}

EXPORT char *fake_driver_last_ptx(void)
{
    pthread_mutex_lock(&g.lock);
    char *copy = g.last_ptx ? strdup(g.last_ptx) : NULL;
    pthread_mutex_unlock(&g.lock);
    return copy;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned n,
                                   CUjit_option *opt, void **val)
{
    pthread_mutex_lock(&g.lock);
    CUresult r = lost();
    pthread_mutex_unlock(&g.lock);
    if (r != CUDA_SUCCESS)
        return r;
    CUmodule m = calloc(1, sizeof(*m));
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = load_module(m, image, n, opt, val)) != CUDA_SUCCESS) {
        cuModuleUnload(m);      /* *mod untouched, as the real driver leaves it */
        return r;
    }
    *mod = m;
    pthread_mutex_lock(&g.lock);
    g.stats.module_loads++;
    pthread_mutex_unlock(&g.lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
    return cuModuleLoadDataEx(mod, image, 0, NULL, NULL);
}

EXPORT CUresult cuModuleUnload(CUmodule mod)
{
    while (mod->fns) {
        struct CUfunc_st *f = mod->fns;
        mod->fns = f->next;
        kptx_kernel_info_clear(&f->info);
        free(f->name);
        free(f);
    }
    for (unsigned i = 0; i < mod->n_vars; i++)
        free(mod->vars[i].mem);
    free(mod->vars);
    kptx_module_free(mod->m);
    kcubin_free(mod->cb);
    free(mod);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule mod,
                                  const char *name)
{
    pthread_mutex_lock(&g.lock);
    CUresult r = lost();
    pthread_mutex_unlock(&g.lock);
    if (r != CUDA_SUCCESS)
        return r;
    for (unsigned i = 0; i < mod->n_vars; i++)
        if (!strcmp(mod->vars[i].name, name)) {
            if (dptr)
                *dptr = (CUdeviceptr)(uintptr_t)mod->vars[i].mem;
            if (bytes)
                *bytes = mod->vars[i].bytes;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

/* A cubin kernel's layout in the PTX library's form (what the launches read). */
static int cubin_info(const kcubin_kernel *k, kptx_kernel_info *info)
{
    memset(info, 0, sizeof(*info));
    if (!(info->params = calloc(k->n_params + 1, sizeof(*info->params))))
        return -1;
    info->n_params = k->n_params;
    info->param_bytes = k->param_bytes;
    for (unsigned i = 0; i < k->n_params; i++)
        info->params[i] = (kptx_param_info){NULL, k->params[i].offset, k->params[i].size, 1};
    return 0;
}

static int function_info(CUmodule mod, const char *name, kptx_kernel_info *info)
{
    if (mod->cb)
        return cubin_info(kcubin_find_kernel(mod->cb, name), info);
    return kptx_kernel_info_get(mod->m, name, info, NULL);
}

EXPORT CUresult cuModuleGetFunction(CUfunction *fn, CUmodule mod, const char *name)
{
    const kptx_function *k = mod->m ? kptx_find_function(mod->m, name) : NULL;
    if (mod->cb ? !kcubin_find_kernel(mod->cb, name) : !k || !k->is_entry)
        return CUDA_ERROR_NOT_FOUND;
    struct CUfunc_st *f = calloc(1, sizeof(*f));
    if (!f || !(f->name = strdup(name)) || function_info(mod, name, &f->info)) {
        if (f)
            free(f->name);
        free(f);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    f->next = mod->fns;
    mod->fns = f;
    *fn = f;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
    (void)f;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 32; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = 0; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = 49152; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
    (void)f;
    return a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && v <= 232448
               ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    if (i >= f->info.n_params)
        return CUDA_ERROR_INVALID_VALUE;
    *off = f->info.params[i].offset;
    if (size)
        *size = f->info.params[i].size;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int threads,
                                                            size_t smem)
{
    (void)f;
    (void)smem;
    if (threads <= 0 || threads > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    *n = 2048 / threads > 32 ? 32 : 2048 / threads;
    return CUDA_SUCCESS;
}

/* ---- launches -------------------------------------------------------------------------- */

/* The kernel's parameter block from kernelParams or extra; NULL with *r set on error. */
static unsigned char *param_block(const struct CUfunc_st *f, void **params, void **extra,
                                  CUresult *r)
{
    size_t need = f->info.param_bytes;
    unsigned char *b = calloc(1, need ? need : 1);
    *r = b ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    if (!b)
        return NULL;
    if (extra) {
        void *ptr = NULL;
        size_t *size = NULL;
        for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                ptr = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                size = extra[i + 1];
        }
        if (!ptr || !size || *size != need)
            *r = CUDA_ERROR_INVALID_VALUE;  /* the real driver wants the exact size */
        else
            memcpy(b, ptr, need);
    } else if (params) {
        for (unsigned i = 0; i < f->info.n_params; i++)
            memcpy(b + f->info.params[i].offset, params[i], f->info.params[i].size);
    } else if (need) {
        *r = CUDA_ERROR_INVALID_VALUE;
    }
    if (*r != CUDA_SUCCESS) {
        free(b);
        return NULL;
    }
    return b;
}

static uint32_t u32_at(const unsigned char *b, size_t off)
{
    uint32_t v;
    memcpy(&v, b + off, sizeof(v));
    return v;
}

static uint64_t u64_at(const unsigned char *b, uint32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof(v));
    return v;
}

/* The length of f's name without the slice suffix; *sliced: whether it had one. */
static size_t base_length(const struct CUfunc_st *f, bool *sliced)
{
    size_t n = strlen(f->name), k = strlen(SLICE_SUFFIX);
    *sliced = n > k && !strcmp(f->name + n - k, SLICE_SUFFIX);
    return *sliced ? n - k : n;
}

/* What the fake kernels do (fake_driver.h). */
static void run(const struct CUfunc_st *f, const unsigned char *b, uint64_t blocks)
{
    bool sliced;
    size_t base = base_length(f, &sliced);
    if (base == 5 && !strncmp(f->name, "fault", 5)) {
        g.pending_fault = 1;
        return;
    }
    if (base < 12 || strncmp(f->name, "count_blocks", 12) || !f->info.n_params)
        return;
    uint32_t *counts = (uint32_t *)(uintptr_t)u64_at(b, f->info.params[0].offset);
    uint64_t first = sliced ? u32_at(b, f->info.params[f->info.n_params - 4].offset) : 0;
    for (uint64_t i = 0; i < blocks; i++)
        counts[first + i]++;
}

/* The kernels of the control words (kernelet/ptx.h, "Control"), both taking (.u64 cancel,
 * .u64 fault) as a fenced kernel gets them (their sliced variants too): spin holds its
 * stream until the cancel word is set, as a fenced loop that never ends would; asserts
 * writes the assert's fault code, overflows the stack guard's. */
static void control(const struct CUfunc_st *f, const unsigned char *b, CUstream s)
{
    bool sliced;
    size_t base = base_length(f, &sliced);
    bool spin = base == 4 && !strncmp(f->name, "spin", 4);
    bool asserts = base == 7 && !strncmp(f->name, "asserts", 7);
    bool overflows = base == 9 && !strncmp(f->name, "overflows", 9);
    if ((!spin && !asserts && !overflows) || f->info.n_params < 2 || f->info.params[0].size != 8 ||
        f->info.params[1].size != 8)
        return;
    uint64_t cancel = u64_at(b, f->info.params[0].offset);
    uint64_t fault = u64_at(b, f->info.params[1].offset);
    if (spin) {
        s->busy_until = UINT64_MAX;
        s->cancel = (const volatile uint32_t *)(uintptr_t)cancel;
    } else {
        __atomic_store_n((uint32_t *)(uintptr_t)fault,
                         (uint32_t)(asserts ? KPTX_FAULT_ASSERT : KPTX_FAULT_STACK),
                         __ATOMIC_SEQ_CST);
    }
}

/* stall(.u32 ms) keeps its stream busy for ms of real time after what is queued there. */
static void stall(const struct CUfunc_st *f, const unsigned char *b, CUstream s)
{
    if (strcmp(f->name, "stall") || f->info.n_params != 1)
        return;
    uint64_t now = wall_ns(), from = s->busy_until > now ? s->busy_until : now;
    s->busy_until = from + (uint64_t)u32_at(b, f->info.params[0].offset) * 1000000u;
    s->cancel = NULL;
}

/* kcuda_stack_top(.u64 out): stores what stacksave would read in an entry, as the
 * backend's probe of where stacks start (stack.c) expects. */
static void stack_top(const struct CUfunc_st *f, const unsigned char *b)
{
    if (strcmp(f->name, "kcuda_stack_top") || f->info.n_params != 1)
        return;
    uint64_t sp = g.stack_top ? g.stack_top : 0xfffdc0u;
    memcpy((void *)(uintptr_t)u64_at(b, f->info.params[0].offset), &sp, sizeof(sp));
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned smem,
                               CUstream s, void **params, void **extra)
{
    (void)smem;
    if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r;
    unsigned char *b = param_block(f, params, extra, &r);
    if (!b)
        return r;
    pthread_mutex_lock(&g.lock);
    r = lost();
    if (r == CUDA_SUCCESS) {
        uint64_t blocks = (uint64_t)gx * gy * gz;
        run(f, b, blocks);
        stall(f, b, stream_of(s));
        control(f, b, stream_of(s));
        stack_top(f, b);
        stream_of(s)->now += FAKE_LAUNCH_NS + FAKE_BLOCK_NS * (double)blocks;
        g.stats.launches++;
        g.stats.last_grid[0] = gx;
        g.stats.last_grid[1] = gy;
        g.stats.last_grid[2] = gz;
        g.stats.last_param_bytes = f->info.param_bytes;
    }
    pthread_mutex_unlock(&g.lock);
    free(b);
    return r;
}

/* The attributes the backend passes (clusters, cooperative) are recorded; the launch runs
 * as cuLaunchKernel's. */
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
                                 void **extra)
{
    unsigned cluster[3] = {1, 1, 1}, cooperative = 0;
    if (!c || (c->numAttrs && !c->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            cluster[0] = c->attrs[i].value.clusterDim.x;
            cluster[1] = c->attrs[i].value.clusterDim.y;
            cluster[2] = c->attrs[i].value.clusterDim.z;
        } else if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
            cooperative = c->attrs[i].value.cooperative;
        }
    }
    CUresult r = cuLaunchKernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                                c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream,
                                params, extra);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&g.lock);
        memcpy(g.stats.last_cluster, cluster, sizeof(cluster));
        g.stats.last_cooperative = cooperative;
        pthread_mutex_unlock(&g.lock);
    }
    return r;
}
