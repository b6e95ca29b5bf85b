/* Streams: handles of the daemon's streams. NULL means the legacy default stream (stream
 * 0 of the tenant) or, for the per-thread entry points, the calling thread's own default
 * stream, created on first use; CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name them
 * explicitly. */
#include <stdlib.h>

#include "graph_internal.h"

static __thread uint64_t thread_stream;
static pthread_key_t thread_stream_key;
static pthread_once_t thread_stream_once = PTHREAD_ONCE_INIT;

static void thread_stream_exit(void *arg)
{
    if (kcu_ready() == CUDA_SUCCESS)
        kcu_call_handle(kcu.client, KERNELET_OP_STREAM_DESTROY, (uint64_t)(uintptr_t)arg);
}

static void thread_stream_key_init(void)
{
    pthread_key_create(&thread_stream_key, thread_stream_exit);
}

static CUresult create_handle(unsigned flags, int priority, uint64_t *out)
{
    struct kernelet_stream_create q = {.flags = flags, .priority = priority};
    struct kernelet_handle h;
    CUresult r = kcu_call(kcu.client, KERNELET_OP_STREAM_CREATE, &q, sizeof(q), NULL, 0, &h,
                          sizeof(h), NULL);

    if (r == CUDA_SUCCESS)
        *out = h.handle;
    return r;
}

/* The per-thread default stream: a blocking stream of its own (it synchronises with the
 * legacy stream, not with other streams). */
static CUresult per_thread_stream(uint64_t *out)
{
    CUresult r;

    if (thread_stream) {
        *out = thread_stream;
        return CUDA_SUCCESS;
    }
    if ((r = create_handle(0, 0, &thread_stream)) != CUDA_SUCCESS)
        return r;
    pthread_once(&thread_stream_once, thread_stream_key_init);
    pthread_setspecific(thread_stream_key, (void *)(uintptr_t)thread_stream);
    *out = thread_stream;
    return CUDA_SUCCESS;
}

static struct kcu_stream *stream_from(CUstream s)
{
    struct kcu_stream *x = (struct kcu_stream *)s;

    return x && x->magic == KCU_MAGIC_STREAM ? x : NULL;
}

CUresult kcu_stream_handle(CUstream s, bool per_thread, uint64_t *handle)
{
    struct kcu_stream *x;
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (s == CU_STREAM_PER_THREAD || (s == NULL && per_thread))
        return per_thread_stream(handle);
    if (s == NULL || s == CU_STREAM_LEGACY) {
        *handle = KERNELET_STREAM_LEGACY;
        return CUDA_SUCCESS;
    }
    if (!(x = stream_from(s)))
        return CUDA_ERROR_INVALID_HANDLE;
    *handle = x->handle;
    return CUDA_SUCCESS;
}

static CUresult stream_create(CUstream *ph, unsigned flags, int priority)
{
    struct kcu_ctx *ctx;
    struct kcu_stream *x;
    CUresult r;

    if (!ph || (flags & ~CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&ctx)) != CUDA_SUCCESS)
        return r;
    if (!(x = calloc(1, sizeof(*x))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = create_handle((flags & CU_STREAM_NON_BLOCKING) ? KERNELET_STREAM_NON_BLOCKING : 0,
                      priority, &x->handle);
    if (r != CUDA_SUCCESS) {
        free(x);
        return r;
    }
    x->magic = KCU_MAGIC_STREAM;
    x->ctx = ctx;
    x->flags = flags;
    x->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    *ph = (CUstream)x;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return stream_create(phStream, Flags, 0);
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    return stream_create(phStream, flags, priority);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    struct kcu_stream *x = stream_from(hStream);
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!x)
        return CUDA_ERROR_INVALID_HANDLE;
    if (kcu_capture_any())
        kcu_capture_forget_stream(x->handle);
    r = kcu_call_handle(kcu.client, KERNELET_OP_STREAM_DESTROY, x->handle);
    x->magic = 0;
    free(x);
    return r;
}

static CUresult sync_or_query(CUstream s, bool pt, uint16_t op)
{
    uint64_t h;
    CUresult r = kcu_stream_handle(s, pt, &h);

    if (r != CUDA_SUCCESS)
        return r;
    if (kcu_capture_any() && (r = kcu_capture_check_stream(h)) != CUDA_SUCCESS)
        return r;
    r = kcu_call_handle(kcu.client, op, h);
    if (r == CUDA_SUCCESS && op == KERNELET_OP_STREAM_SYNC)
        kcu_printf_drain(false);
    if (r == CUDA_SUCCESS && op == KERNELET_OP_STREAM_SYNC)
        r = kcu_take_async_error(kcu.client);
    return r;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream s) { return sync_or_query(s, false, KERNELET_OP_STREAM_SYNC); }
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s) { return sync_or_query(s, true, KERNELET_OP_STREAM_SYNC); }
CUresult CUDAAPI cuStreamQuery(CUstream s) { return sync_or_query(s, false, KERNELET_OP_STREAM_QUERY); }
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s) { return sync_or_query(s, true, KERNELET_OP_STREAM_QUERY); }

CUresult kcu_stream_wait_on(uint64_t stream, const struct kcu_event *ev)
{
    struct kernelet_rec_event rec = {.h = {.op = KERNELET_REC_STREAM_WAIT, .length = sizeof(rec),
                                           .stream = stream},
                                     .event = ev->handle};

    if (!ev->recorded)
        return CUDA_SUCCESS; /* waiting for an event never recorded completes at once */
    return kcu_batch_add(kcu.client, &rec, sizeof(rec), NULL, 0);
}

CUresult kcu_stream_wait_event(uint64_t stream, struct kcu_event *ev, unsigned flags)
{
    bool taken = false;
    CUresult r;

    if (kcu_capture_any() &&
        ((r = kcu_capture_stream_wait(stream, ev, flags, &taken)) != CUDA_SUCCESS || taken))
        return r;
    return kcu_stream_wait_on(stream, ev);
}

static CUresult wait_event(CUstream s, CUevent e, unsigned flags, bool pt)
{
    struct kcu_event *ev = kcu_event_from(e);
    uint64_t stream;
    CUresult r = kcu_stream_handle(s, pt, &stream);

    if (r != CUDA_SUCCESS)
        return r;
    if (!ev || flags > 1)
        return CUDA_ERROR_INVALID_HANDLE;
    return kcu_stream_wait_event(stream, ev, flags);
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int f) { return wait_event(s, e, f, false); }
CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int f) { return wait_event(s, e, f, true); }

static CUresult stream_info(CUstream s, struct kcu_stream **out)
{
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    *out = (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) ? NULL : stream_from(s);
    if (!*out && s != NULL && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

static CUresult get_flags(CUstream s, unsigned *flags)
{
    struct kcu_stream *x;
    CUresult r = flags ? stream_info(s, &x) : CUDA_ERROR_INVALID_VALUE;

    if (r == CUDA_SUCCESS)
        *flags = x ? x->flags : 0;
    return r;
}

static CUresult get_priority(CUstream s, int *priority)
{
    struct kcu_stream *x;
    CUresult r = priority ? stream_info(s, &x) : CUDA_ERROR_INVALID_VALUE;

    if (r == CUDA_SUCCESS)
        *priority = x ? x->priority : 0;
    return r;
}

static CUresult get_ctx(CUstream s, CUcontext *pctx)
{
    struct kcu_stream *x;
    CUresult r = pctx ? stream_info(s, &x) : CUDA_ERROR_INVALID_VALUE;

    if (r == CUDA_SUCCESS)
        *pctx = (CUcontext)(x ? x->ctx : kcu_ctx_current());
    return r;
}

static CUresult get_id(CUstream s, bool pt, unsigned long long *id)
{
    uint64_t h;
    CUresult r = id ? kcu_stream_handle(s, pt, &h) : CUDA_ERROR_INVALID_VALUE;

    if (r == CUDA_SUCCESS)
        *id = h;
    return r;
}

CUresult CUDAAPI cuStreamGetFlags(CUstream s, unsigned int *f) { return get_flags(s, f); }
CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream s, unsigned int *f) { return get_flags(s, f); }
CUresult CUDAAPI cuStreamGetPriority(CUstream s, int *p) { return get_priority(s, p); }
CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream s, int *p) { return get_priority(s, p); }
CUresult CUDAAPI cuStreamGetCtx(CUstream s, CUcontext *c) { return get_ctx(s, c); }
CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream s, CUcontext *c) { return get_ctx(s, c); }
CUresult CUDAAPI cuStreamGetId(CUstream s, unsigned long long *id) { return get_id(s, false, id); }
CUresult CUDAAPI cuStreamGetId_ptsz(CUstream s, unsigned long long *id) { return get_id(s, true, id); }
