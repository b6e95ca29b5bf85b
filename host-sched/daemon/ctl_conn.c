/* kernelet-ctl's administration connection: HELLO with KERNELET_HELLO_ADMIN, then one
 * request at a time (docs/PROTOCOL.md, administration). */
#include <stdbool.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ctl.h"

static uint8_t answer[KERNELET_MAX_REQUEST];

int ctl_call(int fd, uint16_t op, const void *payload, size_t n, void *out, size_t cap,
             size_t *len)
{
    static uint64_t id;
    uint8_t hdr[KERNELET_HDR_SIZE];
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)payload, n}};
    struct kernelet_req_hdr h;
    size_t got;

    kproto_hdr_put(hdr, op, (uint32_t)n, ++id, 0);
    if (kproto_send(fd, iov, n ? 2 : 1, -1) != 0 || kproto_recv(fd, answer, sizeof(answer), &got) != 0)
        return -1;
    if (kproto_hdr_get(answer, false, &h, NULL, 0) != 0 || h.request_id != id || h.opcode != op)
        return -1;
    if (h.status == KERNELET_ST_OK &&
        kproto_response_check(op, answer + KERNELET_HDR_SIZE, h.length, NULL, 0) != 0)
        return -1;
    *len = h.length;
    if (out)
        memcpy(out, answer + KERNELET_HDR_SIZE, h.length < cap ? h.length : cap);
    return (int)h.status;
}

int ctl_connect(const char *path, int quiet)
{
    struct {
        struct kernelet_hello hello;
        struct kernelet_hello_tenant tenant;
    } hello = {{.proto_version = KERNELET_PROTO_VERSION}, {.flags = KERNELET_HELLO_ADMIN}};
    uint8_t info[sizeof(struct kernelet_session) + 64];
    size_t len;
    int fd = kproto_connect(path), st;

    if (fd < 0) {
        if (!quiet)
            fprintf(stderr, "kernelet-ctl: cannot connect to %s: %s\n", path, strerror(-fd));
        return -1;
    }
    strcpy(hello.tenant.name, "kernelet-ctl");
    st = ctl_call(fd, KERNELET_OP_HELLO, &hello, sizeof(hello), info, sizeof(info), &len);
    if (st != KERNELET_ST_OK) {
        if (!quiet)
            fprintf(stderr, "kernelet-ctl: kerneletd refused the administration connection (%d)%s\n",
                    st, st == KERNELET_ST_BAD_REQUEST ? ": run as root or as kerneletd's user" : "");
        close(fd);
        return -1;
    }
    return fd;
}
