/* Unit tests of the parameter layouts and launch blocks (host-sched/backends/cuda/param_block.h).
 * Expected offsets follow PTX's rule (each parameter at a multiple of its alignment); the
 * last test checks the layout against the slicer's own output on the benchmark kernels.
 *   BENCH_PTX_DIR=build/bench test-param-block [--tap] */
#include "param_block.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"
#include "kernelet/workload.h"

static const uint32_t EXTRA4[4] = {7, 100, 3, 2};

/* (u64 a, u32 b): the packed block is 12 bytes, a C struct would be 16. */
static void test_plain_layout_drops_tail_padding(void)
{
    size_t off[] = {0, 8}, size[] = {8, 4};
    kcuda_param_layout l;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_param_layout_from(off, size, 2, 0, &l, &e), ==, 0);
    g_assert_true(l.known);
    g_assert_false(l.sliced);
    g_assert_cmpuint(l.orig_bytes, ==, 12);

    unsigned char params[16];
    for (int i = 0; i < 16; i++)
        params[i] = (unsigned char)(i + 1);
    void *b;
    size_t n;
    g_assert_cmpint(kcuda_param_block(&l, params, 16, NULL, &b, &n, &e), ==, 0);
    g_assert_cmpuint(n, ==, 12);
    g_assert_cmpmem(b, 12, params, 12);
    free(b);
}

static void test_short_block_refused(void)
{
    size_t off[] = {0, 8}, size[] = {8, 4};
    kcuda_param_layout l;
    g_assert_cmpint(kcuda_param_layout_from(off, size, 2, 0, &l, NULL), ==, 0);
    unsigned char params[8] = {0};
    void *b = (void *)1;
    size_t n = 99;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_param_block(&l, params, 8, NULL, &b, &n, &e), ==, KBACKEND_EINVAL);
    g_assert_null(b);
    g_assert_nonnull(strstr(e.msg, "takes 12"));
}

/* (u64 p, u8 c) + four u32: c ends at 9, the extras start at 12, bytes 9..11 are zero. */
static void test_sliced_layout_aligns_extras(void)
{
    size_t off[] = {0, 8, 12, 16, 20, 24}, size[] = {8, 1, 4, 4, 4, 4};
    kcuda_param_layout l;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_param_layout_from(off, size, 6, 1, &l, &e), ==, 0);
    g_assert_cmpuint(l.orig_bytes, ==, 9);
    g_assert_cmpuint(l.extra_offset, ==, 12);

    unsigned char params[16];
    memset(params, 0xAB, sizeof(params));   /* tail padding the caller left dirty */
    void *b;
    size_t n;
    g_assert_cmpint(kcuda_param_block(&l, params, 16, EXTRA4, &b, &n, &e), ==, 0);
    g_assert_cmpuint(n, ==, 28);
    const unsigned char *u = b;
    g_assert_cmpmem(u, 9, params, 9);
    for (int i = 9; i < 12; i++)
        g_assert_cmpuint(u[i], ==, 0);
    uint32_t got[4];
    memcpy(got, u + 12, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), EXTRA4, sizeof(EXTRA4));
    free(b);
}

static void test_sliced_without_original_params(void)
{
    size_t off[] = {0, 4, 8, 12}, size[] = {4, 4, 4, 4};
    kcuda_param_layout l;
    g_assert_cmpint(kcuda_param_layout_from(off, size, 4, 1, &l, NULL), ==, 0);
    g_assert_cmpuint(l.orig_bytes, ==, 0);
    void *b;
    size_t n;
    g_assert_cmpint(kcuda_param_block(&l, NULL, 0, EXTRA4, &b, &n, NULL), ==, 0);
    g_assert_cmpuint(n, ==, 16);
    g_assert_cmpmem(b, 16, EXTRA4, 16);
    free(b);
}

static void test_sliced_layout_checks_extras(void)
{
    kcuda_param_layout l;
    kbackend_error e = {0};
    size_t off3[] = {0, 4, 8}, size3[] = {4, 4, 4};
    g_assert_cmpint(kcuda_param_layout_from(off3, size3, 3, 1, &l, &e), ==, KBACKEND_EINVAL);
    size_t off_wide[] = {0, 8, 12, 16, 20}, size_wide[] = {8, 4, 4, 4, 8};
    g_assert_cmpint(kcuda_param_layout_from(off_wide, size_wide, 5, 1, &l, &e), ==,
                    KBACKEND_EINVAL);
    size_t off_gap[] = {0, 8, 16, 20, 24}, size_gap[] = {8, 4, 4, 4, 4};
    g_assert_cmpint(kcuda_param_layout_from(off_gap, size_gap, 5, 1, &l, &e), ==,
                    KBACKEND_EINVAL);
    size_t off_back[] = {8, 0}, size_back[] = {8, 8};
    g_assert_cmpint(kcuda_param_layout_from(off_back, size_back, 2, 0, &l, &e), ==,
                    KBACKEND_EINVAL);
}

static void test_mismatched_extras_refused(void)
{
    kcuda_param_layout plain, sliced;
    kcuda_param_layout_unknown(0, &plain);
    kcuda_param_layout_unknown(1, &sliced);
    unsigned char params[8] = {0};
    void *b;
    size_t n;
    g_assert_cmpint(kcuda_param_block(&plain, params, 8, EXTRA4, &b, &n, NULL), ==,
                    KBACKEND_EINVAL);
    g_assert_cmpint(kcuda_param_block(&sliced, params, 8, NULL, &b, &n, NULL), ==,
                    KBACKEND_EINVAL);
}

/* Without the driver's layout the block is taken as given, extras at the next 4 bytes. */
static void test_unknown_layout(void)
{
    kcuda_param_layout l;
    kcuda_param_layout_unknown(1, &l);
    unsigned char params[6] = {1, 2, 3, 4, 5, 6};
    void *b;
    size_t n;
    g_assert_cmpint(kcuda_param_block(&l, params, 6, EXTRA4, &b, &n, NULL), ==, 0);
    g_assert_cmpuint(n, ==, 8 + 16);
    g_assert_cmpmem(b, 6, params, 6);
    g_assert_cmpmem((unsigned char *)b + 8, 16, EXTRA4, 16);
    free(b);
    uint32_t one = 42;                  /* already 4-byte aligned: extras right after it */
    g_assert_cmpint(kcuda_param_block(&l, &one, 4, EXTRA4, &b, &n, NULL), ==, 0);
    g_assert_cmpuint(n, ==, 4 + 16);
    g_assert_cmpmem((unsigned char *)b + 4, 16, EXTRA4, 16);
    free(b);
    kcuda_param_layout_unknown(0, &l);
    g_assert_cmpint(kcuda_param_block(&l, NULL, 0, NULL, &b, &n, NULL), ==, 0);
    g_assert_null(b);
    g_assert_cmpuint(n, ==, 0);
}

static void test_limit(void)
{
    kcuda_param_layout l;
    kcuda_param_layout_unknown(1, &l);
    size_t big = KCUDA_MAX_PARAM_BYTES - 8;
    unsigned char *params = g_malloc0(big);
    void *b;
    size_t n;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_param_block(&l, params, big, EXTRA4, &b, &n, &e), ==, KBACKEND_EINVAL);
    g_assert_nonnull(strstr(e.msg, "limit"));
    g_free(params);
}

/* Every benchmark kernel, sliced by the PTX library: the sliced entry's parameters as the
 * slicer lays them out must read as a valid sliced layout whose extras follow the original
 * entry's parameter block at the next 4-byte boundary. */
static void check_kernel(const char *dir, const kw_kernel *k)
{
    char *path = g_build_filename(dir, k->ptx_file, NULL);
    gchar *text;
    gsize len;
    g_assert_true(g_file_get_contents(path, &text, &len, NULL));
    kptx_module *m;
    kptx_error pe;
    g_assert_cmpint(kptx_parse(text, len, &m, &pe), ==, 0);
    g_assert_cmpint(kptx_slice_module(m, NULL, &pe), ==, 0);
    char sliced[300];
    g_assert_cmpint(kptx_slice_name(k->entry, sliced, sizeof(sliced)), ==, 0);
    kptx_kernel_info orig, si;
    g_assert_cmpint(kptx_kernel_info_get(m, k->entry, &orig, &pe), ==, 0);
    g_assert_cmpint(kptx_kernel_info_get(m, sliced, &si, &pe), ==, 0);
    g_assert_cmpuint(si.n_params, ==, orig.n_params + KBACKEND_SLICE_EXTRA_PARAMS);
    size_t off[64], size[64];
    g_assert_cmpuint(si.n_params, <=, 64);
    for (unsigned i = 0; i < si.n_params; i++) {
        off[i] = si.params[i].offset;
        size[i] = si.params[i].size;
    }
    kcuda_param_layout l;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_param_layout_from(off, size, si.n_params, 1, &l, &e), ==, 0);
    g_assert_cmpuint(l.orig_bytes, ==, orig.param_bytes);
    g_assert_cmpuint(l.extra_offset, ==, (orig.param_bytes + 3) / 4 * 4);
    kptx_kernel_info_clear(&orig);
    kptx_kernel_info_clear(&si);
    kptx_module_free(m);
    g_free(text);
    g_free(path);
}

static void test_bench_kernels_match_slicer(void)
{
    const char *dir = g_getenv("BENCH_PTX_DIR");    /* set by meson test */
    g_assert_nonnull(dir);
    size_t n;
    const kw_kernel *const *all = kw_kernels(&n);
    g_assert_cmpuint(n, ==, 8);
    for (size_t i = 0; i < n; i++)
        check_kernel(dir, all[i]);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/param-block/plain-drops-tail-padding",
                    test_plain_layout_drops_tail_padding);
    g_test_add_func("/cuda/param-block/short-block", test_short_block_refused);
    g_test_add_func("/cuda/param-block/sliced-aligns-extras", test_sliced_layout_aligns_extras);
    g_test_add_func("/cuda/param-block/sliced-no-params", test_sliced_without_original_params);
    g_test_add_func("/cuda/param-block/sliced-checks", test_sliced_layout_checks_extras);
    g_test_add_func("/cuda/param-block/mismatched-extras", test_mismatched_extras_refused);
    g_test_add_func("/cuda/param-block/unknown-layout", test_unknown_layout);
    g_test_add_func("/cuda/param-block/limit", test_limit);
    g_test_add_func("/cuda/param-block/bench-kernels-match-slicer",
                    test_bench_kernels_match_slicer);
    return g_test_run();
}
