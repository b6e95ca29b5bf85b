/* The cubin reader (kernelet/cubin.h) on cubins built with nvcc for sm_90 and sm_80:
 * architecture, kernels, module variables, and each kernel's parameter layout, compared
 * with what the PTX library reads from the PTX of the same source (and, for the benchmark
 * kernels, from the PTX beside their sm_75 cubins). Malformed cubins: every truncation, every
 * flipped byte and corrupted .nv.info records give an error, never a crash. */
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "kernelet/cubin.h"
#include "kernelet/ptx.h"

static kcubin *open_cubin(const guint8 *data, gsize size)
{
    kcubin *cb = NULL;
    kptx_error err;
    int rc = kcubin_open(data, size, &cb, &err);
    if (rc)
        g_error("kcubin_open: %s", err.message);
    return cb;
}

static kcubin *open_fixture(const char *name, guint8 **data, gsize *size)
{
    *data = fx_load(fx_path(name), size);
    g_assert_true(kcubin_is_cubin(*data, *size));
    return open_cubin(*data, *size);
}

/* Every kernel of cb against the PTX entry of the same name: count, offsets, sizes, block. */
static void compare_with_ptx(const kcubin *cb, const char *ptx_text)
{
    kptx_module *m = NULL;
    kptx_error err;
    if (kptx_parse(ptx_text, strlen(ptx_text), &m, &err))
        g_error("kptx_parse: %s", err.message);
    g_assert_cmpuint(cb->n_kernels, >, 0);
    for (unsigned i = 0; i < cb->n_kernels; i++) {
        const kcubin_kernel *k = &cb->kernels[i];
        kptx_kernel_info info;
        if (kptx_kernel_info_get(m, k->name, &info, &err))
            g_error("PTX has no entry %s: %s", k->name, err.message);
        g_assert_cmpuint(k->n_params, ==, info.n_params);
        g_assert_cmpuint(k->param_bytes, ==, info.param_bytes);
        for (unsigned p = 0; p < k->n_params; p++) {
            g_assert_cmpuint(k->params[p].offset, ==, info.params[p].offset);
            g_assert_cmpuint(k->params[p].size, ==, info.params[p].size);
        }
        kptx_kernel_info_clear(&info);
    }
    kptx_module_free(m);
}

static void test_kernels(void)
{
    guint8 *data;
    gsize size;
    kcubin *cb = open_fixture("CUBIN_90", &data, &size);
    g_assert_cmpuint(cb->arch, ==, 90);
    g_assert_false(cb->relocatable);
    g_assert_cmpuint(cb->n_kernels, ==, 6);     /* helper is a device function, not one */
    g_assert_null(kcubin_find_kernel(cb, "_Z6helperi"));

    const kcubin_kernel *k = kcubin_find_kernel(cb, "mixed");
    g_assert_nonnull(k);
    static const kcubin_param want[] = {{0, 1}, {8, 8}, {16, 12}, {28, 2}, {32, 8}};
    g_assert_cmpuint(k->n_params, ==, 5);
    g_assert_cmpmem(k->params, sizeof(want), want, sizeof(want));
    g_assert_cmpuint(k->param_bytes, ==, 40);
    g_assert_cmpuint(k->regs, >, 0);

    k = kcubin_find_kernel(cb, "noargs");
    g_assert_nonnull(k);
    g_assert_cmpuint(k->n_params, ==, 0);
    g_assert_cmpuint(k->param_bytes, ==, 0);

    k = kcubin_find_kernel(cb, "bounded");
    g_assert_nonnull(k);
    g_assert_cmpuint(k->max_threads, ==, 128);
    g_assert_nonnull(kcubin_find_kernel(cb, "_Z9templatedIdEvPT_S0_"));

    gchar *ptx = NULL;
    g_assert_true(g_file_get_contents(fx_path("CUBIN_PTX"), &ptx, NULL, NULL));
    compare_with_ptx(cb, ptx);
    g_free(ptx);
    kcubin_free(cb);
    g_free(data);
}

static void test_globals(void)
{
    guint8 *data;
    gsize size;
    kcubin *cb = open_fixture("CUBIN_90", &data, &size);
    static const struct { const char *name; uint64_t size; } want[] = {
        {"counter", 4}, {"table", 28}, {"coeffs", 16}};
    g_assert_cmpuint(cb->n_globals, ==, 3);
    for (unsigned w = 0; w < 3; w++) {
        unsigned i = 0;
        while (i < cb->n_globals && strcmp(cb->globals[i].name, want[w].name))
            i++;
        g_assert_cmpuint(i, <, cb->n_globals);
        g_assert_cmpuint(cb->globals[i].size, ==, want[w].size);
    }
    kcubin_free(cb);
    g_free(data);
}

static void test_arch_rules(void)
{
    guint8 *data;
    gsize size;
    kcubin *cb = open_fixture("CUBIN_80", &data, &size);
    g_assert_cmpuint(cb->arch, ==, 80);
    kcubin_free(cb);
    /* The ELF ABI before version 8 (CUDA 12 and older) kept the SM in bits 0-7 of e_flags
     * and the virtual SM in bits 16-23: 0x500550 for sm_80. */
    data[8] = 7;
    static const guint8 old_flags[] = {0x50, 0x05, 0x50, 0x00};
    memcpy(data + 0x30, old_flags, sizeof(old_flags));
    cb = open_cubin(data, size);
    g_assert_cmpuint(cb->arch, ==, 80);
    kcubin_free(cb);
    g_free(data);
    g_assert_true(kcubin_runs_on(90, 90));
    g_assert_true(kcubin_runs_on(80, 86));
    g_assert_false(kcubin_runs_on(80, 90));     /* SASS never crosses a major version */
    g_assert_false(kcubin_runs_on(86, 80));
    g_assert_false(kcubin_runs_on(0, 0));
}

/* The benchmark fatbins' sm_75 cubins agree with their compute_75 PTX. */
static void test_bench(void)
{
    char **fatbins = fx_path_list("BENCH_FATBINS");
    for (unsigned f = 0; fatbins[f]; f++) {
        kfatbin *fb = NULL;
        g_assert_cmpint(kfatbin_open_file(fatbins[f], &fb, NULL), ==, 0);
        gsize elf_size, ptx_size;
        guint8 *elf = fx_extract(fb, fx_find(fb, 0, KFATBIN_ELF, 75), &elf_size);
        guint8 *ptx = fx_extract(fb, fx_find(fb, 0, KFATBIN_PTX, 75), &ptx_size);
        kcubin *cb = open_cubin(elf, elf_size);
        g_assert_cmpuint(cb->arch, ==, 75);
        compare_with_ptx(cb, (const char *)ptx);
        kcubin_free(cb);
        g_free(elf);
        g_free(ptx);
        kfatbin_free(fb);
    }
    g_strfreev(fatbins);
}

/* Every prefix of the cubin: an error or a consistent result, never a crash (ASan run). */
static void test_truncated(void)
{
    guint8 *data;
    gsize size;
    kcubin_free(open_fixture("CUBIN_90", &data, &size));
    for (gsize n = 0; n < size; n++) {
        guint8 *copy = g_memdup2(data, n ? n : 1);  /* exact size: ASan sees overreads */
        kcubin *cb = NULL;
        kptx_error err;
        int rc = kcubin_open(copy, n, &cb, &err);
        if (rc) {
            g_assert_null(cb);
            g_assert_cmpint(err.code, ==, rc);
        }
        kcubin_free(cb);
        g_free(copy);
    }
    g_free(data);
}

/* Every byte of the cubin flipped in turn (headers, symbols, names, .nv.info records): an
 * error, or a result whose layouts stay inside their blocks, never a crash (ASan run). */
static void test_flipped(void)
{
    guint8 *data;
    gsize size;
    kcubin_free(open_fixture("CUBIN_90", &data, &size));
    guint8 *copy = g_malloc(size);
    for (gsize i = 0; i < size; i++) {
        memcpy(copy, data, size);
        copy[i] ^= 0xff;
        kcubin *cb = NULL;
        if (kcubin_open(copy, size, &cb, NULL))
            continue;
        for (unsigned k = 0; k < cb->n_kernels; k++)
            for (unsigned p = 0; p < cb->kernels[k].n_params; p++)
                g_assert_cmpuint(cb->kernels[k].params[p].offset + cb->kernels[k].params[p].size,
                                 <=, cb->kernels[k].param_bytes);
        kcubin_free(cb);
    }
    g_free(copy);
    g_free(data);
}

static int decode(const guint8 *p, gsize n, kcubin_kernel *k)
{
    memset(k, 0, sizeof(*k));
    kptx_error err;
    int rc = kcubin_decode_kernel_info(p, n, k, &err);
    g_assert_cmpint(err.code, ==, rc);
    return rc;
}

static void test_nvinfo_records(void)
{
    kcubin_kernel k;
    /* two parameters: ordinal 1 at 8 (8 bytes), ordinal 0 at 0 (4 bytes); block 16 */
    static const guint8 ok[] = {
        0x04, 0x17, 0x0c, 0x00, 0, 0, 0, 0, 0x01, 0x00, 0x08, 0x00, 0x00, 0xf0, 0x21, 0x00,
        0x04, 0x17, 0x0c, 0x00, 0, 0, 0, 0, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x11, 0x00,
        0x03, 0x19, 0x10, 0x00};
    g_assert_cmpint(decode(ok, sizeof(ok), &k), ==, 0);
    g_assert_cmpuint(k.n_params, ==, 2);
    g_assert_cmpuint(k.params[0].size, ==, 4);
    g_assert_cmpuint(k.params[1].offset, ==, 8);
    g_assert_cmpuint(k.param_bytes, ==, 16);
    free(k.params);
    /* the record's length runs past the section */
    g_assert_cmpint(decode(ok, 14, &k), ==, KPTX_ECORRUPT);
    free(k.params);
    /* parameter 0 only described as ordinal 1: a hole */
    g_assert_cmpint(decode(ok, 16, &k), ==, KPTX_ECORRUPT);
    free(k.params);
    /* the same ordinal twice */
    guint8 twice[32];
    memcpy(twice, ok, 16);
    memcpy(twice + 16, ok, 16);
    g_assert_cmpint(decode(twice, sizeof(twice), &k), ==, KPTX_ECORRUPT);
    free(k.params);
    /* a block smaller than its parameters */
    guint8 small[sizeof(ok)];
    memcpy(small, ok, sizeof(ok));
    small[sizeof(ok) - 2] = 8;
    g_assert_cmpint(decode(small, sizeof(small), &k), ==, KPTX_ECORRUPT);
    free(k.params);
    /* an unknown record format */
    static const guint8 fmt[] = {0x07, 0x17, 0x00, 0x00};
    g_assert_cmpint(decode(fmt, sizeof(fmt), &k), ==, KPTX_ECORRUPT);
    free(k.params);
    /* a parameter beyond CUDA's 32764-byte block */
    guint8 far[16];
    memcpy(far, ok, 16);
    far[10] = 0xff;
    far[11] = 0x7f;
    g_assert_cmpint(decode(far, sizeof(far), &k), ==, KPTX_ECORRUPT);
    free(k.params);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cubin/kernels", test_kernels);
    g_test_add_func("/cubin/globals", test_globals);
    g_test_add_func("/cubin/arch-rules", test_arch_rules);
    g_test_add_func("/cubin/bench-kernels", test_bench);
    g_test_add_func("/cubin/truncated", test_truncated);
    g_test_add_func("/cubin/flipped", test_flipped);
    g_test_add_func("/cubin/nvinfo-records", test_nvinfo_records);
    return g_test_run();
}
