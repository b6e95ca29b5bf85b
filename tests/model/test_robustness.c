/* Random and extreme parameters: every call either fails with a KMODEL_E* code and a
 * message, or returns finite IPCs within [0, peak] whose sum is at most the peak. */
#include <math.h>
#include <string.h>

#include "test_common.h"

static double pick_rm(GRand *r)
{
    static const double edge[] = {0.0, 1.0, 1e-12, 1 - 1e-12, 0.5};
    if (g_rand_int_range(r, 0, 3) == 0)
        return edge[g_rand_int_range(r, 0, G_N_ELEMENTS(edge))];
    return g_rand_double(r);
}

static kmodel_kernel random_kernel(GRand *r)
{
    kmodel_kernel k = {
        .warps_per_block = (unsigned)g_rand_int_range(r, 1, 25),
        .regs_per_thread = (unsigned)g_rand_int_range(r, 0, 72),
        .smem_per_block = (unsigned)g_rand_int_range(r, 0, 3) ? 0 : (unsigned)g_rand_int_range(r, 0, 65536),
        .rm = pick_rm(r),
        .uncoalesced = g_rand_int_range(r, 0, 2) ? 0 : pick_rm(r),
        .insts_per_warp = g_rand_int_range(r, 0, 2) ? 0 : g_rand_double_range(r, 1, 1e6),
    };
    return k;
}

static void check_ipc(double ipc, double peak)
{
    g_assert_true(isfinite(ipc));
    g_assert_cmpfloat(ipc, >=, 0);
    g_assert_cmpfloat(ipc, <=, peak * (1 + 1e-9));
}

static void check_failure(kmodel_ctx *ctx, int rc)
{
    g_assert_cmpint(rc, <, 0);
    g_assert_cmpint(rc, >=, KMODEL_ENOTFOUND);
    g_assert_cmpuint(strlen(kmodel_ctx_error(ctx)), >, 0);
}

static void test_random_calls(void)
{
    GRand *r = g_rand_new_with_seed(4242);
    int ok = 0, fails[8] = {0};
    for (int t = 0; t < 150; t++) {
        kmodel_options o;
        kmodel_options_default(&o);
        o.granularity = g_rand_int_range(r, 0, 4) ? KMODEL_GRAN_BLOCK : KMODEL_GRAN_WARP;
        o.virtual_sm = g_rand_int_range(r, 0, 4) ? 1 : 0;
        o.latency.form = (kmodel_latency_form)g_rand_int_range(r, 0, 3);
        o.latency.l0 = g_rand_int_range(r, 0, 5) ? -1 : g_rand_double_range(r, 1, 1e6);
        o.latency.a0 = g_rand_double_range(r, 1e-6, 1);
        o.max_states = 1024;
        const kmodel_gpu *gpu = kmodel_gpu_at((size_t)g_rand_int_range(r, 0, 4));
        kmodel_ctx *ctx = test_ctx(gpu, &o);
        kmodel_kernel k1 = random_kernel(r), k2 = random_kernel(r);
        kmodel_pair_result res;
        int rc = kmodel_balanced(ctx, &k1, &k2, &res);
        if (rc) {
            check_failure(ctx, rc);
            fails[-rc]++;
        } else {
            ok++;
            check_ipc(res.ipc[0], gpu->peak_ipc);
            check_ipc(res.ipc[1], gpu->peak_ipc);
            check_ipc(res.cipc, gpu->peak_ipc);
            check_ipc(res.single_ipc[0], gpu->peak_ipc);
            g_assert_true(isfinite(res.cp) || res.cp == -INFINITY);
            g_assert_cmpfloat(res.cp, <, 1);
            g_assert_cmpfloat(res.dt_rel, >=, 0);
            g_assert_cmpfloat(res.dt_rel, <=, 1);
        }
        kmodel_ctx_free(ctx);
    }
    g_test_message("ok %d, EINVAL %d, ENOFIT %d, ETOOBIG %d, other %d", ok, fails[1], fails[2],
                   fails[4], fails[3] + fails[5] + fails[6] + fails[7]);
    /* many random kernels are valid: the checks above ran on real results */
    g_assert_cmpint(ok, >=, 75);
    g_rand_free(r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/model/robustness/random-calls", test_random_calls);
    return g_test_run();
}
