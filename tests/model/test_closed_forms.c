/* Closed forms of the homogeneous chain: Rm = 0, the W = 1 and W = 2 chains by hand,
 * stochastic rows, pi a stationary distribution, the solvers agreeing, latency forms. */
#include <math.h>
#include <string.h>

#include "test_common.h"

static kmodel_ctx *const_ctx(double L, kmodel_solver solver)
{
    kmodel_gpu gpu = test_gpu();
    kmodel_options o = exact_options(KMODEL_GRAN_WARP, L, 1, 0, 10);
    o.latency.form = KMODEL_LAT_CONSTANT;
    o.solver = solver;
    return test_ctx(&gpu, &o);
}

static void test_rm_zero_gives_full_ipc(void)
{
    kmodel_ctx *ctx = const_ctx(400, KMODEL_SOLVER_AUTO);
    for (unsigned w = 1; w <= 48; w += 7) {
        double util = -1;
        g_assert_cmpint(kmodel_homogeneous(ctx, w, 0.0, NULL, NULL, &util), ==, 0);
        g_assert_cmpfloat_with_epsilon(util, 1.0, 1e-12);
    }
    kmodel_ctx_free(ctx);
    /* and through the public path on a real GPU: IPC = peak IPC */
    kmodel_ctx *h = test_ctx(kmodel_gpu_lookup("H100"), NULL);
    kmodel_kernel k = kernel_of(8, 0.0, 0.0);
    double ipc;
    g_assert_cmpint(kmodel_ipc_single(h, &k, 0, &ipc), ==, 0);
    g_assert_cmpfloat_with_epsilon(ipc, 4.0, 1e-9);
    kmodel_ctx_free(h);
}

/* W = 1: states ready (0) / idle (1); IPC = 1 / (1 + Rm L). */
static void test_one_warp_by_hand(void)
{
    const double rms[] = {0.05, 0.3, 0.9, 1.0};
    const double Ls[] = {1.0, 7.0, 400.0};
    for (size_t a = 0; a < G_N_ELEMENTS(rms); a++) {
        for (size_t b = 0; b < G_N_ELEMENTS(Ls); b++) {
            kmodel_ctx *ctx = const_ctx(Ls[b], KMODEL_SOLVER_AUTO);
            double P[4], pi[2], util;
            g_assert_cmpint(kmodel_homogeneous(ctx, 1, rms[a], P, pi, &util), ==, 0);
            double rm = rms[a], p = 1.0 / Ls[b];
            g_assert_cmpfloat_with_epsilon(P[0], 1 - rm, 1e-14);
            g_assert_cmpfloat_with_epsilon(P[1], rm, 1e-14);
            g_assert_cmpfloat_with_epsilon(P[2], p, 1e-14);
            g_assert_cmpfloat_with_epsilon(P[3], 1 - p, 1e-14);
            g_assert_cmpfloat_with_epsilon(pi[0], p / (p + rm), 1e-12);
            g_assert_cmpfloat_with_epsilon(util, 1.0 / (1.0 + rm * Ls[b]), 1e-12);
            kmodel_ctx_free(ctx);
        }
    }
    /* Linear latency: the idle state has 128 bytes in flight, L = l0 + b0 + 128/(a0 bw). */
    kmodel_gpu gpu = test_gpu();
    kmodel_options o = exact_options(KMODEL_GRAN_WARP, 50, 0.5, 3, 8);
    kmodel_ctx *ctx = test_ctx(&gpu, &o);
    double util;
    g_assert_cmpint(kmodel_homogeneous(ctx, 1, 0.2, NULL, NULL, &util), ==, 0);
    double L = 50 + 3 + 128 / (0.5 * 8);
    g_assert_cmpfloat_with_epsilon(util, 1.0 / (1.0 + 0.2 * L), 1e-12);
    kmodel_ctx_free(ctx);
}

/* W = 2 with constant latency: rows from the binomial combinations, written out. */
static void test_two_warps_by_hand(void)
{
    const double rm = 0.3, L = 5.0;
    kmodel_ctx *ctx = const_ctx(L, KMODEL_SOLVER_AUTO);
    double P[9];
    g_assert_cmpint(kmodel_homogeneous(ctx, 2, rm, P, NULL, NULL), ==, 0);
    double p1 = 1.0 / L; /* states 1 and 2 have rounds of 1 cycle */
    double want[9] = {
        (1 - rm) * (1 - rm), 2 * rm * (1 - rm), rm * rm,
        p1 * (1 - rm), p1 * rm + (1 - p1) * (1 - rm), (1 - p1) * rm,
        p1 * p1, 2 * p1 * (1 - p1), (1 - p1) * (1 - p1),
    };
    for (int i = 0; i < 9; i++)
        g_assert_cmpfloat_with_epsilon(P[i], want[i], 1e-14);
    kmodel_ctx_free(ctx);

    /* W = 3, L = 1.5: state 1 has a 2-cycle round, so R/L > 1 clamps to 1. */
    ctx = const_ctx(1.5, KMODEL_SOLVER_AUTO);
    double Q[16];
    g_assert_cmpint(kmodel_homogeneous(ctx, 3, rm, Q, NULL, NULL), ==, 0);
    /* state 1 -> 0: the idle warp returns (p = 1) and neither ready warp goes idle */
    g_assert_cmpfloat_with_epsilon(Q[1 * 4 + 0], (1 - rm) * (1 - rm), 1e-14);
    /* state 1 -> 3 is impossible: the idle warp surely returns */
    g_assert_cmpfloat_with_epsilon(Q[1 * 4 + 3], 0.0, 1e-300);
    kmodel_ctx_free(ctx);
}

static void test_rows_and_stationarity(void)
{
    kmodel_gpu gpu = test_gpu();
    kmodel_options o = exact_options(KMODEL_GRAN_WARP, 120, 0.8, 2, 6);
    kmodel_ctx *ctx = test_ctx(&gpu, &o);
    const unsigned ws[] = {1, 3, 16, 48};
    const double rms[] = {0.01, 0.2, 0.7};
    for (size_t a = 0; a < G_N_ELEMENTS(ws); a++) {
        for (size_t b = 0; b < G_N_ELEMENTS(rms); b++) {
            unsigned n = ws[a] + 1;
            double *P = g_new(double, n * n), *pi = g_new(double, n);
            g_assert_cmpint(kmodel_homogeneous(ctx, ws[a], rms[b], P, pi, NULL), ==, 0);
            double total = 0;
            for (unsigned i = 0; i < n; i++) {
                double row = 0;
                for (unsigned j = 0; j < n; j++) {
                    g_assert_cmpfloat(P[i * n + j], >=, 0);
                    row += P[i * n + j];
                }
                g_assert_cmpfloat_with_epsilon(row, 1.0, 1e-12);
                g_assert_cmpfloat(pi[i], >=, 0);
                total += pi[i];
            }
            g_assert_cmpfloat_with_epsilon(total, 1.0, 1e-12);
            for (unsigned j = 0; j < n; j++) {
                double v = 0;
                for (unsigned i = 0; i < n; i++)
                    v += pi[i] * P[i * n + j];
                g_assert_cmpfloat_with_epsilon(v, pi[j], 1e-12);
            }
            g_free(P);
            g_free(pi);
        }
    }
    kmodel_ctx_free(ctx);
}

static void test_solvers_agree(void)
{
    kmodel_gpu gpu = test_gpu();
    const kmodel_solver solvers[] = {KMODEL_SOLVER_GTH, KMODEL_SOLVER_LU, KMODEL_SOLVER_POWER};
    kmodel_kernel ks[2] = {kernel_of(2, 0.05, 0.0), kernel_of(1, 0.3, 0.4)};
    unsigned blocks[2] = {3, 4};
    double ref[2] = {0, 0};
    for (size_t s = 0; s < G_N_ELEMENTS(solvers); s++) {
        kmodel_options o = exact_options(KMODEL_GRAN_WARP, 60, 1, 0, 8);
        o.solver = solvers[s];
        kmodel_ctx *ctx = test_ctx(&gpu, &o);
        kmodel_mix_result r;
        g_assert_cmpint(kmodel_mix(ctx, 2, ks, blocks, &r), ==, 0);
        if (s == 0) {
            ref[0] = r.ipc[0];
            ref[1] = r.ipc[1];
        } else {
            g_assert_cmpfloat_with_epsilon(r.ipc[0], ref[0], 1e-8);
            g_assert_cmpfloat_with_epsilon(r.ipc[1], ref[1], 1e-8);
        }
        kmodel_ctx_free(ctx);
    }
}

/* With the linear latency the issued memory traffic never exceeds the achieved bandwidth:
 * returns per round are at most i R / L and L >= i 128 / (a0 B), so
 * util * rm * 128 <= a0 * B; with many warps and a high rm it comes close to that bound.
 * The constant latency has no such bound. */
static void test_bandwidth_bound(void)
{
    kmodel_gpu gpu = test_gpu();
    const double a0 = 0.8, bw = 4.0;
    kmodel_options o = exact_options(KMODEL_GRAN_WARP, 100, a0, 5, bw);
    kmodel_ctx *ctx = test_ctx(&gpu, &o);
    const double rms[] = {0.01, 0.05, 0.2, 0.5, 1.0};
    const unsigned ws[] = {1, 8, 48};
    for (size_t i = 0; i < G_N_ELEMENTS(rms); i++) {
        for (size_t j = 0; j < G_N_ELEMENTS(ws); j++) {
            double util;
            g_assert_cmpint(kmodel_homogeneous(ctx, ws[j], rms[i], NULL, NULL, &util), ==, 0);
            g_assert_cmpfloat(util * rms[i] * 128, <=, a0 * bw * (1 + 1e-12));
        }
    }
    double util;
    g_assert_cmpint(kmodel_homogeneous(ctx, 48, 0.5, NULL, NULL, &util), ==, 0);
    g_assert_cmpfloat(util * 0.5 * 128, >=, 0.8 * a0 * bw);
    kmodel_ctx_free(ctx);

    o.latency.form = KMODEL_LAT_CONSTANT;
    ctx = test_ctx(&gpu, &o);
    g_assert_cmpint(kmodel_homogeneous(ctx, 48, 0.5, NULL, NULL, &util), ==, 0);
    g_assert_cmpfloat(util * 0.5 * 128, >, 10 * a0 * bw);
    kmodel_ctx_free(ctx);
}

/* The default latency rises with outstanding bytes; the paper's printed form falls. */
static void test_latency_forms(void)
{
    kmodel_gpu gpu = test_gpu();
    kmodel_options o = exact_options(KMODEL_GRAN_WARP, 100, 0.5, 4, 8);
    kmodel_ctx *ctx = test_ctx(&gpu, &o);
    g_assert_cmpfloat_with_epsilon(kmodel_latency_at(ctx, 0), 104, 1e-12);
    g_assert_cmpfloat_with_epsilon(kmodel_latency_at(ctx, 1280), 104 + 1280 / 4.0, 1e-12);
    g_assert_true(isnan(kmodel_latency_at(ctx, -1)));
    kmodel_ctx_free(ctx);

    o.latency.form = KMODEL_LAT_PAPER;
    ctx = test_ctx(&gpu, &o);
    g_assert_cmpfloat(kmodel_latency_at(ctx, 128 * 10), <, kmodel_latency_at(ctx, 128));
    kmodel_ctx_free(ctx);

    /* derived bandwidth: GB/s / MHz / SMs / schedulers (virtual SM) */
    kmodel_options d;
    kmodel_options_default(&d);
    ctx = test_ctx(kmodel_gpu_lookup("H100"), &d);
    g_assert_cmpfloat_with_epsilon(kmodel_ctx_bandwidth(ctx), 3350e9 / 1980e6 / 132 / 4, 1e-9);
    g_assert_cmpfloat_with_epsilon(kmodel_ctx_base_latency(ctx), 420, 1e-12);
    kmodel_ctx_free(ctx);
}

/* The virtual SM is one scheduler with 1/ns of the SM's warps and bandwidth: the same
 * kernel on the whole SM of a 4-scheduler GPU equals, per scheduler, a kernel with a quarter
 * of the warps per block on one scheduler with a quarter of the bandwidth. */
static void test_virtual_sm(void)
{
    kmodel_gpu gpu = test_gpu();  /* 4 schedulers, 100 GB/s at 1000 MHz: 100 B/cycle */
    const kmodel_granularity grans[] = {KMODEL_GRAN_BLOCK, KMODEL_GRAN_WARP};
    for (size_t i = 0; i < G_N_ELEMENTS(grans); i++) {
        kmodel_options v;
        kmodel_options_default(&v);
        v.granularity = grans[i];
        v.state_budget = 0;
        kmodel_ctx *vctx = test_ctx(&gpu, &v);
        g_assert_cmpfloat_with_epsilon(kmodel_ctx_bandwidth(vctx), 25.0, 1e-12);
        kmodel_options one = exact_options(grans[i], 100, 1, 0, 25.0);
        kmodel_ctx *octx = test_ctx(&gpu, &one);
        kmodel_kernel whole = kernel_of(8, 0.15, 0.2), quarter = kernel_of(2, 0.15, 0.2);
        double a, b;
        g_assert_cmpint(kmodel_ipc_single(vctx, &whole, 3, &a), ==, 0);
        g_assert_cmpint(kmodel_ipc_single(octx, &quarter, 3, &b), ==, 0);
        g_assert_cmpfloat_with_epsilon(a, b, 1e-12);
        kmodel_ctx_free(vctx);
        kmodel_ctx_free(octx);
    }
}

static void test_gpu_table(void)
{
    g_assert_cmpuint(kmodel_gpu_count(), ==, 4);
    for (size_t i = 0; i < kmodel_gpu_count(); i++) {
        char msg[128];
        g_assert_cmpint(kmodel_gpu_validate(kmodel_gpu_at(i), msg, sizeof(msg)), ==, 0);
    }
    g_assert_null(kmodel_gpu_at(4));
    g_assert_cmpstr(kmodel_gpu_lookup("tesla c2050")->name, ==, "C2050");
    g_assert_cmpstr(kmodel_gpu_lookup("H100-SXM")->name, ==, "H100");
    g_assert_cmpuint(kmodel_gpu_lookup("GTX680")->schedulers_per_sm, ==, 4);
    g_assert_cmpfloat(kmodel_gpu_lookup("H200")->mem_bandwidth_gbs, >,
                      kmodel_gpu_lookup("H100")->mem_bandwidth_gbs);
    g_assert_null(kmodel_gpu_lookup("K80"));
    g_assert_null(kmodel_gpu_lookup(NULL));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/model/closed/rm-zero", test_rm_zero_gives_full_ipc);
    g_test_add_func("/model/closed/one-warp", test_one_warp_by_hand);
    g_test_add_func("/model/closed/two-warps", test_two_warps_by_hand);
    g_test_add_func("/model/closed/stationary", test_rows_and_stationarity);
    g_test_add_func("/model/closed/solvers-agree", test_solvers_agree);
    g_test_add_func("/model/closed/latency", test_latency_forms);
    g_test_add_func("/model/closed/bandwidth-bound", test_bandwidth_bound);
    g_test_add_func("/model/closed/virtual-sm", test_virtual_sm);
    g_test_add_func("/model/closed/gpu-table", test_gpu_table);
    return g_test_run();
}
