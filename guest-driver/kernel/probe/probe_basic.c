/*
 * kernelet-guest-probe: the working paths. Configuration, the control requests the
 * device answers (HELLO, GET_INFO, GET_STATS), bulk echo with checksums, concurrent
 * echoes from several processes, and contexts per open file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define HDR sizeof(struct kernelet_req_hdr)

int probe_cmd_config(const char *dev, int argc, char **argv)
{
    struct kernelet_ioc_config c;
    int fd = probe_open(dev), rc;

    (void)argc, (void)argv;
    if (fd < 0)
        return 1;
    rc = probe_ioctl(fd, KERNELET_IOC_GET_CONFIG, &c);
    if (rc == 0)
        printf("CONFIG dev=%s index=%u version=%u.%u flags=0x%x sms=%u mem=%llu cc=%u.%u "
               "max_request=%u max_response=%u max_bulk=%u max_bufs=%u context=%u "
               "generation=%u name=%s\n", dev, c.index, c.proto_version >> 16,
               c.proto_version & 0xffff, c.flags, c.gpu_sm_count,
               (unsigned long long)c.gpu_mem_bytes, c.gpu_cc_major, c.gpu_cc_minor,
               c.max_request, c.max_response, c.max_bulk, c.max_bufs, c.context,
               c.config_generation, c.gpu_name);
    else
        printf("CONFIG dev=%s rc=%s\n", dev, probe_errname(rc));
    close(fd);
    return rc != 0;
}

static void print_info(const char *what, const struct probe_result *res)
{
    struct kernelet_info info;

    if (res->rc || res->status || res->resp_len != HDR + sizeof(info)) {
        printf("%s rc=%s status=%u len=%u\n", what, probe_errname(res->rc), res->status,
               res->resp_len);
        return;
    }
    memcpy(&info, res->resp + HDR, sizeof(info));
    printf("%s rc=0 status=0 version=%u.%u sms=%u mem=%llu cc=%u.%u weight=%u "
           "flags=0x%x name=%s\n", what, info.proto_version >> 16,
           info.proto_version & 0xffff, info.gpu_sm_count,
           (unsigned long long)info.gpu_mem_bytes, info.gpu_cc_major, info.gpu_cc_minor,
           info.weight, info.flags, info.gpu_name);
}

int probe_cmd_hello(const char *dev, int argc, char **argv)
{
    struct kernelet_hello hello = { .proto_version = KERNELET_PROTO_VERSION };
    struct probe_req req = { .queue = KERNELET_VQ_REQUEST, .opcode = KERNELET_OP_HELLO,
                             .payload = &hello, .payload_len = sizeof(hello) };
    struct probe_result res;
    struct kernelet_stats st;
    int fd = probe_open(dev);

    (void)argc, (void)argv;
    if (fd < 0)
        return 1;
    probe_submit(fd, &req, &res);
    print_info("HELLO", &res);
    req = (struct probe_req){ .queue = KERNELET_VQ_REQUEST, .opcode = KERNELET_OP_GET_INFO };
    probe_submit(fd, &req, &res);
    print_info("INFO", &res);
    req.opcode = KERNELET_OP_GET_STATS;
    probe_submit(fd, &req, &res);
    memcpy(&st, res.resp + HDR, sizeof(st));
    printf("STATS rc=%s status=%u len=%u requests=%llu errors=%llu\n", probe_errname(res.rc),
           res.status, res.resp_len, (unsigned long long)st.requests,
           (unsigned long long)st.errors);
    close(fd);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Echoes `total` bytes in chains of `chunk`; returns 0 when every checksum and every
 * byte came back right. */
static int echo_run(const char *dev, size_t total, size_t chunk, uint64_t seed,
                    const char *tag)
{
    uint8_t *src = malloc(total), *dst = malloc(total);
    unsigned chains = 0, bad_sums = 0, errors = 0;
    struct probe_result res;
    int fd = probe_open(dev), rc = 0, data_bad;
    double t0, secs;

    if (fd < 0 || !src || !dst)
        return 1;
    probe_fill(src, total, seed);
    memset(dst, 0x5a, total);
    t0 = now_s();
    for (size_t at = 0; at < total; at += chunk, chains++) {
        size_t n = total - at < chunk ? total - at : chunk;
        uint64_t got = probe_echo(fd, src + at, dst + at, n, 0, 0, &res);

        if (res.rc || res.status) {
            errors++;
            rc = res.rc ? res.rc : -(int)res.status;
        } else if (got != probe_fnv1a64(0xcbf29ce484222325ull, src + at, n)) {
            bad_sums++;
        }
    }
    secs = now_s() - t0;
    data_bad = memcmp(src, dst, total) != 0;
    printf("%s bytes=%zu chains=%u errors=%u last_rc=%s checksum=%s data=%s mib_s=%.1f\n", tag,
           total, chains, errors, probe_errname(rc), bad_sums || errors ? "BAD" : "ok",
           data_bad ? "BAD" : "ok", (double)total / (1 << 20) / (secs > 0 ? secs : 1e-9));
    fflush(stdout);
    free(src);
    free(dst);
    close(fd);
    return bad_sums || errors || data_bad;
}

int probe_cmd_echo(const char *dev, int argc, char **argv)
{
    size_t total = argc > 0 ? strtoul(argv[0], NULL, 0) : 8u << 20;
    size_t chunk = argc > 1 ? strtoul(argv[1], NULL, 0) : 1u << 20;

    if (chunk == 0 || total == 0)
        return 2;
    return echo_run(dev, total, chunk, total ^ chunk, "ECHO");
}

/* Several processes echo at once, each on its own file and data. */
int probe_cmd_parallel(const char *dev, int argc, char **argv)
{
    int procs = argc > 0 ? atoi(argv[0]) : 4;
    size_t total = argc > 1 ? strtoul(argv[1], NULL, 0) : 1u << 20;
    int failed = 0;

    for (int i = 0; i < procs; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(echo_run(dev, total, 256u << 10, 1000 + (uint64_t)i, "PARALLEL-ONE"));
        if (pid < 0)
            failed++;
    }
    for (int i = 0; i < procs; i++) {
        int st;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    printf("PARALLEL procs=%d failed=%d\n", procs, failed);
    return failed != 0;
}

/* The context id the device saw on a request from this file (echo without bulk). */
static long context_seen(int fd)
{
    struct kernelet_diag_echo_result r;
    struct probe_result res;

    probe_echo(fd, NULL, NULL, 0, 0, 0, &res);
    if (res.rc || res.status || res.resp_len != HDR + sizeof(r))
        return -1;
    memcpy(&r, res.resp + HDR, sizeof(r));
    return r.context;
}

/* The device's request counter (GET_STATS; the request counts itself). */
static long device_requests(int fd)
{
    struct probe_req req = { .queue = KERNELET_VQ_REQUEST, .opcode = KERNELET_OP_GET_STATS };
    struct probe_result res;
    struct kernelet_stats st;

    probe_submit(fd, &req, &res);
    if (res.rc || res.status || res.resp_len != HDR + sizeof(st))
        return -1;
    memcpy(&st, res.resp + HDR, sizeof(st));
    return (long)st.requests;
}

/* Two files are two contexts, each stamped on its requests; closing them sends one
 * CONTEXT_CLOSE each (counted by the device: 2 echoes + 2 closes + the second GET_STATS). */
int probe_cmd_contexts(const char *dev, int argc, char **argv)
{
    struct kernelet_ioc_config ca, cb;
    int ctl = probe_open(dev), a = probe_open(dev), b = probe_open(dev);
    long sa, sb, before, after, submitted;

    (void)argc, (void)argv;
    if (ctl < 0 || a < 0 || b < 0)
        return 1;
    if (probe_ioctl(a, KERNELET_IOC_GET_CONFIG, &ca) || probe_ioctl(b, KERNELET_IOC_GET_CONFIG, &cb))
        return 1;
    before = device_requests(ctl);
    submitted = probe_sysfs(dev, "submitted");
    sa = context_seen(a);
    sb = context_seen(b);
    printf("CONTEXTS a=%u b=%u seen_a=%ld seen_b=%ld distinct=%s match=%s open=%ld\n",
           ca.context, cb.context, sa, sb, ca.context != cb.context && ca.context && cb.context
           ? "yes" : "no", sa == ca.context && sb == cb.context ? "yes" : "no",
           probe_sysfs(dev, "contexts"));
    close(a);
    close(b);
    /* CONTEXT_CLOSE is sent from a work item: wait until the driver has sent both. */
    probe_wait_value(dev, "submitted", submitted + 4, 2000);
    probe_wait_value(dev, "inflight", 0, 2000);
    after = device_requests(ctl);
    printf("CONTEXT-CLOSE device_requests_delta=%ld open=%ld\n", after - before,
           probe_sysfs(dev, "contexts"));
    close(ctl);
    return 0;
}

/* One GET_INFO; prints how it ended (the fault tests expect EIO, then 0). */
int probe_cmd_request(const char *dev, int argc, char **argv)
{
    struct probe_req req = { .queue = KERNELET_VQ_REQUEST, .opcode = KERNELET_OP_GET_INFO };
    struct probe_result res;
    int fd = probe_open(dev);

    if (fd < 0)
        return 1;
    probe_submit(fd, &req, &res);
    printf("REQUEST %s rc=%s status=%u len=%u\n", argc > 0 ? argv[0] : "-",
           probe_errname(res.rc), res.status, res.resp_len);
    close(fd);
    return 0;
}
