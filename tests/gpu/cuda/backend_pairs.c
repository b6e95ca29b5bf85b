/* backend-check, the model against the device: every pair of the eight benchmark kernels
 * (28), each kernel profiled online as kerneletd profiles it; the performance model picks
 * the pair's split (blocks per SM of each, kmodel_balanced, as the kernelet policy does)
 * and predicts its co-run throughput, as the paper's CP and with the cost of the pair's
 * launches (kmodel_launch_cp: one launch per wave, each costing the backend's calibrated
 * slice overhead); the trial op then runs the two side by side at that split on their
 * real data, one launch per wave as kerneletd runs a pair, and measures it. Throughput
 * here is the pair's work rate over running the two one after the other: the sum over
 * both kernels of (rate beside the other / rate alone), 1 / (1 - CP). Prints a table, the
 * mean absolute error of each prediction and how often each orders two pairs as
 * measured. */
#include <math.h>
#include <string.h>

#include "backend_check.h"
#include "profile.h"

#define N_KERNELS 8

typedef struct modelled {
    bc_run run;
    kbackend_profile prof;
    kmodel_kernel k;
    double block_ns;            /* measured: the whole kernel alone / its blocks */
    int ready;
} modelled;

#define TIMING_REPS 5

/* The model's view of a profiled kernel, as sched_class_set_profile builds it. */
static kmodel_kernel model_kernel(const bc_run *r, const kbackend_profile *p)
{
    kbackend_slice s = bc_whole(r);
    uint64_t threads = (uint64_t)s.block[0] * s.block[1] * s.block[2];
    return (kmodel_kernel){.warps_per_block = (unsigned)((threads + 31) / 32),
                           .regs_per_thread = p->regs_per_thread,
                           .smem_per_block = p->smem_per_block + s.smem,
                           .rm = p->rm,
                           .uncoalesced = p->uncoalesced,
                           .insts_per_warp = p->insts_per_warp};
}

static int prepare_one(kbackend be, const kw_kernel *k, const char *dir, modelled *m)
{
    char msg[256] = "";
    double ms;
    memset(m, 0, sizeof(*m));
    if (bc_prepare(&m->run, be, k, dir, KW_SIZE_DEFAULT, msg, sizeof(msg)) ||
        bc_run_whole(&m->run, msg, sizeof(msg)) ||
        bc_profile_and_finish(&m->run, &m->prof, &ms, msg, sizeof(msg))) {
        bc_fail("pair model: %s: %s", k->name, msg);
        return 1;
    }
    m->k = model_kernel(&m->run, &m->prof);
    kbackend_slice s = bc_whole(&m->run);
    kbackend_error e = {0};
    double whole_ns;
    if (kcuda_time_launch(m->run.be.state, &s, 0, TIMING_REPS, &whole_ns, &e)) {
        bc_fail("pair model: %s: timing: %s", k->name, e.msg);
        return 1;
    }
    m->block_ns = whole_ns / (double)m->run.total;
    m->ready = 1;
    return 0;
}

static kmodel_ctx *device_model(kbackend be)
{
    kbackend_device_info in;
    kbackend_error e = {0};
    kmodel_gpu gpu;
    kmodel_options opt;
    kmodel_ctx *ctx = NULL;
    char msg[256] = "";
    kmodel_options_default(&opt);
    if (be.ops->device_info(be.state, &in, &e) || kbackend_device_gpu(&in, &gpu, &e)) {
        bc_fail("pair model: device: %s", e.msg);
        return NULL;
    }
    kbackend_device_model_options(&in, &opt);  /* as the scheduler does (device_a0) */
    if (kmodel_ctx_new(&ctx, &gpu, &opt, msg, sizeof(msg)))
        bc_fail("pair model: %s", msg);
    return ctx;
}

/* The measured throughput of a and b side by side at bps blocks per SM; NAN when the
 * trial could not run. */
static double measured_throughput(kbackend be, modelled *a, modelled *b, const unsigned bps[2])
{
    kbackend_trial t = {.blocks_per_sm = {bps[0], bps[1]}};
    t.kernel[0] = bc_whole(&a->run);
    t.kernel[1] = bc_whole(&b->run);
    kbackend_trial_result res;
    kbackend_error e = {0};
    if (be.ops->trial(be.state, &t, &res, &e)) {
        bc_fail("pair model: trial %s:%s at %u:%u: %s", a->run.k->name, b->run.k->name,
                bps[0], bps[1], e.msg);
        return NAN;
    }
    double share = 0;
    for (int i = 0; i < 2; i++)
        share += res.together_bps[i] / res.alone_bps[i];
    if (!(share > 0) || share > 2.0 + 1e-9)
        bc_fail("pair model: %s:%s: throughput %.3f beyond what two kernels can do",
                a->run.k->name, b->run.k->name, share);
    return share;
}

typedef struct pair_row {
    const char *a, *b;
    unsigned bps[2];
    double predicted[3];            /* throughput over serial: paper's CP, with launches
                                       (waves by the model), with launches (waves by the
                                       kernels' measured times alone) */
    double measured;
} pair_row;

static double rel_error(const pair_row *row, int which)
{
    return fabs(row->predicted[which] - row->measured) / row->measured;
}

static int pair_row_of(kbackend be, kmodel_ctx *ctx, double launch_ns, modelled *a,
                       modelled *b, pair_row *row, FILE *csv)
{
    kmodel_pair_result r;
    double cp_model, cp_timed, block_ns[2] = {a->block_ns, b->block_ns};
    *row = (pair_row){.a = a->run.k->name, .b = b->run.k->name, .measured = NAN};
    if (kmodel_balanced(ctx, &a->k, &b->k, &r) ||
        kmodel_launch_cp(ctx, &a->k, &b->k, &r, launch_ns, NULL, &cp_model) ||
        kmodel_launch_cp(ctx, &a->k, &b->k, &r, launch_ns, block_ns, &cp_timed)) {
        printf("| %s:%s | — | does not fit beside each other | | | | | | |\n", row->a, row->b);
        return 0;
    }
    row->bps[0] = r.blocks[0];
    row->bps[1] = r.blocks[1];
    row->predicted[0] = 1 / (1 - r.cp);
    row->predicted[1] = 1 / (1 - cp_model);
    row->predicted[2] = 1 / (1 - cp_timed);
    row->measured = measured_throughput(be, a, b, row->bps);
    if (row->measured != row->measured)
        return 0;
    printf("| %s:%s | %u:%u | %.3f | %.3f | %.3f | %.3f | %.1f%% | %.1f%% | %.1f%% |\n",
           row->a, row->b, row->bps[0], row->bps[1], row->predicted[0], row->predicted[1],
           row->predicted[2], row->measured, 100 * rel_error(row, 0), 100 * rel_error(row, 1),
           100 * rel_error(row, 2));
    if (csv)
        fprintf(csv, "pairmodel,%s,%s,%u,%u,%.5f,%.5f,%.5f,%.5f\n", row->a, row->b,
                row->bps[0], row->bps[1], row->predicted[0], row->predicted[1],
                row->predicted[2], row->measured);
    return 1;
}

/* How often a prediction orders two pairs as the device does. */
static double rank_agreement(const pair_row *rows, unsigned n, int which)
{
    unsigned agree = 0, total = 0;
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = i + 1; j < n; j++) {
            double dp = rows[i].predicted[which] - rows[j].predicted[which];
            double dm = rows[i].measured - rows[j].measured;
            total++;
            agree += (dp > 0) == (dm > 0);
        }
    return total ? (double)agree / total : NAN;
}

static void summarise(const pair_row *rows, unsigned n, FILE *csv)
{
    static const char *const what[3] = {"paper's CP", "with launches, waves by the model",
                                        "with launches, waves by measured times alone"};
    for (int w = 0; w < 3 && n; w++) {
        double sum = 0, worst = 0;
        unsigned best_m = 0, best_p = 0;
        for (unsigned i = 0; i < n; i++) {
            double err = rel_error(&rows[i], w);
            sum += err;
            worst = err > worst ? err : worst;
            if (rows[i].measured > rows[best_m].measured)
                best_m = i;
            if (rows[i].predicted[w] > rows[best_p].predicted[w])
                best_p = i;
        }
        printf("pair model, %s: %u pairs, mean absolute error %.1f%% (worst %.1f%%); pairs "
               "ordered as measured %.0f%%; best measured %s:%s (%.3f), best predicted %s:%s "
               "(measured %.3f)\n", what[w], n, 100 * sum / n, 100 * worst,
               100 * rank_agreement(rows, n, w), rows[best_m].a, rows[best_m].b,
               rows[best_m].measured, rows[best_p].a, rows[best_p].b, rows[best_p].measured);
        if (csv)
            fprintf(csv, "pairmodel_mae,%d,%u,%.5f,%.5f,%.5f\n", w, n, sum / n, worst,
                    rank_agreement(rows, n, w));
    }
}

void bc_check_pair_model(kbackend be, const char *dir, FILE *csv)
{
    static const char *const names[N_KERNELS] = {"pc", "sad", "spmv", "st", "mm", "mriq",
                                                 "bs", "tea"};
    modelled m[N_KERNELS];
    pair_row rows[N_KERNELS * (N_KERNELS - 1) / 2];
    unsigned n = 0;
    kbackend_device_info in;
    kbackend_error e = {0};
    double launch_ns = be.ops->device_info(be.state, &in, &e) ? 0 : (double)in.slice_overhead_ns;
    kmodel_ctx *ctx = device_model(be);
    for (unsigned i = 0; i < N_KERNELS; i++)
        if (!ctx || prepare_one(be, kw_find(names[i]), dir, &m[i]))
            m[i].ready = 0;
    printf("\n| pair | blocks per SM (model) | predicted: paper's CP | with launches of "
           "%.0f ns | the same, waves by measured times | measured | error | error | error |\n"
           "|---|---|---|---|---|---|---|---|---|\n", launch_ns);
    for (unsigned i = 0; i < N_KERNELS; i++)
        for (unsigned j = i + 1; j < N_KERNELS; j++)
            if (m[i].ready && m[j].ready)
                n += pair_row_of(be, ctx, launch_ns, &m[i], &m[j], &rows[n], csv);
    printf("\n");
    summarise(rows, n, csv);
    /* the trials re-ran blocks with the real parameters: outputs must still be right */
    for (unsigned i = 0; i < N_KERNELS; i++) {
        char msg[256] = "";
        if (m[i].ready && bc_verify(&m[i].run, msg, sizeof(msg)))
            bc_fail("after the pair trials, %s: %s", names[i], msg);
        if (m[i].ready)
            bc_release(&m[i].run);
    }
    kmodel_ctx_free(ctx);
}
