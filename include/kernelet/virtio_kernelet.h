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
 *
 * With KERNELET_F_BULK a chain may also carry bulk data (docs/DEVICE.md, "Bulk data"):
 * the request header has KERNELET_REQ_F_XFER set and is followed by a kernelet_xfer that
 * declares the sizes; then readable = header, xfer, payload, host-to-device bulk bytes;
 * writable = response part (xfer.resp_bytes), device-to-host bulk bytes.
 */
#ifndef KERNELET_VIRTIO_KERNELET_H
#define KERNELET_VIRTIO_KERNELET_H

#ifdef __KERNEL__
#include <linux/types.h>  /* the guest driver: the kernel has no <stdint.h> */
#else
#include <stdint.h>
#endif

/* Virtio device id. Linux's modern virtio-pci driver binds ids 0..63 only (PCI device ids
 * 0x1040..0x107f); 57 is used by no standard device (docs/DEVICE.md says why this one). */
#define KERNELET_VIRTIO_ID        57u
#define KERNELET_PCI_VENDOR_ID    0x1af4u
#define KERNELET_PCI_DEVICE_ID    (0x1040u + KERNELET_VIRTIO_ID)

/* Protocol version: major changes break compatibility, minor ones only add. */
#define KERNELET_PROTO_MAJOR      0u
#define KERNELET_PROTO_MINOR      2u
#define KERNELET_PROTO_VERSION    ((KERNELET_PROTO_MAJOR << 16) | KERNELET_PROTO_MINOR)
/* The first minor version whose socket carries the request header's `context` and
 * CONTEXT_CLOSE (a device talking to an older daemon sends neither). */
#define KERNELET_PROTO_MINOR_CONTEXTS 2u

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
#define KERNELET_MAX_BULK         (2u * 1024u * 1024u)  /* h2d + d2h bulk bytes per chain */
#define KERNELET_MAX_SEGMENTS     1024u          /* descriptors per chain (QEMU's limit) */

/* Feature bits (virtio device-specific range 0..23). */
#define KERNELET_F_BULK           0u  /* chains may carry bulk data (kernelet_xfer) */

/* Opcodes. 0x0001-0x00ff: session and device control, answered by the device itself;
 * higher ranges are reserved for memory (0x01xx), modules (0x02xx) and execution (0x03xx),
 * which travel to kerneletd. An opcode the device does not know gets KERNELET_ST_BAD_OPCODE.
 * The opcodes kerneletd serves, and their payloads, are defined in protocol.h. */
enum kernelet_opcode {
    KERNELET_OP_HELLO        = 0x0001,  /* payload: kernelet_hello; answer: kernelet_info */
    KERNELET_OP_GET_INFO     = 0x0002,  /* no payload; answer: kernelet_info */
    KERNELET_OP_GET_STATS    = 0x0003,  /* no payload; answer: kernelet_stats */
    /* Sent by the guest driver when a context (an open /dev/kerneletN) goes away, so that
     * the host can free what the context held. No payload; the context is xfer.context. */
    KERNELET_OP_CONTEXT_CLOSE = 0x0010,
    /* Diagnostic, not part of the CUDA protocol: checksums the host-to-device bulk data,
     * copies it into the device-to-host bulk buffers and answers, after an optional delay,
     * with kernelet_diag_echo_result. Payload: kernelet_diag_echo. Request queue only. */
    KERNELET_OP_DIAG_ECHO_BULK = 0x00f0,
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
    uint16_t flags;       /* KERNELET_REQ_F_*; other bits must be 0; 0 in responses */
    uint32_t length;      /* payload bytes that follow this header */
    uint64_t request_id;  /* chosen by the guest, echoed in the response */
    uint32_t status;      /* 0 in requests */
    uint32_t context;     /* requests on kerneletd's socket (protocol 0.2+): the client's
                             context the request belongs to (a VM's device stamps the guest
                             context; host libcuda sends 0); 0 on virtqueues, in responses */
};

/* Request flag: a kernelet_xfer follows the header (before the payload, not counted in
 * `length`). Set by the guest driver, never by user space. */
#define KERNELET_REQ_F_XFER  (1u << 0)

/* Transfer descriptor: what the chain holds besides header and payload. The device checks
 * readable bytes == 24 + 16 + length + h2d_bytes and writable bytes == resp_bytes +
 * d2h_bytes, resp_bytes >= 24 and h2d_bytes + d2h_bytes <= KERNELET_MAX_BULK. */
struct kernelet_xfer {
    uint32_t context;     /* the guest context (open file) the request belongs to */
    uint32_t resp_bytes;  /* size of the writable response part, before the d2h bulk */
    uint32_t h2d_bytes;   /* bulk bytes the device reads, after the payload */
    uint32_t d2h_bytes;   /* bulk bytes the device may write, after the response part */
};

/* In a request sent through the device, a (region, offset) of a record (LAUNCH_BATCH copy,
 * MODULE_LOAD image) naming this region means the chain's own bulk data: for host-to-device
 * copies and module images `offset` counts from the first h2d bulk byte, for
 * device-to-host copies from the first d2h bulk byte. The device checks each range against
 * the chain and rewrites it to a region kerneletd can read (guest RAM shared with the
 * daemon, or the device's staging region) before forwarding; no other region id may
 * appear in a guest's request. */
#define KERNELET_REGION_BULK 0xfffffffeu

/* DIAG_ECHO_BULK payload. */
struct kernelet_diag_echo {
    uint32_t delay_ms;    /* hold the chain this long before answering (<= 10000) */
    uint32_t reserved;    /* must be 0 */
};
#define KERNELET_DIAG_MAX_DELAY_MS 10000u

/* DIAG_ECHO_BULK answer. The device writes min(h2d, d2h) bytes of d2h bulk. */
struct kernelet_diag_echo_result {
    uint64_t h2d_bytes;   /* bulk bytes read */
    uint64_t d2h_bytes;   /* bulk bytes written (a copy of the first ones read) */
    uint64_t fnv1a64;     /* FNV-1a (64-bit) of the bytes read */
    uint32_t context;     /* xfer.context of the request (0 without xfer) */
    uint32_t reserved;
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
    /* Valid when KERNELET_F_BULK is offered. */
    uint32_t max_bulk;        /* KERNELET_MAX_BULK */
    uint32_t max_segments;    /* KERNELET_MAX_SEGMENTS */
};

#ifdef __cplusplus
#define KERNELET_STATIC_ASSERT static_assert
#else
#define KERNELET_STATIC_ASSERT _Static_assert
#endif
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_req_hdr) == 24, "request header layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_info) == 104, "info layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_stats) == 48, "stats layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_virtio_config) == 104, "config layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_xfer) == 16, "xfer layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_diag_echo_result) == 32, "echo result layout");

#endif
