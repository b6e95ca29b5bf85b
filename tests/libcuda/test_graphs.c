/* CUDA graphs in the guest libcuda, against a kerneletd server in this process (sim
 * backend: copies and memsets really move bytes, kernels are only timed, so results are
 * checked through copy, memset and host nodes; bench/compat/graphs.cu checks kernels on
 * the emulator). Explicit graphs, stream capture across streams joined by events,
 * instantiation, launch, updates, and CUDA's errors for every misuse. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "../proto/server_harness.h"

static struct harness *H;
static CUmodule mod;
static CUfunction k_add;

#define CU(call) g_assert_cmpint((call), ==, CUDA_SUCCESS)
#define CU_ERR(call, err) g_assert_cmpint((call), ==, (err))

#define N 4096

static void setup(void)
{
    CUcontext ctx;

    CU(cuInit(0));
    CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU(cuCtxSetCurrent(ctx));
    CU(cuModuleLoadData(&mod, harness_ptx));
    CU(cuModuleGetFunction(&k_add, mod, "k_add"));
}

static void expect_bytes(CUdeviceptr d, uint8_t v)
{
    uint8_t back[N];

    CU(cuMemcpyDtoH(back, d, N));
    for (size_t i = 0; i < N; i++)
        if (back[i] != v)
            g_error("byte %zu is %u, expected %u", i, back[i], v);
}

static size_t count_nodes(CUgraph g)
{
    size_t n = 0;

    CU(cuGraphGetNodes(g, NULL, &n));
    return n;
}

/* How often a host node ran. */
struct host_log {
    int calls;
};

static void host_node(void *arg)
{
    ((struct host_log *)arg)->calls++;
}

/* A host function that blocks its stream until the test opens the gate. */
struct gate {
    GMutex lock;
    GCond cond;
    bool open;
};

static void gate_wait(void *arg)
{
    struct gate *g = arg;

    g_mutex_lock(&g->lock);
    while (!g->open)
        g_cond_wait(&g->cond, &g->lock);
    g_mutex_unlock(&g->lock);
}

static void callback(CUstream s, CUresult r, void *arg)
{
    (void)s;
    (void)r;
    host_node(arg);
}

static CUDA_MEMCPY3D dtod(CUdeviceptr dst, CUdeviceptr src)
{
    CUDA_MEMCPY3D p;

    memset(&p, 0, sizeof(p));
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = src;
    p.dstDevice = dst;
    p.WidthInBytes = N;
    p.Height = p.Depth = 1;
    return p;
}

static CUDA_MEMSET_NODE_PARAMS fill8(CUdeviceptr d, uint8_t v)
{
    return (CUDA_MEMSET_NODE_PARAMS){.dst = d, .value = v, .elementSize = 1, .width = N,
                                     .height = 1};
}

/* Adds "set a to v" and, after it, "copy a to b" to g. */
static void add_set_copy(CUgraph g, CUdeviceptr a, uint8_t v, CUdeviceptr b, CUgraphNode *set,
                         CUgraphNode *copy)
{
    CUDA_MEMSET_NODE_PARAMS ms = fill8(a, v);
    CUDA_MEMCPY3D cp = dtod(b, a);

    CU(cuGraphAddMemsetNode(set, g, NULL, 0, &ms, NULL));
    CU(cuGraphAddMemcpyNode(copy, g, set, 1, &cp, NULL));
}

static CUDA_KERNEL_NODE_PARAMS add_params(void **args)
{
    return (CUDA_KERNEL_NODE_PARAMS){.func = k_add, .gridDimX = 4, .gridDimY = 1,
                                     .gridDimZ = 1, .blockDimX = 256, .blockDimY = 1,
                                     .blockDimZ = 1, .kernelParams = args};
}

/* memset(a) -> copy a to b -> host; memset(a) -> kernel; an empty node after both. */
static void test_explicit(void)
{
    CUgraph g;
    CUgraphExec x;
    CUgraphNode set, copy, host, kern, empty, nodes[8], roots[8];
    CUdeviceptr a, b;
    CUstream s;
    struct host_log log = {0};
    unsigned n = N / 4, v = 5;
    void *args[] = {&a, &n, &v};
    CUDA_MEMSET_NODE_PARAMS ms;
    CUDA_HOST_NODE_PARAMS hp = {.fn = host_node, .userData = &log};
    CUDA_KERNEL_NODE_PARAMS kp, got;
    CUgraphNodeType type;
    size_t count;

    CU(cuMemAlloc(&a, N));
    CU(cuMemAlloc(&b, N));
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuGraphCreate(&g, 0));
    add_set_copy(g, a, 7, b, &set, &copy);
    CU(cuGraphAddHostNode(&host, g, &copy, 1, &hp));
    kp = add_params(args);
    CU(cuGraphAddKernelNode(&kern, g, &set, 1, &kp));
    CUgraphNode both[] = {host, kern};
    CU(cuGraphAddEmptyNode(&empty, g, both, 2));

    /* Parameters were copied when the node was made, as CUDA does. */
    v = 99;
    CU(cuGraphKernelNodeGetParams(kern, &got));
    g_assert_true(got.func == k_add);
    g_assert_cmpuint(got.gridDimX, ==, 4);
    g_assert_cmpuint(*(unsigned *)got.kernelParams[2], ==, 5);
    v = 6;
    CU(cuGraphKernelNodeSetParams(kern, &kp));
    CU(cuGraphKernelNodeGetParams(kern, &got));
    g_assert_cmpuint(*(unsigned *)got.kernelParams[2], ==, 6);

    count = 8;
    CU(cuGraphGetNodes(g, nodes, &count));
    g_assert_cmpuint(count, ==, 5);
    g_assert_true(nodes[0] == set && nodes[4] == empty);
    count = 8;
    CU(cuGraphGetRootNodes(g, roots, &count));
    g_assert_cmpuint(count, ==, 1);
    g_assert_true(roots[0] == set);
    CU(cuGraphNodeGetType(copy, &type));
    g_assert_cmpint(type, ==, CU_GRAPH_NODE_TYPE_MEMCPY);
    CU(cuGraphNodeGetType(host, &type));
    g_assert_cmpint(type, ==, CU_GRAPH_NODE_TYPE_HOST);
    count = 0;
    CU(cuGraphNodeGetDependencies(empty, NULL, NULL, &count));
    g_assert_cmpuint(count, ==, 2);
    count = 8;
    CU(cuGraphNodeGetDependentNodes(set, nodes, NULL, &count));
    g_assert_cmpuint(count, ==, 2);
    g_assert_true(nodes[0] == copy && nodes[1] == kern && nodes[2] == NULL);
    CUgraphNode from[8], to[8];
    count = 0;
    CU(cuGraphGetEdges(g, NULL, NULL, NULL, &count));
    g_assert_cmpuint(count, ==, 5);
    count = 3; /* fewer than there are: as many as asked */
    CU(cuGraphGetEdges(g, from, to, NULL, &count));
    g_assert_cmpuint(count, ==, 3);
    g_assert_true(from[0] == set && to[0] == copy && from[2] == set && to[2] == kern);

    /* A DOT picture: a line per node, one per edge. */
    gchar *dot = g_build_filename(g_get_tmp_dir(), "kcu-test-graph.dot", NULL), *text;
    CU(cuGraphDebugDotPrint(g, dot, 0));
    g_assert_true(g_file_get_contents(dot, &text, NULL, NULL));
    g_assert_nonnull(strstr(text, "kernel k_add"));
    g_assert_nonnull(strstr(text, "n0 -> n1;"));
    g_assert_nonnull(strstr(text, "n3 -> n4;"));
    g_unlink(dot);
    g_free(text);
    g_free(dot);
    CU_ERR(cuGraphDebugDotPrint(g, "/nonexistent/dir/x.dot", 0), CUDA_ERROR_OPERATING_SYSTEM);
    CU(cuGraphInstantiate(&x, g, 0));
    CU(cuGraphUpload(x, s));
    /* The graph may change after instantiation: the executable graph keeps its copy. */
    ms = fill8(a, 1);
    CUgraphNode later;
    CU(cuGraphAddMemsetNode(&later, g, &empty, 1, &ms, NULL));
    for (int i = 0; i < 3; i++)
        CU(cuGraphLaunch(x, s));
    CU(cuStreamSynchronize(s));
    g_assert_cmpint(log.calls, ==, 3);
    expect_bytes(b, 7);
    expect_bytes(a, 7);
    CU(cuGraphExecDestroy(x));
    CU(cuGraphDestroy(g));
    CU(cuStreamDestroy(s));
    CU(cuMemFree(a));
    CU(cuMemFree(b));
}

/* Independent branches (more than the library's lanes): a memset fans out to 12 copies,
 * each into its own buffer, a copy waits for all of them, and the launch stream's later
 * work must see the whole graph done. Each launch first clears every target. */
static void test_branches(void)
{
    enum { W = 12 };
    CUgraph g;
    CUgraphExec x;
    CUgraphNode root, fan[W], join;
    CUdeviceptr a, t[W], out;
    CUstream s;
    CUDA_MEMSET_NODE_PARAMS ms;
    CUDA_MEMCPY3D cp;

    CU(cuMemAlloc(&a, N));
    CU(cuMemAlloc(&out, N));
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuGraphCreate(&g, 0));
    ms = fill8(a, 0);
    CU(cuGraphAddMemsetNode(&root, g, NULL, 0, &ms, NULL));
    for (int i = 0; i < W; i++) {
        CU(cuMemAlloc(&t[i], N));
        cp = dtod(t[i], a);
        CU(cuGraphAddMemcpyNode(&fan[i], g, &root, 1, &cp, NULL));
    }
    cp = dtod(out, t[W - 1]);
    CU(cuGraphAddMemcpyNode(&join, g, fan, W, &cp, NULL));
    CU(cuGraphInstantiate(&x, g, 0));
    for (uint8_t v = 1; v <= 3; v++) {
        ms = fill8(a, v);
        CU(cuGraphExecMemsetNodeSetParams(x, root, &ms, NULL));
        CU(cuMemsetD8Async(out, 0, N, s));
        for (int i = 0; i < W; i++)
            CU(cuMemsetD8Async(t[i], 0, N, s));
        CU(cuGraphLaunch(x, s));
        CU(cuMemsetD8Async(a, 0xee, N, s)); /* after the graph, on the launch stream */
        CU(cuStreamSynchronize(s));
        expect_bytes(out, v);
        for (int i = 0; i < W; i++)
            expect_bytes(t[i], v);
        expect_bytes(a, 0xee);
    }
    CU(cuGraphExecDestroy(x));
    CU(cuGraphDestroy(g));
    CU(cuStreamDestroy(s));
    for (int i = 0; i < W; i++)
        CU(cuMemFree(t[i]));
    CU(cuMemFree(a));
    CU(cuMemFree(out));
}

/* Opens the gate after 100 ms, from another thread. */
static gpointer open_later(gpointer arg)
{
    struct gate *g = arg;

    g_usleep(100000);
    g_mutex_lock(&g->lock);
    g->open = true;
    g_cond_broadcast(&g->cond);
    g_mutex_unlock(&g->lock);
    return NULL;
}

/* A launch waits for the previous launch of the same executable graph, on whatever
 * stream. The graph copies a to b, then c (7) to a; a starts at 1. The first launch's
 * stream is held by a host function until another thread opens it; the second launch, on
 * another stream, must come after the first: b is 7 once its stream is done (1 if it
 * had run first). Events and streams destroyed during a capture leave it. */
static void test_launch_order_and_lifetimes(void)
{
    CUgraph g, g2;
    CUgraphExec x;
    CUgraphNode copy1, copy2;
    CUdeviceptr a, b, c;
    CUstream s1, s2;
    CUevent e;
    CUstreamCaptureStatus st;
    struct gate gate = {.open = false};
    CUDA_MEMCPY3D cp;

    CU(cuMemAlloc(&a, N));
    CU(cuMemAlloc(&b, N));
    CU(cuMemAlloc(&c, N));
    CU(cuMemsetD8(a, 1, N));
    CU(cuMemsetD8(c, 7, N));
    CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CU(cuGraphCreate(&g, 0));
    cp = dtod(b, a);
    CU(cuGraphAddMemcpyNode(&copy1, g, NULL, 0, &cp, NULL));
    cp = dtod(a, c);
    CU(cuGraphAddMemcpyNode(&copy2, g, &copy1, 1, &cp, NULL));
    CU(cuGraphInstantiate(&x, g, 0));
    g_mutex_init(&gate.lock);
    g_cond_init(&gate.cond);
    CU(cuLaunchHostFunc(s1, gate_wait, &gate));
    CU(cuGraphLaunch(x, s1));
    CU(cuGraphLaunch(x, s2));
    /* Read back on s2 itself: a legacy-stream copy would wait for the host function. */
    uint8_t *back;
    CU(cuMemAllocHost((void **)&back, N));
    CU(cuMemcpyDtoHAsync(back, b, N, s2));
    GThread *t = g_thread_new("open", open_later, &gate);
    CU(cuStreamSynchronize(s2));
    for (size_t i = 0; i < N; i++)
        if (back[i] != 7)
            g_error("b[%zu] is %u: the second launch ran before the first", i, back[i]);
    g_thread_join(t);
    CU(cuMemFreeHost(back));
    CU(cuStreamSynchronize(s1));
    g_mutex_clear(&gate.lock);
    g_cond_clear(&gate.cond);

    /* A destroyed event leaves the capture (a new one may reuse its address). */
    CU(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuEventCreate(&e, 0));
    CU(cuEventRecord(e, s1));
    CU(cuEventDestroy(e));
    CU(cuEventCreate(&e, 0));
    CU(cuEventQuery(e));
    CU(cuEventDestroy(e));
    /* A destroyed forked stream spoils the capture; a destroyed origin ends it. */
    CUstream s3;
    CU(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&e, 0));
    CU(cuEventRecord(e, s1));
    CU(cuStreamWaitEvent(s3, e, 0));
    CU(cuStreamDestroy(s3));
    CU_ERR(cuStreamEndCapture(s1, &g2), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CU(cuStreamBeginCapture(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuStreamDestroy(s2));
    CU(cuStreamIsCapturing(s1, &st));
    g_assert_cmpint(st, ==, CU_STREAM_CAPTURE_STATUS_NONE);
    CU(cuCtxSynchronize()); /* no capture left to forbid it */
    CU(cuEventDestroy(e));
    CU(cuGraphExecDestroy(x));
    CU(cuGraphDestroy(g));
    CU(cuStreamDestroy(s1));
    CU(cuMemFree(a));
    CU(cuMemFree(b));
    CU(cuMemFree(c));
}

/* A clone launches like the original (after nodes were added to it and destroyed again);
 * a launch on the legacy stream works too. */
static void test_clone(void)
{
    CUgraph g, c;
    CUgraphExec x;
    CUgraphNode set, copy;
    CUdeviceptr a, b;

    CU(cuMemAlloc(&a, N));
    CU(cuMemAlloc(&b, N));
    CU(cuGraphCreate(&g, 0));
    add_set_copy(g, a, 3, b, &set, &copy);
    CU(cuGraphClone(&c, g));
    CUgraphNode in_clone, stray, extra;
    CUgraphNodeType type;
    CU(cuGraphNodeFindInClone(&in_clone, copy, c));
    CU(cuGraphNodeGetType(in_clone, &type));
    g_assert_cmpint(type, ==, CU_GRAPH_NODE_TYPE_MEMCPY);
    g_assert_true(in_clone != copy);
    CU_ERR(cuGraphNodeFindInClone(&in_clone, copy, g), CUDA_ERROR_INVALID_VALUE);
    /* Editing: an extra node with an edge, the edge removed, the node destroyed. */
    CU(cuGraphAddEmptyNode(&stray, c, NULL, 0));
    CU(cuGraphAddEmptyNode(&extra, c, &stray, 1));
    CU_ERR(cuGraphRemoveDependencies(c, &extra, &stray, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU(cuGraphRemoveDependencies(c, &stray, &extra, NULL, 1));
    CU_ERR(cuGraphRemoveDependencies(c, &stray, &extra, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU(cuGraphAddDependencies(c, &in_clone, &stray, NULL, 1));
    CU(cuGraphAddDependencies(c, &stray, &extra, NULL, 1));
    CU(cuGraphDestroyNode(stray));
    size_t deps = 9;
    CU(cuGraphNodeGetDependencies(extra, NULL, NULL, &deps));
    g_assert_cmpuint(deps, ==, 0);
    CU(cuGraphDestroyNode(extra));
    CU(cuGraphDestroy(g));
    g_assert_cmpuint(count_nodes(c), ==, 2);
    CU(cuGraphInstantiateWithFlags(&x, c, 0));
    CU(cuGraphLaunch(x, NULL));
    CU(cuCtxSynchronize());
    expect_bytes(b, 3);
    CU(cuGraphExecDestroy(x));
    CU(cuGraphDestroy(c));
    CU(cuMemFree(a));
    CU(cuMemFree(b));
}

/* Everything from the caller is checked: CUDA's error codes, never a crash. */
static void test_explicit_errors(void)
{
    CUgraph g, other;
    CUgraphNode n1, n2, foreign, e;
    CUgraphExec x;
    CUdeviceptr a;
    unsigned n = 1, v = 1;
    void *args[] = {&a, &n, &v};
    CUDA_KERNEL_NODE_PARAMS kp;
    CUDA_MEMSET_NODE_PARAMS ms;
    CUDA_MEMCPY3D cp;
    int junk = 0;

    CU(cuMemAlloc(&a, N));
    CU_ERR(cuGraphCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphCreate(&g, 1), CUDA_ERROR_INVALID_VALUE);
    CU(cuGraphCreate(&g, 0));
    CU(cuGraphCreate(&other, 0));
    CU(cuGraphAddEmptyNode(&n1, g, NULL, 0));
    CU(cuGraphAddEmptyNode(&n2, g, &n1, 1));
    CU(cuGraphAddEmptyNode(&foreign, other, NULL, 0));
    CU_ERR(cuGraphAddEmptyNode(NULL, g, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddEmptyNode(&e, (CUgraph)&junk, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddEmptyNode(&e, g, &foreign, 1), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddEmptyNode(&e, g, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CUgraphNode twice[] = {n1, n1};
    CU_ERR(cuGraphAddEmptyNode(&e, g, twice, 2), CUDA_ERROR_INVALID_VALUE);
    /* A cycle, a duplicate edge, an edge to another graph. */
    CU_ERR(cuGraphAddDependencies(g, &n2, &n1, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddDependencies(g, &n1, &n2, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddDependencies(g, &n1, &foreign, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddDependencies(g, &n2, &n2, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    /* Kernel nodes: bad function, shape, missing parameters. */
    kp = add_params(args);
    kp.func = (CUfunction)&junk;
    CU_ERR(cuGraphAddKernelNode(&e, g, NULL, 0, &kp), CUDA_ERROR_INVALID_VALUE);
    kp = add_params(args);
    kp.blockDimX = 1 << 20;
    CU_ERR(cuGraphAddKernelNode(&e, g, NULL, 0, &kp), CUDA_ERROR_INVALID_VALUE);
    kp = add_params(NULL);
    CU_ERR(cuGraphAddKernelNode(&e, g, NULL, 0, &kp), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddKernelNode(&e, g, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphKernelNodeGetParams(n1, &kp), CUDA_ERROR_INVALID_VALUE);
    /* Memsets and copies outside allocations, bad element sizes. */
    ms = fill8(a + 1, 0);
    CU_ERR(cuGraphAddMemsetNode(&e, g, NULL, 0, &ms, NULL), CUDA_ERROR_INVALID_VALUE);
    ms = fill8(a, 0);
    ms.elementSize = 3;
    CU_ERR(cuGraphAddMemsetNode(&e, g, NULL, 0, &ms, NULL), CUDA_ERROR_INVALID_VALUE);
    cp = dtod(a + 8, a);
    CU_ERR(cuGraphAddMemcpyNode(&e, g, NULL, 0, &cp, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddHostNode(&e, g, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddEventRecordNode(&e, g, NULL, 0, (CUevent)&junk), CUDA_ERROR_INVALID_VALUE);
    /* Queries and instantiation. */
    CU_ERR(cuGraphGetNodes(g, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphNodeGetType((CUgraphNode)&junk, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphInstantiate(NULL, g, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphInstantiate(&x, (CUgraph)&junk, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphInstantiate(&x, g, 1ull << 40), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphLaunch((CUgraphExec)&junk, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphExecDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
    CU(cuGraphInstantiate(&x, g, 0));
    CU_ERR(cuGraphLaunch(x, (CUstream)&junk), CUDA_ERROR_INVALID_HANDLE);
    CU_ERR(cuGraphExecKernelNodeSetParams(x, n1, &kp), CUDA_ERROR_INVALID_VALUE);
    CU(cuGraphExecDestroy(x));
    g_assert_cmpuint(count_nodes(g), ==, 2); /* refused nodes left nothing behind */
    CU(cuGraphDestroy(g));
    CU(cuGraphDestroy(other));
    CU_ERR(cuGraphDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
    CU(cuMemFree(a));
}

/* The generic cuGraphAddNode: each supported type, refused parameters and types, edge
 * data; an empty graph instantiates and launches. */
static void test_generic_add(void)
{
    CUgraph g, empty;
    CUgraphExec x;
    CUgraphNode set, copy, kern, nodes[4];
    CUdeviceptr a, b;
    CUgraphNodeParams p;
    CUgraphEdgeData edge = {.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC};
    unsigned n = N / 4, v = 1;
    void *args[] = {&a, &n, &v};
    CUDA_KERNEL_NODE_PARAMS kp = add_params(args);
    size_t count = 4;

    CU(cuMemAlloc(&a, N));
    CU(cuMemAlloc(&b, N));
    CU(cuGraphCreate(&g, 0));
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_MEMSET;
    p.memset.dst = a;
    p.memset.value = 0x42;
    p.memset.elementSize = 1;
    p.memset.width = N;
    p.memset.height = 1;
    CU(cuGraphAddNode(&set, g, NULL, NULL, 0, &p));
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    p.memcpy.copyParams = dtod(b, a);
    CU(cuGraphAddNode(&copy, g, &set, NULL, 1, &p));
    CU_ERR(cuGraphAddNode(&kern, g, &copy, &edge, 1, &p), CUDA_ERROR_NOT_SUPPORTED);
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_KERNEL;
    memcpy(&p.kernel, &kp, sizeof(kp));
    CU(cuGraphAddNode(&kern, g, &copy, NULL, 1, &p));
    p.type = CU_GRAPH_NODE_TYPE_GRAPH;
    CU_ERR(cuGraphAddNode(&kern, g, NULL, NULL, 0, &p), CUDA_ERROR_NOT_SUPPORTED);
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_HOST; /* without a function */
    CU_ERR(cuGraphAddNode(&kern, g, NULL, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddNode(&kern, g, NULL, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU(cuGraphGetNodes(g, nodes, &count));
    g_assert_cmpuint(count, ==, 3);
    CU(cuGraphInstantiate(&x, g, 0));
    CU(cuGraphLaunch(x, NULL));
    CU(cuCtxSynchronize());
    expect_bytes(b, 0x42);
    /* The generic set-params forms, on the executable graph and on the graph. */
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_MEMSET;
    p.memset.dst = a;
    p.memset.value = 0x17;
    p.memset.elementSize = 1;
    p.memset.width = N;
    p.memset.height = 1;
    CU(cuGraphExecNodeSetParams(x, set, &p));
    CU_ERR(cuGraphExecNodeSetParams(x, copy, &p), CUDA_ERROR_INVALID_VALUE); /* wrong type */
    CU(cuGraphLaunch(x, NULL));
    CU(cuCtxSynchronize());
    expect_bytes(b, 0x17);
    CU(cuGraphNodeSetParams(set, &p));
    CU_ERR(cuGraphNodeSetParams(kern, &p), CUDA_ERROR_INVALID_VALUE);
    CU(cuGraphExecDestroy(x));
    /* Capture into this graph, after the copy node: a memset of b (0x99) after the copy. */
    CUstream cs;
    CUgraph same = NULL;
    CU(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    CU_ERR(cuStreamBeginCaptureToGraph(cs, g, &nodes[0], NULL, 1, (CUstreamCaptureMode)9),
           CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuStreamBeginCaptureToGraph(cs, g, &kern, &edge, 1, CU_STREAM_CAPTURE_MODE_GLOBAL),
           CUDA_ERROR_NOT_SUPPORTED);
    CU(cuStreamBeginCaptureToGraph(cs, g, &copy, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuMemsetD8Async(b, 0x99, N, cs));
    CU(cuStreamEndCapture(cs, &same));
    g_assert_true(same == g);
    count = 4;
    CU(cuGraphGetNodes(g, nodes, &count));
    g_assert_cmpuint(count, ==, 4);
    size_t nd = 4;
    CUgraphNode deps[4];
    CU(cuGraphNodeGetDependencies(nodes[3], deps, NULL, &nd));
    g_assert_cmpuint(nd, ==, 1);
    g_assert_true(deps[0] == copy);
    CU(cuGraphInstantiate(&x, g, 0));
    CU(cuGraphLaunch(x, cs));
    CU(cuStreamSynchronize(cs));
    expect_bytes(b, 0x99);
    CU(cuGraphExecDestroy(x));
    /* An invalidated capture into a caller's graph leaves the graph alive. */
    CU(cuStreamBeginCaptureToGraph(cs, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_ERR(cuStreamSynchronize(cs), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_ERR(cuStreamEndCapture(cs, &same), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    g_assert_cmpuint(count_nodes(g), ==, 4);
    CU(cuStreamDestroy(cs));
    CU(cuGraphCreate(&empty, 0));
    CU(cuGraphInstantiate(&x, empty, 0));
    CU(cuGraphLaunch(x, NULL));
    CU(cuCtxSynchronize());
    CU(cuGraphExecDestroy(x));
    CU(cuGraphDestroy(empty));
    CU(cuGraphDestroy(g));
    CU(cuMemFree(a));
    CU(cuMemFree(b));
}

/* Stream capture over two streams forked and joined by events: s1 sets a, s2 copies a to
 * b, s1 waits for s2 and copies b to c. Nothing runs while capturing; each launch does. */
static void test_capture_fork_join(void)
{
    CUstream s1, s2;
    CUevent fork, joined;
    CUgraph g, cg;
    CUgraphExec x;
    CUdeviceptr a, b, c;
    CUstreamCaptureStatus st;
    cuuint64_t id = 0, id2 = 0;
    const CUgraphNode *deps;
    size_t nd = 0, count;
    CUgraphNode roots[4];

    CU(cuMemAlloc(&a, N));
    CU(cuMemAlloc(&b, N));
    CU(cuMemAlloc(&c, N));
    CU(cuMemsetD8(a, 0, N));
    CU(cuMemsetD8(b, 0, N));
    CU(cuMemsetD8(c, 0, N));
    CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CU(cuEventCreate(&joined, CU_EVENT_DISABLE_TIMING));

    CU(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuStreamIsCapturing(s1, &st));
    g_assert_cmpint(st, ==, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU(cuStreamIsCapturing(s2, &st));
    g_assert_cmpint(st, ==, CU_STREAM_CAPTURE_STATUS_NONE);
    CU(cuMemsetD8Async(a, 9, N, s1));
    CU(cuEventRecord(fork, s1));
    CU(cuStreamWaitEvent(s2, fork, 0));
    CU(cuStreamIsCapturing(s2, &st));
    g_assert_cmpint(st, ==, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU(cuStreamGetCaptureInfo(s1, &st, &id, &cg, &deps, NULL, &nd));
    CU(cuStreamGetCaptureInfo(s2, &st, &id2, NULL, NULL, NULL, NULL));
    g_assert_cmpuint(id, !=, 0);
    g_assert_cmpuint(id, ==, id2);
    g_assert_cmpuint(nd, ==, 1);
    CU(cuMemcpyDtoDAsync(b, a, N, s2));
    CU(cuEventRecord(joined, s2));
    CU(cuStreamWaitEvent(s1, joined, 0));
    CU(cuMemcpyDtoDAsync(c, b, N, s1));
    CU(cuStreamEndCapture(s1, &g));
    g_assert_true(g == cg);
    CU(cuStreamIsCapturing(s2, &st));
    g_assert_cmpint(st, ==, CU_STREAM_CAPTURE_STATUS_NONE);

    expect_bytes(c, 0); /* captured, not run */
    g_assert_cmpuint(count_nodes(g), ==, 3);
    count = 4;
    CU(cuGraphGetRootNodes(g, roots, &count));
    g_assert_cmpuint(count, ==, 1);
    CU(cuGraphInstantiate(&x, g, 0));
    CU(cuMemsetD8(c, 1, N));
    CU(cuGraphLaunch(x, s2));
    CU(cuGraphLaunch(x, s2));
    CU(cuStreamSynchronize(s2));
    expect_bytes(c, 9);
    expect_bytes(b, 9);
    CU(cuGraphExecDestroy(x));
    CU(cuGraphDestroy(g));
    CU(cuEventDestroy(fork));
    CU(cuEventDestroy(joined));
    CU(cuStreamDestroy(s1));
    CU(cuStreamDestroy(s2));
    CU(cuMemFree(a));
    CU(cuMemFree(b));
    CU(cuMemFree(c));
}

/* Kernels, host functions and per-thread-stream capture; a launched graph inside a
 * capture is captured node by node. */
static void test_capture_kinds(void)
{
    CUstream s;
    CUgraph g, outer;
    CUgraphExec x;
    CUgraphNode nodes[8];
    CUgraphNodeType type;
    CUdeviceptr a;
    struct host_log log = {0};
    unsigned n = N / 4, v = 2;
    void *args[] = {&a, &n, &v};
    size_t count = 8;

    CU(cuMemAlloc(&a, N));
    CU(cuStreamCreate(&s, 0));
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU(cuLaunchKernel(k_add, 4, 1, 1, 256, 1, 1, 0, s, args, NULL));
    CU(cuLaunchHostFunc(s, host_node, &log));
    CU_ERR(cuStreamAddCallback(s, callback, &log, 0),
           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    g_assert_null(g);

    /* External event records and waits become nodes. */
    CUevent ext;
    CUgraph eg;
    CU(cuEventCreate(&ext, 0));
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU(cuEventRecordWithFlags(ext, s, CU_EVENT_RECORD_EXTERNAL));
    CU(cuStreamWaitEvent(s, ext, CU_EVENT_WAIT_EXTERNAL));
    CU_ERR(cuEventRecordWithFlags(ext, s, 0x10), CUDA_ERROR_INVALID_VALUE);
    CU(cuStreamEndCapture(s, &eg));
    count = 8;
    CU(cuGraphGetNodes(eg, nodes, &count));
    g_assert_cmpuint(count, ==, 2);
    CU(cuGraphNodeGetType(nodes[0], &type));
    g_assert_cmpint(type, ==, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
    CU(cuGraphNodeGetType(nodes[1], &type));
    g_assert_cmpint(type, ==, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
    CU(cuGraphDestroy(eg));
    CU(cuEventDestroy(ext));

    count = 8;
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU(cuLaunchKernel(k_add, 4, 1, 1, 256, 1, 1, 0, s, args, NULL));
    CU(cuLaunchHostFunc(s, host_node, &log));
    CU(cuStreamEndCapture(s, &g));
    g_assert_cmpint(log.calls, ==, 0);
    CU(cuGraphGetNodes(g, nodes, &count));
    g_assert_cmpuint(count, ==, 2);
    CU(cuGraphNodeGetType(nodes[0], &type));
    g_assert_cmpint(type, ==, CU_GRAPH_NODE_TYPE_KERNEL);
    CU(cuGraphNodeGetType(nodes[1], &type));
    g_assert_cmpint(type, ==, CU_GRAPH_NODE_TYPE_HOST);
    CU(cuGraphInstantiate(&x, g, 0));

    /* The per-thread default stream captures too; the graph's launch is captured. */
    CU(cuStreamBeginCapture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU(cuGraphLaunch(x, CU_STREAM_PER_THREAD));
    CU(cuStreamEndCapture(CU_STREAM_PER_THREAD, &outer));
    g_assert_cmpuint(count_nodes(outer), ==, 2);
    CU(cuGraphDestroy(outer));

    CU(cuGraphLaunch(x, s));
    CU(cuStreamSynchronize(s));
    g_assert_cmpint(log.calls, ==, 1);
    CU(cuGraphExecDestroy(x));
    CU(cuGraphDestroy(g));
    CU(cuStreamDestroy(s));
    CU(cuMemFree(a));
}

/* What CUDA forbids during capture fails with its error and invalidates the capture. */
static void test_capture_errors(void)
{
    CUstream s, s2, blocking;
    CUevent e, plain;
    CUgraph g = (CUgraph)1;
    CUdeviceptr a;
    uint8_t host[16];
    CUstreamCaptureStatus st;
    CUstreamCaptureMode mode;
    CUdeviceptr tmp;

    CU(cuMemAlloc(&a, N));
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CU(cuStreamCreate(&blocking, 0));
    CU(cuEventCreate(&e, 0));
    CU(cuEventCreate(&plain, 0));
    CU(cuEventRecord(plain, s2));

    CU_ERR(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_ERR(cuStreamBeginCapture(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);

    /* Synchronising a capturing stream. */
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_ERR(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    CU(cuMemsetD8Async(a, 1, N, s));
    CU_ERR(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU(cuStreamIsCapturing(s, &st));
    g_assert_cmpint(st, ==, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CU_ERR(cuMemsetD8Async(a, 1, N, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    g_assert_null(g);

    /* Unsafe calls in global mode: a synchronous copy, a context synchronisation. */
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_ERR(cuMemcpyDtoH(host, a, sizeof(host)), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_ERR(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_ERR(cuMemAlloc(&tmp, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* ... allowed in a relaxed capture, or to a thread in relaxed mode (as PyTorch's
     * allocator does around cudaMalloc). */
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU(cuMemcpyDtoH(host, a, sizeof(host)));
    CU(cuStreamEndCapture(s, &g));
    CU(cuGraphDestroy(g));
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU(cuThreadExchangeStreamCaptureMode(&mode));
    CU(cuMemAlloc(&tmp, 64));
    CU(cuMemFree(tmp));
    CU(cuThreadExchangeStreamCaptureMode(&mode));
    g_assert_cmpint(mode, ==, CU_STREAM_CAPTURE_MODE_RELAXED);
    CU(cuStreamEndCapture(s, &g));
    g_assert_cmpuint(count_nodes(g), ==, 0);
    CU(cuGraphDestroy(g));
    /* Memory nodes are not supported: stream-ordered allocation on a capturing stream. */
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_ERR(cuMemAllocAsync(&tmp, 64, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* A captured event may not be queried; an event of no capture may not be waited for. */
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuEventRecord(e, s));
    CU_ERR(cuEventQuery(e), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_ERR(cuStreamWaitEvent(s, plain, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* A fork that never joins back; ending from the forked stream. */
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuEventRecord(e, s));
    CU(cuStreamWaitEvent(s2, e, 0));
    CU(cuMemsetD8Async(a, 2, N, s2));
    CU_ERR(cuStreamEndCapture(s2, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    CU(cuStreamIsCapturing(s2, &st));
    g_assert_cmpint(st, ==, CU_STREAM_CAPTURE_STATUS_NONE);

    /* The legacy stream while a blocking stream captures. */
    CU(cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_ERR(cuMemsetD8Async(a, 3, N, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CU_ERR(cuStreamEndCapture(blocking, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* Nothing captured was sent: a holds what the last real memset wrote. */
    CU(cuCtxSynchronize());
    CU(cuEventDestroy(e));
    CU(cuEventDestroy(plain));
    CU(cuStreamDestroy(s));
    CU(cuStreamDestroy(s2));
    CU(cuStreamDestroy(blocking));
    CU(cuMemFree(a));
}

/* What another thread may do while this one captures. */
struct other {
    CUcontext ctx;
    CUstream s;
    CUstreamCaptureMode mode;       /* the other thread's interaction mode */
    CUresult copy, end;             /* what its unsafe call and its end of capture got */
};

static gpointer other_thread(gpointer arg)
{
    struct other *o = arg;
    CUdeviceptr d;
    CUgraph g;

    CU(cuCtxSetCurrent(o->ctx));
    CU(cuThreadExchangeStreamCaptureMode(&o->mode));
    o->copy = cuMemAlloc(&d, 64); /* an unsafe call */
    if (o->copy == CUDA_SUCCESS)
        CU(cuMemFree(d));
    o->end = cuStreamEndCapture(o->s, &g);
    if (o->end == CUDA_SUCCESS)
        CU(cuGraphDestroy(g));
    return NULL;
}

/* Global mode forbids unsafe calls to every thread in global mode while any thread
 * captures in global mode; thread-local mode only to the capturing thread. A capture not
 * relaxed is ended by its own thread only. */
static void test_capture_threads(void)
{
    static const struct {
        CUstreamCaptureMode capture, other;
        CUresult copy, end;
    } cases[] = {
        {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_GLOBAL,
         CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD},
        {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CUDA_SUCCESS,
         CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD},
        {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_GLOBAL, CUDA_SUCCESS,
         CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD},
        {CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_GLOBAL, CUDA_SUCCESS,
         CUDA_SUCCESS},
    };
    CUstream s;
    CUgraph g;

    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        struct other o = {.s = s, .mode = cases[i].other};
        CU(cuCtxGetCurrent(&o.ctx));
        CU(cuStreamBeginCapture(s, cases[i].capture));
        g_thread_join(g_thread_new("other", other_thread, &o));
        g_assert_cmpint(o.copy, ==, cases[i].copy);
        g_assert_cmpint(o.end, ==, cases[i].end);
        if (o.end == CUDA_SUCCESS)
            continue; /* the other thread ended it */
        CUresult r = cuStreamEndCapture(s, &g);
        if (cases[i].copy == CUDA_SUCCESS) {
            CU(r);
            CU(cuGraphDestroy(g));
        } else {
            g_assert_cmpint(r, ==, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        }
    }
    CU(cuStreamDestroy(s));
}

/* cuGraphExecUpdate with the same topology takes the new parameters; a changed topology
 * or node type is refused with CUDA's result; a kernel node of an executable graph takes
 * new parameters alone. */
static void test_update(void)
{
    CUgraph g1, g2, g3;
    CUgraphExec x;
    CUgraphNode set, copy, kern, extra;
    CUdeviceptr a, b;
    CUgraphExecUpdateResultInfo info;
    unsigned n = N / 4, v = 1;
    void *args[] = {&a, &n, &v};
    CUDA_KERNEL_NODE_PARAMS kp;

    CU(cuMemAlloc(&a, N));
    CU(cuMemAlloc(&b, N));
    CUgraph *gs[] = {&g1, &g2, &g3};
    for (int i = 0; i < 3; i++) {
        CU(cuGraphCreate(gs[i], 0));
        add_set_copy(*gs[i], a, (uint8_t)(10 + i), b, &set, &copy);
        if (i == 0) {
            kp = add_params(args);
            CU(cuGraphAddKernelNode(&kern, *gs[i], &copy, 1, &kp));
        } else if (i == 1) {
            kp = add_params(args);
            CU(cuGraphAddKernelNode(&extra, *gs[i], &copy, 1, &kp));
        } else {
            CU(cuGraphAddEmptyNode(&extra, *gs[i], &copy, 1));
        }
    }
    CU(cuGraphInstantiate(&x, g1, 0));
    CU(cuGraphLaunch(x, NULL));
    CU(cuCtxSynchronize());
    expect_bytes(b, 10);
    CU(cuGraphExecUpdate(x, g2, &info));
    g_assert_cmpint(info.result, ==, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    CU(cuGraphLaunch(x, NULL));
    CU(cuCtxSynchronize());
    expect_bytes(b, 11);
    CU_ERR(cuGraphExecUpdate(x, g3, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    g_assert_cmpint(info.result, ==, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
    CU(cuGraphAddEmptyNode(&extra, g2, NULL, 0));
    CU_ERR(cuGraphExecUpdate(x, g2, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    g_assert_cmpint(info.result, ==, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    CU_ERR(cuGraphExecUpdate(x, g2, NULL), CUDA_ERROR_INVALID_VALUE);
    /* The exec keeps g2's parameters after the refusals. */
    CU(cuGraphLaunch(x, NULL));
    CU(cuCtxSynchronize());
    expect_bytes(b, 11);
    /* Nodes are named by the graph the exec was made from. */
    v = 4;
    kp = add_params(args);
    CU(cuGraphExecKernelNodeSetParams(x, kern, &kp));
    kp.func = NULL;
    CU_ERR(cuGraphExecKernelNodeSetParams(x, kern, &kp), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphExecKernelNodeSetParams(x, set, &kp), CUDA_ERROR_INVALID_VALUE);
    CU(cuGraphLaunch(x, NULL));
    CU(cuCtxSynchronize());
    CU(cuGraphExecDestroy(x));
    for (int i = 0; i < 3; i++)
        CU(cuGraphDestroy(*gs[i]));
    CU(cuMemFree(a));
    CU(cuMemFree(b));
}

/* cuGetProcAddress hands out the graph functions in the ABI each version asks for. */
static void test_proc_address(void)
{
    void *p;

    CU(cuGetProcAddress("cuGraphAddKernelNode", &p, 12000, 0, NULL));
    g_assert_true(p == (void *)cuGraphAddKernelNode_v2);
    CU(cuGetProcAddress("cuGraphLaunch", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                        NULL));
    g_assert_true(p == dlsym(RTLD_DEFAULT, "cuGraphLaunch_ptsz"));
    CU(cuGetProcAddress("cuStreamBeginCapture", &p, 12000, 0, NULL));
    g_assert_true(p == (void *)cuStreamBeginCapture_v2);
    CU(cuGetProcAddress("cuGraphExecUpdate", &p, 12000, 0, NULL));
    g_assert_true(p == (void *)cuGraphExecUpdate_v2);
    CU(cuGetProcAddress("cuGraphInstantiateWithFlags", &p, 12000, 0, NULL));
    g_assert_true(p == (void *)cuGraphInstantiateWithFlags);
}

/* A cluster launch (cuLaunchKernelEx) on a capturing stream becomes a kernel node that
 * keeps its clusters: replayed, it reaches the device as a cluster launch again (the sim
 * counts those); a cooperative launch likewise. */
static void test_capture_launch_attrs(void)
{
    CUstream s;
    CUgraph g;
    CUgraphExec e;
    CUdeviceptr d;
    unsigned n = 64, v = 1;
    void *args[] = {&d, &n, &v};
    CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                              .value.clusterDim = {2, 1, 1}};
    CUlaunchConfig cfg = {.gridDimX = 8, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
                          .blockDimY = 1, .blockDimZ = 1, .attrs = &attr, .numAttrs = 1};

    CU(cuMemAlloc(&d, N));
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    cfg.hStream = s;
    uint64_t before = harness_attr_launches(H);
    CU(cuLaunchKernelEx(&cfg, k_add, args, NULL));      /* directly */
    CU(cuStreamSynchronize(s));
    g_assert_cmpuint(harness_attr_launches(H), ==, before + 1);
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuLaunchKernelEx(&cfg, k_add, args, NULL));
    CU(cuLaunchCooperativeKernel(k_add, 8, 1, 1, 32, 1, 1, 0, s, args));
    CU(cuStreamEndCapture(s, &g));
    g_assert_cmpuint(count_nodes(g), ==, 2);
    g_assert_cmpuint(harness_attr_launches(H), ==, before + 1);  /* captured, not run */
    CU(cuGraphInstantiate(&e, g, 0));
    CU(cuGraphLaunch(e, s));
    CU(cuGraphLaunch(e, s));
    CU(cuStreamSynchronize(s));
    g_assert_cmpuint(harness_attr_launches(H), ==, before + 5);
    /* clusters that do not tile the grid are refused at the call */
    attr.value.clusterDim.x = 3;
    CU_ERR(cuLaunchKernelEx(&cfg, k_add, args, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    CU(cuGraphExecDestroy(e));
    CU(cuGraphDestroy(g));

    /* an explicit kernel node given clusters as an attribute; new parameters keep it */
    CUDA_KERNEL_NODE_PARAMS kp = {.func = k_add, .gridDimX = 8, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1,
                                  .kernelParams = args};
    CUgraphNode node;
    CUkernelNodeAttrValue val = {.clusterDim = {4, 1, 1}}, back;
    CU(cuGraphCreate(&g, 0));
    CU(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
    CU(cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &back));
    g_assert_cmpuint(back.clusterDim.x, ==, 1);
    CU(cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &val));
    CU(cuGraphKernelNodeSetParams(node, &kp));
    CU(cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &back));
    g_assert_cmpuint(back.clusterDim.x, ==, 4);
    CU(cuGraphInstantiate(&e, g, 0));
    CU(cuGraphLaunch(e, s));
    CU(cuStreamSynchronize(s));
    g_assert_cmpuint(harness_attr_launches(H), ==, before + 6);
    CU(cuGraphExecDestroy(e));
    CU(cuGraphDestroy(g));
    CU(cuStreamDestroy(s));
    CU(cuMemFree(d));
}

int main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    H = harness_start_opts(0, true);
    g_setenv("KERNELET_SOCKET", harness_socket(H), TRUE);
    setup();
    g_test_add_func("/libcuda/graphs/explicit", test_explicit);
    g_test_add_func("/libcuda/graphs/branches", test_branches);
    g_test_add_func("/libcuda/graphs/launch-order-and-lifetimes", test_launch_order_and_lifetimes);
    g_test_add_func("/libcuda/graphs/clone", test_clone);
    g_test_add_func("/libcuda/graphs/explicit-errors", test_explicit_errors);
    g_test_add_func("/libcuda/graphs/generic-add", test_generic_add);
    g_test_add_func("/libcuda/graphs/capture-fork-join", test_capture_fork_join);
    g_test_add_func("/libcuda/graphs/capture-kinds", test_capture_kinds);
    g_test_add_func("/libcuda/graphs/capture-errors", test_capture_errors);
    g_test_add_func("/libcuda/graphs/capture-threads", test_capture_threads);
    g_test_add_func("/libcuda/graphs/update", test_update);
    g_test_add_func("/libcuda/graphs/capture-launch-attrs", test_capture_launch_attrs);
    g_test_add_func("/libcuda/graphs/proc-address", test_proc_address);
    rc = g_test_run();
    CU(cuModuleUnload(mod));
    harness_stop(H);
    return rc;
}
