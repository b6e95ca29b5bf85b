/* Graphs as objects: creation, nodes and their dependencies, clones, queries, destruction.
 * Every handle is checked by its magic number; a node is accepted only with its own
 * graph, and an edge that would close a cycle is refused. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

static _Atomic uint64_t next_node_id = 1;

struct kcu_graph *kcu_graph_from(CUgraph g)
{
    struct kcu_graph *x = (struct kcu_graph *)g;

    return x && x->magic == KCU_MAGIC_GRAPH ? x : NULL;
}

struct kcu_node *kcu_node_from(CUgraphNode n)
{
    struct kcu_node *x = (struct kcu_node *)n;

    return x && x->magic == KCU_MAGIC_NODE ? x : NULL;
}

CUresult kcu_graph_new(struct kcu_graph **out)
{
    struct kcu_graph *g = calloc(1, sizeof(*g));

    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->magic = KCU_MAGIC_GRAPH;
    *out = g;
    return CUDA_SUCCESS;
}

void kcu_graph_free(struct kcu_graph *g)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        struct kcu_node *n = g->nodes[i];
        kcu_op_free(&n->op);
        free(n->deps);
        n->magic = 0;
        free(n);
    }
    free(g->nodes);
    g->magic = 0;
    free(g);
}

/* Makes room for one more pointer in an array of *n of *cap. */
static bool grow(void *arr, size_t n, size_t *cap)
{
    void ***a = arr;

    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 4;
    void **p = realloc(*a, c * sizeof(void *));
    if (!p)
        return false;
    *a = p;
    *cap = c;
    return true;
}

uint64_t kcu_graph_mark_ancestors(struct kcu_graph *g, struct kcu_node *const *from, size_t n)
{
    static _Atomic uint64_t generation;
    uint64_t gen = atomic_fetch_add(&generation, 1) + 1;
    struct kcu_node **stack = malloc((g->n_nodes + 1) * sizeof(*stack));
    size_t top = 0;

    if (!stack)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (from[i]->mark != gen) {
            from[i]->mark = gen;
            stack[top++] = from[i];
        }
    while (top) {
        struct kcu_node *x = stack[--top];
        for (size_t i = 0; i < x->n_deps; i++)
            if (x->deps[i]->mark != gen) {
                x->deps[i]->mark = gen;
                stack[top++] = x->deps[i];
            }
    }
    free(stack);
    return gen;
}

CUresult kcu_node_add_dep(struct kcu_node *to, struct kcu_node *from)
{
    for (size_t i = 0; i < to->n_deps; i++)
        if (to->deps[i] == from)
            return CUDA_ERROR_INVALID_VALUE; /* CUDA refuses a duplicate edge */
    uint64_t gen = kcu_graph_mark_ancestors(from->graph, &from, 1);
    if (!gen)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (to->mark == gen)
        return CUDA_ERROR_INVALID_VALUE; /* from already waits for to: a cycle */
    if (!grow(&to->deps, to->n_deps, &to->cap_deps))
        return CUDA_ERROR_OUT_OF_MEMORY;
    to->deps[to->n_deps++] = from;
    return CUDA_SUCCESS;
}

CUresult kcu_graph_check_deps(const struct kcu_graph *g, const CUgraphNode *deps, size_t n)
{
    if (n && !deps)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) {
        const struct kcu_node *d = kcu_node_from(deps[i]);
        if (!d || d->graph != g)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; j++)
            if (deps[j] == deps[i])
                return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult kcu_graph_add(struct kcu_graph *g, struct kcu_op *op, struct kcu_node *const *deps,
                       size_t n_deps, struct kcu_node **out)
{
    struct kcu_node *n;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

    if (!grow(&g->nodes, g->n_nodes, &g->cap_nodes) || !(n = calloc(1, sizeof(*n))))
        goto fail;
    n->magic = KCU_MAGIC_NODE;
    n->id = atomic_fetch_add(&next_node_id, 1);
    n->graph = g;
    n->index = g->n_nodes;
    if (n_deps && !(n->deps = malloc(n_deps * sizeof(*n->deps)))) {
        free(n);
        goto fail;
    }
    if (n_deps)
        memcpy(n->deps, deps, n_deps * sizeof(*n->deps));
    n->n_deps = n->cap_deps = n_deps;
    n->op = *op;
    g->nodes[g->n_nodes++] = n;
    if (out)
        *out = n;
    return CUDA_SUCCESS;
fail:
    kcu_op_free(op);
    return r;
}

size_t kcu_node_index(const struct kcu_node *n)
{
    return n->index;
}

CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    struct kcu_graph *g;
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!phGraph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_graph_new(&g)) == CUDA_SUCCESS)
        *phGraph = (CUgraph)g;
    return r;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
    struct kcu_graph *g = kcu_graph_from(hGraph);

    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    kcu_graph_free(g);
    return CUDA_SUCCESS;
}

/* Edge data other than the default (a full dependency) is not supported. */
CUresult kcu_graph_check_edges(const CUgraphEdgeData *edges, size_t n)
{
    static const CUgraphEdgeData zero;

    for (size_t i = 0; edges && i < n; i++)
        if (memcmp(&edges[i], &zero, sizeof(zero)))
            return kcu_unsupported("graph edge data (programmatic dependencies)");
    return CUDA_SUCCESS;
}

CUresult kcu_graph_check_pairs(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                               const CUgraphEdgeData *edges, size_t n, struct kcu_graph **out)
{
    struct kcu_graph *g = kcu_graph_from(hGraph);
    CUresult r;

    if (!g || (n && (!from || !to)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_graph_check_edges(edges, n)) != CUDA_SUCCESS)
        return r;
    for (size_t i = 0; i < n; i++) {
        struct kcu_node *a = kcu_node_from(from[i]), *b = kcu_node_from(to[i]);
        if (!a || !b || a->graph != g || b->graph != g)
            return CUDA_ERROR_INVALID_VALUE;
    }
    *out = g;
    return CUDA_SUCCESS;
}

static CUresult add_deps(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                         const CUgraphEdgeData *edges, size_t n)
{
    struct kcu_graph *g;
    CUresult r = kcu_graph_check_pairs(hGraph, from, to, edges, n, &g);

    for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++)
        r = kcu_node_add_dep(kcu_node_from(to[i]), kcu_node_from(from[i]));
    return r;
}

#undef cuGraphAddDependencies
CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
                                        const CUgraphNode *to, size_t numDependencies);
CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
                                        const CUgraphNode *to, size_t numDependencies)
{
    return add_deps(hGraph, from, to, NULL, numDependencies);
}

CUresult CUDAAPI cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                           const CUgraphNode *to, const CUgraphEdgeData *edgeData,
                                           size_t numDependencies)
{
    return add_deps(hGraph, from, to, edgeData, numDependencies);
}

/* A deep copy of g: the same ops, the same edges between the corresponding nodes. */
static CUresult clone_graph(const struct kcu_graph *g, struct kcu_graph **out)
{
    struct kcu_graph *c = NULL;
    CUresult r = kcu_graph_new(&c);

    for (size_t i = 0; r == CUDA_SUCCESS && i < g->n_nodes; i++) {
        struct kcu_op op;
        if ((r = kcu_op_copy(&op, &g->nodes[i]->op)) == CUDA_SUCCESS)
            r = kcu_graph_add(c, &op, NULL, 0, NULL);
        if (r == CUDA_SUCCESS)
            c->nodes[i]->cloned_from = g->nodes[i]->id;
    }
    for (size_t i = 0; r == CUDA_SUCCESS && i < g->n_nodes; i++) {
        const struct kcu_node *n = g->nodes[i];
        for (size_t j = 0; r == CUDA_SUCCESS && j < n->n_deps; j++)
            r = kcu_node_add_dep(c->nodes[i], c->nodes[kcu_node_index(n->deps[j])]);
    }
    if (r != CUDA_SUCCESS && c)
        kcu_graph_free(c);
    else
        *out = c;
    return r;
}

CUresult CUDAAPI cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    struct kcu_graph *g = kcu_graph_from(originalGraph), *c;
    CUresult r;

    if (!g || !phGraphClone)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = clone_graph(g, &c)) == CUDA_SUCCESS)
        *phGraphClone = (CUgraph)c;
    return r;
}
