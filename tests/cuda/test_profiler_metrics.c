/* Unit tests of the profiler's metric choice: the first supported candidate of each
 * quantity, missing optional quantities degrade, missing required ones refuse. */
#include "profiler_metrics.h"

#include <glib.h>
#include <string.h>

/* A chip that supports every name except those in the NULL-terminated list ctx. */
static int all_but(const char *name, void *ctx)
{
    for (const char *const *no = ctx; *no; no++)
        if (!strcmp(name, *no))
            return 0;
    return 1;
}

static void test_every_quantity_has_candidates(void)
{
    for (unsigned q = 0; q < KPROF_Q_COUNT; q++) {
        const char *const *c = kprof_quantity_candidates(q);
        g_assert_nonnull(c);
        g_assert_nonnull(c[0]);
        g_assert_nonnull(kprof_quantity_name(q));
    }
    g_assert_null(kprof_quantity_candidates(KPROF_Q_COUNT));
    g_assert_null(kprof_quantity_name(KPROF_Q_COUNT));
}

static void test_prefers_first_candidate(void)
{
    const char *none[] = {NULL};
    kprof_metric_choice c;
    g_assert_cmpint(kprof_choose_metrics(all_but, none, &c, NULL, 0), ==, 0);
    g_assert_cmpuint(c.chosen, ==, KPROF_Q_COUNT);
    for (unsigned q = 0; q < KPROF_Q_COUNT; q++)
        g_assert_cmpstr(c.name[q], ==, kprof_quantity_candidates(q)[0]);
}

/* The case that broke every profile on the H100: the atomics counter of the older family
 * is gone; its SASS-level twin is taken, and nothing else changes. */
static void test_hopper_atomics_fall_back(void)
{
    const char *hopper[] = {"smsp__inst_executed_op_global_atom.sum", NULL};
    kprof_metric_choice c;
    g_assert_cmpint(kprof_choose_metrics(all_but, hopper, &c, NULL, 0), ==, 0);
    g_assert_cmpstr(c.name[KPROF_Q_GLOBAL_ATOM], ==, "smsp__sass_inst_executed_op_global_atom.sum");
    g_assert_cmpstr(c.name[KPROF_Q_GLOBAL_LD], ==, "smsp__inst_executed_op_global_ld.sum");
    g_assert_cmpuint(c.chosen, ==, KPROF_Q_COUNT);
}

static void test_optional_missing_degrades(void)
{
    const char *no_atom[] = {"smsp__inst_executed_op_global_atom.sum",
                             "smsp__sass_inst_executed_op_global_atom.sum",
                             "dram__bytes_write.sum", NULL};
    kprof_metric_choice c;
    g_assert_cmpint(kprof_choose_metrics(all_but, no_atom, &c, NULL, 0), ==, 0);
    g_assert_null(c.name[KPROF_Q_GLOBAL_ATOM]);
    g_assert_null(c.name[KPROF_Q_DRAM_WRITE]);
    g_assert_cmpuint(c.chosen, ==, KPROF_Q_COUNT - 2);
    char text[2048];
    size_t need = kprof_describe_choice(&c, text, sizeof text);
    g_assert_cmpuint(need, ==, strlen(text));
    g_assert_nonnull(strstr(text, "inst=sm__inst_executed.sum"));
    g_assert_nonnull(strstr(text, "missing: global_atom dram_write"));
    /* a short buffer is cut but says how much it needed */
    char small[16];
    g_assert_cmpuint(kprof_describe_choice(&c, small, sizeof small), ==, need);
    g_assert_cmpuint(strlen(small), ==, sizeof small - 1);
}

static void test_required_missing_refuses(void)
{
    const char *no_time[] = {"gpu__time_duration.sum", NULL};
    kprof_metric_choice c;
    char msg[256] = "";
    g_assert_cmpint(kprof_choose_metrics(all_but, no_time, &c, msg, sizeof msg), ==, -1);
    g_assert_nonnull(strstr(msg, "duration"));
    const char *no_cycles[] = {"sm__cycles_elapsed.avg", NULL};
    g_assert_cmpint(kprof_choose_metrics(all_but, no_cycles, &c, msg, sizeof msg), ==, 0);
    g_assert_cmpstr(c.name[KPROF_Q_CYCLES], ==, "sm__cycles_elapsed.max");
    g_assert_cmpint(kprof_choose_metrics(NULL, NULL, &c, msg, sizeof msg), ==, -1);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/profiler-metrics/candidates", test_every_quantity_has_candidates);
    g_test_add_func("/profiler-metrics/first", test_prefers_first_candidate);
    g_test_add_func("/profiler-metrics/hopper-atomics", test_hopper_atomics_fall_back);
    g_test_add_func("/profiler-metrics/optional-missing", test_optional_missing_degrades);
    g_test_add_func("/profiler-metrics/required-missing", test_required_missing_refuses);
    return g_test_run();
}
