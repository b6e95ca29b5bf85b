/* kerneletd's protocol server (library kernelet-server, host-sched/server/).
 *
 * Listens on a Unix socket; each connection that says HELLO is one tenant of the scheduler
 * (its identity: the name it gives and the peer's SO_PEERCRED), or an administration
 * connection (kernelet-ctl). Requests are decoded and validated by libkernelet-proto, then
 * checked against what the tenant owns (handles, allocations, shared-memory regions, quota)
 * before they reach the scheduler; stream work goes into the tenant's own queues, so the
 * scheduling policy decides when it runs. What one tenant may hold is bounded: operations
 * of every kind queued (its max-inflight policy), synchronisations waiting, regions and
 * their bytes, device memory (a default quota). A hostile message gets an error answer, or the
 * connection is closed when its framing cannot be trusted; nothing it sends can reach
 * another tenant's objects. A tenant that disconnects has its queued work cancelled and its
 * memory, modules and regions freed once its running work has drained.
 *
 * One thread runs the server (kserver_run); the scheduler's dispatcher thread reports
 * completions to it. Functions return 0 or -errno and describe failures in err.
 */
#ifndef KERNELET_SERVER_H
#define KERNELET_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ksched.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kserver;

/* Who ran beside whom: counts, per tenant, the slices that started while another tenant's
 * slices were running. Fed by the scheduler's trace callback (kserver_tally_trace as
 * ksched_config.trace, the tally as trace_user), so it exists before the scheduler. */
struct kserver_tally;

int kserver_tally_new(struct kserver_tally **out);
void kserver_tally_free(struct kserver_tally *t);
void kserver_tally_trace(void *tally, const ksched_trace *t);
/* The tenant's count so far. */
uint64_t kserver_tally_coscheduled(struct kserver_tally *t, uint32_t tenant);

/* Address space all connections' regions may take together: half of x86-64's 128 TiB of
 * user space, so that the daemon's own mappings always find room. */
#define KSERVER_MAX_MAPPED (64ull << 40)

/* A tenant connection offered to kserver_config.isolate, at its HELLO. */
struct kserver_handover {
    int fd;                  /* the connection; the callee dups it, the server closes its own */
    const char *name;        /* the tenant's name (HELLO's, or pidN) */
    uint32_t hello_flags;    /* KERNELET_HELLO_*: ISOLATE when the tenant asked */
    pid_t pid;               /* the peer (SO_PEERCRED) */
    uid_t uid;
    const void *input;       /* what the server has read and not handled: the HELLO first */
    size_t input_len;
};

struct kserver_config {
    const char *socket_path;    /* created (an old socket file is replaced) */
    unsigned socket_mode;       /* permissions of the socket file, e.g. 0666 */
    ksched *sched;              /* driven by its dispatcher thread (ksched_thread_start) */
    const char *backend_name;   /* for status: "sim", "emu", "cuda" */
    kbackend_device_info device;   /* the backend's device */
    unsigned max_connections;   /* 0 = 256 */
    unsigned max_per_user;      /* open connections of one uid, so that one local user
                                   cannot take every slot; root, admin_uid and the
                                   daemon's user are not limited (administration).
                                   0 = a quarter of max_connections (at least 1) */
    unsigned hello_timeout_ms;  /* a connection that has not said HELLO by then is
                                   closed, so idle ones cannot hold slots; 0 = 5000 */
    uint64_t max_output_bytes;  /* answers queued per connection before it stops being
                                   read; 0 = 4 MiB */
    unsigned max_regions;       /* shared-memory regions one connection may have mapped;
                                   0 = KERNELET_MAX_REGIONS (64), also the most */
    uint64_t max_region_bytes;  /* bytes one connection may have mapped as regions (a VM
                                   maps its RAM): sparse memfds cost address space, not
                                   memory. 0 = the host's physical memory. All connections
                                   together map at most KSERVER_MAX_MAPPED */
    int spin_us;                /* while tenants' work is in flight, how long the server
                                   polls for news before it sleeps (after news with none
                                   in flight: at most 50); < 0 = 1000 with 4 cores or
                                   more, else 0 */
    uint64_t max_pinned_bytes;  /* bytes of one connection's regions pinned for the device
                                   (copies without staging, memory its kernels read);
                                   regions beyond are only copied. 0 = 1 GiB. All
                                   connections together pin at most a quarter of the
                                   host's memory */
    uint64_t default_mem_quota; /* device bytes a tenant may hold unless the operator gives
                                   it a quota of its own (ADMIN_SET; a quota of 0 there
                                   means this default). 0 = the device's memory */
    uint64_t max_mem_quota;     /* the most device memory a tenant may be given (its address
                                   window: it cannot hold more); a larger quota set by the
                                   operator is refused. 0 = no bound */
    uint64_t default_kernel_time_limit_ns; /* each launch of a tenant may run this long
                                   unless the operator gives it a limit of its own
                                   (ADMIN_SET; a limit of 0 there means this default);
                                   0 = none */
    uid_t admin_uid;            /* besides root, who may administer (the daemon's user) */
    bool no_fence;              /* run tenants' kernels unfenced (kerneletd --no-fence); by
                                   default every PTX kernel is fenced into its tenant's
                                   address window and kernels that cannot be are refused */
    bool fence_faults;          /* a fenced kernel's access outside its window fails its
                                   launch with an illegal address (kerneletd
                                   --fence-faults) instead of being redirected into it */
    struct kserver_tally *tally; /* may be NULL: no co-scheduling statistics */
    bool log_errors;            /* one line on stderr per error answer (kerneletd
                                   --log-errors): which request of which tenant failed */
    /* A lost device (ksched_lost: the GPU context died): once every tenant connection is
     * gone, the server calls recover with the lost scheduler, which the callee frees; it
     * returns a fresh one on a new backend (0) and the server serves again, or -1 with a
     * message in err and the server stops. NULL: a lost scheduler is kept (every tenant
     * gets errors). */
    int (*recover)(void *user, ksched *lost, ksched **fresh, char *err, size_t errlen);
    void *recover_user;
    /* Isolation tier: each tenant's HELLO is offered to isolate (NULL: every tenant is
     * served here). It returns 1 when the tenant is to be served by a process of its own
     * (it has duplicated h->fd and given the process h->input, and *worker is its pid),
     * 0 to serve it here, or -errno with a reason in err to refuse it (UNAVAILABLE). An
     * isolated tenant counts against max_connections and max_per_user until
     * kserver_isolated_ended names its worker. */
    int (*isolate)(void *user, const struct kserver_handover *h, pid_t *worker,
                   uint64_t *tenant_id, int *ctl_fd, char *err, size_t errlen);
    void *isolate_user;         /* *tenant_id: the id the worker gives its tenant; *ctl_fd
                                   (the server closes it when the worker ends): a
                                   SOCK_SEQPACKET socket to the worker's adopt_ctl_fd, for
                                   the operator's settings of the tenant (ADMIN_SET) */
    /* Worker mode (the other end of isolate): socket_path is not used; the server serves
     * the one connection adopt_fd, whose first bytes adopt_input (its HELLO, read by the
     * daemon that handed it over) it handles as if it had read them, and kserver_run
     * returns once that connection is gone. Its tenant is alone in the backend's context:
     * kernels that cannot be fenced run unfenced instead of being refused. */
    bool adopt;
    uint64_t tenant_id_base;    /* added to the ids of this server's tenants as clients see
                                   them (HELLO's session, status): a worker's tenant must not
                                   share an id with one of its daemon's, or an administrator
                                   addressing one would reach the other. 0 for a daemon */
    int adopt_fd;
    const void *adopt_input;
    size_t adopt_len;
    int adopt_ctl_fd;           /* > 0: where the daemon sends the tenant's settings (one
                                   struct kernelet_admin_set a message), applied as the
                                   daemon's ADMIN_SET would */
};

int kserver_new(struct kserver **out, const struct kserver_config *cfg, char *err,
                size_t errlen);

/* Serves until kserver_stop; 0, or -errno when the event loop fails. */
int kserver_run(struct kserver *srv);

/* Makes kserver_run return soon; safe from a signal handler and other threads. */
void kserver_stop(struct kserver *srv);

/* Closes every connection (their tenants removed) and the socket. Call after kserver_run
 * returned, before the scheduler is freed. */
void kserver_free(struct kserver *srv);

/* The scheduler the server uses now (another after a recovery). */
ksched *kserver_sched(const struct kserver *srv);

/* The worker that serves an isolated tenant has ended (its tenant's slot is free again).
 * Safe from any thread. */
void kserver_isolated_ended(struct kserver *srv, pid_t worker);

/* Number of open connections (for tests). */
unsigned kserver_connections(const struct kserver *srv);

#ifdef __cplusplus
}
#endif

#endif
