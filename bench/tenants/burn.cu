/* A compute-bound tenant: every thread runs two independent chains of fused multiply-adds
 * on its own input, with almost no memory traffic. Queues --launches launches back to back
 * as an application pipeline does, then verifies a sample of the output against the same
 * chains computed with fmaf on the CPU (bit-exact: both round each FMA once).
 * Not one of the paper's kernels: a pair of our own for the tenants harness, with stream. */
#include "../programs/bench_common.h"

#include <math.h>

#define BURN_THREADS 256
#define BURN_A 0.9990234375f   /* 1 - 2^-10: the chains converge and stay finite */
#define BURN_B 0.0009765625f

extern "C" __global__ void burn_fma(const float *in, float *out, unsigned iters, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = in[i], y = 1.0f - in[i];
    for (unsigned k = 0; k < iters; k++) {
        x = __fmaf_rn(x, BURN_A, BURN_B);
        y = __fmaf_rn(y, BURN_A, BURN_B);
    }
    out[i] = x + y;
}

static float burn_cpu(float v, unsigned iters)
{
    float x = v, y = 1.0f - v;
    for (unsigned k = 0; k < iters; k++) {
        x = fmaf(x, BURN_A, BURN_B);
        y = fmaf(y, BURN_A, BURN_B);
    }
    return x + y;
}

typedef struct {
    dim3 grid, block;
    const float *in;
    float *out;
    unsigned iters, n;
} burn_launch;

static void launch(void *p)
{
    burn_launch *l = (burn_launch *)p;
    burn_fma<<<l->grid, l->block>>>(l->in, l->out, l->iters, l->n);
}

static size_t check_one(const float *in, const float *out, unsigned i, unsigned iters,
                        size_t bad, char *why, size_t len)
{
    float want = burn_cpu(in[i], iters);
    if (out[i] == want)
        return bad;
    if (!bad)
        snprintf(why, len, "element %u: %.9g, want %.9g", i, out[i], want);
    return bad + 1;
}

/* Every 61st element and the last: enough to catch a wrong slice, cheap on the CPU. */
static size_t verify(const float *in, const float *out, unsigned n, unsigned iters, char *why,
                     size_t len)
{
    size_t bad = 0;
    for (unsigned i = 0; i < n; i += 61)
        bad = check_one(in, out, i, iters, bad, why, len);
    return check_one(in, out, n - 1, iters, bad, why, len);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--blocks", "--iters", "--launches", NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names, "burn [--blocks=N] [--iters=N] [--launches=N]");
    unsigned long long blocks = bench_opt_u64(&o, "--blocks", 264, 8448);
    unsigned long long iters = bench_opt_u64(&o, "--iters", 256, 4096);
    unsigned long long launches = bench_opt_u64(&o, "--launches", 5, 200);
    if (blocks < 1 || blocks > (1u << 20) || iters < 1 || iters > (1u << 20) || launches < 1 ||
        launches > 100000) {
        fprintf(stderr, "burn: --blocks 1..2^20, --iters 1..2^20, --launches 1..100000\n");
        return 2;
    }
    unsigned n = (unsigned)blocks * BURN_THREADS;
    float *in = (float *)bench_host_alloc((size_t)n * 4), *out = (float *)bench_host_alloc((size_t)n * 4);
    srand((unsigned)o.seed);
    for (unsigned i = 0; i < n; i++)
        in[i] = (float)rand() / (float)RAND_MAX;
    burn_launch l = {dim3((unsigned)blocks), dim3(BURN_THREADS), NULL, NULL, (unsigned)iters, n};
    float *d_in, *d_out;
    BENCH_CHECK(cudaMalloc((void **)&d_in, (size_t)n * 4));
    BENCH_CHECK(cudaMalloc((void **)&d_out, (size_t)n * 4));
    BENCH_CHECK(cudaMemcpy(d_in, in, (size_t)n * 4, cudaMemcpyHostToDevice));
    l.in = d_in;
    l.out = d_out;
    float ms = bench_time_pipeline(launch, &l, (int)launches);
    BENCH_CHECK(cudaMemcpy(out, d_out, (size_t)n * 4, cudaMemcpyDeviceToHost));
    char why[160] = "", sizes[96];
    size_t bad = verify(in, out, n, (unsigned)iters, why, sizeof why);
    snprintf(sizes, sizeof sizes, "blocks=%llu iters=%llu launches=%llu", blocks, iters, launches);
    int rc = bench_report("burn", bad, why, ms, (int)launches, l.grid, l.block, sizes);
    cudaFree(d_in);
    cudaFree(d_out);
    free(in);
    free(out);
    return rc;
}
