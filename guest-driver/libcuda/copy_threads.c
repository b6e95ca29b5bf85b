/* The copy pool: a few threads that help the calling thread memcpy a large staged piece
 * out of its slot. One memcpy of tens of MiB into pageable memory runs at 5-8 GB/s on a
 * GPU host while the daemon fills the slots at ~50 GB/s, so a device-to-host copy was
 * bound by that single thread (issue 13).
 *
 * KERNELET_COPY_THREADS (1..16, default min(4, online CPUs / 2), at least 1) is the
 * number of parts, the calling thread included. The pool is made on the first large copy
 * and serves one copy at a time: another thread that finds it busy copies alone. The
 * caller claims unclaimed parts itself, so a copy never waits for a worker to wake up
 * and completes even with none. Any failure leaves the library copying on one thread. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "libcuda_internal.h"

#define MAX_PARTS 16
#define MIN_SPLIT ((size_t)1 << 20) /* below this, the hand-offs cost more than they save */

enum pool_state { POOL_UNMADE, POOL_READY, POOL_OFF };

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    enum pool_state state;
    unsigned parts;          /* KERNELET_COPY_THREADS */
    unsigned n_workers;      /* threads made (to join) */
    pthread_t worker[MAX_PARTS - 1];
    bool busy, stop;
    /* The copy in progress: parts [next, parts) are unclaimed, `unfinished` not done. */
    kcu_copy_part_fn *fn;
    void *arg;
    unsigned next, unfinished;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static unsigned parts_wanted(void)
{
    const char *env = getenv("KERNELET_COPY_THREADS");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN), n = env ? strtol(env, NULL, 10) : 0;

    if (n >= 1 && n <= MAX_PARTS)
        return (unsigned)n;
    n = cpus / 2 < 4 ? cpus / 2 : 4;
    return n >= 1 ? (unsigned)n : 1;
}

/* With the lock held: claims and runs unclaimed parts of the current copy. */
static void run_parts(void)
{
    while (pool.fn && pool.next < pool.parts) {
        unsigned part = pool.next++, parts = pool.parts;
        kcu_copy_part_fn *fn = pool.fn;
        void *arg = pool.arg;
        pthread_mutex_unlock(&pool.lock);
        fn(arg, part, parts);
        pthread_mutex_lock(&pool.lock);
        if (--pool.unfinished == 0)
            pthread_cond_signal(&pool.done);
    }
}

static void *worker_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        run_parts();
        if (pool.stop)
            break;
        pthread_cond_wait(&pool.work, &pool.lock);
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

/* After fork() the child has none of the pool's threads, and the lock may have been held
 * by one: start again from nothing (made anew on the child's first large copy). */
static void pool_forget_in_child(void)
{
    pool.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    pool.work = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    pool.done = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    pool.state = POOL_UNMADE;
    pool.n_workers = 0;
    pool.busy = pool.stop = false;
    pool.fn = NULL;
    pool.next = pool.unfinished = 0;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, pool_forget_in_child);
}

/* With the lock held: makes the workers, with every signal blocked (a program's signals
 * go to its own threads). One that cannot be made turns the pool off. */
static void pool_make(void)
{
    sigset_t all, old;

    pool.parts = parts_wanted();
    pool.state = pool.parts > 1 ? POOL_READY : POOL_OFF;
    if (pool.state == POOL_OFF)
        return;
    pthread_once(&atfork_once, register_atfork);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i + 1 < pool.parts; i++) {
        if (pthread_create(&pool.worker[i], NULL, worker_main, NULL) != 0) {
            kcu_log("copy pool: cannot start a thread; copying on one");
            pool.state = POOL_OFF;
            pool.stop = true; /* those made leave; the destructor joins them */
            pthread_cond_broadcast(&pool.work);
            break;
        }
        pool.n_workers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

bool kcu_copy_split(kcu_copy_part_fn *fn, void *arg, size_t bytes)
{
    if (bytes < MIN_SPLIT)
        return false;
    pthread_mutex_lock(&pool.lock);
    if (pool.state == POOL_UNMADE)
        pool_make();
    if (pool.state != POOL_READY || pool.busy || pool.stop) {
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    pool.busy = true;
    pool.fn = fn;
    pool.arg = arg;
    pool.next = 0;
    pool.unfinished = pool.parts;
    pthread_cond_broadcast(&pool.work);
    run_parts();
    while (pool.unfinished > 0)
        pthread_cond_wait(&pool.done, &pool.lock);
    pool.fn = NULL;
    pool.busy = false;
    pthread_mutex_unlock(&pool.lock);
    return true;
}

/* When the library is unloaded (dlclose) or the process exits: no thread may be left in
 * code about to be unmapped. Workers finish any part they hold, then leave; a copy still
 * in progress on another thread finishes its unclaimed parts itself. */
__attribute__((destructor)) static void pool_stop(void)
{
    unsigned n;

    pthread_mutex_lock(&pool.lock);
    pool.stop = true;
    pool.state = POOL_OFF;
    n = pool.n_workers;
    pool.n_workers = 0;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.lock);
    for (unsigned i = 0; i < n; i++)
        pthread_join(pool.worker[i], NULL);
}
