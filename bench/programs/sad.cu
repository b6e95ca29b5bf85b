/* SAD benchmark: full-search motion estimation of 8x8 macroblocks over a +-range window;
 * exact check of every SAD against the CPU reference. */
#include "bench_common.h"

#include "../kernels/sad.cuh"
#include "../reference/bench_compare.c"
#include "../reference/sad.c"

typedef struct {
    dim3 grid, block;
    const unsigned char *cur, *ref;
    unsigned *sads;
    unsigned width, height, range;
} sad_launch;

static void launch(void *p)
{
    sad_launch *l = (sad_launch *)p;
    sad_search<<<l->grid, l->block>>>(l->cur, l->ref, l->sads, l->width, l->height, l->range);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"--width", "--height", "--range", NULL};
    bench_opts o;
    bench_parse(&o, argc, argv, names, "sad [--width=W] [--height=H] [--range=R] (W, H multiples of 8)");
    unsigned long long w = bench_opt_u64(&o, "--width", SAD_SMALL_WIDTH, SAD_DEFAULT_WIDTH);
    unsigned long long h = bench_opt_u64(&o, "--height", SAD_SMALL_HEIGHT, SAD_DEFAULT_HEIGHT);
    unsigned long long range = bench_opt_u64(&o, "--range", SAD_SMALL_RANGE, SAD_DEFAULT_RANGE);
    if (w < SAD_MB || h < SAD_MB || w % SAD_MB || h % SAD_MB || w > 16384 || h > 16384 ||
        range > SAD_MAX_RANGE) {
        fprintf(stderr, "sad: width and height multiples of %d up to 16384, range <= %d\n",
                SAD_MB, SAD_MAX_RANGE);
        return 2;
    }
    size_t pixels = (size_t)(w * h), n = pixels / (SAD_MB * SAD_MB) * sad_positions((uint32_t)range);
    uint8_t *cur = (uint8_t *)bench_host_alloc(pixels), *ref = (uint8_t *)bench_host_alloc(pixels);
    uint32_t *sads = (uint32_t *)bench_host_alloc(n * 4), *want = (uint32_t *)bench_host_alloc(n * 4);
    sad_generate(cur, ref, (uint32_t)w, (uint32_t)h, o.seed);
    sad_reference(cur, ref, (uint32_t)w, (uint32_t)h, (uint32_t)range, want);

    sad_launch l;
    unsigned char *d_cur, *d_ref;
    unsigned *d_sads;
    BENCH_CHECK(cudaMalloc((void **)&d_cur, pixels));
    BENCH_CHECK(cudaMalloc((void **)&d_ref, pixels));
    BENCH_CHECK(cudaMalloc((void **)&d_sads, n * 4));
    BENCH_CHECK(cudaMemcpy(d_cur, cur, pixels, cudaMemcpyHostToDevice));
    BENCH_CHECK(cudaMemcpy(d_ref, ref, pixels, cudaMemcpyHostToDevice));
    l.block = dim3(SAD_BLOCK_THREADS);
    l.grid = dim3((unsigned)(w / SAD_MB), (unsigned)(h / SAD_MB));
    l.cur = d_cur;
    l.ref = d_ref;
    l.sads = d_sads;
    l.width = (unsigned)w;
    l.height = (unsigned)h;
    l.range = (unsigned)range;
    float ms = bench_time_median(launch, &l, o.repeat);
    BENCH_CHECK(cudaMemcpy(sads, d_sads, n * 4, cudaMemcpyDeviceToHost));

    char why[160] = "", sizes[96];
    size_t bad = bench_compare_u32(sads, want, n, why, sizeof why);
    snprintf(sizes, sizeof sizes, "width=%llu height=%llu range=%llu", w, h, range);
    int rc = bench_report("sad", bad, why, ms, o.repeat, l.grid, l.block, sizes);
    cudaFree(d_cur);
    cudaFree(d_ref);
    cudaFree(d_sads);
    free(cur);
    free(ref);
    free(sads);
    free(want);
    return rc;
}
