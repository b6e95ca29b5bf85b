/* Opening and listing: fatbin files, ELF files, wrappers, concatenations, against what the
 * nvcc commands that built them asked for. */
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include <fatbinary_section.h>

#include "fixtures.h"

static const char *const fatbin_names[] = {
    "single", "multi", "multi_raw", "multi_lz4", "multi_zstd", "specific", "debug", "rdc", "lto", "sass90", "sass80",
};

static void assert_spec(const kfatbin *fb, unsigned image, const char *expected)
{
    char *got = fx_image_spec(fb, image), *want = fx_sorted_spec(expected);
    g_assert_cmpstr(got, ==, want);
    g_free(got);
    g_free(want);
}

/* A fatbin file is exactly one image: the view holds it byte for byte. */
static void test_fatbin_files(void)
{
    for (unsigned n = 0; n < G_N_ELEMENTS(fatbin_names); n++) {
        const char *name = fatbin_names[n];
        gsize file_size;
        guint8 *file = fx_load(fx_path(name), &file_size);
        kfatbin *fb = fx_open(name);
        g_assert_cmpuint(kfatbin_image_count(fb), ==, 1);
        assert_spec(fb, 0, fx_spec(name));
        size_t size = 0;
        const uint8_t *image = kfatbin_image_data(fb, 0, &size);
        g_assert_cmpmem(image, size, file, file_size);
        size_t declared = 0;
        g_assert_cmpint(kfatbin_image_size(file, file_size, &declared, NULL), ==, 0);
        g_assert_cmpuint(declared, ==, file_size);
        g_assert_cmpint(kfatbin_image_size(file, SIZE_MAX, &declared, NULL), ==, 0);
        g_assert_cmpuint(declared, ==, file_size);
        kfatbin_free(fb);
        g_free(file);
    }
}

static void assert_all_compressed(const char *name, kfatbin_compression c, uint64_t flag)
{
    kfatbin *fb = fx_open(name);
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        g_assert_cmpint(e->compression, ==, c);
        g_assert_true(e->flags & flag);
        g_assert_cmpuint(e->stored_size, <, e->size);
    }
    kfatbin_free(fb);
}

/* --compress-mode=speed gives LZ4, size gives ZSTD, none leaves everything raw; nvcc's
 * default compresses only PTX. */
static void test_compression(void)
{
    assert_all_compressed("multi_lz4", KFATBIN_LZ4, KFATBIN_FLAG_LZ4);
    assert_all_compressed("multi_zstd", KFATBIN_ZSTD, KFATBIN_FLAG_ZSTD);
    kfatbin *fb = fx_open("multi_raw");
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        g_assert_cmpint(e->compression, ==, KFATBIN_RAW);
        g_assert_false(e->flags & (KFATBIN_FLAG_LZ4 | KFATBIN_FLAG_ZSTD));
        g_assert_cmpuint(e->stored_size, ==, e->size);
    }
    kfatbin_free(fb);
    fb = fx_open("multi");
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        g_assert_cmpint(e->compression, ==, e->kind == KFATBIN_PTX ? KFATBIN_ZSTD : KFATBIN_RAW);
        g_assert_true(e->flags & KFATBIN_FLAG_64BIT);
        g_assert_true(e->flags & KFATBIN_FLAG_LINUX);
    }
    kfatbin_free(fb);
}

/* The PTX entry's version is the ISA version that nvcc -ptx writes for the same source. */
static void test_ptx_version(void)
{
    gsize n;
    char *ptx = (char *)fx_load(fx_path("PTX_75"), &n);
    const char *v = strstr(ptx, "\n.version ");
    g_assert_nonnull(v);
    unsigned major = 0, minor = 0;
    g_assert_cmpint(sscanf(v, "\n.version %u.%u", &major, &minor), ==, 2);
    kfatbin *fb = fx_open("single");
    const kfatbin_entry *e = kfatbin_entry_at(fb, fx_find(fb, 0, KFATBIN_PTX, 75));
    g_assert_cmpuint(e->version_major, ==, major);
    g_assert_cmpuint(e->version_minor, ==, minor);
    g_assert_cmpstr(e->name, ==, "");
    g_assert_cmpstr(e->options, ==, "");
    g_assert_false(e->relocatable);
    kfatbin_free(fb);
    g_free(ptx);
}

/* -G marks entries debug and names the source; the PTX carries -g for its JIT. -rdc PTX
 * must only be compiled, not linked, by the JIT. */
static void test_debug_and_rdc(void)
{
    kfatbin *fb = fx_open("debug");
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        g_assert_true(e->flags & KFATBIN_FLAG_DEBUG);
        g_assert_true(g_str_has_suffix(e->name, "vec_add.cu"));
    }
    const kfatbin_entry *ptx = kfatbin_entry_at(fb, fx_find(fb, 0, KFATBIN_PTX, 80));
    g_assert_nonnull(strstr(ptx->options, "-g"));
    kfatbin_free(fb);
    fb = fx_open("rdc");
    ptx = kfatbin_entry_at(fb, fx_find(fb, 0, KFATBIN_PTX, 75));
    g_assert_nonnull(strstr(ptx->options, "--compile-only"));
    g_assert_false(kfatbin_entry_at(fb, 0)->flags & KFATBIN_FLAG_DEBUG);
    kfatbin_free(fb);
}

/* Images holding PTX whose text contains kernel; asserts their entries are `spec`. */
static unsigned images_with_kernel(const kfatbin *fb, const char *kernel, const char *spec)
{
    unsigned found = 0;
    for (unsigned img = 0; img < kfatbin_image_count(fb); img++) {
        for (unsigned i = 0; i < kfatbin_count(fb); i++) {
            const kfatbin_entry *e = kfatbin_entry_at(fb, i);
            if (e->fatbin_index != img || e->kind != KFATBIN_PTX)
                continue;
            gsize n;
            char *text = (char *)fx_extract(fb, i, &n);
            if (strstr(text, kernel)) {
                assert_spec(fb, img, spec);
                found++;
            }
            g_free(text);
        }
    }
    return found;
}

/* The section headers of an ELF file, read with <elf.h> (independently of the library). */
static const Elf64_Shdr *test_section(const guint8 *elf, gsize size, const char *name)
{
    Elf64_Ehdr eh;
    g_assert_cmpuint(size, >=, sizeof(eh));
    memcpy(&eh, elf, sizeof(eh));
    g_assert_cmpuint(eh.e_shoff + (guint64)eh.e_shnum * sizeof(Elf64_Shdr), <=, size);
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(elf + eh.e_shoff);
    const char *names = (const char *)elf + sh[eh.e_shstrndx].sh_offset;
    for (unsigned i = 0; i < eh.e_shnum; i++)
        if (strcmp(names + sh[i].sh_name, name) == 0)
            return &sh[i];
    return NULL;
}

/* Every wrapper in .nvFatBinSegment points at a fatbin the reader found in .nv_fatbin, and
 * every fatbin found has a wrapper: the back-to-back reading finds exactly the images. */
static void assert_images_match_wrappers(const char *name, const kfatbin *fb)
{
    gsize size;
    guint8 *elf = fx_load(fx_path(name), &size);
    const Elf64_Shdr *seg = test_section(elf, size, ".nvFatBinSegment");
    const Elf64_Shdr *data = test_section(elf, size, ".nv_fatbin");
    g_assert_nonnull(seg);
    g_assert_nonnull(data);
    unsigned n = seg->sh_size / sizeof(__fatBinC_Wrapper_t);
    g_assert_cmpuint(n, ==, kfatbin_image_count(fb));
    for (unsigned w = 0; w < n; w++) {
        __fatBinC_Wrapper_t wrapper;
        memcpy(&wrapper, elf + seg->sh_offset + w * sizeof(wrapper), sizeof(wrapper));
        g_assert_cmpint(wrapper.magic, ==, FATBINC_MAGIC);
        guint64 off = (guint64)(uintptr_t)wrapper.data - data->sh_addr;
        g_assert_cmpuint(off, <, data->sh_size);
        gboolean matched = FALSE;
        for (unsigned img = 0; img < kfatbin_image_count(fb); img++) {
            size_t len;
            const uint8_t *bytes = kfatbin_image_data(fb, img, &len);
            if (off + len <= data->sh_size &&
                memcmp(elf + data->sh_offset + off, bytes, len) == 0)
                matched = TRUE;
        }
        g_assert_true(matched);
    }
    g_free(elf);
}

/* An executable of two units: one fatbin per unit (plus the device-link stub's, cubin
 * only), each with the entries asked for. */
static void test_executable(void)
{
    kfatbin *fb = fx_open("exe");
    g_assert_cmpuint(kfatbin_image_count(fb), >=, 2);
    g_assert_cmpuint(images_with_kernel(fb, "tu_a_kernel", fx_spec("ELF")), ==, 1);
    g_assert_cmpuint(images_with_kernel(fb, "tu_b_kernel", fx_spec("ELF")), ==, 1);
    unsigned with_ptx = 0;
    for (unsigned img = 0; img < kfatbin_image_count(fb); img++) {
        char *spec = fx_image_spec(fb, img);
        with_ptx += strstr(spec, "PTX") != NULL;
        g_free(spec);
    }
    g_assert_cmpuint(with_ptx, ==, 2);
    assert_images_match_wrappers("exe", fb);
    kfatbin_free(fb);
}

static void test_shared_and_object(void)
{
    kfatbin *fb = fx_open("so");
    g_assert_cmpuint(images_with_kernel(fb, "shlib_kernel", fx_spec("ELF")), ==, 1);
    assert_images_match_wrappers("so", fb);
    kfatbin_free(fb);
    fb = fx_open("obj");
    g_assert_cmpuint(kfatbin_image_count(fb), ==, 1);
    g_assert_cmpuint(images_with_kernel(fb, "vec_scale", fx_spec("ELF")), ==, 1);
    kfatbin_free(fb);
}

static void test_bench_fatbins(void)
{
    char **paths = fx_path_list("BENCH_FATBINS");
    g_assert_cmpuint(g_strv_length(paths), ==, 8);
    for (char **p = paths; *p; p++) {
        kfatbin *fb = NULL;
        g_assert_cmpint(kfatbin_open_file(*p, &fb, NULL), ==, 0);
        g_assert_cmpuint(kfatbin_image_count(fb), ==, 1);
        assert_spec(fb, 0, fx_spec("BENCH"));
        kfatbin_free(fb);
    }
    g_strfreev(paths);
}

/* Wrappers built with NVIDIA's own struct (fatbinary_section.h) around loaded fatbins. */
static void test_wrapper_v1(void)
{
    gsize size;
    guint8 *data = fx_load(fx_path("multi"), &size);
    __fatBinC_Wrapper_t w = {FATBINC_MAGIC, FATBINC_VERSION, (const unsigned long long *)data,
                             NULL};
    kfatbin *fb = NULL;
    kptx_error err;
    g_assert_cmpint(kfatbin_open_wrapper(&w, &fb, &err), ==, 0);
    g_assert_cmpuint(kfatbin_image_count(fb), ==, 1);
    assert_spec(fb, 0, fx_spec("multi"));
    size_t len;
    g_assert_cmpmem(kfatbin_image_data(fb, 0, &len), len, data, size);
    kfatbin_free(fb);
    g_free(data);
}

static void test_wrapper_v2(void)
{
    gsize n0, n1, n2;
    guint8 *linked = fx_load(fx_path("multi"), &n0);
    guint8 *pre1 = fx_load(fx_path("rdc"), &n1);
    guint8 *pre2 = fx_load(fx_path("single"), &n2);
    void *prelinked[] = {pre1, pre2, NULL};
    __fatBinC_Wrapper_t w = {FATBINC_MAGIC, FATBINC_LINK_VERSION,
                             (const unsigned long long *)linked, prelinked};
    kfatbin *fb = NULL;
    g_assert_cmpint(kfatbin_open_wrapper(&w, &fb, NULL), ==, 0);
    g_assert_cmpuint(kfatbin_image_count(fb), ==, 3);
    assert_spec(fb, 0, fx_spec("multi"));
    assert_spec(fb, 1, fx_spec("rdc"));
    assert_spec(fb, 2, fx_spec("single"));
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        g_assert_cmpint(e->relocatable, ==, e->fatbin_index > 0);
    }
    kfatbin_free(fb);
    /* version 2 without prelinked fatbins: the linked one alone */
    w.filename_or_fatbins = NULL;
    g_assert_cmpint(kfatbin_open_wrapper(&w, &fb, NULL), ==, 0);
    g_assert_cmpuint(kfatbin_image_count(fb), ==, 1);
    kfatbin_free(fb);
    g_free(linked);
    g_free(pre1);
    g_free(pre2);
}

static void test_wrapper_rejected(void)
{
    gsize size;
    guint8 *data = fx_load(fx_path("single"), &size);
    __fatBinC_Wrapper_t w = {FATBINC_MAGIC + 1, 1, (const unsigned long long *)data, NULL};
    kfatbin *fb = (kfatbin *)&w;
    kptx_error err;
    g_assert_cmpint(kfatbin_open_wrapper(&w, &fb, &err), ==, KPTX_ECORRUPT);
    g_assert_null(fb);
    g_assert_cmpint(err.code, ==, KPTX_ECORRUPT);
    g_assert_nonnull(strstr(err.message, "magic"));
    w.magic = FATBINC_MAGIC;
    w.version = 3;
    g_assert_cmpint(kfatbin_open_wrapper(&w, &fb, &err), ==, KPTX_EUNSUPPORTED);
    w.version = 1;
    w.data = NULL;
    g_assert_cmpint(kfatbin_open_wrapper(&w, &fb, &err), ==, KPTX_ECORRUPT);
    /* a wrapper's bytes in a buffer are not a fatbin */
    g_assert_cmpint(kfatbin_open(&w, sizeof(w), &fb, &err), ==, KPTX_EINVAL);
    g_free(data);
}

/* Fatbins back to back, with and without zero padding between and after them. */
static void test_concatenated(void)
{
    gsize n1, n2;
    guint8 *a = fx_load(fx_path("single"), &n1);
    guint8 *b = fx_load(fx_path("multi"), &n2);
    for (unsigned pad = 0; pad <= 24; pad += 8) {
        GByteArray *buf = g_byte_array_new();
        static const guint8 zeros[32];
        g_byte_array_append(buf, a, n1);
        g_byte_array_append(buf, zeros, pad);
        g_byte_array_append(buf, b, n2);
        g_byte_array_append(buf, zeros, pad);
        kfatbin *fb = NULL;
        g_assert_cmpint(kfatbin_open(buf->data, buf->len, &fb, NULL), ==, 0);
        g_assert_cmpuint(kfatbin_image_count(fb), ==, 2);
        assert_spec(fb, 0, fx_spec("single"));
        assert_spec(fb, 1, fx_spec("multi"));
        kfatbin_free(fb);
        g_byte_array_free(buf, TRUE);
    }
    g_free(a);
    g_free(b);
}

static void test_bad_arguments(void)
{
    kfatbin *fb = NULL;
    kptx_error err;
    uint8_t *data;
    size_t size;
    unsigned idx;
    g_assert_cmpint(kfatbin_open(NULL, 16, &fb, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kfatbin_open("x", 1, NULL, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kfatbin_open_wrapper(NULL, &fb, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kfatbin_open_file(NULL, &fb, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kfatbin_open_file("/nonexistent/kfatbin", &fb, &err), ==, KPTX_EIO);
    g_assert_nonnull(strstr(err.message, "/nonexistent/kfatbin"));
    g_assert_cmpint(kfatbin_open_file("/", &fb, &err), ==, KPTX_EIO);
    g_assert_cmpint(kfatbin_image_size(NULL, 16, &size, &err), ==, KPTX_EINVAL);
    fb = fx_open("single");
    g_assert_null(kfatbin_entry_at(fb, kfatbin_count(fb)));
    g_assert_null(kfatbin_image_data(fb, 1, &size));
    g_assert_cmpint(kfatbin_extract(fb, kfatbin_count(fb), &data, &size, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kfatbin_extract(fb, 0, NULL, &size, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kfatbin_select_in(fb, 1, 75, true, &idx, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kfatbin_select(NULL, 75, true, &idx, &err), ==, KPTX_EINVAL);
    kfatbin_free(fb);
    kfatbin_free(NULL);
    g_assert_cmpuint(kfatbin_count(NULL), ==, 0);
    g_assert_cmpuint(kfatbin_image_count(NULL), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fatbin/read/fatbin-files", test_fatbin_files);
    g_test_add_func("/fatbin/read/compression", test_compression);
    g_test_add_func("/fatbin/read/ptx-version", test_ptx_version);
    g_test_add_func("/fatbin/read/debug-and-rdc", test_debug_and_rdc);
    g_test_add_func("/fatbin/read/executable", test_executable);
    g_test_add_func("/fatbin/read/shared-and-object", test_shared_and_object);
    g_test_add_func("/fatbin/read/bench", test_bench_fatbins);
    g_test_add_func("/fatbin/read/wrapper-v1", test_wrapper_v1);
    g_test_add_func("/fatbin/read/wrapper-v2", test_wrapper_v2);
    g_test_add_func("/fatbin/read/wrapper-rejected", test_wrapper_rejected);
    g_test_add_func("/fatbin/read/concatenated", test_concatenated);
    g_test_add_func("/fatbin/read/bad-arguments", test_bad_arguments);
    return g_test_run();
}
