/* A gate for tests whose backend calls must wait until the test lets them go (the sim with
 * its memory calls replaced: tests/sched/test_mem_unlocked.c, tests/proto/
 * test_server_alloc.c). A call that the test gates passes it in the backend, counted in
 * `entered`; while the gate is armed and closed it waits there, at most timeout_us (a
 * scheduler or server that waited for it on the wrong thread would otherwise never let
 * the test go on: the test then sees timed_out). The lock is also the test's own for the
 * rest of its fake backend's state. */
#ifndef KERNELET_TEST_GATE_H
#define KERNELET_TEST_GATE_H

#include <glib.h>
#include <stdbool.h>

struct test_gate {
    GMutex lock;
    GCond cond;
    int armed, open, timed_out;
    unsigned entered;           /* calls that passed the gate while armed */
};

/* In the backend, with lock held and the gate armed: waits until it opens (or timeout_us). */
static inline void tgate_pass(struct test_gate *t, int64_t timeout_us)
{
    t->entered++;
    g_cond_broadcast(&t->cond);
    int64_t until = g_get_monotonic_time() + timeout_us;
    while (!t->open)
        if (!g_cond_wait_until(&t->cond, &t->lock, until)) {
            t->timed_out = 1;
            break;
        }
}

/* Closed from now on; nothing entered yet. */
static inline void tgate_arm(struct test_gate *t)
{
    g_mutex_lock(&t->lock);
    t->armed = 1;
    t->open = 0;
    t->entered = 0;
    g_mutex_unlock(&t->lock);
}

/* Waits until n calls have entered (a test failure after 10 s). */
static inline void tgate_wait_entered(struct test_gate *t, unsigned n)
{
    int64_t until = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    g_mutex_lock(&t->lock);
    while (t->entered < n)
        if (!g_cond_wait_until(&t->cond, &t->lock, until))
            g_error("%u gated call(s) did not reach the backend", n);
    g_mutex_unlock(&t->lock);
}

/* Lets those waiting go, and disarms it. */
static inline void tgate_open(struct test_gate *t)
{
    g_mutex_lock(&t->lock);
    t->open = 1;
    t->armed = 0;
    g_cond_broadcast(&t->cond);
    g_mutex_unlock(&t->lock);
}

/* A thread's body (arg: the gate): opens it 200 ms from now, so that a test can stop the
 * server while a call waits at the gate and see the stop wait for the call. */
static inline void *tgate_open_later(void *arg)
{
    g_usleep(200000);
    tgate_open(arg);
    return NULL;
}

static inline bool tgate_timed_out(struct test_gate *t)
{
    g_mutex_lock(&t->lock);
    bool out = t->timed_out;
    g_mutex_unlock(&t->lock);
    return out;
}

#endif
