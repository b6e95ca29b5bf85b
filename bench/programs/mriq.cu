/* MRI-Q benchmark: Q over num_x voxels and num_k k-space samples; every element checked
 * against the CPU reference within MRIQ_TOL * sum |phi|^2 (see mriq.h). */
#include "bench_common.h"

#include "../kernels/mriq.cuh"
#include "../reference/bench_compare.c"
#include "../reference/mriq.c"

typedef struct {
    dim3 grid, block;
    float *d[6]; /* x y z kv qr qi, as the kernel's parameters */
    unsigned num_k, num_x;
} mriq_launch;

static void launch(void *p)
{
    mriq_launch *l = (mriq_launch *)p;
    mriq_computeq<<<l->grid, l->block>>>(l->d[0], l->d[1], l->d[2], (const float4 *)l->d[3],
                                         l->d[4], l->d[5], l->num_k, l->num_x);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--voxels", "--samples", NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names, "mriq [--voxels=N] [--samples=K]");
    unsigned long long nx = bench_opt_u64(&o, "--voxels", MRIQ_SMALL_X, MRIQ_DEFAULT_X);
    unsigned long long nk = bench_opt_u64(&o, "--samples", MRIQ_SMALL_K, MRIQ_DEFAULT_K);
    if (nx < 1 || nx > (1ull << 28) || nk < 1 || nk > (1ull << 20)) {
        fprintf(stderr, "mriq: --voxels in 1..2^28, --samples in 1..2^20\n");
        return 2;
    }
    size_t counts[6] = {nx, nx, nx, nk * MRIQ_KV_FLOATS, nx, nx};
    float *h[6];
    for (int i = 0; i < 6; i++)
        h[i] = (float *)bench_host_alloc(counts[i] * 4);
    float *want_r = (float *)bench_host_alloc(nx * 4), *want_i = (float *)bench_host_alloc(nx * 4);
    mriq_inputs in = {h[0], h[1], h[2], h[3]};
    mriq_generate(&in, (uint32_t)nx, (uint32_t)nk, o.seed);
    mriq_reference(&in, (uint32_t)nx, (uint32_t)nk, want_r, want_i);

    mriq_launch l;
    for (int i = 0; i < 6; i++) {
        BENCH_CHECK(cudaMalloc((void **)&l.d[i], counts[i] * 4));
        if (i < 4)
            BENCH_CHECK(cudaMemcpy(l.d[i], h[i], counts[i] * 4, cudaMemcpyHostToDevice));
    }
    l.block = dim3(MRIQ_BLOCK_THREADS);
    l.grid = dim3((unsigned)((nx + MRIQ_BLOCK_THREADS - 1) / MRIQ_BLOCK_THREADS));
    l.num_k = (unsigned)nk;
    l.num_x = (unsigned)nx;
    float ms = bench_time_median(launch, &l, o.repeat);
    BENCH_CHECK(cudaMemcpy(h[4], l.d[4], nx * 4, cudaMemcpyDeviceToHost));
    BENCH_CHECK(cudaMemcpy(h[5], l.d[5], nx * 4, cudaMemcpyDeviceToHost));

    char why[160] = "", sizes[96];
    double tol = mriq_tolerance(&in, (uint32_t)nk);
    size_t bad = bench_compare_f32(h[4], want_r, nx, tol, 0.0, why, sizeof why);
    if (!bad)
        bad = bench_compare_f32(h[5], want_i, nx, tol, 0.0, why, sizeof why);
    snprintf(sizes, sizeof sizes, "voxels=%llu samples=%llu tol=%.3g", nx, nk, tol);
    int rc = bench_report("mriq", bad, why, ms, o.repeat, l.grid, l.block, sizes);
    for (int i = 0; i < 6; i++) {
        cudaFree(l.d[i]);
        free(h[i]);
    }
    free(want_r);
    free(want_i);
    return rc;
}
