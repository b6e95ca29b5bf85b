/* The model's IPCs against the independent warp simulator (warp_sim.c) on random
 * parameter sets, one and two kernels, two- and three-state warps, warp and block
 * granularity. Agreement is required within 5 standard errors of the simulation (batch
 * means) plus 0.002. */
#include <math.h>
#include <string.h>

#include "test_common.h"
#include "warp_sim.h"

#define SETS 30

typedef struct {
    sim_params sp;
    kmodel_granularity gran;
    unsigned wpb[2], blocks[2];
} mc_case;

static void make_case(GRand *r, int s, mc_case *c)
{
    memset(c, 0, sizeof(*c));
    c->sp.nk = s % 3 == 0 ? 1 : 2;
    c->gran = s % 4 == 1 ? KMODEL_GRAN_BLOCK : KMODEL_GRAN_WARP;
    c->sp.l0 = g_rand_double_range(r, 2, 200);
    c->sp.b0 = g_rand_double_range(r, 0, 10);
    c->sp.a0 = g_rand_double_range(r, 0.5, 1);
    c->sp.bw = g_rand_double_range(r, 4, 64);
    c->sp.bytes_u = 32 * 32;
    for (size_t k = 0; k < c->sp.nk; k++) {
        int three = (s % 3 == 2 && k == 0);
        unsigned maxn = three ? 4 : (c->gran == KMODEL_GRAN_BLOCK ? 4 : 7);
        c->sp.n[k] = (unsigned)g_rand_int_range(r, 1, (gint32)maxn + 1);
        c->wpb[k] = c->gran == KMODEL_GRAN_BLOCK ? (unsigned)g_rand_int_range(r, 2, 4) : 1;
        c->blocks[k] = c->sp.n[k];
        c->sp.g[k] = c->wpb[k];
        c->sp.rm[k] = g_rand_double_range(r, 0.02, 0.5);
        c->sp.u[k] = three ? g_rand_double_range(r, 0.2, 0.8) : (s % 4 == 3 && k == 1 ? 1 : 0);
    }
}

static void test_model_matches_simulation(void)
{
    GRand *r = g_rand_new_with_seed(20261122);
    kmodel_gpu gpu = test_gpu();
    for (int s = 0; s < SETS; s++) {
        mc_case c;
        make_case(r, s, &c);
        kmodel_options o = exact_options(c.gran, c.sp.l0, c.sp.a0, c.sp.b0, c.sp.bw);
        kmodel_ctx *ctx = test_ctx(&gpu, &o);
        kmodel_kernel ks[2];
        for (size_t k = 0; k < c.sp.nk; k++)
            ks[k] = kernel_of(c.wpb[k], c.sp.rm[k], c.sp.u[k]);
        kmodel_mix_result mix;
        int rc = kmodel_mix(ctx, c.sp.nk, ks, c.blocks, &mix);
        g_assert_cmpint(rc, ==, KMODEL_OK);

        sim_result sim;
        sim_run(&c.sp, r, 2000, 20, 6000, &sim);
        for (size_t k = 0; k < c.sp.nk; k++) {
            double tol = 5 * sim.se[k] + 0.002;
            if (fabs(mix.ipc[k] - sim.util[k]) > tol)
                g_error("set %d kernel %zu (n=%u g=%g rm=%.3f u=%.2f, l0=%.1f bw=%.1f): "
                        "model %.4f, simulation %.4f +- %.4f", s, k, c.sp.n[k], c.sp.g[k],
                        c.sp.rm[k], c.sp.u[k], c.sp.l0, c.sp.bw, mix.ipc[k], sim.util[k],
                        sim.se[k]);
        }
        g_assert_cmpfloat(fabs(mix.total_ipc - sim.total), <=, 5 * sim.total_se + 0.003);
        kmodel_ctx_free(ctx);
    }
    g_rand_free(r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/model/montecarlo/random-sets", test_model_matches_simulation);
    return g_test_run();
}
