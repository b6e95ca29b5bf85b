/* Contexts: the primary context of each device, created contexts, and each thread's stack
 * of current contexts. All contexts of the process share its one kerneletd tenant, so a
 * context here is bookkeeping (flags, limits, context-local storage) rather than a
 * separate address space. */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* cuda.h maps these to their _v2 (CUDA 11); the 7.0 symbols take the same arguments, and
 * cudart still calls the old release at exit. Both are defined here. */
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);

#define STACK_MAX 64

static __thread struct kcu_ctx *ctx_stack[STACK_MAX];
static __thread int ctx_depth;
static uint64_t next_ctx_id = 1;

struct kcu_ctx *kcu_ctx_from(CUcontext c)
{
    struct kcu_ctx *x = (struct kcu_ctx *)c;

    return x && x->magic == KCU_MAGIC_CTX ? x : NULL;
}

struct kcu_ctx *kcu_ctx_current(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

CUresult kcu_ctx_require(struct kcu_ctx **out)
{
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    *out = kcu_ctx_current();
    return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* The cuda backend's default stack per GPU thread (KERNELET_CUDA_STACK_BYTES). */
#define KCU_DAEMON_STACK_BYTES 4096u

static struct kcu_ctx *ctx_new(int device, unsigned flags, bool primary)
{
    struct kcu_ctx *x = calloc(1, sizeof(*x));

    if (!x)
        return NULL;
    x->magic = KCU_MAGIC_CTX;
    x->device = device;
    x->flags = flags;
    x->primary = primary;
    x->id = __atomic_fetch_add(&next_ctx_id, 1, __ATOMIC_RELAXED);
    x->limits[CU_LIMIT_STACK_SIZE] = 1024;
    x->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
    x->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
    x->limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
    x->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
    x->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 32;
    return x;
}

CUresult kcu_primary_ctx(int d, struct kcu_ctx **out)
{
    struct kcu_device *dev = kcu_device_at(d);
    CUresult r = CUDA_SUCCESS;

    if (!dev)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&kcu.lock);
    if (!dev->primary && !(dev->primary = ctx_new(d, dev->primary_flags, true)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    *out = dev->primary;
    pthread_mutex_unlock(&kcu.lock);
    return r;
}

/* ---- primary contexts ----------------------------------------------------------------- */

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    struct kcu_ctx *x;
    CUresult r = kcu_ready();

    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = kcu_primary_ctx(dev, &x)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&kcu.lock);
    kcu.dev[dev].primary_refs++;
    x->active = true;
    pthread_mutex_unlock(&kcu.lock);
    *pctx = (CUcontext)x;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult r = kcu_initialized();
    struct kcu_device *d;

    if (r != CUDA_SUCCESS)
        return r;
    if (!(d = kcu_device_at(dev)))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&kcu.lock);
    if (d->primary_refs == 0) {
        pthread_mutex_unlock(&kcu.lock);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (--d->primary_refs == 0 && d->primary)
        d->primary->active = false;
    pthread_mutex_unlock(&kcu.lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CUresult r = kcu_initialized();
    struct kcu_device *d;
    struct kcu_ctx *x;

    if (r != CUDA_SUCCESS)
        return r;
    if (!(d = kcu_device_at(dev)))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&kcu.lock);
    x = d->primary;
    d->primary_refs = 0;
    if (x)
        x->active = false;
    pthread_mutex_unlock(&kcu.lock);
    if (x) {
        if (kcu_call(kcu.client, KERNELET_OP_CTX_SYNC, NULL, 0, NULL, 0, NULL, 0, NULL) ==
            CUDA_SUCCESS)
            kcu_printf_drain(true);
        kcu_printf_ctx_gone(x);
        kcu_cls_destroy_all(x);
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CUresult r = kcu_initialized();
    struct kcu_device *d;

    if (r != CUDA_SUCCESS)
        return r;
    if (!(d = kcu_device_at(dev)))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&kcu.lock);
    d->primary_flags = flags;
    if (d->primary)
        d->primary->flags = flags;
    pthread_mutex_unlock(&kcu.lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult r = kcu_initialized();
    struct kcu_device *d;

    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if (!(d = kcu_device_at(dev)))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&kcu.lock);
    *flags = d->primary_flags;
    *active = d->primary && d->primary->active;
    pthread_mutex_unlock(&kcu.lock);
    return CUDA_SUCCESS;
}

/* ---- created contexts and the current-context stack ----------------------------------- */

static CUresult create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUresult r = kcu_ready();
    struct kcu_ctx *x;

    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if (!kcu_device_at(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (ctx_depth == STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!(x = ctx_new(dev, flags, false)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->active = true;
    ctx_stack[ctx_depth++] = x;
    *pctx = (CUcontext)x;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                int numParams, unsigned int flags, CUdevice dev)
{
    if (numParams > 0 && paramsArray)
        return kcu_unsupported("cuCtxCreate_v3 with execution affinity");
    return create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                CUdevice dev)
{
    if (params && (params->numExecAffinityParams > 0 || params->cigParams))
        return kcu_unsupported("cuCtxCreate_v4 with affinity or CIG parameters");
    return create(pctx, flags, dev);
}

/* Removes x from this thread's stack wherever it is. */
static void unstack(struct kcu_ctx *x)
{
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] == x) {
            memmove(&ctx_stack[i], &ctx_stack[i + 1], sizeof(ctx_stack[0]) * (size_t)(ctx_depth - i - 1));
            ctx_depth--;
            i--;
        }
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    struct kcu_ctx *x = kcu_ctx_from(ctx);
    CUresult r = kcu_initialized();

    if (r != CUDA_SUCCESS)
        return r;
    if (!x)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (x->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (kcu_call(kcu.client, KERNELET_OP_CTX_SYNC, NULL, 0, NULL, 0, NULL, 0, NULL) ==
        CUDA_SUCCESS)
        kcu_printf_drain(true);
    kcu_printf_ctx_gone(x);
    kcu_cls_destroy_all(x);
    unstack(x);
    x->magic = 0;
    free(x);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    struct kcu_ctx *x = kcu_ctx_from(ctx);
    CUresult r = kcu_initialized();

    if (r != CUDA_SUCCESS)
        return r;
    if (!x)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = x;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUresult r = kcu_initialized();

    if (r != CUDA_SUCCESS)
        return r;
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_depth--;
    if (pctx)
        *pctx = (CUcontext)ctx_stack[ctx_depth];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    struct kcu_ctx *x = kcu_ctx_from(ctx);
    CUresult r = kcu_initialized();

    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx) {
        if (ctx_depth > 0)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    if (!x)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == 0)
        ctx_depth = 1;
    ctx_stack[ctx_depth - 1] = x;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult r = kcu_initialized();

    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    *pctx = (CUcontext)kcu_ctx_current();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    struct kcu_ctx *x;
    CUresult r;

    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    *device = x->device;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    struct kcu_ctx *x;

    if (!ctx)
        return cuCtxGetDevice(device);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(x = kcu_ctx_from(ctx)))
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = x->device;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
    struct kcu_ctx *x;
    CUresult r;

    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    *flags = x->flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetFlags(unsigned int flags)
{
    struct kcu_ctx *x;
    CUresult r;

    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    x->flags = flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    struct kcu_ctx *x = ctx ? kcu_ctx_from(ctx) : kcu_ctx_current();

    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    if (!x)
        return CUDA_ERROR_INVALID_CONTEXT;
    *ctxId = x->id;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    struct kcu_ctx *x = ctx ? kcu_ctx_from(ctx) : kcu_ctx_current();

    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (!x)
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 3020; /* the context ABI every CUDA since 3.2 reports */
    return CUDA_SUCCESS;
}

static CUresult synchronize(void)
{
    struct kcu_ctx *x;
    CUresult r = kcu_ctx_require(&x);

    if (r != CUDA_SUCCESS)
        return r;
    if (kcu_capture_any() && (r = kcu_capture_check_unsafe()) != CUDA_SUCCESS)
        return r;
    r = kcu_call(kcu.client, KERNELET_OP_CTX_SYNC, NULL, 0, NULL, 0, NULL, 0, NULL);
    if (r == CUDA_SUCCESS)
        kcu_printf_drain(true);
    if (r == CUDA_SUCCESS)
        r = kcu_take_async_error(kcu.client);
    return r;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    return synchronize();
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
    if (ctx && !kcu_ctx_from(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return synchronize();
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
    struct kcu_ctx *x;
    CUresult r;

    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    if ((unsigned)limit >= 16)
        return CUDA_ERROR_INVALID_VALUE;
    /* The GPU threads' stack is kerneletd's, one for every tenant (the cuda backend's
     * KERNELET_CUDA_STACK_BYTES, 4 KiB), and a fenced recursion deeper than it ends with
     * a launch failure: a program that asks for more is told so in the operator's log. */
    if (limit == CU_LIMIT_STACK_SIZE && value > KCU_DAEMON_STACK_BYTES)
        kcu_note_daemon("cuCtxSetLimit(CU_LIMIT_STACK_SIZE) above 4096 bytes (the program "
                        "keeps its value; the GPU threads' stack is kerneletd's)");
    x->limits[limit] = value;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    struct kcu_ctx *x;
    CUresult r;

    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    if ((unsigned)limit >= 16)
        return CUDA_ERROR_INVALID_VALUE;
    *pvalue = x->limits[limit];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    struct kcu_ctx *x;
    CUresult r;

    if (!pconfig)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    *pconfig = x->cache_config;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
    struct kcu_ctx *x;
    CUresult r;

    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    x->cache_config = config;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxResetPersistingL2Cache(void)
{
    return CUDA_SUCCESS;
}
