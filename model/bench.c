/* model-bench: how long the model takes (docs/perf/model.md). Prints the median time per
 * call of: one homogeneous solve, one heterogeneous solve at H100 size (64 warps per SM)
 * per granularity, virtual SM and solver, one co-schedule evaluation, and the ranking of
 * all pairs of 16 kernels over their feasible ratios; with --budgets, that ranking per
 * state_budget. Usage: model-bench [--quick | --budgets]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernelet/model.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef int (*bench_fn)(void *arg);

static double min_batch_s = 0.2;

/* Median over 5 batches of the wall time and of the process CPU time of one call, in
 * seconds (the CPU time shows the cost when other jobs share the cores); wall < 0 if fn
 * failed. */
static void time_call(bench_fn fn, void *arg, double *wall, double *cpu)
{
    *wall = *cpu = -1;
    if (fn(arg))
        return;
    double t0 = now();
    long reps = 1;
    while (now() - t0 < min_batch_s / 10) {
        for (long i = 0; i < reps; i++)
            fn(arg);
        reps *= 2;
    }
    double per = (now() - t0) / (2 * reps - 1);
    long n = (long)(min_batch_s / per) + 1;
    double w[5], c[5];
    for (int b = 0; b < 5; b++) {
        double s = now(), sc = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        for (long i = 0; i < n; i++)
            fn(arg);
        w[b] = (now() - s) / n;
        c[b] = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - sc) / n;
    }
    qsort(w, 5, sizeof(double), cmp_double);
    qsort(c, 5, sizeof(double), cmp_double);
    *wall = w[2];
    *cpu = c[2];
}

typedef struct {
    kmodel_ctx *ctx;
    kmodel_kernel k[16];
    unsigned blocks[2];
    unsigned warps;
    kmodel_pair_result out[120];
} bench_arg;

static int run_homog(void *p)
{
    bench_arg *a = p;
    double util;
    return kmodel_homogeneous(a->ctx, a->warps, a->k[0].rm, NULL, NULL, &util);
}

static int run_mix(void *p)
{
    bench_arg *a = p;
    kmodel_mix_result r;
    return kmodel_mix(a->ctx, 2, a->k, a->blocks, &r);
}

static int run_pair(void *p)
{
    bench_arg *a = p;
    kmodel_pair_result r;
    return kmodel_pair(a->ctx, &a->k[0], a->blocks[0], &a->k[1], a->blocks[1], &r);
}

static int run_balanced(void *p)
{
    bench_arg *a = p;
    kmodel_pair_result r;
    return kmodel_balanced(a->ctx, &a->k[0], &a->k[1], &r);
}

static int run_rank(void *p)
{
    bench_arg *a = p;
    size_t count;
    return kmodel_rank_pairs(a->ctx, 16, a->k, a->out, &count);
}

static kmodel_ctx *make_ctx(kmodel_granularity gran, int vsm, kmodel_solver solver)
{
    kmodel_options o;
    kmodel_options_default(&o);
    o.granularity = gran;
    o.virtual_sm = vsm;
    o.solver = solver;
    char msg[256];
    kmodel_ctx *ctx;
    if (kmodel_ctx_new(&ctx, kmodel_gpu_lookup("H100"), &o, msg, sizeof(msg))) {
        fprintf(stderr, "model-bench: %s\n", msg);
        exit(1);
    }
    return ctx;
}

static void fmt_time(char *buf, size_t len, double s)
{
    if (s < 1e-3)
        snprintf(buf, len, "%9.2f us", s * 1e6);
    else
        snprintf(buf, len, "%9.3f ms", s * 1e3);
}

static void report(const char *what, bench_fn fn, void *arg, kmodel_ctx *ctx)
{
    double wall, cpu;
    time_call(fn, arg, &wall, &cpu);
    if (wall < 0) {
        printf("%-58s failed: %s\n", what, kmodel_ctx_error(ctx));
        return;
    }
    char w[32], c[32];
    fmt_time(w, sizeof(w), wall);
    fmt_time(c, sizeof(c), cpu);
    printf("%-58s %s %s\n", what, w, c);
}

/* Sixteen kernels from compute- to memory-bound with various block shapes. */
static void sixteen(kmodel_kernel k[16])
{
    static const unsigned wpb[16] = {8, 4, 8, 16, 2, 8, 4, 32, 8, 16, 4, 8, 2, 8, 16, 4};
    static const unsigned regs[16] = {32, 40, 64, 32, 24, 128, 32, 32, 48, 32, 64, 32, 32,
                                      80, 32, 32};
    static const unsigned smem[16] = {0, 4096, 16384, 0, 0, 8192, 0, 49152, 0, 32768, 0, 0,
                                      2048, 0, 0, 12288};
    for (int i = 0; i < 16; i++) {
        memset(&k[i], 0, sizeof(k[i]));
        k[i].warps_per_block = wpb[i];
        k[i].regs_per_thread = regs[i];
        k[i].smem_per_block = smem[i];
        k[i].rm = 0.005 + 0.3 * i / 15.0;
        k[i].uncoalesced = (i % 5 == 3) ? 0.3 : 0.0;
        k[i].insts_per_warp = 1000.0 * (1 + i % 3);
    }
}

/* --budgets: the 16-kernel ranking per state_budget, its CPU time and the largest CP
 * difference of any pair against never merging (budget 0). */
static int budgets(void)
{
    static const size_t budget[] = {0, 25, 36, 49, 64, 100, 144};
    static kmodel_pair_result ref[120], out[120];
    kmodel_kernel k[16];
    size_t nref = 0;
    sixteen(k);
    printf("%-14s %12s %12s %18s\n", "state_budget", "wall", "CPU", "max |dCP| vs 0");
    for (size_t b = 0; b < sizeof(budget) / sizeof(budget[0]); b++) {
        kmodel_options o;
        kmodel_options_default(&o);
        o.state_budget = budget[b];
        kmodel_ctx *ctx;
        if (kmodel_ctx_new(&ctx, kmodel_gpu_lookup("H100"), &o, NULL, 0))
            return 1;
        bench_arg a;
        memset(&a, 0, sizeof(a));
        a.ctx = ctx;
        memcpy(a.k, k, sizeof(k));
        double wall, cpu, worst = 0;
        time_call(run_rank, &a, &wall, &cpu);
        size_t n = 0;
        if (wall < 0 || kmodel_rank_pairs(ctx, 16, k, out, &n)) {
            fprintf(stderr, "model-bench: %s\n", kmodel_ctx_error(ctx));
            kmodel_ctx_free(ctx);
            return 1;
        }
        if (b == 0) {
            memcpy(ref, out, sizeof(out));
            nref = n;
        }
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < nref; j++)
                if (out[i].k1 == ref[j].k1 && out[i].k2 == ref[j].k2 &&
                    fabs(out[i].cp - ref[j].cp) > worst)
                    worst = fabs(out[i].cp - ref[j].cp);
        char w[32], c[32];
        fmt_time(w, sizeof(w), wall);
        fmt_time(c, sizeof(c), cpu);
        printf("%-14zu %12s %12s %18.3f\n", budget[b], w, c, worst);
        kmodel_ctx_free(ctx);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--quick"))
        min_batch_s = 0.02;
    else if (argc > 1 && !strcmp(argv[1], "--budgets"))
        return budgets();
    else if (argc > 1) {
        fprintf(stderr, "usage: model-bench [--quick | --budgets]\n");
        return 2;
    }
    static const char *const solver_name[] = {"auto", "gth", "lu", "power"};
    bench_arg a;
    memset(&a, 0, sizeof(a));
    a.k[0] = (kmodel_kernel){.warps_per_block = 8, .regs_per_thread = 32, .rm = 0.02,
                             .insts_per_warp = 2000};
    a.k[1] = (kmodel_kernel){.warps_per_block = 8, .regs_per_thread = 32, .rm = 0.25,
                             .insts_per_warp = 500};
    a.blocks[0] = 4;
    a.blocks[1] = 4;

    printf("H100 model, time per call, median of 5 batches: wall, then CPU time\n");
    for (int s = 1; s <= 3; s++) {
        for (unsigned w = 16; w <= 64; w *= 4) {
            if (s == KMODEL_SOLVER_POWER && w > 16)
                continue;
            a.ctx = make_ctx(KMODEL_GRAN_WARP, 1, (kmodel_solver)s);
            a.warps = w;
            char what[96];
            snprintf(what, sizeof(what), "homogeneous W=%u (%u states), %s", w, w + 1,
                     solver_name[s]);
            report(what, run_homog, &a, a.ctx);
            kmodel_ctx_free(a.ctx);
        }
    }
    for (int vsm = 1; vsm >= 0; vsm--) {
        for (int gran = 1; gran >= 0; gran--) {
            for (int s = 1; s <= 3; s++) {
                a.ctx = make_ctx((kmodel_granularity)gran, vsm, (kmodel_solver)s);
                kmodel_mix_result r;
                size_t states = 0;
                if (!kmodel_mix(a.ctx, 2, a.k, a.blocks, &r))
                    states = r.states;
                if (s == KMODEL_SOLVER_POWER && states > 100) {
                    kmodel_ctx_free(a.ctx);
                    continue;   /* seconds per call: see docs/perf/model.md */
                }
                char what[96];
                snprintf(what, sizeof(what), "pair 4+4 blocks of 8 warps, %s, %s, %zu st, %s",
                         gran ? "block" : "warp", vsm ? "virtual SM" : "whole SM", states,
                         solver_name[s]);
                report(what, run_mix, &a, a.ctx);
                kmodel_ctx_free(a.ctx);
            }
        }
    }
    a.ctx = make_ctx(KMODEL_GRAN_BLOCK, 1, KMODEL_SOLVER_AUTO);
    report("co-schedule evaluation (kmodel_pair, block, virtual SM)", run_pair, &a, a.ctx);
    report("balanced ratio of one pair (kmodel_balanced)", run_balanced, &a, a.ctx);
    sixteen(a.k);
    report("rank all 120 pairs of 16 kernels (kmodel_rank_pairs)", run_rank, &a, a.ctx);
    size_t count = 0;
    if (kmodel_rank_pairs(a.ctx, 16, a.k, a.out, &count) == 0 && count > 0)
        printf("ranking: %zu pairs, best k%u+k%u at %u:%u blocks, CP %.3f\n", count,
               a.out[0].k1, a.out[0].k2, a.out[0].blocks[0], a.out[0].blocks[1], a.out[0].cp);
    kmodel_ctx_free(a.ctx);
    return 0;
}
