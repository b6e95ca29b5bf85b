/* Module variables through the scheduler (ksched_global_get): copies and memsets of the
 * tenant that looked a variable up, isolation from other tenants, lookup errors, the range
 * going away with its module or tenant, a backend without the op, and a backend that
 * shares variables between tenants. */
#include "sched_test.h"

static const char module_text[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".global .align 4 .u32 counter = 41;\n"
    ".const .align 4 .b8 coeffs[64];\n"
    ".extern .global .align 4 .u32 elsewhere;\n"
    ".visible .entry comp()\n{\n    ret;\n}\n";

static uint32_t load_module(tenv *t, uint32_t tenant)
{
    uint32_t m;
    ksched_err e = {0};
    if (ksched_module_load(t->s, tenant, module_text, strlen(module_text), &m, &e))
        g_error("module_load: %s", e.msg);
    return m;
}

static kbackend_devptr lookup(tenv *t, uint32_t tenant, uint32_t module, const char *name,
                           uint64_t expect_bytes)
{
    kbackend_devptr addr = 0;
    uint64_t bytes = 0;
    ksched_err e = {0};
    if (ksched_global_get(t->s, tenant, module, name, &addr, &bytes, &e))
        g_error("global_get %s: %s", name, e.msg);
    g_assert_cmpuint(bytes, ==, expect_bytes);
    return addr;
}

static ksched_op h2d(kbackend_devptr dst, const void *src, uint64_t bytes)
{
    ksched_op op = {.kind = KSCHED_OP_COPY_H2D};
    op.u.h2d.dst = dst;
    op.u.h2d.src = src;
    op.u.h2d.bytes = bytes;
    return op;
}

static ksched_op d2h(void *dst, kbackend_devptr src, uint64_t bytes)
{
    ksched_op op = {.kind = KSCHED_OP_COPY_D2H};
    op.u.d2h.dst = dst;
    op.u.d2h.src = src;
    op.u.d2h.bytes = bytes;
    return op;
}

/* Submits op and runs it; the status it completed with (a refused submission fails). */
static int run_op(tenv *t, uint32_t tenant, const ksched_op *op)
{
    rec r = {0};
    tenv_submit(t, tenant, 0, op, rec_done, &r);
    tenv_run(t);
    g_assert_true(r.seen);
    return r.r.status;
}

static int submit_status(tenv *t, uint32_t tenant, const ksched_op *op)
{
    ksched_err e = {0};
    int rc = ksched_submit(t->s, tenant, 0, op, NULL, NULL, NULL, &e);
    if (rc)
        g_assert_nonnull(strstr(e.msg, "not memory of tenant"));
    return rc;
}

static void test_copies(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    uint32_t a = tenv_tenant(t, "a"), m = load_module(t, a);
    kbackend_devptr counter = lookup(t, a, m, "counter", 4);
    kbackend_devptr coeffs = lookup(t, a, m, "coeffs", 64);
    g_assert_cmpuint(lookup(t, a, m, "counter", 4), ==, counter);   /* again: the same */
    uint32_t v = 0;
    ksched_op op = d2h(&v, counter, 4);
    g_assert_cmpint(run_op(t, a, &op), ==, 0);
    g_assert_cmpuint(v, ==, 41);            /* the initial value */
    uint32_t w = 0xdeadbeef;
    op = h2d(counter, &w, 4);
    g_assert_cmpint(run_op(t, a, &op), ==, 0);
    op = d2h(&v, counter, 4);
    g_assert_cmpint(run_op(t, a, &op), ==, 0);
    g_assert_cmpuint(v, ==, 0xdeadbeef);
    /* part of a variable, a memset, and a device copy from it into an allocation */
    uint8_t src[16], out[64];
    for (int i = 0; i < 16; i++)
        src[i] = (uint8_t)(100 + i);
    op = h2d(coeffs + 8, src, 16);
    g_assert_cmpint(run_op(t, a, &op), ==, 0);
    op = (ksched_op){.kind = KSCHED_OP_MEMSET};
    op.u.memset.dst = coeffs + 40;
    op.u.memset.value = 7;
    op.u.memset.bytes = 24;
    g_assert_cmpint(run_op(t, a, &op), ==, 0);
    kbackend_devptr buf;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 64, &buf, NULL), ==, 0);
    op = (ksched_op){.kind = KSCHED_OP_COPY_D2D};
    op.u.d2d.dst = buf;
    op.u.d2d.src = coeffs;
    op.u.d2d.bytes = 64;
    g_assert_cmpint(run_op(t, a, &op), ==, 0);
    op = d2h(out, buf, 64);
    g_assert_cmpint(run_op(t, a, &op), ==, 0);
    for (int i = 0; i < 64; i++)
        g_assert_cmpuint(out[i], ==, i >= 8 && i < 24 ? 100 + i - 8 : i >= 40 ? 7 : 0);
    /* but not past the variable's end, and not freed as an allocation */
    op = h2d(coeffs + 60, src, 8);
    g_assert_cmpint(submit_status(t, a, &op), ==, KSCHED_EINVAL);
    ksched_err e;
    g_assert_cmpint(ksched_mem_free(t->s, a, coeffs, &e), ==, KSCHED_EINVAL);
    ksched_tenant_stats st;
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &st, NULL), ==, 0);
    g_assert_cmpuint(st.mem_in_use, ==, 64);    /* module variables are not allocations */
    tenv_free(t);
}

static void test_isolation(void)
{
    tenv *t = tenv_policy(KSCHED_FIFO);
    uint32_t a = tenv_tenant(t, "a"), b = tenv_tenant(t, "b");
    uint32_t ma = load_module(t, a), mb = load_module(t, b);
    kbackend_devptr ca = lookup(t, a, ma, "counter", 4);
    uint32_t v = 5;
    ksched_op op = h2d(ca, &v, 4);
    g_assert_cmpint(submit_status(t, b, &op), ==, KSCHED_EINVAL);    /* b: not its memory */
    op = d2h(&v, ca, 4);
    g_assert_cmpint(submit_status(t, b, &op), ==, KSCHED_EINVAL);
    /* b's own load of the same text has a variable of its own */
    kbackend_devptr cb = lookup(t, b, mb, "counter", 4);
    g_assert_cmpuint(cb, !=, ca);
    op = h2d(ca, &v, 4);
    g_assert_cmpint(submit_status(t, b, &op), ==, KSCHED_EINVAL);
    uint32_t x = 1000, y = 2000, rx = 0, ry = 0;
    op = h2d(ca, &x, 4);
    g_assert_cmpint(run_op(t, a, &op), ==, 0);
    op = h2d(cb, &y, 4);
    g_assert_cmpint(run_op(t, b, &op), ==, 0);
    op = d2h(&rx, ca, 4);
    g_assert_cmpint(run_op(t, a, &op), ==, 0);
    op = d2h(&ry, cb, 4);
    g_assert_cmpint(run_op(t, b, &op), ==, 0);
    g_assert_cmpuint(rx, ==, 1000);
    g_assert_cmpuint(ry, ==, 2000);
    /* module ids are the tenant's own: b has no second module */
    kbackend_devptr addr;
    ksched_err e;
    g_assert_cmpint(ksched_global_get(t->s, b, mb + 1, "counter", &addr, NULL, &e), ==,
                    KSCHED_ENOTFOUND);
    tenv_free(t);
}

static void test_lookup_errors(void)
{
    tenv *t = tenv_policy(KSCHED_FIFO);
    uint32_t a = tenv_tenant(t, "a"), m = load_module(t, a);
    kbackend_devptr addr = 0;
    uint64_t bytes = 0;
    ksched_err e = {0};
    g_assert_cmpint(ksched_global_get(t->s, a, m, "nosuch", &addr, &bytes, &e), ==,
                    KSCHED_ENOTFOUND);
    g_assert_nonnull(strstr(e.msg, "nosuch"));
    g_assert_cmpint(ksched_global_get(t->s, a, m, "elsewhere", &addr, &bytes, &e), ==,
                    KSCHED_ENOTFOUND);  /* .extern: defined in no module of this one */
    g_assert_cmpint(ksched_global_get(t->s, a, m, "comp", &addr, &bytes, &e), ==,
                    KSCHED_ENOTFOUND);  /* a kernel is no variable */
    const char *bad[] = {NULL, "", "1counter", "count er", "counter;", "a.b", "x[0]"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_cmpint(ksched_global_get(t->s, a, m, bad[i], &addr, &bytes, &e), ==,
                        KSCHED_EINVAL);
        g_assert_nonnull(strstr(e.msg, "variable name"));
    }
    char longname[KSCHED_ENTRY_MAX + 2];  /* one beyond the longest name */
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    g_assert_cmpint(ksched_global_get(t->s, a, m, longname, &addr, &bytes, &e), ==,
                    KSCHED_EINVAL);
    longname[300] = 0;                      /* long, as C++ names are: looked up */
    g_assert_cmpint(ksched_global_get(t->s, a, m, longname, &addr, &bytes, &e), ==,
                    KSCHED_ENOTFOUND);
    g_assert_cmpint(ksched_global_get(t->s, a, m + 1, "counter", &addr, &bytes, &e), ==,
                    KSCHED_ENOTFOUND);
    g_assert_cmpint(ksched_global_get(t->s, a + 100, m, "counter", &addr, &bytes, &e), ==,
                    KSCHED_ENOTFOUND);
    g_assert_cmpint(ksched_global_get(NULL, a, m, "counter", &addr, &bytes, &e), ==,
                    KSCHED_EINVAL);
    g_assert_cmpuint(addr, ==, 0);          /* nothing was written by the failures */
    g_assert_cmpuint(bytes, ==, 0);
    g_assert_cmpint(ksched_global_get(t->s, a, m, "counter", NULL, NULL, &e), ==, 0);
    tenv_free(t);
}

static uint64_t sim_mem(tenv *t)
{
    ksim_stats st;
    ksim_get_stats(t->sim, &st);
    return st.mem_in_use;
}

static void test_unload(void)
{
    tenv *t = tenv_policy(KSCHED_FIFO);
    uint32_t a = tenv_tenant(t, "a"), m = load_module(t, a);
    kbackend_devptr counter = lookup(t, a, m, "counter", 4);
    g_assert_cmpuint(sim_mem(t), ==, 4 + 64);
    /* a copy queued (nothing starts before a driver runs) when the module goes */
    uint32_t v = 9;
    rec late = {0};
    ksched_op op = h2d(counter, &v, 4);
    tenv_submit(t, a, 0, &op, rec_done, &late);
    g_assert_cmpint(ksched_module_unload(t->s, a, m, NULL), ==, 0);
    g_assert_cmpuint(sim_mem(t), ==, 0);    /* the sim freed the variables */
    tenv_run(t);
    g_assert_true(late.seen);
    g_assert_cmpint(late.r.status, ==, KSCHED_EINVAL);
    g_assert_nonnull(strstr(late.msg, "when the copy started"));
    /* and nothing new reaches the range */
    g_assert_cmpint(submit_status(t, a, &op), ==, KSCHED_EINVAL);
    /* the same holds for an allocation freed while a copy to it waits */
    kbackend_devptr p;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 16, &p, NULL), ==, 0);
    rec late2 = {0};
    op = h2d(p, &v, 4);
    tenv_submit(t, a, 0, &op, rec_done, &late2);
    g_assert_cmpint(ksched_mem_free(t->s, a, p, NULL), ==, 0);
    tenv_run(t);
    g_assert_cmpint(late2.r.status, ==, KSCHED_EINVAL);
    tenv_free(t);
}

static void test_removal(void)
{
    tenv *t = tenv_policy(KSCHED_FIFO);
    uint32_t a = tenv_tenant(t, "a"), b = tenv_tenant(t, "b");
    uint32_t m = load_module(t, a);
    kbackend_devptr counter = lookup(t, a, m, "counter", 4);
    g_assert_cmpint(ksched_tenant_remove(t->s, a, NULL), ==, 0);
    kbackend_devptr addr;
    ksched_err e;
    g_assert_cmpint(ksched_global_get(t->s, a, m, "counter", &addr, NULL, &e), ==,
                    KSCHED_ESTATE);
    tenv_run(t);
    g_assert_cmpuint(sim_mem(t), ==, 0);
    g_assert_cmpint(ksched_global_get(t->s, a, m, "counter", &addr, NULL, &e), ==,
                    KSCHED_ENOTFOUND);
    uint32_t v = 1;
    ksched_op op = h2d(counter, &v, 4);
    g_assert_cmpint(submit_status(t, b, &op), ==, KSCHED_EINVAL);
    tenv_free(t);
}

/* The sim's ops without global_get; and with one that gives every module the variable of
 * the first lookup, as a backend would that shares a module's variables between loads. */
static const kbackend_ops *sim_ops;
static kbackend_ops test_ops;
static kbackend_devptr shared_addr;
static uint64_t shared_bytes;

static int shared_global_get(void *state, kbackend_module *m, const char *name,
                             kbackend_devptr *addr, uint64_t *bytes, kbackend_error *err)
{
    if (!shared_addr) {
        int rc = sim_ops->global_get(state, m, name, &shared_addr, &shared_bytes, err);
        if (rc)
            return rc;
    }
    *addr = shared_addr;
    *bytes = shared_bytes;
    return 0;
}

/* A scheduler on the sim whose global_get op is replaced by global_get. */
static tenv *env_with_global_get(int (*global_get)(void *, kbackend_module *, const char *,
                                                   kbackend_devptr *, uint64_t *, kbackend_error *))
{
    tenv *t = g_new0(tenv, 1);
    g_assert_cmpint(ksim_new(&t->sim, NULL, NULL), ==, 0);
    ksim_backend(t->sim, &t->be);
    tenv_standard_kernels(t);
    sim_ops = t->be.ops;
    test_ops = *sim_ops;
    test_ops.global_get = global_get;
    t->be.ops = &test_ops;
    ksched_config c;
    ksched_config_default(&c);
    g_assert_cmpint(ksched_new(&t->s, &t->be, &c, NULL, NULL), ==, 0);
    return t;
}

static void test_backend_without_op(void)
{
    tenv *t = env_with_global_get(NULL);
    uint32_t a = tenv_tenant(t, "a"), m = load_module(t, a);
    kbackend_devptr addr;
    ksched_err e;
    g_assert_cmpint(ksched_global_get(t->s, a, m, "counter", &addr, NULL, &e), ==,
                    KSCHED_EUNSUPPORTED);
    tenv_free(t);
}

static void test_backend_sharing(void)
{
    shared_addr = 0;
    tenv *t = env_with_global_get(shared_global_get);
    uint32_t a = tenv_tenant(t, "a"), b = tenv_tenant(t, "b");
    uint32_t ma = load_module(t, a), ma2 = load_module(t, a), mb = load_module(t, b);
    kbackend_devptr ca = lookup(t, a, ma, "counter", 4);
    /* a second module of the same tenant with the same range: allowed, and it stays
     * reachable while either module is loaded */
    g_assert_cmpuint(lookup(t, a, ma2, "counter", 4), ==, ca);
    kbackend_devptr addr;
    ksched_err e = {0};
    g_assert_cmpint(ksched_global_get(t->s, b, mb, "counter", &addr, NULL, &e), ==,
                    KSCHED_EBACKEND);
    g_assert_nonnull(strstr(e.msg, "overlaps memory of tenant"));
    g_assert_cmpint(ksched_module_unload(t->s, a, ma, NULL), ==, 0);
    uint32_t v = 3;
    ksched_op op = h2d(ca, &v, 4);
    g_assert_cmpint(submit_status(t, a, &op), ==, 0);
    g_assert_cmpint(ksched_module_unload(t->s, a, ma2, NULL), ==, 0);
    g_assert_cmpint(submit_status(t, a, &op), ==, KSCHED_EINVAL);
    tenv_run(t);
    /* a range inside another tenant's allocation is refused as well */
    kbackend_devptr pb;
    g_assert_cmpint(ksched_mem_alloc(t->s, b, 4096, &pb, NULL), ==, 0);
    shared_addr = pb + 64;
    uint32_t m3 = load_module(t, a);
    g_assert_cmpint(ksched_global_get(t->s, a, m3, "counter", &addr, NULL, &e), ==,
                    KSCHED_EBACKEND);
    shared_addr = 0;
    tenv_free(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/globals/copies", test_copies);
    g_test_add_func("/globals/isolation", test_isolation);
    g_test_add_func("/globals/lookup-errors", test_lookup_errors);
    g_test_add_func("/globals/unload", test_unload);
    g_test_add_func("/globals/removal", test_removal);
    g_test_add_func("/globals/backend-without-op", test_backend_without_op);
    g_test_add_func("/globals/backend-sharing", test_backend_sharing);
    return g_test_run();
}
