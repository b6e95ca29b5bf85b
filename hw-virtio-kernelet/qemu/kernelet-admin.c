/*
 * virtio-kernelet's blocking calls to kerneletd: the handshake's requests (HELLO,
 * SHM_ATTACH) and the administration connection that carries the VM's policy (ADMIN_SET)
 * and reads its statistics (ADMIN_STATUS). Only the link's worker thread makes them
 * (kernelet-worker.c), never QEMU's main loop: a daemon that is slow to answer, or
 * accepts and never answers, then holds up nothing but the worker. A socket timeout still
 * bounds each call, so that the worker moves on.
 */
#include "qemu/osdep.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "virtio-kernelet.h"

#define HDR_SIZE ((size_t)sizeof(struct kernelet_req_hdr))
#define SYNC_TIMEOUT_MS 2000

/* Opens a connection whose blocking calls give up after SYNC_TIMEOUT_MS; -1 on failure. */
int kernelet_connect(const char *path)
{
    struct timeval tv = { SYNC_TIMEOUT_MS / 1000, (SYNC_TIMEOUT_MS % 1000) * 1000 };
    int fd = kproto_connect(path);

    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
                    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)) {
        close(fd);
        fd = -1;
    }
    return fd < 0 ? -1 : fd;
}

/* One request and its answer on a blocking connection (libkernelet-proto's socket
 * helpers); returns the answer's status, or -1 when the connection failed or timed out.
 * The answer payload goes to resp (cap bytes); *resp_len gets its full size. */
int kernelet_call(int fd, uint16_t op, const void *payload, uint32_t len, int pass_fd,
                  void *resp, size_t cap, uint32_t *resp_len)
{
    g_autofree uint8_t *ans = g_malloc(KERNELET_MAX_REQUEST);
    uint8_t h[HDR_SIZE];
    struct iovec iov[2] = { { h, HDR_SIZE }, { (void *)payload, len } };
    struct kernelet_req_hdr a;
    size_t n;

    kproto_hdr_put(h, op, len, 1, 0);
    if (kproto_send(fd, iov, len ? 2 : 1, pass_fd) != 0 ||
        kproto_recv(fd, ans, KERNELET_MAX_REQUEST, &n) != 0 ||
        kproto_hdr_get(ans, false, &a, NULL, 0) != KPROTO_OK || a.opcode != op) {
        return -1;
    }
    if (resp && cap) {
        memcpy(resp, ans + HDR_SIZE, MIN(a.length, cap));
    }
    if (resp_len) {
        *resp_len = a.length;
    }
    return (int)a.status;
}

/* HELLO on a fresh connection; ans receives info + session. */
bool kernelet_hello(int fd, const char *name, uint32_t flags, uint8_t *ans, size_t cap)
{
    struct {
        struct kernelet_hello hello;
        struct kernelet_hello_tenant tenant;
    } req;
    uint32_t len = 0;

    memset(&req, 0, sizeof(req));
    req.hello.proto_version = KERNELET_PROTO_VERSION;
    req.tenant.flags = flags;
    pstrcpy(req.tenant.name, sizeof(req.tenant.name), name);
    return kernelet_call(fd, KERNELET_OP_HELLO, &req, sizeof(req), -1, ans, cap, &len) ==
           KERNELET_ST_OK && len >= cap;
}

/* Attaches size bytes of fd as a region; 0 on failure. */
uint32_t kernelet_attach(int fd, int mem_fd, uint64_t size)
{
    struct kernelet_shm_attach req = { .size = size };
    struct kernelet_shm_region ans = { 0 };
    uint32_t len = 0;

    if (kernelet_call(fd, KERNELET_OP_SHM_ATTACH, &req, sizeof(req), mem_fd, &ans, sizeof(ans),
                      &len) != KERNELET_ST_OK || len != sizeof(ans)) {
        return 0;
    }
    return ans.region;
}

/* An administration connection named name; -1 when the daemon is away or refuses it. */
int kernelet_admin_open(const char *path, const char *name)
{
    uint8_t ans[sizeof(struct kernelet_info) + sizeof(struct kernelet_session)];
    int fd = kernelet_connect(path);

    if (fd >= 0 && !kernelet_hello(fd, name, KERNELET_HELLO_ADMIN, ans, sizeof(ans))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* ---- policy and statistics ---- */

int kernelet_admin_set(int admin_fd, uint64_t tenant, const struct kdev_policy *pol)
{
    struct kernelet_admin_set req = {
        .tenant = tenant, .fields = KERNELET_SET_FIELDS, .weight = pol->weight,
        .priority = pol->priority, .max_inflight = pol->max_inflight,
        .mem_quota = pol->mem_quota, .slicing = pol->slicing,
        .kernel_time_limit_ms = pol->kernel_time_limit_ms,
    };

    return kernelet_call(admin_fd, KERNELET_OP_ADMIN_SET, &req, sizeof(req), -1, NULL, 0,
                         NULL);
}

bool kernelet_admin_row(int admin_fd, uint64_t tenant, struct kernelet_tenant_status *row)
{
    g_autofree uint8_t *ans = g_malloc(KERNELET_MAX_REQUEST);
    struct kernelet_admin_status_req req = { 0 };
    const size_t head = sizeof(struct kernelet_admin_status);
    const size_t each = sizeof(struct kernelet_tenant_status);

    for (;;) {
        struct kernelet_admin_status st;
        uint32_t len = 0;

        if (kernelet_call(admin_fd, KERNELET_OP_ADMIN_STATUS, &req, sizeof(req), -1, ans,
                          KERNELET_MAX_REQUEST, &len) != KERNELET_ST_OK ||
            kproto_response_check(KERNELET_OP_ADMIN_STATUS, ans, len, NULL, 0) != KPROTO_OK) {
            return false;
        }
        memcpy(&st, ans, head);
        if (st.n_tenants == 0) {
            return false;
        }
        for (uint32_t i = 0; i < st.n_tenants; i++) {
            memcpy(row, ans + head + i * each, each);
            if (row->id == tenant) {
                return true;
            }
        }
        req.first += st.n_tenants;
    }
}
