/* The harness's output: tables on stdout, CSV files and gnuplot plots in the results
 * folder. Improvement over X is T_X / T - 1 (throughput gain); distance from opt is
 * T / T_opt - 1. A policy's figure on a workload is the median over the rounds of each
 * round's mean over its completed runs (mc: over its seeds; one run for the others), so
 * with one round it is mc's mean and every other policy's run. With one round the tables
 * show every run, as they did before rounds; with more, one row per policy: the medians,
 * and the min and max of the rounds' totals. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

#ifndef KERNELET_BENCH_PLOT
#define KERNELET_BENCH_PLOT "plot.gp"
#endif

double bench_figure_total_ns(const bench_result *r, unsigned k)
{
    (void)k;
    return (double)r->total_ns;
}

static double fig_throughput(const bench_result *r, unsigned k)
{
    (void)k;
    return r->throughput;
}

static double fig_decisions(const bench_result *r, unsigned k)
{
    (void)k;
    return (double)r->stats.decisions;
}

static double fig_decision_mean_us(const bench_result *r, unsigned k)
{
    (void)k;
    const ksched_stats *s = &r->stats;
    return s->decisions ? s->decision_ns_total / 1e3 / s->decisions : 0;
}

static double fig_decision_max_us(const bench_result *r, unsigned k)
{
    (void)k;
    return r->stats.decision_ns_max / 1e3;
}

/* dec %: all decisions against the makespan */
static double fig_decision_pct(const bench_result *r, unsigned k)
{
    (void)k;
    return r->total_ns ? r->stats.decision_ns_total / (double)r->total_ns * 100 : 0;
}

/* model us: the pair evaluations made outside decisions (sched_precompute.c), which the
 * decisions no longer include */
static double fig_precompute_us(const bench_result *r, unsigned k)
{
    (void)k;
    return r->stats.precompute_ns_total / 1e3;
}

static double fig_slowdown(const bench_result *r, unsigned k)
{
    return r->slowdown[k];
}

static double fig_slowdown_max(const bench_result *r, unsigned k)
{
    return r->slowdown_max[k];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(const bench_result *res, size_t n, const bench_workload *wl,
                    ksched_policy p, bench_figure fig, unsigned k, double *min, double *max,
                    unsigned *rounds)
{
    double sum[BENCH_ROUNDS_MAX] = {0}, v[BENCH_ROUNDS_MAX];
    unsigned cnt[BENCH_ROUNDS_MAX] = {0}, m = 0;
    for (size_t i = 0; i < n; i++)
        if (res[i].wl == wl && res[i].policy == p && !res[i].failed &&
            res[i].round < BENCH_ROUNDS_MAX) {
            sum[res[i].round] += fig(&res[i], k);
            cnt[res[i].round]++;
        }
    for (unsigned r = 0; r < BENCH_ROUNDS_MAX; r++)
        if (cnt[r])
            v[m++] = sum[r] / cnt[r];
    if (rounds)
        *rounds = m;
    qsort(v, m, sizeof(*v), cmp_double);
    if (min)
        *min = m ? v[0] : 0;
    if (max)
        *max = m ? v[m - 1] : 0;
    if (!m)
        return 0;
    return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

/* Median total time (ns) of policy p on workload wl; 0 when not run. */
static double median_total(const bench_result *res, size_t n, const bench_workload *wl,
                           ksched_policy p)
{
    return bench_median(res, n, wl, p, bench_figure_total_ns, 0, NULL, NULL, NULL);
}

/* ref / t - 1 in percent, or "-" when either is missing; pct(t, opt) is the distance
 * from opt. */
static void pct(char *buf, size_t len, double ref, double t)
{
    if (ref > 0 && t > 0)
        snprintf(buf, len, "%+.1f%%", (ref / t - 1) * 100);
    else
        snprintf(buf, len, "-");
}

/* The median totals of base, fifo and opt on a workload: what the others are held to. */
typedef struct refs {
    double base, fifo, opt;
} refs;

static refs refs_of(const bench_result *res, size_t n, const bench_workload *wl)
{
    return (refs){median_total(res, n, wl, KSCHED_BASE), median_total(res, n, wl, KSCHED_FIFO),
                  median_total(res, n, wl, KSCHED_OPT)};
}

/* A policy's medians on a workload (the table's row and medians.csv's). */
typedef struct medians {
    unsigned rounds;            /* rounds with a completed run */
    double total_ns, min_ns, max_ns, spread_pct;
    double throughput, decisions, decision_mean_us, decision_max_us, decision_pct,
        precompute_us;
} medians;

static medians medians_of(const bench_result *res, size_t n, const bench_workload *wl,
                          ksched_policy p)
{
    medians m;
    m.total_ns = bench_median(res, n, wl, p, bench_figure_total_ns, 0, &m.min_ns, &m.max_ns,
                              &m.rounds);
    m.spread_pct = m.total_ns > 0 ? (m.max_ns - m.min_ns) / m.total_ns * 100 : 0;
    m.throughput = bench_median(res, n, wl, p, fig_throughput, 0, NULL, NULL, NULL);
    m.decisions = bench_median(res, n, wl, p, fig_decisions, 0, NULL, NULL, NULL);
    m.decision_mean_us = bench_median(res, n, wl, p, fig_decision_mean_us, 0, NULL, NULL,
                                      NULL);
    m.decision_max_us = bench_median(res, n, wl, p, fig_decision_max_us, 0, NULL, NULL, NULL);
    m.decision_pct = bench_median(res, n, wl, p, fig_decision_pct, 0, NULL, NULL, NULL);
    m.precompute_us = bench_median(res, n, wl, p, fig_precompute_us, 0, NULL, NULL, NULL);
    return m;
}

/* The columns from kernels/s on, the same for a run and for a policy's medians. */
static void print_figures(const refs *ref, double t, double throughput, double decisions,
                          double mean_us, double max_us, double dec_pct, double model_us,
                          int failed)
{
    char vb[16], vf[16], vo[16];
    pct(vb, sizeof(vb), ref->base, t);
    pct(vf, sizeof(vf), ref->fifo, t);
    pct(vo, sizeof(vo), t, ref->opt);
    printf(" %11.1f %8s %8s %8s %9.0f %9.2f %9.2f %7.2f %9.1f%s\n", throughput, vb, vf, vo,
           decisions, mean_us, max_us, dec_pct, model_us,
           failed ? "  (failed or block errors!)" : "");
}

/* How many runs of r's policy on its workload came before r. */
static unsigned run_index(const bench_result *res, size_t i)
{
    unsigned run = 0;
    for (size_t j = 0; j < i; j++)
        run += res[j].wl == res[i].wl && res[j].policy == res[i].policy;
    return run;
}

/* Whether a run of policy p on wl failed or ran a block other than once. */
static int any_failed(const bench_result *res, size_t n, const bench_workload *wl,
                      ksched_policy p)
{
    for (size_t i = 0; i < n; i++)
        if (res[i].wl == wl && res[i].policy == p && (res[i].failed || res[i].block_errors))
            return 1;
    return 0;
}

static const char figures_header[] =
    "%11s %8s %8s %8s %9s %9s %9s %7s %9s\n";

/* One round: a row per run. */
static void print_runs(const bench_result *res, size_t n, const bench_workload *wl)
{
    refs ref = refs_of(res, n, wl);
    printf("%-9s %3s %10s ", "policy", "run", "total ms");
    printf(figures_header, "kernels/s", "vs base", "vs fifo", "from opt", "decisions",
           "mean us", "max us", "dec %", "model us");
    for (size_t i = 0; i < n; i++) {
        const bench_result *r = &res[i];
        if (r->wl != wl)
            continue;
        double t = (double)r->total_ns;
        printf("%-9s %3u %10.3f", ksched_policy_name(r->policy), run_index(res, i), t / 1e6);
        print_figures(&ref, t, r->throughput, (double)r->stats.decisions,
                      fig_decision_mean_us(r, 0), fig_decision_max_us(r, 0),
                      fig_decision_pct(r, 0), fig_precompute_us(r, 0),
                      r->failed || r->block_errors);
    }
}

/* Several rounds: a row per policy, every figure its median over the rounds, with the
 * min and max of the rounds' totals and their spread ((max - min) / median). */
static void print_medians(const bench_options *o, const bench_result *res, size_t n,
                          const bench_workload *wl)
{
    refs ref = refs_of(res, n, wl);
    printf("%-9s %6s %10s %10s %10s %7s ", "policy", "rounds", "median ms", "min ms", "max ms",
           "spread");
    printf(figures_header, "kernels/s", "vs base", "vs fifo", "from opt", "decisions",
           "mean us", "max us", "dec %", "model us");
    for (int p = 0; p < (int)ksched_policy_count(); p++) {
        if (!(o->policies & (1u << p)))
            continue;
        ksched_policy pol = (ksched_policy)p;
        medians m = medians_of(res, n, wl, pol);
        printf("%-9s %6u %10.3f %10.3f %10.3f %6.1f%%", ksched_policy_name(pol), m.rounds,
               m.total_ns / 1e6, m.min_ns / 1e6, m.max_ns / 1e6, m.spread_pct);
        print_figures(&ref, m.total_ns, m.throughput, m.decisions, m.decision_mean_us,
                      m.decision_max_us, m.decision_pct, m.precompute_us,
                      any_failed(res, n, wl, pol));
    }
}

static void print_slowdown(const bench_options *o, const bench_result *res, size_t n,
                           const bench_workload *wl, int worst)
{
    int medians = o->rounds > 1;
    printf("%s%s:\n%-9s %*s", worst ? "slowdown of the worst instance (max of turnaround / "
                                      "time alone)" : "slowdown (mean of turnaround / time "
                                      "alone)", medians ? ", median over the rounds" : "",
           "policy", medians ? 6 : 3, medians ? "rounds" : "run");
    for (unsigned k = 0; k < wl->n; k++)
        printf(" %8s", bench_kernels()[wl->kernel[k]].name);
    printf("\n");
    bench_figure fig = worst ? fig_slowdown_max : fig_slowdown;
    for (size_t i = 0; i < n && !medians; i++) {
        if (res[i].wl != wl)
            continue;
        printf("%-9s %3u", ksched_policy_name(res[i].policy), run_index(res, i));
        for (unsigned k = 0; k < wl->n; k++)
            printf(" %8.1f", fig(&res[i], wl->kernel[k]));
        printf("\n");
    }
    for (int p = 0; p < (int)ksched_policy_count() && medians; p++) {
        if (!(o->policies & (1u << p)))
            continue;
        unsigned rounds;
        bench_median(res, n, wl, (ksched_policy)p, fig, 0, NULL, NULL, &rounds);
        printf("%-9s %6u", ksched_policy_name((ksched_policy)p), rounds);
        for (unsigned k = 0; k < wl->n; k++)
            printf(" %8.1f", bench_median(res, n, wl, (ksched_policy)p, fig, wl->kernel[k],
                                          NULL, NULL, NULL));
        printf("\n");
    }
}

static FILE *open_out(const char *dir, const char *name, char *msg, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        snprintf(msg, len, "%s: %s", path, strerror(errno));
    return f;
}

/* The CSV's improvement over base and fifo and distance from opt of total t, in percent
 * (0 where either side is missing), each after a comma. */
static void csv_refs(FILE *f, const refs *ref, double t)
{
    double v[3] = {ref->base / t - 1, ref->fifo / t - 1, t / ref->opt - 1};
    double have[3] = {ref->base, ref->fifo, ref->opt};
    for (unsigned i = 0; i < 3; i++)
        fprintf(f, ",%.3f", have[i] > 0 && t > 0 ? v[i] * 100 : 0);
}

/* Every run, in the order they ran; improvement and distance are against the medians.
 * The columns after precompute_us came later (old readers stop before them). */
static int write_summary(const bench_options *o, const bench_result *res, size_t n, char *msg,
                         size_t len)
{
    FILE *f = open_out(o->out_dir, "summary.csv", msg, len);
    if (!f)
        return -1;
    fprintf(f, "workload,policy,seed,kernels,total_ms,kernels_per_s,impr_base_pct,"
               "impr_fifo_pct,dist_opt_pct,decisions,decision_mean_us,decision_max_us,"
               "coschedules,slices,widenings,failed,block_errors,aged,pairs_precomputed,"
               "precompute_us,round,order,started_ms,pairs_tuned,pairs_not_gaining\n");
    for (size_t i = 0; i < n; i++) {
        const bench_result *r = &res[i];
        double t = (double)r->total_ns;
        refs ref = refs_of(res, n, r->wl);
        const ksched_stats *s = &r->stats;
        fprintf(f, "%s,%s,%llu,%zu,%.6f,%.3f", r->wl->name, ksched_policy_name(r->policy),
                (unsigned long long)r->seed, r->n, t / 1e6, r->throughput);
        csv_refs(f, &ref, t);
        fprintf(f, ",%llu,%.4f,%.4f,%llu,%llu,%llu,%u,%u,%llu,%llu,%.3f,%u,%u,%.3f,%llu,%llu\n",
                (unsigned long long)s->decisions, fig_decision_mean_us(r, 0),
                fig_decision_max_us(r, 0),
                (unsigned long long)s->coschedules, (unsigned long long)s->slices,
                (unsigned long long)s->widenings, r->failed, r->block_errors,
                (unsigned long long)s->aged, (unsigned long long)s->pairs_precomputed,
                fig_precompute_us(r, 0), r->round, r->order, r->started_ns / 1e6,
                (unsigned long long)s->pairs_tuned, (unsigned long long)s->pairs_not_gaining);
    }
    return fclose(f) ? -1 : 0;
}

/* One row per workload and policy: the medians over the rounds (written for one round
 * too, where they are the runs' figures and mc's means). */
static int write_medians(const bench_options *o, const bench_result *res, size_t n,
                         char *msg, size_t len)
{
    FILE *f = open_out(o->out_dir, "medians.csv", msg, len);
    if (!f)
        return -1;
    fprintf(f, "workload,policy,rounds,runs,kernels,median_ms,min_ms,max_ms,spread_pct,"
               "kernels_per_s,impr_base_pct,impr_fifo_pct,dist_opt_pct,decisions,"
               "decision_mean_us,decision_max_us,decision_pct,precompute_us\n");
    for (unsigned w = 0; w < BENCH_WORKLOADS; w++) {
        const bench_workload *wl = &bench_workloads()[w];
        refs ref = refs_of(res, n, wl);
        for (int p = 0; p < (int)ksched_policy_count(); p++) {
            ksched_policy pol = (ksched_policy)p;
            size_t runs = 0, kernels = 0;
            for (size_t i = 0; i < n; i++)
                if (res[i].wl == wl && res[i].policy == pol)
                    runs++, kernels = res[i].n;
            if (!runs)
                continue;
            medians m = medians_of(res, n, wl, pol);
            fprintf(f, "%s,%s,%u,%zu,%zu,%.6f,%.6f,%.6f,%.3f,%.3f", wl->name,
                    ksched_policy_name(pol), m.rounds, runs, kernels, m.total_ns / 1e6,
                    m.min_ns / 1e6, m.max_ns / 1e6, m.spread_pct, m.throughput);
            csv_refs(f, &ref, m.total_ns);
            fprintf(f, ",%.1f,%.4f,%.4f,%.4f,%.3f\n", m.decisions, m.decision_mean_us,
                    m.decision_max_us, m.decision_pct, m.precompute_us);
        }
    }
    return fclose(f) ? -1 : 0;
}

static int write_slowdown(const bench_options *o, const bench_result *res, size_t n,
                          char *msg, size_t len)
{
    FILE *f = open_out(o->out_dir, "slowdown.csv", msg, len);
    if (!f)
        return -1;
    fprintf(f, "workload,policy,seed,kernel,slowdown,slowdown_max,round\n");
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < res[i].wl->n; k++) {
            unsigned kk = res[i].wl->kernel[k];
            fprintf(f, "%s,%s,%llu,%s,%.4f,%.4f,%u\n", res[i].wl->name,
                    ksched_policy_name(res[i].policy), (unsigned long long)res[i].seed,
                    bench_kernels()[kk].name, res[i].slowdown[kk], res[i].slowdown_max[kk],
                    res[i].round);
        }
    return fclose(f) ? -1 : 0;
}

/* Opens a plot data file and writes its header: the first column's name, then the
 * policies. */
static FILE *open_plot(const bench_options *o, const char *name, const char *first,
                       char *msg, size_t len)
{
    FILE *f = open_out(o->out_dir, name, msg, len);
    if (!f)
        return NULL;
    fprintf(f, "%s", first);
    for (int p = 0; p < (int)ksched_policy_count(); p++)
        fprintf(f, " %s", ksched_policy_name((ksched_policy)p));
    fprintf(f, "\n");
    return f;
}

/* A value, or NaN (a gap in the plot) when it is 0 (the policy did not run). */
static void put_value(FILE *f, double v)
{
    if (v > 0)
        fprintf(f, " %.5f", v);
    else
        fprintf(f, " NaN");
}

/* plot_total.dat: one row per workload, median time of each policy relative to base's. */
static int write_plot_data(const bench_options *o, const bench_result *res, size_t n,
                           char *msg, size_t len)
{
    FILE *f = open_plot(o, "plot_total.dat", "workload", msg, len);
    if (!f)
        return -1;
    for (unsigned w = 0; w < BENCH_WORKLOADS; w++) {
        const bench_workload *wl = &bench_workloads()[w];
        if (!(o->workloads & (1u << w)))
            continue;
        double base = median_total(res, n, wl, KSCHED_BASE);
        fprintf(f, "%s", wl->name);
        for (int p = 0; p < (int)ksched_policy_count(); p++)
            put_value(f, base > 0 ? median_total(res, n, wl, (ksched_policy)p) / base : 0);
        fprintf(f, "\n");
    }
    return fclose(f) ? -1 : 0;
}

/* plot_slowdown.dat: one row per workload and kernel, the median over the rounds of each
 * policy's mean slowdown. */
static int write_plot_slowdown(const bench_options *o, const bench_result *res, size_t n,
                               char *msg, size_t len)
{
    FILE *f = open_plot(o, "plot_slowdown.dat", "kernel", msg, len);
    if (!f)
        return -1;
    for (unsigned w = 0; w < BENCH_WORKLOADS; w++) {
        const bench_workload *wl = &bench_workloads()[w];
        if (!(o->workloads & (1u << w)))
            continue;
        for (unsigned k = 0; k < wl->n; k++) {
            fprintf(f, "%s:%s", wl->name, bench_kernels()[wl->kernel[k]].name);
            for (int p = 0; p < (int)ksched_policy_count(); p++)
                put_value(f, bench_median(res, n, wl, (ksched_policy)p, fig_slowdown,
                                          wl->kernel[k], NULL, NULL, NULL));
            fprintf(f, "\n");
        }
    }
    return fclose(f) ? -1 : 0;
}

static void run_gnuplot(const bench_options *o)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "gnuplot -e \"dir='%s'\" '%s' 2>&1", o->out_dir,
             KERNELET_BENCH_PLOT);
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "kernelet-bench: cannot run gnuplot; CSV files are in %s\n", o->out_dir);
        return;
    }
    char line[512];
    while (fgets(line, sizeof(line), p))
        fprintf(stderr, "gnuplot: %s", line);
    if (pclose(p))
        fprintf(stderr, "kernelet-bench: gnuplot failed; CSV files are in %s\n", o->out_dir);
}

/* mkdir -p */
static int make_dirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0777) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) && errno != EEXIST ? -1 : 0;
}

int bench_report(const bench_options *o, const bench_result *res, size_t n,
                 const double alone_ns[BENCH_KERNELS], char *msg, size_t len)
{
    printf("time alone (ns):");
    for (unsigned k = 0; k < BENCH_KERNELS; k++)
        printf(" %s %.0f", bench_kernels()[k].name, alone_ns[k]);
    printf("\n");
    for (unsigned w = 0; w < BENCH_WORKLOADS; w++) {
        const bench_workload *wl = &bench_workloads()[w];
        if (!(o->workloads & (1u << w)))
            continue;
        printf("\n== %s (", wl->name);
        for (unsigned k = 0; k < wl->n; k++)
            printf("%s%s", k ? ", " : "", bench_kernels()[wl->kernel[k]].name);
        printf("): %u instances each, seed %llu, load %.2f", o->instances,
               (unsigned long long)o->seed, o->load);
        if (o->rounds > 1) {
            printf(", %u rounds (medians)\n", o->rounds);
            print_medians(o, res, n, wl);
        } else {
            printf("\n");
            print_runs(res, n, wl);
        }
        print_slowdown(o, res, n, wl, 0);
        print_slowdown(o, res, n, wl, 1);
    }
    if (make_dirs(o->out_dir)) {
        snprintf(msg, len, "%s: %s", o->out_dir, strerror(errno));
        return -1;
    }
    if (write_summary(o, res, n, msg, len) || write_medians(o, res, n, msg, len) ||
        write_slowdown(o, res, n, msg, len) ||
        write_plot_data(o, res, n, msg, len) || write_plot_slowdown(o, res, n, msg, len))
        return -1;
    if (o->plots)
        run_gnuplot(o);
    printf("\nresults in %s/ (summary.csv, medians.csv, slowdown.csv%s)\n", o->out_dir,
           o->plots ? ", total_time.png, slowdown.png" : "");
    return 0;
}
