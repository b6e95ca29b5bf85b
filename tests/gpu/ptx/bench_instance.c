/* See bench_instance.h. */
#include "bench_instance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned arg_size(kw_arg_kind kind)
{
    return kind == KW_ARG_U32 || kind == KW_ARG_F32 ? 4 : 8;
}

/* The instance's arguments at the offsets the PTX gives its parameters. */
static bool build_params(bench_instance *b, const kernel_pair *kp)
{
    const kptx_kernel_info *info = &kp->info;
    if (b->in.n_args != info->n_params) {
        fprintf(stderr, "%s: %u arguments for %u parameters\n", b->k->name, b->in.n_args,
                info->n_params);
        return false;
    }
    b->params = calloc(1, info->param_bytes ? info->param_bytes : 1);
    if (!b->params)
        return false;
    for (unsigned a = 0; a < b->in.n_args; a++) {
        const kw_arg *arg = &b->in.args[a];
        if (arg_size(arg->kind) != info->params[a].size) {
            fprintf(stderr, "%s: argument %u has %u bytes, the parameter %u\n", b->k->name, a,
                    arg_size(arg->kind), info->params[a].size);
            return false;
        }
        uint64_t ptr = arg->kind == KW_ARG_BUFFER ? (uint64_t)b->dev[arg->value.buffer] : 0;
        const void *src = arg->kind == KW_ARG_BUFFER ? (const void *)&ptr : (const void *)&arg->value;
        memcpy(b->params + info->params[a].offset, src, arg_size(arg->kind));
    }
    return true;
}

bool bench_instance_setup(bench_instance *b, const kw_kernel *k, const kernel_pair *kp,
                          kw_size size, uint64_t seed)
{
    memset(b, 0, sizeof *b);
    b->k = k;
    if (k->create(&b->in, size, seed) != KW_OK) {
        fprintf(stderr, "%s: create failed\n", k->name);
        return false;
    }
    b->created = true;
    for (unsigned i = 0; i < b->in.n_buffers; i++) {
        const kw_buffer *buf = &b->in.buffers[i];
        if (cu_failed(cuMemAlloc(&b->dev[i], buf->size), "cuMemAlloc", k->name))
            return false;
        /* copy-back overwrites the host copy of an in-place buffer: keep its input */
        if (buf->copy_in && buf->copy_out) {
            b->initial[i] = malloc(buf->size);
            if (!b->initial[i])
                return false;
            memcpy(b->initial[i], buf->host, buf->size);
        }
    }
    memcpy(b->shape.grid, b->in.grid, sizeof b->shape.grid);
    memcpy(b->shape.block, b->in.block, sizeof b->shape.block);
    b->shape.shared = b->in.dynamic_shared_bytes;
    return build_params(b, kp);
}

bool bench_instance_reset(bench_instance *b)
{
    for (unsigned i = 0; i < b->in.n_buffers; i++) {
        const kw_buffer *buf = &b->in.buffers[i];
        const void *src = b->initial[i] ? b->initial[i] : buf->host;
        CUresult r = buf->copy_in ? cuMemcpyHtoD(b->dev[i], src, buf->size)
                                  : cuMemsetD8(b->dev[i], 0, buf->size);
        if (cu_failed(r, "reset", b->k->name))
            return false;
    }
    return true;
}

bool bench_instance_copy_out(bench_instance *b)
{
    for (unsigned i = 0; i < b->in.n_buffers; i++) {
        const kw_buffer *buf = &b->in.buffers[i];
        if (buf->copy_out &&
            cu_failed(cuMemcpyDtoH(buf->host, b->dev[i], buf->size), "copy out", b->k->name))
            return false;
    }
    return true;
}

void bench_instance_free(bench_instance *b)
{
    for (unsigned i = 0; i < KW_MAX_BUFFERS; i++) {
        if (b->dev[i])
            cuMemFree(b->dev[i]);
        free(b->initial[i]);
    }
    if (b->created)
        b->k->destroy(&b->in);
    free(b->params);
    memset(b, 0, sizeof *b);
}
