/* The pair of pair_sweep, but with kerneletd's own kernels: the tenants' burn_fma and
 * stream_triad (bench/tenants/) as PTX for compute_75, sliced by kernelet-ptx and
 * JIT-compiled by the driver exactly as kerneletd's cuda backend loads them, queued by hand
 * on two streams of one context. pair_sweep's kernels are nvcc's sm_90 code of a similar
 * pair; this program says whether the gain it finds survives kerneletd's code path (the
 * sliced entries, the JIT) before any scheduling: docs/perf/scheduling.md compares the
 * three (pair_sweep, this, kerneletd).
 *   pair_probe BURN_SLICED.ptx STREAM_SLICED.ptx [LAUNCHES]   (default 20)
 * One table row per variant (ms, speed-up over serial, verified). */
#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 256
#define BLOCKS 8448u          /* the tenants' default grid: 8 waves of 132 SMs x 8 blocks */
#define ITERS 4096u
#define PER_THREAD 32u
#define BURN_A 0.9990234375f
#define BURN_B 0.0009765625f

#define CU(call)                                                                     \
    do {                                                                             \
        CUresult r_ = (call);                                                        \
        if (r_ != CUDA_SUCCESS) {                                                    \
            const char *s_ = "?";                                                    \
            cuGetErrorName(r_, &s_);                                                 \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, s_);                  \
            exit(2);                                                                 \
        }                                                                            \
    } while (0)

typedef struct {
    CUfunction burn, burn_sliced, triad, triad_sliced;
    CUdeviceptr in, out, a, b, c;
    CUstream s[2];
    CUevent start, stop;
} world;

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = (char *)malloc((size_t)n + 1);
    if (!text || fread(text, 1, (size_t)n, f) != (size_t)n)
        exit(2);
    text[n] = 0;
    fclose(f);
    return text;
}

static void load(const char *path, const char *entry, CUfunction *whole, CUfunction *sliced)
{
    char *ptx = read_file(path);
    CUmodule m;
    CU(cuModuleLoadData(&m, ptx));
    free(ptx);
    char name[128];
    snprintf(name, sizeof(name), "%s__kslice", entry);
    CU(cuModuleGetFunction(whole, m, entry));
    CU(cuModuleGetFunction(sliced, m, name));
}

/* Blocks [first, first + n) of burn; n = BLOCKS, first = 0 and !sliced: the whole kernel. */
static void burn_range(world *w, CUstream s, unsigned first, unsigned n, int sliced)
{
    unsigned iters = ITERS, count = BLOCKS * THREADS, nx = BLOCKS, one = 1;
    void *args[] = {&w->in, &w->out, &iters, &count, &first, &nx, &one, &one};
    CU(cuLaunchKernel(sliced ? w->burn_sliced : w->burn, n, 1, 1, THREADS, 1, 1, 0, s, args,
                      NULL));
}

static void triad_range(world *w, CUstream s, unsigned first, unsigned n, int sliced)
{
    unsigned per = PER_THREAD, nx = BLOCKS, one = 1;
    unsigned long long count = (unsigned long long)BLOCKS * THREADS * PER_THREAD;
    void *args[] = {&w->a, &w->b, &w->c, &per, &count, &first, &nx, &one, &one};
    CU(cuLaunchKernel(sliced ? w->triad_sliced : w->triad, n, 1, 1, THREADS, 1, 1, 0, s, args,
                      NULL));
}

typedef struct {
    const char *name;
    unsigned sa, sb;    /* blocks per slice of burn and stream; 0: that kernel whole */
    int sliced;         /* the __kslice entries (also for whole kernels: one slice) */
    int two_streams;    /* stream on the second stream */
    int burn, triad;    /* which kernels run */
} variant;

/* Queues one launch of each kernel of v: slices alternate between the two streams. */
static void queue_launch(world *w, const variant *v)
{
    CUstream sb = v->two_streams ? w->s[1] : w->s[0];
    unsigned na = v->sa ? v->sa : BLOCKS, nb = v->sb ? v->sb : BLOCKS;
    for (unsigned fa = v->burn ? 0 : BLOCKS, fb = v->triad ? 0 : BLOCKS;
         fa < BLOCKS || fb < BLOCKS;) {
        if (fa < BLOCKS) {
            unsigned n = BLOCKS - fa < na ? BLOCKS - fa : na;
            burn_range(w, w->s[0], fa, n, v->sliced);
            fa += n;
        }
        if (fb < BLOCKS) {
            unsigned n = BLOCKS - fb < nb ? BLOCKS - fb : nb;
            triad_range(w, sb, fb, n, v->sliced);
            fb += n;
        }
    }
}

static float run(world *w, const variant *v, int launches)
{
    CU(cuCtxSynchronize());
    CU(cuEventRecord(w->start, w->s[0]));
    CU(cuStreamWaitEvent(w->s[1], w->start, 0));
    for (int l = 0; l < launches; l++)
        queue_launch(w, v);
    CUevent joined;
    CU(cuEventCreate(&joined, CU_EVENT_DISABLE_TIMING));
    CU(cuEventRecord(joined, w->s[1]));
    CU(cuStreamWaitEvent(w->s[0], joined, 0));
    CU(cuEventRecord(w->stop, w->s[0]));
    CU(cuEventSynchronize(w->stop));
    CU(cuEventDestroy(joined));
    float ms;
    CU(cuEventElapsedTime(&ms, w->start, w->stop));
    return ms;
}

static size_t verify(world *w, const variant *v, const float *hin, const float *ha,
                     const float *hb)
{
    size_t n = (size_t)BLOCKS * THREADS, m = n * PER_THREAD, bad = 0;
    float *out = (float *)malloc(n * 4), *c = (float *)malloc(m * 4);
    CU(cuMemcpyDtoH(out, w->out, n * 4));
    CU(cuMemcpyDtoH(c, w->c, m * 4));
    for (size_t i = 0; v->burn && i < n; i += 97) {
        float x = hin[i], y = 1.0f - hin[i];
        for (unsigned k = 0; k < ITERS; k++) {
            x = fmaf(x, BURN_A, BURN_B);
            y = fmaf(y, BURN_A, BURN_B);
        }
        bad += out[i] != x + y;
    }
    for (size_t i = 0; v->triad && i < m; i++)
        bad += c[i] != fmaf(3.0f, hb[i], ha[i]);
    free(out);
    free(c);
    return bad;
}

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rand() / (float)RAND_MAX;
}

static void setup(world *w, const char *burn_ptx, const char *triad_ptx, float **hin,
                  float **ha, float **hb)
{
    size_t n = (size_t)BLOCKS * THREADS, m = n * PER_THREAD;
    cudaFree(0); /* the runtime's primary context, as the tenants' programs have */
    load(burn_ptx, "burn_fma", &w->burn, &w->burn_sliced);
    load(triad_ptx, "stream_triad", &w->triad, &w->triad_sliced);
    *hin = (float *)malloc(n * 4);
    *ha = (float *)malloc(m * 4);
    *hb = (float *)malloc(m * 4);
    srand(7);
    fill(*hin, n);
    fill(*ha, m);
    fill(*hb, m);
    CU(cuMemAlloc(&w->in, n * 4));
    CU(cuMemAlloc(&w->out, n * 4));
    CU(cuMemAlloc(&w->a, m * 4));
    CU(cuMemAlloc(&w->b, m * 4));
    CU(cuMemAlloc(&w->c, m * 4));
    CU(cuMemcpyHtoD(w->in, *hin, n * 4));
    CU(cuMemcpyHtoD(w->a, *ha, m * 4));
    CU(cuMemcpyHtoD(w->b, *hb, m * 4));
    for (int i = 0; i < 2; i++)
        CU(cuStreamCreate(&w->s[i], CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&w->start, 0));
    CU(cuEventCreate(&w->stop, 0));
}

/* Every split a:b of the SM's 8 blocks and slices of 1 to 8 waves at that split: the plan
 * kerneletd runs with --pair-split A:B --pair-waves W, queued by hand. Returns 1 when an
 * output is wrong. */
static int sweep(world *w, int sms, int launches, float serial, const float *hin,
                 const float *ha, const float *hb)
{
    static const unsigned waves[] = {1, 2, 3, 4, 8};
    int failed = 0;
    printf("\n| split burn:stream per SM | waves a slice | ms | vs serial | verified |\n"
           "|---|---|---|---|---|\n");
    for (unsigned a = 2; a <= 6; a++)
        for (size_t i = 0; i < sizeof(waves) / sizeof(waves[0]); i++) {
            variant v = {"", a * (unsigned)sms * waves[i], (8 - a) * (unsigned)sms * waves[i],
                         1, 1, 1, 1};
            float ms = run(w, &v, launches);
            size_t bad = verify(w, &v, hin, ha, hb);
            failed |= bad != 0;
            printf("| %u:%u | %u | %.2f | %.3f | %s |\n", a, 8 - a, waves[i], ms, serial / ms,
                   bad ? "NO" : "yes");
            fflush(stdout);
        }
    return failed;
}

int main(int argc, char **argv)
{
    int launches = argc > 3 ? atoi(argv[3]) : 20;
    if (argc < 3 || launches < 1 || launches > 1000) {
        fprintf(stderr, "usage: pair_probe BURN_SLICED.ptx STREAM_SLICED.ptx [LAUNCHES 1..1000]\n");
        return 2;
    }
    world w = {0};
    float *hin, *ha, *hb;
    setup(&w, argv[1], argv[2], &hin, &ha, &hb);
    int sms;
    CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    unsigned wave = 4 * (unsigned)sms; /* 4 blocks of 256 threads per SM: half an SM */
    const variant vs[] = {
        {"serial, original entries", 0, 0, 0, 0, 1, 1},
        {"serial, sliced entries as one slice", 0, 0, 1, 0, 1, 1},
        {"burn alone, 4-per-SM slices", wave, 0, 1, 0, 1, 0},
        {"stream alone, 4-per-SM slices", 0, wave, 1, 1, 0, 1},
        {"burn alone, whole", 0, 0, 0, 0, 1, 0},
        {"stream alone, whole", 0, 0, 0, 0, 0, 1},
        {"whole kernels, two streams", 0, 0, 0, 1, 1, 1},
        {"pair 4:4 per SM, 1 wave each (pair_sweep's best)", wave, wave, 1, 1, 1, 1},
        {"pair 4:4, burn 1 wave : stream 2 waves (kerneletd's equal-time plan)", wave,
         2 * wave, 1, 1, 1, 1},
        {"pair 4:4, 2 waves each", 2 * wave, 2 * wave, 1, 1, 1, 1},
    };
    run(&w, &vs[0], 1); /* warm-up: the JIT, the first launches */
    float serial = 0;
    int failed = 0;
    printf("| variant | ms | vs serial | verified |\n|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
        size_t n = (size_t)BLOCKS * THREADS;
        CU(cuMemsetD32(w.out, 0, n));
        CU(cuMemsetD32(w.c, 0, n * PER_THREAD));
        float ms = run(&w, &vs[i], launches);
        if (i == 0)
            serial = ms;
        size_t bad = verify(&w, &vs[i], hin, ha, hb);
        failed |= bad != 0;
        printf("| %s | %.2f | %.3f | %s |\n", vs[i].name, ms, serial / ms, bad ? "NO" : "yes");
        fflush(stdout);
    }
    failed |= sweep(&w, sms, launches, serial, hin, ha, hb);
    printf(failed ? "FAILED\n" : "PASSED\n");
    return failed;
}
