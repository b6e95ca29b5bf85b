/* What a graph node does (an op): made from a launch's or a node's parameters, copied,
 * freed, and run on a stream as the ordinary stream work it describes. Kernel parameters
 * are copied when the op is made, as CUDA copies them at node creation. */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

CUresult kcu_kernel_op_from_block(struct kcu_op *op, struct kcu_function *fn,
                                  const unsigned grid[3], const unsigned block[3],
                                  unsigned smem, const uint8_t *params)
{
    struct kcu_kernel_op *k = &op->u.kernel;

    memset(op, 0, sizeof(*op));
    op->type = CU_GRAPH_NODE_TYPE_KERNEL;
    k->fn = fn;
    memcpy(k->grid, grid, sizeof(k->grid));
    memcpy(k->block, block, sizeof(k->block));
    k->smem = smem;
    /* One allocation holds the pointers (for GetParams) and then the parameter block. */
    size_t ptrs = fn->n_params * sizeof(void *);
    uint8_t *mem = malloc(ptrs + fn->param_bytes + 1);
    if (!mem)
        return CUDA_ERROR_OUT_OF_MEMORY;
    k->param_ptrs = (void **)mem;
    k->params = mem + ptrs;
    memcpy(k->params, params, fn->param_bytes);
    for (uint32_t i = 0; i < fn->n_params; i++)
        k->param_ptrs[i] = k->params + fn->params[i].offset;
    return CUDA_SUCCESS;
}

CUresult kcu_kernel_op_make(struct kcu_op *op, struct kcu_function *fn, const unsigned grid[3],
                            const unsigned block[3], unsigned smem, void **params,
                            void **extra)
{
    static __thread uint8_t pblock[KERNELET_MAX_PARAM_BYTES];
    CUresult r = kcu_launch_prepare(fn, grid, block, smem, params, extra, pblock);

    return r != CUDA_SUCCESS ? r : kcu_kernel_op_from_block(op, fn, grid, block, smem, pblock);
}

CUresult kcu_op_copy(struct kcu_op *dst, const struct kcu_op *src)
{
    const struct kcu_kernel_op *k = &src->u.kernel;

    if (src->type != CU_GRAPH_NODE_TYPE_KERNEL) {
        *dst = *src;
        return CUDA_SUCCESS;
    }
    CUresult r = kcu_kernel_op_from_block(dst, k->fn, k->grid, k->block, k->smem, k->params);
    if (r == CUDA_SUCCESS)
        dst->u.kernel.attrs = k->attrs;
    return r;
}

void kcu_op_free(struct kcu_op *op)
{
    if (op->type == CU_GRAPH_NODE_TYPE_KERNEL)
        free(op->u.kernel.param_ptrs); /* the one allocation */
    memset(op, 0, sizeof(*op));
    op->type = CU_GRAPH_NODE_TYPE_EMPTY;
}

/* A host node on a capturing stream is captured like cuLaunchHostFunc's function. */
static CUresult run_host(const struct kcu_host_op *h, uint64_t stream)
{
    struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_HOST, .u.host = *h};
    bool taken = false;
    CUresult r;

    if (kcu_capture_any() && ((r = kcu_capture_take(stream, &op, &taken)) != CUDA_SUCCESS || taken))
        return r;
    return kcu_host_fn_enqueue(stream, NULL, h->fn, NULL, h->data);
}

/* Each op goes through the same path as the call it stands for, so that a graph launched
 * into a capturing stream is captured node by node. */
CUresult kcu_op_run(const struct kcu_op *op, uint64_t stream)
{
    const struct kcu_kernel_op *k = &op->u.kernel;
    const struct kcu_memset_op *m = &op->u.memset;
    struct kcu_copy c;

    switch (op->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        return kcu_launch_with_attrs(k->fn, k->grid, k->block, k->smem, stream, k->param_ptrs,
                                     NULL, &k->attrs);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        c = op->u.copy;
        c.stream = stream;
        c.async = true;
        return kcu_copy_run(&c);
    case CU_GRAPH_NODE_TYPE_MEMSET:
        return kcu_memset_run(m->dst, m->pitch, m->value, m->elem_size, m->width, m->height,
                              stream);
    case CU_GRAPH_NODE_TYPE_HOST:
        return run_host(&op->u.host, stream);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        return kcu_event_record_stream(op->u.event, stream);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        return kcu_stream_wait_event(stream, op->u.event, CU_EVENT_WAIT_EXTERNAL);
    default:
        return CUDA_SUCCESS; /* empty */
    }
}
