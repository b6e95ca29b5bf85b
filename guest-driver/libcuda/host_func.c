/*
 * Host functions and stream callbacks (cuLaunchHostFunc, cuStreamAddCallback): they run in
 * this process, never on the daemon, after all work queued before them on their stream
 * has completed and before any work queued after them starts.
 *
 * The daemon knows nothing of them; the library keeps the order itself with a *gate* per
 * stream:
 *  - A host function is *armed* by queueing an EVENT_RECORD of a private event on its
 *    stream. One worker thread waits for those events in the order they were armed
 *    (EVENT_SYNC), runs each function, and then opens its gate.
 *  - While a stream's gate is closed (a host function armed and not yet run), the stream
 *    work queued after it is *held* here, copied, in one queue in program order, and so is
 *    any work that must follow held work: a wait for (or a new record of) an event whose
 *    record is held, and, as CUDA's legacy default stream orders itself against the
 *    other streams, work of the legacy stream while anything is held or armed and work of
 *    other streams while the legacy stream is held or armed (conservative for
 *    non-blocking streams: they are delayed, never reordered).
 *  - When a function has run, the held queue is replayed in order through the same rules:
 *    what may go now goes to the daemon, host functions met on the way are armed, the rest
 *    stays held.
 * So no work the daemon receives ever depends on held work, and a host function's event
 * depends only on GPU work already sent: waiting for the armed events one after the other
 * cannot deadlock.
 *
 * Requests that depend on queued work wait (kcu_gate_before_call): a stream's
 * synchronisation until its gate is open and nothing of it is held, an event's until its
 * record has been sent, everything else that frees or synchronises until nothing is held
 * or armed; queries answer NOT_READY meanwhile. Until the first host function the gate is
 * never engaged and costs one atomic load per call.
 */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* A host function or callback, from its call until it has run. */
struct host_fn {
    CUhostFn fn;                /* cuLaunchHostFunc */
    CUstreamCallback cb;        /* cuStreamAddCallback */
    void *data;
    CUstream user_stream;       /* what the callback is given */
    uint64_t stream;            /* daemon handle */
    uint64_t event;             /* private event recorded when armed */
    struct host_fn *next;       /* worker FIFO */
};

/* A held piece of stream work: a record (rec_len + tail_len bytes) or a host function. */
struct held {
    struct held *next;
    struct host_fn *fn;         /* NULL for a record */
    uint64_t stream;
    uint16_t op;
    uint64_t event;             /* EVENT_RECORD, STREAM_WAIT */
    size_t rec_len, tail_len;
    uint8_t bytes[];
};

/* Per stream: records held and host functions armed and not yet run. */
struct gate_stream {
    uint64_t handle;
    unsigned held, armed;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;         /* a function ran (gates opened) */
    pthread_cond_t work;            /* the worker has something to wait for */
    bool engaged;                   /* atomic: a host function was ever queued */
    bool worker_started;
    struct held *head, **tail;      /* held work in program order */
    struct host_fn *fifo, **fifo_tail;
    struct gate_stream *streams;
    size_t n_streams, cap_streams;
    unsigned total_held, total_armed;
    uint64_t *free_events;          /* private events not in use (never destroyed: the */
    size_t n_free_events, cap_free_events; /* worker must not wait for the gate) */
} gate = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .changed = PTHREAD_COND_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .tail = &gate.head,
    .fifo_tail = &gate.fifo,
};

bool kcu_gate_engaged(void)
{
    return __atomic_load_n(&gate.engaged, __ATOMIC_ACQUIRE);
}

/* ---- state (lock held) --------------------------------------------------------------- */

static struct gate_stream *stream_find(uint64_t handle)
{
    for (size_t i = 0; i < gate.n_streams; i++)
        if (gate.streams[i].handle == handle)
            return &gate.streams[i];
    return NULL;
}

static struct gate_stream *stream_get(uint64_t handle)
{
    struct gate_stream *s = stream_find(handle);

    if (s)
        return s;
    /* Reuse an idle entry before growing. */
    for (size_t i = 0; i < gate.n_streams; i++)
        if (!gate.streams[i].held && !gate.streams[i].armed) {
            gate.streams[i].handle = handle;
            return &gate.streams[i];
        }
    if (gate.n_streams == gate.cap_streams) {
        size_t cap = gate.cap_streams ? gate.cap_streams * 2 : 16;
        struct gate_stream *n = realloc(gate.streams, cap * sizeof(*n));
        if (!n)
            return NULL;
        gate.streams = n;
        gate.cap_streams = cap;
    }
    s = &gate.streams[gate.n_streams++];
    *s = (struct gate_stream){.handle = handle};
    return s;
}

static bool stream_busy(uint64_t handle)
{
    const struct gate_stream *s = stream_find(handle);

    return s && (s->held || s->armed);
}

static bool event_held(uint64_t event)
{
    for (const struct held *h = gate.head; h; h = h->next)
        if (!h->fn && h->op == KERNELET_REC_EVENT_RECORD && h->event == event)
            return true;
    return false;
}

/* Whether work (op, event) on stream must wait behind held or armed work. */
static bool must_hold(uint64_t stream, uint16_t op, uint64_t event)
{
    if (stream_busy(stream))
        return true;
    if ((op == KERNELET_REC_STREAM_WAIT || op == KERNELET_REC_EVENT_RECORD) && event_held(event))
        return true;
    if (stream == KERNELET_STREAM_LEGACY)
        return gate.total_held || gate.total_armed;
    return stream_busy(KERNELET_STREAM_LEGACY);
}

static void hold(struct held *h)
{
    struct gate_stream *s = stream_get(h->stream);

    h->next = NULL;
    *gate.tail = h;
    gate.tail = &h->next;
    if (s)
        s->held++;
    gate.total_held++;
}

/* Queues the private event's record on the function's stream and hands the function to
 * the worker. */
static CUresult arm(struct host_fn *f)
{
    struct kernelet_rec_event rec = {
        .h = {.op = KERNELET_REC_EVENT_RECORD, .length = sizeof(rec), .stream = f->stream},
        .event = f->event,
    };
    struct gate_stream *s = stream_get(f->stream);
    CUresult r;

    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = kcu_batch_append(kcu.client, &rec, sizeof(rec), NULL, 0)) != CUDA_SUCCESS)
        return r;
    s->armed++;
    gate.total_armed++;
    f->next = NULL;
    *gate.fifo_tail = f;
    gate.fifo_tail = &f->next;
    pthread_cond_signal(&gate.work);
    return CUDA_SUCCESS;
}

/* Sends a held piece of work or holds it again; frees it when sent. */
static void replay_one(struct held *h)
{
    if (must_hold(h->stream, h->fn ? 0 : h->op, h->event)) {
        hold(h);
        return;
    }
    if (h->fn) {
        if (arm(h->fn) != CUDA_SUCCESS)
            free(h->fn); /* the connection is gone: nothing will run anyway */
    } else {
        kcu_batch_append(kcu.client, h->bytes, h->rec_len, h->bytes + h->rec_len, h->tail_len);
    }
    free(h);
}

/* Replays the whole held queue in program order (after a gate opened). */
static void replay(void)
{
    struct held *h = gate.head, *next;

    gate.head = NULL;
    gate.tail = &gate.head;
    gate.total_held = 0;
    for (size_t i = 0; i < gate.n_streams; i++)
        gate.streams[i].held = 0;
    for (; h; h = next) {
        next = h->next;
        replay_one(h);
    }
}

/* ---- stream work from the rest of the library ------------------------------------------- */

static uint64_t record_event(const void *rec, size_t rec_len)
{
    const struct kernelet_rec_hdr *h = rec;
    struct kernelet_rec_event e;

    if ((h->op != KERNELET_REC_EVENT_RECORD && h->op != KERNELET_REC_STREAM_WAIT) ||
        rec_len < sizeof(e))
        return 0;
    memcpy(&e, rec, sizeof(e));
    return e.event;
}

static bool record_must_hold(const void *rec, size_t rec_len)
{
    const struct kernelet_rec_hdr *h = rec;

    return must_hold(h->stream, h->op, record_event(rec, rec_len));
}

CUresult kcu_gate_add(const void *rec, size_t rec_len, const void *tail, size_t tail_len)
{
    const struct kernelet_rec_hdr *hdr = rec;
    struct held *h;
    CUresult r = CUDA_SUCCESS;

    pthread_mutex_lock(&gate.lock);
    if (!record_must_hold(rec, rec_len)) {
        r = kcu_batch_append(kcu.client, rec, rec_len, tail, tail_len);
    } else if ((h = malloc(sizeof(*h) + rec_len + tail_len))) {
        *h = (struct held){.stream = hdr->stream, .op = hdr->op,
                           .event = record_event(rec, rec_len), .rec_len = rec_len,
                           .tail_len = tail_len};
        memcpy(h->bytes, rec, rec_len);
        if (tail_len)
            memcpy(h->bytes + rec_len, tail, tail_len);
        hold(h);
    } else {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&gate.lock);
    return r;
}

/* A record the caller waits for (or whose completion frees a staging slot) cannot be held:
 * the caller waits here until it may go, then sends it. */
CUresult kcu_gate_submit(const void *rec, size_t rec_len, const void *tail, size_t tail_len,
                         bool keep, const struct kcu_completion *cb, uint64_t *token)
{
    CUresult r;

    pthread_mutex_lock(&gate.lock);
    while (record_must_hold(rec, rec_len))
        pthread_cond_wait(&gate.changed, &gate.lock);
    r = kcu_batch_submit_now(kcu.client, rec, rec_len, tail, tail_len, keep, cb, token);
    pthread_mutex_unlock(&gate.lock);
    return r;
}

/* ---- requests that depend on queued work ------------------------------------------------- */

static bool all_clear(void)
{
    return !gate.total_held && !gate.total_armed;
}

static bool stream_clear(uint64_t stream)
{
    return stream == KERNELET_STREAM_LEGACY ? all_clear() : !stream_busy(stream);
}

static uint64_t first_handle(const void *head, size_t len)
{
    uint64_t v = 0;

    if (head && len >= sizeof(v))
        memcpy(&v, head, sizeof(v));
    return v;
}

/* Whether the request may go now; *query tells that it must not wait. */
static bool request_clear(uint16_t opcode, const void *head, size_t len, bool *query)
{
    struct kernelet_event_pair pair;

    *query = false;
    switch (opcode) {
    case KERNELET_OP_STREAM_QUERY:
        *query = true;
        /* fall through */
    case KERNELET_OP_STREAM_SYNC:
        return stream_clear(first_handle(head, len));
    case KERNELET_OP_EVENT_QUERY:
        *query = true;
        /* fall through */
    case KERNELET_OP_EVENT_SYNC:
        return !event_held(first_handle(head, len));
    case KERNELET_OP_EVENT_ELAPSED:
        *query = true;
        if (len < sizeof(pair))
            return true;
        memcpy(&pair, head, sizeof(pair));
        return !event_held(pair.start) && !event_held(pair.end);
    case KERNELET_OP_CTX_SYNC:
    case KERNELET_OP_MEM_FREE:
    case KERNELET_OP_MODULE_UNLOAD:
    case KERNELET_OP_SHM_DETACH:
    case KERNELET_OP_STREAM_DESTROY:
    case KERNELET_OP_EVENT_DESTROY:
    case KERNELET_OP_CONTEXT_CLOSE:
        return all_clear();
    default:
        return true;
    }
}

CUresult kcu_gate_before_call(uint16_t opcode, const void *head, size_t head_len)
{
    CUresult r = CUDA_SUCCESS;
    bool query;

    pthread_mutex_lock(&gate.lock);
    while (!request_clear(opcode, head, head_len, &query)) {
        if (query) {
            r = CUDA_ERROR_NOT_READY;
            break;
        }
        pthread_cond_wait(&gate.changed, &gate.lock);
    }
    pthread_mutex_unlock(&gate.lock);
    return r;
}

/* ---- the worker ------------------------------------------------------------------------------ */

/* Waits for the function's event and runs it: a callback always, with the result; a host
 * function only when the context is still usable (CUDA skips it after a context error). */
static void run_one(struct host_fn *f)
{
    CUresult r = kcu_call_handle(kcu.client, KERNELET_OP_EVENT_SYNC, f->event);

    /* EVENT_SYNC takes the connection's asynchronous error; it belongs to the program's
     * next synchronisation. */
    if (r != CUDA_SUCCESS)
        kcu_note_async_error(kcu.client, r);
    if (f->cb)
        f->cb(f->user_stream, r, f->data);
    else if (kcu_sticky_error(kcu.client) == CUDA_SUCCESS)
        f->fn(f->data);
}

/* Keeps a private event for the next host function. Should the pool not grow, the event
 * stays with the daemon until the process ends. */
static void put_event(uint64_t event)
{
    if (gate.n_free_events == gate.cap_free_events) {
        size_t cap = gate.cap_free_events ? gate.cap_free_events * 2 : 16;
        uint64_t *n = realloc(gate.free_events, cap * sizeof(*n));
        if (!n)
            return;
        gate.free_events = n;
        gate.cap_free_events = cap;
    }
    gate.free_events[gate.n_free_events++] = event;
}

static void finished(struct host_fn *f)
{
    struct gate_stream *s = stream_find(f->stream);

    if (s && s->armed)
        s->armed--;
    gate.total_armed--;
    put_event(f->event);
    free(f);
    replay();
    pthread_cond_broadcast(&gate.changed);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&gate.lock);
    for (;;) {
        struct host_fn *f;
        while (!gate.fifo)
            pthread_cond_wait(&gate.work, &gate.lock);
        f = gate.fifo;
        gate.fifo = f->next;
        if (!gate.fifo)
            gate.fifo_tail = &gate.fifo;
        pthread_mutex_unlock(&gate.lock);
        run_one(f);
        pthread_mutex_lock(&gate.lock);
        finished(f);
        pthread_mutex_unlock(&gate.lock);
        /* Start what was released at once rather than at the program's next request. */
        kcu_batch_flush(kcu.client);
        pthread_mutex_lock(&gate.lock);
    }
    return NULL;
}

/* Lock held. */
static CUresult start_worker(void)
{
    pthread_attr_t a;
    pthread_t t;
    int rc;

    if (gate.worker_started)
        return CUDA_SUCCESS;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &a, worker, NULL);
    pthread_attr_destroy(&a);
    if (rc)
        return CUDA_ERROR_OUT_OF_MEMORY;
    gate.worker_started = true;
    return CUDA_SUCCESS;
}

/* ---- the entry points ------------------------------------------------------------------------ */

/* A private event for a new host function: from the pool, or created. */
static CUresult take_event(uint64_t *out)
{
    struct kernelet_event_create q = {.flags = KERNELET_EVENT_DISABLE_TIMING};
    struct kernelet_handle h;
    CUresult r;

    pthread_mutex_lock(&gate.lock);
    if (gate.n_free_events) {
        *out = gate.free_events[--gate.n_free_events];
        pthread_mutex_unlock(&gate.lock);
        return CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&gate.lock);
    r = kcu_call(kcu.client, KERNELET_OP_EVENT_CREATE, &q, sizeof(q), NULL, 0, &h, sizeof(h), NULL);
    if (r == CUDA_SUCCESS)
        *out = h.handle;
    return r;
}

/* Arms f now, or holds it behind earlier held work of its stream. */
static CUresult enqueue(struct host_fn *f)
{
    struct held *h = NULL;
    CUresult r;

    pthread_mutex_lock(&gate.lock);
    __atomic_store_n(&gate.engaged, true, __ATOMIC_RELEASE);
    if ((r = start_worker()) == CUDA_SUCCESS) {
        if (!must_hold(f->stream, 0, 0))
            r = arm(f);
        else if (!(h = calloc(1, sizeof(*h))))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            h->fn = f;
            h->stream = f->stream;
            hold(h);
        }
    }
    pthread_mutex_unlock(&gate.lock);
    return r;
}

CUresult kcu_host_fn_enqueue(uint64_t stream, CUstream user_stream, CUhostFn fn,
                             CUstreamCallback cb, void *data)
{
    struct host_fn *f;
    CUresult r;

    if (!(f = calloc(1, sizeof(*f))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *f = (struct host_fn){.fn = fn, .cb = cb, .data = data, .user_stream = user_stream,
                          .stream = stream};
    if ((r = take_event(&f->event)) == CUDA_SUCCESS && (r = enqueue(f)) == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    free(f);
    return r;
}

/* On a capturing stream a host function becomes a host node; a callback is refused (and
 * the capture invalidated), as CUDA does. */
static CUresult capture_host_fn(uint64_t stream, CUhostFn fn, void *data, bool *taken)
{
    struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_HOST, .u.host = {fn, data}};

    *taken = false;
    if (!kcu_capture_any())
        return CUDA_SUCCESS;
    if (!fn)
        return kcu_capture_check_stream(stream);
    return kcu_capture_take(stream, &op, taken);
}

static CUresult add_host_fn(CUstream s, bool pt, CUhostFn fn, CUstreamCallback cb, void *data)
{
    struct kcu_ctx *ctx;
    uint64_t stream;
    bool taken;
    CUresult r;

    if (!fn && !cb)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&ctx)) != CUDA_SUCCESS ||
        (r = kcu_stream_handle(s, pt, &stream)) != CUDA_SUCCESS ||
        (r = capture_host_fn(stream, fn, data, &taken)) != CUDA_SUCCESS || taken)
        return r;
    return kcu_host_fn_enqueue(stream, s, fn, cb, data);
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn, void *userData)
{
    return fn ? add_host_fn(s, false, fn, NULL, userData) : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *userData)
{
    return fn ? add_host_fn(s, true, fn, NULL, userData) : CUDA_ERROR_INVALID_VALUE;
}

/* flags is reserved and must be 0, as in CUDA. */
CUresult CUDAAPI cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *userData,
                                     unsigned int flags)
{
    if (!cb || flags)
        return CUDA_ERROR_INVALID_VALUE;
    return add_host_fn(s, false, NULL, cb, userData);
}

CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void *userData,
                                          unsigned int flags)
{
    if (!cb || flags)
        return CUDA_ERROR_INVALID_VALUE;
    return add_host_fn(s, true, NULL, cb, userData);
}
