/* The aging bound of the kernelet policy: a kernel that pairs badly with everything
 * pending (both its pairs pruned) waits, without the bound, for as long as the better
 * pair has work, however long that is; with the bound it finishes within about K times
 * its time alone, however long the pair goes on. The bound also acts in the middle of a
 * plan, and it is a configuration option with a range. */
#include <math.h>

#include "sched_test.h"

#define GRID 2048u     /* blocks of the stream's kernels */
#define BAD_GRID 16896u /* blocks of the kernel that pairs badly */
#define BLOCK 256u
#define STREAMS 4u     /* streams of comp and of mem */

/* "bad" is pruned beside comp (PUR 0.5 against 0.85) and beside mem (MUR 0.65 against
 * 0.7); comp and mem pair well. */
static void add_bad(tenv *t)
{
    kbackend_profile bad = test_profile(0.05, 300, 0.5, 0.65);
    g_assert_cmpint(ksim_add_kernel(t->sim, "bad", &bad, NULL), ==, 0);
}

static tenv *env(double aging)
{
    ksched_config c;
    ksched_config_default(&c);
    c.policy = KSCHED_KERNELET;
    c.aging = aging;
    tenv *t = tenv_new(&c, NULL);
    add_bad(t);
    return t;
}

/* The time alone of a launch of fn's entry with grid blocks, on a fresh sim. */
static double time_alone(const char *entry, unsigned grid)
{
    tenv *t = env(0);
    uint32_t a = tenv_tenant(t, "a"), fn;
    const char *entries[] = {entry};
    tenv_functions(t, a, entries, 1, 1, &fn);
    ksched_op op = launch_op(fn, grid, 1, BLOCK);
    rec r = {0};
    tenv_submit(t, a, 0, &op, rec_done, &r);
    tenv_run(t);
    g_assert_cmpint(r.r.status, ==, 0);
    tenv_free(t);
    return (double)(r.r.end_ns - r.r.start_ns);
}

typedef struct outcome {
    rec bad;                /* the kernel that pairs badly */
    uint64_t pair_end;      /* when the first of the two streams ended */
    uint64_t aged;
} outcome;

/* n kernels each of comp and mem, back to back on STREAMS streams per kernel (a kernel
 * starts when its predecessor on its stream ends; with several streams others are pending
 * while one drains, so both classes are always there and none waits long), and at time 0
 * the bad kernel on a stream of its own. */
static void run_streams(double aging, unsigned n, outcome *out)
{
    tenv *t = env(aging);
    uint32_t a = tenv_tenant(t, "a"), fn[3];
    const char *entries[] = {"bad", "comp", "mem"};
    tenv_functions(t, a, entries, 3, 1, fn);
    memset(out, 0, sizeof(*out));
    uint32_t streams[2 * STREAMS];
    for (unsigned i = 0; i < 2 * STREAMS; i++)
        streams[i] = tenv_stream(t, a);
    rec *stream = g_new0(rec, 2 * n);
    for (unsigned i = 0; i < 2 * n; i++) {
        ksched_op op = launch_op(fn[1 + i % 2], GRID, 1, BLOCK);
        tenv_submit(t, a, streams[i % (2 * STREAMS)], &op, rec_done, &stream[i]);
    }
    ksched_op op = launch_op(fn[0], BAD_GRID, 1, BLOCK);
    tenv_submit(t, a, tenv_stream(t, a), &op, rec_done, &out->bad);
    tenv_run(t);
    uint64_t end[2] = {0, 0};
    for (unsigned i = 0; i < 2 * n; i++) {
        g_assert_cmpint(stream[i].r.status, ==, 0);
        end[i % 2] = MAX(end[i % 2], stream[i].r.end_ns);
    }
    out->pair_end = MIN(end[0], end[1]);
    g_assert_cmpint(out->bad.r.status, ==, 0);
    ksched_stats st;
    ksched_get_stats(t->s, &st);
    out->aged = st.aged;
    g_free(stream);
    tenv_free(t);
}

static void test_bound(void)
{
    const double k = 20;
    double alone = time_alone("bad", BAD_GRID);
    /* the last kernel of a stream is handed out whole before it ends (the next launch of a
     * stream is pipelined behind its predecessor): bad may start that long before the end */
    double last = fmax(time_alone("comp", GRID), time_alone("mem", GRID));
    outcome off[2], on[2];
    unsigned lengths[2] = {200, 400};
    for (int i = 0; i < 2; i++) {
        run_streams(0, lengths[i], &off[i]);
        run_streams(k, lengths[i], &on[i]);
        g_test_message("streams of %u: bad ends at %.3f ms without the bound, %.3f ms with "
                       "it (bound %.3f ms); the pair runs out at %.3f / %.3f ms", lengths[i],
                       off[i].bad.r.end_ns / 1e6, on[i].bad.r.end_ns / 1e6, k * alone / 1e6,
                       off[i].pair_end / 1e6, on[i].pair_end / 1e6);
        /* without it: bad runs only once a stream has run out */
        g_assert_cmpuint(off[i].aged, ==, 0);
        g_assert_cmpfloat(off[i].bad.r.start_ns, >=, off[i].pair_end - last);
        /* with it: bad waits for the better pair at first, then runs within the bound
         * (K times its time alone, plus its own run time and a slice of slack) */
        g_assert_cmpuint(on[i].aged, >, 0);
        g_assert_cmpfloat(on[i].bad.r.start_ns, >, 0.5 * k * alone);
        g_assert_cmpfloat(on[i].bad.r.end_ns, <, (k + 2) * alone);
        g_assert_cmpfloat(on[i].bad.r.end_ns, <, 0.5 * on[i].pair_end);
    }
    /* twice the streams: without the bound bad waits about twice as long, with it the
     * same */
    g_assert_cmpfloat(off[1].bad.r.end_ns, >, 1.8 * off[0].bad.r.end_ns);
    g_assert_cmpuint(on[1].bad.r.end_ns, ==, on[0].bad.r.end_ns);
}

/* One long plan: a huge comp beside a huge mem for many milliseconds, no arrival and no
 * completion in between. The bad kernel still runs once it passes the bound. */
static void test_bound_mid_plan(void)
{
    const double k = 20;
    double alone = time_alone("bad", BAD_GRID);
    tenv *t = env(k);
    uint32_t a = tenv_tenant(t, "a"), fn[3];
    const char *entries[] = {"bad", "comp", "mem"};
    tenv_functions(t, a, entries, 3, 1, fn);
    rec big[2], bad;
    memset(big, 0, sizeof(big));
    memset(&bad, 0, sizeof(bad));
    for (int i = 0; i < 2; i++) {
        ksched_op op = launch_op(fn[1 + i], 200 * GRID, 1, BLOCK);
        tenv_submit(t, a, tenv_stream(t, a), &op, rec_done, &big[i]);
    }
    ksched_op op = launch_op(fn[0], BAD_GRID, 1, BLOCK);
    tenv_submit(t, a, tenv_stream(t, a), &op, rec_done, &bad);
    tenv_run(t);
    g_test_message("bad ends at %.3f ms (bound %.3f ms), the pair at %.3f and %.3f ms",
                   bad.r.end_ns / 1e6, k * alone / 1e6, big[0].r.end_ns / 1e6,
                   big[1].r.end_ns / 1e6);
    g_assert_cmpint(bad.r.status, ==, 0);
    g_assert_cmpfloat(bad.r.end_ns, <, (k + 3) * alone);
    g_assert_cmpfloat(bad.r.end_ns, <, 0.5 * (double)MIN(big[0].r.end_ns, big[1].r.end_ns));
    tenv_free(t);
}

static void test_config(void)
{
    ksched_config c;
    ksched_config_default(&c);
    g_assert_cmpfloat(c.aging, ==, 1000);
    tenv *t = tenv_policy(KSCHED_KERNELET);
    ksched_free(t->s);
    ksched_err e;
    const double bad[] = {-1, 2e9, NAN};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        c.aging = bad[i];
        g_assert_cmpint(ksched_new(&t->s, &t->be, &c, NULL, &e), ==, KSCHED_EINVAL);
        g_assert_nonnull(strstr(e.msg, "aging"));
    }
    c.aging = 0;
    g_assert_cmpint(ksched_new(&t->s, &t->be, &c, NULL, &e), ==, 0);
    tenv_free(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/aging/bound", test_bound);
    g_test_add_func("/aging/bound-mid-plan", test_bound_mid_plan);
    g_test_add_func("/aging/config", test_config);
    return g_test_run();
}
