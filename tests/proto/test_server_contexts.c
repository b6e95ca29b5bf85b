/* Client contexts on one connection (a VM's device stamps each guest process's context on
 * its requests): CONTEXT_CLOSE frees exactly what that context created -- allocations,
 * modules with their functions, streams, events -- after the work queued so far, leaves
 * the other contexts of the connection and every other connection alone, and works after
 * a sticky error, which ends only the context whose kernel faulted. */
#include <glib.h>
#include <string.h>

#include "server_harness.h"

static struct harness *H;

static int context_close(struct client *c, uint32_t context)
{
    c->context = context;
    return client_call(c, KERNELET_OP_CONTEXT_CLOSE, NULL, 0, -1);
}

static uint64_t new_handle(struct client *c, uint16_t op)
{
    uint32_t zero[2] = {0, 0}; /* stream_create / event_create: flags 0 */
    struct kernelet_handle h;

    g_assert_cmpint(client_call(c, op, zero, sizeof(zero), -1), ==, KERNELET_ST_OK);
    memcpy(&h, c->answer, sizeof(h));
    return h.handle;
}

static int on_handle(struct client *c, uint16_t op, uint64_t handle)
{
    struct kernelet_handle h = {.handle = handle};

    return client_call(c, op, &h, sizeof(h), -1);
}

/* A device-to-device copy of n bytes from d to itself: whether c may touch them. */
static int touch_bytes(struct client *c, uint64_t d, uint64_t n)
{
    return client_copy(c, KERNELET_COPY_DTOD, 0, d, d, n, NULL, 0, true);
}

/* A device-to-device copy inside [d, d + 2 KiB): whether d is still c's memory. */
static int touch(struct client *c, uint64_t d)
{
    return client_copy(c, KERNELET_COPY_DTOD, 0, d + 1024, d, 1024, NULL, 0, true);
}

/* What one context created, and how to reach it. */
struct ctx_objects {
    uint64_t mem, module, function, stream, event;
};

static struct ctx_objects create_all(struct client *c, uint32_t context)
{
    struct ctx_objects o;
    struct kernelet_function f;
    struct kernelet_param p[8];

    c->context = context;
    o.mem = client_alloc(c, 1 << 20);
    o.module = client_module_ptx(c, harness_ptx);
    o.function = client_function(c, o.module, "k_add", &f, p);
    g_assert_cmpuint(o.function, !=, 0);
    o.stream = new_handle(c, KERNELET_OP_STREAM_CREATE);
    o.event = new_handle(c, KERNELET_OP_EVENT_CREATE);
    return o;
}

static void assert_gone(struct client *c, const struct ctx_objects *o)
{
    uint8_t params[16] = {0};

    g_assert_cmpint(touch(c, o->mem), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c->cuda, ==, 1 /* INVALID_VALUE */);
    g_assert_cmpint(client_launches(c, o->function, params, 16, 1, 32, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c->cuda, ==, 400 /* INVALID_HANDLE */);
    g_assert_cmpint(on_handle(c, KERNELET_OP_STREAM_SYNC, o->stream), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c->cuda, ==, 400);
    g_assert_cmpint(on_handle(c, KERNELET_OP_EVENT_QUERY, o->event), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c->cuda, ==, 400);
    g_assert_cmpint(on_handle(c, KERNELET_OP_MODULE_UNLOAD, o->module), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c->cuda, ==, 400);
}

static void assert_alive(struct client *c, const struct ctx_objects *o)
{
    uint8_t params[16] = {0};

    g_assert_cmpint(touch(c, o->mem), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_launches(c, o->function, params, 16, 2, 32, true), ==, KERNELET_ST_OK);
    g_assert_cmpint(on_handle(c, KERNELET_OP_STREAM_SYNC, o->stream), ==, KERNELET_ST_OK);
    g_assert_cmpint(on_handle(c, KERNELET_OP_EVENT_QUERY, o->event), ==, KERNELET_ST_OK);
}

static void test_close_frees_only_its_own(void)
{
    struct client vm, other, admin;
    struct kernelet_function f;
    struct kernelet_param p[8];

    g_assert_true(client_open(&vm, H, "vm-contexts", false));
    g_assert_true(client_open(&other, H, "host-neighbour", false));
    g_assert_true(client_open(&admin, H, "ctl", true));
    struct ctx_objects a = create_all(&vm, 7);
    struct ctx_objects b = create_all(&vm, 8);
    /* Context 8 also takes a function from 7's module: it goes with the module. */
    uint64_t borrowed = client_function(&vm, a.module, "k_add", &f, p);
    /* Another connection using the same context number is another tenant's business. */
    struct ctx_objects n = create_all(&other, 7);
    g_assert_cmpuint(client_tenant_row(&admin, vm.tenant).mem_in_use, ==, 2u << 20);

    g_assert_cmpint(context_close(&vm, 7), ==, KERNELET_ST_OK);
    vm.context = 8;
    g_assert_cmpuint(client_tenant_row(&admin, vm.tenant).mem_in_use, ==, 1u << 20);
    assert_gone(&vm, &a);
    uint8_t params[16] = {0};
    g_assert_cmpint(client_launches(&vm, borrowed, params, 16, 1, 32, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(vm.cuda, ==, 400);
    assert_alive(&vm, &b);
    assert_alive(&other, &n);
    g_assert_cmpuint(client_tenant_row(&admin, other.tenant).mem_in_use, ==, 1u << 20);

    /* Closing twice, or a context that made nothing, is harmless. */
    g_assert_cmpint(context_close(&vm, 7), ==, KERNELET_ST_OK);
    g_assert_cmpint(context_close(&vm, 12345), ==, KERNELET_ST_OK);
    vm.context = 8;
    assert_alive(&vm, &b);
    g_assert_cmpint(context_close(&vm, 8), ==, KERNELET_ST_OK);
    g_assert_cmpuint(client_tenant_row(&admin, vm.tenant).mem_in_use, ==, 0);
    assert_gone(&vm, &b);
    client_close(&admin);
    client_close(&other);
    client_close(&vm);
}

/* Two guest processes of one VM: neither copies from, copies to, sets or frees the other's
 * memory (each is its own CUDA program), while each keeps full use of its own. */
static void test_memory_is_per_context(void)
{
    struct client vm;

    g_assert_true(client_open(&vm, H, "vm-two-processes", false));
    vm.context = 7;
    uint64_t m7 = client_alloc(&vm, 1 << 20);
    vm.context = 8;
    uint64_t m8 = client_alloc(&vm, 1 << 20);
    g_assert_cmpint(touch(&vm, m7), ==, KERNELET_ST_CUDA);       /* 8 on 7's memory */
    g_assert_cmpuint(vm.cuda, ==, 1 /* INVALID_VALUE */);
    g_assert_cmpint(client_copy(&vm, KERNELET_COPY_DTOD, 0, m8, m7, 4096, NULL, 0, true), ==,
                    KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&vm, KERNELET_COPY_DTOD, 0, m7, m8, 4096, NULL, 0, true), ==,
                    KERNELET_ST_CUDA);
    struct kernelet_mem_ptr f = {.dptr = m7};
    g_assert_cmpint(client_call(&vm, KERNELET_OP_MEM_FREE, &f, sizeof(f), -1), ==,
                    KERNELET_ST_CUDA);
    g_assert_cmpint(touch(&vm, m8), ==, KERNELET_ST_OK);
    vm.context = 7;
    g_assert_cmpint(touch(&vm, m7), ==, KERNELET_ST_OK);         /* 7's is still there */
    g_assert_cmpint(client_call(&vm, KERNELET_OP_MEM_FREE, &f, sizeof(f), -1), ==,
                    KERNELET_ST_OK);
    client_close(&vm);
}

/* A module variable of one guest process (its module's context): another process of the
 * VM that learns the module's handle gets its address but can neither write nor read it
 * (it lies in the owner's window, where only the owner's kernels reach); the owner can. */
static void test_module_variables_are_per_context(void)
{
    struct client vm;
    const char *entry = strstr(harness_ptx, ".visible .entry");
    char *ptx = g_strdup_printf("%.*s.visible .global .align 4 .u32 counter = 7;\n%s",
                                (int)(entry - harness_ptx), harness_ptx, entry);
    uint8_t buf[256];
    struct kernelet_name_req q = {.name_len = 7};
    struct kernelet_global g;
    uint32_t word = 42;

    g_assert_true(client_open(&vm, H, "vm-variables", false));
    vm.context = 7;
    q.module = client_module_ptx(&vm, ptx);
    memcpy(buf, &q, sizeof(q));
    memcpy(buf + sizeof(q), "counter", 7);
    vm.context = 8;
    g_assert_cmpint(client_call(&vm, KERNELET_OP_GLOBAL_GET, buf, sizeof(q) + 7, -1), ==,
                    KERNELET_ST_OK);
    memcpy(&g, vm.answer, sizeof(g));
    g_assert_cmpint(client_copy(&vm, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, g.dptr, 0,
                                sizeof(word), &word, 0, true), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(vm.cuda, ==, 1 /* INVALID_VALUE */);
    g_assert_cmpint(touch_bytes(&vm, g.dptr, 4), ==, KERNELET_ST_CUDA);
    vm.context = 7;
    g_assert_cmpint(client_copy(&vm, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, g.dptr, 0,
                                sizeof(word), &word, 0, true), ==, KERNELET_ST_OK);
    g_assert_cmpint(touch_bytes(&vm, g.dptr, 4), ==, KERNELET_ST_OK);
    client_close(&vm);
    g_free(ptx);
}

/* The answer comes once the context's queued work has run: nothing is freed under it. */
static void test_close_waits_for_queued_work(void)
{
    struct client vm, admin;
    uint8_t params[16] = {0};

    g_assert_true(client_open(&vm, H, "vm-busy", false));
    g_assert_true(client_open(&admin, H, "ctl", true));
    struct ctx_objects a = create_all(&vm, 3);
    memcpy(params, &a.mem, sizeof(a.mem));
    g_assert_cmpint(client_launches(&vm, a.function, params, 16, 40, 256, false), ==, KERNELET_ST_OK);
    g_assert_cmpint(context_close(&vm, 3), ==, KERNELET_ST_OK);
    struct kernelet_tenant_status ts = client_tenant_row(&admin, vm.tenant);
    g_assert_cmpuint(ts.launches, ==, 40);
    g_assert_cmpuint(ts.completed, ==, 40);
    g_assert_cmpuint(ts.mem_in_use, ==, 0);
    client_close(&admin);
    client_close(&vm);
}

/* A faulting kernel ends its own context's CUDA context: the VM's other processes go on.
 * A closing process must still give its memory back; the answer carries its sticky
 * error, and the context's number is clean afterwards. */
static void test_sticky_error_is_per_context(void)
{
    struct client vm, admin;
    uint8_t params[16] = {0};

    g_assert_true(client_open(&vm, H, "vm-faulty", false));
    g_assert_true(client_open(&admin, H, "ctl", true));
    struct ctx_objects a = create_all(&vm, 5);
    struct ctx_objects b = create_all(&vm, 6);
    harness_fail_kernel(H, "k_add", true);
    vm.context = 5;
    g_assert_cmpint(client_launches(&vm, a.function, params, 16, 1, 32, false), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_sync(&vm), ==, KERNELET_ST_CUDA);
    harness_fail_kernel(H, "k_add", false);
    uint32_t sticky = vm.cuda;
    g_assert_cmpint(touch(&vm, a.mem), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(vm.cuda, ==, sticky);
    g_assert_true(client_tenant_row(&admin, vm.tenant).flags & KERNELET_TENANT_STICKY);

    vm.context = 6; /* the neighbour process */
    g_assert_cmpint(client_sync(&vm), ==, KERNELET_ST_OK);
    assert_alive(&vm, &b);

    g_assert_cmpint(context_close(&vm, 5), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(vm.cuda, ==, sticky);
    g_assert_cmpuint(client_tenant_row(&admin, vm.tenant).mem_in_use, ==, 1u << 20);
    g_assert_false(client_tenant_row(&admin, vm.tenant).flags & KERNELET_TENANT_STICKY);
    vm.context = 5; /* a later process that got the same number */
    g_assert_cmpint(client_sync(&vm), ==, KERNELET_ST_OK);
    (void)client_alloc(&vm, 4096);
    client_close(&admin);
    client_close(&vm);
}

/* A stream destroyed while work is queued on it: the destroy waits for the work and is
 * finished by the stream's own last completion, which must not touch the freed stream. */
static void test_destroy_stream_with_queued_work(void)
{
    struct client vm;
    uint8_t params[16] = {0};

    g_assert_true(client_open(&vm, H, "vm-destroy", false));
    struct ctx_objects a = create_all(&vm, 11);
    struct kernelet_handle s = {.handle = a.stream};
    harness_hold(H, true);
    g_assert_cmpint(client_launches_on(&vm, a.stream, a.function, params, 16, 30, 256, false), ==,
                    KERNELET_ST_OK);
    uint64_t id = client_send(&vm, KERNELET_OP_STREAM_DESTROY, &s, sizeof(s), -1);
    harness_hold(H, false);
    g_assert_cmpint(client_recv(&vm, KERNELET_OP_STREAM_DESTROY, id), ==, KERNELET_ST_OK);
    g_assert_cmpint(on_handle(&vm, KERNELET_OP_STREAM_SYNC, a.stream), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(vm.cuda, ==, 400);
    g_assert_cmpint(client_sync(&vm), ==, KERNELET_ST_OK);
    client_close(&vm);
}

/* A guest process dies while its stream synchronisation is pending, and the device sends
 * CONTEXT_CLOSE right behind it: the close frees the stream the sync waits on. Both are
 * answered (in either order) once the queued work has run, and the daemon stays sound. */
static void test_close_with_pending_sync(void)
{
    struct client vm, admin;
    uint8_t params[16] = {0};

    g_assert_true(client_open(&vm, H, "vm-pending", false));
    g_assert_true(client_open(&admin, H, "ctl", true));
    struct ctx_objects a = create_all(&vm, 12);
    struct kernelet_handle s = {.handle = a.stream};
    harness_hold(H, true);
    g_assert_cmpint(client_launches_on(&vm, a.stream, a.function, params, 16, 30, 256, false), ==,
                    KERNELET_ST_OK);
    uint64_t sync_id = client_send(&vm, KERNELET_OP_STREAM_SYNC, &s, sizeof(s), -1);
    uint64_t destroy_id = client_send(&vm, KERNELET_OP_STREAM_DESTROY, &s, sizeof(s), -1);
    uint64_t close_id = client_send(&vm, KERNELET_OP_CONTEXT_CLOSE, NULL, 0, -1);
    harness_hold(H, false);
    unsigned seen = 0;
    for (int i = 0; i < 3; i++) {
        g_assert_cmpint(client_recv(&vm, 0, 0), >=, 0);
        seen |= (vm.answer_op == KERNELET_OP_STREAM_SYNC && vm.answer_id == sync_id) << 0;
        seen |= (vm.answer_op == KERNELET_OP_STREAM_DESTROY && vm.answer_id == destroy_id) << 1;
        seen |= (vm.answer_op == KERNELET_OP_CONTEXT_CLOSE && vm.answer_id == close_id &&
                 vm.status == KERNELET_ST_OK) << 2;
    }
    g_assert_cmpuint(seen, ==, 7);
    assert_gone(&vm, &a);
    g_assert_cmpuint(client_tenant_row(&admin, vm.tenant).mem_in_use, ==, 0);
    client_close(&admin);
    client_close(&vm);
}

static void test_close_is_validated(void)
{
    struct client vm, admin;
    uint32_t junk = 1;

    g_assert_true(client_open(&vm, H, "vm-junk", false));
    vm.context = 9;
    (void)client_alloc(&vm, 4096);
    g_assert_cmpint(client_call(&vm, KERNELET_OP_CONTEXT_CLOSE, &junk, sizeof(junk), -1), ==,
                    KERNELET_ST_BAD_REQUEST);
    /* Nothing was freed by the refused request. */
    g_assert_true(client_open(&admin, H, "ctl", true));
    g_assert_cmpuint(client_tenant_row(&admin, vm.tenant).mem_in_use, ==, 4096);
    /* Administration connections own no contexts. */
    g_assert_cmpint(client_call(&admin, KERNELET_OP_CONTEXT_CLOSE, NULL, 0, -1), ==,
                    KERNELET_ST_BAD_OPCODE);
    client_close(&admin);
    client_close(&vm);
}

int main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    H = harness_start();
    g_test_add_func("/server/contexts/close-frees-only-its-own", test_close_frees_only_its_own);
    g_test_add_func("/server/contexts/close-waits-for-queued-work", test_close_waits_for_queued_work);
    g_test_add_func("/server/contexts/memory-is-per-context", test_memory_is_per_context);
    g_test_add_func("/server/contexts/module-variables-are-per-context",
                    test_module_variables_are_per_context);
    g_test_add_func("/server/contexts/sticky-error-is-per-context", test_sticky_error_is_per_context);
    g_test_add_func("/server/contexts/destroy-stream-with-queued-work",
                    test_destroy_stream_with_queued_work);
    g_test_add_func("/server/contexts/close-with-pending-sync", test_close_with_pending_sync);
    g_test_add_func("/server/contexts/close-is-validated", test_close_is_validated);
    rc = g_test_run();
    harness_stop(H);
    return rc;
}
