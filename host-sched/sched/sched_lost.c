/* A lost device (KBACKEND_ELOST, executor.h): the scheduler fails every tenant's work and
 * refuses new work; the daemon recreates scheduler and backend (docs/SCHEDULER.md). */
#include <stdio.h>

#include "sched_internal.h"

void sched_note_backend(ksched *s, int code, const char *msg)
{
    if (code != KBACKEND_ELOST || s->lost)
        return;
    s->lost = 1;
    snprintf(s->lost_msg, sizeof(s->lost_msg), "%s",
             msg && *msg ? msg : kbackend_strerror(KBACKEND_ELOST));
    s->dirty = 1;
}

int sched_backend_fail_s(ksched *s, ksched_err *err, const kbackend_error *e, const char *what)
{
    sched_note_backend(s, e->code, e->msg);
    return sched_backend_fail(err, e, what);
}

int sched_refuse_if_lost(ksched *s, ksched_err *err)
{
    return s->lost ? ksched_fail(err, KSCHED_ELOST, "device lost (%.140s): recreate the "
                                 "scheduler", s->lost_msg)
                   : 0;
}

void sched_fail_pending_lost(ksched *s)
{
    char msg[MSG_LEN];
    snprintf(msg, sizeof(msg), "device lost: %.140s", s->lost_msg);
    for (unsigned i = 0; i < s->n_classes; i++) {
        sched_class *c = s->classes[i];
        while (c->head) {
            sched_kernel *k = c->head;
            if (!k->op->status)
                k->op->backend_status = KBACKEND_ELOST;
            sched_kernel_cancel(s, k, KSCHED_EBACKEND, msg);
        }
    }
}

int ksched_lost(ksched *s, char *msg, size_t msglen)
{
    if (!s)
        return 0;
    pthread_mutex_lock(&s->lock);
    int lost = s->lost;
    if (lost && msg && msglen)
        snprintf(msg, msglen, "%s", s->lost_msg);
    pthread_mutex_unlock(&s->lock);
    return lost;
}
