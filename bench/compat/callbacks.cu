/* Host functions and stream callbacks (cudaLaunchHostFunc, cudaStreamAddCallback) on two
 * streams and the legacy default stream. Everything is queued before anything is waited
 * for, so the order checks below hold only if each host function runs after the work
 * queued before it on its stream and before the work queued after it:
 *  - a host function checks the results the stream copied back just before it, and writes
 *    the pinned input of the stream's next round, which the next copy must pick up;
 *  - each stream's host functions run in the order they were queued;
 *  - a third stream waits (cudaStreamWaitEvent) for an event recorded after a host
 *    function of the first, and must copy what that host function wrote. */
#include <string.h>

#include "compat.h"

#define N (1 << 14)
#define ROUNDS 4
#define NSTREAMS 2

__global__ void twice_plus(const int *in, int *out, int add)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        out[i] = 2 * in[i] + add;
}

struct lane {
    int id;
    cudaStream_t stream;
    int *h_in, *h_out, *d_in, *d_out;   /* h_* pinned */
    int next_round;                      /* the round the next host function must see */
    int failures;
};

static int input_value(int lane, int round, int i)
{
    return (i * 31 + lane * 1000 + round * 77) % 100003;
}

/* Checks the round just copied back and prepares the next one's input. */
static void check_and_refill(struct lane *l, int round)
{
    if (round != l->next_round) {
        fprintf(stderr, "lane %d: host function of round %d ran when %d was due\n", l->id,
                round, l->next_round);
        l->failures++;
    }
    l->next_round = round + 1;
    for (int i = 0; i < N; i++)
        if (l->h_out[i] != 2 * input_value(l->id, round, i) + round) {
            fprintf(stderr, "lane %d round %d: element %d = %d\n", l->id, round, i, l->h_out[i]);
            l->failures++;
            break;
        }
    for (int i = 0; i < N; i++)
        l->h_in[i] = input_value(l->id, round + 1, i);
}

struct call {
    struct lane *lane;
    int round;
};

static void CUDART_CB host_fn(void *arg)
{
    struct call *c = (struct call *)arg;
    check_and_refill(c->lane, c->round);
}

static void CUDART_CB stream_cb(cudaStream_t s, cudaError_t status, void *arg)
{
    struct call *c = (struct call *)arg;
    if (status != cudaSuccess || s != c->lane->stream) {
        fprintf(stderr, "lane %d: callback status %d, stream %p\n", c->lane->id, (int)status,
                (void *)s);
        c->lane->failures++;
    }
    check_and_refill(c->lane, c->round);
}

static void lane_init(struct lane *l, int id)
{
    memset(l, 0, sizeof(*l));
    l->id = id;
    CHECK(cudaStreamCreate(&l->stream));
    CHECK(cudaMallocHost((void **)&l->h_in, N * sizeof(int)));
    CHECK(cudaMallocHost((void **)&l->h_out, N * sizeof(int)));
    CHECK(cudaMalloc((void **)&l->d_in, N * sizeof(int)));
    CHECK(cudaMalloc((void **)&l->d_out, N * sizeof(int)));
    for (int i = 0; i < N; i++)
        l->h_in[i] = input_value(id, 0, i);
}

/* One round: in, kernel, out, then the host function (odd rounds: a stream callback). */
static void lane_round(struct lane *l, struct call *c, int round)
{
    c->lane = l;
    c->round = round;
    CHECK(cudaMemcpyAsync(l->d_in, l->h_in, N * sizeof(int), cudaMemcpyHostToDevice, l->stream));
    twice_plus<<<N / 256, 256, 0, l->stream>>>(l->d_in, l->d_out, round);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(l->h_out, l->d_out, N * sizeof(int), cudaMemcpyDeviceToHost, l->stream));
    if (round % 2)
        CHECK(cudaStreamAddCallback(l->stream, stream_cb, c, 0));
    else
        CHECK(cudaLaunchHostFunc(l->stream, host_fn, c));
}

static void lane_free(struct lane *l)
{
    CHECK(cudaStreamDestroy(l->stream));
    CHECK(cudaFreeHost(l->h_in));
    CHECK(cudaFreeHost(l->h_out));
    CHECK(cudaFree(l->d_in));
    CHECK(cudaFree(l->d_out));
}

/* The event dependency: a host function of lane 0 writes a marker that a third stream,
 * waiting for an event recorded after it, copies to the device and back. */
static int *marker;
static void CUDART_CB write_marker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1024; i++)
        marker[i] = 4242 + i;
}

static int legacy_ran;
static void CUDART_CB on_legacy(void *arg)
{
    legacy_ran = *(int *)arg;
}

int main(void)
{
    struct lane lanes[NSTREAMS];
    struct call calls[NSTREAMS][ROUNDS];
    cudaStream_t third;
    cudaEvent_t after_marker;
    int *d_marker, *h_back, legacy_arg = 7;

    for (int l = 0; l < NSTREAMS; l++)
        lane_init(&lanes[l], l);
    CHECK(cudaStreamCreate(&third));
    CHECK(cudaEventCreateWithFlags(&after_marker, cudaEventDisableTiming));
    CHECK(cudaMallocHost((void **)&marker, 1024 * sizeof(int)));
    CHECK(cudaMallocHost((void **)&h_back, 1024 * sizeof(int)));
    CHECK(cudaMalloc((void **)&d_marker, 1024 * sizeof(int)));
    memset(marker, 0, 1024 * sizeof(int));

    for (int r = 0; r < ROUNDS; r++)
        for (int l = 0; l < NSTREAMS; l++)
            lane_round(&lanes[l], &calls[l][r], r);
    CHECK(cudaLaunchHostFunc(lanes[0].stream, write_marker, NULL));
    CHECK(cudaEventRecord(after_marker, lanes[0].stream));
    CHECK(cudaStreamWaitEvent(third, after_marker, 0));
    CHECK(cudaMemcpyAsync(d_marker, marker, 1024 * sizeof(int), cudaMemcpyHostToDevice, third));
    CHECK(cudaMemcpyAsync(h_back, d_marker, 1024 * sizeof(int), cudaMemcpyDeviceToHost, third));
    CHECK(cudaLaunchHostFunc(0, on_legacy, &legacy_arg));

    CHECK(cudaStreamSynchronize(third));
    for (int i = 0; i < 1024; i++)
        EXPECT(h_back[i] == 4242 + i, "marker %d = %d: copied before the host function ran", i,
               h_back[i]);
    CHECK(cudaDeviceSynchronize());
    EXPECT(legacy_ran == 7, "the legacy stream's host function did not run");
    for (int l = 0; l < NSTREAMS; l++) {
        CHECK(cudaStreamQuery(lanes[l].stream));
        EXPECT(lanes[l].failures == 0, "lane %d: %d failures", l, lanes[l].failures);
        EXPECT(lanes[l].next_round == ROUNDS, "lane %d: %d host functions ran", l,
               lanes[l].next_round);
        lane_free(&lanes[l]);
    }
    CHECK(cudaStreamDestroy(third));
    CHECK(cudaEventDestroy(after_marker));
    CHECK(cudaFreeHost(marker));
    CHECK(cudaFreeHost(h_back));
    CHECK(cudaFree(d_marker));
    compat_pass("callbacks");
    return 0;
}
