/* Selection: the entry chosen for targets 75/80/86/90/100 (and a few more) on fatbins of
 * known content, worked out by hand from the rules in fatbin.h. */
#include <string.h>

#include "fixtures.h"

typedef struct expectation {
    unsigned target;
    const char *ptx_first;      /* prefer_ptx: "PTX75", "ELF100f", or NULL for none */
    const char *elf_first;      /* without prefer_ptx */
} expectation;

/* "PTX90a": kind, arch and the a/f suffix of an entry. */
static char *entry_label(const kfatbin_entry *e)
{
    const char *suffix = (e->flags & KFATBIN_FLAG_ARCH_SPECIFIC) ? "a"
                       : (e->flags & KFATBIN_FLAG_FAMILY_SPECIFIC) ? "f" : "";
    return g_strdup_printf("%s%u%s", e->kind == KFATBIN_PTX ? "PTX" : "ELF", e->arch, suffix);
}

static void expect_choice(const kfatbin *fb, unsigned image, unsigned target, bool prefer_ptx,
                          const char *want)
{
    unsigned idx = 12345;
    kptx_error err;
    int rc = image == UINT32_MAX ? kfatbin_select(fb, target, prefer_ptx, &idx, &err)
                                 : kfatbin_select_in(fb, image, target, prefer_ptx, &idx, &err);
    if (!want) {
        g_assert_cmpint(rc, ==, KPTX_ENOTFOUND);
        g_assert_cmpint(err.code, ==, KPTX_ENOTFOUND);
        return;
    }
    g_assert_cmpint(rc, ==, 0);
    char *got = entry_label(kfatbin_entry_at(fb, idx));
    if (strcmp(got, want) != 0)
        g_error("target %u, prefer_ptx %d: chose %s, expected %s", target, prefer_ptx, got,
                want);
    g_free(got);
}

static void expect_table(const char *fixture, const expectation *t, size_t n)
{
    kfatbin *fb = fx_open(fixture);
    for (size_t i = 0; i < n; i++) {
        expect_choice(fb, UINT32_MAX, t[i].target, true, t[i].ptx_first);
        expect_choice(fb, UINT32_MAX, t[i].target, false, t[i].elf_first);
    }
    kfatbin_free(fb);
}

/* ELF75 PTX75: the cubin runs only on 7.x; the PTX is JIT-compiled everywhere above. */
static void test_single(void)
{
    static const expectation t[] = {
        {70, NULL, NULL},
        {75, "PTX75", "ELF75"},
        {80, "PTX75", "PTX75"},
        {86, "PTX75", "PTX75"},
        {90, "PTX75", "PTX75"},
        {100, "PTX75", "PTX75"},
    };
    expect_table("single", t, G_N_ELEMENTS(t));
}

/* SASS only (what frameworks ship): an sm_90 cubin is chosen for sm_90 with or without
 * prefer_ptx; an sm_80 cubin runs on 8.x only, never on sm_90 (the server then answers
 * CUDA_ERROR_NO_BINARY_FOR_GPU). */
static void test_sass_only(void)
{
    static const expectation t90[] = {
        {80, NULL, NULL},
        {90, "ELF90", "ELF90"},
        {100, NULL, NULL},
    };
    static const expectation t80[] = {
        {75, NULL, NULL},
        {80, "ELF80", "ELF80"},
        {86, "ELF80", "ELF80"},
        {90, NULL, NULL},
    };
    expect_table("sass90", t90, G_N_ELEMENTS(t90));
    expect_table("sass80", t80, G_N_ELEMENTS(t80));
}

/* ELF75 PTX75 ELF80 ELF90 PTX90 ELF100: 86 takes the sm_80 cubin, 120 only PTX. */
static void test_multi(void)
{
    static const expectation t[] = {
        {70, NULL, NULL},
        {75, "PTX75", "ELF75"},
        {80, "PTX75", "ELF80"},
        {86, "PTX75", "ELF80"},
        {90, "PTX90", "ELF90"},
        {100, "PTX90", "ELF100"},
        {120, "PTX90", "PTX90"},
    };
    expect_table("multi", t, G_N_ELEMENTS(t));
    expect_table("multi_lz4", t, G_N_ELEMENTS(t));
    expect_table("multi_zstd", t, G_N_ELEMENTS(t));
}

/* ELF90a PTX90a ELF100f ELF120: 90a code runs on 9.0 only, 100f on 10.x from 10.0 up. */
static void test_specific(void)
{
    static const expectation t[] = {
        {75, NULL, NULL},
        {80, NULL, NULL},
        {86, NULL, NULL},
        {90, "PTX90a", "ELF90a"},
        {100, "ELF100f", "ELF100f"},
        {103, "ELF100f", "ELF100f"},
        {110, NULL, NULL},
        {120, "ELF120", "ELF120"},
        {121, "ELF120", "ELF120"},
    };
    expect_table("specific", t, G_N_ELEMENTS(t));
}

static void test_bench(void)
{
    static const expectation t[] = {
        {75, "PTX75", "ELF75"},
        {80, "PTX75", "PTX75"},
        {86, "PTX75", "PTX75"},
        {90, "PTX75", "PTX75"},
        {100, "PTX75", "PTX75"},
    };
    char **paths = fx_path_list("BENCH_FATBINS");
    for (char **p = paths; *p; p++) {
        kfatbin *fb = NULL;
        g_assert_cmpint(kfatbin_open_file(*p, &fb, NULL), ==, 0);
        for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
            expect_choice(fb, UINT32_MAX, t[i].target, true, t[i].ptx_first);
            expect_choice(fb, UINT32_MAX, t[i].target, false, t[i].elf_first);
        }
        kfatbin_free(fb);
    }
    g_strfreev(paths);
}

/* Prelinked (relocatable) entries of a version-2 wrapper are never chosen. */
static void test_relocatable_skipped(void)
{
    gsize n0, n1;
    guint8 *linked = fx_load(fx_path("single"), &n0), *pre = fx_load(fx_path("multi"), &n1);
    const void *prelinked[] = {pre, NULL};
    struct {
        int magic, version;
        const void *data;
        const void *const *prelinked;
    } w = {(int)KFATBIN_WRAPPER_MAGIC, 2, linked, prelinked};
    kfatbin *fb = NULL;
    g_assert_cmpint(kfatbin_open_wrapper(&w, &fb, NULL), ==, 0);
    expect_choice(fb, UINT32_MAX, 90, true, "PTX75");
    expect_choice(fb, UINT32_MAX, 90, false, "PTX75");
    expect_choice(fb, UINT32_MAX, 70, true, NULL);
    expect_choice(fb, 1, 90, true, NULL);
    kfatbin_free(fb);
    g_free(linked);
    g_free(pre);
}

/* In an executable each unit's fatbin is its own module: select_in stays inside one. */
static void test_per_image(void)
{
    kfatbin *fb = fx_open("exe");
    unsigned with_ptx = 0;
    for (unsigned img = 0; img < kfatbin_image_count(fb); img++) {
        char *spec = fx_image_spec(fb, img);
        if (strstr(spec, "PTX")) {
            expect_choice(fb, img, 90, true, "PTX80");
            expect_choice(fb, img, 86, false, "ELF80");
            unsigned idx;
            g_assert_cmpint(kfatbin_select_in(fb, img, 90, false, &idx, NULL), ==, 0);
            g_assert_cmpuint(kfatbin_entry_at(fb, idx)->fatbin_index, ==, img);
            with_ptx++;
        } else {
            expect_choice(fb, img, 90, true, NULL);
        }
        g_free(spec);
    }
    g_assert_cmpuint(with_ptx, ==, 2);
    /* across the whole view ties go to the lowest index */
    unsigned idx;
    g_assert_cmpint(kfatbin_select(fb, 86, false, &idx, NULL), ==, 0);
    for (unsigned i = 0; i < idx; i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        g_assert_false(e->kind == KFATBIN_ELF && e->arch == 80);
    }
    kfatbin_free(fb);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fatbin/select/single", test_single);
    g_test_add_func("/fatbin/select/multi", test_multi);
    g_test_add_func("/fatbin/select/sass-only", test_sass_only);
    g_test_add_func("/fatbin/select/specific", test_specific);
    g_test_add_func("/fatbin/select/bench", test_bench);
    g_test_add_func("/fatbin/select/relocatable-skipped", test_relocatable_skipped);
    g_test_add_func("/fatbin/select/per-image", test_per_image);
    return g_test_run();
}
