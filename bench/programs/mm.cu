/* Matrix multiplication benchmark: C = A B with 16x16 shared-memory tiles; exact check
 * against the CPU reference (entries are quarters, so float sums are exact). */
#include "bench_common.h"

#include "../kernels/mm.cuh"
#include "../reference/bench_compare.c"
#include "../reference/mm.c"

typedef struct {
    dim3 grid, block;
    const float *a, *b;
    float *c;
    unsigned m, n, k;
} mm_launch;

static void launch(void *p)
{
    mm_launch *l = (mm_launch *)p;
    mm_tiled<<<l->grid, l->block>>>(l->a, l->b, l->c, l->m, l->n, l->k);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--m", "--n", "--k", NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names, "mm [--m=ROWS_A] [--n=COLS_B] [--k=COLS_A] (multiples of 16)");
    unsigned long long m = bench_opt_u64(&o, "--m", MM_SMALL_M, MM_DEFAULT_M);
    unsigned long long n = bench_opt_u64(&o, "--n", MM_SMALL_N, MM_DEFAULT_N);
    unsigned long long k = bench_opt_u64(&o, "--k", MM_SMALL_K, MM_DEFAULT_K);
    if (m < MM_TILE || n < MM_TILE || k < MM_TILE || m % MM_TILE || n % MM_TILE ||
        k % MM_TILE || k > MM_MAX_K || m > 65535ull * MM_TILE || n > (1ull << 20) ||
        m * n > (1ull << 28) || m * k > (1ull << 28) || k * n > (1ull << 28)) {
        fprintf(stderr, "mm: sizes must be multiples of %d, k <= %u, matrices <= 2^28 entries\n",
                MM_TILE, MM_MAX_K);
        return 2;
    }
    float *a = (float *)bench_host_alloc(m * k * 4), *b = (float *)bench_host_alloc(k * n * 4);
    float *c = (float *)bench_host_alloc(m * n * 4), *want = (float *)bench_host_alloc(m * n * 4);
    mm_generate(a, b, (uint32_t)m, (uint32_t)n, (uint32_t)k, o.seed);
    mm_reference(a, b, want, (uint32_t)m, (uint32_t)n, (uint32_t)k);

    mm_launch l;
    float *d_a, *d_b, *d_c;
    BENCH_CHECK(cudaMalloc((void **)&d_a, m * k * 4));
    BENCH_CHECK(cudaMalloc((void **)&d_b, k * n * 4));
    BENCH_CHECK(cudaMalloc((void **)&d_c, m * n * 4));
    BENCH_CHECK(cudaMemcpy(d_a, a, m * k * 4, cudaMemcpyHostToDevice));
    BENCH_CHECK(cudaMemcpy(d_b, b, k * n * 4, cudaMemcpyHostToDevice));
    l.block = dim3(MM_TILE, MM_TILE);
    l.grid = dim3((unsigned)(n / MM_TILE), (unsigned)(m / MM_TILE));
    l.a = d_a;
    l.b = d_b;
    l.c = d_c;
    l.m = (unsigned)m;
    l.n = (unsigned)n;
    l.k = (unsigned)k;
    float ms = bench_time_median(launch, &l, o.repeat);
    BENCH_CHECK(cudaMemcpy(c, d_c, m * n * 4, cudaMemcpyDeviceToHost));

    char why[160] = "", sizes[96];
    size_t bad = bench_compare_f32(c, want, (size_t)(m * n), 0.0, 0.0, why, sizeof why);
    snprintf(sizes, sizeof sizes, "m=%llu n=%llu k=%llu", m, n, k);
    int rc = bench_report("mm", bad, why, ms, o.repeat, l.grid, l.block, sizes);
    cudaFree(d_a);
    cudaFree(d_b);
    cudaFree(d_c);
    free(a);
    free(b);
    free(c);
    free(want);
    return rc;
}
