/* kerneletd's protocol server against well-behaved and hostile clients (sim backend, in
 * process): framing errors, foreign handles, out-of-range copies, shared-memory regions,
 * quota, disconnects in the middle of a message, many tenants, launches and their
 * parameter layout, a batch held back by max-inflight, module variables of two tenants,
 * events, administration. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <glib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server_harness.h"

static struct harness *H;

static void wait_connections(unsigned n)
{
    for (int i = 0; i < 2000 && harness_connections(H) != n; i++)
        g_usleep(1000);
    g_assert_cmpuint(harness_connections(H), ==, n);
}

static void test_hello_and_device(void)
{
    struct client c;
    struct kernelet_device_get q = {.ordinal = 0};
    struct kernelet_device d;

    g_assert_true(client_open(&c, H, "dev", false));
    g_assert_cmpint(client_call(&c, KERNELET_OP_DEVICE_GET, &q, sizeof(q), -1), ==, KERNELET_ST_OK);
    memcpy(&d, c.answer, sizeof(d));
    g_assert_cmpuint(d.n_attrs, ==, KERNELET_DEVICE_ATTRS);
    g_assert_cmpint(d.attrs[10 /* warp size */], ==, 32);
    g_assert_cmpint(d.attrs[16 /* SMs */], >, 0);
    g_assert_cmpuint(d.total_mem, >, 0);
    q.ordinal = 1;
    g_assert_cmpint(client_call(&c, KERNELET_OP_DEVICE_GET, &q, sizeof(q), -1), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 101 /* CUDA_ERROR_INVALID_DEVICE */);
    /* A second HELLO is refused, the connection stays. */
    struct kernelet_hello h = {.proto_version = KERNELET_PROTO_VERSION};
    g_assert_cmpint(client_call(&c, KERNELET_OP_HELLO, &h, sizeof(h), -1), ==, KERNELET_ST_BAD_REQUEST);
    g_assert_cmpint(client_call(&c, KERNELET_OP_GET_INFO, NULL, 0, -1), ==, KERNELET_ST_OK);
    client_close(&c);

    /* A major version the server does not speak. */
    g_assert_true(client_connect(&c, H));
    h.proto_version = (KERNELET_PROTO_MAJOR + 1) << 16;
    g_assert_cmpint(client_call(&c, KERNELET_OP_HELLO, &h, sizeof(h), -1), ==, KERNELET_ST_VERSION);
    client_close(&c);
}

static void test_framing(void)
{
    struct client c;
    uint8_t hdr[KERNELET_HDR_SIZE];

    /* Anything but HELLO first ends the connection. */
    g_assert_true(client_connect(&c, H));
    g_assert_cmpint(client_call(&c, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1), ==, KERNELET_ST_BAD_REQUEST);
    g_assert_true(client_closed_by_server(&c, 2000));
    client_close(&c);

    /* Reserved header bits: an error answer, then the connection is closed. */
    g_assert_true(client_open(&c, H, "framing", false));
    kproto_hdr_put(hdr, KERNELET_OP_CTX_SYNC, 0, 7, 0);
    hdr[2] = 1;
    g_assert_true(client_send_raw(&c, hdr, sizeof(hdr)));
    g_assert_true(client_closed_by_server(&c, 2000));
    client_close(&c);

    /* A length beyond the limit. */
    g_assert_true(client_open(&c, H, "framing", false));
    kproto_hdr_put(hdr, KERNELET_OP_CTX_SYNC, KERNELET_MAX_REQUEST, 8, 0);
    g_assert_true(client_send_raw(&c, hdr, sizeof(hdr)));
    g_assert_true(client_closed_by_server(&c, 2000));
    client_close(&c);

    /* Unknown opcodes and malformed payloads get answers; the connection goes on. */
    g_assert_true(client_open(&c, H, "framing", false));
    g_assert_cmpint(client_call(&c, 0x0777, NULL, 0, -1), ==, KERNELET_ST_BAD_OPCODE);
    g_assert_cmpint(client_call(&c, KERNELET_OP_MEM_ALLOC, "abc", 3, -1), ==, KERNELET_ST_BAD_REQUEST);
    g_assert_cmpint(client_call(&c, KERNELET_OP_ADMIN_STATUS, (uint8_t[8]){0}, 8, -1), ==,
                    KERNELET_ST_BAD_OPCODE); /* a tenant may not administer */
    g_assert_cmpint(client_sync(&c), ==, KERNELET_ST_OK);
    client_close(&c);
    wait_connections(0);
}

static void test_copies_round_trip(void)
{
    struct client c;
    uint8_t data[4096], *region;
    uint32_t rid;
    uint64_t d;

    for (unsigned i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + 3);
    g_assert_true(client_open(&c, H, "copies", false));
    d = client_alloc(&c, 8192);
    rid = client_region(&c, 65536, (void **)&region);
    /* Inline host-to-device, then device-to-host into the region; compare. */
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, d + 100, 0,
                                sizeof(data), data, 0, true), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 1000, d + 100, sizeof(data), NULL, 0,
                                true), ==, KERNELET_ST_OK);
    g_assert_cmpmem(region + 1000, sizeof(data), data, sizeof(data));
    /* Region to device, device to device, back. */
    memset(region, 0x5a, 512);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_HTOD, rid, d, 0, 512, NULL, 0, false), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOD, 0, d + 4096, d, 512, NULL, 0, false), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 20000, d + 4096, 512, NULL, 0, true), ==, KERNELET_ST_OK);
    for (int i = 0; i < 512; i++)
        g_assert_cmpuint(region[20000 + i], ==, 0x5a);
    g_assert_cmpint(client_free(&c, d), ==, KERNELET_ST_OK);
    client_close(&c);
}

static void test_out_of_range(void)
{
    struct client c;
    uint8_t *region;
    uint32_t rid;
    uint64_t d;

    g_assert_true(client_open(&c, H, "ranges", false));
    d = client_alloc(&c, 1024);
    rid = client_region(&c, 4096, (void **)&region);
    /* Past the end of the allocation, before it, and past the region. */
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 0, d + 1000, 100, NULL, 0, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 1 /* INVALID_VALUE */);
    g_assert_cmpuint(c.index, ==, 0);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_HTOD, rid, d - 16, 0, 32, NULL, 0, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 4000, d, 200, NULL, 0, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, 77, 0, d, 16, NULL, 0, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_HTOD, rid, UINT64_MAX - 8, 0, 16, NULL, 0, false), ==, KERNELET_ST_CUDA);
    /* A pointer that was never allocated cannot be freed; a freed one not twice. */
    g_assert_cmpint(client_free(&c, d + 8), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_free(&c, d), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_free(&c, d), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 0, d, 16, NULL, 0, false), ==, KERNELET_ST_CUDA);
    client_close(&c);
}

static void test_foreign_handles(void)
{
    struct client a, b;
    uint8_t secret[256], *ra, *rb;
    uint32_t rida, ridb;
    uint64_t da;
    struct kernelet_stream_create sc = {0};
    struct kernelet_handle sa, ea;
    struct kernelet_event_create ec = {0};

    memset(secret, 0xab, sizeof(secret));
    g_assert_true(client_open(&a, H, "alice", false));
    g_assert_true(client_open(&b, H, "mallory", false));
    da = client_alloc(&a, 4096);
    rida = client_region(&a, 4096, (void **)&ra);
    ridb = client_region(&b, 4096, (void **)&rb);
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, da, 0, sizeof(secret), secret, 0, true), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_call(&a, KERNELET_OP_STREAM_CREATE, &sc, sizeof(sc), -1), ==, KERNELET_ST_OK);
    memcpy(&sa, a.answer, sizeof(sa));
    g_assert_cmpint(client_call(&a, KERNELET_OP_EVENT_CREATE, &ec, sizeof(ec), -1), ==, KERNELET_ST_OK);
    memcpy(&ea, a.answer, sizeof(ea));

    /* Mallory reads, writes and frees Alice's memory, uses her stream, event and region. */
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_DTOH, ridb, 0, da, 64, NULL, 0, true), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, da, 0, 8, "xxxxxxxx", 0, true), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_free(&b, da), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_HTOD, ridb, da, 0, 8, NULL, sa.handle, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(b.cuda, ==, 400 /* INVALID_HANDLE */);
    g_assert_cmpint(client_call(&b, KERNELET_OP_STREAM_SYNC, &sa, sizeof(sa), -1), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_call(&b, KERNELET_OP_EVENT_SYNC, &ea, sizeof(ea), -1), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_call(&b, KERNELET_OP_STREAM_DESTROY, &sa, sizeof(sa), -1), ==, KERNELET_ST_CUDA);
    struct kernelet_shm_region detach = {.region = rida};
    if (rida != ridb) /* ids are per connection: Mallory's own region may share the number */
        g_assert_cmpint(client_call(&b, KERNELET_OP_SHM_DETACH, &detach, sizeof(detach), -1), ==, KERNELET_ST_CUDA);
    /* A handle of the wrong kind is no handle either. */
    struct kernelet_handle as_module = {.handle = ea.handle};
    g_assert_cmpint(client_call(&a, KERNELET_OP_MODULE_UNLOAD, &as_module, sizeof(as_module), -1), ==, KERNELET_ST_CUDA);

    /* Alice's data is intact and her objects work. */
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_DTOH, rida, 0, da, sizeof(secret), NULL, sa.handle, true), ==, KERNELET_ST_OK);
    g_assert_cmpmem(ra, sizeof(secret), secret, sizeof(secret));
    g_assert_cmpint(client_call(&a, KERNELET_OP_STREAM_DESTROY, &sa, sizeof(sa), -1), ==, KERNELET_ST_OK);
    client_close(&a);
    client_close(&b);
}

static void test_regions(void)
{
    struct client c;
    struct kernelet_shm_attach q = {.size = 8192};
    int fd;

    g_assert_true(client_open(&c, H, "regions", false));
    /* No descriptor with the request. */
    g_assert_cmpint(client_call(&c, KERNELET_OP_SHM_ATTACH, &q, sizeof(q), -1), ==, KERNELET_ST_BAD_REQUEST);
    /* Not sealed against shrinking: the daemon's mapping could fault. */
    fd = memfd_create("unsealed", MFD_CLOEXEC);
    g_assert_cmpint(ftruncate(fd, 8192), ==, 0);
    g_assert_cmpint(client_call(&c, KERNELET_OP_SHM_ATTACH, &q, sizeof(q), fd), ==, KERNELET_ST_CUDA);
    close(fd);
    /* Sealed but smaller than claimed. */
    fd = memfd_create("small", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(ftruncate(fd, 4096), ==, 0);
    g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), ==, 0);
    g_assert_cmpint(client_call(&c, KERNELET_OP_SHM_ATTACH, &q, sizeof(q), fd), ==, KERNELET_ST_CUDA);
    close(fd);
    /* Not a memfd at all. */
    fd = open("/dev/null", O_RDWR);
    g_assert_cmpint(client_call(&c, KERNELET_OP_SHM_ATTACH, &q, sizeof(q), fd), ==, KERNELET_ST_CUDA);
    close(fd);
    /* Detaching a region that does not exist. */
    struct kernelet_shm_region r = {.region = 12345};
    g_assert_cmpint(client_call(&c, KERNELET_OP_SHM_DETACH, &r, sizeof(r), -1), ==, KERNELET_ST_CUDA);
    /* A good one, detached, is gone for copies. */
    void *base;
    uint32_t rid = client_region(&c, 8192, &base);
    uint64_t d = client_alloc(&c, 64);
    r.region = rid;
    g_assert_cmpint(client_call(&c, KERNELET_OP_SHM_DETACH, &r, sizeof(r), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_HTOD, rid, d, 0, 64, NULL, 0, true), ==, KERNELET_ST_CUDA);
    client_close(&c);
}

static void test_quota(void)
{
    struct client c, admin;
    struct kernelet_admin_set set = {.fields = KERNELET_SET_MEM_QUOTA, .mem_quota = 1 << 20};
    struct kernelet_mem_alloc q = {.size = 768 << 10};
    struct kernelet_mem_info info;

    g_assert_true(client_open(&c, H, "quota", false));
    g_assert_true(client_open(&admin, H, "ctl", true));
    set.tenant = c.tenant;
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_call(&c, KERNELET_OP_MEM_ALLOC, &q, sizeof(q), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_call(&c, KERNELET_OP_MEM_ALLOC, &q, sizeof(q), -1), ==, KERNELET_ST_QUOTA);
    g_assert_cmpint(client_call(&c, KERNELET_OP_MEM_GET_INFO, NULL, 0, -1), ==, KERNELET_ST_OK);
    memcpy(&info, c.answer, sizeof(info));
    g_assert_cmpuint(info.total, ==, 1 << 20);
    g_assert_cmpuint(info.free, ==, (1 << 20) - (768 << 10));
    /* A quota beyond what the tenant's address window holds is refused whole: the weight
     * sent beside it is not applied, the old quota stands. */
    struct kernelet_admin_set big = {.tenant = c.tenant,
                                     .fields = KERNELET_SET_MEM_QUOTA | KERNELET_SET_WEIGHT,
                                     .mem_quota = HARNESS_MAX_QUOTA + 1, .weight = 300};
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &big, sizeof(big), -1), ==,
                    KERNELET_ST_CUDA);
    g_assert_cmpuint(admin.cuda, ==, 1 /* INVALID_VALUE */);
    struct kernelet_tenant_status row = client_tenant_row(&admin, c.tenant);
    g_assert_cmpuint(row.mem_quota, ==, 1 << 20);
    g_assert_cmpuint(row.weight, ==, 100);
    big.mem_quota = HARNESS_MAX_QUOTA;      /* the whole window is fine */
    big.fields = KERNELET_SET_MEM_QUOTA;
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &big, sizeof(big), -1), ==,
                    KERNELET_ST_OK);
    /* Out-of-range policy values are refused by the decoder. */
    set.fields = KERNELET_SET_WEIGHT;
    set.weight = 0;
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==, KERNELET_ST_BAD_REQUEST);
    /* An unknown tenant. */
    set.weight = 200;
    set.tenant = 999999;
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==, KERNELET_ST_CUDA);
    client_close(&admin);
    client_close(&c);
}

/* A tenant's kernel time limit: it starts at the server's default, the operator sets one
 * of its own (status shows it), 0 returns to the default, and a value above a day is
 * refused whole: the weight sent beside it is not applied. */
static void test_admin_time_limit(void)
{
    struct client c, admin;
    struct kernelet_admin_set set = {.fields = KERNELET_SET_TIME_LIMIT,
                                     .kernel_time_limit_ms = 2500};

    g_assert_true(client_open(&c, H, "limited", false));
    g_assert_true(client_open(&admin, H, "ctl", true));
    set.tenant = c.tenant;
    g_assert_cmpuint(client_tenant_row(&admin, c.tenant).kernel_time_limit_ms, ==,
                     HARNESS_TIME_LIMIT_MS);
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_OK);
    g_assert_cmpuint(client_tenant_row(&admin, c.tenant).kernel_time_limit_ms, ==, 2500);
    set.fields |= KERNELET_SET_WEIGHT;
    set.weight = 300;
    set.kernel_time_limit_ms = KERNELET_TIME_LIMIT_MAX_MS + 1;
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_BAD_REQUEST);
    struct kernelet_tenant_status row = client_tenant_row(&admin, c.tenant);
    g_assert_cmpuint(row.kernel_time_limit_ms, ==, 2500);
    g_assert_cmpuint(row.weight, ==, 100);
    set.kernel_time_limit_ms = KERNELET_TIME_LIMIT_MAX_MS;
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_OK);
    row = client_tenant_row(&admin, c.tenant);
    g_assert_cmpuint(row.kernel_time_limit_ms, ==, KERNELET_TIME_LIMIT_MAX_MS);
    g_assert_cmpuint(row.weight, ==, 300);
    set.fields = KERNELET_SET_TIME_LIMIT;
    set.kernel_time_limit_ms = 0;
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_OK);
    g_assert_cmpuint(client_tenant_row(&admin, c.tenant).kernel_time_limit_ms, ==,
                     HARNESS_TIME_LIMIT_MS);
    client_close(&admin);
    client_close(&c);
}

/* A 2D memset with a 4-byte pattern (2 MiB rows: chunks of the 1 MiB pattern buffer) and
 * a 2D copy of 300 rows, with at most 8 operations queued while the scheduler holds
 * everything: both are fed in pieces as work drains, the batch answers once all ran, and
 * a tenant that leaves mid-record frees what it held (the ASan build checks). */
static void test_rows_held_back(void)
{
    struct client c, admin;
    struct kernelet_admin_set set = {.fields = KERNELET_SET_MAX_INFLIGHT, .max_inflight = 8};
    struct {
        struct kernelet_batch b;
        struct kernelet_rec_memset m;
        struct kernelet_rec_copy cp;
    } q = {
        .b = {.count = 2, .flags = KERNELET_BATCH_COMPLETE},
        .m = {.h = {.op = KERNELET_REC_MEMSET, .length = sizeof(q.m),
                    .stream = KERNELET_STREAM_LEGACY},
              .pitch = (4u << 20), .width = (512u << 10), .height = 3, .value = 0x01020304,
              .elem_size = 4},
        .cp = {.h = {.op = KERNELET_REC_COPY, .length = sizeof(q.cp),
                     .stream = KERNELET_STREAM_LEGACY},
               .kind = KERNELET_COPY_DTOD, .width = 16, .height = 300, .dst_pitch = 32,
               .src_pitch = 64},
    };

    g_assert_true(client_open(&c, H, "rows", false));
    g_assert_true(client_open(&admin, H, "ctl", true));
    set.tenant = c.tenant;
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_OK);
    q.m.dst = client_alloc(&c, 12u << 20);
    q.cp.src = client_alloc(&c, 64 * 300);
    q.cp.dst = client_alloc(&c, 32 * 300);
    harness_hold(H, true);
    uint64_t id = client_send(&c, KERNELET_OP_LAUNCH_BATCH, &q, sizeof(q), -1);
    usleep(100000);
    harness_hold(H, false);
    g_assert_cmpint(client_recv(&c, KERNELET_OP_LAUNCH_BATCH, id), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_sync(&c), ==, KERNELET_ST_OK);

    /* Held mid-record, then gone. */
    harness_hold(H, true);
    g_assert_cmpuint(client_send(&c, KERNELET_OP_LAUNCH_BATCH, &q, sizeof(q), -1), !=, 0);
    usleep(100000);
    client_close(&c);
    harness_hold(H, false);
    client_close(&admin);
}

static void test_disconnect_mid_message(void)
{
    struct client c;
    uint8_t hdr[KERNELET_HDR_SIZE];

    g_assert_true(client_open(&c, H, "quitter", false));
    (void)client_alloc(&c, 1 << 20);
    /* Half a message, then gone. */
    kproto_hdr_put(hdr, KERNELET_OP_MEM_ALLOC, sizeof(struct kernelet_mem_alloc), 99, 0);
    g_assert_true(client_send_raw(&c, hdr, sizeof(hdr)));
    g_assert_true(client_send_raw(&c, "\x10\x00", 2));
    client_close(&c);
    wait_connections(0);
    /* The server still serves. */
    g_assert_true(client_open(&c, H, "after", false));
    g_assert_cmpint(client_sync(&c), ==, KERNELET_ST_OK);
    client_close(&c);
}

static void test_many_tenants(void)
{
    enum { N = 40 };
    struct client *c = g_new0(struct client, N);
    uint64_t d[N];

    for (int i = 0; i < N; i++) {
        char name[32];
        g_snprintf(name, sizeof(name), "tenant%d", i);
        g_assert_true(client_open(&c[i], H, name, false));
        d[i] = client_alloc(&c[i], 4096);
        uint32_t v = 0x1000u + (uint32_t)i;
        g_assert_cmpint(client_copy(&c[i], KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, d[i], 0, 4, &v, 0, false), ==, KERNELET_ST_OK);
    }
    for (int i = 0; i < N; i++) {
        void *base;
        uint32_t rid = client_region(&c[i], 4096, &base);
        g_assert_cmpint(client_copy(&c[i], KERNELET_COPY_DTOH, rid, 0, d[i], 4, NULL, 0, true), ==, KERNELET_ST_OK);
        g_assert_cmpuint(*(uint32_t *)base, ==, 0x1000u + (uint32_t)i);
        /* Each sees only its own allocation. */
        g_assert_cmpint(client_copy(&c[i], KERNELET_COPY_DTOH, rid, 0, d[(i + 1) % N], 4, NULL, 0, true), ==, KERNELET_ST_CUDA);
    }
    struct client admin;
    struct kernelet_admin_status st;
    struct kernelet_admin_status_req q = {0};
    g_assert_true(client_open(&admin, H, "ctl", true));
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_STATUS, &q, sizeof(q), -1), ==, KERNELET_ST_OK);
    memcpy(&st, admin.answer, sizeof(st));
    g_assert_cmpuint(st.total_tenants, ==, N);
    g_assert_cmpuint(st.n_tenants, ==, N);
    g_assert_cmpstr(st.backend, ==, "sim");
    for (int i = 0; i < N; i++)
        client_close(&c[i]);
    wait_connections(1);
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_STATUS, &q, sizeof(q), -1), ==, KERNELET_ST_OK);
    memcpy(&st, admin.answer, sizeof(st));
    g_assert_cmpuint(st.total_tenants, ==, 0);
    client_close(&admin);
    g_free(c);
}

/* A connection that says nothing, or half a header, is closed after the HELLO timeout;
 * one that said HELLO stays, however long it is idle. In process, so that the sanitizer
 * build runs it too. */
static void test_hello_timeout(void)
{
    struct harness *h = harness_start_hello(300);
    struct client idle, partial, tenant;

    g_assert_true(client_connect(&idle, h));
    g_assert_true(client_connect(&partial, h));
    g_assert_true(client_send_raw(&partial, "\x01\x00", 2));
    g_assert_true(client_open(&tenant, h, "patient", false));
    g_assert_true(client_closed_by_server(&idle, 3000));
    g_assert_true(client_closed_by_server(&partial, 3000));
    g_assert_false(client_closed_by_server(&tenant, 700)); /* still open */
    g_assert_cmpint(client_sync(&tenant), ==, KERNELET_ST_OK);
    client_close(&idle);
    client_close(&partial);
    client_close(&tenant);
    harness_stop(h);
}

/* ---- modules and launches ---- */

static void test_modules_and_launches(void)
{
    struct client c, admin;
    struct kernelet_function f;
    struct kernelet_param p[8];
    uint8_t params[16] = {0};
    uint64_t mod, fn;

    g_assert_true(client_open(&c, H, "launcher", false));
    mod = client_module_ptx(&c, harness_ptx);
    fn = client_function(&c, mod, "k_add", &f, p);
    g_assert_cmpuint(fn, !=, 0);
    /* The layout of (.u64 p, .u32 n, .u32 v). */
    g_assert_cmpuint(f.n_params, ==, 3);
    g_assert_cmpuint(p[0].offset, ==, 0);
    g_assert_cmpuint(p[0].size, ==, 8);
    g_assert_cmpuint(p[1].offset, ==, 8);
    g_assert_cmpuint(p[1].size, ==, 4);
    g_assert_cmpuint(p[2].offset, ==, 12);
    g_assert_cmpuint(p[2].size, ==, 4);
    g_assert_cmpuint(f.param_bytes, ==, 16);
    g_assert_cmpint(f.attrs[0], >=, 32);      /* max threads per block */
    g_assert_cmpint(f.attrs[4], >, 0);        /* registers */
    g_assert_cmpint(f.attrs[5], ==, 70);      /* PTX 7.0 */
    g_assert_null(GINT_TO_POINTER(client_function(&c, mod, "no_such", &f, p)));
    g_assert_cmpuint(c.cuda, ==, 500 /* NOT_FOUND */);

    /* Wrong parameter size, too many threads, a function handle that is a module. */
    g_assert_cmpint(client_launches(&c, fn, params, 12, 1, 32, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_launches(&c, fn, params, 16, 1, 4096, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_launches(&c, mod, params, 16, 1, 32, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 400);
    /* Good launches; a batch answered once they ran. */
    g_assert_cmpint(client_launches(&c, fn, params, 16, 20, 128, false), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_launches(&c, fn, params, 16, 5, 128, true), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_sync(&c), ==, KERNELET_ST_OK);

    /* With at most 2 launches queued, a batch of 50 is held back and still completes. */
    struct kernelet_admin_set set = {.tenant = c.tenant, .fields = KERNELET_SET_MAX_INFLIGHT,
                                     .max_inflight = 2};
    g_assert_true(client_open(&admin, H, "ctl", true));
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_launches(&c, fn, params, 16, 50, 128, true), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_sync(&c), ==, KERNELET_ST_OK);

    /* The statistics count them: 20 + 5 + 50. */
    struct kernelet_admin_status_req q = {0};
    struct kernelet_admin_status st;
    struct kernelet_tenant_status ts;
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_STATUS, &q, sizeof(q), -1), ==, KERNELET_ST_OK);
    memcpy(&st, admin.answer, sizeof(st));
    g_assert_cmpuint(st.n_tenants, ==, 2 - 1);
    memcpy(&ts, admin.answer + sizeof(st), sizeof(ts));
    g_assert_cmpuint(ts.launches, ==, 75);
    g_assert_cmpuint(ts.completed, ==, 75);
    g_assert_cmpstr(ts.name, ==, "launcher");

    /* Unloading waits for the queued launches, and the module is gone afterwards. */
    struct kernelet_handle m = {.handle = mod};
    g_assert_cmpint(client_launches(&c, fn, params, 16, 3, 128, false), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_call(&c, KERNELET_OP_MODULE_UNLOAD, &m, sizeof(m), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_launches(&c, fn, params, 16, 1, 128, false), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_call(&c, KERNELET_OP_MODULE_UNLOAD, &m, sizeof(m), -1), ==, KERNELET_ST_CUDA);
    client_close(&admin);
    client_close(&c);
}

/* GLOBAL_GET of name in module: the answer's status; *g the range when OK. */
static int global_get(struct client *c, uint64_t module, const char *name,
                      struct kernelet_global *g)
{
    uint8_t buf[256];
    struct kernelet_name_req q = {.module = module, .name_len = (uint32_t)strlen(name)};
    int st;

    memcpy(buf, &q, sizeof(q));
    memcpy(buf + sizeof(q), name, q.name_len);
    st = client_call(c, KERNELET_OP_GLOBAL_GET, buf, sizeof(q) + q.name_len, -1);
    if (st == KERNELET_ST_OK)
        memcpy(g, c->answer, sizeof(*g));
    return st;
}

/* The harness PTX with two module variables in front of its entry. */
static char *ptx_with_globals(void)
{
    const char *entry = strstr(harness_ptx, ".visible .entry");

    g_assert_nonnull(entry);
    return g_strdup_printf("%.*s"
                           ".visible .global .align 4 .u32 counter = 7;\n"
                           ".visible .const .align 8 .b8 table[24];\n"
                           "%s",
                           (int)(entry - harness_ptx), harness_ptx, entry);
}

/* Module variables: each tenant's load has its own; a tenant reaches only its own, only
 * within the variable, only until its module is unloaded. */
/* A cluster or cooperative launch on a backend that cannot run one (the sim) is refused at
 * once with CUDA's not-supported error, not run as a plain launch nor failed as a kernel:
 * the tenant's next plain launch still works. */
static void test_launch_attrs_refused(void)
{
    struct client c;
    struct kernelet_function f;
    struct kernelet_param p[8];
    uint8_t params[16] = {0};
    uint8_t buf[sizeof(struct kernelet_batch) + sizeof(struct kernelet_rec_launch_ex) + 16];

    g_assert_true(client_open(&c, H, "attrs", false));
    uint64_t fn = client_function(&c, client_module_ptx(&c, harness_ptx), "k_add", &f, p);
    for (int cooperative = 0; cooperative < 2; cooperative++) {
        struct kernelet_batch b = {.count = 1, .flags = KERNELET_BATCH_COMPLETE};
        struct kernelet_rec_launch_ex x = {
            .l = {.h = {.op = KERNELET_REC_LAUNCH_EX, .length = sizeof x + 16},
                  .function = fn, .grid = {8, 1, 1}, .block = {32, 1, 1}, .param_bytes = 16},
            .cluster = {cooperative ? 1 : 2, 1, 1},
            .flags = cooperative ? KERNELET_LAUNCH_COOPERATIVE : 0,
        };
        memset(buf, 0, sizeof buf);
        memcpy(buf, &b, sizeof b);
        memcpy(buf + sizeof b, &x, sizeof x);
        g_assert_cmpint(client_call(&c, KERNELET_OP_LAUNCH_BATCH, buf, sizeof buf, -1), ==,
                        KERNELET_ST_CUDA);
        g_assert_cmpuint(c.cuda, ==, 801 /* NOT_SUPPORTED */);
    }
    g_assert_cmpint(client_launches(&c, fn, params, 16, 1, 32, true), ==, KERNELET_ST_OK);
    client_close(&c);
}

/* A module's answer says when it has no printf ring, so that libcuda does not ask for
 * one (a framework loads thousands of modules): a module without printf, and one whose
 * printf the daemon rewrote (it has the ring). */
static void test_module_printf_flag(void)
{
    static const char hello_ptx[] =
        ".version 7.0\n.target sm_70\n.address_size 64\n"
        ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, "
        ".param .b64 vprintf_param_1);\n"
        ".global .align 1 .b8 $str[4] = {104, 105, 10, 0};\n"
        ".visible .entry hello()\n{\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<3>;\n"
        "  mov.u64 %rd1, $str;\n  cvta.global.u64 %rd2, %rd1;\n"
        "  {\n  .param .b64 param0;\n  st.param.b64 [param0+0], %rd2;\n"
        "  .param .b64 param1;\n  st.param.b64 [param1+0], 0;\n"
        "  .param .b32 retval0;\n  call.uni (retval0), vprintf, (param0, param1);\n"
        "  ld.param.b32 %r1, [retval0+0];\n  }\n  ret;\n}\n";
    const char *texts[2] = {harness_ptx, hello_ptx};
    struct client c;

    g_assert_true(client_open(&c, H, "printf-flag", false));
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(texts[i]);
        struct kernelet_module_load q = {.kind = KERNELET_IMAGE_PTX,
                                         .region = KERNELET_REGION_INLINE, .size = n};
        uint8_t *buf = g_malloc(sizeof(q) + n);
        struct kernelet_module m;
        memcpy(buf, &q, sizeof(q));
        memcpy(buf + sizeof(q), texts[i], n);
        g_assert_cmpint(client_call(&c, KERNELET_OP_MODULE_LOAD, buf, sizeof(q) + n, -1), ==,
                        KERNELET_ST_OK);
        memcpy(&m, c.answer, sizeof(m));
        g_assert_cmpuint(m.flags & KERNELET_MODULE_NO_PRINTF, ==,
                         i == 0 ? KERNELET_MODULE_NO_PRINTF : 0);
        g_free(buf);
    }
    client_close(&c);
}

static void test_globals(void)
{
    struct client a, b;
    struct kernelet_global ga, gb, gt;
    char *ptx = ptx_with_globals();
    uint8_t *ra, *rb;
    uint32_t rida, ridb, v;
    uint64_t ma, mb;

    g_assert_true(client_open(&a, H, "alice", false));
    g_assert_true(client_open(&b, H, "mallory", false));
    rida = client_region(&a, 4096, (void **)&ra);
    ridb = client_region(&b, 4096, (void **)&rb);
    ma = client_module_ptx(&a, ptx);
    mb = client_module_ptx(&b, ptx);
    g_assert_cmpint(global_get(&a, ma, "counter", &ga), ==, KERNELET_ST_OK);
    g_assert_cmpuint(ga.size, ==, 4);
    g_assert_cmpint(global_get(&a, ma, "table", &gt), ==, KERNELET_ST_OK);
    g_assert_cmpuint(gt.size, ==, 24);
    g_assert_cmpint(global_get(&b, mb, "counter", &gb), ==, KERNELET_ST_OK);
    g_assert_cmpuint(gb.dptr, !=, ga.dptr); /* the same text, another load: its own */
    /* The initializer, read back by the owner. */
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_DTOH, rida, 0, ga.dptr, 4, NULL, 0, true), ==, KERNELET_ST_OK);
    memcpy(&v, ra, 4);
    g_assert_cmpuint(v, ==, 7);
    /* Unknown names, and a module handle the connection does not hold (handles are numbered
     * per connection: Alice's number names Mallory's own module there). */
    g_assert_cmpint(global_get(&a, ma, "no_such", &gt), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(a.cuda, ==, 500 /* NOT_FOUND */);
    g_assert_cmpint(global_get(&b, mb + 100, "counter", &gt), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(b.cuda, ==, 400 /* INVALID_HANDLE */);

    /* Mallory writes, reads and device-copies Alice's variable: refused. */
    v = 0xdeadbeef;
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, ga.dptr, 0, 4, &v, 0, true), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(b.cuda, ==, 1 /* INVALID_VALUE */);
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_DTOH, ridb, 0, ga.dptr, 4, NULL, 0, true), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_DTOD, 0, gb.dptr, ga.dptr, 4, NULL, 0, true), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_DTOD, 0, ga.dptr, gb.dptr, 4, NULL, 0, true), ==, KERNELET_ST_CUDA);
    /* Her own variable she may write; Alice's keeps its value. */
    v = 99;
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, gb.dptr, 0, 4, &v, 0, true), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_DTOH, ridb, 0, gb.dptr, 4, NULL, 0, true), ==, KERNELET_ST_OK);
    memcpy(&v, rb, 4);
    g_assert_cmpuint(v, ==, 99);
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_DTOH, rida, 0, ga.dptr, 4, NULL, 0, true), ==, KERNELET_ST_OK);
    memcpy(&v, ra, 4);
    g_assert_cmpuint(v, ==, 7);

    /* Alice: not past the variable's end, not freeable; gone with its module. */
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_DTOH, rida, 0, ga.dptr + 2, 4, NULL, 0, true), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_free(&a, ga.dptr), ==, KERNELET_ST_CUDA);
    struct kernelet_handle m = {.handle = ma};
    g_assert_cmpint(client_call(&a, KERNELET_OP_MODULE_UNLOAD, &m, sizeof(m), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_DTOH, rida, 0, ga.dptr, 4, NULL, 0, true), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_DTOH, rida, 0, gt.dptr, 8, NULL, 0, true), ==, KERNELET_ST_CUDA);
    client_close(&a);
    client_close(&b);
    g_free(ptx);
}

/* A kernel that faults ends its tenant's context (every later request gets the error,
 * synchronisations included), and only its tenant's. */
static void test_sticky_fault(void)
{
    struct client c, other;
    struct kernelet_function f;
    struct kernelet_param p[8];
    uint8_t params[16] = {0};
    struct kernelet_mem_alloc q = {.size = 64};

    g_assert_true(client_open(&c, H, "faulty", false));
    g_assert_true(client_open(&other, H, "bystander", false));
    uint64_t mod = client_module_ptx(&c, harness_ptx);
    uint64_t fn = client_function(&c, mod, "k_add", &f, p);
    harness_fail_kernel(H, "k_add", true);
    g_assert_cmpint(client_launches(&c, fn, params, 16, 1, 32, false), ==, KERNELET_ST_OK); /* queued */
    g_assert_cmpint(client_sync(&c), ==, KERNELET_ST_CUDA);
    uint32_t sticky = c.cuda;
    g_assert_true(sticky == 719 || sticky == 700); /* LAUNCH_FAILED or ILLEGAL_ADDRESS */
    g_assert_cmpint(client_call(&c, KERNELET_OP_MEM_ALLOC, &q, sizeof(q), -1), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, sticky);
    g_assert_cmpint(client_sync(&c), ==, KERNELET_ST_CUDA);
    harness_fail_kernel(H, "k_add", false);
    /* The other tenant works. */
    (void)client_alloc(&other, 64);
    g_assert_cmpint(client_sync(&other), ==, KERNELET_ST_OK);
    client_close(&c);
    client_close(&other);
}

static void test_events(void)
{
    struct client c;
    struct kernelet_event_create ec = {0};
    struct kernelet_handle e1, e2;
    uint8_t buf[64];
    struct kernelet_batch b = {.count = 1};
    struct kernelet_rec_event r = {.h = {.op = KERNELET_REC_EVENT_RECORD, .length = sizeof(r)}};
    struct kernelet_event_pair pair;
    struct kernelet_elapsed el;

    g_assert_true(client_open(&c, H, "events", false));
    g_assert_cmpint(client_call(&c, KERNELET_OP_EVENT_CREATE, &ec, sizeof(ec), -1), ==, KERNELET_ST_OK);
    memcpy(&e1, c.answer, sizeof(e1));
    g_assert_cmpint(client_call(&c, KERNELET_OP_EVENT_CREATE, &ec, sizeof(ec), -1), ==, KERNELET_ST_OK);
    memcpy(&e2, c.answer, sizeof(e2));
    pair.start = e1.handle;
    pair.end = e2.handle;
    /* Not recorded yet: no elapsed time. */
    g_assert_cmpint(client_call(&c, KERNELET_OP_EVENT_ELAPSED, &pair, sizeof(pair), -1), ==, KERNELET_ST_CUDA);
    memcpy(buf, &b, sizeof(b));
    r.event = e1.handle;
    memcpy(buf + sizeof(b), &r, sizeof(r));
    g_assert_cmpint(client_call(&c, KERNELET_OP_LAUNCH_BATCH, buf, sizeof(b) + sizeof(r), -1), ==, KERNELET_ST_OK);
    uint64_t d = client_alloc(&c, 1 << 20);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOD, 0, d + (512 << 10), d, 512 << 10, NULL, 0, false), ==, KERNELET_ST_OK);
    r.event = e2.handle;
    memcpy(buf + sizeof(b), &r, sizeof(r));
    g_assert_cmpint(client_call(&c, KERNELET_OP_LAUNCH_BATCH, buf, sizeof(b) + sizeof(r), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_call(&c, KERNELET_OP_EVENT_SYNC, &e2, sizeof(e2), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_call(&c, KERNELET_OP_EVENT_QUERY, &e2, sizeof(e2), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_call(&c, KERNELET_OP_EVENT_ELAPSED, &pair, sizeof(pair), -1), ==, KERNELET_ST_OK);
    memcpy(&el, c.answer, sizeof(el));
    g_assert_cmpint(el.ns, >, 0); /* the sim's copy takes time */
    g_assert_cmpint(client_call(&c, KERNELET_OP_EVENT_DESTROY, &e1, sizeof(e1), -1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_call(&c, KERNELET_OP_EVENT_DESTROY, &e1, sizeof(e1), -1), ==, KERNELET_ST_CUDA);
    client_close(&c);
}

/* Random messages with valid framing after HELLO: every one is answered, none crashes. */
static void test_garbage(void)
{
    struct client c;
    GRand *rng = g_rand_new_with_seed(1234);
    static const uint16_t ops[] = {
        KERNELET_OP_SHM_DETACH, KERNELET_OP_MEM_ALLOC, KERNELET_OP_MEM_FREE,
        KERNELET_OP_MODULE_LOAD, KERNELET_OP_MODULE_UNLOAD, KERNELET_OP_FUNCTION_GET,
        KERNELET_OP_GLOBAL_GET, KERNELET_OP_LAUNCH_BATCH, KERNELET_OP_STREAM_CREATE,
        KERNELET_OP_STREAM_DESTROY, KERNELET_OP_STREAM_SYNC, KERNELET_OP_STREAM_QUERY,
        KERNELET_OP_EVENT_CREATE, KERNELET_OP_EVENT_SYNC, KERNELET_OP_EVENT_ELAPSED,
        KERNELET_OP_DEVICE_GET, 0x0999,
    };

    g_assert_true(client_open(&c, H, "garbage", false));
    for (int i = 0; i < 3000; i++) {
        uint8_t payload[256];
        size_t n = (size_t)g_rand_int_range(rng, 0, sizeof(payload));
        for (size_t k = 0; k < n; k++)
            payload[k] = (uint8_t)g_rand_int(rng);
        if (n >= 8 && g_rand_boolean(rng)) /* plausible small counts and sizes */
            memset(payload + 4, 0, 4);
        uint16_t op = ops[g_rand_int_range(rng, 0, G_N_ELEMENTS(ops))];
        g_assert_cmpint(client_call(&c, op, payload, n, -1), >=, 0);
    }
    g_assert_cmpint(client_sync(&c), >=, 0);
    client_close(&c);
    g_rand_free(rng);
    wait_connections(0);
}

int main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    H = harness_start();
    g_test_add_func("/server/hello-and-device", test_hello_and_device);
    g_test_add_func("/server/framing", test_framing);
    g_test_add_func("/server/copies-round-trip", test_copies_round_trip);
    g_test_add_func("/server/out-of-range", test_out_of_range);
    g_test_add_func("/server/foreign-handles", test_foreign_handles);
    g_test_add_func("/server/regions", test_regions);
    g_test_add_func("/server/quota", test_quota);
    g_test_add_func("/server/admin-time-limit", test_admin_time_limit);
    g_test_add_func("/server/rows-held-back", test_rows_held_back);
    g_test_add_func("/server/disconnect-mid-message", test_disconnect_mid_message);
    g_test_add_func("/server/many-tenants", test_many_tenants);
    g_test_add_func("/server/hello-timeout", test_hello_timeout);
    g_test_add_func("/server/modules-and-launches", test_modules_and_launches);
    g_test_add_func("/server/globals", test_globals);
    g_test_add_func("/server/module-printf-flag", test_module_printf_flag);
    g_test_add_func("/server/launch-attrs-refused", test_launch_attrs_refused);
    g_test_add_func("/server/sticky-fault", test_sticky_fault);
    g_test_add_func("/server/events", test_events);
    g_test_add_func("/server/garbage", test_garbage);
    rc = g_test_run();
    harness_stop(H);
    return rc;
}
