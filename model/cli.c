/* kernelet-model: the performance model from the command line. Given two kernels and a GPU
 * it prints each kernel's IPC alone, the balanced slice ratio with the concurrent IPCs, CP
 * and the time difference there, and optionally one given split. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/model.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: kernelet-model [options] --gpu NAME --k1 SPEC --k2 SPEC\n"
        "       kernelet-model --list-gpus\n"
        "\n"
        "SPEC is a comma-separated list of key=value:\n"
        "  rm=R        memory instruction ratio in [0,1] (required)\n"
        "  wpb=N       warps per block (default 8)\n"
        "  regs=N      registers per thread (default 0: not limiting)\n"
        "  smem=N      shared memory bytes per block (default 0)\n"
        "  unc=F       fraction of uncoalesced memory instructions in [0,1] (default 0)\n"
        "  insts=N     warp instructions per warp (default 0: unknown)\n"
        "\n"
        "options:\n"
        "  --gpu NAME            C2050, GTX680, H100, H200 (see --list-gpus)\n"
        "  --blocks B1:B2        also evaluate this split (blocks per SM)\n"
        "  --granularity warp|block   chain unit (default block)\n"
        "  --no-virtual-sm       model one scheduler for the whole SM\n"
        "  --latency linear|constant|paper   latency form (default linear)\n"
        "  --l0 CYCLES --a0 F --b0 CYCLES --bandwidth BYTES_PER_CYCLE\n"
        "  --solver auto|gth|lu|power\n"
        "  --ratios full|all     splits the balanced ratio considers (default full)\n"
        "  -h, --help\n");
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_uint(const char *s, unsigned *out)
{
    char *end;
    errno = 0;
    if (*s == '-')
        return -1;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > 0xffffffffUL)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int parse_kernel(const char *spec, kmodel_kernel *k)
{
    char buf[512];
    int have_rm = 0;
    if (strlen(spec) >= sizeof(buf)) {
        fprintf(stderr, "kernelet-model: kernel spec too long\n");
        return -1;
    }
    strcpy(buf, spec);
    memset(k, 0, sizeof(*k));
    k->warps_per_block = 8;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            fprintf(stderr, "kernelet-model: '%s' is not key=value\n", tok);
            return -1;
        }
        *eq = 0;
        const char *key = tok, *val = eq + 1;
        int bad;
        if (!strcmp(key, "rm"))
            bad = parse_double(val, &k->rm), have_rm = 1;
        else if (!strcmp(key, "unc"))
            bad = parse_double(val, &k->uncoalesced);
        else if (!strcmp(key, "insts"))
            bad = parse_double(val, &k->insts_per_warp);
        else if (!strcmp(key, "wpb"))
            bad = parse_uint(val, &k->warps_per_block);
        else if (!strcmp(key, "regs"))
            bad = parse_uint(val, &k->regs_per_thread);
        else if (!strcmp(key, "smem"))
            bad = parse_uint(val, &k->smem_per_block);
        else {
            fprintf(stderr, "kernelet-model: unknown kernel key '%s'\n", key);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "kernelet-model: bad value '%s' for %s\n", val, key);
            return -1;
        }
    }
    if (!have_rm) {
        fprintf(stderr, "kernelet-model: kernel spec needs rm=\n");
        return -1;
    }
    return 0;
}

static int pick(const char *s, const char *const names[], int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 0;
        }
    return -1;
}

static void print_pair(const char *title, const kmodel_pair_result *r)
{
    printf("%s: %u:%u blocks per SM\n", title, r->blocks[0], r->blocks[1]);
    printf("  ipc k1 %.4f  k2 %.4f  concurrent %.4f\n", r->ipc[0], r->ipc[1], r->cipc);
    printf("  CP %.4f  dT %.1f cycles (%.3f of the longer slice)\n", r->cp, r->dt, r->dt_rel);
}

static int list_gpus(void)
{
    printf("%-8s %5s %6s %7s %6s %5s %8s %9s %8s\n", "name", "SMs", "warps", "blocks",
           "sched", "ipc", "MHz", "GB/s", "L0");
    for (size_t i = 0; i < kmodel_gpu_count(); i++) {
        const kmodel_gpu *g = kmodel_gpu_at(i);
        printf("%-8s %5u %6u %7u %6u %5.1f %8.0f %9.0f %8.0f\n", g->name, g->sms,
               g->max_warps_per_sm, g->max_blocks_per_sm, g->schedulers_per_sm, g->peak_ipc,
               g->clock_mhz, g->mem_bandwidth_gbs, g->mem_latency_cycles);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"gpu", required_argument, NULL, 'g'},   {"k1", required_argument, NULL, '1'},
        {"k2", required_argument, NULL, '2'},    {"blocks", required_argument, NULL, 'b'},
        {"granularity", required_argument, NULL, 'G'},
        {"no-virtual-sm", no_argument, NULL, 'V'},
        {"latency", required_argument, NULL, 'L'}, {"l0", required_argument, NULL, 'l'},
        {"a0", required_argument, NULL, 'a'},    {"b0", required_argument, NULL, 'B'},
        {"bandwidth", required_argument, NULL, 'w'},
        {"solver", required_argument, NULL, 's'}, {"ratios", required_argument, NULL, 'r'},
        {"list-gpus", no_argument, NULL, 'x'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char *const grans[] = {"warp", "block"};
    static const char *const lats[] = {"linear", "constant", "paper"};
    static const char *const solvers[] = {"auto", "gth", "lu", "power"};
    static const char *const scopes[] = {"full", "all"};
    kmodel_options opt;
    kmodel_options_default(&opt);
    const char *gpu_name = NULL, *spec[2] = {NULL, NULL};
    unsigned split[2] = {0, 0};
    int c, v, bad = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': gpu_name = optarg; break;
        case '1': spec[0] = optarg; break;
        case '2': spec[1] = optarg; break;
        case 'b': {
            char tmp[64];
            char *colon;
            snprintf(tmp, sizeof(tmp), "%s", optarg);
            colon = strchr(tmp, ':');
            if (!colon)
                bad = 1;
            else {
                *colon = 0;
                bad = parse_uint(tmp, &split[0]) || parse_uint(colon + 1, &split[1]) ||
                      !split[0] || !split[1];
            }
            break;
        }
        case 'G': bad = pick(optarg, grans, 2, &v); opt.granularity = (kmodel_granularity)v; break;
        case 'V': opt.virtual_sm = 0; break;
        case 'L': bad = pick(optarg, lats, 3, &v); opt.latency.form = (kmodel_latency_form)v; break;
        case 'l': bad = parse_double(optarg, &opt.latency.l0); break;
        case 'a': bad = parse_double(optarg, &opt.latency.a0); break;
        case 'B': bad = parse_double(optarg, &opt.latency.b0); break;
        case 'w': bad = parse_double(optarg, &opt.latency.bandwidth); break;
        case 's': bad = pick(optarg, solvers, 4, &v); opt.solver = (kmodel_solver)v; break;
        case 'r': bad = pick(optarg, scopes, 2, &v); opt.ratio_scope = (kmodel_ratio_scope)v; break;
        case 'x': return list_gpus();
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "kernelet-model: bad value '%s'\n", optarg);
            return 2;
        }
    }
    if (optind < argc || !gpu_name || !spec[0] || !spec[1]) {
        usage(stderr);
        return 2;
    }
    const kmodel_gpu *gpu = kmodel_gpu_lookup(gpu_name);
    if (!gpu) {
        fprintf(stderr, "kernelet-model: unknown GPU '%s' (try --list-gpus)\n", gpu_name);
        return 2;
    }
    kmodel_kernel k[2];
    if (parse_kernel(spec[0], &k[0]) || parse_kernel(spec[1], &k[1]))
        return 2;

    char msg[256];
    kmodel_ctx *ctx;
    int rc = kmodel_ctx_new(&ctx, gpu, &opt, msg, sizeof(msg));
    if (rc) {
        fprintf(stderr, "kernelet-model: %s\n", msg);
        return 1;
    }
    double single[2];
    unsigned maxb[2];
    kmodel_pair_result best, at;
    for (int i = 0; i < 2 && !rc; i++) {
        rc = kmodel_max_blocks(ctx, &k[i], &maxb[i]);
        if (!rc)
            rc = kmodel_ipc_single(ctx, &k[i], 0, &single[i]);
    }
    if (!rc)
        rc = kmodel_balanced(ctx, &k[0], &k[1], &best);
    if (!rc && split[0])
        rc = kmodel_pair(ctx, &k[0], split[0], &k[1], split[1], &at);
    if (rc) {
        fprintf(stderr, "kernelet-model: %s: %s\n", kmodel_strerror(rc), kmodel_ctx_error(ctx));
        kmodel_ctx_free(ctx);
        return 1;
    }
    printf("gpu %s: %u SMs, peak IPC %.1f per SM, %s granularity%s\n", gpu->name, gpu->sms,
           gpu->peak_ipc, grans[opt.granularity],
           opt.virtual_sm ? ", virtual SM per scheduler" : "");
    for (int i = 0; i < 2; i++)
        printf("k%d alone: ipc %.4f at %u blocks per SM\n", i + 1, single[i], maxb[i]);
    print_pair("balanced ratio", &best);
    if (split[0])
        print_pair("requested split", &at);
    kmodel_ctx_free(ctx);
    return 0;
}
