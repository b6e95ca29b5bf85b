/* kernelet-bench's figures over rounds (bench_median): each round's value is the mean of
 * its completed runs (mc: its seeds), the figure the median of the rounds' values, with
 * their min and max; failed runs, other workloads and other policies do not count. */
#include <glib.h>

#include "bench.h"

/* A run of policy p on workload wl in round r with total t (ns). */
static bench_result run(const bench_workload *wl, ksched_policy p, unsigned r, uint64_t t,
                        unsigned failed)
{
    return (bench_result){.wl = wl, .policy = p, .round = r, .total_ns = t, .failed = failed};
}

static double median(const bench_result *res, size_t n, const bench_workload *wl,
                     ksched_policy p, double *lo, double *hi, unsigned *rounds)
{
    return bench_median(res, n, wl, p, bench_figure_total_ns, 0, lo, hi, rounds);
}

static void test_odd_even(void)
{
    const bench_workload *ci = &bench_workloads()[0], *mi = &bench_workloads()[1];
    bench_result res[] = {
        run(ci, KSCHED_BASE, 0, 5, 0), run(ci, KSCHED_FIFO, 0, 1000, 0),
        run(ci, KSCHED_BASE, 1, 1, 0), run(mi, KSCHED_BASE, 1, 1000, 0),
        run(ci, KSCHED_BASE, 2, 9, 0), run(ci, KSCHED_BASE, 3, 3, 0),
        run(ci, KSCHED_BASE, 4, 2000, 1),   /* failed: its round does not count */
    };
    double lo, hi;
    unsigned rounds;
    /* rounds 5, 1, 9, 3: an even count, the mean of the middle two */
    g_assert_cmpfloat(median(res, G_N_ELEMENTS(res), ci, KSCHED_BASE, &lo, &hi, &rounds), ==,
                      4);
    g_assert_cmpfloat(lo, ==, 1);
    g_assert_cmpfloat(hi, ==, 9);
    g_assert_cmpuint(rounds, ==, 4);
    /* the first three: 5, 1, 9 */
    g_assert_cmpfloat(median(res, 5, ci, KSCHED_BASE, &lo, &hi, &rounds), ==, 5);
    g_assert_cmpuint(rounds, ==, 3);
    /* not run: 0, no rounds */
    g_assert_cmpfloat(median(res, G_N_ELEMENTS(res), ci, KSCHED_KERNELET, &lo, &hi, &rounds),
                      ==, 0);
    g_assert_cmpuint(rounds, ==, 0);
    g_assert_cmpfloat(lo, ==, 0);
    g_assert_cmpfloat(hi, ==, 0);
    g_assert_cmpfloat(median(res, G_N_ELEMENTS(res), mi, KSCHED_BASE, NULL, NULL, NULL), ==,
                      1000);
}

/* Several runs in a round (mc's seeds): the round's mean, then the median of those. The
 * median of the six runs would be 7.5, their mean 6.67. */
static void test_runs_in_a_round(void)
{
    const bench_workload *mix = &bench_workloads()[2];
    bench_result res[] = {
        run(mix, KSCHED_MC, 0, 1, 0), run(mix, KSCHED_MC, 0, 9, 0),
        run(mix, KSCHED_MC, 1, 7, 0), run(mix, KSCHED_MC, 1, 7, 0),
        run(mix, KSCHED_MC, 2, 8, 0), run(mix, KSCHED_MC, 2, 8, 0),
    };
    double lo, hi;
    unsigned rounds;
    g_assert_cmpfloat(median(res, G_N_ELEMENTS(res), mix, KSCHED_MC, &lo, &hi, &rounds), ==, 7);
    g_assert_cmpfloat(lo, ==, 5);
    g_assert_cmpfloat(hi, ==, 8);
    g_assert_cmpuint(rounds, ==, 3);
}

/* A figure per kernel (the slowdowns): k picks the kernel. */
static double slowdown(const bench_result *r, unsigned k)
{
    return r->slowdown[k];
}

static void test_per_kernel(void)
{
    const bench_workload *ci = &bench_workloads()[0];
    bench_result res[3];
    for (unsigned r = 0; r < 3; r++) {
        res[r] = run(ci, KSCHED_KERNELET, r, 1, 0);
        res[r].slowdown[2] = 10.0 * (3 - r);    /* 30, 20, 10 */
        res[r].slowdown[5] = r;                 /* 0, 1, 2 */
    }
    g_assert_cmpfloat(bench_median(res, 3, ci, KSCHED_KERNELET, slowdown, 2, NULL, NULL, NULL),
                      ==, 20);
    g_assert_cmpfloat(bench_median(res, 3, ci, KSCHED_KERNELET, slowdown, 5, NULL, NULL, NULL),
                      ==, 1);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/median/odd-even", test_odd_even);
    g_test_add_func("/bench/median/runs-in-a-round", test_runs_in_a_round);
    g_test_add_func("/bench/median/per-kernel", test_per_kernel);
    return g_test_run();
}
