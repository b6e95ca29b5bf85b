/*
 * kernelet-guest-probe: the error paths of /dev/kerneletN. Each case starts from a valid
 * submission, breaks one thing and states the errno (or the device status) it must get;
 * the last case shows the file still works and no page stayed pinned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe.h"

#define HDR sizeof(struct kernelet_req_hdr)

struct fixture {
    uint8_t info_req[HDR];            /* GET_INFO */
    uint8_t echo_req[HDR + 8];        /* DIAG_ECHO_BULK without delay */
    uint8_t bad_req[HDR + 8];         /* scratch request a case may spoil */
    uint8_t resp[512];
    uint8_t *unmapped;                /* a page that was unmapped */
    uint8_t *readonly;                /* a read-only page */
    uint8_t *big;                     /* max_bulk + 2 pages */
    struct kernelet_ioc_config cfg;
    struct kernelet_ioc_buf h2d[KERNELET_IOC_MAX_BUFS + 1], d2h[2];
};

static void put_hdr(uint8_t *p, uint16_t opcode, uint16_t flags, uint32_t length)
{
    struct kernelet_req_hdr h = { .opcode = opcode, .flags = flags, .length = length,
                                  .request_id = 7 };

    memcpy(p, &h, sizeof(h));
}

static int fixture_init(int fd, struct fixture *fx)
{
    long page = sysconf(_SC_PAGESIZE);

    memset(fx, 0, sizeof(*fx));
    if (probe_ioctl(fd, KERNELET_IOC_GET_CONFIG, &fx->cfg))
        return -1;
    put_hdr(fx->info_req, KERNELET_OP_GET_INFO, 0, 0);
    put_hdr(fx->echo_req, KERNELET_OP_DIAG_ECHO_BULK, 0, 8);
    fx->unmapped = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    fx->readonly = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    fx->big = malloc(fx->cfg.max_bulk + 2 * (size_t)page);
    if (fx->unmapped == MAP_FAILED || fx->readonly == MAP_FAILED || !fx->big)
        return -1;
    munmap(fx->unmapped, (size_t)page);
    memset(fx->big, 1, fx->cfg.max_bulk + 2 * (size_t)page);
    return 0;
}

/* A valid GET_INFO on the request queue. */
static struct kernelet_ioc_submit base_info(struct fixture *fx)
{
    return (struct kernelet_ioc_submit){
        .queue = KERNELET_VQ_REQUEST, .req_addr = (uintptr_t)fx->info_req, .req_len = HDR,
        .resp_addr = (uintptr_t)fx->resp, .resp_cap = sizeof(fx->resp),
    };
}

/* A valid echo of 100 bytes with one h2d buffer; cases change buffers or counts. */
static struct kernelet_ioc_submit base_echo(struct fixture *fx)
{
    struct kernelet_ioc_submit s = base_info(fx);

    s.req_addr = (uintptr_t)fx->echo_req;
    s.req_len = HDR + 8;
    fx->h2d[0] = (struct kernelet_ioc_buf){ (uintptr_t)fx->big, 100 };
    s.h2d_bufs = (uintptr_t)fx->h2d;
    s.h2d_count = 1;
    s.d2h_bufs = (uintptr_t)fx->d2h;
    return s;
}

typedef void (*breaker)(struct fixture *fx, struct kernelet_ioc_submit *s);

/* Each case may leave fixture or submission alone. */
#define CASE(fn)                                                                        \
    static void fn(struct fixture *fx __attribute__((unused)),                           \
                   struct kernelet_ioc_submit *s __attribute__((unused)))
CASE(req_addr_bad) { s->req_addr = 1; }
CASE(req_addr_unmapped) { s->req_addr = (uintptr_t)fx->unmapped; }
CASE(resp_addr_unmapped) { s->resp_addr = (uintptr_t)fx->unmapped; }
CASE(resp_addr_readonly) { s->resp_addr = (uintptr_t)fx->readonly; s->resp_cap = 64; }
CASE(h2d_array_unmapped) { s->h2d_bufs = (uintptr_t)fx->unmapped; }
CASE(h2d_buf_unmapped) { fx->h2d[0].addr = (uintptr_t)fx->unmapped; }
CASE(h2d_buf_kernel_address) { fx->h2d[0].addr = 0xffff888000000000ull; }
CASE(h2d_buf_wraps_around) { fx->h2d[0].addr = ~0ull - 10; }
CASE(d2h_buf_readonly)
{
    fx->d2h[0] = (struct kernelet_ioc_buf){ (uintptr_t)fx->readonly, 100 };
    s->d2h_count = 1;
}
CASE(h2d_buf_readonly_is_fine) { fx->h2d[0].addr = (uintptr_t)fx->readonly; }
CASE(req_shorter_than_header) { s->req_len = HDR - 1; }
CASE(hdr_length_disagrees)
{
    put_hdr(fx->bad_req, KERNELET_OP_GET_INFO, 0, 8);
    s->req_addr = (uintptr_t)fx->bad_req;
}
CASE(xfer_flag_from_user)
{
    put_hdr(fx->bad_req, KERNELET_OP_GET_INFO, KERNELET_REQ_F_XFER, 0);
    s->req_addr = (uintptr_t)fx->bad_req;
}
CASE(resp_below_header) { s->resp_cap = HDR - 1; }
CASE(queue_2) { s->queue = KERNELET_VQ_COUNT; }
CASE(queue_huge) { s->queue = 0xffffffffu; }
CASE(unknown_submit_flag) { s->flags = 0x80; }
CASE(zero_length_buffer) { fx->h2d[0].len = 0; }
CASE(req_above_max) { s->req_len = fx->cfg.max_request + 1; }
CASE(resp_above_max) { s->resp_cap = fx->cfg.max_response + 1; }
CASE(too_many_buffers)
{
    for (unsigned i = 0; i <= KERNELET_IOC_MAX_BUFS; i++)
        fx->h2d[i] = (struct kernelet_ioc_buf){ (uintptr_t)fx->big + i, 1 };
    s->h2d_count = KERNELET_IOC_MAX_BUFS + 1;
}
CASE(bulk_total_above_max)
{
    fx->h2d[0].len = fx->cfg.max_bulk / 2 + 1;
    fx->d2h[0] = (struct kernelet_ioc_buf){ (uintptr_t)fx->big, fx->cfg.max_bulk / 2 };
    s->d2h_count = 1;
}
CASE(bulk_buffer_huge) { fx->h2d[0].len = 1ull << 40; }
CASE(launch_opcode_on_request_queue)
{
    put_hdr(fx->bad_req, KERNELET_OP_LAUNCH_BATCH, 0, 8);
    s->req_addr = (uintptr_t)fx->bad_req;
    s->req_len = HDR + 8;
}
CASE(info_on_launch_ring) { s->queue = KERNELET_VQ_LAUNCH; }
CASE(unknown_opcode)
{
    put_hdr(fx->bad_req, 0x7777, 0, 0);
    s->req_addr = (uintptr_t)fx->bad_req;
}
CASE(bulk_on_get_info)
{
    fx->h2d[0] = (struct kernelet_ioc_buf){ (uintptr_t)fx->big, 64 };
    s->h2d_bufs = (uintptr_t)fx->h2d;
    s->h2d_count = 1;
}
CASE(valid_request_after_all) { }
#undef CASE

struct errcase {
    const char *name;
    bool echo;          /* start from the echo rather than GET_INFO */
    breaker brk;
    int want_rc;        /* -errno, or 0 with want_status */
    uint32_t want_status;
};

static const struct errcase cases[] = {
    { "req_addr_bad", false, req_addr_bad, -EFAULT, 0 },
    { "req_addr_unmapped", false, req_addr_unmapped, -EFAULT, 0 },
    { "resp_addr_unmapped", false, resp_addr_unmapped, -EFAULT, 0 },
    { "resp_addr_readonly", false, resp_addr_readonly, -EFAULT, 0 },
    { "h2d_array_unmapped", true, h2d_array_unmapped, -EFAULT, 0 },
    { "h2d_buf_unmapped", true, h2d_buf_unmapped, -EFAULT, 0 },
    { "h2d_buf_kernel_address", true, h2d_buf_kernel_address, -EFAULT, 0 },
    { "h2d_buf_wraps_around", true, h2d_buf_wraps_around, -EFAULT, 0 },
    { "d2h_buf_readonly", true, d2h_buf_readonly, -EFAULT, 0 },
    { "h2d_buf_readonly_is_fine", true, h2d_buf_readonly_is_fine, 0, KERNELET_ST_OK },
    { "req_shorter_than_header", false, req_shorter_than_header, -EINVAL, 0 },
    { "hdr_length_disagrees", false, hdr_length_disagrees, -EINVAL, 0 },
    { "xfer_flag_from_user", false, xfer_flag_from_user, -EINVAL, 0 },
    { "resp_below_header", false, resp_below_header, -EINVAL, 0 },
    { "queue_2", false, queue_2, -EINVAL, 0 },
    { "queue_huge", false, queue_huge, -EINVAL, 0 },
    { "unknown_submit_flag", false, unknown_submit_flag, -EINVAL, 0 },
    { "zero_length_buffer", true, zero_length_buffer, -EINVAL, 0 },
    { "req_above_max", false, req_above_max, -E2BIG, 0 },
    { "resp_above_max", false, resp_above_max, -E2BIG, 0 },
    { "too_many_buffers", true, too_many_buffers, -E2BIG, 0 },
    { "bulk_total_above_max", true, bulk_total_above_max, -E2BIG, 0 },
    { "bulk_buffer_huge", true, bulk_buffer_huge, -E2BIG, 0 },
    { "launch_opcode_on_request_queue", false, launch_opcode_on_request_queue, 0,
      KERNELET_ST_BAD_OPCODE },
    { "info_on_launch_ring", false, info_on_launch_ring, 0, KERNELET_ST_BAD_OPCODE },
    { "unknown_opcode", false, unknown_opcode, 0, KERNELET_ST_BAD_OPCODE },
    { "bulk_on_get_info", false, bulk_on_get_info, 0, KERNELET_ST_BAD_REQUEST },
    { "valid_request_after_all", false, valid_request_after_all, 0, KERNELET_ST_OK },
};

static bool report(const char *name, int rc, uint32_t status, int want_rc,
                   uint32_t want_status)
{
    bool ok = rc == want_rc && (rc != 0 || status == want_status);

    printf("ERRCASE %s rc=%s", name, probe_errname(rc));
    if (rc == 0)
        printf(" status=%u", status);
    printf(" want=%s", probe_errname(want_rc));
    if (want_rc == 0)
        printf(" want_status=%u", want_status);
    printf(" %s\n", ok ? "ok" : "FAIL");
    return ok;
}

/* Calls that are not submissions: no argument, an unknown command, a bad config pointer. */
static unsigned raw_cases(int fd)
{
    unsigned failed = 0;

    failed += !report("submit_null_arg", probe_ioctl(fd, KERNELET_IOC_SUBMIT, NULL), 0,
                      -EFAULT, 0);
    failed += !report("unknown_ioctl", probe_ioctl(fd, _IO(KERNELET_IOC_MAGIC, 0x7f), NULL), 0,
                      -ENOTTY, 0);
    failed += !report("get_config_bad_pointer",
                      probe_ioctl(fd, KERNELET_IOC_GET_CONFIG, (void *)1), 0, -EFAULT, 0);
    return failed;
}

int probe_cmd_errors(const char *dev, int argc, char **argv)
{
    static struct fixture fx;
    unsigned failed, total = sizeof(cases) / sizeof(cases[0]) + 3;
    int fd = probe_open(dev);
    long pinned;

    (void)argc, (void)argv;
    if (fd < 0 || fixture_init(fd, &fx)) {
        printf("ERRORS setup failed\n");
        return 1;
    }
    failed = raw_cases(fd);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct errcase *c = &cases[i];
        struct kernelet_ioc_submit s = c->echo ? base_echo(&fx) : base_info(&fx);
        int rc;

        c->brk(&fx, &s);
        rc = probe_ioctl(fd, KERNELET_IOC_SUBMIT, &s);
        failed += !report(c->name, rc, s.status, c->want_rc, c->want_status);
    }
    pinned = probe_wait_value(dev, "pinned_pages", 0, 2000);
    printf("ERRORS total=%u failed=%u pinned_after=%ld\n", total, failed, pinned);
    close(fd);
    return failed != 0;
}
