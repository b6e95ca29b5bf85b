/* Editing a graph after the fact: removing edges and nodes, and finding a node's
 * counterpart in a clone. Executable graphs made earlier keep their own copies. */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* Removes from from to's dependencies; false when there is no such edge. */
static bool drop_dep(struct kcu_node *to, const struct kcu_node *from)
{
    for (size_t i = 0; i < to->n_deps; i++)
        if (to->deps[i] == from) {
            memmove(&to->deps[i], &to->deps[i + 1], (to->n_deps - i - 1) * sizeof(*to->deps));
            to->n_deps--;
            return true;
        }
    return false;
}

static bool has_dep(const struct kcu_node *to, const struct kcu_node *from)
{
    for (size_t i = 0; i < to->n_deps; i++)
        if (to->deps[i] == from)
            return true;
    return false;
}

/* All edges are checked first, so that a refused call changes nothing. */
static CUresult remove_deps(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                            const CUgraphEdgeData *edges, size_t n)
{
    struct kcu_graph *g;
    CUresult r = kcu_graph_check_pairs(hGraph, from, to, edges, n, &g);

    for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++)
        if (!has_dep(kcu_node_from(to[i]), kcu_node_from(from[i])))
            r = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++)
        drop_dep(kcu_node_from(to[i]), kcu_node_from(from[i]));
    return r;
}

#undef cuGraphRemoveDependencies
CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph g, const CUgraphNode *from,
                                           const CUgraphNode *to, size_t n);
CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph g, const CUgraphNode *from,
                                           const CUgraphNode *to, size_t n)
{
    return remove_deps(g, from, to, NULL, n);
}

CUresult CUDAAPI cuGraphRemoveDependencies_v2(CUgraph g, const CUgraphNode *from,
                                              const CUgraphNode *to, const CUgraphEdgeData *e,
                                              size_t n)
{
    return remove_deps(g, from, to, e, n);
}

/* The node leaves its graph with its edges; the later nodes move down one index. */
CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode hNode)
{
    struct kcu_node *n = kcu_node_from(hNode);
    struct kcu_graph *g;

    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    g = n->graph;
    for (size_t i = 0; i < g->n_nodes; i++)
        while (drop_dep(g->nodes[i], n))
            ;
    memmove(&g->nodes[n->index], &g->nodes[n->index + 1],
            (g->n_nodes - n->index - 1) * sizeof(*g->nodes));
    g->n_nodes--;
    for (size_t i = n->index; i < g->n_nodes; i++)
        g->nodes[i]->index = i;
    kcu_op_free(&n->op);
    free(n->deps);
    n->magic = 0;
    free(n);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode,
                                        CUgraph hClonedGraph)
{
    struct kcu_node *orig = kcu_node_from(hOriginalNode);
    struct kcu_graph *c = kcu_graph_from(hClonedGraph);

    if (!phNode || !orig || !c)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < c->n_nodes; i++)
        if (c->nodes[i]->cloned_from == orig->id) {
            *phNode = (CUgraphNode)c->nodes[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE;
}
