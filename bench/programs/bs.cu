/* Black-Scholes benchmark: n options, each priced under n_vol volatilities; mean call and
 * put checked against the double-precision reference within BS_ATOL + BS_RTOL |want|. */
#include "bench_common.h"

#include "../kernels/bs.cuh"
#include "../reference/bench_compare.c"
#include "../reference/bs.c"

typedef struct {
    dim3 grid, block;
    float *d[5]; /* s x t call put */
    unsigned n_vol, n;
} bs_launch;

static void launch(void *p)
{
    bs_launch *l = (bs_launch *)p;
    bs_sweep<<<l->grid, l->block>>>(l->d[0], l->d[1], l->d[2], l->d[3], l->d[4], BS_RATE,
                                    BS_VOL0, BS_DVOL, l->n_vol, l->n);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--options", "--vols", NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names, "bs [--options=N] [--vols=N]");
    unsigned long long n = bench_opt_u64(&o, "--options", BS_SMALL_OPTIONS, BS_DEFAULT_OPTIONS);
    unsigned long long nv = bench_opt_u64(&o, "--vols", BS_SMALL_VOLS, BS_DEFAULT_VOLS);
    if (n < 1 || n > (1ull << 28) || nv < 1 || nv > 1024) {
        fprintf(stderr, "bs: --options in 1..2^28, --vols in 1..1024\n");
        return 2;
    }
    float *h[5];
    for (int i = 0; i < 5; i++)
        h[i] = (float *)bench_host_alloc(n * 4);
    float *want_c = (float *)bench_host_alloc(n * 4), *want_p = (float *)bench_host_alloc(n * 4);
    bs_generate(h[0], h[1], h[2], n, o.seed);
    bs_reference(h[0], h[1], h[2], want_c, want_p, n, BS_RATE, BS_VOL0, BS_DVOL, (uint32_t)nv);

    bs_launch l;
    for (int i = 0; i < 5; i++) {
        BENCH_CHECK(cudaMalloc((void **)&l.d[i], n * 4));
        if (i < 3)
            BENCH_CHECK(cudaMemcpy(l.d[i], h[i], n * 4, cudaMemcpyHostToDevice));
    }
    l.block = dim3(BS_BLOCK_THREADS);
    l.grid = dim3((unsigned)((n + BS_BLOCK_THREADS - 1) / BS_BLOCK_THREADS));
    l.n_vol = (unsigned)nv;
    l.n = (unsigned)n;
    float ms = bench_time_median(launch, &l, o.repeat);
    BENCH_CHECK(cudaMemcpy(h[3], l.d[3], n * 4, cudaMemcpyDeviceToHost));
    BENCH_CHECK(cudaMemcpy(h[4], l.d[4], n * 4, cudaMemcpyDeviceToHost));

    char why[160] = "", sizes[96];
    size_t bad = bench_compare_f32(h[3], want_c, n, BS_ATOL, BS_RTOL, why, sizeof why);
    if (!bad)
        bad = bench_compare_f32(h[4], want_p, n, BS_ATOL, BS_RTOL, why, sizeof why);
    snprintf(sizes, sizeof sizes, "options=%llu vols=%llu", n, nv);
    int rc = bench_report("bs", bad, why, ms, o.repeat, l.grid, l.block, sizes);
    for (int i = 0; i < 5; i++) {
        cudaFree(l.d[i]);
        free(h[i]);
    }
    free(want_c);
    free(want_p);
    return rc;
}
