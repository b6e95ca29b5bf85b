/* Slicing overhead, as in the paper's figure: for each benchmark kernel at the default
 * size, T_sliced(S) / T_whole - 1 where the grid runs as back-to-back slices of S blocks
 * on one stream (S from one block through fractions of a wave of the GPU up to the whole
 * grid). Times are CUDA-event times, the median of `reps` runs after a warm-up. Prints a
 * table, writes a CSV, and reports the smallest slice size within 2% overhead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_instance.h"

#define MAX_SLICES 16384
#define MAX_SIZES 40
#define WITHIN 0.02

typedef struct timer {
    CUevent e0, e1;
} timer;

/* Median time in ms of reps runs of the whole grid (sizes == NULL) or of the plan. */
static bool time_runs(const kernel_pair *kp, const bench_instance *b, const uint32_t *sizes,
                      unsigned n, unsigned reps, timer *t, double *ms_out)
{
    double ms[64];
    if (reps > 64)
        reps = 64;
    for (unsigned r = 0; r <= reps; r++) {  /* run 0 is the warm-up */
        bool ok = !cu_failed(cuEventRecord(t->e0, NULL), "cuEventRecord", kp->name) &&
                  (sizes ? launch_slices(kp, b->params, &b->shape, sizes, n, NULL)
                         : launch_whole(kp, b->params, &b->shape, NULL)) &&
                  !cu_failed(cuEventRecord(t->e1, NULL), "cuEventRecord", kp->name) &&
                  !cu_failed(cuEventSynchronize(t->e1), "kernel", kp->name);
        float f = 0;
        if (!ok || cu_failed(cuEventElapsedTime(&f, t->e0, t->e1), "cuEventElapsedTime", kp->name))
            return false;
        if (r > 0)
            ms[r - 1] = f;
    }
    *ms_out = median(ms, reps);
    return true;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* 1, 2, 4, ... 128 blocks, one block per SM, fractions and multiples of a wave, and the
 * whole grid; sorted, without repeats, none needing more than MAX_SLICES launches. */
static unsigned slice_sizes(uint32_t total, uint32_t sms, uint32_t wave, uint32_t *out)
{
    uint32_t c[MAX_SIZES];
    unsigned n = 0;
    for (uint32_t s = 1; s <= 128; s *= 2)
        c[n++] = s;
    c[n++] = sms;
    for (uint32_t d = 8; d >= 2; d /= 2)
        c[n++] = wave / d;
    for (uint32_t m = 1; m <= 64 && n < MAX_SIZES - 1; m *= 2)
        c[n++] = wave * m;
    c[n++] = total;
    qsort(c, n, sizeof c[0], cmp_u32);
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        if (c[i] == 0 || c[i] > total || (k && out[k - 1] == c[i]))
            continue;
        if ((total + c[i] - 1) / c[i] > MAX_SLICES)
            continue;
        out[k++] = c[i];
    }
    return k;
}

static int measure_one(const char *dir, const kw_kernel *k, uint64_t seed, unsigned reps,
                       FILE *csv, uint32_t *plan, int sms)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, k->ptx_file);
    sliced_module sm;
    kernel_pair kp;
    bench_instance b;
    timer t = {0};
    memset(&kp, 0, sizeof kp);
    memset(&b, 0, sizeof b);
    if (!sliced_module_load(path, &sm))
        return 1;
    int bad = 1, per_sm = 0;
    double whole;
    if (!kernel_pair_get(&sm, k->entry, &kp) ||
        !bench_instance_setup(&b, k, &kp, KW_SIZE_DEFAULT, seed) || !bench_instance_reset(&b) ||
        cu_failed(cuEventCreate(&t.e0, CU_EVENT_DEFAULT), "cuEventCreate", k->name) ||
        cu_failed(cuEventCreate(&t.e1, CU_EVENT_DEFAULT), "cuEventCreate", k->name) ||
        cu_failed(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                      &per_sm, kp.sliced, b.shape.block[0] * b.shape.block[1] * b.shape.block[2],
                      b.shape.shared),
                  "occupancy", k->name) ||
        !time_runs(&kp, &b, NULL, 0, reps, &t, &whole))
        goto out;
    uint32_t total = shape_blocks(&b.shape), wave = (uint32_t)(per_sm * sms);
    uint32_t sizes[MAX_SIZES];
    unsigned n_sizes = slice_sizes(total, (uint32_t)sms, wave, sizes);
    printf("\n%s: %u blocks of %u threads, wave %u blocks (%d per SM), whole %.4f ms\n", k->name,
           total, b.shape.block[0] * b.shape.block[1] * b.shape.block[2], wave, per_sm, whole);
    printf("  %10s %8s %8s %12s %10s\n", "slice", "waves", "slices", "sliced ms", "overhead");
    uint32_t smallest = 0;
    double smallest_ov = 0;
    bad = 0;
    for (unsigned i = 0; i < n_sizes && !bad; i++) {
        unsigned n = plan_uniform(total, sizes[i], plan, MAX_SLICES);
        double ms;
        if (!time_runs(&kp, &b, plan, n, reps, &t, &ms)) {
            bad = 1;
            break;
        }
        double ov = ms / whole - 1.0;
        printf("  %10u %8.3f %8u %12.4f %+9.2f%%\n", sizes[i], (double)sizes[i] / wave, n, ms,
               100.0 * ov);
        fprintf(csv, "%s,%u,%u,%d,%d,%u,%u,%.4f,%u,%.5f,%.5f,%.5f\n", k->name, total,
                b.shape.block[0] * b.shape.block[1] * b.shape.block[2], sms, per_sm, wave,
                sizes[i], (double)sizes[i] / wave, n, whole, ms, ov);
        if (!smallest && ov <= WITHIN) {
            smallest = sizes[i];
            smallest_ov = ov;
        }
    }
    if (!bad)
        printf("SMALLEST_WITHIN_2PCT name=%s slice_blocks=%u waves=%.3f overhead=%+.2f%%\n",
               k->name, smallest, wave ? (double)smallest / wave : 0.0, 100.0 * smallest_ov);
out:
    if (t.e0)
        cuEventDestroy(t.e0);
    if (t.e1)
        cuEventDestroy(t.e1);
    bench_instance_free(&b);
    kernel_pair_clear(&kp);
    sliced_module_unload(&sm);
    if (bad)
        printf("FAIL overhead %s\n", k->name);
    return bad;
}

int measure_overhead(const char *bench_dir, uint64_t seed, unsigned reps, const char *csv_path)
{
    CUdevice dev;
    int sms = 0;
    if (cu_failed(cuCtxGetDevice(&dev), "cuCtxGetDevice", "overhead") ||
        cu_failed(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                  "SM count", "overhead"))
        return 1;
    FILE *csv = fopen(csv_path, "w");
    uint32_t *plan = malloc(MAX_SLICES * sizeof *plan);
    if (!csv || !plan) {
        fprintf(stderr, "cannot write %s\n", csv_path);
        if (csv)
            fclose(csv);
        free(plan);
        return 1;
    }
    fprintf(csv, "kernel,total_blocks,threads_per_block,sms,blocks_per_sm,wave_blocks,"
                 "slice_blocks,slice_waves,n_slices,t_whole_ms,t_sliced_ms,overhead\n");
    size_t n;
    const kw_kernel *const *all = kw_kernels(&n);
    int failures = 0;
    for (size_t i = 0; i < n; i++)
        failures += measure_one(bench_dir, all[i], seed + i, reps, csv, plan, sms);
    free(plan);
    if (fclose(csv) != 0)
        failures++;
    printf("\nCSV written to %s\n", csv_path);
    return failures;
}
