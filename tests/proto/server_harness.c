/* See server_harness.h. */
#define _GNU_SOURCE
#include "server_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "server.h"
#include "sim.h"

struct harness {
    ksim *sim;
    char dir[256];
    char socket[300];
    kbackend backend;
    ksched *sched;
    struct kserver *srv;
    struct kserver_tally *tally;
    pthread_t thread;
};

const char harness_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    ".visible .entry k_add(\n"
    "    .param .u64 p,\n"
    "    .param .u32 n,\n"
    "    .param .u32 v\n"
    ")\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b32 %r<6>;\n"
    "    .reg .b64 %rd<5>;\n"
    "    ld.param.u64 %rd1, [p];\n"
    "    ld.param.u32 %r1, [n];\n"
    "    ld.param.u32 %r2, [v];\n"
    "    mov.u32 %r3, %ctaid.x;\n"
    "    mov.u32 %r4, %ntid.x;\n"
    "    mov.u32 %r5, %tid.x;\n"
    "    mad.lo.s32 %r3, %r3, %r4, %r5;\n"
    "    setp.ge.u32 %p1, %r3, %r1;\n"
    "    @%p1 bra DONE;\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    mul.wide.u32 %rd3, %r3, 4;\n"
    "    add.s64 %rd4, %rd2, %rd3;\n"
    "    ld.global.u32 %r4, [%rd4];\n"
    "    add.s32 %r4, %r4, %r2;\n"
    "    st.global.u32 [%rd4], %r4;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

static void *serve(void *arg)
{
    struct harness *h = arg;

    kserver_run(h->srv);
    return NULL;
}

struct harness *harness_start(void)
{
    return harness_start_hello(0);
}

struct harness *harness_start_hello(unsigned hello_timeout_ms)
{
    return harness_start_opts(hello_timeout_ms, false);
}

static struct harness *start(unsigned hello_timeout_ms, bool launch_attrs,
                             void (*wrap)(kbackend *backend), bool no_fence);

struct harness *harness_start_opts(unsigned hello_timeout_ms, bool launch_attrs)
{
    return start(hello_timeout_ms, launch_attrs, NULL, false);
}

struct harness *harness_start_wrapped(void (*wrap)(kbackend *backend))
{
    return start(0, false, wrap, false);
}

struct harness *harness_start_wrapped_unfenced(void (*wrap)(kbackend *backend))
{
    return start(0, false, wrap, true);
}

static struct harness *start(unsigned hello_timeout_ms, bool launch_attrs,
                             void (*wrap)(kbackend *backend), bool no_fence)
{
    struct harness *h = g_new0(struct harness, 1);
    kbackend_profile prof = {.pur = 0.5, .mur = 0.2, .rm = 0.05, .insts_per_warp = 100,
                          .warps_per_block = 4, .regs_per_thread = 16};
    struct kserver_config cfg = {0};
    ksched_config scfg;
    ksched_err err;
    kbackend_error kerr;
    char msg[256];
    ksim *sim;

    g_snprintf(h->dir, sizeof(h->dir), "%s/kserver-XXXXXX", g_get_tmp_dir());
    g_assert_nonnull(mkdtemp(h->dir));
    g_snprintf(h->socket, sizeof(h->socket), "%s/kerneletd.sock", h->dir);
    g_assert_cmpint(ksim_new(&sim, NULL, &err), ==, 0);
    g_assert_cmpint(ksim_add_kernel(sim, "k_add", &prof, &err), ==, 0);
    /* tests/fatbin/vec_add.cu's kernel, which test_libcuda loads from fatbins as PTX */
    g_assert_cmpint(ksim_add_kernel(sim, "vec_add", &prof, &err), ==, 0);
    ksim_backend(sim, &h->backend);
    if (wrap)
        wrap(&h->backend);
    h->sim = sim;
    g_assert_cmpint(kserver_tally_new(&h->tally), ==, 0);
    ksched_config_default(&scfg);
    scfg.trace = kserver_tally_trace;
    scfg.trace_user = h->tally;
    g_assert_cmpint(ksched_new(&h->sched, &h->backend, &scfg, NULL, &err), ==, 0);
    g_assert_cmpint(ksched_thread_start(h->sched, &err), ==, 0);
    g_assert_cmpint(h->backend.ops->device_info(h->backend.state, &cfg.device, &kerr), ==, 0);
    cfg.device.launch_attrs = launch_attrs;    /* the sim times such launches as whole ones */
    cfg.socket_path = h->socket;
    cfg.socket_mode = 0600;
    cfg.sched = h->sched;
    cfg.backend_name = "sim";
    cfg.admin_uid = getuid();
    cfg.tally = h->tally;
    cfg.max_output_bytes = 1 << 20;
    cfg.hello_timeout_ms = hello_timeout_ms;
    cfg.default_kernel_time_limit_ns = HARNESS_TIME_LIMIT_MS * 1000000ull;
    cfg.max_mem_quota = HARNESS_MAX_QUOTA;
    cfg.no_fence = no_fence;
    if (kserver_new(&h->srv, &cfg, msg, sizeof(msg)) != 0)
        g_error("kserver_new: %s", msg);
    g_assert_cmpint(pthread_create(&h->thread, NULL, serve, h), ==, 0);
    return h;
}

uint64_t harness_attr_launches(struct harness *h)
{
    ksim_stats st;

    ksim_get_stats(h->sim, &st);
    return st.attr_launches;
}

void harness_stop(struct harness *h)
{
    kserver_stop(h->srv);
    pthread_join(h->thread, NULL);
    kserver_free(h->srv);
    ksched_thread_stop(h->sched);
    ksched_free(h->sched);
    h->backend.ops->destroy(h->backend.state);
    kserver_tally_free(h->tally);
    rmdir(h->dir);
    g_free(h);
}

void harness_hold(struct harness *h, bool hold)
{
    ksched_err err;

    if (hold)
        ksched_thread_stop(h->sched);
    else
        g_assert_cmpint(ksched_thread_start(h->sched, &err), ==, 0);
}

const char *harness_socket(const struct harness *h)
{
    return h->socket;
}

void harness_fail_kernel(struct harness *h, const char *entry, bool fail)
{
    ksched_err err;

    g_assert_cmpint(ksim_set_failing(h->sim, entry, fail, &err), ==, 0);
}

unsigned harness_connections(struct harness *h)
{
    /* Read from the server thread's structures: racy but only used after quiescence. */
    return kserver_connections(h->srv);
}

/* ---- client ---------------------------------------------------------------------------- */

bool client_connect(struct client *c, struct harness *h)
{
    return client_connect_path(c, h->socket);
}

bool client_connect_path(struct client *c, const char *socket)
{
    memset(c, 0, sizeof(*c));
    c->fd = kproto_connect(socket);
    return c->fd >= 0;
}

bool client_open(struct client *c, struct harness *h, const char *name, bool admin)
{
    return client_open_path(c, h->socket, name, admin);
}

bool client_open_path(struct client *c, const char *socket, const char *name, bool admin)
{
    return client_open_flags(c, socket, name, admin ? KERNELET_HELLO_ADMIN : 0);
}

bool client_open_flags(struct client *c, const char *socket, const char *name, uint32_t flags)
{
    struct {
        struct kernelet_hello hello;
        struct kernelet_hello_tenant tenant;
    } hello = {{.proto_version = KERNELET_PROTO_VERSION}, {.flags = flags}};
    struct kernelet_session s;

    if (!client_connect_path(c, socket))
        return false;
    g_strlcpy(hello.tenant.name, name, sizeof(hello.tenant.name));
    if (client_call(c, KERNELET_OP_HELLO, &hello, sizeof(hello), -1) != KERNELET_ST_OK)
        return false;
    g_assert_cmpuint(c->answer_len, ==, sizeof(struct kernelet_info) + sizeof(s));
    memcpy(&s, c->answer + sizeof(struct kernelet_info), sizeof(s));
    c->tenant = s.tenant_id;
    return true;
}

void client_close(struct client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

uint64_t client_send(struct client *c, uint16_t op, const void *payload, size_t n, int fd)
{
    uint8_t hdr[KERNELET_HDR_SIZE];
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)payload, n}};
    uint64_t id = ++c->next_id;

    kproto_hdr_put(hdr, op, (uint32_t)n, id, 0);
    memcpy(hdr + offsetof(struct kernelet_req_hdr, context), &c->context, sizeof(c->context));
    return kproto_send(c->fd, iov, n ? 2 : 1, fd) == 0 ? id : 0;
}

int client_call(struct client *c, uint16_t op, const void *payload, size_t n, int fd)
{
    uint64_t id = client_send(c, op, payload, n, fd);

    if (!id)
        return -1;
    return client_recv(c, op, id);
}

int client_recv(struct client *c, uint16_t op, uint64_t id)
{
    struct kernelet_req_hdr h;
    size_t len;

    if (kproto_recv(c->fd, c->answer, sizeof(c->answer), &len) != 0)
        return -1;
    g_assert_cmpint(kproto_hdr_get(c->answer, false, &h, NULL, 0), ==, 0);
    if (op) {
        g_assert_cmpuint(h.request_id, ==, id);
        g_assert_cmpuint(h.opcode, ==, op);
    }
    c->answer_op = h.opcode;
    c->answer_id = h.request_id;
    memmove(c->answer, c->answer + KERNELET_HDR_SIZE, h.length);
    c->answer_len = h.length;
    c->status = h.status;
    c->cuda = c->index = 0;
    if (h.status == KERNELET_ST_CUDA) {
        struct kernelet_cuda_error e;
        g_assert_cmpuint(h.length, ==, sizeof(e));
        memcpy(&e, c->answer, sizeof(e));
        c->cuda = e.code;
        c->index = e.index;
    }
    return (int)h.status;
}

bool client_send_raw(struct client *c, const void *data, size_t n)
{
    struct iovec iov = {(void *)data, n};

    return kproto_send(c->fd, &iov, 1, -1) == 0;
}

bool client_answer_waiting(struct client *c, int ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

bool client_closed_by_server(struct client *c, int timeout_ms)
{
    char buf[4096];

    for (;;) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) <= 0)
            return false;
        ssize_t r = read(c->fd, buf, sizeof(buf));
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            return true;
        if (r < 0)
            return false;
    }
}

uint64_t client_alloc(struct client *c, uint64_t size)
{
    struct kernelet_mem_alloc q = {.size = size};
    struct kernelet_mem_ptr p;

    g_assert_cmpint(client_call(c, KERNELET_OP_MEM_ALLOC, &q, sizeof(q), -1), ==, KERNELET_ST_OK);
    g_assert_cmpuint(c->answer_len, ==, sizeof(p));
    memcpy(&p, c->answer, sizeof(p));
    g_assert_cmpuint(p.dptr, !=, 0);
    return p.dptr;
}

int client_free(struct client *c, uint64_t dptr)
{
    struct kernelet_mem_ptr q = {.dptr = dptr};

    return client_call(c, KERNELET_OP_MEM_FREE, &q, sizeof(q), -1);
}

uint32_t client_region(struct client *c, size_t size, void **base)
{
    int fd = memfd_create("test-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    struct kernelet_shm_attach q = {.size = size};
    struct kernelet_shm_region r;

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, (off_t)size), ==, 0);
    g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), ==, 0);
    *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    g_assert_true(*base != MAP_FAILED);
    g_assert_cmpint(client_call(c, KERNELET_OP_SHM_ATTACH, &q, sizeof(q), fd), ==, KERNELET_ST_OK);
    close(fd);
    memcpy(&r, c->answer, sizeof(r));
    return r.region;
}

int client_copy(struct client *c, uint32_t kind, uint32_t region, uint64_t dst, uint64_t src,
                uint64_t bytes, const void *inline_data, uint64_t stream, bool complete)
{
    uint8_t buf[KERNELET_MAX_PAYLOAD];
    struct kernelet_batch b = {.count = 1, .flags = complete ? KERNELET_BATCH_COMPLETE : 0};
    size_t tail = inline_data ? ((bytes + 7) & ~(uint64_t)7) : 0;
    struct kernelet_rec_copy r = {
        .h = {.op = KERNELET_REC_COPY, .length = (uint32_t)(sizeof(r) + tail), .stream = stream},
        .kind = kind, .region = region, .dst = dst, .src = src, .width = bytes, .height = 1,
        .dst_pitch = bytes, .src_pitch = bytes,
    };

    g_assert_cmpuint(sizeof(b) + sizeof(r) + tail, <=, sizeof(buf));
    memset(buf, 0, sizeof(buf));
    memcpy(buf, &b, sizeof(b));
    memcpy(buf + sizeof(b), &r, sizeof(r));
    if (inline_data)
        memcpy(buf + sizeof(b) + sizeof(r), inline_data, bytes);
    return client_call(c, KERNELET_OP_LAUNCH_BATCH, buf, sizeof(b) + sizeof(r) + tail, -1);
}

int client_sync(struct client *c)
{
    return client_call(c, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
}

uint64_t client_module_ptx(struct client *c, const char *ptx)
{
    size_t n = strlen(ptx);
    struct kernelet_module_load q = {.kind = KERNELET_IMAGE_PTX, .region = KERNELET_REGION_INLINE,
                                     .size = n};
    uint8_t buf[KERNELET_MAX_PAYLOAD];
    struct kernelet_module m;

    memcpy(buf, &q, sizeof(q));
    memcpy(buf + sizeof(q), ptx, n);
    g_assert_cmpint(client_call(c, KERNELET_OP_MODULE_LOAD, buf, sizeof(q) + n, -1), ==,
                    KERNELET_ST_OK);
    memcpy(&m, c->answer, sizeof(m));
    return m.module;
}

uint64_t client_function(struct client *c, uint64_t module, const char *name,
                         struct kernelet_function *f, struct kernelet_param *params)
{
    uint8_t buf[sizeof(struct kernelet_name_req) + KERNELET_MAX_SYMBOL];
    struct kernelet_name_req q = {.module = module, .name_len = (uint32_t)strlen(name)};

    g_assert_cmpuint(q.name_len, <=, KERNELET_MAX_SYMBOL);
    memcpy(buf, &q, sizeof(q));
    memcpy(buf + sizeof(q), name, q.name_len);
    if (client_call(c, KERNELET_OP_FUNCTION_GET, buf, sizeof(q) + q.name_len, -1) != KERNELET_ST_OK)
        return 0;
    memcpy(f, c->answer, sizeof(*f));
    memcpy(params, c->answer + sizeof(*f), f->n_params * sizeof(*params));
    return f->function;
}

int client_launches(struct client *c, uint64_t fn, const void *params, uint32_t pbytes,
                    unsigned n, uint32_t threads, bool complete)
{
    return client_launches_on(c, KERNELET_STREAM_LEGACY, fn, params, pbytes, n, threads, complete);
}

int client_launches_on(struct client *c, uint64_t stream, uint64_t fn, const void *params,
                       uint32_t pbytes, unsigned n, uint32_t threads, bool complete)
{
    static uint8_t buf[KERNELET_MAX_PAYLOAD];
    struct kernelet_batch b = {.count = n, .flags = complete ? KERNELET_BATCH_COMPLETE : 0};
    size_t rec = sizeof(struct kernelet_rec_launch) + ((pbytes + 7) & ~7u), off = sizeof(b);

    memset(buf, 0, sizeof(buf));
    memcpy(buf, &b, sizeof(b));
    for (unsigned i = 0; i < n; i++, off += rec) {
        struct kernelet_rec_launch l = {.h = {.op = KERNELET_REC_LAUNCH, .length = (uint32_t)rec,
                                              .stream = stream},
                                        .function = fn, .grid = {8, 1, 1}, .block = {threads, 1, 1},
                                        .param_bytes = pbytes};
        memcpy(buf + off, &l, sizeof(l));
        memcpy(buf + off + sizeof(l), params, pbytes);
    }
    return client_call(c, KERNELET_OP_LAUNCH_BATCH, buf, off, -1);
}

struct kernelet_tenant_status client_tenant_row(struct client *admin, uint64_t id)
{
    struct kernelet_admin_status_req q = {0};
    struct kernelet_admin_status st;
    struct kernelet_tenant_status ts;

    g_assert_cmpint(client_call(admin, KERNELET_OP_ADMIN_STATUS, &q, sizeof(q), -1), ==,
                    KERNELET_ST_OK);
    memcpy(&st, admin->answer, sizeof(st));
    for (uint32_t i = 0; i < st.n_tenants; i++) {
        memcpy(&ts, admin->answer + sizeof(st) + i * sizeof(ts), sizeof(ts));
        if (ts.id == id)
            return ts;
    }
    g_error("tenant %llu not listed", (unsigned long long)id);
}
