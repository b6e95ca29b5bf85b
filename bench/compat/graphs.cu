/* CUDA graphs, built both ways, launched several times with new inputs each time, every
 * output checked on the host:
 *  - explicitly: copy in (pinned) -> two kernels side by side -> a kernel joining them ->
 *    copy out; then one kernel node's parameters changed in the executable graph
 *    (cudaGraphExecKernelNodeSetParams) and in the graph followed by cudaGraphExecUpdate;
 *  - by stream capture over two streams forked and joined by events, with a host function
 *    counting the launches; a synchronisation during capture must fail with CUDA's error
 *    and invalidate the capture. */
#include "compat.h"

#define N (1 << 16)
#define LAUNCHES 4

__global__ void affine(const int *in, int *out, int a, int b)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        out[i] = a * in[i] + b;
}

__global__ void add(const int *x, const int *y, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        out[i] = x[i] + y[i];
}

struct bufs {
    int *h_in, *h_out;      /* pinned */
    int *d_in, *d_x, *d_y, *d_out;
};

static const dim3 grid((N + 255) / 256), block(256);

static void fill_input(int *h, int round)
{
    for (int i = 0; i < N; i++)
        h[i] = (i * 7 + round * 1001) % 65521 - 30000;
}

/* out = (a1 * in + b1) + (a2 * in + b2) */
static void check(const struct bufs *b, int a1, int b1, int a2, int b2, const char *what,
                  int round)
{
    for (int i = 0; i < N; i++) {
        int want = (a1 * b->h_in[i] + b1) + (a2 * b->h_in[i] + b2);
        EXPECT(b->h_out[i] == want, "%s, launch %d: out[%d] = %d, expected %d", what, round, i,
               b->h_out[i], want);
    }
}

static cudaKernelNodeParams affine_params(void **args)
{
    cudaKernelNodeParams p = {};
    p.func = (void *)affine;
    p.gridDim = grid;
    p.blockDim = block;
    p.kernelParams = args;
    return p;
}

/* Launches exec LAUNCHES times on s, each with a new input, and checks each output. */
static void run_and_check(cudaGraphExec_t exec, cudaStream_t s, const struct bufs *b, int a1,
                          int b1, int a2, int b2, const char *what)
{
    for (int round = 0; round < LAUNCHES; round++) {
        fill_input(b->h_in, round);
        memset(b->h_out, 0, N * sizeof(int));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        check(b, a1, b1, a2, b2, what, round);
    }
}

static void explicit_graph(const struct bufs *b, cudaStream_t s)
{
    cudaGraph_t g;
    cudaGraphExec_t exec;
    cudaGraphNode_t in, k1, k2, join, out;
    int a1 = 2, b1 = 1, a2 = -3, b2 = 5;
    void *args1[] = {(void *)&b->d_in, (void *)&b->d_x, &a1, &b1};
    void *args2[] = {(void *)&b->d_in, (void *)&b->d_y, &a2, &b2};
    void *args3[] = {(void *)&b->d_x, (void *)&b->d_y, (void *)&b->d_out};
    size_t bytes = N * sizeof(int);

    CHECK(cudaGraphCreate(&g, 0));
    CHECK(cudaGraphAddMemcpyNode1D(&in, g, NULL, 0, b->d_in, b->h_in, bytes,
                                   cudaMemcpyHostToDevice));
    cudaKernelNodeParams p1 = affine_params(args1), p2 = affine_params(args2), p3 = {};
    CHECK(cudaGraphAddKernelNode(&k1, g, &in, 1, &p1));
    CHECK(cudaGraphAddKernelNode(&k2, g, &in, 1, &p2));
    p3.func = (void *)add;
    p3.gridDim = grid;
    p3.blockDim = block;
    p3.kernelParams = args3;
    cudaGraphNode_t both[] = {k1, k2};
    CHECK(cudaGraphAddKernelNode(&join, g, both, 2, &p3));
    CHECK(cudaGraphAddMemcpyNode1D(&out, g, &join, 1, b->h_out, b->d_out, bytes,
                                   cudaMemcpyDeviceToHost));
    size_t count = 0;
    CHECK(cudaGraphGetNodes(g, NULL, &count));
    EXPECT(count == 5, "the graph has %zu nodes, expected 5", count);
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    a1 = 100; /* parameters were copied when the node was added */
    run_and_check(exec, s, b, 2, 1, -3, 5, "explicit graph");

    /* New parameters for one kernel node of the executable graph. */
    a1 = 4;
    b1 = -9;
    CHECK(cudaGraphExecKernelNodeSetParams(exec, k1, &p1));
    run_and_check(exec, s, b, 4, -9, -3, 5, "after cudaGraphExecKernelNodeSetParams");

    /* New parameters in the graph, taken by the executable graph through an update. */
    a2 = 6;
    b2 = 11;
    CHECK(cudaGraphKernelNodeSetParams(k2, &p2));
    cudaGraphExecUpdateResultInfo info;
    CHECK(cudaGraphExecUpdate(exec, g, &info));
    EXPECT(info.result == cudaGraphExecUpdateSuccess, "update result %d", (int)info.result);
    /* The graph's k1 still has 2, 1: the update brings those back too. */
    run_and_check(exec, s, b, 2, 1, 6, 11, "after cudaGraphExecUpdate");
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
}

static void count_launch(void *arg)
{
    (*(int *)arg)++;
}

static void captured_graph(const struct bufs *b, cudaStream_t s1, cudaStream_t s2)
{
    cudaEvent_t fork, joined;
    cudaGraph_t g;
    cudaGraphExec_t exec;
    cudaStreamCaptureStatus st;
    size_t bytes = N * sizeof(int);
    static int launches;

    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));

    /* A synchronisation while capturing is refused and spoils the capture. */
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    EXPECT(cudaStreamSynchronize(s1) == cudaErrorStreamCaptureUnsupported,
           "synchronising a capturing stream must fail");
    EXPECT(cudaStreamEndCapture(s1, &g) == cudaErrorStreamCaptureInvalidated,
           "the capture must be invalidated");
    (void)cudaGetLastError();

    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemcpyAsync(b->d_in, b->h_in, bytes, cudaMemcpyHostToDevice, s1));
    CHECK(cudaEventRecord(fork, s1));
    CHECK(cudaStreamWaitEvent(s2, fork, 0));
    CHECK(cudaStreamIsCapturing(s2, &st));
    EXPECT(st == cudaStreamCaptureStatusActive, "the forked stream must capture");
    affine<<<grid, block, 0, s1>>>(b->d_in, b->d_x, 3, 2);
    affine<<<grid, block, 0, s2>>>(b->d_in, b->d_y, -1, 7);
    CHECK(cudaEventRecord(joined, s2));
    CHECK(cudaStreamWaitEvent(s1, joined, 0));
    add<<<grid, block, 0, s1>>>(b->d_x, b->d_y, b->d_out);
    CHECK(cudaMemcpyAsync(b->h_out, b->d_out, bytes, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaLaunchHostFunc(s1, count_launch, &launches));
    CHECK(cudaStreamEndCapture(s1, &g));
    CHECK(cudaStreamIsCapturing(s2, &st));
    EXPECT(st == cudaStreamCaptureStatusNone, "the capture must have ended on both streams");
    EXPECT(launches == 0, "nothing runs while capturing");
    size_t count = 0;
    CHECK(cudaGraphGetNodes(g, NULL, &count));
    EXPECT(count == 6, "the captured graph has %zu nodes, expected 6", count);
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    run_and_check(exec, s2, b, 3, 2, -1, 7, "captured graph");
    EXPECT(launches == LAUNCHES, "the host function ran %d times, expected %d", launches,
           LAUNCHES);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaEventDestroy(fork));
    CHECK(cudaEventDestroy(joined));
}

int main(void)
{
    struct bufs b;
    cudaStream_t s1, s2;
    size_t bytes = N * sizeof(int);

    CHECK(cudaMallocHost(&b.h_in, bytes));
    CHECK(cudaMallocHost(&b.h_out, bytes));
    CHECK(cudaMalloc(&b.d_in, bytes));
    CHECK(cudaMalloc(&b.d_x, bytes));
    CHECK(cudaMalloc(&b.d_y, bytes));
    CHECK(cudaMalloc(&b.d_out, bytes));
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    explicit_graph(&b, s1);
    captured_graph(&b, s1, s2);
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaFree(b.d_in));
    CHECK(cudaFree(b.d_x));
    CHECK(cudaFree(b.d_y));
    CHECK(cudaFree(b.d_out));
    CHECK(cudaFreeHost(b.h_in));
    CHECK(cudaFreeHost(b.h_out));
    compat_pass("graphs");
    return 0;
}
