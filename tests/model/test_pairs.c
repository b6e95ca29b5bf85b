/* Heterogeneous workloads: identical kernels equal the homogeneous chain, swapping kernels
 * swaps results, CP of a kernel with itself is 0, complementary kernels profit on the
 * C2050, the balanced ratio and the ranking. */
#include <math.h>
#include <string.h>

#include "test_common.h"

/* Two identical kernels with b1 + b2 blocks equal one kernel with b1 + b2 blocks. */
static void test_identical_equals_homogeneous(void)
{
    kmodel_gpu gpu = test_gpu();
    const kmodel_granularity grans[] = {KMODEL_GRAN_WARP, KMODEL_GRAN_BLOCK};
    const double rms[] = {0.04, 0.25};
    const double us[] = {0.0, 0.5, 1.0};
    for (size_t a = 0; a < G_N_ELEMENTS(grans); a++) {
        kmodel_options o = exact_options(grans[a], 80, 0.9, 1, 6);
        kmodel_ctx *ctx = test_ctx(&gpu, &o);
        for (size_t b = 0; b < G_N_ELEMENTS(rms); b++) {
            for (size_t c = 0; c < G_N_ELEMENTS(us); c++) {
                unsigned wpb = grans[a] == KMODEL_GRAN_BLOCK ? 2 : 1;
                unsigned b1 = us[c] == 0.5 ? 2 : 3, b2 = us[c] == 0.5 ? 3 : 5;
                kmodel_kernel ks[2] = {kernel_of(wpb, rms[b], us[c]),
                                       kernel_of(wpb, rms[b], us[c])};
                unsigned blocks[2] = {b1, b2};
                kmodel_mix_result mix;
                double single;
                g_assert_cmpint(kmodel_mix(ctx, 2, ks, blocks, &mix), ==, 0);
                g_assert_cmpint(kmodel_ipc_single(ctx, &ks[0], b1 + b2, &single), ==, 0);
                g_assert_cmpfloat_with_epsilon(mix.total_ipc, single, 1e-9);
                /* each kernel gets its share of the issue slots */
                g_assert_cmpfloat_with_epsilon(mix.ipc[0] / b1, mix.ipc[1] / b2, 1e-9);
            }
        }
        kmodel_ctx_free(ctx);
    }
}

static void test_swap_symmetry(void)
{
    GRand *r = g_rand_new_with_seed(7);
    kmodel_ctx *ctx = test_ctx(kmodel_gpu_lookup("H100"), NULL);
    for (int t = 0; t < 12; t++) {
        kmodel_kernel k1 = kernel_of((unsigned)g_rand_int_range(r, 1, 9) * 2,
                                     g_rand_double_range(r, 0, 0.4), t % 3 ? 0 : 0.3);
        kmodel_kernel k2 = kernel_of((unsigned)g_rand_int_range(r, 1, 9) * 2,
                                     g_rand_double_range(r, 0, 0.4), 0);
        k1.insts_per_warp = 1000;
        k2.insts_per_warp = 3000;
        unsigned b1 = 1, b2 = 1;
        kmodel_pair_result a, b;
        g_assert_cmpint(kmodel_pair(ctx, &k1, b1, &k2, b2, &a), ==, 0);
        g_assert_cmpint(kmodel_pair(ctx, &k2, b2, &k1, b1, &b), ==, 0);
        g_assert_cmpfloat_with_epsilon(a.ipc[0], b.ipc[1], 1e-10);
        g_assert_cmpfloat_with_epsilon(a.ipc[1], b.ipc[0], 1e-10);
        g_assert_cmpfloat_with_epsilon(a.cp, b.cp, 1e-10);
        g_assert_cmpfloat_with_epsilon(a.dt, b.dt, 1e-6 * (1 + a.dt));
        g_assert_cmpint(kmodel_balanced(ctx, &k1, &k2, &a), ==, 0);
        g_assert_cmpint(kmodel_balanced(ctx, &k2, &k1, &b), ==, 0);
        g_assert_cmpfloat_with_epsilon(a.dt_rel, b.dt_rel, 1e-9);
        g_assert_cmpfloat_with_epsilon(a.cp, b.cp, 1e-9);
    }
    kmodel_ctx_free(ctx);
    g_rand_free(r);
}

static double balanced_cp(kmodel_ctx *ctx, const kmodel_kernel *a, const kmodel_kernel *b)
{
    kmodel_pair_result r;
    int rc = kmodel_balanced(ctx, a, b, &r);
    if (rc)
        g_error("kmodel_balanced: %s", kmodel_ctx_error(ctx));
    return r.cp;
}

static void test_self_cp_is_zero(void)
{
    const char *gpus[] = {"C2050", "GTX680", "H100"};
    const double rms[] = {0.01, 0.1, 0.4};
    const unsigned wpbs[] = {4, 8, 16};
    for (size_t g = 0; g < G_N_ELEMENTS(gpus); g++) {
        /* exactly 0 where no units are merged: warp granularity on the virtual SM */
        kmodel_options o;
        kmodel_options_default(&o);
        o.granularity = KMODEL_GRAN_WARP;
        kmodel_ctx *exact = test_ctx(kmodel_gpu_lookup(gpus[g]), &o);
        kmodel_ctx *dflt = test_ctx(kmodel_gpu_lookup(gpus[g]), NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(rms); i++) {
            for (size_t j = 0; j < G_N_ELEMENTS(wpbs); j++) {
                kmodel_kernel k = kernel_of(wpbs[j], rms[i], 0);
                k.regs_per_thread = 32;
                g_assert_cmpfloat(fabs(balanced_cp(exact, &k, &k)), <, 1e-9);
                g_assert_cmpfloat(fabs(balanced_cp(dflt, &k, &k)), <, 1e-9);
            }
        }
        kmodel_ctx_free(exact);
        kmodel_ctx_free(dflt);
    }
}

/* On the C2050 a compute-bound kernel with a memory-bound one profits more than either
 * paired with its own kind (the paper's premise). */
static void test_c2050_complementary(void)
{
    kmodel_ctx *ctx = test_ctx(kmodel_gpu_lookup("C2050"), NULL);
    /* one block shape for all four, so that no pair gains from occupancy alone (a 4-warp
     * kernel alone is held to 32 warps by the 8-block limit; paired it is not) */
    kmodel_kernel comp = kernel_of(8, 0.02, 0), comp2 = kernel_of(8, 0.03, 0);
    kmodel_kernel mem = kernel_of(8, 0.3, 0), mem2 = kernel_of(8, 0.25, 0);
    double cm = balanced_cp(ctx, &comp, &mem);
    double cc = balanced_cp(ctx, &comp, &comp2);
    double mm = balanced_cp(ctx, &mem, &mem2);
    g_test_message("C2050 CP: compute+memory %.4f, compute+compute %.4f, memory+memory %.4f",
                   cm, cc, mm);
    g_assert_cmpfloat(cm, >, cc + 0.01);
    g_assert_cmpfloat(cm, >, mm + 0.01);
    kmodel_ctx_free(ctx);
}

/* The balanced ratio minimises dt_rel among the full splits. */
static void test_balanced_is_minimal(void)
{
    kmodel_ctx *ctx = test_ctx(kmodel_gpu_lookup("H100"), NULL);
    kmodel_kernel k1 = kernel_of(4, 0.02, 0), k2 = kernel_of(8, 0.2, 0.25);
    k1.insts_per_warp = 4000;
    k2.insts_per_warp = 800;
    kmodel_pair_result best;
    g_assert_cmpint(kmodel_balanced(ctx, &k1, &k2, &best), ==, 0);
    int checked = 0;
    for (unsigned b1 = 1; b1 <= 16; b1++) {
        for (unsigned b2 = 8; b2 >= 1; b2--) {
            kmodel_kernel ks[2] = {k1, k2};
            unsigned bl[2] = {b1, b2}, more[2] = {b1 + 1, b2};
            if (kmodel_fits(ctx, 2, ks, bl) != 0)
                continue;
            if (kmodel_fits(ctx, 2, ks, more) == 0)
                break;  /* not a full split */
            kmodel_pair_result r;
            g_assert_cmpint(kmodel_pair(ctx, &k1, b1, &k2, b2, &r), ==, 0);
            g_assert_cmpfloat(best.dt_rel, <=, r.dt_rel + 1e-12);
            checked++;
            break;
        }
    }
    g_assert_cmpint(checked, >=, 3);
    kmodel_ctx_free(ctx);
}

/* Over every split that fits, the balance is at least as good as over the full ones. */
static void test_ratio_scope_all(void)
{
    kmodel_options o;
    kmodel_options_default(&o);
    kmodel_ctx *full = test_ctx(kmodel_gpu_lookup("GTX680"), &o);
    o.ratio_scope = KMODEL_RATIO_ALL;
    kmodel_ctx *all = test_ctx(kmodel_gpu_lookup("GTX680"), &o);
    kmodel_kernel k1 = kernel_of(4, 0.03, 0), k2 = kernel_of(8, 0.2, 0);
    k1.insts_per_warp = 3000;
    k2.insts_per_warp = 700;
    kmodel_pair_result f, a;
    g_assert_cmpint(kmodel_balanced(full, &k1, &k2, &f), ==, 0);
    g_assert_cmpint(kmodel_balanced(all, &k1, &k2, &a), ==, 0);
    g_assert_cmpfloat(a.dt_rel, <=, f.dt_rel + 1e-12);
    kmodel_kernel ks[2] = {k1, k2};
    g_assert_cmpint(kmodel_fits(all, 2, ks, a.blocks), ==, 0);
    kmodel_ctx_free(full);
    kmodel_ctx_free(all);
}

static void test_rank_pairs(void)
{
    kmodel_ctx *ctx = test_ctx(kmodel_gpu_lookup("H100"), NULL);
    kmodel_kernel ks[4] = {kernel_of(8, 0.01, 0), kernel_of(8, 0.02, 0),
                           kernel_of(8, 0.3, 0), kernel_of(8, 0.35, 0)};
    kmodel_pair_result out[6];
    size_t count = 0;
    g_assert_cmpint(kmodel_rank_pairs(ctx, 4, ks, out, &count), ==, 0);
    g_assert_cmpuint(count, ==, 6);
    for (size_t i = 1; i < count; i++)
        g_assert_cmpfloat(out[i - 1].cp, >=, out[i].cp);
    /* the best pair mixes a compute-bound with a memory-bound kernel */
    g_assert_cmpuint(out[0].k1, <, 2);
    g_assert_cmpuint(out[0].k2, >=, 2);
    /* its entry agrees with kmodel_balanced on the same two kernels */
    kmodel_pair_result r;
    g_assert_cmpint(kmodel_balanced(ctx, &ks[out[0].k1], &ks[out[0].k2], &r), ==, 0);
    g_assert_cmpfloat_with_epsilon(r.cp, out[0].cp, 1e-12);
    kmodel_ctx_free(ctx);
}

/* Three kernels: the API takes more than two; identical ones sum to the single kernel. */
static void test_three_kernels(void)
{
    kmodel_gpu gpu = test_gpu();
    kmodel_options o = exact_options(KMODEL_GRAN_WARP, 40, 1, 0, 4);
    kmodel_ctx *ctx = test_ctx(&gpu, &o);
    kmodel_kernel k = kernel_of(1, 0.2, 0);
    kmodel_kernel ks[3] = {k, k, k};
    unsigned blocks[3] = {2, 3, 4};
    kmodel_mix_result mix;
    double single, cp;
    g_assert_cmpint(kmodel_mix(ctx, 3, ks, blocks, &mix), ==, 0);
    g_assert_cmpuint(mix.n, ==, 3);
    g_assert_cmpint(kmodel_ipc_single(ctx, &k, 9, &single), ==, 0);
    g_assert_cmpfloat_with_epsilon(mix.total_ipc, single, 1e-9);
    /* CP against each alone at full occupancy (64 one-warp blocks here) */
    double full;
    g_assert_cmpint(kmodel_ipc_single(ctx, &k, 0, &full), ==, 0);
    g_assert_cmpint(kmodel_cp(ctx, 3, ks, blocks, &cp), ==, 0);
    g_assert_cmpfloat_with_epsilon(cp, 1 - full / mix.total_ipc, 1e-9);
    g_assert_cmpfloat(cp, <, 0);
    kmodel_ctx_free(ctx);
}

/* A pair run as one-wave launches: free launches leave CP as it is, a cost makes it
 * smaller, and a cost far beyond the wave makes the pair lose to running the two in turn;
 * for a kernel paired with itself (both waves alike) 1/share grows linearly in the cost,
 * half as fast when each wave holds twice the work. */
static double self_excess(kmodel_ctx *ctx, const kmodel_kernel *k, double launch_ns)
{
    kmodel_pair_result r;
    double cp;
    g_assert_cmpint(kmodel_pair(ctx, k, 2, k, 2, &r), ==, 0);
    g_assert_cmpint(kmodel_launch_cp(ctx, k, k, &r, launch_ns, NULL, &cp), ==, 0);
    return -cp;     /* 1/share - 1, as share = 1 / (1 - cp) */
}

static void test_launch_cost(void)
{
    kmodel_ctx *ctx = test_ctx(kmodel_gpu_lookup("H100"), NULL);
    kmodel_kernel comp = kernel_of(8, 0.02, 0), mem = kernel_of(8, 0.3, 0);
    comp.insts_per_warp = mem.insts_per_warp = 2000;
    kmodel_pair_result r;
    double cp0, cp_small, cp_big;
    g_assert_cmpint(kmodel_balanced(ctx, &comp, &mem, &r), ==, 0);
    g_assert_cmpint(kmodel_launch_cp(ctx, &comp, &mem, &r, 0, NULL, &cp0), ==, 0);
    g_assert_cmpfloat_with_epsilon(cp0, r.cp, 1e-12);
    g_assert_cmpint(kmodel_launch_cp(ctx, &comp, &mem, &r, 1000, NULL, &cp_small), ==, 0);
    g_assert_cmpint(kmodel_launch_cp(ctx, &comp, &mem, &r, 1e7, NULL, &cp_big), ==, 0);
    g_assert_cmpfloat(cp_small, <, cp0);
    g_assert_cmpfloat(cp_big, <, 0);
    /* self pair: 1/share - 1 = launch_ns / wave_ns */
    kmodel_kernel k = kernel_of(8, 0.1, 0);
    k.insts_per_warp = 1000;
    double e0 = self_excess(ctx, &k, 0);
    double e1 = self_excess(ctx, &k, 1000) - e0, e3 = self_excess(ctx, &k, 3000) - e0;
    g_assert_cmpfloat(e1, >, 0);
    g_assert_cmpfloat_with_epsilon(e3 / e1, 3.0, 1e-9);
    k.insts_per_warp = 2000;
    g_assert_cmpfloat_with_epsilon((self_excess(ctx, &k, 1000) - e0) / e1, 0.5, 1e-9);
    /* measured times per block in place of the model's: the model's own give the same */
    const kmodel_gpu *h100 = kmodel_gpu_lookup("H100");
    double own[2], cp_own, ipc;
    for (int i = 0; i < 2; i++) {
        const kmodel_kernel *k = i ? &mem : &comp;
        g_assert_cmpint(kmodel_ipc_single(ctx, k, 0, &ipc), ==, 0);
        own[i] = k->insts_per_warp * k->warps_per_block / (ipc * h100->sms) /
                 h100->clock_mhz * 1000.0;
    }
    g_assert_cmpint(kmodel_launch_cp(ctx, &comp, &mem, &r, 1000, own, &cp_own), ==, 0);
    g_assert_cmpfloat_with_epsilon(cp_own, cp_small, 1e-9);
    own[0] *= 4;    /* a kernel four times slower than modelled: its launches cost less */
    g_assert_cmpint(kmodel_launch_cp(ctx, &comp, &mem, &r, 1000, own, &cp_own), ==, 0);
    g_assert_cmpfloat(cp_own, >, cp_small);
    g_assert_cmpint(kmodel_launch_cp(ctx, &comp, &mem, &r, -1, NULL, &cp0), ==, KMODEL_EINVAL);
    g_assert_cmpint(kmodel_launch_cp(ctx, &comp, &mem, &r, NAN, NULL, &cp0), ==, KMODEL_EINVAL);
    kmodel_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/model/pairs/identical-equals-homogeneous",
                    test_identical_equals_homogeneous);
    g_test_add_func("/model/pairs/swap-symmetry", test_swap_symmetry);
    g_test_add_func("/model/pairs/self-cp-zero", test_self_cp_is_zero);
    g_test_add_func("/model/pairs/c2050-complementary", test_c2050_complementary);
    g_test_add_func("/model/pairs/balanced-minimal", test_balanced_is_minimal);
    g_test_add_func("/model/pairs/ratio-scope-all", test_ratio_scope_all);
    g_test_add_func("/model/pairs/rank", test_rank_pairs);
    g_test_add_func("/model/pairs/three-kernels", test_three_kernels);
    g_test_add_func("/model/pairs/launch-cost", test_launch_cost);
    return g_test_run();
}
