/* The harness's output: tables on stdout, CSV files and gnuplot plots in the results
 * folder. Improvement over X is T_X / T - 1 (throughput gain); distance from opt is
 * T / T_opt - 1; mc's figures are the mean over its runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

#ifndef KERNELET_BENCH_PLOT
#define KERNELET_BENCH_PLOT "plot.gp"
#endif

/* Mean total time (ns) of policy p on workload wl over its runs; 0 when not run. */
static double mean_total(const bench_result *res, size_t n, const bench_workload *wl,
                         ksched_policy p)
{
    double sum = 0;
    unsigned k = 0;
    for (size_t i = 0; i < n; i++)
        if (res[i].wl == wl && res[i].policy == p && !res[i].failed) {
            sum += (double)res[i].total_ns;
            k++;
        }
    return k ? sum / k : 0;
}

static void pct(char *buf, size_t len, double ref, double t)
{
    if (ref > 0 && t > 0)
        snprintf(buf, len, "%+.1f%%", (ref / t - 1) * 100);
    else
        snprintf(buf, len, "-");
}

static void print_table(const bench_result *res, size_t n, const bench_workload *wl)
{
    double fifo = mean_total(res, n, wl, KSCHED_FIFO), base = mean_total(res, n, wl, KSCHED_BASE);
    double opt = mean_total(res, n, wl, KSCHED_OPT);
    printf("%-9s %3s %10s %11s %8s %8s %8s %9s %9s %9s %7s %9s\n", "policy", "run",
           "total ms", "kernels/s", "vs base", "vs fifo", "from opt", "decisions", "mean us",
           "max us", "dec %", "model us");
    for (size_t i = 0; i < n; i++) {
        const bench_result *r = &res[i];
        if (r->wl != wl)
            continue;
        double t = (double)r->total_ns;
        char vb[16], vf[16], vo[16];
        pct(vb, sizeof(vb), base, t);
        pct(vf, sizeof(vf), fifo, t);
        if (opt > 0 && t > 0)
            snprintf(vo, sizeof(vo), "%+.1f%%", (t / opt - 1) * 100);
        else
            snprintf(vo, sizeof(vo), "-");
        unsigned run = 0;
        for (size_t j = 0; j < i; j++)
            run += res[j].wl == wl && res[j].policy == r->policy;
        const ksched_stats *s = &r->stats;
        /* dec %: all decisions against the makespan; model us: the pair evaluations made
         * outside decisions (sched_precompute.c), which the decisions no longer include */
        printf("%-9s %3u %10.3f %11.1f %8s %8s %8s %9llu %9.2f %9.2f %7.2f %9.1f%s\n",
               ksched_policy_name(r->policy), run, t / 1e6, r->throughput, vb, vf, vo,
               (unsigned long long)s->decisions,
               s->decisions ? s->decision_ns_total / 1e3 / s->decisions : 0,
               s->decision_ns_max / 1e3, t > 0 ? s->decision_ns_total / t * 100 : 0,
               s->precompute_ns_total / 1e3,
               r->failed || r->block_errors ? "  (failed or block errors!)" : "");
    }
}

static void print_slowdown(const bench_result *res, size_t n, const bench_workload *wl,
                           int worst)
{
    printf("%s:\n%-9s %3s", worst ? "slowdown of the worst instance (max of turnaround / time "
                                    "alone)" : "slowdown (mean of turnaround / time alone)",
           "policy", "run");
    for (unsigned k = 0; k < wl->n; k++)
        printf(" %8s", bench_kernels()[wl->kernel[k]].name);
    printf("\n");
    for (size_t i = 0; i < n; i++) {
        if (res[i].wl != wl)
            continue;
        unsigned run = 0;
        for (size_t j = 0; j < i; j++)
            run += res[j].wl == wl && res[j].policy == res[i].policy;
        printf("%-9s %3u", ksched_policy_name(res[i].policy), run);
        for (unsigned k = 0; k < wl->n; k++)
            printf(" %8.1f", (worst ? res[i].slowdown_max : res[i].slowdown)[wl->kernel[k]]);
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

static int write_summary(const bench_options *o, const bench_result *res, size_t n, char *msg,
                         size_t len)
{
    FILE *f = open_out(o->out_dir, "summary.csv", msg, len);
    if (!f)
        return -1;
    fprintf(f, "workload,policy,seed,kernels,total_ms,kernels_per_s,impr_base_pct,"
               "impr_fifo_pct,dist_opt_pct,decisions,decision_mean_us,decision_max_us,"
               "coschedules,slices,widenings,failed,block_errors,aged,pairs_precomputed,"
               "precompute_us\n");
    for (size_t i = 0; i < n; i++) {
        const bench_result *r = &res[i];
        double t = (double)r->total_ns, base = mean_total(res, n, r->wl, KSCHED_BASE);
        double fifo = mean_total(res, n, r->wl, KSCHED_FIFO);
        double opt = mean_total(res, n, r->wl, KSCHED_OPT);
        const ksched_stats *s = &r->stats;
        fprintf(f, "%s,%s,%llu,%zu,%.6f,%.3f,%.3f,%.3f,%.3f,%llu,%.4f,%.4f,%llu,%llu,%llu,%u,%u,"
                   "%llu,%llu,%.3f\n",
                r->wl->name, ksched_policy_name(r->policy), (unsigned long long)r->seed, r->n,
                t / 1e6, r->throughput, base > 0 ? (base / t - 1) * 100 : 0,
                fifo > 0 ? (fifo / t - 1) * 100 : 0, opt > 0 ? (t / opt - 1) * 100 : 0,
                (unsigned long long)s->decisions,
                s->decisions ? s->decision_ns_total / 1e3 / s->decisions : 0,
                s->decision_ns_max / 1e3, (unsigned long long)s->coschedules,
                (unsigned long long)s->slices, (unsigned long long)s->widenings, r->failed,
                r->block_errors, (unsigned long long)s->aged,
                (unsigned long long)s->pairs_precomputed, s->precompute_ns_total / 1e3);
    }
    return fclose(f) ? -1 : 0;
}

static int write_slowdown(const bench_options *o, const bench_result *res, size_t n,
                          char *msg, size_t len)
{
    FILE *f = open_out(o->out_dir, "slowdown.csv", msg, len);
    if (!f)
        return -1;
    fprintf(f, "workload,policy,seed,kernel,slowdown,slowdown_max\n");
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < res[i].wl->n; k++) {
            unsigned kk = res[i].wl->kernel[k];
            fprintf(f, "%s,%s,%llu,%s,%.4f,%.4f\n", res[i].wl->name,
                    ksched_policy_name(res[i].policy), (unsigned long long)res[i].seed,
                    bench_kernels()[kk].name, res[i].slowdown[kk], res[i].slowdown_max[kk]);
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

/* plot_total.dat: one row per workload, time of each policy relative to base. */
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
        double base = mean_total(res, n, wl, KSCHED_BASE);
        fprintf(f, "%s", wl->name);
        for (int p = 0; p < (int)ksched_policy_count(); p++)
            put_value(f, base > 0 ? mean_total(res, n, wl, (ksched_policy)p) / base : 0);
        fprintf(f, "\n");
    }
    return fclose(f) ? -1 : 0;
}

/* Mean slowdown of kernel k under policy p on wl over its runs; 0 when not run. */
static double mean_slowdown(const bench_result *res, size_t n, const bench_workload *wl,
                            ksched_policy p, unsigned k)
{
    double sum = 0;
    unsigned c = 0;
    for (size_t i = 0; i < n; i++)
        if (res[i].wl == wl && res[i].policy == p && res[i].slowdown[k] > 0) {
            sum += res[i].slowdown[k];
            c++;
        }
    return c ? sum / c : 0;
}

/* plot_slowdown.dat: one row per workload and kernel, mean slowdown of each policy. */
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
                put_value(f, mean_slowdown(res, n, wl, (ksched_policy)p, wl->kernel[k]));
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
        printf("): %u instances each, seed %llu, load %.2f\n", o->instances,
               (unsigned long long)o->seed, o->load);
        print_table(res, n, wl);
        print_slowdown(res, n, wl, 0);
        print_slowdown(res, n, wl, 1);
    }
    if (make_dirs(o->out_dir)) {
        snprintf(msg, len, "%s: %s", o->out_dir, strerror(errno));
        return -1;
    }
    if (write_summary(o, res, n, msg, len) || write_slowdown(o, res, n, msg, len) ||
        write_plot_data(o, res, n, msg, len) || write_plot_slowdown(o, res, n, msg, len))
        return -1;
    if (o->plots)
        run_gnuplot(o);
    printf("\nresults in %s/ (summary.csv, slowdown.csv%s)\n", o->out_dir,
           o->plots ? ", total_time.png, slowdown.png" : "");
    return 0;
}
