/*
 * kernelet-guest-probe: opening the device, submitting requests, sysfs counters and test
 * data shared by the commands.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

int probe_open(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);

    if (fd < 0)
        printf("OPEN %s rc=%s\n", path, probe_errname(-errno));
    return fd;
}

int probe_ioctl(int fd, unsigned long cmd, void *arg)
{
    return ioctl(fd, cmd, arg) == 0 ? 0 : -errno;
}

void probe_submit(int fd, const struct probe_req *req, struct probe_result *res)
{
    static uint64_t next_id = 1;
    uint8_t raw[sizeof(struct kernelet_req_hdr) + 256];
    struct kernelet_req_hdr hdr = {
        .opcode = req->opcode, .length = req->payload_len, .request_id = next_id++,
    };
    struct kernelet_ioc_submit s = {
        .queue = req->queue, .flags = req->flags,
        .req_addr = (uintptr_t)raw, .req_len = (uint32_t)sizeof(hdr) + req->payload_len,
        .resp_addr = (uintptr_t)(req->resp ? req->resp : res->resp),
        .resp_cap = req->resp ? req->resp_cap : (uint32_t)sizeof(res->resp),
        .h2d_bufs = (uintptr_t)req->h2d, .h2d_count = req->nh2d,
        .d2h_bufs = (uintptr_t)req->d2h, .d2h_count = req->nd2h,
    };

    memset(res, 0, sizeof(*res));
    if (req->payload_len > sizeof(raw) - sizeof(hdr)) {
        res->rc = -E2BIG;
        return;
    }
    memcpy(raw, &hdr, sizeof(hdr));
    if (req->payload_len)
        memcpy(raw + sizeof(hdr), req->payload, req->payload_len);
    res->rc = probe_ioctl(fd, KERNELET_IOC_SUBMIT, &s);
    res->status = s.status;
    res->resp_len = s.resp_len;
    res->d2h_written = s.d2h_written;
}

const char *probe_errname(int rc)
{
    static const struct { int e; const char *name; } names[] = {
        { EFAULT, "EFAULT" }, { EINVAL, "EINVAL" }, { E2BIG, "E2BIG" }, { EINTR, "EINTR" },
        { ENODEV, "ENODEV" }, { EIO, "EIO" }, { ENOMEM, "ENOMEM" }, { ENOTTY, "ENOTTY" },
        { ENOENT, "ENOENT" }, { EBUSY, "EBUSY" }, { EAGAIN, "EAGAIN" }, { ENXIO, "ENXIO" },
    };
    static char other[16];

    if (rc == 0)
        return "0";
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (-rc == names[i].e)
            return names[i].name;
    snprintf(other, sizeof(other), "%d", rc);
    return other;
}

static long read_number(const char *path)
{
    FILE *f = fopen(path, "re");
    long v = -1;

    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

long probe_sysfs(const char *dev_path, const char *attr)
{
    const char *name = strrchr(dev_path, '/');
    char path[256];

    snprintf(path, sizeof(path), "/sys/class/misc/%s/%s", name ? name + 1 : dev_path, attr);
    return read_number(path);
}

long probe_module_counter(const char *name)
{
    char path[256];

    snprintf(path, sizeof(path), "/sys/module/virtio_kernelet/parameters/%s", name);
    return read_number(path);
}

long probe_wait_value(const char *dev_path, const char *attr, long want, int timeout_ms)
{
    long v = -1;

    for (int waited = 0;; waited += 10) {
        v = dev_path ? probe_sysfs(dev_path, attr) : probe_module_counter(attr);
        if (v == want || waited >= timeout_ms)
            return v;
        probe_sleep_ms(10);
    }
}

void probe_fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

    for (size_t i = 0; i < n; i++) {
        /* xorshift64*, one byte per step: slow enough to matter only for many MiB */
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        p[i] = (uint8_t)((x * 0x2545f4914f6cdd1dull) >> 56);
    }
}

uint64_t probe_fnv1a64(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

void probe_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Splits [p, p + len) at the given fractions into non-empty buffers; returns the count. */
static unsigned split(uint8_t *p, size_t len, const size_t *cuts, unsigned ncuts,
                      struct kernelet_ioc_buf *out)
{
    size_t at = 0;
    unsigned n = 0;

    for (unsigned i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        if (end > len)
            end = len;
        if (end > at) {
            out[n].addr = (uintptr_t)(p + at);
            out[n].len = end - at;
            n++;
            at = end;
        }
    }
    return n;
}

uint64_t probe_echo(int fd, const uint8_t *src, uint8_t *dst, size_t len, uint32_t delay_ms,
                    unsigned flags, struct probe_result *res)
{
    struct kernelet_diag_echo payload = { .delay_ms = delay_ms };
    struct kernelet_ioc_buf h2d[3], d2h[4];
    /* Cuts at odd places, so buffers start and end inside pages. */
    const size_t hcuts[] = { len / 3 + 1, 2 * len / 3 + 7 };
    const size_t dcuts[] = { 4093, len / 2 + 3, len - len / 5 };
    struct probe_req req = {
        .queue = KERNELET_VQ_REQUEST, .flags = flags, .opcode = KERNELET_OP_DIAG_ECHO_BULK,
        .payload = &payload, .payload_len = sizeof(payload),
        .h2d = h2d, .nh2d = split((uint8_t *)src, len, hcuts, 2, h2d),
        .d2h = d2h, .nd2h = split(dst, len, dcuts, 3, d2h),
    };
    struct kernelet_diag_echo_result r;

    probe_submit(fd, &req, res);
    if (res->rc || res->status || res->resp_len < sizeof(struct kernelet_req_hdr) + sizeof(r))
        return 0;
    memcpy(&r, res->resp + sizeof(struct kernelet_req_hdr), sizeof(r));
    return r.h2d_bytes == len && r.d2h_bytes == len ? r.fnv1a64 : 0;
}
