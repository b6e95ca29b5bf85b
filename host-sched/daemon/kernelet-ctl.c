/* kernelet-ctl: the operator's view of kerneletd.
 *   kernelet-ctl [--socket PATH] status
 *   kernelet-ctl [--socket PATH] set TENANT key=value...   (weight, priority, quota,
 *                                                           max-inflight, slicing=on|off)
 * It talks the administration part of the protocol (docs/PROTOCOL.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernelet/protocol.h"

#define DEFAULT_SOCKET "/run/kernelet/kerneletd.sock"

static uint8_t answer[KERNELET_MAX_REQUEST];

/* Sends one request and reads its answer; the status, or -1 on a transport failure. The
 * payload stays in `answer`, its length in *len. */
static int call(int fd, uint16_t op, const void *payload, size_t n, size_t *len)
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
    *len = h.length;
    if (h.status == KERNELET_ST_OK &&
        kproto_response_check(op, answer + KERNELET_HDR_SIZE, h.length, NULL, 0) != 0)
        return -1;
    return (int)h.status;
}

static int connect_admin(const char *path)
{
    struct {
        struct kernelet_hello hello;
        struct kernelet_hello_tenant tenant;
    } hello = {{.proto_version = KERNELET_PROTO_VERSION}, {.flags = KERNELET_HELLO_ADMIN}};
    size_t len;
    int fd = kproto_connect(path), st;

    if (fd < 0) {
        fprintf(stderr, "kernelet-ctl: cannot connect to %s: %s\n", path, strerror(-fd));
        return -1;
    }
    strcpy(hello.tenant.name, "kernelet-ctl");
    if ((st = call(fd, KERNELET_OP_HELLO, &hello, sizeof(hello), &len)) != KERNELET_ST_OK) {
        fprintf(stderr, "kernelet-ctl: kerneletd refused the administration connection (%d)%s\n",
                st, st == KERNELET_ST_BAD_REQUEST ? ": run as root or as kerneletd's user" : "");
        close(fd);
        return -1;
    }
    return fd;
}

static void human_bytes(uint64_t b, char *out, size_t n)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;

    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, n, u ? "%.1f%s" : "%.0f%s", v, unit[u]);
}

static int status(int fd)
{
    struct kernelet_admin_status_req q = {0};
    struct kernelet_admin_status s;
    size_t len;
    int st;

    if ((st = call(fd, KERNELET_OP_ADMIN_STATUS, &q, sizeof(q), &len)) != KERNELET_ST_OK) {
        fprintf(stderr, "kernelet-ctl: status failed (%d)\n", st);
        return 1;
    }
    memcpy(&s, answer + KERNELET_HDR_SIZE, sizeof(s));
    printf("kerneletd: backend %s, policy %s, up %.1f s, %u tenant(s)\n", s.backend, s.policy,
           (double)s.uptime_ns / 1e9, s.total_tenants);
    printf("scheduler: %" PRIu64 " decisions, %" PRIu64 " co-scheduled pairs, %" PRIu64
           " solo, %" PRIu64 " slices, %" PRIu64 " kernels completed\n",
           s.decisions, s.coschedules, s.solo, s.slices, s.kernels_completed);
    printf("%-6s %-16s %7s %6s %4s %9s %8s %9s %6s %9s %9s %9s %10s %9s %s\n", "ID", "NAME",
           "PID", "WEIGHT", "PRIO", "QUOTA", "INFLIGHT", "MEM", "QUEUED", "LAUNCHED", "DONE",
           "COSCHED", "GPU-MS", "COPIED", "FLAGS");
    for (uint32_t i = 0; i < s.n_tenants; i++) {
        struct kernelet_tenant_status t;
        char quota[16], mem[16], copied[16];
        memcpy(&t, answer + KERNELET_HDR_SIZE + sizeof(s) + i * sizeof(t), sizeof(t));
        t.name[sizeof(t.name) - 1] = 0;
        if (t.mem_quota)
            human_bytes(t.mem_quota, quota, sizeof(quota));
        else
            strcpy(quota, "-");
        human_bytes(t.mem_in_use, mem, sizeof(mem));
        human_bytes(t.bytes_copied, copied, sizeof(copied));
        printf("%-6" PRIu64 " %-16s %7u %6u %4u %9s %8u %9s %6u %9" PRIu64 " %9" PRIu64
               " %9" PRIu64 " %10.3f %9s %s%s%s\n",
               t.id, t.name, t.pid, t.weight, t.priority, quota, t.max_inflight, mem, t.queued,
               t.launches,
               t.completed, t.coscheduled, (double)t.gpu_time_ns / 1e6, copied,
               (t.flags & KERNELET_TENANT_SLICING) ? "slicing " : "",
               (t.flags & KERNELET_TENANT_STICKY) ? "FAULTED " : "",
               (t.flags & KERNELET_TENANT_VM) ? "vm" : "");
    }
    return 0;
}

/* key=value into q; false when the pair is not understood. */
static int parse_setting(const char *arg, struct kernelet_admin_set *q)
{
    const char *eq = strchr(arg, '=');
    char *end;
    unsigned long long v;

    if (!eq)
        return 0;
    if (strncmp(arg, "slicing", (size_t)(eq - arg)) == 0 && eq - arg == 7) {
        q->fields |= KERNELET_SET_SLICING;
        q->slicing = strcmp(eq + 1, "on") == 0 || strcmp(eq + 1, "1") == 0;
        return strcmp(eq + 1, "on") == 0 || strcmp(eq + 1, "off") == 0 ||
               strcmp(eq + 1, "1") == 0 || strcmp(eq + 1, "0") == 0;
    }
    errno = 0;
    v = strtoull(eq + 1, &end, 0);
    if (errno || end == eq + 1)
        return 0;
    if (*end == 'K' || *end == 'M' || *end == 'G' || *end == 'T') {
        v <<= *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 40;
        end++;
    }
    if (*end)
        return 0;
#define KEY(k) (strncmp(arg, k, (size_t)(eq - arg)) == 0 && (size_t)(eq - arg) == strlen(k))
    if (KEY("weight")) {
        q->fields |= KERNELET_SET_WEIGHT;
        q->weight = (uint32_t)v;
    } else if (KEY("priority")) {
        q->fields |= KERNELET_SET_PRIORITY;
        q->priority = (uint32_t)v;
    } else if (KEY("quota")) {
        q->fields |= KERNELET_SET_MEM_QUOTA;
        q->mem_quota = v;
    } else if (KEY("max-inflight")) {
        q->fields |= KERNELET_SET_MAX_INFLIGHT;
        q->max_inflight = (uint32_t)v;
    } else {
        return 0;
    }
#undef KEY
    return 1;
}

static int set(int fd, int argc, char **argv)
{
    struct kernelet_admin_set q = {0};
    char *end;
    size_t len;
    int st;

    if (argc < 2) {
        fprintf(stderr, "kernelet-ctl: set TENANT key=value...\n");
        return 2;
    }
    q.tenant = strtoull(argv[0], &end, 10);
    if (*end) {
        fprintf(stderr, "kernelet-ctl: bad tenant id '%s'\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (!parse_setting(argv[i], &q)) {
            fprintf(stderr, "kernelet-ctl: bad setting '%s' (weight=1..10000 priority=0..7 "
                            "quota=BYTES max-inflight=1..65536 slicing=on|off)\n", argv[i]);
            return 2;
        }
    st = call(fd, KERNELET_OP_ADMIN_SET, &q, sizeof(q), &len);
    if (st != KERNELET_ST_OK) {
        fprintf(stderr, "kernelet-ctl: set refused (%s)\n",
                st == KERNELET_ST_BAD_REQUEST ? "a value is out of range"
                : st == KERNELET_ST_CUDA ? "no such tenant" : "error");
        return 1;
    }
    printf("tenant %" PRIu64 " updated\n", q.tenant);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {{"socket", required_argument, NULL, 's'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    const char *path = getenv("KERNELET_SOCKET");
    int ch, fd, rc;

    if (!path || !*path)
        path = DEFAULT_SOCKET;
    while ((ch = getopt_long(argc, argv, "+", longs, NULL)) != -1) {
        if (ch == 's')
            path = optarg;
        else {
            printf("usage: kernelet-ctl [--socket PATH] status | set TENANT key=value...\n");
            return ch == 'h' ? 0 : 2;
        }
    }
    if (optind >= argc || (strcmp(argv[optind], "status") && strcmp(argv[optind], "set"))) {
        fprintf(stderr, "usage: kernelet-ctl [--socket PATH] status | set TENANT key=value...\n");
        return 2;
    }
    if ((fd = connect_admin(path)) < 0)
        return 1;
    rc = strcmp(argv[optind], "status") == 0 ? status(fd)
                                             : set(fd, argc - optind - 1, argv + optind + 1);
    close(fd);
    return rc;
}
