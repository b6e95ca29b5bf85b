/* Relocating module variables into a tenant's window (kptx_reloc_*, then the fencing
 * pass as the cuda backend runs them): which variables move and why not, the block's
 * layout and initial bytes, what the rewrite writes, and, run in the emulator, a kernel
 * reading a constant table through computed indices (as sinf reads __cudart_i2opi_f) and
 * one incrementing a __device__ counter, with their variables in the window; given
 * another tenant's pointer, the kernel still cannot write there. */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/emu.h"
#include "kernelet/ptx.h"
#include "emu_window_util.h"
#include "ptx_test_util.h"

#define HEAD ".version 7.0\n.target sm_70\n.address_size 64\n"
#define CUDA_FLAGS (KPTX_FENCE_VARS_OUTSIDE | KPTX_FENCE_VARS_RELOCATED)

/* lookup(out): out[i] = tbl[i % 6] + tbl[2] + ctab[1] (computed index through a global
 * address, a direct [tbl+8], a generic load through cvta, and a .const load through a
 * register, as an indexed __constant__ array is read, that stays);
 * count(): counter += 1 per thread. */
static const char vars_ptx[] =
    HEAD
    ".global .align 4 .b8 tbl[24] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, "
    "5, 0, 0, 0, 6, 0, 0, 0};\n"
    ".global .align 4 .u32 counter;\n"
    ".global .align 8 .f64 two = 0d4000000000000000;\n"
    ".const .align 4 .u32 ctab[2] = {10, 20};\n"
    ".visible .entry lookup(.param .u64 out)\n{\n"
    "  .reg .b32 %r<8>;\n  .reg .b64 %rd<10>;\n"
    "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, %tid.x;\n  rem.u32 %r2, %r1, 6;\n  mul.wide.u32 %rd3, %r2, 4;\n"
    "  mov.u64 %rd4, tbl;\n  add.s64 %rd5, %rd4, %rd3;\n  ld.global.nc.u32 %r3, [%rd5];\n"
    "  ld.global.u32 %r4, [tbl+8];\n  add.u32 %r3, %r3, %r4;\n"
    "  cvta.global.u64 %rd8, tbl;\n  ld.u32 %r6, [%rd8+4];\n  add.u32 %r3, %r3, %r6;\n"
    "  mov.u64 %rd9, ctab;\n  ld.const.u32 %r5, [%rd9+4];\n  add.u32 %r3, %r3, %r5;\n"
    "  mul.wide.u32 %rd6, %r1, 4;\n  add.s64 %rd7, %rd2, %rd6;\n"
    "  st.global.u32 [%rd7], %r3;\n  ret;\n}\n"
    ".visible .entry count()\n{\n  .reg .b32 %r<2>;\n"
    "  atom.global.add.u32 %r1, [counter], 1;\n  ret;\n}\n";

static kptx_module *fenced_for_cuda(const char *text)
{
    kptx_module *m = test_parse(text);
    kptx_error err = {0};
    unsigned n = 0;
    g_assert_cmpint(kptx_fence_module(m, CUDA_FLAGS, &n, &err), ==, 0);
    return m;
}

/* ---- verdicts and the plan ---- */

typedef struct var_case {
    const char *decl;       /* the module variable v, and what else the module needs */
    const char *why;        /* substring of the fence verdict of k (reads v), NULL: fenceable */
} var_case;

static const var_case var_cases[] = {
    {".global .align 4 .u32 v[4] = {1, 2, 3, 4};", NULL},
    {".global .align 4 .u32 v[] = {1, 2, 3};", NULL},
    {".global .align 4 .f32 v = 0f3F800000;", NULL},
    {".extern .global .align 4 .u32 v[4];", ".extern"},
    {".global .align 8 .u64 w;\n.global .align 8 .u64 v = generic(w);", "addresses"},
    {".global .align 8 .u64 v;\n.global .align 8 .u64 w = v;", "another variable"},
    {".global .attribute(.managed) .align 4 .u32 v;", ".attribute"},
    {".global .align 1 .b8 v[1099511627776];", "larger than 64 MiB"},
    {".global .align 4 .u32 v[2] = {1, 2, 3};", "longer than it"},
    {".global .align 4 .u32 v[2][2] = {{1, 2}, {3, 4}, {5, 6}};", "longer than it"},
    {".global .align 2 .f16 v = 0f3F800000;", "float literals"},   /* no conversion to .f16 */
    {".const .align 4 .u32 v[4];", NULL},   /* mov of it: for ld.const [reg] (an index) */
};

/* A .const variable made a generic pointer would be read through the window: refused. */
static void test_const_generic(void)
{
    kptx_module *m = test_parse(HEAD ".const .align 4 .u32 v[4];\n.visible .entry k()\n{\n"
                                "  .reg .b64 %rd<2>;\n  cvta.const.u64 %rd1, v;\n  ret;\n}\n");
    char why[192];
    kptx_error err = {0};

    g_assert_cmpint(kptx_fence_verdict(m, "k", CUDA_FLAGS, why, sizeof why, &err), ==, 0);
    g_assert_nonnull(strstr(why, "lies outside the tenant's window"));
    kptx_module_free(m);
}

static void test_verdicts(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(var_cases); i++) {
        char *text = g_strdup_printf(HEAD "%s\n.visible .entry k()\n{\n  .reg .b64 %%rd<2>;\n"
                                     "  mov.u64 %%rd1, v;\n  ret;\n}\n", var_cases[i].decl);
        kptx_module *m = test_parse(text);
        char why[192];
        kptx_error err = {0};
        g_assert_cmpint(kptx_fence_verdict(m, "k", CUDA_FLAGS, why, sizeof why, &err), ==, 0);
        g_test_message("%s -> %s", var_cases[i].decl, why[0] ? why : "fenceable");
        if (!var_cases[i].why)
            g_assert_cmpstr(why, ==, "");
        else
            g_assert_nonnull(strstr(why, var_cases[i].why));
        /* without relocation every .global variable is refused, as before */
        g_assert_cmpint(kptx_fence_verdict(m, "k", KPTX_FENCE_VARS_OUTSIDE, why, sizeof why,
                                           &err), ==, 0);
        if (!strstr(var_cases[i].decl, ".const"))
            g_assert_nonnull(strstr(why, "lies outside the tenant's window"));
        else
            g_assert_cmpstr(why, ==, "");
        kptx_module_free(m);
        g_free(text);
    }
}

static void test_plan(void)
{
    kptx_module *m = test_parse(vars_ptx);
    kptx_reloc_plan p;
    kptx_error err = {0};
    g_assert_cmpint(kptx_reloc_plan_make(m, &p, &err), ==, 0);
    g_assert_cmpuint(p.n, ==, 3);           /* tbl, counter, two; not the .const ctab */
    g_assert_cmpstr(p.vars[0].name, ==, "tbl");
    g_assert_cmpuint(p.vars[0].offset, ==, 0);
    g_assert_cmpuint(p.vars[0].size, ==, 24);
    g_assert_cmpuint(p.vars[1].offset, ==, 24);
    g_assert_cmpuint(p.vars[2].offset, ==, 32);   /* aligned to 8 */
    g_assert_cmpuint(p.bytes, ==, 40);
    uint8_t img[40];
    g_assert_cmpint(kptx_reloc_image(&p, img, sizeof img - 1, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kptx_reloc_image(&p, img, sizeof img, &err), ==, 0);
    uint32_t w[7];
    double two;
    memcpy(w, img, sizeof w);
    memcpy(&two, img + 32, 8);
    for (unsigned i = 0; i < 6; i++)
        g_assert_cmpuint(w[i], ==, i + 1);
    g_assert_cmpuint(w[6], ==, 0);
    g_assert_cmpfloat(two, ==, 2.0);
    kptx_reloc_plan_clear(&p);
    kptx_module_free(m);
}

/* Variables that together exceed the limit are refused, not allocated. */
static void test_plan_limit(void)
{
    kptx_module *m = test_parse(HEAD ".global .b8 a[50000000];\n.global .b8 b[50000000];\n");
    kptx_reloc_plan p;
    kptx_error err = {0};
    g_assert_cmpint(kptx_reloc_plan_make(m, &p, &err), ==, KPTX_ELIMIT);
    g_assert_cmpuint(p.n, ==, 0);
    g_assert_null(p.vars);
    kptx_module_free(m);
}

/* ---- what the rewrite writes ---- */

static void test_rewrite(void)
{
    kptx_module *m = fenced_for_cuda(vars_ptx);
    kptx_reloc_plan p;
    kptx_error err = {0};
    g_assert_cmpint(kptx_reloc_plan_make(m, &p, &err), ==, 0);
    g_assert_cmpint(kptx_reloc_apply(m, &p, 0x7f0000000000ull, &err), ==, 0);
    kptx_reloc_plan_clear(&p);
    char *text = test_print(m, NULL);
    g_assert_null(strstr(text, "tbl"));
    g_assert_null(strstr(text, "counter"));
    g_assert_nonnull(strstr(text, "ctab"));                 /* .const stays */
    g_assert_nonnull(strstr(text, "139637976727552"));      /* tbl's window address */
    g_assert_nonnull(strstr(text, "139637976727576"));      /* counter */
    g_assert_nonnull(strstr(text, "%__kreloc_r<8>;"));
    /* every access still masked: the fence's and/or survive the rewrite (the access's,
     * and the prologue's mask for its width; the other two are the shared scrub's, on
     * 32-bit shared offsets, fence_scrub.c) */
    const kptx_function *fn = kptx_find_function(m, "count");
    unsigned ands = 0;
    for (unsigned i = 0; i < fn->n_stmts; i++)
        ands += fn->stmts[i].kind == KPTX_STMT_INSTR && !strcmp(fn->stmts[i].u.instr.opcode, "and");
    g_assert_cmpuint(ands, ==, 4);
    test_assert_reprints(text);
    free(text);
    kptx_module_free(m);
}

/* ---- run in the emulator ---- */

enum { THREADS = 32 };
#define WINDOW (16ull << 20)

typedef struct fixture {
    kemu_device *dev;
    kemu_range win, other;
    kemu_module *mod;
    kemu_devptr block;          /* the variables, in the window */
} fixture;

/* Fences and relocates vars_ptx for the window, then loads it elsewhere (as the driver
 * would: whatever the emulator places for the module is outside the window). */
static void fixture_open(fixture *f)
{
    kemu_error e = {0};
    f->dev = test_emu_windows(WINDOW, &f->win, &f->other);
    kptx_module *m = fenced_for_cuda(vars_ptx);
    kptx_reloc_plan p;
    kptx_error err = {0};
    g_assert_cmpint(kptx_reloc_plan_make(m, &p, &err), ==, 0);
    g_assert_cmpint(kemu_mem_alloc_in(f->dev, &f->win, p.bytes, &f->block, &e), ==, 0);
    void *img = g_malloc(p.bytes);
    g_assert_cmpint(kptx_reloc_image(&p, img, p.bytes, &err), ==, 0);
    g_assert_cmpint(kemu_memcpy_htod(f->dev, f->block, img, p.bytes, &e), ==, 0);
    g_free(img);
    g_assert_cmpint(kptx_reloc_apply(m, &p, f->block, &err), ==, 0);
    kptx_reloc_plan_clear(&p);
    char *text = test_print(m, NULL);
    if (kemu_module_load_in(f->dev, &f->other, text, strlen(text), &f->mod, &e))
        g_error("load: %s\n%s", e.message, text);
    free(text);
    kptx_module_free(m);
}

static void run(fixture *f, const char *entry, uint64_t arg, unsigned n_args)
{
    kemu_function *fn;
    kemu_error e = {0};
    /* the kernels have no loop, trap or assert: the control words are never touched */
    uint64_t args[5] = {arg, f->win.lo, WINDOW - 1, 0, 0};
    g_assert_cmpint(kemu_module_get_function(f->mod, entry, &fn, &e), ==, 0);
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {THREADS, 1, 1},
                              .params = n_args == 1 ? args : args + 1,
                              .params_bytes = (KPTX_FENCE_EXTRA_PARAMS + n_args) * sizeof *args};
    if (kemu_launch(fn, &cfg, &e))
        g_error("%s: %s", entry, e.message);
}

static void test_run(void)
{
    fixture f;
    kemu_error e = {0};
    fixture_open(&f);
    kemu_devptr out;
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.win, THREADS * 4, &out, &e), ==, 0);
    run(&f, "lookup", out, 1);
    uint32_t got[THREADS];
    g_assert_cmpint(kemu_memcpy_dtoh(f.dev, got, out, sizeof got, &e), ==, 0);
    for (unsigned i = 0; i < THREADS; i++)
        g_assert_cmpuint(got[i], ==, (i % 6 + 1) + 3 + 2 + 20);
    /* another tenant's memory named as out: untouched (the store lands in the window) */
    kemu_devptr victim;
    uint32_t secret[THREADS], after[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        secret[i] = 0x5ec000 + i;
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.other, sizeof secret, &victim, &e), ==, 0);
    g_assert_cmpint(kemu_memcpy_htod(f.dev, victim, secret, sizeof secret, &e), ==, 0);
    run(&f, "lookup", victim, 1);
    g_assert_cmpint(kemu_memcpy_dtoh(f.dev, after, victim, sizeof after, &e), ==, 0);
    g_assert_cmpmem(secret, sizeof secret, after, sizeof after);
    run(&f, "count", 0, 0);
    run(&f, "count", 0, 0);
    uint32_t counter;
    g_assert_cmpint(kemu_memcpy_dtoh(f.dev, &counter, f.block + 24, 4, &e), ==, 0);
    g_assert_cmpuint(counter, ==, 2 * THREADS);
    kemu_device_destroy(f.dev);
}

static void test_bad_input(void)
{
    kptx_reloc_plan p = {0};
    kptx_error err = {0};
    g_assert_cmpint(kptx_reloc_plan_make(NULL, &p, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kptx_reloc_apply(NULL, &p, 0, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kptx_reloc_image(NULL, NULL, 0, &err), ==, KPTX_EINVAL);
    kptx_reloc_plan_clear(NULL);
    /* an instruction naming more variables than the rewrite has registers for */
    GString *s = g_string_new(HEAD);
    for (unsigned i = 0; i < 9; i++)
        g_string_append_printf(s, ".global .u64 v%u;\n", i);
    g_string_append(s, ".visible .entry k()\n{\n  .reg .b64 %r<2>;\n"
                       "  mov.b64 %r1, {v0, v1, v2, v3, v4, v5, v6, v7, v8};\n  ret;\n}\n");
    kptx_module *m = test_parse(s->str);
    g_assert_cmpint(kptx_reloc_plan_make(m, &p, &err), ==, 0);
    g_assert_cmpint(kptx_reloc_apply(m, &p, 0x1000, &err), ==, KPTX_EUNSUPPORTED);
    kptx_reloc_plan_clear(&p);
    kptx_module_free(m);
    g_string_free(s, TRUE);
    /* a name the function declares itself is its own, not the module variable */
    m = test_parse(HEAD ".global .u32 x;\n.visible .entry k()\n{\n  .reg .b64 %rd<2>;\n"
                   "  .shared .u32 x;\n  mov.u64 %rd1, x;\n  ret;\n}\n");
    g_assert_cmpint(kptx_reloc_plan_make(m, &p, &err), ==, 0);
    g_assert_cmpuint(p.n, ==, 1);
    g_assert_cmpint(kptx_reloc_apply(m, &p, 0x1000, &err), ==, 0);
    kptx_reloc_plan_clear(&p);
    char *text = test_print(m, NULL);
    g_assert_nonnull(strstr(text, "mov.u64 \t%rd1, x;"));
    free(text);
    kptx_module_free(m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ptx/reloc/verdicts", test_verdicts);
    g_test_add_func("/ptx/reloc/const-generic", test_const_generic);
    g_test_add_func("/ptx/reloc/plan", test_plan);
    g_test_add_func("/ptx/reloc/plan-limit", test_plan_limit);
    g_test_add_func("/ptx/reloc/rewrite", test_rewrite);
    g_test_add_func("/ptx/reloc/run", test_run);
    g_test_add_func("/ptx/reloc/bad-input", test_bad_input);
    return g_test_run();
}
