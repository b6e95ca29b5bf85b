/* kernelet-bench: runs the paper's scheduling evaluation (workloads CI, MI, MIX, ALL) for
 * the chosen policies on one arrival sequence per workload and reports total time,
 * throughput, improvement over base and fifo, distance from opt, per-kernel slowdown and
 * decision time; CSV and plots go to a results folder. With --rounds N every policy runs
 * N times, interleaved round by round in an order that rotates, and the figures are the
 * medians over the rounds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bench.h"

#ifndef KERNELET_PROFILES_DIR
#define KERNELET_PROFILES_DIR "."
#endif
#ifndef KERNELET_BENCH_PTX_DIR
#define KERNELET_BENCH_PTX_DIR "."
#endif

static void usage(FILE *f)
{
    ksched_config c;
    char policies[256];
    ksched_config_default(&c);
    fprintf(f,
        "usage: kernelet-bench [options]\n"
        "  --backend NAME        executor backend: %s (default sim); emu and cuda\n"
        "                        compute: every kernel's output is checked against the CPU's\n"
        "  --ptx-dir DIR         emu, cuda: the bench kernels' PTX (default %s)\n"
        "  --small               emu, cuda: the kernels at their small sizes\n"
        "  --workload LIST       CI,MI,MIX,ALL or all, every one (default all)\n"
        "  --policy LIST         %s or all (default all)\n"
        "  --instances N         instances of each kernel (default 1000)\n"
        "  --seed N              arrivals and mc (default 1)\n"
        "  --load X              offered work / serial capacity (default 2.0)\n"
        "  --mc-runs N           runs of mc, seeds seed..seed+N-1 (default 3), back to\n"
        "                        back in mc's place of every round; a round's mc figure is\n"
        "                        their mean\n"
        "  --rounds N            each policy N times (1..%u, default 1), interleaved: round\n"
        "                        r runs the selected policies in order, rotated left by r,\n"
        "                        all on the same arrivals; tables show per policy the\n"
        "                        median over the rounds with min and max, vs base and vs\n"
        "                        fifo from medians; summary.csv keeps every run,\n"
        "                        medians.csv the medians\n"
        "  --profiles FILE       kernel profiles (default %s/h100-bench.profiles)\n"
        "  --gpu NAME            model GPU (default H100)\n"
        "  --a0 X                achieved fraction of peak bandwidth (default 0.92)\n"
        "  --alpha-p X --alpha-m X   kernelet's pruning thresholds (default 0.4, 0.1)\n"
        "  --aging K             kernelet: a kernel that waited K times its time alone\n"
        "                        runs next; 0 = no bound (default %g)\n"
        "  --pair-tune           kernelet: tries each pair's plans on the run and keeps\n"
        "                        the best, or stops pairing it (kerneletd --pair-tune)\n"
        "  --depth N             launches queued per lane (default 2)\n"
        "  --launch-latency-ns N --stream-gap-ns N   sim launch costs (default 5000, 1000)\n"
        "  --out DIR             results folder (default kernelet-bench-results)\n"
        "  --no-plots            CSV only\n"
        "  --quiet               no progress on stderr\n",
        bench_backends_built(), KERNELET_BENCH_PTX_DIR,
        ksched_policy_list(policies, sizeof(policies), ","), BENCH_ROUNDS_MAX,
        KERNELET_PROFILES_DIR, c.aging);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *s == '-' || *end || errno || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}

/* Comma-separated names (any case) into a bit set; "all", in lower case, sets every bit
 * of n: "ALL" is the workload of all eight kernels, not every workload. */
static int parse_set(const char *list, const char *const *names, unsigned n, unsigned *out)
{
    if (!strcmp(list, "all")) {
        *out = (1u << n) - 1;
        return 0;
    }
    char buf[256];
    if (strlen(list) >= sizeof(buf))
        return -1;
    strcpy(buf, list);
    *out = 0;
    char *save, *tok = strtok_r(buf, ",", &save);
    for (; tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned i = 0;
        while (i < n && strcasecmp(tok, names[i]))
            i++;
        if (i == n)
            return -1;
        *out |= 1u << i;
    }
    return *out ? 0 : -1;
}

static void defaults(bench_options *o, char *profiles, size_t len)
{
    ksched_config c;
    ksched_config_default(&c);
    snprintf(profiles, len, "%s/h100-bench.profiles", KERNELET_PROFILES_DIR);
    *o = (bench_options){.backend = "sim", .workloads = (1u << BENCH_WORKLOADS) - 1,
                         .policies = (1u << ksched_policy_count()) - 1, .instances = 1000,
                         .seed = 1, .load = 2.0, .mc_runs = 3, .rounds = 1, .profiles = profiles,
                         .gpu = "H100", .a0 = 0.92, .alpha_p = 0.4, .alpha_m = 0.1,
                         .depth = 2, .launch_latency_ns = 5000, .stream_gap_ns = 1000,
                         .out_dir = "kernelet-bench-results", .plots = 1, .progress = 1,
                         .ptx_dir = KERNELET_BENCH_PTX_DIR,
                         .aging = c.aging};
}

/* Applies option argv[*i] (and its value); -1 on a bad option or value. */
static int apply(bench_options *o, int argc, char **argv, int *i)
{
    const char *opt = argv[*i];
    if (!strcmp(opt, "--no-plots"))
        return o->plots = 0, 0;
    if (!strcmp(opt, "--quiet"))
        return o->progress = 0, 0;
    if (!strcmp(opt, "--small"))
        return o->small = 1, 0;
    if (!strcmp(opt, "--pair-tune"))
        return o->pair_tune = 1, 0;
    if (*i + 1 >= argc)
        return -1;
    const char *v = argv[++*i];
    uint64_t u;
    const char *wl_names[BENCH_WORKLOADS], *pol_names[KSCHED_POLICY_MAX];
    for (unsigned w = 0; w < BENCH_WORKLOADS; w++)
        wl_names[w] = bench_workloads()[w].name;
    for (unsigned p = 0; p < ksched_policy_count(); p++)
        pol_names[p] = ksched_policy_name((ksched_policy)p);
    if (!strcmp(opt, "--backend"))
        return o->backend = v, 0;
    if (!strcmp(opt, "--profiles"))
        return o->profiles = v, 0;
    if (!strcmp(opt, "--ptx-dir"))
        return o->ptx_dir = v, 0;
    if (!strcmp(opt, "--out"))
        return o->out_dir = v, 0;
    if (!strcmp(opt, "--gpu"))
        return o->gpu = v, kmodel_gpu_lookup(v) ? 0 : -1;
    if (!strcmp(opt, "--workload"))
        return parse_set(v, wl_names, BENCH_WORKLOADS, &o->workloads);
    if (!strcmp(opt, "--policy"))
        return parse_set(v, pol_names, ksched_policy_count(), &o->policies);
    if (!strcmp(opt, "--load"))
        return parse_double(v, 0.01, 100, &o->load);
    if (!strcmp(opt, "--a0"))
        return parse_double(v, 0.01, 1, &o->a0);
    if (!strcmp(opt, "--alpha-p"))
        return parse_double(v, 0, 1, &o->alpha_p);
    if (!strcmp(opt, "--alpha-m"))
        return parse_double(v, 0, 1, &o->alpha_m);
    if (!strcmp(opt, "--aging"))
        return parse_double(v, 0, 1e9, &o->aging);
    if (!strcmp(opt, "--seed"))
        return parse_u64(v, 0, UINT64_MAX, &o->seed);
    if (!strcmp(opt, "--launch-latency-ns"))
        return parse_u64(v, 0, 1000000000, &o->launch_latency_ns);
    if (!strcmp(opt, "--stream-gap-ns"))
        return parse_u64(v, 0, 1000000000, &o->stream_gap_ns);
    int rc = parse_u64(v, 1, 1000000, &u);
    if (!strcmp(opt, "--instances"))
        return o->instances = (unsigned)u, rc;
    if (!strcmp(opt, "--mc-runs"))
        return o->mc_runs = (unsigned)u, rc || u > 1000 ? -1 : 0;
    if (!strcmp(opt, "--rounds"))
        return o->rounds = (unsigned)u, rc || u > BENCH_ROUNDS_MAX ? -1 : 0;
    if (!strcmp(opt, "--depth"))
        return o->depth = (unsigned)u, rc || u > 64 ? -1 : 0;
    return -1;
}

static unsigned runs_of(const bench_options *o, int p)
{
    if (!(o->policies & (1u << p)))
        return 0;
    return p == KSCHED_MC ? o->mc_runs : 1;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The selected policies in the order of round r: their list rotated left by r (round 0:
 * fifo, base, kernelet; round 1: base, kernelet, fifo; ...), so that drift of the machine
 * does not always favour the same policy. Returns how many. */
static unsigned round_order(const bench_options *o, unsigned r, ksched_policy order[])
{
    ksched_policy sel[KSCHED_POLICY_MAX];
    unsigned k = 0;
    for (int p = 0; p < (int)ksched_policy_count(); p++)
        if (runs_of(o, p))
            sel[k++] = (ksched_policy)p;
    for (unsigned i = 0; i < k; i++)
        order[i] = sel[(i + r) % k];
    return k;
}

/* Runs every selected policy (mc several times) on each selected workload, o->rounds
 * times, the policies interleaved round by round. Each run's instances are given back
 * once it is summed up: only its figures are reported. */
static int run_all(const bench_options *o, const ksched_profile_cache *profiles,
                   const double alone[], bench_result **out, size_t *count)
{
    size_t cap = 0, n = 0;
    uint64_t total = 0;
    for (unsigned w = 0; w < BENCH_WORKLOADS; w++)
        for (int p = 0; p < (int)ksched_policy_count(); p++)
            if (o->workloads & (1u << w)) {
                cap += (size_t)o->rounds * runs_of(o, p);
                total += (uint64_t)o->rounds * runs_of(o, p) * bench_workloads()[w].n *
                         o->instances;
            }
    bench_result *res = calloc(cap ? cap : 1, sizeof(*res));
    bench_progress *prog = bench_progress_new(o->progress, total);
    char msg[512];
    int rc = res && prog ? 0 : -1;
    uint64_t done = 0, t0 = wall_ns();
    for (unsigned w = 0; !rc && w < BENCH_WORKLOADS; w++) {
        const bench_workload *wl = &bench_workloads()[w];
        if (!(o->workloads & (1u << w)))
            continue;
        double work = 0;
        for (unsigned k = 0; k < wl->n; k++)
            work += alone[wl->kernel[k]];
        bench_arrival *arr;
        size_t na;
        if (bench_arrivals(wl, o->instances, o->load / work, o->seed, &arr, &na)) {
            rc = -1;
            break;
        }
        unsigned seq = 0;
        for (unsigned round = 0; !rc && round < o->rounds; round++) {
            ksched_policy order[KSCHED_POLICY_MAX];
            unsigned k = round_order(o, round, order);
            bench_progress_round(prog, round, o->rounds);
            for (unsigned i = 0; !rc && i < k; i++)
                for (unsigned r = 0; !rc && r < runs_of(o, order[i]); r++) {
                    uint64_t started = wall_ns() - t0;
                    rc = bench_run(o, profiles, wl, order[i], o->seed + r, arr, na, alone,
                                   prog, done, &res[n], msg, sizeof(msg));
                    if (rc) {
                        fprintf(stderr, "kernelet-bench: %s %s: %s\n", wl->name,
                                ksched_policy_name(order[i]), msg);
                        break;
                    }
                    bench_result *x = &res[n++];
                    x->round = round;
                    x->order = seq++;
                    x->started_ns = started;
                    bench_result_free(x);
                    if (x->wrong)
                        fprintf(stderr, "kernelet-bench: %s %s: %u kernels' outputs differ "
                                "from the CPU's: %s\n", wl->name,
                                ksched_policy_name(order[i]), x->wrong, msg);
                    done += na;
                }
        }
        free(arr);
    }
    bench_progress_free(prog);
    *out = res;
    *count = n;
    return rc;
}

int main(int argc, char **argv)
{
    bench_options o;
    char profiles_path[4096], msg[512];
    defaults(&o, profiles_path, sizeof(profiles_path));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (apply(&o, argc, argv, &i)) {
            fprintf(stderr, "kernelet-bench: bad option or value: %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    ksched_profile_cache *profiles = NULL;
    ksched_err e;
    if (ksched_profile_cache_new(&profiles, &e) ||
        ksched_profile_load_file(profiles, o.profiles, &e)) {
        fprintf(stderr, "kernelet-bench: %s\n", e.msg);
        ksched_profile_cache_free(profiles);
        return 2;
    }
    double alone[BENCH_KERNELS];
    bench_result *res = NULL;
    size_t n = 0;
    int rc = bench_alone_times(&o, profiles, alone, msg, sizeof(msg));
    if (rc)
        fprintf(stderr, "kernelet-bench: %s\n", msg);
    else
        rc = run_all(&o, profiles, alone, &res, &n);
    if (n && bench_report(&o, res, n, alone, msg, sizeof(msg))) {
        fprintf(stderr, "kernelet-bench: %s\n", msg);
        rc = -1;
    }
    unsigned checked = 0, wrong = 0;
    for (size_t i = 0; i < n; i++) {
        rc |= res[i].failed || res[i].block_errors || res[i].wrong ? -1 : 0;
        checked += res[i].wl->n;
        wrong += res[i].wrong;
        bench_result_free(&res[i]);
    }
    if (n && strcmp(o.backend, "sim"))
        printf("outputs against the CPU's: %u kernels' outputs checked in %zu runs, %u differ\n",
               checked, n, wrong);
    free(res);
    ksched_profile_cache_free(profiles);
    return rc ? 1 : 0;
}
