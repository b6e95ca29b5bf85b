/* LAUNCH_BATCH: records of stream work, checked against what the tenant owns and turned
 * into operations of its queues. The first record that fails stops the batch (the ones
 * before it stay queued) and the answer names it. When the tenant has as many operations
 * of any kind queued as its policy's max-inflight allows, the batch stalls: the
 * connection is not read until enough of them complete, then the batch continues where it
 * stopped, within a record of many rows at its next row. So a flood of copies, memsets or
 * events costs the daemon no more than max-inflight operations, and loses nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"

#define EAGAIN_CODE UINT32_MAX

static uint32_t submit_or_code(struct ks_conn *c, uint64_t stream, const ksched_op *op,
                               struct ks_op *kop)
{
    ksched_err err;
    int rc = ks_submit(c, stream, op, kop, &err);

    if (rc == KSCHED_EAGAIN)
        return EAGAIN_CODE;
    return rc ? ks_context_cuda_of(c, c->context, rc, err.msg) : KS_CUDA_SUCCESS;
}

/* Whether c has as many operations queued as its policy allows: the batch waits. */
static bool full(struct ks_conn *c)
{
    return c->ops_inflight >= ks_inflight_limit(c);
}

static struct ks_op *new_op(struct ks_tracker *t)
{
    struct ks_op *kop = calloc(1, sizeof(*kop));

    if (kop)
        kop->tracker = t;
    return kop;
}

static uint32_t order(struct ks_conn *c, uint64_t stream)
{
    ksched_err err;
    int rc = ks_stream_order(c, stream, &err);

    return rc ? ks_cuda_of(rc, err.msg) : KS_CUDA_SUCCESS;
}

/* ---- launches ------------------------------------------------------------------------------ */

/* Clusters and cooperative launches run where the backend can run them; elsewhere CUDA's
 * not-supported error (and a line in the log, once per tenant), not a failed kernel. */
static uint32_t launch_attrs_allowed(struct ks_conn *c, const struct kproto_record *rec)
{
    bool cooperative = rec->u.launch.flags & KERNELET_LAUNCH_COOPERATIVE;

    if (!kbackend_launch_has_attrs(rec->u.launch.cluster, cooperative) ||
        c->srv->cfg.device.launch_attrs)
        return KS_CUDA_SUCCESS;
    if (!c->attrs_refusal_logged)
        fprintf(stderr, "kerneletd: tenant %s (pid %u): %s launch refused: backend %s does "
                "not run them: CUDA_ERROR_NOT_SUPPORTED\n", c->name, (unsigned)c->cred.pid,
                cooperative ? "cooperative" : "thread-block cluster", c->srv->cfg.backend_name);
    c->attrs_refusal_logged = true;
    return KS_CUDA_NOT_SUPPORTED;
}

static uint32_t launch(struct ks_conn *c, const struct kproto_record *rec, struct ks_tracker *t)
{
    const struct kernelet_rec_launch *l = &rec->u.launch.rec;
    const int32_t *dev = c->srv->device.attrs;
    struct ks_obj *o = ks_handle_get(&c->handles, l->function, KS_FUNCTION);
    const struct ks_function *f;
    uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    ksched_op op = {.kind = KSCHED_OP_LAUNCH};
    struct ks_op *kop;
    void *fenced = NULL;
    uint32_t code, params_size;

    if (!o)
        return KS_CUDA_INVALID_HANDLE;
    f = &o->u.function;
    if (l->param_bytes != f->param_bytes)
        return KS_CUDA_INVALID_VALUE;
    if (f->no_code)
        return ks_cubin_refuse_launch(c, &o->u.function);
    if (f->fence_refused)
        return ks_fence_refuse_launch(c, &o->u.function);
    /* Device limits (cuda.h attribute numbers: 1 threads per block, 2-4 block, 5-7 grid). */
    for (int i = 0; i < 3; i++)
        if (l->block[i] > (uint32_t)dev[2 + i] || l->grid[i] > (uint32_t)dev[5 + i])
            return KS_CUDA_INVALID_VALUE;
    if (threads > (uint64_t)dev[1] || threads > (uint64_t)f->attrs[0])
        return KS_CUDA_INVALID_VALUE;
    /* Dynamic shared memory up to the device's opt-in limit (97) less the static (attrs[1]):
     * the tenant's cuFuncSetAttribute opt-in is checked by its library, and the backends
     * raise the function's own limit before such a launch. */
    if ((int64_t)l->shared_mem > (int64_t)dev[97] - f->attrs[1])
        return KS_CUDA_INVALID_VALUE;
    if ((code = launch_attrs_allowed(c, rec)))
        return code;
    if ((code = order(c, rec->stream)))
        return code;
    params_size = l->param_bytes;
    if (f->fenced && (code = ks_fence_params(c, rec->u.launch.params, l->param_bytes, &fenced,
                                             &params_size)))
        return code;
    if (!(kop = new_op(t))) {
        free(fenced);
        return KS_CUDA_OUT_OF_MEMORY;
    }
    kop->launch = true;
    op.u.launch.function = f->sid;
    memcpy(op.u.launch.grid, l->grid, sizeof(l->grid));
    memcpy(op.u.launch.block, l->block, sizeof(l->block));
    op.u.launch.smem = l->shared_mem;
    op.u.launch.params = fenced ? fenced : rec->u.launch.params;
    op.u.launch.params_size = params_size;
    op.u.launch.polls_cancel = f->fenced;   /* the fencing pass put the polls in */
    memcpy(op.u.launch.cluster, rec->u.launch.cluster, sizeof(op.u.launch.cluster));
    op.u.launch.cooperative = !!(rec->u.launch.flags & KERNELET_LAUNCH_COOPERATIVE);
    op.u.launch.context = c->context;       /* runs in (is fenced into) its domain */
    code = submit_or_code(c, rec->stream, &op, kop);   /* the scheduler copies the params */
    free(fenced);
    if (code == KS_CUDA_SUCCESS)
        c->launches++;
    return code;
}

/* ---- copies ------------------------------------------------------------------------------- */

/* Where the host side of a copy lies: a region (held by each row's operation) or inline
 * bytes (shared by the rows). */
struct host_side {
    struct ks_region *region;
    struct ks_shared *inline_data;
    uint8_t *base;
};

static uint32_t host_side(struct ks_conn *c, const struct kproto_record *rec, uint64_t offset,
                          uint64_t span, struct host_side *h)
{
    const struct kernelet_rec_copy *cp = &rec->u.copy.rec;

    memset(h, 0, sizeof(*h));
    if (cp->region == KERNELET_REGION_INLINE) {
        size_t n = cp->width * cp->height;
        if (!(h->inline_data = malloc(sizeof(*h->inline_data) + (n ? n : 1))))
            return KS_CUDA_OUT_OF_MEMORY;
        h->inline_data->refs = 1; /* ours, dropped after submitting */
        memcpy(h->inline_data->data, rec->u.copy.inline_data, n);
        h->base = h->inline_data->data;
        return KS_CUDA_SUCCESS;
    }
    h->region = ks_region_find(c, cp->region);
    if (!h->region || offset > h->region->size || span > h->region->size - offset)
        return KS_CUDA_INVALID_VALUE;
    h->base = h->region->base + offset;
    return KS_CUDA_SUCCESS;
}

static void host_side_done(struct host_side *h)
{
    if (h->inline_data && --h->inline_data->refs == 0)
        free(h->inline_data);
}

/* One row (or the whole contiguous copy) as an operation. */
static uint32_t copy_piece(struct ks_conn *c, const struct kproto_record *rec, struct ks_tracker *t,
                           struct host_side *h, uint64_t dst, uint64_t src, uint64_t bytes)
{
    ksched_op op;
    struct ks_op *kop = new_op(t);

    if (!kop)
        return KS_CUDA_OUT_OF_MEMORY;
    switch (rec->u.copy.rec.kind) {
    case KERNELET_COPY_HTOD:
        op = (ksched_op){.kind = KSCHED_OP_COPY_H2D,
                         .u.h2d = {.dst = dst, .src = h->base + src, .bytes = bytes}};
        break;
    case KERNELET_COPY_DTOH:
        op = (ksched_op){.kind = KSCHED_OP_COPY_D2H,
                         .u.d2h = {.dst = h->base + dst, .src = src, .bytes = bytes}};
        break;
    default:
        op = (ksched_op){.kind = KSCHED_OP_COPY_D2D, .u.d2d = {.dst = dst, .src = src, .bytes = bytes}};
    }
    if (h->region) {
        kop->region = h->region;
        h->region->refs++;
    }
    if (h->inline_data) {
        kop->shared = h->inline_data;
        h->inline_data->refs++;
    }
    return submit_or_code(c, rec->stream, &op, kop);
}

static uint32_t copy(struct ks_conn *c, const struct kproto_record *rec, struct ks_tracker *t)
{
    const struct kernelet_rec_copy *cp = &rec->u.copy.rec;
    uint64_t span_dst, span_src, dst_base = cp->dst, src_base = cp->src;
    struct host_side h = {0};
    bool contiguous;
    uint32_t code;

    if (kproto_copy_spans(cp, &span_dst, &span_src, NULL, 0))
        return KS_CUDA_INVALID_VALUE;
    if (span_dst == 0)
        return KS_CUDA_SUCCESS;
    switch (cp->kind) {
    case KERNELET_COPY_HTOD:
        if (!ks_memory_owned(c, cp->dst, span_dst))
            return KS_CUDA_INVALID_VALUE;
        if ((code = host_side(c, rec, cp->src, span_src, &h)))
            return code;
        src_base = 0; /* offsets below are relative to h.base */
        break;
    case KERNELET_COPY_DTOH:
        if (!ks_memory_owned(c, cp->src, span_src))
            return KS_CUDA_INVALID_VALUE;
        if ((code = host_side(c, rec, cp->dst, span_dst, &h)))
            return code;
        dst_base = 0;
        break;
    default:
        if (!ks_memory_owned(c, cp->dst, span_dst) || !ks_memory_owned(c, cp->src, span_src))
            return KS_CUDA_INVALID_VALUE;
    }
    /* A record resumed at a later row was ordered when it started. */
    if (!c->stalled_piece && (code = order(c, rec->stream))) {
        host_side_done(&h);
        return code;
    }
    contiguous = cp->height == 1 || (cp->dst_pitch == cp->width && cp->src_pitch == cp->width);
    if (contiguous) {
        code = copy_piece(c, rec, t, &h, dst_base, src_base, cp->width * cp->height);
    } else {
        /* One operation per row, as many as the tenant may queue: the rest wait. */
        for (uint64_t row = c->stalled_piece; row < cp->height && !code; row++) {
            if (row > c->stalled_piece && full(c)) {
                c->stalled_piece = row;
                host_side_done(&h);
                return EAGAIN_CODE;
            }
            code = copy_piece(c, rec, t, &h, dst_base + row * cp->dst_pitch,
                              src_base + row * cp->src_pitch, cp->width);
        }
    }
    host_side_done(&h);
    c->stalled_piece = 0;
    if (!code)
        c->bytes_copied += cp->width * cp->height;
    return code == EAGAIN_CODE ? KS_CUDA_UNKNOWN : code; /* the scheduler never refuses copies */
}

/* ---- memsets ------------------------------------------------------------------------------- */

static bool uniform_bytes(uint32_t v, unsigned size)
{
    for (unsigned i = 1; i < size; i++)
        if (((v >> (8 * i)) & 0xff) != (v & 0xff))
            return false;
    return true;
}

/* A memset as pieces: its rows (one piece when they are contiguous), each cut into chunks
 * of at most `chunk` bytes when the value is copied from a pattern buffer of that size. */
struct memset_plan {
    uint64_t pieces, piece_bytes, stride, chunk, chunks;
};

#define PATTERN_MAX (1u << 20)  /* bytes of a pattern buffer: bounded whatever the width */

static void memset_plan(const struct kernelet_rec_memset *m, bool pattern, struct memset_plan *p)
{
    uint64_t row_bytes = m->width * m->elem_size;
    bool contiguous = m->height == 1 || m->pitch == row_bytes;

    p->pieces = contiguous ? 1 : m->height;
    p->piece_bytes = contiguous ? row_bytes * m->height : row_bytes;
    p->stride = m->pitch;
    /* Whole elements per chunk, so that each starts the pattern afresh. */
    p->chunk = pattern && p->piece_bytes > PATTERN_MAX
                   ? PATTERN_MAX / m->elem_size * m->elem_size : p->piece_bytes;
    p->chunks = (p->piece_bytes + p->chunk - 1) / p->chunk;
}

static struct ks_shared *pattern_new(const struct kernelet_rec_memset *m, uint64_t bytes)
{
    struct ks_shared *pattern = malloc(sizeof(*pattern) + bytes);

    if (!pattern)
        return NULL;
    pattern->refs = 1;
    for (uint64_t i = 0; i < bytes / m->elem_size; i++)
        memcpy(pattern->data + i * m->elem_size, &m->value, m->elem_size);
    return pattern;
}

/* Operation number i of the plan: chunk i % chunks of piece i / chunks. */
static uint32_t memset_op(struct ks_conn *c, const struct kproto_record *rec, struct ks_tracker *t,
                          const struct memset_plan *p, struct ks_shared *pattern, uint64_t i)
{
    const struct kernelet_rec_memset *m = &rec->u.memset;
    uint64_t piece = i / p->chunks, off = i % p->chunks * p->chunk;
    uint64_t dst = m->dst + piece * p->stride + off;
    uint64_t bytes = p->piece_bytes - off < p->chunk ? p->piece_bytes - off : p->chunk;
    struct ks_op *kop = new_op(t);
    ksched_op op;

    if (!kop)
        return KS_CUDA_OUT_OF_MEMORY;
    if (pattern) {
        op = (ksched_op){.kind = KSCHED_OP_COPY_H2D,
                         .u.h2d = {.dst = dst, .src = pattern->data, .bytes = bytes}};
        kop->shared = pattern;
        pattern->refs++;
    } else {
        op = (ksched_op){.kind = KSCHED_OP_MEMSET,
                         .u.memset = {.dst = dst, .value = (uint8_t)m->value, .bytes = bytes}};
    }
    return submit_or_code(c, rec->stream, &op, kop);
}

static uint32_t memset_rec(struct ks_conn *c, const struct kproto_record *rec, struct ks_tracker *t)
{
    const struct kernelet_rec_memset *m = &rec->u.memset;
    struct ks_shared *pattern = NULL;
    struct memset_plan p;
    uint64_t span, i;
    uint32_t code = KS_CUDA_SUCCESS;

    if (kproto_memset_span(m, &span, NULL, 0))
        return KS_CUDA_INVALID_VALUE;
    if (span == 0)
        return KS_CUDA_SUCCESS;
    if (!ks_memory_owned(c, m->dst, span) || m->dst % m->elem_size)
        return KS_CUDA_INVALID_VALUE;
    if (!c->stalled_piece && (code = order(c, rec->stream)))
        return code;
    /* The scheduler sets bytes; other patterns are copied from a filled buffer. */
    bool patterned = !uniform_bytes(m->value, m->elem_size);
    memset_plan(m, patterned, &p);
    if (patterned && !(pattern = pattern_new(m, p.chunk)))
        return KS_CUDA_OUT_OF_MEMORY;
    /* As many operations as the tenant may queue: the rest wait (stalled_piece). */
    for (i = c->stalled_piece; i < p.pieces * p.chunks && !code; i++) {
        if (i > c->stalled_piece && full(c))
            break;
        code = memset_op(c, rec, t, &p, pattern, i);
    }
    if (pattern && --pattern->refs == 0)
        free(pattern);
    if (!code && i < p.pieces * p.chunks) {
        c->stalled_piece = i;
        return EAGAIN_CODE;
    }
    c->stalled_piece = 0;
    return code == EAGAIN_CODE ? KS_CUDA_UNKNOWN : code;
}

/* ---- events ---------------------------------------------------------------------------------- */

static uint32_t event_rec(struct ks_conn *c, const struct kproto_record *rec, struct ks_tracker *t)
{
    struct ks_obj *o = ks_handle_get(&c->handles, rec->u.event.event, KS_EVENT);
    bool record = rec->op == KERNELET_REC_EVENT_RECORD;
    ksched_op op = {.kind = record ? KSCHED_OP_EVENT_RECORD : KSCHED_OP_EVENT_WAIT};
    struct ks_op *kop;
    uint32_t code;

    if (!o || !ks_stream_of(c, rec->stream))
        return KS_CUDA_INVALID_HANDLE;
    if (!record && !o->u.event.recorded)
        return KS_CUDA_SUCCESS; /* waiting for an event never recorded does nothing */
    if ((code = order(c, rec->stream)))
        return code;
    if (!(kop = new_op(t)))
        return KS_CUDA_OUT_OF_MEMORY;
    op.u.event = o->u.event.sid;
    op.timing = record && o->u.event.timing;
    code = submit_or_code(c, rec->stream, &op, kop);
    if (!code && record)
        o->u.event.recorded = true;
    return code == EAGAIN_CODE ? KS_CUDA_UNKNOWN : code;
}

/* ---- the batch ------------------------------------------------------------------------------ */

static uint32_t submit_record(struct ks_conn *c, const struct kproto_record *rec, struct ks_tracker *t)
{
    if (!ks_stream_of(c, rec->stream))
        return KS_CUDA_INVALID_HANDLE;
    switch (rec->op) {
    case KERNELET_REC_LAUNCH:
    case KERNELET_REC_LAUNCH_EX: return launch(c, rec, t);
    case KERNELET_REC_COPY: return copy(c, rec, t);
    case KERNELET_REC_MEMSET: return memset_rec(c, rec, t);
    default: return event_rec(c, rec, t);
    }
}

static void batch_end(struct ks_conn *c, uint32_t code, uint32_t index)
{
    struct ks_tracker *t = c->stalled_tracker;
    uint64_t id = c->stalled_id;

    c->stalled = false;
    c->stalled_piece = 0;
    c->stalled_tracker = NULL;
    if (t) {
        /* Answered once the accepted records have run, with the failure if there was one. */
        if (code && !t->error) {
            t->error = code;
            t->error_index = index;
        }
        ks_tracker_done(t);
    } else {
        ks_reply_cuda(c, KERNELET_OP_LAUNCH_BATCH, id, code, index);
    }
}

/* Runs the records from where the iterator stands; true when the batch is over. */
static bool run(struct ks_conn *c)
{
    for (;;) {
        struct kproto_batch_iter before = c->stalled_it;
        struct kproto_record rec;
        char err[160];
        int rc = kproto_batch_next(&c->stalled_it, &rec, err, sizeof(err));
        uint32_t code;

        if (rc == 0) {
            batch_end(c, KS_CUDA_SUCCESS, 0);
            return true;
        }
        if (rc < 0) {
            batch_end(c, KS_CUDA_INVALID_VALUE, c->stalled_it.index);
            return true;
        }
        code = full(c) && !c->stalled_piece ? EAGAIN_CODE
                                              : submit_record(c, &rec, c->stalled_tracker);
        if (code == EAGAIN_CODE) {
            c->stalled_it = before; /* this record again, once work has drained */
            c->stalled = true;
            return false;
        }
        if (code) {
            batch_end(c, code, c->stalled_it.index);
            return true;
        }
    }
}

/* run, with the scheduler deciding on the batch's operations together once they are all
 * queued (one decision round and one wake-up, not one per record). */
static bool run_held(struct ks_conn *c)
{
    ksched_hold(c->srv->cfg.sched);
    bool done = run(c);
    ksched_release(c->srv->cfg.sched);
    return done;
}

void ks_batch(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    c->stalled_id = id;
    c->stalled_context = c->context;
    c->stalled_req = *r;
    c->stalled_tracker = NULL;
    if ((r->u.batch.batch.flags & KERNELET_BATCH_COMPLETE) &&
        !(c->stalled_tracker = ks_tracker_new(c, id, KERNELET_OP_LAUNCH_BATCH))) {
        ks_reply_cuda(c, KERNELET_OP_LAUNCH_BATCH, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    kproto_batch_begin(&c->stalled_it, &c->stalled_req);
    run_held(c);
    ks_conn_update_events(c);
}

bool ks_batch_resume(struct ks_conn *c)
{
    /* Not before half of the limit has drained: each resumption decodes its record again,
     * so it should submit many operations, not one per completion. */
    if (c->ops_inflight > ks_inflight_limit(c) / 2)
        return false;
    c->context = c->stalled_context; /* its operations belong to the batch's context */
    return run_held(c);
}
