/* Stencil benchmark: one 7-point update of an nx x ny x nz grid on a 3-D grid of thread
 * blocks (each thread a column of ST_Z_PER_THREAD points); exact check against the CPU
 * reference. */
#include "bench_common.h"

#include "../kernels/st.cuh"
#include "../reference/bench_compare.c"
#include "../reference/st.c"

typedef struct {
    dim3 grid, block;
    const float *in;
    float *out;
    unsigned nx, ny, nz;
} st_launch;

static void launch(void *p)
{
    st_launch *l = (st_launch *)p;
    st_stencil7<<<l->grid, l->block>>>(l->in, l->out, l->nx, l->ny, l->nz, ST_C0, ST_C1);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--nx", "--ny", "--nz", NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names, "st [--nx=N] [--ny=N] [--nz=N]");
    unsigned long long nx = bench_opt_u64(&o, "--nx", ST_SMALL_NX, ST_DEFAULT_NX);
    unsigned long long ny = bench_opt_u64(&o, "--ny", ST_SMALL_NY, ST_DEFAULT_NY);
    unsigned long long nz = bench_opt_u64(&o, "--nz", ST_SMALL_NZ, ST_DEFAULT_NZ);
    if (nx < 1 || ny < 1 || nz < 1 || nx > 65536 || ny > 65535ull * ST_BLOCK_Y || nz > 65535 ||
        nx * ny * nz > (1ull << 30)) {
        fprintf(stderr, "st: sizes 1..65535 each (nx up to 65536), at most 2^30 points\n");
        return 2;
    }
    size_t n = (size_t)(nx * ny * nz);
    float *in = (float *)bench_host_alloc(n * 4), *out = (float *)bench_host_alloc(n * 4);
    float *want = (float *)bench_host_alloc(n * 4);
    st_generate(in, n, o.seed);
    st_reference(in, want, (uint32_t)nx, (uint32_t)ny, (uint32_t)nz, ST_C0, ST_C1);

    st_launch l;
    float *d_in, *d_out;
    BENCH_CHECK(cudaMalloc((void **)&d_in, n * 4));
    BENCH_CHECK(cudaMalloc((void **)&d_out, n * 4));
    BENCH_CHECK(cudaMemcpy(d_in, in, n * 4, cudaMemcpyHostToDevice));
    l.block = dim3(ST_BLOCK_X, ST_BLOCK_Y, 1);
    l.grid = dim3((unsigned)((nx + ST_BLOCK_X - 1) / ST_BLOCK_X),
                  (unsigned)((ny + ST_BLOCK_Y - 1) / ST_BLOCK_Y),
                  (unsigned)((nz + ST_Z_PER_THREAD - 1) / ST_Z_PER_THREAD));
    l.in = d_in;
    l.out = d_out;
    l.nx = (unsigned)nx;
    l.ny = (unsigned)ny;
    l.nz = (unsigned)nz;
    float ms = bench_time_median(launch, &l, o.repeat);
    BENCH_CHECK(cudaMemcpy(out, d_out, n * 4, cudaMemcpyDeviceToHost));

    char why[160] = "", sizes[96];
    size_t bad = bench_compare_f32(out, want, n, 0.0, 0.0, why, sizeof why);
    snprintf(sizes, sizeof sizes, "nx=%llu ny=%llu nz=%llu", nx, ny, nz);
    int rc = bench_report("st", bad, why, ms, o.repeat, l.grid, l.block, sizes);
    cudaFree(d_in);
    cudaFree(d_out);
    free(in);
    free(out);
    free(want);
    return rc;
}
