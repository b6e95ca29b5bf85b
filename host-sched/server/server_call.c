/* Requests served off the event loop (issue 15): a call into the scheduler that may take
 * long in the backend (a tenant's allocation: cuMemCreate, cuMemMap, the window's sink,
 * zeroing, perhaps a wait for the tenant's own kernels; a free once its work has drained:
 * the unmap, the sink mapped back; a module load: parsing, fencing and slicing its PTX,
 * the driver's JIT; a shared-memory region's pinning and unpinning, server_region.c;
 * VMM's creations, mappings, unmappings and releases, server_vmm.c) runs on a worker
 * thread of the server's, so that the one event-loop thread goes on serving every other
 * connection.
 *
 * A connection has at most one call in flight (ks_conn.call); its later requests wait, in
 * its input buffer and its socket, until the call is answered, since requests of one
 * connection are processed in order (docs/PROTOCOL.md). A free whose drain ends while a
 * call of its connection is in flight waits for that one's answer (ks_conn.call_waiting),
 * then runs as the connection's call. The workers are started as calls
 * need them, KS_CALL_THREADS at most: more calls at once (of as many connections) wait for
 * one in a queue. A finished call goes back to the event loop through the server's
 * eventfd and is answered there (ks_calls_finish, from ks_completions).
 *
 * A connection closed meanwhile: a call not yet started is not run, nor are those waiting
 * for it; one running finishes (the scheduler answers KSCHED_ESTATE to an allocation of a
 * tenant removed meanwhile and frees its memory with the tenant; a free goes on, the
 * allocation marked as being freed so that the tenant's removal leaves it to the call),
 * and the conn is not freed before it is back (ks_conn_reap). kserver_free joins the
 * workers. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "server_internal.h"

static void ring(struct ks_server *s)
{
    uint64_t one = 1;

    if (write(s->wake_fd, &one, sizeof(one)) < 0) {
        /* The counter is saturated: the loop is awake anyway. */
    }
}

static void *worker(void *arg)
{
    struct ks_server *s = arg;

    pthread_mutex_lock(&s->call_lock);
    for (;;) {
        while (!s->call_head && !s->call_stop) {
            s->call_idle++;
            pthread_cond_wait(&s->call_cond, &s->call_lock);
            s->call_idle--;
        }
        struct ks_call *k = s->call_head;
        if (!k)
            break; /* stopping, and nothing queued */
        if (!(s->call_head = k->next))
            s->call_tail = NULL;
        bool cancelled = k->cancelled;
        k->started = true;
        pthread_mutex_unlock(&s->call_lock);
        if (cancelled)
            k->rc = KSCHED_ESTATE;
        else
            k->run(k);
        pthread_mutex_lock(&s->call_lock);
        k->next = s->call_done;
        s->call_done = k;
        pthread_mutex_unlock(&s->call_lock);
        ring(s);
        pthread_mutex_lock(&s->call_lock);
    }
    pthread_mutex_unlock(&s->call_lock);
    return NULL;
}

/* One more worker when every one is busy and the bound allows; with call_lock held.
 * Signals stay with the daemon's own threads. */
static void grow(struct ks_server *s)
{
    unsigned queued = 0;
    sigset_t all, old;

    for (const struct ks_call *k = s->call_head; k; k = k->next)
        queued++;
    if (queued <= s->call_idle || s->n_call_threads >= KS_CALL_THREADS)
        return;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&s->call_threads[s->n_call_threads], NULL, worker, s) == 0)
        s->n_call_threads++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void answer(struct ks_conn *c, struct ks_call *k);

/* k queued for a worker, in order; false when no worker can be had (or the server is
 * stopping): the caller runs it itself. */
static bool enqueue(struct ks_server *s, struct ks_call *k)
{
    bool queued = false;

    pthread_mutex_lock(&s->call_lock);
    if (!s->call_stop) {
        k->next = NULL;
        if (s->call_tail)
            s->call_tail->next = k;
        else
            s->call_head = k;
        s->call_tail = k;
        grow(s);
        /* no worker at all (none could be started): served here after all */
        if (s->n_call_threads) {
            pthread_cond_signal(&s->call_cond);
            queued = true;
        } else {
            s->call_head = s->call_tail = NULL;
        }
    }
    pthread_mutex_unlock(&s->call_lock);
    return queued;
}

/* c's call k to a worker; run here when none can be had. */
static void submit(struct ks_conn *c, struct ks_call *k)
{
    c->call = k;
    if (!enqueue(c->srv, k)) {
        k->run(k);
        answer(c, k);
    }
}

/* A call of no connection is back: its finish, and it is gone. */
static void detached_done(struct ks_server *s, struct ks_call *k)
{
    k->finish(k);
    free(k);
    s->calls_detached--;
}

void ks_call_detached(struct ks_server *s, ks_call_fn *run, ks_call_fn *finish, void *data)
{
    struct ks_call *k = calloc(1, sizeof(*k));
    struct ks_call here = {.run = run, .finish = finish, .data = data, .sched = s->cfg.sched};

    if (!k) { /* no memory for the call: the work is done here, on the loop */
        run(&here);
        finish(&here);
        return;
    }
    *k = here;
    s->calls_detached++;
    if (!enqueue(s, k)) {
        k->run(k);
        detached_done(s, k);
    }
}

/* c's call k is back: its answer, then the next call of c that waited for it (c closed:
 * those are not run, and their finish, seeing c closing, answers nothing and frees their
 * data). */
static void answer(struct ks_conn *c, struct ks_call *k)
{
    c->call = NULL;
    c->context = k->context;
    k->finish(k);
    free(k);
    while ((k = c->call_waiting)) {
        c->call_waiting = k->next;
        if (!c->closing) {
            submit(c, k);
            return;
        }
        k->rc = KSCHED_ESTATE;
        k->finish(k);
        free(k);
    }
}

static bool start(struct ks_conn *c, uint64_t id, uint16_t opcode, ks_call_fn *run,
                  ks_call_fn *finish, uint64_t arg, void *data)
{
    struct ks_call *k = calloc(1, sizeof(*k));

    if (!k) {
        ks_reply_cuda(c, opcode, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return false;
    }
    k->run = run;
    k->finish = finish;
    k->id = id;
    k->arg = arg;
    k->data = data;
    k->conn = c;
    k->context = c->context;
    k->sched = c->srv->cfg.sched;
    k->tenant = c->tenant;
    if (c->call) {
        /* one call of c at once: this one (a free whose drain ended meanwhile) waits */
        struct ks_call **pk = &c->call_waiting;
        while (*pk)
            pk = &(*pk)->next;
        k->next = NULL;
        *pk = k;
        return true;
    }
    submit(c, k);
    return true;
}

bool ks_call_start(struct ks_conn *c, uint64_t id, uint16_t opcode, ks_call_fn *run,
                   ks_call_fn *finish, uint64_t arg)
{
    return start(c, id, opcode, run, finish, arg, NULL);
}

bool ks_call_start_data(struct ks_conn *c, uint64_t id, uint16_t opcode, ks_call_fn *run,
                        ks_call_fn *finish, void *data)
{
    return start(c, id, opcode, run, finish, 0, data);
}

void ks_call_cancel(struct ks_conn *c)
{
    struct ks_server *s = c->srv;

    if (!c->call)
        return;
    pthread_mutex_lock(&s->call_lock);
    if (!c->call->started)
        c->call->cancelled = true;
    pthread_mutex_unlock(&s->call_lock);
}

void ks_calls_finish(struct ks_server *s)
{
    struct ks_call *list;

    pthread_mutex_lock(&s->call_lock);
    list = s->call_done;
    s->call_done = NULL;
    pthread_mutex_unlock(&s->call_lock);
    while (list) {
        struct ks_call *k = list;
        struct ks_conn *c = k->conn;
        list = k->next;
        if (!c) {
            detached_done(s, k);
            continue;
        }
        answer(c, k);
        if (!c->closing && !c->call) {
            /* its requests that came meanwhile, in order */
            ks_conn_process(c);
            ks_conn_update_events(c);
        }
    }
}

void ks_calls_stop(struct ks_server *s)
{
    pthread_mutex_lock(&s->call_lock);
    s->call_stop = true;
    pthread_cond_broadcast(&s->call_cond);
    pthread_mutex_unlock(&s->call_lock);
    for (unsigned i = 0; i < s->n_call_threads; i++)
        pthread_join(s->call_threads[i], NULL);
    s->n_call_threads = 0;
}
