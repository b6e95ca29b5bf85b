/* Tiny Encryption Algorithm benchmark: encrypts n blocks of 64 bits on the GPU and checks
 * every block against the CPU reference (exact match required). */
#include "bench_common.h"

#include "../kernels/tea.cuh"
#include "../reference/bench_compare.c"
#include "../reference/tea.c"

typedef struct {
    dim3 grid, block;
    const unsigned *in;
    unsigned *out;
    uint32_t key[4];
    unsigned n;
} tea_launch;

static void launch(void *p)
{
    tea_launch *l = (tea_launch *)p;
    tea_encrypt<<<l->grid, l->block>>>(l->in, l->out, l->key[0], l->key[1], l->key[2],
                                       l->key[3], l->n);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--blocks", NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names, "tea [--blocks=N64BITBLOCKS]");
    unsigned long long n = bench_opt_u64(&o, "--blocks", TEA_SMALL_BLOCKS, TEA_DEFAULT_BLOCKS);
    if (n < 1 || n > (1ull << 28)) {
        fprintf(stderr, "tea: --blocks must be in 1..2^28\n");
        return 2;
    }
    size_t bytes = (size_t)n * 8;
    uint32_t *in = (uint32_t *)bench_host_alloc(bytes), *out = (uint32_t *)bench_host_alloc(bytes);
    uint32_t *want = (uint32_t *)bench_host_alloc(bytes);
    tea_launch l;
    tea_generate(in, n, l.key, o.seed);
    tea_reference(in, want, n, l.key);

    unsigned *d_in, *d_out;
    BENCH_CHECK(cudaMalloc((void **)&d_in, bytes));
    BENCH_CHECK(cudaMalloc((void **)&d_out, bytes));
    BENCH_CHECK(cudaMemcpy(d_in, in, bytes, cudaMemcpyHostToDevice));
    l.block = dim3(TEA_BLOCK_THREADS);
    l.grid = dim3((unsigned)((n + TEA_BLOCK_THREADS - 1) / TEA_BLOCK_THREADS));
    l.in = d_in;
    l.out = d_out;
    l.n = (unsigned)n;
    float ms = bench_time_median(launch, &l, o.repeat);
    BENCH_CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));

    char why[160] = "", sizes[64];
    size_t bad = bench_compare_u32(out, want, 2 * (size_t)n, why, sizeof why);
    snprintf(sizes, sizeof sizes, "blocks64=%llu", n);
    int rc = bench_report("tea", bad, why, ms, o.repeat, l.grid, l.block, sizes);
    cudaFree(d_in);
    cudaFree(d_out);
    free(in);
    free(out);
    free(want);
    return rc;
}
