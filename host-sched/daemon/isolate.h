/* The isolation tier of kerneletd (issue 15, item 4): tenants that ask for it
 * (KERNELET_HELLO_ISOLATE) or that the operator names are served by a worker process of
 * their own: kerneletd executed anew on the tenant's connection, with a backend, GPU context
 * and address space of its own, and the daemon's options (scheduler, limits, backend). */
#ifndef KD_ISOLATE_H
#define KD_ISOLATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kernelet/protocol.h"
#include "server.h"

#define KD_MAX_ISOLATE_NAMES 32
#define KD_MAX_WORKERS 256
#define KD_RATE_USERS 64        /* users whose recent worker starts are remembered */

/* Worker starts of one user: a token bucket of `burst` starts refilled at `rate` a second
 * (each start creates a GPU context: a user who connects and disconnects in a loop must
 * not keep the daemon and the driver busy making them). */
struct kd_start_bucket {
    uid_t uid;
    double tokens;
    double at;                  /* CLOCK_MONOTONIC seconds of the last refill */
};

struct kd_isolation {
    char **argv;                /* the daemon's arguments (NULL-terminated): its workers' */
    const char *names[KD_MAX_ISOLATE_NAMES]; /* --isolate NAME: always isolated */
    unsigned n_names;
    bool all;                   /* --isolate-all */
    unsigned max_workers;       /* --max-isolated; 0: requests are refused */
    double start_rate;          /* --isolate-rate: starts a second per user (0: no bound) */
    double start_burst;         /* starts at once per user: 4 x the rate, at least 4 */
    struct kserver *srv;        /* told when a worker ends; set once serving */

    pthread_mutex_t lock;
    pthread_cond_t ended;
    pid_t workers[KD_MAX_WORKERS];
    unsigned n_workers;
    uint64_t started;           /* workers started so far: each one's tenant id range */
    struct kd_start_bucket buckets[KD_RATE_USERS];
    unsigned n_buckets;
};

void kd_isolation_init(struct kd_isolation *iso, char **argv);
/* Worker starts a second per user (0: no bound); bursts of 4 x that (at least 4). */
void kd_isolation_set_rate(struct kd_isolation *iso, double per_second);
/* kserver_config.isolate: starts a worker for the tenant when it asked or the operator's
 * options isolate it (1), leaves it to the daemon (0), or refuses it (-errno, err). */
int kd_isolate(void *user, const struct kserver_handover *h, pid_t *worker,
               uint64_t *tenant_id, int *ctl_fd, char *err, size_t errlen);
/* Stops every worker: SIGTERM, then SIGKILL to those still running after grace_s. */
void kd_isolation_stop(struct kd_isolation *iso, double grace_s);

/* Worker side: the handed-over input (the tenant's HELLO and what followed it) read from
 * fd into buf (at most cap bytes); its length, or -1. */
long kd_worker_read_input(int fd, void *buf, size_t cap);

#endif
