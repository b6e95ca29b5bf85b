/*
 * virtio-kernelet's link to kerneletd: one tenant connection per VM (all guest contexts
 * share it, so the VM's policy covers all of its work), an administration connection for
 * the VM's policy and statistics, a staging region for bulk data and, when guest RAM is a
 * shared memfd, the RAM itself attached as regions (zero-copy). Requests travel
 * asynchronously: answers come back through a main-loop handler and complete the chain
 * they belong to. When the daemon goes away every pending chain is answered UNAVAILABLE,
 * the backend flag drops (config interrupt) and a timer retries the connection.
 *
 * QEMU's main loop never waits for the daemon. What needs blocking calls (connecting and
 * the handshake, the policy, the statistics) is a job for the link's worker thread, which
 * alone owns the administration connection; its result comes back to the main loop
 * through a bottom half (kernelet-worker.c), as the thread-pool completions of QEMU's
 * block layer do. While a connection is being made the queues pause (chains wait in the
 * rings); a guest's GET_STATS waits, off the main loop, for a fresh statistics job.
 */
#ifndef QEMU_KERNELET_LINK_H
#define QEMU_KERNELET_LINK_H

#include "qemu/queue.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "hw/virtio/virtio.h"
#include "kdev_request.h"
#include "kernelet/protocol.h"

typedef struct VirtIOKernelet VirtIOKernelet;

#define KERNELET_LINK_SLOTS     8      /* staging slots of KERNELET_MAX_BULK bytes */
#define KERNELET_LINK_MAX_RAM   8      /* RAM blocks attached as regions */
#define KERNELET_LINK_RETRY_MS  1000   /* reconnection period while the daemon is away */
#define KERNELET_LINK_OUT_MAX   (1u << 20)  /* queued bytes before the queues pause */

/* A chain waiting for something other than its own answer (GET_STATS: the statistics). */
typedef struct KerneletWaiting {
    VirtQueue *vq;
    VirtQueueElement *elem;
    QTAILQ_ENTRY(KerneletWaiting) next;
} KerneletWaiting;

typedef QTAILQ_HEAD(, KerneletWaiting) KerneletWaitList;

/* A chain forwarded to kerneletd, waiting for its answer. */
typedef struct KerneletPending {
    uint64_t wire_id;          /* request id on the socket (the device's own) */
    VirtQueue *vq;
    VirtQueueElement *elem;
    struct kdev_req req;       /* guest id, opcode, xfer; payload already freed */
    int slot;                  /* staging slot holding its bulk data, or -1 */
    bool bulk;                 /* some record named the chain's bulk data */
    QTAILQ_ENTRY(KerneletPending) next;
} KerneletPending;

typedef struct KerneletRam {
    uint8_t *host;             /* the block's host address */
    uint64_t len;              /* used length */
    uint64_t fd_offset;        /* where the block starts in its file */
    uint32_t region;           /* daemon's region id */
} KerneletRam;

/* Work for the worker thread: its kind and inputs from the main loop, its results back. */
typedef enum { KERNELET_JOB_CONNECT, KERNELET_JOB_POLICY, KERNELET_JOB_STATS } KerneletJobKind;

typedef struct KerneletJob {
    KerneletJobKind kind;
    uint64_t generation;       /* the link's when submitted: a stale result is dropped */
    struct kdev_policy policy; /* CONNECT, POLICY: sent to the daemon */
    uint64_t tenant_id;        /* POLICY, STATS */
    /* CONNECT: the shared RAM blocks to attach (fd, size; host, len, fd_offset kept) */
    int ram_fd[KERNELET_LINK_MAX_RAM];
    uint64_t ram_size[KERNELET_LINK_MAX_RAM];
    KerneletRam ram[KERNELET_LINK_MAX_RAM];    /* region filled by the worker (0: refused) */
    unsigned n_ram;
    /* results */
    int fd;                    /* CONNECT: the tenant connection after the handshake, or -1 */
    bool reached;              /* CONNECT: the daemon accepted (it may not have answered) */
    bool admin;                /* CONNECT: an administration connection is open */
    uint8_t hello[sizeof(struct kernelet_info) + sizeof(struct kernelet_session)];
    uint32_t staging_region;
    int status;                /* CONNECT, POLICY: the ADMIN_SET answer; -1 none */
    bool ok;                   /* STATS: row holds the tenant's row */
    struct kernelet_tenant_status row;
    KerneletWaitList waiters;  /* STATS: GET_STATS chains it answers (main loop only) */
    QSIMPLEQ_ENTRY(KerneletJob) next;
} KerneletJob;

typedef void KerneletJobDone(VirtIOKernelet *s, KerneletJob *job);
typedef QSIMPLEQ_HEAD(KerneletJobQueue, KerneletJob) KerneletJobQueue;

/* The thread that makes the blocking calls (kernelet-worker.c). */
typedef struct KerneletWorker {
    QemuThread thread;
    QemuMutex lock;
    QemuCond wake;
    KerneletJobQueue todo;
    KerneletJobQueue done;
    QEMUBH *bh;                /* runs done jobs' completions on the main loop */
    bool started;
    bool stop;
    int admin_fd;              /* the administration connection: the worker's alone */
    const char *path, *name;   /* the link's, unchanged while the worker runs */
    int staging_fd;
    VirtIOKernelet *s;
    KerneletJobDone *done_fn;
} KerneletWorker;

typedef struct KerneletLink {
    char *path;                /* the daemon's socket; NULL: no link (standalone device) */
    char *name;                /* tenant name the daemon shows */
    int fd;                    /* tenant connection, -1 while down */
    KerneletWorker worker;     /* connects, sends the policy, reads the statistics */
    uint64_t generation;       /* bumped when the connection closes */
    bool connecting;           /* a CONNECT job is out: the queues wait */
    bool admin;                /* the worker holds an administration connection */
    bool policy_pending;       /* the policy changed while connecting: send it after */
    KerneletJob *stats_job;    /* the STATS job out, or NULL */
    KerneletWaitList stats_waiting; /* GET_STATS chains for the next STATS job */
    uint64_t tenant_id;
    bool contexts;             /* the daemon keeps guest contexts apart (protocol 0.2+) */
    uint64_t next_id;
    QTAILQ_HEAD(, KerneletPending) pending;
    GByteArray *out;           /* bytes not yet written to fd */
    bool throttled;            /* queues paused: output or staging full */
    uint8_t *in;               /* KERNELET_MAX_REQUEST bytes being assembled */
    size_t in_len;
    int staging_fd;
    uint8_t *staging;          /* KERNELET_LINK_SLOTS * KERNELET_MAX_BULK bytes */
    uint32_t staging_region;
    uint32_t slots_busy;       /* bit per slot */
    KerneletRam ram[KERNELET_LINK_MAX_RAM];
    unsigned n_ram;
    QEMUTimer *retry;
    unsigned retry_periods;    /* current retry delay in KERNELET_LINK_RETRY_MS */
    bool warned_down;          /* "daemon gone" said for this outage */
    bool said_mode;            /* zero-copy or staging said once */
    uint64_t quota_hits;       /* answers with status QUOTA */
    uint64_t bulk_zero_copy;   /* chains whose bulk data the daemon read in guest RAM */
    uint64_t bulk_staged;      /* chains whose bulk data went through staging */
} KerneletLink;

/* Starts the link (realize) when a socket path is set: sets up staging and connects, or
 * arms the retry timer. false with errp only for local failures (no memory for staging). */
bool kernelet_link_start(VirtIOKernelet *s, Error **errp);
/* Closes everything (unrealize). */
void kernelet_link_stop(VirtIOKernelet *s);
/* Device reset: drops pending chains unanswered and reconnects, so that the tenant's
 * objects (all contexts') are freed by the daemon. */
void kernelet_link_reset(VirtIOKernelet *s);
/* Whether the queues should stay paused (output or staging full). */
bool kernelet_link_throttled(VirtIOKernelet *s);
/* Takes a chain that is not answered by the device itself, decoded once by the caller
 * (req, status: kdev_decode_chain's); false when the link is not configured or the device
 * answers this opcode (the caller answers and still owns req->payload). On true the chain
 * and req->payload are the link's; the chain is answered (now, on error, or later). When
 * it returns true with *paused set, the queue must pause (output or staging full). */
bool kernelet_link_forward(VirtIOKernelet *s, VirtQueue *vq, VirtQueueElement *elem,
                           struct kdev_req *req, uint32_t status, bool *paused);
/* Sends policy pol to the daemon, without waiting (at the next connection while the link
 * is down or connecting); a refusal by the daemon is logged. */
void kernelet_link_push_policy(VirtIOKernelet *s, const struct kdev_policy *pol);
/* Asks the daemon for s->state.stats' daemon counters (kernels, GPU time, bytes, memory)
 * without waiting: they are updated when the answer comes. */
void kernelet_link_request_stats(VirtIOKernelet *s);

/* The worker thread (kernelet-worker.c). start: before the first job (path, name,
 * staging_fd set); submit: queues job, whose completion done runs on the main loop; stop:
 * joins the thread and frees the jobs not completed (closing their connections). */
void kernelet_worker_start(KerneletWorker *w, VirtIOKernelet *s, KerneletJobDone *done);
void kernelet_worker_submit(KerneletWorker *w, KerneletJob *job);
void kernelet_worker_stop(KerneletWorker *w);

/* Blocking calls (kernelet-admin.c), made by the worker thread only.
 * kernelet_connect: a connection whose calls time out, or -1.
 * kernelet_call: one request and its answer; the answer's status or -1 (payload into
 *   resp, cap bytes; *resp_len gets its size).
 * kernelet_hello: HELLO as `name` with `flags`; ans receives info + session (cap bytes).
 * kernelet_attach: SHM_ATTACH of size bytes of mem_fd; the region id or 0.
 * kernelet_admin_open: an administration connection, or -1 (away or refused).
 * kernelet_admin_set: ADMIN_SET of pol for tenant; the answer's status or -1.
 * kernelet_admin_row: ADMIN_STATUS until tenant's row, into *row; false when not found. */
int kernelet_connect(const char *path);
int kernelet_call(int fd, uint16_t op, const void *payload, uint32_t len, int pass_fd,
                  void *resp, size_t cap, uint32_t *resp_len);
bool kernelet_hello(int fd, const char *name, uint32_t flags, uint8_t *ans, size_t cap);
uint32_t kernelet_attach(int fd, int mem_fd, uint64_t size);
int kernelet_admin_open(const char *path, const char *name);
int kernelet_admin_set(int admin_fd, uint64_t tenant, const struct kdev_policy *pol);
bool kernelet_admin_row(int admin_fd, uint64_t tenant, struct kernelet_tenant_status *row);

#endif
