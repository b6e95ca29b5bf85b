/* The slicer's rectification, executed: a probe kernel records what it reads from %ctaid
 * and %nctaid (in its body and in device functions). It runs once per block of the whole
 * grid in the interpreter, and its sliced variant runs per block of random slicing plans;
 * every block must record the coordinates of the block it stands for, which are
 * enumerated independently (x fastest, then y, then z). Some reads are in instructions
 * other than mov (ptxas accepts special registers only in mov and cvt; the rewrite does
 * not depend on it). */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"
#include "mini_interp.h"
#include "ptx_test_util.h"

static const char probe_ptx[] =
    ".version 8.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".global .align 4 .u32 eout[6];\n"
    ".global .align 4 .u32 fout[6];\n"
    ".global .align 4 .u32 gout[1];\n"
    ".func record_grid()\n"
    "{\n"
    "  .reg .b32 %r<7>;\n"
    "  mov.u32 %r4, %nctaid.x;\n  st.global.u32 [fout+12], %r4;\n"
    "  mov.u32 %r1, %ctaid.x;\n  st.global.u32 [fout], %r1;\n"
    "  mov.u32 %r3, %ctaid.z;\n  st.global.u32 [fout+8], %r3;\n"
    "  mov.u32 %r2, %ctaid.y;\n  st.global.u32 [fout+4], %r2;\n"
    "  sub.u32 %r5, %nctaid.y, 0;\n  st.global.u32 [fout+16], %r5;\n"
    "  mov.u32 %r6, %nctaid.z;\n  st.global.u32 [fout+20], %r6;\n"
    "  ret;\n"
    "}\n"
    ".func outer()\n"
    "{\n"
    "  call.uni record_grid;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry probe(.param .u32 probe_tag)\n"
    "{\n"
    "  .reg .b32 %r<9>;\n"
    "  ld.param.u32 %r7, [probe_tag];\n  st.global.u32 [gout], %r7;\n"
    "  mov.u32 %r3, %ctaid.z;\n  st.global.u32 [eout+8], %r3;\n"
    "  mov.u32 %r1, %ctaid.x;\n  st.global.u32 [eout], %r1;\n"
    "  add.u32 %r2, %ctaid.y, 0;\n  st.global.u32 [eout+4], %r2;\n"
    "  mov.u32 %r6, %nctaid.z;\n  st.global.u32 [eout+20], %r6;\n"
    "  mov.u32 %r4, %nctaid.x;\n  st.global.u32 [eout+12], %r4;\n"
    "  mov.u32 %r5, %nctaid.y;\n  add.u32 %r8, %r5, 0;\n  st.global.u32 [eout+16], %r8;\n"
    "  call.uni outer;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry no_grid(.param .u32 no_grid_v)\n"
    "{\n"
    "  .reg .b32 %r<2>;\n"
    "  ld.param.u32 %r1, [no_grid_v];\n  st.global.u32 [gout], %r1;\n"
    "  ret;\n"
    "}\n";

typedef struct coord {
    uint32_t c[3];
} coord;

/* Blocks in linear order, enumerated by nested loops (not by division). */
static coord *enumerate(const uint32_t g[3])
{
    coord *v = g_new(coord, g[0] * g[1] * g[2]);
    unsigned k = 0;
    for (uint32_t z = 0; z < g[2]; z++)
        for (uint32_t y = 0; y < g[1]; y++)
            for (uint32_t x = 0; x < g[0]; x++)
                v[k++] = (coord){{x, y, z}};
    return v;
}

static void expect_recorded(mi_state *st, const char *var, const coord *want, const uint32_t g[3])
{
    for (int i = 0; i < 3; i++) {
        g_assert_cmpuint(mi_load(st, var, 4 * i), ==, want->c[i]);
        g_assert_cmpuint(mi_load(st, var, 12 + 4 * i), ==, g[i]);
    }
}

static const uint32_t grids[][3] = {
    {1, 1, 1}, {7, 1, 1}, {64, 1, 1}, {5, 3, 1}, {1, 6, 1}, {3, 4, 5}, {2, 1, 6}, {4, 4, 4},
};

/* The original kernel in the interpreter gives the expected coordinates: checks the
 * probe and the interpreter themselves. */
static void test_original(void)
{
    kptx_module *m = test_parse(probe_ptx);
    for (size_t gi = 0; gi < G_N_ELEMENTS(grids); gi++) {
        const uint32_t *g = grids[gi];
        coord *want = enumerate(g);
        for (uint32_t b = 0; b < g[0] * g[1] * g[2]; b++) {
            mi_state st;
            mi_init(&st, m);
            memcpy(st.ctaid, want[b].c, sizeof st.ctaid);
            memcpy(st.nctaid, g, sizeof st.nctaid);
            mi_set_param(&st, "probe_tag", 7);
            if (!mi_run(&st, "probe"))
                g_error("probe: %s", st.error);
            expect_recorded(&st, "eout", &want[b], g);
            expect_recorded(&st, "fout", &want[b], g);
            mi_clear(&st);
        }
        g_free(want);
    }
    kptx_module_free(m);
}

/* Runs one slice: blocks first .. first+count-1 as a 1-D grid of count blocks. */
static void run_slice(const kptx_module *m, const kptx_kernel_info *si, const uint32_t g[3],
                      uint32_t first, uint32_t count, const coord *want)
{
    for (uint32_t i = 0; i < count; i++) {
        mi_state st;
        mi_init(&st, m);
        st.ctaid[0] = i;
        st.nctaid[0] = count;
        st.nctaid[1] = st.nctaid[2] = 1;
        uint32_t tag = first * 31 + i;
        const kptx_param_info *extra = &si->params[si->n_params - KPTX_SLICE_EXTRA_PARAMS];
        mi_set_param(&st, si->params[0].name, tag);
        mi_set_param(&st, extra[0].name, first);
        for (int k = 0; k < 3; k++)
            mi_set_param(&st, extra[1 + k].name, g[k]);
        if (!mi_run(&st, si->name))
            g_error("%s: %s", si->name, st.error);
        expect_recorded(&st, "eout", &want[first + i], g);
        expect_recorded(&st, "fout", &want[first + i], g);
        g_assert_cmpuint(mi_load(&st, "gout", 0), ==, tag);
        mi_clear(&st);
    }
}

static void test_sliced_plans(void)
{
    kptx_module *m = test_parse(probe_ptx);
    unsigned n = 0;
    kptx_error err = {0};
    g_assert_cmpint(kptx_slice_module(m, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, 2);
    kptx_kernel_info si;
    g_assert_cmpint(kptx_kernel_info_get(m, "probe__kslice", &si, &err), ==, 0);
    g_assert_cmpuint(si.n_params, ==, 1 + KPTX_SLICE_EXTRA_PARAMS);
    GRand *rng = g_rand_new_with_seed(12345);
    for (size_t gi = 0; gi < G_N_ELEMENTS(grids); gi++) {
        const uint32_t *g = grids[gi];
        uint32_t total = g[0] * g[1] * g[2];
        coord *want = enumerate(g);
        for (int plan = 0; plan < 6; plan++) {
            /* plan 0: one block per slice; 1: the whole grid; others: random sizes */
            for (uint32_t first = 0; first < total;) {
                uint32_t left = total - first;
                uint32_t count = plan == 0 ? 1 : plan == 1 ? left
                                                           : (uint32_t)g_rand_int_range(rng, 1, (gint32)left + 1);
                run_slice(m, &si, g, first, count, want);
                first += count;
            }
        }
        g_free(want);
    }
    g_rand_free(rng);
    kptx_kernel_info_clear(&si);
    kptx_module_free(m);
}

/* In the sliced code, %ctaid.x is read only to form the linear id, and no other grid
 * register is read at all; clones read none. */
static void check_no_raw_reads(const kptx_function *fn, bool clone)
{
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        if (fn->stmts[i].kind != KPTX_STMT_INSTR)
            continue;
        const kptx_instr *in = &fn->stmts[i].u.instr;
        for (unsigned k = 0; k < in->n_ops; k++) {
            const kptx_operand *o = &in->ops[k];
            if (o->kind != KPTX_OPND_SREG)
                continue;
            bool grid = strstr(o->name, "ctaid") != NULL;
            if (!grid)
                continue;
            g_assert_false(clone);
            g_assert_cmpstr(o->name, ==, "%ctaid.x");
            g_assert_cmpstr(in->opcode, ==, "mov");
            g_assert_true(g_str_has_prefix(in->ops[0].name, "%__kslice"));
        }
    }
}

static void test_structure(void)
{
    kptx_module *m = test_parse(probe_ptx);
    char *before = test_print(m, NULL);
    unsigned n_items = m->n_items;
    unsigned n = 0;
    g_assert_cmpint(kptx_slice_module(m, &n, NULL), ==, 0);
    /* clones of both functions (outer calls a function that reads the grid), two
     * sliced entries, one .shared copy */
    g_assert_cmpuint(m->n_items, ==, n_items + 5);
    const kptx_function *c1 = kptx_find_function(m, "record_grid__kslice");
    const kptx_function *c2 = kptx_find_function(m, "outer__kslice");
    const kptx_function *e1 = kptx_find_function(m, "probe__kslice");
    const kptx_function *e2 = kptx_find_function(m, "no_grid__kslice");
    g_assert_nonnull(c1);
    g_assert_nonnull(c2);
    g_assert_nonnull(e1);
    g_assert_nonnull(e2);
    g_assert_null(kptx_find_function(m, "probe__kslice__kslice"));
    check_no_raw_reads(c1, true);
    check_no_raw_reads(c2, true);
    check_no_raw_reads(e1, false);
    check_no_raw_reads(e2, false);

    /* the originals are untouched: drop the added items and print */
    kptx_module copy = *m;
    kptx_item *kept = g_new(kptx_item, m->n_items);
    copy.items = kept;
    copy.n_items = 0;
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        const char *name = it->kind == KPTX_ITEM_FUNCTION ? it->u.fn.name
                           : it->kind == KPTX_ITEM_VAR    ? it->u.var.name
                                                          : "";
        if (!strstr(name, "kslice"))
            kept[copy.n_items++] = *it;
    }
    char *after = test_print(&copy, NULL);
    g_assert_cmpstr(before, ==, after);
    g_free(kept);
    free(before);
    free(after);
    kptx_module_free(m);
}

/* A module that already uses the slicer's names gets other ones. */
static void test_name_clash(void)
{
    GString *s = g_string_new(probe_ptx);
    g_string_append(s, ".global .align 4 .u32 __kslice_first;\n"
                       ".global .align 4 .u32 __kslice_grid[6];\n");
    kptx_module *m = test_parse(s->str);
    g_assert_cmpint(kptx_slice_module(m, NULL, NULL), ==, 0);
    kptx_kernel_info si;
    g_assert_cmpint(kptx_kernel_info_get(m, "probe__kslice", &si, NULL), ==, 0);
    const char *first = si.params[si.n_params - KPTX_SLICE_EXTRA_PARAMS].name;
    g_assert_cmpstr(first, !=, "__kslice_first");
    /* the printed module parses again and still slices the same way */
    char *text = test_print(m, NULL);
    kptx_module *m2 = test_parse(text);
    g_assert_nonnull(kptx_find_function(m2, "probe__kslice"));
    kptx_kernel_info_clear(&si);
    free(text);
    kptx_module_free(m2);
    kptx_module_free(m);
    g_string_free(s, TRUE);
}

static void test_slice_name(void)
{
    char buf[32];
    g_assert_cmpint(kptx_slice_name("mm_tiled", buf, sizeof buf), ==, 0);
    g_assert_cmpstr(buf, ==, "mm_tiled__kslice");
    g_assert_cmpint(kptx_slice_name("a_rather_long_kernel_name", buf, sizeof buf), <, 0);
    g_assert_cmpint(kptx_slice_name(NULL, buf, sizeof buf), ==, KPTX_EINVAL);
    g_assert_cmpint(kptx_slice_module(NULL, NULL, NULL), ==, KPTX_EINVAL);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ptx/slice/original-in-interpreter", test_original);
    g_test_add_func("/ptx/slice/sliced-plans", test_sliced_plans);
    g_test_add_func("/ptx/slice/structure", test_structure);
    g_test_add_func("/ptx/slice/name-clash", test_name_clash);
    g_test_add_func("/ptx/slice/name", test_slice_name);
    return g_test_run();
}
