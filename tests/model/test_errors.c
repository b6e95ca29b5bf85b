/* Bad parameters are rejected with the right code and a message; nothing aborts. */
#include <math.h>
#include <string.h>

#include "test_common.h"

static void expect(kmodel_ctx *ctx, int rc, int want, const char *word)
{
    g_assert_cmpint(rc, ==, want);
    const char *msg = kmodel_ctx_error(ctx);
    g_assert_nonnull(strstr(msg, word));
}

static void test_bad_kernels(void)
{
    kmodel_ctx *ctx = test_ctx(kmodel_gpu_lookup("H100"), NULL);
    double ipc;
    kmodel_kernel k = kernel_of(8, 1.5, 0);
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "rm");
    k.rm = -0.1;
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "rm");
    k.rm = NAN;
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "rm");
    k = kernel_of(8, 0.1, NAN);
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "uncoalesced");
    k = kernel_of(0, 0.1, 0);
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "warps_per_block");
    k = kernel_of(33, 0.1, 0);
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "warps_per_block");
    k = kernel_of(8, 0.1, 0);
    k.regs_per_thread = 256;
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "regs_per_thread");
    k = kernel_of(8, 0.1, 0);
    k.insts_per_warp = INFINITY;
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "insts_per_warp");
    k = kernel_of(8, 0.1, 0);
    k.smem_per_block = 300000;
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "smem");
    /* after an error a good call succeeds and clears the message */
    k = kernel_of(8, 0.1, 0);
    g_assert_cmpint(kmodel_ipc_single(ctx, &k, 0, &ipc), ==, 0);
    g_assert_cmpstr(kmodel_ctx_error(ctx), ==, "");
    kmodel_ctx_free(ctx);
}

static void test_no_fit(void)
{
    kmodel_ctx *ctx = test_ctx(kmodel_gpu_lookup("H100"), NULL);
    kmodel_kernel k = kernel_of(16, 0.1, 0);
    double ipc;
    /* 5 blocks of 16 warps = 80 warps > 64 */
    expect(ctx, kmodel_ipc_single(ctx, &k, 5, &ipc), KMODEL_ENOFIT, "warps");
    kmodel_kernel ks[2] = {k, kernel_of(32, 0.2, 0)};
    unsigned blocks[2] = {3, 1};
    kmodel_mix_result mix;
    expect(ctx, kmodel_mix(ctx, 2, ks, blocks, &mix), KMODEL_ENOFIT, "warps");
    k.regs_per_thread = 255;   /* 16 warps x 8192 = 131072 registers > 65536 */
    expect(ctx, kmodel_ipc_single(ctx, &k, 0, &ipc), KMODEL_EINVAL, "registers");
    /* alone each fits, together their shared memory does not */
    kmodel_kernel big = kernel_of(8, 0.1, 0), big2 = kernel_of(8, 0.2, 0);
    big.smem_per_block = 120000;
    big2.smem_per_block = 120000;
    kmodel_pair_result r;
    expect(ctx, kmodel_balanced(ctx, &big, &big2, &r), KMODEL_ENOFIT, "fits");
    expect(ctx, kmodel_pair(ctx, &big, 1, &big2, 1, &r), KMODEL_ENOFIT, "shared memory");
    kmodel_ctx_free(ctx);
}

static void test_bad_calls(void)
{
    kmodel_ctx *ctx = test_ctx(kmodel_gpu_lookup("C2050"), NULL);
    kmodel_kernel ks[5];
    unsigned blocks[5] = {1, 1, 1, 1, 1};
    for (int i = 0; i < 5; i++)
        ks[i] = kernel_of(1, 0.1, 0);
    kmodel_mix_result mix;
    expect(ctx, kmodel_mix(ctx, 0, ks, blocks, &mix), KMODEL_EINVAL, "kernels");
    expect(ctx, kmodel_mix(ctx, 5, ks, blocks, &mix), KMODEL_EINVAL, "kernels");
    expect(ctx, kmodel_mix(ctx, 2, ks, blocks, NULL), KMODEL_EINVAL, "NULL");
    blocks[1] = 0;
    expect(ctx, kmodel_mix(ctx, 2, ks, blocks, &mix), KMODEL_EINVAL, "0 blocks");
    kmodel_pair_result r;
    expect(ctx, kmodel_pair(ctx, &ks[0], 0, &ks[1], 1, &r), KMODEL_EINVAL, "block");
    expect(ctx, kmodel_homogeneous(ctx, 0, 0.1, NULL, NULL, NULL), KMODEL_EINVAL, "warps");
    expect(ctx, kmodel_homogeneous(ctx, 4, 2.0, NULL, NULL, NULL), KMODEL_EINVAL, "rm");
    g_assert_cmpint(kmodel_mix(NULL, 1, ks, blocks, &mix), ==, KMODEL_EINVAL);
    g_assert_cmpstr(kmodel_strerror(KMODEL_ENOFIT), ==, "blocks do not fit one SM");
    kmodel_ctx_free(ctx);
}

static void test_bad_context(void)
{
    char msg[256];
    kmodel_ctx *ctx = (kmodel_ctx *)&msg;   /* must be reset to NULL on failure */
    kmodel_options o;
    kmodel_options_default(&o);
    o.latency.a0 = 0;
    g_assert_cmpint(kmodel_ctx_new(&ctx, kmodel_gpu_lookup("H100"), &o, msg, sizeof(msg)),
                    ==, KMODEL_EINVAL);
    g_assert_null(ctx);
    g_assert_nonnull(strstr(msg, "a0"));
    kmodel_options_default(&o);
    o.latency.l0 = NAN;
    g_assert_cmpint(kmodel_ctx_new(&ctx, kmodel_gpu_lookup("H100"), &o, msg, sizeof(msg)),
                    ==, KMODEL_EINVAL);
    kmodel_options_default(&o);
    o.latency.form = KMODEL_LAT_CUSTOM;   /* without a function */
    g_assert_cmpint(kmodel_ctx_new(&ctx, kmodel_gpu_lookup("H100"), &o, msg, sizeof(msg)),
                    ==, KMODEL_EINVAL);
    g_assert_cmpint(kmodel_ctx_new(&ctx, NULL, NULL, msg, sizeof(msg)), ==, KMODEL_EINVAL);
    kmodel_gpu g = test_gpu();
    g.peak_ipc = NAN;
    g_assert_cmpint(kmodel_ctx_new(&ctx, &g, NULL, msg, sizeof(msg)), ==, KMODEL_EINVAL);
    g_assert_nonnull(strstr(msg, "peak_ipc"));
    g = test_gpu();
    g.sms = 0;
    g_assert_cmpint(kmodel_gpu_validate(&g, NULL, 0), ==, KMODEL_EINVAL);
}

static double nan_latency(const kmodel_latency *lat, double q, void *user)
{
    (void)lat;
    (void)user;
    return q > 0 ? NAN : 10;
}

static double doubling_latency(const kmodel_latency *lat, double q, void *user)
{
    (void)lat;
    *(int *)user += 1;
    return 20 + q / 64;
}

static void test_custom_latency(void)
{
    kmodel_gpu gpu = test_gpu();
    kmodel_options o = exact_options(KMODEL_GRAN_WARP, 20, 1, 0, 64);
    o.latency.form = KMODEL_LAT_CUSTOM;
    o.latency.custom = nan_latency;
    kmodel_ctx *ctx = test_ctx(&gpu, &o);
    kmodel_kernel k = kernel_of(1, 0.2, 0);
    double ipc;
    expect(ctx, kmodel_ipc_single(ctx, &k, 4, &ipc), KMODEL_EINVAL, "latency");
    kmodel_ctx_free(ctx);

    /* the same linear form given as a function gives the built-in's answer */
    int calls = 0;
    o.latency.custom = doubling_latency;
    o.latency.user = &calls;
    ctx = test_ctx(&gpu, &o);
    double custom_ipc, linear_ipc;
    g_assert_cmpint(kmodel_ipc_single(ctx, &k, 6, &custom_ipc), ==, 0);
    g_assert_cmpint(calls, >, 0);
    kmodel_ctx_free(ctx);
    o.latency.form = KMODEL_LAT_LINEAR;
    ctx = test_ctx(&gpu, &o);
    g_assert_cmpint(kmodel_ipc_single(ctx, &k, 6, &linear_ipc), ==, 0);
    g_assert_cmpfloat_with_epsilon(custom_ipc, linear_ipc, 1e-12);
    kmodel_ctx_free(ctx);
}

static void test_too_big(void)
{
    kmodel_options o;
    kmodel_options_default(&o);
    o.granularity = KMODEL_GRAN_WARP;
    o.virtual_sm = 0;
    kmodel_ctx *ctx = test_ctx(kmodel_gpu_lookup("H100"), &o);
    kmodel_kernel ks[2] = {kernel_of(8, 0.1, 0.5), kernel_of(8, 0.2, 0.5)};
    unsigned blocks[2] = {4, 4};
    kmodel_mix_result mix;
    expect(ctx, kmodel_mix(ctx, 2, ks, blocks, &mix), KMODEL_ETOOBIG, "max_states");
    kmodel_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/model/errors/kernels", test_bad_kernels);
    g_test_add_func("/model/errors/no-fit", test_no_fit);
    g_test_add_func("/model/errors/calls", test_bad_calls);
    g_test_add_func("/model/errors/context", test_bad_context);
    g_test_add_func("/model/errors/custom-latency", test_custom_latency);
    g_test_add_func("/model/errors/too-big", test_too_big);
    return g_test_run();
}
