/* Driving the scheduler: backend completions into the completion queue, the pump that
 * turns them (and submissions) into decisions and launches, and the drivers that run it in
 * the caller's thread or in a dispatcher thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policies/policy.h"
#include "sched_internal.h"

static int run_notifications(ksched *s);

/* Whether a thread other than the dispatcher may drive the scheduler itself, with the lock
 * held: the dispatcher runs (else the caller drives), the backend runs in real time (a
 * virtual-time one advances in the dispatcher), and no decision waits for the device (a
 * trial does; in a backend's completion thread it would wait for itself). Driving where
 * the news arrives saves the dispatcher's wake-up twice on a launch's round trip: after
 * its submission and after its completion. */
static int drive_here_ok(const ksched *s)
{
    return s->thread_running && !s->dev.virtual_time &&
           !sched_policy_get(s->cfg.policy)->needs_trial;
}

int sched_submitted(ksched *s)
{
    ksched_err err;
    if (s->held) {
        s->held_work = 1;
        return 0;
    }
    if (!drive_here_ok(s))
        return 1;
    /* the submitter's own callbacks stay with the dispatcher: the caller may hold locks
     * of its own that they take */
    return sched_pump(s, &err, 0) != 0 || s->notify_head != NULL;
}

void ksched_hold(ksched *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->held++;
    pthread_mutex_unlock(&s->lock);
}

void ksched_release(ksched *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    int kick = 0;
    if (s->held && !--s->held && s->held_work) {
        s->held_work = 0;
        kick = sched_submitted(s);
    }
    pthread_mutex_unlock(&s->lock);
    if (kick)
        sched_kick(s);
}

/* In a backend's completion thread: the completion just queued is taken, and what it
 * frees launched, right here when the scheduler is free and may be driven here; 0 when
 * the dispatcher must be woken instead. */
static int drive_completion_here(ksched *s)
{
    if (pthread_mutex_trylock(&s->lock) != 0)
        return 0;       /* busy (perhaps this very thread, inside a backend call) */
    int here = drive_here_ok(s);
    if (here) {
        ksched_err err;
        /* due pair evaluations are the dispatcher's: this thread delivers the backend's
           other completions */
        here = sched_pump(s, &err, 0) == 0;
        if (here)
            run_notifications(s);
        else
            sched_kick(s);
        here = here && !s->notify_head;
    }
    pthread_mutex_unlock(&s->lock);
    return here;
}

/* Called by the backend from any thread: queues the result, and drives the scheduler here
 * or wakes the dispatcher. */
void sched_backend_done(void *user, const kbackend_completion *c)
{
    sched_sub *sub = user;
    ksched *s = sub->s;
    sub->status = c->status;
    snprintf(sub->msg, sizeof(sub->msg), "%s", c->msg ? c->msg : "");
    sub->start_ns = c->start_ns;
    sub->end_ns = c->end_ns;
    sub->next = NULL;
    pthread_mutex_lock(&s->cq_lock);
    if (s->cq_tail)
        s->cq_tail->next = sub;
    else
        s->cq_head = sub;
    s->cq_tail = sub;
    pthread_mutex_unlock(&s->cq_lock);
    if (drive_completion_here(s))
        return;
    pthread_mutex_lock(&s->cq_lock);
    pthread_cond_broadcast(&s->cq_cond);
    pthread_mutex_unlock(&s->cq_lock);
}

static void copy_done(ksched *s, sched_sub *sub)
{
    sched_op *op = sub->op;
    s->outstanding--;
    op->start_ns = sub->start_ns;
    op->end_ns = sub->end_ns;
    if (sub->status) {
        op->backend_status = sub->status;
        sched_op_complete(s, op, KSCHED_EBACKEND, sub->msg);
        return;
    }
    const ksched_op *x = &op->op;
    op->tenant->st.bytes_copied += x->kind == KSCHED_OP_COPY_H2D ? x->u.h2d.bytes
                                 : x->kind == KSCHED_OP_COPY_D2H ? x->u.d2h.bytes
                                 : x->kind == KSCHED_OP_COPY_D2D ? x->u.d2d.bytes
                                                                 : x->u.memset.bytes;
    sched_op_complete(s, op, 0, NULL);
}

static sched_sub *take_completions(ksched *s)
{
    pthread_mutex_lock(&s->cq_lock);
    sched_sub *list = s->cq_head;
    s->cq_head = s->cq_tail = NULL;
    s->kicked = 0;
    pthread_mutex_unlock(&s->cq_lock);
    return list;
}

int sched_pump(ksched *s, ksched_err *err, int may_unlock)
{
    (void)err;
    for (;;) {
        sched_sub *list = take_completions(s);
        while (list) {
            sched_sub *n = list->next;
            sched_note_backend(s, list->status, list->msg);
            if (list->kind == SUB_SLICE)
                sched_slice_done(s, list);
            else if (list->kind == SUB_PROFILE)
                sched_profile_done(s, list);
            else
                copy_done(s, list);
            free(list);
            list = n;
        }
        sched_streams_start(s);
        if (s->n_pairs_due) {       /* a class got its profile: evaluate its pairs first */
            if (!may_unlock)
                return 1;
            sched_precompute(s);
        }
        sched_dispatch(s);
        /* launches started here (pipelined behind those just dispatched) go out this round */
        int started = sched_streams_start(s);
        sched_tenants_reap(s);
        pthread_mutex_lock(&s->cq_lock);
        int more = s->cq_head != NULL;
        pthread_mutex_unlock(&s->cq_lock);
        if (!more && !s->work_head && !started)
            return 0;
    }
}

/* Runs the deferred callbacks and host functions without the lock; 1 when there were any. */
static int run_notifications(ksched *s)
{
    notify *list = s->notify_head;
    if (!list)
        return 0;
    s->notify_head = s->notify_tail = NULL;
    pthread_mutex_unlock(&s->lock);
    for (notify *n = list; n; n = n->next) {
        if (n->host_fn) {
            n->host_fn(n->host_user);
        } else if (n->done) {
            n->r.msg = n->msg;
            n->done(n->user, &n->r);
        }
    }
    pthread_mutex_lock(&s->lock);
    while (list) {
        notify *n = list->next;
        if (list->host_op) {
            s->host_running--;
            sched_op_complete(s, list->host_op, 0, NULL);
        }
        free(list);
        list = n;
    }
    return 1;
}

static int idle(ksched *s)
{
    pthread_mutex_lock(&s->cq_lock);
    int empty = !s->cq_head;
    pthread_mutex_unlock(&s->cq_lock);
    return empty && !s->outstanding && !s->host_running && !s->work_head && !s->notify_head;
}

/* Real-time backends: waits (lock released) for a completion, a kick, or until deadline
 * (CLOCK_MONOTONIC ns; 0 = no deadline). */
static void wait_event(ksched *s, uint64_t deadline)
{
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&s->cq_lock);
    while (!s->cq_head && !s->kicked && !s->thread_stop) {
        if (!deadline) {
            pthread_cond_wait(&s->cq_cond, &s->cq_lock);
            continue;
        }
        struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000ull),
                              .tv_nsec = (long)(deadline % 1000000000ull)};
        if (pthread_cond_timedwait(&s->cq_cond, &s->cq_lock, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&s->cq_lock);
    pthread_mutex_lock(&s->lock);
}

static int stopping(ksched *s)
{
    pthread_mutex_lock(&s->cq_lock);
    int stop = s->thread_stop;
    pthread_mutex_unlock(&s->cq_lock);
    return stop;
}

/* Virtual time: lets the backend run to its next event (not past until). */
static int advance(ksched *s, uint64_t until, ksched_err *err)
{
    kbackend_error e = {0};
    int rc = s->be.ops->progress(s->be.state, until, &e);
    if (rc < 0)
        return sched_backend_fail(err, &e, "progress");
    if (rc > 0)
        return 1;
    if (until != UINT64_MAX) {      /* the clock stands at until: take what it brought */
        rc = sched_pump(s, err, 1);
        if (!rc)
            run_notifications(s);
        return rc;
    }
    if (s->outstanding)
        return ksched_fail(err, KSCHED_EBACKEND, "backend stalled with %llu operations in "
                           "flight", (unsigned long long)s->outstanding);
    return 1;
}

/* One step: pump, notify; then advance the backend (virtual) or wait (real). Returns 1
 * when there may be more to do, 0 when idle or the deadline passed, or an error. */
static int step(ksched *s, uint64_t until, ksched_err *err)
{
    int rc = sched_pump(s, err, 1);
    if (rc)
        return rc;
    if (run_notifications(s))
        return 1;
    if (idle(s) && until == UINT64_MAX)
        return 0;
    if (s->dev.virtual_time)
        return advance(s, until, err);
    if (until != UINT64_MAX && sched_now(s) >= until)
        return 0;
    wait_event(s, until == UINT64_MAX ? 0 : until);
    return 1;
}

static int run(ksched *s, uint64_t until, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    int rc = s->thread_running
                 ? ksched_fail(err, KSCHED_ESTATE, "the dispatcher thread drives this scheduler")
                 : 1;
    while (rc == 1)
        rc = step(s, until, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_run_until_idle(ksched *s, ksched_err *err)
{
    return run(s, UINT64_MAX, err);
}

int ksched_run_until(ksched *s, uint64_t t_ns, ksched_err *err)
{
    return run(s, t_ns, err);
}

static void *dispatcher(void *arg)
{
    ksched *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!stopping(s)) {
        ksched_err err;
        if (step(s, UINT64_MAX, &err) <= 0)
            wait_event(s, 0);       /* idle (or failing): sleep until there is news */
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int ksched_thread_start(ksched *s, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    if (s->thread_running)
        rc = ksched_fail(err, KSCHED_ESTATE, "the dispatcher thread already runs");
    else {
        s->thread_stop = 0;
        if (pthread_create(&s->thread, NULL, dispatcher, s))
            rc = ksched_fail(err, KSCHED_ENOMEM, "cannot start the dispatcher thread");
        else
            s->thread_running = 1;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void ksched_thread_stop(ksched *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    int running = s->thread_running;
    pthread_mutex_unlock(&s->lock);
    if (!running)
        return;
    pthread_mutex_lock(&s->cq_lock);
    s->thread_stop = 1;
    pthread_cond_broadcast(&s->cq_cond);
    pthread_mutex_unlock(&s->cq_lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_lock(&s->lock);
    s->thread_running = 0;
    s->thread_stop = 0;
    pthread_mutex_unlock(&s->lock);
}
