/* See emu_watchdog.h. The thread sleeps on a condition variable with a CLOCK_MONOTONIC
 * deadline, so that changes of the wall clock neither fire nor delay it. */
#include "emu_watchdog.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct emu_watchdog {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t deadline_ns;       /* 0: nothing to watch (no launch, or no limit) */
    volatile int *flag;         /* the armed launch's stop flag */
    bool armed;                 /* a launch runs */
    uint32_t domain;            /* its tenant's */
    uint64_t start_ns, limit_ns;
    bool fired;
    bool stop;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Called with the lock held: the armed launch has run past its deadline. */
static void fire(struct emu_watchdog *w)
{
    __atomic_store_n(w->flag, 1, __ATOMIC_RELAXED);
    w->fired = true;
    w->deadline_ns = 0;
}

static void *watch(void *arg)
{
    struct emu_watchdog *w = arg;

    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        if (!w->deadline_ns) {
            pthread_cond_wait(&w->cond, &w->lock);
        } else if (mono_ns() >= w->deadline_ns) {
            fire(w);
        } else {
            struct timespec ts = {.tv_sec = (time_t)(w->deadline_ns / 1000000000u),
                                  .tv_nsec = (long)(w->deadline_ns % 1000000000u)};
            pthread_cond_timedwait(&w->cond, &w->lock, &ts);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int emu_watchdog_new(struct emu_watchdog **out)
{
    struct emu_watchdog *w = calloc(1, sizeof(*w));
    pthread_condattr_t attr;

    if (!w)
        return -1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&w->thread, NULL, watch, w) != 0) {
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

/* With the lock held: the armed launch's deadline under its limit, and the thread told. */
static void set_deadline(struct emu_watchdog *w)
{
    w->deadline_ns = w->limit_ns ? w->start_ns + w->limit_ns : 0;
    if (w->deadline_ns)
        pthread_cond_signal(&w->cond);
}

void emu_watchdog_arm(struct emu_watchdog *w, volatile int *flag, uint32_t domain,
                      uint64_t limit_ns)
{
    pthread_mutex_lock(&w->lock);
    w->flag = flag;
    w->fired = false;
    w->armed = true;
    w->domain = domain;
    w->start_ns = mono_ns();
    w->limit_ns = limit_ns;
    set_deadline(w);
    pthread_mutex_unlock(&w->lock);
}

void emu_watchdog_relimit(struct emu_watchdog *w, uint32_t domain, uint64_t limit_ns)
{
    pthread_mutex_lock(&w->lock);
    if (w->armed && !w->fired && w->domain == domain) {
        w->limit_ns = limit_ns;
        set_deadline(w);
    }
    pthread_mutex_unlock(&w->lock);
}

bool emu_watchdog_disarm(struct emu_watchdog *w, uint64_t *limit_ns)
{
    bool fired;

    pthread_mutex_lock(&w->lock);
    fired = w->fired;
    if (limit_ns)
        *limit_ns = w->limit_ns;
    w->fired = false;
    w->armed = false;
    w->deadline_ns = 0;
    w->flag = NULL;
    pthread_mutex_unlock(&w->lock);
    return fired;
}

void emu_watchdog_free(struct emu_watchdog *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
