/* The scheduler (host-sched/sched/ksched.h) driving the cuda backend on the fake driver:
 * the executor contract end to end. Two tenants launch count_blocks and count_blocks_b
 * (profiles given: one compute-like, one memory-like, so the kernelet policy pairs and
 * slices them); every block of every launch must be counted exactly once, whatever slices
 * the scheduler chose and whichever lanes it put them on. Two tenants loading the same PTX
 * with a __device__ variable each get their own. A cubin of count_blocks runs whole. */
#include <glib.h>
#include <pthread.h>
#include <string.h>

#include "cuda_backend.h"
#include "fake/fake_driver.h"
#include "kernelet/ptx.h"
#include "kernels_ptx.h"
#include "ksched.h"

#define LAUNCHES 6
#define GRID_X 4000

/* A compute- and a memory-bound class, each wave long enough by the model that the
 * backend's launch per wave (wave_launches) leaves the pair a gain (kmodel_launch_cp). */
static const char PROFILES[] =
    "profile entry=count_blocks rm=0.01 insts=400000 pur=0.8 mur=0.05 wpb=2 regs=16\n"
    "profile entry=count_blocks_b rm=0.3 insts=60000 pur=0.1 mur=0.7 wpb=2 regs=16\n";

typedef struct tenant {
    uint32_t id, module, fn;
    kbackend_devptr counts[LAUNCHES];
} tenant;

static void count_done(void *user, const ksched_op_result *r)
{
    unsigned *failed = user;
    if (r->status)
        g_atomic_int_inc(failed);
}

static char *sliced_text(size_t *len)
{
    kptx_module *m;
    kptx_error pe;
    g_assert_cmpint(kptx_parse(kcuda_test_ptx, strlen(kcuda_test_ptx), &m, &pe), ==, 0);
    g_assert_cmpint(kptx_slice_module(m, NULL, &pe), ==, 0);
    char *text;
    g_assert_cmpint(kptx_print(m, &text, len, &pe), ==, 0);
    kptx_module_free(m);
    return text;
}

static void submit(ksched *s, uint32_t tenant_id, const ksched_op *op, unsigned *failed)
{
    ksched_err e = {0};
    if (ksched_submit(s, tenant_id, 0, op, count_done, failed, NULL, &e))
        g_error("submit: %s", e.msg);
}

static void setup_tenant(ksched *s, const char *name, const char *entry, tenant *t,
                         unsigned *failed)
{
    ksched_err e = {0};
    g_assert_cmpint(ksched_tenant_add(s, name, NULL, &t->id, &e), ==, 0);
    size_t len;
    char *text = sliced_text(&len);
    g_assert_cmpint(ksched_module_load(s, t->id, text, len, &t->module, &e), ==, 0);
    free(text);
    ksched_function_info info;
    g_assert_cmpint(ksched_function_get(s, t->id, t->module, entry, &t->fn, &info, &e), ==, 0);
    g_assert_true(info.sliceable);
    for (int i = 0; i < LAUNCHES; i++) {
        g_assert_cmpint(ksched_mem_alloc(s, t->id, GRID_X * 4, &t->counts[i], &e), ==, 0);
        ksched_op op = {.kind = KSCHED_OP_MEMSET,
                        .u.memset = {.dst = t->counts[i], .value = 0, .bytes = GRID_X * 4}};
        submit(s, t->id, &op, failed);
    }
}

static void launch_all(ksched *s, tenant *t, unsigned *failed)
{
    for (int i = 0; i < LAUNCHES; i++) {
        struct { uint64_t counts; uint32_t tag; } p = {.counts = t->counts[i], .tag = (uint32_t)i};
        ksched_op op = {.kind = KSCHED_OP_LAUNCH};
        op.u.launch.function = t->fn;
        op.u.launch.grid[0] = GRID_X;
        op.u.launch.grid[1] = op.u.launch.grid[2] = 1;
        op.u.launch.block[0] = 64;
        op.u.launch.block[1] = op.u.launch.block[2] = 1;
        op.u.launch.params = &p;
        op.u.launch.params_size = 12;
        submit(s, t->id, &op, failed);
    }
}

static void check_counts(ksched *s, tenant *t, unsigned *failed)
{
    uint32_t *host = g_new0(uint32_t, (size_t)GRID_X * LAUNCHES);
    for (int i = 0; i < LAUNCHES; i++) {
        ksched_op op = {.kind = KSCHED_OP_COPY_D2H,
                        .u.d2h = {.dst = host + (size_t)i * GRID_X, .src = t->counts[i],
                                  .bytes = GRID_X * 4}};
        submit(s, t->id, &op, failed);
    }
    ksched_err e = {0};
    g_assert_cmpint(ksched_run_until_idle(s, &e), ==, 0);
    for (size_t b = 0; b < (size_t)GRID_X * LAUNCHES; b++)
        if (host[b] != 1)
            g_error("launch %zu block %zu counted %u times", b / GRID_X, b % GRID_X, host[b]);
    g_free(host);
}

/* The kernelet policy on the cuda backend (on the fake driver, lanes of them; 0: the
 * backend's default) with PROFILES; the caller frees all three. */
static ksched *kernelet_on_fake(unsigned lanes, kbackend *be, ksched_profile_cache **profiles)
{
    kcuda_config cfg;
    kcuda_config_default(&cfg);
    if (lanes)
        cfg.lanes = lanes;
    kcuda *kc;
    kbackend_error ke = {0};
    if (kcuda_new(&kc, &cfg, &ke))
        g_error("kcuda_new: %s", ke.msg);
    kcuda_backend(kc, be);
    ksched_err e = {0};
    g_assert_cmpint(ksched_profile_cache_new(profiles, &e), ==, 0);
    g_assert_cmpint(ksched_profile_parse(*profiles, PROFILES, strlen(PROFILES), &e), ==, 0);
    ksched_config sc;
    ksched_config_default(&sc);
    sc.policy = KSCHED_KERNELET;
    ksched *s;
    if (ksched_new(&s, be, &sc, *profiles, &e))
        g_error("ksched_new: %s", e.msg);
    return s;
}

static void test_two_tenants_sliced(void)
{
    kbackend be;
    ksched_profile_cache *profiles;
    ksched *s = kernelet_on_fake(4, &be, &profiles);
    ksched_err e = {0};

    unsigned failed = 0;
    tenant a, b;
    setup_tenant(s, "compute", "count_blocks", &a, &failed);
    setup_tenant(s, "memory", "count_blocks_b", &b, &failed);
    g_assert_cmpint(ksched_run_until_idle(s, &e), ==, 0);
    launch_all(s, &a, &failed);
    launch_all(s, &b, &failed);
    g_assert_cmpint(ksched_run_until_idle(s, &e), ==, 0);
    check_counts(s, &a, &failed);
    check_counts(s, &b, &failed);
    g_assert_cmpuint(failed, ==, 0);

    ksched_stats st;
    ksched_get_stats(s, &st);
    g_assert_cmpuint(st.kernels_completed, ==, 2 * LAUNCHES);
    g_assert_cmpuint(st.slices, >, 2 * LAUNCHES);       /* they were sliced */
    g_assert_cmpuint(st.coschedules, >, 0);             /* and paired */
    g_assert_cmpuint(st.profiles, ==, 0);               /* the profiles came from the file */
    ksched_free(s);
    ksched_profile_cache_free(profiles);
    be.ops->destroy(be.state);
}

static ksched *sched_on_fake(kbackend *be)
{
    kcuda *kc;
    kbackend_error ke = {0};
    if (kcuda_new(&kc, NULL, &ke))
        g_error("kcuda_new: %s", ke.msg);
    kcuda_backend(kc, be);
    ksched *s;
    ksched_err e = {0};
    if (ksched_new(&s, be, NULL, NULL, &e))
        g_error("ksched_new: %s", e.msg);
    return s;
}

/* Two tenants load the same PTX with a __device__ variable: each gets its own (different
 * addresses), each copies to and from its own, and neither may touch the other's. */
static void test_module_variables_per_tenant(void)
{
    kbackend be;
    ksched *s = sched_on_fake(&be);
    ksched_err e = {0};
    uint32_t t[2], mod[2];
    kbackend_devptr var[2];
    uint64_t bytes = 0;
    unsigned failed = 0;
    for (int i = 0; i < 2; i++) {
        g_assert_cmpint(ksched_tenant_add(s, i ? "b" : "a", NULL, &t[i], &e), ==, 0);
        g_assert_cmpint(ksched_module_load(s, t[i], kcuda_test_vars_ptx,
                                           strlen(kcuda_test_vars_ptx), &mod[i], &e), ==, 0);
        g_assert_cmpint(ksched_global_get(s, t[i], mod[i], "counter", &var[i], &bytes, &e), ==,
                        0);
        g_assert_cmpuint(bytes, ==, 4);
    }
    g_assert_cmphex(var[0], !=, var[1]);
    uint32_t in[2] = {0xA0A0A0A0u, 0xB0B0B0B0u}, out[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        ksched_op op = {.kind = KSCHED_OP_COPY_H2D,
                        .u.h2d = {.dst = var[i], .src = &in[i], .bytes = 4}};
        submit(s, t[i], &op, &failed);
    }
    for (int i = 0; i < 2; i++) {
        ksched_op op = {.kind = KSCHED_OP_COPY_D2H,
                        .u.d2h = {.dst = &out[i], .src = var[i], .bytes = 4}};
        submit(s, t[i], &op, &failed);
    }
    g_assert_cmpint(ksched_run_until_idle(s, &e), ==, 0);
    g_assert_cmpuint(failed, ==, 0);
    g_assert_cmphex(out[0], ==, in[0]);
    g_assert_cmphex(out[1], ==, in[1]);
    /* the other tenant's variable is not this tenant's memory */
    ksched_op steal = {.kind = KSCHED_OP_COPY_D2H,
                       .u.d2h = {.dst = &out[0], .src = var[1], .bytes = 4}};
    g_assert_cmpint(ksched_submit(s, t[0], 0, &steal, NULL, NULL, NULL, &e), ==, KSCHED_EINVAL);
    ksched_op poke = {.kind = KSCHED_OP_MEMSET, .u.memset = {.dst = var[0], .bytes = 4}};
    g_assert_cmpint(ksched_submit(s, t[1], 0, &poke, NULL, NULL, NULL, &e), ==, KSCHED_EINVAL);
    ksched_free(s);
    be.ops->destroy(be.state);
}

static int in_window(const kbackend_window *w, kbackend_devptr p, uint64_t bytes)
{
    return p >= w->base && p + bytes <= w->base + w->size;
}

/* Two client contexts of one tenant (a VM's guest processes) on the cuda backend: each
 * gets a window of its own (a reservation of the driver's addresses) holding its
 * allocation; a closed context's window goes back to the driver with its last allocation,
 * while the other context's stays. */
static void test_context_windows(void)
{
    kbackend be;
    ksched *s = sched_on_fake(&be);
    ksched_err e = {0};
    uint32_t t;
    kbackend_devptr p[2];
    kbackend_window w[2];
    fake_vmm_stats before, now;

    g_assert_cmpint(ksched_tenant_add(s, "vm", NULL, &t, &e), ==, 0);
    fake_vmm_get_stats(&before);
    for (uint32_t i = 0; i < 2; i++) {
        g_assert_cmpint(ksched_mem_alloc_in(s, t, 7 + i, 1 << 20, &p[i], &e), ==, 0);
        g_assert_cmpint(ksched_context_window(s, t, 7 + i, &w[i], &e), ==, 0);
        g_assert_true(in_window(&w[i], p[i], 1 << 20));
    }
    g_assert_cmphex(w[0].base, !=, w[1].base);
    g_assert_false(in_window(&w[1], p[0], 1));
    fake_vmm_get_stats(&now);
    g_assert_cmpuint(now.reservations, ==, before.reservations + 2);

    g_assert_cmpint(ksched_context_close(s, t, 7, &e), ==, 0);
    fake_vmm_get_stats(&now);
    g_assert_cmpuint(now.reservations, ==, before.reservations + 2);   /* memory still there */
    g_assert_cmpint(ksched_mem_free(s, t, p[0], &e), ==, 0);
    fake_vmm_get_stats(&now);
    g_assert_cmpuint(now.reservations, ==, before.reservations + 1);
    kbackend_window again;
    g_assert_cmpint(ksched_context_window(s, t, 8, &again, &e), ==, 0);
    g_assert_cmphex(again.base, ==, w[1].base);
    g_assert_cmpint(ksched_mem_free(s, t, p[1], &e), ==, 0);
    ksched_free(s);
    be.ops->destroy(be.state);
}

/* A cubin (SASS only) through the scheduler: loaded natively, no sliced variant, so even
 * the kernelet policy with a profile that would slice it runs every launch whole (one
 * backend launch of the whole grid each); its variable is the tenant's own. */
static void test_cubin_runs_whole(void)
{
    gchar *cubin = NULL;
    gsize size = 0;
    g_assert_true(g_file_get_contents(g_getenv("KCUDA_COUNT_BLOCKS_CUBIN"), &cubin, &size,
                                      NULL));
    kbackend be;
    ksched_profile_cache *profiles;
    ksched *s = kernelet_on_fake(0, &be, &profiles);
    ksched_err e = {0};

    tenant t;
    unsigned failed = 0;
    g_assert_cmpint(ksched_tenant_add(s, "sass", NULL, &t.id, &e), ==, 0);
    g_assert_cmpint(ksched_module_load_cubin(s, t.id, cubin, size, &t.module, &e), ==, 0);
    ksched_function_info info;
    g_assert_cmpint(ksched_function_get(s, t.id, t.module, "count_blocks", &t.fn, &info, &e),
                    ==, 0);
    g_assert_false(info.sliceable);
    g_assert_false(info.no_code);
    kbackend_devptr var;
    uint64_t bytes = 0;
    g_assert_cmpint(ksched_global_get(s, t.id, t.module, "cubin_launches", &var, &bytes, &e),
                    ==, 0);
    g_assert_cmpuint(bytes, ==, 4);
    for (int i = 0; i < LAUNCHES; i++) {
        g_assert_cmpint(ksched_mem_alloc(s, t.id, GRID_X * 4, &t.counts[i], &e), ==, 0);
        ksched_op op = {.kind = KSCHED_OP_MEMSET,
                        .u.memset = {.dst = t.counts[i], .value = 0, .bytes = GRID_X * 4}};
        submit(s, t.id, &op, &failed);
    }
    g_assert_cmpint(ksched_run_until_idle(s, &e), ==, 0);
    fake_stats before;
    fake_driver_stats(&before);
    launch_all(s, &t, &failed);
    g_assert_cmpint(ksched_run_until_idle(s, &e), ==, 0);
    fake_stats after;
    fake_driver_stats(&after);
    g_assert_cmpuint(after.launches - before.launches, ==, LAUNCHES);
    g_assert_cmpuint(after.last_grid[0], ==, GRID_X);
    check_counts(s, &t, &failed);
    g_assert_cmpuint(failed, ==, 0);
    ksched_stats st;
    ksched_get_stats(s, &st);
    g_assert_cmpuint(st.kernels_completed, ==, LAUNCHES);
    g_assert_cmpuint(st.coschedules, ==, 0);
    ksched_free(s);
    ksched_profile_cache_free(profiles);
    be.ops->destroy(be.state);
    g_free(cubin);
}

static const char stall_ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n"
                                ".visible .entry stall(.param .u32 ms)\n{\n    ret;\n}\n";

/* An event is stamped when its stream reached it, as the GPU stamps one: an event
 * recorded behind a 30 ms kernel reads 30 ms after the one before it, although the
 * scheduler took the kernel's completion only 150 ms later. */
/* The backend on the fake driver with cfg. */
static kbackend cuda_backend_of(const kcuda_config *cfg)
{
    kcuda *kc;
    kbackend be;
    kbackend_error ke = {0};
    if (kcuda_new(&kc, cfg, &ke))
        g_error("kcuda_new: %s", ke.msg);
    kcuda_backend(kc, &be);
    return be;
}

/* A scheduler of policy p on be, without profiles. */
static ksched *sched_policy_on(const kbackend *be, ksched_policy p)
{
    ksched_config sc;
    ksched_config_default(&sc);
    sc.policy = p;
    ksched *s;
    ksched_err e = {0};
    if (ksched_new(&s, be, &sc, NULL, &e))
        g_error("ksched_new: %s", e.msg);
    return s;
}

static void test_event_times(void)
{
    kcuda_config cfg;
    kcuda_config_default(&cfg);
    kbackend be = cuda_backend_of(&cfg);
    ksched *s = sched_policy_on(&be, KSCHED_FIFO);
    ksched_err e = {0};
    uint32_t t, module, fn, ev[2];
    ksched_function_info info;
    g_assert_cmpint(ksched_tenant_add(s, "events", NULL, &t, &e), ==, 0);
    g_assert_cmpint(ksched_module_load(s, t, stall_ptx, strlen(stall_ptx), &module, &e), ==, 0);
    g_assert_cmpint(ksched_function_get(s, t, module, "stall", &fn, &info, &e), ==, 0);
    for (int i = 0; i < 2; i++)
        g_assert_cmpint(ksched_event_create(s, t, &ev[i], &e), ==, 0);
    unsigned failed = 0;
    uint32_t ms = 30;
    ksched_op rec = {.kind = KSCHED_OP_EVENT_RECORD, .u.event = ev[0]};
    ksched_op launch = {.kind = KSCHED_OP_LAUNCH};
    launch.u.launch.function = fn;
    launch.u.launch.grid[0] = launch.u.launch.grid[1] = launch.u.launch.grid[2] = 1;
    launch.u.launch.block[0] = launch.u.launch.block[1] = launch.u.launch.block[2] = 1;
    launch.u.launch.params = &ms;
    launch.u.launch.params_size = sizeof(ms);
    submit(s, t, &rec, &failed);
    submit(s, t, &launch, &failed);
    rec.u.event = ev[1];
    submit(s, t, &rec, &failed);
    /* the kernel starts; its completion then waits, untaken, until the scheduler runs */
    g_assert_cmpint(ksched_run_until(s, ksched_now(s) + 5000000, &e), ==, 0);
    g_usleep(150000);
    g_assert_cmpint(ksched_run_until_idle(s, &e), ==, 0);
    g_assert_cmpuint(failed, ==, 0);
    uint64_t at[2];
    int done;
    for (int i = 0; i < 2; i++) {
        g_assert_cmpint(ksched_event_query(s, t, ev[i], &done, &at[i], &e), ==, 0);
        g_assert_true(done);
    }
    g_assert_cmpuint(at[1] - at[0], >=, 29000000);
    g_assert_cmpuint(at[1] - at[0], <, 100000000);
    ksched_free(s);
    be.ops->destroy(be.state);
}

/* Launches and allocations as the backend gets them, in real time (the scheduler's ops
 * wrapped). */
static struct {
    GMutex lock;
    GCond cond;
    const kbackend_ops *cuda;
    uint32_t domain;                /* whose launches are watched */
    int64_t first_launch;           /* of that domain since the watch began; 0: none */
    int64_t alloc_entered, alloc_returned;
    int64_t done_at[8];             /* completions, by the index the test gives them */
    unsigned n_done;
} w;

static kbackend_ops watched_ops;

static int watched_launch(void *state, const kbackend_slice *sl, kbackend_done_fn done,
                          void *user, kbackend_error *err)
{
    g_mutex_lock(&w.lock);
    if (sl->domain == w.domain && !w.first_launch)
        w.first_launch = g_get_monotonic_time();
    g_mutex_unlock(&w.lock);
    return w.cuda->launch(state, sl, done, user, err);
}

static int watched_alloc(void *state, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                         kbackend_error *err)
{
    g_mutex_lock(&w.lock);
    w.alloc_entered = g_get_monotonic_time();
    g_cond_broadcast(&w.cond);
    g_mutex_unlock(&w.lock);
    int rc = w.cuda->mem_alloc(state, domain, bytes, out, err);
    g_mutex_lock(&w.lock);
    w.alloc_returned = g_get_monotonic_time();
    g_mutex_unlock(&w.lock);
    return rc;
}

static void watched_done(void *user, const ksched_op_result *r)
{
    g_assert_cmpint(r->status, ==, 0);
    g_mutex_lock(&w.lock);
    w.done_at[GPOINTER_TO_UINT(user)] = g_get_monotonic_time();
    w.n_done++;
    g_cond_broadcast(&w.cond);
    g_mutex_unlock(&w.lock);
}

typedef struct slow_alloc {
    ksched *s;
    uint32_t tenant;
    kbackend_devptr p;
    int rc;
} slow_alloc;

static void *slow_alloc_main(void *arg)
{
    slow_alloc *a = arg;
    ksched_err e = {0};
    a->rc = ksched_mem_alloc(a->s, a->tenant, 4u << 20, &a->p, &e);
    return NULL;
}

/* Waits (w.lock held) until pred holds, failing after 10 s. */
#define WAIT_FOR(pred)                                                                    \
    do {                                                                                  \
        int64_t until_ = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;                    \
        while (!(pred))                                                                   \
            if (!g_cond_wait_until(&w.cond, &w.lock, until_))                             \
                g_error("timed out waiting for " #pred);                                  \
    } while (0)

/* Issue 15 on the cuda backend (the fake driver's cuMemMap made slow, a window's
 * allocation taking 0.3 s): while tenant a's allocation maps memory, tenant b's kernels are
 * launched and complete (the scheduler's lock is released), and a launch a submits
 * meanwhile reaches the backend only once the allocation has returned (a is paused: the
 * backend may reuse a hole of a's reach only while none of its kernels runs). */
static void test_alloc_unlocked(void)
{
    kcuda_config cfg;
    kcuda_config_default(&cfg);
    cfg.window_bytes = 64u << 20;
    kbackend be = cuda_backend_of(&cfg);
    w.cuda = be.ops;
    watched_ops = *be.ops;
    watched_ops.launch = watched_launch;
    watched_ops.mem_alloc = watched_alloc;
    kbackend watched = {&watched_ops, be.state};
    ksched *s = sched_policy_on(&watched, KSCHED_BASE);
    ksched_err e = {0};
    uint32_t t[2], fn[2], module;
    kbackend_window win;
    for (int i = 0; i < 2; i++) {
        g_assert_cmpint(ksched_tenant_add(s, i ? "b" : "a", NULL, &t[i], &e), ==, 0);
        g_assert_cmpint(ksched_module_load(s, t[i], stall_ptx, strlen(stall_ptx), &module, &e),
                        ==, 0);
        g_assert_cmpint(ksched_function_get(s, t[i], module, "stall", &fn[i], NULL, &e), ==, 0);
        g_assert_cmpint(ksched_tenant_window(s, t[i], &win, &e), ==, 0);
    }
    g_assert_cmpint(ksched_thread_start(s, &e), ==, 0);
    w.domain = t[0];
    w.first_launch = w.alloc_entered = w.alloc_returned = 0;
    w.n_done = 0;
    fake_vmm_map_delay(300000);
    slow_alloc a = {.s = s, .tenant = t[0], .rc = -1};
    pthread_t thread;
    g_assert_cmpint(pthread_create(&thread, NULL, slow_alloc_main, &a), ==, 0);
    g_mutex_lock(&w.lock);
    WAIT_FOR(w.alloc_entered);
    g_mutex_unlock(&w.lock);
    g_usleep(20000);                /* in the driver's cuMemMap */
    uint32_t ms = 5;
    ksched_op op = {.kind = KSCHED_OP_LAUNCH};
    op.u.launch.grid[0] = op.u.launch.grid[1] = op.u.launch.grid[2] = 1;
    op.u.launch.block[0] = op.u.launch.block[1] = op.u.launch.block[2] = 1;
    op.u.launch.params = &ms;
    op.u.launch.params_size = sizeof(ms);
    op.u.launch.function = fn[0];
    g_assert_cmpint(ksched_submit(s, t[0], 0, &op, watched_done, GUINT_TO_POINTER(0), NULL, &e),
                    ==, 0);
    op.u.launch.function = fn[1];
    for (unsigned i = 1; i <= 3; i++)
        g_assert_cmpint(ksched_submit(s, t[1], 0, &op, watched_done, GUINT_TO_POINTER(i), NULL,
                                      &e), ==, 0);
    g_mutex_lock(&w.lock);
    WAIT_FOR(w.n_done == 4);
    g_mutex_unlock(&w.lock);
    pthread_join(thread, NULL);
    fake_vmm_map_delay(0);
    g_assert_cmpint(a.rc, ==, 0);
    int64_t took = w.alloc_returned - w.alloc_entered;
    g_test_message("the allocation took %.0f ms; b's kernels completed %.0f ms into it, a's "
                   "launch went %.1f ms after it", took / 1e3,
                   (w.done_at[3] - w.alloc_entered) / 1e3,
                   (w.first_launch - w.alloc_returned) / 1e3);
    g_assert_cmpint(took, >=, 250000);
    for (unsigned i = 1; i <= 3; i++)
        g_assert_cmpint(w.done_at[i], <, w.alloc_returned);
    g_assert_cmpint(w.first_launch, >=, w.alloc_returned);
    g_assert_cmpint(w.done_at[0], >, w.alloc_returned);
    g_assert_cmpint(ksched_mem_free(s, t[0], a.p, &e), ==, 0);
    ksched_free(s);
    be.ops->destroy(be.state);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/sched-fake/two-tenants-sliced", test_two_tenants_sliced);
    g_test_add_func("/cuda/sched-fake/module-variables-per-tenant",
                    test_module_variables_per_tenant);
    g_test_add_func("/cuda/sched-fake/context-windows", test_context_windows);
    g_test_add_func("/cuda/sched-fake/cubin-runs-whole", test_cubin_runs_whole);
    g_test_add_func("/cuda/sched-fake/event-times", test_event_times);
    g_test_add_func("/cuda/sched-fake/alloc-unlocked", test_alloc_unlocked);
    return g_test_run();
}
