/*
 * CUDA graphs inside libcuda (graph.c, graph_node.c, graph_exec.c, graph_capture.c).
 *
 * A graph is a list of nodes in creation order; each node holds what it does (an *op*)
 * and the nodes it depends on. Nothing of a graph reaches the daemon: launching an
 * executable graph replays its ops, in a topological order, as the ordinary stream work
 * they describe (each kernel node one launch record the daemon schedules and slices like
 * any other). Stream capture builds the same structures from the work enqueued on a
 * capturing stream, through one hook in each enqueueing path (kcu_capture_take).
 *
 * Graph objects are not locked: CUDA does not allow one graph to be used by several
 * threads at once either. Capture state is shared and locked (graph_capture.c).
 */
#ifndef KCU_GRAPH_INTERNAL_H
#define KCU_GRAPH_INTERNAL_H

#include "libcuda_internal.h"

#define KCU_MAGIC_GRAPH 0x6b636772u
#define KCU_MAGIC_NODE  0x6b636e64u
#define KCU_MAGIC_EXEC  0x6b636578u

/* A kernel launch with its parameters copied (as CUDA copies them at node creation). */
/* A launch's attributes beyond a plain launch (cuLaunchKernelEx, kernel node
 * attributes): thread-block clusters and cooperative launches. Zeroed: none. */
struct kcu_launch_attrs {
    unsigned cluster[3];            /* 0 or 1 each: no clusters */
    bool cooperative;
};

struct kcu_kernel_op {
    struct kcu_function *fn;
    unsigned grid[3], block[3], smem;
    uint8_t *params;                /* fn->param_bytes bytes */
    void **param_ptrs;              /* fn->n_params pointers into params (GetParams) */
    struct kcu_launch_attrs attrs;
};

struct kcu_memset_op {
    CUdeviceptr dst;
    size_t pitch, width, height;
    uint32_t value;
    unsigned elem_size;
};

struct kcu_host_op {
    CUhostFn fn;
    void *data;
};

/* What a node does; run on a stream by kcu_op_run. */
struct kcu_op {
    CUgraphNodeType type;
    union {
        struct kcu_kernel_op kernel;
        struct kcu_copy copy;       /* stream filled in at launch */
        struct kcu_memset_op memset;
        struct kcu_host_op host;
        struct kcu_event *event;    /* EVENT_RECORD, WAIT_EVENT */
    } u;
};

struct kcu_graph;

struct kcu_node {
    uint32_t magic;
    uint64_t id;                    /* unique in the process, never reused */
    struct kcu_graph *graph;
    size_t index;                   /* in graph->nodes (kept up to date by graph_edit.c) */
    struct kcu_op op;
    struct kcu_node **deps;         /* the nodes this one waits for */
    size_t n_deps, cap_deps;
    uint64_t mark;                  /* walks over the graph (graph.c) */
    uint64_t cloned_from;           /* id of the node it is a clone of, or 0 */
};

struct kcu_graph {
    uint32_t magic;
    struct kcu_node **nodes;        /* creation order */
    size_t n_nodes, cap_nodes;
};

/* ---- ops (graph_op.c) ---------------------------------------------------------------- */

/* A kernel op from launch arguments (checked and marshalled as a launch is). */
CUresult kcu_kernel_op_make(struct kcu_op *op, struct kcu_function *fn, const unsigned grid[3],
                            const unsigned block[3], unsigned smem, void **params,
                            void **extra);
/* A kernel op from an already marshalled parameter block. */
CUresult kcu_kernel_op_from_block(struct kcu_op *op, struct kcu_function *fn,
                                  const unsigned grid[3], const unsigned block[3],
                                  unsigned smem, const uint8_t *params);
/* A launch with attributes (none: kcu_launch), captured with them on a capturing
 * stream (launch.c). */
CUresult kcu_launch_with_attrs(struct kcu_function *f, const unsigned grid[3],
                               const unsigned block[3], unsigned smem, uint64_t stream,
                               void **params, void **extra, const struct kcu_launch_attrs *a);
/* A deep copy of src into dst. */
CUresult kcu_op_copy(struct kcu_op *dst, const struct kcu_op *src);
void kcu_op_free(struct kcu_op *op);
/* Queues the op's work on stream (a daemon handle). */
CUresult kcu_op_run(const struct kcu_op *op, uint64_t stream);

/* ---- graphs and nodes (graph.c, graph_node.c) ------------------------------------------ */

struct kcu_graph *kcu_graph_from(CUgraph g);
struct kcu_node *kcu_node_from(CUgraphNode n);
CUresult kcu_graph_new(struct kcu_graph **out);
void kcu_graph_free(struct kcu_graph *g);
/* Adds a node taking op (moved: the caller no longer owns it) after deps. */
CUresult kcu_graph_add(struct kcu_graph *g, struct kcu_op *op, struct kcu_node *const *deps,
                       size_t n_deps, struct kcu_node **out);
/* Adds the edge from -> to (to waits for from); refuses a cycle or a duplicate. */
CUresult kcu_node_add_dep(struct kcu_node *to, struct kcu_node *from);
/* Marks from[] and every node they depend on, directly or not, with a fresh generation
 * (node->mark == the value returned); 0 when out of memory. */
uint64_t kcu_graph_mark_ancestors(struct kcu_graph *g, struct kcu_node *const *from, size_t n);
/* Checks user-given edges from[i] -> to[i]: nodes of graph hGraph (*out), default edge
 * data. */
CUresult kcu_graph_check_pairs(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                               const CUgraphEdgeData *edges, size_t n, struct kcu_graph **out);
/* Checks user-given dependencies: all valid nodes of g, no duplicates. */
CUresult kcu_graph_check_deps(const struct kcu_graph *g, const CUgraphNode *deps, size_t n);
/* Edge data: only the default (a full dependency) is supported; NULL is the default. */
CUresult kcu_graph_check_edges(const CUgraphEdgeData *edges, size_t n);
/* A kernel op from node parameters (func, or kern when func is NULL). */
CUresult kcu_kernel_op_from_params(struct kcu_op *op, const CUDA_KERNEL_NODE_PARAMS *p);
/* A kernel op's parameters as CUDA hands them back (kernelParams: the op's own copy). */
void kcu_kernel_op_params(const struct kcu_op *op, CUDA_KERNEL_NODE_PARAMS *p);
/* Memcpy, memset and host ops from node parameters, checked as CUDA checks them. */
CUresult kcu_memcpy_op(struct kcu_op *op, const CUDA_MEMCPY3D *p);
CUresult kcu_memset_op(struct kcu_op *op, const CUDA_MEMSET_NODE_PARAMS *p);
CUresult kcu_host_op(struct kcu_op *op, const CUDA_HOST_NODE_PARAMS *p);
/* An op from the generic node parameters (cuGraphAddNode, cuGraph*NodeSetParams). */
CUresult kcu_op_from_node_params(struct kcu_op *op, const CUgraphNodeParams *p);
/* The index of n in its graph's node list. */
size_t kcu_node_index(const struct kcu_node *n);

/* ---- lanes: an executable graph's branches on streams of their own (graph_lanes.c) ---- */

struct kcu_lanes {
    unsigned n;                     /* lanes; lane 0 is the launch stream */
    size_t n_nodes;
    unsigned *of;                   /* lane of each node (graph order) */
    CUevent *done;                  /* per node: recorded after it when another lane waits */
    CUstream *streams;              /* private streams of lanes 1.. */
    CUevent *end;                   /* per lane 1..: recorded after it, for the join */
    CUevent start;                  /* recorded on the launch stream, for the fork */
};

/* Assigns lanes to g's nodes (order: a topological order) and makes their objects. */
CUresult kcu_lanes_plan(struct kcu_lanes *l, const struct kcu_graph *g, const size_t *order);
void kcu_lanes_free(struct kcu_lanes *l);
/* A launch on stream: fork, then for each node in order before (its lane's stream, waits
 * for dependencies on other lanes) and after (its event), then join. */
CUresult kcu_lanes_fork(const struct kcu_lanes *l, uint64_t stream);
CUresult kcu_lanes_before(const struct kcu_lanes *l, size_t node, const size_t *deps,
                          size_t n_deps, uint64_t stream, uint64_t *lane_stream);
CUresult kcu_lanes_after(const struct kcu_lanes *l, size_t node, uint64_t lane_stream);
CUresult kcu_lanes_join(const struct kcu_lanes *l, uint64_t stream);

/* ---- capture (graph_capture.c) ---------------------------------------------------------- */

/* Whether any capture is running (one atomic load: the fast path of every enqueue). */
bool kcu_capture_any(void);
/* If stream is capturing, adds op as a node of its capture (moving op) and sets *taken;
 * errors of an invalid or implicit capture as CUDA gives them. */
CUresult kcu_capture_take(uint64_t stream, struct kcu_op *op, bool *taken);
/* An event recorded on a capturing stream remembers the capture's position (*taken). */
CUresult kcu_capture_event_record(uint64_t stream, struct kcu_event *ev, bool *taken);
/* A wait for a captured event joins stream to the capture (*taken). */
CUresult kcu_capture_stream_wait(uint64_t stream, struct kcu_event *ev, unsigned flags,
                                 bool *taken);
/* Before a synchronisation or query of stream: refused while it is capturing. */
CUresult kcu_capture_check_stream(uint64_t stream);
/* Work that cannot be captured here (memory nodes): on a capturing stream, named in the
 * log as unsupported, refused with CUDA's capture error, the capture invalidated. */
CUresult kcu_capture_refuse(uint64_t stream, const char *what);
/* Before a synchronisation or query of an event: refused while its record is captured. */
CUresult kcu_capture_check_event(const struct kcu_event *ev);
/* Before a call CUDA deems unsafe during capture (synchronous copies, context sync). */
CUresult kcu_capture_check_unsafe(void);
/* A destroyed event leaves any capture. */
void kcu_capture_forget_event(const struct kcu_event *ev);
/* A destroyed stream leaves its capture; a capture whose origin stream is destroyed ends
 * (its graph freed). */
void kcu_capture_forget_stream(uint64_t stream);
/* Whether stream is capturing (or in an invalidated capture not yet ended). */
bool kcu_capture_stream_captures(uint64_t stream);
/* What cuStreamGetCaptureInfo reports for stream (outputs may be NULL). */
CUresult kcu_capture_info(uint64_t stream, CUstreamCaptureStatus *status, cuuint64_t *id,
                          CUgraph *graph, const CUgraphNode **deps,
                          const CUgraphEdgeData **edges, size_t *n);

#endif
