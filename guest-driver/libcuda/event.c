/* Events: recorded into stream order by a batch record; synchronised, queried and timed
 * through the daemon. */
#include <stdlib.h>

#include "graph_internal.h"

/* cuda.h maps cuEventElapsedTime to its _v2; both symbols are defined here. */
#undef cuEventElapsedTime
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent s, CUevent e);

static struct kcu_event *event_from(CUevent e)
{
    struct kcu_event *x = (struct kcu_event *)e;

    return x && x->magic == KCU_MAGIC_EVENT ? x : NULL;
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    struct kernelet_event_create q = {0};
    struct kernelet_handle h;
    struct kcu_event *x;
    struct kcu_ctx *ctx;
    CUresult r;

    if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                         CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&ctx)) != CUDA_SUCCESS)
        return r;
    if (Flags & CU_EVENT_INTERPROCESS)
        return kcu_unsupported("cuEventCreate(CU_EVENT_INTERPROCESS)");
    if (Flags & CU_EVENT_DISABLE_TIMING)
        q.flags |= KERNELET_EVENT_DISABLE_TIMING;
    if (!(x = calloc(1, sizeof(*x))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = kcu_call(kcu.client, KERNELET_OP_EVENT_CREATE, &q, sizeof(q), NULL, 0, &h, sizeof(h), NULL);
    if (r != CUDA_SUCCESS) {
        free(x);
        return r;
    }
    x->magic = KCU_MAGIC_EVENT;
    x->handle = h.handle;
    x->flags = Flags;
    *phEvent = (CUevent)x;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
    struct kcu_event *x = event_from(hEvent);
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!x)
        return CUDA_ERROR_INVALID_HANDLE;
    if (kcu_capture_any())
        kcu_capture_forget_event(x); /* its address may come back as another event */
    r = kcu_call_handle(kcu.client, KERNELET_OP_EVENT_DESTROY, x->handle);
    x->magic = 0;
    free(x);
    return r;
}

struct kcu_event *kcu_event_from(CUevent e)
{
    return event_from(e);
}

CUresult kcu_event_record_on(struct kcu_event *x, uint64_t stream)
{
    struct kernelet_rec_event rec = {.h = {.op = KERNELET_REC_EVENT_RECORD, .length = sizeof(rec),
                                           .stream = stream},
                                     .event = x->handle};
    CUresult r = kcu_batch_add(kcu.client, &rec, sizeof(rec), NULL, 0);

    if (r == CUDA_SUCCESS)
        x->recorded = true;
    return r;
}

CUresult kcu_event_record_stream(struct kcu_event *x, uint64_t stream)
{
    bool taken = false;
    CUresult r;

    if (kcu_capture_any() &&
        ((r = kcu_capture_event_record(stream, x, &taken)) != CUDA_SUCCESS || taken))
        return r;
    return kcu_event_record_on(x, stream);
}

/* An external record on a capturing stream is an event-record node of the capture. */
static CUresult record_external(struct kcu_event *x, uint64_t stream, bool *taken)
{
    struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD, .u.event = x};

    *taken = false;
    return kcu_capture_any() ? kcu_capture_take(stream, &op, taken) : CUDA_SUCCESS;
}

static CUresult record(CUevent e, CUstream s, bool pt, unsigned flags)
{
    struct kcu_event *x = event_from(e);
    uint64_t stream;
    bool taken = false;
    CUresult r = kcu_stream_handle(s, pt, &stream);

    if (r != CUDA_SUCCESS)
        return r;
    if (!x)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_EVENT_RECORD_EXTERNAL) &&
        ((r = record_external(x, stream, &taken)) != CUDA_SUCCESS || taken))
        return r;
    return kcu_event_record_stream(x, stream);
}

CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) { return record(e, s, false, 0); }
CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s) { return record(e, s, true, 0); }
CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int f)
{
    return record(e, s, false, f);
}
CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int f)
{
    return record(e, s, true, f);
}

static CUresult ask(CUevent e, uint16_t op)
{
    struct kcu_event *x = event_from(e);
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!x)
        return CUDA_ERROR_INVALID_HANDLE;
    if (kcu_capture_any() && (r = kcu_capture_check_event(x)) != CUDA_SUCCESS)
        return r;
    if (!x->recorded)
        return CUDA_SUCCESS; /* an event never recorded counts as complete */
    r = kcu_call_handle(kcu.client, op, x->handle);
    if (r == CUDA_SUCCESS && op == KERNELET_OP_EVENT_SYNC)
        kcu_printf_drain(false);
    if (r == CUDA_SUCCESS && op == KERNELET_OP_EVENT_SYNC)
        r = kcu_take_async_error(kcu.client);
    return r;
}

CUresult CUDAAPI cuEventSynchronize(CUevent e) { return ask(e, KERNELET_OP_EVENT_SYNC); }
CUresult CUDAAPI cuEventQuery(CUevent e) { return ask(e, KERNELET_OP_EVENT_QUERY); }

static CUresult elapsed(float *ms, CUevent start, CUevent end)
{
    struct kcu_event *a = event_from(start), *b = event_from(end);
    struct kernelet_event_pair q;
    struct kernelet_elapsed t;
    CUresult r = kcu_ready();

    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if (!a || !b)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    q.start = a->handle;
    q.end = b->handle;
    r = kcu_call(kcu.client, KERNELET_OP_EVENT_ELAPSED, &q, sizeof(q), NULL, 0, &t, sizeof(t), NULL);
    if (r == CUDA_SUCCESS)
        *ms = (float)((double)t.ns / 1e6);
    return r;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent s, CUevent e) { return elapsed(ms, s, e); }
CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent s, CUevent e) { return elapsed(ms, s, e); }
