/* The direct-call graph's cycles (recursion), found once per module for the analysis.
 *
 * A module comes from an untrusted tenant: its call graph may be a chain or a cycle of
 * millions of functions. The walk is Tarjan's strongly connected components, iterative
 * (an explicit path on the heap, not the C stack), so its depth is bounded by memory
 * allocated up front and its time by the number of functions and calls; anything else
 * returns KPTX_ENOMEM. It gives:
 *   - facts.recursive: the function lies on a cycle of direct calls;
 *   - facts.cycle_head: some call that closes a cycle enters it (a depth-first walk's
 *     back edge goes to it). Every cycle holds such a call, so every cycle passes through
 *     a head: the fencing pass polls the cancel word at the heads only (fence.c);
 *   - an->order: the functions with the callees of each before it, a cycle's functions
 *     side by side (an->scc_end[k] ends the component order[k] belongs to), so that facts
 *     that flow from callee to caller are propagated in one pass. */
#include <stdlib.h>

#include "ptx_internal.h"

typedef struct walk {
    const kptx_analysis *an;
    unsigned *index;            /* visit number + 1; 0: not visited yet */
    unsigned *low;              /* smallest visit number reachable through the component */
    unsigned *cursor;           /* per function on the path: its next call edge */
    unsigned *path, n_path;     /* the depth-first path from the root */
    unsigned *stack, n_stack;   /* Tarjan's stack: visited, component not yet complete */
    bool *on_stack, *on_path;
    unsigned visits, n_order;
} walk;

static void enter(walk *w, unsigned f)
{
    w->index[f] = w->low[f] = ++w->visits;
    w->cursor[f] = w->an->edge_start[f];
    w->path[w->n_path++] = f;
    w->stack[w->n_stack++] = f;
    w->on_stack[f] = w->on_path[f] = true;
}

/* f's component is complete (f is its first visited function): its functions leave the
 * stack into the order, callees' components already there. */
static void close_component(walk *w, kptx_analysis *an, unsigned f)
{
    unsigned first = w->n_order, g;
    do {
        g = w->stack[--w->n_stack];
        w->on_stack[g] = false;
        an->order[w->n_order++] = g;
    } while (g != f);
    /* a lone function is on a cycle only through a call of itself, a back edge to it */
    bool cyclic = w->n_order - first > 1 || an->facts[f].cycle_head;
    for (unsigned k = first; k < w->n_order; k++) {
        an->facts[an->order[k]].recursive = cyclic;
        an->scc_end[k] = w->n_order;
    }
}

/* One step from the function at the end of the path: its next call, or, with none left,
 * back to its caller. */
static void step(walk *w, kptx_analysis *an)
{
    unsigned f = w->path[w->n_path - 1];
    if (w->cursor[f] < an->edge_start[f + 1]) {
        unsigned c = an->callee[w->cursor[f]++];
        if (!w->index[c]) {
            enter(w, c);
            return;
        }
        if (w->on_path[c])
            an->facts[c].cycle_head = true;     /* the call closes a cycle: a back edge */
        if (w->on_stack[c] && w->index[c] < w->low[f])
            w->low[f] = w->index[c];
        return;
    }
    w->n_path--;
    w->on_path[f] = false;
    if (w->n_path) {
        unsigned caller = w->path[w->n_path - 1];
        if (w->low[f] < w->low[caller])
            w->low[caller] = w->low[f];
    }
    if (w->low[f] == w->index[f])
        close_component(w, an, f);
}

static void walk_free(walk *w)
{
    free(w->index);
    free(w->low);
    free(w->cursor);
    free(w->path);
    free(w->stack);
    free(w->on_stack);
    free(w->on_path);
}

int kptx_find_cycles(kptx_analysis *an)
{
    size_t n = an->n_fns ? an->n_fns : 1;
    walk w = {.an = an};
    w.index = calloc(n, sizeof *w.index);
    w.low = calloc(n, sizeof *w.low);
    w.cursor = calloc(n, sizeof *w.cursor);
    w.path = calloc(n, sizeof *w.path);
    w.stack = calloc(n, sizeof *w.stack);
    w.on_stack = calloc(n, sizeof *w.on_stack);
    w.on_path = calloc(n, sizeof *w.on_path);
    an->order = calloc(n, sizeof *an->order);
    an->scc_end = calloc(n, sizeof *an->scc_end);
    bool ok = w.index && w.low && w.cursor && w.path && w.stack && w.on_stack && w.on_path &&
              an->order && an->scc_end;
    for (unsigned r = 0; ok && r < an->n_fns; r++) {
        if (w.index[r])
            continue;
        enter(&w, r);
        while (w.n_path)        /* each call edge is taken once: time O(functions + calls) */
            step(&w, an);
    }
    walk_free(&w);
    return ok ? 0 : KPTX_ENOMEM;
}
