/* A tenant's allocation does not stall the protocol server (issue 15): it runs off the
 * event loop (host-sched/server/server_call.c), so other connections are served while it
 * is in the backend, and the allocating connection's later requests are answered after
 * it, in order. A tenant that hangs up, or a server stopped, during an allocation leaks
 * nothing (the 'san' suite runs this under ASan and UBSan too).
 *
 * The backend is the sim with its memory calls replaced (as in tests/sched/
 * test_mem_unlocked.c): allocations take fake addresses of the test's, and one of
 * SLOW_BYTES, while the gate is armed, waits in the backend until the test opens the gate
 * (or GATE_TIMEOUT_US passes: a server that allocates on its event loop would otherwise
 * never let the test go on). The device says mem_unlocked, so the scheduler's lock is not
 * held across the call either. */
#include <glib.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server_harness.h"

#define SLOW_BYTES (64ull << 20)
#define GATE_TIMEOUT_US 3000000
#define MAX_DOMAIN 64
#define FAKE_BASE (1ull << 44)
#define ANSWER_MS 2000          /* an answer that does not need the allocation comes by then */

static struct {
    GMutex lock;
    GCond cond;
    const kbackend_ops *sim;
    int armed, open, timed_out;
    unsigned entered;           /* slow allocations in the backend (armed) */
    uint64_t next;              /* fake memory, bumped */
    unsigned live;              /* fake allocations not freed */
} g;

static kbackend_ops gated_ops;

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
    (void)err;
    g_assert_cmpuint(domain, <, MAX_DOMAIN);
    g_mutex_lock(&g.lock);
    if (g.armed && bytes == SLOW_BYTES) {
        g.entered++;
        g_cond_broadcast(&g.cond);
        int64_t until = g_get_monotonic_time() + GATE_TIMEOUT_US;
        while (!g.open)
            if (!g_cond_wait_until(&g.cond, &g.lock, until)) {
                g.timed_out = 1;
                break;
            }
    }
    *out = FAKE_BASE + ((uint64_t)domain << 36) + g.next;
    g.next += (bytes + 255) / 256 * 256;
    g.live++;
    g_mutex_unlock(&g.lock);
    return 0;
}

static int gated_free(void *state, kbackend_devptr ptr, kbackend_error *err)
{
    (void)state;
    if (ptr < FAKE_BASE)
        return kbackend_fail(err, KBACKEND_EINVAL, "not the test's memory");
    g_mutex_lock(&g.lock);
    g_assert_cmpuint(g.live, >, 0);
    g.live--;
    g_mutex_unlock(&g.lock);
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
    g_mutex_lock(&g.lock);
    g.armed = g.open = g.timed_out = 0;
    g.entered = g.live = 0;
    g_mutex_unlock(&g.lock);
    return harness_start_wrapped(wrap);
}

static void gate_arm(void)
{
    g_mutex_lock(&g.lock);
    g.armed = 1;
    g.open = 0;
    g.entered = 0;
    g_mutex_unlock(&g.lock);
}

/* Waits until n slow allocations are in the backend. */
static void gate_wait_entered(unsigned n)
{
    int64_t until = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    g_mutex_lock(&g.lock);
    while (g.entered < n)
        if (!g_cond_wait_until(&g.cond, &g.lock, until))
            g_error("%u slow allocation(s) did not reach the backend", n);
    g_mutex_unlock(&g.lock);
}

static void gate_open(void)
{
    g_mutex_lock(&g.lock);
    g.open = 1;
    g.armed = 0;
    g_cond_broadcast(&g.cond);
    g_mutex_unlock(&g.lock);
}

static bool gate_timed_out(void)
{
    g_mutex_lock(&g.lock);
    int t = g.timed_out;
    g_mutex_unlock(&g.lock);
    return t;
}

static unsigned live(void)
{
    g_mutex_lock(&g.lock);
    unsigned n = g.live;
    g_mutex_unlock(&g.lock);
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

/* Whether an answer is waiting on c within ms. */
static bool answer_waiting(struct client *c, int ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

/* Sends op and asserts that it is answered while the gate is still closed. */
static int call_during(struct client *c, uint16_t op, const void *payload, size_t n)
{
    uint64_t id = client_send(c, op, payload, n, -1);
    g_assert_cmpuint(id, !=, 0);
    g_assert_true(answer_waiting(c, ANSWER_MS));
    g_assert_false(gate_timed_out());
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

/* While tenant a's allocation is in the backend, tenant b's synchronisation, launches
 * (waited for), allocation and memory query are answered, and tenant c's slow allocation
 * reaches the backend too (one call per tenant at once). */
static void test_others_served(void)
{
    struct harness *h = start();
    struct client a, b, c;
    g_assert_true(client_open(&a, h, "a", false));
    g_assert_true(client_open(&b, h, "b", false));
    g_assert_true(client_open(&c, h, "c", false));
    uint64_t bp = client_alloc(&b, 4096);
    uint64_t mod = client_module_ptx(&b, harness_ptx);
    struct kernelet_function f;
    struct kernelet_param params[8];
    uint64_t fn = client_function(&b, mod, "k_add", &f, params);
    g_assert_cmpuint(fn, !=, 0);

    gate_arm();
    uint64_t aid = send_alloc(&a, SLOW_BYTES);
    gate_wait_entered(1);

    g_assert_cmpint(call_during(&b, KERNELET_OP_CTX_SYNC, NULL, 0), ==, KERNELET_ST_OK);
    struct {
        uint64_t p;
        uint32_t n, v;
    } args = {bp, 1024, 1};
    g_assert_cmpint(client_launches(&b, fn, &args, sizeof(args), 3, 128, true), ==,
                    KERNELET_ST_OK);
    g_assert_false(gate_timed_out());
    struct kernelet_mem_alloc q = {.size = 8192};
    g_assert_cmpint(call_during(&b, KERNELET_OP_MEM_ALLOC, &q, sizeof(q)), ==, KERNELET_ST_OK);
    g_assert_cmpint(call_during(&b, KERNELET_OP_MEM_GET_INFO, NULL, 0), ==, KERNELET_ST_OK);
    uint64_t cid = send_alloc(&c, SLOW_BYTES);
    gate_wait_entered(2);
    g_assert_false(answer_waiting(&a, 0));
    g_assert_false(answer_waiting(&c, 0));

    gate_open();
    uint64_t ap = recv_alloc(&a, aid), cp = recv_alloc(&c, cid);
    g_assert_cmpuint(ap, !=, cp);
    g_assert_false(gate_timed_out());
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
    struct harness *h = start();
    struct client a;
    g_assert_true(client_open(&a, h, "a", false));
    g_assert_cmpint(client_call(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1), ==, KERNELET_ST_OK);
    struct kernelet_mem_info before, after;
    memcpy(&before, a.answer, sizeof(before));

    gate_arm();
    uint64_t aid = send_alloc(&a, SLOW_BYTES);
    gate_wait_entered(1);
    uint64_t info = client_send(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1);
    uint64_t sync = client_send(&a, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    uint64_t small = send_alloc(&a, 4096);
    g_assert_false(answer_waiting(&a, 300));

    gate_open();
    uint64_t ap = recv_alloc(&a, aid);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_MEM_GET_INFO, info), ==, KERNELET_ST_OK);
    memcpy(&after, a.answer, sizeof(after));
    g_assert_cmpuint(before.free - after.free, >=, SLOW_BYTES);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_CTX_SYNC, sync), ==, KERNELET_ST_OK);
    uint64_t sp = recv_alloc(&a, small);
    g_assert_cmpuint(sp, !=, ap);
    g_assert_false(gate_timed_out());
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
    struct harness *h = start();
    struct client a, b;
    g_assert_true(client_open(&a, h, "a", false));
    g_assert_true(client_open(&b, h, "b", false));
    uint64_t bp = client_alloc(&b, 4096);
    (void)client_alloc(&a, 4096);

    gate_arm();
    send_alloc(&a, SLOW_BYTES);
    gate_wait_entered(1);
    send_alloc(&a, 4096);
    client_close(&a);
    g_assert_cmpint(call_during(&b, KERNELET_OP_CTX_SYNC, NULL, 0), ==, KERNELET_ST_OK);
    /* The hang-up reaches the server while the gate is closed: it closes the connection
     * (reading nothing more of it, the loop would be told of the hang-up at every turn,
     * and spin) */
    uint64_t cpu = cpu_us();
    usleep(200000);
    g_test_message("%llu us of CPU in 200 ms after the hang-up",
                   (unsigned long long)(cpu_us() - cpu));
    g_assert_cmpuint(cpu_us() - cpu, <, 50000);
    g_assert_cmpint(call_during(&b, KERNELET_OP_MEM_GET_INFO, NULL, 0), ==, KERNELET_ST_OK);

    gate_open();
    /* a's memory (its first allocation and the slow one) goes with it; b's stays */
    int64_t until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (live() != 1 && g_get_monotonic_time() < until)
        usleep(10000);
    g_assert_cmpuint(live(), ==, 1);
    g_assert_false(gate_timed_out());
    g_assert_cmpuint(harness_connections(h), ==, 1);
    g_assert_cmpint(client_free(&b, bp), ==, KERNELET_ST_OK);
    g_assert_cmpuint(live(), ==, 0);
    client_close(&b);
    harness_stop(h);
}

static void *open_later(void *arg)
{
    (void)arg;
    usleep(200000);
    gate_open();
    return NULL;
}

/* The server stopped during an allocation: the stop waits for the call, then frees
 * everything (the tenant's memory with the scheduler). */
static void test_stop(void)
{
    struct harness *h = start();
    struct client a;
    pthread_t opener;
    g_assert_true(client_open(&a, h, "a", false));

    gate_arm();
    send_alloc(&a, SLOW_BYTES);
    send_alloc(&a, 4096);
    gate_wait_entered(1);
    g_assert_cmpint(pthread_create(&opener, NULL, open_later, NULL), ==, 0);
    harness_stop(h);
    pthread_join(opener, NULL);
    g_assert_false(gate_timed_out());
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
    return g_test_run();
}
