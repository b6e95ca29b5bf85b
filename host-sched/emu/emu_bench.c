/* emu-bench: the emulator's speed on the benchmark kernels, in thread-instructions per
 * second (instructions times the threads that executed them), per worker thread.
 *   emu-bench PTX_DIR [--kernel NAME] [--workers N] [--size small|default]
 *             [--repeat R] [--seed S]
 * Every run is verified against the CPU reference; the median of R timed launches is
 * reported (after one warm-up launch). Exit 1 when a kernel fails or does not verify. */
#include "emu_workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct options {
    const char *dir;
    const char *kernel;
    unsigned workers;
    kw_size size;
    unsigned repeat;
    uint64_t seed;
} options;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int usage(void)
{
    fprintf(stderr, "usage: emu-bench PTX_DIR [--kernel NAME] [--workers N] "
                    "[--size small|default] [--repeat R] [--seed S]\n");
    return 2;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.workers = 1, .size = KW_SIZE_SMALL, .repeat = 3, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-' && !o->dir) {
            o->dir = a;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (strcmp(a, "--kernel") == 0)
            o->kernel = v;
        else if (strcmp(a, "--workers") == 0)
            o->workers = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(a, "--repeat") == 0)
            o->repeat = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(a, "--seed") == 0)
            o->seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--size") == 0 && strcmp(v, "small") == 0)
            o->size = KW_SIZE_SMALL;
        else if (strcmp(a, "--size") == 0 && strcmp(v, "default") == 0)
            o->size = KW_SIZE_DEFAULT;
        else
            return -1;
    }
    return o->dir && o->repeat > 0 && o->repeat <= 1000 ? 0 : -1;
}

static int bench_one(kemu_device *dev, const kw_kernel *k, const options *o)
{
    kw_instance in;
    if (k->create(&in, o->size, o->seed) != KW_OK) {
        fprintf(stderr, "%s: create failed\n", k->name);
        return 1;
    }
    emu_wl w;
    kemu_error err = {0};
    int rc = emu_wl_prepare(&w, dev, o->dir, &in, false, &err);
    double times[1000];
    kemu_launch_stats st = {0};
    for (unsigned r = 0; rc == 0 && r <= o->repeat; r++) {
        double t0 = now();
        rc = emu_wl_launch(&w, &in, &st, &err);
        if (r > 0)
            times[r - 1] = now() - t0;
    }
    char why[256] = "";
    if (rc == 0 && (rc = emu_wl_copy_out(&w, &in, &err)) == 0 &&
        k->verify(&in, why, sizeof why) != KW_OK)
        rc = -1;
    if (rc == 0) {
        qsort(times, o->repeat, sizeof times[0], cmp_double);
        double t = times[o->repeat / 2];
        double rate = (double)st.thread_instructions / t;
        printf("%-5s blocks=%-6llu thread_insns=%-11llu median_s=%.4f "
               "Minst_per_s=%.1f per_worker=%.1f\n",
               k->name, (unsigned long long)kw_total_blocks(&in),
               (unsigned long long)st.thread_instructions, t, rate / 1e6,
               rate / 1e6 / kemu_device_workers(dev));
    } else {
        fprintf(stderr, "%s: %s\n", k->name, rc == -1 ? why : err.message);
    }
    if (w.dev)
        emu_wl_release(&w);
    k->destroy(&in);
    return rc != 0;
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o) != 0)
        return usage();
    kemu_device_config cfg = {.workers = o.workers};
    kemu_device *dev;
    kemu_error err;
    if (kemu_device_create(&cfg, &dev, &err) != 0) {
        fprintf(stderr, "emu-bench: %s\n", err.message);
        return 1;
    }
    printf("workers=%u size=%s repeat=%u\n", kemu_device_workers(dev),
           o.size == KW_SIZE_SMALL ? "small" : "default", o.repeat);
    size_t n;
    const kw_kernel *const *ks = kw_kernels(&n);
    int bad = 0, ran = 0;
    for (size_t i = 0; i < n; i++) {
        if (o.kernel && strcmp(o.kernel, ks[i]->name) != 0)
            continue;
        bad |= bench_one(dev, ks[i], &o);
        ran++;
    }
    kemu_device_destroy(dev);
    if (!ran) {
        fprintf(stderr, "emu-bench: no kernel %s\n", o.kernel ? o.kernel : "");
        return 1;
    }
    return bad;
}
