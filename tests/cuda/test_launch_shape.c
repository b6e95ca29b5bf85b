/* Unit tests of launch geometry (host-sched/backends/cuda/launch_shape.h): a whole kernel
 * keeps its grid, a slice runs as (count, 1, 1) with (first, grid x, y, z); bad launches are
 * refused. */
#include "launch_shape.h"

#include <glib.h>
#include <string.h>

/* The H100's limits (CUDA C Programming Guide, compute capability 9.0). */
static const kcuda_limits H100 = {
    .lanes = 4,
    .max_threads_per_block = 1024,
    .max_block = {1024, 1024, 64},
    .max_grid = {2147483647u, 65535, 65535},
};

static kbackend_slice whole(void)
{
    return (kbackend_slice){.grid = {10, 20, 3}, .block = {16, 16, 1}, .count = 600};
}

static void test_whole(void)
{
    kbackend_slice s = whole();
    s.lane = 3;
    kcuda_launch_shape sh;
    g_assert_cmpint(kcuda_launch_shape_of(&s, 0, 0, &H100, &sh, NULL), ==, 0);
    g_assert_false(sh.sliced);
    g_assert_cmpmem(sh.grid, sizeof(sh.grid), s.grid, sizeof(s.grid));
    g_assert_cmpmem(sh.block, sizeof(sh.block), s.block, sizeof(s.block));
}

static void test_slice(void)
{
    kbackend_slice s = whole();
    s.sliced = 1;
    s.first = 577;
    s.count = 23;                      /* the last 23 of 600 blocks */
    kcuda_launch_shape sh;
    g_assert_cmpint(kcuda_launch_shape_of(&s, 1, 256, &H100, &sh, NULL), ==, 0);
    g_assert_true(sh.sliced);
    g_assert_cmpuint(sh.grid[0], ==, 23);
    g_assert_cmpuint(sh.grid[1], ==, 1);
    g_assert_cmpuint(sh.grid[2], ==, 1);
    g_assert_cmpuint(sh.extra[0], ==, 577);
    g_assert_cmpuint(sh.extra[1], ==, 10);
    g_assert_cmpuint(sh.extra[2], ==, 20);
    g_assert_cmpuint(sh.extra[3], ==, 3);
}

static void expect_refused(const kbackend_slice *s, int fn_sliced, unsigned fn_max,
                           const char *words)
{
    kcuda_launch_shape sh;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_launch_shape_of(s, fn_sliced, fn_max, &H100, &sh, &e), ==,
                    KBACKEND_EINVAL);
    if (!strstr(e.msg, words))
        g_error("message '%s' lacks '%s'", e.msg, words);
}

static void test_refusals(void)
{
    kbackend_slice s = whole();
    s.lane = 4;
    expect_refused(&s, 0, 0, "lane 4");
    s = whole();
    expect_refused(&s, 1, 0, "only slices");
    s.sliced = 1;
    s.count = 1;
    expect_refused(&s, 0, 0, "sliced variant");
    s = whole();
    s.block[0] = 2048;
    expect_refused(&s, 0, 0, "block dimension 0");
    s = whole();
    s.block[0] = s.block[1] = 32;      /* 1024 threads; the function allows 512 */
    expect_refused(&s, 0, 512, "limit 512");
    s = whole();
    s.grid[1] = 70000;
    s.count = kbackend_grid_blocks(s.grid);
    expect_refused(&s, 0, 0, "grid dimension 1");
    s = whole();
    s.count = 599;
    expect_refused(&s, 0, 0, "whole launch");
    s = whole();
    s.grid[2] = 0;
    s.count = 0;
    expect_refused(&s, 0, 0, "grid dimension 2");
}

static void test_slice_refusals(void)
{
    kbackend_slice s = whole();
    s.sliced = 1;
    s.count = 0;
    expect_refused(&s, 1, 0, "outside");
    s.first = 590;
    s.count = 11;                      /* one past the end */
    expect_refused(&s, 1, 0, "outside");
    s.first = 600;
    s.count = 1;
    expect_refused(&s, 1, 0, "outside");
    s = whole();
    s.sliced = 1;
    s.grid[0] = 65536;
    s.grid[1] = 65536;
    s.grid[2] = 1;                     /* 2^32 blocks: 32-bit slice arithmetic */
    s.count = 1;
    expect_refused(&s, 1, 0, "cannot be sliced");
}

/* A sliced kernel's original grid is never launched: only the slice must fit the limits. */
static void test_slice_of_tall_grid(void)
{
    kbackend_slice s = whole();
    s.sliced = 1;
    s.grid[1] = 70000;
    s.first = 100;
    s.count = 1000;
    kcuda_launch_shape sh;
    g_assert_cmpint(kcuda_launch_shape_of(&s, 1, 0, &H100, &sh, NULL), ==, 0);
    g_assert_cmpuint(sh.extra[2], ==, 70000);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/launch-shape/whole", test_whole);
    g_test_add_func("/cuda/launch-shape/slice", test_slice);
    g_test_add_func("/cuda/launch-shape/refusals", test_refusals);
    g_test_add_func("/cuda/launch-shape/slice-refusals", test_slice_refusals);
    g_test_add_func("/cuda/launch-shape/slice-of-tall-grid", test_slice_of_tall_grid);
    return g_test_run();
}
