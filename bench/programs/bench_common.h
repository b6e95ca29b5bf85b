/* Helpers shared by the standalone benchmark programs: options, CUDA error checks, event
 * timing and the one result line. Header-only and CUDA runtime only, so that each program
 * builds with a plain `nvcc prog.cu -o prog`.
 *
 * Every program accepts --small, --seed=N, --repeat=N and its own --name=value sizes; it
 * prints exactly one line on stdout:
 *   RESULT name=<kernel> verified=<yes|no> kernel_ms=<median> repeats=<n> grid=XxYxZ
 *          block=XxYxZ <sizes...> t0_ns=<T> t1_ns=<T>
 * where t0_ns and t1_ns (CLOCK_MONOTONIC, one clock for every process of the machine) bound
 * the timed launches, so that a harness running several programs at once can tell the
 * span of their GPU work apart from their start-up.
 * and exits 0 when verified, 1 when the output does not match the CPU reference, 2 on a
 * usage or CUDA error. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_CHECK(call)                                                                   \
    do {                                                                                    \
        cudaError_t bench_err_ = (call);                                                    \
        if (bench_err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                   \
                    cudaGetErrorString(bench_err_));                                        \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

#define BENCH_MAX_REPEAT 100

typedef struct {
    int small;
    uint64_t seed;
    int repeat;
    int argc;
    char **argv;
} bench_opts;

static void bench_usage_exit(const char *usage)
{
    fprintf(stderr, "usage: %s\n  common options: --small --seed=N --repeat=N (1..%d)\n", usage,
            BENCH_MAX_REPEAT);
    exit(2);
}

/* Value of --name=V, or NULL when absent. */
static const char *bench_opt_raw(const bench_opts *o, const char *name)
{
    size_t len = strlen(name);
    for (int i = 1; i < o->argc; i++)
        if (strncmp(o->argv[i], name, len) == 0 && o->argv[i][len] == '=')
            return o->argv[i] + len + 1;
    return NULL;
}

static unsigned long long bench_parse_u64(const char *name, const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *s == '-' || *end != '\0') {
        fprintf(stderr, "bad value for %s: '%s'\n", name, s);
        exit(2);
    }
    return v;
}

/* Parses the common options; every argument must be a common option or one of the
 * program's own (names, a NULL-terminated list of "--name"). */
static void bench_parse(bench_opts *o, int argc, char **argv, const char *const *names,
                        const char *usage)
{
    o->small = 0;
    o->seed = 1;
    o->repeat = 5;
    o->argc = argc;
    o->argv = argv;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int known = strcmp(a, "--small") == 0 || strncmp(a, "--seed=", 7) == 0 ||
                    strncmp(a, "--repeat=", 9) == 0;
        for (const char *const *n = names; !known && *n; n++) {
            size_t len = strlen(*n);
            known = strncmp(a, *n, len) == 0 && a[len] == '=';
        }
        if (!known)
            bench_usage_exit(usage);
        if (strcmp(a, "--small") == 0)
            o->small = 1;
    }
    const char *s = bench_opt_raw(o, "--seed");
    if (s)
        o->seed = bench_parse_u64("--seed", s);
    s = bench_opt_raw(o, "--repeat");
    if (s) {
        unsigned long long r = bench_parse_u64("--repeat", s);
        if (r < 1 || r > BENCH_MAX_REPEAT)
            bench_usage_exit(usage);
        o->repeat = (int)r;
    }
}

/* --name=V if given, else the small or default size. */
static unsigned long long bench_opt_u64(const bench_opts *o, const char *name,
                                        unsigned long long small, unsigned long long dflt)
{
    const char *s = bench_opt_raw(o, name);
    return s ? bench_parse_u64(name, s) : (o->small ? small : dflt);
}

static void *bench_host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

static int bench_cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Bounds of the timed launches, for the result line (CLOCK_MONOTONIC ns). */
static unsigned long long bench_t0_ns, bench_t1_ns;

static unsigned long long bench_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* With BENCH_BARRIER=DIR set (by a harness running several programs at once), says ready
 * (DIR/ready.PID) and waits for DIR/go, so that the timed launches of every program start
 * together, after all of them have started up. Gives up after a minute. */
static void bench_barrier(void)
{
    const char *dir = getenv("BENCH_BARRIER");
    if (!dir || !*dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/ready.%ld", dir, (long)getpid());
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/go", dir);
    struct timespec nap = {0, 200000};
    for (int i = 0; i < 300000 && access(path, F_OK) != 0; i++)
        nanosleep(&nap, NULL);
}

/* Times one launch per repeat with CUDA events after one untimed warm-up launch (whose
 * output is the one verified; every launch writes the same output). Returns the median. */
typedef void (*bench_launch_fn)(void *ctx);

static inline float bench_time_median(bench_launch_fn launch, void *ctx, int repeat)
{
    float ms[BENCH_MAX_REPEAT];
    cudaEvent_t start, stop;
    BENCH_CHECK(cudaEventCreate(&start));
    BENCH_CHECK(cudaEventCreate(&stop));
    launch(ctx);
    BENCH_CHECK(cudaGetLastError());
    BENCH_CHECK(cudaDeviceSynchronize());
    bench_barrier();
    bench_t0_ns = bench_now_ns();
    for (int r = 0; r < repeat; r++) {
        BENCH_CHECK(cudaEventRecord(start, 0));
        launch(ctx);
        BENCH_CHECK(cudaGetLastError());
        BENCH_CHECK(cudaEventRecord(stop, 0));
        BENCH_CHECK(cudaEventSynchronize(stop));
        BENCH_CHECK(cudaEventElapsedTime(&ms[r], start, stop));
    }
    bench_t1_ns = bench_now_ns();
    BENCH_CHECK(cudaEventDestroy(start));
    BENCH_CHECK(cudaEventDestroy(stop));
    qsort(ms, (size_t)repeat, sizeof ms[0], bench_cmp_float);
    return ms[repeat / 2];
}

/* Queues `launches` launches back to back, as an application's pipeline does, after one
 * untimed warm-up launch, and waits once at the end. Returns the mean milliseconds per
 * launch over the span (host clock: the span of all of them, queueing included). */
static inline float bench_time_pipeline(bench_launch_fn launch, void *ctx, int launches)
{
    launch(ctx);
    BENCH_CHECK(cudaGetLastError());
    BENCH_CHECK(cudaDeviceSynchronize());
    bench_barrier();
    bench_t0_ns = bench_now_ns();
    for (int r = 0; r < launches; r++) {
        launch(ctx);
        BENCH_CHECK(cudaGetLastError());
    }
    BENCH_CHECK(cudaDeviceSynchronize());
    bench_t1_ns = bench_now_ns();
    return (float)((double)(bench_t1_ns - bench_t0_ns) / 1e6 / launches);
}

/* Prints the result line; returns the exit status. */
static int bench_report(const char *name, size_t mismatches, const char *why, float ms,
                        int repeat, dim3 grid, dim3 block, const char *sizes)
{
    if (mismatches)
        fprintf(stderr, "%s: %zu mismatching elements; first: %s\n", name, mismatches, why);
    printf("RESULT name=%s verified=%s kernel_ms=%.4f repeats=%d grid=%ux%ux%u block=%ux%ux%u "
           "%s t0_ns=%llu t1_ns=%llu\n",
           name, mismatches ? "no" : "yes", ms, repeat, grid.x, grid.y, grid.z, block.x,
           block.y, block.z, sizes, bench_t0_ns, bench_t1_ns);
    return mismatches ? 1 : 0;
}

#endif
