/* Unit tests of slice sizes and trial arithmetic (host-sched/backends/cuda/sizing.h);
 * expectations are worked out by hand in the comments. */
#include "sizing.h"

#include <glib.h>
#include <math.h>

static void test_profile_blocks(void)
{
    g_assert_cmpuint(kcuda_profile_blocks(8448, 132, 8), ==, 1056);
    g_assert_cmpuint(kcuda_profile_blocks(500, 132, 8), ==, 500);
    g_assert_cmpuint(kcuda_profile_blocks(0, 132, 8), ==, 1);
    g_assert_cmpuint(kcuda_profile_blocks(10, 0, 0), ==, 1);
}

static void test_min_slice(void)
{
    /* 1056 blocks in 100 us: 10.56 blocks/us. Overhead 4 us at p = 2%: a slice must last
     * 200 us = 2112 blocks = 16 waves of 132. */
    g_assert_cmpuint(kcuda_min_slice(4000, 1056, 100000, 132, 0.02), ==, 2112);
    /* 1 us overhead: 528 blocks, exactly 4 waves */
    g_assert_cmpuint(kcuda_min_slice(1000, 1056, 100000, 132, 0.02), ==, 528);
    /* 1.01 us: 533.28 blocks, rounded up to 5 waves */
    g_assert_cmpuint(kcuda_min_slice(1010, 1056, 100000, 132, 0.02), ==, 660);
    /* tiny overhead: never below one wave */
    g_assert_cmpuint(kcuda_min_slice(1, 1056, 100000, 132, 0.02), ==, 132);
    /* unknown inputs */
    g_assert_cmpuint(kcuda_min_slice(0, 1056, 100000, 132, 0.02), ==, 0);
    g_assert_cmpuint(kcuda_min_slice(4000, 0, 100000, 132, 0.02), ==, 0);
    g_assert_cmpuint(kcuda_min_slice(4000, 1056, 0, 132, 0.02), ==, 0);
    g_assert_cmpuint(kcuda_min_slice(4000, 1056, 100000, 132, 0), ==, 0);
    g_assert_cmpuint(kcuda_min_slice(1e30, 1056, 1, 132, 0.02), ==, 1ull << 40);
}

static void test_trial_slices(void)
{
    /* 1e7 blocks/s for 1 ms = 10000 blocks = 7.6 slices of 1320 -> 8 */
    g_assert_cmpuint(kcuda_trial_slices(1e7, 1320, 1e6, 512), ==, 8);
    g_assert_cmpuint(kcuda_trial_slices(1e3, 1320, 1e6, 512), ==, 2);
    g_assert_cmpuint(kcuda_trial_slices(1e12, 1320, 1e6, 512), ==, 512);
    g_assert_cmpuint(kcuda_trial_slices(0, 1320, 1e6, 512), ==, 2);
}

static void test_trial_rates(void)
{
    /* kernel 0: 3 slices of 100 blocks ending at 10, 20, 30 us; kernel 1: 2 slices of 50
     * ending at 15, 25 us. Both ran until 25 us: kernel 0 finished 200 blocks by 20 us
     * (10 blocks/us = 1e7/s), kernel 1 100 blocks by 25 us (4e6/s). */
    const uint64_t b0[] = {100, 100, 100}, b1[] = {50, 50};
    const double e0[] = {10e3, 20e3, 30e3}, e1[] = {15e3, 25e3};
    kcuda_trial_run run[2] = {{3, b0, e0}, {2, b1, e1}};
    double bps[2];
    g_assert_cmpint(kcuda_trial_rates(run, bps), ==, 0);
    g_assert_cmpfloat_with_epsilon(bps[0], 1e7, 1);
    g_assert_cmpfloat_with_epsilon(bps[1], 4e6, 1);

    /* kernel 1's first slice ends after kernel 0 finished: counted by that slice alone */
    const double late[] = {40e3, 50e3};
    run[1].end_ns = late;
    g_assert_cmpint(kcuda_trial_rates(run, bps), ==, 0);
    g_assert_cmpfloat_with_epsilon(bps[0], 300 / 30e3 * 1e9, 1);
    g_assert_cmpfloat_with_epsilon(bps[1], 50 / 40e3 * 1e9, 1);

    const double bad[] = {0, 5};
    run[1].end_ns = bad;
    g_assert_cmpint(kcuda_trial_rates(run, bps), ==, -1);
    run[1] = (kcuda_trial_run){0, NULL, NULL};
    g_assert_cmpint(kcuda_trial_rates(run, bps), ==, -1);
}

static void test_median(void)
{
    double odd[] = {5, 1, 4, 2, 3};
    g_assert_cmpfloat(kcuda_median(odd, 5), ==, 3);
    double even[] = {10, 40, 20, 30};
    g_assert_cmpfloat(kcuda_median(even, 4), ==, 30);
    double one[] = {7};
    g_assert_cmpfloat(kcuda_median(one, 1), ==, 7);
    g_assert_true(isnan(kcuda_median(one, 0)));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/sizing/median", test_median);
    g_test_add_func("/cuda/sizing/profile-blocks", test_profile_blocks);
    g_test_add_func("/cuda/sizing/min-slice", test_min_slice);
    g_test_add_func("/cuda/sizing/trial-slices", test_trial_slices);
    g_test_add_func("/cuda/sizing/trial-rates", test_trial_rates);
    return g_test_run();
}
