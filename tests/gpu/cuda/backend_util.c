/* Completions, sliced PTX and benchmark workloads through the backend (backend_check.h). */
#include "backend_check.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"
#include "kw_cuda.h"

int bc_failures;

void bc_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAILED: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    bc_failures++;
}

void bc_waiter_init(bc_waiter *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
}

void bc_done(void *user, const kbackend_completion *c)
{
    bc_ticket *t = user;
    t->status = c->status;
    snprintf(t->msg, sizeof(t->msg), "%s", c->msg);
    t->start_ns = c->start_ns;
    t->end_ns = c->end_ns;
    pthread_mutex_lock(&t->w->lock);
    t->w->done++;
    t->w->failed += c->status != 0;
    pthread_cond_broadcast(&t->w->cond);
    pthread_mutex_unlock(&t->w->lock);
}

void bc_wait(bc_waiter *w, unsigned n)
{
    pthread_mutex_lock(&w->lock);
    while (w->done < n)
        pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

char *bc_sliced_ptx(const char *ptx, size_t len, size_t *out_len, char *msg, size_t msglen)
{
    kptx_module *m = NULL;
    kptx_error e = {0};
    char *text = NULL;
    if (kptx_parse(ptx, len, &m, &e) || kptx_slice_module(m, NULL, &e) ||
        kptx_print(m, &text, out_len, &e)) {
        snprintf(msg, msglen, "PTX library: %.200s (line %u)", e.message, e.line);
        text = NULL;
    }
    kptx_module_free(m);
    return text;
}

/* Waits for one more backend operation submitted with t (*count: completions so far). */
static int wait_one(bc_waiter *w, unsigned *count, bc_ticket *t, int rc, const kbackend_error *e,
                    const char *what, char *msg, size_t msglen)
{
    if (rc) {
        snprintf(msg, msglen, "%s refused: %.200s", what, e->msg);
        return 1;
    }
    bc_wait(w, ++*count);
    if (t->status)
        snprintf(msg, msglen, "%s failed: %.200s", what, t->msg);
    return t->status != 0;
}

char *bc_kernel_ptx(const kw_kernel *k, const char *dir, size_t *len, char *msg,
                    size_t msglen)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, k->ptx_file);
    size_t n;
    char *ptx = kw_read_file(path, &n);
    if (!ptx) {
        snprintf(msg, msglen, "cannot read %s", path);
        return NULL;
    }
    char *text = bc_sliced_ptx(ptx, n, len, msg, msglen);
    free(ptx);
    return text;
}

static int load_module(bc_run *r, const char *dir, char *msg, size_t msglen)
{
    size_t sliced_len;
    char *text = bc_kernel_ptx(r->k, dir, &sliced_len, msg, msglen);
    if (!text)
        return 1;
    char sliced_name[300];
    snprintf(sliced_name, sizeof(sliced_name), "%s%s", r->k->entry, KBACKEND_SLICE_SUFFIX);
    kbackend_error e = {0};
    const kbackend_ops *o = r->be.ops;
    int rc = o->module_load_ptx(r->be.state, 0, text, sliced_len, &r->mod, &e) ||
             o->function_get(r->be.state, r->mod, r->k->entry, &r->fn, NULL, &e) ||
             o->function_get(r->be.state, r->mod, sliced_name, &r->sliced, NULL, &e);
    free(text);
    if (rc)
        snprintf(msg, msglen, "%s: %.200s", r->k->name, e.msg);
    return rc;
}

static int copy_inputs(bc_run *r, char *msg, size_t msglen)
{
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t = {.w = &w};
    unsigned count = 0;
    kbackend_error e = {0};
    const kbackend_ops *o = r->be.ops;
    for (unsigned b = 0; b < r->in.n_buffers; b++) {
        const kw_buffer *buf = &r->in.buffers[b];
        if (o->mem_alloc(r->be.state, 0, buf->size, &r->dev[b], &e)) {
            snprintf(msg, msglen, "allocation: %.200s", e.msg);
            return 1;
        }
        int rc = buf->copy_in
                     ? o->copy_h2d(r->be.state, r->dev[b], buf->host, buf->size, bc_done, &t, &e)
                     : o->memset_d8(r->be.state, r->dev[b], 0, buf->size, bc_done, &t, &e);
        if (wait_one(&w, &count, &t, rc, &e, "copy in", msg, msglen))
            return 1;
    }
    return 0;
}

int bc_prepare(bc_run *r, kbackend be, const kw_kernel *k, const char *dir, kw_size size,
               char *msg, size_t msglen)
{
    memset(r, 0, sizeof(*r));
    r->be = be;
    r->k = k;
    if (k->create(&r->in, size, 1) != KW_OK) {
        snprintf(msg, msglen, "%s: create failed", k->name);
        return 1;
    }
    r->have_instance = 1;
    r->total = kw_total_blocks(&r->in);
    if (load_module(r, dir, msg, msglen) || copy_inputs(r, msg, msglen))
        return 1;
    r->params_size = kw_pack_args(&r->in, r->dev, r->params);
    return 0;
}

kbackend_slice bc_whole(const bc_run *r)
{
    kbackend_slice s = {.fn = r->fn, .count = r->total, .smem = r->in.dynamic_shared_bytes,
                     .params = r->params, .params_size = r->params_size};
    memcpy(s.grid, r->in.grid, sizeof(s.grid));
    memcpy(s.block, r->in.block, sizeof(s.block));
    return s;
}

/* Submits one operation on output buffer b with ticket t (bc_zero_outputs, bc_verify). */
typedef int (*output_op)(bc_run *r, unsigned b, bc_ticket *t, kbackend_error *e);

static int zero_op(bc_run *r, unsigned b, bc_ticket *t, kbackend_error *e)
{
    return r->be.ops->memset_d8(r->be.state, r->dev[b], 0, r->in.buffers[b].size, bc_done, t, e);
}

static int copy_out_op(bc_run *r, unsigned b, bc_ticket *t, kbackend_error *e)
{
    return r->be.ops->copy_d2h(r->be.state, r->in.buffers[b].host, r->dev[b],
                               r->in.buffers[b].size, bc_done, t, e);
}

/* op on every output buffer, one after the other. */
static int each_output(bc_run *r, output_op op, const char *what, char *msg, size_t msglen)
{
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t = {.w = &w};
    unsigned count = 0;
    kbackend_error e = {0};
    for (unsigned b = 0; b < r->in.n_buffers; b++)
        if (r->in.buffers[b].copy_out &&
            wait_one(&w, &count, &t, op(r, b, &t, &e), &e, what, msg, msglen))
            return 1;
    return 0;
}

int bc_zero_outputs(bc_run *r, char *msg, size_t msglen)
{
    return each_output(r, zero_op, "zero outputs", msg, msglen);
}

int bc_verify(bc_run *r, char *msg, size_t msglen)
{
    return each_output(r, copy_out_op, "copy out", msg, msglen) ||
           r->k->verify(&r->in, msg, msglen) != KW_OK;
}

int bc_run_random_slices(bc_run *r, uint64_t first, uint64_t max_slice, unsigned seed,
                         char *msg, size_t msglen)
{
    size_t cap = (size_t)(r->total - first) + 1, n = 0;
    bc_ticket *t = calloc(cap, sizeof(*t));
    if (!t) {
        snprintf(msg, msglen, "out of memory");
        return 1;
    }
    bc_waiter w;
    bc_waiter_init(&w);
    kbackend_slice s = bc_whole(r);
    s.fn = r->sliced;
    s.sliced = 1;
    srand(seed);
    int bad = 0;
    for (uint64_t b = first; b < r->total && !bad; n++) {
        uint64_t want = 1 + (uint64_t)rand() % max_slice, left = r->total - b;
        s.first = b;
        s.count = want < left ? want : left;
        s.lane = (unsigned)rand() % BC_LANES;
        t[n].w = &w;
        kbackend_error e = {0};
        if (r->be.ops->launch(r->be.state, &s, bc_done, &t[n], &e)) {
            snprintf(msg, msglen, "slice [%llu, +%llu) refused: %.200s",
                     (unsigned long long)b,
                     (unsigned long long)s.count, e.msg);
            bad = 1;
            break;
        }
        b += s.count;
    }
    bc_wait(&w, (unsigned)n);
    for (size_t i = 0; i < n && !bad; i++)
        if (t[i].status) {
            snprintf(msg, msglen, "slice failed: %.200s", t[i].msg);
            bad = 1;
        }
    free(t);
    return bad;
}

void bc_release(bc_run *r)
{
    kbackend_error e;
    for (unsigned b = 0; b < KW_MAX_BUFFERS; b++)
        if (r->dev[b])
            r->be.ops->mem_free(r->be.state, r->dev[b], &e);
    if (r->mod)
        r->be.ops->module_unload(r->be.state, r->mod, &e);
    if (r->have_instance)
        r->in.kernel->destroy(&r->in);
    memset(r, 0, sizeof(*r));
}
