/* kerneletd's device and its replacement after a lost device (recover.h). A fault the
 * GPU could not contain kills the context that every tenant shares; the server ends the
 * tenants' connections and then calls kd_device_recover, so that new tenants are served
 * on a fresh context at once instead of the daemon answering every call with an error
 * until an operator restarts it. */
#include <stdio.h>
#include <string.h>

#include "recover.h"

void kd_device_cancel(const struct kd_device *d)
{
    if (d->have_backend && d->backend.ops->cancel_all)
        d->backend.ops->cancel_all(d->backend.state);
}

int kd_device_start(struct kd_device *d, const ksched_profile_cache *profiles, char *err,
                    size_t errlen)
{
    ksched_err e;
    if (ksched_new(&d->sched, &d->backend, &d->scfg, profiles, &e) != 0) {
        d->sched = NULL;
        snprintf(err, errlen, "scheduler: %s", e.msg);
        return -1;
    }
    if (ksched_thread_start(d->sched, &e) != 0) {
        ksched_free(d->sched);
        d->sched = NULL;
        snprintf(err, errlen, "scheduler: %s", e.msg);
        return -1;
    }
    return 0;
}

void kd_device_stop(struct kd_device *d)
{
    if (!d->sched)
        return;
    ksched_thread_stop(d->sched);
    kd_device_cancel(d);    /* what the dispatcher submitted meanwhile */
}

void kd_device_free(struct kd_device *d)
{
    ksched_free(d->sched);
    d->sched = NULL;
    if (d->have_backend)
        d->backend.ops->destroy(d->backend.state);
    d->have_backend = false;
}

int kd_device_recover(void *user, ksched *lost, ksched **fresh, char *err, size_t errlen)
{
    struct kd_device *d = user;
    ksched_profile_cache *files = NULL;
    ksched_err e;
    ksched_profile_cache_free(d->learned);
    d->learned = NULL;
    if (ksched_profiles_snapshot(lost, &d->learned, &e) != 0)
        fprintf(stderr, "kerneletd: profiles learned so far are lost too: %s\n", e.msg);
    d->sched = lost;
    kd_device_stop(d);
    kd_device_free(d);
    /* On a GPU a sticky error outlives the context reset in the process that saw it
     * (cuDevicePrimaryCtxRetain keeps failing): only a new process gets a working device. */
    if (kd_backend_open(d->opts, &d->backend, &files, err, errlen) != 0) {
        d->restart = true;
        return -1;
    }
    d->have_backend = true;
    int rc = kd_device_start(d, d->learned ? d->learned : files, err, errlen);
    ksched_profile_cache_free(files);
    if (rc)
        return -1;
    *fresh = d->sched;
    return 0;
}
