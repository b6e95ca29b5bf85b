/* The reaper: frees the device memory of removed tenants on a thread of its own.
 *
 * A tenant that leaves (a connection closed, a VM gone) may hold GiBs of allocations; on
 * the cuda backend each free unmaps its memory and maps the window's sink back, which takes
 * milliseconds and more per GiB. sched_tenants_reap runs where the scheduler is driven,
 * with its lock held: freeing there held up every other tenant's decisions, launches and
 * completions for as long. Where the backend lets frees run beside its other ops
 * (kbackend_device_info.mem_unlocked), the reap releases the tenant's streams, modules and
 * the like at once and hands the tenant to this thread, which frees the memory without the
 * lock and then gives the tenant's windows back (with it: no other tenant's memory goes
 * into a window before the frees in it are done). ksched_free stops the thread once the
 * tenants handed to it are done. */
#include <stdlib.h>

#include "sched_internal.h"

static void *reaper_main(void *arg)
{
    ksched *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->reap_head && !s->reaper_stop)
            pthread_cond_wait(&s->reap_cond, &s->lock);
        sched_tenant *t = s->reap_head;
        if (!t)
            break;                  /* stopped, and nothing left */
        s->reap_head = t->next;
        s->reaping = 1;
        pthread_mutex_unlock(&s->lock);
        sched_tenant_free_memory(s, t);
        pthread_mutex_lock(&s->lock);
        sched_domains_free(s, t);
        free(t);
        s->reaping = 0;
        if (!s->reap_head)
            pthread_cond_broadcast(&s->reap_done);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int sched_reaper_start(ksched *s)
{
    if (!s->dev.mem_unlocked)
        return 0;                   /* frees need the lock: they stay in the reap */
    pthread_cond_init(&s->reap_cond, NULL);
    pthread_cond_init(&s->reap_done, NULL);
    if (pthread_create(&s->reaper, NULL, reaper_main, s)) {
        pthread_cond_destroy(&s->reap_cond);
        pthread_cond_destroy(&s->reap_done);
        return -1;
    }
    s->reaper_running = 1;
    return 0;
}

int sched_reaper_take(ksched *s, sched_tenant *t)
{
    if (!s->reaper_running || s->reaper_stop)
        return 0;
    sched_tenant_release_objects(s, t);
    t->next = NULL;
    sched_tenant **pp = &s->reap_head;
    while (*pp)
        pp = &(*pp)->next;
    *pp = t;
    pthread_cond_signal(&s->reap_cond);
    return 1;
}

void sched_reaper_stop(ksched *s)
{
    if (!s->reaper_running)
        return;
    pthread_mutex_lock(&s->lock);
    s->reaper_stop = 1;
    pthread_cond_signal(&s->reap_cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->reaper, NULL);
    pthread_cond_destroy(&s->reap_cond);
    pthread_cond_destroy(&s->reap_done);
    s->reaper_running = 0;
}

void ksched_wait_reaped(ksched *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    while (s->reaper_running && (s->reap_head || s->reaping))
        pthread_cond_wait(&s->reap_done, &s->lock);
    pthread_mutex_unlock(&s->lock);
}
