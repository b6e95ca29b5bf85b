/* Stream-ordered pipelining (host-sched/sched/sched_stream.c): a launch that follows a
 * launch whose slices are all handed out is queued behind it in the same lane, so the
 * device goes from one kernel of a stream to the next without a round trip through the
 * scheduler, while the stream's order holds. On the sim a launch into an idle lane starts
 * launch_latency_ns after it is issued and one queued behind another stream_gap_ns after
 * its predecessor ends: the gaps between a stream's kernels say which happened. */
#include "sched_test.h"

#define N 24u
#define GRID 2640u
#define BLOCK 256u

static tenv *env(ksched_policy p)
{
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    return tenv_new(&c, NULL);
}

/* Tenant "a" submits N launches of comp on its stream 0, each recorded in r (and its op id
 * in ids when not NULL); the tenant's id. */
static uint32_t submit_one_stream(tenv *t, rec *r, uint64_t *ids)
{
    uint32_t a = tenv_tenant(t, "a"), fn;
    const char *entries[] = {"comp"};
    tenv_functions(t, a, entries, 1, 1, &fn);
    memset(r, 0, N * sizeof(*r));
    for (unsigned i = 0; i < N; i++) {
        ksched_op op = launch_op(fn, GRID, 1, BLOCK);
        uint64_t id = tenv_submit(t, a, 0, &op, rec_done, &r[i]);
        if (ids)
            ids[i] = id;
    }
    return a;
}

/* Launches of one stream end in order, each starting after its predecessor ended and,
 * pipelined, no later than the sim's stream gap after it. */
static void assert_back_to_back(const rec *r, unsigned n, uint64_t max_gap)
{
    for (unsigned i = 0; i < n; i++) {
        g_assert_true(r[i].seen);
        g_assert_cmpint(r[i].r.status, ==, 0);
        if (!i)
            continue;
        g_assert_cmpuint(r[i].order, >, r[i - 1].order);
        g_assert_cmpuint(r[i].r.start_ns, >=, r[i - 1].r.end_ns);
        g_assert_cmpuint(r[i].r.start_ns - r[i - 1].r.end_ns, <=, max_gap);
    }
}

/* One tenant, one stream, whole kernels (fifo) and slices (kernelet): no round trip. */
static void test_one_stream(gconstpointer data)
{
    ksched_policy p = GPOINTER_TO_INT(data);
    tenv *t = env(p);
    rec r[N];
    uint64_t ids[N];
    submit_one_stream(t, r, ids);
    tenv_run(t);
    ksim_config sc;
    ksim_config_default(&sc);
    /* the first launch waits for its profile under kernelet; from the second on, each is
     * queued behind the one before */
    assert_back_to_back(r + 1, N - 1, sc.stream_gap_ns);
    g_assert_cmpuint(sc.stream_gap_ns, <, sc.launch_latency_ns);
    for (unsigned i = 0; i < N; i++)
        assert_blocks_once(t, ids[i], GRID);
    tenv_free(t);
}

/* The most slices one lane held at once, from the trace. */
typedef struct {
    unsigned out[8], most;
} lane_depth;

static void on_lane_trace(void *user, const ksched_trace *t)
{
    lane_depth *d = user;
    if (t->lane >= 8)
        return;
    if (t->kind == KSCHED_TRACE_SLICE && ++d->out[t->lane] > d->most)
        d->most = d->out[t->lane];
    else if (t->kind == KSCHED_TRACE_SLICE_DONE)
        d->out[t->lane]--;
}

/* The most launches of one stream a lane held at once under policy p, with whole_depth. */
static unsigned most_in_lane(ksched_policy p, unsigned whole_depth)
{
    lane_depth d = {0};
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    c.whole_depth = whole_depth;
    c.trace = on_lane_trace;
    c.trace_user = &d;
    tenv *t = tenv_new(&c, NULL);
    rec r[N];
    submit_one_stream(t, r, NULL);
    tenv_run(t);
    for (unsigned i = 0; i < N; i++)
        g_assert_cmpint(r[i].r.status, ==, 0);
    tenv_free(t);
    return d.most;
}

/* Kernels that go out whole queue whole_depth deep in a lane (pipeline_depth when 0), under
 * fifo and under kernelet alike; slices keep pipeline_depth (libcuda-two-tenants-cosched
 * pairs sliced lone kernels). */
static void test_whole_depth(void)
{
    ksched_config c;
    ksched_config_default(&c);
    g_assert_cmpuint(most_in_lane(KSCHED_FIFO, 0), ==, c.pipeline_depth);
    g_assert_cmpuint(most_in_lane(KSCHED_FIFO, 7), ==, 7);
    /* kernelet's lone kernel of this stream goes out whole (no slices to share) */
    g_assert_cmpuint(most_in_lane(KSCHED_KERNELET, 7), ==, 7);
    c.whole_depth = 65;
    ksched *s;
    ksched_err e = {0};
    g_assert_cmpint(ksched_new(&s, NULL, &c, NULL, &e), !=, 0);
    g_assert_nonnull(strstr(e.msg, "whole_depth"));
}

/* Two tenants of complementary kernels, each a stream of launches: pairs still form, and
 * each stream's order holds. */
static void test_two_tenants_pair(void)
{
    tenv *t = env(KSCHED_KERNELET);
    uint32_t a = tenv_tenant(t, "a"), b = tenv_tenant(t, "b"), fa, fb;
    const char *ea[] = {"comp"}, *eb[] = {"mem"};
    tenv_functions(t, a, ea, 1, 1, &fa);
    tenv_functions(t, b, eb, 1, 1, &fb);
    rec ra[N], rb[N];
    memset(ra, 0, sizeof ra);
    memset(rb, 0, sizeof rb);
    for (unsigned i = 0; i < N; i++) {
        ksched_op x = launch_op(fa, GRID, 1, BLOCK), y = launch_op(fb, GRID, 1, BLOCK);
        tenv_submit(t, a, 0, &x, rec_done, &ra[i]);
        tenv_submit(t, b, 0, &y, rec_done, &rb[i]);
    }
    tenv_run(t);
    assert_back_to_back(ra, N, UINT64_MAX);
    assert_back_to_back(rb, N, UINT64_MAX);
    ksched_stats st;
    ksched_get_stats(t->s, &st);
    g_assert_cmpuint(st.coschedules, >, 0);
    tenv_free(t);
}

/* A copy between two launches is not pipelined: it starts after the first launch ended
 * and the second launch after the copy ended. */
static void test_copy_waits(void)
{
    tenv *t = env(KSCHED_FIFO);
    uint32_t a = tenv_tenant(t, "a"), fn;
    const char *entries[] = {"mem"};
    tenv_functions(t, a, entries, 1, 1, &fn);
    kbackend_devptr buf;
    g_assert_cmpint(ksched_mem_alloc(t->s, a, 4096, &buf, NULL), ==, 0);
    static unsigned char host[4096];
    rec r[3];
    memset(r, 0, sizeof r);
    ksched_op l1 = launch_op(fn, GRID, 1, BLOCK), l2 = l1;
    ksched_op c = {.kind = KSCHED_OP_COPY_D2H};
    c.u.d2h.dst = host;
    c.u.d2h.src = buf;
    c.u.d2h.bytes = sizeof host;
    tenv_submit(t, a, 0, &l1, rec_done, &r[0]);
    tenv_submit(t, a, 0, &c, rec_done, &r[1]);
    tenv_submit(t, a, 0, &l2, rec_done, &r[2]);
    tenv_run(t);
    assert_back_to_back(r, 3, UINT64_MAX);
    tenv_free(t);
}

/* A tenant removed while a launch is pipelined behind a running one: both end (the
 * running one's slices in flight complete), nothing queued after them runs, and the
 * scheduler stays consistent (the sanitizer build checks the memory). */
static void test_remove_while_pipelined(void)
{
    tenv *t = env(KSCHED_FIFO);
    rec r[N];
    uint32_t a = submit_one_stream(t, r, NULL);
    /* on until the second launch is handed out behind the first (pipelined) */
    ksched_err e = {0};
    ksched_stats st;
    ksched_get_stats(t->s, &st);
    for (uint64_t until = 5000; st.slices < 2 && until <= 10000000; until += 5000) {
        g_assert_cmpint(ksched_run_until(t->s, until, &e), ==, 0);
        ksched_get_stats(t->s, &st);
    }
    g_assert_cmpint(ksched_tenant_remove(t->s, a, &e), ==, 0);
    tenv_run(t);
    unsigned canceled = 0;
    for (unsigned i = 0; i < N; i++) {
        g_assert_true(r[i].seen);
        g_assert_true(r[i].r.status == 0 || r[i].r.status == KSCHED_ECANCELED);
        canceled += r[i].r.status == KSCHED_ECANCELED;
    }
    /* at most the running launch and the one pipelined behind it had started */
    g_assert_cmpuint(canceled, >=, N - 2);
    ksched_get_stats(t->s, &st);
    g_assert_cmpuint(st.slices, >=, 2);     /* the pipelined launch was queued */
    tenv_free(t);
}

/* Profiles are taken only where a policy pairs kernels: fifo and base run whole kernels
 * and never pay a new kernel's profile (a second each on the GPU); kernelet profiles the
 * class once. Every launch still runs its blocks once. */
static void test_profiles_for_pairing(gconstpointer data)
{
    ksched_policy p = GPOINTER_TO_INT(data);
    tenv *t = env(p);
    uint32_t a = tenv_tenant(t, "a"), fn;
    const char *entries[] = {"comp"};
    tenv_functions(t, a, entries, 1, 1, &fn);
    rec r[4];
    uint64_t ids[4];
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < 4; i++) {
        ksched_op op = launch_op(fn, GRID, 1, BLOCK);
        ids[i] = tenv_submit(t, a, 0, &op, rec_done, &r[i]);
    }
    tenv_run(t);
    ksched_stats st;
    ksched_get_stats(t->s, &st);
    if (p == KSCHED_KERNELET)
        g_assert_cmpuint(st.profiles, ==, 1);
    else
        g_assert_cmpuint(st.profiles, ==, 0);
    for (unsigned i = 0; i < 4; i++)
        assert_blocks_once(t, ids[i], GRID);
    tenv_free(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_data_func("/pipeline/one-stream/fifo", GINT_TO_POINTER(KSCHED_FIFO),
                         test_one_stream);
    g_test_add_data_func("/pipeline/one-stream/kernelet", GINT_TO_POINTER(KSCHED_KERNELET),
                         test_one_stream);
    g_test_add_data_func("/pipeline/profiles/fifo", GINT_TO_POINTER(KSCHED_FIFO),
                         test_profiles_for_pairing);
    g_test_add_data_func("/pipeline/profiles/base", GINT_TO_POINTER(KSCHED_BASE),
                         test_profiles_for_pairing);
    g_test_add_data_func("/pipeline/profiles/kernelet", GINT_TO_POINTER(KSCHED_KERNELET),
                         test_profiles_for_pairing);
    g_test_add_func("/pipeline/two-tenants-pair", test_two_tenants_pair);
    g_test_add_func("/pipeline/whole-depth", test_whole_depth);
    g_test_add_func("/pipeline/copy-waits", test_copy_waits);
    g_test_add_func("/pipeline/remove-while-pipelined", test_remove_while_pipelined);
    return g_test_run();
}
