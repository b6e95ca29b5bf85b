/* Instance-building helpers; see wl_common.h. */
#include "wl_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wl_begin(kw_instance *inst, const kw_kernel *k)
{
    memset(inst, 0, sizeof *inst);
    inst->kernel = k;
}

int wl_buffer(kw_instance *inst, size_t size, int copy_in, int copy_out)
{
    if (inst->n_buffers >= KW_MAX_BUFFERS)
        return KW_EINVAL;
    void *p = calloc(1, size ? size : 1);
    if (!p)
        return KW_ENOMEM;
    kw_buffer *b = &inst->buffers[inst->n_buffers];
    b->host = p;
    b->size = size;
    b->copy_in = copy_in;
    b->copy_out = copy_out;
    return (int)inst->n_buffers++;
}

/* Argument slots are fixed per kernel and below KW_MAX_ARGS; the bound check keeps a
 * mistake in a workload file from writing past the array. */
static kw_arg *wl_next_arg(kw_instance *inst)
{
    if (inst->n_args >= KW_MAX_ARGS)
        return NULL;
    return &inst->args[inst->n_args++];
}

void wl_arg_buffer(kw_instance *inst, unsigned buffer)
{
    kw_arg *a = wl_next_arg(inst);
    if (a) {
        a->kind = KW_ARG_BUFFER;
        a->value.buffer = buffer;
    }
}

void wl_arg_u32(kw_instance *inst, uint32_t v)
{
    kw_arg *a = wl_next_arg(inst);
    if (a) {
        a->kind = KW_ARG_U32;
        a->value.u32 = v;
    }
}

void wl_arg_f32(kw_instance *inst, float v)
{
    kw_arg *a = wl_next_arg(inst);
    if (a) {
        a->kind = KW_ARG_F32;
        a->value.f32 = v;
    }
}

void wl_geometry(kw_instance *inst, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                 unsigned by, unsigned bz)
{
    inst->grid[0] = gx;
    inst->grid[1] = gy;
    inst->grid[2] = gz;
    inst->block[0] = bx;
    inst->block[1] = by;
    inst->block[2] = bz;
}

void wl_release(kw_instance *inst)
{
    for (unsigned i = 0; i < inst->n_buffers && i < KW_MAX_BUFFERS; i++)
        free(inst->buffers[i].host);
    free(inst->priv);
    memset(inst, 0, sizeof *inst);
}

int wl_check_create(const kw_instance *inst, kw_size size)
{
    if (!inst || (size != KW_SIZE_SMALL && size != KW_SIZE_DEFAULT))
        return KW_EINVAL;
    return KW_OK;
}

int wl_fail(char *why, size_t why_len, const char *kernel, size_t bad, const char *first)
{
    if (why && why_len)
        snprintf(why, why_len, "%s: %zu mismatches; %s", kernel, bad, first);
    return KW_EVERIFY;
}
