/*
 * Stream capture: while a stream captures, the work enqueued on it becomes nodes of the
 * capture's graph instead of being sent to the daemon.
 *
 * Each stream taking part in a capture has a *frontier*: the nodes the next captured work
 * depends on (after a node is added, just that node). An event recorded on a capturing
 * stream remembers the frontier; a stream that waits for such an event joins the capture
 * (or merges the event's frontier into its own), as CUDA forks and joins captures across
 * streams. Streams are known by their daemon handles, so user streams and per-thread
 * default streams capture alike; the legacy stream cannot capture, and using it while a
 * blocking stream captures is CUDA's implicit-synchronisation error.
 *
 * Calls CUDA forbids during capture (synchronising or querying a capturing stream or a
 * captured event, and "unsafe" calls such as synchronous copies, per the thread's capture
 * interaction mode) fail with CUDA's error and invalidate the capture; cuStreamEndCapture
 * then reports CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
 *
 * One mutex guards all of it; kcu_capture_any() is the lock-free fast path for programs
 * that never capture.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

struct capture {
    uint64_t id;
    CUstreamCaptureMode mode;
    bool invalid;
    struct kcu_graph *graph;
    bool owned;                     /* the graph is the capture's (not the caller's) */
    pthread_t thread;               /* that began it */
    uint64_t origin;                /* the stream that began it */
};

/* A set of nodes with as many zeroed edge data (what the v3 queries hand out). */
struct frontier {
    struct kcu_node **nodes;
    CUgraphEdgeData *edges;
    size_t n, cap;
};

struct cap_stream {
    uint64_t handle;
    bool blocking;                  /* synchronises with the legacy stream */
    struct capture *cap;
    struct frontier front;
};

struct cap_event {
    struct kcu_event *ev;
    struct capture *cap;
    struct frontier front;          /* the recording stream's, when recorded */
};

static struct {
    pthread_mutex_t lock;
    struct cap_stream *streams;
    size_t n_streams, cap_streams;
    struct cap_event *events;
    size_t n_events, cap_events;
    uint64_t next_id;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1};

static _Atomic unsigned n_captures;
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

bool kcu_capture_any(void)
{
    return atomic_load_explicit(&n_captures, memory_order_relaxed) != 0;
}

/* ---- frontiers ---------------------------------------------------------------------- */

static bool front_has(const struct frontier *f, const struct kcu_node *n)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->nodes[i] == n)
            return true;
    return false;
}

static CUresult front_add(struct frontier *f, struct kcu_node *n)
{
    if (front_has(f, n))
        return CUDA_SUCCESS;
    if (f->n == f->cap) {
        size_t c = f->cap ? f->cap * 2 : 4;
        struct kcu_node **p = realloc(f->nodes, c * sizeof(*p));
        if (p)
            f->nodes = p;
        CUgraphEdgeData *e = p ? realloc(f->edges, c * sizeof(*e)) : NULL;
        if (!e)
            return CUDA_ERROR_OUT_OF_MEMORY;
        memset(e + f->cap, 0, (c - f->cap) * sizeof(*e));
        f->edges = e;
        f->cap = c;
    }
    f->nodes[f->n++] = n;
    return CUDA_SUCCESS;
}

static CUresult front_merge(struct frontier *f, const struct frontier *from)
{
    CUresult r = CUDA_SUCCESS;

    for (size_t i = 0; i < from->n && r == CUDA_SUCCESS; i++)
        r = front_add(f, from->nodes[i]);
    return r;
}

static void front_free(struct frontier *f)
{
    free(f->nodes);
    free(f->edges);
    memset(f, 0, sizeof(*f));
}

/* ---- the tables ------------------------------------------------------------------------ */

static struct cap_stream *stream_find(uint64_t handle)
{
    for (size_t i = 0; i < st.n_streams; i++)
        if (st.streams[i].handle == handle)
            return &st.streams[i];
    return NULL;
}

static struct cap_event *event_find(const struct kcu_event *ev)
{
    for (size_t i = 0; i < st.n_events; i++)
        if (st.events[i].ev == ev)
            return &st.events[i];
    return NULL;
}

/* Room for one more element in a table of *n of *cap elements of size bytes. */
static bool table_grow(void *table, size_t n, size_t *cap, size_t size)
{
    void **t = table;

    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 4;
    void *p = realloc(*t, c * size);
    if (!p)
        return false;
    *t = p;
    *cap = c;
    return true;
}

static struct cap_stream *stream_join(uint64_t handle, bool blocking, struct capture *cap)
{
    struct cap_stream *s;

    if (!table_grow(&st.streams, st.n_streams, &st.cap_streams, sizeof(*st.streams)))
        return NULL;
    s = &st.streams[st.n_streams++];
    *s = (struct cap_stream){.handle = handle, .blocking = blocking, .cap = cap};
    return s;
}

static void event_forget(struct cap_event *e)
{
    front_free(&e->front);
    *e = st.events[--st.n_events];
}

/* Ends a capture: its streams stop capturing, its events forget it. The graph is the
 * caller's (handed out or freed). */
static void capture_end(struct capture *cap)
{
    for (size_t i = st.n_streams; i-- > 0;)
        if (st.streams[i].cap == cap) {
            front_free(&st.streams[i].front);
            st.streams[i] = st.streams[--st.n_streams];
        }
    for (size_t i = st.n_events; i-- > 0;)
        if (st.events[i].cap == cap)
            event_forget(&st.events[i]);
    free(cap);
    atomic_fetch_sub(&n_captures, 1);
}

/* The legacy stream would synchronise with every blocking capturing stream: CUDA refuses
 * that and invalidates those captures. */
static CUresult legacy_use(uint64_t stream)
{
    CUresult r = CUDA_SUCCESS;

    if (stream != KERNELET_STREAM_LEGACY)
        return CUDA_SUCCESS;
    for (size_t i = 0; i < st.n_streams; i++)
        if (st.streams[i].blocking) {
            st.streams[i].cap->invalid = true;
            r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
    return r;
}

/* ---- hooks of the enqueueing paths ------------------------------------------------------ */

CUresult kcu_capture_take(uint64_t stream, struct kcu_op *op, bool *taken)
{
    struct cap_stream *s;
    struct kcu_node *node;
    CUresult r;

    *taken = false;
    pthread_mutex_lock(&st.lock);
    if (!(s = stream_find(stream)))
        r = legacy_use(stream);
    else if (s->cap->invalid)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else if ((r = kcu_graph_add(s->cap->graph, op, s->front.nodes, s->front.n, &node)) ==
             CUDA_SUCCESS) {
        *taken = true;
        s->front.n = 0;
        r = front_add(&s->front, node);
    }
    pthread_mutex_unlock(&st.lock);
    return r;
}

CUresult kcu_capture_event_record(uint64_t stream, struct kcu_event *ev, bool *taken)
{
    struct cap_stream *s;
    struct cap_event *e;
    CUresult r = CUDA_SUCCESS;

    *taken = false;
    pthread_mutex_lock(&st.lock);
    e = event_find(ev);
    if (!(s = stream_find(stream))) {
        if (e)
            event_forget(e); /* recorded again outside the capture */
        r = legacy_use(stream);
    } else if (s->cap->invalid) {
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (!e && !table_grow(&st.events, st.n_events, &st.cap_events, sizeof(*st.events))) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        if (!e) {
            e = &st.events[st.n_events++];
            *e = (struct cap_event){.ev = ev};
        }
        e->cap = s->cap;
        e->front.n = 0;
        r = front_merge(&e->front, &s->front);
        *taken = true;
    }
    pthread_mutex_unlock(&st.lock);
    return r;
}

/* A stream waits for an event recorded in capture e->cap: it joins that capture, or
 * merges the event's frontier into its own. */
static CUresult join(uint64_t stream, struct cap_stream *s, struct cap_event *e)
{
    if (e->cap->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (s && s->cap != e->cap) {
        s->cap->invalid = e->cap->invalid = true;
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION; /* two captures cannot merge */
    }
    if (!s && stream == KERNELET_STREAM_LEGACY) {
        e->cap->invalid = true;
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    if (!s && !(s = stream_join(stream, true, e->cap)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    return front_merge(&s->front, &e->front);
}

CUresult kcu_capture_stream_wait(uint64_t stream, struct kcu_event *ev, unsigned flags,
                                 bool *taken)
{
    struct cap_stream *s;
    struct cap_event *e;
    CUresult r = CUDA_SUCCESS;

    *taken = false;
    pthread_mutex_lock(&st.lock);
    s = stream_find(stream);
    if ((e = event_find(ev))) {
        r = join(stream, s, e);
        *taken = true;
    } else if (s && (flags & CU_EVENT_WAIT_EXTERNAL)) {
        pthread_mutex_unlock(&st.lock);
        struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_WAIT_EVENT, .u.event = ev};
        return kcu_capture_take(stream, &op, taken); /* an external wait: a node */
    } else if (s) {
        s->cap->invalid = true; /* an event of no capture cannot order captured work */
        r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    } else {
        r = legacy_use(stream);
    }
    pthread_mutex_unlock(&st.lock);
    return r;
}

/* ---- what capture forbids ------------------------------------------------------------------ */

CUresult kcu_capture_check_stream(uint64_t stream)
{
    struct cap_stream *s;
    CUresult r;

    pthread_mutex_lock(&st.lock);
    if ((s = stream_find(stream))) {
        s->cap->invalid = true;
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else {
        r = legacy_use(stream);
    }
    pthread_mutex_unlock(&st.lock);
    return r;
}

CUresult kcu_capture_refuse(uint64_t stream, const char *what)
{
    CUresult r = kcu_capture_any() ? kcu_capture_check_stream(stream) : CUDA_SUCCESS;

    if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        kcu_unsupported(what); /* for the log: CUDA would make a node of it */
    return r;
}

CUresult kcu_capture_check_event(const struct kcu_event *ev)
{
    struct cap_event *e;
    CUresult r = CUDA_SUCCESS;

    pthread_mutex_lock(&st.lock);
    if ((e = event_find(ev))) {
        e->cap->invalid = true;
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    pthread_mutex_unlock(&st.lock);
    return r;
}

/* CUDA's rule: in global mode a thread may not make unsafe calls while it or any thread
 * captures in global mode; in thread-local mode while it captures itself (not relaxed);
 * in relaxed mode it always may. */
static bool forbids(const struct capture *cap)
{
    bool own = pthread_equal(cap->thread, pthread_self());

    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return false;
    if (own)
        return cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    return thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
           cap->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

CUresult kcu_capture_check_unsafe(void)
{
    CUresult r = CUDA_SUCCESS;

    pthread_mutex_lock(&st.lock);
    for (size_t i = 0; i < st.n_streams; i++)
        if (st.streams[i].handle == st.streams[i].cap->origin && forbids(st.streams[i].cap)) {
            st.streams[i].cap->invalid = true;
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    pthread_mutex_unlock(&st.lock);
    return r;
}

/* ---- beginning and ending ------------------------------------------------------------------- */

/* Where a capture puts its nodes: a graph of its own, or (cuStreamBeginCaptureToGraph)
 * the caller's, after the given nodes. */
struct target {
    struct kcu_graph *graph;        /* NULL: a new graph */
    const CUgraphNode *deps;
    size_t n_deps;
};

/* The capture of stream h, registered; its origin stream joins with target's nodes as
 * its frontier. */
static CUresult start(uint64_t h, bool blocking, struct capture *cap, const struct target *t)
{
    struct cap_stream *s = NULL;
    CUresult r = CUDA_SUCCESS;

    pthread_mutex_lock(&st.lock);
    if (stream_find(h))
        r = CUDA_ERROR_ILLEGAL_STATE; /* already capturing */
    else if (!(s = stream_join(h, blocking, cap)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; r == CUDA_SUCCESS && i < t->n_deps; i++)
        r = front_add(&s->front, kcu_node_from(t->deps[i]));
    if (r == CUDA_SUCCESS) {
        cap->id = st.next_id++;
        atomic_fetch_add(&n_captures, 1);
    } else if (s) {
        front_free(&s->front);
        st.n_streams--; /* the entry just added, last in the table */
    }
    pthread_mutex_unlock(&st.lock);
    return r;
}

static CUresult begin(CUstream hStream, CUstreamCaptureMode mode, bool pt,
                      const struct target *t)
{
    struct capture *cap;
    uint64_t h;
    CUresult r = kcu_stream_handle(hStream, pt, &h);
    bool user = hStream && hStream != CU_STREAM_LEGACY && hStream != CU_STREAM_PER_THREAD;
    bool blocking;

    if (r != CUDA_SUCCESS)
        return r;
    /* A user stream blocks with the legacy one unless created non-blocking. */
    blocking = !user || !(((struct kcu_stream *)hStream)->flags & CU_STREAM_NON_BLOCKING);
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (h == KERNELET_STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!(cap = calloc(1, sizeof(*cap))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    cap->owned = !t->graph;
    cap->graph = t->graph;
    if (cap->owned && (r = kcu_graph_new(&cap->graph)) != CUDA_SUCCESS) {
        free(cap);
        return r;
    }
    cap->mode = mode;
    cap->thread = pthread_self();
    cap->origin = h;
    if ((r = start(h, blocking, cap, t)) != CUDA_SUCCESS) {
        if (cap->owned)
            kcu_graph_free(cap->graph);
        free(cap);
    }
    return r;
}

static CUresult begin_new(CUstream s, CUstreamCaptureMode mode, bool pt)
{
    const struct target t = {0};

    return begin(s, mode, pt, &t);
}

static CUresult begin_to_graph(CUstream s, CUgraph hGraph, const CUgraphNode *deps,
                               const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode,
                               bool pt)
{
    const struct target t = {kcu_graph_from(hGraph), deps, n};
    CUresult r;

    if (!t.graph)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_graph_check_deps(t.graph, deps, n)) != CUDA_SUCCESS ||
        (r = kcu_graph_check_edges(edges, n)) != CUDA_SUCCESS)
        return r;
    return begin(s, mode, pt, &t);
}

CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                             const CUgraphEdgeData *edges, size_t n,
                                             CUstreamCaptureMode mode)
{
    return begin_to_graph(s, g, deps, edges, n, mode, false);
}

CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                  const CUgraphEdgeData *edges, size_t n,
                                                  CUstreamCaptureMode mode)
{
    return begin_to_graph(s, g, deps, edges, n, mode, true);
}

#undef cuStreamBeginCapture
CUresult CUDAAPI cuStreamBeginCapture(CUstream s);
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream s);
/* The CUDA 10.0 form had no mode: global, as CUDA's default. */
CUresult CUDAAPI cuStreamBeginCapture(CUstream s) { return begin_new(s, CU_STREAM_CAPTURE_MODE_GLOBAL, false); }
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream s) { return begin_new(s, CU_STREAM_CAPTURE_MODE_GLOBAL, true); }
CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode m) { return begin_new(s, m, false); }
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode m) { return begin_new(s, m, true); }

/* Every stream that joined must have joined back: its frontier lies within what the
 * origin stream's frontier depends on. */
static bool all_joined(const struct capture *cap, const struct cap_stream *origin)
{
    uint64_t gen = kcu_graph_mark_ancestors(cap->graph, origin->front.nodes, origin->front.n);

    for (size_t i = 0; i < st.n_streams; i++) {
        const struct cap_stream *s = &st.streams[i];
        if (s->cap != cap || s == origin)
            continue;
        for (size_t j = 0; j < s->front.n; j++)
            if (!gen || s->front.nodes[j]->mark != gen)
                return false;
    }
    return true;
}

/* Ends the capture that s began; its graph is handed out or, on an error, freed (when it
 * is the capture's own). */
static CUresult end(struct cap_stream *s, struct kcu_graph **out)
{
    struct capture *cap = s->cap;
    struct kcu_graph *g = cap->graph;
    CUresult r = CUDA_SUCCESS;

    if (cap->invalid)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else if (!all_joined(cap, s))
        r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    bool owned = cap->owned;
    capture_end(cap);
    if (r != CUDA_SUCCESS) {
        if (owned)
            kcu_graph_free(g); /* a caller's graph keeps what was captured */
        g = NULL;
    }
    *out = g;
    return r;
}

static CUresult end_capture(CUstream hStream, CUgraph *phGraph, bool pt)
{
    struct cap_stream *s;
    struct kcu_graph *g = NULL;
    uint64_t h;
    CUresult r = kcu_stream_handle(hStream, pt, &h);

    if (r != CUDA_SUCCESS)
        return r;
    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&st.lock);
    if (!(s = stream_find(h)))
        r = CUDA_ERROR_ILLEGAL_STATE; /* not capturing */
    else if (s->cap->origin != h)
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    else if (s->cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
             !pthread_equal(s->cap->thread, pthread_self()))
        r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    else
        r = end(s, &g);
    pthread_mutex_unlock(&st.lock);
    if (r == CUDA_SUCCESS || g == NULL)
        *phGraph = (CUgraph)g;
    return r;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *g) { return end_capture(s, g, false); }
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) { return end_capture(s, g, true); }

void kcu_capture_forget_event(const struct kcu_event *ev)
{
    struct cap_event *e;

    pthread_mutex_lock(&st.lock);
    if ((e = event_find(ev)))
        event_forget(e);
    pthread_mutex_unlock(&st.lock);
}

void kcu_capture_forget_stream(uint64_t stream)
{
    struct cap_stream *s;

    pthread_mutex_lock(&st.lock);
    if ((s = stream_find(stream))) {
        struct capture *cap = s->cap;
        if (cap->origin == stream) {
            struct kcu_graph *g = cap->owned ? cap->graph : NULL;
            capture_end(cap);
            if (g)
                kcu_graph_free(g);
        } else {
            cap->invalid = true; /* it can no longer join back */
            front_free(&s->front);
            *s = st.streams[--st.n_streams];
        }
    }
    pthread_mutex_unlock(&st.lock);
}

bool kcu_capture_stream_captures(uint64_t stream)
{
    bool yes;

    if (!kcu_capture_any())
        return false;
    pthread_mutex_lock(&st.lock);
    yes = stream_find(stream) != NULL;
    pthread_mutex_unlock(&st.lock);
    return yes;
}

/* ---- queries and dependency updates ------------------------------------------------------ */

CUresult kcu_capture_info(uint64_t stream, CUstreamCaptureStatus *status, cuuint64_t *id,
                          CUgraph *graph, const CUgraphNode **deps,
                          const CUgraphEdgeData **edges, size_t *n)
{
    struct cap_stream *s;

    pthread_mutex_lock(&st.lock);
    s = kcu_capture_any() ? stream_find(stream) : NULL;
    *status = !s ? CU_STREAM_CAPTURE_STATUS_NONE
                 : s->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                   : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id)
        *id = s ? s->cap->id : 0;
    /* The rest is valid only while capturing, as in CUDA. */
    if (s && graph)
        *graph = (CUgraph)s->cap->graph;
    if (s && deps)
        *deps = (const CUgraphNode *)s->front.nodes;
    if (s && edges)
        *edges = s->front.edges;
    if (s && n)
        *n = s->front.n;
    pthread_mutex_unlock(&st.lock);
    return CUDA_SUCCESS;
}

static CUresult update_deps(CUstream hStream, CUgraphNode *deps, const CUgraphEdgeData *edges,
                            size_t n, unsigned flags, bool pt)
{
    struct cap_stream *s;
    uint64_t h;
    CUresult r = kcu_stream_handle(hStream, pt, &h);

    if (r != CUDA_SUCCESS)
        return r;
    if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES || (r = kcu_graph_check_edges(edges, n)))
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&st.lock);
    if (!(s = stream_find(h)))
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if ((r = kcu_graph_check_deps(s->cap->graph, deps, n)) == CUDA_SUCCESS) {
        if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
            s->front.n = 0;
        for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++)
            r = front_add(&s->front, kcu_node_from(deps[i]));
    }
    pthread_mutex_unlock(&st.lock);
    return r;
}

#undef cuStreamUpdateCaptureDependencies
CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode *d, size_t n,
                                                   unsigned int f);
CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(CUstream s, CUgraphNode *d, size_t n,
                                                        unsigned int f);
CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode *d, size_t n,
                                                   unsigned int f)
{
    return update_deps(s, d, NULL, n, f, false);
}
CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(CUstream s, CUgraphNode *d, size_t n,
                                                        unsigned int f)
{
    return update_deps(s, d, NULL, n, f, true);
}
CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2(CUstream s, CUgraphNode *d,
                                                      const CUgraphEdgeData *e, size_t n,
                                                      unsigned int f)
{
    return update_deps(s, d, e, n, f, false);
}
CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream s, CUgraphNode *d,
                                                           const CUgraphEdgeData *e, size_t n,
                                                           unsigned int f)
{
    return update_deps(s, d, e, n, f, true);
}

/* The calling thread's capture interaction mode, swapped as CUDA does. */
CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}
