/* See kw_cuda.h. */
#include "kw_cuda.h"

#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kwc_failed(CUresult r, const char *what, char *msg, size_t msglen)
{
    if (r == CUDA_SUCCESS)
        return 0;
    const char *name = "?";
    cuGetErrorName(r, &name);
    snprintf(msg, msglen, "%s: %s (%d)", what, name, (int)r);
    return 1;
}

void kwc_or_exit(CUresult r, const char *prog, const char *what)
{
    char msg[256];
    if (!kwc_failed(r, what, msg, sizeof msg))
        return;
    fprintf(stderr, "%s: %s\n", prog, msg);
    exit(1);
}

static int load_module(kwc_run *r, const kw_kernel *k, const char *dir, char *msg, size_t msglen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, k->ptx_file);
    char *ptx = kw_read_file(path, NULL);
    if (!ptx) {
        snprintf(msg, msglen, "cannot read %s", path);
        return 1;
    }
    int bad = kwc_failed(cuModuleLoadData(&r->module, ptx), "cuModuleLoadData", msg, msglen) ||
              kwc_failed(cuModuleGetFunction(&r->fn, r->module, k->entry), "cuModuleGetFunction",
                         msg, msglen);
    free(ptx);
    return bad;
}

static int fill_buffers(kwc_run *r, char *msg, size_t msglen)
{
    for (unsigned b = 0; b < r->in.n_buffers; b++) {
        const kw_buffer *buf = &r->in.buffers[b];
        if (kwc_failed(cuMemAlloc(&r->dev[b], buf->size), "cuMemAlloc", msg, msglen))
            return 1;
        CUresult cr = buf->copy_in ? cuMemcpyHtoD(r->dev[b], buf->host, buf->size)
                                   : cuMemsetD8(r->dev[b], 0, buf->size);
        if (kwc_failed(cr, buf->copy_in ? "copy in" : "cuMemsetD8", msg, msglen))
            return 1;
    }
    return 0;
}

static void build_params(kwc_run *r)
{
    for (unsigned a = 0; a < r->in.n_args; a++) {
        const kw_arg *arg = &r->in.args[a];
        switch (arg->kind) {
        case KW_ARG_BUFFER: r->vals[a].u64 = (uint64_t)r->dev[arg->value.buffer]; break;
        case KW_ARG_U32: r->vals[a].u32 = arg->value.u32; break;
        case KW_ARG_U64: r->vals[a].u64 = arg->value.u64; break;
        case KW_ARG_F32: r->vals[a].f32 = arg->value.f32; break;
        case KW_ARG_F64: r->vals[a].f64 = arg->value.f64; break;
        }
        r->params[a] = &r->vals[a];
    }
}

int kwc_prepare(kwc_run *r, const kw_kernel *k, const char *ptx_dir, kw_size size,
                uint64_t seed, char *msg, size_t msglen)
{
    memset(r, 0, sizeof *r);
    if (k->create(&r->in, size, seed) != KW_OK) {
        snprintf(msg, msglen, "create failed");
        return 1;
    }
    r->have_instance = 1;
    if (load_module(r, k, ptx_dir, msg, msglen) || fill_buffers(r, msg, msglen))
        return 1;
    build_params(r);
    return 0;
}

CUresult kwc_launch(kwc_run *r, CUstream s)
{
    const kw_instance *in = &r->in;
    return cuLaunchKernel(r->fn, in->grid[0], in->grid[1], in->grid[2], in->block[0],
                          in->block[1], in->block[2], in->dynamic_shared_bytes, s, r->params,
                          NULL);
}

CUresult kwc_clear_outputs(kwc_run *r)
{
    for (unsigned b = 0; b < r->in.n_buffers; b++) {
        if (!r->in.buffers[b].copy_out)
            continue;
        CUresult cr = cuMemsetD8(r->dev[b], 0, r->in.buffers[b].size);
        if (cr != CUDA_SUCCESS)
            return cr;
    }
    return CUDA_SUCCESS;
}

int kwc_verify(kwc_run *r, char *why, size_t whylen)
{
    for (unsigned b = 0; b < r->in.n_buffers; b++) {
        const kw_buffer *buf = &r->in.buffers[b];
        if (buf->copy_out &&
            kwc_failed(cuMemcpyDtoH(buf->host, r->dev[b], buf->size), "copy out", why, whylen))
            return 1;
    }
    return r->in.kernel->verify(&r->in, why, whylen) != KW_OK;
}

void kwc_release(kwc_run *r)
{
    for (unsigned b = 0; b < KW_MAX_BUFFERS; b++)
        if (r->dev[b])
            cuMemFree(r->dev[b]);
    if (r->module)
        cuModuleUnload(r->module);
    if (r->have_instance)
        r->in.kernel->destroy(&r->in);
    memset(r, 0, sizeof *r);
}

static void crash_report(int sig)
{
    void *frames[64];
    char head[64];
    int n = snprintf(head, sizeof head, "\n*** signal %d; backtrace:\n", sig);
    if (write(STDERR_FILENO, head, (size_t)n) < 0)
        _exit(128 + sig);
    int depth = backtrace(frames, 64);
    backtrace_symbols_fd(frames, depth, STDERR_FILENO);
    signal(sig, SIG_DFL);
    raise(sig);
}

void kwc_crash_backtraces(void)
{
    void *warm[1];
    backtrace(warm, 1);     /* loads libgcc now, not inside the handler */
    signal(SIGSEGV, crash_report);
    signal(SIGBUS, crash_report);
    signal(SIGABRT, crash_report);
}
