/* Extraction: PTX text equals nvcc -ptx output, cubins are CUDA ELF files for the entry's
 * architecture, compressed entries decompress to the bytes of the uncompressed build. */
#include <elf.h>
#include <string.h>

#include "fixtures.h"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

static void assert_same_ptx(const char *extracted, const char *reference_path)
{
    gsize n;
    char *ref = (char *)fx_load(reference_path, &n);
    char *a = fx_ptx_normalise(extracted), *b = fx_ptx_normalise(ref);
    g_assert_cmpstr(a, ==, b);
    g_free(a);
    g_free(b);
    g_free(ref);
}

static void assert_ptx_of(const char *fixture, unsigned arch, const char *reference)
{
    kfatbin *fb = fx_open(fixture);
    unsigned i = fx_find(fb, 0, KFATBIN_PTX, arch);
    gsize n;
    char *text = (char *)fx_extract(fb, i, &n);
    g_assert_cmpuint(n, ==, strlen(text));
    g_assert_cmpuint(n, <, kfatbin_entry_at(fb, i)->size);
    assert_same_ptx(text, fx_path(reference));
    g_free(text);
    kfatbin_free(fb);
}

static void test_ptx_matches_nvcc(void)
{
    assert_ptx_of("single", 75, "PTX_75");
    assert_ptx_of("multi", 75, "PTX_75");
    assert_ptx_of("multi", 90, "PTX_90");
    assert_ptx_of("multi_raw", 90, "PTX_90");
    assert_ptx_of("multi_lz4", 75, "PTX_75");
    assert_ptx_of("multi_zstd", 90, "PTX_90");
}

/* A cubin: 64-bit little-endian ELF for EM_CUDA whose e_flags name the SM architecture
 * (bits 8-15 in the ABI version 8 layout nvcc 13 writes). */
static void assert_cubin(const guint8 *elf, gsize n, unsigned arch, unsigned type)
{
    Elf64_Ehdr eh;
    g_assert_cmpuint(n, >=, sizeof(eh));
    memcpy(&eh, elf, sizeof(eh));
    g_assert_cmpmem(eh.e_ident, SELFMAG, ELFMAG, SELFMAG);
    g_assert_cmpint(eh.e_ident[EI_CLASS], ==, ELFCLASS64);
    g_assert_cmpint(eh.e_ident[EI_DATA], ==, ELFDATA2LSB);
    g_assert_cmpint(eh.e_machine, ==, EM_CUDA);
    g_assert_cmpint(eh.e_type, ==, type);
    g_assert_cmpint(eh.e_ident[EI_ABIVERSION], >=, 8);
    g_assert_cmpuint((eh.e_flags >> 8) & 0xff, ==, arch);
    /* the section headers lie inside the extracted bytes */
    g_assert_cmpuint(eh.e_shoff + (guint64)eh.e_shnum * eh.e_shentsize, <=, n);
}

static void assert_cubins(const char *fixture, unsigned type)
{
    kfatbin *fb = fx_open(fixture);
    unsigned cubins = 0;
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        if (e->kind != KFATBIN_ELF)
            continue;
        gsize n;
        guint8 *elf = fx_extract(fb, i, &n);
        g_assert_cmpuint(n, ==, e->size);
        assert_cubin(elf, n, e->arch, type);
        g_free(elf);
        cubins++;
    }
    g_assert_cmpuint(cubins, >, 0);
    kfatbin_free(fb);
}

static void test_cubins(void)
{
    assert_cubins("single", ET_EXEC);
    assert_cubins("multi", ET_EXEC);
    assert_cubins("multi_lz4", ET_EXEC);
    assert_cubins("multi_zstd", ET_EXEC);
    assert_cubins("specific", ET_EXEC);
    assert_cubins("debug", ET_EXEC);
    assert_cubins("rdc", ET_REL);
}

/* The compressed builds hold exactly the payloads of the uncompressed one. */
static void assert_same_payloads(const char *fixture, const char *raw_fixture)
{
    kfatbin *fb = fx_open(fixture), *raw = fx_open(raw_fixture);
    g_assert_cmpuint(kfatbin_count(fb), ==, kfatbin_count(raw));
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        unsigned j = fx_find(raw, 0, e->kind, e->arch);
        gsize n, m;
        guint8 *a = fx_extract(fb, i, &n), *b = fx_extract(raw, j, &m);
        g_assert_cmpmem(a, n, b, m);
        g_free(a);
        g_free(b);
    }
    kfatbin_free(fb);
    kfatbin_free(raw);
}

static void test_compressed_equals_raw(void)
{
    assert_same_payloads("multi_lz4", "multi_raw");
    assert_same_payloads("multi_zstd", "multi_raw");
    assert_same_payloads("multi", "multi_raw");
}

static void test_bench(void)
{
    char **fatbins = fx_path_list("BENCH_FATBINS"), **ptx = fx_path_list("BENCH_PTX");
    g_assert_cmpuint(g_strv_length(fatbins), ==, g_strv_length(ptx));
    for (unsigned k = 0; fatbins[k]; k++) {
        kfatbin *fb = NULL;
        g_assert_cmpint(kfatbin_open_file(fatbins[k], &fb, NULL), ==, 0);
        gsize n;
        char *text = (char *)fx_extract(fb, fx_find(fb, 0, KFATBIN_PTX, 75), &n);
        assert_same_ptx(text, ptx[k]);
        g_free(text);
        guint8 *elf = fx_extract(fb, fx_find(fb, 0, KFATBIN_ELF, 75), &n);
        assert_cubin(elf, n, 75, ET_EXEC);
        g_free(elf);
        kfatbin_free(fb);
    }
    g_strfreev(fatbins);
    g_strfreev(ptx);
}

/* LTO IR is listed but not extracted (its encoding is not public). */
static void test_ltoir(void)
{
    kfatbin *fb = fx_open("lto");
    g_assert_cmpuint(kfatbin_count(fb), ==, 1);
    g_assert_cmpint(kfatbin_entry_at(fb, 0)->kind, ==, KFATBIN_LTOIR);
    uint8_t *data = NULL;
    size_t n;
    kptx_error err;
    g_assert_cmpint(kfatbin_extract(fb, 0, &data, &n, &err), ==, KPTX_EUNSUPPORTED);
    g_assert_null(data);
    unsigned idx;
    g_assert_cmpint(kfatbin_select(fb, 80, true, &idx, &err), ==, KPTX_ENOTFOUND);
    kfatbin_free(fb);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fatbin/extract/ptx-matches-nvcc", test_ptx_matches_nvcc);
    g_test_add_func("/fatbin/extract/cubins", test_cubins);
    g_test_add_func("/fatbin/extract/compressed-equals-raw", test_compressed_equals_raw);
    g_test_add_func("/fatbin/extract/bench", test_bench);
    g_test_add_func("/fatbin/extract/ltoir", test_ltoir);
    return g_test_run();
}
