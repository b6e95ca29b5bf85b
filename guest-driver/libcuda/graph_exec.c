/*
 * Executable graphs: instantiation (a copy of the graph's ops in a topological order),
 * launch, per-node updates, whole-graph update, destruction.
 *
 * A launch replays the ops, in that order, as the ordinary work they stand for: each
 * kernel node is one launch record that the daemon schedules, slices and co-schedules
 * like any other launch. Independent branches go to streams of their own (lanes,
 * graph_lanes.c), joined by events as the dependencies require.
 *
 * An executable graph is independent of its graph once made (CUDA's rule): the graph may
 * change or be destroyed. Nodes are found again by their id, which a node keeps for life.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

struct exec_node {
    uint64_t id;                    /* of the graph node it was made from */
    struct kcu_op op;
    size_t *deps, n_deps;           /* indices of the nodes it waits for */
};

struct kcu_exec {
    uint32_t magic;
    size_t n;
    struct exec_node *nodes;        /* in the graph's creation order */
    size_t *order;                  /* indices into nodes, topologically sorted */
    struct kcu_lanes lanes;
    cuuint64_t flags;
    bool launched;                  /* once launched (not captured) */
    uint64_t last_stream;           /* the stream of the last such launch */
    CUevent last_done;              /* recorded after each launch not captured */
};

static struct kcu_exec *exec_from(CUgraphExec e)
{
    struct kcu_exec *x = (struct kcu_exec *)e;

    return x && x->magic == KCU_MAGIC_EXEC ? x : NULL;
}

static void exec_free(struct kcu_exec *x)
{
    for (size_t i = 0; x->nodes && i < x->n; i++) {
        kcu_op_free(&x->nodes[i].op);
        free(x->nodes[i].deps);
    }
    free(x->nodes);
    free(x->order);
    kcu_lanes_free(&x->lanes);
    if (x->last_done)
        cuEventDestroy(x->last_done);
    x->magic = 0;
    free(x);
}

/* Kahn's algorithm over node indices; CUDA_ERROR_INVALID_VALUE when the edges hold a
 * cycle (they cannot, as kcu_node_add_dep refuses one, but the check is cheap). */
static CUresult topo_order(const struct kcu_graph *g, size_t *order)
{
    size_t n = g->n_nodes, head = 0, tail = 0, edges = 0;
    size_t *indeg = calloc(n + 1, sizeof(*indeg)), *start = calloc(n + 2, sizeof(*start));
    size_t *out = NULL, *fill = NULL;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

    for (size_t i = 0; i < n; i++)
        edges += g->nodes[i]->n_deps;
    if (!indeg || !start || !(out = malloc((edges + 1) * sizeof(*out))) ||
        !(fill = calloc(n + 1, sizeof(*fill))))
        goto done;
    /* Dependents of each node, as one array cut by start[]. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < g->nodes[i]->n_deps; j++)
            start[kcu_node_index(g->nodes[i]->deps[j]) + 1]++;
    for (size_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    for (size_t i = 0; i < n; i++) {
        indeg[i] = g->nodes[i]->n_deps;
        for (size_t j = 0; j < g->nodes[i]->n_deps; j++) {
            size_t d = kcu_node_index(g->nodes[i]->deps[j]);
            out[start[d] + fill[d]++] = i;
        }
        if (!indeg[i])
            order[tail++] = i;
    }
    while (head < tail) {
        size_t i = order[head++];
        for (size_t k = start[i]; k < start[i + 1]; k++)
            if (--indeg[out[k]] == 0)
                order[tail++] = out[k];
    }
    r = tail == n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
done:
    free(indeg);
    free(start);
    free(out);
    free(fill);
    return r;
}

static CUresult exec_node_make(struct exec_node *en, const struct kcu_node *n)
{
    CUresult r;

    en->id = n->id;
    if (!(en->deps = malloc((n->n_deps + 1) * sizeof(*en->deps))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    en->n_deps = n->n_deps;
    for (size_t i = 0; i < n->n_deps; i++)
        en->deps[i] = kcu_node_index(n->deps[i]);
    if ((r = kcu_op_copy(&en->op, &n->op)) != CUDA_SUCCESS) {
        free(en->deps);
        en->deps = NULL;
    }
    return r;
}

/* lanes: plan the launch's lanes too (not for the copy an update compares). */
static CUresult instantiate(struct kcu_graph *g, cuuint64_t flags, bool lanes,
                            struct kcu_exec **out)
{
    struct kcu_exec *x = calloc(1, sizeof(*x));
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

    if (!x || !(x->nodes = calloc(g->n_nodes + 1, sizeof(*x->nodes))) ||
        !(x->order = calloc(g->n_nodes + 1, sizeof(*x->order))))
        goto fail;
    x->magic = KCU_MAGIC_EXEC;
    x->flags = flags;
    if ((r = topo_order(g, x->order)) != CUDA_SUCCESS)
        goto fail;
    for (; x->n < g->n_nodes; x->n++)
        if ((r = exec_node_make(&x->nodes[x->n], g->nodes[x->n])) != CUDA_SUCCESS)
            goto fail;
    if (lanes && (r = kcu_lanes_plan(&x->lanes, g, x->order)) != CUDA_SUCCESS)
        goto fail;
    *out = x;
    return CUDA_SUCCESS;
fail:
    if (x)
        exec_free(x);
    return r;
}

/* Flags CUDA defines; auto-free and device launch concern memory nodes and device-side
 * launches, which these graphs do not have, so they change nothing here. */
#define KNOWN_FLAGS (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |                     \
                     CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |                                  \
                     CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |                           \
                     CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

static CUresult instantiate_api(CUgraphExec *ph, CUgraph hGraph, cuuint64_t flags)
{
    struct kcu_graph *g = kcu_graph_from(hGraph);
    struct kcu_exec *x;
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!ph || !g || (flags & ~(cuuint64_t)KNOWN_FLAGS))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = instantiate(g, flags, true, &x)) == CUDA_SUCCESS)
        *ph = (CUgraphExec)x;
    return r;
}

/* The CUDA 10/11 form: an error node and a log buffer, never filled here but cleared. */
static CUresult instantiate_logged(CUgraphExec *ph, CUgraph g, CUgraphNode *err, char *log,
                                   size_t log_size)
{
    if (err)
        *err = NULL;
    if (log && log_size)
        log[0] = '\0';
    return instantiate_api(ph, g, 0);
}

#undef cuGraphInstantiate
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *ph, CUgraph g, CUgraphNode *err, char *log,
                                    size_t size);
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *ph, CUgraph g, CUgraphNode *err, char *log,
                                       size_t size);
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *ph, CUgraph g, CUgraphNode *err, char *log,
                                    size_t size)
{
    return instantiate_logged(ph, g, err, log, size);
}

CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *ph, CUgraph g, CUgraphNode *err, char *log,
                                       size_t size)
{
    return instantiate_logged(ph, g, err, log, size);
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *ph, CUgraph g, unsigned long long flags)
{
    return instantiate_api(ph, g, flags);
}

/* With parameters: the upload stream is checked (uploading is a no-op here) and the
 * result is reported in the parameters as CUDA does. */
static CUresult instantiate_params(CUgraphExec *ph, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p,
                                   bool pt)
{
    uint64_t stream;
    CUresult r;

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&
        (r = kcu_stream_handle(p->hUploadStream, pt, &stream)) != CUDA_SUCCESS)
        return r;
    r = instantiate_api(ph, g, p->flags);
    p->hErrNode_out = NULL;
    p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *ph, CUgraph g,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(ph, g, p, false);
}

CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *ph, CUgraph g,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(ph, g, p, true);
}

CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
    struct kcu_exec *x = exec_from(hGraphExec);

    if (!x || !flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = x->flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    struct kcu_exec *x = exec_from(hGraphExec);

    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    exec_free(x);
    return CUDA_SUCCESS;
}

/* ---- launch and upload --------------------------------------------------------------- */

/* Queues every node, in topological order, each on its lane's stream. */
static CUresult replay(const struct kcu_exec *x, uint64_t stream)
{
    CUresult r = kcu_lanes_fork(&x->lanes, stream);

    for (size_t k = 0; k < x->n && r == CUDA_SUCCESS; k++) {
        size_t i = x->order[k];
        const struct exec_node *en = &x->nodes[i];
        uint64_t lane;
        if ((r = kcu_lanes_before(&x->lanes, i, en->deps, en->n_deps, stream, &lane)) ==
                CUDA_SUCCESS &&
            (r = kcu_op_run(&en->op, lane)) == CUDA_SUCCESS)
            r = kcu_lanes_after(&x->lanes, i, lane);
    }
    return r == CUDA_SUCCESS ? kcu_lanes_join(&x->lanes, stream) : r;
}

/* CUDA orders a launch after the previous launch of the same executable graph, whatever
 * its stream: a launch on another stream than the last waits for the last one's event.
 * Captured launches neither wait nor record (an event of no capture cannot order captured
 * work, and a captured record would pull later launches into the capture). */
static CUresult launch_ordered(struct kcu_exec *x, uint64_t stream)
{
    bool captured = kcu_capture_stream_captures(stream);
    CUresult r = CUDA_SUCCESS;

    if (!captured && x->launched && x->last_stream != stream)
        r = kcu_stream_wait_event(stream, kcu_event_from(x->last_done), 0);
    if (r == CUDA_SUCCESS)
        r = replay(x, stream);
    if (r != CUDA_SUCCESS || captured)
        return r;
    if (!x->last_done && (r = cuEventCreate(&x->last_done, CU_EVENT_DISABLE_TIMING)))
        return r;
    x->launched = true;
    x->last_stream = stream;
    return kcu_event_record_stream(kcu_event_from(x->last_done), stream);
}

static CUresult launch(CUgraphExec hGraphExec, CUstream s, bool pt, bool run)
{
    struct kcu_exec *x = exec_from(hGraphExec);
    uint64_t stream;
    CUresult r = kcu_stream_handle(s, pt, &stream);

    if (r != CUDA_SUCCESS)
        return r;
    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    return run ? launch_ordered(x, stream) : CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec e, CUstream s) { return launch(e, s, false, true); }
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) { return launch(e, s, true, true); }
/* Nothing to upload: the ops travel when launched. The arguments are still checked. */
CUresult CUDAAPI cuGraphUpload(CUgraphExec e, CUstream s) { return launch(e, s, false, false); }
CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec e, CUstream s) { return launch(e, s, true, false); }

/* ---- updates ---------------------------------------------------------------------------- */

static struct exec_node *exec_node_of(struct kcu_exec *x, CUgraphNode hNode)
{
    struct kcu_node *n = kcu_node_from(hNode);

    for (size_t i = 0; n && i < x->n; i++)
        if (x->nodes[i].id == n->id)
            return &x->nodes[i];
    return NULL;
}

/* Replaces the op of exec node n (of the given type) by fresh, made and checked by the
 * caller (made: its result). */
static CUresult exec_set_op(CUgraphExec e, CUgraphNode n, CUgraphNodeType type,
                            struct kcu_op *fresh, CUresult made)
{
    struct kcu_exec *x = exec_from(e);
    struct exec_node *en = x ? exec_node_of(x, n) : NULL;

    if (made != CUDA_SUCCESS)
        return made;
    if (!en || en->op.type != type) {
        kcu_op_free(fresh);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (type == CU_GRAPH_NODE_TYPE_KERNEL)   /* new parameters keep the node's attributes */
        fresh->u.kernel.attrs = en->op.u.kernel.attrs;
    kcu_op_free(&en->op);
    en->op = *fresh;
    return CUDA_SUCCESS;
}

#undef cuGraphExecKernelNodeSetParams
CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                const CUDA_KERNEL_NODE_PARAMS_v1 *p);

CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
                                                   const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_EMPTY};
    CUresult r = p ? kcu_kernel_op_from_params(&op, p) : CUDA_ERROR_INVALID_VALUE;

    return exec_set_op(e, n, CU_GRAPH_NODE_TYPE_KERNEL, &op, r);
}

CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS q = {0};

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(&q, p, sizeof(*p)); /* v1 is the head of v2 */
    return cuGraphExecKernelNodeSetParams_v2(e, n, &q);
}

CUresult CUDAAPI cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraphNodeParams *p)
{
    struct kcu_op op;

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return exec_set_op(e, n, p->type, &op, kcu_op_from_node_params(&op, p));
}

CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    struct kcu_op op;

    (void)ctx;
    return exec_set_op(e, n, CU_GRAPH_NODE_TYPE_MEMSET, &op, kcu_memset_op(&op, p));
}

CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    struct kcu_op op;

    (void)ctx;
    return exec_set_op(e, n, CU_GRAPH_NODE_TYPE_MEMCPY, &op, kcu_memcpy_op(&op, p));
}

CUresult CUDAAPI cuGraphExecHostNodeSetParams(CUgraphExec e, CUgraphNode n,
                                              const CUDA_HOST_NODE_PARAMS *p)
{
    struct kcu_op op;

    return exec_set_op(e, n, CU_GRAPH_NODE_TYPE_HOST, &op, kcu_host_op(&op, p));
}

/* Whether two nodes wait for the same set of nodes (by creation index; an index list
 * holds no duplicates). */
static bool same_deps(const struct exec_node *a, const struct exec_node *b)
{
    if (a->n_deps != b->n_deps)
        return false;
    for (size_t i = 0; i < a->n_deps; i++) {
        size_t j = 0;
        while (j < b->n_deps && b->deps[j] != a->deps[i])
            j++;
        if (j == b->n_deps)
            return false;
    }
    return true;
}

/* Whether fresh (instantiated from g) has x's topology: as many nodes, each of the same
 * type with the same dependencies, as CUDA requires for an update. */
static CUgraphExecUpdateResult compare(const struct kcu_exec *x, const struct kcu_graph *g,
                                       const struct kcu_exec *fresh, CUgraphNode *err)
{
    *err = NULL;
    if (fresh->n != x->n)
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    for (size_t i = 0; i < x->n; i++) {
        *err = (CUgraphNode)g->nodes[i];
        if (fresh->nodes[i].op.type != x->nodes[i].op.type)
            return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        if (!same_deps(&fresh->nodes[i], &x->nodes[i]))
            return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    }
    *err = NULL;
    return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

static CUresult update(CUgraphExec e, CUgraph hGraph, CUgraphExecUpdateResult *result,
                       CUgraphNode *err)
{
    struct kcu_exec *x = exec_from(e), *fresh;
    struct kcu_graph *g = kcu_graph_from(hGraph);
    CUresult r;

    *result = CU_GRAPH_EXEC_UPDATE_ERROR;
    *err = NULL;
    if (!x || !g)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = instantiate(g, x->flags, false, &fresh)) != CUDA_SUCCESS)
        return r;
    *result = compare(x, g, fresh, err);
    if (*result == CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        for (size_t i = 0; i < x->n; i++) {
            struct kcu_op t = x->nodes[i].op;
            x->nodes[i].op = fresh->nodes[i].op;
            fresh->nodes[i].op = t; /* freed with fresh */
        }
    }
    exec_free(fresh);
    return *result == CU_GRAPH_EXEC_UPDATE_SUCCESS ? CUDA_SUCCESS
                                                   : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}

#undef cuGraphExecUpdate
CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode *err,
                                   CUgraphExecUpdateResult *result);
CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode *err,
                                   CUgraphExecUpdateResult *result)
{
    CUgraphExecUpdateResult res;
    CUgraphNode node;
    CUresult r;

    if (!err || !result)
        return CUDA_ERROR_INVALID_VALUE;
    r = update(e, g, &res, &node);
    *err = node;
    *result = res;
    return r;
}

CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    CUgraphExecUpdateResult res;
    CUgraphNode node;
    CUresult r;

    if (!info)
        return CUDA_ERROR_INVALID_VALUE;
    r = update(e, g, &res, &node);
    info->result = res;
    info->errorNode = node;
    info->errorFromNode = NULL;
    return r;
}
