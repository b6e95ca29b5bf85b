/* Client contexts of one tenant (a VM's guest processes): each gets a backend domain of its
 * own, with its own window, for its allocations, its PTX modules' variables and the
 * launches it makes (whoever loaded the function); policy, quota and time limit stay the
 * tenant's; a closed context's domain goes back to the backend once its last holder is
 * gone; a tenant holds at most max_contexts domains. On the sim (which has windows), its
 * ops wrapped to see which domain each call names. */
#include "sched_test.h"

/* What the wrapped backend saw. */
static struct {
    kbackend_ops ops;
    const kbackend_ops *sim;
    uint32_t alloc_domain, module_domain, launch_domain;
    uint32_t released[16];
    unsigned n_released;
    uint32_t limited[16];
    uint64_t limit_ns[16];
    unsigned n_limited;
} W;

static int w_mem_alloc(void *st, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                       kbackend_error *err)
{
    W.alloc_domain = domain;
    return W.sim->mem_alloc(st, domain, bytes, out, err);
}

static int w_module_load(void *st, uint32_t domain, const char *ptx, size_t len,
                         kbackend_module **out, kbackend_error *err)
{
    W.module_domain = domain;
    return W.sim->module_load_ptx(st, domain, ptx, len, out, err);
}

static int w_launch(void *st, const kbackend_slice *s, kbackend_done_fn done, void *user,
                    kbackend_error *err)
{
    W.launch_domain = s->domain;
    return W.sim->launch(st, s, done, user, err);
}

static void w_release(void *st, uint32_t domain)
{
    if (W.n_released < 16)
        W.released[W.n_released++] = domain;
    W.sim->domain_release(st, domain);
}

static void w_time_limit(void *st, uint32_t domain, uint64_t limit_ns)
{
    (void)st;   /* the sim has no time limits */
    if (W.n_limited < 16) {
        W.limited[W.n_limited] = domain;
        W.limit_ns[W.n_limited++] = limit_ns;
    }
}

typedef struct env {
    ksim *sim;
    ksched *s;
    uint32_t tenant;
} env;

/* A scheduler (fifo) on the wrapped sim with one tenant of quota bytes (0: none). */
static env env_new(unsigned max_contexts, uint64_t quota)
{
    env e;
    kbackend be;
    ksched_config c;
    ksched_tenant_policy pol;

    memset(&W, 0, sizeof(W));
    g_assert_cmpint(ksim_new(&e.sim, NULL, NULL), ==, 0);
    ksim_backend(e.sim, &be);
    kbackend_profile p = test_profile(0.05, 300, 0.45, 0.35);
    g_assert_cmpint(ksim_add_kernel(e.sim, "k", &p, NULL), ==, 0);
    W.sim = be.ops;
    W.ops = *be.ops;
    W.ops.mem_alloc = w_mem_alloc;
    W.ops.module_load_ptx = w_module_load;
    W.ops.launch = w_launch;
    W.ops.domain_release = w_release;
    W.ops.domain_time_limit = w_time_limit;
    be.ops = &W.ops;
    ksched_config_default(&c);
    c.policy = KSCHED_FIFO;
    c.max_contexts = max_contexts;
    g_assert_cmpint(ksched_new(&e.s, &be, &c, NULL, NULL), ==, 0);
    ksched_tenant_policy_default(&pol);
    pol.mem_quota = quota;
    g_assert_cmpint(ksched_tenant_add(e.s, "vm", &pol, &e.tenant, NULL), ==, 0);
    return e;
}

static void env_free(env *e)
{
    ksched_free(e->s);
    ksim_free(e->sim);
}

static kbackend_devptr alloc_in(env *e, uint32_t context, uint64_t bytes)
{
    kbackend_devptr p = 0;
    ksched_err err = {0};

    if (ksched_mem_alloc_in(e->s, e->tenant, context, bytes, &p, &err))
        g_error("alloc in context %u: %s", context, err.msg);
    return p;
}

static unsigned domains(env *e)
{
    unsigned n = 0;

    g_assert_cmpint(ksched_tenant_domains(e->s, e->tenant, &n, NULL), ==, 0);
    return n;
}

static int in_window(env *e, uint32_t context, kbackend_devptr p)
{
    kbackend_window w;

    g_assert_cmpint(ksched_context_window(e->s, e->tenant, context, &w, NULL), ==, 0);
    return p >= w.base && p - w.base < w.size;
}

/* Two contexts' allocations lie each in its own window; the quota is the tenant's. */
static void test_windows_and_quota(void)
{
    env e = env_new(0, 1 << 20);
    kbackend_devptr p7 = alloc_in(&e, 7, 600 << 10);
    uint32_t d7 = W.alloc_domain;
    kbackend_devptr q = 0;
    ksched_err err = {0};

    g_assert_cmpint(ksched_mem_alloc_in(e.s, e.tenant, 8, 600 << 10, &q, &err), ==,
                    KSCHED_EQUOTA);     /* a second process gets no quota of its own */
    kbackend_devptr p8 = alloc_in(&e, 8, 300 << 10);
    g_assert_cmpuint(W.alloc_domain, !=, d7);
    g_assert_true(in_window(&e, 7, p7));
    g_assert_false(in_window(&e, 7, p8));
    g_assert_true(in_window(&e, 8, p8));
    g_assert_false(in_window(&e, 8, p7));
    /* context 0 (a host client) keeps the tenant's id as its domain */
    (void)alloc_in(&e, 0, 4096);
    g_assert_cmpuint(W.alloc_domain, ==, e.tenant);
    g_assert_cmpuint(domains(&e), ==, 3);
    env_free(&e);
}

static uint32_t function_in(env *e, uint32_t context)
{
    static const char ptx[] = ".visible .entry k(\n)\n{\n}\n";
    uint32_t m, f;
    ksched_err err = {0};

    if (ksched_module_load_in(e->s, e->tenant, context, ptx, strlen(ptx), &m, &err) ||
        ksched_function_get(e->s, e->tenant, m, "k", &f, NULL, &err))
        g_error("module in context %u: %s", context, err.msg);
    return f;
}

static void launch_in(env *e, uint32_t context, uint32_t fn)
{
    ksched_op op = launch_op(fn, 4, 1, 64);
    ksched_err err = {0};

    op.u.launch.context = context;
    if (ksched_submit(e->s, e->tenant, 0, &op, NULL, NULL, NULL, &err))
        g_error("launch in context %u: %s", context, err.msg);
    g_assert_cmpint(ksched_run_until_idle(e->s, NULL), ==, 0);
}

/* A module's variables go to its loader's domain; a launch runs in the launcher's, also
 * through a function another context loaded. */
static void test_launch_in_launchers_domain(void)
{
    env e = env_new(0, 0);
    (void)alloc_in(&e, 7, 4096);
    uint32_t d7 = W.alloc_domain;
    (void)alloc_in(&e, 8, 4096);
    uint32_t d8 = W.alloc_domain;
    uint32_t f7 = function_in(&e, 7);

    g_assert_cmpuint(W.module_domain, ==, d7);
    launch_in(&e, 7, f7);
    g_assert_cmpuint(W.launch_domain, ==, d7);
    launch_in(&e, 8, f7);      /* 7's function, launched by 8 */
    g_assert_cmpuint(W.launch_domain, ==, d8);
    env_free(&e);
}

/* A closed context's domain goes back to the backend with its last allocation (and
 * module); the same number used again gets a new domain. */
static void test_close_releases(void)
{
    env e = env_new(0, 0);
    kbackend_devptr p = alloc_in(&e, 7, 4096);
    uint32_t d7 = W.alloc_domain;
    uint32_t f7 = function_in(&e, 7);
    uint32_t m = 0;
    (void)f7;
    (void)alloc_in(&e, 8, 4096);
    g_assert_cmpuint(domains(&e), ==, 2);

    g_assert_cmpint(ksched_context_close(e.s, e.tenant, 7, NULL), ==, 0);
    g_assert_cmpuint(W.n_released, ==, 0);     /* its memory and module are still there */
    g_assert_cmpint(ksched_mem_free(e.s, e.tenant, p, NULL), ==, 0);
    g_assert_cmpuint(W.n_released, ==, 0);
    m = 1;                                      /* the tenant's first module */
    g_assert_cmpint(ksched_module_unload(e.s, e.tenant, m, NULL), ==, 0);
    g_assert_cmpuint(W.n_released, ==, 1);
    g_assert_cmpuint(W.released[0], ==, d7);
    g_assert_cmpuint(domains(&e), ==, 1);

    (void)alloc_in(&e, 7, 4096);               /* a new process with the same number */
    g_assert_cmpuint(W.alloc_domain, !=, d7);
    g_assert_cmpuint(domains(&e), ==, 2);
    /* closing a context that has nothing releases its domain at once; twice is harmless */
    g_assert_cmpint(ksched_context_close(e.s, e.tenant, 9, NULL), ==, 0);
    g_assert_cmpint(ksched_context_close(e.s, e.tenant, 9, NULL), ==, 0);
    g_assert_cmpuint(domains(&e), ==, 2);
    env_free(&e);
    g_assert_cmpuint(W.n_released, ==, 3);     /* the tenant's end: the other two */
}

/* Beyond max_contexts domains a new context is refused until one is released. */
static void test_bound(void)
{
    env e = env_new(2, 0);
    kbackend_devptr p1 = alloc_in(&e, 1, 4096), q = 0;
    kbackend_window w;
    ksched_err err = {0};

    (void)alloc_in(&e, 2, 4096);
    g_assert_cmpint(ksched_mem_alloc_in(e.s, e.tenant, 3, 4096, &q, &err), ==,
                    KSCHED_ECONTEXTS);
    g_assert_nonnull(strstr(err.msg, "client contexts"));
    g_assert_cmpint(ksched_context_window(e.s, e.tenant, 3, &w, NULL), ==, KSCHED_ECONTEXTS);
    ksched_op op = launch_op(function_in(&e, 1), 1, 1, 32);
    op.u.launch.context = 3;
    g_assert_cmpint(ksched_submit(e.s, e.tenant, 0, &op, NULL, NULL, NULL, NULL), ==,
                    KSCHED_ECONTEXTS);
    (void)alloc_in(&e, 2, 4096);                /* the contexts it has go on */
    g_assert_cmpint(ksched_mem_free(e.s, e.tenant, p1, NULL), ==, 0);
    g_assert_cmpint(ksched_context_close(e.s, e.tenant, 1, NULL), ==, 0);
    g_assert_cmpuint(domains(&e), ==, 2);       /* 1's module holds it still */
    g_assert_cmpint(ksched_module_unload(e.s, e.tenant, 1, NULL), ==, 0);
    g_assert_cmpuint(domains(&e), ==, 1);
    (void)alloc_in(&e, 3, 4096);
    env_free(&e);
}

/* The tenant's time limit reaches every domain of it. */
static void test_time_limit_every_domain(void)
{
    env e = env_new(0, 0);
    ksched_tenant_policy pol;

    (void)alloc_in(&e, 7, 4096);
    uint32_t d7 = W.alloc_domain;
    (void)alloc_in(&e, 8, 4096);
    uint32_t d8 = W.alloc_domain;
    g_assert_cmpint(ksched_tenant_get_policy(e.s, e.tenant, &pol, NULL), ==, 0);
    pol.kernel_time_limit_ns = 300000000;
    g_assert_cmpint(ksched_tenant_set_policy(e.s, e.tenant, &pol, NULL), ==, 0);
    g_assert_cmpuint(W.n_limited, ==, 2);
    g_assert_true((W.limited[0] == d7 && W.limited[1] == d8) ||
                  (W.limited[0] == d8 && W.limited[1] == d7));
    g_assert_cmpuint(W.limit_ns[0], ==, 300000000);
    g_assert_cmpuint(W.limit_ns[1], ==, 300000000);
    env_free(&e);
}

static void test_bad_config(void)
{
    ksim *sim;
    kbackend be;
    ksched *s = NULL;
    ksched_config c;

    g_assert_cmpint(ksim_new(&sim, NULL, NULL), ==, 0);
    ksim_backend(sim, &be);
    ksched_config_default(&c);
    c.max_contexts = KSCHED_MAX_CONTEXTS_LIMIT + 1;
    g_assert_cmpint(ksched_new(&s, &be, &c, NULL, NULL), ==, KSCHED_EINVAL);
    ksim_free(sim);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/contexts/windows-and-quota", test_windows_and_quota);
    g_test_add_func("/contexts/launch-in-launchers-domain", test_launch_in_launchers_domain);
    g_test_add_func("/contexts/close-releases", test_close_releases);
    g_test_add_func("/contexts/bound", test_bound);
    g_test_add_func("/contexts/time-limit-every-domain", test_time_limit_every_domain);
    g_test_add_func("/contexts/bad-config", test_bad_config);
    return g_test_run();
}
