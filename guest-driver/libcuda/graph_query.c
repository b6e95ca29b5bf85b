/* Queries of a graph's structure: its nodes, roots, node types, dependencies, dependents
 * and edges. Output arrays follow CUDA's convention: with a NULL array only the count is
 * reported; otherwise at most *count entries are written, the rest of the array cleared,
 * and *count becomes the number written. */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* Copies n items to out when out is given (at most *count of them, as CUDA does; edges,
 * when given, all default) and reports in *count the number written, or n when out is
 * NULL. */
static CUresult list_out(CUgraphNode *out, CUgraphEdgeData *edges, size_t *count,
                         struct kcu_node *const *items, size_t n)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    if (out && edges)
        memset(edges, 0, *count * sizeof(*edges));
    if (out) {
        size_t k = n < *count ? n : *count;
        for (size_t i = 0; i < k; i++)
            out[i] = (CUgraphNode)items[i];
        for (size_t i = k; i < *count; i++)
            out[i] = NULL;
        n = k;
    }
    *count = n;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    struct kcu_graph *g = kcu_graph_from(hGraph);

    return g ? list_out(nodes, NULL, numNodes, g->nodes, g->n_nodes) : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *roots, size_t *numRoots)
{
    struct kcu_graph *g = kcu_graph_from(hGraph);
    struct kcu_node **tmp;
    size_t n = 0;

    if (!g || !numRoots)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(tmp = malloc((g->n_nodes + 1) * sizeof(*tmp))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->n_deps == 0)
            tmp[n++] = g->nodes[i];
    CUresult r = list_out(roots, NULL, numRoots, tmp, n);
    free(tmp);
    return r;
}

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    struct kcu_node *n = kcu_node_from(hNode);

    if (!n || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = n->op.type;
    return CUDA_SUCCESS;
}

/* The dependencies of a node, for cuGraphNodeGetDependencies. */
static CUresult node_deps(CUgraphNode hNode, CUgraphNode *deps, CUgraphEdgeData *edges,
                          size_t *n)
{
    struct kcu_node *x = kcu_node_from(hNode);

    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    return list_out(deps, edges, n, x->deps, x->n_deps);
}

#undef cuGraphNodeGetDependencies
CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *deps, size_t *n);
CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *deps, size_t *n)
{
    return node_deps(hNode, deps, NULL, n);
}

CUresult CUDAAPI cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *deps,
                                               CUgraphEdgeData *edges, size_t *n)
{
    return node_deps(hNode, deps, edges, n);
}

/* The nodes that wait for x, in the graph's order. */
static CUresult dependents(const struct kcu_node *x, struct kcu_node ***out, size_t *n)
{
    const struct kcu_graph *g = x->graph;

    *n = 0;
    if (!(*out = malloc((g->n_nodes + 1) * sizeof(**out))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t j = 0; j < g->nodes[i]->n_deps; j++)
            if (g->nodes[i]->deps[j] == x)
                (*out)[(*n)++] = g->nodes[i];
    return CUDA_SUCCESS;
}

static CUresult node_dependents(CUgraphNode hNode, CUgraphNode *out, CUgraphEdgeData *edges,
                                size_t *count)
{
    struct kcu_node *x = kcu_node_from(hNode), **list;
    size_t n;
    CUresult r = x ? dependents(x, &list, &n) : CUDA_ERROR_INVALID_VALUE;

    if (r != CUDA_SUCCESS)
        return r;
    r = list_out(out, edges, count, list, n);
    free(list);
    return r;
}

#undef cuGraphNodeGetDependentNodes
CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *out, size_t *n);
CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *out, size_t *n)
{
    return node_dependents(hNode, out, NULL, n);
}

CUresult CUDAAPI cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode *out,
                                                 CUgraphEdgeData *edges, size_t *n)
{
    return node_dependents(hNode, out, edges, n);
}

/* Every edge from -> to (to waits for from), node by node in the graph's order. */
static CUresult edges_out(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                          CUgraphEdgeData *edges, size_t *count)
{
    struct kcu_graph *g = kcu_graph_from(hGraph);
    size_t n = 0;

    if (!g || !count || (!from) != (!to))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t j = 0; j < g->nodes[i]->n_deps; j++, n++)
            if (from && n < *count) {
                from[n] = (CUgraphNode)g->nodes[i]->deps[j];
                to[n] = (CUgraphNode)g->nodes[i];
            }
    for (size_t k = n; from && k < *count; k++)
        from[k] = to[k] = NULL;
    if (edges && from)
        memset(edges, 0, *count * sizeof(*edges));
    *count = from && n > *count ? *count : n;
    return CUDA_SUCCESS;
}

#undef cuGraphGetEdges
CUresult CUDAAPI cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *n);
CUresult CUDAAPI cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *n)
{
    return edges_out(g, from, to, NULL, n);
}

CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph g, CUgraphNode *from, CUgraphNode *to,
                                    CUgraphEdgeData *edges, size_t *n)
{
    return edges_out(g, from, to, edges, n);
}
