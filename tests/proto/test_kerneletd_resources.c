/* kerneletd against tenants that try to exhaust it (issue 15, bounded resources): floods
 * of queued copies, memsets, events and synchronisations count against the tenant's
 * max-inflight like launches do; a 2D memset or copy of very many rows is fed to the
 * device a limited number of rows at a time; shared-memory regions are bounded in number
 * and bytes; every tenant has a default memory quota; freed memory reads as zeros to the
 * next tenant. Each time the offender gets an error or waits, its own work still
 * completes (nothing lost), a bystander is served, and the daemon stays responsive.
 *   test_kerneletd_resources KERNELETD --tap */
#define _GNU_SOURCE
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

static const char *kerneletd;

/* The named tenant's status, through an administration connection. */
static struct kernelet_tenant_status tenant_status(const char *socket, const char *name)
{
    struct kernelet_admin_status_req q = {0};
    struct kernelet_admin_status st;
    struct kernelet_tenant_status ts = {0};
    struct client admin;

    g_assert_true(client_open_path(&admin, socket, "ctl", true));
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_STATUS, &q, sizeof(q), -1), ==,
                    KERNELET_ST_OK);
    memcpy(&st, admin.answer, sizeof(st));
    for (uint32_t i = 0; i < st.n_tenants; i++) {
        struct kernelet_tenant_status t;
        memcpy(&t, admin.answer + sizeof(st) + i * sizeof(t), sizeof(t));
        if (strcmp(t.name, name) == 0)
            ts = t;
    }
    client_close(&admin);
    g_assert_cmpuint(ts.id, !=, 0);
    return ts;
}

static void set_max_inflight(const char *socket, uint64_t tenant, uint32_t n)
{
    struct kernelet_admin_set set = {.tenant = tenant, .fields = KERNELET_SET_MAX_INFLIGHT,
                                     .max_inflight = n};
    struct client admin;

    g_assert_true(client_open_path(&admin, socket, "ctl", true));
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_OK);
    client_close(&admin);
}

/* Sends (without waiting for its answer) a batch of n one-byte memsets on the legacy
 * stream, byte i of p set to i + 1 (mod 255, never 0); returns the request id. */
static uint64_t send_memsets(struct client *c, uint64_t p, unsigned n)
{
    size_t len = sizeof(struct kernelet_batch) + n * sizeof(struct kernelet_rec_memset);
    uint8_t *buf = g_malloc0(len);
    struct kernelet_batch b = {.count = n};

    memcpy(buf, &b, sizeof(b));
    for (unsigned i = 0; i < n; i++) {
        struct kernelet_rec_memset m = {
            .h = {.op = KERNELET_REC_MEMSET, .length = sizeof(m),
                  .stream = KERNELET_STREAM_LEGACY},
            .dst = p + i, .pitch = 1, .width = 1, .height = 1, .value = i % 255 + 1,
            .elem_size = 1};
        memcpy(buf + sizeof(b) + i * sizeof(m), &m, sizeof(m));
    }
    uint64_t id = client_send(c, KERNELET_OP_LAUNCH_BATCH, buf, len, -1);
    g_free(buf);
    g_assert_cmpuint(id, !=, 0);
    return id;
}

/* While the offender's kernel runs (until the time limit stops it), it sends 2000 memsets
 * and 600 synchronisations. With max-inflight 64, the daemon queues at most 64 of its
 * operations (before, all 2000) and refuses the syncs beyond 4 per allowed operation with
 * OUT_OF_MEMORY at once (before, each held memory until the kernel ended). Once the kernel
 * has stopped, every memset runs: the bytes verify. A bystander's work verifies. */
static void test_queue_flood(void)
{
    const char *opts[] = {"--kernel-time-limit", "2", NULL};
    enum { N = 1000, SYNCS = 600 };
    struct daemon d;
    struct client c;
    uint8_t *out;
    double took;

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&c, d.socket, "flood", false));
    set_max_inflight(d.socket, c.tenant, 64);
    c.context = 2;          /* the flooder's memory: contexts reach only their own */
    uint64_t p = client_alloc(&c, 2 * N), fn = spin_function(&c, "k_forever");
    uint32_t rid = client_region(&c, 2 * N, (void **)&out);

    /* Context 1 holds the device; context 2 floods (the kernel's timeout ends context 1
     * only). */
    c.context = 1;
    g_assert_cmpint(launch_spin(&c, fn, p, -1, 1, false), ==, KERNELET_ST_OK);
    c.context = 2;
    uint64_t b1 = send_memsets(&c, p, N), b2 = send_memsets(&c, p + N, N);
    /* The kernel and 63 memsets queued, the rest held back (a few fences may add). */
    double start = now_s();
    uint32_t queued = 0;
    while (queued < 64 && now_s() - start < 1.5) {
        queued = tenant_status(d.socket, "flood").queued;
        g_assert_cmpuint(queued, <=, 64 + 4);
        usleep(10000);
    }
    g_assert_cmpuint(queued, >=, 64);
    usleep(100000);
    g_assert_cmpuint(tenant_status(d.socket, "flood").queued, <=, 64 + 4);

    /* The batches answer (OK) once the kernel has stopped and their memsets were queued. */
    g_assert_cmpint(client_recv(&c, KERNELET_OP_LAUNCH_BATCH, b1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_recv(&c, KERNELET_OP_LAUNCH_BATCH, b2), ==, KERNELET_ST_OK);

    /* Synchronisations behind a kernel that never ends: 256 wait, the rest fail at once. */
    c.context = 1;
    g_assert_cmpint(launch_spin(&c, fn, p, -1, 1, false), ==, KERNELET_ST_CUDA); /* sticky */
    c.context = 3;
    uint64_t fn3 = spin_function(&c, "k_forever");
    g_assert_cmpint(launch_spin(&c, fn3, p, -1, 1, false), ==, KERNELET_ST_OK);
    c.context = 4;
    start = now_s();
    for (unsigned i = 0; i < SYNCS; i++)
        g_assert_cmpuint(client_send(&c, KERNELET_OP_CTX_SYNC, NULL, 0, -1), !=, 0);
    unsigned refused = 0;
    for (unsigned i = 0; i < SYNCS - 256; i++) {
        g_assert_cmpint(client_recv(&c, 0, 0), ==, KERNELET_ST_CUDA);
        g_assert_cmpuint(c.cuda, ==, 2 /* OUT_OF_MEMORY */);
        refused++;
    }
    g_assert_cmpfloat(now_s() - start, <, 1.5); /* at once, not after the kernel */
    g_assert_cmpuint(refused, ==, SYNCS - 256);
    for (unsigned i = 0; i < 256; i++)
        client_recv(&c, 0, 0); /* after the kernel's timeout: its error or success */

    c.context = 2;
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 0, p, 2 * N, NULL, 0, true), ==,
                    KERNELET_ST_OK);
    for (unsigned i = 0; i < 2 * N; i++)
        g_assert_cmpuint(out[i], ==, i % N % 255 + 1);
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    client_close(&c);
    g_assert_true(daemon_alive(&d));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* The daemon's peak resident memory in KiB (VmHWM). */
static unsigned long peak_kib(pid_t pid)
{
    char path[64], *text = NULL, *at;
    unsigned long kib = 0;

    g_snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    g_assert_nonnull(at = strstr(text, "VmHWM:"));
    g_assert_cmpint(sscanf(at, "VmHWM: %lu", &kib), ==, 1);
    g_free(text);
    return kib;
}

/* One record of 2D work on the legacy stream, sent without waiting for its answer. */
static uint64_t send_record(struct client *c, const void *rec, size_t len)
{
    uint8_t buf[256];
    struct kernelet_batch b = {.count = 1};

    memcpy(buf, &b, sizeof(b));
    memcpy(buf + sizeof(b), rec, len);
    uint64_t id = client_send(c, KERNELET_OP_LAUNCH_BATCH, buf, sizeof(b) + len, -1);
    g_assert_cmpuint(id, !=, 0);
    return id;
}

/* cuMemsetD2D8Async and a 2D device-to-device copy of ROWS rows of one byte each (one
 * operation per row on the device). Before, the daemon queued all rows at once: about
 * 470 bytes per row (467 MB for 10^6 rows), and a bystander waited behind them. Now at
 * most max-inflight rows are queued at a time: the daemon's peak memory grows by less
 * than 48 MB, a bystander's round trip is served within seconds meanwhile, and every row
 * is set and copied. */
static void test_rows(void)
{
    enum { ROWS = 300000 };
    struct daemon d;
    struct client c;
    uint8_t *out;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&c, d.socket, "rows", false));
    uint64_t p = client_alloc(&c, 2 * ROWS), q = client_alloc(&c, ROWS);
    uint32_t rid = client_region(&c, ROWS, (void **)&out);
    unsigned long before = peak_kib(d.pid);

    struct kernelet_rec_memset m = {
        .h = {.op = KERNELET_REC_MEMSET, .length = sizeof(m), .stream = KERNELET_STREAM_LEGACY},
        .dst = p, .pitch = 2, .width = 1, .height = ROWS, .value = 0x7f, .elem_size = 1};
    struct kernelet_rec_copy cp = {
        .h = {.op = KERNELET_REC_COPY, .length = sizeof(cp), .stream = KERNELET_STREAM_LEGACY},
        .kind = KERNELET_COPY_DTOD, .region = 0, .dst = q, .src = p,
        .width = 1, .height = ROWS, .dst_pitch = 1, .src_pitch = 2};
    uint64_t b1 = send_record(&c, &m, sizeof(m)), b2 = send_record(&c, &cp, sizeof(cp));

    while (tenant_status(d.socket, "rows").queued == 0) /* its rows have started */
        usleep(1000);
    double start = now_s();
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_test_message("bystander served in %.2f s", now_s() - start);
    g_assert_cmpfloat(now_s() - start, <, 5.0);

    g_assert_cmpint(client_recv(&c, KERNELET_OP_LAUNCH_BATCH, b1), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_recv(&c, KERNELET_OP_LAUNCH_BATCH, b2), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 0, q, ROWS, NULL, 0, true), ==,
                    KERNELET_ST_OK);
    for (unsigned i = 0; i < ROWS; i++)
        g_assert_cmpuint(out[i], ==, 0x7f);
    g_test_message("%d rows twice in %.2f s; peak memory +%lu KiB", ROWS, now_s() - start,
                   peak_kib(d.pid) - before);
    g_assert_cmpuint(peak_kib(d.pid) - before, <, 48 * 1024);
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* SHM_ATTACH of a sealed, sparse memfd of size bytes (nothing mapped here): the status,
 * the CUresult in c->cuda. */
static int attach_sparse(struct client *c, uint64_t size)
{
    int fd = memfd_create("sparse", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    struct kernelet_shm_attach q = {.size = size};

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, (off_t)size), ==, 0);
    g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), ==, 0);
    int st = client_call(c, KERNELET_OP_SHM_ATTACH, &q, sizeof(q), fd);
    close(fd);
    return st;
}

/* Sparse memfd regions cost the daemon address space, not memory: before, regions of
 * 1 TiB each, from two connections, took all of it and a bystander's copy failed. With
 * --max-region-bytes 1G and --max-regions 8, a connection maps 1 GiB in at most 8 regions
 * and is refused beyond with OUT_OF_MEMORY; with the defaults (the host's memory per
 * connection), 1 TiB regions are refused. Bystanders are served throughout; a detached
 * region's bytes are free again. */
static void test_region_flood(void)
{
    const char *opts[] = {"--max-regions", "8", "--max-region-bytes", "1G", NULL};
    struct daemon d;
    struct client c;
    struct kernelet_shm_region r;
    double took;

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&c, d.socket, "regions", false));
    g_assert_cmpint(attach_sparse(&c, 768u << 20), ==, KERNELET_ST_OK);
    memcpy(&r, c.answer, sizeof(r));
    g_assert_cmpint(attach_sparse(&c, 512u << 20), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 2 /* OUT_OF_MEMORY */);
    for (unsigned i = 0; i < 7; i++)
        g_assert_cmpint(attach_sparse(&c, 4096), ==, KERNELET_ST_OK);
    g_assert_cmpint(attach_sparse(&c, 4096), ==, KERNELET_ST_CUDA); /* a ninth */
    g_assert_cmpuint(c.cuda, ==, 2);
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_assert_cmpint(client_call(&c, KERNELET_OP_SHM_DETACH, &r, sizeof(r), -1), ==,
                    KERNELET_ST_OK);
    g_assert_cmpint(attach_sparse(&c, 512u << 20), ==, KERNELET_ST_OK);
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&c, d.socket, "regions", false));
    /* Regions of the protocol's largest size, 1 TiB: more than this host's memory. */
    uint64_t host = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    for (unsigned i = 0; i < 64 && host < KERNELET_MAX_REGION_SIZE; i++) {
        g_assert_cmpint(attach_sparse(&c, KERNELET_MAX_REGION_SIZE), ==, KERNELET_ST_CUDA);
        g_assert_cmpuint(c.cuda, ==, 2);
    }
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* SHM_MAP_DEVICE of region: the status; the device address in *device on success. */
static int map_region(struct client *c, uint32_t region, uint64_t *device)
{
    struct kernelet_shm_map_device q = {.region = region};
    int st = client_call(c, KERNELET_OP_SHM_MAP_DEVICE, &q, sizeof(q), -1);

    if (st == KERNELET_ST_OK) {
        struct kernelet_shm_device ans;
        memcpy(&ans, c->answer, sizeof(ans));
        *device = ans.device_ptr;
    }
    return st;
}

static int can_map_attribute(struct client *c)
{
    struct kernelet_device_get q = {.ordinal = 0};
    struct kernelet_device dev;

    g_assert_cmpint(client_call(c, KERNELET_OP_DEVICE_GET, &q, sizeof(q), -1), ==,
                    KERNELET_ST_OK);
    memcpy(&dev, c->answer, sizeof(dev));
    return dev.attrs[19 /* CAN_MAP_HOST_MEMORY */];
}

/* k_add over the first 16 words at device: each gets v added, seen in the client's own
 * mapping of the region with no copy. */
static void add_through(struct client *c, uint64_t fn, uint64_t device, const uint32_t *host,
                        uint32_t v, uint32_t expect)
{
    struct { uint64_t p; uint32_t n, v; } args = {device, 16, v};

    g_assert_cmpint(client_launches(c, fn, &args, sizeof(args), 1, 32, true), ==,
                    KERNELET_ST_OK);
    for (unsigned i = 0; i < 16; i++)
        g_assert_cmpuint(host[i], ==, expect);
    g_assert_cmpuint(host[16], ==, 0);
}

/* Mapped pinned memory (issue 14): a fencing daemon refuses to map a region for kernels
 * (its kernels may reach only the tenant's device memory) and says so in the device's
 * CAN_MAP_HOST_MEMORY; without fencing a kernel writes into the tenant's region in place.
 * Pinned bytes are bounded per connection (--max-pinned): a second region beyond the
 * bound is refused with OUT_OF_MEMORY until the first is detached, which frees its bytes. */
static void test_mapped_regions(void)
{
    const char *opts[] = {"--no-fence", "--max-pinned", "64K", NULL};
    struct daemon d;
    struct client c;
    struct kernelet_function f;
    struct kernelet_param params[8];
    uint64_t dev1 = 0, dev2 = 0;
    void *base1, *base2;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&c, d.socket, "fenced", false));
    g_assert_cmpint(can_map_attribute(&c), ==, 0);
    uint32_t r1 = client_region(&c, 48 << 10, &base1);
    g_assert_cmpint(map_region(&c, r1, &dev1), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 801 /* NOT_SUPPORTED */);
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
    munmap(base1, 48 << 10);

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&c, d.socket, "mapped", false));
    g_assert_cmpint(can_map_attribute(&c), ==, 1);
    uint64_t fn = client_function(&c, client_module_ptx(&c, harness_ptx), "k_add", &f,
                                  params);
    g_assert_cmpuint(fn, !=, 0);
    r1 = client_region(&c, 48 << 10, &base1);
    uint32_t r2 = client_region(&c, 48 << 10, &base2);
    g_assert_cmpint(map_region(&c, r1, &dev1), ==, KERNELET_ST_OK);
    g_assert_cmpuint(dev1, !=, 0);
    add_through(&c, fn, dev1, base1, 5, 5);
    add_through(&c, fn, dev1, base1, 2, 7);
    /* mapped memory is the tenant's at its device address: copies may name it there, and
     * it is no allocation to free */
    uint8_t in[16];
    memset(in, 0x3c, sizeof(in));
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, dev1 + 64, 0,
                                sizeof(in), in, 0, true), ==, KERNELET_ST_OK);
    g_assert_cmpmem((uint8_t *)base1 + 64, sizeof(in), in, sizeof(in));
    g_assert_cmpint(client_free(&c, dev1), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(map_region(&c, r2, &dev2), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 2 /* OUT_OF_MEMORY */);
    struct kernelet_shm_region detach = {.region = r1};
    g_assert_cmpint(client_call(&c, KERNELET_OP_SHM_DETACH, &detach, sizeof(detach), -1), ==,
                    KERNELET_ST_OK);
    g_assert_cmpint(map_region(&c, r1, &dev1), ==, KERNELET_ST_CUDA); /* gone */
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, dev1 + 64, 0,
                                sizeof(in), in, 0, true), !=, KERNELET_ST_OK);
    g_assert_cmpint(map_region(&c, r2, &dev2), ==, KERNELET_ST_OK);
    add_through(&c, fn, dev2, base2, 9, 9);
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
    munmap(base1, 48 << 10);
    munmap(base2, 48 << 10);
}

static void set_quota(const char *socket, uint64_t tenant, uint64_t bytes);

/* A VMM request; its status (c->cuda on failure, c->answer on success). */
static int vmm(struct client *c, uint16_t op, uint64_t va, uint64_t size, uint64_t offset,
               uint64_t arg)
{
    struct kernelet_vmm v = {.va = va, .size = size, .offset = offset, .arg = arg};
    return client_call(c, op, &v, sizeof(v), -1);
}

#define G KERNELET_VMM_GRANULE

/* Virtual memory management (issue 14): refused where kernels are fenced; without fencing
 * two pieces of memory mapped side by side take a copy across their seam; a reservation
 * is not freed while mapped nor freed as an allocation; memory counts against the quota;
 * and a tenant that leaves with everything mapped leaves a daemon that serves the next. */
static void test_vmm(void)
{
    const char *opts[] = {"--no-fence", NULL};
    struct daemon d;
    struct client c;
    struct kernelet_mem_ptr va;
    struct kernelet_handle h1, h2;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&c, d.socket, "fenced", false));
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_CREATE, 0, G, 0, 0), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 801 /* NOT_SUPPORTED */);
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&c, d.socket, "vmm", false));
    /* addresses are bounded too: four times the device's memory at most */
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_RESERVE, 0, 1ull << 40, 0, 0), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 2 /* OUT_OF_MEMORY */);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_RESERVE, 0, 4 * G, 0, 0), ==, KERNELET_ST_OK);
    memcpy(&va, c.answer, sizeof(va));
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_CREATE, 0, G, 0, 0), ==, KERNELET_ST_OK);
    memcpy(&h1, c.answer, sizeof(h1));
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_CREATE, 0, G, 0, 0), ==, KERNELET_ST_OK);
    memcpy(&h2, c.answer, sizeof(h2));
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_MAP, va.dptr, G, 0, h1.handle), ==, KERNELET_ST_OK);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_MAP, va.dptr + G, G, 0, h2.handle), ==,
                    KERNELET_ST_OK);
    /* overlapping, outside the reservation, beyond the memory: refused */
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_MAP, va.dptr, G, 0, h2.handle), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_MAP, va.dptr + 4 * G, G, 0, h2.handle), ==,
                    KERNELET_ST_CUDA);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_MAP, va.dptr + 2 * G, G, G, h2.handle), ==,
                    KERNELET_ST_CUDA);
    /* 64 bytes across the seam, there and back */
    uint8_t in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = (uint8_t)(i * 7 + 1);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE,
                                va.dptr + G - 32, 0, 64, in, 0, true), ==, KERNELET_ST_OK);
    void *base;
    uint32_t rid = client_region(&c, 4096, &base);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 0, va.dptr + G - 32, 64, NULL, 0,
                                true), ==, KERNELET_ST_OK);
    memcpy(out, base, 64);
    g_assert_cmpmem(out, 64, in, 64);
    struct kernelet_mem_ptr as_alloc = {.dptr = va.dptr};
    g_assert_cmpint(client_call(&c, KERNELET_OP_MEM_FREE, &as_alloc, sizeof(as_alloc), -1), ==,
                    KERNELET_ST_CUDA);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_FREE, va.dptr, 0, 0, 0), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_UNMAP, va.dptr, 2 * G, 0, 0), ==, KERNELET_ST_OK);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_RELEASE, 0, 0, 0, h1.handle), ==, KERNELET_ST_OK);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_RELEASE, 0, 0, 0, h1.handle), ==, KERNELET_ST_CUDA);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_FREE, va.dptr, 0, 0, 0), ==, KERNELET_ST_OK);

    /* the quota: 3 granules of memory, h2's one among them */
    struct kernelet_tenant_status row = tenant_status(d.socket, "vmm");
    set_quota(d.socket, row.id, 3 * G);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_CREATE, 0, G, 0, 0), ==, KERNELET_ST_OK);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_CREATE, 0, 2 * G, 0, 0), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 2 /* OUT_OF_MEMORY */);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_RELEASE, 0, 0, 0, h2.handle), ==, KERNELET_ST_OK);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_CREATE, 0, 2 * G, 0, 0), ==, KERNELET_ST_OK);

    /* leaving with memory mapped: the next tenant is served and can do the same */
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_RESERVE, 0, 2 * G, 0, 0), ==, KERNELET_ST_OK);
    memcpy(&va, c.answer, sizeof(va));
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_CREATE, 0, 0, 0, 0), ==, KERNELET_ST_BAD_REQUEST);
    client_close(&c);
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_assert_true(client_open_path(&c, d.socket, "next", false));
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_RESERVE, 0, 2 * G, 0, 0), ==, KERNELET_ST_OK);
    g_assert_cmpint(vmm(&c, KERNELET_OP_VMM_CREATE, 0, G, 0, 0), ==, KERNELET_ST_OK);
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

static void set_quota(const char *socket, uint64_t tenant, uint64_t bytes)
{
    struct kernelet_admin_set set = {.tenant = tenant, .fields = KERNELET_SET_MEM_QUOTA,
                                     .mem_quota = bytes};
    struct client admin;

    g_assert_true(client_open_path(&admin, socket, "ctl", true));
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_OK);
    client_close(&admin);
}

/* MEM_ALLOC of size bytes: the status (c->cuda says why it failed). */
static int try_alloc(struct client *c, uint64_t size)
{
    struct kernelet_mem_alloc q = {.size = size};

    return client_call(c, KERNELET_OP_MEM_ALLOC, &q, sizeof(q), -1);
}

/* Every tenant has a quota without the operator naming it: with --default-memory-quota
 * 1M, a tenant gets QUOTA (libcuda: OUT_OF_MEMORY) beyond 1 MiB (before, it could take the whole device
 * from its neighbours); a quota the operator sets for the tenant overrides the default,
 * and setting 0 returns it to the default. A bystander is served meanwhile. */
static void test_default_quota(void)
{
    const char *opts[] = {"--default-memory-quota", "1M", NULL};
    struct daemon d;
    struct client c;
    double took;

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&c, d.socket, "greedy", false));
    g_assert_cmpuint(tenant_status(d.socket, "greedy").mem_quota, ==, 1u << 20);
    g_assert_cmpint(try_alloc(&c, 768u << 10), ==, KERNELET_ST_OK);
    g_assert_cmpint(try_alloc(&c, 512u << 10), ==, KERNELET_ST_QUOTA); /* OUT_OF_MEMORY */
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    set_quota(d.socket, c.tenant, 4u << 20);
    g_assert_cmpint(try_alloc(&c, 512u << 10), ==, KERNELET_ST_OK);
    set_quota(d.socket, c.tenant, 0);
    g_assert_cmpuint(tenant_status(d.socket, "greedy").mem_quota, ==, 1u << 20);
    g_assert_cmpint(try_alloc(&c, 4096), ==, KERNELET_ST_QUOTA);
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* Module variables are device memory in the tenant's window: counted against its quota.
 * With a 1 MiB quota a module declaring a 4 MiB .global array is refused (before, any
 * number of such modules held memory no quota bounded), one of 256 KiB loads and shows in
 * the tenant's memory, and unloading it gives the room back. */
/* MODULE_LOAD of n bytes of image of kind, inline: the status; *module on success. */
static uint32_t load_image(struct client *c, uint32_t kind, const void *image, size_t n,
                           uint64_t *module)
{
    struct kernelet_module_load q = {.kind = kind, .region = KERNELET_REGION_INLINE, .size = n};
    static uint8_t buf[KERNELET_MAX_PAYLOAD];
    struct kernelet_module m;

    g_assert_cmpuint(sizeof(q) + n, <=, sizeof(buf));
    memcpy(buf, &q, sizeof(q));
    memcpy(buf + sizeof(q), image, n);
    uint32_t st = (uint32_t)client_call(c, KERNELET_OP_MODULE_LOAD, buf, sizeof(q) + n, -1);
    memcpy(&m, c->answer, sizeof(m));
    *module = st == KERNELET_ST_OK ? m.module : 0;
    return st;
}

static uint32_t load_status(struct client *c, const char *ptx, uint64_t *module)
{
    return load_image(c, KERNELET_IMAGE_PTX, ptx, strlen(ptx), module);
}

static void test_module_variables_quota(void)
{
    static const char big[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                              ".visible .global .align 4 .b8 table[4194304];\n";
    static const char small[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                ".visible .global .align 4 .b8 table[262144];\n";
    const char *opts[] = {"--default-memory-quota", "1M", NULL};
    struct daemon d;
    struct client c;
    uint64_t module;
    double took;

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&c, d.socket, "hoarder", false));
    g_assert_cmpuint(load_status(&c, big, &module), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, 2); /* CUDA_ERROR_OUT_OF_MEMORY */
    g_assert_cmpuint(tenant_status(d.socket, "hoarder").mem_in_use, ==, 0);
    g_assert_cmpuint(load_status(&c, small, &module), ==, KERNELET_ST_OK);
    g_assert_cmpuint(tenant_status(d.socket, "hoarder").mem_in_use, >=, 256u << 10);
    g_assert_cmpint(try_alloc(&c, 896u << 10), ==, KERNELET_ST_QUOTA); /* 256 K + 896 K > 1 M */
    struct kernelet_handle h = {.handle = module};
    g_assert_cmpint(client_call(&c, KERNELET_OP_MODULE_UNLOAD, &h, sizeof(h), -1), ==,
                    KERNELET_ST_OK);
    g_assert_cmpuint(tenant_status(d.socket, "hoarder").mem_in_use, ==, 0);
    g_assert_cmpint(try_alloc(&c, 896u << 10), ==, KERNELET_ST_OK);
    g_assert_true(tenant_round_trip(d.socket, "bystander"));

    /* a cubin's variables count too (4 MiB of them: beyond the 1 MiB quota) */
    g_autofree char *cubin = NULL;
    gsize cubin_len = 0;
    const char *path = g_getenv("KERNELET_TEST_CUBIN_GLOBALS");
    if (path) {
        g_assert_true(g_file_get_contents(path, &cubin, &cubin_len, NULL));
        g_assert_cmpuint(load_image(&c, KERNELET_IMAGE_CUBIN, cubin, cubin_len, &module), ==,
                         KERNELET_ST_CUDA);
        g_assert_cmpuint(c.cuda, ==, 2); /* CUDA_ERROR_OUT_OF_MEMORY */
    } else {
        g_test_message("no nvcc in this build: the cubin's variables were not tried");
    }
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* Tenant A leaves a secret in device memory and frees it; tenant B then allocates the
 * same size and reads it back with an ordinary copy: zeros. The emulator backs every
 * allocation with fresh zeroed memory (calloc), so this guards against a regression; the
 * cuda backend, whose driver does reuse memory, now zeroes on allocation
 * (test-backend-fake /cuda/backend-fake/memory-cleared fails without that). */
static void test_memory_cleared(void)
{
    enum { N = 1 << 16 };
    struct daemon d;
    struct client a, b;
    uint8_t *secret, *seen;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&a, d.socket, "a", false));
    uint64_t pa = client_alloc(&a, N);
    uint32_t ra = client_region(&a, N, (void **)&secret);
    memset(secret, 0x5e, N);
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_HTOD, ra, pa, 0, N, NULL, 0, true), ==,
                    KERNELET_ST_OK);
    g_assert_cmpint(client_free(&a, pa), ==, KERNELET_ST_OK);
    client_close(&a);

    g_assert_true(client_open_path(&b, d.socket, "b", false));
    uint64_t pb = client_alloc(&b, N);
    uint32_t rb = client_region(&b, N, (void **)&seen);
    memset(seen, 0xff, N);
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_DTOH, rb, 0, pb, N, NULL, 0, true), ==,
                    KERNELET_ST_OK);
    for (unsigned i = 0; i < N; i++)
        g_assert_cmpuint(seen[i], ==, 0);
    client_close(&b);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* Options that make no sense are refused (exit 2), not half-applied. */
static void test_bad_options(void)
{
    const char *bad[][2] = {{"--max-regions", "0"}, {"--max-regions", "65"},
                            {"--max-region-bytes", "0"}, {"--max-region-bytes", "-1"},
                            {"--max-region-bytes", "1X"}, {"--max-region-bytes", "1GB"},
                            {"--max-region-bytes", "99999999999T"},
                            {"--default-memory-quota", "0"},
                            {"--default-memory-quota", "1.5G"}};

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
        g_assert_cmpint(daemon_option_status(kerneletd, bad[i][0], bad[i][1]), ==, 2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        g_printerr("usage: test_kerneletd_resources KERNELETD\n");
        return 2;
    }
    kerneletd = argv[1];
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/kerneletd/queue-flood", test_queue_flood);
    g_test_add_func("/kerneletd/rows", test_rows);
    g_test_add_func("/kerneletd/region-flood", test_region_flood);
    g_test_add_func("/kerneletd/mapped-regions", test_mapped_regions);
    g_test_add_func("/kerneletd/vmm", test_vmm);
    g_test_add_func("/kerneletd/default-quota", test_default_quota);
    g_test_add_func("/kerneletd/module-variables-quota", test_module_variables_quota);
    g_test_add_func("/kerneletd/memory-cleared", test_memory_cleared);
    g_test_add_func("/kerneletd/bad-options", test_bad_options);
    return g_test_run();
}
