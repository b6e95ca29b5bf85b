/*
 * kdev_request: decodes and answers one virtio-kernelet request.
 *
 * Plain C with no QEMU types, so the same code runs inside the QEMU device, in unit tests
 * and under libFuzzer. The caller hands over the bytes the guest made device-readable and
 * a buffer for the answer; this code validates everything (sizes, reserved fields, opcode
 * per queue) and writes a response header with a status, whatever the guest sent.
 */
#ifndef KDEV_REQUEST_H
#define KDEV_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelet/virtio_kernelet.h"

/* Operator policy of the tenant (QOM properties of the device). */
struct kdev_policy {
    uint32_t weight;        /* KDEV_WEIGHT_MIN..KDEV_WEIGHT_MAX */
    uint32_t priority;      /* 0..KDEV_PRIORITY_MAX, higher runs first */
    uint64_t mem_quota;     /* bytes of device memory, 0 = no quota, <= KDEV_MEM_QUOTA_MAX */
    uint32_t max_inflight;  /* 1..KDEV_INFLIGHT_MAX queued launches */
    bool slicing;           /* kernels of this tenant may be sliced */
};

#define KDEV_WEIGHT_MIN     1u
#define KDEV_WEIGHT_MAX     10000u
#define KDEV_WEIGHT_DEFAULT 100u
#define KDEV_PRIORITY_MAX   7u
#define KDEV_MEM_QUOTA_MAX  (1ull << 50)  /* 1 PiB: larger values are typos or -1 */
#define KDEV_INFLIGHT_MAX   65536u
#define KDEV_INFLIGHT_DEFAULT 256u

/* What the device tells the guest about the GPU it offers. */
struct kdev_gpu {
    char name[64];
    uint64_t mem_bytes;
    uint32_t sm_count;
    uint16_t cc_major, cc_minor;
};

/* Everything a request can read or count. */
struct kdev_state {
    struct kdev_policy policy;
    struct kdev_gpu gpu;
    struct kernelet_stats stats;
    bool backend;           /* kerneletd connected */
};

/* Fills `st` with the default policy and an unconnected backend. */
void kdev_state_init(struct kdev_state *st);

/* Checks a policy; returns 0 or -EINVAL with a reason in err (errlen bytes). */
int kdev_policy_check(const struct kdev_policy *p, char *err, size_t errlen);

/* Device memory offered to the guest: the GPU's, capped by the memory quota. */
uint64_t kdev_offered_mem(const struct kdev_state *st);

/* Fills the device configuration space from the state (little endian). */
void kdev_fill_config(const struct kdev_state *st, struct kernelet_virtio_config *cfg);

/* Handles one request that arrived on queue `vq`: `req` holds the req_len device-readable
 * bytes, `resp` has room for resp_cap bytes. Returns the number of bytes written to resp
 * (a response header and its payload), or 0 when resp_cap cannot hold even a header.
 * Updates st->stats (requests, errors). */
size_t kdev_handle(struct kdev_state *st, unsigned vq, const uint8_t *req, size_t req_len,
                   uint8_t *resp, size_t resp_cap);

/* Little-endian loads and stores used on guest memory images. */
uint16_t kdev_le16(const uint8_t *p);
uint32_t kdev_le32(const uint8_t *p);
uint64_t kdev_le64(const uint8_t *p);
void kdev_put_le16(uint8_t *p, uint16_t v);
void kdev_put_le32(uint8_t *p, uint32_t v);
void kdev_put_le64(uint8_t *p, uint64_t v);

#endif
