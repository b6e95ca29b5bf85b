/* Unit tests of the allocation table (host-sched/backends/cuda/alloc_table.h). */
#include "alloc_table.h"

#include <glib.h>

static void test_contains(void)
{
    kcuda_alloc_table t = {0};
    g_assert_cmpint(kcuda_alloc_add(&t, 0x3000, 0x100, NULL), ==, 0);
    g_assert_cmpint(kcuda_alloc_add(&t, 0x1000, 0x1000, NULL), ==, 0);   /* before */
    g_assert_cmpint(kcuda_alloc_add(&t, 0x2000, 0x800, NULL), ==, 0);    /* between */
    g_assert_cmpuint(t.in_use, ==, 0x1900);
    g_assert_true(kcuda_alloc_contains(&t, 0x1000, 0x1000));
    g_assert_true(kcuda_alloc_contains(&t, 0x1fff, 1));
    g_assert_false(kcuda_alloc_contains(&t, 0x1fff, 2));      /* runs into the gap */
    g_assert_false(kcuda_alloc_contains(&t, 0x1f00, 0x200));  /* across two allocations */
    g_assert_true(kcuda_alloc_contains(&t, 0x2400, 0x400));
    g_assert_false(kcuda_alloc_contains(&t, 0x2800, 1));
    g_assert_false(kcuda_alloc_contains(&t, 0xfff, 1));
    g_assert_false(kcuda_alloc_contains(&t, 0x3000, 0));
    g_assert_false(kcuda_alloc_contains(&t, 0x30ff, UINT64_MAX));
    kcuda_alloc_table_clear(&t);
    g_assert_cmpuint(krange_count(&t.ranges), ==, 0);
}

static void test_overlaps_refused(void)
{
    kcuda_alloc_table t = {0};
    g_assert_cmpint(kcuda_alloc_add(&t, 0x1000, 0x1000, NULL), ==, 0);
    g_assert_cmpint(kcuda_alloc_add(&t, 0x1800, 0x10, NULL), ==, KBACKEND_EINVAL);
    g_assert_cmpint(kcuda_alloc_add(&t, 0x800, 0x801, NULL), ==, KBACKEND_EINVAL);
    g_assert_cmpint(kcuda_alloc_add(&t, 0x800, 0x800, NULL), ==, 0);     /* touches only */
    g_assert_cmpint(kcuda_alloc_add(&t, 0, 16, NULL), ==, KBACKEND_EINVAL);
    g_assert_cmpint(kcuda_alloc_add(&t, 0x9000, 0, NULL), ==, KBACKEND_EINVAL);
    g_assert_cmpint(kcuda_alloc_add(&t, UINT64_MAX - 4, 16, NULL), ==, KBACKEND_EINVAL);
    kcuda_alloc_table_clear(&t);
}

static void test_remove(void)
{
    kcuda_alloc_table t = {0};
    for (uint64_t i = 1; i <= 200; i++)     /* grows the array more than once */
        g_assert_cmpint(kcuda_alloc_add(&t, i * 0x10000, 0x100 * i, NULL), ==, 0);
    uint64_t size = 0;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_alloc_remove(&t, 0x10010, &size, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpint(kcuda_alloc_remove(&t, 77 * 0x10000, &size, NULL), ==, 0);
    g_assert_cmpuint(size, ==, 77 * 0x100);
    g_assert_false(kcuda_alloc_contains(&t, 77 * 0x10000, 1));
    g_assert_true(kcuda_alloc_contains(&t, 78 * 0x10000, 78 * 0x100));
    g_assert_cmpuint(krange_count(&t.ranges), ==, 199);
    g_assert_cmpuint(t.in_use, ==, 0x100ull * (200 * 201 / 2 - 77));
    g_assert_cmpint(kcuda_alloc_remove(&t, 77 * 0x10000, NULL, NULL), ==, KBACKEND_EINVAL);
    kcuda_alloc_table_clear(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/alloc-table/contains", test_contains);
    g_test_add_func("/cuda/alloc-table/overlaps", test_overlaps_refused);
    g_test_add_func("/cuda/alloc-table/remove", test_remove);
    return g_test_run();
}
