/*
 * virtio-kernelet: what the guest and the device agree on.
 *
 * This header is the start of Kernelet's wire protocol. It is shared by the QEMU device
 * (hw-virtio-kernelet/), the guest driver, the guest libcuda and kerneletd, so it uses only
 * fixed-size types and no compiler extensions. Every multi-byte field is little endian
 * (virtio 1.x devices are little endian on every architecture). docs/DEVICE.md describes
 * the device; include/kernelet/protocol.h and docs/PROTOCOL.md define the messages that
 * travel on to kerneletd, with the request header defined here.
 *
 * A request is one descriptor chain: a device-readable part holding a request header and
 * `length` bytes of payload, then a device-writable part that receives a response header
 * and the response payload. The device always answers with a response header when the
 * writable part can hold one; a malformed request gets an error status, never silence.
 */
#ifndef KERNELET_VIRTIO_KERNELET_H
#define KERNELET_VIRTIO_KERNELET_H

#include <stdint.h>

/* Virtio device id. Linux's modern virtio-pci driver binds ids 0..63 only (PCI device ids
 * 0x1040..0x107f); 57 is used by no standard device (docs/DEVICE.md says why this one). */
#define KERNELET_VIRTIO_ID        57u
#define KERNELET_PCI_VENDOR_ID    0x1af4u
#define KERNELET_PCI_DEVICE_ID    (0x1040u + KERNELET_VIRTIO_ID)

/* Protocol version: major changes break compatibility, minor ones only add. */
#define KERNELET_PROTO_MAJOR      0u
#define KERNELET_PROTO_MINOR      1u
#define KERNELET_PROTO_VERSION    ((KERNELET_PROTO_MAJOR << 16) | KERNELET_PROTO_MINOR)

/* Virtqueue indexes. */
enum kernelet_vq {
    KERNELET_VQ_REQUEST = 0,  /* control requests, each answered in place */
    KERNELET_VQ_LAUNCH  = 1,  /* launch ring: batches of asynchronous work */
    KERNELET_VQ_COUNT   = 2
};

/* Limits the device enforces on every chain; a guest driver must stay inside them. */
#define KERNELET_MAX_REQUEST      (64u * 1024u)  /* header + payload, device-readable */
#define KERNELET_MAX_RESPONSE     (64u * 1024u)  /* header + payload the device writes */
#define KERNELET_QUEUE_SIZE       256u           /* descriptors per virtqueue */

/* Opcodes. 0x0001-0x00ff: session and device control, answered by the device itself;
 * higher ranges are reserved for memory (0x01xx), modules (0x02xx) and execution (0x03xx),
 * which travel to kerneletd. An opcode the device does not know gets KERNELET_ST_BAD_OPCODE.
 * The opcodes kerneletd serves, and their payloads, are defined in protocol.h. */
enum kernelet_opcode {
    KERNELET_OP_HELLO        = 0x0001,  /* payload: kernelet_hello; answer: kernelet_info */
    KERNELET_OP_GET_INFO     = 0x0002,  /* no payload; answer: kernelet_info */
    KERNELET_OP_GET_STATS    = 0x0003,  /* no payload; answer: kernelet_stats */
    KERNELET_OP_LAUNCH_BATCH = 0x0301   /* launch ring only; payload: batch of launches */
};

/* Status in a response header. 0 is success; the rest say what the guest got wrong or
 * why the host could not serve it. The guest driver maps them to errno values. */
enum kernelet_status {
    KERNELET_ST_OK          = 0,
    KERNELET_ST_BAD_REQUEST = 1,  /* malformed header, lengths that disagree, bad payload */
    KERNELET_ST_BAD_OPCODE  = 2,  /* opcode unknown or not allowed on this queue */
    KERNELET_ST_TOO_SMALL   = 3,  /* the response part cannot hold the answer */
    KERNELET_ST_VERSION     = 4,  /* HELLO with an incompatible major version */
    KERNELET_ST_UNAVAILABLE = 5,  /* no GPU backend (kerneletd) to serve this request */
    KERNELET_ST_BUSY        = 6,  /* max-inflight reached; retry later */
    KERNELET_ST_QUOTA       = 7,  /* the tenant's device-memory quota would be exceeded */
    KERNELET_ST_CUDA        = 8   /* kerneletd: failed as a CUDA call fails; the payload is
                                     struct kernelet_cuda_error (protocol.h) */
};

/* Header in front of every request and every response (24 bytes). In a response the
 * device copies opcode and request_id from the request, sets length to the response
 * payload size and status to a kernelet_status. */
struct kernelet_req_hdr {
    uint16_t opcode;
    uint16_t flags;       /* must be 0 in this version */
    uint32_t length;      /* payload bytes that follow this header */
    uint64_t request_id;  /* chosen by the guest, echoed in the response */
    uint32_t status;      /* 0 in requests */
    uint32_t reserved;    /* must be 0 */
};

/* HELLO payload: the guest's protocol version. */
struct kernelet_hello {
    uint32_t proto_version;
    uint32_t reserved;
};

/* GET_INFO / HELLO answer: the device's view of the GPU it offers and its policy. */
struct kernelet_info {
    uint32_t proto_version;
    uint32_t flags;           /* KERNELET_INFO_* */
    uint64_t gpu_mem_bytes;   /* device memory offered (min of GPU memory and mem-quota) */
    uint32_t gpu_sm_count;
    uint16_t gpu_cc_major;
    uint16_t gpu_cc_minor;
    uint32_t weight;
    uint32_t priority;
    uint32_t max_inflight;
    uint32_t reserved;
    char     gpu_name[64];    /* NUL-terminated */
};

#define KERNELET_INFO_BACKEND  (1u << 0)  /* kerneletd is connected */
#define KERNELET_INFO_SLICING  (1u << 1)  /* kernels of this tenant may be sliced */

/* GET_STATS answer: the tenant's counters since the device was created. */
struct kernelet_stats {
    uint64_t requests;
    uint64_t errors;
    uint64_t kernels_launched;
    uint64_t gpu_time_ns;
    uint64_t bytes_copied;
    uint64_t mem_in_use;
};

/* Device configuration space (read-only for the guest). */
struct kernelet_virtio_config {
    uint32_t proto_version;
    uint32_t flags;           /* KERNELET_INFO_* */
    uint32_t max_request;     /* KERNELET_MAX_REQUEST */
    uint32_t max_response;    /* KERNELET_MAX_RESPONSE */
    uint64_t gpu_mem_bytes;
    uint32_t gpu_sm_count;
    uint16_t gpu_cc_major;
    uint16_t gpu_cc_minor;
    char     gpu_name[64];
};

#ifdef __cplusplus
#define KERNELET_STATIC_ASSERT static_assert
#else
#define KERNELET_STATIC_ASSERT _Static_assert
#endif
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_req_hdr) == 24, "request header layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_info) == 104, "info layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_stats) == 48, "stats layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_virtio_config) == 96, "config layout");

#endif
