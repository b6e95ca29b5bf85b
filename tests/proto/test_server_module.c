/* A tenant's module load does not stall the others (issue 15): its parsing, rewriting and
 * the backend's load (the cuda driver's JIT: 100 ms and more for a big module) run on the
 * server's workers (host-sched/server/server_call.c), and the backend's load without the
 * scheduler's lock (kbackend_device_info.module_unlocked), so other connections are served
 * and other tenants' kernels scheduled while it is in the backend; the connection's later
 * requests, which may name the module, are answered after it, in order. A tenant that
 * hangs up, or a server stopped, during one leaks nothing (the 'san' suite runs this under
 * ASan and UBSan too).
 *
 * The backend is the sim with its module loads wrapped (the gate of tests/test_gate.h):
 * while the gate is armed, a load of PTX that holds SLOW_ENTRY, or of a cubin, waits in the
 * backend until the test opens the gate (or GATE_TIMEOUT_US passes: a server that loads on
 * its event loop, or a scheduler that holds its lock across the load, would otherwise never
 * let the test go on). The slow PTX is the harness's with k_add renamed SLOW_ENTRY (a kernel
 * the sim knows), so it has no module variables: the sim's load then touches none of the
 * sim's state, and may run beside its other ops. The wrapper counts the sim's modules. */
#include <glib.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "../test_gate.h"
#include "server_harness.h"

#define SLOW_ENTRY "vec_add"
#define GATE_TIMEOUT_US 3000000
#define ANSWER_MS 2000          /* an answer that does not need the load comes by then */

static struct {
    struct test_gate gate;      /* slow loads wait there (armed); its lock is g's */
    const kbackend_ops *sim;
    unsigned modules;           /* the sim's modules not unloaded */
} g;

static kbackend_ops gated_ops;

static int gated_info(void *state, kbackend_device_info *out, kbackend_error *err)
{
    int rc = g.sim->device_info(state, out, err);
    out->module_unlocked = 1;
    return rc;
}

static void pass_if_armed(void)
{
    g_mutex_lock(&g.gate.lock);
    if (g.gate.armed)
        tgate_pass(&g.gate, GATE_TIMEOUT_US);
    g_mutex_unlock(&g.gate.lock);
}

static int gated_load(void *state, uint32_t domain, const char *ptx, size_t len,
                      kbackend_module **out, kbackend_error *err)
{
    if (g_strstr_len(ptx, (gssize)len, SLOW_ENTRY))
        pass_if_armed();
    int rc = g.sim->module_load_ptx(state, domain, ptx, len, out, err);
    g_mutex_lock(&g.gate.lock);
    g.modules += rc == 0;
    g_mutex_unlock(&g.gate.lock);
    return rc;
}

/* The sim runs PTX only: a cubin's module has no code (*out NULL), as without this op. */
static int gated_cubin(void *state, const void *image, size_t len, kbackend_module **out,
                       kbackend_error *err)
{
    (void)state;
    (void)image;
    (void)len;
    (void)err;
    pass_if_armed();
    *out = NULL;
    return 0;
}

static int counted_unload(void *state, kbackend_module *m, kbackend_error *err)
{
    g_mutex_lock(&g.gate.lock);
    g_assert_cmpuint(g.modules, >, 0);
    g.modules--;
    g_mutex_unlock(&g.gate.lock);
    return g.sim->module_unload(state, m, err);
}

static void wrap(kbackend *b)
{
    g.sim = b->ops;
    gated_ops = *b->ops;
    gated_ops.device_info = gated_info;
    gated_ops.module_load_ptx = gated_load;
    gated_ops.module_load_cubin = gated_cubin;
    gated_ops.module_unload = counted_unload;
    b->ops = &gated_ops;
}

static struct harness *start_with(struct client *a, struct client *b)
{
    g_mutex_lock(&g.gate.lock);
    g.gate.armed = g.gate.open = g.gate.timed_out = 0;
    g.gate.entered = g.modules = 0;
    g_mutex_unlock(&g.gate.lock);
    struct harness *h = harness_start_wrapped(wrap);
    g_assert_true(client_open(a, h, "a", false));
    if (b)
        g_assert_true(client_open(b, h, "b", false));
    return h;
}

static unsigned modules(void)
{
    g_mutex_lock(&g.gate.lock);
    unsigned n = g.modules;
    g_mutex_unlock(&g.gate.lock);
    return n;
}

/* Waits (5 s at most) until n of the sim's modules are loaded, and asserts it. */
static void wait_modules(unsigned n)
{
    int64_t until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (modules() != n && g_get_monotonic_time() < until)
        usleep(10000);
    g_assert_cmpuint(modules(), ==, n);
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

/* MODULE_LOAD of an inline image (answered later: client_recv). */
static uint64_t send_load(struct client *c, uint32_t kind, const void *img, size_t n)
{
    struct kernelet_module_load q = {.kind = kind, .region = KERNELET_REGION_INLINE, .size = n};
    g_autofree uint8_t *buf = g_malloc(sizeof(q) + n);
    memcpy(buf, &q, sizeof(q));
    memcpy(buf + sizeof(q), img, n);
    uint64_t id = client_send(c, KERNELET_OP_MODULE_LOAD, buf, sizeof(q) + n, -1);
    g_assert_cmpuint(id, !=, 0);
    return id;
}

static char *slow_ptx(void)
{
    g_auto(GStrv) parts = g_strsplit(harness_ptx, "k_add", -1);
    return g_strjoinv(SLOW_ENTRY, parts);
}

static uint64_t send_slow(struct client *c)
{
    g_autofree char *ptx = slow_ptx();
    return send_load(c, KERNELET_IMAGE_PTX, ptx, strlen(ptx));
}

/* The module handle of load id's answer. */
static uint64_t recv_module(struct client *c, uint64_t id)
{
    struct kernelet_module m;
    g_assert_cmpint(client_recv(c, KERNELET_OP_MODULE_LOAD, id), ==, KERNELET_ST_OK);
    g_assert_cmpuint(c->answer_len, ==, sizeof(m));
    memcpy(&m, c->answer, sizeof(m));
    g_assert_cmpuint(m.module, !=, 0);
    return m.module;
}

static uint64_t function_of(struct client *c, uint64_t module, const char *name)
{
    struct kernelet_function f;
    struct kernelet_param params[8];
    uint64_t fn = client_function(c, module, name, &f, params);
    g_assert_cmpuint(fn, !=, 0);
    return fn;
}

/* Three launches of k_add on the 1024 words at p, answered once they ran. */
static void launch_on(struct client *c, uint64_t fn, uint64_t p)
{
    struct {
        uint64_t p;
        uint32_t n, v;
    } args = {p, 1024, 1};
    g_assert_cmpint(client_launches(c, fn, &args, sizeof(args), 3, 128, true), ==,
                    KERNELET_ST_OK);
}

/* While the gate is closed, b's synchronisation, module load and function look-up,
 * launches (scheduled and run: waited for), allocation, free and memory query are
 * answered. */
static void others_served(struct client *b, uint64_t bp)
{
    g_assert_cmpint(call_during(b, KERNELET_OP_CTX_SYNC, NULL, 0), ==, KERNELET_ST_OK);
    uint64_t id = send_load(b, KERNELET_IMAGE_PTX, harness_ptx, strlen(harness_ptx));
    g_assert_true(client_answer_waiting(b, ANSWER_MS));
    uint64_t fn = function_of(b, recv_module(b, id), "k_add");
    launch_on(b, fn, bp);
    g_assert_false(tgate_timed_out(&g.gate));
    struct kernelet_mem_alloc q = {.size = 8192};
    g_assert_cmpint(call_during(b, KERNELET_OP_MEM_ALLOC, &q, sizeof(q)), ==, KERNELET_ST_OK);
    struct kernelet_mem_ptr bq;
    memcpy(&bq, b->answer, sizeof(bq));
    g_assert_cmpint(call_during(b, KERNELET_OP_MEM_FREE, &bq, sizeof(bq)), ==, KERNELET_ST_OK);
    g_assert_cmpint(call_during(b, KERNELET_OP_MEM_GET_INFO, NULL, 0), ==, KERNELET_ST_OK);
}

/* While tenant a's PTX is in the backend, tenant b is served and its kernels run; a's load
 * is answered once the gate opens, and its module works. */
static void test_others_served(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    uint64_t bp = client_alloc(&b, 4096);

    tgate_arm(&g.gate);
    uint64_t aid = send_slow(&a);
    tgate_wait_entered(&g.gate, 1);
    others_served(&b, bp);
    g_assert_false(client_answer_waiting(&a, 0));

    tgate_open(&g.gate);
    uint64_t am = recv_module(&a, aid);
    (void)function_of(&a, am, SLOW_ENTRY);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(modules(), ==, 2);
    client_close(&a);
    client_close(&b);
    harness_stop(h);
    g_assert_cmpuint(modules(), ==, 0);
}

/* The same for a cubin (server_cubin.c's path to the scheduler). */
static void test_cubin_others_served(void)
{
    const char *path = g_getenv("KERNELET_TEST_CUBIN");
    g_autofree char *cubin = NULL;
    gsize n = 0;
    g_assert_nonnull(path);
    g_assert_true(g_file_get_contents(path, &cubin, &n, NULL));
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    uint64_t bp = client_alloc(&b, 4096);

    tgate_arm(&g.gate);
    uint64_t aid = send_load(&a, KERNELET_IMAGE_CUBIN, cubin, n);
    tgate_wait_entered(&g.gate, 1);
    others_served(&b, bp);
    g_assert_false(client_answer_waiting(&a, 0));

    tgate_open(&g.gate);
    (void)recv_module(&a, aid);
    g_assert_false(tgate_timed_out(&g.gate));
    client_close(&a);
    client_close(&b);
    harness_stop(h);
    g_assert_cmpuint(modules(), ==, 0);
}

/* The loading connection's later requests wait for the load and are answered after it, in
 * order: a function look-up naming the module being loaded (its handle is the next one of
 * the connection's) finds it. */
static void test_own_requests_after(void)
{
    struct client a;
    struct harness *h = start_with(&a, NULL);
    uint64_t first = client_module_ptx(&a, harness_ptx);

    tgate_arm(&g.gate);
    uint64_t aid = send_slow(&a);
    tgate_wait_entered(&g.gate, 1);
    uint8_t buf[sizeof(struct kernelet_name_req) + sizeof(SLOW_ENTRY)];
    struct kernelet_name_req q = {.module = first + 1, .name_len = strlen(SLOW_ENTRY)};
    memcpy(buf, &q, sizeof(q));
    memcpy(buf + sizeof(q), SLOW_ENTRY, q.name_len);
    uint64_t get = client_send(&a, KERNELET_OP_FUNCTION_GET, buf, sizeof(q) + q.name_len, -1);
    uint64_t sync = client_send(&a, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    g_assert_false(client_answer_waiting(&a, 300));

    tgate_open(&g.gate);
    g_assert_cmpuint(recv_module(&a, aid), ==, first + 1);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_FUNCTION_GET, get), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_CTX_SYNC, sync), ==, KERNELET_ST_OK);
    g_assert_false(tgate_timed_out(&g.gate));
    client_close(&a);
    harness_stop(h);
    g_assert_cmpuint(modules(), ==, 0);
}

/* A tenant that hangs up during its load (a request queued behind it): the other is
 * served meanwhile, the module goes with the tenant once the load is back, and nothing of
 * the connection is used after it is freed (ASan in the 'san' suite). */
static void test_hang_up(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    (void)client_module_ptx(&b, harness_ptx);
    (void)client_module_ptx(&a, harness_ptx);

    tgate_arm(&g.gate);
    send_slow(&a);
    tgate_wait_entered(&g.gate, 1);
    client_send(&a, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1);
    client_close(&a);
    g_assert_cmpint(call_during(&b, KERNELET_OP_CTX_SYNC, NULL, 0), ==, KERNELET_ST_OK);
    usleep(100000);
    g_assert_cmpint(call_during(&b, KERNELET_OP_MEM_GET_INFO, NULL, 0), ==, KERNELET_ST_OK);

    tgate_open(&g.gate);
    wait_modules(1);    /* b's */
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(harness_connections(h), ==, 1);
    client_close(&b);
    harness_stop(h);
    g_assert_cmpuint(modules(), ==, 0);
}

/* The server stopped during a load (a request queued behind it): the stop waits for the
 * load, then frees everything (the module with its tenant). */
static void test_stop(void)
{
    struct client a;
    pthread_t opener;
    struct harness *h = start_with(&a, NULL);

    tgate_arm(&g.gate);
    send_slow(&a);
    send_slow(&a);
    tgate_wait_entered(&g.gate, 1);
    g_assert_cmpint(pthread_create(&opener, NULL, tgate_open_later, &g.gate), ==, 0);
    harness_stop(h);
    pthread_join(opener, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(modules(), ==, 0);
    client_close(&a);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/server/module/others-served", test_others_served);
    g_test_add_func("/server/module/cubin-others-served", test_cubin_others_served);
    g_test_add_func("/server/module/own-requests-after", test_own_requests_after);
    g_test_add_func("/server/module/hang-up", test_hang_up);
    g_test_add_func("/server/module/stop", test_stop);
    return g_test_run();
}
