/* The cuda backend's kernel time limits (kbackend_slice.time_limit_ns): a thread that
 * watches the launch each lane's completion thread is waiting for and, when one runs past
 * its tenant's limit, tells the operator at once (kcuda_config.note) naming the tenant and
 * the kernel; the launch then completes with the time-limit message (queue.c), which the
 * server answers as CUDA's launch timeout.
 *
 * A kernel running on the GPU cannot be stopped from the host without losing the context
 * of every tenant; a fenced kernel polls its tenant's cancel word on its loops' back-edges
 * (the PTX fencing pass put the polls there), so the watchdog raises that word
 * (control.h) and the offender's threads end at their next poll. A kernel without loops
 * ends by itself anyway; an unfenced one (kerneletd --no-fence, SASS in an isolated
 * worker) keeps its lane until it ends: this thread reports it and tells
 * kcuda_config.unstoppable, whose owner may end the context (an isolated worker does).
 *
 * The watchdog has a lock of its own, so that a note never waits for the backend's lock
 * and the lanes' threads never wait for a note. Deadlines are CLOCK_MONOTONIC. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"

/* A launch still running this long after its cancel is cancelled again: the first may have
 * found the launch's domain between launches, with nothing to cancel, and a profiled
 * launch is replayed by CUPTI, which may restore the word between passes (on the H100 a
 * runaway kernel's profile took ~8 s past its limit with a 0.5 s period here; not broken
 * down). A store to host memory costs nothing: often. */
#define RECANCEL_NS 10000000ull

typedef struct watch {
    const kcuda_job *job;       /* the launch its lane waits for; NULL: none */
    uint64_t start_ns;          /* when it could start */
    uint64_t limit_ns;          /* its tenant's limit now (0: none) */
    uint64_t deadline_ns;       /* the time limit, then the next cancel; 0: none */
    int fired;
} watch;

struct kcuda_watchdog {
    kcuda *kc;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    watch *lanes;
    unsigned n_lanes;
    uint64_t sleep_until;       /* the thread sleeps until then (UINT64_MAX: until told);
                                   0 while it is awake and will look again */
    int stop;
};

/* The watch whose deadline comes first, or NULL when no launch is watched. */
static watch *earliest_locked(kcuda_watchdog *w)
{
    watch *first = NULL;
    for (unsigned i = 0; i < w->n_lanes; i++) {
        watch *l = &w->lanes[i];
        if (l->job && l->deadline_ns && (!first || l->deadline_ns < first->deadline_ns))
            first = l;
    }
    return first;
}

/* Called with the lock held; drops it while the operator is told. */
static void fire_locked(kcuda_watchdog *w, watch *l)
{
    const kcuda_job *job = l->job;     /* may end once the lock is dropped: copied first */
    uint32_t domain = job->domain;
    int polls = job->polls_cancel;
    char msg[2 * MSG_LEN], what[MSG_LEN], tenant[sizeof(job->tenant)];

    snprintf(what, sizeof(what), "tenant '%s': launch of %.120s has run past its kernel time "
             "limit of %.3g s", job->tenant[0] ? job->tenant : "?", job->fn->name,
             (double)l->limit_ns / 1e9);
    snprintf(tenant, sizeof(tenant), "%s", job->tenant);
    l->deadline_ns = kcuda_now() + RECANCEL_NS;
    if (l->fired++) {           /* told once; cancelled again */
        pthread_mutex_unlock(&w->lock);
        kcuda_control_cancel(w->kc->control, domain);
        pthread_mutex_lock(&w->lock);
        return;
    }
    pthread_mutex_unlock(&w->lock);
    /* raised for the domain's fenced kernels either way; it stops this one if it polls */
    int stopped = kcuda_control_cancel(w->kc->control, domain) == 0 && polls;
    snprintf(msg, sizeof(msg), "%s; %s", what,
             stopped ? "its kernels are cancelled and it is reported as a launch timeout"
                     : "it will be reported as a launch timeout, but it cannot be stopped (not "
                       "fenced), so its lane stays busy until it ends");
    if (w->kc->cfg.note)
        w->kc->cfg.note(w->kc->cfg.note_user, msg);
    if (!stopped && w->kc->cfg.unstoppable)
        w->kc->cfg.unstoppable(w->kc->cfg.unstoppable_user, tenant);
    pthread_mutex_lock(&w->lock);
}

static void *watch_main(void *arg)
{
    kcuda_watchdog *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        watch *l = earliest_locked(w);
        if (!l) {
            w->sleep_until = UINT64_MAX;
            pthread_cond_wait(&w->wake, &w->lock);
        } else if (kcuda_now() >= l->deadline_ns) {
            fire_locked(w, l);
        } else {
            struct timespec ts = {.tv_sec = (time_t)(l->deadline_ns / 1000000000u),
                                  .tv_nsec = (long)(l->deadline_ns % 1000000000u)};
            w->sleep_until = l->deadline_ns;
            pthread_cond_timedwait(&w->wake, &w->lock, &ts);
        }
        w->sleep_until = 0;
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int kcuda_watchdog_start(kcuda *kc, kbackend_error *err)
{
    kcuda_watchdog *w = calloc(1, sizeof(*w));
    if (w)
        w->lanes = calloc(kc->n_queues, sizeof(*w->lanes)); /* lanes and the profiles' queue */
    if (!w || !w->lanes) {
        if (w)
            free(w);
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    }
    w->kc = kc;
    w->n_lanes = kc->n_queues;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&w->thread, NULL, watch_main, w)) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w->lanes);
        free(w);
        return kbackend_fail(err, KBACKEND_ENOMEM, "cannot start the watchdog thread");
    }
    kc->watchdog = w;
    return 0;
}

void kcuda_watchdog_stop(kcuda *kc)
{
    kcuda_watchdog *w = kc->watchdog;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w->lanes);
    free(w);
    kc->watchdog = NULL;
}

/* With the lock held: l's deadline under its limit, the thread told when it would sleep
 * past it (each launch arms a lane: the thread is not woken for each). */
static void set_deadline_locked(kcuda_watchdog *w, watch *l)
{
    l->deadline_ns = l->limit_ns ? l->start_ns + l->limit_ns : 0;
    if (l->deadline_ns && l->deadline_ns < w->sleep_until)
        pthread_cond_signal(&w->wake);
}

void kcuda_watchdog_arm(kcuda *kc, unsigned lane, const kcuda_job *job, uint64_t start_ns)
{
    kcuda_watchdog *w = kc->watchdog;
    if (!w || lane >= w->n_lanes)
        return;
    pthread_mutex_lock(&w->lock);
    /* watched without a limit too: the operator may give one while it runs */
    w->lanes[lane] = (watch){.job = job, .start_ns = start_ns, .limit_ns = job->time_limit_ns};
    set_deadline_locked(w, &w->lanes[lane]);
    pthread_mutex_unlock(&w->lock);
}

void kcuda_domain_time_limit(void *state, uint32_t domain, uint64_t limit_ns)
{
    kcuda_watchdog *w = ((kcuda *)state)->watchdog;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    for (unsigned i = 0; i < w->n_lanes; i++) {
        watch *l = &w->lanes[i];
        if (l->job && !l->fired && l->job->domain == domain &&
            (l->job->kind == JOB_LAUNCH || l->job->kind == JOB_PROFILE)) {
            l->limit_ns = limit_ns;
            set_deadline_locked(w, l);
        }
    }
    pthread_mutex_unlock(&w->lock);
}


int kcuda_watchdog_disarm(kcuda *kc, unsigned lane, uint64_t *limit_ns)
{
    kcuda_watchdog *w = kc->watchdog;
    if (!w || lane >= w->n_lanes)
        return 0;
    pthread_mutex_lock(&w->lock);
    int fired = w->lanes[lane].job && w->lanes[lane].fired;
    if (w->lanes[lane].job && limit_ns)
        *limit_ns = w->lanes[lane].limit_ns;
    w->lanes[lane] = (watch){0};
    pthread_mutex_unlock(&w->lock);
    return fired;
}
