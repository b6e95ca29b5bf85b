/* Tenants: memory quota and isolation, launches in flight, slicing off, priority, weights,
 * a failing kernel, a lost device, removal, bad input, and the dispatcher thread. */
#include "sched_test.h"

typedef struct tracer {
    GArray *ev;
} tracer;

static void on_trace(void *user, const ksched_trace *t)
{
    tracer *tr = user;
    ksched_trace c = *t;
    c.entry[0] = c.entry[1] = NULL;
    g_array_append_val(tr->ev, c);
}

static tenv *env_with(ksched_policy p, tracer *tr, uint64_t window_ns)
{
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    if (window_ns)
        c.fairness_window_ns = window_ns;
    if (tr) {
        c.trace = on_trace;
        c.trace_user = tr;
        tr->ev = g_array_new(FALSE, FALSE, sizeof(ksched_trace));
    }
    return tenv_new(&c, NULL);
}

static uint32_t tenant_with(tenv *t, const char *name, const ksched_tenant_policy *pol)
{
    uint32_t id;
    g_assert_cmpint(ksched_tenant_add(t->s, name, pol, &id, NULL), ==, 0);
    return id;
}

static void test_memory_quota_and_isolation(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    pol.mem_quota = 1 << 20;
    uint32_t a = tenant_with(t, "a", &pol), b = tenv_tenant(t, "b");
    kbackend_devptr p, q, r;
    ksched_err e;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 512 << 10, &p, NULL), ==, 0);
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 600 << 10, &q, &e), ==, KSCHED_EQUOTA);
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 512 << 10, &q, NULL), ==, 0);
    g_assert_cmpint(ksched_mem_alloc(t->s, b, 4 << 20, &r, NULL), ==, 0);   /* b: no quota */
    ksched_tenant_stats st;
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &st, NULL), ==, 0);
    g_assert_cmpuint(st.mem_in_use, ==, 1 << 20);
    /* b cannot touch a's memory, nor free it */
    char buf[16] = {0};
    ksched_op op = {.kind = KSCHED_OP_COPY_H2D};
    op.u.h2d.dst = p;
    op.u.h2d.src = buf;
    op.u.h2d.bytes = sizeof(buf);
    g_assert_cmpint(ksched_submit(t->s, b, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_EINVAL);
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, NULL), ==, 0);
    op.u.h2d.dst = p + (512 << 10) - 8;     /* runs past the allocation */
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_EINVAL);
    g_assert_cmpint(ksched_mem_free(t->s, b, p, &e), ==, KSCHED_EINVAL);
    tenv_run(t);
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &st, NULL), ==, 0);
    g_assert_cmpuint(st.bytes_copied, ==, sizeof(buf));
    g_assert_cmpint(ksched_mem_free(t->s, a, p, NULL), ==, 0);
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 512 << 10, &p, NULL), ==, 0);
    tenv_free(t);
}

static void test_max_inflight(void)
{
    tenv *t = tenv_policy(KSCHED_BASE);
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    pol.max_inflight = 3;
    uint32_t a = tenant_with(t, "a", &pol), fn;
    const char *names[1] = {"comp"};
    tenv_functions(t, a, names, 1, 1, &fn);
    ksched_op op = launch_op(fn, 1000, 1, 256);
    ksched_err e;
    for (int i = 0; i < 3; i++)
        tenv_submit(t, a, 0, &op, NULL, NULL);
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_EAGAIN);
    tenv_run(t);
    tenv_submit(t, a, 0, &op, NULL, NULL);
    tenv_run(t);
    ksched_tenant_stats st;
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &st, NULL), ==, 0);
    g_assert_cmpuint(st.launched, ==, 4);
    g_assert_cmpuint(st.completed, ==, 4);
    tenv_free(t);
}

static void test_slicing_off(void)
{
    tracer tr;
    tenv *t = env_with(KSCHED_KERNELET, &tr, 0);
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    pol.slicing = 0;
    uint32_t a = tenant_with(t, "whole", &pol), b = tenv_tenant(t, "sliced"), fa[2], fb[2];
    const char *names[2] = {"comp", "mem"};
    tenv_functions(t, a, names, 2, 1, fa);
    tenv_functions(t, b, names, 2, 1, fb);
    for (int i = 0; i < 4; i++) {
        ksched_op oa = launch_op(fa[i % 2], 5000, 1, 256), ob = launch_op(fb[i % 2], 5000, 1, 256);
        tenv_submit(t, a, tenv_stream(t, a), &oa, NULL, NULL);
        tenv_submit(t, b, tenv_stream(t, b), &ob, NULL, NULL);
    }
    tenv_run(t);
    unsigned whole = 0, pieces = 0;
    for (guint i = 0; i < tr.ev->len; i++) {
        const ksched_trace *x = &g_array_index(tr.ev, ksched_trace, i);
        if (x->kind != KSCHED_TRACE_SLICE)
            continue;
        if (x->tenant == a) {
            g_assert_cmpuint(x->first, ==, 0);
            g_assert_cmpuint(x->count, ==, 5000);
            g_assert_cmpuint(x->blocks_per_sm[0], ==, 0);
            whole++;
        } else {
            pieces++;
        }
    }
    g_assert_cmpuint(whole, ==, 4);
    g_assert_cmpuint(pieces, >, 4);
    g_array_free(tr.ev, TRUE);
    tenv_free(t);
}

static void test_priority(gconstpointer data)
{
    tenv *t = tenv_policy((ksched_policy)GPOINTER_TO_INT(data));
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    uint32_t lo = tenant_with(t, "lo", &pol);
    pol.priority = 5;
    uint32_t hi = tenant_with(t, "hi", &pol), fl[2], fh[2];
    const char *names[2] = {"comp", "mem"};
    tenv_functions(t, lo, names, 2, 1, fl);
    tenv_functions(t, hi, names, 2, 1, fh);
    rec rl[6], rh[6];
    memset(rl, 0, sizeof(rl));
    memset(rh, 0, sizeof(rh));
    for (int i = 0; i < 6; i++) {      /* lo's arrive first */
        ksched_op op = launch_op(fl[i % 2], 3000, 1, 256);
        tenv_submit(t, lo, tenv_stream(t, lo), &op, rec_done, &rl[i]);
    }
    for (int i = 0; i < 6; i++) {
        ksched_op op = launch_op(fh[i % 2], 3000, 1, 256);
        tenv_submit(t, hi, tenv_stream(t, hi), &op, rec_done, &rh[i]);
    }
    tenv_run(t);
    uint64_t hi_last_start = 0, lo_first_start = UINT64_MAX;
    for (int i = 0; i < 6; i++) {
        hi_last_start = MAX(hi_last_start, rh[i].r.start_ns);
        lo_first_start = MIN(lo_first_start, rl[i].r.start_ns);
    }
    g_assert_cmpuint(lo_first_start, >=, hi_last_start);
    tenv_free(t);
}

/* Two tenants with weights 3 and 1 and the same backlog: while both wait, GPU time goes
 * 3 : 1. Measured between two instants in the steady state, so that the fairness window's
 * offset (the lighter tenant stays up to a window ahead) cancels out. */
static void test_weights(gconstpointer data)
{
    tenv *t = env_with((ksched_policy)GPOINTER_TO_INT(data), NULL, 100000);
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    pol.weight = 3;
    uint32_t a = tenant_with(t, "heavy", &pol);
    pol.weight = 1;
    uint32_t b = tenant_with(t, "light", &pol), fa, fb;
    const char *names[1] = {"comp"};
    tenv_functions(t, a, names, 1, 1, &fa);
    tenv_functions(t, b, names, 1, 1, &fb);
    enum { N = 150 };
    for (int i = 0; i < N; i++) {
        ksched_op oa = launch_op(fa, 2 * 8 * 132, 1, 256), ob = launch_op(fb, 2 * 8 * 132, 1, 256);
        tenv_submit(t, a, tenv_stream(t, a), &oa, NULL, NULL);
        tenv_submit(t, b, tenv_stream(t, b), &ob, NULL, NULL);
    }
    ksched_tenant_stats sa[2], sb[2];
    const uint64_t at[2] = {1000000, 4000000};
    for (int i = 0; i < 2; i++) {
        g_assert_cmpint(ksched_run_until(t->s, at[i], NULL), ==, 0);
        g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &sa[i], NULL), ==, 0);
        g_assert_cmpint(ksched_tenant_get_stats(t->s, b, &sb[i], NULL), ==, 0);
    }
    g_assert_cmpuint(sa[1].completed, <, N);    /* both still backlogged */
    g_assert_cmpuint(sb[1].completed, <, N);
    double ga = (double)(sa[1].gpu_time_ns - sa[0].gpu_time_ns);
    double gb = (double)(sb[1].gpu_time_ns - sb[0].gpu_time_ns);
    g_test_message("GPU time from 1 to 4 ms: heavy %.0f ns, light %.0f ns, ratio %.2f", ga, gb,
                   ga / gb);
    g_assert_cmpfloat(ga / gb, >, 2.55);
    g_assert_cmpfloat(ga / gb, <, 3.45);
    tenv_run(t);
    tenv_free(t);
}

static void test_failing_kernel(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    kbackend_profile bad = test_profile(0.1, 400, 0.3, 0.4);
    g_assert_cmpint(ksim_add_kernel(t->sim, "bad", &bad, NULL), ==, 0);
    g_assert_cmpint(ksim_set_failing(t->sim, "bad", 1, NULL), ==, 0);
    uint32_t a = tenv_tenant(t, "victim"), b = tenv_tenant(t, "bystander"), fa[2], fb[2];
    const char *na[2] = {"bad", "comp"}, *nb[2] = {"comp", "mem"};
    tenv_functions(t, a, na, 2, 1, fa);
    tenv_functions(t, b, nb, 2, 1, fb);
    rec r_bad = {0}, r_after = {0}, rb[6];
    memset(rb, 0, sizeof(rb));
    ksched_op op = launch_op(fa[0], 20000, 1, 256);
    tenv_submit(t, a, 0, &op, rec_done, &r_bad);
    op = launch_op(fa[1], 2000, 1, 256);
    uint64_t after = tenv_submit(t, a, 0, &op, rec_done, &r_after);
    uint64_t ids[6];
    for (int i = 0; i < 6; i++) {
        op = launch_op(fb[i % 2], 3000 + 100 * i, 1, 256);
        ids[i] = tenv_submit(t, b, tenv_stream(t, b), &op, rec_done, &rb[i]);
    }
    tenv_run(t);
    g_assert_cmpint(r_bad.r.status, ==, KSCHED_EBACKEND);
    g_assert_cmpint(r_bad.r.backend_status, ==, KBACKEND_ELAUNCH);
    g_assert_nonnull(strstr(r_bad.msg, "fault"));
    g_assert_cmpint(r_after.r.status, ==, 0);    /* the stream goes on */
    assert_blocks_once(t, after, 2000);
    for (int i = 0; i < 6; i++) {
        g_assert_cmpint(rb[i].r.status, ==, 0);
        assert_blocks_once(t, ids[i], 3000 + 100 * i);
    }
    ksched_tenant_stats st;
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &st, NULL), ==, 0);
    g_assert_cmpuint(st.failed, ==, 1);
    g_assert_cmpuint(st.completed, ==, 1);
    g_assert_cmpint(st.last_error, ==, KSCHED_EBACKEND);
    g_assert_cmpint(ksched_tenant_get_stats(t->s, b, &st, NULL), ==, 0);
    g_assert_cmpuint(st.failed + st.errors, ==, 0);
    tenv_free(t);
}

/* A kernel that fails while it is profiled (a fault, an assert, its time limit: a runaway
 * kernel would spend its whole limit again) fails its launch with the profile's error and
 * is not launched again; the tenant's other kernels are no longer profiled. */
static void test_failing_profile(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    kbackend_profile bad = test_profile(0.1, 400, 0.3, 0.4);
    g_assert_cmpint(ksim_add_kernel(t->sim, "bad", &bad, NULL), ==, 0);
    g_assert_cmpint(ksim_set_failing(t->sim, "bad", 1, NULL), ==, 0);
    uint32_t a = tenv_tenant(t, "victim"), fa[1];
    const char *na[1] = {"bad"};
    tenv_functions(t, a, na, 1, 1, fa);
    rec r = {0};
    ksched_op op = launch_op(fa[0], 20000, 1, 256);
    tenv_submit(t, a, 0, &op, rec_done, &r);
    tenv_run(t);
    g_assert_cmpint(r.r.status, ==, KSCHED_EBACKEND);
    g_assert_cmpint(r.r.backend_status, ==, KBACKEND_ELAUNCH);
    g_assert_nonnull(strstr(r.msg, "simulated fault in bad"));
    ksim_stats st;
    ksim_get_stats(t->sim, &st);
    g_assert_cmpuint(st.launches, ==, 0);   /* only its profile ran */
    /* its other kernels are not profiled (a profile holds the device for everyone), and
     * they run */
    ksched_stats ss;
    ksched_get_stats(t->s, &ss);
    uint64_t profiles = ss.profiles;
    uint32_t fb[1];
    const char *nb[1] = {"comp"};
    tenv_functions(t, a, nb, 1, 1, fb);
    rec r2 = {0};
    op = launch_op(fb[0], 3000, 1, 256);
    uint64_t id = tenv_submit(t, a, 0, &op, rec_done, &r2);
    tenv_run(t);
    g_assert_cmpint(r2.r.status, ==, 0);
    assert_blocks_once(t, id, 3000);
    ksched_get_stats(t->s, &ss);
    g_assert_cmpuint(ss.profiles, ==, profiles);
    tenv_free(t);
}

/* The backend loses the device while both tenants have kernels running and queued: every
 * one of them fails with the backend's KBACKEND_ELOST, the scheduler says it is lost and
 * refuses new work with KSCHED_ELOST; removal still works. */
static void test_lost_device(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    uint32_t a = tenv_tenant(t, "a"), b = tenv_tenant(t, "b"), fa[2], fb[2];
    const char *na[2] = {"comp", "mem"};
    tenv_functions(t, a, na, 2, 1, fa);
    tenv_functions(t, b, na, 2, 1, fb);
    enum { N = 4 };
    rec ra[N], rb[N];
    memset(ra, 0, sizeof(ra));
    memset(rb, 0, sizeof(rb));
    for (int i = 0; i < N; i++) {
        ksched_op op = launch_op(fa[i % 2], 40000, 1, 256);
        tenv_submit(t, a, 0, &op, rec_done, &ra[i]);
        op = launch_op(fb[(i + 1) % 2], 40000, 1, 256);
        tenv_submit(t, b, 0, &op, rec_done, &rb[i]);
    }
    ksched_err e = {0};
    g_assert_cmpint(ksched_run_until(t->s, 20000, &e), ==, 0);     /* 20 us: running */
    g_assert_false(ksched_lost(t->s, NULL, 0));
    g_assert_false(ra[0].seen);
    ksim_lose(t->sim);
    tenv_run(t);
    for (int i = 0; i < N; i++) {
        g_assert_true(ra[i].seen && rb[i].seen);
        g_assert_cmpint(ra[i].r.status, ==, KSCHED_EBACKEND);
        g_assert_cmpint(ra[i].r.backend_status, ==, KBACKEND_ELOST);
        g_assert_cmpint(rb[i].r.status, ==, KSCHED_EBACKEND);
        g_assert_cmpint(rb[i].r.backend_status, ==, KBACKEND_ELOST);
    }
    char why[128];
    g_assert_true(ksched_lost(t->s, why, sizeof(why)));
    g_assert_nonnull(strstr(why, "lost"));
    ksched_op op = launch_op(fa[0], 100, 1, 256);
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_ELOST);
    g_assert_nonnull(strstr(e.msg, "recreate"));
    kbackend_devptr d;
    g_assert_cmpint(ksched_mem_alloc(t->s, b, 64, &d, &e), ==, KSCHED_ELOST);
    uint32_t m;
    g_assert_cmpint(ksched_module_load(t->s, b, "x", 1, &m, &e), ==, KSCHED_ELOST);
    g_assert_cmpint(ksched_tenant_remove(t->s, a, &e), ==, 0);
    tenv_run(t);
    tenv_free(t);
}

static void test_removal(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    uint32_t a = tenv_tenant(t, "leaving"), b = tenv_tenant(t, "staying"), fa[2], fb[2];
    const char *names[2] = {"comp", "mem"};
    tenv_functions(t, a, names, 2, 1, fa);
    tenv_functions(t, b, names, 2, 1, fb);
    kbackend_devptr pa, pb;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 1 << 20, &pa, NULL), ==, 0);
    g_assert_cmpint(ksched_mem_alloc(t->s, b, 1 << 16, &pb, NULL), ==, 0);
    enum { N = 8 };
    rec ra[N], rb[N];
    memset(ra, 0, sizeof(ra));
    memset(rb, 0, sizeof(rb));
    uint32_t sa[2] = {0, tenv_stream(t, a)};
    for (int i = 0; i < N; i++) {
        ksched_op op = launch_op(fa[i % 2], 20000, 1, 256);
        tenv_submit(t, a, sa[i % 2], &op, rec_done, &ra[i]);
        op = launch_op(fb[i % 2], 4000, 1, 256);
        tenv_submit(t, b, tenv_stream(t, b), &op, rec_done, &rb[i]);
    }
    g_assert_cmpint(ksched_run_until(t->s, 100000, NULL), ==, 0);
    g_assert_cmpint(ksched_tenant_remove(t->s, a, NULL), ==, 0);
    ksched_err e;
    g_assert_cmpint(ksched_tenant_remove(t->s, a, &e), ==, KSCHED_ESTATE);
    ksched_op op = launch_op(fa[0], 10, 1, 256);
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_ESTATE);
    tenv_run(t);
    unsigned canceled = 0;
    for (int i = 0; i < N; i++) {
        g_assert_true(ra[i].seen);
        canceled += ra[i].r.status == KSCHED_ECANCELED;
        g_assert_true(rb[i].seen);
        g_assert_cmpint(rb[i].r.status, ==, 0);
    }
    g_assert_cmpuint(canceled, >=, N - 2);      /* at most the two heads had started */
    size_t n;
    uint32_t ids[4];
    g_assert_cmpint(ksched_tenant_list(t->s, ids, 4, &n), ==, 0);
    g_assert_cmpuint(n, ==, 1);
    g_assert_cmpuint(ids[0], ==, b);
    ksim_stats ss;
    ksim_get_stats(t->sim, &ss);
    g_assert_cmpuint(ss.mem_in_use, ==, 1 << 16);     /* a's memory went back */
    ksched_tenant_stats st;
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &st, &e), ==, KSCHED_ENOTFOUND);
    ksched_stats gs;
    ksched_get_stats(t->s, &gs);
    g_assert_cmpuint(gs.ops_pending, ==, 0);
    tenv_free(t);
}

static void test_bad_input(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    uint32_t a = tenv_tenant(t, "a"), fn, m, id;
    const char *names[1] = {"comp"};
    tenv_functions(t, a, names, 1, 1, &fn);
    ksched_err e;
    ksched_op op = launch_op(fn, 0, 1, 256);
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_EINVAL);
    op = launch_op(fn, 10, 1, 2048);
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_EINVAL);
    op = launch_op(fn + 100, 10, 1, 256);
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_ENOTFOUND);
    op = launch_op(fn, 10, 1, 256);
    op.u.launch.params_size = 64;           /* size without a block */
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_EINVAL);
    op.u.launch.params_size = 0;
    g_assert_cmpint(ksched_submit(t->s, a, 77, &op, NULL, NULL, NULL, &e), ==, KSCHED_ENOTFOUND);
    g_assert_cmpint(ksched_submit(t->s, 99, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_ENOTFOUND);
    g_assert_cmpint(ksched_stream_destroy(t->s, a, 0, &e), ==, KSCHED_ENOTFOUND);
    ksched_op ms = {.kind = KSCHED_OP_MEMSET};
    g_assert_cmpint(ksched_submit(t->s, a, 0, &ms, NULL, NULL, NULL, &e), ==, KSCHED_EINVAL);
    ksched_op kind = {.kind = (ksched_op_kind)42};
    g_assert_cmpint(ksched_submit(t->s, a, 0, &kind, NULL, NULL, NULL, &e), ==, KSCHED_EINVAL);
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    pol.weight = 0;
    g_assert_cmpint(ksched_tenant_add(t->s, "w", &pol, &id, &e), ==, KSCHED_EINVAL);
    ksched_tenant_policy_default(&pol);
    pol.kernel_time_limit_ns = KSCHED_TIME_LIMIT_MAX_NS + 1; /* above a day */
    g_assert_cmpint(ksched_tenant_add(t->s, "w", &pol, &id, &e), ==, KSCHED_EINVAL);
    g_assert_cmpint(ksched_tenant_set_policy(t->s, a, &pol, &e), ==, KSCHED_EINVAL);
    char longname[80];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    g_assert_cmpint(ksched_tenant_add(t->s, longname, NULL, &id, &e), ==, KSCHED_EINVAL);
    g_assert_cmpint(ksched_module_load(t->s, a, "no entries", 10, &m, &e), ==, KSCHED_EBACKEND);
    g_assert_cmpint(ksched_function_get(t->s, a, 999, "comp", &id, NULL, &e), ==,
                    KSCHED_ENOTFOUND);
    /* a module with launches queued stays */
    const char *text = ".entry mid ( ) .entry mid__kslice ( )";
    uint32_t f2;
    g_assert_cmpint(ksched_module_load(t->s, a, text, strlen(text), &m, NULL), ==, 0);
    ksched_function_info info;
    g_assert_cmpint(ksched_function_get(t->s, a, m, "mid", &f2, &info, NULL), ==, 0);
    g_assert_true(info.sliceable);
    g_assert_cmpint(ksched_function_get(t->s, a, m, "nope", &id, NULL, &e), ==, KSCHED_ENOTFOUND);
    op = launch_op(f2, 100, 1, 256);
    tenv_submit(t, a, 0, &op, NULL, NULL);
    g_assert_cmpint(ksched_module_unload(t->s, a, m, &e), ==, KSCHED_ESTATE);
    tenv_run(t);
    g_assert_cmpint(ksched_module_unload(t->s, a, m, NULL), ==, 0);
    g_assert_cmpint(ksched_submit(t->s, a, 0, &op, NULL, NULL, NULL, &e), ==, KSCHED_ENOTFOUND);
    ksched_config c;
    ksched_config_default(&c);
    c.alpha_p = 2;
    ksched *s2;
    g_assert_cmpint(ksched_new(&s2, &t->be, &c, NULL, &e), ==, KSCHED_EINVAL);
    tenv_free(t);
}

/* ---- the dispatcher thread ---- */

typedef struct waiter {
    GMutex lock;
    GCond cond;
    int done;
} waiter;

static void wake(void *user)
{
    waiter *w = user;
    g_mutex_lock(&w->lock);
    w->done = 1;
    g_cond_signal(&w->cond);
    g_mutex_unlock(&w->lock);
}

static void test_thread(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    uint32_t a = tenv_tenant(t, "a"), fn[2];
    const char *names[2] = {"comp", "mem"};
    tenv_functions(t, a, names, 2, 1, fn);
    g_assert_cmpint(ksched_thread_start(t->s, NULL), ==, 0);
    ksched_err e;
    g_assert_cmpint(ksched_run_until_idle(t->s, &e), ==, KSCHED_ESTATE);
    rec r[10];
    memset(r, 0, sizeof(r));
    uint64_t ids[10];
    for (int i = 0; i < 10; i++) {
        ksched_op op = launch_op(fn[i % 2], 3000, 1, 256);
        ids[i] = tenv_submit(t, a, i < 5 ? 0 : tenv_stream(t, a), &op, rec_done, &r[i]);
    }
    waiter w = {0};
    g_mutex_init(&w.lock);
    g_cond_init(&w.cond);
    ksched_op host = {.kind = KSCHED_OP_HOST};
    host.u.host.fn = wake;
    host.u.host.user = &w;
    tenv_submit(t, a, 0, &host, NULL, NULL);   /* after the five launches of stream 0 */
    g_mutex_lock(&w.lock);
    while (!w.done)
        g_cond_wait(&w.cond, &w.lock);
    g_mutex_unlock(&w.lock);
    for (int i = 0; i < 5; i++)
        g_assert_true(r[i].seen);
    ksched_thread_stop(t->s);
    tenv_run(t);
    for (int i = 0; i < 10; i++) {
        g_assert_true(r[i].seen);
        assert_blocks_once(t, ids[i], 3000);
    }
    g_mutex_clear(&w.lock);
    g_cond_clear(&w.cond);
    tenv_free(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tenants/memory-quota-and-isolation", test_memory_quota_and_isolation);
    g_test_add_func("/tenants/max-inflight", test_max_inflight);
    g_test_add_func("/tenants/slicing-off", test_slicing_off);
    g_test_add_data_func("/tenants/priority/fifo", GINT_TO_POINTER(KSCHED_FIFO), test_priority);
    g_test_add_data_func("/tenants/priority/kernelet", GINT_TO_POINTER(KSCHED_KERNELET),
                         test_priority);
    g_test_add_data_func("/tenants/weights/fifo", GINT_TO_POINTER(KSCHED_FIFO), test_weights);
    g_test_add_data_func("/tenants/weights/kernelet", GINT_TO_POINTER(KSCHED_KERNELET),
                         test_weights);
    g_test_add_func("/tenants/failing-kernel", test_failing_kernel);
    g_test_add_func("/tenants/failing-profile", test_failing_profile);
    g_test_add_func("/tenants/removal", test_removal);
    g_test_add_func("/tenants/lost-device", test_lost_device);
    g_test_add_func("/tenants/bad-input", test_bad_input);
    g_test_add_func("/tenants/thread", test_thread);
    return g_test_run();
}
