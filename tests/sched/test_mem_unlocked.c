/* A tenant's allocation in the backend does not hold up the other tenants (issue 15): with a
 * backend that allows it (kbackend_device_info.mem_unlocked), ksched_mem_alloc releases
 * the scheduler's lock while the backend allocates and pauses the allocating tenant.
 *
 * The backend here is the sim with its memory calls replaced: allocations take fake
 * addresses of the test's own (the sim is not called outside the scheduler's lock) and, when
 * the gate is armed, wait in the backend until the test opens it (or a timeout passes: a
 * scheduler that keeps its lock across the call would otherwise never let the test open
 * it). Launches and memsets are recorded in one order with the allocations' entry and
 * return and with the completions the test sees. */
#include <pthread.h>

#include "../test_gate.h"
#include "sched_test.h"

#define GATE_TIMEOUT_US 2000000     /* how long an armed allocation waits at most */
#define MAX_DOMAIN 8
#define FAKE_BASE (1ull << 44)      /* fake memory: domain << 36 above it */

static struct {
    struct test_gate gate;          /* allocations wait there (armed); its lock is g's */
    const kbackend_ops *sim;
    int fail_next;                  /* the next allocation fails (KBACKEND_EDEVMEM) */
    uint64_t next[MAX_DOMAIN];      /* each domain's fake memory, bumped */
    unsigned live;                  /* fake allocations not freed */
    uint64_t seq;                   /* the order of everything recorded */
    uint64_t entered_at, returned_at;   /* of the last allocation */
    int gate_frees;                 /* the armed gate holds frees, not allocations */
    uint64_t free_entered_at, free_returned_at;   /* of the last free held there */
    unsigned started[MAX_DOMAIN];   /* launches and memsets handed to the backend */
    uint64_t last_start[MAX_DOMAIN], first_start[MAX_DOMAIN];
} g;

static kbackend_ops gated_ops;

static uint64_t tick_locked(void)
{
    return ++g.seq;
}

static uint64_t tick(void)
{
    g_mutex_lock(&g.gate.lock);
    uint64_t t = tick_locked();
    g_mutex_unlock(&g.gate.lock);
    return t;
}

static void note_start(uint32_t domain)
{
    g_assert_cmpuint(domain, <, MAX_DOMAIN);
    g_mutex_lock(&g.gate.lock);
    uint64_t t = tick_locked();
    if (!g.started[domain]++)
        g.first_start[domain] = t;
    g.last_start[domain] = t;
    g_mutex_unlock(&g.gate.lock);
}

static int gated_info(void *state, kbackend_device_info *out, kbackend_error *err)
{
    int rc = g.sim->device_info(state, out, err);
    out->mem_unlocked = 1;
    return rc;
}

static int gated_alloc(void *state, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                       kbackend_error *err)
{
    (void)state;
    g_assert_cmpuint(domain, <, MAX_DOMAIN);
    g_mutex_lock(&g.gate.lock);
    if (g.gate.armed && !g.gate_frees) {
        g.entered_at = tick_locked();
        tgate_pass(&g.gate, GATE_TIMEOUT_US);
    }
    int rc = 0;
    if (g.fail_next) {
        g.fail_next = 0;
        rc = kbackend_fail(err, KBACKEND_EDEVMEM, "out of device memory (the test's)");
    } else {
        *out = FAKE_BASE + ((uint64_t)domain << 36) + g.next[domain];
        g.next[domain] += (bytes + 255) / 256 * 256;
        g.live++;
    }
    g.returned_at = tick_locked();
    g_mutex_unlock(&g.gate.lock);
    return rc;
}

static int gated_free(void *state, kbackend_devptr ptr, kbackend_error *err)
{
    (void)state;
    if (ptr < FAKE_BASE)
        return kbackend_fail(err, KBACKEND_EINVAL, "not the test's memory");
    g_mutex_lock(&g.gate.lock);
    if (g.gate.armed && g.gate_frees) {
        g.free_entered_at = tick_locked();
        tgate_pass(&g.gate, GATE_TIMEOUT_US);
        g.free_returned_at = tick_locked();
    }
    g_assert_cmpuint(g.live, >, 0);
    g.live--;
    g_mutex_unlock(&g.gate.lock);
    return 0;
}

static int gated_launch(void *state, const kbackend_slice *s, kbackend_done_fn done, void *user,
                        kbackend_error *err)
{
    note_start(s->domain);
    return g.sim->launch(state, s, done, user, err);
}

/* Memsets of the fake memory complete at once (the sim has no such memory). */
static int gated_memset(void *state, kbackend_devptr dst, uint8_t value, uint64_t bytes,
                        kbackend_done_fn done, void *user, kbackend_error *err)
{
    (void)value;
    (void)bytes;
    (void)err;
    note_start((uint32_t)((dst - FAKE_BASE) >> 36));
    uint64_t now = g.sim->now_ns(state);
    kbackend_completion c = {.status = 0, .start_ns = now, .end_ns = now};
    done(user, &c);
    return 0;
}

/* A sim whose memory is the test's, and a scheduler of policy p on it. */
static tenv *gated_env(ksched_policy p)
{
    memset(g.next, 0, sizeof(g.next));
    g.gate.armed = g.gate.open = g.gate.timed_out = g.fail_next = g.gate_frees = 0;
    g.gate.entered = g.live = 0;
    memset(g.started, 0, sizeof(g.started));
    tenv *t = g_new0(tenv, 1);
    ksched_err e = {0};
    if (ksim_new(&t->sim, NULL, &e))
        g_error("ksim_new: %s", e.msg);
    ksim_backend(t->sim, &t->be);
    g.sim = t->be.ops;
    gated_ops = *g.sim;
    gated_ops.device_info = gated_info;
    gated_ops.mem_alloc = gated_alloc;
    gated_ops.mem_free = gated_free;
    gated_ops.memset_d8 = gated_memset;
    gated_ops.launch = gated_launch;
    t->be.ops = &gated_ops;
    tenv_standard_kernels(t);
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    c.lone_slice_ns = 0;            /* a lone kernel in minimum slices: many decisions */
    if (ksched_new(&t->s, &t->be, &c, NULL, &e))
        g_error("ksched_new: %s", e.msg);
    return t;
}

typedef struct alloc_call {
    ksched *s;
    uint32_t tenant;
    uint64_t bytes;
    kbackend_devptr p;
    int rc;
    uint64_t returned;              /* when ksched_mem_alloc returned, in the test's order */
    pthread_t thread;
} alloc_call;

static void *alloc_main(void *arg)
{
    alloc_call *a = arg;
    ksched_err e = {0};
    a->rc = ksched_mem_alloc(a->s, a->tenant, a->bytes, &a->p, &e);
    a->returned = tick();
    return NULL;
}

static void alloc_start(alloc_call *a, ksched *s, uint32_t tenant, uint64_t bytes)
{
    *a = (alloc_call){.s = s, .tenant = tenant, .bytes = bytes, .rc = -1};
    g_assert_cmpint(pthread_create(&a->thread, NULL, alloc_main, a), ==, 0);
}

/* A completion, stamped in the test's order. */
typedef struct stamp {
    int status;
    uint64_t at;
} stamp;

static void stamp_done(void *user, const ksched_op_result *r)
{
    stamp *x = user;
    x->status = r->status;
    x->at = tick();
}

static const char *const ENTRIES[] = {"comp", "mem"};

/* Tenants a (kernel comp, fa) and b (kernel mem, fb). */
static void two_tenants(tenv *t, uint32_t *a, uint32_t *b, uint32_t *fa, uint32_t *fb)
{
    *a = tenv_tenant(t, "a");
    *b = tenv_tenant(t, "b");
    tenv_functions(t, *a, ENTRIES, 1, 1, fa);
    tenv_functions(t, *b, ENTRIES + 1, 1, 1, fb);
}

/* While tenant a's allocation is in the backend, tenant b's kernels are decided, run and
 * completed: b's completion comes before the allocation returns. Held by the scheduler's
 * lock, b's submission would wait until the gate's timeout let the allocation go. */
static void test_others_go_on(gconstpointer data)
{
    tenv *t = gated_env(GPOINTER_TO_INT(data));
    uint32_t a, b, fa, fb;
    two_tenants(t, &a, &b, &fa, &fb);
    tgate_arm(&g.gate);
    alloc_call call;
    alloc_start(&call, t->s, a, 1u << 30);
    tgate_wait_entered(&g.gate, 1);
    stamp done[3] = {{-1, 0}, {-1, 0}, {-1, 0}};
    ksched_op op = launch_op(fb, 264 * 4, 1, 256);
    for (int i = 0; i < 3; i++)
        tenv_submit(t, b, 0, &op, stamp_done, &done[i]);
    tenv_run(t);
    ksched_stats st;
    ksched_get_stats(t->s, &st);
    tgate_open(&g.gate);
    pthread_join(call.thread, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpint(call.rc, ==, 0);
    g_assert_cmpuint(st.decisions, >, 0);
    for (int i = 0; i < 3; i++) {
        g_assert_cmpint(done[i].status, ==, 0);
        g_assert_cmpuint(done[i].at, >, g.entered_at);
        g_assert_cmpuint(done[i].at, <, g.returned_at);     /* during the allocation */
    }
    ksched_tenant_stats ts;
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &ts, NULL), ==, 0);
    g_assert_cmpuint(ts.mem_in_use, ==, 1u << 30);
    g_assert_cmpint(ksched_mem_free(t->s, a, call.p, NULL), ==, 0);
    g_assert_cmpuint(g.live, ==, 0);
    tenv_free(t);
}

/* Nothing of the allocating tenant starts while its allocation is in the backend (the cuda
 * backend reuses a hole of the window's reach only while none of the tenant's kernels is on
 * the device): not the rest of a kernel it had running when the allocation began (under
 * kernelet, which slices it: its plan is decided anew; base ran it whole), not a launch or
 * memset it submitted meanwhile. All of it runs once the allocation has returned, every
 * block once. Tenant b runs meanwhile. */
static void test_tenant_paused(gconstpointer data)
{
    ksched_policy p = GPOINTER_TO_INT(data);
    int sliced = p == KSCHED_KERNELET;
    tenv *t = gated_env(p);
    uint32_t a, b, fa, fb;
    two_tenants(t, &a, &b, &fa, &fb);
    kbackend_devptr mem;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 4096, &mem, NULL), ==, 0);
    /* a's long kernel, part of it handed out */
    stamp first = {-1, 0}, later = {-1, 0}, set = {-1, 0}, other = {-1, 0};
    ksched_op big = launch_op(fa, 264 * 400, 1, 256);
    uint64_t big_id = tenv_submit(t, a, 0, &big, stamp_done, &first);
    ksched_err e = {0};
    g_assert_cmpint(ksched_run_until(t->s, ksched_now(t->s) + 200000, &e), ==, 0);
    g_assert_cmpint(first.status, ==, -1);
    g_assert_cmpuint(g.started[a], >, 0);
    tgate_arm(&g.gate);
    alloc_call call;
    alloc_start(&call, t->s, a, 1u << 20);
    tgate_wait_entered(&g.gate, 1);
    uint64_t paused_at = g.entered_at;
    tenv_run(t);                    /* a's slices in flight end, and no more go out */
    g_assert_cmpuint(g.last_start[a], <, paused_at);
    ksched_op small = launch_op(fa, 264, 1, 256);
    uint64_t small_id = tenv_submit(t, a, 0, &small, stamp_done, &later);
    uint32_t st = tenv_stream(t, a);
    ksched_op ms = {.kind = KSCHED_OP_MEMSET, .u.memset = {.dst = mem, .value = 1, .bytes = 4096}};
    tenv_submit(t, a, st, &ms, stamp_done, &set);
    ksched_op ob = launch_op(fb, 264, 1, 256);
    tenv_submit(t, b, 0, &ob, stamp_done, &other);
    tenv_run(t);                    /* b completes, nothing of a starts */
    g_assert_cmpint(other.status, ==, 0);
    g_assert_cmpint(first.status, ==, sliced ? -1 : 0);
    g_assert_cmpint(later.status, ==, -1);
    g_assert_cmpint(set.status, ==, -1);
    g_assert_cmpuint(g.last_start[a], <, paused_at);
    tgate_open(&g.gate);
    pthread_join(call.thread, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpint(call.rc, ==, 0);
    unsigned before = g.started[a];
    tenv_run(t);
    g_assert_cmpint(first.status, ==, 0);
    g_assert_cmpint(later.status, ==, 0);
    g_assert_cmpint(set.status, ==, 0);
    g_assert_cmpuint(g.started[a], >, before + 1);
    if (sliced)
        g_assert_cmpuint(first.at, >, g.returned_at);
    assert_blocks_once(t, big_id, 264 * 400);
    assert_blocks_once(t, small_id, 264);
    tenv_free(t);
}

/* The quota is charged before the backend is called: of two allocations of one tenant that
 * race near its quota only one gets in (the second is refused at once, while the first is
 * still in the backend), and an allocation the backend refuses gives its bytes back. */
static void test_quota_exact(void)
{
    tenv *t = gated_env(KSCHED_KERNELET);
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    pol.mem_quota = 3u << 20;
    uint32_t a, b = tenv_tenant(t, "b");
    ksched_err e = {0};
    g_assert_cmpint(ksched_tenant_add(t->s, "a", &pol, &a, &e), ==, 0);
    kbackend_devptr p0, p1;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 2u << 20, &p0, &e), ==, 0);
    tgate_arm(&g.gate);
    alloc_call first, other;
    alloc_start(&first, t->s, a, 1u << 20);
    tgate_wait_entered(&g.gate, 1);
    alloc_start(&other, t->s, b, 5u << 20);     /* another tenant's, beside it */
    tgate_wait_entered(&g.gate, 2);
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 1u << 20, &p1, &e), ==, KSCHED_EQUOTA);
    ksched_tenant_stats ts;
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &ts, NULL), ==, 0);
    g_assert_cmpuint(ts.mem_in_use, ==, 3u << 20);  /* the one in the backend counts */
    tgate_open(&g.gate);
    pthread_join(first.thread, NULL);
    pthread_join(other.thread, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpint(first.rc, ==, 0);
    g_assert_cmpint(other.rc, ==, 0);
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &ts, NULL), ==, 0);
    g_assert_cmpuint(ts.mem_in_use, ==, 3u << 20);
    g_assert_cmpint(ksched_tenant_get_stats(t->s, b, &ts, NULL), ==, 0);
    g_assert_cmpuint(ts.mem_in_use, ==, 5u << 20);
    /* refused by the backend: the charge goes back */
    g_assert_cmpint(ksched_mem_free(t->s, a, first.p, &e), ==, 0);
    g.fail_next = 1;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 1u << 20, &p1, &e), ==, KSCHED_EBACKEND);
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &ts, NULL), ==, 0);
    g_assert_cmpuint(ts.mem_in_use, ==, 2u << 20);
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 1u << 20, &p1, &e), ==, 0);
    g_assert_cmpint(ksched_mem_free(t->s, a, p1, &e), ==, 0);
    g_assert_cmpint(ksched_mem_free(t->s, a, p0, &e), ==, 0);
    g_assert_cmpint(ksched_mem_free(t->s, b, other.p, &e), ==, 0);
    g_assert_cmpuint(g.live, ==, 0);
    tenv_free(t);
}

/* A tenant removed while its allocation is in the backend: its queued work is canceled,
 * the tenant stays until the allocation is back (which then fails with KSCHED_ESTATE), and
 * then goes with all its memory, the new allocation's included. Run under the sanitizer
 * build, a tenant freed under the allocating thread would be a use after free. */
static void test_removed_while_allocating(void)
{
    tenv *t = gated_env(KSCHED_KERNELET);
    uint32_t a, b, fa, fb;
    two_tenants(t, &a, &b, &fa, &fb);
    kbackend_devptr mem;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 4096, &mem, NULL), ==, 0);
    tgate_arm(&g.gate);
    alloc_call call;
    alloc_start(&call, t->s, a, 1u << 20);
    tgate_wait_entered(&g.gate, 1);
    stamp queued = {-1, 0}, other = {-1, 0};
    ksched_op op = launch_op(fa, 264, 1, 256);
    tenv_submit(t, a, 0, &op, stamp_done, &queued);
    ksched_err e = {0};
    g_assert_cmpint(ksched_tenant_remove(t->s, a, &e), ==, 0);
    ksched_op ob = launch_op(fb, 264, 1, 256);
    tenv_submit(t, b, 0, &ob, stamp_done, &other);
    tenv_run(t);
    g_assert_cmpint(queued.status, ==, KSCHED_ECANCELED);
    g_assert_cmpint(other.status, ==, 0);
    size_t n;
    uint32_t ids[4];
    g_assert_cmpint(ksched_tenant_list(t->s, ids, 4, &n), ==, 0);
    g_assert_cmpuint(n, ==, 2);     /* a stays while its allocation is in the backend */
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 4096, &mem, &e), ==, KSCHED_ESTATE);
    tgate_open(&g.gate);
    pthread_join(call.thread, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpint(call.rc, ==, KSCHED_ESTATE);
    tenv_run(t);
    g_assert_cmpint(ksched_tenant_list(t->s, ids, 4, &n), ==, 0);
    g_assert_cmpuint(n, ==, 1);
    g_assert_cmpuint(ids[0], ==, b);
    ksched_wait_reaped(t->s);
    g_assert_cmpuint(g.live, ==, 0);    /* both of a's allocations went with it */
    ksched_tenant_stats ts;
    g_assert_cmpint(ksched_tenant_get_stats(t->s, a, &ts, &e), ==, KSCHED_ENOTFOUND);
    tenv_free(t);
}

/* A removed tenant's memory is freed without the scheduler's lock (the reaper): while
 * its free is in the backend, another tenant's kernels are decided, run and completed.
 * Freed in the reap, with the lock held, they would wait for the gate's timeout. */
static void test_removed_memory_apart(void)
{
    tenv *t = gated_env(KSCHED_KERNELET);
    uint32_t a, b, fa, fb;
    two_tenants(t, &a, &b, &fa, &fb);
    kbackend_devptr mem;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 1u << 30, &mem, NULL), ==, 0);
    g.gate_frees = 1;
    tgate_arm(&g.gate);
    g_assert_cmpint(ksched_tenant_remove(t->s, a, NULL), ==, 0);
    tenv_run(t);                    /* a is reaped: its free goes to the reaper */
    tgate_wait_entered(&g.gate, 1);
    stamp done[3] = {{-1, 0}, {-1, 0}, {-1, 0}};
    ksched_op op = launch_op(fb, 264 * 4, 1, 256);
    for (int i = 0; i < 3; i++)
        tenv_submit(t, b, 0, &op, stamp_done, &done[i]);
    tenv_run(t);
    tgate_open(&g.gate);
    ksched_wait_reaped(t->s);
    g_assert_false(tgate_timed_out(&g.gate));
    for (int i = 0; i < 3; i++) {
        g_assert_cmpint(done[i].status, ==, 0);
        g_assert_cmpuint(done[i].at, >, g.free_entered_at);
        g_assert_cmpuint(done[i].at, <, g.free_returned_at);    /* during the free */
    }
    g_assert_cmpuint(g.live, ==, 0);
    size_t n;
    uint32_t ids[4];
    g_assert_cmpint(ksched_tenant_list(t->s, ids, 4, &n), ==, 0);
    g_assert_cmpuint(n, ==, 1);
    tenv_free(t);
}

/* ksched_free waits for the reaper's frees: none is lost, none runs after it. */
static void test_free_waits_for_reaper(void)
{
    tenv *t = gated_env(KSCHED_BASE);
    uint32_t a, b, fa, fb;
    two_tenants(t, &a, &b, &fa, &fb);
    kbackend_devptr mem;
    for (int i = 0; i < 3; i++)
        g_assert_cmpint(ksched_mem_alloc(t->s, a, 4096, &mem, NULL), ==, 0);
    g_assert_cmpint(ksched_tenant_remove(t->s, a, NULL), ==, 0);
    tenv_run(t);
    tenv_free(t);
    g_assert_cmpuint(g.live, ==, 0);
}

typedef struct free_call {
    ksched *s;
    uint64_t returned;
} free_call;

static void *free_main(void *arg)
{
    free_call *f = arg;
    ksched_free(f->s);
    f->returned = tick();
    return NULL;
}

/* Stopping the dispatcher thread during an allocation does not wait for it; freeing the
 * scheduler waits until the allocation is back with its tenant (then frees it too). */
static void test_stop_while_allocating(void)
{
    tenv *t = gated_env(KSCHED_KERNELET);
    uint32_t a = tenv_tenant(t, "a");
    ksched_err e = {0};
    g_assert_cmpint(ksched_thread_start(t->s, &e), ==, 0);
    tgate_arm(&g.gate);
    alloc_call call;
    alloc_start(&call, t->s, a, 1u << 20);
    tgate_wait_entered(&g.gate, 1);
    ksched_thread_stop(t->s);
    g_assert_cmpuint(call.returned, ==, 0);    /* stopped while the allocation is out */
    free_call f = {.s = t->s};
    pthread_t ft;
    g_assert_cmpint(pthread_create(&ft, NULL, free_main, &f), ==, 0);
    g_usleep(50000);
    g_assert_cmpuint(f.returned, ==, 0);    /* waits for the allocation */
    tgate_open(&g.gate);
    pthread_join(call.thread, NULL);
    pthread_join(ft, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpint(call.rc, ==, 0);
    g_assert_cmpuint(f.returned, >, g.returned_at);
    g_assert_cmpuint(g.live, ==, 0);
    t->s = NULL;
    tenv_free(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_data_func("/mem-unlocked/others-go-on/kernelet", GINT_TO_POINTER(KSCHED_KERNELET),
                         test_others_go_on);
    g_test_add_data_func("/mem-unlocked/others-go-on/fifo", GINT_TO_POINTER(KSCHED_FIFO),
                         test_others_go_on);
    g_test_add_data_func("/mem-unlocked/tenant-paused/kernelet",
                         GINT_TO_POINTER(KSCHED_KERNELET), test_tenant_paused);
    g_test_add_data_func("/mem-unlocked/tenant-paused/base", GINT_TO_POINTER(KSCHED_BASE),
                         test_tenant_paused);
    g_test_add_func("/mem-unlocked/quota-exact", test_quota_exact);
    g_test_add_func("/mem-unlocked/removed-while-allocating", test_removed_while_allocating);
    g_test_add_func("/mem-unlocked/removed-memory-apart", test_removed_memory_apart);
    g_test_add_func("/mem-unlocked/free-waits-for-reaper", test_free_waits_for_reaper);
    g_test_add_func("/mem-unlocked/stop-while-allocating", test_stop_while_allocating);
    return g_test_run();
}
