/* The harness launches the benchmark kernels with the shapes bench/ creates them with:
 * entry names and grids of kernelet-bench against kernelet-workloads' default instances. */
#include <glib.h>

#include "bench.h"
#include "kernelet/workload.h"

static void test_geometry(void)
{
    for (unsigned k = 0; k < BENCH_KERNELS; k++) {
        const bench_kernel *bk = &bench_kernels()[k];
        const kw_kernel *kw = kw_find(bk->name);
        g_assert_nonnull(kw);
        g_assert_cmpstr(kw->entry, ==, bk->entry);
        kw_instance inst;
        g_assert_cmpint(kw->create(&inst, KW_SIZE_DEFAULT, 1), ==, KW_OK);
        for (int i = 0; i < 3; i++) {
            g_assert_cmpuint(inst.grid[i], ==, bk->grid[i]);
            g_assert_cmpuint(inst.block[i], ==, bk->block[i]);
        }
        g_assert_cmpuint(inst.dynamic_shared_bytes, ==, 0);
        kw->destroy(&inst);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/geometry", test_geometry);
    return g_test_run();
}
