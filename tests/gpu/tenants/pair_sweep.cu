/* What the H100 can give a compute-bound and a memory-bound kernel side by side, without
 * any scheduler: burn and stream (bench/tenants/) run LAUNCHES times each
 *   - serial, whole kernels on one stream;
 *   - whole kernels on two streams (the hardware's own concurrency, like MPS);
 *   - sliced at a fixed split of blocks per SM (a:b, a + b = the SM's 8 blocks of 256
 *     threads), slices of one or more waves queued up front alternately on two streams,
 *     the way the lab probe of DESIGN.md did it by hand.
 * Prints one table row per variant (ms, speed-up over serial); every variant's output is
 * checked against the CPU at the end of its run. It says which splits a scheduler should
 * find, and whether the pair can beat serial at all: the model's choices in kerneletd
 * (docs/perf/scheduling.md) are compared against it.
 *   pair_sweep [LAUNCHES]   (default 20)
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 256
#define BLOCKS 8448u          /* 64 waves of 132 SMs x 1 block */
#define ITERS 4096u
#define PER_THREAD 32u
#define SMS_PER_BLOCKS 8u     /* resident 256-thread blocks per SM (2048 threads) */
#define BURN_A 0.9990234375f
#define BURN_B 0.0009765625f

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(2);                                                                 \
        }                                                                            \
    } while (0)

__global__ void burn(const float *in, float *out, unsigned first)
{
    unsigned i = (blockIdx.x + first) * blockDim.x + threadIdx.x;
    float x = in[i], y = 1.0f - in[i];
    for (unsigned k = 0; k < ITERS; k++) {
        x = __fmaf_rn(x, BURN_A, BURN_B);
        y = __fmaf_rn(y, BURN_A, BURN_B);
    }
    out[i] = x + y;
}

__global__ void triad(const float *a, const float *b, float *c, unsigned first)
{
    unsigned long long base = (unsigned long long)(blockIdx.x + first) * blockDim.x * PER_THREAD;
    for (unsigned j = 0; j < PER_THREAD; j++) {
        unsigned long long i = base + (unsigned long long)j * blockDim.x + threadIdx.x;
        c[i] = __fmaf_rn(3.0f, b[i], a[i]);
    }
}

#define MARKS 4096u           /* timing events for the bracketed variant, reused in turn */

/* The same kernels with the sliced entries' prologue (host-sched/ptx/slice.c): the block's
 * index goes through a small .shared array, so the kernels use static shared memory. */
__global__ void burn_smem(const float *in, float *out, unsigned first)
{
    __shared__ unsigned grid[6];
    grid[0] = blockIdx.x + first;
    unsigned i = ((volatile unsigned *)grid)[0] * blockDim.x + threadIdx.x;
    float x = in[i], y = 1.0f - in[i];
    for (unsigned k = 0; k < ITERS; k++) {
        x = __fmaf_rn(x, BURN_A, BURN_B);
        y = __fmaf_rn(y, BURN_A, BURN_B);
    }
    out[i] = x + y;
}

__global__ void triad_smem(const float *a, const float *b, float *c, unsigned first)
{
    __shared__ unsigned grid[6];
    grid[0] = blockIdx.x + first;
    unsigned long long base =
        (unsigned long long)((volatile unsigned *)grid)[0] * blockDim.x * PER_THREAD;
    for (unsigned j = 0; j < PER_THREAD; j++) {
        unsigned long long i = base + (unsigned long long)j * blockDim.x + threadIdx.x;
        c[i] = __fmaf_rn(3.0f, b[i], a[i]);
    }
}

typedef struct {
    float *in, *out, *a, *b, *c;
    cudaStream_t s[2];
    cudaEvent_t start, stop;
    cudaEvent_t marks[2][MARKS]; /* timing events, events without timing */
    int bracket;              /* events around every slice, as kerneletd's cuda backend
                                 records them: 0 none, 1 a timing event after each slice,
                                 2 one before and one after, 3 one after without timing */
    unsigned next_mark;
    int smem;                 /* 1: the kernels with the sliced entries' .shared prologue */
} world;

static void mark(world *w, cudaStream_t s, int after)
{
    if (!w->bracket || (!after && w->bracket != 2))
        return;
    CHECK(cudaEventRecord(w->marks[w->bracket == 3][w->next_mark], s));
    w->next_mark = (w->next_mark + 1) % MARKS;
}

static void burn_range(world *w, cudaStream_t s, unsigned first, unsigned n)
{
    mark(w, s, 0);
    if (w->smem)
        burn_smem<<<n, THREADS, 0, s>>>(w->in, w->out, first);
    else
        burn<<<n, THREADS, 0, s>>>(w->in, w->out, first);
    mark(w, s, 1);
}

static void triad_range(world *w, cudaStream_t s, unsigned first, unsigned n)
{
    mark(w, s, 0);
    if (w->smem)
        triad_smem<<<n, THREADS, 0, s>>>(w->a, w->b, w->c, first);
    else
        triad<<<n, THREADS, 0, s>>>(w->a, w->b, w->c, first);
    mark(w, s, 1);
}

/* Queues launches x (burn slices of sa blocks, triad slices of sb), alternating streams;
 * sa = sb = 0: whole kernels, both on stream 0 when serial, else one stream each. */
static float run(world *w, int launches, unsigned sa, unsigned sb, int serial)
{
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventRecord(w->start, w->s[0]));
    CHECK(cudaStreamWaitEvent(w->s[1], w->start, 0));
    for (int l = 0; l < launches; l++) {
        if (!sa) {
            burn_range(w, w->s[0], 0, BLOCKS);
            triad_range(w, w->s[serial ? 0 : 1], 0, BLOCKS);
            continue;
        }
        for (unsigned fa = 0, fb = 0; fa < BLOCKS || fb < BLOCKS;) {
            if (fa < BLOCKS) {
                unsigned n = BLOCKS - fa < sa ? BLOCKS - fa : sa;
                burn_range(w, w->s[0], fa, n);
                fa += n;
            }
            if (fb < BLOCKS) {
                unsigned n = BLOCKS - fb < sb ? BLOCKS - fb : sb;
                triad_range(w, w->s[1], fb, n);
                fb += n;
            }
        }
    }
    cudaEvent_t joined;
    CHECK(cudaEventCreate(&joined));
    CHECK(cudaEventRecord(joined, w->s[1]));
    CHECK(cudaStreamWaitEvent(w->s[0], joined, 0));
    CHECK(cudaEventRecord(w->stop, w->s[0]));
    CHECK(cudaEventSynchronize(w->stop));
    CHECK(cudaEventDestroy(joined));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, w->start, w->stop));
    return ms;
}

static size_t verify(world *w, const float *hin, const float *ha, const float *hb)
{
    size_t n = (size_t)BLOCKS * THREADS, m = n * PER_THREAD, bad = 0;
    float *out = (float *)malloc(n * 4), *c = (float *)malloc(m * 4);
    CHECK(cudaMemcpy(out, w->out, n * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(c, w->c, m * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i += 97) {
        float x = hin[i], y = 1.0f - hin[i];
        for (unsigned k = 0; k < ITERS; k++) {
            x = fmaf(x, BURN_A, BURN_B);
            y = fmaf(y, BURN_A, BURN_B);
        }
        bad += out[i] != x + y;
    }
    for (size_t i = 0; i < m; i++)
        bad += c[i] != fmaf(3.0f, hb[i], ha[i]);
    free(out);
    free(c);
    return bad;
}

int main(int argc, char **argv)
{
    int launches = argc > 1 ? atoi(argv[1]) : 20;
    if (launches < 1 || launches > 1000) {
        fprintf(stderr, "usage: pair_sweep [LAUNCHES 1..1000]\n");
        return 2;
    }
    size_t n = (size_t)BLOCKS * THREADS, m = n * PER_THREAD;
    float *hin = (float *)malloc(n * 4), *ha = (float *)malloc(m * 4), *hb = (float *)malloc(m * 4);
    srand(7);
    for (size_t i = 0; i < n; i++)
        hin[i] = (float)rand() / (float)RAND_MAX;
    for (size_t i = 0; i < m; i++) {
        ha[i] = (float)rand() / (float)RAND_MAX;
        hb[i] = (float)rand() / (float)RAND_MAX;
    }
    world w = {0};
    CHECK(cudaMalloc((void **)&w.in, n * 4));
    CHECK(cudaMalloc((void **)&w.out, n * 4));
    CHECK(cudaMalloc((void **)&w.a, m * 4));
    CHECK(cudaMalloc((void **)&w.b, m * 4));
    CHECK(cudaMalloc((void **)&w.c, m * 4));
    CHECK(cudaMemcpy(w.in, hin, n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(w.a, ha, m * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(w.b, hb, m * 4, cudaMemcpyHostToDevice));
    for (int i = 0; i < 2; i++)
        CHECK(cudaStreamCreateWithFlags(&w.s[i], cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&w.start));
    CHECK(cudaEventCreate(&w.stop));
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    run(&w, 1, 0, 0, 1);                               /* warm-up */
    float serial = run(&w, launches, 0, 0, 1);
    printf("| variant | ms | vs serial | verified |\n|---|---|---|---|\n");
    int failed = 0;
    size_t bad = verify(&w, hin, ha, hb);
    failed |= bad != 0;
    printf("| serial | %.2f | 1.000 | %s |\n", serial, bad ? "NO" : "yes");
    float both = run(&w, launches, 0, 0, 0);
    bad = verify(&w, hin, ha, hb);
    failed |= bad != 0;
    printf("| whole, two streams | %.2f | %.3f | %s |\n", both, serial / both, bad ? "NO" : "yes");
    for (unsigned waves = 1; waves <= 4; waves *= 2)
        for (unsigned a = 1; a < SMS_PER_BLOCKS; a++) {
            unsigned b = SMS_PER_BLOCKS - a;
            CHECK(cudaMemset(w.out, 0, n * 4));
            CHECK(cudaMemset(w.c, 0, m * 4));
            float ms = run(&w, launches, a * sms * waves, b * sms * waves, 0);
            bad = verify(&w, hin, ha, hb);
            failed |= bad != 0;
            printf("| burn:stream %u:%u per SM, %u wave%s a slice | %.2f | %.3f | %s |\n", a, b,
                   waves, waves > 1 ? "s" : "", ms, serial / ms, bad ? "NO" : "yes");
        }
    static const char *brackets[] = {"", "a timing event after each", "timing events around each",
                                     "an event without timing after each"};
    for (unsigned i = 0; i < MARKS; i++) {
        CHECK(cudaEventCreate(&w.marks[0][i]));
        CHECK(cudaEventCreateWithFlags(&w.marks[1][i], cudaEventDisableTiming));
    }
    for (w.bracket = 1; w.bracket <= 3; w.bracket++) {
        float ms = run(&w, launches, 4 * sms, 4 * sms, 0);
        bad = verify(&w, hin, ha, hb);
        failed |= bad != 0;
        printf("| burn:stream 4:4 per SM, 1 wave a slice, %s | %.2f | %.3f | %s |\n",
               brackets[w.bracket], ms, serial / ms, bad ? "NO" : "yes");
    }
    w.bracket = 0;
    w.smem = 1;
    static const char *carveouts[] = {"driver's carveout", "carveout fixed at 50%"};
    for (int fixed = 0; fixed < 2; fixed++) {
        if (fixed) {
            CHECK(cudaFuncSetAttribute(burn_smem, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
            CHECK(cudaFuncSetAttribute(triad_smem, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
        }
        float ms = run(&w, launches, 4 * sms, 4 * sms, 0);
        bad = verify(&w, hin, ha, hb);
        failed |= bad != 0;
        printf("| burn:stream 4:4 per SM, 1 wave a slice, kernels with a .shared prologue, %s | "
               "%.2f | %.3f | %s |\n", carveouts[fixed], ms, serial / ms, bad ? "NO" : "yes");
    }
    printf(failed ? "FAILED: an output did not verify\n" : "PASSED\n");
    return failed;
}
