/* kerneletd's device: the backend and the scheduler on it, and their replacement when the
 * device is lost (kserver_config.recover). */
#ifndef KERNELETD_RECOVER_H
#define KERNELETD_RECOVER_H

#include <stdbool.h>

#include "backends.h"
#include "ksched.h"

struct kd_device {
    const struct kd_backend_options *opts;
    kbackend backend;
    bool have_backend;
    ksched_config scfg;
    ksched *sched;              /* NULL until made */
    bool restart;               /* the device cannot be reopened in this process (a GPU's
                                   sticky error outlives the context reset): kerneletd
                                   executes itself anew */
    ksched_profile_cache *learned; /* what the lost scheduler had learned, kept for the
                                   profile cache when restarting */
};

/* Starts the scheduler of d on its backend with the given profiles; 0, or -1 with a
 * message in err. */
int kd_device_start(struct kd_device *d, const ksched_profile_cache *profiles, char *err,
                    size_t errlen);

/* kserver_config.recover: frees the lost scheduler and backend (the cuda backend resets the
 * GPU's primary context), opens the backend again and starts a scheduler on it with the
 * profiles learned so far. When the backend cannot be opened again in this process it
 * returns -1 with restart set (the daemon then executes itself). user: the kd_device. */
int kd_device_recover(void *user, ksched *lost, ksched **fresh, char *err, size_t errlen);

/* Cancels what runs on the backend (a kernel may never end) so that a stop cannot hang. */
void kd_device_cancel(const struct kd_device *d);

/* Stops the scheduler's dispatcher and cancels what it had submitted; the scheduler can
 * still be read (its profiles, its statistics) until kd_device_free. */
void kd_device_stop(struct kd_device *d);

/* Frees the (stopped) scheduler, then the backend (cuda: the context is reset). */
void kd_device_free(struct kd_device *d);

#endif
