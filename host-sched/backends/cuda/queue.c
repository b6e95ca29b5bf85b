/* Jobs, queues and their completion threads; submissions held back while a profile or a
 * trial has the device; the broken state after a sticky error (see cuda_backend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"

/* A free event of pool, or a new one made as pool's are. */
static int event_get(kcuda *kc, kcuda_event_pool *pool, CUevent *ev, kbackend_error *err)
{
    pthread_mutex_lock(&kc->lock);
    int have = pool->n > 0;
    if (have)
        *ev = pool->ev[--pool->n];
    pthread_mutex_unlock(&kc->lock);
    if (have)
        return 0;
    unsigned flags = (kc->cfg.blocking_sync ? CU_EVENT_BLOCKING_SYNC : CU_EVENT_DEFAULT) |
                     (pool->timing ? 0 : CU_EVENT_DISABLE_TIMING);
    CUresult r = cuEventCreate(ev, flags);
    return r == CUDA_SUCCESS ? 0 : kcuda_cu_fail(err, r, "cuEventCreate");
}

/* Keeps ev in pool for the next job; destroys it when the pool cannot grow. */
static void event_put_locked(kcuda_event_pool *pool, CUevent ev)
{
    if (!ev)
        return;
    if (pool->n == pool->cap) {
        size_t cap = pool->cap ? 2 * pool->cap : 64;
        CUevent *grown = realloc(pool->ev, cap * sizeof(*grown));
        if (!grown) {
            cuEventDestroy(ev);
            return;
        }
        pool->ev = grown;
        pool->cap = cap;
    }
    pool->ev[pool->n++] = ev;
}

int kcuda_job_new(kcuda *kc, job_kind kind, unsigned queue, int timed, kbackend_done_fn done,
                  void *user, kcuda_job **out, kbackend_error *err)
{
    kcuda_job *job = calloc(1, sizeof(*job));
    if (!job)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    /* the jobs' own pool is a timing one with timed_events */
    kcuda_event_pool *pool = timed && !kc->events.timing ? &kc->timing_events : &kc->events;
    *job = (kcuda_job){.kind = kind, .queue = queue, .done = done, .user = user,
                       .issued_ns = kcuda_now(), .pool = pool};
    int rc = 0;
    if (kind != JOB_PROFILE && pool->timing)
        rc = event_get(kc, pool, &job->start, err);
    if (kind != JOB_PROFILE && !rc)
        rc = event_get(kc, pool, &job->end, err);
    if (rc) {
        kcuda_job_free(kc, job);
        return rc;
    }
    *out = job;
    return 0;
}

void kcuda_job_free(kcuda *kc, kcuda_job *job)
{
    if (!job)
        return;
    pthread_mutex_lock(&kc->lock);
    event_put_locked(job->pool, job->start);
    event_put_locked(job->pool, job->end);
    pthread_mutex_unlock(&kc->lock);
    free(job->params);
    free(job);
}

static void push_locked(kcuda *kc, kcuda_job *job)
{
    kcuda_queue *q = &kc->queues[job->queue];
    job->next = NULL;
    job->seq = ++q->next_seq;
    if (q->tail)
        q->tail->next = job;
    else    /* a spinning completion thread reads it without the lock (spin_for_job) */
        __atomic_store_n(&q->head, job, __ATOMIC_RELEASE);
    q->tail = job;
    if (job->kind != JOB_PROFILE)
        kc->in_flight++;
    pthread_cond_signal(&q->wake);
}

/* Launches go to the device now (their lane's stream keeps the order); copies are issued
 * by their queue's thread. */
static int dispatch_locked(kcuda *kc, kcuda_job *job, kbackend_error *err)
{
    if (job->kind == JOB_LAUNCH) {
        int rc = kcuda_issue_launch(kc, job, kc->queues[job->queue].stream, err);
        if (rc)
            return rc;
    }
    push_locked(kc, job);
    return 0;
}

int kcuda_submit(kcuda *kc, kcuda_job *job, kbackend_error *err)
{
    pthread_mutex_lock(&kc->lock);
    int rc = kcuda_refuse_if_broken(kc, err);
    if (rc) {
        /* refused */
    } else if (job->kind == JOB_PROFILE) {
        kc->exclusive++;
        push_locked(kc, job);
    } else if (kc->exclusive || kc->deferred_head) {
        job->next = NULL;
        if (kc->deferred_tail)
            kc->deferred_tail->next = job;
        else
            kc->deferred_head = job;
        kc->deferred_tail = job;
        kc->stats.deferred++;
    } else {
        rc = dispatch_locked(kc, job, err);
    }
    /* counted from here until finish_job sees its end (issued now or deferred) */
    if (!rc && (job->kind == JOB_LAUNCH || job->kind == JOB_PROFILE))
        kcuda_control_launch_begin(kc->control, job->domain);
    pthread_mutex_unlock(&kc->lock);
    return rc;
}

/* What waited for an exclusive operation goes out in submission order; a job that cannot
 * be issued now still completes, with its error, through its queue. */
static void flush_deferred_locked(kcuda *kc)
{
    kcuda_job *job;
    while ((job = kc->deferred_head)) {
        kc->deferred_head = job->next;
        if (!kc->deferred_head)
            kc->deferred_tail = NULL;
        kbackend_error e = {0};
        int rc = kcuda_refuse_if_broken(kc, &e);
        if (!rc && job->kind == JOB_LAUNCH)
            rc = kcuda_issue_launch(kc, job, kc->queues[job->queue].stream, &e);
        if (rc) {
            job->status = rc;
            snprintf(job->msg, sizeof(job->msg), "%s", e.msg);
        }
        push_locked(kc, job);
    }
}

void kcuda_wait_idle_locked(kcuda *kc)
{
    while (kc->in_flight)
        pthread_cond_wait(&kc->idle, &kc->lock);
}

void kcuda_exclusive_begin(kcuda *kc)
{
    pthread_mutex_lock(&kc->lock);
    while (kc->exclusive || kc->in_flight)
        pthread_cond_wait(&kc->idle, &kc->lock);
    kc->exclusive++;
    pthread_mutex_unlock(&kc->lock);
}

void kcuda_exclusive_end(kcuda *kc)
{
    pthread_mutex_lock(&kc->lock);
    if (!--kc->exclusive) {
        kcuda_flush_frees_locked(kc);
        flush_deferred_locked(kc);
    }
    pthread_cond_broadcast(&kc->idle);
    pthread_mutex_unlock(&kc->lock);
}

void kcuda_mark_broken_locked(kcuda *kc, CUresult r, const char *what)
{
    const char *name = "CUDA_ERROR_?";
    cuGetErrorName(r, &name);
    if (!kc->broken) {
        kc->broken = 1;
        snprintf(kc->broken_msg, sizeof(kc->broken_msg), "%s in %.120s", name, what);
    }
}

void kcuda_mark_broken(kcuda *kc, CUresult r, const char *what)
{
    pthread_mutex_lock(&kc->lock);
    kcuda_mark_broken_locked(kc, r, what);
    pthread_mutex_unlock(&kc->lock);
}

void kcuda_complete(kcuda *kc, kcuda_job *job, int counted, int status, const char *msg,
                    uint64_t start_ns, uint64_t end_ns)
{
    if (counted) {
        pthread_mutex_lock(&kc->lock);
        if (!--kc->in_flight)
            pthread_cond_broadcast(&kc->idle);
        pthread_mutex_unlock(&kc->lock);
    }
    kbackend_completion c = {.status = status, .msg = msg ? msg : "", .start_ns = start_ns,
                          .end_ns = end_ns};
    job->done(job->user, &c);
    kcuda_job_free(kc, job);
}

static const char *job_what(const kcuda_job *job)
{
    switch (job->kind) {
    case JOB_LAUNCH: return job->fn->name;
    case JOB_H2D: return "copy to device";
    case JOB_D2H: return "copy to host";
    case JOB_D2D: return "copy on device";
    case JOB_MEMSET: return "memset";
    default: return "profile";
    }
}

/* The status and message of a job whose end event reported r. */
static int failure_of(kcuda *kc, const kcuda_job *job, CUresult r, char *msg, size_t msglen)
{
    const char *name = "CUDA_ERROR_?", *text = "";
    cuGetErrorName(r, &name);
    cuGetErrorString(r, &text);
    int sticky = kcuda_error_is_sticky(r);
    snprintf(msg, msglen, "%s: %s (%s)%s", job_what(job), name, text,
             sticky ? "; context lost (this or another kernel in flight failed)" : "");
    if (sticky)
        kcuda_mark_broken(kc, r, job_what(job));
    return sticky ? KBACKEND_ELOST : kcuda_error_code(r);
}

/* When job could start: issued, and the lane's previous job seen ended. */
static uint64_t could_start_ns(const kcuda_queue *q, const kcuda_job *job)
{
    return job->issued_ns > q->last_end_ns ? job->issued_ns : q->last_end_ns;
}

/* When job ran: from its timing events, or else by the host's clock from when it could
 * start to now, when its end was seen. */
static void job_times(kcuda_queue *q, const kcuda_job *job, CUresult r, uint64_t *start,
                      uint64_t *end)
{
    *end = kcuda_now();
    *start = could_start_ns(q, job);
    float ms;
    if (job->start && job->issued && r == CUDA_SUCCESS &&
        cuEventElapsedTime(&ms, job->start, job->end) == CUDA_SUCCESS && ms >= 0) {
        uint64_t d = (uint64_t)((double)ms * 1e6);
        *start = *end > d ? *end - d : 0;
        if (*start < job->issued_ns)    /* it cannot have started before it was issued */
            *start = job->issued_ns;
    }
    if (*start > *end)
        *start = *end;
    q->last_end_ns = *end;
}

/* Polls ev until it is ready or until, a query a microsecond (not back to back: each takes
 * the driver's locks, which the threads launching the next kernels need too);
 * CUDA_ERROR_NOT_READY if it is still running then. */
static CUresult poll_event(CUevent ev, uint64_t until)
{
    for (;;) {
        CUresult r = cuEventQuery(ev);
        uint64_t now = kcuda_now();
        if (r != CUDA_ERROR_NOT_READY || now >= until)
            return r;
        for (uint64_t next = now + 1000; kcuda_now() < next;) {
        }
    }
}

/* Waits for ev: polls it for up to spin_us first where fewer than max_spinners threads
 * poll already, then sleeps in the driver. A sleeping wait is woken by the GPU's interrupt,
 * about 11 us after the end on the H100: a tenant that waits for each short kernel would
 * pay that on every launch, where a native program's synchronize spins. */
static CUresult wait_event(kcuda *kc, CUevent ev)
{
    CUresult r = CUDA_ERROR_NOT_READY;
    if (kc->cfg.spin_us) {
        if (__atomic_add_fetch(&kc->spinners, 1, __ATOMIC_RELAXED) <= kc->cfg.max_spinners)
            r = poll_event(ev, kcuda_now() + (uint64_t)kc->cfg.spin_us * 1000);
        __atomic_sub_fetch(&kc->spinners, 1, __ATOMIC_RELAXED);
    }
    return r == CUDA_ERROR_NOT_READY ? cuEventSynchronize(ev) : r;
}

/* With kc->lock held: records the end event that ends job and the launches queued behind
 * it on its lane without one of their own, of its tenant, at most shared_end_max in all, on
 * the last of them (the stream is in issue order, and issues take the lock). */
static CUresult share_end_locked(kcuda *kc, kcuda_queue *q, kcuda_job *job, CUevent *ev,
                                 uint64_t *until)
{
    kcuda_job *last = job;
    unsigned n = 1;
    for (kcuda_job *j = q->head; j && n < kc->cfg.shared_end_max; j = j->next, n++) {
        if (j->kind != JOB_LAUNCH || !j->shared_end || j->domain != job->domain)
            break;
        last = j;
    }
    *ev = last->end;
    *until = last->seq;
    CUresult r = cuEventRecord(last->end, q->stream);
    if (r == CUDA_SUCCESS)
        last->shared_end = 0;    /* its own event now, and the one the others wait for */
    return r;
}

/* Waits for the end of an issued job: its own event, or one it shares with the launches
 * issued after it (recorded now, if no earlier wait did). *waited: 0 when an earlier job's
 * wait already saw it end. */
static CUresult wait_end(kcuda *kc, kcuda_queue *q, kcuda_job *job, int *waited)
{
    *waited = 0;
    if (job->seq <= q->ended_until)
        return q->ended_r;
    *waited = 1;
    if (!job->shared_end)
        return wait_event(kc, job->end);
    CUevent ev;
    uint64_t until;
    pthread_mutex_lock(&kc->lock);
    CUresult r = share_end_locked(kc, q, job, &ev, &until);
    if (r != CUDA_SUCCESS && kcuda_error_is_sticky(r))
        kcuda_mark_broken_locked(kc, r, "cuEventRecord");
    pthread_mutex_unlock(&kc->lock);
    if (r == CUDA_SUCCESS)
        r = wait_event(kc, ev);
    q->ended_until = until;
    q->ended_r = r;
    return r;
}

/* The launch ran past its tenant's time limit (limit_ns: the one in force at its end):
 * the watchdog saw it, or it ended between the deadline and the watchdog's wake-up. */
static int timed_out(const kcuda_job *job, int fired, uint64_t limit_ns, uint64_t start,
                     uint64_t end)
{
    return job->kind == JOB_LAUNCH && (fired || (limit_ns && end - start > limit_ns));
}

/* Waits for one job of queue q on the device and completes it. */
static void finish_job(kcuda *kc, kcuda_queue *q, kcuda_job *job)
{
    if (!job->issued && !job->status)
        kcuda_issue_copy(kc, job, q->stream);
    if (job->issued)
        kcuda_watchdog_arm(kc, q->index, job, could_start_ns(q, job));
    int waited = 0;
    CUresult r = job->issued ? wait_end(kc, q, job, &waited) : CUDA_SUCCESS;
    uint64_t limit_ns = job->time_limit_ns;
    int fired = kcuda_watchdog_disarm(kc, q->index, &limit_ns);
    uint64_t start, end;
    job_times(q, job, r, &start, &end);
    if (waited && job->kind == JOB_LAUNCH && r == CUDA_SUCCESS)
        __atomic_store_n((uint64_t *)&job->fn->recent_ns, end - start, __ATOMIC_RELAXED);
    if (r == CUDA_SUCCESS)
        kcuda_timeline_note(kc, job);
    char msg[2 * MSG_LEN];
    int status = job->status;
    if (status) {
        snprintf(msg, sizeof(msg), "%s", job->msg);
    } else if (r != CUDA_SUCCESS) {
        status = failure_of(kc, job, r, msg, sizeof(msg));
    } else if (timed_out(job, fired, limit_ns, start, end)) {
        status = KBACKEND_ELAUNCH; /* the server answers CUDA's launch timeout */
        snprintf(msg, sizeof(msg), "%s: ran past its tenant's time limit of %.3g s per launch",
                 job->fn->name, (double)limit_ns / 1e9);
    }
    if (job->kind == JOB_LAUNCH)
        status = kcuda_control_settle(kc, job, fired, status, msg, sizeof(msg));
    kcuda_complete(kc, job, 1, status, status ? msg : "", start, end);
}

/* With kc->lock held: polls (lock released) for q's next job up to idle_spin_us, so that
 * a launch right after the last one finds its thread awake; one of the max_spinners threads
 * that may poll at once (with those polling a job's end), so that many idle lanes do not
 * keep as many cores busy. */
static void spin_for_job(kcuda *kc, kcuda_queue *q)
{
    if (!kc->cfg.idle_spin_us || q->head || kc->stopping)
        return;
    pthread_mutex_unlock(&kc->lock);
    if (__atomic_add_fetch(&kc->spinners, 1, __ATOMIC_RELAXED) <= kc->cfg.max_spinners) {
        uint64_t until = kcuda_now() + (uint64_t)kc->cfg.idle_spin_us * 1000;
        while (!__atomic_load_n(&q->head, __ATOMIC_ACQUIRE) &&
               !__atomic_load_n(&kc->stopping, __ATOMIC_RELAXED) && kcuda_now() < until) {
        }
    }
    __atomic_sub_fetch(&kc->spinners, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&kc->lock);
}

static void *queue_main(void *arg)
{
    kcuda_queue *q = arg;
    kcuda *kc = q->kc;
    cuCtxSetCurrent(kc->ctx);
    pthread_mutex_lock(&kc->lock);
    for (;;) {
        spin_for_job(kc, q);
        while (!q->head && !kc->stopping)
            pthread_cond_wait(&q->wake, &kc->lock);
        kcuda_job *job = q->head;
        if (!job)
            break;
        q->head = job->next;
        if (!q->head)
            q->tail = NULL;
        pthread_mutex_unlock(&kc->lock);
        if (job->kind == JOB_PROFILE)
            kcuda_run_profile(kc, job);
        else
            finish_job(kc, q, job);
        pthread_mutex_lock(&kc->lock);
    }
    pthread_mutex_unlock(&kc->lock);
    return NULL;
}

int kcuda_queues_start(kcuda *kc, kbackend_error *err)
{
    kc->n_queues = kc->cfg.lanes + QC_COUNT;
    kc->queues = calloc(kc->n_queues, sizeof(*kc->queues));
    if (!kc->queues)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    for (unsigned i = 0; i < kc->n_queues; i++) {
        kc->queues[i].kc = kc;
        kc->queues[i].index = i;
        pthread_cond_init(&kc->queues[i].wake, NULL);
    }
    for (unsigned i = 0; i < kc->n_queues; i++) {
        kcuda_queue *q = &kc->queues[i];
        CUresult r = cuStreamCreate(&q->stream, CU_STREAM_NON_BLOCKING);
        if (r != CUDA_SUCCESS)
            return kcuda_cu_fail(err, r, "cuStreamCreate");
        if (pthread_create(&q->thread, NULL, queue_main, q))
            return kbackend_fail(err, KBACKEND_ENOMEM, "cannot start a completion thread");
        q->started = 1;
    }
    return kcuda_watchdog_start(kc, err);
}

void kcuda_queues_stop(kcuda *kc)
{
    if (!kc->queues)
        return;
    pthread_mutex_lock(&kc->lock);
    kc->stopping = 1;
    for (unsigned i = 0; i < kc->n_queues; i++)
        pthread_cond_broadcast(&kc->queues[i].wake);
    kcuda_job *left = kc->deferred_head;    /* none when the caller kept the contract */
    kc->deferred_head = kc->deferred_tail = NULL;
    pthread_mutex_unlock(&kc->lock);
    for (unsigned i = 0; i < kc->n_queues; i++) {
        kcuda_queue *q = &kc->queues[i];
        if (q->started)
            pthread_join(q->thread, NULL);
        if (q->stream)
            cuStreamDestroy(q->stream);
        pthread_cond_destroy(&q->wake);
    }
    kcuda_watchdog_stop(kc);    /* after the lanes' threads, which arm it */
    while (left) {
        kcuda_job *next = left->next;
        kcuda_job_free(kc, left);
        left = next;
    }
    free(kc->queues);
    kc->queues = NULL;
}
