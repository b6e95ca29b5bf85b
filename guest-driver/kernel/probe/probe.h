/*
 * kernelet-guest-probe: a guest tool that exercises /dev/kerneletN (virtio_kernelet.ko)
 * and prints what it finds as KEY=VALUE lines for the VM tests to check.
 */
#ifndef KERNELET_PROBE_H
#define KERNELET_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/kernelet_ioctl.h"
#include "kernelet/virtio_kernelet.h"

/* One request to submit: opcode and payload, response room, bulk buffers. */
struct probe_req {
    unsigned queue;
    unsigned flags;            /* KERNELET_SUBMIT_F_* */
    uint16_t opcode;
    const void *payload;
    uint32_t payload_len;
    void *resp;                /* NULL: a buffer inside the call's result is used */
    uint32_t resp_cap;
    const struct kernelet_ioc_buf *h2d;
    unsigned nh2d;
    const struct kernelet_ioc_buf *d2h;
    unsigned nd2h;
};

/* What came back. */
struct probe_result {
    int rc;                    /* 0 or -errno of the ioctl */
    uint32_t status;           /* response header's status */
    uint32_t resp_len;
    uint64_t d2h_written;
    uint8_t resp[512];         /* used when probe_req.resp is NULL */
};

/* Opens the device; prints an error and returns -1 on failure. */
int probe_open(const char *path);
/* Submits one request (request id: a counter) and fills *res. */
void probe_submit(int fd, const struct probe_req *req, struct probe_result *res);
/* Submits a raw kernelet_ioc_submit as is; returns 0 or -errno. */
int probe_ioctl(int fd, unsigned long cmd, void *arg);
/* "EFAULT" for -EFAULT, "0" for 0, the number otherwise. */
const char *probe_errname(int rc);
/* Reads /sys/class/misc/<device name>/<attr> as a number; -1 when unreadable. */
long probe_sysfs(const char *dev_path, const char *attr);
/* Reads /sys/module/virtio_kernelet/parameters/<name>; -1 when unreadable. */
long probe_module_counter(const char *name);
/* Waits up to timeout_ms for sysfs attr (or module counter when dev_path is NULL) to
 * equal want; returns the last value read. */
long probe_wait_value(const char *dev_path, const char *attr, long want, int timeout_ms);
/* Deterministic test data and its FNV-1a (64-bit). */
void probe_fill(uint8_t *p, size_t n, uint64_t seed);
uint64_t probe_fnv1a64(uint64_t h, const uint8_t *p, size_t n);
/* Sleeps for ms milliseconds. */
void probe_sleep_ms(int ms);
/* Echoes `len` bytes of src into dst through DIAG_ECHO_BULK, both split into several
 * buffers at odd offsets; fills *res and returns the device's checksum (0 on error). */
uint64_t probe_echo(int fd, const uint8_t *src, uint8_t *dst, size_t len, uint32_t delay_ms,
                    unsigned flags, struct probe_result *res);

/* Commands (probe_basic.c, probe_errors.c, probe_hold.c); each returns an exit status. */
int probe_cmd_config(const char *dev, int argc, char **argv);
int probe_cmd_hello(const char *dev, int argc, char **argv);
int probe_cmd_echo(const char *dev, int argc, char **argv);
int probe_cmd_parallel(const char *dev, int argc, char **argv);
int probe_cmd_contexts(const char *dev, int argc, char **argv);
int probe_cmd_request(const char *dev, int argc, char **argv);
int probe_cmd_errors(const char *dev, int argc, char **argv);
int probe_cmd_hold(const char *dev, int argc, char **argv);
int probe_cmd_signal(const char *dev, int argc, char **argv);
int probe_cmd_killtest(const char *dev, int argc, char **argv);
int probe_cmd_flood(const char *dev, int argc, char **argv);

#endif
