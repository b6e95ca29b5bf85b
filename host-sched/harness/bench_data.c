/* Real data for a run on a backend that computes (emu, cuda): each kernel of the workload
 * gets one instance of its benchmark (bench/workloads, seeded inputs) in device memory of
 * the run's tenant; every launch of that kernel uses those buffers (each writes the same
 * outputs from the same inputs), and after the run the outputs are copied back and
 * checked against the CPU reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kernelet/ptx.h"

/* Waits for one operation the scheduler was given: runs it until idle. */
typedef struct op_wait {
    int done, status;
    char msg[160];
} op_wait;

static void op_done(void *user, const ksched_op_result *r)
{
    op_wait *w = user;
    w->done = 1;
    w->status = r->status;
    snprintf(w->msg, sizeof(w->msg), "%s", r->msg ? r->msg : "");
}

/* Runs one copy on a stream of its own and waits for it. */
static int run_copy(ksched *s, uint32_t tenant, const ksched_op *op, char *msg, size_t len)
{
    op_wait w = {0};
    ksched_err e = {0};
    uint32_t stream;
    int rc = ksched_stream_create(s, tenant, &stream, &e);
    if (!rc)
        rc = ksched_submit(s, tenant, stream, op, op_done, &w, NULL, &e);
    if (!rc)
        rc = ksched_run_until_idle(s, &e);
    ksched_stream_destroy(s, tenant, stream, NULL);
    if (rc || !w.done || w.status) {
        snprintf(msg, len, "copy: %s", rc ? e.msg : w.msg);
        return -1;
    }
    return 0;
}

static int copy_inputs(ksched *s, uint32_t tenant, bench_data *d, char *msg, size_t len)
{
    for (unsigned b = 0; b < d->in.n_buffers; b++) {
        const kw_buffer *buf = &d->in.buffers[b];
        ksched_err e = {0};
        if (ksched_mem_alloc(s, tenant, buf->size, &d->dev[b], &e)) {
            snprintf(msg, len, "%s: allocation of %zu bytes: %s", d->kernel->name, buf->size,
                     e.msg);
            return -1;
        }
        d->n_dev = b + 1;
        if (!buf->copy_in)
            continue;
        ksched_op op = {.kind = KSCHED_OP_COPY_H2D,
                        .u.h2d = {.dst = d->dev[b], .src = buf->host, .bytes = buf->size}};
        if (run_copy(s, tenant, &op, msg, len))
            return -1;
    }
    return 0;
}

int bench_data_create(ksched *s, uint32_t tenant, const bench_kernel *bk, int small,
                      bench_data *d, char *msg, size_t len)
{
    memset(d, 0, sizeof(*d));
    d->kernel = kw_find(bk->name);
    if (!d->kernel || d->kernel->create(&d->in, small ? KW_SIZE_SMALL : KW_SIZE_DEFAULT, 1)) {
        snprintf(msg, len, "%s: no benchmark instance", bk->name);
        return -1;
    }
    d->have_instance = 1;
    if (copy_inputs(s, tenant, d, msg, len))
        return -1;
    d->params_size = kw_pack_args(&d->in, d->dev, d->params);
    return 0;
}

int bench_data_verify(ksched *s, uint32_t tenant, bench_data *d, char *msg, size_t len)
{
    for (unsigned b = 0; b < d->in.n_buffers; b++) {
        kw_buffer *buf = &d->in.buffers[b];
        if (!buf->copy_out)
            continue;
        ksched_op op = {.kind = KSCHED_OP_COPY_D2H,
                        .u.d2h = {.dst = buf->host, .src = d->dev[b], .bytes = buf->size}};
        if (run_copy(s, tenant, &op, msg, len))
            return -1;
    }
    char why[160] = "";
    if (d->kernel->verify(&d->in, why, sizeof(why)) != KW_OK) {
        snprintf(msg, len, "%s: output differs from the CPU's: %s", d->kernel->name, why);
        return -1;
    }
    return 0;
}

void bench_data_free(ksched *s, uint32_t tenant, bench_data *d)
{
    for (unsigned b = 0; b < d->n_dev; b++)
        ksched_mem_free(s, tenant, d->dev[b], NULL);
    if (d->have_instance)
        d->kernel->destroy(&d->in);
    memset(d, 0, sizeof(*d));
}

char *bench_data_ptx(const char *dir, const bench_kernel *bk, size_t *len, char *msg,
                     size_t msglen)
{
    const kw_kernel *k = kw_find(bk->name);
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, k ? k->ptx_file : "?");
    size_t n = 0;
    char *ptx = k ? kw_read_file(path, &n) : NULL, *text = NULL;
    if (!ptx || !n) {
        snprintf(msg, msglen, "cannot read %s (--ptx-dir)", path);
        free(ptx);
        return NULL;
    }
    /* the scheduler wants the kernel and its sliced variant in one module */
    kptx_module *m = NULL;
    kptx_error e = {0};
    if (kptx_parse(ptx, n, &m, &e) || kptx_slice_module(m, NULL, &e) ||
        kptx_print(m, &text, len, &e)) {
        snprintf(msg, msglen, "%s: PTX: %.200s (line %u)", path, e.message, e.line);
        text = NULL;
    }
    kptx_module_free(m);
    free(ptx);
    return text;
}
