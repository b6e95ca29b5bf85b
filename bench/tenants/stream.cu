/* A memory-bound tenant: a triad c = a + s * b over arrays far larger than L2, each thread
 * streaming --per-thread elements with coalesced accesses. Queues --launches launches back
 * to back, then verifies every element against fmaf on the CPU (bit-exact).
 * The memory-bound half of the tenants harness's own pair (burn is the other). */
#include "../programs/bench_common.h"

#include <math.h>

#define STREAM_THREADS 256
#define STREAM_SCALE 3.0f

extern "C" __global__ void stream_triad(const float *a, const float *b, float *c,
                                        unsigned per_thread, unsigned long long n)
{
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * per_thread;
    for (unsigned j = 0; j < per_thread; j++) {
        unsigned long long i = base + (unsigned long long)j * blockDim.x + threadIdx.x;
        if (i < n)
            c[i] = __fmaf_rn(STREAM_SCALE, b[i], a[i]);
    }
}

/* The same triad with four elements in flight per thread: each thread loads four pairs
 * before it stores any (the restrict qualifiers let the compiler keep them apart), so
 * DRAM stays busy with fewer threads resident, as when a co-scheduled slice holds only
 * part of each SM. --ilp=4 picks it; per_thread is then a multiple of 4. */
extern "C" __global__ void stream_triad4(const float *__restrict__ a,
                                         const float *__restrict__ b, float *__restrict__ c,
                                         unsigned per_thread, unsigned long long n)
{
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * per_thread;
    for (unsigned j = 0; j < per_thread; j += 4) {
        float va[4], vb[4];
        unsigned long long i[4];
#pragma unroll
        for (unsigned k = 0; k < 4; k++) {
            i[k] = base + (unsigned long long)(j + k) * blockDim.x + threadIdx.x;
            va[k] = i[k] < n ? a[i[k]] : 0.0f;
            vb[k] = i[k] < n ? b[i[k]] : 0.0f;
        }
#pragma unroll
        for (unsigned k = 0; k < 4; k++)
            if (i[k] < n)
                c[i[k]] = __fmaf_rn(STREAM_SCALE, vb[k], va[k]);
    }
}

typedef struct {
    dim3 grid, block;
    const float *a, *b;
    float *c;
    unsigned per_thread;
    unsigned long long n;
    int ilp;
} stream_launch;

static void launch(void *p)
{
    stream_launch *l = (stream_launch *)p;
    if (l->ilp == 4)
        stream_triad4<<<l->grid, l->block>>>(l->a, l->b, l->c, l->per_thread, l->n);
    else
        stream_triad<<<l->grid, l->block>>>(l->a, l->b, l->c, l->per_thread, l->n);
}

static size_t verify(const float *a, const float *b, const float *c, unsigned long long n,
                     char *why, size_t len)
{
    size_t bad = 0;
    for (unsigned long long i = 0; i < n; i++) {
        float want = fmaf(STREAM_SCALE, b[i], a[i]);
        if (c[i] != want && !bad++)
            snprintf(why, len, "element %llu: %.9g, want %.9g", i, c[i], want);
    }
    return bad;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--blocks", "--per-thread", "--launches", "--ilp",
                                        NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names,
                "stream [--blocks=N] [--per-thread=N] [--launches=N] [--ilp=1|4]");
    unsigned long long blocks = bench_opt_u64(&o, "--blocks", 264, 8448);
    unsigned long long per = bench_opt_u64(&o, "--per-thread", 4, 32);
    unsigned long long launches = bench_opt_u64(&o, "--launches", 5, 200);
    unsigned long long ilp = bench_opt_u64(&o, "--ilp", 1, 1);
    if (blocks < 1 || blocks > (1u << 20) || per < 1 || per > 1024 || launches < 1 ||
        launches > 100000 || blocks * per > (1u << 20) || (ilp != 1 && ilp != 4) ||
        per % ilp) {
        fprintf(stderr, "stream: --blocks 1..2^20, --per-thread 1..1024 (blocks x per-thread"
                        " <= 2^20), --launches 1..100000, --ilp 1 or 4 (dividing"
                        " --per-thread)\n");
        return 2;
    }
    unsigned long long n = blocks * STREAM_THREADS * per;
    size_t bytes = (size_t)n * 4;
    float *a = (float *)bench_host_alloc(bytes), *b = (float *)bench_host_alloc(bytes);
    float *c = (float *)bench_host_alloc(bytes);
    srand((unsigned)o.seed);
    for (unsigned long long i = 0; i < n; i++) {
        a[i] = (float)rand() / (float)RAND_MAX;
        b[i] = (float)rand() / (float)RAND_MAX;
    }
    stream_launch l = {dim3((unsigned)blocks), dim3(STREAM_THREADS), NULL, NULL, NULL,
                       (unsigned)per, n, (int)ilp};
    float *d_a, *d_b, *d_c;
    BENCH_CHECK(cudaMalloc((void **)&d_a, bytes));
    BENCH_CHECK(cudaMalloc((void **)&d_b, bytes));
    BENCH_CHECK(cudaMalloc((void **)&d_c, bytes));
    BENCH_CHECK(cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice));
    BENCH_CHECK(cudaMemcpy(d_b, b, bytes, cudaMemcpyHostToDevice));
    l.a = d_a;
    l.b = d_b;
    l.c = d_c;
    float ms = bench_time_pipeline(launch, &l, (int)launches);
    BENCH_CHECK(cudaMemcpy(c, d_c, bytes, cudaMemcpyDeviceToHost));
    char why[160] = "", sizes[96];
    size_t bad = verify(a, b, c, n, why, sizeof why);
    snprintf(sizes, sizeof sizes, "blocks=%llu per_thread=%llu launches=%llu ilp=%llu",
             blocks, per, launches, ilp);
    int rc = bench_report("stream", bad, why, ms, (int)launches, l.grid, l.block, sizes);
    cudaFree(d_a);
    cudaFree(d_b);
    cudaFree(d_c);
    free(a);
    free(b);
    free(c);
    return rc;
}
