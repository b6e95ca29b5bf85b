/* emu-bench: the emulator's speed on the benchmark kernels, in thread-instructions per
 * second (instructions times the threads that executed them), per worker thread.
 *   emu-bench PTX_DIR [--kernel NAME] [--workers N] [--size small|default]
 *             [--repeat R] [--seed S]
 * NAME is a benchmark kernel or "vadd", a vector addition written here (c = a + b over
 * 4 Mi floats, or 256 Ki with --size small). Every run is verified (against the CPU
 * reference); the median of R timed launches is reported after one warm-up launch.
 * Exit 1 when a kernel fails or does not verify. */
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

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of the whole process (all worker threads). */
static double cpu_now(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* Wall and CPU seconds of one launch. */
typedef struct timing {
    double wall, cpu;
} timing;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The medians of n timings. */
static timing median(timing *t, unsigned n)
{
    double wall[1000], cpu[1000];
    for (unsigned i = 0; i < n; i++) {
        wall[i] = t[i].wall;
        cpu[i] = t[i].cpu;
    }
    qsort(wall, n, sizeof wall[0], cmp_double);
    qsort(cpu, n, sizeof cpu[0], cmp_double);
    return (timing){wall[n / 2], cpu[n / 2]};
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

/* Rates: per second of wall time, per worker, and per second of CPU time (per core). */
static void report(const char *name, uint64_t blocks, uint64_t insns, timing t, unsigned workers)
{
    double rate = (double)insns / t.wall;
    printf("%-5s blocks=%-6llu thread_insns=%-11llu wall_s=%.4f cpu_s=%.4f "
           "Minst_per_s=%.1f per_worker=%.1f per_cpu_s=%.1f\n",
           name, (unsigned long long)blocks, (unsigned long long)insns, t.wall, t.cpu,
           rate / 1e6, rate / 1e6 / workers, (double)insns / t.cpu / 1e6);
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
    timing times[1000];
    kemu_launch_stats st = {0};
    for (unsigned r = 0; rc == 0 && r <= o->repeat; r++) {
        double t0 = now(), c0 = cpu_now();
        rc = emu_wl_launch(&w, &in, &st, &err);
        if (r > 0)
            times[r - 1] = (timing){now() - t0, cpu_now() - c0};
    }
    char why[256] = "";
    if (rc == 0 && (rc = emu_wl_copy_out(&w, &in, &err)) == 0 &&
        k->verify(&in, why, sizeof why) != KW_OK)
        rc = -1;
    if (rc == 0) {
        report(k->name, kw_total_blocks(&in), st.thread_instructions, median(times, o->repeat),
               kemu_device_workers(dev));
    } else {
        fprintf(stderr, "%s: %s\n", k->name, rc == -1 ? why : err.message);
    }
    if (w.dev)
        emu_wl_release(&w);
    k->destroy(&in);
    return rc != 0;
}

static const char vadd_ptx[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 n)\n{\n"
    "\t.reg .pred %p;\n\t.reg .b32 %r<6>;\n\t.reg .f32 %f<4>;\n\t.reg .b64 %rd<8>;\n"
    "\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, %ntid.x;\n\tmov.u32 %r3, %tid.x;\n"
    "\tmad.lo.s32 %r4, %r1, %r2, %r3;\n\tld.param.u32 %r5, [n];\n"
    "\tsetp.ge.u32 %p, %r4, %r5;\n\t@%p bra DONE;\n"
    "\tld.param.u64 %rd1, [pa];\n\tld.param.u64 %rd2, [pb];\n\tld.param.u64 %rd3, [pc];\n"
    "\tmul.wide.u32 %rd4, %r4, 4;\n\tadd.s64 %rd5, %rd1, %rd4;\n\tadd.s64 %rd6, %rd2, %rd4;\n"
    "\tadd.s64 %rd7, %rd3, %rd4;\n\tld.global.f32 %f1, [%rd5];\n\tld.global.f32 %f2, [%rd6];\n"
    "\tadd.f32 %f3, %f1, %f2;\n\tst.global.f32 [%rd7], %f3;\nDONE:\n\tret;\n}\n";

static int bench_vadd(kemu_device *dev, const options *o)
{
    const uint32_t n = o->size == KW_SIZE_SMALL ? 1u << 18 : 1u << 22;
    float *a = malloc(n * 4ul), *b = malloc(n * 4ul), *c = malloc(n * 4ul);
    kemu_module *mod = NULL;
    kemu_function *fn;
    kemu_devptr d[3] = {0};
    kemu_error err = {0};
    int rc = a && b && c ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        a[i] = (float)i;
        b[i] = (float)(o->seed % 1000) * 0.25f;
    }
    if (rc == 0)
        rc = kemu_module_load(dev, vadd_ptx, sizeof vadd_ptx - 1, &mod, &err);
    if (rc == 0)
        rc = kemu_module_get_function(mod, "vadd", &fn, &err);
    for (int i = 0; rc == 0 && i < 3; i++)
        rc = kemu_mem_alloc(dev, n * 4ul, &d[i], &err);
    if (rc == 0 && (rc = kemu_memcpy_htod(dev, d[0], a, n * 4ul, &err)) == 0)
        rc = kemu_memcpy_htod(dev, d[1], b, n * 4ul, &err);
    uint8_t params[28];
    memcpy(params, d, 24);
    memcpy(params + 24, &n, 4);
    kemu_launch_stats st = {0};
    kemu_launch_config cfg = {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1},
                              .params = params, .params_bytes = sizeof params, .stats = &st};
    timing times[1000];
    for (unsigned r = 0; rc == 0 && r <= o->repeat; r++) {
        double t0 = now(), c0 = cpu_now();
        rc = kemu_launch(fn, &cfg, &err);
        if (r > 0)
            times[r - 1] = (timing){now() - t0, cpu_now() - c0};
    }
    if (rc == 0)
        rc = kemu_memcpy_dtoh(dev, c, d[2], n * 4ul, &err);
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        if (c[i] != a[i] + b[i]) {
            snprintf(err.message, sizeof err.message, "c[%u] wrong", i);
            rc = -1;
        }
    if (rc == 0) {
        report("vadd", cfg.grid[0], st.thread_instructions, median(times, o->repeat),
               kemu_device_workers(dev));
    } else {
        fprintf(stderr, "vadd: %s\n", err.message);
    }
    for (int i = 0; i < 3; i++)
        if (d[i])
            kemu_mem_free(dev, d[i], NULL);
    kemu_module_unload(mod);
    free(a);
    free(b);
    free(c);
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
    if (!o.kernel || strcmp(o.kernel, "vadd") == 0) {
        bad |= bench_vadd(dev, &o);
        ran++;
    }
    kemu_device_destroy(dev);
    if (!ran) {
        fprintf(stderr, "emu-bench: no kernel %s\n", o.kernel ? o.kernel : "");
        return 1;
    }
    return bad;
}
