/*
 * virtio-kernelet's worker thread (see kernelet-link.h): it makes every call to kerneletd
 * that waits for an answer, so that QEMU's main loop never does. Jobs go in a queue; the
 * thread runs them in order and puts each on the done queue, and a bottom half runs their
 * completions on the main loop. The administration connection is the thread's alone.
 *
 * The thread touches nothing of the device but the job it runs and the fields the link
 * fixed before starting it (path, name, staging_fd).
 */
#include "qemu/osdep.h"

#include "qemu/atomic.h"
#include "qemu/main-loop.h"
#include "virtio-kernelet.h"

#define STAGING_BYTES ((uint64_t)KERNELET_LINK_SLOTS * KERNELET_MAX_BULK)

/* The device is going away: a connection attempt gives up between calls, so that unplug
 * waits for at most the call in progress. */
static bool stopping(KerneletWorker *w)
{
    return qatomic_read(&w->stop);
}

/* HELLO as the VM's tenant, then the staging region and each shared RAM block attached. */
static bool handshake(KerneletWorker *w, KerneletJob *j)
{
    if (!kernelet_hello(j->fd, w->name, KERNELET_HELLO_VM, j->hello, sizeof(j->hello))) {
        return false;
    }
    j->staging_region = stopping(w) ? 0 : kernelet_attach(j->fd, w->staging_fd, STAGING_BYTES);
    if (!j->staging_region) {
        return false;
    }
    for (unsigned i = 0; i < j->n_ram && !stopping(w); i++) {
        j->ram[i].region = kernelet_attach(j->fd, j->ram_fd[i], j->ram_size[i]);
    }
    return !stopping(w);
}

/* A new tenant connection and administration connection, and the policy sent. */
static void run_connect(KerneletWorker *w, KerneletJob *j)
{
    const struct kernelet_session *sess;

    if (w->admin_fd >= 0) {
        close(w->admin_fd);
        w->admin_fd = -1;
    }
    j->status = -1;
    j->fd = kernelet_connect(w->path);
    j->reached = j->fd >= 0;
    if (j->fd >= 0 && !handshake(w, j)) {
        close(j->fd);
        j->fd = -1;
    }
    if (j->fd < 0) {
        return;
    }
    w->admin_fd = stopping(w) ? -1 : kernelet_admin_open(w->path, w->name);
    j->admin = w->admin_fd >= 0;
    sess = (const struct kernelet_session *)(j->hello + sizeof(struct kernelet_info));
    if (j->admin && !stopping(w)) {
        j->status = kernelet_admin_set(w->admin_fd, sess->tenant_id, &j->policy);
    }
}

static void run(KerneletWorker *w, KerneletJob *j)
{
    switch (j->kind) {
    case KERNELET_JOB_CONNECT:
        run_connect(w, j);
        break;
    case KERNELET_JOB_POLICY:
        j->status = w->admin_fd < 0 ? -1
                    : kernelet_admin_set(w->admin_fd, j->tenant_id, &j->policy);
        break;
    case KERNELET_JOB_STATS:
        j->ok = w->admin_fd >= 0 && kernelet_admin_row(w->admin_fd, j->tenant_id, &j->row);
        break;
    }
}

static void *worker_main(void *opaque)
{
    KerneletWorker *w = opaque;

    qemu_mutex_lock(&w->lock);
    while (!w->stop) {
        KerneletJob *j = QSIMPLEQ_FIRST(&w->todo);

        if (!j) {
            qemu_cond_wait(&w->wake, &w->lock);
            continue;
        }
        QSIMPLEQ_REMOVE_HEAD(&w->todo, next);
        qemu_mutex_unlock(&w->lock);
        run(w, j);
        qemu_mutex_lock(&w->lock);
        QSIMPLEQ_INSERT_TAIL(&w->done, j, next);
        qemu_bh_schedule(w->bh);
    }
    qemu_mutex_unlock(&w->lock);
    return NULL;
}

/* On the main loop: the completions of the jobs done. */
static void worker_bh(void *opaque)
{
    KerneletWorker *w = opaque;

    for (;;) {
        KerneletJob *j;

        qemu_mutex_lock(&w->lock);
        j = QSIMPLEQ_FIRST(&w->done);
        if (j) {
            QSIMPLEQ_REMOVE_HEAD(&w->done, next);
        }
        qemu_mutex_unlock(&w->lock);
        if (!j) {
            return;
        }
        w->done_fn(w->s, j);
    }
}

void kernelet_worker_start(KerneletWorker *w, VirtIOKernelet *s, KerneletJobDone *done)
{
    w->s = s;
    w->done_fn = done;
    w->admin_fd = -1;
    QSIMPLEQ_INIT(&w->todo);
    QSIMPLEQ_INIT(&w->done);
    qemu_mutex_init(&w->lock);
    qemu_cond_init(&w->wake);
    w->bh = qemu_bh_new(worker_bh, w);
    qemu_thread_create(&w->thread, "virtio-kernelet", worker_main, w, QEMU_THREAD_JOINABLE);
    w->started = true;
}

void kernelet_worker_submit(KerneletWorker *w, KerneletJob *job)
{
    qemu_mutex_lock(&w->lock);
    QSIMPLEQ_INSERT_TAIL(&w->todo, job, next);
    qemu_cond_signal(&w->wake);
    qemu_mutex_unlock(&w->lock);
}

static void free_jobs(KerneletJobQueue *q)
{
    KerneletJob *j;

    while ((j = QSIMPLEQ_FIRST(q)) != NULL) {
        QSIMPLEQ_REMOVE_HEAD(q, next);
        if (j->kind == KERNELET_JOB_CONNECT && j->fd >= 0) {
            close(j->fd);
        }
        g_free(j);
    }
}

void kernelet_worker_stop(KerneletWorker *w)
{
    if (!w->started) {
        return;
    }
    qemu_mutex_lock(&w->lock);
    qatomic_set(&w->stop, true);
    qemu_cond_signal(&w->wake);
    qemu_mutex_unlock(&w->lock);
    qemu_thread_join(&w->thread);   /* at most the call it makes: each times out */
    qemu_bh_delete(w->bh);
    free_jobs(&w->todo);
    free_jobs(&w->done);
    if (w->admin_fd >= 0) {
        close(w->admin_fd);
    }
    qemu_cond_destroy(&w->wake);
    qemu_mutex_destroy(&w->lock);
    w->started = false;
}
