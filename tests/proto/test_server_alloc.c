/* A tenant's allocation, or its free once its work has drained, does not stall the
 * protocol server (issue 15): it runs off the event loop (host-sched/server/
 * server_call.c), so other connections are served while it is in the backend, and the
 * connection's later requests are answered after it, in order. A tenant that hangs up, or
 * a server stopped, during one leaks nothing (the 'san' suite runs this under ASan and
 * UBSan too).
 *
 * The backend is the sim with its memory calls replaced (as in tests/sched/
 * test_mem_unlocked.c; the gate of tests/test_gate.h): allocations take fake addresses of
 * the test's, and one of SLOW_BYTES, or the free of an address the test chose, while the
 * gate is armed, waits in the backend until the test opens the gate (or GATE_TIMEOUT_US
 * passes: a server that calls the backend on its event loop would otherwise never let the
 * test go on). The device says mem_unlocked, so the scheduler's lock is not held across
 * the call either. */
#include <glib.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../test_gate.h"
#include "server_harness.h"

#define SLOW_BYTES (64ull << 20)
#define GATE_TIMEOUT_US 3000000
#define MAX_DOMAIN 64
#define FAKE_BASE (1ull << 44)
#define ANSWER_MS 2000          /* an answer that does not need the allocation comes by then */

#define MAX_GATED 4

static struct {
    struct test_gate gate;      /* slow allocations and gated frees wait there (armed); its
                                   lock is g's */
    const kbackend_ops *sim;
    uint64_t next;              /* fake memory, bumped */
    unsigned live;              /* fake allocations not freed */
    uint64_t gated[MAX_GATED];  /* frees of these wait at the gate too (armed) */
    unsigned n_gated;
    uint64_t fail_free;         /* the backend refuses to free it */
} g;

static kbackend_ops gated_ops;

static int gated_info(void *state, kbackend_device_info *out, kbackend_error *err)
{
    int rc = g.sim->device_info(state, out, err);
    out->mem_unlocked = 1;
    return rc;
}

/* A small number for a scheduler domain: a tenant's id (its context 0), or a client
 * context's domain, numbered from 0x80000000 on (host-sched/sched/sched_domain.c). */
static uint64_t domain_slot(uint32_t domain)
{
    uint64_t slot = domain >= 0x80000000u ? MAX_DOMAIN / 2 + (domain - 0x80000000u) : domain;

    g_assert_cmpuint(slot, <, MAX_DOMAIN);
    return slot;
}

static int gated_alloc(void *state, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                       kbackend_error *err)
{
    (void)state;
    (void)err;
    uint64_t slot = domain_slot(domain);
    g_mutex_lock(&g.gate.lock);
    if (g.gate.armed && bytes == SLOW_BYTES)
        tgate_pass(&g.gate, GATE_TIMEOUT_US);
    *out = FAKE_BASE + (slot << 36) + g.next;
    g.next += (bytes + 255) / 256 * 256;
    g.live++;
    g_mutex_unlock(&g.gate.lock);
    return 0;
}

static int gated_free(void *state, kbackend_devptr ptr, kbackend_error *err)
{
    (void)state;
    if (ptr < FAKE_BASE)
        return kbackend_fail(err, KBACKEND_EINVAL, "not the test's memory");
    g_mutex_lock(&g.gate.lock);
    for (unsigned i = 0; g.gate.armed && i < g.n_gated; i++)
        if (g.gated[i] == ptr) {
            tgate_pass(&g.gate, GATE_TIMEOUT_US);
            break;
        }
    if (ptr == g.fail_free) {
        g_mutex_unlock(&g.gate.lock);
        return kbackend_fail(err, KBACKEND_EINVAL, "the test refuses to free it");
    }
    g_assert_cmpuint(g.live, >, 0);
    g.live--;
    g_mutex_unlock(&g.gate.lock);
    return 0;
}

/* Memsets of the fake memory complete at once (the sim has no such memory). */
static int gated_memset(void *state, kbackend_devptr dst, uint8_t value, uint64_t bytes,
                        kbackend_done_fn done, void *user, kbackend_error *err)
{
    (void)dst;
    (void)value;
    (void)bytes;
    (void)err;
    uint64_t now = g.sim->now_ns(state);
    kbackend_completion c = {.status = 0, .start_ns = now, .end_ns = now};
    done(user, &c);
    return 0;
}

static void wrap(kbackend *b)
{
    g.sim = b->ops;
    gated_ops = *b->ops;
    gated_ops.device_info = gated_info;
    gated_ops.mem_alloc = gated_alloc;
    gated_ops.mem_free = gated_free;
    gated_ops.memset_d8 = gated_memset;
    b->ops = &gated_ops;
}

static struct harness *start(void)
{
    g_mutex_lock(&g.gate.lock);
    g.gate.armed = g.gate.open = g.gate.timed_out = 0;
    g.gate.entered = g.live = g.n_gated = 0;
    g.fail_free = 0;
    g_mutex_unlock(&g.gate.lock);
    return harness_start_wrapped(wrap);
}

/* start, with tenant a connected (and b, unless NULL) */
static struct harness *start_with(struct client *a, struct client *b)
{
    struct harness *h = start();
    g_assert_true(client_open(a, h, "a", false));
    if (b)
        g_assert_true(client_open(b, h, "b", false));
    return h;
}

/* Arms the gate for the free of p too (with those armed since start). */
static void gate_arm_free(uint64_t p)
{
    g_mutex_lock(&g.gate.lock);
    g.gate.armed = 1;
    g.gate.open = 0;
    g_assert_cmpuint(g.n_gated, <, MAX_GATED);
    g.gated[g.n_gated++] = p;
    g_mutex_unlock(&g.gate.lock);
}

static unsigned gate_entered(void)
{
    g_mutex_lock(&g.gate.lock);
    unsigned n = g.gate.entered;
    g_mutex_unlock(&g.gate.lock);
    return n;
}

static unsigned live(void)
{
    g_mutex_lock(&g.gate.lock);
    unsigned n = g.live;
    g_mutex_unlock(&g.gate.lock);
    return n;
}

/* CPU time of the process (every thread) so far. */
static uint64_t cpu_us(void)
{
    struct rusage u;
    g_assert_cmpint(getrusage(RUSAGE_SELF, &u), ==, 0);
    return (uint64_t)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/* Sends op and asserts that it is answered while the gate is still closed. */
static int call_during(struct client *c, uint16_t op, const void *payload, size_t n)
{
    uint64_t id = client_send(c, op, payload, n, -1);
    g_assert_cmpuint(id, !=, 0);
    g_assert_true(client_answer_waiting(c, ANSWER_MS));
    g_assert_false(tgate_timed_out(&g.gate));
    return client_recv(c, op, id);
}

static uint64_t send_alloc(struct client *c, uint64_t bytes)
{
    struct kernelet_mem_alloc q = {.size = bytes};
    uint64_t id = client_send(c, KERNELET_OP_MEM_ALLOC, &q, sizeof(q), -1);
    g_assert_cmpuint(id, !=, 0);
    return id;
}

static uint64_t recv_alloc(struct client *c, uint64_t id)
{
    struct kernelet_mem_ptr p;
    g_assert_cmpint(client_recv(c, KERNELET_OP_MEM_ALLOC, id), ==, KERNELET_ST_OK);
    g_assert_cmpuint(c->answer_len, ==, sizeof(p));
    memcpy(&p, c->answer, sizeof(p));
    g_assert_cmpuint(p.dptr, !=, 0);
    return p.dptr;
}

/* The test PTX's k_add on c (its module loaded): the function's handle. */
static uint64_t k_add_of(struct client *c)
{
    struct kernelet_function f;
    struct kernelet_param params[8];
    uint64_t fn = client_function(c, client_module_ptx(c, harness_ptx), "k_add", &f, params);
    g_assert_cmpuint(fn, !=, 0);
    return fn;
}

/* Three launches of k_add on the 1024 words at p (complete: answered once they ran). */
static void launch_on(struct client *c, uint64_t fn, uint64_t p, bool complete)
{
    struct {
        uint64_t p;
        uint32_t n, v;
    } args = {p, 1024, 1};
    g_assert_cmpint(client_launches(c, fn, &args, sizeof(args), 3, 128, complete), ==,
                    KERNELET_ST_OK);
}

/* While the gate is closed, b's synchronisation, launches of fn on bp (waited for), an
 * allocation, its free and a memory query are answered. */
static void others_served(struct client *b, uint64_t fn, uint64_t bp)
{
    g_assert_cmpint(call_during(b, KERNELET_OP_CTX_SYNC, NULL, 0), ==, KERNELET_ST_OK);
    launch_on(b, fn, bp, true);
    g_assert_false(tgate_timed_out(&g.gate));
    struct kernelet_mem_alloc q = {.size = 8192};
    g_assert_cmpint(call_during(b, KERNELET_OP_MEM_ALLOC, &q, sizeof(q)), ==, KERNELET_ST_OK);
    struct kernelet_mem_ptr bq;
    memcpy(&bq, b->answer, sizeof(bq));
    g_assert_cmpint(call_during(b, KERNELET_OP_MEM_FREE, &bq, sizeof(bq)), ==, KERNELET_ST_OK);
    g_assert_cmpint(call_during(b, KERNELET_OP_MEM_GET_INFO, NULL, 0), ==, KERNELET_ST_OK);
}

/* Waits (5 s at most) until n fake allocations are live, and asserts it. */
static void wait_live(unsigned n)
{
    int64_t until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (live() != n && g_get_monotonic_time() < until)
        usleep(10000);
    g_assert_cmpuint(live(), ==, n);
}

/* A hang-up that reached the server while the gate is closed: it closes the connection
 * (reading nothing more of it, the loop would be told of the hang-up at every turn, and
 * spin), so b is answered and the loop is idle. */
static void hang_up_closed(struct client *b)
{
    g_assert_cmpint(call_during(b, KERNELET_OP_CTX_SYNC, NULL, 0), ==, KERNELET_ST_OK);
    uint64_t cpu = cpu_us();
    usleep(200000);
    g_test_message("%llu us of CPU in 200 ms after the hang-up",
                   (unsigned long long)(cpu_us() - cpu));
    g_assert_cmpuint(cpu_us() - cpu, <, 50000);
    g_assert_cmpint(call_during(b, KERNELET_OP_MEM_GET_INFO, NULL, 0), ==, KERNELET_ST_OK);
}

/* While tenant a's allocation is in the backend, tenant b's synchronisation, launches
 * (waited for), allocation, free and memory query are answered, and tenant c's slow allocation
 * reaches the backend too (one call per tenant at once). */
static void test_others_served(void)
{
    struct client a, b, c;
    struct harness *h = start_with(&a, &b);
    g_assert_true(client_open(&c, h, "c", false));
    uint64_t bp = client_alloc(&b, 4096);
    uint64_t fn = k_add_of(&b);

    tgate_arm(&g.gate);
    uint64_t aid = send_alloc(&a, SLOW_BYTES);
    tgate_wait_entered(&g.gate, 1);

    others_served(&b, fn, bp);
    uint64_t cid = send_alloc(&c, SLOW_BYTES);
    tgate_wait_entered(&g.gate, 2);
    g_assert_false(client_answer_waiting(&a, 0));
    g_assert_false(client_answer_waiting(&c, 0));

    tgate_open(&g.gate);
    uint64_t ap = recv_alloc(&a, aid), cp = recv_alloc(&c, cid);
    g_assert_cmpuint(ap, !=, cp);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpint(client_free(&a, ap), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_free(&c, cp), ==, KERNELET_ST_OK);
    client_close(&a);
    client_close(&b);
    client_close(&c);
    harness_stop(h);
    g_assert_cmpuint(live(), ==, 0);
}

/* The allocating connection's later requests wait for its allocation and are answered
 * after it, in order; the memory query sees the allocation. */
static void test_own_requests_after(void)
{
    struct client a;
    struct harness *h = start_with(&a, NULL);
    g_assert_cmpint(client_call(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1), ==, KERNELET_ST_OK);
    struct kernelet_mem_info before, after;
    memcpy(&before, a.answer, sizeof(before));

    tgate_arm(&g.gate);
    uint64_t aid = send_alloc(&a, SLOW_BYTES);
    tgate_wait_entered(&g.gate, 1);
    uint64_t info = client_send(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1);
    uint64_t sync = client_send(&a, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    uint64_t small = send_alloc(&a, 4096);
    g_assert_false(client_answer_waiting(&a, 300));

    tgate_open(&g.gate);
    uint64_t ap = recv_alloc(&a, aid);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_MEM_GET_INFO, info), ==, KERNELET_ST_OK);
    memcpy(&after, a.answer, sizeof(after));
    g_assert_cmpuint(before.free - after.free, >=, SLOW_BYTES);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_CTX_SYNC, sync), ==, KERNELET_ST_OK);
    uint64_t sp = recv_alloc(&a, small);
    g_assert_cmpuint(sp, !=, ap);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpint(client_free(&a, ap), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_free(&a, sp), ==, KERNELET_ST_OK);
    g_assert_cmpuint(live(), ==, 0);
    client_close(&a);
    harness_stop(h);
}

/* A tenant that hangs up during its allocation (with a request queued behind it): the
 * others are served meanwhile, its memory goes with it once the call is back, and nothing
 * of its connection is used after it is freed (ASan in the 'san' suite). */
static void test_hang_up(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    uint64_t bp = client_alloc(&b, 4096);
    (void)client_alloc(&a, 4096);

    tgate_arm(&g.gate);
    send_alloc(&a, SLOW_BYTES);
    tgate_wait_entered(&g.gate, 1);
    send_alloc(&a, 4096);
    client_close(&a);
    hang_up_closed(&b);

    tgate_open(&g.gate);
    /* a's memory (its first allocation and the slow one) goes with it; b's stays */
    wait_live(1);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(harness_connections(h), ==, 1);
    g_assert_cmpint(client_free(&b, bp), ==, KERNELET_ST_OK);
    g_assert_cmpuint(live(), ==, 0);
    client_close(&b);
    harness_stop(h);
}

/* The server stopped during an allocation: the stop waits for the call, then frees
 * everything (the tenant's memory with the scheduler). */
static void test_stop(void)
{
    struct client a;
    pthread_t opener;
    struct harness *h = start_with(&a, NULL);

    tgate_arm(&g.gate);
    send_alloc(&a, SLOW_BYTES);
    send_alloc(&a, 4096);
    tgate_wait_entered(&g.gate, 1);
    g_assert_cmpint(pthread_create(&opener, NULL, tgate_open_later, &g.gate), ==, 0);
    harness_stop(h);
    pthread_join(opener, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(live(), ==, 0);
    client_close(&a);
}

/* ---- frees: once the tenant's work has drained, freed off the loop too ---- */

static uint64_t send_free(struct client *c, uint64_t p)
{
    struct kernelet_mem_ptr q = {.dptr = p};
    uint64_t id = client_send(c, KERNELET_OP_MEM_FREE, &q, sizeof(q), -1);
    g_assert_cmpuint(id, !=, 0);
    return id;
}

/* While tenant a's free is in the backend, tenant b's synchronisation, launches (waited
 * for), allocation, free and memory query are answered. */
static void test_free_others_served(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    uint64_t ap = client_alloc(&a, SLOW_BYTES);
    uint64_t bp = client_alloc(&b, 4096);
    uint64_t fn = k_add_of(&b);

    gate_arm_free(ap);
    uint64_t fid = send_free(&a, ap);
    tgate_wait_entered(&g.gate, 1);

    others_served(&b, fn, bp);
    g_assert_false(client_answer_waiting(&a, 0));

    tgate_open(&g.gate);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_MEM_FREE, fid), ==, KERNELET_ST_OK);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(live(), ==, 1); /* b's */
    client_close(&a);
    client_close(&b);
    harness_stop(h);
    g_assert_cmpuint(live(), ==, 0);
}

/* The freeing connection's later requests wait for its free and are answered after it, in
 * order: the memory query sees the memory back, a second free of it is refused. */
static void test_free_own_requests_after(void)
{
    struct client a;
    struct harness *h = start_with(&a, NULL);
    uint64_t ap = client_alloc(&a, SLOW_BYTES);
    g_assert_cmpint(client_call(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1), ==, KERNELET_ST_OK);
    struct kernelet_mem_info before, after;
    memcpy(&before, a.answer, sizeof(before));

    gate_arm_free(ap);
    uint64_t fid = send_free(&a, ap);
    tgate_wait_entered(&g.gate, 1);
    uint64_t info = client_send(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1);
    uint64_t sync = client_send(&a, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    uint64_t again = send_free(&a, ap);
    uint64_t small = send_alloc(&a, 4096);
    g_assert_false(client_answer_waiting(&a, 300));

    tgate_open(&g.gate);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_MEM_FREE, fid), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_MEM_GET_INFO, info), ==, KERNELET_ST_OK);
    memcpy(&after, a.answer, sizeof(after));
    g_assert_cmpuint(after.free - before.free, >=, SLOW_BYTES);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_CTX_SYNC, sync), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_MEM_FREE, again), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(a.cuda, ==, 1 /* INVALID_VALUE */);
    uint64_t sp = recv_alloc(&a, small);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpint(client_free(&a, sp), ==, KERNELET_ST_OK);
    g_assert_cmpuint(live(), ==, 0);
    client_close(&a);
    harness_stop(h);
}

/* Frees that fail are answered as when the free ran on the loop: not an allocation of the
 * tenant's (not its start, another tenant's) INVALID_VALUE before anything drains; one the
 * backend refuses, the scheduler's error, and the allocation is gone from the connection's
 * table (a second free: INVALID_VALUE) while its memory goes with the tenant. */
static void test_free_fails(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    uint64_t ap = client_alloc(&a, 4096), bp = client_alloc(&b, 4096);
    g_assert_cmpint(client_free(&a, ap + 8), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(a.cuda, ==, 1 /* INVALID_VALUE */);
    g_assert_cmpint(client_free(&a, bp), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(a.cuda, ==, 1);

    g_mutex_lock(&g.gate.lock);
    g.fail_free = ap;
    g_mutex_unlock(&g.gate.lock);
    g_assert_cmpint(client_free(&a, ap), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(a.cuda, ==, 999 /* UNKNOWN: the backend failed */);
    g_assert_cmpint(client_free(&a, ap), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(a.cuda, ==, 1);
    g_assert_cmpuint(live(), ==, 2);
    g_mutex_lock(&g.gate.lock);
    g.fail_free = 0;
    g_mutex_unlock(&g.gate.lock);
    client_close(&a);
    wait_live(1);
    g_assert_cmpint(client_free(&b, bp), ==, KERNELET_ST_OK);
    client_close(&b);
    harness_stop(h);
    g_assert_cmpuint(live(), ==, 0);
}

/* Two frees of one connection whose drains end together (the launches both wait for
 * complete): the second reaches the backend only once the first is answered (one call of
 * a connection at once), and both are answered; or the tenant hangs up meanwhile and its
 * memory goes with it, nothing of the connection used once it is freed (ASan). */
static void two_frees(bool hang_up)
{
    struct client a;
    struct harness *h = start_with(&a, NULL);
    uint64_t p1 = client_alloc(&a, SLOW_BYTES), p2 = client_alloc(&a, SLOW_BYTES);
    uint64_t fn = k_add_of(&a);

    harness_hold(h, true);
    launch_on(&a, fn, p1, false);
    uint64_t f1 = send_free(&a, p1), f2 = send_free(&a, p2);
    /* answered before the frees: both are draining */
    g_assert_cmpint(client_call(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1), ==, KERNELET_ST_OK);
    gate_arm_free(p1);
    gate_arm_free(p2);
    harness_hold(h, false);
    tgate_wait_entered(&g.gate, 1);
    usleep(300000);
    g_assert_cmpuint(gate_entered(), ==, 1);
    g_assert_false(client_answer_waiting(&a, 0));
    if (hang_up) {
        client_close(&a);
        usleep(100000);
        tgate_open(&g.gate);
        wait_live(0); /* the first free ends, the second's memory goes with the tenant */
        g_assert_cmpuint(harness_connections(h), ==, 0);
    } else {
        tgate_open(&g.gate);
        bool seen1 = false, seen2 = false;
        for (int i = 0; i < 2; i++) {
            g_assert_cmpint(client_recv(&a, 0, 0), ==, KERNELET_ST_OK);
            g_assert_cmpuint(a.answer_op, ==, KERNELET_OP_MEM_FREE);
            seen1 |= a.answer_id == f1;
            seen2 |= a.answer_id == f2;
        }
        g_assert_true(seen1 && seen2);
        g_assert_cmpuint(live(), ==, 0); /* both freed */
        client_close(&a);
    }
    g_assert_false(tgate_timed_out(&g.gate));
    harness_stop(h);
    g_assert_cmpuint(live(), ==, 0);
}

static void test_free_one_at_a_time(void)
{
    two_frees(false);
}

static void test_free_hang_up_waiting(void)
{
    two_frees(true);
}

/* A context closed while its free is in the backend (both drains ended together): the
 * close leaves that allocation to the free, is answered meanwhile without an error, and
 * the free is answered once done. */
static void test_free_context_close(void)
{
    struct harness *h = start();
    struct client a;
    g_assert_true(client_open(&a, h, "vm", false));
    a.context = 7;
    uint64_t p = client_alloc(&a, SLOW_BYTES);
    uint64_t fn = k_add_of(&a);

    harness_hold(h, true);
    launch_on(&a, fn, p, false);
    uint64_t fid = send_free(&a, p);
    uint64_t close_id = client_send(&a, KERNELET_OP_CONTEXT_CLOSE, NULL, 0, -1);
    a.context = 8;
    g_assert_cmpint(client_call(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1), ==, KERNELET_ST_OK);
    gate_arm_free(p);
    harness_hold(h, false);
    tgate_wait_entered(&g.gate, 1);
    g_assert_true(client_answer_waiting(&a, ANSWER_MS));
    g_assert_cmpint(client_recv(&a, KERNELET_OP_CONTEXT_CLOSE, close_id), ==, KERNELET_ST_OK);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(live(), ==, 1);

    tgate_open(&g.gate);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_MEM_FREE, fid), ==, KERNELET_ST_OK);
    g_assert_cmpuint(live(), ==, 0);
    g_assert_cmpint(client_call(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1), ==, KERNELET_ST_OK);
    client_close(&a);
    harness_stop(h);
}

/* A tenant that hangs up during its free (with a request queued behind it): the others are
 * served meanwhile, the free ends, the rest of its memory goes with it, and nothing of its
 * connection is used after it is freed (ASan in the 'san' suite). */
static void test_free_hang_up(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    uint64_t bp = client_alloc(&b, 4096);
    uint64_t ap = client_alloc(&a, SLOW_BYTES);
    (void)client_alloc(&a, 4096);

    gate_arm_free(ap);
    send_free(&a, ap);
    tgate_wait_entered(&g.gate, 1);
    client_send(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1);
    client_close(&a);
    hang_up_closed(&b);

    tgate_open(&g.gate);
    wait_live(1);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(harness_connections(h), ==, 1);
    g_assert_cmpint(client_free(&b, bp), ==, KERNELET_ST_OK);
    g_assert_cmpuint(live(), ==, 0);
    client_close(&b);
    harness_stop(h);
}

/* The server stopped during a free: the stop waits for it and leaks nothing. */
static void test_free_stop(void)
{
    struct client a;
    pthread_t opener;
    struct harness *h = start_with(&a, NULL);
    uint64_t ap = client_alloc(&a, SLOW_BYTES);
    (void)client_alloc(&a, 4096);

    gate_arm_free(ap);
    send_free(&a, ap);
    send_alloc(&a, 4096);
    tgate_wait_entered(&g.gate, 1);
    g_assert_cmpint(pthread_create(&opener, NULL, tgate_open_later, &g.gate), ==, 0);
    harness_stop(h);
    pthread_join(opener, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(live(), ==, 0);
    client_close(&a);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/server/alloc/others-served", test_others_served);
    g_test_add_func("/server/alloc/own-requests-after", test_own_requests_after);
    g_test_add_func("/server/alloc/hang-up", test_hang_up);
    g_test_add_func("/server/alloc/stop", test_stop);
    g_test_add_func("/server/free/others-served", test_free_others_served);
    g_test_add_func("/server/free/own-requests-after", test_free_own_requests_after);
    g_test_add_func("/server/free/fails", test_free_fails);
    g_test_add_func("/server/free/one-at-a-time", test_free_one_at_a_time);
    g_test_add_func("/server/free/hang-up-waiting", test_free_hang_up_waiting);
    g_test_add_func("/server/free/context-close", test_free_context_close);
    g_test_add_func("/server/free/hang-up", test_free_hang_up);
    g_test_add_func("/server/free/stop", test_free_stop);
    return g_test_run();
}
