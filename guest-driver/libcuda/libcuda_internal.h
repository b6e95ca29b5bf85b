/*
 * libcuda: the CUDA Driver API of a machine without an NVIDIA driver, forwarded to
 * kerneletd (docs/PROTOCOL.md). Internal declarations shared by its files.
 *
 * Objects the API hands out (contexts, streams, events, modules, functions) are small
 * structures here with a magic number checked on every use; the daemon's handles live
 * inside them. All daemon traffic goes through one client (client.c) per process: the
 * process is one tenant.
 *
 * Entry points are defined under their exported symbol names (cuMemAlloc_v2, ...); cuda.h's
 * macros supply the prototypes for the default-stream versions, and the per-thread-stream
 * variants (_ptds, _ptsz) are defined next to them.
 */
#ifndef KCU_INTERNAL_H
#define KCU_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "kernelet/protocol.h"

/* The CUDA version this library implements (what cuDriverGetVersion reports). */
#define KCU_DRIVER_VERSION CUDA_VERSION

#define KCU_MAX_DEVICES 16

/* ---- logging (KERNELET_DEBUG=1) ---------------------------------------------------- */

bool kcu_debug(void);
void kcu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What every unimplemented entry point returns (and logs, named, when debugging). */
int kcu_unsupported(const char *name);
/* The line kcu_unsupported puts in kerneletd's log ("NAME: not supported"), once per
 * name (a static string), for what the library answers but cannot fully honour. */
void kcu_note_daemon(const char *name);
/* CLOCK_MONOTONIC in ns. */
uint64_t kcu_now_ns(void);
/* KERNELET_STATS=1: synchronous requests are tallied by opcode and printed at exit
 * (call_stats.c). Whether it is on; the tally of one request. */
bool kcu_stats_on(void);
void kcu_stats_note(uint16_t opcode, size_t bytes, uint64_t ns);

/* ---- the daemon connection (client.c) ---------------------------------------------- */

struct kcu_client;

/* A shared-memory region the daemon has mapped: bulk data for copies. */
struct kcu_region {
    uint32_t id;
    void *base;
    size_t size;
};

/* How the client reaches the daemon: the Unix socket now, /dev/kernelet0 in a VM later. */
struct kcu_transport_ops {
    const char *name;
    bool daemon_maps_regions;   /* the daemon maps regions itself (and can pin them for
                                   kernels); a VM's regions stay in the guest */
    /* Sends one or more whole messages (n buffers); fd >= 0 travels with them
     * (SCM_RIGHTS). 0 or -errno. */
    int (*send)(void *t, const struct iovec *iov, int n, int fd);
    /* Receives one whole message into buf (cap >= KERNELET_MAX_REQUEST). 0 or -errno. */
    int (*recv)(void *t, void *buf, size_t cap, size_t *len);
    /* 1 when a message can be received without blocking, 0 when not, -errno. */
    int (*readable)(void *t);
    /* Creates memory the daemon can reach (a sealed memfd on the socket); the client then
     * attaches it with SHM_ATTACH passing *fd, and closes *fd. 0 or -errno. */
    int (*region_create)(void *t, size_t size, void **base, int *fd);
    void (*region_destroy)(void *t, void *base, size_t size);
    void (*close)(void *t);
};

/* Opens the transport chosen by the environment (transport_select.c):
 * KERNELET_TRANSPORT=socket|virtio; by default virtio when /dev/kernelet0 exists and
 * KERNELET_SOCKET is unset, else the socket. 0 or -errno. */
int kcu_transport_open(const struct kcu_transport_ops **ops, void **t);
/* kerneletd's Unix socket at path (NULL: /run/kernelet/kerneletd.sock). */
int kcu_transport_socket_open(const char *path, const struct kcu_transport_ops **ops, void **t);
/* The guest driver's device file (/dev/kerneletN). */
int kcu_transport_virtio_open(const char *path, const struct kcu_transport_ops **ops, void **t);

/* Connects, says HELLO (tenant name: the program's) and fills *session. */
CUresult kcu_client_open(struct kcu_client **out, struct kernelet_session *session);
void kcu_client_close(struct kcu_client *c);

/* One synchronous request: sends queued stream work first (it must reach the daemon before
 * this request), then the request (head, then tail bytes), waits for the answer and copies
 * its payload into resp (resp_cap bytes; *resp_len, may be NULL, gets its size). */
CUresult kcu_call(struct kcu_client *c, uint16_t opcode, const void *head, size_t head_len,
                  const void *tail, size_t tail_len, void *resp, size_t resp_cap,
                  size_t *resp_len);
/* A request whose payload is one handle and whose answer is empty (destroy, sync...). */
CUresult kcu_call_handle(struct kcu_client *c, uint16_t opcode, uint64_t handle);
/* The same with a file descriptor passed along (SHM_ATTACH). */
CUresult kcu_call_fd(struct kcu_client *c, uint16_t opcode, const void *head,
                     size_t head_len, int fd, void *resp, size_t resp_cap, size_t *resp_len);

/* Appends a record (rec of rec_len bytes, then tail bytes, zero-padded to 8) to the
 * batch of stream work; a full batch is sent first. Never waits for the daemon. */
CUresult kcu_batch_add(struct kcu_client *c, const void *rec, size_t rec_len,
                       const void *tail, size_t tail_len);

/* Called with the result of a batch, from whichever thread receives the answer; must be
 * short and must not call into the client. */
struct kcu_completion {
    void (*fn)(void *arg, CUresult result);
    void *arg;
};

/* Appends a record and sends the batch with it at once (no other thread's flush can
 * take the record away): the daemon answers once the batch has run; cb (may be NULL) is
 * called then; with keep the answer is kept for one kcu_wait(*token). */
CUresult kcu_batch_submit(struct kcu_client *c, const void *rec, size_t rec_len,
                          const void *tail, size_t tail_len, bool keep,
                          const struct kcu_completion *cb, uint64_t *token);
/* The raw forms of kcu_batch_add and kcu_batch_submit, past the gate of host functions. */
CUresult kcu_batch_append(struct kcu_client *c, const void *rec, size_t rec_len,
                          const void *tail, size_t tail_len);
CUresult kcu_batch_submit_now(struct kcu_client *c, const void *rec, size_t rec_len,
                              const void *tail, size_t tail_len, bool keep,
                              const struct kcu_completion *cb, uint64_t *token);
/* Sends the batch under construction, if any, without waiting for its answer. */
void kcu_batch_flush(struct kcu_client *c);
/* Puts back an asynchronous error that an internal synchronisation took, so that the
 * program's next synchronisation reports it. */
void kcu_note_async_error(struct kcu_client *c, CUresult r);
/* Waits for the kept answer identified by token and returns its result. */
CUresult kcu_wait(struct kcu_client *c, uint64_t token);
/* Waits until at least one more answer has been received (by any thread). */
CUresult kcu_progress(struct kcu_client *c);
/* The first error an asynchronous batch reported since the last call, cleared. */
CUresult kcu_take_async_error(struct kcu_client *c);
/* The error that ended the connection or the context (sticky), or CUDA_SUCCESS. */
CUresult kcu_sticky_error(struct kcu_client *c);
/* Creates and attaches a region of at least size bytes. */
CUresult kcu_region_create(struct kcu_client *c, size_t size, struct kcu_region *out);
void kcu_region_destroy(struct kcu_client *c, struct kcu_region *r);
/* Makes region r reachable by the tenant's kernels (mapped pinned memory); *device is
 * where they reach it (r->base itself when the daemon could map it there). */
CUresult kcu_region_map_device(struct kcu_client *c, const struct kcu_region *r,
                               CUdeviceptr *device);
/* Whether the daemon maps this process's regions (kcu_transport_ops.daemon_maps_regions). */
bool kcu_client_regions_shared(const struct kcu_client *c);

/* Maps a response status (and its CUDA error payload) to a CUresult. */
CUresult kcu_status_to_result(uint32_t status, const void *payload, size_t len);

/* ---- staging memory for copies from and to pageable host memory (staging.c) -------- */

struct kcu_stage {
    uint32_t region;
    uint64_t offset;
    void *ptr;
    size_t size;
    unsigned slot;
};

#define KCU_STAGE_SLOT_SIZE ((size_t)8 << 20)

/* A free staging slot (waits for a busy one to complete when none is free). */
CUresult kcu_stage_acquire(struct kcu_stage *st);
/* A completion that frees the slot (for kcu_batch_flush). */
struct kcu_completion kcu_stage_completion(const struct kcu_stage *st);
/* The slot becomes free now. */
void kcu_stage_release(const struct kcu_stage *st);

/* ---- copying a large piece on several threads (copy_threads.c) --------------------- */

/* One part of a split copy: part `part` of `parts`. */
typedef void kcu_copy_part_fn(void *arg, unsigned part, unsigned parts);

/* Runs fn's parts on the calling thread and the copy pool (KERNELET_COPY_THREADS) when
 * `bytes` is large enough to be worth it, and returns once every part has run; false
 * (nothing run) when the caller should copy on its own: small, one thread, or the pool is
 * busy with another thread's copy or unavailable. */
bool kcu_copy_split(kcu_copy_part_fn *fn, void *arg, size_t bytes);

/* ---- global state (init.c) --------------------------------------------------------- */

struct kcu_ctx;

struct kcu_device {
    struct kernelet_device props;
    struct kcu_ctx *primary;        /* created on first retain, kept until exit */
    unsigned primary_refs;
    unsigned primary_flags;
};

struct kcu_state {
    pthread_mutex_t lock;
    struct kcu_client *client;
    struct kernelet_session session;
    int n_devices;
    struct kcu_device dev[KCU_MAX_DEVICES];
};

extern struct kcu_state kcu;

/* CUDA_SUCCESS once cuInit succeeded; else what every call must return. */
CUresult kcu_initialized(void);
/* kcu_initialized plus the sticky error of the connection. */
CUresult kcu_ready(void);
/* The device, or NULL when out of range (after init). */
struct kcu_device *kcu_device_at(CUdevice d);
int kcu_attr(int device, CUdevice_attribute a);

/* ---- contexts (context.c) ------------------------------------------------------------ */

#define KCU_MAGIC_CTX    0x6b637478u
#define KCU_MAGIC_STREAM 0x6b637374u
#define KCU_MAGIC_EVENT  0x6b636576u
#define KCU_MAGIC_MODULE 0x6b636d64u
#define KCU_MAGIC_FUNC   0x6b636675u
#define KCU_MAGIC_LIB    0x6b636c62u

struct kcu_cls_entry;

struct kcu_ctx {
    uint32_t magic;
    int device;
    unsigned flags;
    bool primary;
    bool active;                    /* primary: retained at least once since reset */
    uint64_t id;
    size_t limits[16];              /* CUlimit values */
    CUfunc_cache cache_config;
    struct kcu_cls_entry *cls;      /* context-local storage (export_tables.c) */
};

/* The calling thread's current context, or NULL. */
struct kcu_ctx *kcu_ctx_current(void);
/* The current context; CUDA_ERROR_INVALID_CONTEXT when the thread has none (cudart makes
 * the primary context current itself). */
CUresult kcu_ctx_require(struct kcu_ctx **out);
/* A valid context object from a handle, or NULL. */
struct kcu_ctx *kcu_ctx_from(CUcontext c);
/* The primary context of device d (created inactive when needed). */
CUresult kcu_primary_ctx(int d, struct kcu_ctx **out);

/* Context-local storage: destroys every entry of ctx, calling each destructor. */
void kcu_cls_destroy_all(struct kcu_ctx *ctx);

/* ---- streams and events (stream.c, event.c) ---------------------------------------- */

struct kcu_stream {
    uint32_t magic;
    uint64_t handle;
    struct kcu_ctx *ctx;
    unsigned flags;
    int priority;
};

struct kcu_event {
    uint32_t magic;
    uint64_t handle;
    unsigned flags;
    bool recorded;
};

/* The daemon handle of stream s as an entry point of variant per_thread sees it: NULL is
 * the legacy or the per-thread default stream; CU_STREAM_LEGACY, CU_STREAM_PER_THREAD are
 * what they say. CUDA_ERROR_INVALID_HANDLE for anything else that is not a stream. */
CUresult kcu_stream_handle(CUstream s, bool per_thread, uint64_t *handle);

/* The event of a handle, or NULL. */
struct kcu_event *kcu_event_from(CUevent e);
/* Queues a record of x on stream (a daemon handle), past any capture. */
CUresult kcu_event_record_on(struct kcu_event *x, uint64_t stream);
/* Queues a wait of stream for ev's last record, past any capture. */
CUresult kcu_stream_wait_on(uint64_t stream, const struct kcu_event *ev);
/* The same two through the capture hooks (as cuEventRecord, cuStreamWaitEvent do). */
CUresult kcu_event_record_stream(struct kcu_event *x, uint64_t stream);
CUresult kcu_stream_wait_event(uint64_t stream, struct kcu_event *ev, unsigned flags);

/* ---- host functions and the gate that keeps stream order around them (host_func.c) -- */

/* Whether a host function was ever queued (until then stream work goes straight out). */
bool kcu_gate_engaged(void);
/* kcu_batch_add and kcu_batch_submit once engaged: stream work that must follow a host
 * function not yet run is held (add) or waited for (submit). */
CUresult kcu_gate_add(const void *rec, size_t rec_len, const void *tail, size_t tail_len);
CUresult kcu_gate_submit(const void *rec, size_t rec_len, const void *tail, size_t tail_len,
                         bool keep, const struct kcu_completion *cb, uint64_t *token);
/* Before a request: waits while it depends on held work (CUDA_ERROR_NOT_READY for
 * queries instead of waiting). */
CUresult kcu_gate_before_call(uint16_t opcode, const void *head, size_t head_len);

/* Queues a host function (fn) or stream callback (cb) on stream, past any capture. */
CUresult kcu_host_fn_enqueue(uint64_t stream, CUstream user_stream, CUhostFn fn,
                             CUstreamCallback cb, void *data);

/* ---- memory (memory.c) --------------------------------------------------------------- */

/* Where a host pointer lies: in pinned memory the daemon can reach (region, offset), or
 * pageable memory. */
struct kcu_host_span {
    bool pinned;
    uint32_t region;
    uint64_t offset;
};

void kcu_host_lookup(const void *p, size_t len, struct kcu_host_span *out);
/* Whether [p, p + len) lies inside one device allocation (or module global) of ours. */
bool kcu_device_range(CUdeviceptr p, size_t len);
/* Base and size of the allocation holding p. */
bool kcu_device_lookup(CUdeviceptr p, CUdeviceptr *base, size_t *size);
void kcu_device_range_add(CUdeviceptr p, size_t len, bool global);
struct kcu_pool;
/* MEM_ALLOC of bytesize, recorded (with the memory pool it came from, or NULL). */
CUresult kcu_mem_alloc(CUdeviceptr *dptr, size_t bytesize, struct kcu_pool *pool);
/* An allocation of pool was freed (mempool.c). */
void kcu_pool_freed(struct kcu_pool *pool, size_t bytes);
void kcu_device_range_remove(CUdeviceptr p);
/* Pinned host allocation flags for p (cuMemHostGetFlags); false when not pinned. */
bool kcu_host_flags(const void *p, unsigned *flags);

/* ---- copies (copy.c) ----------------------------------------------------------------- */

enum kcu_side { KCU_HOST, KCU_DEVICE };

/* A 2-D copy: height rows of width bytes; rows start pitch bytes apart on each side. */
struct kcu_copy {
    enum kcu_side dst_side, src_side;
    void *dst_host;
    const void *src_host;
    CUdeviceptr dst_dev, src_dev;
    size_t width, height, dst_pitch, src_pitch;
    uint64_t stream;                /* daemon handle */
    bool async;                     /* the *Async entry points */
};

/* Checks a copy's sides (device ranges, host pointers, pitches). */
CUresult kcu_copy_check(const struct kcu_copy *c);
/* Queues (or, on a capturing stream, captures) a checked copy. */
CUresult kcu_copy_run(const struct kcu_copy *c);
/* A copy described by a CUDA_MEMCPY3D of depth 1 (stream and async left to the caller). */
CUresult kcu_copy_describe3d(const CUDA_MEMCPY3D *p, struct kcu_copy *c);
/* Queues a memset of height rows of width elements (elem_size 1, 2, 4) rows pitch apart. */
CUresult kcu_memset_run(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elem_size,
                        size_t width, size_t height, uint64_t stream);

/* ---- modules and functions (module.c) ------------------------------------------------ */

struct kcu_module;
/* A module variable (cuModuleGetGlobal): copies may reach it from now on. */
CUresult kcu_module_global(struct kcu_module *mod, const char *name, CUdeviceptr *dptr,
                           size_t *bytes);

/* ---- device printf (printf.c) -------------------------------------------------------- */

/* A module was loaded: remembers its printf ring, if it has one. */
void kcu_printf_module_loaded(struct kcu_module *mod);
/* A module is about to be unloaded: waits for the work, prints its ring, forgets it. */
void kcu_printf_module_unloading(struct kcu_module *mod);
/* A synchronisation point: prints what the rings hold. quiescent: no kernel of this
 * process can be running (the rings are cleared). */
void kcu_printf_drain(bool quiescent);
/* Context ctx is being destroyed or reset (its printf stream goes with it). */
void kcu_printf_ctx_gone(struct kcu_ctx *ctx);

struct kcu_function;

struct kcu_module {
    uint32_t magic;
    uint64_t handle;
    unsigned n_functions;
    struct kcu_function *functions;  /* looked up so far (a list) */
    pthread_mutex_t lock;
};

struct kcu_function {
    uint32_t magic;
    uint64_t handle;
    struct kcu_module *module;
    struct kcu_function *next;
    char *name;
    uint32_t n_params;
    uint32_t param_bytes;
    struct kernelet_param *params;
    int32_t attrs[KERNELET_FUNC_ATTRS];
};

/* A library is loaded when it is first used, as the driver loads it lazily: cudart loads
 * every fatbin of a framework at its start (3424 for PyTorch), of which a run uses few. */
struct kcu_library {
    uint32_t magic;
    pthread_mutex_t lock;       /* the first use loads the module */
    void *image;                /* a copy of the code until it is loaded; NULL after */
    bool loaded;
    CUresult load_result;       /* of the load (CUDA_SUCCESS with module NULL: no code for
                                   this GPU, see library_load) */
    struct kcu_module *module;
};

struct kcu_function *kcu_function_from(CUfunction f);

/* The size of a module image (fatbin, wrapper, PTX text or ELF cubin) from its bytes,
 * reading at most what its headers announce; *data may move to the fatbin a wrapper
 * points to. CUDA_ERROR_INVALID_IMAGE when nothing recognisable is there. */
CUresult kcu_image_size(const void **data, size_t *size, uint32_t *kind);

/* ---- launches (launch.c) --------------------------------------------------------------- */

/* Checks a launch's shape and marshals its parameters into pblock
 * (KERNELET_MAX_PARAM_BYTES bytes). */
CUresult kcu_launch_prepare(struct kcu_function *f, const unsigned grid[3],
                            const unsigned block[3], unsigned smem, void **params, void **extra,
                            uint8_t *pblock);
/* Queues a launch whose parameter block is ready (no capture hook). */
CUresult kcu_launch_block(const struct kcu_function *f, const unsigned grid[3],
                          const unsigned block[3], unsigned smem, uint64_t stream,
                          const uint8_t *pblock);
/* kcu_launch_prepare, then the launch queued, or captured when stream is capturing. */
CUresult kcu_launch(struct kcu_function *fn, const unsigned grid[3], const unsigned block[3],
                    unsigned smem, uint64_t stream, void **params, void **extra);

/* ---- export tables (export_tables.c), entry table (entries.c, generated) ------------- */

CUresult kcu_export_table(const void **table, const CUuuid *id);
/* Hash for the integrity-check table, consistent with the devices reported. */
CUresult kcu_integrity_answer(uint32_t version, uint64_t seconds, uint64_t out[2]);

#endif
