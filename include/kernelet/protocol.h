/*
 * Kernelet's wire protocol: what libcuda, the virtio device and kerneletd say to each other.
 *
 * One protocol for every hop. A message is the 24-byte header of virtio_kernelet.h
 * (struct kernelet_req_hdr) followed by `length` bytes of payload; requests carry status 0,
 * responses echo opcode and request_id and carry a kernelet_status. On the host the
 * messages travel over kerneletd's Unix socket (SOCK_STREAM, one tenant per connection);
 * inside a VM the guest driver puts the same messages on the device's virtqueues and the
 * device forwards them. docs/PROTOCOL.md explains the protocol; this header defines it.
 *
 * Layout rules: every multi-byte field is little endian; every structure has fixed-size
 * fields at natural alignment with explicit padding (`reserved`, always 0), so its C
 * layout is its wire layout on the little-endian machines Kernelet runs on. A message is
 * at most KERNELET_MAX_REQUEST bytes (header included) in either direction.
 *
 * Bulk data (copies, module images) does not travel in the stream: it lies in shared
 * memory regions. On the socket a client attaches a sealed memfd with SHM_ATTACH
 * (the descriptor passed with SCM_RIGHTS); inside a VM the device attaches the guest's RAM.
 * Records name bytes by (region, offset); KERNELET_REGION_INLINE instead means the bytes
 * follow the record in the same message (small copies and images).
 *
 * Handles (modules, functions, streams, events) are opaque 64-bit values chosen by the
 * daemon, valid only on the connection that created them; 0 is never a valid handle
 * except for stream 0, the tenant's legacy default stream. Device pointers are addresses
 * in the daemon's device address space and must lie inside the tenant's allocations.
 *
 * The encoder/decoder that every component shares is libkernelet-proto (protocol/proto_*.c);
 * its functions are declared at the end of this file.
 */
#ifndef KERNELET_PROTOCOL_H
#define KERNELET_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelet/virtio_kernelet.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Opcodes beyond the device's own (virtio_kernelet.h) ------------------------------ */

enum kernelet_daemon_opcode {
    /* 0x00xx session (0x0010 CONTEXT_CLOSE and 0x00f0 DIAG_ECHO_BULK belong to the
     * device and its guest driver: virtio_kernelet.h) */
    KERNELET_OP_SHM_ATTACH      = 0x0018,  /* kernelet_shm_attach + fd -> kernelet_shm_region */
    KERNELET_OP_SHM_DETACH      = 0x0019,  /* kernelet_shm_region -> - */
    KERNELET_OP_SHM_MAP_DEVICE  = 0x001a,  /* kernelet_shm_map_device -> kernelet_shm_device */
    KERNELET_OP_DEVICE_GET      = 0x0020,  /* kernelet_device_get -> kernelet_device */
    KERNELET_OP_TENANT_NOTE     = 0x0028,  /* kernelet_note + text -> - (logged) */
    /* 0x01xx memory */
    KERNELET_OP_MEM_ALLOC       = 0x0101,  /* kernelet_mem_alloc -> kernelet_mem_ptr */
    KERNELET_OP_MEM_FREE        = 0x0102,  /* kernelet_mem_ptr -> - (waits for queued work) */
    KERNELET_OP_MEM_GET_INFO    = 0x0103,  /* - -> kernelet_mem_info */
    /* virtual memory management (kernelet_vmm; tenants whose kernels are not fenced) */
    KERNELET_OP_VMM_RESERVE     = 0x0110,  /* {size, align} -> kernelet_mem_ptr */
    KERNELET_OP_VMM_FREE        = 0x0111,  /* {va} -> - */
    KERNELET_OP_VMM_CREATE      = 0x0112,  /* {size} -> kernelet_handle */
    KERNELET_OP_VMM_RELEASE     = 0x0113,  /* {handle} -> - */
    KERNELET_OP_VMM_MAP         = 0x0114,  /* {va, size, offset, handle} -> - */
    KERNELET_OP_VMM_UNMAP       = 0x0115,  /* {va, size} -> - (waits for queued work) */
    KERNELET_OP_TENSOR_MAP_ENCODE = 0x0120, /* kernelet_tensor_map -> kernelet_tensor_map_ans */
    /* 0x02xx modules */
    KERNELET_OP_MODULE_LOAD     = 0x0201,  /* kernelet_module_load [+ image] -> kernelet_module */
    KERNELET_OP_MODULE_UNLOAD   = 0x0202,  /* kernelet_handle -> - (waits for queued work) */
    KERNELET_OP_FUNCTION_GET    = 0x0203,  /* kernelet_name_req + name -> kernelet_function */
    KERNELET_OP_GLOBAL_GET      = 0x0204,  /* kernelet_name_req + name -> kernelet_global */
    /* 0x03xx execution (KERNELET_OP_LAUNCH_BATCH = 0x0301 is in virtio_kernelet.h) */
    KERNELET_OP_STREAM_CREATE   = 0x0310,  /* kernelet_stream_create -> kernelet_handle */
    KERNELET_OP_STREAM_DESTROY  = 0x0311,  /* kernelet_handle -> - */
    KERNELET_OP_STREAM_SYNC     = 0x0312,  /* kernelet_handle -> - once the stream is idle */
    KERNELET_OP_STREAM_QUERY    = 0x0313,  /* kernelet_handle -> - or CUDA_ERROR_NOT_READY */
    KERNELET_OP_EVENT_CREATE    = 0x0320,  /* kernelet_event_create -> kernelet_handle */
    KERNELET_OP_EVENT_DESTROY   = 0x0321,  /* kernelet_handle -> - */
    KERNELET_OP_EVENT_SYNC      = 0x0322,  /* kernelet_handle -> - once the event completed */
    KERNELET_OP_EVENT_QUERY     = 0x0323,  /* kernelet_handle -> - or CUDA_ERROR_NOT_READY */
    KERNELET_OP_EVENT_ELAPSED   = 0x0324,  /* kernelet_event_pair -> kernelet_elapsed */
    KERNELET_OP_CTX_SYNC        = 0x0330,  /* - -> - once all of the tenant's work is done */
    /* 0x04xx administration (connections that said KERNELET_HELLO_ADMIN) */
    KERNELET_OP_ADMIN_STATUS    = 0x0401,  /* kernelet_admin_status_req -> admin status */
    KERNELET_OP_ADMIN_SET       = 0x0402,  /* kernelet_admin_set -> - */
};

/* ---- Errors ----------------------------------------------------------------------------
 * Transport-level failures use the kernelet_status codes of virtio_kernelet.h. A request
 * that was well formed but failed the way a CUDA call fails gets KERNELET_ST_CUDA and a
 * kernelet_cuda_error payload with the CUresult value (as numbered in CUDA's cuda.h).
 * (KERNELET_ST_CUDA is in virtio_kernelet.h with the other status codes.) Sticky errors
 * (a faulting kernel) are answered to every later request of the tenant. */

struct kernelet_cuda_error {
    uint32_t code;    /* CUresult */
    uint32_t index;   /* LAUNCH_BATCH: the record that failed (later ones were dropped) */
};

/* ---- Session --------------------------------------------------------------------------- */

/* HELLO to kerneletd: struct kernelet_hello, optionally followed by this identity. The
 * daemon takes uid and pid from SO_PEERCRED; the name is what the operator sees. */
#define KERNELET_HELLO_ADMIN   (1u << 0)  /* an administration connection, not a tenant */
#define KERNELET_HELLO_VM      (1u << 1)  /* a VM's device: shown as such (KERNELET_TENANT_VM);
                                             informational, no access decision uses it */
#define KERNELET_HELLO_ISOLATE (1u << 2)  /* asks for a GPU context of its own: served by a
                                             worker process of the daemon, not beside other
                                             tenants; UNAVAILABLE when none can be started */
#define KERNELET_HELLO_FLAGS   (KERNELET_HELLO_ADMIN | KERNELET_HELLO_VM | KERNELET_HELLO_ISOLATE)
#define KERNELET_NAME_MAX      64u

struct kernelet_hello_tenant {
    uint32_t flags;                   /* KERNELET_HELLO_* */
    uint32_t reserved;
    char     name[KERNELET_NAME_MAX];  /* printable ASCII, NUL-terminated */
};

/* kerneletd answers HELLO with kernelet_info followed by this. */
struct kernelet_session {
    uint64_t tenant_id;
    uint64_t mem_quota;       /* bytes, 0 = none */
    uint32_t device_count;
    uint32_t max_regions;     /* shared-memory regions a connection may attach */
    uint32_t max_message;     /* KERNELET_MAX_REQUEST */
    uint32_t reserved;
};

/* SHM_ATTACH: the file descriptor travels with the message (SCM_RIGHTS). It must be a
 * memfd sealed against shrinking (F_SEAL_SHRINK) and at least `size` bytes long, so that
 * the daemon's mapping can never fault. */
struct kernelet_shm_attach {
    uint64_t size;
    uint32_t flags;           /* 0 */
    uint32_t reserved;
};

struct kernelet_shm_region {
    uint32_t region;
    uint32_t reserved;
};

/* SHM_MAP_DEVICE: the region's bytes become reachable by the tenant's kernels (CUDA's
 * mapped pinned memory, cuMemHostAlloc with DEVICEMAP), at the address answered. The
 * daemon first tries to move its mapping to `address`, the region's address in the
 * client, so that the client's pointer works in kernels too (unified addressing); the
 * answer says where kernels reach it either way. Refused with CUDA_ERROR_NOT_SUPPORTED
 * where the tenant's kernels are fenced (they may reach only the tenant's device memory)
 * or the backend cannot map host memory; CUDA_ERROR_OUT_OF_MEMORY beyond the daemon's
 * limit of pinned bytes. Detaching a mapped region waits for the tenant's queued work. */
struct kernelet_shm_map_device {
    uint32_t region;
    uint32_t flags;           /* 0 */
    uint64_t address;         /* the client's address of the region: page aligned, or 0 */
};

struct kernelet_shm_device {
    uint64_t device_ptr;      /* where kernels reach the region's first byte */
};

#define KERNELET_REGION_INLINE   0xffffffffu   /* bytes follow the record */
#define KERNELET_MAX_REGIONS     64u
#define KERNELET_MAX_REGION_SIZE (1ull << 40)

/* DEVICE_GET: properties of the GPU, as the daemon's backend reports them. attrs[i] is
 * the value of CUdevice_attribute i (cuda.h numbering; 0 where unknown). */
#define KERNELET_DEVICE_ATTRS 192u

struct kernelet_device_get {
    uint32_t ordinal;
    uint32_t reserved;
};

struct kernelet_device {
    char     name[256];       /* NUL-terminated */
    uint8_t  uuid[16];
    uint64_t total_mem;
    uint32_t driver_version;  /* CUDA version of the daemon's driver, e.g. 13000 */
    uint32_t n_attrs;         /* KERNELET_DEVICE_ATTRS */
    int32_t  attrs[KERNELET_DEVICE_ATTRS];
};

/* ---- Memory ---------------------------------------------------------------------------- */

struct kernelet_mem_alloc {
    uint64_t size;            /* bytes, > 0 */
    uint32_t flags;           /* 0 */
    uint32_t reserved;
};

/* VMM_*: CUDA's virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap).
 * Sizes, offsets and addresses are multiples of KERNELET_VMM_GRANULE; the fields an
 * opcode does not use (see the opcodes) are 0. Where the tenant's kernels are fenced into
 * its window, or the backend has none, every VMM request fails with
 * CUDA_ERROR_NOT_SUPPORTED (the device's VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED says so). */
#define KERNELET_VMM_GRANULE (2ull << 20)

struct kernelet_vmm {
    uint64_t va;
    uint64_t size;
    uint64_t offset;          /* VMM_MAP: where in the physical memory the mapping starts */
    uint64_t arg;             /* VMM_RESERVE: alignment (0 or a power of two); VMM_RELEASE
                                 and VMM_MAP: the physical memory's handle */
};

struct kernelet_mem_ptr {
    uint64_t dptr;
};

/* TENSOR_MAP_ENCODE: CUDA's cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
 * cuTensorMapEncodeIm2colWide and cuTensorMapReplaceAddress, with their arguments (enums
 * as numbered in cuda.h); the answer is the driver's opaque 128-byte map, which the
 * tenant passes to its kernels. Array entries past what the rank uses are 0. Only where
 * the tenant's kernels are not fenced (the tensor memory accelerator reads memory the
 * fence does not see): else CUDA_ERROR_NOT_SUPPORTED. */
enum kernelet_tensor_map_kind {
    KERNELET_TENSOR_MAP_TILED = 1,
    KERNELET_TENSOR_MAP_IM2COL = 2,
    KERNELET_TENSOR_MAP_IM2COL_WIDE = 3,
    KERNELET_TENSOR_MAP_REPLACE_ADDRESS = 4,  /* map with global_address put in */
};
#define KERNELET_TENSOR_MAP_BYTES    128u
#define KERNELET_TENSOR_MAP_MAX_RANK 5u

struct kernelet_tensor_map {
    uint32_t kind;                /* kernelet_tensor_map_kind */
    uint32_t data_type;           /* CUtensorMapDataType */
    uint32_t rank;                /* 1..5 (REPLACE_ADDRESS: 0) */
    uint32_t interleave;          /* CUtensorMapInterleave */
    uint32_t swizzle;             /* CUtensorMapSwizzle */
    uint32_t l2_promotion;        /* CUtensorMapL2promotion */
    uint32_t oob_fill;            /* CUtensorMapFloatOOBfill */
    uint32_t wide_mode;           /* IM2COL_WIDE: CUtensorMapIm2ColWideMode */
    uint64_t global_address;
    uint64_t global_dim[KERNELET_TENSOR_MAP_MAX_RANK];
    uint64_t global_strides[KERNELET_TENSOR_MAP_MAX_RANK - 1];
    uint32_t box_dim[KERNELET_TENSOR_MAP_MAX_RANK];         /* TILED */
    uint32_t element_strides[KERNELET_TENSOR_MAP_MAX_RANK];
    int32_t lower_corner[KERNELET_TENSOR_MAP_MAX_RANK - 2]; /* IM2COL (WIDE: [0]) */
    int32_t upper_corner[KERNELET_TENSOR_MAP_MAX_RANK - 2];
    uint32_t channels_per_pixel;  /* IM2COL, IM2COL_WIDE */
    uint32_t pixels_per_column;
    uint8_t map[KERNELET_TENSOR_MAP_BYTES]; /* REPLACE_ADDRESS: the map to change */
};

struct kernelet_tensor_map_ans {
    uint8_t map[KERNELET_TENSOR_MAP_BYTES];
};

struct kernelet_mem_info {
    uint64_t free;            /* what this tenant may still allocate */
    uint64_t total;           /* the tenant's share: its quota, or the device's memory */
};

/* ---- Modules --------------------------------------------------------------------------- */

enum kernelet_image_kind {
    KERNELET_IMAGE_AUTO   = 0,  /* decided by the first bytes */
    KERNELET_IMAGE_FATBIN = 1,  /* fatbin (0xBA55ED50), forwarded whole */
    KERNELET_IMAGE_PTX    = 2,  /* PTX text */
    KERNELET_IMAGE_CUBIN  = 3,  /* ELF */
};

#define KERNELET_MAX_IMAGE ((uint64_t)256 << 20)

struct kernelet_module_load {
    uint32_t kind;            /* kernelet_image_kind */
    uint32_t region;          /* region holding the image, or KERNELET_REGION_INLINE */
    uint64_t offset;          /* in the region (0 when inline) */
    uint64_t size;            /* image bytes; inline images follow this structure */
};

/* In kernelet_module.flags: the daemon knows the module has no device printf ring
 * (a cubin, or PTX without printf), so the client need not look it up. 0 says nothing. */
#define KERNELET_MODULE_NO_PRINTF (1u << 0)

struct kernelet_module {
    uint64_t module;
    uint32_t n_functions;     /* entries the image defines */
    uint32_t flags;           /* KERNELET_MODULE_* */
};

struct kernelet_handle {
    uint64_t handle;
};

/* FUNCTION_GET / GLOBAL_GET: a module and a name of name_len bytes (no NUL) after this. */
#define KERNELET_MAX_SYMBOL 4096u

/* TENANT_NOTE: something the tenant's library wants in kerneletd's log, one line; today
 * which entry point the program called that is not supported. text_len printable ASCII
 * bytes follow, not NUL-terminated. */
#define KERNELET_NOTE_UNSUPPORTED 1u
#define KERNELET_MAX_NOTE 160u
struct kernelet_note {
    uint32_t kind;            /* KERNELET_NOTE_* */
    uint32_t text_len;        /* 1..KERNELET_MAX_NOTE */
};

struct kernelet_name_req {
    uint64_t module;
    uint32_t name_len;        /* 1..KERNELET_MAX_SYMBOL */
    uint32_t reserved;
};

/* Function attributes: attrs[i] is CUfunction_attribute i (cuda.h numbering). */
#define KERNELET_FUNC_ATTRS 16u
#define KERNELET_MAX_PARAMS 4096u
#define KERNELET_MAX_PARAM_BYTES 32764u   /* CUDA 12.1+ limit on a kernel's parameters */

struct kernelet_param {
    uint32_t offset;          /* in the parameter block */
    uint32_t size;
};

/* Answer: this, then n_params kernelet_param in order of declaration. */
struct kernelet_function {
    uint64_t function;
    uint32_t n_params;
    uint32_t param_bytes;     /* size of the whole parameter block */
    int32_t  attrs[KERNELET_FUNC_ATTRS];
};

struct kernelet_global {
    uint64_t dptr;
    uint64_t size;
};

/* ---- Streams and events ---------------------------------------------------------------- */

#define KERNELET_STREAM_LEGACY 0u            /* stream 0: the tenant's legacy default stream */
#define KERNELET_STREAM_NON_BLOCKING (1u << 0)  /* does not synchronise with stream 0 */

struct kernelet_stream_create {
    uint32_t flags;           /* KERNELET_STREAM_NON_BLOCKING */
    int32_t  priority;
};

#define KERNELET_EVENT_DISABLE_TIMING (1u << 0)
#define KERNELET_EVENT_FLAGS KERNELET_EVENT_DISABLE_TIMING

struct kernelet_event_create {
    uint32_t flags;           /* KERNELET_EVENT_* */
    uint32_t reserved;
};

struct kernelet_event_pair {
    uint64_t start;
    uint64_t end;
};

struct kernelet_elapsed {
    int64_t ns;               /* end - start */
};

/* ---- LAUNCH_BATCH: asynchronous stream work -------------------------------------------
 * Payload: kernelet_batch, then `count` records back to back, each starting with
 * kernelet_rec_hdr whose `length` (a multiple of 8) covers the whole record. Records run in
 * order per stream. The answer comes once every record is queued (or, with
 * KERNELET_BATCH_COMPLETE, once every record has completed): OK, or KERNELET_ST_CUDA with
 * the index of the record that failed validation; records after it are dropped. */
#define KERNELET_BATCH_COMPLETE (1u << 0)
#define KERNELET_BATCH_FLAGS    KERNELET_BATCH_COMPLETE

struct kernelet_batch {
    uint32_t count;           /* 1.. */
    uint32_t flags;           /* KERNELET_BATCH_* */
};

enum kernelet_rec_op {
    KERNELET_REC_LAUNCH       = 1,  /* kernelet_rec_launch + parameter block */
    KERNELET_REC_COPY         = 2,  /* kernelet_rec_copy [+ inline bytes] */
    KERNELET_REC_MEMSET       = 3,  /* kernelet_rec_memset */
    KERNELET_REC_EVENT_RECORD = 4,  /* kernelet_rec_event */
    KERNELET_REC_STREAM_WAIT  = 5,  /* kernelet_rec_event: the stream waits for the event */
    KERNELET_REC_LAUNCH_EX    = 6,  /* kernelet_rec_launch_ex + parameter block */
};

struct kernelet_rec_hdr {
    uint16_t op;              /* kernelet_rec_op */
    uint16_t flags;           /* 0 */
    uint32_t length;          /* bytes of the record, header included; multiple of 8 */
    uint64_t stream;          /* handle, or KERNELET_STREAM_LEGACY */
};

/* The parameter block (param_bytes, laid out as the function's kernelet_param say)
 * follows, padded with zeros to a multiple of 8. */
struct kernelet_rec_launch {
    struct kernelet_rec_hdr h;
    uint64_t function;
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_mem;      /* dynamic shared memory bytes */
    uint32_t param_bytes;     /* must equal the function's param_bytes */
};

/* A launch with attributes (cuLaunchKernelEx, cuLaunchCooperativeKernel): thread-block
 * clusters (each grid dimension a multiple of the cluster's, at most
 * KERNELET_MAX_CLUSTER_BLOCKS blocks a cluster) and cooperative launches (every block
 * resident at once: grid-wide synchronisation). Such a launch always runs whole. */
#define KERNELET_LAUNCH_COOPERATIVE (1u << 0)
#define KERNELET_LAUNCH_FLAGS       KERNELET_LAUNCH_COOPERATIVE
#define KERNELET_MAX_CLUSTER_BLOCKS 16u

struct kernelet_rec_launch_ex {
    struct kernelet_rec_launch l;   /* its h.op is KERNELET_REC_LAUNCH_EX */
    uint32_t cluster[3];            /* blocks per cluster in x, y, z; 1 1 1: none */
    uint32_t flags;                 /* KERNELET_LAUNCH_* */
};

enum kernelet_copy_kind {
    KERNELET_COPY_HTOD = 1,   /* src: (region, offset); dst: device address */
    KERNELET_COPY_DTOH = 2,   /* src: device address; dst: (region, offset) */
    KERNELET_COPY_DTOD = 3,   /* both device addresses; region unused (0) */
};

/* A copy of `height` rows of `width` bytes; rows start `pitch` bytes apart on each side
 * (height 1 and pitches equal to width for linear copies). Inline HTOD bytes
 * (width * height, rows packed) follow the record, padded to a multiple of 8. */
struct kernelet_rec_copy {
    struct kernelet_rec_hdr h;
    uint32_t kind;            /* kernelet_copy_kind */
    uint32_t region;          /* host side: region id or KERNELET_REGION_INLINE (HTOD only) */
    uint64_t dst;
    uint64_t src;
    uint64_t width;
    uint64_t height;
    uint64_t dst_pitch;
    uint64_t src_pitch;
};

/* Sets `height` rows of `width` elements of elem_size bytes (1, 2 or 4) to value; rows
 * start `pitch` bytes apart (pitch = width * elem_size for a linear memset). */
struct kernelet_rec_memset {
    struct kernelet_rec_hdr h;
    uint64_t dst;
    uint64_t pitch;
    uint64_t width;
    uint64_t height;
    uint32_t value;           /* only the low elem_size bytes are used */
    uint32_t elem_size;
};

struct kernelet_rec_event {
    struct kernelet_rec_hdr h;
    uint64_t event;
};

/* ---- Administration ------------------------------------------------------------------- */

struct kernelet_admin_status_req {
    uint32_t first;           /* index of the first tenant to list (paging) */
    uint32_t reserved;
};

/* Answer: this, then n_tenants kernelet_tenant_status. */
struct kernelet_admin_status {
    uint32_t n_tenants;       /* in this answer */
    uint32_t total_tenants;   /* connected */
    char     policy[32];      /* scheduling policy name, NUL-terminated */
    char     backend[32];     /* executor backend name, NUL-terminated */
    uint64_t uptime_ns;
    /* The scheduler's decisions since start: how many, how many paired two kernels, how
     * many ran one alone, launches (slices) handed to the GPU, kernels completed. */
    uint64_t decisions;
    uint64_t coschedules;
    uint64_t solo;
    uint64_t slices;
    uint64_t kernels_completed;
};

#define KERNELET_TENANT_SLICING (1u << 0)  /* kernels may be sliced */
#define KERNELET_TENANT_STICKY  (1u << 1)  /* a sticky error ended its context */
#define KERNELET_TENANT_VM      (1u << 2)  /* a virtual machine (through the device) */
#define KERNELET_TENANT_ISOLATED (1u << 3) /* served by a worker process in a GPU context of
                                              its own (worker_pid); its statistics are the
                                              worker's and not shown */

struct kernelet_tenant_status {
    uint64_t id;
    char     name[KERNELET_NAME_MAX];
    uint32_t pid;
    uint32_t uid;
    uint32_t weight;
    uint32_t priority;
    uint64_t mem_quota;
    uint64_t mem_in_use;
    uint32_t max_inflight;
    uint32_t flags;           /* KERNELET_TENANT_* */
    uint32_t streams;
    uint32_t queued;          /* work items waiting in its queues */
    uint64_t launches;        /* kernels submitted */
    uint64_t completed;       /* kernels completed */
    uint64_t coscheduled;     /* slices that started while another tenant's were running */
    uint64_t gpu_time_ns;
    uint64_t bytes_copied;
    uint64_t requests;
    uint64_t errors;
    uint32_t kernel_time_limit_ms; /* a launch of it running longer is stopped; 0 = none */
    uint32_t worker_pid;      /* KERNELET_TENANT_ISOLATED: the worker serving it; else 0 */
};

#define KERNELET_SET_WEIGHT       (1u << 0)
#define KERNELET_SET_PRIORITY     (1u << 1)
#define KERNELET_SET_MEM_QUOTA    (1u << 2)
#define KERNELET_SET_MAX_INFLIGHT (1u << 3)
#define KERNELET_SET_SLICING      (1u << 4)
#define KERNELET_SET_TIME_LIMIT   (1u << 5)
#define KERNELET_SET_FIELDS       0x3fu

struct kernelet_admin_set {
    uint64_t tenant;
    uint32_t fields;          /* KERNELET_SET_*: which of the values below apply */
    uint32_t weight;          /* 1..10000 */
    uint32_t priority;        /* 0..7 */
    uint32_t max_inflight;    /* 1..65536 */
    uint64_t mem_quota;       /* bytes, 0 = none */
    uint32_t slicing;         /* 0 or 1 */
    uint32_t kernel_time_limit_ms; /* 0..KERNELET_TIME_LIMIT_MAX_MS; 0 = kerneletd's
                                      --kernel-time-limit */
};

#define KERNELET_WEIGHT_MAX       10000u
#define KERNELET_PRIORITY_MAX     7u
#define KERNELET_INFLIGHT_MAX     65536u
#define KERNELET_TIME_LIMIT_MAX_MS 86400000u  /* a day */

KERNELET_STATIC_ASSERT(sizeof(struct kernelet_cuda_error) == 8, "cuda error layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_hello_tenant) == 72, "hello tenant layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_session) == 32, "session layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_shm_attach) == 16, "shm attach layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_device) == 1056, "device layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_module_load) == 24, "module load layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_function) == 80, "function layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_rec_hdr) == 16, "record header layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_rec_launch) == 56, "launch record layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_rec_launch_ex) == 72, "launch_ex record layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_rec_copy) == 72, "copy record layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_rec_memset) == 56, "memset record layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_rec_event) == 24, "event record layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_admin_status) == 120, "admin status layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_tenant_status) == 184, "tenant status layout");
KERNELET_STATIC_ASSERT(sizeof(struct kernelet_admin_set) == 40, "admin set layout");

/* ======================================================================================
 * libkernelet-proto: encoding and validating messages (no GLib, no allocation).
 * Functions return 0 or a negative KPROTO_E* code; those that validate input also write a
 * reason into err (errlen bytes, may be 0) naming the field that is wrong.
 * ====================================================================================== */

enum {
    KPROTO_OK = 0,
    KPROTO_EINVAL = -1,     /* a field is out of range, reserved bits set, lengths disagree */
    KPROTO_ERANGE = -2,     /* the message would exceed KERNELET_MAX_REQUEST */
    KPROTO_EOPCODE = -3,    /* unknown opcode */
    KPROTO_EAGAIN = -4,     /* (framing) more bytes are needed */
};

#define KERNELET_HDR_SIZE ((uint32_t)sizeof(struct kernelet_req_hdr))
#define KERNELET_MAX_PAYLOAD (KERNELET_MAX_REQUEST - KERNELET_HDR_SIZE)

/* Static description of a KPROTO_E* code. */
const char *kproto_strerror(int code);

/* ---- The opcode table -----------------------------------------------------------------
 * What each opcode may do, in one place: one row per opcode, read by kerneletd's dispatch
 * (who may send it, whether a sticky error refuses it), the virtio device (answered there or
 * forwarded, on which virtqueue) and libcuda's virtio transport. Handlers stay with the
 * component that serves the opcode. An opcode without a row is unknown to every component;
 * the device still forwards such requests so that a newer kerneletd can serve them. */
#define KPROTO_OP_GUEST        (1u << 0)  /* a guest may send it through the virtio device */
#define KPROTO_OP_TENANT       (1u << 1)  /* a tenant's connection to kerneletd may send it */
#define KPROTO_OP_ADMIN        (1u << 2)  /* an administration connection may send it; with
                                             neither GUEST nor TENANT: administration only */
#define KPROTO_OP_DEVICE       (1u << 3)  /* the device answers a guest's request itself */
#define KPROTO_OP_CONTEXT      (1u << 4)  /* forwarded only to a daemon that keeps guest
                                             contexts apart (protocol 0.2+); the device
                                             answers it otherwise */
#define KPROTO_OP_LAUNCH_RING  (1u << 5)  /* travels on the launch virtqueue; every other
                                             opcode on the request queue */
#define KPROTO_OP_AFTER_STICKY (1u << 6)  /* served after a sticky error ended the sender's
                                             context (queries and teardown) */
#define KPROTO_OP_FLAGS        0x7fu

struct kproto_opcode_row {
    uint16_t opcode;
    uint32_t flags;           /* KPROTO_OP_* */
    const char *name;         /* "MEM_ALLOC" */
};

/* The table, sorted by opcode, and its number of rows. */
extern const struct kproto_opcode_row kproto_opcodes[];
extern const size_t kproto_opcode_count;

/* The row of opcode, or NULL when the protocol has no such opcode. */
const struct kproto_opcode_row *kproto_opcode_find(uint16_t opcode);

/* Whether opcode has a row carrying every one of `flags` (KPROTO_OP_*). */
bool kproto_opcode_has(uint16_t opcode, uint32_t flags);

/* Name of an opcode ("MEM_ALLOC"), or NULL when unknown. */
const char *kproto_opcode_name(uint16_t opcode);

/* Writes a header into buf (KERNELET_HDR_SIZE bytes). */
void kproto_hdr_put(void *buf, uint16_t opcode, uint32_t length, uint64_t request_id,
                    uint32_t status);

/* Where a header travels, which decides what its flags, status and context may hold. */
enum kproto_hop {
    KPROTO_HOP_REQUEST,    /* a request on kerneletd's socket: no flags, status 0 */
    KPROTO_HOP_RESPONSE,   /* an answer, on any hop: no flags, context 0 */
    KPROTO_HOP_GUEST,      /* a request on a virtqueue: flags KERNELET_REQ_F_XFER only,
                              status 0, context 0 (the device stamps it) */
};

/* Reads and checks the header at buf for its hop; length at most KERNELET_MAX_PAYLOAD
 * (KPROTO_ERANGE). *h is filled even when the header is refused, so that the refusal can
 * be answered to its request id. */
int kproto_hdr_decode(const void *buf, enum kproto_hop hop, struct kernelet_req_hdr *h,
                      char *err, size_t errlen);

/* kproto_hdr_decode for kerneletd's socket: a request (is_request) or an answer. */
int kproto_hdr_get(const void *buf, bool is_request, struct kernelet_req_hdr *h, char *err,
                   size_t errlen);

/* ---- Requests as the daemon decodes them ---------------------------------------------- */

/* A decoded request. Fixed parts are copied; variable parts point into the payload, which
 * must outlive the structure. */
struct kproto_request {
    uint16_t opcode;
    union {
        struct {
            struct kernelet_hello hello;
            bool has_tenant;
            struct kernelet_hello_tenant tenant;
        } hello;
        struct kernelet_shm_attach shm_attach;
        struct kernelet_shm_region shm_region;
        struct kernelet_shm_map_device shm_map_device;
        struct kernelet_device_get device_get;
        struct {
            struct kernelet_note note;
            const char *text;               /* text_len bytes, not NUL-terminated */
        } note;
        struct kernelet_mem_alloc mem_alloc;
        struct kernelet_vmm vmm;
        struct kernelet_tensor_map tensor_map;
        struct kernelet_mem_ptr mem_ptr;
        struct {
            struct kernelet_module_load load;
            const uint8_t *inline_image;    /* when region is INLINE */
        } module_load;
        struct kernelet_handle handle;      /* MODULE_UNLOAD, STREAM_*, EVENT_* */
        struct {
            struct kernelet_name_req req;
            const char *name;               /* name_len bytes, not NUL-terminated */
        } name;
        struct {
            struct kernelet_batch batch;
            const uint8_t *records;         /* walk with kproto_batch_next */
            size_t records_len;
        } batch;
        struct kernelet_stream_create stream_create;
        struct kernelet_event_create event_create;
        struct kernelet_event_pair event_pair;
        struct kernelet_admin_status_req admin_status;
        struct kernelet_admin_set admin_set;
    } u;
};

/* Decodes and validates the payload of a request whose header was checked with
 * kproto_hdr_get. KPROTO_EOPCODE for an opcode the daemon does not serve. Batch records
 * are validated by kproto_batch_next as they are walked. */
int kproto_request_decode(const struct kernelet_req_hdr *h, const uint8_t *payload,
                          struct kproto_request *req, char *err, size_t errlen);

/* One record of a batch, decoded and validated. */
struct kproto_record {
    uint16_t op;
    uint64_t stream;
    union {
        struct {
            struct kernelet_rec_launch rec;  /* of LAUNCH_EX too */
            uint32_t cluster[3];            /* 1 1 1 for a plain LAUNCH */
            uint32_t flags;                 /* KERNELET_LAUNCH_*; 0 for a plain LAUNCH */
            const uint8_t *params;          /* rec.param_bytes bytes */
        } launch;
        struct {
            struct kernelet_rec_copy rec;
            const uint8_t *inline_data;     /* INLINE HTOD: width * height bytes */
        } copy;
        struct kernelet_rec_memset memset;
        struct kernelet_rec_event event;
    } u;
};

struct kproto_batch_iter {
    const uint8_t *next;
    size_t left;
    uint32_t remaining;     /* records still to read */
    uint32_t index;         /* index of the record returned last */
};

/* Starts walking the records of a decoded LAUNCH_BATCH. */
void kproto_batch_begin(struct kproto_batch_iter *it, const struct kproto_request *req);

/* Starts walking `count` records in the len bytes at records (a LAUNCH_BATCH payload after
 * its kernelet_batch), for walkers that have not decoded the request (the device, libcuda's
 * virtio transport). */
void kproto_batch_walk(struct kproto_batch_iter *it, const uint8_t *records, size_t len,
                       uint32_t count);

/* The framing of the next record, the rules every walker of a batch shares: its header
 * into *h and its start into *rec (h->length bytes: at least the header, a multiple of 8,
 * inside the batch); 1, 0 at the end (after exactly `count` records with no bytes left
 * over), or KPROTO_EINVAL. The contents are not checked. */
int kproto_batch_frame(struct kproto_batch_iter *it, struct kernelet_rec_hdr *h,
                       const uint8_t **rec, char *err, size_t errlen);

/* The next record, framed and its contents checked: 1 when one was read, 0 at the end, or
 * KPROTO_EINVAL for a malformed record (the rest is unreadable; it->index names it). */
int kproto_batch_next(struct kproto_batch_iter *it, struct kproto_record *rec, char *err,
                      size_t errlen);

/* Checks a copy's geometry: pitches at least width, sizes without overflow. *span_dst
 * and *span_src get the bytes each side covers (pitch * (height - 1) + width). */
int kproto_copy_spans(const struct kernelet_rec_copy *c, uint64_t *span_dst,
                      uint64_t *span_src, char *err, size_t errlen);

/* The same for a memset: the bytes it covers from dst. */
int kproto_memset_span(const struct kernelet_rec_memset *m, uint64_t *span, char *err,
                       size_t errlen);

/* ---- Building messages ---------------------------------------------------------------- */

/* A message under construction in a caller-owned buffer of KERNELET_MAX_REQUEST bytes. */
struct kproto_msg {
    uint8_t *buf;
    uint32_t len;           /* bytes so far, header included */
    uint32_t cap;
};

/* Starts a message (header with length 0) in buf of cap bytes (>= KERNELET_HDR_SIZE). */
void kproto_msg_begin(struct kproto_msg *m, void *buf, uint32_t cap, uint16_t opcode,
                      uint64_t request_id, uint32_t status);

/* Appends n bytes (and zero padding up to a multiple of `align`, 1 for none);
 * KPROTO_ERANGE when they do not fit (the message is unchanged). */
int kproto_msg_put(struct kproto_msg *m, const void *data, size_t n, size_t align);

/* Appends n zero bytes and returns where they start, or NULL when they do not fit. */
void *kproto_msg_reserve(struct kproto_msg *m, size_t n);

/* Writes the final payload length into the header; returns the message size. */
uint32_t kproto_msg_end(struct kproto_msg *m);

/* Free space left for payload. */
uint32_t kproto_msg_room(const struct kproto_msg *m);

/* ---- Responses as clients check them ---------------------------------------------------- */

/* Checks that a successful answer to `opcode` has the size it must have (fixed parts and
 * the variable tail they announce). */
int kproto_response_check(uint16_t opcode, const uint8_t *payload, uint32_t len, char *err,
                          size_t errlen);

/* ---- Messages on a blocking stream socket --------------------------------------------- */

struct iovec;

/* Sends n buffers completely; pass_fd >= 0 travels with the first byte (SCM_RIGHTS).
 * 0 or -errno. */
int kproto_send(int fd, const struct iovec *iov, int n, int pass_fd);

/* Receives one whole message (header and payload) into buf (cap bytes); *len gets its
 * size. -EPROTO for a length above the limit or cap, -ECONNRESET at end of stream. */
int kproto_recv(int fd, void *buf, size_t cap, size_t *len);

/* Connects to the Unix socket at path; the descriptor or -errno. */
int kproto_connect(const char *path);

#ifdef __cplusplus
}
#endif

#endif
