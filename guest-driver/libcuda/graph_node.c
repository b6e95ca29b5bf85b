/* The explicit-graph node entry points: cuGraphAdd*Node, cuGraphAddNode, and the kernel
 * node's parameters. A node's parameters are checked when it is added, as CUDA does, so
 * a graph that was built can be launched. */
#include <string.h>

#include "graph_internal.h"

/* cuda.h maps these to their _v2; both ABIs are defined here. */
#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams
#undef cuGraphAddNode
CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                      size_t n, const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI cuGraphAddNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps, size_t n,
                                CUgraphNodeParams *p);

/* Adds op after the user's dependencies (checked) and hands out the node. */
static CUresult add(CUgraphNode *ph, CUgraph hGraph, const CUgraphNode *deps, size_t n,
                    struct kcu_op *op)
{
    struct kcu_graph *g = kcu_graph_from(hGraph);
    struct kcu_node *node;
    CUresult r = (!ph || !g) ? CUDA_ERROR_INVALID_VALUE : kcu_graph_check_deps(g, deps, n);

    if (r != CUDA_SUCCESS) {
        kcu_op_free(op);
        return r;
    }
    r = kcu_graph_add(g, op, (struct kcu_node *const *)deps, n, &node);
    if (r == CUDA_SUCCESS)
        *ph = (CUgraphNode)node;
    return r;
}

/* A kernel op from v2 node parameters (the v1 ones are converted with kern = NULL). */
CUresult kcu_kernel_op_from_params(struct kcu_op *op, const CUDA_KERNEL_NODE_PARAMS *p)
{
    const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
    const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
    struct kcu_function *f = kcu_function_from(p->func ? p->func : (CUfunction)p->kern);

    if (!f)
        return CUDA_ERROR_INVALID_VALUE;
    return kcu_kernel_op_make(op, f, grid, block, p->sharedMemBytes, p->kernelParams, p->extra);
}

static CUDA_KERNEL_NODE_PARAMS from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    return (CUDA_KERNEL_NODE_PARAMS){
        .func = p->func, .gridDimX = p->gridDimX, .gridDimY = p->gridDimY,
        .gridDimZ = p->gridDimZ, .blockDimX = p->blockDimX, .blockDimY = p->blockDimY,
        .blockDimZ = p->blockDimZ, .sharedMemBytes = p->sharedMemBytes,
        .kernelParams = p->kernelParams, .extra = p->extra,
    };
}

static CUresult add_kernel(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps, size_t n,
                           const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_EMPTY};
    CUresult r = p ? kcu_kernel_op_from_params(&op, p) : CUDA_ERROR_INVALID_VALUE;

    return r != CUDA_SUCCESS ? r : add(ph, g, deps, n, &op);
}

CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                         size_t n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    return add_kernel(ph, g, deps, n, p);
}

CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                      size_t n, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS q;

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    q = from_v1(p);
    return add_kernel(ph, g, deps, n, &q);
}

/* A kernel op's parameters as CUDA hands them back: kernelParams points at the node's
 * own copy of the arguments. */
void kcu_kernel_op_params(const struct kcu_op *op, CUDA_KERNEL_NODE_PARAMS *p)
{
    const struct kcu_kernel_op *k = &op->u.kernel;

    *p = (CUDA_KERNEL_NODE_PARAMS){
        .func = (CUfunction)k->fn, .gridDimX = k->grid[0], .gridDimY = k->grid[1],
        .gridDimZ = k->grid[2], .blockDimX = k->block[0], .blockDimY = k->block[1],
        .blockDimZ = k->block[2], .sharedMemBytes = k->smem, .kernelParams = k->param_ptrs,
    };
}

static struct kcu_node *node_of_type(CUgraphNode hNode, CUgraphNodeType type)
{
    struct kcu_node *n = kcu_node_from(hNode);

    return n && n->op.type == type ? n : NULL;
}

/* Replaces the op of a node of type by fresh (made by the caller, checked). */
static CUresult set_op(CUgraphNode hNode, CUgraphNodeType type, struct kcu_op *fresh, CUresult made)
{
    struct kcu_node *n = node_of_type(hNode, type);

    if (made != CUDA_SUCCESS)
        return made;
    if (!n) {
        kcu_op_free(fresh);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (type == CU_GRAPH_NODE_TYPE_KERNEL)   /* new parameters keep the node's attributes */
        fresh->u.kernel.attrs = n->op.u.kernel.attrs;
    kcu_op_free(&n->op);
    n->op = *fresh;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *p)
{
    struct kcu_node *n = node_of_type(hNode, CU_GRAPH_NODE_TYPE_KERNEL);

    if (!n || !p)
        return CUDA_ERROR_INVALID_VALUE;
    kcu_kernel_op_params(&n->op, p);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS q;
    CUresult r = p ? cuGraphKernelNodeGetParams_v2(hNode, &q) : CUDA_ERROR_INVALID_VALUE;

    if (r == CUDA_SUCCESS)
        memcpy(p, &q, sizeof(*p)); /* v1 is the head of v2 */
    return r;
}

CUresult CUDAAPI cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_EMPTY};
    CUresult r = p ? kcu_kernel_op_from_params(&op, p) : CUDA_ERROR_INVALID_VALUE;

    return set_op(hNode, CU_GRAPH_NODE_TYPE_KERNEL, &op, r);
}

CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS q;

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    q = from_v1(p);
    return cuGraphKernelNodeSetParams_v2(hNode, &q);
}

/* ---- kernel node attributes ------------------------------------------------------------ */

/* Clusters and the cooperative flag are kept (and replayed); the attributes that change
 * nothing here are accepted as a launch's are; the rest are not supported. */
CUresult CUDAAPI cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                               const CUkernelNodeAttrValue *value)
{
    struct kcu_node *n = node_of_type(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    struct kcu_launch_attrs *a = n ? &n->op.u.kernel.attrs : NULL;

    if (!a || !value)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        if (!value->clusterDim.x || !value->clusterDim.y || !value->clusterDim.z)
            return CUDA_ERROR_INVALID_VALUE;
        a->cluster[0] = value->clusterDim.x;
        a->cluster[1] = value->clusterDim.y;
        a->cluster[2] = value->clusterDim.z;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        a->cooperative = value->cooperative != 0;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        return CUDA_SUCCESS;
    default:
        return kcu_unsupported("cuGraphKernelNodeSetAttribute(attribute)");
    }
}

CUresult CUDAAPI cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                               CUkernelNodeAttrValue *value)
{
    const struct kcu_node *n = node_of_type(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    const struct kcu_launch_attrs *a = n ? &n->op.u.kernel.attrs : NULL;

    if (!a || !value)
        return CUDA_ERROR_INVALID_VALUE;
    memset(value, 0, sizeof(*value));
    switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        value->clusterDim.x = a->cluster[0] ? a->cluster[0] : 1;
        value->clusterDim.y = a->cluster[1] ? a->cluster[1] : 1;
        value->clusterDim.z = a->cluster[2] ? a->cluster[2] : 1;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        value->cooperative = a->cooperative;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        return CUDA_SUCCESS;
    default:
        return kcu_unsupported("cuGraphKernelNodeGetAttribute(attribute)");
    }
}

CUresult CUDAAPI cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src)
{
    struct kcu_node *d = node_of_type(dst, CU_GRAPH_NODE_TYPE_KERNEL);
    const struct kcu_node *s = node_of_type(src, CU_GRAPH_NODE_TYPE_KERNEL);

    if (!d || !s)
        return CUDA_ERROR_INVALID_VALUE;
    d->op.u.kernel.attrs = s->op.u.kernel.attrs;
    return CUDA_SUCCESS;
}

/* ---- memcpy, memset, host, empty and event nodes ---------------------------------------- */

CUresult kcu_memcpy_op(struct kcu_op *op, const CUDA_MEMCPY3D *p)
{
    CUresult r = p ? kcu_copy_describe3d(p, &op->u.copy) : CUDA_ERROR_INVALID_VALUE;

    op->type = CU_GRAPH_NODE_TYPE_MEMCPY;
    op->u.copy.async = true;
    return r != CUDA_SUCCESS ? r : kcu_copy_check(&op->u.copy);
}

CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                      size_t n, const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    struct kcu_op op;
    CUresult r = kcu_memcpy_op(&op, p);

    (void)ctx; /* one device, one address space */
    return r != CUDA_SUCCESS ? r : add(ph, g, deps, n, &op);
}

CUresult kcu_memset_op(struct kcu_op *op, const CUDA_MEMSET_NODE_PARAMS *p)
{
    struct kcu_memset_op *m = &op->u.memset;
    size_t pitch;

    if (!p || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) ||
        !p->width || !p->height)
        return CUDA_ERROR_INVALID_VALUE;
    pitch = p->height == 1 ? p->width * p->elementSize : p->pitch;
    if (pitch < p->width * p->elementSize || pitch % p->elementSize || p->dst % p->elementSize ||
        !kcu_device_range(p->dst, pitch * (p->height - 1) + p->width * p->elementSize))
        return CUDA_ERROR_INVALID_VALUE;
    op->type = CU_GRAPH_NODE_TYPE_MEMSET;
    *m = (struct kcu_memset_op){p->dst, pitch, p->width, p->height, p->value, p->elementSize};
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                      size_t n, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    struct kcu_op op;
    CUresult r = kcu_memset_op(&op, p);

    (void)ctx;
    return r != CUDA_SUCCESS ? r : add(ph, g, deps, n, &op);
}

CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *p)
{
    struct kcu_node *n = node_of_type(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
    const struct kcu_memset_op *m = n ? &n->op.u.memset : NULL;

    if (!m || !p)
        return CUDA_ERROR_INVALID_VALUE;
    *p = (CUDA_MEMSET_NODE_PARAMS){.dst = m->dst, .pitch = m->pitch, .value = m->value,
                                   .elementSize = m->elem_size, .width = m->width,
                                   .height = m->height};
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *p)
{
    struct kcu_op op;

    return set_op(hNode, CU_GRAPH_NODE_TYPE_MEMSET, &op, kcu_memset_op(&op, p));
}

CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *p)
{
    struct kcu_op op;

    return set_op(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, &op, kcu_memcpy_op(&op, p));
}

CUresult kcu_host_op(struct kcu_op *op, const CUDA_HOST_NODE_PARAMS *p)
{
    if (!p || !p->fn)
        return CUDA_ERROR_INVALID_VALUE;
    *op = (struct kcu_op){.type = CU_GRAPH_NODE_TYPE_HOST, .u.host = {p->fn, p->userData}};
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *p)
{
    struct kcu_node *n = node_of_type(hNode, CU_GRAPH_NODE_TYPE_HOST);

    if (!n || !p)
        return CUDA_ERROR_INVALID_VALUE;
    p->fn = n->op.u.host.fn;
    p->userData = n->op.u.host.data;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *p)
{
    struct kcu_op op;

    return set_op(hNode, CU_GRAPH_NODE_TYPE_HOST, &op, kcu_host_op(&op, p));
}

CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                    size_t n, const CUDA_HOST_NODE_PARAMS *p)
{
    struct kcu_op op;
    CUresult r = kcu_host_op(&op, p);

    return r != CUDA_SUCCESS ? r : add(ph, g, deps, n, &op);
}

CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                     size_t n)
{
    struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_EMPTY};

    return add(ph, g, deps, n, &op);
}

static CUresult add_event(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps, size_t n,
                          CUevent e, CUgraphNodeType type)
{
    struct kcu_op op = {.type = type, .u.event = kcu_event_from(e)};

    return op.u.event ? add(ph, g, deps, n, &op) : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                           size_t n, CUevent e)
{
    return add_event(ph, g, deps, n, e, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                         size_t n, CUevent e)
{
    return add_event(ph, g, deps, n, e, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

/* ---- the generic form (cuGraphAddNode) ------------------------------------------------- */

CUresult kcu_op_from_node_params(struct kcu_op *op, const CUgraphNodeParams *p)
{
    CUDA_KERNEL_NODE_PARAMS k;

    memset(op, 0, sizeof(*op));
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        memcpy(&k, &p->kernel, sizeof(k)); /* v3 has v2's layout */
        return kcu_kernel_op_from_params(op, &k);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        return kcu_memcpy_op(op, &p->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET:
        return kcu_memset_op(op, (const CUDA_MEMSET_NODE_PARAMS *)&p->memset);
    case CU_GRAPH_NODE_TYPE_HOST:
        return kcu_host_op(op, (const CUDA_HOST_NODE_PARAMS *)&p->host);
    case CU_GRAPH_NODE_TYPE_EMPTY:
        op->type = p->type;
        return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        op->type = p->type;
        op->u.event = kcu_event_from(p->type == CU_GRAPH_NODE_TYPE_WAIT_EVENT
                                         ? p->eventWait.event : p->eventRecord.event);
        return op->u.event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return kcu_unsupported("cuGraphAddNode of this node type");
    }
}

static CUresult add_generic(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                            const CUgraphEdgeData *edges, size_t n, CUgraphNodeParams *p)
{
    struct kcu_op op;
    CUresult r;

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_graph_check_edges(edges, n)) != CUDA_SUCCESS ||
        (r = kcu_op_from_node_params(&op, p)) != CUDA_SUCCESS)
        return r;
    return add(ph, g, deps, n, &op);
}

CUresult CUDAAPI cuGraphAddNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps, size_t n,
                                CUgraphNodeParams *p)
{
    return add_generic(ph, g, deps, NULL, n, p);
}

CUresult CUDAAPI cuGraphAddNode_v2(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                   const CUgraphEdgeData *edges, size_t n, CUgraphNodeParams *p)
{
    return add_generic(ph, g, deps, edges, n, p);
}

/* New parameters of the node's own type, in the generic form. */
CUresult CUDAAPI cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *p)
{
    struct kcu_op op;

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return set_op(hNode, p->type, &op, kcu_op_from_node_params(&op, p));
}
