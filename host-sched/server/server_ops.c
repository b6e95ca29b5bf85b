/* Operations on the scheduler: submission into a tenant's stream with CUDA's default-stream
 * ordering, completion handling on the server thread, and trackers (answers that wait for
 * operations). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server_internal.h"

uint32_t ks_cuda_of(int code, const char *msg)
{
    (void)msg;
    switch (code) {
    case KSCHED_OK: return KS_CUDA_SUCCESS;
    case KSCHED_EINVAL: return KS_CUDA_INVALID_VALUE;
    case KSCHED_ENOMEM: return KS_CUDA_OUT_OF_MEMORY;
    case KSCHED_ENOTFOUND: return KS_CUDA_INVALID_HANDLE;
    case KSCHED_EQUOTA: return KS_CUDA_OUT_OF_MEMORY;
    case KSCHED_ECONTEXTS: return KS_CUDA_OUT_OF_MEMORY;  /* no room for one more context */
    case KSCHED_EAGAIN: return KS_CUDA_LAUNCH_OUT_OF_RESOURCES;
    case KSCHED_EUNSUPPORTED: return KS_CUDA_NOT_SUPPORTED;
    case KSCHED_ESTATE: return KS_CUDA_INVALID_CONTEXT;
    default: return KS_CUDA_UNKNOWN;
    }
}

uint32_t ks_cuda_of_completion(int status, const char *msg, bool launch)
{
    if (status == 0)
        return KS_CUDA_SUCCESS;
    if (launch) {
        /* A kernel that failed on the device: how CUDA names the fault. */
        if (msg && strstr(msg, "misaligned"))
            return 716; /* CUDA_ERROR_MISALIGNED_ADDRESS */
        if (msg && (strstr(msg, "address") || strstr(msg, "outside")))
            return KS_CUDA_ILLEGAL_ADDRESS;
        if (msg && strstr(msg, "time limit"))
            return KS_CUDA_LAUNCH_TIMEOUT; /* stopped by the backend's kernel time limit */
        if (msg && strstr(msg, "device assert"))
            return KS_CUDA_ASSERT;  /* a fenced kernel's assert, ended without a fault */
        return KS_CUDA_LAUNCH_FAILED;
    }
    return status == KSCHED_EINVAL ? KS_CUDA_INVALID_VALUE : KS_CUDA_LAUNCH_FAILED;
}

unsigned ks_inflight_limit(struct ks_conn *c)
{
    ksched_tenant_policy pol;

    if (!c->have_tenant || ksched_tenant_get_policy(c->srv->cfg.sched, c->tenant, &pol, NULL))
        return UINT_MAX;
    return pol.max_inflight ? pol.max_inflight : UINT_MAX;
}

bool ks_waiter_room(struct ks_conn *c)
{
    unsigned limit = ks_inflight_limit(c);

    if (limit > KS_MAX_WAITERS / KS_WAITERS_PER_OP)
        return c->n_waiters < KS_MAX_WAITERS;
    return c->n_waiters < limit * KS_WAITERS_PER_OP;
}

struct ks_stream *ks_stream_of(struct ks_conn *c, uint64_t handle)
{
    struct ks_obj *o;

    if (handle == KERNELET_STREAM_LEGACY)
        return &c->legacy;
    o = ks_handle_get(&c->handles, handle, KS_STREAM);
    return o ? &o->u.stream : NULL;
}

/* ---- trackers --------------------------------------------------------------------------- */

struct ks_tracker *ks_tracker_new(struct ks_conn *c, uint64_t id, uint16_t opcode)
{
    struct ks_tracker *t = calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    t->conn = c;
    t->context = c->context;
    t->request_id = id;
    t->opcode = opcode;
    t->remaining = 1;
    return t;
}

static void tracker_finish(struct ks_tracker *t)
{
    struct ks_conn *c = t->conn;
    uint32_t code = t->error;

    if (c->closing) /* nobody to answer; the tenant's objects go with it */
        return;
    uint32_t sticky = ks_context_sticky(c, t->context);

    if (!code && sticky)
        code = sticky;
    switch (t->after) {
    case KS_AFTER_MEM_FREE:
        if (!code) {
            ks_memory_free_drained(c, t->request_id, t->arg); /* answers once freed */
            return;
        }
        break;
    case KS_AFTER_UNLOAD:
        if (!code || code != sticky)
            code = ks_module_release(c, t->arg);
        break;
    case KS_AFTER_DESTROY_STREAM: {
        uint32_t r = ks_stream_release(c, t->arg);
        if (!code && !t->report_async)
            code = r;
        break;
    }
    case KS_AFTER_CONTEXT_CLOSE: {
        /* Teardown happens even after a sticky error, as the tenant's own end would. */
        uint32_t r = ks_context_release(c, (uint32_t)t->arg);
        if (!code)
            code = r;
        break;
    }
    case KS_AFTER_SHM_DETACH:
        ks_region_put((struct ks_region *)(uintptr_t)t->arg);
        break;
    case KS_AFTER_VMM_UNMAP:
        if (!code) {
            ks_vmm_unmap_drained(c, t->request_id, t->arg, t->arg2); /* answers once done */
            return;
        }
        break;
    case KS_AFTER_REPLY:
        break;
    }
    if (!code && t->report_async)
        code = ks_context_take_async(c, t->context);
    ks_reply_cuda(c, t->opcode, t->request_id, code, t->error_index);
}

void ks_tracker_done(struct ks_tracker *t)
{
    if (--t->remaining > 0)
        return;
    if (t->holds_waiter)
        t->conn->n_waiters--;
    tracker_finish(t);
    free(t);
}

/* ---- submission --------------------------------------------------------------------------- */

static void op_release(struct ks_op *kop)
{
    if (kop->region)
        ks_region_put(kop->region);
    if (kop->shared && --kop->shared->refs == 0)
        free(kop->shared);
    free(kop->heap);
    free(kop);
}

int ks_submit(struct ks_conn *c, uint64_t stream, const ksched_op *op, struct ks_op *kop,
              ksched_err *err)
{
    struct ks_stream *st = ks_stream_of(c, stream);
    int rc;

    if (!st) {
        op_release(kop);
        return ksched_fail(err, KSCHED_ENOTFOUND, "no stream %llu", (unsigned long long)stream);
    }
    kop->conn = c;
    kop->context = c->context;
    kop->stream = stream;
    kop->lone = c->launches_inflight == 0;
    rc = ksched_submit(c->srv->cfg.sched, c->tenant, st->sid, op, ks_op_done, kop, NULL, err);
    if (rc) {
        if (kop->tracker)
            kop->tracker = NULL;
        op_release(kop);
        return rc;
    }
    c->ops_inflight++;
    c->launches_inflight += kop->launch;
    st->outstanding++;
    st->submitted++;
    if (kop->tracker)
        kop->tracker->remaining++;
    return 0;
}

/* Submits an internal event operation (fences between streams). */
static int submit_event(struct ks_conn *c, uint64_t stream, ksched_op_kind kind, uint32_t event,
                        ksched_err *err)
{
    ksched_op op = {.kind = kind, .u.event = event};
    struct ks_op *kop = calloc(1, sizeof(*kop));

    if (!kop)
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    return ks_submit(c, stream, &op, kop, err);
}

static int ensure_event(struct ks_conn *c, bool *has, uint32_t *event, ksched_err *err)
{
    int rc;

    if (*has)
        return 0;
    rc = ksched_event_create(c->srv->cfg.sched, c->tenant, event, err);
    *has = rc == 0;
    return rc;
}

struct fence_walk {
    struct ks_conn *c;
    ksched_err *err;
    int rc;
};

/* The legacy stream waits for a blocking stream's work so far. */
static void fence_stream(struct ks_obj *o, void *arg)
{
    struct fence_walk *w = arg;
    struct ks_stream *st = &o->u.stream;
    int rc;

    if (o->kind != KS_STREAM || !st->dirty || w->rc)
        return;
    if ((rc = ensure_event(w->c, &st->has_fence, &st->fence_event, w->err)) ||
        (rc = submit_event(w->c, o->handle, KSCHED_OP_EVENT_RECORD, st->fence_event, w->err)) ||
        (rc = submit_event(w->c, KERNELET_STREAM_LEGACY, KSCHED_OP_EVENT_WAIT, st->fence_event,
                           w->err))) {
        w->rc = rc;
        return;
    }
    st->dirty = false;
    w->c->dirty_streams--;
}

int ks_stream_order(struct ks_conn *c, uint64_t stream, ksched_err *err)
{
    struct ks_stream *st = ks_stream_of(c, stream);
    int rc;

    if (!st)
        return ksched_fail(err, KSCHED_ENOTFOUND, "no stream %llu", (unsigned long long)stream);
    if (stream == KERNELET_STREAM_LEGACY) {
        /* Work on the legacy stream starts after all earlier work of blocking streams. */
        if (c->dirty_streams) {
            struct fence_walk w = {c, err, 0};
            ks_handle_each(&c->handles, fence_stream, &w);
            if (w.rc)
                return w.rc;
        }
        c->legacy_gen++;
        return 0;
    }
    if (st->non_blocking)
        return 0;
    /* And work on a blocking stream starts after all earlier work of the legacy stream. */
    if (st->seen_legacy < c->legacy_gen) {
        if ((rc = ensure_event(c, &c->has_legacy_fence, &c->legacy_fence, err)))
            return rc;
        if (c->legacy_fence_gen != c->legacy_gen) {
            if ((rc = submit_event(c, KERNELET_STREAM_LEGACY, KSCHED_OP_EVENT_RECORD,
                                   c->legacy_fence, err)))
                return rc;
            c->legacy_fence_gen = c->legacy_gen;
        }
        if ((rc = submit_event(c, stream, KSCHED_OP_EVENT_WAIT, c->legacy_fence, err)))
            return rc;
        st->seen_legacy = c->legacy_gen;
    }
    if (!st->dirty) {
        st->dirty = true;
        c->dirty_streams++;
    }
    return 0;
}

/* ---- draining --------------------------------------------------------------------------- */

/* Operations of a stream complete in submission order, so "the work so far" is done once
 * the stream's completion count reaches its submission count of now: no marker operation,
 * no extra trip through the scheduler. */
void ks_drain_stream(struct ks_conn *c, struct ks_tracker *t, uint64_t stream)
{
    struct ks_stream *st = ks_stream_of(c, stream);
    struct ks_waiter *w;

    if (!st || st->completed >= st->submitted)
        return;
    if (!ks_waiter_room(c) || !(w = calloc(1, sizeof(*w)))) {
        t->error = t->error ? t->error : KS_CUDA_OUT_OF_MEMORY;
        return;
    }
    c->n_waiters++;
    w->tracker = t;
    w->target = st->submitted;
    w->next = st->waiters;
    st->waiters = w;
    t->remaining++;
}

/* Releases the trackers whose target the stream has reached (all of them with all). The
 * waiters are unlinked first and st is not touched afterwards: a tracker that finishes may
 * free the stream itself (STREAM_DESTROY, an event sync's own stream, CONTEXT_CLOSE). */
static void wake(struct ks_stream *st, bool all)
{
    struct ks_waiter **pw = &st->waiters, *ready = NULL;

    while (*pw) {
        struct ks_waiter *w = *pw;
        if (!all && w->target > st->completed) {
            pw = &w->next;
            continue;
        }
        *pw = w->next;
        w->next = ready;
        ready = w;
    }
    while (ready) {
        struct ks_waiter *w = ready;
        ready = w->next;
        w->tracker->conn->n_waiters--;
        ks_tracker_done(w->tracker);
        free(w);
    }
}

void ks_stream_wake_all(struct ks_stream *st)
{
    wake(st, true);
}

struct drain_walk {
    struct ks_conn *c;
    struct ks_tracker *t;
};

static void drain_each(struct ks_obj *o, void *arg)
{
    struct drain_walk *w = arg;

    if (o->kind == KS_STREAM)
        ks_drain_stream(w->c, w->t, o->handle);
}

void ks_drain_then(struct ks_conn *c, uint64_t id, uint16_t op, enum ks_after after, uint64_t arg)
{
    ks_drain_then2(c, id, op, after, arg, 0);
}

void ks_drain_then2(struct ks_conn *c, uint64_t id, uint16_t op, enum ks_after after,
                    uint64_t arg, uint64_t arg2)
{
    struct ks_tracker *t = ks_tracker_new(c, id, op);
    struct drain_walk w = {c, t};

    if (!t) {
        ks_reply_cuda(c, op, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    t->after = after;
    t->arg = arg;
    t->arg2 = arg2;
    t->report_async = after == KS_AFTER_REPLY;
    ks_drain_stream(c, t, KERNELET_STREAM_LEGACY);
    ks_handle_each(&c->handles, drain_each, &w);
    ks_tracker_done(t);
}

/* ---- completions ------------------------------------------------------------------------- */

void ks_op_done(void *user, const ksched_op_result *r)
{
    struct ks_op *kop = user;
    struct ks_server *s = kop->conn->srv;
    uint64_t one = 1;

    kop->status = r->status;
    if (ks_latency_wanted()) {
        kop->t.submit_ns = r->submit_ns;
        kop->t.start_ns = r->start_ns;
        kop->t.end_ns = r->end_ns;
        kop->t.callback_ns = ks_now_ns();
    }
    if (r->status) /* the message is only read for failures */
        snprintf(kop->msg, sizeof(kop->msg), "%s", r->msg ? r->msg : "");
    pthread_mutex_lock(&s->cq_lock);
    kop->next = NULL;
    bool first = !s->cq_tail;
    if (s->cq_tail)
        s->cq_tail->next = kop;
    else
        s->cq_head = kop;
    s->cq_tail = kop;
    pthread_mutex_unlock(&s->cq_lock);
    /* Only the first completion of a batch rings: the server reads the ring before it takes
     * the queue, so one that finds the queue non-empty is taken with those before it (a
     * write is a system call per launch in the completion thread, the busiest). */
    if (first && write(s->wake_fd, &one, sizeof(one)) < 0) {
        /* The counter is saturated: the loop is awake anyway. */
    }
}

static void complete(struct ks_op *kop)
{
    struct ks_conn *c = kop->conn;
    struct ks_stream *st = ks_stream_of(c, kop->stream);
    struct ks_tracker *t = kop->tracker;

    c->ops_inflight--;
    c->launches_inflight -= kop->launch;
    if (ks_latency_wanted())
        ks_latency_note(c, kop, ks_now_ns());
    if (kop->status && kop->status != KSCHED_ECANCELED) {
        uint32_t code = ks_cuda_of_completion(kop->status, kop->msg, kop->launch);
        ks_context_note_error(c, kop->context, code, kop->launch);
        if (t && !t->error)
            t->error = code;
    }
    /* Only now may synchronisations waiting for this operation answer: with its error. */
    if (st) {
        if (st->outstanding)
            st->outstanding--;
        st->completed++;
        if (st->waiters)
            wake(st, false);
    }
    kop->tracker = NULL;
    op_release(kop);
    if (t)
        ks_tracker_done(t);
}

void ks_completions(struct ks_server *s)
{
    struct ks_op *list;

    ks_calls_finish(s);
    pthread_mutex_lock(&s->cq_lock);
    list = s->cq_head;
    s->cq_head = s->cq_tail = NULL;
    pthread_mutex_unlock(&s->cq_lock);
    if (!list)
        return;
    while (list) {
        struct ks_op *next = list->next;
        complete(list);
        list = next;
    }
    /* Batches held back by a tenant's max-inflight limit may go on now. */
    for (struct ks_conn *c = s->conns; c; c = c->next) {
        if (!c->stalled || c->closing || !ks_batch_resume(c))
            continue;
        memmove(c->in, c->in + c->stalled_msg_len, c->in_len - c->stalled_msg_len);
        c->in_len -= c->stalled_msg_len;
        ks_conn_process(c);
        ks_conn_update_events(c);
    }
}
