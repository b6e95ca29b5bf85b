/* kerneletd: the Kernelet daemon. Owns the GPU (through an executor backend), runs the
 * scheduler's dispatcher thread and serves tenants on a Unix socket (docs/PROTOCOL.md,
 * docs/OPERATORS.md). Runs in the foreground; stops cleanly on SIGINT or SIGTERM. */
#define _GNU_SOURCE             /* cpu_set_t (--cpus) */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "server.h"
#include "backends.h"
#include "cpus.h"
#include "crash_report.h"
#include "isolate.h"
#include "kernelet/ptx.h"
#include "recover.h"

#define DEFAULT_SOCKET "/run/kernelet/kerneletd.sock"
#define OPT_PAIR_TUNE 1000          /* long options without a letter to spare */
#define OPT_WORKER_FD 1001
#define OPT_ISOLATE_RATE 1010
#define OPT_FENCE_FAULTS 1011
#define OPT_SPIN_US 1012
#define OPT_LONE_SLICE_US 1013
#define OPT_PAIR_SHORT_US 1014
#define OPT_SIDE_BY_SIDE 1015
#define OPT_PIPELINE_DEPTH 1016
#define OPT_CPUS 1017
#define OPT_WHOLE_DEPTH 1018
#define OPT_MAX_CONTEXTS 1019
#define OPT_WORKER_INPUT 1002
#define OPT_WORKER_TENANT_BASE 1003
#define OPT_WORKER_SETTINGS 1004

static struct kserver *running;

static void on_signal(int sig)
{
    (void)sig;
    if (running)
        kserver_stop(running);
}

static void usage(FILE *f)
{
    char policies[256];

    fprintf(f,
            "usage: kerneletd [options]\n"
            "  --socket PATH        Unix socket to listen on (default %s)\n"
            "  --socket-mode MODE   permissions of the socket, octal (default 0666)\n"
            "  --backend NAME       executor backend: auto (the GPU, else the emulator), %s\n"
            "                       (default auto)\n"
            "  --policy NAME        %s (default kernelet)\n"
            "  --profiles FILE      kernel profiles (the sim's truth; a cache for the others)\n"
            "  --profile-cache FILE profiles learned online: read at start when the file\n"
            "                       exists, written back (with what was learned) at stop\n"
            "  --pair-split A:B     kernelet: pairs run A blocks per SM of the more compute-\n"
            "                       bound kernel beside B of the other, not the model's split\n"
            "  --pair-waves N       kernelet: a pair's slices are N waves at their split and\n"
            "                       alternate in their lanes; 0 = slices of equal time (the\n"
            "                       paper's sizing; the default)\n"
            "  --pair-min-us US     with --pair-waves: slices last at least this long by the\n"
            "                       model (default 30)\n"
            "  --pair-short-us US   kernelet: a kernel is paired only when it lasts US or more\n"
            "                       by the model or launches wait behind it on its stream;\n"
            "                       short ones of waiting programs run whole, side by side\n"
            "                       (default 1000; 0 = any kernel may pair)\n"
            "  --lone-slice-us US   kernelet: the only stream launching (no other launched\n"
            "                       for 5 x US) runs kernels in slices of at least US, whole\n"
            "                       when shorter (default 2000; 0 = minimum slices)\n"
            "  --side-by-side N     base, kernelet: whole kernels that run side by side,\n"
            "                       each in a lane of its own (default: as many as the\n"
            "                       backend has lanes; the scheduler library's default is 2)\n"
            "  --pipeline-depth N   launches queued in one lane ahead of its running one\n"
            "                       (default 2)\n"
            "  --whole-depth N      the same for kernels run whole (default 16: a burst of\n"
            "                       them shares end events; slices keep --pipeline-depth)\n"
            "  --pair-tune          kernelet: each pair of kernels tries a few ways of slicing\n"
            "                       and launching on its real work and keeps the fastest\n"
            "                       measured, or stops pairing when none gains\n"
            "  --calibration DIR    cuda: GPU calibration files (default: the built-in ones)\n"
            "  --max-connections N  tenants and administrators at once (default 256)\n"
            "  --max-connections-per-user N\n"
            "                       connections of one user, root and administrators\n"
            "                       excepted (default: a quarter of --max-connections)\n"
            "  --kernel-time-limit SECONDS\n"
            "                       a launch (one slice) running longer fails with CUDA's\n"
            "                       launch timeout: stopped on emu, reported on cuda; the\n"
            "                       default of tenants the operator gives no limit of their\n"
            "                       own (default 120; 0 = none; at most a day)\n"
            "  --hello-timeout SECONDS\n"
            "                       a connection that has not said HELLO by then is closed\n"
            "                       (default 5; fractions allowed)\n"
            "  --max-regions N      shared-memory regions one connection may map (default\n"
            "                       and most: 64)\n"
            "  --max-contexts N     client contexts (a VM's guest processes) of one\n"
            "                       connection that may hold memory or work at once, each\n"
            "                       with an address window of its own (default 16, at most\n"
            "                       1024)\n"
            "  --max-region-bytes BYTES\n"
            "                       bytes one connection may map as regions (a VM maps its\n"
            "                       RAM); suffixes K, M, G, T (default: the host's memory)\n"
            "  --max-pinned BYTES   bytes of one connection's shared memory pinned for the\n"
            "                       GPU (copies without staging; memory kernels read);\n"
            "                       suffixes K, M, G, T (default 1G)\n"
            "  --default-memory-quota BYTES\n"
            "                       device memory a tenant may hold unless the operator sets\n"
            "                       its own quota; suffixes K, M, G, T (default: the device's)\n"
            "  --window-size BYTES  address window of each tenant, a power of two that holds\n"
            "                       its memory quota; suffixes K, M, G, T (default 64G)\n"
            "  --no-fence           run tenants' kernels unfenced: one tenant's kernel can\n"
            "                       then reach another's memory (default: every kernel is\n"
            "                       fenced into its tenant's window; those that cannot be\n"
            "                       are refused)\n"
            "  --fence-faults       a fenced kernel's access outside its tenant's memory\n"
            "                       fails its launch with an illegal address, as on a GPU\n"
            "                       of one's own (default: it is redirected into the\n"
            "                       tenant's window; a compare more per access)\n"
            "  --isolate NAME       the tenant (VM or process) named NAME is always served\n"
            "                       by a worker process in a GPU context of its own (may be\n"
            "                       given %u times); tenants may ask for it themselves\n"
            "                       (KERNELET_ISOLATE=1)\n"
            "  --isolate-all        every tenant gets a worker and context of its own\n"
            "  --cpus LIST          run the daemon's threads on these CPUs only (e.g. 0-7):\n"
            "                       on a VM host the round trip of a launch waited for is\n"
            "                       then steady (default: every CPU the process may use)\n"
            "  --spin-us N          while tenants' work is in flight, poll for news N us\n"
            "                       before sleeping (default 1000 with 4 cores or more,\n"
            "                       else 0; after news, at most 50): a launch waited for\n"
            "                       skips the daemon's wake-ups\n"
            "  --isolate-rate N     worker starts a second per user, in bursts of 4 x N\n"
            "                       (default 4; 0 = no bound; root is not bounded)\n"
            "  --max-isolated N     worker processes at once (default 8; 0 = none: tenants\n"
            "                       asking for a context of their own are refused)\n"
            "  --log-errors         one line in the log per error answered to a tenant (its\n"
            "                       request and CUDA error): why a program fails\n"
            "  --admin-user USER    may administer besides root and the daemon's user: the\n"
            "                       user QEMU runs as, so that QMP policy reaches the daemon\n"
            "  --help\n",
            DEFAULT_SOCKET, kd_backends_available(),
            ksched_policy_list(policies, sizeof(policies), ", "), KD_MAX_ISOLATE_NAMES);
}

struct options {
    const char *socket;
    unsigned mode;
    struct kd_backend_options backend;
    const char *policy;
    unsigned max_connections;
    unsigned max_per_user;
    unsigned hello_timeout_ms;
    unsigned max_regions;
    unsigned max_contexts;      /* 0: the scheduler's default */
    uint64_t max_region_bytes;
    uint64_t max_pinned_bytes;
    uint64_t default_mem_quota;
    unsigned kernel_time_limit_ms;
    bool no_fence;
    bool fence_faults;
    bool log_errors;
    uid_t admin_uid;
    unsigned pair_split[2];
    int pair_waves;             /* -1: by backend */
    int pair_min_us;            /* -1: default */
    int lone_slice_us;                /* -1: default */
    int pair_short_us;                /* -1: default */
    int side_by_side;                 /* -1: default */
    int pipeline_depth;               /* -1: default */
    int whole_depth;                  /* -1: default */
    int pair_tune;
    const char *isolate_names[KD_MAX_ISOLATE_NAMES];
    unsigned n_isolate_names;
    bool isolate_all;
    unsigned max_isolated;
    double isolate_rate;
    int spin_us;
    bool have_cpus;
    cpu_set_t cpus;
    int worker_fd;              /* a worker of the isolation tier: its tenant's connection */
    int worker_input;           /* and what the daemon had read of it; -1 when not a worker */
    uint64_t worker_tenant_base; /* added to its tenant's id (kserver_config.tenant_id_base) */
    int worker_settings;        /* the daemon's settings for its tenant arrive there */
};

/* A user name or a numeric uid; -1 when neither. */
static int parse_user(const char *s, uid_t *uid)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s && !*end && v < (uid_t)-1) {
        *uid = (uid_t)v;
        return 0;
    }
    const struct passwd *pw = getpwnam(s);
    if (!pw)
        return -1;
    *uid = pw->pw_uid;
    return 0;
}

/* A positive count; -1 when s is not one. */
/* An integer in [lo, hi] into *out; -1 when s is not one. */
static int parse_int_in(const char *s, int lo, int hi, int *out)
{
    int v;

    if (sscanf(s, "%d%c", &v, &(char){0}) != 1 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_count(const char *s, unsigned *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (!*s || *end || errno || v == 0 || v > 1u << 20 || *s == '-')
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* A descriptor number of a worker's options, at least min; -1 when s is not one. */
static int parse_fd(const char *s, int min, int *out)
{
    return sscanf(s, "%d%c", out, &(char){0}) == 1 && *out >= min ? 0 : -1;
}

/* A positive size in bytes, with an optional binary suffix K, M, G or T; -1 when s is not
 * one or it does not fit 64 bits. */
static int parse_bytes(const char *s, uint64_t *out)
{
    static const char suffixes[] = "KMGT";
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (!*s || *s == '-' || errno || v == 0)
        return -1;
    if (*end) {
        const char *at = strchr(suffixes, *end);
        if (!at || end[1])
            return -1;
        shift = 10u * (unsigned)(at - suffixes + 1);
    }
    if (v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* Seconds (fractions allowed) as milliseconds, at least 1 and at most an hour; -1 when s
 * is not such a time. */
static int parse_seconds_ms(const char *s, unsigned *ms)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (!*s || *end || errno || !(v > 0.0) || v > 3600.0)
        return -1;
    *ms = v * 1000.0 < 1.0 ? 1u : (unsigned)(v * 1000.0);
    return 0;
}

/* A kernel time limit in seconds (0: none; at most a day) as milliseconds. */
static int parse_limit_ms(const char *s, unsigned *ms)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= 0.0) || v > 86400.0)
        return -1;
    *ms = v > 0.0 && v * 1000.0 < 1.0 ? 1u : (unsigned)(v * 1000.0);
    return 0;
}

static int parse(int argc, char **argv, struct options *o)
{
    static const struct option longs[] = {
        {"socket", required_argument, NULL, 's'}, {"socket-mode", required_argument, NULL, 'm'},
        {"backend", required_argument, NULL, 'b'}, {"policy", required_argument, NULL, 'p'},
        {"profiles", required_argument, NULL, 'f'},
        {"profile-cache", required_argument, NULL, 'F'},
        {"pair-tune", no_argument, NULL, OPT_PAIR_TUNE},
        {"pair-split", required_argument, NULL, 'S'},
        {"pair-waves", required_argument, NULL, 'W'},
        {"pair-min-us", required_argument, NULL, 'M'},
        {"lone-slice-us", required_argument, NULL, OPT_LONE_SLICE_US},
        {"pair-short-us", required_argument, NULL, OPT_PAIR_SHORT_US},
        {"side-by-side", required_argument, NULL, OPT_SIDE_BY_SIDE},
        {"pipeline-depth", required_argument, NULL, OPT_PIPELINE_DEPTH},
        {"whole-depth", required_argument, NULL, OPT_WHOLE_DEPTH},
        {"calibration", required_argument, NULL, 'C'},
        {"max-connections", required_argument, NULL, 'c'},
        {"max-connections-per-user", required_argument, NULL, 'U'},
        {"hello-timeout", required_argument, NULL, 'T'},
        {"kernel-time-limit", required_argument, NULL, 'K'},
        {"max-regions", required_argument, NULL, 'R'},
        {"max-contexts", required_argument, NULL, OPT_MAX_CONTEXTS},
        {"max-region-bytes", required_argument, NULL, 'B'},
        {"max-pinned", required_argument, NULL, 'P'},
        {"default-memory-quota", required_argument, NULL, 'Q'},
        {"window-size", required_argument, NULL, 'w'},
        {"no-fence", no_argument, NULL, 'N'},
        {"fence-faults", no_argument, NULL, OPT_FENCE_FAULTS},
        {"isolate", required_argument, NULL, 'I'},
        {"isolate-all", no_argument, NULL, 'A'},
        {"log-errors", no_argument, NULL, 'L'},
        {"max-isolated", required_argument, NULL, 'X'},
        {"isolate-rate", required_argument, NULL, OPT_ISOLATE_RATE},
        {"spin-us", required_argument, NULL, OPT_SPIN_US},
        {"cpus", required_argument, NULL, OPT_CPUS},
        {"worker-fd", required_argument, NULL, OPT_WORKER_FD},
        {"worker-input", required_argument, NULL, OPT_WORKER_INPUT},
        {"worker-tenant-base", required_argument, NULL, OPT_WORKER_TENANT_BASE},
        {"worker-settings", required_argument, NULL, OPT_WORKER_SETTINGS},
        {"admin-user", required_argument, NULL, 'u'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    char *end;

    /* Two minutes per launch: far beyond the slices of the bench programs on the
     * emulator, short enough that a spinning kernel holds the device only that long. */
    *o = (struct options){.socket = DEFAULT_SOCKET, .mode = 0666,
                          .backend = {.name = "auto", .window_bytes = KBACKEND_WINDOW_DEFAULT},
                          .kernel_time_limit_ms = 120000,
                          .policy = "kernelet", .admin_uid = getuid(), .pair_waves = -1,
                          .pair_min_us = -1, .lone_slice_us = -1,
                          .pair_short_us = -1, .side_by_side = -1, .pipeline_depth = -1,
                          .whole_depth = -1,
                          .max_isolated = 8, .isolate_rate = 4,
                          .spin_us = -1,
                          .worker_fd = -1,
                          .worker_input = -1};
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (ch) {
        case 's': o->socket = optarg; break;
        case 'm':
            o->mode = (unsigned)strtoul(optarg, &end, 8);
            if (*end || o->mode > 0777)
                return -1;
            break;
        case 'b': o->backend.name = optarg; break;
        case 'p': o->policy = optarg; break;
        case 'f': o->backend.profiles = optarg; break;
        case 'F': o->backend.profile_cache = optarg; break;
        case OPT_PAIR_TUNE: o->pair_tune = 1; break;
        case 'S':
            if (sscanf(optarg, "%u:%u%c", &o->pair_split[0], &o->pair_split[1], &(char){0}) != 2)
                return -1;
            break;
        case 'W':
            if (parse_int_in(optarg, 0, 64, &o->pair_waves) != 0)
                return -1;
            break;
        case 'M':
            if (parse_int_in(optarg, 0, 1000000, &o->pair_min_us) != 0)
                return -1;
            break;
        case OPT_PAIR_SHORT_US:
            if (parse_int_in(optarg, 0, 1000000, &o->pair_short_us) != 0)
                return -1;
            break;
        case OPT_SIDE_BY_SIDE:
            if (parse_int_in(optarg, 1, 64, &o->side_by_side) != 0)
                return -1;
            break;
        case OPT_PIPELINE_DEPTH:
            if (parse_int_in(optarg, 1, 64, &o->pipeline_depth) != 0)
                return -1;
            break;
        case OPT_WHOLE_DEPTH:
            if (parse_int_in(optarg, 1, 64, &o->whole_depth) != 0)
                return -1;
            break;
        case OPT_LONE_SLICE_US:
            if (parse_int_in(optarg, 0, 1000000, &o->lone_slice_us) != 0)
                return -1;
            break;
        case 'C': o->backend.calibration_dir = optarg; break;
        case 'c':
            if (parse_count(optarg, &o->max_connections) != 0)
                return -1;
            break;
        case 'U':
            if (parse_count(optarg, &o->max_per_user) != 0)
                return -1;
            break;
        case 'R':
            if (parse_count(optarg, &o->max_regions) != 0 || o->max_regions > 64)
                return -1;
            break;
        case OPT_MAX_CONTEXTS:
            if (parse_count(optarg, &o->max_contexts) != 0 ||
                o->max_contexts > KSCHED_MAX_CONTEXTS_LIMIT)
                return -1;
            break;
        case 'B':
            if (parse_bytes(optarg, &o->max_region_bytes) != 0)
                return -1;
            break;
        case 'P':
            if (parse_bytes(optarg, &o->max_pinned_bytes) != 0)
                return -1;
            break;
        case 'Q':
            if (parse_bytes(optarg, &o->default_mem_quota) != 0)
                return -1;
            break;
        case 'w':
            if (parse_bytes(optarg, &o->backend.window_bytes) != 0 ||
                !kbackend_window_size_valid(o->backend.window_bytes))
                return -1;
            break;
        case 'N': o->no_fence = true; break;
        case OPT_FENCE_FAULTS: o->fence_faults = true; break;
        case OPT_CPUS: {
            char why[160];
            if (kd_cpus_parse(optarg, &o->cpus, why, sizeof(why)) != 0) {
                fprintf(stderr, "kerneletd: %s\n", why);
                return -1;
            }
            o->have_cpus = true;
            break;
        }
        case 'I':
            if (o->n_isolate_names == KD_MAX_ISOLATE_NAMES || !*optarg ||
                strlen(optarg) >= KERNELET_NAME_MAX)
                return -1;
            o->isolate_names[o->n_isolate_names++] = optarg;
            break;
        case 'A': o->isolate_all = true; break;
        case 'L': o->log_errors = true; break;
        case 'X':
            if (strcmp(optarg, "0") == 0)
                o->max_isolated = 0;
            else if (parse_count(optarg, &o->max_isolated) != 0 ||
                     o->max_isolated > KD_MAX_WORKERS)
                return -1;
            break;
        case OPT_SPIN_US: {
            long us = strtol(optarg, &end, 10);
            if (end == optarg || *end || us < 0 || us > 100000)
                return -1;
            o->spin_us = (int)us;
            break;
        }
        case OPT_ISOLATE_RATE: {
            char *end;
            o->isolate_rate = strtod(optarg, &end);
            if (end == optarg || *end || !(o->isolate_rate >= 0) || o->isolate_rate > 1e6)
                return -1;
            break;
        }
        case OPT_WORKER_FD:
            if (parse_fd(optarg, 0, &o->worker_fd) != 0)
                return -1;
            break;
        case OPT_WORKER_TENANT_BASE:
            if (sscanf(optarg, "%" SCNu64 "%c", &o->worker_tenant_base, &(char){0}) != 1)
                return -1;
            break;
        case OPT_WORKER_SETTINGS:
            if (parse_fd(optarg, 1, &o->worker_settings) != 0)
                return -1;
            break;
        case OPT_WORKER_INPUT:
            if (parse_fd(optarg, 0, &o->worker_input) != 0)
                return -1;
            break;
        case 'K':
            if (parse_limit_ms(optarg, &o->kernel_time_limit_ms) != 0)
                return -1;
            break;
        case 'T':
            if (parse_seconds_ms(optarg, &o->hello_timeout_ms) != 0)
                return -1;
            break;
        case 'u':
            if (parse_user(optarg, &o->admin_uid) != 0) {
                fprintf(stderr, "kerneletd: unknown user '%s'\n", optarg);
                return -1;
            }
            break;
        case 'h': usage(stdout); exit(0);
        default: return -1;
        }
    }
    if ((o->worker_fd < 0) != (o->worker_input < 0))
        return -1;
    o->backend.end_on_unstoppable = o->worker_fd >= 0; /* a worker's context is its tenant's */
    /* A worker has one tenant and nothing of another's to pair its kernels with: they run
     * whole, side by side (base), and none is profiled first (a framework loads hundreds
     * of kernels, and a profile each cost its start-up seconds). */
    if (o->worker_fd >= 0)
        o->policy = "base";
    if (o->default_mem_quota > o->backend.window_bytes) {
        fprintf(stderr, "kerneletd: --default-memory-quota is larger than --window-size\n");
        return -1;
    }
    return optind == argc ? 0 : -1;
}

/* The scheduler's trace: slices go to the tally (kernelet-ctl's figures); a pair plan that
 * tuning kept is one line in the operator's log. */
static void on_trace(void *user, const ksched_trace *t)
{
    if (t->kind != KSCHED_TRACE_TUNED) {
        kserver_tally_trace(user, t);
        return;
    }
    char gains[256] = "";
    size_t len = 0;
    for (unsigned i = 0; i < t->n_tune_plans && len < sizeof(gains); i++)
        len += (size_t)snprintf(gains + len, sizeof(gains) - len, "%s%s %.3f", i ? ", " : "",
                                t->tune_plans[i], t->tune_gain[i]);
    fprintf(stderr, "kerneletd: pair %s + %s runs %s (work per time: %s)\n", t->entry[0],
            t->entry[1], t->tune_plans[t->first], gains);
}

/* One line for the operator's log at stop: what the scheduler did. */
static void log_scheduler(ksched *sched)
{
    ksched_stats st;

    ksched_get_stats(sched, &st);
    fprintf(stderr, "kerneletd: %llu decisions, %llu pairs, %llu solo, %llu slices; %llu pairs "
            "of kernels tuned, %llu of them better unpaired\n",
            (unsigned long long)st.decisions, (unsigned long long)st.coschedules,
            (unsigned long long)st.solo, (unsigned long long)st.slices,
            (unsigned long long)st.pairs_tuned, (unsigned long long)st.pairs_not_gaining);
    fprintf(stderr, "kerneletd: decisions took %.1f ms (at most %.1f us); the model evaluated "
            "%llu pairs of kernel classes outside them in %.1f ms (%llu inside)\n",
            st.decision_ns_total / 1e6, st.decision_ns_max / 1e3,
            (unsigned long long)st.pairs_precomputed, st.precompute_ns_total / 1e6,
            (unsigned long long)st.pairs_evaluated);
}

/* What was profiled online is kept for the next start: no tenant pays for it twice. */
static void save_profile_cache(ksched *sched, const char *path)
{
    ksched_err e;

    if (path && ksched_profiles_save(sched, path, &e) != 0)
        fprintf(stderr, "kerneletd: profile cache: %s\n", e.msg);
}

/* The device was lost and cannot be reopened in this process: the daemon executes itself
 * anew (same pid, same options; the socket is made again), keeping what it learned.
 * Returns only when that fails. */
static void restart(char **argv, const struct kd_device *d, const char *profile_cache)
{
    ksched_err e;
    if (profile_cache && d->learned && ksched_profile_cache_save(d->learned, profile_cache, &e))
        fprintf(stderr, "kerneletd: profile cache: %s\n", e.msg);
    fprintf(stderr, "kerneletd: restarting for a fresh device\n");
    fflush(stderr);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "kerneletd: cannot restart: %s\n", strerror(errno));
}

/* The scheduler's configuration from the options. 0, or -1 (reported) for a bad policy. */
static int sched_config(const struct options *o, struct kserver_tally *tally, ksched_config *c)
{
    ksched_config_default(c);
    c->trace = on_trace;
    c->trace_user = tally;
    c->pair_split[0] = o->pair_split[0];
    c->pair_split[1] = o->pair_split[1];
    /* Which slice sizing pays depends on the kernels (one-wave slices win for some pairs
     * and lose for others on the H100, docs/perf/scheduling.md): the paper's stays the
     * default, --pair-waves and --pair-tune are the operator's. */
    c->pair_waves = o->pair_waves >= 0 ? (unsigned)o->pair_waves : 0;
    c->pair_min_ns = o->pair_min_us >= 0 ? (uint64_t)o->pair_min_us * 1000 : 30000;
    c->pair_tune = o->pair_tune;
    /* Pairing short kernels of programs that wait for each launch lost to base on the
     * H100 (docs/perf/scheduling.md): the daemon's default keeps them whole. */
    c->pair_short_ns = (uint64_t)(o->pair_short_us >= 0 ? o->pair_short_us : 1000) * 1000;
    if (o->lone_slice_us >= 0)
        c->lone_slice_ns = (uint64_t)o->lone_slice_us * 1000;
    /* A tenant's streams, and different tenants' kernels, run side by side as they do
     * natively (one program's 32 streams ran 2 at a time with the library's default;
     * docs/perf/scheduling.md): every lane the backend has. */
    c->base_lanes = o->side_by_side > 0 ? (unsigned)o->side_by_side : 64;
    if (o->pipeline_depth > 0)
        c->pipeline_depth = (unsigned)o->pipeline_depth;
    /* Up to 16 whole launches of a lane share one end event on the cuda backend: a
     * program's async launches went from 61k to 92-99k a second on the H100 at 16, where 2
     * gave no gain; pairs and the paper's mixes ran as fast or faster (docs/perf/
     * transport.md). Slices keep pipeline_depth, so that a lone kernel's slices leave room
     * for a partner (libcuda-two-tenants-cosched formed no pair at 16). */
    c->whole_depth = o->whole_depth > 0 ? (unsigned)o->whole_depth : 16;
    c->max_contexts = o->max_contexts;     /* each context its own window */
    if (ksched_policy_parse(o->policy, &c->policy) == 0)
        return 0;
    fprintf(stderr, "kerneletd: unknown policy '%s'\n", o->policy);
    return -1;
}

static void server_config(const struct options *o, struct kd_device *d,
                          struct kserver_tally *tally, struct kserver_config *cfg)
{
    cfg->socket_path = o->socket;
    cfg->socket_mode = o->mode;
    cfg->sched = d->sched;
    cfg->backend_name = d->backend.ops->name;
    cfg->max_connections = o->max_connections;
    cfg->max_per_user = o->max_per_user;
    cfg->hello_timeout_ms = o->hello_timeout_ms;
    cfg->max_regions = o->max_regions;
    cfg->max_region_bytes = o->max_region_bytes;
    cfg->max_pinned_bytes = o->max_pinned_bytes;
    cfg->spin_us = o->spin_us;
    cfg->default_mem_quota = o->default_mem_quota;
    cfg->default_kernel_time_limit_ns = (uint64_t)o->kernel_time_limit_ms * 1000000u;
    cfg->max_mem_quota = d->backend.ops->domain_window ? o->backend.window_bytes : 0;
    cfg->admin_uid = o->admin_uid;
    cfg->no_fence = o->no_fence;
    cfg->fence_faults = o->fence_faults;
    cfg->log_errors = o->log_errors;
    cfg->tally = tally;
    cfg->recover = kd_device_recover;
    cfg->recover_user = d;
}

/* The isolation tier: who gets a worker of their own (a daemon that listens), or the one
 * connection to serve (a worker: it neither isolates further nor recovers a lost device,
 * its tenant sees the errors and goes). 0, or -1 (reported). */
static int isolation_config(const struct options *o, struct kd_isolation *iso,
                            struct kserver_config *cfg, uint8_t *input, size_t cap)
{
    if (o->worker_fd < 0) {
        memcpy(iso->names, o->isolate_names, sizeof(iso->names));
        iso->n_names = o->n_isolate_names;
        iso->all = o->isolate_all;
        iso->max_workers = o->max_isolated;
        kd_isolation_set_rate(iso, o->isolate_rate);
        cfg->isolate = kd_isolate;
        cfg->isolate_user = iso;
        return 0;
    }
    /* Not left running by a daemon that died before this line. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    long len = kd_worker_read_input(o->worker_input, input, cap);
    close(o->worker_input);
    if (len < 0 || getppid() == 1) {
        fprintf(stderr, "kerneletd: worker: no connection handed over\n");
        return -1;
    }
    cfg->adopt = true;
    cfg->adopt_fd = o->worker_fd;
    cfg->adopt_input = input;
    cfg->adopt_len = (size_t)len;
    cfg->tenant_id_base = o->worker_tenant_base;
    cfg->adopt_ctl_fd = o->worker_settings;
    cfg->recover = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    struct kd_device dev = {0};
    ksched_profile_cache *profiles = NULL;
    kbackend_error kerr;
    struct kserver_config cfg = {0};
    struct kserver *srv = NULL;
    struct kserver_tally *tally = NULL;
    struct kd_isolation iso;
    static uint8_t handed_over[KERNELET_MAX_REQUEST + 1];
    char err[512];
    int rc = 1;

    if (parse(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    /* before any thread starts: the backend's, the server's and the driver's inherit it */
    if (o.have_cpus && kd_cpus_apply(&o.cpus, err, sizeof(err)) != 0) {
        fprintf(stderr, "kerneletd: %s\n", err);
        return 1;
    }
    kd_isolation_init(&iso, argv);
    dev.opts = &o.backend;
    if (kd_backend_open(&o.backend, &dev.backend, &profiles, err, sizeof(err)) != 0) {
        fprintf(stderr, "kerneletd: %s\n", err);
        return 1;
    }
    dev.have_backend = true;
    if (!o.no_fence && !dev.backend.ops->domain_window) {
        fprintf(stderr, "kerneletd: backend %s has no per-tenant address windows, so kernels "
                "cannot be fenced; --no-fence runs them unfenced (tenants can then reach "
                "each other's memory)\n", dev.backend.ops->name);
        goto out;
    }
    if (kserver_tally_new(&tally) != 0) {
        fprintf(stderr, "kerneletd: out of memory\n");
        goto out;
    }
    if (sched_config(&o, tally, &dev.scfg) != 0)
        goto out;
    if (kd_device_start(&dev, profiles, err, sizeof(err)) != 0) {
        fprintf(stderr, "kerneletd: %s\n", err);
        goto out;
    }
    if (dev.backend.ops->device_info(dev.backend.state, &cfg.device, &kerr) != 0) {
        fprintf(stderr, "kerneletd: device: %s\n", kerr.msg);
        goto out;
    }
    server_config(&o, &dev, tally, &cfg);
    if (isolation_config(&o, &iso, &cfg, handed_over, sizeof(handed_over)) != 0)
        goto out;
    if (kserver_new(&srv, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "kerneletd: %s\n", err);
        goto out;
    }
    running = srv;
    iso.srv = srv;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    kd_crash_report_install();
    if (cfg.adopt)
        fprintf(stderr, "kerneletd: worker %d: serving one isolated tenant on %s (backend %s, "
                "policy %s)\n", (int)getpid(), cfg.device.name, dev.backend.ops->name,
                ksched_policy_name(dev.scfg.policy));
    else
        fprintf(stderr, "kerneletd: serving %s on %s (backend %s, policy %s)\n",
                cfg.device.name, o.socket, dev.backend.ops->name,
                ksched_policy_name(dev.scfg.policy));
    if (cfg.device.stack_bytes && !cfg.adopt)
        fprintf(stderr, "kerneletd: each GPU thread's call stack: %llu bytes down from "
                "%#llx (a fenced recursion deeper than that ends with a launch failure)\n",
                (unsigned long long)cfg.device.stack_bytes,
                (unsigned long long)(cfg.device.stack_top ? cfg.device.stack_top
                                                          : KPTX_STACK_TOP));
    if (cfg.device.local_top && !cfg.adopt)
        fprintf(stderr, "kerneletd: fenced kernels' local accesses stay below %#llx, the "
                "stack pointer of a kernel without locals\n",
                (unsigned long long)cfg.device.local_top);
    rc = kserver_run(srv) == 0 ? 0 : 1;
    running = NULL;
    /* Workers account to this server: they end before it is freed. */
    kd_isolation_stop(&iso, 5.0);
out:
    /* A tenant's kernel may run for long or forever: cancelled, it cannot hold up the stop,
     * and no completion reaches the scheduler or the server after they are freed. */
    kd_device_cancel(&dev);
    kserver_free(srv);
    kd_device_stop(&dev);
    if (dev.sched) {
        if (!cfg.adopt) /* one writer of the file: the daemon, not its workers */
            save_profile_cache(dev.sched, o.backend.profile_cache);
        log_scheduler(dev.sched);
    }
    kd_device_free(&dev);
    ksched_profile_cache_free(profiles);
    kserver_tally_free(tally);
    if (dev.restart)
        restart(argv, &dev, o.backend.profile_cache);
    ksched_profile_cache_free(dev.learned);
    return rc;
}
