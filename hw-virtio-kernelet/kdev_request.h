/*
 * kdev_request: decodes and answers one virtio-kernelet request.
 *
 * Plain C with no QEMU types, so the same code runs inside the QEMU device, in unit tests
 * and under libFuzzer. The caller hands over the chain (the bytes the guest made
 * device-readable and the room it made device-writable, through two callbacks, so bulk
 * data is never copied whole); this code validates everything (sizes declared against
 * sizes present, reserved fields, opcode per queue, bulk limits) and writes a response
 * header with a status, whatever the guest sent.
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
    uint32_t kernel_time_limit_ms; /* a launch running longer is stopped; 0 = kerneletd's
                                      --kernel-time-limit; <= KDEV_TIME_LIMIT_MAX_MS */
};

#define KDEV_WEIGHT_MIN     1u
#define KDEV_WEIGHT_MAX     10000u
#define KDEV_WEIGHT_DEFAULT 100u
#define KDEV_PRIORITY_MAX   7u
#define KDEV_MEM_QUOTA_MAX  (1ull << 50)  /* 1 PiB: larger values are typos or -1 */
#define KDEV_INFLIGHT_MAX   65536u
#define KDEV_INFLIGHT_DEFAULT 256u
#define KDEV_TIME_LIMIT_MAX_MS 86400000u  /* a day, as kerneletd's KERNELET_TIME_LIMIT_MAX_MS */

/* What the device tells the guest about the GPU it offers. */
struct kdev_gpu {
    char name[64];
    uint64_t mem_bytes;
    uint32_t sm_count;
    uint16_t cc_major, cc_minor;
};

/* Faults the device can be told to commit (QOM property x-fault) so that the guest
 * driver's handling of a misbehaving device can be tested. Each is one-shot: it applies to
 * the next request answered and then clears itself. */
enum kdev_fault {
    KDEV_FAULT_NONE = 0,
    KDEV_FAULT_SHORT_USED,  /* used length 8: less than a response header */
    KDEV_FAULT_LONG_USED,   /* used length 4 KiB beyond the writable part */
    KDEV_FAULT_WRONG_ID,    /* response carries another request id */
    KDEV_FAULT_BAD_LENGTH,  /* response header's length exceeds what was written */
    KDEV_FAULT_BROKEN,      /* the device declares itself broken (NEEDS_RESET); QEMU side */
    KDEV_FAULT_COUNT
};

/* Everything a request can read or count. */
struct kdev_state {
    struct kdev_policy policy;
    struct kdev_gpu gpu;
    struct kernelet_stats stats;
    bool backend;           /* kerneletd connected */
    enum kdev_fault fault;  /* pending one-shot fault */
};

/* A descriptor chain as two byte streams: `out_len` device-readable bytes and `in_len`
 * device-writable bytes, reached through callbacks that copy at a byte offset and return
 * how many bytes they copied (fewer means the guest memory could not be reached). */
struct kdev_chain {
    size_t out_len;
    size_t in_len;
    size_t (*read)(void *opaque, size_t offset, void *buf, size_t len);
    size_t (*write)(void *opaque, size_t offset, const void *buf, size_t len);
    void *opaque;
};

/* A decoded request: header fields, transfer descriptor and a copy of the payload. */
struct kdev_req {
    uint16_t opcode;
    uint64_t id;
    uint32_t length;
    uint8_t *payload;       /* `length` bytes, malloc'd (NULL when length is 0); free() it */
    struct kernelet_xfer x; /* zero when the request has none */
    size_t bulk_in;         /* readable offset of the h2d bulk bytes */
    size_t resp_bytes;      /* writable response part: x.resp_bytes, or all of it */
};

/* Checks header, transfer descriptor and lengths of a chain (with in_len >= 24) and
 * copies the payload out; returns a kernelet_status. r (zeroed by the caller) gets id and
 * opcode as soon as they are read, so an error can still be answered to the right id. */
uint32_t kdev_decode(const struct kdev_chain *c, struct kdev_req *r);

/* Writes the response header for r (status, payload_len bytes of payload already written
 * after it), bent by a pending test fault; returns the used length to report (`used`
 * unless a fault changes it; 0 when the header cannot be written). */
size_t kdev_put_response(struct kdev_state *st, const struct kdev_chain *c,
                         const struct kdev_req *r, uint32_t status, size_t payload_len,
                         size_t used);

/* Whether a guest may send opcode on virtqueue vq (the opcode table's KPROTO_OP_GUEST and
 * KPROTO_OP_LAUNCH_RING). Opcodes the table does not know pass on the request queue: a
 * newer kerneletd may serve them, and it refuses what it does not know. */
bool kdev_opcode_allowed(uint16_t opcode, unsigned vq);

/* Fills `st` with the default policy and an unconnected backend. */
void kdev_state_init(struct kdev_state *st);

/* Checks a policy; returns 0 or -EINVAL with a reason in err (errlen bytes). */
int kdev_policy_check(const struct kdev_policy *p, char *err, size_t errlen);

/* Device memory offered to the guest: the GPU's, capped by the memory quota. */
uint64_t kdev_offered_mem(const struct kdev_state *st);

/* Fills the device configuration space from the state (little endian). */
void kdev_fill_config(const struct kdev_state *st, struct kernelet_virtio_config *cfg);

/* Handles the chain of one request that arrived on queue `vq` and returns the used
 * length to report: the response header and payload written at the start of the
 * writable part or, when device-to-host bulk bytes were written, the response part
 * (xfer.resp_bytes) plus those bytes; 0 when the writable part cannot hold a header.
 * Updates st->stats (requests, errors) and consumes a pending fault other than BROKEN. */
size_t kdev_serve(struct kdev_state *st, unsigned vq, const struct kdev_chain *chain);

/* Decodes a chain once for everyone who looks at it (the link, the hold, the answer):
 * kdev_decode, or KERNELET_ST_BAD_REQUEST with *r zeroed when the chain cannot hold a
 * header. The caller owns r->payload. */
uint32_t kdev_decode_chain(const struct kdev_chain *chain, struct kdev_req *r);

/* kdev_serve for a chain already decoded (status: kdev_decode_chain's); frees r->payload. */
size_t kdev_serve_decoded(struct kdev_state *st, unsigned vq, const struct kdev_chain *chain,
                          struct kdev_req *r, uint32_t status);

/* Same, for a chain whose readable bytes are `req` (req_len) and whose writable room is
 * `resp` (resp_cap bytes). */
size_t kdev_handle(struct kdev_state *st, unsigned vq, const uint8_t *req, size_t req_len,
                   uint8_t *resp, size_t resp_cap);

/* Milliseconds the device should hold this chain before serving it: the delay of a
 * well-formed DIAG_ECHO_BULK on the request queue, 0 for everything else. */
uint32_t kdev_hold_ms(unsigned vq, const struct kdev_chain *chain);

/* Same, for a chain already decoded (status: kdev_decode_chain's). */
uint32_t kdev_hold_ms_decoded(unsigned vq, const struct kdev_req *r, uint32_t status);

/* FNV-1a (64-bit) of len bytes, continuing from hash h (start with KDEV_FNV1A64_INIT). */
#define KDEV_FNV1A64_INIT 0xcbf29ce484222325ull
uint64_t kdev_fnv1a64(uint64_t h, const uint8_t *p, size_t len);

/* Name of a fault ("none", "short-used", ...) and the reverse; parse returns 0 or -EINVAL. */
const char *kdev_fault_name(enum kdev_fault f);
int kdev_fault_parse(const char *name, enum kdev_fault *out);

/* Little-endian loads and stores used on guest memory images. */
uint16_t kdev_le16(const uint8_t *p);
uint32_t kdev_le32(const uint8_t *p);
uint64_t kdev_le64(const uint8_t *p);
void kdev_put_le16(uint8_t *p, uint16_t v);
void kdev_put_le32(uint8_t *p, uint32_t v);
void kdev_put_le64(uint8_t *p, uint64_t v);

#endif
