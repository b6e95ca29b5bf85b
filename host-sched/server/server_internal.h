/* kerneletd's protocol server: declarations shared by its files (not installed).
 *
 * Ownership: everything a connection creates (regions, allocations, handles, trackers of
 * deferred answers) belongs to its ks_conn. The conn outlives its socket while operations
 * it submitted are still running (ops_inflight); the last completion frees it. */
#ifndef KS_SERVER_INTERNAL_H
#define KS_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "kernelet/protocol.h"
#include "kernelet/range_table.h"
#include "server.h"

/* CUresult values the server answers with (numbered as in CUDA's cuda.h; the server does
 * not include it). */
enum ks_cuda {
    KS_CUDA_SUCCESS = 0,
    KS_CUDA_INVALID_VALUE = 1,
    KS_CUDA_OUT_OF_MEMORY = 2,
    KS_CUDA_NOT_INITIALIZED = 3,
    KS_CUDA_NO_DEVICE = 100,
    KS_CUDA_INVALID_DEVICE = 101,
    KS_CUDA_INVALID_IMAGE = 200,
    KS_CUDA_INVALID_CONTEXT = 201,
    KS_CUDA_NO_BINARY_FOR_GPU = 209,
    KS_CUDA_INVALID_PTX = 218,
    KS_CUDA_INVALID_SOURCE = 300,
    KS_CUDA_INVALID_HANDLE = 400,
    KS_CUDA_NOT_FOUND = 500,
    KS_CUDA_NOT_READY = 600,
    KS_CUDA_ILLEGAL_ADDRESS = 700,
    KS_CUDA_LAUNCH_OUT_OF_RESOURCES = 701,
    KS_CUDA_LAUNCH_TIMEOUT = 702,
    KS_CUDA_ASSERT = 710,
    KS_CUDA_LAUNCH_FAILED = 719,
    KS_CUDA_NOT_SUPPORTED = 801,
    KS_CUDA_UNKNOWN = 999,
};

/* ---- objects behind handles ------------------------------------------------------------ */

enum ks_kind { KS_MODULE = 1, KS_FUNCTION, KS_STREAM, KS_EVENT };

struct ks_entry {               /* one .entry of a loaded module */
    char *name;
    uint32_t n_params;
    struct kernelet_param *params;
    uint32_t param_bytes;
    uint32_t max_threads;       /* from .maxntid / .reqntid, 0 = none */
    uint32_t regs;              /* virtual registers the PTX declares (an estimate) */
    char *unfenced;             /* why the fencing pass cannot fence it; NULL: it can */
};

struct ks_module {
    uint32_t sid;               /* scheduler's module id */
    unsigned n_entries;
    struct ks_entry *entries;
    unsigned ptx_version;       /* major * 10 + minor */
    unsigned cubin_arch;        /* a cubin's SM (90): runs whole, natively; 0 for PTX */
    bool printf_ring;           /* the printf pass gave it a ring (kernelet/ptx.h) */
};

struct ks_function {
    uint32_t sid;
    uint64_t module;            /* handle */
    uint32_t entry;             /* index in the module's entries */
    uint32_t param_bytes;
    int32_t attrs[KERNELET_FUNC_ATTRS];
    bool no_code;               /* a cubin's kernel the backend cannot run: launches refused */
    bool refusal_logged;        /* the refusal of its launches was logged */
    bool fenced;                /* launches get the tenant's window as two more parameters */
    bool fence_refused;         /* fencing is on and it cannot be fenced: launches refused */
};

struct ks_tracker;

/* A tracker waiting until a stream has completed `target` operations. */
struct ks_waiter {
    struct ks_tracker *tracker;
    uint64_t target;
    struct ks_waiter *next;
};

struct ks_stream {
    uint32_t sid;
    bool non_blocking;
    unsigned outstanding;       /* operations submitted and not completed */
    uint64_t submitted;         /* operations submitted so far (they complete in order) */
    uint64_t completed;
    struct ks_waiter *waiters;
    bool dirty;                 /* work since the legacy stream last waited for it */
    uint64_t seen_legacy;       /* legacy generation this stream last waited for */
    bool has_fence;             /* fence_event exists */
    uint32_t fence_event;       /* recorded on this stream for the legacy stream */
};

struct ks_event {
    uint32_t sid;
    bool timing;
    bool recorded;
};

struct ks_obj {
    uint64_t handle;
    enum ks_kind kind;
    uint32_t owner;             /* the client context that created it (CONTEXT_CLOSE) */
    union {
        struct ks_module module;
        struct ks_function function;
        struct ks_stream stream;
        struct ks_event event;
    } u;
};

/* Handle -> object, open addressing (server_handles.c). */
struct ks_handles {
    struct ks_obj **slots;
    size_t cap, used, tomb;
    uint64_t next;
};

/* What one connection may hold, so that a tenant cannot exhaust the daemon's memory with
 * objects that cost no device memory. Synchronisations waiting on streams: a few per
 * operation the tenant may have in flight, and never more than KS_MAX_WAITERS. */
#define KS_MAX_HANDLES (1u << 16)
#define KS_MAX_ALLOCS  (1u << 20)
#define KS_WAITERS_PER_OP 4u
#define KS_MAX_WAITERS (1u << 16)

/* A new object with a fresh handle, created by client context owner; NULL without memory
 * or beyond KS_MAX_HANDLES. */
struct ks_obj *ks_handle_new(struct ks_handles *h, enum ks_kind kind, uint32_t owner);
struct ks_obj *ks_handle_get(const struct ks_handles *h, uint64_t handle, enum ks_kind kind);
void ks_handle_remove(struct ks_handles *h, uint64_t handle);
/* Calls fn on every object (removal during the walk is not allowed). */
void ks_handle_each(struct ks_handles *h, void (*fn)(struct ks_obj *, void *), void *arg);
/* The handles of the objects pick(o, arg) accepts, in a new array of *n (free it); NULL
 * with *n = 0 when there are none. Lets a caller remove objects it found in a walk. */
uint64_t *ks_handle_select(const struct ks_handles *h,
                           bool (*pick)(const struct ks_obj *, const void *), const void *arg,
                           size_t *n);
void ks_handles_free(struct ks_handles *h);

/* ---- connections -------------------------------------------------------------------------- */

struct ks_region {
    struct ks_conn *conn;       /* whose mapped bytes it counts in */
    bool used;
    bool detached;              /* unmapped once refs reaches 0 */
    uint32_t id;
    uint8_t *base;
    uint64_t size;
    unsigned refs;              /* operations using it */
    bool pinned;                /* registered with the backend (server_region.c) */
    bool device_mapped;         /* the tenant's kernels reach it at device */
    uint64_t device;            /* its address for kernels, once pinned */
};

struct ks_alloc {
    krange r;                   /* [base, base + size): first, for the range table */
    uint64_t module;            /* a module variable: its module's handle; 0 = allocation */
    uint32_t owner;             /* the client context that allocated it */
    bool freeing;               /* MEM_FREE waits for queued work: no new work may use it */
    bool releasing;             /* then its ksched_mem_free runs off the loop (server_call.c) */
    bool reserved;              /* a VMM reservation (server_vmm.c), not an allocation */
    bool host;                  /* host memory mapped for the kernels (server_region.c) */
};

struct ks_conn;

/* ---- server_call.c: requests served off the event loop ------------------------------------ */

/* The most worker threads (so the most such calls running at once, one per connection). */
#define KS_CALL_THREADS 4

struct ks_call;
struct ks_server;
typedef void ks_call_fn(struct ks_call *k);

struct ks_call {
    struct ks_call *next;
    struct ks_conn *conn;
    ks_call_fn *run;            /* on a worker: the slow part; touches only the call */
    ks_call_fn *finish;         /* on the server thread: the answer (conn->closing: none) */
    ksched *sched;              /* filled by ks_call_start */
    uint32_t tenant, context;
    uint64_t id;                /* request id */
    uint64_t arg;               /* the request's argument (an allocation's size, the
                                   address to free) */
    void *data;                 /* what run and finish share beyond arg (a module load's
                                   image and result: struct ks_load; a region's pinning;
                                   a VMM request); finish frees it */
    uint64_t result;            /* run's result (the address allocated) */
    int rc;                     /* run's KSCHED code */
    ksched_err err;
    bool started, cancelled;    /* under call_lock: cancelled ones are not run */
};

/* Runs run on a worker, then finish on the server thread, for request id (opcode) of c
 * with argument arg; c's later requests wait until then. A call of c already in flight:
 * this one starts once it is answered. finish runs for every call started, c closed
 * included (a call not run: k->rc is KSCHED_ESTATE). Without memory for the call, answers
 * CUDA_ERROR_OUT_OF_MEMORY and returns false (the caller keeps what it meant as data). */
bool ks_call_start(struct ks_conn *c, uint64_t id, uint16_t opcode, ks_call_fn *run,
                   ks_call_fn *finish, uint64_t arg);
/* Work left behind by a connection (its regions' unpinning at its end): run on a worker,
 * then finish on the server thread, with k->conn NULL and k->data = data; without a
 * worker or memory for the call, both run here. The scheduler is not replaced while any
 * is out (server_recover.c). */
void ks_call_detached(struct ks_server *s, ks_call_fn *run, ks_call_fn *finish, void *data);
/* The same with data for run and finish (struct ks_call.data). */
bool ks_call_start_data(struct ks_conn *c, uint64_t id, uint16_t opcode, ks_call_fn *run,
                        ks_call_fn *finish, void *data);
/* c closes: its call is not run if it has not started. */
void ks_call_cancel(struct ks_conn *c);
/* Answers the calls that were run (server thread; ks_completions calls it). */
void ks_calls_finish(struct ks_server *s);
/* Lets the workers run what is queued and end, and joins them (kserver_free). */
void ks_calls_stop(struct ks_server *s);

/* An answer that waits for operations to complete (batch with KERNELET_BATCH_COMPLETE,
 * syncs, frees). */
enum ks_after {
    KS_AFTER_REPLY, KS_AFTER_MEM_FREE, KS_AFTER_UNLOAD, KS_AFTER_DESTROY_STREAM,
    KS_AFTER_CONTEXT_CLOSE, KS_AFTER_SHM_DETACH, KS_AFTER_VMM_UNMAP
};

struct ks_tracker {
    struct ks_conn *conn;
    uint32_t context;           /* client context of the request it answers */
    uint64_t request_id;
    uint16_t opcode;
    unsigned remaining;         /* operations (plus one while still submitting) */
    uint32_t error;             /* first CUresult failure */
    uint32_t error_index;
    enum ks_after after;
    uint64_t arg, arg2;         /* pointer to free, module handle; VMM_UNMAP's range */
    bool report_async;          /* answer the connection's pending asynchronous error */
    bool holds_waiter;          /* counted in its conn's n_waiters until it finishes */
};

/* A buffer several operations read (a memset pattern), freed by the last. */
struct ks_shared {
    unsigned refs;
    uint8_t data[];
};

/* One operation submitted to the scheduler, and what to do when it completes. */
struct ks_op {
    struct ks_op *next;         /* completion queue */
    struct ks_conn *conn;
    uint32_t context;           /* client context that submitted it */
    struct ks_tracker *tracker;
    uint64_t stream;            /* handle */
    struct ks_region *region;   /* held */
    void *heap;                 /* freed on completion */
    struct ks_shared *shared;   /* released on completion */
    bool launch;
    bool lone;                  /* submitted while its tenant had no launch in flight */
    int status;
    char msg[120];
    struct {                    /* for KERNELET_LATENCY (server_latency.c) */
        uint64_t submit_ns, start_ns, end_ns, callback_ns;
    } t;
};

/* KERNELET_LATENCY (server_latency.c): where lone launches' round trips go. */
enum { KS_LAT_STAGES = 4 };
struct ks_latency;
bool ks_latency_wanted(void);
/* kop, done, seen by the server at server_ns: its stages noted for its connection. */
void ks_latency_note(struct ks_conn *c, const struct ks_op *kop, uint64_t server_ns);
/* The medians in the log, and the samples freed (the connection closes). */
void ks_latency_report(struct ks_conn *c);
/* Where module loads' time goes: stage's time since since_ns added to the load's totals
 * (only with KERNELET_LATENCY), which ks_latency_add_load adds to its connection's once the
 * load is answered; reported with the launches' medians. */
enum ks_load_stage { KS_LOAD_COPY, KS_LOAD_UNPACK, KS_LOAD_REWRITE, KS_LOAD_BACKEND,
                     KS_LOAD_ALL, KS_LOAD_STAGES };
struct ks_load;
void ks_latency_load(struct ks_load *l, enum ks_load_stage stage, uint64_t since_ns);
void ks_latency_add_load(struct ks_conn *c, const struct ks_load *l);

#define KS_MAX_FDS 4

/* Errors of one client context (server_context.c): a CUDA context ends with a faulting
 * kernel (sticky), and asynchronous failures are reported at its next synchronisation.
 * Only contexts that had an error have an entry. */
struct ks_ctx_errors {
    uint32_t context;
    uint32_t sticky;            /* CUresult ending the context, 0 if none */
    uint32_t async_error;       /* first failure of asynchronous work since the last sync */
};
#define KS_MAX_CTX_ERRORS 1024

struct ks_conn {
    struct ks_server *srv;
    struct ks_conn *next;
    struct ks_latency *latency; /* KERNELET_LATENCY's samples, or NULL */
    int fd;                     /* -1 once closed */
    bool closing;               /* socket gone or to be closed; waiting for operations */
    bool hello;
    bool admin;
    bool vm;                    /* HELLO said KERNELET_HELLO_VM (for status only) */
    bool have_tenant;
    bool reading;               /* EPOLLIN armed */
    bool writing;               /* EPOLLOUT armed */
    uint32_t tenant;            /* scheduler tenant */
    uint32_t context;           /* client context of the request being handled (header) */
    struct ucred cred;
    uint64_t hello_deadline_ns; /* closed at this time unless it said HELLO */
    char name[KERNELET_NAME_MAX];
    unsigned notes;             /* TENANT_NOTEs logged (server_note.c) */

    uint8_t in[KERNELET_MAX_REQUEST];
    size_t in_len;
    int fds[KS_MAX_FDS];
    unsigned n_fds;

    uint8_t *out;
    size_t out_len, out_off, out_cap;

    struct ks_region regions[KERNELET_MAX_REGIONS];
    uint32_t next_region;
    unsigned n_regions;         /* slots used, detached ones still referenced included */
    uint64_t region_bytes;      /* their sizes */
    uint64_t pinned_bytes;      /* of those, pinned for the device */
    bool attrs_refusal_logged;  /* a cluster or cooperative launch was refused (logged once) */
    bool contexts_logged;       /* a context beyond the scheduler's max_contexts was refused
                                   (logged once) */
    krange_table allocs;        /* struct ks_alloc; zeroed until the first is added */
    uint64_t mem_in_use;

    struct ks_handles handles;
    struct ks_stream legacy;    /* stream 0 */
    uint64_t legacy_gen;        /* operations submitted to the legacy stream so far */
    uint64_t legacy_fence_gen;  /* legacy generation the legacy fence event records */
    bool has_legacy_fence;
    uint32_t legacy_fence;

    unsigned dirty_streams;     /* blocking streams with work the legacy stream must wait for */
    unsigned ops_inflight;
    unsigned launches_inflight; /* of them, launches (KERNELET_LATENCY's "lone") */
    struct ks_ctx_errors *ctx_errors;
    size_t n_ctx_errors, cap_ctx_errors;
    uint32_t sticky_all;        /* sticky for every context: the table was full */

    unsigned n_waiters;         /* ks_waiter of c's streams (synchronisations waiting) */

    /* A request served off the event loop (server_call.c): until it is answered, c's later
     * requests wait (unread, or unprocessed in `in`), and c is not freed. */
    struct ks_call *call;
    struct ks_call *call_waiting; /* calls of c waiting for call's answer, in order (a free
                                     whose drain ended meanwhile) */

    /* A batch stopped by the tenant's max-inflight limit (operations of every kind queued
     * or running), resumed as they complete. */
    bool stalled;
    uint64_t stalled_piece;           /* first row (or chunk) of the stopped record not
                                         yet submitted; 0 when it starts afresh */
    uint64_t stalled_id;              /* request id and context of the stalled batch */
    uint32_t stalled_context;
    struct kproto_request stalled_req;
    struct kproto_batch_iter stalled_it;
    struct ks_tracker *stalled_tracker;
    size_t stalled_msg_len;

    uint64_t requests, errors, launches, bytes_copied;
};

struct ks_server {
    struct kserver_config cfg;
    int epfd, listen_fd, wake_fd;
    volatile int stopping;
    struct ks_conn *conns;
    unsigned n_conns;
    uint64_t mapped_bytes;      /* regions of every connection */
    uint64_t pinned_bytes;      /* of those, pinned for the device */
    uint64_t max_pinned_total;  /* a quarter of the host's memory */
    bool can_pin;               /* the backend can pin and map host memory */
    bool runs_cubins;           /* the backend runs SASS natively */
    bool has_vmm;               /* the backend has virtual memory management */
    uint64_t spin_ns;           /* cfg.spin_us resolved (server_core.c: wait_events) */
    uint64_t last_news_ns;      /* when the last event came (wait_events) */
    struct kernelet_device device;
    uint64_t start_ns;

    pthread_mutex_t cq_lock;    /* completion queue, filled by the scheduler's thread */
    struct ks_op *cq_head, *cq_tail;
    bool recovering;            /* the device was lost: tenants are being ended */

    /* server_call.c: workers for requests served off the event loop */
    pthread_mutex_t call_lock;
    pthread_cond_t call_cond;
    struct ks_call *call_head, *call_tail; /* waiting for a worker, in order */
    struct ks_call *call_done;  /* run, for the server thread to answer */
    pthread_t call_threads[KS_CALL_THREADS];
    unsigned n_call_threads, call_idle;
    bool call_stop;
    unsigned calls_detached;    /* calls of no connection not yet finished (the loop's) */

    pthread_mutex_t iso_lock;   /* isolated: kserver_isolated_ended comes from any thread */
    struct ks_isolated *isolated; /* tenants handed to workers of their own */
    bool adopted;               /* worker mode: its one connection was adopted */
    uint64_t next_push_ns;      /* worker mode: when its status row goes to the daemon next */
    uint64_t next_take_ns;      /* daemon: when its workers' rows are taken next */
};

/* ---- server_isolate.c: the isolation tier ----------------------------------------------- */

/* A tenant served by a worker process (kserver_config.isolate), kept for status and for
 * the connection limits until its worker ends. */
struct ks_isolated {
    struct ks_isolated *next;
    char name[KERNELET_NAME_MAX];
    struct ucred cred;          /* the tenant's */
    pid_t worker;
    uint64_t id;                /* its id in its worker (kserver_config.tenant_id_base) */
    int ctl_fd;                 /* its settings go there, its status rows come back (-1) */
    bool vm;
    bool have_row;              /* row: the latest its worker sent (every second) */
    struct kernelet_tenant_status row;
};

/* Offers a tenant's HELLO to the isolation tier: true when it was dealt with there (handed
 * to a worker, the connection closed here; or refused with UNAVAILABLE), false when the
 * tenant is to be served here. */
bool ks_isolate_offer(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
/* Isolated tenants in all, and those of uid. */
unsigned ks_isolated_count(struct ks_server *s, const uid_t *uid);
/* Status rows of the isolated tenants, numbered on from *index: those from first on, while
 * fewer than max rows are in list (*n). */
void ks_isolated_describe(struct ks_server *s, struct kernelet_tenant_status *list, size_t max,
                          uint32_t first, uint32_t *index, uint32_t *n);
void ks_isolated_free(struct ks_server *s);
/* Sends an operator's setting to the worker of the isolated tenant q->tenant; 0, or -1
 * when there is no such tenant or its worker cannot take it now. */
int ks_isolated_forward(struct ks_server *s, const struct kernelet_admin_set *q);
/* Worker side: a setting the daemon forwarded, applied to its tenant (failures logged). */
void ks_admin_apply_forwarded(struct ks_server *s, const struct kernelet_admin_set *q);
/* Worker side: reads the daemon's settings waiting on kserver_config.adopt_ctl_fd. */
void ks_isolated_read_settings(struct ks_server *s);
/* Worker side: sends its tenant's status row to the daemon, at most once a second; the
 * epoll timeout (ms) until the next, or -1 when not a worker. */
int ks_isolated_push_status(struct ks_server *s);
/* Daemon side: takes the rows its workers sent, at most once a second (the latest of each
 * is kept; ks_isolated_describe takes them too). */
void ks_isolated_take_rows(struct ks_server *s);

/* ---- server_admin.c --------------------------------------------------------------------- */

/* Tenant c's status row as ADMIN_STATUS lists it. */
void ks_admin_describe(struct ks_server *s, struct ks_conn *c, struct kernelet_tenant_status *t);

uint64_t ks_now_ns(void);
/* Whether new connections are taken (off while a lost device is replaced); 0 or -errno. */
int ks_listen_watch(struct ks_server *s, bool on);

/* ---- server_recover.c: a lost device replaced ----------------------------------------- */

/* After each round of the loop: notices a lost device, ends every tenant connection, and
 * once they are gone has kserver_config.recover make a fresh scheduler. Returns an epoll
 * timeout (ms) while it waits, else -1. */
int ks_recover_step(struct ks_server *s);

/* ---- server_conn.c: sockets, framing, answers ------------------------------------------ */

void ks_conn_accept(struct ks_server *s);
/* Worker mode: serves the connection kserver_config.adopt_fd as if accepted, handling
 * adopt_input first; 0 or -errno. */
int ks_conn_adopt(struct ks_server *s, char *err, size_t errlen);
/* Whether uid may administer the daemon (root, admin_uid, the daemon's own user); these
 * users are also not held to max_per_user. */
bool ks_privileged(const struct ks_server *s, uid_t uid);
/* Closes the connections whose HELLO deadline has passed; returns the milliseconds until
 * the next deadline, or -1 when no connection is waiting for its HELLO (epoll's timeout). */
int ks_conn_expire(struct ks_server *s);
void ks_conn_readable(struct ks_conn *c);
void ks_conn_writable(struct ks_conn *c);
/* Shuts the socket; the conn goes once its operations have completed. */
void ks_conn_close(struct ks_conn *c);
/* The same when the daemon ends the connection for a reason the peer did not ask for: one
 * line in the log names the tenant and why (its program sees only a lost connection). */
void ks_conn_close_why(struct ks_conn *c, const char *why);
/* Frees the conn if it is closing and idle; true when it did. */
bool ks_conn_reap(struct ks_conn *c);
void ks_conn_update_events(struct ks_conn *c);
/* Processes the messages already buffered (after a stall ends). */
void ks_conn_process(struct ks_conn *c);

/* Queues an answer: header, then n payload parts. */
void ks_reply(struct ks_conn *c, uint16_t opcode, uint64_t id, uint32_t status,
              const void *payload, size_t len);
void ks_reply_parts(struct ks_conn *c, uint16_t opcode, uint64_t id, uint32_t status,
                    const struct iovec *parts, int n);
/* KERNELET_ST_CUDA with code (and the record index for batches). */
void ks_reply_cuda(struct ks_conn *c, uint16_t opcode, uint64_t id, uint32_t code,
                   uint32_t index);
/* Takes the oldest file descriptor received on c, or -1. */
int ks_conn_take_fd(struct ks_conn *c);

/* ---- server_dispatch.c ----------------------------------------------------------------- */

/* Handles one complete message at c->in (len bytes). */
void ks_dispatch(struct ks_conn *c, size_t len);

/* What serves one decoded request (id: its request id; c->context is its context). */
typedef void ks_handler(struct ks_conn *c, uint64_t id, const struct kproto_request *r);

/* The handler of opcode, or NULL when kerneletd serves no such opcode. */
ks_handler *ks_handler_of(uint16_t opcode);

/* ---- handlers (one file per area) ------------------------------------------------------- */

void ks_session_hello(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_session_info(struct ks_conn *c, uint16_t op, uint64_t id);
void ks_session_shm_attach(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_session_shm_detach(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_session_device(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_tenant_note(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
/* The region of c named id, or NULL. */
struct ks_region *ks_region_find(struct ks_conn *c, uint32_t id);
/* A loaded module's variables (bytes) counted against the tenant's quota until it is
 * unloaded (server_module.c): on failure the module is unloaded and the CUresult is
 * OUT_OF_MEMORY, so that modules cannot hold memory no quota bounds. */
uint32_t ks_module_charge(struct ks_load *l, uint32_t sid, uint64_t bytes);
/* VMM_* (server_vmm.c): virtual memory management where the tenant's kernels are not
 * fenced; ks_vmm_allowed says whether they are. */
void ks_vmm_request(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
bool ks_vmm_allowed(const struct ks_conn *c);
/* TENSOR_MAP_ENCODE (server_tensor_map.c): the driver's tensor map, where kernels are
 * not fenced. */
void ks_tensor_map_encode(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
/* VMM_UNMAP id, its work drained: the range unmapped off the event loop, answered then
 * (c's later requests wait). */
void ks_vmm_unmap_drained(struct ks_conn *c, uint64_t id, uint64_t va, uint64_t size);
/* SHM_MAP_DEVICE: the region mapped for the tenant's kernels. */
void ks_region_map_device(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
/* Whether c's kernels may reach its host memory (not fenced, and the backend can). */
bool ks_region_can_map_device(const struct ks_conn *c);
void ks_region_put(struct ks_region *r);
void ks_regions_release(struct ks_conn *c);

void ks_memory_alloc(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_memory_free(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_memory_info(struct ks_conn *c, uint64_t id);
/* Whether [p, p + len) lies in one of c's allocations (or module globals). */
bool ks_memory_owned(const struct ks_conn *c, uint64_t p, uint64_t len);
/* Adds [base, base + size) to c's table; module is the handle of the module whose variable
 * it is, 0 for an allocation. */
int ks_alloc_add(struct ks_conn *c, uint64_t base, uint64_t size, uint64_t module);
void ks_alloc_remove(struct ks_conn *c, uint64_t base);
/* The entry at base is a VMM reservation (not freed by MEM_FREE); whether it is one. */
void ks_alloc_mark_reserved(struct ks_conn *c, uint64_t base);
/* The entry at base is mapped host memory (not freed by MEM_FREE). */
void ks_alloc_mark_host(struct ks_conn *c, uint64_t base);
bool ks_alloc_is_reservation(const struct ks_conn *c, uint64_t base);
/* Forgets the variables of module (its unload). */
void ks_alloc_remove_module(struct ks_conn *c, uint64_t module);
/* Frees the allocation at base now (its work has drained). */
uint32_t ks_memory_release(struct ks_conn *c, uint64_t base);
/* Takes the allocation at base out of c's table (the scheduler has freed it). */
void ks_memory_forget(struct ks_conn *c, uint64_t base);
/* MEM_FREE id of base, its work drained: frees it off the event loop and answers then
 * (c's later requests wait), or answers CUDA_ERROR_INVALID_VALUE when it is gone. */
void ks_memory_free_drained(struct ks_conn *c, uint64_t id, uint64_t base);

void ks_module_load(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_module_unload(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
/* Unloads now (its work has drained). */
uint32_t ks_module_release(struct ks_conn *c, uint64_t handle);
void ks_function_get(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_global_get(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_module_free(struct ks_obj *o);

void ks_batch(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
/* Continues a stalled batch; true when it finished (answered or failed). */
bool ks_batch_resume(struct ks_conn *c);

void ks_stream_create(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_stream_destroy(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_stream_sync(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_stream_query(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_event_create(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_event_destroy(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_event_sync(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_event_query(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_event_elapsed(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_ctx_sync(struct ks_conn *c, uint64_t id);
/* Destroys a stream whose work has drained (scheduler and handle). */
uint32_t ks_stream_release(struct ks_conn *c, uint64_t handle);
/* Destroys an event (scheduler and handle); KS_CUDA_INVALID_HANDLE when there is none. */
uint32_t ks_event_release(struct ks_conn *c, uint64_t handle);
/* Makes t wait for the stream's work submitted so far. */
void ks_drain_stream(struct ks_conn *c, struct ks_tracker *t, uint64_t stream);
/* Releases every tracker waiting on st (the stream goes away). */
void ks_stream_wake_all(struct ks_stream *st);
/* Waits for all of c's work, then does `after` (tracker) and answers. */
void ks_drain_then(struct ks_conn *c, uint64_t id, uint16_t op, enum ks_after after,
                   uint64_t arg);
/* ks_drain_then with a second argument for the action (VMM_UNMAP's range). */
void ks_drain_then2(struct ks_conn *c, uint64_t id, uint16_t op, enum ks_after after,
                    uint64_t arg, uint64_t arg2);

/* CONTEXT_CLOSE: frees what client context `context` created once the work submitted so
 * far has drained (server_context.c). */
void ks_context_close(struct ks_conn *c, uint64_t id, uint32_t context);
/* CONTEXT_CLOSE id, its work drained, code the answer so far: releases context's objects
 * now and frees its allocations on a worker, answering once they are freed (c's later
 * requests wait meanwhile, other connections are served). */
void ks_context_release_async(struct ks_conn *c, uint64_t id, uint32_t context, uint32_t code);
/* The CUresult of a scheduler failure of c's request in context (ks_cuda_of), logging
 * once per connection a context refused for being one too many (KSCHED_ECONTEXTS). */
uint32_t ks_context_cuda_of(struct ks_conn *c, uint32_t context, int ksched_code,
                            const char *msg);
/* The CUresult that ended context (0: none). */
uint32_t ks_context_sticky(const struct ks_conn *c, uint32_t context);
/* Whether any context of c has ended with a sticky error. */
bool ks_context_any_sticky(const struct ks_conn *c);
/* Records a failed operation of context: a launch ends it, other work is reported at its
 * next synchronisation. */
void ks_context_note_error(struct ks_conn *c, uint32_t context, uint32_t code, bool launch);
/* Takes (and clears) context's pending asynchronous error; 0 if none. */
uint32_t ks_context_take_async(struct ks_conn *c, uint32_t context);

void ks_admin_status(struct ks_conn *c, uint64_t id, const struct kproto_request *r);
void ks_admin_set(struct ks_conn *c, uint64_t id, const struct kproto_request *r);

/* ---- server_ops.c: submitting operations, completions ------------------------------------- */

/* The stream object behind a wire handle (0: the legacy stream), or NULL. */
struct ks_stream *ks_stream_of(struct ks_conn *c, uint64_t handle);
struct ks_tracker *ks_tracker_new(struct ks_conn *c, uint64_t id, uint16_t opcode);
/* One fewer operation to wait for (the submitter's own reference included). */
void ks_tracker_done(struct ks_tracker *t);
/* Submits op on the stream (handle) of c; the ks_op was filled by the caller (conn,
 * tracker...). KSCHED codes; on failure op is freed and its references released. */
int ks_submit(struct ks_conn *c, uint64_t stream, const ksched_op *op, struct ks_op *kop,
              ksched_err *err);
/* Submits the legacy-stream barriers CUDA's default-stream semantics need before work on
 * stream (handle). */
int ks_stream_order(struct ks_conn *c, uint64_t stream, ksched_err *err);
/* The most operations c may have queued or running, of every kind (launches, copies,
 * memsets, event records and waits, fences): its tenant's max-inflight policy; UINT_MAX
 * when the policy sets none. */
unsigned ks_inflight_limit(struct ks_conn *c);
/* Whether c may add one more synchronisation waiter: each costs daemon memory, and a
 * tenant could otherwise pile up syncs behind one long kernel without end. */
bool ks_waiter_room(struct ks_conn *c);
/* Completion of a scheduler operation (any thread): queues it for the server thread. */
void ks_op_done(void *user, const ksched_op_result *r);
/* Handles the queued completions (server thread). */
void ks_completions(struct ks_server *s);
/* The CUresult for the error code of a synchronous scheduler call. */
uint32_t ks_cuda_of(int ksched_code, const char *msg);
/* The CUresult for a failed operation's completion status. */
uint32_t ks_cuda_of_completion(int status, const char *msg, bool launch);

/* ---- server_device.c ---------------------------------------------------------------------- */

/* The device's SM architecture, major * 10 + minor (90 for the H100). */
unsigned ks_device_arch(const struct ks_server *s);

/* One module load (server_module.c), run on a worker (server_call.c) so that a big image's
 * parsing, rewriting and JIT stall no other tenant: what it reads and writes, none of it
 * its connection's, which the event loop goes on using meanwhile. */
struct ks_load {
    const struct ks_server *srv; /* configuration and device: fixed once the server runs */
    ksched *sched;
    uint32_t tenant;
    uint32_t context;           /* the loading client context: its window holds the
                                   module's variables */
    int sched_rc;               /* the scheduler's code of a failed load (0: none) */
    uint8_t *img;               /* the image, copied out of the request */
    size_t size;
    uint32_t kind;              /* KERNELET_IMAGE_* as the request said */
    struct ks_module mod;       /* what was loaded */
    uint32_t code;              /* the CUresult */
    uint64_t t0;                /* when the request was taken */
    uint64_t ns[KS_LOAD_STAGES]; /* time in each stage (KERNELET_LATENCY) */
};

/* server_module.c: parses, describes, slices and loads PTX text into the scheduler;
 * CUDA_ERROR_INVALID_PTX when the parser or the backend refuses it. */
uint32_t ks_ptx_load(struct ks_load *l, const char *ptx, size_t len, struct ks_module *mod);

/* Frees what a failed load left in mod's entries and zeroes it, for another try. */
void ks_module_reset(struct ks_module *mod);

/* server_fatbin.c: loads a fatbin's entry for the device, PTX first, else (or when its PTX
 * cannot be loaded) a cubin for the device's architecture; CUDA_ERROR_NO_BINARY_FOR_GPU
 * when nothing fits, INVALID_IMAGE for a malformed fatbin. */
uint32_t ks_fatbin_load(struct ks_load *l, const uint8_t *img, size_t size,
                        struct ks_module *mod);

/* server_cubin.c: loads a cubin (SASS for the device) into the scheduler and describes its
 * kernels from its .nv.info records; CUDA_ERROR_NO_BINARY_FOR_GPU for another architecture,
 * INVALID_IMAGE for a malformed one. */
uint32_t ks_cubin_load(struct ks_load *l, const uint8_t *img, size_t size,
                       struct ks_module *mod);

/* The answer to a launch of a function whose backend holds no code for it (f->no_code):
 * CUDA_ERROR_NO_BINARY_FOR_GPU, with one line in the log naming the kernel. */
uint32_t ks_cubin_refuse_launch(struct ks_conn *c, struct ks_function *f);

/* server_fence.c: memory fencing of kernels */
struct kptx_module;
/* Records in mod's entries which of m's kernels cannot be fenced on s's backend (and why),
 * then fences the others in m; 0, or -1 without memory. */
int ks_fence_module(const struct ks_server *s, struct kptx_module *m, struct ks_module *mod);
/* Sets f->fenced and f->fence_refused from the configuration and its module. */
void ks_fence_function(const struct ks_conn *c, struct ks_function *f);
/* Whether the tenant's kernels may reach beyond its window: a daemon that does not fence,
 * or a worker of the isolation tier (its context holds its tenant alone). */
bool ks_kernels_unconfined(const struct ks_conn *c);
/* Logs (once per function) and answers the refusal of a launch that cannot be fenced. */
uint32_t ks_fence_refuse_launch(struct ks_conn *c, struct ks_function *f);
/* A malloc'd copy of a fenced kernel's size bytes of parameters with the tenant's window
 * appended (kptx_fence_param_offset), into *out and *out_size. */
uint32_t ks_fence_params(struct ks_conn *c, const void *params, uint32_t size, void **out,
                         uint32_t *out_size);

void ks_device_describe(const kbackend_device_info *info, struct kernelet_device *out);

#endif
