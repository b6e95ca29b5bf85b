/* Worker threads shared by all launches of a device.
 *
 * A launch is a job: its work function claims blocks from an atomic counter until none
 * are left. The launching thread runs work itself and idle pool threads join in; a job
 * closes when the launching thread's work returns (no blocks left to claim), and
 * emu_pool_run waits for the pool threads still inside it. Concurrent launches from
 * several threads queue their jobs; a pool thread helps the oldest open job.
 */
#include "emu_internal.h"

#include <stdlib.h>
#include <string.h>

static void *pool_thread(void *arg)
{
    emu_pool *pool = arg;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        emu_job *job = pool->queue;
        while (job && job->closed)
            job = job->next;
        if (!job) {
            if (pool->shutdown)
                break;
            pthread_cond_wait(&pool->wake, &pool->lock);
            continue;
        }
        job->active++;
        unsigned participant = atomic_fetch_add(&job->participants, 1);
        pthread_mutex_unlock(&pool->lock);
        job->work(job, participant);
        pthread_mutex_lock(&pool->lock);
        /* Whatever was left to claim is gone once work returns. */
        job->closed = true;
        job->active--;
        pthread_cond_broadcast(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

int emu_pool_start(emu_pool *pool, unsigned n_threads, kemu_error *err)
{
    memset(pool, 0, sizeof *pool);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    if (n_threads == 0)
        return 0;
    pool->threads = calloc(n_threads, sizeof *pool->threads);
    if (!pool->threads) {
        emu_pool_stop(pool);
        return emu_error_set(err, KEMU_ENOMEM, "out of memory for %u worker threads", n_threads);
    }
    for (unsigned i = 0; i < n_threads; i++) {
        if (pthread_create(&pool->threads[i], NULL, pool_thread, pool) != 0) {
            emu_pool_stop(pool);
            return emu_error_set(err, KEMU_ENOMEM, "cannot start worker thread %u", i);
        }
        pool->n_threads++;
    }
    return 0;
}

void emu_pool_stop(emu_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->shutdown = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (unsigned i = 0; i < pool->n_threads; i++)
        pthread_join(pool->threads[i], NULL);
    free(pool->threads);
    pool->threads = NULL;
    pool->n_threads = 0;
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
}

void emu_pool_run(emu_pool *pool, emu_job *job)
{
    job->active = 0;
    job->closed = false;
    job->next = NULL;
    atomic_store(&job->participants, 1);  /* the caller is participant 0 */
    if (pool->n_threads > 0) {
        pthread_mutex_lock(&pool->lock);
        emu_job **tail = &pool->queue;
        while (*tail)
            tail = &(*tail)->next;
        *tail = job;
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->lock);
    }
    job->work(job, 0);
    if (pool->n_threads == 0)
        return;
    pthread_mutex_lock(&pool->lock);
    job->closed = true;
    while (job->active > 0)
        pthread_cond_wait(&pool->done, &pool->lock);
    for (emu_job **p = &pool->queue; *p; p = &(*p)->next) {
        if (*p == job) {
            *p = job->next;
            break;
        }
    }
    pthread_mutex_unlock(&pool->lock);
}
