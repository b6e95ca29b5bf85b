/* Stream order under every policy: random sequences of launches, memsets, copies to the
 * host, host functions, event records and cross-stream waits. Checked: each operation
 * starts after its predecessor in the stream ended and completes after it; host functions
 * see exactly their predecessors done; every copy reads the value the stream order (and
 * the waits) allows; every block of every launch ran once. */
#include "sched_test.h"

#define STREAMS 6
#define STEPS 14
#define BUF 4096
#define MAX_OPS (STREAMS * STEPS)

enum { OP_MEMSET, OP_LAUNCH, OP_SNAPSHOT, OP_HOST, OP_RECORD, OP_WAIT_SNAPSHOT, OP_KINDS };

typedef struct step {
    int kind;
    int stream;
    rec r;
    /* snapshots: copy of a buffer and the range of its history the value may come from */
    int buf;
    unsigned lo, hi;
    guint8 *snap;
    /* launches */
    uint64_t op, blocks;
    int cross;          /* reads another stream's buffer after a wait */
    /* waits: the record waited for */
    struct step *record;
} step;

#define STEPS_MAX (MAX_OPS * 2 + STREAMS)

typedef struct host_check {
    step **stream_steps;    /* the steps of its stream, in order */
    const unsigned *count;  /* how many there are (in the end) */
    unsigned idx;
    int ok;
} host_check;

typedef struct world {
    tenv *t;
    uint32_t tenant, fns[3], stream[STREAMS], event[STREAMS];
    kbackend_devptr buf[STREAMS];
    int history[STREAMS][MAX_OPS + 1];   /* values the buffer took, in stream order */
    unsigned n_hist[STREAMS];
    step *last_record[STREAMS];
    step steps[STEPS_MAX];
    unsigned n_steps;
    step *per_stream[STREAMS][STEPS_MAX];
    unsigned n_per[STREAMS];
    host_check checks[MAX_OPS];
    unsigned n_checks;
} world;

static void host_fn(void *user)
{
    host_check *h = user;
    h->ok = 1;
    for (unsigned i = 0; i < *h->count; i++) {
        int done = h->stream_steps[i]->r.seen;
        if ((i < h->idx && !done) || (i > h->idx && done))
            h->ok = 0;
    }
    /* the host op itself completes after this function returns */
    if (h->stream_steps[h->idx]->r.seen)
        h->ok = 0;
}

static step *new_step(world *w, int kind, int s)
{
    step *x = &w->steps[w->n_steps++];
    memset(x, 0, sizeof(*x));
    x->kind = kind;
    x->stream = s;
    w->per_stream[s][w->n_per[s]++] = x;
    return x;
}

static void submit_memset(world *w, int s, GRand *r)
{
    step *x = new_step(w, OP_MEMSET, s);
    int v = g_rand_int_range(r, 1, 256);
    ksched_op op = {.kind = KSCHED_OP_MEMSET};
    op.u.memset.dst = w->buf[s];
    op.u.memset.value = (uint8_t)v;
    op.u.memset.bytes = BUF;
    tenv_submit(w->t, w->tenant, w->stream[s], &op, rec_done, &x->r);
    w->history[s][w->n_hist[s]++] = v;
}

static void submit_snapshot(world *w, int s, int b, unsigned lo, step *x)
{
    x->buf = b;
    x->lo = lo;
    x->hi = w->n_hist[b] - 1;
    x->snap = g_malloc0(BUF);
    ksched_op op = {.kind = KSCHED_OP_COPY_D2H};
    op.u.d2h.dst = x->snap;
    op.u.d2h.src = w->buf[b];
    op.u.d2h.bytes = BUF;
    tenv_submit(w->t, w->tenant, w->stream[s], &op, rec_done, &x->r);
}

static void submit_step(world *w, int s, GRand *r)
{
    int kind = g_rand_int_range(r, 0, OP_KINDS);
    step *x;
    ksched_op op;
    switch (kind) {
    case OP_MEMSET:
        submit_memset(w, s, r);
        break;
    case OP_LAUNCH: {
        x = new_step(w, kind, s);
        unsigned gx = (unsigned)g_rand_int_range(r, 1, 3000);
        op = launch_op(w->fns[g_rand_int_range(r, 0, 3)], gx, 1, 256);
        x->blocks = gx;
        x->op = tenv_submit(w->t, w->tenant, w->stream[s], &op, rec_done, &x->r);
        break;
    }
    case OP_SNAPSHOT:   /* exactly the latest value of its own buffer */
        x = new_step(w, kind, s);
        submit_snapshot(w, s, s, w->n_hist[s] - 1, x);
        break;
    case OP_HOST: {
        x = new_step(w, kind, s);
        host_check *h = &w->checks[w->n_checks++];
        *h = (host_check){.stream_steps = w->per_stream[s], .count = &w->n_per[s],
                          .idx = w->n_per[s] - 1};
        op = (ksched_op){.kind = KSCHED_OP_HOST};
        op.u.host.fn = host_fn;
        op.u.host.user = h;
        tenv_submit(w->t, w->tenant, w->stream[s], &op, rec_done, &x->r);
        break;
    }
    case OP_RECORD:
        x = new_step(w, kind, s);
        x->lo = w->n_hist[s] - 1;   /* the buffer's value at the record */
        op = (ksched_op){.kind = KSCHED_OP_EVENT_RECORD};
        op.u.event = w->event[s];
        tenv_submit(w->t, w->tenant, w->stream[s], &op, rec_done, &x->r);
        w->last_record[s] = x;
        break;
    default: {          /* wait for another stream's latest record, then read its buffer */
        int o = (s + g_rand_int_range(r, 1, STREAMS)) % STREAMS;
        step *rec_step = w->last_record[o];
        if (!rec_step) {
            submit_memset(w, s, r);
            break;
        }
        x = new_step(w, OP_WAIT_SNAPSHOT, s);
        x->record = rec_step;
        op = (ksched_op){.kind = KSCHED_OP_EVENT_WAIT};
        op.u.event = w->event[o];
        tenv_submit(w->t, w->tenant, w->stream[s], &op, rec_done, &x->r);
        step *snap = new_step(w, OP_SNAPSHOT, s);
        snap->cross = 1;    /* later memsets of stream o may come before it, too */
        submit_snapshot(w, s, o, rec_step->lo, snap);
        break;
    }
    }
}

static void check_world(world *w)
{
    for (int s = 0; s < STREAMS; s++)
        for (unsigned i = 0; i < w->n_per[s]; i++) {
            step *x = w->per_stream[s][i];
            g_assert_true(x->r.seen);
            g_assert_cmpint(x->r.r.status, ==, 0);
            if (i) {
                step *p = w->per_stream[s][i - 1];
                g_assert_cmpuint(x->r.r.start_ns, >=, p->r.r.end_ns);
                g_assert_cmpuint(x->r.order, >, p->r.order);
            }
            if (x->kind == OP_LAUNCH)
                assert_blocks_once(w->t, x->op, x->blocks);
            if (x->kind == OP_WAIT_SNAPSHOT) {
                g_assert_cmpuint(x->r.order, >, x->record->r.order);
                g_assert_cmpuint(x->r.r.end_ns, >=, x->record->r.r.end_ns);
            }
            if (x->kind != OP_SNAPSHOT)
                continue;
            int ok = 0;
            if (x->cross)
                x->hi = w->n_hist[x->buf] - 1;
            for (unsigned h = x->lo; h <= x->hi && !ok; h++)
                ok = x->snap[0] == w->history[x->buf][h];
            if (!ok)
                g_error("stream %d step %u read %d, not one of the allowed values", s, i,
                        x->snap[0]);
            for (unsigned b = 1; b < BUF; b++)
                g_assert_cmpuint(x->snap[b], ==, x->snap[0]);
            g_free(x->snap);
        }
    for (unsigned i = 0; i < w->n_checks; i++)
        g_assert_true(w->checks[i].ok);
}

static void run_world(ksched_policy p, guint32 seed)
{
    world *w = g_new0(world, 1);
    GRand *r = g_rand_new_with_seed(seed);
    w->t = tenv_policy(p);
    w->tenant = tenv_tenant(w->t, "streams");
    const char *names[3] = {"comp", "mem", "mid"};
    tenv_functions(w->t, w->tenant, names, 3, 1, w->fns);
    for (int s = 0; s < STREAMS; s++) {
        w->stream[s] = s ? tenv_stream(w->t, w->tenant) : 0;
        g_assert_cmpint(ksched_event_create(w->t->s, w->tenant, &w->event[s], NULL), ==, 0);
        g_assert_cmpint(ksched_mem_alloc(w->t->s, w->tenant, BUF, &w->buf[s], NULL), ==, 0);
        submit_memset(w, s, r);
    }
    for (int i = 0; i < STEPS; i++)
        for (int s = 0; s < STREAMS; s++)
            submit_step(w, g_rand_int_range(r, 0, STREAMS), r);
    tenv_run(w->t);
    check_world(w);
    ksched_stats st;
    ksched_get_stats(w->t->s, &st);
    g_assert_cmpuint(st.ops_pending, ==, 0);
    tenv_free(w->t);
    g_rand_free(r);
    g_free(w);
}

static void test_stream_order(gconstpointer data)
{
    ksched_policy p = (ksched_policy)GPOINTER_TO_INT(data);
    for (guint32 seed = 1; seed <= 6; seed++)
        run_world(p, seed * 7919 + (guint32)p);
}

/* Stream priorities under every policy: a tenant queues five kernels on five default
 * streams (all pending at once), then one on a stream of priority 3; another tenant queued one kernel on a default stream
 * before that. The high-priority kernel ends before the tenant's last default-stream kernel
 * (it jumps its own tenant's queue) and does not hold back the other tenant's older kernel
 * beyond what its own tenant's turn allows. With no priority set it ends last of its tenant's
 * (so the check can fail). Bad priorities are refused. */
static unsigned high_priority_rank(ksched_policy p, unsigned prio, rec *other)
{
    tenv *t = tenv_policy(p);
    uint32_t a = tenv_tenant(t, "a"), b = tenv_tenant(t, "b"), fa, fb;
    const char *names[1] = {"comp"};
    tenv_functions(t, a, names, 1, 1, &fa);
    tenv_functions(t, b, names, 1, 1, &fb);
    uint32_t high = tenv_stream(t, a), sb = tenv_stream(t, b);
    g_assert_cmpint(ksched_stream_set_priority(t->s, a, high, prio, NULL), ==, 0);
    rec r[6];
    memset(r, 0, sizeof(r));
    ksched_op lb = launch_op(fb, 4 * 132, 1, 256);
    tenv_submit(t, b, sb, &lb, rec_done, other);
    for (unsigned i = 0; i < 5; i++) {
        ksched_op l = launch_op(fa, 4 * 132, 1, 256);
        tenv_submit(t, a, tenv_stream(t, a), &l, rec_done, &r[i]);
    }
    ksched_op h = launch_op(fa, 4 * 132, 1, 256);
    tenv_submit(t, a, high, &h, rec_done, &r[5]);
    tenv_run(t);
    unsigned later = 0;       /* the tenant's default-stream kernels that ended after it */
    for (unsigned i = 0; i < 5; i++) {
        g_assert_true(r[i].seen && r[i].r.status == 0);
        later += r[i].order > r[5].order;
    }
    g_assert_true(r[5].seen && r[5].r.status == 0 && other->seen);
    ksched_err e;
    g_assert_cmpint(ksched_stream_set_priority(t->s, a, high, KSCHED_STREAM_PRIORITY_MAX + 1, &e),
                    ==, KSCHED_EINVAL);
    g_assert_cmpint(ksched_stream_set_priority(t->s, a, 0, 1, &e), ==, KSCHED_ENOTFOUND);
    g_assert_cmpint(ksched_stream_set_priority(t->s, b, high + 100, 1, &e), ==, KSCHED_ENOTFOUND);
    tenv_free(t);
    return later;
}

static void test_stream_priority(gconstpointer data)
{
    ksched_policy p = (ksched_policy)GPOINTER_TO_INT(data);
    rec other = {0};
    unsigned later = high_priority_rank(p, 3, &other);
    g_test_message("%s: %u of the tenant's five default-stream kernels ended after its "
                   "high-priority one", ksched_policy_name(p), later);
    g_assert_cmpuint(later, >=, 3);
    rec other0 = {0};
    g_assert_cmpuint(high_priority_rank(p, 0, &other0), <=, 1);
}

/* A wait on an event never recorded does not wait; one recorded later than the wait was
 * submitted does not count (CUDA semantics: the latest record at submission). */
static void test_event_semantics(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    uint32_t tn = tenv_tenant(t, "ev"), ev, s1 = tenv_stream(t, tn);
    g_assert_cmpint(ksched_event_create(t->s, tn, &ev, NULL), ==, 0);
    int done = 0;
    g_assert_cmpint(ksched_event_query(t->s, tn, ev, &done, NULL, NULL), ==, 0);
    g_assert_true(done);
    rec a = {0}, b = {0}, c = {0};
    ksched_op wait = {.kind = KSCHED_OP_EVENT_WAIT, .u.event = ev};
    tenv_submit(t, tn, 0, &wait, rec_done, &a);
    uint32_t fn;
    const char *names[1] = {"mem"};
    tenv_functions(t, tn, names, 1, 1, &fn);
    ksched_op l = launch_op(fn, 5000, 1, 256);
    tenv_submit(t, tn, s1, &l, rec_done, &b);
    ksched_op record = {.kind = KSCHED_OP_EVENT_RECORD, .u.event = ev};
    tenv_submit(t, tn, s1, &record, rec_done, &c);
    g_assert_cmpint(ksched_event_query(t->s, tn, ev, &done, NULL, NULL), ==, 0);
    g_assert_false(done);
    tenv_run(t);
    g_assert_cmpuint(a.order, <, b.order);      /* the wait did not wait for the launch */
    uint64_t when;
    g_assert_cmpint(ksched_event_query(t->s, tn, ev, &done, &when, NULL), ==, 0);
    g_assert_true(done);
    g_assert_cmpuint(when, ==, c.r.end_ns);
    g_assert_cmpuint(when, >=, b.r.end_ns);
    ksched_op bad = {.kind = KSCHED_OP_EVENT_WAIT, .u.event = 999};
    ksched_err e;
    g_assert_cmpint(ksched_submit(t->s, tn, 0, &bad, NULL, NULL, NULL, &e), ==,
                    KSCHED_ENOTFOUND);
    g_assert_cmpint(ksched_event_destroy(t->s, tn, ev, NULL), ==, 0);
    g_assert_cmpint(ksched_event_destroy(t->s, tn, ev, &e), ==, KSCHED_ENOTFOUND);
    tenv_free(t);
}

/* The elapsed time between a tenant's two timing events around its kernel, where the
 * kernel waited for the device behind another tenant's long one: timing events say how
 * long the kernel ran (the start event stamped when the kernel started on the device, as a
 * GPU stamps an event it reaches just before the kernel), events without timing when the
 * stream reached them. */
static uint64_t elapsed_around_queued_kernel(ksched_policy p, int timing, uint64_t *ran_ns,
                                             uint64_t *waited_ns)
{
    tenv *t = tenv_policy(p);
    uint32_t busy = tenv_tenant(t, "busy"), tn = tenv_tenant(t, "timed");
    uint32_t bs = tenv_stream(t, busy), s1 = tenv_stream(t, tn), fb, fn, ev[2];
    const char *names[1] = {"comp"};
    tenv_functions(t, busy, names, 1, 1, &fb);
    tenv_functions(t, tn, names, 1, 1, &fn);
    ksched_op long_op = launch_op(fb, 132 * 64, 1, 256);
    rec lr = {0}, a = {0}, k = {0}, b = {0};
    tenv_submit(t, busy, bs, &long_op, rec_done, &lr);
    for (int i = 0; i < 2; i++)
        g_assert_cmpint(ksched_event_create(t->s, tn, &ev[i], NULL), ==, 0);
    ksched_op start = {.kind = KSCHED_OP_EVENT_RECORD, .u.event = ev[0], .timing = timing};
    ksched_op l = launch_op(fn, 132, 1, 256);
    ksched_op end = {.kind = KSCHED_OP_EVENT_RECORD, .u.event = ev[1], .timing = timing};
    tenv_submit(t, tn, s1, &start, rec_done, &a);
    tenv_submit(t, tn, s1, &l, rec_done, &k);
    tenv_submit(t, tn, s1, &end, rec_done, &b);
    tenv_run(t);
    uint64_t t0, t1;
    int done0, done1;
    g_assert_cmpint(ksched_event_query(t->s, tn, ev[0], &done0, &t0, NULL), ==, 0);
    g_assert_cmpint(ksched_event_query(t->s, tn, ev[1], &done1, &t1, NULL), ==, 0);
    g_assert_true(done0 && done1 && k.seen && !k.r.status);
    *ran_ns = k.r.end_ns - k.r.start_ns;
    *waited_ns = k.r.start_ns - a.r.end_ns;
    tenv_free(t);
    g_assert_cmpuint(t1, >=, t0);
    return t1 - t0;
}

static void test_event_restamp(gconstpointer data)
{
    ksched_policy p = (ksched_policy)GPOINTER_TO_INT(data);
    uint64_t ran, waited;
    uint64_t timed = elapsed_around_queued_kernel(p, 1, &ran, &waited);
    g_test_message("%s: kernel ran %llu ns after waiting %llu; timing events %llu ns apart",
                   ksched_policy_name(p), (unsigned long long)ran,
                   (unsigned long long)waited, (unsigned long long)timed);
    g_assert_cmpuint(waited, >, 0);     /* the setting: the kernel did not start at once */
    if (p == KSCHED_FIFO)
        g_assert_cmpuint(waited, >, ran);   /* fifo held it back behind the long one */
    g_assert_cmpuint(timed, ==, ran);
    uint64_t untimed = elapsed_around_queued_kernel(p, 0, &ran, &waited);
    g_assert_cmpuint(untimed, ==, ran + waited);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (int p = 0; p < (int)ksched_policy_count(); p++) {
        char path[64];
        snprintf(path, sizeof(path), "/streams/order/%s", ksched_policy_name((ksched_policy)p));
        g_test_add_data_func(path, GINT_TO_POINTER(p), test_stream_order);
    }
    g_test_add_func("/streams/event-semantics", test_event_semantics);
    for (unsigned p = 0; p < ksched_policy_count(); p++) {
        char path[64];
        snprintf(path, sizeof(path), "/streams/event-restamp/%s", ksched_policy_name((ksched_policy)p));
        g_test_add_data_func(path, GINT_TO_POINTER(p), test_event_restamp);
    }
    for (unsigned p = 0; p < ksched_policy_count(); p++) {
        char path[64];
        snprintf(path, sizeof(path), "/streams/priority/%s", ksched_policy_name((ksched_policy)p));
        g_test_add_data_func(path, GINT_TO_POINTER(p), test_stream_priority);
    }
    return g_test_run();
}
