/* The fence's alignment (host-sched/ptx/fence_align.c): on the GPU a misaligned global
 * access is a sticky fault that ends the shared context. Run in the emulator, which faults
 * as the GPU does, every access form the fence handles (ld, ldu, st, atom, red; 2 to 16
 * bytes, vectors; .global and generic; with an offset): unfenced, a misaligned address
 * faults (KEMU_EMISALIGNED); fenced, it reaches the aligned address below it in the
 * tenant's own window (redirect), or ends the thread with KPTX_FAULT_MISALIGNED and
 * touches nothing (KPTX_FENCE_TRAP); an aligned address computes exactly what the
 * original does. Also what the pass writes (one mask per width, computed once), and that
 * ptxas takes it (with --ptxas PATH). */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/emu.h"
#include "kernelet/ptx.h"
#include "emu_window_util.h"
#include "ptx_test_util.h"
#include "ptxas_util.h"

static const char *ptxas_path;  /* --ptxas PATH: the fenced modules must assemble */

#define HEAD ".version 7.0\n.target sm_70\n.address_size 64\n"
#define WINDOW (16ull << 20)

/* One access: the body of an entry (p, out) that accesses p + off (%rd1 holds p) and
 * writes what it read, or an atomic's old value, to out (%rd2, aligned). */
typedef struct form {
    const char *name;
    unsigned width;
    int off;
    const char *body;
} form;

static const form forms[] = {
    {"ld_u16", 2, 0, "ld.global.u16 %h1, [%rd1];\n cvt.u32.u16 %r1, %h1;\n"
                     " st.global.u32 [%rd2], %r1;"},
    {"ld_u32", 4, 0, "ld.global.u32 %r1, [%rd1];\n st.global.u32 [%rd2], %r1;"},
    {"ld_off", 4, 8, "ld.global.u32 %r1, [%rd1+8];\n st.global.u32 [%rd2], %r1;"},
    {"ldu_u64", 8, 0, "ldu.global.u64 %rd3, [%rd1];\n st.global.u64 [%rd2], %rd3;"},
    {"ld_v2_u32", 8, 0, "ld.global.v2.u32 {%r1, %r2}, [%rd1];\n"
                        " st.global.v2.u32 [%rd2], {%r1, %r2};"},
    {"ld_v4_u32", 16, 0, "ld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];\n"
                         " st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};"},
    {"ld_v2_u64", 16, 0, "ld.global.v2.u64 {%rd3, %rd4}, [%rd1];\n"
                         " st.global.v2.u64 [%rd2], {%rd3, %rd4};"},
    {"st_u16", 2, 0, "mov.u16 %h1, 4660;\n st.global.u16 [%rd1], %h1;"},
    {"st_v2_u32", 8, 0, "mov.u32 %r1, 17;\n mov.u32 %r2, 18;\n"
                        " st.global.v2.u32 [%rd1], {%r1, %r2};"},
    {"st_v4_u32", 16, -4, "mov.u32 %r1, 17;\n mov.u32 %r2, 18;\n"
                          " st.global.v4.u32 [%rd1+-4], {%r1, %r2, %r1, %r2};"},
    {"atom_u32", 4, 0, "atom.global.add.u32 %r1, [%rd1], 5;\n st.global.u32 [%rd2], %r1;"},
    {"atom_cas_b64", 8, 0, "atom.global.cas.b64 %rd3, [%rd1], 0, 7;\n"
                           " st.global.u64 [%rd2], %rd3;"},
    {"red_u64", 8, 0, "red.global.add.u64 [%rd1], 5;"},
    {"gen_ld_v2_u32", 8, 0, "ld.v2.u32 {%r1, %r2}, [%rd1];\n st.v2.u32 [%rd2], {%r1, %r2};"},
    {"gen_ld_v4_u32", 16, 0, "ld.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];\n"
                             " st.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};"},
    {"gen_st_u32", 4, 4, "mov.u32 %r1, 9;\n st.u32 [%rd1+4], %r1;"},
    {"gen_atom_u64", 8, 0, "atom.add.u64 %rd3, [%rd1], 5;\n st.u64 [%rd2], %rd3;"},
    {"gen_red_u32", 4, 0, "red.add.u32 [%rd1], 3;"},
};
enum { N_FORMS = sizeof forms / sizeof forms[0] };

static char *forms_ptx(void)
{
    GString *s = g_string_new(HEAD);
    for (unsigned i = 0; i < N_FORMS; i++)
        g_string_append_printf(s, ".visible .entry %s(.param .u64 p, .param .u64 out)\n{\n"
                               " .reg .b16 %%h<2>;\n .reg .b32 %%r<5>;\n .reg .b64 %%rd<5>;\n"
                               " ld.param.u64 %%rd1, [p];\n ld.param.u64 %%rd2, [out];\n"
                               " %s\n ret;\n}\n", forms[i].name, forms[i].body);
    return g_string_free(s, FALSE);
}

/* ---- what the pass writes ---- */

static kptx_module *fenced(unsigned flags)
{
    char *ptx = forms_ptx();
    kptx_module *m = test_parse(ptx);
    kptx_error err = {0};
    unsigned n = 0;
    g_assert_cmpint(kptx_fence_module(m, flags, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, N_FORMS);
    g_free(ptx);
    return m;
}

/* Each width's mask is computed once as the entry starts, and each access costs what it
 * did: and, or (global), isspacep, and, or, selp (generic), on its width's mask. */
static void test_align_shape(void)
{
    kptx_module *m = fenced(0);
    char *t = test_function_text(m, "ld_v4_u32");       /* two accesses of 16 bytes */
    g_assert_cmpuint(test_occurrences(t, "and.b64"), ==, 3);
    g_assert_cmpuint(test_occurrences(t, "and.b64 \t%__kfence_m16, %__kfence_r1, -16;"), ==, 1);
    g_assert_cmpuint(test_occurrences(t, "%__kfence_m16;\n"), ==, 3);   /* declared, two uses */
    g_assert_cmpuint(test_occurrences(t, "or.b64"), ==, 2);
    g_assert_null(strstr(t, "%__kfence_m4"));
    g_free(t);
    t = test_function_text(m, "ld_u16");                /* 2 bytes in, 4 out: two masks */
    g_assert_cmpuint(test_occurrences(t, "and.b64"), ==, 4);
    g_assert_nonnull(strstr(t, "%__kfence_r4, %rd1, %__kfence_m2;"));
    g_assert_nonnull(strstr(t, "%__kfence_r4, %rd2, %__kfence_m4;"));
    g_free(t);
    t = test_function_text(m, "gen_ld_v2_u32");     /* and the shared clamp: and, min per access */
    g_assert_cmpuint(test_occurrences(t, "isspacep.global"), ==, 2);
    g_assert_cmpuint(test_occurrences(t, "isspacep.shared"), ==, 2);
    g_assert_cmpuint(test_occurrences(t, "selp.b64"), ==, 4);
    g_assert_cmpuint(test_occurrences(t, "and.b64"), ==, 5);
    g_assert_cmpuint(test_occurrences(t, "%__kfence_m8;\n"), ==, 3);
    g_assert_cmpuint(test_occurrences(t, "%__kfence_g8;\n"), ==, 4);  /* declared, set, two uses */
    g_free(t);
    char *text = test_print(m, NULL);
    test_assert_reprints(text);
    free(text);
    kptx_module_free(m);
}

/* With KPTX_FENCE_TRAP the access keeps its own address (it runs only where the mask
 * would not change it), and the fault code is chosen between misaligned and outside. */
static void test_align_shape_trap(void)
{
    kptx_module *m = fenced(KPTX_FENCE_TRAP);
    char *t = test_function_text(m, "ld_off");
    g_assert_nonnull(strstr(t, "ld.global.u32 \t%r1, [%rd1+8];"));
    g_assert_nonnull(strstr(t, "selp.u32 \t%__kfence_c1, 5, 3, %__kfence_q;"));
    g_assert_cmpuint(test_occurrences(t, "st.volatile.global.u32"), ==, 2);
    g_free(t);
    t = test_function_text(m, "gen_st_u32");
    g_assert_nonnull(strstr(t, "setp.ne.and.u64"));
    g_assert_null(strstr(t, "selp.b64"));
    g_free(t);
    kptx_module_free(m);
}

/* An access whose width the pass cannot tell (no type) is refused, not fenced unaligned. */
static void test_align_verdict(void)
{
    kptx_module *m = test_parse(HEAD ".visible .entry k(.param .u64 p)\n{\n .reg .b32 %r1;\n"
                                " .reg .b64 %rd1;\n ld.param.u64 %rd1, [p];\n"
                                " ld.global %r1, [%rd1];\n ret;\n}\n");
    char why[256];
    kptx_error err = {0};
    g_assert_cmpint(kptx_fence_verdict(m, "k", 0, why, sizeof why, &err), ==, 0);
    g_assert_nonnull(strstr(why, "does not cover"));
    kptx_module_free(m);
}

/* The forms, as written and fenced both ways, assemble (sm_90: vectors of two u64). */
static void test_align_assembles(void)
{
    if (!ptxas_path) {
        g_test_skip("no ptxas");
        return;
    }
    for (unsigned k = 0; k < 3; k++) {
        char *ptx = forms_ptx();
        kptx_module *m = k ? fenced(k == 1 ? 0 : KPTX_FENCE_TRAP) : test_parse(ptx);
        size_t len;
        char *text = test_print(m, &len);
        ptxas_assert_assembles(ptxas_path, text, len, "sm_90", false);
        free(text);
        g_free(ptx);
        kptx_module_free(m);
    }
}

/* ---- run in the emulator ---- */

enum { BUF = 64, SLOT = 16 };   /* the accesses' aligned address: buf + SLOT */

typedef struct fixture {
    kemu_device *dev;
    kemu_range win, other;
    kemu_module *plain, *redirect, *trap;
    kemu_devptr buf, out, victim, ctl;  /* buf, out in the window; victim at buf's offset */
} fixture;

static kemu_module *load(fixture *f, const kemu_range *r, kptx_module *m, const char *ptx)
{
    return test_emu_load(f->dev, r, m, ptx);
}

static kemu_devptr alloc_at(fixture *f, kemu_range r, size_t bytes)
{
    kemu_devptr p;
    kemu_error e = {0};
    g_assert_cmpint(kemu_mem_alloc_in(f->dev, &r, bytes, &p, &e), ==, 0);
    return p;
}

static void fixture_open(fixture *f)
{
    f->dev = test_emu_windows(WINDOW, &f->win, &f->other);
    char *ptx = forms_ptx();
    f->plain = load(f, &f->win, NULL, ptx);
    f->redirect = load(f, &f->win, fenced(0), NULL);
    f->trap = load(f, &f->win, fenced(KPTX_FENCE_TRAP), NULL);
    g_free(ptx);
    f->buf = alloc_at(f, f->win, BUF);
    f->out = alloc_at(f, f->win, 16);
    kemu_devptr at = f->other.lo + (f->buf - f->win.lo);
    f->victim = alloc_at(f, (kemu_range){at, at + (1u << 20)}, BUF);
    g_assert_cmpuint(f->victim, ==, at);
    f->ctl = alloc_at(f, f->other, 8);
}

static void put(fixture *f, kemu_devptr p, const void *bytes, size_t n)
{
    kemu_error e = {0};
    g_assert_cmpint(kemu_memcpy_htod(f->dev, p, bytes, n, &e), ==, 0);
}

static void get(fixture *f, kemu_devptr p, void *bytes, size_t n)
{
    kemu_error e = {0};
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, bytes, p, n, &e), ==, 0);
}

/* The memory a run may change, as the test sets it before each run. */
typedef struct state {
    uint8_t buf[BUF], out[16], victim[BUF];
    uint32_t fault;
} state;

static void reset(fixture *f)
{
    state s = {0};
    for (unsigned i = 0; i < BUF; i++)
        s.buf[i] = s.victim[i] = (uint8_t)(7 * i + 1);
    put(f, f->buf, s.buf, BUF);
    put(f, f->victim, s.victim, BUF);
    put(f, f->out, s.out, sizeof s.out);
    put(f, f->ctl, (uint32_t[2]){0, 0}, 8);
}

static void read_state(fixture *f, state *s)
{
    get(f, f->buf, s->buf, BUF);
    get(f, f->out, s->out, sizeof s->out);
    get(f, f->victim, s->victim, BUF);
    get(f, f->ctl + 4, &s->fault, 4);
}

/* Runs form fm of mod (fenced: with the window and control words) on one thread, the
 * access at addr; the emulator's status, and what the memory holds after it in *s. */
static int run(fixture *f, kemu_module *mod, bool fenced_run, const form *fm, kemu_devptr addr,
               state *s)
{
    kemu_function *fn;
    kemu_error e = {0};
    g_assert_cmpint(kemu_module_get_function(mod, fm->name, &fn, &e), ==, 0);
    reset(f);
    uint64_t params[2 + KPTX_FENCE_EXTRA_PARAMS] = {addr - (uint64_t)(int64_t)fm->off, f->out,
                                                    f->win.lo, WINDOW - 1, f->ctl, f->ctl + 4};
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .params = params,
                              .params_bytes = (fenced_run ? 6 : 2) * sizeof *params};
    int rc = kemu_launch(fn, &cfg, &e);
    read_state(f, s);
    return rc;
}

static void assert_untouched(const state *s)
{
    state clean = {0};
    for (unsigned i = 0; i < BUF; i++)
        clean.buf[i] = clean.victim[i] = (uint8_t)(7 * i + 1);
    g_assert_cmpmem(s->buf, BUF, clean.buf, BUF);
    g_assert_cmpmem(s->out, sizeof s->out, clean.out, sizeof clean.out);
    g_assert_cmpmem(s->victim, BUF, clean.victim, BUF);
}

static void assert_same(const state *got, const state *want)
{
    g_assert_cmpmem(got->buf, BUF, want->buf, BUF);
    g_assert_cmpmem(got->out, sizeof got->out, want->out, sizeof want->out);
    g_assert_cmpmem(got->victim, BUF, want->victim, BUF);
}

/* Form fm, the access k bytes past the aligned slot (k < its width). */
static void check_form(fixture *f, const form *fm, unsigned k)
{
    state ref, s;
    kemu_devptr own = f->buf + SLOT, other = f->victim + SLOT;
    g_test_message("%s, %u bytes past the alignment", fm->name, k);
    /* the original, aligned: the reference; misaligned: the fault a GPU raises */
    g_assert_cmpint(run(f, f->plain, false, fm, own, &ref), ==, 0);
    g_assert_cmpuint(ref.fault, ==, KPTX_FAULT_NONE);
    if (k)
        g_assert_cmpint(run(f, f->plain, false, fm, own + k, &s), ==, KEMU_EMISALIGNED);
    /* redirect: the aligned address below, in the window; from outside it too */
    g_assert_cmpint(run(f, f->redirect, true, fm, own + k, &s), ==, 0);
    assert_same(&s, &ref);
    g_assert_cmpint(run(f, f->redirect, true, fm, other + k, &s), ==, 0);
    assert_same(&s, &ref);                      /* the victim's bytes as they were */
    /* trap: a misaligned access ends the thread before it, outside the window too */
    g_assert_cmpint(run(f, f->trap, true, fm, own + k, &s), ==, 0);
    if (k) {
        g_assert_cmpuint(s.fault, ==, KPTX_FAULT_MISALIGNED);
        assert_untouched(&s);
    } else {
        assert_same(&s, &ref);
    }
    g_assert_cmpint(run(f, f->trap, true, fm, other + k, &s), ==, 0);
    g_assert_cmpuint(s.fault, ==, k ? KPTX_FAULT_MISALIGNED : KPTX_FAULT_ADDRESS);
    assert_untouched(&s);
}

static void test_align_runs(void)
{
    fixture f;
    fixture_open(&f);
    for (unsigned i = 0; i < N_FORMS; i++) {
        const unsigned w = forms[i].width;
        const unsigned ks[] = {0, 1, w / 2, w - 1};
        for (unsigned j = 0; j < 4; j++)
            if (j == 0 || ks[j] != ks[j - 1])
                check_form(&f, &forms[i], ks[j]);
    }
    kemu_device_destroy(f.dev);
}

/* The fault's name, as backends put it in the launch's error (the server answers
 * "misaligned" with CUDA_ERROR_MISALIGNED_ADDRESS). */
static void test_align_fault_name(void)
{
    g_assert_nonnull(strstr(kptx_fault_name(KPTX_FAULT_MISALIGNED), "misaligned address"));
    g_assert_null(strstr(kptx_fault_name(KPTX_FAULT_ADDRESS), "misaligned"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ptxas_path = ptxas_arg(argc, argv);
    g_test_add_func("/ptx/fence/align/shape", test_align_shape);
    g_test_add_func("/ptx/fence/align/shape-trap", test_align_shape_trap);
    g_test_add_func("/ptx/fence/align/verdict", test_align_verdict);
    g_test_add_func("/ptx/fence/align/assembles", test_align_assembles);
    g_test_add_func("/ptx/fence/align/runs", test_align_runs);
    g_test_add_func("/ptx/fence/align/fault-name", test_align_fault_name);
    return g_test_run();
}
