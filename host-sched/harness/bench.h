/* kernelet-bench: the evaluation harness of the paper's section "Results on Kernel
 * Scheduling" (workloads CI, MI, MIX, ALL; N instances per kernel arriving by a seeded
 * Poisson process; every policy on the same arrivals). Internal to the harness. */
#ifndef KERNELET_BENCH_H
#define KERNELET_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/workload.h"
#include "ksched.h"

#define BENCH_KERNELS 8
#define BENCH_WORKLOADS 4
#define BENCH_ROUNDS_MAX 100    /* --rounds */

/* A benchmark kernel as launched by the harness (the default size of bench/). */
typedef struct bench_kernel {
    const char *name;       /* "pc" */
    const char *entry;      /* PTX entry "pc_chase" */
    unsigned grid[3], block[3];
} bench_kernel;

typedef struct bench_workload {
    const char *name;       /* "CI", "MI", "MIX", "ALL" */
    unsigned n;
    unsigned kernel[BENCH_KERNELS];   /* indices into bench_kernels() */
} bench_workload;

typedef struct bench_options {
    const char *backend;    /* sim (times only), emu or cuda (real data, every output
                               verified) */
    const char *ptx_dir;    /* emu, cuda: the bench kernels' PTX (the build's bench/) */
    int small;              /* emu, cuda: the kernels at their small sizes */
    unsigned workloads;     /* bit i: bench_workloads()[i] */
    unsigned policies;      /* bit p: ksched_policy p */
    unsigned instances;     /* per kernel */
    uint64_t seed;
    double load;            /* offered work / serial capacity */
    unsigned mc_runs;       /* mc's seeds, run back to back in mc's place of every round */
    unsigned rounds;        /* every selected policy this many times, interleaved, the
                               order rotated each round; figures are medians over rounds */
    const char *profiles;   /* profile data file */
    const char *gpu;        /* model GPU name */
    double a0;              /* achieved fraction of peak bandwidth (model) */
    double alpha_p, alpha_m;
    double aging;           /* kernelet's aging bound (ksched_config.aging), 0 = none */
    int pair_tune;          /* kernelet tunes each pair's plan on the run
                               (ksched_config.pair_tune) */
    unsigned depth;
    uint64_t launch_latency_ns, stream_gap_ns;
    const char *out_dir;
    int plots;
    int progress;           /* 1: show progress on stderr */
} bench_options;

/* One arrival: which kernel, when. */
typedef struct bench_arrival {
    uint64_t t_ns;
    unsigned kernel;        /* index into bench_kernels() */
} bench_arrival;

typedef struct bench_instance {
    unsigned kernel;
    uint64_t op;
    uint64_t arrival_ns, start_ns, end_ns;
    int status;
} bench_instance;

typedef struct bench_result {
    const bench_workload *wl;
    ksched_policy policy;
    uint64_t seed;
    size_t n;
    bench_instance *inst;
    uint64_t total_ns;          /* last end - first arrival */
    double throughput;          /* kernels per second */
    double slowdown[BENCH_KERNELS];   /* mean turnaround / alone time, per kernel */
    double slowdown_max[BENCH_KERNELS];   /* the worst instance's */
    unsigned failed;            /* instances that did not complete */
    unsigned wrong;             /* kernels whose output differed from the CPU's (emu, cuda) */
    unsigned block_errors;      /* instances whose blocks did not run exactly once */
    ksched_stats stats;
    unsigned round;             /* the round it ran in (0-based) */
    unsigned order;             /* its place among the runs of its workload, in the order
                                   they ran (0-based, across rounds) */
    uint64_t started_ns;        /* when it started, wall clock since the runs began */
} bench_result;

/* bench_kernels.c */
const bench_kernel *bench_kernels(void);
const bench_workload *bench_workloads(void);
int bench_kernel_find(const char *name);

/* bench_arrivals.c: merged Poisson processes, one per kernel, rate lambda each, n each. */
int bench_arrivals(const bench_workload *wl, unsigned n, double lambda_per_ns, uint64_t seed,
                   bench_arrival **out, size_t *count);

/* bench_backend.c: the executor backends the harness can run on. */
typedef struct bench_backend bench_backend;
int bench_backend_new(const bench_options *o, const ksched_profile_cache *profiles,
                      bench_backend **out, kbackend *be, char *msg, size_t len);
void bench_backend_free(bench_backend *b);
/* The module text holding the kernels' entries and sliced variants for this backend. */
int bench_module_text(const bench_backend *b, const bench_kernel *k, char **text, size_t *len,
                      char *msg, size_t msglen);
/* Blocks of launch tag ran exactly once (1), not (0), or cannot be known (-1). */
int bench_backend_blocks_once(const bench_backend *b, uint64_t tag, uint64_t total);
/* Whether the backend computes (emu, cuda): launches then need real data. */
int bench_backend_computes(const bench_backend *b);
/* The backends built in, "sim, emu, cuda". */
const char *bench_backends_built(void);

/* bench_data.c: one instance of a benchmark kernel in a tenant's device memory. */
typedef struct bench_data {
    const kw_kernel *kernel;
    kw_instance in;
    int have_instance;
    kbackend_devptr dev[KW_MAX_BUFFERS];
    unsigned n_dev;
    unsigned char params[8 * KW_MAX_ARGS];
    size_t params_size;
} bench_data;
/* Seeded inputs of kernel bk (small or default size) copied into device memory of the
 * tenant, and the launch's parameter block; 0, or -1 with msg (free it either way). */
int bench_data_create(ksched *s, uint32_t tenant, const bench_kernel *bk, int small,
                      bench_data *d, char *msg, size_t len);
/* Copies the outputs back and checks them against the CPU reference; 0 or -1 with msg. */
int bench_data_verify(ksched *s, uint32_t tenant, bench_data *d, char *msg, size_t len);
void bench_data_free(ksched *s, uint32_t tenant, bench_data *d);
/* The kernel's PTX from dir with its sliced variant (kptx_slice_module); malloc'd, or
 * NULL with msg. */
char *bench_data_ptx(const char *dir, const bench_kernel *bk, size_t *len, char *msg,
                     size_t msglen);

/* bench_progress.c */
typedef struct bench_progress bench_progress;
bench_progress *bench_progress_new(int enabled, uint64_t total);
void bench_progress_step(bench_progress *p, uint64_t done, const char *label);
/* The round now running: later labels end in "r2/5" (when there is more than one). */
void bench_progress_round(bench_progress *p, unsigned round, unsigned rounds);
void bench_progress_free(bench_progress *p);

/* bench_run.c */
int bench_alone_times(const bench_options *o, const ksched_profile_cache *profiles,
                      double alone_ns[BENCH_KERNELS], char *msg, size_t len);
int bench_run(const bench_options *o, const ksched_profile_cache *profiles,
              const bench_workload *wl, ksched_policy policy, uint64_t seed,
              const bench_arrival *arr, size_t n, const double alone_ns[BENCH_KERNELS],
              bench_progress *prog, uint64_t prog_base, bench_result *out, char *msg,
              size_t len);
void bench_result_free(bench_result *r);    /* its instances; the figures stay */

/* bench_report.c */
/* What one run contributes to a figure; k: a kernel index, for the figures per kernel. */
typedef double (*bench_figure)(const bench_result *r, unsigned k);
double bench_figure_total_ns(const bench_result *r, unsigned k);
/* A figure of policy p on workload wl over the rounds: each round's value is the mean over
 * that round's completed runs (mc: its seeds), the figure is the median of the rounds'
 * values (the mean of the middle two for an even count), with their min and max (may be
 * NULL) and how many rounds had a completed run (0: the figure is 0). */
double bench_median(const bench_result *res, size_t n, const bench_workload *wl,
                    ksched_policy p, bench_figure fig, unsigned k, double *min, double *max,
                    unsigned *rounds);
int bench_report(const bench_options *o, const bench_result *res, size_t n,
                 const double alone_ns[BENCH_KERNELS], char *msg, size_t len);

#endif
