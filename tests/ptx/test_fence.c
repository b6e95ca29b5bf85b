/* The fencing pass (kptx_fence_module): which kernels it fences and why not, what it
 * writes, and, run in the emulator, that a fenced kernel computes exactly what it did
 * while its addresses stay in its window and that an address outside the window lands in
 * the window instead of in the memory it named. */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/emu.h"
#include "kernelet/ptx.h"
#include "emu_window_util.h"
#include "ptx_test_util.h"

#define HEAD ".version 7.0\n.target sm_70\n.address_size 64\n"

/* copy(u64 in, u64 out): out[i] = in[i] + 1 through .global accesses, and shared (inside
 * their variable), local and param accesses that must stay as they are; gcopy the same
 * through generic ones (one of them through a shared variable's generic address). */
static const char copy_ptx[] =
    HEAD
    ".global .align 4 .u32 gvar[4];\n"
    ".visible .entry copy(.param .u64 in, .param .u64 out)\n"
    "{\n"
    "  .reg .b32 %r<6>;\n  .reg .b64 %rd<8>;\n"
    "  .shared .align 4 .u32 sh[32];\n  .local .align 4 .u32 lo[1];\n"
    "  ld.param.u64 %rd1, [in];\n  ld.param.u64 %rd2, [out];\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd1, %rd3;\n  add.s64 %rd5, %rd2, %rd3;\n"
    "  ld.global.u32 %r2, [%rd4];\n"
    "  st.shared.u32 [sh], %r2;\n  ld.shared.u32 %r3, [sh];\n"
    "  st.local.u32 [lo], %r3;\n  ld.local.u32 %r4, [lo];\n"
    "  ld.global.u32 %r5, [gvar+4];\n"
    "  add.u32 %r4, %r4, %r5;\n"
    "  st.global.u32 [%rd5+0], %r4;\n"
    "  atom.global.add.u32 %r5, [gvar+8], 1;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry gcopy(.param .u64 in, .param .u64 out)\n"
    "{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<7>;\n"
    "  .shared .align 4 .u32 gs[32];\n"
    "  ld.param.u64 %rd1, [in];\n  ld.param.u64 %rd2, [out];\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd1, %rd3;\n  add.s64 %rd5, %rd2, %rd3;\n"
    "  ld.u32 %r2, [%rd4];\n"
    "  st.u32 [gs+4], %r2;\n  ld.u32 %r3, [gs+4];\n"
    "  add.u32 %r3, %r3, 1;\n"
    "  st.u32 [%rd5], %r3;\n"
    "  ret;\n"
    "}\n";

/* ---- verdicts ---- */

typedef struct verdict_case {
    const char *body;       /* the kernel's statements; parameter p (.u64) */
    const char *why;        /* substring of the reason, NULL: fenceable */
} verdict_case;

static const verdict_case verdicts[] = {
    {"ld.global.u32 %r1, [%rd1];", NULL},
    {"ld.u32 %r1, [%rd1];", NULL},
    {"atom.add.u32 %r1, [%rd1], 1;", NULL},
    {"red.global.add.u32 [%rd1], 1;", NULL},
    {"ldu.global.u32 %r1, [%rd1];", NULL},
    {"ld.global.nc.v2.u32 {%r1, %r2}, [%rd1+8];", NULL},
    {"ld.shared.u32 %r1, [%rd1];", NULL},
    {"prefetch.global.L2 [%rd1];", "prefetch.global.L2"},
    {"prefetchu.L1 [%rd1];", "prefetchu"},
    {"cp.async.ca.shared.global [%rd1], [%rd1], 4;", NULL},  /* test_fence_shared.c */
    {"cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], %r2;", "cp.async.bulk"},
    {"multimem.ld_reduce.relaxed.sys.global.add.u32 %r1, [%rd1];", "multimem"},
    {"tex.1d.v4.s32.s32 {%r1, %r2, %r3, %r4}, [%rd1, {%r1}];", "tex"},
    {"suld.b.1d.v2.b32.trap {%r1, %r2}, [%rd1, {%r1}];", "suld"},
    {"call.uni touch, (%rd1);", "calls touch, which touches global memory"},
    {"call.uni quiet, (%rd1);", NULL},
    /* device functions that loop, trap or assert get the control words on direct calls */
    {"call.uni spin, (%rd1);", NULL},
    {"call.uni trapper, (%rd1);", NULL},
    {"call.uni asserter, (%rd1);", NULL},
    {"call.uni forward, (%rd1);", NULL},
    {"mov.u64 %rd1, spin;\n  {\n  .param .b64 pa;\n  st.param.b64 [pa], %rd1;\n"
     "  prot: .callprototype _ (.param .b64 _);\n  call.uni %rd1, (pa), prot;\n  }",
     "through function pointers"},
    /* recursion counts as a loop: a recursive function takes the control words too, so
     * that only direct calls may reach it */
    {"call.uni again, (%rd1);", NULL},
    {"mov.u64 %rd1, quiet;\n  {\n  .param .b64 pa;\n  st.param.b64 [pa], %rd1;\n"
     "  prot: .callprototype _ (.param .b64 _);\n  call.uni %rd1, (pa), prot;\n"
     "  call.uni again, (pa);\n  }", "which loops, recurses, traps or asserts"},
    /* a recursion through a function pointer (pong calls what it is given, here itself)
     * is not seen by the stack guard: refused; a pointer to a function that makes no
     * call through one cannot close a cycle: fenceable */
    {"mov.u64 %rd1, pong;\n  {\n  .param .b64 pa;\n  st.param.b64 [pa], %rd1;\n"
     "  call.uni pong, (pa);\n  }", "may recurse through function pointers (pong"},
    {"mov.u64 %rd1, quiet;\n  {\n  .param .b64 pa;\n  st.param.b64 [pa], %rd1;\n"
     "  call.uni pong, (pa);\n  }", NULL},
    /* cooperative groups' grid barrier lives in the driver's launch workspace */
    {"mov.u32 %r1, %envreg1;", "%envreg (line"},
    {"mov.u32 %r1, %nctaid.x;", NULL},
};

static void test_verdicts(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(verdicts); i++) {
        char *text = g_strdup_printf(
            HEAD
            ".func touch(.param .u64 q)\n{\n  .reg .b64 %%a;\n  .reg .b32 %%v;\n"
            "  ld.param.u64 %%a, [q];\n  ld.global.u32 %%v, [%%a];\n  ret;\n}\n"
            ".func quiet(.param .u64 q)\n{\n  .reg .b32 %%v;\n  mov.u32 %%v, 1;\n  ret;\n}\n"
            ".func spin(.param .u64 q)\n{\n  .reg .b32 %%v;\n  mov.u32 %%v, 1;\n"
            "AGAIN:\n  add.u32 %%v, %%v, 2;\n  bra.uni AGAIN;\n}\n"
            ".func trapper(.param .u64 q)\n{\n  trap;\n  ret;\n}\n"
            ".extern .func __assertfail(.param .b64 a, .param .b64 b, .param .b32 c,"
            " .param .b64 d, .param .b64 e);\n"
            ".func asserter(.param .u64 q)\n{\n  .reg .b64 %%a;\n  ld.param.u64 %%a, [q];\n"
            "  {\n  .param .b64 p0;\n  .param .b32 p2;\n  st.param.b64 [p0+0], %%a;\n"
            "  st.param.b32 [p2+0], 0;\n"
            "  call.uni __assertfail, (p0, p0, p2, p0, p0);\n  }\n  ret;\n}\n"
            ".func forward(.param .u64 q)\n{\n  .reg .b32 %%v;\n  mov.u32 %%v, 1;\n"
            "  bra.uni LATER;\nLATER:\n  ret;\n}\n"
            ".func again(.param .u64 q)\n{\n  call.uni again, (q);\n  ret;\n}\n"
            ".func pong(.param .u64 q)\n{\n  .reg .b64 %%a;\n  ld.param.u64 %%a, [q];\n"
            "  {\n  .param .b64 pa;\n  st.param.b64 [pa], %%a;\n"
            "  prot: .callprototype _ (.param .b64 _);\n  call.uni %%a, (pa), prot;\n  }\n"
            "  ret;\n}\n"
            ".visible .entry k(.param .u64 p)\n{\n"
            "  .reg .b32 %%r<5>;\n  .reg .b64 %%rd<2>;\n  ld.param.u64 %%rd1, [p];\n"
            "  %s\n  ret;\n}\n", verdicts[i].body);
        test_assert_fence_verdict(text, verdicts[i].body, verdicts[i].why);
        g_free(text);
    }
}

/* With module variables outside the window (the cuda backend), a kernel that uses a
 * .global variable or makes a .const one a generic pointer cannot be fenced; ld.const,
 * also through an address taken with mov (an indexed __constant__ array), is fine. */
static void test_verdicts_vars_outside(void)
{
    static const char text[] =
        HEAD
        ".const .align 4 .u32 cvar[4];\n"
        ".visible .entry reads_const(.param .u64 p)\n{\n  .reg .b32 %r<2>;\n"
        "  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [p];\n  ld.const.u32 %r1, [cvar+4];\n"
        "  st.global.u32 [%rd1], %r1;\n  ret;\n}\n"
        ".visible .entry takes_const(.param .u64 p)\n{\n  .reg .b64 %rd<2>;\n"
        "  mov.u64 %rd1, cvar;\n  ret;\n}\n"
        ".visible .entry generic_const(.param .u64 p)\n{\n  .reg .b64 %rd<2>;\n"
        "  cvta.const.u64 %rd1, cvar;\n  ret;\n}\n";
    kptx_module *m = test_parse(copy_ptx), *c = test_parse(text);
    char why[192];
    kptx_error err = {0};
    g_assert_cmpint(kptx_fence_verdict(m, "copy", KPTX_FENCE_VARS_OUTSIDE, why, sizeof why,
                                       &err), ==, 0);
    g_assert_nonnull(strstr(why, "uses the module variable gvar"));
    g_assert_cmpint(kptx_fence_verdict(m, "gcopy", KPTX_FENCE_VARS_OUTSIDE, why, sizeof why,
                                       &err), ==, 0);
    g_assert_cmpstr(why, ==, "");       /* its only symbol is a .shared variable */
    g_assert_cmpint(kptx_fence_verdict(c, "reads_const", KPTX_FENCE_VARS_OUTSIDE, why,
                                       sizeof why, &err), ==, 0);
    g_assert_cmpstr(why, ==, "");
    g_assert_cmpint(kptx_fence_verdict(c, "takes_const", KPTX_FENCE_VARS_OUTSIDE, why,
                                       sizeof why, &err), ==, 0);
    g_assert_cmpstr(why, ==, "");       /* an address for ld.const [reg] */
    g_assert_cmpint(kptx_fence_verdict(c, "generic_const", KPTX_FENCE_VARS_OUTSIDE, why,
                                       sizeof why, &err), ==, 0);
    g_assert_nonnull(strstr(why, "uses the module variable cvar"));
    unsigned n = 0;
    g_assert_cmpint(kptx_fence_module(m, KPTX_FENCE_VARS_OUTSIDE, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, 1);
    kptx_module_free(m);
    kptx_module_free(c);
}

static void test_verdicts_module(void)
{
    char why[192];
    kptx_error err = {0};
    kptx_module *m = test_parse(".version 7.0\n.target sm_70\n.address_size 32\n"
                                ".visible .entry k(.param .u32 p)\n{\n  ret;\n}\n");
    g_assert_cmpint(kptx_fence_verdict(m, "k", 0, why, sizeof why, &err), ==, 0);
    g_assert_nonnull(strstr(why, "32-bit addresses"));
    g_assert_cmpint(kptx_fence_verdict(m, "nope", 0, why, sizeof why, &err), ==, KPTX_ENOTFOUND);
    g_assert_cmpint(kptx_fence_verdict(NULL, "k", 0, why, sizeof why, &err), ==, KPTX_EINVAL);
    g_assert_cmpint(kptx_fence_module(NULL, 0, NULL, &err), ==, KPTX_EINVAL);
    kptx_module_free(m);
}

/* ---- what the pass writes ---- */

static const kptx_function *entry_of(const kptx_module *m, const char *name)
{
    const kptx_function *fn = kptx_find_function(m, name);
    g_assert_nonnull(fn);
    return fn;
}

/* Counts instructions of fn with opcode op and, when mod is not NULL, that modifier. */
/* Instructions op (with modifier mod, when not NULL) in fn, those of the scrub before an
 * entry's code_label left out (they are fence_scrub.c's, tests/ptx/test_fence_scrub.c). */
static unsigned count(const kptx_function *fn, const char *op, const char *mod)
{
    unsigned n = 0, i = 0;
    while (fn->code_label && i < fn->n_stmts &&
           !(fn->stmts[i].kind == KPTX_STMT_LABEL && !strcmp(fn->stmts[i].u.label, fn->code_label)))
        i++;
    if (i == fn->n_stmts)
        i = 0;
    for (; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        if (s->kind != KPTX_STMT_INSTR || strcmp(s->u.instr.opcode, op))
            continue;
        bool has = !mod;
        for (unsigned k = 0; k < s->u.instr.n_mods && !has; k++)
            has = !strcmp(s->u.instr.mods[k], mod);
        n += has;
    }
    return n;
}

static void test_rewrite(void)
{
    kptx_module *m = test_parse(copy_ptx);
    unsigned n = 0;
    kptx_error err = {0};
    g_assert_cmpint(kptx_fence_module(m, 0, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, 2);
    const kptx_function *copy = entry_of(m, "copy"), *gcopy = entry_of(m, "gcopy");
    /* four more .u64 parameters at the next multiple of 8 */
    g_assert_cmpuint(copy->n_params, ==, 6);
    for (unsigned i = 2; i < 6; i++)
        g_assert_cmpuint(copy->params[i].offset, ==, 8 * i);
    g_assert_cmpuint(copy->param_bytes, ==, 48);
    g_assert_cmpuint(kptx_fence_param_offset(12), ==, 16);
    /* four .global accesses: each masked, with the mask of 4-byte accesses the entry
     * computes once (one more and); local and param ones untouched, and the shared ones
     * too: they stay inside their variable (fence_shared.c) */
    g_assert_cmpuint(count(copy, "min", NULL), ==, 0);
    g_assert_cmpuint(count(copy, "and", ".b64"), ==, 5);
    g_assert_cmpuint(count(copy, "or", ".b64"), ==, 4);
    g_assert_cmpuint(count(copy, "isspacep", NULL), ==, 0);
    g_assert_cmpuint(count(copy, "ld", ".param"), ==, 6);     /* two own, the pass's four */
    g_assert_cmpuint(count(copy, "exit", NULL), ==, 0);       /* no loop, trap or assert */
    g_assert_cmpuint(count(copy, "mov", ".u64"), ==, 2);      /* gvar's address, twice */
    /* four generic accesses: each selects the masked address when it is global, the
     * clamped one when it is shared */
    g_assert_cmpuint(count(gcopy, "isspacep", ".global"), ==, 4);
    g_assert_cmpuint(count(gcopy, "isspacep", ".shared"), ==, 4);
    g_assert_cmpuint(count(gcopy, "min", ".u64"), ==, 4);
    g_assert_cmpuint(count(gcopy, "selp", ".b64"), ==, 8);
    g_assert_cmpuint(count(gcopy, "cvta", ".shared"), ==, 3);  /* gs twice, the clamp's */
    /* printed, it parses to the same text; slicing after fencing still works (in memory,
     * as kerneletd does it: the printed text no longer says where the fence's scrub ends,
     * kptx_function.code_label, after which the slicer's prologue must go) */
    size_t len;
    char *text = test_print(m, &len);
    kptx_module *again = test_parse_n(text, len, "fenced text");
    char *text2 = test_print(again, NULL);
    g_assert_cmpstr(text, ==, text2);
    g_assert_cmpint(kptx_slice_module(m, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, 2);
    free(text);
    free(text2);
    kptx_module_free(again);
    kptx_module_free(m);
}

/* ---- run in the emulator ---- */

enum { WORDS = 32 };
#define WINDOW (16ull << 20)

typedef struct emu_fixture {
    kemu_device *dev;
    kemu_range win, other;      /* the tenant's window; somewhere else */
    kemu_module *plain, *fenced;
} emu_fixture;

static void fixture_open(emu_fixture *f)
{
    kemu_error e = {0};
    f->dev = test_emu_windows(WINDOW, &f->win, &f->other);
    g_assert_cmpint(kemu_module_load_in(f->dev, &f->other, copy_ptx, strlen(copy_ptx),
                                        &f->plain, &e), ==, 0);
    kptx_module *m = test_parse(copy_ptx);
    kptx_error err = {0};
    g_assert_cmpint(kptx_fence_module(m, 0, NULL, &err), ==, 0);
    char *text = test_print(m, NULL);
    g_assert_cmpint(kemu_module_load_in(f->dev, &f->win, text, strlen(text), &f->fenced, &e),
                    ==, 0);
    free(text);
    kptx_module_free(m);
}

static kemu_devptr alloc_in(kemu_device *dev, const kemu_range *r, uint32_t first)
{
    kemu_devptr p;
    uint32_t words[WORDS];
    kemu_error e = {0};
    g_assert_cmpint(kemu_mem_alloc_in(dev, r, sizeof words, &p, &e), ==, 0);
    g_assert_cmpuint(p, >=, r->lo);
    g_assert_cmpuint(p + sizeof words, <=, r->hi);
    for (unsigned i = 0; i < WORDS; i++)
        words[i] = first + i;
    g_assert_cmpint(kemu_memcpy_htod(dev, p, words, sizeof words, &e), ==, 0);
    return p;
}

static void run(kemu_module *m, const char *entry, const uint64_t *args, unsigned n_args)
{
    kemu_function *fn;
    kemu_error e = {0};
    g_assert_cmpint(kemu_module_get_function(m, entry, &fn, &e), ==, 0);
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {WORDS, 1, 1}, .params = args,
                              .params_bytes = n_args * sizeof *args};
    if (kemu_launch(fn, &cfg, &e))
        g_error("%s: %s", entry, e.message);
}

static void read_words(emu_fixture *f, kemu_devptr p, uint32_t *words)
{
    kemu_error e = {0};
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, words, p, WORDS * 4, &e), ==, 0);
}

/* In its window, the fenced kernel writes what the original writes. */
static void test_run_in_window(void)
{
    emu_fixture f;
    fixture_open(&f);
    const char *entries[] = {"copy", "gcopy"};
    for (unsigned k = 0; k < 2; k++) {
        uint32_t want[WORDS], got[WORDS];
        kemu_devptr in0 = alloc_in(f.dev, &f.other, 100), out0 = alloc_in(f.dev, &f.other, 0);
        kemu_devptr in1 = alloc_in(f.dev, &f.win, 100), out1 = alloc_in(f.dev, &f.win, 0);
        run(f.plain, entries[k], (uint64_t[]){in0, out0}, 2);
        run(f.fenced, entries[k], (uint64_t[]){in1, out1, f.win.lo, WINDOW - 1, 0, 0}, 6);
        read_words(&f, out0, want);
        read_words(&f, out1, got);
        g_assert_cmpmem(want, sizeof want, got, sizeof got);
    }
    kemu_device_destroy(f.dev);
}

/* Pointers outside the window: the fenced kernel reads and writes the words at the same
 * offsets inside its window, and the memory they named is untouched. */
static void test_run_redirected(void)
{
    emu_fixture f;
    fixture_open(&f);
    const char *entries[] = {"copy", "gcopy"};
    for (unsigned k = 0; k < 2; k++) {
        kemu_devptr victim_in = alloc_in(f.dev, &f.other, 7000);
        kemu_devptr victim_out = alloc_in(f.dev, &f.other, 9000);
        kemu_devptr own_in = f.win.lo + (victim_in & (WINDOW - 1));
        kemu_devptr own_out = f.win.lo + (victim_out & (WINDOW - 1));
        kemu_range at_in = {own_in, own_in + (1u << 20)}, at_out = {own_out, own_out + (1u << 20)};
        g_assert_cmpuint(alloc_in(f.dev, &at_in, 500), ==, own_in);
        g_assert_cmpuint(alloc_in(f.dev, &at_out, 0), ==, own_out);
        run(f.fenced, entries[k], (uint64_t[]){victim_in, victim_out, f.win.lo, WINDOW - 1, 0, 0},
            6);
        uint32_t words[WORDS];
        read_words(&f, victim_out, words);
        for (unsigned i = 0; i < WORDS; i++)
            g_assert_cmpuint(words[i], ==, 9000 + i);   /* untouched */
        /* the result is the original's on the window's own input */
        uint32_t want[WORDS];
        kemu_devptr in = alloc_in(f.dev, &f.other, 500), out = alloc_in(f.dev, &f.other, 0);
        run(f.plain, entries[k], (uint64_t[]){in, out}, 2);
        read_words(&f, out, want);
        read_words(&f, own_out, words);
        g_assert_cmpmem(want, sizeof want, words, sizeof words);
        kemu_error e = {0};
        g_assert_cmpint(kemu_mem_free(f.dev, own_in, &e), ==, 0);
        g_assert_cmpint(kemu_mem_free(f.dev, own_out, &e), ==, 0);
    }
    kemu_device_destroy(f.dev);
}

/* ---- control: cancel polls, traps, asserts ---- */

/* count(out, n): a loop of n iterations, then out[0] = n; forever(out): out[0] = 1, then
 * a loop that never ends; fault(out, k): out[0] = 5, then a trap when k == 1, CUDA's
 * assert when k == 2, and out[1] = 6 when it got past them. */
static const char control_ptx[] =
    HEAD
    ".extern .func __assertfail(.param .b64 a, .param .b64 b, .param .b32 c,"
    " .param .b64 d, .param .b64 e);\n"
    ".visible .entry count(.param .u64 out, .param .u32 n)\n"
    "{\n  .reg .b32 %r<3>;\n  .reg .b64 %rd<2>;\n  .reg .pred %p<2>;\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [n];\n  mov.u32 %r2, 0;\n"
    "LOOP:\n  add.u32 %r2, %r2, 1;\n  setp.lt.u32 %p1, %r2, %r1;\n  @%p1 bra LOOP;\n"
    "  st.global.u32 [%rd1], %r2;\n  ret;\n}\n"
    ".visible .entry forever(.param .u64 out)\n"
    "{\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [out];\n  mov.u32 %r1, 1;\n  st.global.u32 [%rd1], %r1;\n"
    "SPIN:\n  bra.uni SPIN;\n}\n"
    ".visible .entry fault(.param .u64 out, .param .u32 k)\n"
    "{\n  .reg .b32 %r<3>;\n  .reg .b64 %rd<2>;\n  .reg .pred %p<3>;\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [k];\n  mov.u32 %r2, 5;\n"
    "  st.global.u32 [%rd1], %r2;\n"
    "  setp.eq.u32 %p1, %r1, 1;\n  @%p1 trap;\n"
    "  setp.eq.u32 %p2, %r1, 2;\n  @!%p2 bra DONE;\n"
    "  {\n  .param .b64 param0;\n  .param .b32 param2;\n"
    "  st.param.b64 [param0+0], %rd1;\n  st.param.b32 [param2+0], 0;\n"
    "  call.uni __assertfail, (param0, param0, param2, param0, param0);\n  }\n"
    "DONE:\n  mov.u32 %r2, 6;\n  st.global.u32 [%rd1+4], %r2;\n  ret;\n}\n"
    ".visible .entry maybe_store(.param .u64 out, .param .u32 k)\n"
    "{\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<2>;\n  .reg .pred %p<2>;\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [k];\n"
    "  setp.eq.u32 %p1, %r1, 1;\n  @%p1 st.global.u32 [%rd1], 9;\n  ret;\n}\n";

typedef struct control_fixture {
    kemu_device *dev;
    kemu_range win, other;
    kemu_module *mod;
    kemu_devptr out, ctl;       /* in the window; the control words elsewhere */
} control_fixture;

/* Entries whose loops, trap and assert are in device functions: fcount_k(out, n) calls
 * fcount, a counted loop of n iterations in a device function that a second device
 * function's loop (not counted) calls too; fspin_k(out): out[0] = 1, then a device
 * function that never returns; ftrap_k(out, k): out[0] = 5, a device function that traps
 * when k == 1, then out[1] = 6. */
static const char fn_control_ptx[] =
    HEAD
    ".func (.param .b32 r) fcount(.param .b32 n)\n"
    "{\n  .reg .b32 %c<3>;\n  .reg .pred %q;\n  ld.param.u32 %c1, [n];\n  mov.u32 %c2, 0;\n"
    "AGAIN:\n  add.u32 %c2, %c2, 1;\n  setp.lt.u32 %q, %c2, %c1;\n  @%q bra AGAIN;\n"
    "  st.param.b32 [r], %c2;\n  ret;\n}\n"
    ".func fspin()\n{\nSPIN:\n  bra.uni SPIN;\n}\n"
    ".func ftrap(.param .b32 k)\n{\n  .reg .b32 %t;\n  .reg .pred %q;\n"
    "  ld.param.u32 %t, [k];\n  setp.eq.u32 %q, %t, 1;\n  @%q trap;\n  ret;\n}\n"
    ".visible .entry fcount_k(.param .u64 out, .param .u32 n)\n"
    "{\n  .reg .b32 %r<3>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [n];\n"
    "  {\n  .param .b32 a;\n  .param .b32 res;\n  st.param.b32 [a], %r1;\n"
    "  call.uni (res), fcount, (a);\n  ld.param.b32 %r2, [res];\n  }\n"
    "  st.global.u32 [%rd1], %r2;\n  ret;\n}\n"
    ".visible .entry fspin_k(.param .u64 out)\n"
    "{\n  .reg .b32 %r1;\n  .reg .b64 %rd1;\n  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, 1;\n  st.global.u32 [%rd1], %r1;\n  call.uni fspin;\n  ret;\n}\n"
    ".visible .entry ftrap_k(.param .u64 out, .param .u32 k)\n"
    "{\n  .reg .b32 %r<3>;\n  .reg .b64 %rd1;\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [k];\n  mov.u32 %r2, 5;\n"
    "  st.global.u32 [%rd1], %r2;\n"
    "  {\n  .param .b32 a;\n  st.param.b32 [a], %r1;\n  call.uni ftrap, (a);\n  }\n"
    "  mov.u32 %r2, 6;\n  st.global.u32 [%rd1+4], %r2;\n  ret;\n}\n";

/* The kernels of ptx fenced with flags (the fencing pass's), n of them, in the window. */
static void control_open_opts(control_fixture *f, const char *ptx, const kptx_fence_opts *o,
                              unsigned want)
{
    kemu_error e = {0};
    f->dev = test_emu_windows(WINDOW, &f->win, &f->other);
    kptx_module *m = test_parse(ptx);
    kptx_error err = {0};
    unsigned n = 0;
    g_assert_cmpint(kptx_fence_module_opts(m, o, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, want);
    char *text = test_print(m, NULL);
    g_assert_cmpint(kemu_module_load_in(f->dev, &f->win, text, strlen(text), &f->mod, &e), ==, 0);
    free(text);
    kptx_module_free(m);
    f->out = alloc_in(f->dev, &f->win, 0);
    f->ctl = alloc_in(f->dev, &f->other, 0);
    uint32_t zero[2] = {0, 0};
    g_assert_cmpint(kemu_memcpy_htod(f->dev, f->ctl, zero, sizeof zero, &e), ==, 0);
}

static void control_open_ptx(control_fixture *f, const char *ptx, unsigned flags, unsigned want)
{
    const kptx_fence_opts o = {.flags = flags};
    control_open_opts(f, ptx, &o, want);
}

static void control_open_flags(control_fixture *f, unsigned flags)
{
    control_open_ptx(f, control_ptx, flags, 4);
}

static void control_open(control_fixture *f)
{
    control_open_flags(f, 0);
}

static void set_word(control_fixture *f, kemu_devptr p, uint32_t v)
{
    kemu_error e = {0};
    g_assert_cmpint(kemu_memcpy_htod(f->dev, p, &v, sizeof v, &e), ==, 0);
}

static uint32_t get_word(control_fixture *f, kemu_devptr p)
{
    uint32_t v;
    kemu_error e = {0};
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, &v, p, sizeof v, &e), ==, 0);
    return v;
}

/* Runs entry with (out, arg) and the control words under a budget of warp instructions;
 * the emulator's status. */
static int run_controlled(control_fixture *f, const char *entry, uint32_t arg, bool has_arg,
                          uint64_t budget)
{
    kemu_function *fn;
    kemu_error e = {0};
    g_assert_cmpint(kemu_module_get_function(f->mod, entry, &fn, &e), ==, 0);
    uint8_t params[64] = {0};
    uint32_t off = 8;
    memcpy(params, &f->out, 8);
    if (has_arg) {
        memcpy(params + 8, &arg, 4);
        off = kptx_fence_param_offset(12);
    }
    uint64_t extra[KPTX_FENCE_EXTRA_PARAMS] = {f->win.lo, WINDOW - 1, f->ctl, f->ctl + 4};
    memcpy(params + off, extra, sizeof extra);
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {WORDS, 1, 1}, .params = params,
                              .params_bytes = off + sizeof extra,
                              .max_warp_instructions = budget};
    return kemu_launch(fn, &cfg, &e);
}

/* A loop computes what it did while the cancel word is clear, polling it as it goes. */
static void test_control_loop_runs(void)
{
    control_fixture f;
    control_open(&f);
    g_assert_cmpint(run_controlled(&f, "count", 5000, true, 0), ==, 0);
    g_assert_cmpuint(get_word(&f, f.out), ==, 5000);
    g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_NONE);
    kemu_device_destroy(f.dev);
}

/* A back-edge's poll reads the cancel word once, behind a branch past it on the iteration
 * count; a counted loop's once per strip, where the inner bound is met (test-ptx-fence-
 * loops tests those); the rewritten entries slice in memory, not as printed text. */
static void test_control_poll_shape(void)
{
    kptx_module *m = test_parse(control_ptx);
    kptx_error err = {0};
    unsigned fenced = 0, sliced = 0, sliced_text = 0;
    g_assert_cmpint(kptx_fence_module(m, 0, &fenced, &err), ==, 0);
    const kptx_function *fn = entry_of(m, "forever");
    g_assert_cmpuint(count(fn, "ld", ".volatile"), ==, 1);
    g_assert_cmpuint(count(fn, "bra", NULL), ==, 2);        /* the loop's own, and past */
    g_assert_cmpuint(count(fn, "exit", NULL), ==, 1);
    fn = entry_of(m, "count");
    g_assert_cmpuint(count(fn, "ld", ".volatile"), ==, 1);
    g_assert_cmpuint(count(fn, "bra", NULL), ==, 3);        /* the strip's, leave, next strip */
    g_assert_cmpuint(count(fn, "exit", NULL), ==, 1);
    g_assert_cmpuint(count(fn, "add", ".u32"), ==, 2);      /* the step, the inner bound: no count */
    char *text = test_print(m, NULL);
    kptx_module *again = test_parse(text);
    g_assert_cmpint(kptx_slice_module(m, &sliced, &err), ==, 0);
    g_assert_cmpint(kptx_slice_module(again, &sliced_text, &err), ==, 0);
    /* the printed text no longer says where the scrub ends (kptx_function.code_label): its
     * read of %total_smem_size then looks like the kernel's own, which slicing would
     * change, and the slicer leaves it whole; kerneletd slices in memory */
    g_assert_cmpuint(sliced_text, ==, 0);
    g_assert_cmpuint(sliced, >=, 2);
    free(text);
    kptx_module_free(again);
    kptx_module_free(m);
}

/* With the cancel word set a loop that never ends stops within a poll period: without the
 * poll it would run into the budget (KEMU_ELIMIT). */
static void test_control_cancel(void)
{
    control_fixture f;
    control_open(&f);
    g_assert_cmpint(run_controlled(&f, "forever", 0, false, 1u << 20), ==, KEMU_ELIMIT);
    set_word(&f, f.ctl, 1);
    g_assert_cmpint(run_controlled(&f, "forever", 0, false, 1u << 20), ==, 0);
    g_assert_cmpuint(get_word(&f, f.out), ==, 1);
    set_word(&f, f.out, 0);
    g_assert_cmpint(run_controlled(&f, "count", 1u << 30, true, 1u << 20), ==, 0);
    g_assert_cmpuint(get_word(&f, f.out), ==, 0); /* ended early, never got to its store */
    kemu_device_destroy(f.dev);
}

/* A trap or an assert writes its code to the fault word and ends the thread: no fault of
 * the device, the work before it done, none after. */
static void test_control_faults(void)
{
    const uint32_t want[] = {KPTX_FAULT_NONE, KPTX_FAULT_TRAP, KPTX_FAULT_ASSERT};
    for (uint32_t k = 0; k < 3; k++) {
        control_fixture f;
        control_open(&f);
        g_assert_cmpint(run_controlled(&f, "fault", k, true, 0), ==, 0);
        g_assert_cmpuint(get_word(&f, f.out), ==, 5);
        g_assert_cmpuint(get_word(&f, f.out + 4), ==, k ? 1 : 6); /* alloc_in's word 1 */
        g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, want[k]);
        kemu_device_destroy(f.dev);
    }
}

/* Loops, traps and asserts in device functions obey the control words as an entry's do:
 * each such function takes their addresses as two more parameters on every call. */
static void test_control_device_functions(void)
{
    control_fixture f;
    control_open_ptx(&f, fn_control_ptx, 0, 3);
    g_assert_cmpint(run_controlled(&f, "fcount_k", 5000, true, 0), ==, 0);
    g_assert_cmpuint(get_word(&f, f.out), ==, 5000);
    g_assert_cmpint(run_controlled(&f, "fspin_k", 0, false, 1u << 20), ==, KEMU_ELIMIT);
    set_word(&f, f.ctl, 1);
    g_assert_cmpint(run_controlled(&f, "fspin_k", 0, false, 1u << 20), ==, 0);
    set_word(&f, f.ctl, 0);
    set_word(&f, f.out + 4, 0);
    g_assert_cmpint(run_controlled(&f, "ftrap_k", 1, true, 0), ==, 0);
    g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_TRAP);
    g_assert_cmpuint(get_word(&f, f.out + 4), ==, 0);      /* it ended at the trap */
    set_word(&f, f.ctl + 4, 0);
    g_assert_cmpint(run_controlled(&f, "ftrap_k", 0, true, 0), ==, 0);
    g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_NONE);
    g_assert_cmpuint(get_word(&f, f.out + 4), ==, 6);
    kemu_device_destroy(f.dev);
}

/* A looping device function shared by a fenceable entry and one that cannot be fenced is
 * left as it is (the unfenced entry's call passes no control words), and the fenceable
 * entry loses its fence with it; not shared, it takes the two words. */
static void test_control_shared_function(void)
{
    for (int shared = 0; shared < 2; shared++) {
        char *text = g_strdup_printf(
            HEAD
            ".func spin(.param .u64 q)\n{\n  .reg .b32 %%v;\n  mov.u32 %%v, 1;\n"
            "AGAIN:\n  add.u32 %%v, %%v, 2;\n  bra.uni AGAIN;\n}\n"
            ".visible .entry fine(.param .u64 p)\n{\n  .reg .b64 %%rd1;\n"
            "  ld.param.u64 %%rd1, [p];\n  call.uni spin, (p);\n  ret;\n}\n"
            ".visible .entry odd(.param .u64 p)\n{\n  .reg .b64 %%rd1;\n"
            "  ld.param.u64 %%rd1, [p];\n  prefetch.global.L2 [%%rd1];\n%s  ret;\n}\n",
            shared ? "  call.uni spin, (p);\n" : "");
        kptx_module *m = test_parse(text);
        kptx_error err = {0};
        unsigned n = 9;
        g_assert_cmpint(kptx_fence_module(m, 0, &n, &err), ==, 0);
        g_assert_cmpuint(n, ==, shared ? 0 : 1);
        g_assert_cmpuint(kptx_find_function(m, "spin")->n_params, ==, shared ? 1 : 3);
        char *printed = test_print(m, NULL);
        test_assert_reprints(printed);
        free(printed);
        kptx_module_free(m);
        g_free(text);
    }
}

/* ---- recursion: a cycle of calls polls as a loop does ---- */

/* rsum(n) = n + rsum(n - 1), rsum(0) = 0: direct recursion, no loop. msum_a and msum_b
 * the same through each other (mutual recursion; msum_a is declared first, so the walk
 * enters the cycle there and the call in msum_b closes it). tree(n) calls tree(n - 1)
 * twice: 2^n calls only n deep, no end in sight for n = 40. forever(n) calls itself
 * with n + 1, a tail call, and never returns. dbl(n) = 2n calls nothing: it stays as it
 * is. The entries: rsum_k(out, n): out[0] = rsum(n), out[1] = dbl(n); msum_k(out, n):
 * out[0] = msum_b(n); tree_k(out, n): out[0] = 1, tree(n), out[1] = 7; deep_k(out, n):
 * out[0] = 1, forever(n), out[1] = 7. */
#define RECURSIVE_SUM(name, callee)                                                     \
    ".func (.param .b32 r) " name "(.param .b32 n)\n"                                  \
    "{\n  .reg .b32 %s<4>;\n  .reg .pred %z;\n  ld.param.u32 %s1, [n];\n"              \
    "  setp.eq.u32 %z, %s1, 0;\n  @%z bra ZERO;\n  sub.u32 %s2, %s1, 1;\n"             \
    "  {\n  .param .b32 a;\n  .param .b32 res;\n  st.param.b32 [a], %s2;\n"            \
    "  call.uni (res), " callee ", (a);\n  ld.param.b32 %s3, [res];\n  }\n"            \
    "  add.u32 %s3, %s3, %s1;\n  st.param.b32 [r], %s3;\n  ret;\n"                     \
    "ZERO:\n  st.param.b32 [r], 0;\n  ret;\n}\n"

/* An entry name(out, n): out[0] = callee(n) (a sum). */
#define SUM_ENTRY(name, callee)                                                         \
    ".visible .entry " name "(.param .u64 out, .param .u32 n)\n"                       \
    "{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd1;\n"                                       \
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [n];\n"                           \
    "  {\n  .param .b32 a;\n  .param .b32 res;\n  st.param.b32 [a], %r1;\n"            \
    "  call.uni (res), " callee ", (a);\n  ld.param.b32 %r2, [res];\n  }\n"            \
    "  st.global.u32 [%rd1], %r2;\n"

/* An entry name(out, n): out[0] = 1, callee(n), out[1] = 7. */
#define RUNAWAY_ENTRY(name, callee)                                                     \
    ".visible .entry " name "(.param .u64 out, .param .u32 n)\n"                       \
    "{\n  .reg .b32 %r<3>;\n  .reg .b64 %rd1;\n"                                       \
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [n];\n  mov.u32 %r2, 1;\n"      \
    "  st.global.u32 [%rd1], %r2;\n"                                                    \
    "  {\n  .param .b32 a;\n  st.param.b32 [a], %r1;\n  call.uni " callee ", (a);\n  }\n" \
    "  mov.u32 %r2, 7;\n  st.global.u32 [%rd1+4], %r2;\n  ret;\n}\n"

static const char recursion_ptx[] =
    HEAD
    ".func (.param .b32 r) msum_a(.param .b32 n);\n"
    ".func (.param .b32 r) msum_b(.param .b32 n);\n"
    RECURSIVE_SUM("rsum", "rsum")
    RECURSIVE_SUM("msum_a", "msum_b")
    RECURSIVE_SUM("msum_b", "msum_a")
    ".func (.param .b32 r) dbl(.param .b32 n)\n"
    "{\n  .reg .b32 %d;\n  ld.param.u32 %d, [n];\n  add.u32 %d, %d, %d;\n"
    "  st.param.b32 [r], %d;\n  ret;\n}\n"
    ".func tree(.param .b32 n)\n"
    "{\n  .reg .b32 %t;\n  .reg .pred %z;\n  ld.param.u32 %t, [n];\n"
    "  setp.eq.u32 %z, %t, 0;\n  @%z bra DONE;\n  sub.u32 %t, %t, 1;\n"
    "  {\n  .param .b32 a;\n  st.param.b32 [a], %t;\n  call.uni tree, (a);\n  }\n"
    "  {\n  .param .b32 a;\n  st.param.b32 [a], %t;\n  call.uni tree, (a);\n  }\n"
    "DONE:\n  ret;\n}\n"
    ".func forever(.param .b32 n)\n"
    "{\n  .reg .b32 %t;\n  ld.param.u32 %t, [n];\n  add.u32 %t, %t, 1;\n"
    "  {\n  .param .b32 a;\n  st.param.b32 [a], %t;\n  call.uni forever, (a);\n  }\n"
    "  ret;\n}\n"
    SUM_ENTRY("rsum_k", "rsum")
    "  {\n  .param .b32 a;\n  .param .b32 res;\n  st.param.b32 [a], %r1;\n"
    "  call.uni (res), dbl, (a);\n  ld.param.b32 %r3, [res];\n  }\n"
    "  st.global.u32 [%rd1+4], %r3;\n  ret;\n}\n"
    SUM_ENTRY("msum_k", "msum_b") "  ret;\n}\n"
    RUNAWAY_ENTRY("tree_k", "tree")
    RUNAWAY_ENTRY("deep_k", "forever");

/* The st.param instructions of fn that pass the control words to its calls. */
static unsigned passes(const kptx_function *fn)
{
    return count(fn, "st", ".b64");   /* st.param.b64: nothing else stores 64 bits */
}

/* Each recursive function takes the control words and passes them on; the cycle heads
 * (rsum, msum_a, tree, forever) read the cancel word once, before anything else, and
 * msum_b, entered only from msum_a's cycle... or from outside, does not: every trip
 * round its cycle polls in msum_a. dbl, which neither loops nor recurses, is untouched. */
static void test_recursion_shape(void)
{
    kptx_module *m = test_parse(recursion_ptx);
    kptx_error err = {0};
    unsigned n = 0;
    g_assert_cmpint(kptx_fence_module(m, 0, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, 4);
    const char *heads[] = {"rsum", "msum_a", "tree", "forever"};
    for (unsigned i = 0; i < G_N_ELEMENTS(heads); i++) {
        const kptx_function *fn = entry_of(m, heads[i]);
        g_assert_cmpuint(fn->n_params, ==, 3);
        g_assert_cmpuint(count(fn, "ld", ".volatile"), ==, 1);
        g_assert_cmpuint(count(fn, "exit", NULL), ==, 1);
        unsigned first_call = fn->n_stmts, poll = fn->n_stmts;
        for (unsigned k = fn->n_stmts; k-- > 0;) {
            const kptx_stmt *s = &fn->stmts[k];
            if (s->kind == KPTX_STMT_INSTR && !strcmp(s->u.instr.opcode, "call"))
                first_call = k;
            if (s->kind == KPTX_STMT_INSTR && !strcmp(s->u.instr.opcode, "ld") &&
                s->u.instr.n_mods && !strcmp(s->u.instr.mods[0], ".volatile"))
                poll = k;
        }
        g_assert_cmpuint(poll, <, first_call);
        g_assert_cmpuint(passes(fn), ==, (!strcmp(heads[i], "tree") ? 4u : 2u));
    }
    const kptx_function *b = entry_of(m, "msum_b");
    g_assert_cmpuint(b->n_params, ==, 3);
    g_assert_cmpuint(count(b, "ld", ".volatile"), ==, 0);
    g_assert_cmpuint(passes(b), ==, 2);
    g_assert_cmpuint(entry_of(m, "dbl")->n_params, ==, 1);
    g_assert_cmpuint(passes(entry_of(m, "rsum_k")), ==, 2);     /* rsum's, not dbl's */
    char *text = test_print(m, NULL);
    test_assert_reprints(text);
    free(text);
    kptx_module_free(m);
}

/* Runs entry of the unfenced module with (out, n); the emulator's status. */
static int run_plain(control_fixture *f, kemu_module *mod, const char *entry, uint32_t arg,
                     uint64_t budget)
{
    kemu_function *fn;
    kemu_error e = {0};
    g_assert_cmpint(kemu_module_get_function(mod, entry, &fn, &e), ==, 0);
    uint8_t params[12];
    memcpy(params, &f->out, 8);
    memcpy(params + 8, &arg, 4);
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {WORDS, 1, 1}, .params = params,
                              .params_bytes = sizeof params, .max_warp_instructions = budget};
    return kemu_launch(fn, &cfg, &e);
}

static kemu_module *load_plain(control_fixture *f, const char *ptx)
{
    kemu_module *mod;
    kemu_error e = {0};
    g_assert_cmpint(kemu_module_load_in(f->dev, &f->win, ptx, strlen(ptx), &mod, &e), ==, 0);
    return mod;
}

/* Fenced or not, the recursive sums are 1 + ... + n, polling all the way down. 150 deep at
 * most: a fenced invocation keeps more registers, and the emulator saves each recursive
 * invocation's in 32 KiB per thread (about 200 fenced sums deep). */
static void test_recursion_runs(void)
{
    control_fixture f;
    control_open_ptx(&f, recursion_ptx, 0, 4);
    kemu_module *plain = load_plain(&f, recursion_ptx);
    const uint32_t ns[] = {0, 1, 2, 10, 150};
    for (unsigned i = 0; i < G_N_ELEMENTS(ns); i++)
        for (int fenced = 0; fenced < 2; fenced++)
            for (int mutual = 0; mutual < 2; mutual++) {
                const char *entry = mutual ? "msum_k" : "rsum_k";
                set_word(&f, f.out, 12345);
                int rc = fenced ? run_controlled(&f, entry, ns[i], true, 0)
                                : run_plain(&f, plain, entry, ns[i], 0);
                g_assert_cmpint(rc, ==, 0);
                g_assert_cmpuint(get_word(&f, f.out), ==, ns[i] * (ns[i] + 1) / 2);
                if (!mutual)
                    g_assert_cmpuint(get_word(&f, f.out + 4), ==, 2 * ns[i]);
            }
    g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_NONE);
    kemu_device_destroy(f.dev);
}

/* A recursion that does not end stops when the cancel word is set, as a loop that never
 * ends does: tree(40), 2^40 calls only 40 deep, runs into the instruction budget fenced
 * (the word clear) or not, and with the word set ends at once, never getting to out[1].
 * forever() nests without end: the emulator's call stack (EMU_MAX_RECURSION, 1024 calls)
 * ends it with KEMU_ERESOURCES, fenced or not, while the word is clear (on a GPU the
 * thread's stack overflows unless ptxas made the tail call a jump, which the poll at
 * the head still sees); with the word set the fenced one stops at its first call. */
static void test_recursion_cancel(void)
{
    control_fixture f;
    control_open_ptx(&f, recursion_ptx, 0, 4);
    kemu_module *plain = load_plain(&f, recursion_ptx);
    const uint64_t budget = 1u << 20;
    g_assert_cmpint(run_plain(&f, plain, "tree_k", 40, budget), ==, KEMU_ELIMIT);
    g_assert_cmpint(run_controlled(&f, "tree_k", 40, true, budget), ==, KEMU_ELIMIT);
    g_assert_cmpint(run_plain(&f, plain, "deep_k", 0, budget), ==, KEMU_ERESOURCES);
    g_assert_cmpint(run_controlled(&f, "deep_k", 0, true, budget), ==, KEMU_ERESOURCES);
    set_word(&f, f.ctl, 1);
    const char *entries[] = {"tree_k", "deep_k"};
    for (unsigned i = 0; i < G_N_ELEMENTS(entries); i++) {
        set_word(&f, f.out, 0);
        set_word(&f, f.out + 4, 0);
        g_assert_cmpint(run_controlled(&f, entries[i], 40, true, budget), ==, 0);
        g_assert_cmpuint(get_word(&f, f.out), ==, 1);
        g_assert_cmpuint(get_word(&f, f.out + 4), ==, 0);   /* it ended in the recursion */
    }
    g_assert_cmpint(run_controlled(&f, "rsum_k", 10, true, 0), ==, 0);
    g_assert_cmpuint(get_word(&f, f.out), ==, 1);           /* no sum: it ended in rsum */
    kemu_device_destroy(f.dev);
}

/* recursion_ptx as PTX ISA 7.8 (stacksave needs 7.3): the stack guard's modules. */
static char *recursion_ptx_78(void)
{
    const char *rest = strchr(recursion_ptx, '\n');
    return g_strdup_printf(".version 7.8%s", rest);
}

/* The stacksave instructions of fn. */
static unsigned stack_checks(const kptx_function *fn)
{
    return count(fn, "stacksave", NULL);
}

/* With a stack size, each function on a cycle of calls (rsum, msum_a, msum_b, tree,
 * forever) checks its stack pointer once as it starts; dbl and the entries, which recurse
 * nowhere, do not; without one, nothing does. */
static void test_recursion_stack_shape(void)
{
    char *ptx78 = recursion_ptx_78();
    for (int with = 0; with < 2; with++) {
        kptx_module *m = test_parse(ptx78);
        kptx_error err = {0};
        const kptx_fence_opts o = {.stack_bytes = with ? 4096 : 0};
        g_assert_cmpint(kptx_fence_module_opts(m, &o, NULL, &err), ==, 0);
        const char *recursive[] = {"rsum", "msum_a", "msum_b", "tree", "forever"};
        for (unsigned i = 0; i < G_N_ELEMENTS(recursive); i++)
            g_assert_cmpuint(stack_checks(entry_of(m, recursive[i])), ==, with ? 1 : 0);
        const char *flat[] = {"dbl", "rsum_k", "msum_k", "tree_k", "deep_k"};
        for (unsigned i = 0; i < G_N_ELEMENTS(flat); i++)
            g_assert_cmpuint(stack_checks(entry_of(m, flat[i])), ==, 0);
        char *text = test_print(m, NULL);
        test_assert_reprints(text);
        free(text);
        kptx_module_free(m);
    }
    g_free(ptx78);
    /* PTX ISA 7.0 has no stacksave: such a module stays unguarded rather than fail to load */
    kptx_module *m = test_parse(recursion_ptx);
    kptx_error err = {0};
    const kptx_fence_opts o = {.stack_bytes = 4096};
    g_assert_cmpint(kptx_fence_module_opts(m, &o, NULL, &err), ==, 0);
    g_assert_cmpuint(stack_checks(entry_of(m, "rsum")), ==, 0);
    g_assert_cmpuint(count(entry_of(m, "rsum"), "ld", ".volatile"), ==, 1);   /* still polls */
    kptx_module_free(m);
}

/* The guard a function compares its stack pointer with (the setp after its stacksave). */
static int64_t guard_of(const kptx_function *fn)
{
    for (unsigned i = 0; i + 1 < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i], *n = &fn->stmts[i + 1];
        if (s->kind == KPTX_STMT_INSTR && !strcmp(s->u.instr.opcode, "stacksave") &&
            n->kind == KPTX_STMT_INSTR && !strcmp(n->u.instr.opcode, "setp") &&
            n->u.instr.n_ops == 3 && n->u.instr.ops[2].kind == KPTX_OPND_INT)
            return n->u.instr.ops[2].value;
    }
    g_assert_not_reached();
    return 0;
}

/* The guard lies within the stack, below its top by less than its size: at the H100's top
 * by default, at the one the backend measured when it says one. */
static void test_recursion_stack_top(void)
{
    const uint64_t tops[] = {0, (uint64_t)1 << 23};
    char *ptx78 = recursion_ptx_78();
    for (unsigned i = 0; i < G_N_ELEMENTS(tops); i++) {
        kptx_module *m = test_parse(ptx78);
        kptx_error err = {0};
        const kptx_fence_opts o = {.stack_bytes = 4096, .stack_top = tops[i]};
        g_assert_cmpint(kptx_fence_module_opts(m, &o, NULL, &err), ==, 0);
        int64_t top = (int64_t)(tops[i] ? tops[i] : KPTX_STACK_TOP);
        int64_t guard = guard_of(entry_of(m, "rsum"));
        g_assert_cmpint(guard, <, top);
        g_assert_cmpint(guard, >, top - 4096);
        g_assert_cmpint(guard_of(entry_of(m, "msum_b")), ==, guard);  /* one per module */
        kptx_module_free(m);
    }
    g_free(ptx78);
}

/* The stack guard ends a recursion that would overflow the stack with KPTX_FAULT_STACK in
 * the fault word, before the emulator's own call stack gives out (KEMU_ERESOURCES without
 * it, test_recursion_cancel), and leaves a recursion that fits alone: with the
 * emulator's stack, forever() stops, rsum(150) and tree(40) (only 40 deep: into the
 * instruction budget) run as before; with 2 KiB, rsum(150) is stopped too. */
static void test_recursion_stack_guard(void)
{
    control_fixture f;
    kptx_fence_opts o = {.stack_bytes = KEMU_STACK_BYTES};
    char *ptx78 = recursion_ptx_78();
    control_open_opts(&f, ptx78, &o, 4);
    set_word(&f, f.out + 4, 0);
    g_assert_cmpint(run_controlled(&f, "deep_k", 0, true, 1u << 24), ==, 0);
    g_assert_cmpuint(get_word(&f, f.out), ==, 1);
    g_assert_cmpuint(get_word(&f, f.out + 4), ==, 0);     /* it ended in the recursion */
    g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_STACK);
    set_word(&f, f.ctl + 4, 0);
    g_assert_cmpint(run_controlled(&f, "rsum_k", 150, true, 0), ==, 0);
    g_assert_cmpuint(get_word(&f, f.out), ==, 150u * 151u / 2u);
    g_assert_cmpint(run_controlled(&f, "tree_k", 40, true, 1u << 20), ==, KEMU_ELIMIT);
    g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_NONE);
    kemu_device_destroy(f.dev);

    o.stack_bytes = 2 << 10;
    control_open_opts(&f, ptx78, &o, 4);
    set_word(&f, f.out, 12345);
    g_assert_cmpint(run_controlled(&f, "rsum_k", 150, true, 0), ==, 0);
    g_assert_cmpuint(get_word(&f, f.out), ==, 12345);     /* no sum: it ended in rsum */
    g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_STACK);
    kemu_device_destroy(f.dev);
    g_free(ptx78);
}

/* The guard's margin counts only what a recursion can call: recursion_ptx with one more
 * entry whose device function has 64 KiB of locals (more than the whole stack) still runs
 * rsum(10) under a 4 KiB stack; counting that function would stop every recursive call. */
static void test_recursion_stack_margin(void)
{
    char *ptx78 = recursion_ptx_78();
    char *text = g_strdup_printf("%s"
        ".func big(.param .b64 p)\n{\n  .local .align 8 .b8 buf[65536];\n"
        "  .reg .b64 %%a;\n  .reg .b32 %%v;\n  mov.u64 %%a, buf;\n"
        "  ld.local.u32 %%v, [%%a];\n  ret;\n}\n"
        ".visible .entry big_k(.param .u64 out)\n{\n"
        "  {\n  .param .b64 a;\n  st.param.b64 [a], 0;\n  call.uni big, (a);\n  }\n"
        "  ret;\n}\n", ptx78);
    control_fixture f;
    kptx_fence_opts o = {.stack_bytes = 4096};
    control_open_opts(&f, text, &o, 5);
    set_word(&f, f.out, 12345);
    g_assert_cmpint(run_controlled(&f, "rsum_k", 10, true, 0), ==, 0);
    g_assert_cmpuint(get_word(&f, f.out), ==, 55);
    g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_NONE);
    kemu_device_destroy(f.dev);
    g_free(text);
    g_free(ptx78);
}

/* A tenant's module whose calls make a chain of n functions (f0 calls f1, ...), declared
 * in order so that a fixpoint over the edges would take a pass per function; the last
 * one ends in a loop, or calls f0 (a cycle of n), or calls itself. Its entry k calls f0,
 * after a prefetch that makes k unfenceable when odd is set. */
static char *chain_ptx(unsigned n, unsigned last, bool odd)
{
    GString *g = g_string_new(HEAD);
    for (unsigned i = 0; i < n; i++)
        g_string_append_printf(g, ".func f%u();\n", i);
    for (unsigned i = 0; i + 1 < n; i++)
        g_string_append_printf(g, ".func f%u()\n{\n  call.uni f%u;\n  ret;\n}\n", i, i + 1);
    if (last == 0)
        g_string_append_printf(g, ".func f%u()\n{\nL:\n  bra.uni L;\n}\n", n - 1);
    else
        g_string_append_printf(g, ".func f%u()\n{\n  call.uni f%u;\n  ret;\n}\n", n - 1,
                               last == 1 ? 0 : n - 1);
    g_string_append_printf(g, ".visible .entry k(.param .u64 p)\n{\n  .reg .b64 %%rd1;\n"
                           "  ld.param.u64 %%rd1, [p];\n%s  call.uni f0;\n  ret;\n}\n",
                           odd ? "  prefetch.global.L2 [%rd1];\n" : "");
    return g_string_free(g, false);
}

/* The pass over one chain_ptx module: the entries fenced, and its time. */
static unsigned fence_chain(kptx_module *m, unsigned n, unsigned last)
{
    kptx_error err = {0};
    unsigned fenced = 9;
    gint64 t0 = g_get_monotonic_time();
    g_assert_cmpint(kptx_fence_module(m, 0, &fenced, &err), ==, 0);
    g_test_message("chain of %u, last %u: fenced in %.3f s", n, last,
                   (double)(g_get_monotonic_time() - t0) / 1e6);
    return fenced;
}

/* Deep chains and long cycles of calls in a hostile module: the analysis neither recurses
 * over them (300000 deep would overflow the C stack) nor takes a pass per function (the
 * test's time limit). Fenced (20000 deep: a rewritten function takes kilobytes), the
 * whole chain takes the control words, and only the loop, or the cycle's one head,
 * polls. */
static void test_recursion_hostile(void)
{
    for (unsigned last = 0; last < 3; last++) {
        char *text = chain_ptx(300000, last, true);
        kptx_module *m = test_parse(text);
        g_assert_cmpuint(fence_chain(m, 300000, last), ==, 0);
        kptx_module_free(m);
        g_free(text);
    }
    enum { N = 20000 };
    for (unsigned last = 0; last < 3; last++) {
        char *text = chain_ptx(N, last, false);
        kptx_module *m = test_parse(text);
        g_assert_cmpuint(fence_chain(m, N, last), ==, 1);
        unsigned polls = 0, fns = 0;
        for (unsigned k = 0; k < m->n_items; k++) {     /* definitions and prototypes */
            const kptx_function *fn = &m->items[k].u.fn;
            if (m->items[k].kind != KPTX_ITEM_FUNCTION || fn->is_entry)
                continue;
            g_assert_cmpuint(fn->n_params, ==, 2);
            polls += count(fn, "ld", ".volatile");
            fns++;
        }
        g_assert_cmpuint(fns, ==, 2 * N);
        g_assert_cmpuint(polls, ==, 1);
        kptx_module_free(m);
        g_free(text);
    }
}

/* With KPTX_FENCE_TRAP an access outside the window is not redirected: the thread ends
 * with the illegal-address fault and nothing is written, inside or outside the window;
 * an access inside runs as before, and a guarded access that does not run does not
 * fault. Without the flag the same store lands in the window (redirected). */
static void test_control_address(void)
{
    for (int trap = 0; trap < 2; trap++) {
        control_fixture f;
        control_open_flags(&f, trap ? KPTX_FENCE_TRAP : 0);
        kemu_devptr inside = f.out;
        kemu_devptr victim = alloc_in(f.dev, &f.other, 700);
        kemu_devptr redirected = f.win.lo + (victim & (WINDOW - 1));
        kemu_range at = {redirected, redirected + (1u << 20)};
        g_assert_cmpuint(alloc_in(f.dev, &at, 100), ==, redirected);
        g_assert_cmpint(run_controlled(&f, "maybe_store", 1, true, 0), ==, 0);
        g_assert_cmpuint(get_word(&f, inside), ==, 9);           /* inside: as before */
        g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_NONE);
        f.out = victim;
        g_assert_cmpint(run_controlled(&f, "maybe_store", 0, true, 0), ==, 0); /* guarded off */
        g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, KPTX_FAULT_NONE);
        g_assert_cmpint(run_controlled(&f, "maybe_store", 1, true, 0), ==, 0);
        g_assert_cmpuint(get_word(&f, victim), ==, 700);         /* never the other's */
        g_assert_cmpuint(get_word(&f, redirected), ==, trap ? 100 : 9);
        g_assert_cmpuint(get_word(&f, f.ctl + 4), ==, trap ? KPTX_FAULT_ADDRESS : KPTX_FAULT_NONE);
        kemu_device_destroy(f.dev);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ptx/fence/control/address", test_control_address);
    g_test_add_func("/ptx/fence/verdicts", test_verdicts);
    g_test_add_func("/ptx/fence/verdicts-module", test_verdicts_module);
    g_test_add_func("/ptx/fence/verdicts-vars-outside", test_verdicts_vars_outside);
    g_test_add_func("/ptx/fence/rewrite", test_rewrite);
    g_test_add_func("/ptx/fence/run-in-window", test_run_in_window);
    g_test_add_func("/ptx/fence/run-redirected", test_run_redirected);
    g_test_add_func("/ptx/fence/control/loop-runs", test_control_loop_runs);
    g_test_add_func("/ptx/fence/control/poll-shape", test_control_poll_shape);
    g_test_add_func("/ptx/fence/control/cancel", test_control_cancel);
    g_test_add_func("/ptx/fence/control/faults", test_control_faults);
    g_test_add_func("/ptx/fence/control/device-functions", test_control_device_functions);
    g_test_add_func("/ptx/fence/control/shared-function", test_control_shared_function);
    g_test_add_func("/ptx/fence/control/recursion-shape", test_recursion_shape);
    g_test_add_func("/ptx/fence/control/recursion-runs", test_recursion_runs);
    g_test_add_func("/ptx/fence/control/recursion-cancel", test_recursion_cancel);
    g_test_add_func("/ptx/fence/control/recursion-stack-shape", test_recursion_stack_shape);
    g_test_add_func("/ptx/fence/control/recursion-stack-guard", test_recursion_stack_guard);
    g_test_add_func("/ptx/fence/control/recursion-stack-margin", test_recursion_stack_margin);
    g_test_add_func("/ptx/fence/control/recursion-stack-top", test_recursion_stack_top);
    g_test_add_func("/ptx/fence/control/recursion-hostile", test_recursion_hostile);
    return g_test_run();
}
