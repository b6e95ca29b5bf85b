/* The kernels of the compatibility corpus (bench/compat/, compiled to PTX at build time
 * as nvcc embeds it) on the emulator, with the launch geometry and checks of their
 * programs: vector_add, errors (fill, including the launches the program expects to
 * fail), fault, grids (2-D and 3-D), many_launches, pinned (square), streams_events
 * (add_const, sum4), symbols (constant memory, a __device__ counter, dynamic shared
 * memory). Each test runs twice: whole, and (/emu/compat/sliced/...) with every kernel
 * sliced by kptx_slice_module and its grid run as random slices in random order, checked
 * against the same expectations. The driver_api program's kernel is a PTX string of its
 * own, the saxpy of test_emu_memory.c. */
#include "emu_test_util.h"

#include <stdlib.h>
#include <string.h>

static unsigned blocks_for(unsigned n, unsigned block)
{
    return (n + block - 1) / block;
}

static void test_vector_add(gconstpointer mode)
{
    SKIP_WITHOUT_KERNELS();
    const unsigned n = 1 << 20;
    emu_fixture f;
    emu_fixture_open_as(&f, "compat_vector_add", 0, GPOINTER_TO_INT(mode));
    float *a = g_new(float, n), *b = g_new(float, n), *c = g_new(float, n);
    for (unsigned i = 0; i < n; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = (float)(n - i) * 0.25f;
    }
    kemu_devptr da = emu_buf(&f, a, n * 4), db = emu_buf(&f, b, n * 4), dc = emu_buf(&f, NULL, n * 4);
    emu_arg args[] = {ARG64(da), ARG64(db), ARG64(dc), ARG32(n)};
    emu_launch_ok(emu_fixture_fn(&f, "_Z10vector_addPKfS0_Pfi"),
                  (unsigned[3]){blocks_for(n, 256), 1, 1}, (unsigned[3]){256, 1, 1}, 0, args, 4);
    emu_download(&f, c, dc, n * 4);
    for (unsigned i = 0; i < n; i++)
        g_assert_cmpfloat(c[i], ==, a[i] + b[i]);
    g_free(a);
    g_free(b);
    g_free(c);
    emu_fixture_close(&f);
}

static void test_errors_fill(gconstpointer mode)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open_as(&f, "compat_errors", 1, GPOINTER_TO_INT(mode));
    kemu_function *fill = emu_fixture_fn(&f, "_Z4fillPii");
    kemu_devptr d = emu_buf(&f, NULL, 32 * sizeof(int));
    emu_arg args[] = {ARG64(d), ARG32(42)};
    kemu_error err = {0};
    /* the program's invalid launches: too many threads, too much dynamic shared memory */
    g_assert_cmpint(emu_launch_args(fill, (unsigned[3]){1, 1, 1}, (unsigned[3]){4096, 1, 1}, 0,
                                    args, 2, 0, &err), ==, KEMU_EINVAL);
    g_assert_cmpint(emu_launch_args(fill, (unsigned[3]){1, 1, 1}, (unsigned[3]){32, 1, 1},
                                    1u << 30, args, 2, 0, &err), ==, KEMU_ERESOURCES);
    emu_launch_ok(fill, (unsigned[3]){1, 1, 1}, (unsigned[3]){32, 1, 1}, 0, args, 2);
    int v[32];
    emu_download(&f, v, d, sizeof v);
    for (int i = 0; i < 32; i++)
        g_assert_cmpint(v[i], ==, 42);
    emu_fixture_close(&f);
}

static void test_fault(gconstpointer mode)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open_as(&f, "compat_fault", 1, GPOINTER_TO_INT(mode));
    kemu_function *store = emu_fixture_fn(&f, "_Z8store_toPi");
    kemu_devptr ok = emu_buf(&f, NULL, sizeof(int));
    emu_arg good[] = {ARG64(ok)}, bad[] = {ARG64(0x8)};
    emu_launch_ok(store, (unsigned[3]){1, 1, 1}, (unsigned[3]){1, 1, 1}, 0, good, 1);
    int v;
    emu_download(&f, &v, ok, sizeof v);
    g_assert_cmpint(v, ==, 1);
    kemu_error err = {0};
    int rc = emu_launch_args(store, (unsigned[3]){1, 1, 1}, (unsigned[3]){1, 1, 1}, 0, bad, 1, 0,
                             &err);
    g_assert_cmpint(rc, ==, KEMU_EADDRESS);
    g_assert_cmpint(kemu_cuda_result(rc), ==, 700);   /* cudaErrorIllegalAddress */
    emu_fixture_close(&f);
}

static void test_grids(gconstpointer mode)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open_as(&f, "compat_grids", 0, GPOINTER_TO_INT(mode));
    const unsigned w = 1000, h = 300;
    unsigned *out = g_new(unsigned, w * h);
    kemu_devptr d = emu_buf(&f, NULL, (size_t)w * h * 4);
    kemu_error err = {0};
    g_assert_cmpint(kemu_memset(f.dev, d, 0xffffffffu, 4, (size_t)w * h, &err), ==, 0);
    emu_arg a2[] = {ARG64(d), ARG32(w), ARG32(h)};
    emu_launch_ok(emu_fixture_fn(&f, "_Z6ids_2dPjjj"),
                  (unsigned[3]){blocks_for(w, 16), blocks_for(h, 8), 1}, (unsigned[3]){16, 8, 1},
                  0, a2, 3);
    emu_download(&f, out, d, (size_t)w * h * 4);
    for (unsigned y = 0; y < h; y++)
        for (unsigned x = 0; x < w; x++)
            g_assert_cmphex(out[y * w + x], ==, (y << 16) | x);
    g_free(out);

    const unsigned nx = 70, ny = 33, nz = 21, n = nx * ny * nz;
    const unsigned grid[3] = {blocks_for(nx, 8), blocks_for(ny, 4), blocks_for(nz, 2)};
    const unsigned shape = grid[0] * grid[1] * grid[2] * 8 * 4 * 2;
    unsigned *o3 = g_new(unsigned, n);
    kemu_devptr d3 = emu_buf(&f, NULL, (size_t)n * 4);
    emu_arg a3[] = {ARG64(d3), ARG32(nx), ARG32(ny), ARG32(nz)};
    emu_launch_ok(emu_fixture_fn(&f, "_Z6ids_3dPjjjj"), grid, (unsigned[3]){8, 4, 2}, 0, a3, 4);
    emu_download(&f, o3, d3, (size_t)n * 4);
    for (unsigned i = 0; i < n; i++)
        g_assert_cmpuint(o3[i], ==, i + shape);
    g_free(o3);
    emu_fixture_close(&f);
}

static void test_many_launches(gconstpointer mode)
{
    SKIP_WITHOUT_KERNELS();
    enum { THREADS = 64, LAUNCHES = 2000 };
    emu_fixture f;
    emu_fixture_open_as(&f, "compat_many_launches", 2, GPOINTER_TO_INT(mode));
    kemu_devptr d = emu_buf(&f, NULL, THREADS * 4);
    emu_arg args[] = {ARG64(d)};
    kemu_function *bump = emu_fixture_fn(&f, "_Z4bumpPj");
    kemu_function *bump_atomic = emu_fixture_fn(&f, "_Z11bump_atomicPj");
    for (int i = 0; i < LAUNCHES; i++)
        emu_launch_ok(i % 2 ? bump : bump_atomic, (unsigned[3]){1, 1, 1},
                      (unsigned[3]){THREADS, 1, 1}, 0, args, 1);
    unsigned count[THREADS];
    emu_download(&f, count, d, sizeof count);
    for (int t = 0; t < THREADS; t++)
        g_assert_cmpuint(count[t], ==, LAUNCHES);
    emu_fixture_close(&f);
}

static void test_pinned_square(gconstpointer mode)
{
    SKIP_WITHOUT_KERNELS();
    const int n = 1 << 18;
    emu_fixture f;
    emu_fixture_open_as(&f, "compat_pinned", 0, GPOINTER_TO_INT(mode));
    int *v = g_new(int, n);
    for (int i = 0; i < n; i++)
        v[i] = i - n / 2;
    kemu_devptr d = emu_buf(&f, v, (size_t)n * 4);
    emu_arg args[] = {ARG64(d), ARG32(n)};
    emu_launch_ok(emu_fixture_fn(&f, "_Z6squarePii"),
                  (unsigned[3]){blocks_for((unsigned)n, 256), 1, 1}, (unsigned[3]){256, 1, 1}, 0,
                  args, 2);
    int *out = g_new(int, n);
    emu_download(&f, out, d, (size_t)n * 4);
    for (int i = 0; i < n; i++)
        g_assert_cmpint(out[i], ==, (int)((unsigned)v[i] * (unsigned)v[i]));
    g_free(v);
    g_free(out);
    emu_fixture_close(&f);
}

static void test_streams_events(gconstpointer mode)
{
    SKIP_WITHOUT_KERNELS();
    const int n = 1 << 16;
    emu_fixture f;
    emu_fixture_open_as(&f, "compat_streams_events", 0, GPOINTER_TO_INT(mode));
    float *h = g_new(float, n), *out = g_new(float, n);
    kemu_devptr d[4];
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < n; i++)
            h[i] = (float)(i % 100) + (float)k;
        d[k] = emu_buf(&f, h, (size_t)n * 4);
        float c = 0.5f;
        uint32_t cb;
        memcpy(&cb, &c, 4);
        emu_arg args[] = {ARG64(d[k]), ARG32(cb), ARG32(n)};
        emu_launch_ok(emu_fixture_fn(&f, "_Z9add_constPffi"),
                      (unsigned[3]){blocks_for((unsigned)n, 256), 1, 1}, (unsigned[3]){256, 1, 1},
                      0, args, 3);
    }
    kemu_devptr dsum = emu_buf(&f, NULL, (size_t)n * 4);
    emu_arg args[] = {ARG64(d[0]), ARG64(d[1]), ARG64(d[2]), ARG64(d[3]), ARG64(dsum), ARG32(n)};
    emu_launch_ok(emu_fixture_fn(&f, "_Z4sum4PKfS0_S0_S0_Pfi"),
                  (unsigned[3]){blocks_for((unsigned)n, 256), 1, 1}, (unsigned[3]){256, 1, 1}, 0,
                  args, 6);
    emu_download(&f, out, dsum, (size_t)n * 4);
    for (int i = 0; i < n; i++) {
        float v[4];
        for (int k = 0; k < 4; k++)
            v[k] = (float)(i % 100) + (float)k + 0.5f;
        g_assert_cmpfloat(out[i], ==, v[0] + v[1] + v[2] + v[3]);
    }
    g_free(h);
    g_free(out);
    emu_fixture_close(&f);
}

static void test_symbols_poly(gconstpointer mode)
{
    SKIP_WITHOUT_KERNELS();
    const int n = 4096;
    emu_fixture f;
    emu_fixture_open_as(&f, "compat_symbols", 2, GPOINTER_TO_INT(mode));
    float c[16], x[4096], y[4096];
    for (int k = 0; k < 16; k++)
        c[k] = (float)(k % 3) - 1.0f;
    for (int i = 0; i < n; i++)
        x[i] = (float)(i % 5 - 2) * 0.5f;
    kemu_error err = {0};
    kemu_devptr coeffs, launches;
    size_t bytes;
    g_assert_cmpint(kemu_module_get_global(f.mod, "coeffs", &coeffs, &bytes, &err), ==, 0);
    g_assert_cmpuint(bytes, ==, sizeof c);
    g_assert_cmpint(kemu_memcpy_htod(f.dev, coeffs, c, sizeof c, &err), ==, 0);
    g_assert_cmpint(kemu_module_get_global(f.mod, "launches", &launches, &bytes, &err), ==, 0);
    kemu_devptr dx = emu_buf(&f, x, sizeof x), dy = emu_buf(&f, NULL, sizeof y);
    emu_arg args[] = {ARG64(dx), ARG64(dy), ARG32(n)};
    kemu_function *poly = emu_fixture_fn(&f, "_Z4polyPKfPfi");
    for (int rep = 0; rep < 2; rep++)
        emu_launch_ok(poly, (unsigned[3]){n / 128, 1, 1}, (unsigned[3]){128, 1, 1},
                      16 * sizeof(float), args, 3);
    emu_download(&f, y, dy, sizeof y);
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        for (int k = 15; k >= 0; k--)
            acc = acc * x[i] + c[k];
        g_assert_cmpfloat(y[i], ==, acc);
    }
    int count;
    emu_download(&f, &count, launches, sizeof count);
    g_assert_cmpint(count, ==, 2);
    emu_fixture_close(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_data_func("/emu/compat/vector_add", GINT_TO_POINTER(0), test_vector_add);
    g_test_add_data_func("/emu/compat/errors", GINT_TO_POINTER(0), test_errors_fill);
    g_test_add_data_func("/emu/compat/fault", GINT_TO_POINTER(0), test_fault);
    g_test_add_data_func("/emu/compat/grids", GINT_TO_POINTER(0), test_grids);
    g_test_add_data_func("/emu/compat/many_launches", GINT_TO_POINTER(0), test_many_launches);
    g_test_add_data_func("/emu/compat/pinned", GINT_TO_POINTER(0), test_pinned_square);
    g_test_add_data_func("/emu/compat/streams_events", GINT_TO_POINTER(0), test_streams_events);
    g_test_add_data_func("/emu/compat/symbols", GINT_TO_POINTER(0), test_symbols_poly);
    g_test_add_data_func("/emu/compat/sliced/vector_add", GINT_TO_POINTER(1), test_vector_add);
    g_test_add_data_func("/emu/compat/sliced/errors", GINT_TO_POINTER(1), test_errors_fill);
    g_test_add_data_func("/emu/compat/sliced/fault", GINT_TO_POINTER(1), test_fault);
    g_test_add_data_func("/emu/compat/sliced/grids", GINT_TO_POINTER(1), test_grids);
    g_test_add_data_func("/emu/compat/sliced/many_launches", GINT_TO_POINTER(1), test_many_launches);
    g_test_add_data_func("/emu/compat/sliced/pinned", GINT_TO_POINTER(1), test_pinned_square);
    g_test_add_data_func("/emu/compat/sliced/streams_events", GINT_TO_POINTER(1), test_streams_events);
    g_test_add_data_func("/emu/compat/sliced/symbols", GINT_TO_POINTER(1), test_symbols_poly);
    return g_test_run();
}
