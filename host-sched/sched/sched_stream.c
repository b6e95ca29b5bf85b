/* Operations in stream order: submission, starting the head of each stream, completion,
 * events, and the deferred notifications of the submitters.
 *
 * Stream-ordered pipelining: a launch that follows a launch whose slices have all been
 * handed out starts before that one completes, pinned to the lane its predecessor runs in.
 * Lanes run in submission order (executor.h), so the device keeps the stream's order while
 * the next kernel is already queued: without this, every kernel boundary of a tenant costs
 * a round trip from the device's completion through the scheduler back to the device (about
 * 90 us per kernel on the H100, measured with the cuda backend's timeline). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

#define MAX_PARAMS (32u << 10)

void sched_notify_push(ksched *s, notify *n)
{
    n->next = NULL;
    if (s->notify_tail)
        s->notify_tail->next = n;
    else
        s->notify_head = n;
    s->notify_tail = n;
}

void sched_stream_wake(ksched *s, sched_stream *st)
{
    if (st->on_worklist)
        return;
    st->on_worklist = 1;
    st->work_next = NULL;
    if (s->work_tail)
        s->work_tail->work_next = st;
    else
        s->work_head = st;
    s->work_tail = st;
}

static void op_free(sched_op *op)
{
    if (!op)
        return;
    free(op->owned_params);
    free(op->kernel);
    free(op);
}

void sched_stream_free(sched_stream *st)
{
    while (st->head) {
        sched_op *n = st->head->next;
        op_free(st->head);
        st->head = n;
    }
    free(st);
}

static uint64_t stream_key(const sched_stream *st)
{
    return (uint64_t)st->tenant->id << 32 | st->id;
}

void sched_note_launch(ksched *s, const sched_stream *st)
{
    uint64_t key = stream_key(st), now = sched_now(s);
    if (s->last_launch.any && s->last_launch.stream != key) {
        s->last_launch.other_ns = s->last_launch.ns;
        s->last_launch.other = 1;
    }
    s->last_launch.stream = key;
    s->last_launch.ns = now;
    s->last_launch.any = 1;
}

int sched_stream_alone(ksched *s, const sched_stream *st)
{
    if (!s->cfg.lone_slice_ns)
        return 0;
    uint64_t open = 0;
    for (const sched_tenant *t = s->tenants; t; t = t->next)
        open += t->launches_open;
    if (open > st->launches_open)
        return 0;               /* another stream has a launch queued or running */
    uint64_t key = stream_key(st), now = sched_now(s);
    int other = s->last_launch.stream == key ? s->last_launch.other : s->last_launch.any;
    uint64_t at = s->last_launch.stream == key ? s->last_launch.other_ns : s->last_launch.ns;
    return !other || now - at >= 5 * s->cfg.lone_slice_ns;
}

static void account(sched_tenant *t, sched_op *op, int status, const char *msg)
{
    t->st.queued--;
    if (op->started)
        t->busy--;
    if (op->op.kind == KSCHED_OP_LAUNCH) {
        sched_function *f = idmap_get(&t->functions, op->op.u.launch.function);
        if (f)
            f->module->users--;
        t->launches_open--;
        if (op->stream)
            op->stream->launches_open--;
        if (status)
            t->st.failed++;
        else
            t->st.completed++;
    }
    if (status) {
        t->st.errors++;
        t->st.last_error = status;
        snprintf(t->st.last_error_msg, sizeof(t->st.last_error_msg), "%s", msg ? msg : "");
    }
}

/* Accounts, notifies and frees op, which is no longer in its stream. */
void sched_op_finish(ksched *s, sched_op *op, int status, const char *msg)
{
    sched_tenant *t = op->tenant;
    if (!op->end_ns)
        op->end_ns = sched_now(s);
    account(t, op, status, msg);
    sched_domain_put(s, t, op->domain);    /* a launch of a closed context, the last */
    s->ops_pending--;
    if (op->done) {
        notify *n = calloc(1, sizeof(*n));
        if (n) {
            snprintf(n->msg, sizeof(n->msg), "%s", msg ? msg : "");
            n->done = op->done;
            n->user = op->user;
            n->r = (ksched_op_result){.op_id = op->id, .kind = op->op.kind, .tenant = t->id,
                                      .stream = op->stream->id, .status = status,
                                      .backend_status = op->backend_status,
                                      .submit_ns = op->submit_ns, .start_ns = op->start_ns,
                                      .end_ns = op->end_ns};
            sched_notify_push(s, n);
        }
    }
    op_free(op);
}

/* Takes op out of its stream's list: the head, or (a pipelined launch that failed before
 * its predecessor completed) a later one. */
static void stream_unlink(sched_stream *st, sched_op *op)
{
    sched_op **link = &st->head, *prev = NULL;
    while (*link && *link != op) {
        prev = *link;
        link = &prev->next;
    }
    if (!*link)
        return;
    *link = op->next;
    if (st->tail == op)
        st->tail = prev;
}

/* How soon after a timing event's record a launch must be submitted to restamp it: the
 * two came together (one batch, or back to back), so the host put no time between them
 * that the event should count. */
#define RESTAMP_WINDOW_NS 20000

/* Remembers whether op, completing on st, was a record of a timing event. */
static void note_timing_record(sched_stream *st, const sched_op *op, int status)
{
    st->timing_record.set = !status && op->op.kind == KSCHED_OP_EVENT_RECORD && op->op.timing;
    if (!st->timing_record.set)
        return;
    st->timing_record.event = op->op.u.event;
    st->timing_record.gen = op->event_gen;
    st->timing_record.submit_ns = op->submit_ns;
}

void sched_restamp_arm(sched_op *launch)
{
    sched_stream *st = launch->stream;
    if (!st->timing_record.set ||
        launch->submit_ns > st->timing_record.submit_ns + RESTAMP_WINDOW_NS)
        return;
    launch->restamp = 1;
    launch->restamp_event = st->timing_record.event;
    launch->restamp_gen = st->timing_record.gen;
}

void sched_restamp_apply(ksched *s, const sched_op *launch)
{
    sched_event *ev = launch->restamp && !launch->status
                          ? idmap_get(&launch->tenant->events, launch->restamp_event)
                          : NULL;
    /* only while that record is still the event's latest, and never past the launch's end */
    if (!ev || ev->completed != launch->restamp_gen || launch->start_ns <= ev->time_ns ||
        launch->start_ns > launch->end_ns)
        return;
    ev->time_ns = launch->start_ns;
    sched_events_changed(s, launch->tenant);
}

/* Completes op and lets the stream go on; a pipelined launch that now heads the stream
 * is free of its predecessor's lane. */
void sched_op_complete(ksched *s, sched_op *op, int status, const char *msg)
{
    sched_stream *st = op->stream;
    if (!op->end_ns)
        op->end_ns = sched_now(s);
    if (op->end_ns > st->last_end_ns)
        st->last_end_ns = op->end_ns;
    note_timing_record(st, op, status);
    stream_unlink(st, op);
    sched_op_finish(s, op, status, msg);
    sched_op *head = st->head;
    if (head && head->started && head->kernel)
        head->kernel->lane_pin = -1;
    sched_stream_wake(s, st);
}

static void wake_waiter(uint32_t id, void *val, void *user)
{
    (void)id;
    sched_stream *st = val;
    if (st->head && !st->head->started && st->head->op.kind == KSCHED_OP_EVENT_WAIT)
        sched_stream_wake(user, st);
}

/* An event of t completed: streams waiting on one of its events may go on. */
void sched_events_changed(ksched *s, sched_tenant *t)
{
    idmap_each(&t->streams, wake_waiter, s);
}

static int check_op(ksched *s, sched_tenant *t, const ksched_op *op, ksched_err *err);

static int submit_copy(ksched *s, sched_op *op)
{
    ksched_err ce = {0};
    if (check_op(s, op->tenant, &op->op, &ce)) {
        /* the memory was freed, or its module unloaded, after the copy was queued */
        char msg[MSG_LEN];
        snprintf(msg, sizeof(msg), "when the copy started: %.130s", ce.msg);
        sched_op_complete(s, op, ce.code, msg);
        return 1;
    }
    sched_sub *sub = calloc(1, sizeof(*sub));
    if (!sub) {
        sched_op_complete(s, op, KSCHED_ENOMEM, "out of memory");
        return 1;
    }
    *sub = (sched_sub){.kind = SUB_COPY, .s = s, .op = op};
    const kbackend_ops *o = s->be.ops;
    void *b = s->be.state;
    const ksched_op *x = &op->op;
    kbackend_error e = {0};
    int rc;
    switch (x->kind) {
    case KSCHED_OP_COPY_H2D:
        rc = o->copy_h2d(b, x->u.h2d.dst, x->u.h2d.src, x->u.h2d.bytes, sched_backend_done, sub, &e);
        break;
    case KSCHED_OP_COPY_D2H:
        rc = o->copy_d2h(b, x->u.d2h.dst, x->u.d2h.src, x->u.d2h.bytes, sched_backend_done, sub, &e);
        break;
    case KSCHED_OP_COPY_D2D:
        rc = o->copy_d2d(b, x->u.d2d.dst, x->u.d2d.src, x->u.d2d.bytes, sched_backend_done, sub, &e);
        break;
    default:
        rc = o->memset_d8(b, x->u.memset.dst, x->u.memset.value, x->u.memset.bytes,
                          sched_backend_done, sub, &e);
        break;
    }
    if (rc) {
        free(sub);
        op->backend_status = rc;
        sched_note_backend(s, rc, e.msg);
        sched_op_complete(s, op, KSCHED_EBACKEND, e.msg);
        return 1;
    }
    s->outstanding++;
    return 0;
}

/* Starts op at the head of its stream. Returns 1 when it completed at once (the stream
 * moved on), 0 when it runs (or waits) and completes later. */
static int start_op(ksched *s, sched_op *op)
{
    sched_tenant *t = op->tenant;
    sched_event *ev;
    switch (op->op.kind) {
    case KSCHED_OP_EVENT_WAIT:
        ev = idmap_get(&t->events, op->op.u.event);
        if (ev && ev->completed < op->event_gen)
            return 0;                       /* blocked: not started, checked again later */
        op->started = 1;
        t->busy++;
        op->start_ns = sched_now(s);
        sched_op_complete(s, op, 0, NULL);
        return 1;
    case KSCHED_OP_EVENT_RECORD:
        op->started = 1;
        t->busy++;
        op->start_ns = sched_now(s);
        /* as the GPU stamps an event: when the stream reached it, that is once what came
         * before it ended (by the backend's clock), or when it was recorded on an idle
         * stream; not when the scheduler got round to it */
        op->end_ns = op->submit_ns > op->stream->last_end_ns ? op->submit_ns
                                                             : op->stream->last_end_ns;
        if (op->end_ns > op->start_ns)
            op->end_ns = op->start_ns;
        if ((ev = idmap_get(&t->events, op->op.u.event))) {
            if (op->event_gen > ev->completed)
                ev->completed = op->event_gen;
            ev->time_ns = op->end_ns;
            sched_events_changed(s, t);
        }
        sched_op_complete(s, op, 0, NULL);
        return 1;
    default:
        break;
    }
    op->started = 1;
    t->busy++;
    op->start_ns = sched_now(s);
    if (op->op.kind == KSCHED_OP_LAUNCH) {
        int rc = sched_kernel_start(s, op);
        if (rc) {
            sched_op_complete(s, op, rc, "launch could not start (out of memory or no function)");
            return 1;
        }
        return 0;
    }
    if (op->op.kind == KSCHED_OP_HOST) {
        notify *n = calloc(1, sizeof(*n));
        if (!n) {
            sched_op_complete(s, op, KSCHED_ENOMEM, "out of memory");
            return 1;
        }
        n->host_fn = op->op.u.host.fn;
        n->host_user = op->op.u.host.user;
        n->host_op = op;
        s->host_running++;
        sched_notify_push(s, n);
        return 0;
    }
    return submit_copy(s, op);
}

/* The lane next may start in before prev completes, or -1: prev is a launch of which
 * every slice is handed out (all in one lane, while any is in flight) and next a launch of a
 * kernel class that needs no profile first (a profile would run its blocks outside the
 * lane). Copies, events and host functions still wait for their predecessor. */
static int pipeline_lane(ksched *s, const sched_op *prev, const sched_op *next)
{
    const sched_kernel *k = prev->kernel;
    if (prev->op.kind != KSCHED_OP_LAUNCH || !k || k->state != K_DRAINING || prev->status ||
        next->op.kind != KSCHED_OP_LAUNCH || next->started || prev->tenant->removing)
        return -1;
    int lane = sched_kernel_lane(k);
    if (lane < 0)
        return -1;
    sched_function *f = idmap_get(&next->tenant->functions, next->op.u.launch.function);
    sched_class *c = f ? sched_class_of(s, f, &next->op, NULL) : NULL;
    return c && (c->profiled != 0 || !sched_profiles_wanted(s)) ? lane : -1;
}

/* Starts the launches that may follow the started ones of st (pipeline_lane); returns how
 * many it started. */
static int start_followers(ksched *s, sched_stream *st)
{
    int started = 0;
    for (sched_op *op = st->head; op && op->started; op = op->next) {
        sched_op *next = op->next;
        int lane = next ? pipeline_lane(s, op, next) : -1;
        if (lane < 0)
            continue;
        if (start_op(s, next))
            return started;         /* it failed at once and is gone: look again later */
        if (next->kernel)
            next->kernel->lane_pin = lane;
        started++;
    }
    return started;
}

int sched_streams_start(ksched *s)
{
    sched_stream *st;
    int started = 0;
    while ((st = s->work_head)) {
        s->work_head = st->work_next;
        if (!s->work_head)
            s->work_tail = NULL;
        st->on_worklist = 0;
        if (sched_tenant_paused(st->tenant))
            continue;       /* woken again when it resumes (sched_tenant_resume) */
        while (st->head && !st->head->started && start_op(s, st->head))
            ;
        started += start_followers(s, st);
        if (st->destroyed && !st->head && !st->on_worklist) {
            idmap_del(&st->tenant->streams, st->id);
            sched_stream_free(st);
        }
    }
    return started;
}

/* ---- submission ---- */

static int check_launch(ksched *s, sched_tenant *t, const ksched_op *op, ksched_err *err)
{
    const sched_function *f = idmap_get(&t->functions, op->u.launch.function);
    if (!f)
        return ksched_fail(err, KSCHED_ENOTFOUND, "no function %u", op->u.launch.function);
    if (!f->fn)
        return ksched_fail(err, KSCHED_EUNSUPPORTED, "kernel %s is SASS only and backend %s "
                           "runs PTX only", f->entry, s->be.ops->name ? s->be.ops->name : "?");
    const unsigned *g = op->u.launch.grid, *b = op->u.launch.block;
    uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
    if (!g[0] || !g[1] || !g[2] || !threads)
        return ksched_fail(err, KSCHED_EINVAL, "empty grid or block");
    if (threads > s->gpu.max_warps_per_block * 32ull)
        return ksched_fail(err, KSCHED_EINVAL, "%llu threads per block (at most %u)",
                           (unsigned long long)threads, s->gpu.max_warps_per_block * 32);
    if (op->u.launch.smem > s->gpu.max_smem_per_block)
        return ksched_fail(err, KSCHED_EINVAL, "%u bytes of shared memory (at most %u)",
                           op->u.launch.smem, s->gpu.max_smem_per_block);
    if (op->u.launch.params_size > MAX_PARAMS ||
        (op->u.launch.params_size && !op->u.launch.params))
        return ksched_fail(err, KSCHED_EINVAL, "parameter block missing or above %u bytes",
                           MAX_PARAMS);
    if (t->pol.max_inflight && t->launches_open >= t->pol.max_inflight)
        return ksched_fail(err, KSCHED_EAGAIN, "tenant %u has %llu launches in flight", t->id,
                           (unsigned long long)t->launches_open);
    return 0;
}

static int check_range(const sched_tenant *t, kbackend_devptr p, uint64_t bytes,
                       ksched_err *err)
{
    if (!bytes)
        return ksched_fail(err, KSCHED_EINVAL, "operation on 0 bytes");
    if (!sched_tenant_owns(t, p, bytes))
        return ksched_fail(err, KSCHED_EINVAL, "[0x%llx, +%llu) is not memory of tenant %u",
                           (unsigned long long)p, (unsigned long long)bytes, t->id);
    return 0;
}

static int check_op(ksched *s, sched_tenant *t, const ksched_op *op, ksched_err *err)
{
    const void *host = NULL;
    int rc = 0;
    switch (op->kind) {
    case KSCHED_OP_LAUNCH:
        return check_launch(s, t, op, err);
    case KSCHED_OP_COPY_H2D:
        rc = check_range(t, op->u.h2d.dst, op->u.h2d.bytes, err);
        host = op->u.h2d.src;
        break;
    case KSCHED_OP_COPY_D2H:
        rc = check_range(t, op->u.d2h.src, op->u.d2h.bytes, err);
        host = op->u.d2h.dst;
        break;
    case KSCHED_OP_COPY_D2D:
        rc = check_range(t, op->u.d2d.src, op->u.d2d.bytes, err);
        if (!rc)
            rc = check_range(t, op->u.d2d.dst, op->u.d2d.bytes, err);
        return rc;
    case KSCHED_OP_MEMSET:
        return check_range(t, op->u.memset.dst, op->u.memset.bytes, err);
    case KSCHED_OP_EVENT_RECORD:
    case KSCHED_OP_EVENT_WAIT:
        return idmap_get(&t->events, op->u.event)
                   ? 0 : ksched_fail(err, KSCHED_ENOTFOUND, "no event %u", op->u.event);
    case KSCHED_OP_HOST:
        return op->u.host.fn ? 0 : ksched_fail(err, KSCHED_EINVAL, "host op without function");
    default:
        return ksched_fail(err, KSCHED_EINVAL, "unknown operation %d", (int)op->kind);
    }
    if (!rc && !host)
        rc = ksched_fail(err, KSCHED_EINVAL, "copy with a NULL host pointer");
    return rc;
}

static sched_op *op_new(ksched *s, sched_tenant *t, sched_stream *st, const ksched_op *x)
{
    sched_op *op = calloc(1, sizeof(*op));
    if (!op)
        return NULL;
    op->op = *x;
    if (x->kind == KSCHED_OP_LAUNCH && x->u.launch.params_size) {
        if (!(op->owned_params = malloc(x->u.launch.params_size))) {
            free(op);
            return NULL;
        }
        memcpy(op->owned_params, x->u.launch.params, x->u.launch.params_size);
        op->op.u.launch.params = op->owned_params;
    }
    op->id = s->next_op++;
    op->tenant = t;
    op->stream = st;
    op->submit_ns = sched_now(s);
    sched_event *ev = NULL;
    if (x->kind == KSCHED_OP_EVENT_RECORD || x->kind == KSCHED_OP_EVENT_WAIT)
        ev = idmap_get(&t->events, x->u.event);
    if (x->kind == KSCHED_OP_EVENT_RECORD)
        op->event_gen = ++ev->recorded;
    else if (x->kind == KSCHED_OP_EVENT_WAIT)
        op->event_gen = ev->recorded;
    return op;
}

int ksched_submit(ksched *s, uint32_t tenant, uint32_t stream, const ksched_op *x,
                  ksched_done_fn done, void *user, uint64_t *op_id, ksched_err *err)
{
    if (!s || !x)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    sched_stream *st = t ? idmap_get(&t->streams, stream) : NULL;
    int rc = !t ? KSCHED_ENOTFOUND
             : t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u is being removed", tenant)
             : !st || st->destroyed ? ksched_fail(err, KSCHED_ENOTFOUND, "no stream %u", stream)
             : sched_refuse_if_lost(s, err) ? KSCHED_ELOST
             : check_op(s, t, x, err);
    /* a launch runs in its context's domain: fenced into that context's window */
    sched_domain *d = NULL;
    if (!rc && x->kind == KSCHED_OP_LAUNCH)
        rc = sched_domain_of(s, t, x->u.launch.context, &d, err);
    sched_op *op = rc ? NULL : op_new(s, t, st, x);
    if (!rc && !op)
        rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    if (!rc && d) {
        op->domain = d;
        sched_domain_hold(d);
    }
    if (!rc) {
        op->done = done;
        op->user = user;
        if (st->tail)
            st->tail->next = op;
        else
            st->head = op;
        st->tail = op;
        t->st.queued++;
        s->ops_pending++;
        if (x->kind == KSCHED_OP_LAUNCH) {
            ((sched_function *)idmap_get(&t->functions, x->u.launch.function))->module->users++;
            t->st.launched++;
            t->launches_open++;
            st->launches_open++;
            sched_note_launch(s, st);
        }
        if (st->head == op)
            sched_stream_wake(s, st);
        if (op_id)
            *op_id = op->id;
    }
    int kick = !rc && sched_submitted(s);
    pthread_mutex_unlock(&s->lock);
    if (kick)
        sched_kick(s);
    return rc;
}
