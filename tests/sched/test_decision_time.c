/* A decision's time is the deciding. kernelet runs kernels as base from inside its decision
 * when no pair gains, and the backend's launch calls made there were counted as decision
 * time (on the H100 they were most of it), where fifo and base time their choice and then
 * launch. A backend whose every launch call takes 200 us of wall time shows which: the
 * decisions' total must stay far below what the launches took. */
#include "sched_test.h"

#define LAUNCH_US 200
#define N_LAUNCHES 12

static kbackend_ops slow_ops;
static const kbackend_ops *sim_ops;
static unsigned launches;

static int slow_launch(void *state, const kbackend_slice *s, kbackend_done_fn done, void *user,
                       kbackend_error *err)
{
    launches++;
    for (int64_t until = g_get_monotonic_time() + LAUNCH_US; g_get_monotonic_time() < until;) {
    }
    return sim_ops->launch(state, s, done, user, err);
}

/* A sim whose launch calls are slow, and a scheduler of policy p on it. */
static tenv *slow_env(ksched_policy p)
{
    tenv *t = g_new0(tenv, 1);
    ksched_err e = {0};
    if (ksim_new(&t->sim, NULL, &e))
        g_error("ksim_new: %s", e.msg);
    ksim_backend(t->sim, &t->be);
    sim_ops = t->be.ops;
    slow_ops = *sim_ops;
    slow_ops.launch = slow_launch;
    t->be.ops = &slow_ops;
    tenv_standard_kernels(t);
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    c.pair_short_ns = 1000000000;   /* every kernel short: kernelet's run_as_base */
    if (ksched_new(&t->s, &t->be, &c, NULL, &e))
        g_error("ksched_new: %s", e.msg);
    return t;
}

/* Two tenants that wait for each launch of their kernel (short kernels of waiting programs:
 * kernelet runs them whole, side by side, as base does, from inside its decision). */
static void check_policy(gconstpointer data)
{
    ksched_policy p = GPOINTER_TO_INT(data);
    tenv *t = slow_env(p);
    const char *entries[] = {"comp", "mem"};
    uint32_t tenant[2], fn[2];
    for (int n = 0; n < 2; n++) {
        tenant[n] = tenv_tenant(t, n ? "b" : "a");
        tenv_functions(t, tenant[n], entries + n, 1, 1, &fn[n]);
    }
    launches = 0;
    for (unsigned i = 0; i < N_LAUNCHES; i++) {
        for (int n = 0; n < 2; n++) {
            ksched_op op = launch_op(fn[n], 264, 1, 256);
            tenv_submit(t, tenant[n], 0, &op, NULL, NULL);
        }
        tenv_run(t);
    }
    ksched_stats st;
    ksched_get_stats(t->s, &st);
    double launch_ns = (double)launches * LAUNCH_US * 1000.0;
    g_test_message("%s: %u launch calls (%.1f ms), %llu decisions, %.1f us in all",
                   ksched_policy_name(p), launches, launch_ns / 1e6,
                   (unsigned long long)st.decisions, st.decision_ns_total / 1e3);
    g_assert_cmpuint(launches, >=, 2 * N_LAUNCHES);
    g_assert_cmpuint(st.coschedules, ==, 0);
    g_assert_cmpuint(st.decisions, >, 0);
    g_assert_cmpfloat((double)st.decision_ns_total, <, launch_ns / 4);
    tenv_free(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_data_func("/decision-time/base", GINT_TO_POINTER(KSCHED_BASE), check_policy);
    g_test_add_data_func("/decision-time/kernelet", GINT_TO_POINTER(KSCHED_KERNELET),
                         check_policy);
    return g_test_run();
}
