/* Pointer-chasing benchmark: n_threads threads each follow a random cycle of 2^bits
 * indices `steps` times; every thread's end point is checked exactly. */
#include "bench_common.h"

#include "../kernels/pc.cuh"
#include "../reference/bench_compare.c"
#include "../reference/pc.c"

typedef struct {
    dim3 grid, block;
    const unsigned *next;
    unsigned *out;
    unsigned mask, steps, n_threads;
} pc_launch;

static void launch(void *p)
{
    pc_launch *l = (pc_launch *)p;
    pc_chase<<<l->grid, l->block>>>(l->next, l->out, l->mask, l->steps, l->n_threads);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--bits", "--threads", "--steps", NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names, "pc [--bits=LOG2N] [--threads=N] [--steps=N]");
    unsigned long long bits = bench_opt_u64(&o, "--bits", PC_SMALL_BITS, PC_DEFAULT_BITS);
    unsigned long long threads = bench_opt_u64(&o, "--threads", PC_SMALL_THREADS,
                                               PC_DEFAULT_THREADS);
    unsigned long long steps = bench_opt_u64(&o, "--steps", PC_SMALL_STEPS, PC_DEFAULT_STEPS);
    if (bits < PC_MIN_BITS || bits > PC_MAX_BITS || threads < 1 || threads > (1ull << 30) ||
        steps > (1ull << 20)) {
        fprintf(stderr, "pc: --bits in %d..%d, --threads in 1..2^30, --steps <= 2^20\n",
                PC_MIN_BITS, PC_MAX_BITS);
        return 2;
    }
    pc_perm perm;
    pc_perm_init(&perm, (unsigned)bits, o.seed);
    size_t n = (size_t)1 << bits;
    uint32_t *next = (uint32_t *)bench_host_alloc(n * 4);
    uint32_t *out = (uint32_t *)bench_host_alloc(threads * 4);
    uint32_t *want = (uint32_t *)bench_host_alloc(threads * 4);
    pc_generate(next, &perm);
    pc_reference(&perm, (uint32_t)steps, want, threads);

    pc_launch l;
    unsigned *d_next, *d_out;
    BENCH_CHECK(cudaMalloc((void **)&d_next, n * 4));
    BENCH_CHECK(cudaMalloc((void **)&d_out, threads * 4));
    BENCH_CHECK(cudaMemcpy(d_next, next, n * 4, cudaMemcpyHostToDevice));
    l.block = dim3(PC_BLOCK_THREADS);
    l.grid = dim3((unsigned)((threads + PC_BLOCK_THREADS - 1) / PC_BLOCK_THREADS));
    l.next = d_next;
    l.out = d_out;
    l.mask = perm.mask;
    l.steps = (unsigned)steps;
    l.n_threads = (unsigned)threads;
    float ms = bench_time_median(launch, &l, o.repeat);
    BENCH_CHECK(cudaMemcpy(out, d_out, threads * 4, cudaMemcpyDeviceToHost));

    char why[160] = "", sizes[96];
    size_t bad = bench_compare_u32(out, want, threads, why, sizeof why);
    snprintf(sizes, sizeof sizes, "bits=%llu threads=%llu steps=%llu", bits, threads, steps);
    int rc = bench_report("pc", bad, why, ms, o.repeat, l.grid, l.block, sizes);
    cudaFree(d_next);
    cudaFree(d_out);
    free(next);
    free(out);
    free(want);
    return rc;
}
