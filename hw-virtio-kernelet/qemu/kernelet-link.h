/*
 * virtio-kernelet's link to kerneletd: one tenant connection per VM (all guest contexts
 * share it, so the VM's policy covers all of its work), an administration connection for
 * the VM's policy and statistics, a staging region for bulk data and, when guest RAM is a
 * shared memfd, the RAM itself attached as regions (zero-copy). Requests travel
 * asynchronously: answers come back through a main-loop handler and complete the chain
 * they belong to. When the daemon goes away every pending chain is answered UNAVAILABLE,
 * the backend flag drops (config interrupt) and a timer retries the connection.
 */
#ifndef QEMU_KERNELET_LINK_H
#define QEMU_KERNELET_LINK_H

#include "qemu/queue.h"
#include "qemu/timer.h"
#include "hw/virtio/virtio.h"
#include "kdev_request.h"
#include "kernelet/protocol.h"

typedef struct VirtIOKernelet VirtIOKernelet;

#define KERNELET_LINK_SLOTS     8      /* staging slots of KERNELET_MAX_BULK bytes */
#define KERNELET_LINK_MAX_RAM   8      /* RAM blocks attached as regions */
#define KERNELET_LINK_RETRY_MS  1000   /* reconnection period while the daemon is away */
#define KERNELET_LINK_OUT_MAX   (1u << 20)  /* queued bytes before the queues pause */

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

typedef struct KerneletLink {
    char *path;                /* the daemon's socket; NULL: no link (standalone device) */
    char *name;                /* tenant name the daemon shows */
    int fd;                    /* tenant connection, -1 while down */
    int admin_fd;              /* administration connection, -1 when refused or down */
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
/* Sends policy pol to the daemon (true at once while the link is down: the device sends
 * its policy when it connects); false with errp set when the daemon refuses it. */
bool kernelet_link_push_policy(VirtIOKernelet *s, const struct kdev_policy *pol, Error **errp);
/* Refreshes s->state.stats' daemon counters (kernels, GPU time, bytes, memory). */
void kernelet_link_refresh_stats(VirtIOKernelet *s);

/* Blocking calls (kernelet-admin.c), for the handshake and the administration connection.
 * kernelet_connect: a connection whose calls time out, or -1.
 * kernelet_call: one request and its answer; the answer's status or -1 (payload into
 *   resp, cap bytes; *resp_len gets its size).
 * kernelet_hello: HELLO as `name` with `flags`; ans receives info + session (cap bytes).
 * kernelet_attach: SHM_ATTACH of size bytes of mem_fd; the region id or 0.
 * kernelet_open_admin: opens s's administration connection (or warns once that the
 *   daemon refused it). */
int kernelet_connect(const char *path);
int kernelet_call(int fd, uint16_t op, const void *payload, uint32_t len, int pass_fd,
                  void *resp, size_t cap, uint32_t *resp_len);
bool kernelet_hello(int fd, const char *name, uint32_t flags, uint8_t *ans, size_t cap);
uint32_t kernelet_attach(int fd, int mem_fd, uint64_t size);
void kernelet_open_admin(VirtIOKernelet *s);

#endif
