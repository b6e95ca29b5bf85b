/*
 * Lanes: the streams an executable graph's launch spreads its independent branches over,
 * so that they can run concurrently as they would on a GPU.
 *
 * Lane 0 is the launch stream; lanes 1.. are private non-blocking streams of the
 * executable graph. At instantiation each node (in topological order) continues the lane
 * of a dependency that is the last node of its lane, or opens a new lane (at most
 * KCU_MAX_LANES; beyond that it shares its first dependency's lane). Any assignment is
 * correct: nodes are queued in one topological order, so a dependency on the same lane is
 * queued before its dependent, and a dependency on another lane is waited for through an
 * event recorded right after it. A launch forks the lanes from the launch stream with one
 * event and joins them back with one event per lane, so the launch stream's later work
 * follows the whole graph, as CUDA orders it. A chain of nodes (a graph captured from one
 * stream) uses lane 0 alone and costs nothing more.
 *
 * Events and waits go through the capture hooks, so a graph launched into a capturing
 * stream forks and joins that capture like any multi-stream program.
 */
#include <stdlib.h>

#include "graph_internal.h"

#define KCU_MAX_LANES 8
#define NONE ((size_t)-1)

/* The lane each node continues or opens (of[i]), and how many lanes there are. */
static unsigned assign(const struct kcu_graph *g, const size_t *order, unsigned *of)
{
    size_t tail[KCU_MAX_LANES];
    unsigned n = 0;

    for (size_t k = 0; k < g->n_nodes; k++) {
        const struct kcu_node *v = g->nodes[order[k]];
        unsigned lane = KCU_MAX_LANES;
        for (size_t j = 0; j < v->n_deps && lane == KCU_MAX_LANES; j++) {
            size_t d = kcu_node_index(v->deps[j]);
            if (tail[of[d]] == d)
                lane = of[d];
        }
        if (lane == KCU_MAX_LANES)
            lane = n < KCU_MAX_LANES ? n++ : v->n_deps ? of[kcu_node_index(v->deps[0])] : 0;
        of[order[k]] = lane;
        tail[lane] = order[k];
    }
    return n;
}

static CUresult new_event(CUevent *e)
{
    return cuEventCreate(e, CU_EVENT_DISABLE_TIMING);
}

/* Private streams for lanes 1.., an end event for each, the fork event, and an event for
 * every node that a node of another lane waits for. */
static CUresult make_objects(struct kcu_lanes *l, const struct kcu_graph *g)
{
    CUresult r = CUDA_SUCCESS;

    if (l->n > 1)
        r = new_event(&l->start);
    for (unsigned i = 1; i < l->n && r == CUDA_SUCCESS; i++)
        if ((r = cuStreamCreate(&l->streams[i], CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS)
            r = new_event(&l->end[i]);
    for (size_t v = 0; v < g->n_nodes && r == CUDA_SUCCESS; v++)
        for (size_t j = 0; j < g->nodes[v]->n_deps && r == CUDA_SUCCESS; j++) {
            size_t d = kcu_node_index(g->nodes[v]->deps[j]);
            if (l->of[d] != l->of[v] && !l->done[d])
                r = new_event(&l->done[d]);
        }
    return r;
}

CUresult kcu_lanes_plan(struct kcu_lanes *l, const struct kcu_graph *g, const size_t *order)
{
    size_t n = g->n_nodes + 1;
    CUresult r;

    *l = (struct kcu_lanes){0};
    l->n_nodes = g->n_nodes;
    if (!(l->of = calloc(n, sizeof(*l->of))) || !(l->done = calloc(n, sizeof(*l->done))) ||
        !(l->streams = calloc(KCU_MAX_LANES, sizeof(*l->streams))) ||
        !(l->end = calloc(KCU_MAX_LANES, sizeof(*l->end))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->n = assign(g, order, l->of);
    if ((r = make_objects(l, g)) != CUDA_SUCCESS)
        kcu_lanes_free(l);
    return r;
}

void kcu_lanes_free(struct kcu_lanes *l)
{
    for (size_t i = 0; l->done && i < l->n_nodes; i++)
        if (l->done[i])
            cuEventDestroy(l->done[i]);
    for (unsigned i = 1; i < l->n; i++) {
        if (l->streams && l->streams[i])
            cuStreamDestroy(l->streams[i]);
        if (l->end && l->end[i])
            cuEventDestroy(l->end[i]);
    }
    if (l->start)
        cuEventDestroy(l->start);
    free(l->of);
    free(l->done);
    free(l->streams);
    free(l->end);
    *l = (struct kcu_lanes){0};
}

/* The daemon handle of a lane during a launch on stream. */
static uint64_t lane_handle(const struct kcu_lanes *l, unsigned lane, uint64_t stream)
{
    return lane ? ((struct kcu_stream *)l->streams[lane])->handle : stream;
}

CUresult kcu_lanes_fork(const struct kcu_lanes *l, uint64_t stream)
{
    CUresult r = CUDA_SUCCESS;

    if (l->n > 1)
        r = kcu_event_record_stream(kcu_event_from(l->start), stream);
    for (unsigned i = 1; i < l->n && r == CUDA_SUCCESS; i++)
        r = kcu_stream_wait_event(lane_handle(l, i, stream), kcu_event_from(l->start), 0);
    return r;
}

CUresult kcu_lanes_before(const struct kcu_lanes *l, size_t node, const size_t *deps,
                          size_t n_deps, uint64_t stream, uint64_t *lane_stream)
{
    unsigned lane = l->of[node];
    CUresult r = CUDA_SUCCESS;

    *lane_stream = lane_handle(l, lane, stream);
    for (size_t j = 0; j < n_deps && r == CUDA_SUCCESS; j++)
        if (l->of[deps[j]] != lane)
            r = kcu_stream_wait_event(*lane_stream, kcu_event_from(l->done[deps[j]]), 0);
    return r;
}

CUresult kcu_lanes_after(const struct kcu_lanes *l, size_t node, uint64_t lane_stream)
{
    return l->done[node] ? kcu_event_record_stream(kcu_event_from(l->done[node]), lane_stream)
                         : CUDA_SUCCESS;
}

CUresult kcu_lanes_join(const struct kcu_lanes *l, uint64_t stream)
{
    CUresult r = CUDA_SUCCESS;

    for (unsigned i = 1; i < l->n && r == CUDA_SUCCESS; i++)
        if ((r = kcu_event_record_stream(kcu_event_from(l->end[i]),
                                         lane_handle(l, i, stream))) == CUDA_SUCCESS)
            r = kcu_stream_wait_event(stream, kcu_event_from(l->end[i]), 0);
    return r;
}
