/* Helpers shared by the standalone benchmark programs: options, CUDA error checks, event
 * timing and the one result line. Header-only and CUDA runtime only, so that each program
 * builds with a plain `nvcc prog.cu -o prog`.
 *
 * Every program accepts --small, --seed=N, --repeat=N and its own --name=value sizes; it
 * prints exactly one line on stdout:
 *   RESULT name=<kernel> verified=<yes|no> kernel_ms=<median> repeats=<n> grid=XxYxZ
 *          block=XxYxZ <sizes...>
 * and exits 0 when verified, 1 when the output does not match the CPU reference, 2 on a
 * usage or CUDA error. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Times one launch per repeat with CUDA events after one untimed warm-up launch (whose
 * output is the one verified; every launch writes the same output). Returns the median. */
typedef void (*bench_launch_fn)(void *ctx);

static float bench_time_median(bench_launch_fn launch, void *ctx, int repeat)
{
    float ms[BENCH_MAX_REPEAT];
    cudaEvent_t start, stop;
    BENCH_CHECK(cudaEventCreate(&start));
    BENCH_CHECK(cudaEventCreate(&stop));
    launch(ctx);
    BENCH_CHECK(cudaGetLastError());
    BENCH_CHECK(cudaDeviceSynchronize());
    for (int r = 0; r < repeat; r++) {
        BENCH_CHECK(cudaEventRecord(start, 0));
        launch(ctx);
        BENCH_CHECK(cudaGetLastError());
        BENCH_CHECK(cudaEventRecord(stop, 0));
        BENCH_CHECK(cudaEventSynchronize(stop));
        BENCH_CHECK(cudaEventElapsedTime(&ms[r], start, stop));
    }
    BENCH_CHECK(cudaEventDestroy(start));
    BENCH_CHECK(cudaEventDestroy(stop));
    qsort(ms, (size_t)repeat, sizeof ms[0], bench_cmp_float);
    return ms[repeat / 2];
}

/* Prints the result line; returns the exit status. */
static int bench_report(const char *name, size_t mismatches, const char *why, float ms,
                        int repeat, dim3 grid, dim3 block, const char *sizes)
{
    if (mismatches)
        fprintf(stderr, "%s: %zu mismatching elements; first: %s\n", name, mismatches, why);
    printf("RESULT name=%s verified=%s kernel_ms=%.4f repeats=%d grid=%ux%ux%u block=%ux%ux%u "
           "%s\n",
           name, mismatches ? "no" : "yes", ms, repeat, grid.x, grid.y, grid.z, block.x,
           block.y, block.z, sizes);
    return mismatches ? 1 : 0;
}

#endif
