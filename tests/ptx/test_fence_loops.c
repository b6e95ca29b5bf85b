/* The fencing pass's counted loops (host-sched/ptx/fence_loops.c): which loops have their
 * cancel poll strip-mined and which keep the counting poll, and, run in the emulator,
 * that a strip-mined loop computes exactly what the original computes for bounds and
 * starts near every edge (empty loops, exact and inexact distances, strips of 1024
 * steps, wrap-around), that a never-ending counted loop still stops when cancelled, and
 * that a long loop's iterations pay nothing for the poll. */
#include <glib.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/emu.h"
#include "kernelet/ptx.h"
#include "emu_window_util.h"
#include "ptx_test_util.h"

#define WINDOW (16ull << 20)
/* Every test loop also leaves after this many iterations, so that loops the bounds make
 * endless (wrap-around, a step that never meets an ne bound) can be compared too. */
#define VALVE 3000

/* A loop kernel: name(out, start, bound, step) with registers of width bits:
 *   v1 = start; n = 0; do { n++; if (n > VALVE) break; <body> } while (<guard> %p0);
 *   out[0] = n; out[1..] = v1
 * body steps v1 and sets %p0 (it may use v2 = bound and v3 = step). */
typedef struct loop_case {
    const char *name;
    unsigned width;
    const char *body;
    const char *guard;          /* "@%p0" or "@!%p0" */
    bool strip;                 /* the pass should strip-mine it */
    const char *pre;            /* before the loop (may branch into it), or NULL */
} loop_case;

static const loop_case cases[] = {
    /* strip-mined: lt (either source order, polarity, signedness, constant or register
     * step), gt (count-down), ne of any odd or even constant step */
    {"lt_s32_3", 32, "add.s32 %v1, %v1, 3;\nsetp.lt.s32 %p0, %v1, %v2;", "@%p0", true, NULL},
    {"lt_s32_1", 32, "add.s32 %v1, %v1, 1;\nsetp.lt.s32 %p0, %v1, %v2;", "@%p0", true, NULL},
    {"ge_u32_1", 32, "add.u32 %v1, %v1, 1;\nsetp.ge.u32 %p0, %v1, %v2;", "@!%p0", true, NULL},
    {"gt_s64_7", 64, "add.s64 %v1, %v1, 7;\nsetp.gt.s64 %p0, %v2, %v1;", "@%p0", true, NULL},
    {"lt_s32_reg", 32, "add.s32 %v1, %v1, %v3;\nsetp.lt.s32 %p0, %v1, %v2;", "@%p0", true, NULL},
    {"lo_u64_reg", 64, "add.u64 %v1, %v3, %v1;\nsetp.lo.u64 %p0, %v1, %v2;", "@%p0", true, NULL},
    {"gt_s32_m2", 32, "add.s32 %v1, %v1, -2;\nsetp.gt.s32 %p0, %v1, %v2;", "@%p0", true, NULL},
    {"le_u32_m5", 32, "sub.u32 %v1, %v1, 5;\nsetp.le.u32 %p0, %v1, %v2;", "@!%p0", true, NULL},
    {"ne_s32_m4", 32, "add.s32 %v1, %v1, -4;\nsetp.ne.s32 %p0, %v1, %v2;", "@%p0", true, NULL},
    {"eq_b32_6", 32, "add.s32 %v1, %v1, 6;\nsetp.eq.b32 %p0, %v1, %v2;", "@!%p0", true, NULL},
    {"ne_s32_1", 32, "add.s32 %v1, %v1, 1;\nsetp.ne.s32 %p0, %v2, %v1;", "@%p0", true, NULL},
    {"ne_s32_tea", 32, "add.s32 %v1, %v1, -239350328;\nsetp.ne.s32 %p0, %v1, %v2;", "@%p0",
     true, NULL},
    {"ne_u64_odd", 64, "add.s64 %v1, %v1, 12345;\nsetp.ne.u64 %p0, %v1, %v2;", "@%p0", true,
     NULL},
    {"lt_s32_imm", 32, "add.s32 %v1, %v1, 2;\nsetp.lt.s32 %p0, %v1, 2500;", "@%p0", true, NULL},
    /* kept counting: what the proof needs is missing */
    {"imm_bound_wraps", 32, "add.s32 %v1, %v1, 4;\nsetp.lt.s32 %p0, %v1, 2147483646;", "@%p0",
     false, NULL},
    {"iv_twice", 32, "add.s32 %v1, %v1, 1;\nadd.s32 %v1, %v1, 2;\nsetp.lt.s32 %p0, %v1, %v2;",
     "@%p0", false, NULL},
    {"bound_moves", 32, "add.s32 %v2, %v2, 1;\nadd.s32 %v1, %v1, 3;\nsetp.lt.s32 %p0, %v1, %v2;",
     "@%p0", false, NULL},
    {"pred_read", 32, "selp.b32 %v3, 1, 2, %p0;\nadd.s32 %v1, %v1, %v3;\n"
     "setp.lt.s32 %p0, %v1, %v2;", "@%p0", false, NULL},
    {"ne_step_2_22", 32, "add.s32 %v1, %v1, 4194304;\nsetp.ne.s32 %p0, %v1, %v2;", "@%p0",
     false, NULL},
    {"lt_step_down", 32, "add.s32 %v1, %v1, -1;\nsetp.lt.s32 %p0, %v1, %v2;", "@%p0", false,
     NULL},
    {"guarded_step", 32, "@!%p1 add.s32 %v1, %v1, 1;\nsetp.lt.s32 %p0, %v1, %v2;", "@%p0",
     false, NULL},
    {"entered_inside", 32, "MID:\nadd.s32 %v1, %v1, 1;\nsetp.lt.s32 %p0, %v1, %v2;", "@%p0",
     false, "setp.eq.s32 %p1, %v3, 99;\n@%p1 bra MID;\n"},
};
#define N_CASES (sizeof cases / sizeof *cases)

/* The module of every case, with the valve when valve is set. */
static char *cases_ptx(bool valve)
{
    GString *s = g_string_new(".version 7.0\n.target sm_70\n.address_size 64\n");
    for (unsigned i = 0; i < N_CASES; i++) {
        const loop_case *c = &cases[i];
        unsigned w = c->width;
        g_string_append_printf(s,
            ".visible .entry %s(.param .u64 out, .param .u%u start, .param .u%u bound,"
            " .param .u%u step)\n{\n"
            ".reg .b%u %%v<4>;\n.reg .b32 %%n;\n.reg .b64 %%rd1;\n.reg .pred %%p<2>;\n"
            "ld.param.u64 %%rd1, [out];\nld.param.u%u %%v1, [start];\n"
            "ld.param.u%u %%v2, [bound];\nld.param.u%u %%v3, [step];\n"
            "mov.u32 %%n, 0;\nsetp.ne.s32 %%p1, %%n, 0;\n%s"
            "LOOP:\nadd.u32 %%n, %%n, 1;\n",
            c->name, w, w, w, w, w, w, w, c->pre ? c->pre : "");
        if (valve)
            g_string_append_printf(s, "setp.gt.u32 %%p1, %%n, %u;\n@%%p1 bra DONE;\n", VALVE);
        g_string_append_printf(s, "%s\n%s bra LOOP;\nDONE:\nst.global.u32 [%%rd1], %%n;\n"
                               "st.global.u%u [%%rd1+8], %%v1;\nret;\n}\n",
                               c->body, c->guard, w);
    }
    return g_string_free(s, FALSE);
}

typedef struct loops_fixture {
    kemu_device *dev;
    kemu_range win, other;
    kemu_module *plain, *fenced;
    kemu_devptr out, ctl;       /* in the window; the control words elsewhere */
} loops_fixture;

static kemu_devptr alloc_zeroed(kemu_device *dev, const kemu_range *r, size_t bytes)
{
    kemu_devptr p;
    kemu_error e = {0};
    g_assert_cmpint(kemu_mem_alloc_in(dev, r, bytes, &p, &e), ==, 0);
    g_assert_cmpint(kemu_memset(dev, p, 0, 1, bytes, &e), ==, 0);
    return p;
}

static void fixture_open(loops_fixture *f, bool valve)
{
    kemu_error e = {0};
    char *ptx = cases_ptx(valve);
    f->dev = test_emu_windows(WINDOW, &f->win, &f->other);
    g_assert_cmpint(kemu_module_load_in(f->dev, &f->win, ptx, strlen(ptx), &f->plain, &e), ==, 0);
    kptx_module *m = test_parse(ptx);
    kptx_error err = {0};
    unsigned n = 0;
    g_assert_cmpint(kptx_fence_module(m, 0, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, N_CASES);
    char *text = test_print(m, NULL);
    if (kemu_module_load_in(f->dev, &f->win, text, strlen(text), &f->fenced, &e))
        g_error("fenced module: %s\n%s", e.message, text);
    free(text);
    kptx_module_free(m);
    g_free(ptx);
    f->out = alloc_zeroed(f->dev, &f->win, 16);
    f->ctl = alloc_zeroed(f->dev, &f->other, 8);
}

typedef struct loop_result {
    uint32_t n;
    uint64_t v;
    int status;
    uint64_t warp_instructions;
} loop_result;

/* Runs case c of module mod (fenced: with the window and control words) on one thread. */
static loop_result run_case(loops_fixture *f, const loop_case *c, bool fenced, uint64_t start,
                            uint64_t bound, uint64_t step, uint64_t budget)
{
    kemu_module *mod = fenced ? f->fenced : f->plain;
    kemu_function *fn;
    kemu_error e = {0};
    g_assert_cmpint(kemu_module_get_function(mod, c->name, &fn, &e), ==, 0);
    uint8_t params[96] = {0};
    unsigned size = c->width / 8;
    uint64_t vals[3] = {start, bound, step};
    memcpy(params, &f->out, 8);
    for (unsigned i = 0; i < 3; i++)
        memcpy(params + 8 + i * size, &vals[i], size);  /* little-endian: the low bytes */
    uint32_t bytes = 8 + 3 * size;
    if (fenced) {
        uint64_t extra[KPTX_FENCE_EXTRA_PARAMS] = {f->win.lo, WINDOW - 1, f->ctl, f->ctl + 4};
        bytes = kptx_fence_param_offset(bytes);
        memcpy(params + bytes, extra, sizeof extra);
        bytes += sizeof extra;
    }
    g_assert_cmpint(kemu_memset(f->dev, f->out, 0xee, 1, 16, &e), ==, 0);
    kemu_launch_stats stats = {0};
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .params = params,
                              .params_bytes = bytes, .max_warp_instructions = budget,
                              .stats = &stats};
    loop_result r = {.status = kemu_launch(fn, &cfg, &e)};
    r.warp_instructions = stats.warp_instructions;
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, &r.n, f->out, 4, &e), ==, 0);
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, &r.v, f->out + 8, 8, &e), ==, 0);
    if (size == 4)
        r.v &= UINT32_MAX;
    return r;
}

/* Whether fn has a label whose name contains part. */
static bool has_label(const kptx_function *fn, const char *part)
{
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_LABEL && strstr(fn->stmts[i].u.label, part))
            return true;
    return false;
}

/* Each case is strip-mined (an inner-bound label, no counting poll) or keeps counting, as
 * its table entry says; the fenced text assembles back to the same module. */
static void test_which_loops(void)
{
    char *ptx = cases_ptx(true);
    kptx_module *m = test_parse(ptx);
    kptx_error err = {0};
    g_assert_cmpint(kptx_fence_module(m, 0, NULL, &err), ==, 0);
    for (unsigned i = 0; i < N_CASES; i++) {
        const kptx_function *fn = kptx_find_function(m, cases[i].name);
        g_assert_nonnull(fn);
        if (has_label(fn, "_strip") != cases[i].strip ||
            has_label(fn, "_poll") == cases[i].strip)
            g_error("%s: %s", cases[i].name,
                    cases[i].strip ? "not strip-mined" : "strip-mined without proof");
    }
    char *text = test_print(m, NULL);
    test_assert_reprints(text);
    free(text);
    kptx_module_free(m);
    g_free(ptx);
}

/* Values near the interesting points of a width-bit type. */
static uint64_t pick_start(GRand *r, unsigned width)
{
    const uint64_t top = width == 32 ? UINT32_MAX : UINT64_MAX;
    const uint64_t smax = top >> 1;
    const uint64_t points[] = {0, 5, top - 6, 1000, smax - 2, smax + 3, top - 1, smax - 4000};
    return points[g_rand_int_range(r, 0, G_N_ELEMENTS(points))] +
           (uint64_t)g_rand_int_range(r, -3, 4);
}

/* A bound at a distance from start that lands before, on, or after a strip's end (1024
 * steps of 1 to 7), or anywhere. */
static uint64_t pick_bound(GRand *r, uint64_t start, unsigned width)
{
    const int64_t deltas[] = {0, 1, -1, 2, 3, 10, -10, 1023, 1024, 1025, 2048, 3072, 3073,
                              4096, 7168, 7169, 9000, -3000, -7168, 12290};
    uint64_t top = width == 32 ? UINT32_MAX : UINT64_MAX;
    if (g_rand_int_range(r, 0, 8) == 0)
        return ((uint64_t)g_rand_int(r) << 32 | g_rand_int(r)) & top;
    int64_t d = deltas[g_rand_int_range(r, 0, G_N_ELEMENTS(deltas))];
    return (start + (uint64_t)d + (uint64_t)g_rand_int_range(r, -2, 3)) & top;
}

/* Fenced and plain compute the same iteration count and final induction value for
 * hundreds of starts, bounds and register steps per case. */
static void test_same_results(void)
{
    loops_fixture f;
    fixture_open(&f, true);
    GRand *r = g_rand_new_with_seed(20261127);
    const uint64_t steps[] = {1, 3, 4096, 0, (uint64_t)-1, 70000, 99, 65536};
    unsigned runs = g_test_quick() ? 100 : 600, valve = 0, empty = 0;
    uint64_t iterations = 0;
    for (unsigned i = 0; i < N_CASES; i++) {
        const loop_case *c = &cases[i];
        for (unsigned k = 0; k < runs; k++) {
            uint64_t start = pick_start(r, c->width), bound = pick_bound(r, start, c->width);
            uint64_t step = steps[g_rand_int_range(r, 0, G_N_ELEMENTS(steps))];
            loop_result want = run_case(&f, c, false, start, bound, step, 0);
            loop_result got = run_case(&f, c, true, start, bound, step, 0);
            if (want.status || got.status || want.n != got.n || want.v != got.v)
                g_error("%s(start %#" PRIx64 ", bound %#" PRIx64 ", step %#" PRIx64 "): "
                        "plain %d n=%u v=%#" PRIx64 ", fenced %d n=%u v=%#" PRIx64,
                        c->name, start, bound, step, want.status, want.n, want.v, got.status,
                        got.n, got.v);
            iterations += want.n;
            valve += want.n > VALVE;
            empty += want.n == 1;
        }
    }
    g_test_message("%" PRIu64 " iterations; %u loops ran into the valve, %u ran once",
                   iterations, valve, empty);
    g_assert_cmpuint(valve, >, 0);
    g_assert_cmpuint(empty, >, 0);
    g_rand_free(r);
    kemu_device_destroy(f.dev);
}

static const loop_case *case_named(const char *name)
{
    for (unsigned k = 0; k < N_CASES; k++)
        if (!strcmp(cases[k].name, name))
            return &cases[k];
    g_error("no loop case %s", name);
}

static void set_cancel(loops_fixture *f, uint32_t v)
{
    kemu_error e = {0};
    g_assert_cmpint(kemu_memcpy_htod(f->dev, f->ctl, &v, sizeof v, &e), ==, 0);
}

/* Counted loops that never end (without the valve): an ne bound the step never meets,
 * an lt loop whose last step wraps around, a gt loop likewise, a register step of 0. They
 * run into the budget while the cancel word is clear and stop once it is set. */
static void test_cancel(void)
{
    static const struct {
        const char *name;
        uint64_t start, bound, step;
    } endless[] = {
        {"ne_s32_m4", 0, 1, 0},
        {"eq_b32_6", 0, 3, 0},
        {"ne_u64_odd", 0, 0, 0},                 /* 2^64 steps to come back */
        {"lt_s32_3", 0x7ffffffe, 0x7fffffff, 0},
        {"gt_s32_m2", 0x80000001, 0x80000000, 0},
        {"lt_s32_reg", 0, 10, 0},
        {"lo_u64_reg", 0, 10, 0},
    };
    loops_fixture f;
    fixture_open(&f, false);
    for (unsigned i = 0; i < G_N_ELEMENTS(endless); i++) {
        const loop_case *c = case_named(endless[i].name);
        set_cancel(&f, 0);
        loop_result on = run_case(&f, c, true, endless[i].start, endless[i].bound,
                                  endless[i].step, 1u << 20);
        set_cancel(&f, 1);
        loop_result off = run_case(&f, c, true, endless[i].start, endless[i].bound,
                                   endless[i].step, 1u << 20);
        /* cancelled, the thread exits before its stores: the instructions tell how soon */
        if (on.status != KEMU_ELIMIT || off.status != 0 || off.warp_instructions > 64 * 1024)
            g_error("%s: %d without cancel (want the budget), %d after %" PRIu64
                    " instructions with it", c->name, on.status, off.status,
                    off.warp_instructions);
    }
    set_cancel(&f, 0);
    kemu_device_destroy(f.dev);
}

/* A long strip-mined loop issues at most 2% more instructions than the original (the
 * counting poll costs 3 more per iteration: +50% on these bodies). */
static void test_iterations_free(void)
{
    loops_fixture f;
    fixture_open(&f, false);
    const char *names[] = {"lt_s32_1", "ne_s32_m4", "gt_s64_7", "lt_s32_reg"};
    const uint64_t bounds[][3] = {{0, 20000, 0}, {0, (uint64_t)-80000, 0},
                                  {0, 140000, 0}, {0, 60000, 3}};
    for (unsigned i = 0; i < G_N_ELEMENTS(names); i++) {
        const loop_case *c = case_named(names[i]);
        loop_result plain = run_case(&f, c, false, bounds[i][0], bounds[i][1], bounds[i][2], 0);
        loop_result fenced = run_case(&f, c, true, bounds[i][0], bounds[i][1], bounds[i][2], 0);
        g_assert_cmpuint(plain.n, ==, 20000);
        g_assert_cmpuint(fenced.n, ==, plain.n);
        if (fenced.warp_instructions > plain.warp_instructions * 102 / 100)
            g_error("%s: %" PRIu64 " instructions fenced, %" PRIu64 " plain", names[i],
                    fenced.warp_instructions, plain.warp_instructions);
    }
    kemu_device_destroy(f.dev);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ptx/fence/loops/which", test_which_loops);
    g_test_add_func("/ptx/fence/loops/same-results", test_same_results);
    g_test_add_func("/ptx/fence/loops/cancel", test_cancel);
    g_test_add_func("/ptx/fence/loops/iterations-free", test_iterations_free);
    return g_test_run();
}
