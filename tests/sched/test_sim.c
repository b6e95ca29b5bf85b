/* The sim backend through the executor interface: kernel times against the model computed
 * here, co-running launches, block coverage, copies, memory errors, faults, trials,
 * determinism. */
#include <math.h>

#include "kernelet/ptx.h"
#include "sched_test.h"

typedef struct done_rec {
    int calls;
    kbackend_completion c;
} done_rec;

static void on_done(void *user, const kbackend_completion *c)
{
    done_rec *d = user;
    d->calls++;
    d->c = *c;
    d->c.msg = NULL;
}

typedef struct sim_env {
    ksim *sim;
    kbackend be;
    kbackend_module *mod;
    kbackend_function *fn[3], *sliced[3];  /* comp, mem, mid */
    kmodel_ctx *model;
} sim_env;

static const char *const names[3] = {"comp", "mem", "mid"};

static sim_env *sim_env_with(const ksim_config *c)
{
    sim_env *e = g_new0(sim_env, 1);
    g_assert_cmpint(ksim_new(&e->sim, c, NULL), ==, 0);
    ksim_backend(e->sim, &e->be);
    tenv t = {.sim = e->sim};
    tenv_standard_kernels(&t);
    const char *text = ".entry comp ( ) .entry comp__kslice ( ) .entry mem ( )\n"
                       ".entry mem__kslice ( ) .entry mid ( ) .entry mid__kslice ( )";
    g_assert_cmpint(e->be.ops->module_load_ptx(e->be.state, 0, text, strlen(text), &e->mod, NULL),
                    ==, 0);
    for (int i = 0; i < 3; i++) {
        char sl[64];
        snprintf(sl, sizeof(sl), "%s__kslice", names[i]);
        g_assert_cmpint(e->be.ops->function_get(e->be.state, e->mod, names[i], &e->fn[i], NULL,
                                                NULL), ==, 0);
        g_assert_cmpint(e->be.ops->function_get(e->be.state, e->mod, sl, &e->sliced[i], NULL,
                                                NULL), ==, 0);
    }
    char msg[256];
    g_assert_cmpint(kmodel_ctx_new(&e->model, &c->gpu, &c->model, msg, sizeof(msg)), ==, 0);
    return e;
}

static sim_env *sim_env_new(void)
{
    ksim_config c;
    ksim_config_default(&c);
    return sim_env_with(&c);
}

static void sim_env_free(sim_env *e)
{
    e->be.ops->module_unload(e->be.state, e->mod, NULL);
    ksim_free(e->sim);
    kmodel_ctx_free(e->model);
    g_free(e);
}

static void drain(sim_env *e)
{
    kbackend_error err;
    int rc;
    while ((rc = e->be.ops->progress(e->be.state, UINT64_MAX, &err)) == 1)
        ;
    g_assert_cmpint(rc, ==, 0);
}

static kbackend_slice whole(const kbackend_function *fn, unsigned blocks, unsigned lane)
{
    kbackend_slice s = {.fn = fn, .first = 0, .count = blocks, .grid = {blocks, 1, 1},
                     .block = {256, 1, 1}, .lane = lane, .tag = 1000 + lane};
    return s;
}

static kmodel_kernel model_kernel(int i)
{
    const double rm[3] = {0.002, 0.2, 0.05}, insts[3] = {3000, 300, 300};
    kmodel_kernel k = {.warps_per_block = 8, .regs_per_thread = 32, .rm = rm[i],
                       .insts_per_warp = insts[i]};
    return k;
}

/* ns for `waves` waves of b blocks per SM at ipc (warp instructions per cycle per SM). */
static double waves_ns(double waves, unsigned b, double ipc, const kmodel_kernel *k)
{
    return waves * b * k->insts_per_warp * k->warps_per_block / ipc / 1980.0 * 1000.0;
}

static void test_single_kernel_time(void)
{
    sim_env *e = sim_env_new();
    kmodel_kernel k = model_kernel(0);
    unsigned maxb;
    double ipc_full, ipc_one;
    g_assert_cmpint(kmodel_max_blocks(e->model, &k, &maxb), ==, 0);
    g_assert_cmpuint(maxb, ==, 8);      /* 8 warps per block, 64 warps per SM */
    g_assert_cmpint(kmodel_ipc_single(e->model, &k, maxb, &ipc_full), ==, 0);
    g_assert_cmpint(kmodel_ipc_single(e->model, &k, 1, &ipc_one), ==, 0);
    /* three full waves and a last wave of half the SMs with one block each */
    unsigned blocks = 3 * maxb * 132 + 66;
    kbackend_slice s = whole(e->fn[0], blocks, 0);
    done_rec d = {0};
    g_assert_cmpint(e->be.ops->launch(e->be.state, &s, on_done, &d, NULL), ==, 0);
    drain(e);
    g_assert_cmpint(d.calls, ==, 1);
    g_assert_cmpint(d.c.status, ==, 0);
    double expect = 5000 + waves_ns(3, maxb, ipc_full, &k) + waves_ns(1, 1, ipc_one, &k);
    g_assert_cmpfloat_with_epsilon((double)d.c.end_ns, expect, 2.0);
    g_assert_cmpuint(d.c.start_ns, ==, 5000);
    sim_env_free(e);
}

/* comp at 6 blocks per SM beside mem at 2: both run at the mix's rates until one is done,
 * then the other alone at its count; computed piecewise here from the model. */
static void test_corun_rates(void)
{
    sim_env *e = sim_env_new();
    kmodel_kernel ks[2] = {model_kernel(0), model_kernel(1)};
    unsigned b[2] = {6, 2};
    kmodel_mix_result mix;
    g_assert_cmpint(kmodel_mix(e->model, 2, ks, b, &mix), ==, 0);
    double t[2], alone[2];
    for (int i = 0; i < 2; i++) {
        t[i] = waves_ns(2, b[i], mix.ipc[i], &ks[i]);
        g_assert_cmpint(kmodel_ipc_single(e->model, &ks[i], b[i], &alone[i]), ==, 0);
    }
    int first = t[0] < t[1] ? 0 : 1, other = !first;
    double left = 1 - t[first] / t[other];
    double expect_other = t[first] + left * waves_ns(2, b[other], alone[other], &ks[other]);

    done_rec d[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++) {
        kbackend_slice s = whole(e->sliced[i], 2 * b[i] * 132, (unsigned)i);
        s.sliced = 1;
        s.grid[0] = 100000;
        s.first = 1000;
        s.max_blocks_per_sm = b[i];
        g_assert_cmpint(e->be.ops->launch(e->be.state, &s, on_done, &d[i], NULL), ==, 0);
    }
    drain(e);
    g_assert_cmpfloat_with_epsilon((double)d[first].c.end_ns - 5000, t[first], 2.0);
    g_assert_cmpfloat_with_epsilon((double)d[other].c.end_ns - 5000, expect_other, 2.0);
    ksim_stats st;
    ksim_get_stats(e->sim, &st);
    g_assert_cmpuint(st.max_concurrent, ==, 2);
    sim_env_free(e);
}

/* Without a cap the first launch takes every SM slot it can; the second gets the rest. */
static void test_in_order_dispatch(void)
{
    sim_env *e = sim_env_new();
    done_rec d[2] = {{0}, {0}};
    kbackend_slice a = whole(e->fn[0], 8 * 132, 0), b = whole(e->fn[1], 8 * 132, 1);
    g_assert_cmpint(e->be.ops->launch(e->be.state, &a, on_done, &d[0], NULL), ==, 0);
    g_assert_cmpint(e->be.ops->launch(e->be.state, &b, on_done, &d[1], NULL), ==, 0);
    drain(e);
    kmodel_kernel k = model_kernel(0);
    double ipc;
    g_assert_cmpint(kmodel_ipc_single(e->model, &k, 8, &ipc), ==, 0);
    /* comp filled the SMs alone, so it ran exactly as it would alone */
    g_assert_cmpfloat_with_epsilon((double)d[0].c.end_ns - 5000, waves_ns(1, 8, ipc, &k), 2.0);
    g_assert_cmpuint(d[1].c.end_ns, >, d[0].c.end_ns);
    sim_env_free(e);
}

/* A capped slice of 3 waves and 66 blocks: with wave_launches it goes out as 4 launches,
 * each behind the last by stream_gap_ns, and completes once, from its first wave's start,
 * later than as one launch by the 3 gaps alone; every block runs once either way. */
static uint64_t capped_slice_end(int wave_launches, uint64_t *start, uint64_t *launches)
{
    ksim_config c;
    ksim_config_default(&c);
    c.wave_launches = wave_launches;
    sim_env *e = sim_env_with(&c);
    kbackend_slice s = whole(e->sliced[0], 3 * 2 * 132 + 66, 0);
    s.sliced = 1;
    s.grid[0] = 5000;
    s.first = 100;
    s.max_blocks_per_sm = 2;
    s.tag = 9;
    done_rec d = {0};
    g_assert_cmpint(e->be.ops->launch(e->be.state, &s, on_done, &d, NULL), ==, 0);
    drain(e);
    g_assert_cmpint(d.calls, ==, 1);
    g_assert_cmpint(d.c.status, ==, 0);
    ksim_coverage_result cov;
    g_assert_cmpint(ksim_coverage(e->sim, 9, 5000, &cov, NULL), ==, 0);
    g_assert_cmpuint(cov.ran, ==, s.count);
    g_assert_cmpuint(cov.duplicated, ==, 0);
    ksim_stats st;
    ksim_get_stats(e->sim, &st);
    *start = d.c.start_ns;
    *launches = st.launches;
    sim_env_free(e);
    return d.c.end_ns;
}

static void test_wave_launches(void)
{
    uint64_t start1, start4, n1, n4;
    uint64_t one = capped_slice_end(0, &start1, &n1), waves = capped_slice_end(1, &start4, &n4);
    g_assert_cmpuint(n1, ==, 1);
    g_assert_cmpuint(n4, ==, 4);
    g_assert_cmpuint(start1, ==, 5000);
    g_assert_cmpuint(start4, ==, 5000);
    g_assert_cmpfloat_with_epsilon((double)(waves - one), 3 * 1000.0, 2.0);
}

static void test_coverage(void)
{
    sim_env *e = sim_env_new();
    done_rec d = {0};
    const uint64_t ranges[][2] = {{0, 100}, {100, 190}, {50, 10}, {290, 20}};
    for (size_t i = 0; i < G_N_ELEMENTS(ranges); i++) {
        kbackend_slice s = whole(e->sliced[2], 0, 0);
        s.sliced = 1;
        s.grid[0] = 400;
        s.first = ranges[i][0];
        s.count = ranges[i][1];
        s.tag = 7;
        g_assert_cmpint(e->be.ops->launch(e->be.state, &s, on_done, &d, NULL), ==, 0);
    }
    drain(e);
    g_assert_cmpint(d.calls, ==, 4);
    ksim_coverage_result c;
    g_assert_cmpint(ksim_coverage(e->sim, 7, 300, &c, NULL), ==, 0);
    g_assert_cmpuint(c.ran, ==, 300);
    g_assert_cmpuint(c.duplicated, ==, 10);
    g_assert_cmpuint(c.outside, ==, 10);
    g_assert_cmpuint(c.missing, ==, 0);
    g_assert_cmpuint(c.slices, ==, 4);
    g_assert_cmpint(ksim_coverage(e->sim, 7, 400, &c, NULL), ==, 0);
    g_assert_cmpuint(c.missing, ==, 90);
    g_assert_cmpint(ksim_coverage(e->sim, 8, 5, &c, NULL), ==, 0);
    g_assert_cmpuint(c.missing, ==, 5);
    /* a slice past the grid is refused */
    kbackend_slice bad = whole(e->sliced[2], 0, 0);
    bad.sliced = 1;
    bad.grid[0] = 400;
    bad.first = 390;
    bad.count = 20;
    kbackend_error err;
    g_assert_cmpint(e->be.ops->launch(e->be.state, &bad, on_done, &d, &err), ==, KBACKEND_EINVAL);
    /* so is an unsliced function launched as a slice */
    bad.fn = e->fn[2];
    bad.count = 10;
    g_assert_cmpint(e->be.ops->launch(e->be.state, &bad, on_done, &d, &err), ==, KBACKEND_EINVAL);
    sim_env_free(e);
}

static void test_copies(void)
{
    sim_env *e = sim_env_new();
    const kbackend_ops *o = e->be.ops;
    void *b = e->be.state;
    enum { N = 1 << 20 };
    guint8 *in = g_malloc(N), *out = g_malloc0(N);
    for (int i = 0; i < N; i++)
        in[i] = (guint8)(i * 7 + 3);
    kbackend_devptr x, y;
    g_assert_cmpint(o->mem_alloc(b, 0, N, &x, NULL), ==, 0);
    g_assert_cmpint(o->mem_alloc(b, 0, N, &y, NULL), ==, 0);
    done_rec d[4] = {{0}};
    g_assert_cmpint(o->copy_h2d(b, x, in, N, on_done, &d[0], NULL), ==, 0);
    drain(e);
    g_assert_cmpuint(d[0].c.end_ns, ==, 2000 + N / 25);     /* latency + bytes / 25 GB/s */
    g_assert_cmpint(o->copy_d2d(b, y, x, N, on_done, &d[1], NULL), ==, 0);
    drain(e);
    g_assert_cmpint(o->memset_d8(b, y + 16, 0xab, 32, on_done, &d[2], NULL), ==, 0);
    drain(e);
    g_assert_cmpint(o->copy_d2h(b, out, y, N, on_done, &d[3], NULL), ==, 0);
    drain(e);
    for (int i = 0; i < N; i++)
        g_assert_cmpuint(out[i], ==, i >= 16 && i < 48 ? 0xab : in[i]);
    ksim_stats st;
    ksim_get_stats(e->sim, &st);
    g_assert_cmpuint(st.copies, ==, 4);
    g_assert_cmpuint(st.mem_in_use, ==, 2 * N);
    g_assert_cmpint(o->mem_free(b, x, NULL), ==, 0);
    g_assert_cmpint(o->mem_free(b, y, NULL), ==, 0);
    g_free(in);
    g_free(out);
    sim_env_free(e);
}

/* Each domain's memory lies in a window of its own: aligned to its size, disjoint from
 * the others; a full window is EDEVMEM; a released window is handed out again only after
 * the free ones; bad window sizes are refused. */
static void test_windows(void)
{
    ksim_config c;
    ksim_config_default(&c);
    c.window_bytes = 16ull << 20;
    ksim *sim;
    g_assert_cmpint(ksim_new(&sim, &c, NULL), ==, 0);
    kbackend be;
    ksim_backend(sim, &be);
    kbackend_window w1, w2, again;
    kbackend_devptr p, q;
    kbackend_error err;
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w1, NULL), ==, 0);
    g_assert_cmpint(be.ops->domain_window(be.state, 2, &w2, NULL), ==, 0);
    g_assert_cmpuint(w1.size, ==, 16ull << 20);
    g_assert_cmpuint(w1.base % w1.size, ==, 0);
    g_assert_true(w1.base + w1.size <= w2.base || w2.base + w2.size <= w1.base);
    g_assert_cmpint(be.ops->domain_window(be.state, 0, &again, &err), ==, KBACKEND_EINVAL);
    /* no reach from the sim: the whole window's mask; a reach (a power of two inside the
     * window) gives its own, anything else is not trusted */
    g_assert_cmpuint(kbackend_window_mask(&w1), ==, w1.size - 1);
    kbackend_window r = w1;
    r.reach = 4u << 20;
    g_assert_cmpuint(kbackend_window_mask(&r), ==, (4u << 20) - 1);
    r.reach = 3u << 20;
    g_assert_cmpuint(kbackend_window_mask(&r), ==, w1.size - 1);
    r.reach = 2 * w1.size;
    g_assert_cmpuint(kbackend_window_mask(&r), ==, w1.size - 1);
    for (uint32_t d = 1; d <= 2; d++) {
        const kbackend_window *w = d == 1 ? &w1 : &w2;
        g_assert_cmpint(be.ops->mem_alloc(be.state, d, 4 << 20, &p, NULL), ==, 0);
        g_assert_cmpuint(p, >=, w->base);
        g_assert_cmpuint(p + (4 << 20), <=, w->base + w->size);
    }
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 12 << 20, &q, &err), ==, KBACKEND_EDEVMEM);
    be.ops->domain_release(be.state, 1);
    g_assert_cmpint(be.ops->domain_window(be.state, 3, &again, NULL), ==, 0);
    g_assert_cmpuint(again.base, !=, w1.base);      /* a free window before the released */
    ksim_free(sim);
    c.window_bytes = 3ull << 20;
    g_assert_cmpint(ksim_new(&sim, &c, NULL), !=, 0);
    c.window_bytes = 1ull << 41;
    g_assert_cmpint(ksim_new(&sim, &c, NULL), !=, 0);
}

static void test_memory_errors(void)
{
    ksim_config c;
    ksim_config_default(&c);
    c.mem_bytes = 1 << 20;
    ksim *sim;
    g_assert_cmpint(ksim_new(&sim, &c, NULL), ==, 0);
    kbackend be;
    ksim_backend(sim, &be);
    kbackend_devptr p, q;
    kbackend_error err;
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 1 << 19, &p, NULL), ==, 0);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, (1 << 19) + 1, &q, &err), ==, KBACKEND_EDEVMEM);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 0, &q, &err), ==, KBACKEND_EINVAL);
    g_assert_cmpint(be.ops->mem_free(be.state, p + 8, &err), ==, KBACKEND_EINVAL);
    char buf[64];
    done_rec d = {0};
    g_assert_cmpint(be.ops->copy_h2d(be.state, p + (1 << 19) - 8, buf, 16, on_done, &d, &err),
                    ==, KBACKEND_EINVAL);
    g_assert_cmpint(be.ops->copy_d2h(be.state, buf, 12345, 16, on_done, &d, &err), ==,
                    KBACKEND_EINVAL);
    g_assert_cmpint(be.ops->mem_free(be.state, p, NULL), ==, 0);
    g_assert_cmpint(be.ops->mem_free(be.state, p, &err), ==, KBACKEND_EINVAL);
    g_assert_cmpint(d.calls, ==, 0);
    ksim_free(sim);
}

static void test_failing_kernel(void)
{
    sim_env *e = sim_env_new();
    g_assert_cmpint(ksim_set_failing(e->sim, "mem", 1, NULL), ==, 0);
    g_assert_cmpint(ksim_set_failing(e->sim, "nosuch", 1, NULL), ==, KSCHED_ENOTFOUND);
    done_rec d[2] = {{0}, {0}};
    kbackend_slice a = whole(e->fn[1], 264, 0), b = whole(e->fn[0], 264, 1);
    g_assert_cmpint(e->be.ops->launch(e->be.state, &a, on_done, &d[0], NULL), ==, 0);
    g_assert_cmpint(e->be.ops->launch(e->be.state, &b, on_done, &d[1], NULL), ==, 0);
    drain(e);
    g_assert_cmpint(d[0].c.status, ==, KBACKEND_ELAUNCH);
    g_assert_cmpint(d[1].c.status, ==, 0);
    ksim_coverage_result c;
    g_assert_cmpint(ksim_coverage(e->sim, a.tag, 264, &c, NULL), ==, 0);
    g_assert_cmpuint(c.ran, ==, 0);     /* a failed launch ran nothing that counts */
    sim_env_free(e);
}

static void test_trial_matches_model(void)
{
    sim_env *e = sim_env_new();
    kbackend_trial t = {.kernel = {whole(e->fn[0], 1000, 0), whole(e->fn[1], 1000, 0)},
                     .blocks_per_sm = {6, 2}};
    kbackend_trial_result r;
    g_assert_cmpint(e->be.ops->trial(e->be.state, &t, &r, NULL), ==, 0);
    kmodel_kernel ks[2] = {model_kernel(0), model_kernel(1)};
    kmodel_mix_result mix;
    g_assert_cmpint(kmodel_mix(e->model, 2, ks, t.blocks_per_sm, &mix), ==, 0);
    for (int i = 0; i < 2; i++) {
        double bps = 132 * mix.ipc[i] / (ks[i].insts_per_warp * 8) * 1.98e9;
        g_assert_cmpfloat_with_epsilon(r.together_bps[i], bps, bps * 1e-9);
        double alone;
        g_assert_cmpint(kmodel_ipc_single(e->model, &ks[i], 0, &alone), ==, 0);
        g_assert_cmpfloat(r.alone_bps[i], >, r.together_bps[i]);
    }
    t.blocks_per_sm[0] = 8;     /* 8 + 2 blocks of 8 warps do not fit 64 warps */
    g_assert_cmpint(e->be.ops->trial(e->be.state, &t, &r, NULL), ==, KBACKEND_EINVAL);
    sim_env_free(e);
}

static void test_modules(void)
{
    sim_env *e = sim_env_new();
    const kbackend_ops *o = e->be.ops;
    kbackend_module *m;
    kbackend_function *f;
    kbackend_error err;
    g_assert_cmpint(o->module_load_ptx(e->be.state, 0, "// nothing", 10, &m, &err), ==,
                    KBACKEND_EMODULE);
    const char *text = ".version 8.0\n.visible .entry comp(\n.param .u64 p)\n{ ret; }\n"
                       ".visible .entry unknown_kernel()\n{ ret; }\n";
    g_assert_cmpint(o->module_load_ptx(e->be.state, 0, text, strlen(text), &m, NULL), ==, 0);
    kbackend_func_info info;
    g_assert_cmpint(o->function_get(e->be.state, m, "comp", &f, &info, NULL), ==, 0);
    g_assert_cmpuint(info.regs_per_thread, ==, 32);
    g_assert_cmpint(o->function_get(e->be.state, m, "comp__kslice", &f, NULL, &err), ==,
                    KBACKEND_ENOTFOUND);
    g_assert_cmpint(o->function_get(e->be.state, m, "unknown_kernel", &f, NULL, &err), ==,
                    KBACKEND_ENOTFOUND);
    g_assert_nonnull(strstr(err.msg, "unknown_kernel"));
    g_assert_cmpint(o->module_unload(e->be.state, m, NULL), ==, 0);
    sim_env_free(e);
}

/* A fixed mixture twice: the same times to the nanosecond. */
static uint64_t mixture_end(void)
{
    sim_env *e = sim_env_new();
    done_rec d[12];
    memset(d, 0, sizeof(d));
    for (unsigned i = 0; i < 12; i++) {
        kbackend_slice s = whole(e->fn[i % 3], 500 + 97 * i, i % 4);
        s.tag = i;
        g_assert_cmpint(e->be.ops->launch(e->be.state, &s, on_done, &d[i], NULL), ==, 0);
    }
    drain(e);
    uint64_t h = 0;
    for (unsigned i = 0; i < 12; i++)
        h = h * 1000003 + d[i].c.end_ns;
    sim_env_free(e);
    return h;
}

static void test_determinism(void)
{
    g_assert_cmpuint(mixture_end(), ==, mixture_end());
}

static void test_suffix_matches_slicer(void)
{
    g_assert_cmpstr(KBACKEND_SLICE_SUFFIX, ==, KPTX_SLICE_SUFFIX);
    g_assert_cmpint(KBACKEND_SLICE_EXTRA_PARAMS, ==, KPTX_SLICE_EXTRA_PARAMS);
}

static void test_device_mapping(void)
{
    kbackend_device_info info = {.cc_major = 9, .cc_minor = 0, .sms = 114, .clock_mhz = 1755,
                              .mem_bandwidth_gbs = 2000};
    snprintf(info.name, sizeof(info.name), "NVIDIA H100 PCIe");
    kmodel_gpu g;
    g_assert_cmpint(kbackend_device_gpu(&info, &g, NULL), ==, 0);
    g_assert_cmpuint(g.sms, ==, 114);
    g_assert_cmpfloat(g.clock_mhz, ==, 1755);
    g_assert_cmpuint(g.schedulers_per_sm, ==, 4);       /* from the built-in Hopper */
    info.cc_major = 7;
    info.cc_minor = 5;
    kbackend_error err;
    g_assert_cmpint(kbackend_device_gpu(&info, &g, &err), ==, KBACKEND_EINVAL);
    /* a0: taken when the device reports one in (0, 1] */
    kmodel_options o;
    kmodel_options_default(&o);
    double def = o.latency.a0;
    kbackend_device_model_options(&info, &o);              /* 0: unknown */
    g_assert_cmpfloat(o.latency.a0, ==, def);
    info.a0 = 1.5;
    kbackend_device_model_options(&info, &o);
    g_assert_cmpfloat(o.latency.a0, ==, def);
    info.a0 = 0.85;
    kbackend_device_model_options(&info, &o);
    g_assert_cmpfloat(o.latency.a0, ==, 0.85);
}

/* The scheduler's model takes the sim's a0 from device_info unless told not to. */
static void test_device_a0(void)
{
    ksim_config c;
    ksim_config_default(&c);
    c.model.latency.a0 = 0.8;
    ksim *sim;
    g_assert_cmpint(ksim_new(&sim, &c, NULL), ==, 0);
    kbackend be;
    ksim_backend(sim, &be);
    kbackend_device_info in;
    g_assert_cmpint(be.ops->device_info(be.state, &in, NULL), ==, 0);
    g_assert_cmpfloat(in.a0, ==, 0.8);
    for (int take = 0; take < 2; take++) {
        ksched_config sc;
        ksched_config_default(&sc);
        g_assert_cmpint(sc.device_a0, ==, 1);
        sc.device_a0 = take;
        sc.model.latency.a0 = 0.5;
        ksched *s;
        g_assert_cmpint(ksched_new(&s, &be, &sc, NULL, NULL), ==, 0);
        kmodel_options mo;
        ksched_model_options(s, &mo);
        g_assert_cmpfloat(mo.latency.a0, ==, take ? 0.8 : 0.5);
        ksched_free(s);
    }
    be.ops->destroy(be.state);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sim/single-kernel-time", test_single_kernel_time);
    g_test_add_func("/sim/corun-rates", test_corun_rates);
    g_test_add_func("/sim/in-order-dispatch", test_in_order_dispatch);
    g_test_add_func("/sim/coverage", test_coverage);
    g_test_add_func("/sim/wave-launches", test_wave_launches);
    g_test_add_func("/sim/copies", test_copies);
    g_test_add_func("/sim/memory-errors", test_memory_errors);
    g_test_add_func("/sim/windows", test_windows);
    g_test_add_func("/sim/failing-kernel", test_failing_kernel);
    g_test_add_func("/sim/trial", test_trial_matches_model);
    g_test_add_func("/sim/modules", test_modules);
    g_test_add_func("/sim/determinism", test_determinism);
    g_test_add_func("/sim/suffix", test_suffix_matches_slicer);
    g_test_add_func("/sim/device-mapping", test_device_mapping);
    g_test_add_func("/sim/device-a0", test_device_a0);
    return g_test_run();
}
