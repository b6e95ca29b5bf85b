/* cuGraphDebugDotPrint: a graph in Graphviz's DOT language, for a person to look at (as
 * PyTorch's debug_dump writes it). One line per node (its type, and for a kernel its name
 * and launch shape) and one per edge; the flags' extra detail is not written. */
#include <stdio.h>

#include "graph_internal.h"

static const char *type_name(CUgraphNodeType t)
{
    switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    case CU_GRAPH_NODE_TYPE_HOST: return "host";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return "event record";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return "event wait";
    default: return "empty";
    }
}

static void node_line(FILE *f, size_t i, const struct kcu_node *n)
{
    const struct kcu_kernel_op *k = &n->op.u.kernel;

    if (n->op.type == CU_GRAPH_NODE_TYPE_KERNEL)
        fprintf(f, "  n%zu [label=\"%zu: kernel %s\\n<<<(%u,%u,%u), (%u,%u,%u), %u>>>\"];\n", i,
                i, k->fn->name ? k->fn->name : "?", k->grid[0], k->grid[1], k->grid[2],
                k->block[0], k->block[1], k->block[2], k->smem);
    else
        fprintf(f, "  n%zu [label=\"%zu: %s\"];\n", i, i, type_name(n->op.type));
}

CUresult CUDAAPI cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
    struct kcu_graph *g = kcu_graph_from(hGraph);
    FILE *f;

    (void)flags;
    if (!g || !path)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(f = fopen(path, "w")))
        return CUDA_ERROR_OPERATING_SYSTEM;
    fprintf(f, "digraph graph_%p {\n", (void *)g);
    for (size_t i = 0; i < g->n_nodes; i++)
        node_line(f, i, g->nodes[i]);
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t j = 0; j < g->nodes[i]->n_deps; j++)
            fprintf(f, "  n%zu -> n%zu;\n", kcu_node_index(g->nodes[i]->deps[j]), i);
    fprintf(f, "}\n");
    return fclose(f) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}
