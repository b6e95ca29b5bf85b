/* Client contexts within one connection.
 *
 * A VM's device is one connection (one tenant) for all processes of its guest; each guest
 * process (each open /dev/kerneletN) is a context, and the device stamps its id on every
 * request it forwards (the header's `context`). Objects remember the context that created
 * them, so that when a guest process ends (CONTEXT_CLOSE) what it left behind is freed at
 * once instead of when the whole VM goes. Errors are kept per context too: a guest
 * process whose kernel faults ends its own CUDA context, not its neighbours'. Device
 * memory is per context: copies, memsets and frees reach only the context's own
 * allocations (server_memory.c), and each context's allocations, module variables and
 * kernels lie in, and are fenced into, an address window of its own (the scheduler's
 * domain of the context, ksched_context_window). Handles stay valid across the contexts of
 * one connection: a context may use another's objects, as processes sharing a CUDA
 * context would, and the creator's end frees them; but a kernel always runs in the window
 * of the context that launches it, whoever loaded its module. Host clients
 * (libcuda on a socket) use context 0 and simply close the connection. */
#include <stdio.h>
#include <stdlib.h>

#include "server_internal.h"

void ks_context_close(struct ks_conn *c, uint64_t id, uint32_t context)
{
    /* The context's last work may still be queued (its process died mid-run): drain the
     * tenant's work submitted so far, as MEM_FREE and MODULE_UNLOAD do, then free. */
    ks_drain_then(c, id, KERNELET_OP_CONTEXT_CLOSE, KS_AFTER_CONTEXT_CLOSE, context);
}

struct owned {
    uint32_t context;
    enum ks_kind kind;
};

static bool owned_of_kind(const struct ks_obj *o, const void *arg)
{
    const struct owned *w = arg;

    return o->owner == w->context && o->kind == w->kind;
}

static uint32_t release_object(struct ks_conn *c, enum ks_kind kind, uint64_t handle)
{
    switch (kind) {
    case KS_MODULE: return ks_module_release(c, handle);
    case KS_STREAM: return ks_stream_release(c, handle);
    case KS_EVENT: return ks_event_release(c, handle);
    case KS_FUNCTION: break;
    }
    ks_handle_remove(&c->handles, handle); /* a function holds nothing of its own */
    return KS_CUDA_SUCCESS;
}

/* Releases every object of one kind that context created. Modules go first: their
 * functions (whoever asked for them) and variables go with them. */
static uint32_t release_kind(struct ks_conn *c, uint32_t context, enum ks_kind kind)
{
    struct owned w = {context, kind};
    size_t n;
    uint64_t *handles = ks_handle_select(&c->handles, owned_of_kind, &w, &n);
    uint32_t first = 0;

    for (size_t i = 0; i < n; i++) {
        uint32_t r = release_object(c, kind, handles[i]);
        /* Gone already: a module released earlier took its functions along, or a tracker
         * woken by a released stream released its own stream. */
        if (r == KS_CUDA_INVALID_HANDLE)
            r = 0;
        if (!first)
            first = r;
    }
    free(handles);
    return first;
}

/* Whether a is a plain allocation of context that no free has taken yet (module
 * variables belong to their module; one being freed off the loop is that call's). */
static bool context_allocation(const struct ks_alloc *a, uint32_t context)
{
    return a->module == 0 && a->owner == context && !a->releasing;
}

/* Plain allocations of context, freed now. */
static uint32_t release_allocations(struct ks_conn *c, uint32_t context)
{
    uint32_t first = 0;
    size_t i = 0;

    while (i < krange_count(&c->allocs)) {
        const struct ks_alloc *a = krange_at(&c->allocs, i);
        if (!context_allocation(a, context)) {
            i++;
            continue;
        }
        uint32_t r = ks_memory_release(c, a->r.base); /* removes entry i */
        if (!first)
            first = r;
    }
    return first;
}

static void errors_forget(struct ks_conn *c, uint32_t context);

/* Everything of context but its plain allocations; the first CUresult failure or 0. */
static uint32_t release_objects(struct ks_conn *c, uint32_t context)
{
    static const enum ks_kind order[] = {KS_MODULE, KS_FUNCTION, KS_STREAM, KS_EVENT};
    uint32_t first = 0;

    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
        uint32_t r = release_kind(c, context, order[k]);
        if (!first)
            first = r;
    }
    errors_forget(c, context);
    return first;
}

/* ---- CONTEXT_CLOSE's frees off the event loop ---- */

/* The allocations a closed context left, freed on a worker (server_call.c): on the cuda
 * backend each free unmaps its memory and maps the window's sink back, milliseconds and
 * more per GiB, which on the loop would hold up every other tenant. */
struct context_frees {
    uint32_t context;
    uint32_t code;              /* the answer so far (the drain's, the objects' release) */
    size_t n;
    uint64_t base[];
};

static void frees_run(struct ks_call *k)
{
    const struct context_frees *f = k->data;

    for (size_t i = 0; i < f->n; i++) {
        ksched_err err;
        int rc = ksched_mem_free(k->sched, k->tenant, f->base[i], &err);
        if (rc && !k->rc) {
            k->rc = rc;
            k->err = err;
        }
    }
}

/* A connection closed meanwhile: the scheduler frees what is left with the tenant. */
static void frees_finish(struct ks_call *k)
{
    struct ks_conn *c = k->conn;
    struct context_frees *f = k->data;

    if (!c->closing) {
        for (size_t i = 0; i < f->n; i++)
            ks_memory_forget(c, f->base[i]);
        ksched_context_close(c->srv->cfg.sched, c->tenant, f->context, NULL);
        uint32_t code = f->code ? f->code : k->rc ? ks_cuda_of(k->rc, k->err.msg) : 0;
        ks_reply_cuda(c, KERNELET_OP_CONTEXT_CLOSE, k->id, code, 0);
    }
    free(f);
}

/* The context's plain allocations, each marked as being freed by the call; NULL without
 * memory (nothing marked). */
static struct context_frees *collect_frees(struct ks_conn *c, uint32_t context)
{
    size_t n = 0;

    for (size_t i = 0; i < krange_count(&c->allocs); i++)
        n += context_allocation(krange_at(&c->allocs, i), context);
    struct context_frees *f = malloc(sizeof(*f) + n * sizeof(f->base[0]));
    if (!f)
        return NULL;
    f->context = context;
    f->n = 0;
    for (size_t i = 0; i < krange_count(&c->allocs); i++) {
        struct ks_alloc *a = krange_at(&c->allocs, i);
        if (context_allocation(a, context)) {
            a->freeing = a->releasing = true;
            f->base[f->n++] = a->r.base;
        }
    }
    return f;
}

static void unmark_frees(struct ks_conn *c, const struct context_frees *f)
{
    for (size_t i = 0; i < f->n; i++) {
        struct ks_alloc *a = krange_exact(&c->allocs, f->base[i]);
        if (a)
            a->freeing = a->releasing = false;
    }
}

void ks_context_release_async(struct ks_conn *c, uint64_t id, uint32_t context, uint32_t code)
{
    uint32_t r = release_objects(c, context);
    struct context_frees *f = collect_frees(c, context);

    if (!code)
        code = r;
    if (f && f->n) {
        f->code = code;
        if (ks_call_start_data(c, id, KERNELET_OP_CONTEXT_CLOSE, frees_run, frees_finish, f))
            return;             /* answered when the frees are done */
        unmark_frees(c, f);     /* answered OUT_OF_MEMORY: the memory is still the context's */
        free(f);
        return;
    }
    free(f);
    r = release_allocations(c, context);    /* none, or no memory to collect them */
    ksched_context_close(c->srv->cfg.sched, c->tenant, context, NULL);
    ks_reply_cuda(c, KERNELET_OP_CONTEXT_CLOSE, id, code ? code : r, 0);
}

uint32_t ks_context_cuda_of(struct ks_conn *c, uint32_t context, int ksched_code,
                            const char *msg)
{
    if (ksched_code == KSCHED_ECONTEXTS && !c->contexts_logged) {
        c->contexts_logged = true;   /* once: a guest may retry in a loop */
        fprintf(stderr, "kerneletd: tenant %s (pid %u): client context %u refused: the "
                "connection's other contexts hold the most address windows one tenant may "
                "(kerneletd --max-contexts): CUDA_ERROR_OUT_OF_MEMORY (%s)\n", c->name,
                (unsigned)c->cred.pid, context, msg ? msg : "");
    }
    return ks_cuda_of(ksched_code, msg);
}

/* ---- errors ---- */

static struct ks_ctx_errors *errors_of(const struct ks_conn *c, uint32_t context)
{
    for (size_t i = 0; i < c->n_ctx_errors; i++)
        if (c->ctx_errors[i].context == context)
            return &c->ctx_errors[i];
    return NULL;
}

uint32_t ks_context_sticky(const struct ks_conn *c, uint32_t context)
{
    const struct ks_ctx_errors *e = errors_of(c, context);

    if (e && e->sticky)
        return e->sticky;
    return c->sticky_all;
}

bool ks_context_any_sticky(const struct ks_conn *c)
{
    if (c->sticky_all)
        return true;
    for (size_t i = 0; i < c->n_ctx_errors; i++)
        if (c->ctx_errors[i].sticky)
            return true;
    return false;
}

/* The entry of context, added if missing; NULL when the table is full or no memory. */
static struct ks_ctx_errors *errors_add(struct ks_conn *c, uint32_t context)
{
    struct ks_ctx_errors *e = errors_of(c, context);

    if (e)
        return e;
    if (c->n_ctx_errors == c->cap_ctx_errors) {
        size_t cap = c->cap_ctx_errors ? c->cap_ctx_errors * 2 : 8;
        if (cap > KS_MAX_CTX_ERRORS ||
            !(e = realloc(c->ctx_errors, cap * sizeof(*e))))
            return NULL;
        c->ctx_errors = e;
        c->cap_ctx_errors = cap;
    }
    e = &c->ctx_errors[c->n_ctx_errors++];
    *e = (struct ks_ctx_errors){.context = context};
    return e;
}

void ks_context_note_error(struct ks_conn *c, uint32_t context, uint32_t code, bool launch)
{
    struct ks_ctx_errors *e = errors_add(c, context);

    if (!e) {
        /* No room to keep contexts apart: end them all rather than lose a fault. */
        if (launch && !c->sticky_all)
            c->sticky_all = code;
        return;
    }
    if (launch && !e->sticky)
        e->sticky = code; /* a kernel fault ends the context, as on a GPU */
    else if (!launch && !e->async_error)
        e->async_error = code;
}

uint32_t ks_context_take_async(struct ks_conn *c, uint32_t context)
{
    struct ks_ctx_errors *e = errors_of(c, context);
    uint32_t code = e ? e->async_error : 0;

    if (e)
        e->async_error = 0;
    return code;
}

/* A closed context's errors go with it (its number may come back much later). */
static void errors_forget(struct ks_conn *c, uint32_t context)
{
    struct ks_ctx_errors *e = errors_of(c, context);

    if (e)
        *e = c->ctx_errors[--c->n_ctx_errors];
}
