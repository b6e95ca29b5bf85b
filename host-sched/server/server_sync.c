/* Streams and events: creation, destruction, synchronisation (answers that wait until a
 * stream has completed the work submitted before them), queries and timing. */
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"

static void reply_handle(struct ks_conn *c, uint16_t op, uint64_t id, uint64_t handle)
{
    struct kernelet_handle h = {.handle = handle};

    ks_reply(c, op, id, KERNELET_ST_OK, &h, sizeof(h));
}

/* CUDA's stream priority (0, or down to -5 for the greatest on an H100; a lower value is a
 * higher priority, out-of-range values are clamped as CUDA does) as the scheduler's level. */
static unsigned sched_priority_of(int32_t cuda_priority)
{
    return cuda_priority >= 0 ? 0
           : cuda_priority < -KSCHED_STREAM_PRIORITY_MAX ? KSCHED_STREAM_PRIORITY_MAX
                                                         : (unsigned)-cuda_priority;
}

static struct ks_obj *new_stream(struct ks_conn *c, bool non_blocking, int32_t priority,
                                 uint32_t *code)
{
    ksched_err err;
    uint32_t sid;
    struct ks_obj *o;
    int rc = ksched_stream_create(c->srv->cfg.sched, c->tenant, &sid, &err);

    if (!rc && priority)
        rc = ksched_stream_set_priority(c->srv->cfg.sched, c->tenant, sid,
                                        sched_priority_of(priority), &err);
    if (rc) {
        *code = ks_cuda_of(rc, err.msg);
        return NULL;
    }
    if (!(o = ks_handle_new(&c->handles, KS_STREAM, c->context))) {
        ksched_stream_destroy(c->srv->cfg.sched, c->tenant, sid, NULL);
        *code = KS_CUDA_OUT_OF_MEMORY;
        return NULL;
    }
    o->u.stream.sid = sid;
    o->u.stream.non_blocking = non_blocking;
    o->u.stream.seen_legacy = 0; /* its first work waits for the legacy stream so far */
    return o;
}

void ks_stream_create(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    uint32_t code = 0;
    struct ks_obj *o = new_stream(c, r->u.stream_create.flags & KERNELET_STREAM_NON_BLOCKING,
                                  r->u.stream_create.priority, &code);

    if (!o)
        ks_reply_cuda(c, KERNELET_OP_STREAM_CREATE, id, code, 0);
    else
        reply_handle(c, KERNELET_OP_STREAM_CREATE, id, o->handle);
}

uint32_t ks_stream_release(struct ks_conn *c, uint64_t handle)
{
    struct ks_obj *o = ks_handle_get(&c->handles, handle, KS_STREAM);
    struct ks_stream st;
    ksched_err err;
    int rc;

    if (!o)
        return KS_CUDA_INVALID_HANDLE;
    /* Gone from the table before its waiters wake: one of them may release it again. */
    st = o->u.stream;
    ks_handle_remove(&c->handles, handle);
    if (st.dirty)
        c->dirty_streams--;
    if (st.has_fence)
        ksched_event_destroy(c->srv->cfg.sched, c->tenant, st.fence_event, NULL);
    rc = ksched_stream_destroy(c->srv->cfg.sched, c->tenant, st.sid, &err);
    ks_stream_wake_all(&st);
    return rc ? ks_cuda_of(rc, err.msg) : KS_CUDA_SUCCESS;
}

/* A tracker answering op once the markers submitted under it have run. */
static struct ks_tracker *waiter(struct ks_conn *c, uint64_t id, uint16_t op, enum ks_after after,
                                 uint64_t arg, bool report_async)
{
    struct ks_tracker *t = ks_tracker_new(c, id, op);

    if (!t) {
        ks_reply_cuda(c, op, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return NULL;
    }
    t->after = after;
    t->arg = arg;
    t->report_async = report_async;
    return t;
}

/* The stream's work drains first (a destroyed stream's work still counts for later
 * synchronisations until then). */
void ks_stream_destroy(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    uint64_t h = r->u.handle.handle;
    struct ks_tracker *t;

    if (h == KERNELET_STREAM_LEGACY || !ks_handle_get(&c->handles, h, KS_STREAM)) {
        ks_reply_cuda(c, KERNELET_OP_STREAM_DESTROY, id, KS_CUDA_INVALID_HANDLE, 0);
        return;
    }
    if (!(t = waiter(c, id, KERNELET_OP_STREAM_DESTROY, KS_AFTER_DESTROY_STREAM, h, false)))
        return;
    ks_drain_stream(c, t, h);
    ks_tracker_done(t);
}

void ks_stream_sync(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    uint64_t h = r->u.handle.handle;
    struct ks_tracker *t;

    if (!ks_stream_of(c, h)) {
        ks_reply_cuda(c, KERNELET_OP_STREAM_SYNC, id, KS_CUDA_INVALID_HANDLE, 0);
        return;
    }
    if (!(t = waiter(c, id, KERNELET_OP_STREAM_SYNC, KS_AFTER_REPLY, 0, true)))
        return;
    ks_drain_stream(c, t, h);
    ks_tracker_done(t);
}

void ks_stream_query(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_stream *st = ks_stream_of(c, r->u.handle.handle);

    if (!st)
        ks_reply_cuda(c, KERNELET_OP_STREAM_QUERY, id, KS_CUDA_INVALID_HANDLE, 0);
    else
        ks_reply_cuda(c, KERNELET_OP_STREAM_QUERY, id, st->outstanding ? KS_CUDA_NOT_READY : 0, 0);
}

void ks_ctx_sync(struct ks_conn *c, uint64_t id)
{
    ks_drain_then(c, id, KERNELET_OP_CTX_SYNC, KS_AFTER_REPLY, 0);
}

/* ---- events -------------------------------------------------------------------------------- */

void ks_event_create(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    ksched_err err;
    uint32_t sid;
    struct ks_obj *o;
    int rc = ksched_event_create(c->srv->cfg.sched, c->tenant, &sid, &err);

    if (rc) {
        ks_reply_cuda(c, KERNELET_OP_EVENT_CREATE, id, ks_cuda_of(rc, err.msg), 0);
        return;
    }
    if (!(o = ks_handle_new(&c->handles, KS_EVENT, c->context))) {
        ksched_event_destroy(c->srv->cfg.sched, c->tenant, sid, NULL);
        ks_reply_cuda(c, KERNELET_OP_EVENT_CREATE, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    o->u.event.sid = sid;
    o->u.event.timing = !(r->u.event_create.flags & KERNELET_EVENT_DISABLE_TIMING);
    reply_handle(c, KERNELET_OP_EVENT_CREATE, id, o->handle);
}

static struct ks_event *event_of(struct ks_conn *c, uint64_t handle)
{
    struct ks_obj *o = ks_handle_get(&c->handles, handle, KS_EVENT);

    return o ? &o->u.event : NULL;
}

uint32_t ks_event_release(struct ks_conn *c, uint64_t handle)
{
    struct ks_event *e = event_of(c, handle);
    ksched_err err;
    int rc;

    if (!e)
        return KS_CUDA_INVALID_HANDLE;
    rc = ksched_event_destroy(c->srv->cfg.sched, c->tenant, e->sid, &err);
    ks_handle_remove(&c->handles, handle);
    return rc ? ks_cuda_of(rc, err.msg) : KS_CUDA_SUCCESS;
}

void ks_event_destroy(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    ks_reply_cuda(c, KERNELET_OP_EVENT_DESTROY, id, ks_event_release(c, r->u.handle.handle), 0);
}

/* Waits on a stream of its own for the event's latest record. */
void ks_event_sync(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_event *e = event_of(c, r->u.handle.handle);
    struct ks_tracker *t;
    struct ks_obj *tmp;
    struct ks_op *kop;
    ksched_err err;
    uint32_t code = 0;

    if (!e) {
        ks_reply_cuda(c, KERNELET_OP_EVENT_SYNC, id, KS_CUDA_INVALID_HANDLE, 0);
        return;
    }
    if (!e->recorded) {
        ks_reply_cuda(c, KERNELET_OP_EVENT_SYNC, id, 0, 0);
        return;
    }
    if (!ks_waiter_room(c)) {
        ks_reply_cuda(c, KERNELET_OP_EVENT_SYNC, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    if (!(tmp = new_stream(c, true, 0, &code))) {
        ks_reply_cuda(c, KERNELET_OP_EVENT_SYNC, id, code, 0);
        return;
    }
    if (!(t = waiter(c, id, KERNELET_OP_EVENT_SYNC, KS_AFTER_DESTROY_STREAM, tmp->handle, true)))
        return;
    t->holds_waiter = true; /* a waiter of its own stream's one operation */
    c->n_waiters++;
    ksched_op op = {.kind = KSCHED_OP_EVENT_WAIT, .u.event = e->sid};
    if ((kop = calloc(1, sizeof(*kop)))) {
        kop->tracker = t; /* its completion is the answer */
        if (ks_submit(c, tmp->handle, &op, kop, &err) && !t->error)
            t->error = KS_CUDA_INVALID_HANDLE;
    } else if (!t->error) {
        t->error = KS_CUDA_OUT_OF_MEMORY;
    }
    ks_tracker_done(t);
}

void ks_event_query(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_event *e = event_of(c, r->u.handle.handle);
    int done = 1;

    if (!e) {
        ks_reply_cuda(c, KERNELET_OP_EVENT_QUERY, id, KS_CUDA_INVALID_HANDLE, 0);
        return;
    }
    ksched_event_query(c->srv->cfg.sched, c->tenant, e->sid, &done, NULL, NULL);
    ks_reply_cuda(c, KERNELET_OP_EVENT_QUERY, id, done ? 0 : KS_CUDA_NOT_READY, 0);
}

void ks_event_elapsed(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_event *a = event_of(c, r->u.event_pair.start), *b = event_of(c, r->u.event_pair.end);
    uint64_t ta = 0, tb = 0;
    int da = 0, db = 0;
    struct kernelet_elapsed ans;

    if (!a || !b || !a->timing || !b->timing || !a->recorded || !b->recorded) {
        ks_reply_cuda(c, KERNELET_OP_EVENT_ELAPSED, id, KS_CUDA_INVALID_HANDLE, 0);
        return;
    }
    ksched_event_query(c->srv->cfg.sched, c->tenant, a->sid, &da, &ta, NULL);
    ksched_event_query(c->srv->cfg.sched, c->tenant, b->sid, &db, &tb, NULL);
    if (!da || !db) {
        ks_reply_cuda(c, KERNELET_OP_EVENT_ELAPSED, id, KS_CUDA_NOT_READY, 0);
        return;
    }
    ans.ns = (int64_t)(tb - ta);
    ks_reply(c, KERNELET_OP_EVENT_ELAPSED, id, KERNELET_ST_OK, &ans, sizeof(ans));
}
