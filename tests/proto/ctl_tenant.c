/* A tenant for ctl_test.sh and ctl_output_test.py: says HELLO as "ctl-tenant" (or the
 * name given) on the socket given, then holds the connection until its standard input
 * ends.
 *   ctl_tenant SOCKET [NAME] */
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernelet/protocol.h"

int main(int argc, char **argv)
{
    struct {
        struct kernelet_hello hello;
        struct kernelet_hello_tenant tenant;
    } hello = {{.proto_version = KERNELET_PROTO_VERSION}, {0}};
    uint8_t hdr[KERNELET_HDR_SIZE], answer[KERNELET_MAX_REQUEST];
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {&hello, sizeof(hello)}};
    struct kernelet_req_hdr h;
    char buf[64];
    size_t len;
    int fd;

    if (argc < 2 || argc > 3 || (fd = kproto_connect(argv[1])) < 0)
        return 2;
    snprintf(hello.tenant.name, sizeof(hello.tenant.name), "%s", argc == 3 ? argv[2] : "ctl-tenant");
    kproto_hdr_put(hdr, KERNELET_OP_HELLO, sizeof(hello), 1, 0);
    if (kproto_send(fd, iov, 2, -1) || kproto_recv(fd, answer, sizeof(answer), &len) ||
        kproto_hdr_get(answer, false, &h, NULL, 0) || h.status != KERNELET_ST_OK)
        return 1;
    while (read(0, buf, sizeof(buf)) > 0) {
    }
    close(fd);
    return 0;
}
