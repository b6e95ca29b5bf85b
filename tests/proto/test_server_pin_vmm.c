/* Pinning a tenant's shared-memory region and its VMM requests do not stall the protocol
 * server (issue 15): SHM_ATTACH's and SHM_MAP_DEVICE's pinning, SHM_DETACH's unpinning,
 * VMM_CREATE, VMM_MAP, VMM_UNMAP and VMM_RELEASE run off the event loop (host-sched/
 * server/server_call.c), the VMM ones without the scheduler's lock (the device says
 * vmm_unlocked), so other connections are served and their kernels complete meanwhile,
 * and the connection's later requests are answered after, in order. A tenant that hangs
 * up, or a server stopped, during one leaks nothing (the 'san' suite runs this under ASan
 * and UBSan too).
 *
 * The backend is the sim with host_register and the vmm_* ops of the test's (the sim has
 * neither): a registration of SLOW_BYTES, the unregistration of a base the test chose, a
 * creation of SLOW_BYTES and every mapping, while the gate of tests/test_gate.h is armed,
 * wait in the backend until the test opens it (or GATE_TIMEOUT_US passes: a server that
 * called the backend on its event loop, or a scheduler that held its lock, would
 * otherwise never let the test go on). Kernels are not fenced, so VMM is served. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <glib.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../test_gate.h"
#include "server_harness.h"

#define SLOW_BYTES (8ull << 20)
#define GRANULE KBACKEND_VMM_GRANULE
#define GATE_TIMEOUT_US 3000000
#define ANSWER_MS 2000          /* an answer that needs no gated call comes by then */
#define FAKE_VA (1ull << 45)

static struct {
    struct test_gate gate;      /* its lock is g's */
    const kbackend_ops *sim;
    unsigned pinned, handles, maps; /* live registrations, VMM handles, mappings */
    uintptr_t gated_unpin;      /* its unregistration waits at the gate (armed) */
    uintptr_t last_pinned;      /* the base registered last */
    uint64_t next_va, next_handle;
} g;

static kbackend_ops gated_ops;

static int gated_info(void *state, kbackend_device_info *out, kbackend_error *err)
{
    int rc = g.sim->device_info(state, out, err);
    out->vmm_unlocked = 1;
    return rc;
}

static int gated_register(void *state, void *base, uint64_t bytes, kbackend_devptr *device,
                          kbackend_error *err)
{
    (void)state;
    (void)err;
    g_mutex_lock(&g.gate.lock);
    if (g.gate.armed && bytes == SLOW_BYTES)
        tgate_pass(&g.gate, GATE_TIMEOUT_US);
    g.pinned++;
    g.last_pinned = (uintptr_t)base;
    *device = (uintptr_t)base; /* the host's address, as with unified addressing */
    g_mutex_unlock(&g.gate.lock);
    return 0;
}

static void gated_unregister(void *state, void *base)
{
    (void)state;
    g_mutex_lock(&g.gate.lock);
    if (g.gate.armed && (uintptr_t)base == g.gated_unpin)
        tgate_pass(&g.gate, GATE_TIMEOUT_US);
    g_assert_cmpuint(g.pinned, >, 0);
    g.pinned--;
    g_mutex_unlock(&g.gate.lock);
}

static int fake_reserve(void *state, uint64_t bytes, uint64_t align, kbackend_devptr *va,
                        kbackend_error *err)
{
    (void)state;
    (void)align;
    (void)err;
    g_mutex_lock(&g.gate.lock);
    *va = FAKE_VA + g.next_va;
    g.next_va += bytes;
    g_mutex_unlock(&g.gate.lock);
    return 0;
}

static void fake_free(void *state, kbackend_devptr va, uint64_t bytes)
{
    (void)state;
    (void)va;
    (void)bytes;
}

static int gated_create(void *state, uint64_t bytes, uint64_t *handle, kbackend_error *err)
{
    (void)state;
    (void)err;
    g_mutex_lock(&g.gate.lock);
    if (g.gate.armed && bytes == SLOW_BYTES)
        tgate_pass(&g.gate, GATE_TIMEOUT_US);
    *handle = ++g.next_handle;
    g.handles++;
    g_mutex_unlock(&g.gate.lock);
    return 0;
}

static void counted_release(void *state, uint64_t handle)
{
    (void)state;
    (void)handle;
    g_mutex_lock(&g.gate.lock);
    g_assert_cmpuint(g.handles, >, 0);
    g.handles--;
    g_mutex_unlock(&g.gate.lock);
}

static int gated_map(void *state, kbackend_devptr va, uint64_t bytes, uint64_t handle,
                     uint64_t offset, kbackend_error *err)
{
    (void)state;
    (void)va;
    (void)bytes;
    (void)handle;
    (void)offset;
    (void)err;
    g_mutex_lock(&g.gate.lock);
    if (g.gate.armed)
        tgate_pass(&g.gate, GATE_TIMEOUT_US);
    g.maps++;
    g_mutex_unlock(&g.gate.lock);
    return 0;
}

static void counted_unmap(void *state, kbackend_devptr va, uint64_t bytes)
{
    (void)state;
    (void)va;
    (void)bytes;
    g_mutex_lock(&g.gate.lock);
    g_assert_cmpuint(g.maps, >, 0);
    g.maps--;
    g_mutex_unlock(&g.gate.lock);
}

static void wrap(kbackend *b)
{
    g.sim = b->ops;
    gated_ops = *b->ops;
    gated_ops.device_info = gated_info;
    gated_ops.host_register = gated_register;
    gated_ops.host_unregister = gated_unregister;
    gated_ops.vmm_reserve = fake_reserve;
    gated_ops.vmm_free = fake_free;
    gated_ops.vmm_create = gated_create;
    gated_ops.vmm_release = counted_release;
    gated_ops.vmm_map = gated_map;
    gated_ops.vmm_unmap = counted_unmap;
    b->ops = &gated_ops;
}

/* A server with tenant a connected (and b, unless NULL). */
static struct harness *start_with(struct client *a, struct client *b)
{
    g_mutex_lock(&g.gate.lock);
    g.gate.armed = g.gate.open = g.gate.timed_out = 0;
    g.gate.entered = g.pinned = g.handles = g.maps = 0;
    g.gated_unpin = 0;
    g_mutex_unlock(&g.gate.lock);
    struct harness *h = harness_start_wrapped_unfenced(wrap);
    g_assert_true(client_open(a, h, "a", false));
    if (b)
        g_assert_true(client_open(b, h, "b", false));
    return h;
}

/* Waits (5 s at most) until *count, under the gate's lock, is n, and asserts it. */
static void wait_count(const unsigned *count, unsigned n)
{
    int64_t until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    unsigned now;
    for (;;) {
        g_mutex_lock(&g.gate.lock);
        now = *count;
        g_mutex_unlock(&g.gate.lock);
        if (now == n || g_get_monotonic_time() > until)
            break;
        usleep(10000);
    }
    g_assert_cmpuint(now, ==, n);
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

/* b's k_add, its module loaded, and 4 KiB of its memory: what others_served runs. */
struct other {
    uint64_t fn, p;
};

static struct other other_ready(struct client *b)
{
    struct kernelet_function f;
    struct kernelet_param params[8];
    struct other o = {.p = client_alloc(b, 4096)};
    o.fn = client_function(b, client_module_ptx(b, harness_ptx), "k_add", &f, params);
    g_assert_cmpuint(o.fn, !=, 0);
    return o;
}

/* While the gate is closed, b's synchronisation, allocation and free, and launches (waited
 * for: the scheduler decides and completes them) are answered. */
static void others_served(struct client *b, const struct other *o)
{
    struct {
        uint64_t p;
        uint32_t n, v;
    } args = {o->p, 1024, 1};

    g_assert_cmpint(call_during(b, KERNELET_OP_CTX_SYNC, NULL, 0), ==, KERNELET_ST_OK);
    struct kernelet_mem_alloc q = {.size = 8192};
    g_assert_cmpint(call_during(b, KERNELET_OP_MEM_ALLOC, &q, sizeof(q)), ==, KERNELET_ST_OK);
    struct kernelet_mem_ptr bq;
    memcpy(&bq, b->answer, sizeof(bq));
    g_assert_cmpint(call_during(b, KERNELET_OP_MEM_FREE, &bq, sizeof(bq)), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_launches(b, o->fn, &args, sizeof(args), 3, 128, true), ==,
                    KERNELET_ST_OK);
    g_assert_false(tgate_timed_out(&g.gate));
}

/* Request id of a, held at the gate: b is served meanwhile, a's synchronisation sent after
 * it waits; once the gate opens, the request is answered (status), then the
 * synchronisation. The answer's payload is left in a->answer. */
static void held_then_answered(struct client *a, struct client *b, uint16_t op, uint64_t id,
                               int status)
{
    struct other o = other_ready(b);
    tgate_wait_entered(&g.gate, 1);
    others_served(b, &o);
    uint64_t sync = client_send(a, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    g_assert_false(client_answer_waiting(a, 200));
    tgate_open(&g.gate);
    g_assert_cmpint(client_recv(a, op, id), ==, status);
    uint8_t answer[64];
    memcpy(answer, a->answer, sizeof(answer));
    g_assert_cmpint(client_recv(a, KERNELET_OP_CTX_SYNC, sync), ==, KERNELET_ST_OK);
    memcpy(a->answer, answer, sizeof(answer));
    g_assert_false(tgate_timed_out(&g.gate));
}

/* ---- regions ---- */

/* A sealed memfd of size bytes (the caller closes it). */
static int memfd_of(size_t size)
{
    int fd = memfd_create("test-pin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, (off_t)size), ==, 0);
    g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), ==, 0);
    return fd;
}

static uint64_t send_attach(struct client *c, size_t size)
{
    struct kernelet_shm_attach q = {.size = size};
    int fd = memfd_of(size);
    uint64_t id = client_send(c, KERNELET_OP_SHM_ATTACH, &q, sizeof(q), fd);
    close(fd);
    g_assert_cmpuint(id, !=, 0);
    return id;
}

static uint32_t region_of(const struct client *c)
{
    struct kernelet_shm_region r;
    memcpy(&r, c->answer, sizeof(r));
    return r.region;
}

/* SHM_ATTACH's pinning of a large region: b is served meanwhile, a's next request waits;
 * copies through the region work after. */
static void test_attach(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);

    tgate_arm(&g.gate);
    uint64_t id = send_attach(&a, SLOW_BYTES);
    held_then_answered(&a, &b, KERNELET_OP_SHM_ATTACH, id, KERNELET_ST_OK);
    uint32_t region = region_of(&a);
    uint64_t p = client_alloc(&a, 4096);
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_HTOD, region, p, 0, 4096, NULL, 0, true), ==,
                    KERNELET_ST_OK);
    wait_count(&g.pinned, 1);
    client_close(&a);
    client_close(&b);
    harness_stop(h);
    g_assert_cmpuint(g.pinned, ==, 0);
}

/* An address where SLOW_BYTES are free, far from where mmap places mappings: one just
 * unmapped would be taken again by the next mapping of any thread of this process (under
 * ASan and load, now and then before the server's move, which then finds it occupied). */
static void *far_free_address(void)
{
    for (uintptr_t at = (uintptr_t)0x5a0000000000ull; at < (uintptr_t)0x5b0000000000ull;
         at += (uintptr_t)1 << 32) {
        void *p = mmap((void *)at, SLOW_BYTES, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == (void *)at) {
            g_assert_cmpint(munmap(p, SLOW_BYTES), ==, 0);
            return p;
        }
        if (p != MAP_FAILED)
            munmap(p, SLOW_BYTES);
    }
    g_error("no free address for the region's move");
    return NULL;
}

/* SHM_MAP_DEVICE moving the region to a's free address and pinning it there: b is served
 * meanwhile; the answer's device pointer is a's address. */
static void test_map_device(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    void *mapped;
    uint32_t region = client_region(&a, SLOW_BYTES, &mapped);
    void *mine = far_free_address();    /* a's address, free in this process */

    tgate_arm(&g.gate);
    struct kernelet_shm_map_device q = {.region = region, .address = (uintptr_t)mine};
    uint64_t id = client_send(&a, KERNELET_OP_SHM_MAP_DEVICE, &q, sizeof(q), -1);
    held_then_answered(&a, &b, KERNELET_OP_SHM_MAP_DEVICE, id, KERNELET_ST_OK);
    struct kernelet_shm_device d;
    memcpy(&d, a.answer, sizeof(d));
    g_assert_cmpuint(d.device_ptr, ==, (uintptr_t)mine);
    wait_count(&g.pinned, 1);
    client_close(&a);
    client_close(&b);
    harness_stop(h);
    g_assert_cmpuint(g.pinned, ==, 0);
    munmap(mapped, SLOW_BYTES);
}

/* SHM_DETACH's unpinning: b is served meanwhile; nothing is pinned after. */
static void test_detach(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    uint64_t aid = send_attach(&a, 4096);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_SHM_ATTACH, aid), ==, KERNELET_ST_OK);
    struct kernelet_shm_region r = {.region = region_of(&a)};
    wait_count(&g.pinned, 1);

    tgate_arm(&g.gate);
    g_mutex_lock(&g.gate.lock);
    g.gated_unpin = g.last_pinned; /* the daemon's mapping of it */
    g_mutex_unlock(&g.gate.lock);
    uint64_t id = client_send(&a, KERNELET_OP_SHM_DETACH, &r, sizeof(r), -1);
    held_then_answered(&a, &b, KERNELET_OP_SHM_DETACH, id, KERNELET_ST_OK);
    g_assert_cmpuint(g.pinned, ==, 0);
    client_close(&a);
    client_close(&b);
    harness_stop(h);
}

/* A tenant that hangs up while its region is being pinned (a request queued behind): b is
 * served, and the region is unpinned and unmapped once the call is back. */
static void test_pin_hang_up(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    struct other o = other_ready(&b);

    tgate_arm(&g.gate);
    send_attach(&a, SLOW_BYTES);
    tgate_wait_entered(&g.gate, 1);
    client_send(&a, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    client_close(&a);
    others_served(&b, &o);
    tgate_open(&g.gate);
    wait_count(&g.pinned, 0);
    int64_t until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (harness_connections(h) != 1 && g_get_monotonic_time() < until)
        usleep(10000);
    g_assert_cmpuint(harness_connections(h), ==, 1);
    g_assert_false(tgate_timed_out(&g.gate));
    client_close(&b);
    harness_stop(h);
}

/* A tenant that hangs up with a region pinned: its unpinning runs off the event loop (a
 * VM's RAM takes as long to unpin as to pin), b served while it is held in the backend;
 * the region is unpinned once it is let go. */
static void test_unpin_at_hang_up(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    struct other o = other_ready(&b);
    uint64_t aid = send_attach(&a, 4096);
    g_assert_cmpint(client_recv(&a, KERNELET_OP_SHM_ATTACH, aid), ==, KERNELET_ST_OK);
    wait_count(&g.pinned, 1);

    tgate_arm(&g.gate);
    g_mutex_lock(&g.gate.lock);
    g.gated_unpin = g.last_pinned;
    g_mutex_unlock(&g.gate.lock);
    client_close(&a);
    tgate_wait_entered(&g.gate, 1);
    others_served(&b, &o);
    tgate_open(&g.gate);
    wait_count(&g.pinned, 0);
    g_assert_false(tgate_timed_out(&g.gate));
    client_close(&b);
    harness_stop(h);
}

/* The server stopped while a region is being pinned (b served meanwhile): the stop waits
 * for the call and leaves nothing pinned. */
static void test_pin_stop(void)
{
    struct client a, b;
    pthread_t opener;
    struct harness *h = start_with(&a, &b);

    tgate_arm(&g.gate);
    send_attach(&a, SLOW_BYTES);
    client_send(&a, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    tgate_wait_entered(&g.gate, 1);
    g_assert_cmpint(call_during(&b, KERNELET_OP_CTX_SYNC, NULL, 0), ==, KERNELET_ST_OK);
    g_assert_cmpint(pthread_create(&opener, NULL, tgate_open_later, &g.gate), ==, 0);
    harness_stop(h);
    pthread_join(opener, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(g.pinned, ==, 0);
    client_close(&a);
    client_close(&b);
}

/* ---- VMM ---- */

static int vmm_call(struct client *c, uint16_t op, uint64_t va, uint64_t size, uint64_t offset,
                    uint64_t arg)
{
    struct kernelet_vmm v = {.va = va, .size = size, .offset = offset, .arg = arg};
    return client_call(c, op, &v, sizeof(v), -1);
}

static uint64_t vmm_send(struct client *c, uint16_t op, uint64_t va, uint64_t size,
                         uint64_t offset, uint64_t arg)
{
    struct kernelet_vmm v = {.va = va, .size = size, .offset = offset, .arg = arg};
    uint64_t id = client_send(c, op, &v, sizeof(v), -1);
    g_assert_cmpuint(id, !=, 0);
    return id;
}

static uint32_t handle_of(const struct client *c)
{
    struct kernelet_handle k;
    memcpy(&k, c->answer, sizeof(k));
    return k.handle;
}

static uint64_t reserve(struct client *c, uint64_t size)
{
    struct kernelet_mem_ptr p;
    g_assert_cmpint(vmm_call(c, KERNELET_OP_VMM_RESERVE, 0, size, 0, 0), ==, KERNELET_ST_OK);
    memcpy(&p, c->answer, sizeof(p));
    return p.dptr;
}

/* VMM_CREATE of a large handle: b is served (its kernels complete: the scheduler's lock is
 * free) meanwhile, a's next request waits. */
static void test_vmm_create(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);

    tgate_arm(&g.gate);
    uint64_t id = vmm_send(&a, KERNELET_OP_VMM_CREATE, 0, SLOW_BYTES, 0, 0);
    held_then_answered(&a, &b, KERNELET_OP_VMM_CREATE, id, KERNELET_ST_OK);
    uint32_t handle = handle_of(&a);
    g_assert_cmpuint(handle, !=, 0);
    g_assert_cmpint(vmm_call(&a, KERNELET_OP_VMM_RELEASE, 0, 0, 0, handle), ==, KERNELET_ST_OK);
    wait_count(&g.handles, 0);
    client_close(&a);
    client_close(&b);
    harness_stop(h);
}

/* VMM_MAP into a reservation, then its unmapping and the release: b is served while the
 * mapping is in the backend; a's copies reach the mapped range after. */
static void test_vmm_map(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    uint64_t va = reserve(&a, 4 * GRANULE);
    g_assert_cmpint(vmm_call(&a, KERNELET_OP_VMM_CREATE, 0, GRANULE, 0, 0), ==, KERNELET_ST_OK);
    uint32_t handle = handle_of(&a);

    tgate_arm(&g.gate);
    uint64_t id = vmm_send(&a, KERNELET_OP_VMM_MAP, va, GRANULE, 0, handle);
    held_then_answered(&a, &b, KERNELET_OP_VMM_MAP, id, KERNELET_ST_OK);
    wait_count(&g.maps, 1);
    /* the same range again: refused, as natively */
    g_assert_cmpint(vmm_call(&a, KERNELET_OP_VMM_MAP, va, GRANULE, 0, handle), ==,
                    KERNELET_ST_CUDA);
    g_assert_cmpint(vmm_call(&a, KERNELET_OP_VMM_UNMAP, va, GRANULE, 0, 0), ==, KERNELET_ST_OK);
    wait_count(&g.maps, 0);
    g_assert_cmpint(vmm_call(&a, KERNELET_OP_VMM_RELEASE, 0, 0, 0, handle), ==, KERNELET_ST_OK);
    wait_count(&g.handles, 0);
    g_assert_cmpint(vmm_call(&a, KERNELET_OP_VMM_FREE, va, 0, 0, 0), ==, KERNELET_ST_OK);
    client_close(&a);
    client_close(&b);
    harness_stop(h);
}

/* A tenant that hangs up while its mapping is in the backend (a request queued behind):
 * b is served, and its memory and mappings go with it once the call is back. */
static void test_vmm_hang_up(void)
{
    struct client a, b;
    struct harness *h = start_with(&a, &b);
    struct other o = other_ready(&b);
    uint64_t va = reserve(&a, 4 * GRANULE);
    g_assert_cmpint(vmm_call(&a, KERNELET_OP_VMM_CREATE, 0, GRANULE, 0, 0), ==, KERNELET_ST_OK);
    uint32_t handle = handle_of(&a);

    tgate_arm(&g.gate);
    vmm_send(&a, KERNELET_OP_VMM_MAP, va, GRANULE, 0, handle);
    tgate_wait_entered(&g.gate, 1);
    vmm_send(&a, KERNELET_OP_VMM_CREATE, 0, GRANULE, 0, 0);
    client_close(&a);
    others_served(&b, &o);
    tgate_open(&g.gate);
    wait_count(&g.maps, 0);
    wait_count(&g.handles, 0);
    g_assert_false(tgate_timed_out(&g.gate));
    client_close(&b);
    harness_stop(h);
}

/* The server stopped while a creation is in the backend (b served meanwhile): the stop
 * waits for it and leaves no memory behind. */
static void test_vmm_stop(void)
{
    struct client a, b;
    pthread_t opener;
    struct harness *h = start_with(&a, &b);

    tgate_arm(&g.gate);
    vmm_send(&a, KERNELET_OP_VMM_CREATE, 0, SLOW_BYTES, 0, 0);
    client_send(&a, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    tgate_wait_entered(&g.gate, 1);
    g_assert_cmpint(call_during(&b, KERNELET_OP_CTX_SYNC, NULL, 0), ==, KERNELET_ST_OK);
    g_assert_cmpint(pthread_create(&opener, NULL, tgate_open_later, &g.gate), ==, 0);
    harness_stop(h);
    pthread_join(opener, NULL);
    g_assert_false(tgate_timed_out(&g.gate));
    g_assert_cmpuint(g.handles, ==, 0);
    client_close(&a);
    client_close(&b);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/server/pin/attach", test_attach);
    g_test_add_func("/server/pin/map-device", test_map_device);
    g_test_add_func("/server/pin/detach", test_detach);
    g_test_add_func("/server/pin/hang-up", test_pin_hang_up);
    g_test_add_func("/server/pin/unpin-at-hang-up", test_unpin_at_hang_up);
    g_test_add_func("/server/pin/stop", test_pin_stop);
    g_test_add_func("/server/vmm/create", test_vmm_create);
    g_test_add_func("/server/vmm/map", test_vmm_map);
    g_test_add_func("/server/vmm/hang-up", test_vmm_hang_up);
    g_test_add_func("/server/vmm/stop", test_vmm_stop);
    return g_test_run();
}
