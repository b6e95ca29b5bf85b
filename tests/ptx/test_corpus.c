/* The PTX corpus through parser, printer and slicer, checked with ptxas:
 *   round trip  parse -> print -> ptxas gives the cubin of the original (see cubin_equal)
 *   stable      printing the re-parsed print gives the same text
 *   verdicts    every entry is sliceable unless listed below with the expected reason
 *   slice       the sliced module assembles for sm_75 (when the target allows) and sm_90;
 *               each sliced entry uses at most 2 registers more than its original;
 *               the extra parameters follow the PTX ABI; slicing again adds nothing
 *   test-ptx-corpus --ptxas PTXAS FILE.ptx...   */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"
#include "ptx_test_util.h"
#include "ptxas_util.h"

#define MAX_REG_GROWTH 2

static const char *ptxas_path;

/* Entries that must not be sliced, with a word the reason must contain. */
static const struct {
    const char *kernel;
    const char *reason;
} unsliceable[] = {
    {"coop_sum", "%envreg"},
    {"cluster_rank", "cluster"},
    {"cluster_reg", "%cluster_ctarank"},
    {"dl_parent", "device-side launch"},
    {"apply_grid", "called through a pointer"},
    {"gridid_probe", "%gridid"},
    {"calls_extern", "ext_helper"},
    {"unknown_op", "frobnicate"},
    {"unknown_sreg", "%ctaid.w"},
    {"param_limit", "no room"},
};

/* Files ptxas rejects on purpose (they test the parser's verdicts only). */
static const char *const not_assemblable[] = {"unknown_op.ptx", "unknown_sreg.ptx"};

typedef struct corpus_file {
    char *path;
    char *base;
    char *text;
    size_t len;
} corpus_file;

static bool assemblable(const corpus_file *cf)
{
    for (size_t i = 0; i < G_N_ELEMENTS(not_assemblable); i++)
        if (strcmp(cf->base, not_assemblable[i]) == 0)
            return false;
    return true;
}

/* Relocatable (-c) when the module calls functions ptxas cannot resolve by itself. */
static bool needs_c(const kptx_module *m)
{
    static const char *const builtin[] = {"vprintf", "malloc", "free", "__assertfail"};
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        if (it->kind != KPTX_ITEM_FUNCTION || !it->u.fn.linkage ||
            strcmp(it->u.fn.linkage, ".extern") != 0 ||
            kptx_find_function(m, it->u.fn.name)->has_body)
            continue;
        bool known = false;
        for (size_t k = 0; k < G_N_ELEMENTS(builtin); k++)
            known |= strcmp(it->u.fn.name, builtin[k]) == 0;
        if (!known)
            return true;
    }
    return false;
}

static void test_round_trip(gconstpointer data)
{
    const corpus_file *cf = data;
    kptx_module *m = test_parse_n(cf->text, cf->len, cf->path);
    size_t len;
    char *printed = test_print(m, &len);

    /* printing what was printed changes nothing */
    kptx_module *m2 = test_parse_n(printed, len, "printed text");
    size_t len2;
    char *printed2 = test_print(m2, &len2);
    g_assert_cmpstr(printed, ==, printed2);

    if (assemblable(cf)) {
        GBytes *orig, *back;
        char *log1, *log2, why[256] = "";
        bool c = needs_c(m);
        if (!ptxas_run(ptxas_path, cf->text, cf->len, m->target, c, false, &orig, &log1))
            g_error("ptxas rejects the original %s: %s", cf->base, log1);
        if (!ptxas_run(ptxas_path, printed, len, m->target, c, false, &back, &log2))
            g_error("ptxas rejects the printed %s: %s", cf->base, log2);
        if (!cubin_equal(orig, back, why, sizeof why))
            g_error("%s: round trip changes the cubin: %s", cf->base, why);
        g_bytes_unref(orig);
        g_bytes_unref(back);
        g_free(log1);
        g_free(log2);
    }
    free(printed);
    free(printed2);
    kptx_module_free(m);
    kptx_module_free(m2);
}

static const char *expected_reason(const char *kernel)
{
    for (size_t i = 0; i < G_N_ELEMENTS(unsliceable); i++)
        if (strcmp(kernel, unsliceable[i].kernel) == 0)
            return unsliceable[i].reason;
    return NULL;
}

/* Entries of m (with bodies), in order. */
static GPtrArray *entries_of(const kptx_module *m)
{
    GPtrArray *a = g_ptr_array_new();
    for (unsigned i = 0; i < m->n_items; i++)
        if (m->items[i].kind == KPTX_ITEM_FUNCTION && m->items[i].u.fn.is_entry &&
            m->items[i].u.fn.has_body)
            g_ptr_array_add(a, (gpointer)m->items[i].u.fn.name);
    return a;
}

static void test_verdicts(gconstpointer data)
{
    const corpus_file *cf = data;
    kptx_module *m = test_parse_n(cf->text, cf->len, cf->path);
    GPtrArray *names = entries_of(m);
    g_assert_cmpuint(names->len, >, 0);
    for (unsigned i = 0; i < names->len; i++) {
        const char *name = names->pdata[i];
        kptx_kernel_info info;
        kptx_error err = {0};
        g_assert_cmpint(kptx_kernel_info_get(m, name, &info, &err), ==, 0);
        const char *reason = expected_reason(name);
        if (reason) {
            if (info.sliceable)
                g_error("%s: %s is reported sliceable", cf->base, name);
            if (!strstr(info.why_not, reason))
                g_error("%s: %s: reason '%s' lacks '%s'", cf->base, name, info.why_not, reason);
        } else if (!info.sliceable) {
            g_error("%s: %s is reported not sliceable: %s", cf->base, name, info.why_not);
        }
        kptx_kernel_info_clear(&info);
    }
    g_ptr_array_unref(names);
    kptx_module_free(m);
}

/* The sliced entry's parameters: the original ones, then four .u32 at the next multiple
 * of 4 (ABI alignment of .u32). */
static void check_sliced_params(const kptx_module *m, const char *name)
{
    char sliced[512];
    g_assert_cmpint(kptx_slice_name(name, sliced, sizeof sliced), ==, 0);
    kptx_kernel_info a, b;
    kptx_error err = {0};
    g_assert_cmpint(kptx_kernel_info_get(m, name, &a, &err), ==, 0);
    g_assert_cmpint(kptx_kernel_info_get(m, sliced, &b, &err), ==, 0);
    g_assert_cmpuint(b.n_params, ==, a.n_params + KPTX_SLICE_EXTRA_PARAMS);
    for (unsigned i = 0; i < a.n_params; i++) {
        g_assert_cmpuint(b.params[i].offset, ==, a.params[i].offset);
        g_assert_cmpuint(b.params[i].size, ==, a.params[i].size);
    }
    uint32_t off = (a.param_bytes + 3) / 4 * 4;
    for (unsigned i = 0; i < KPTX_SLICE_EXTRA_PARAMS; i++) {
        g_assert_cmpuint(b.params[a.n_params + i].offset, ==, off + 4 * i);
        g_assert_cmpuint(b.params[a.n_params + i].size, ==, 4);
    }
    g_assert_cmpuint(b.param_bytes, ==, off + 16);
    g_assert_false(b.sliceable);
    kptx_kernel_info_clear(&a);
    kptx_kernel_info_clear(&b);
}

static void check_registers(const corpus_file *cf, const kptx_module *m, GPtrArray *sliced,
                            const char *arch, const char *text, size_t len)
{
    GBytes *cubin;
    char *log;
    if (!ptxas_run(ptxas_path, text, len, arch, needs_c(m), true, &cubin, &log))
        g_error("ptxas %s rejects the sliced %s: %s", arch, cf->base, log);
    for (unsigned i = 0; i < sliced->len; i++) {
        const char *name = sliced->pdata[i];
        char sname[512];
        kptx_slice_name(name, sname, sizeof sname);
        int r0 = ptxas_registers(log, name), r1 = ptxas_registers(log, sname);
        g_assert_cmpint(r0, >=, 0);
        g_assert_cmpint(r1, >=, 0);
        g_test_message("registers %s %s %s: %d -> %d (%+d)", cf->base, arch, name, r0, r1, r1 - r0);
        if (r1 - r0 > MAX_REG_GROWTH)
            g_error("%s: %s on %s grows from %d to %d registers", cf->base, name, arch, r0, r1);
    }
    g_bytes_unref(cubin);
    g_free(log);
}

static void test_slice(gconstpointer data)
{
    const corpus_file *cf = data;
    kptx_module *m = test_parse_n(cf->text, cf->len, cf->path);
    GPtrArray *names = entries_of(m), *sliceable = g_ptr_array_new();
    for (unsigned i = 0; i < names->len; i++)
        if (!expected_reason(names->pdata[i]))
            g_ptr_array_add(sliceable, names->pdata[i]);
    unsigned n = 0;
    kptx_error err = {0};
    g_assert_cmpint(kptx_slice_module(m, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, sliceable->len);
    for (unsigned i = 0; i < sliceable->len; i++)
        check_sliced_params(m, sliceable->pdata[i]);
    size_t len;
    char *text = test_print(m, &len);

    /* idempotent, on the module and on the printed text */
    unsigned again = 1;
    g_assert_cmpint(kptx_slice_module(m, &again, &err), ==, 0);
    g_assert_cmpuint(again, ==, 0);
    kptx_module *m2 = test_parse_n(text, len, "sliced text");
    g_assert_cmpint(kptx_slice_module(m2, &again, &err), ==, 0);
    g_assert_cmpuint(again, ==, 0);
    kptx_module_free(m2);

    if (assemblable(cf)) {
        if (strcmp(m->target, "sm_75") == 0)
            check_registers(cf, m, sliceable, "sm_75", text, len);
        check_registers(cf, m, sliceable, "sm_90", text, len);
    }
    free(text);
    g_ptr_array_unref(names);
    g_ptr_array_unref(sliceable);
    kptx_module_free(m);
}

/* The fenced entry's parameters: the original ones, then the window's base and mask
 * (.u64) at the next multiple of 8. */
static void check_fenced_params(const kptx_module *m, const char *name, const kptx_kernel_info *a)
{
    kptx_kernel_info b;
    kptx_error err = {0};
    g_assert_cmpint(kptx_kernel_info_get(m, name, &b, &err), ==, 0);
    g_assert_cmpuint(b.n_params, ==, a->n_params + KPTX_FENCE_EXTRA_PARAMS);
    for (unsigned i = 0; i < a->n_params; i++)
        g_assert_cmpuint(b.params[i].offset, ==, a->params[i].offset);
    uint32_t off = kptx_fence_param_offset(a->param_bytes);
    for (unsigned i = 0; i < KPTX_FENCE_EXTRA_PARAMS; i++) {
        g_assert_cmpuint(b.params[a->n_params + i].offset, ==, off + 8 * i);
        g_assert_cmpuint(b.params[a->n_params + i].size, ==, 8);
    }
    kptx_kernel_info_clear(&b);
}

#define CUDA_FENCE_FLAGS (KPTX_FENCE_VARS_OUTSIDE | KPTX_FENCE_VARS_RELOCATED)

/* The module's .global variables moved to a window address, as the cuda backend does
 * before the JIT: what ptxas then assembles is what the GPU gets. */
static void relocate_vars(kptx_module *m)
{
    kptx_reloc_plan p;
    kptx_error err = {0};
    g_assert_cmpint(kptx_reloc_plan_make(m, &p, &err), ==, 0);
    g_test_message("relocated variables: %u (%" G_GUINT64_FORMAT " bytes)", p.n,
                   (guint64)p.bytes);
    g_assert_cmpint(kptx_reloc_apply(m, &p, 0x7f2000000000ull, &err), ==, 0);
    kptx_reloc_plan_clear(&p);
}

/* The printf pass (as kerneletd applies it while fencing), fencing, relocating the
 * variables, then slicing: every verdict is printed (with the cuda backend's too); fenced
 * entries take the window after their own parameters, and the result assembles for sm_75
 * and sm_90. */
static void test_fence(gconstpointer data)
{
    const corpus_file *cf = data;
    kptx_module *m = test_parse_n(cf->text, cf->len, cf->path);
    GPtrArray *names = entries_of(m);
    kptx_kernel_info *before = g_new0(kptx_kernel_info, names->len ? names->len : 1);
    bool *fenceable = g_new0(bool, names->len ? names->len : 1);
    unsigned expect = 0, n = 0, sliced = 0, printfs = 0;
    kptx_error err = {0};
    g_assert_cmpint(kptx_printf_module(m, KPTX_PRINTF_ENTRIES_ONLY, &printfs, &err), ==, 0);
    if (printfs)
        g_test_message("printf calls rewritten in %s: %u", cf->base, printfs);
    for (unsigned i = 0; i < names->len; i++) {
        char why[192];
        char cuda_why[192];
        g_assert_cmpint(kptx_fence_verdict(m, names->pdata[i], 0, why, sizeof why, &err), ==, 0);
        g_assert_cmpint(kptx_fence_verdict(m, names->pdata[i], CUDA_FENCE_FLAGS, cuda_why,
                                           sizeof cuda_why, &err), ==, 0);
        g_test_message("fence %s %s: %s (cuda: %s)", cf->base, (char *)names->pdata[i],
                       why[0] ? why : "yes", cuda_why[0] ? cuda_why : "yes");
        fenceable[i] = !why[0];
        expect += fenceable[i];
        g_assert_cmpint(kptx_kernel_info_get(m, names->pdata[i], &before[i], &err), ==, 0);
    }
    g_assert_cmpint(kptx_fence_module(m, 0, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, expect);
    for (unsigned i = 0; i < names->len; i++) {
        if (fenceable[i])
            check_fenced_params(m, names->pdata[i], &before[i]);
        kptx_kernel_info_clear(&before[i]);
    }
    relocate_vars(m);
    g_assert_cmpint(kptx_slice_module(m, &sliced, &err), ==, 0);
    size_t len;
    char *text = test_print(m, &len);
    if (assemblable(cf)) {
        GBytes *cubin;
        char *log;
        const char *archs[] = {"sm_75", "sm_90"};
        for (unsigned a = strcmp(m->target, "sm_75") == 0 ? 0 : 1; a < 2; a++) {
            if (!ptxas_run(ptxas_path, text, len, archs[a], needs_c(m), true, &cubin, &log))
                g_error("ptxas %s rejects the fenced %s: %s", archs[a], cf->base, log);
            g_bytes_unref(cubin);
            g_free(log);
        }
    }
    free(text);
    g_free(before);
    g_free(fenceable);
    g_ptr_array_unref(names);
    kptx_module_free(m);
}

static void corpus_file_free(gpointer p)
{
    corpus_file *cf = p;
    g_free(cf->path);
    g_free(cf->base);
    g_free(cf->text);
    g_free(cf);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    GPtrArray *files = g_ptr_array_new_with_free_func(corpus_file_free);
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--ptxas") == 0) {
        ptxas_path = argv[2];
        first = 3;
    }
    if (!ptxas_path || first >= argc) {
        fprintf(stderr, "usage: %s --ptxas PTXAS FILE.ptx...\n", argv[0]);
        return 2;
    }
    for (int i = first; i < argc; i++) {
        corpus_file *cf = g_new0(corpus_file, 1);
        g_ptr_array_add(files, cf);
        cf->path = g_strdup(argv[i]);
        cf->base = g_path_get_basename(argv[i]);
        GError *error = NULL;
        if (!g_file_get_contents(cf->path, &cf->text, &cf->len, &error))
            g_error("%s", error->message);
        char *stem = g_strdup(cf->base);
        char *dot = strrchr(stem, '.');
        if (dot)
            *dot = '\0';
        char *p1 = g_strdup_printf("/ptx/corpus/round-trip/%s", stem);
        char *p2 = g_strdup_printf("/ptx/corpus/verdicts/%s", stem);
        char *p3 = g_strdup_printf("/ptx/corpus/slice/%s", stem);
        g_test_add_data_func(p1, cf, test_round_trip);
        g_test_add_data_func(p2, cf, test_verdicts);
        g_test_add_data_func(p3, cf, test_slice);
        char *p4 = g_strdup_printf("/ptx/corpus/fence/%s", stem);
        g_test_add_data_func(p4, cf, test_fence);
        g_free(p4);
        g_free(p1);
        g_free(p2);
        g_free(p3);
        g_free(stem);
    }
    int rc = g_test_run();
    g_ptr_array_unref(files);
    return rc;
}
