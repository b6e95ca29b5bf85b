/* The fence's scrub of local memory (host-sched/ptx/fence_scrub.c). A GPU leaves in a
 * thread's local memory what an earlier kernel wrote there (on an H100 every word of
 * another tenant's, docs/perf/isolation.md); the emulator does the same when its device is
 * made with a residue word. Run there, a kernel that reads its .local variables without
 * writing them (odd sizes and alignments, a loop's worth and single stores, in the entry
 * and in a device function it calls) finds the residue unfenced and only zeros fenced,
 * and what it writes and reads back is the same both ways. Given a local top (as kerneletd
 * gives it), an entry that reads its whole frame, words no variable of it names included,
 * finds the residue unfenced and only zeros fenced; an entry that cannot read local memory
 * gets no scrub of its frame. Also what the pass writes, and that ptxas takes it (with
 * --ptxas PATH). */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/emu.h"
#include "kernelet/ptx.h"
#include "emu_window_util.h"
#include "ptx_test_util.h"
#include "ptxas_util.h"

static const char *ptxas_path;  /* --ptxas PATH: the fenced module must assemble */

#define RESIDUE 0xa5a5a5a5u
enum { THREADS = 2 };

/* Counts into %r1 the nonzero bytes of the .local variable VAR of SIZE bytes. */
#define COUNT(var, size, label)                                                            \
    "  mov.u64 %rd1, " var ";\n  mov.u32 %r2, 0;\n" label ":\n"                            \
    "  cvt.u64.u32 %rd2, %r2;\n  add.u64 %rd3, %rd1, %rd2;\n  ld.local.u8 %h1, [%rd3];\n"   \
    "  setp.ne.u16 %p1, %h1, 0;\n  selp.u32 %r4, 1, 0, %p1;\n  add.u32 %r1, %r1, %r4;\n"   \
    "  add.u32 %r2, %r2, 1;\n  setp.lt.u32 %p1, %r2, " size ";\n  @%p1 bra " label ";\n"

/* k(out): out[tid] = nonzero bytes the thread found in its locals and its callee's,
 * out[THREADS + tid] = a word it wrote to a local and read back. */
static const char module_ptx[] =
    ".version 7.8\n.target sm_70\n.address_size 64\n"
    ".func (.param .b32 ret) callee()\n{\n"
    "  .local .align 2 .b8 cl[6];\n"
    "  .reg .b32 %r<6>;\n  .reg .b64 %rd<4>;\n  .reg .b16 %h1;\n  .reg .pred %p1;\n"
    "  mov.u32 %r1, 0;\n" COUNT("cl", "6", "CL")
    "  st.param.b32 [ret], %r1;\n  ret;\n}\n"
    ".visible .entry k(.param .u64 out)\n{\n"
    "  .local .align 16 .b8 big[4100];\n  .local .align 4 .b8 odd[7];\n"
    "  .local .align 8 .u64 d[3];\n  .local .b8 one[1];\n"
    "  .reg .b32 %r<8>;\n  .reg .b64 %rd<8>;\n  .reg .b16 %h1;\n  .reg .pred %p1;\n"
    "  mov.u32 %r1, 0;\n"
    COUNT("big", "4100", "BIG") COUNT("odd", "7", "ODD") COUNT("d", "24", "D")
    COUNT("one", "1", "ONE")
    "  {\n  .param .b32 r0;\n  call (r0), callee, ();\n  ld.param.b32 %r5, [r0];\n  }\n"
    "  add.u32 %r1, %r1, %r5;\n"
    "  st.local.u32 [odd], 0x11223344;\n  ld.local.u32 %r6, [odd];\n"
    "  ld.param.u64 %rd4, [out];\n  cvta.to.global.u64 %rd4, %rd4;\n"
    "  mov.u32 %r3, %tid.x;\n  mul.wide.u32 %rd5, %r3, 4;\n  add.u64 %rd6, %rd4, %rd5;\n"
    "  st.global.u32 [%rd6], %r1;\n  st.global.u32 [%rd6+8], %r6;\n  ret;\n}\n";

enum { ENTRY_BYTES = 4100 + 7 + 24 + 1, CALLEE_BYTES = 6 };

static kptx_module *fenced(void)
{
    kptx_module *m = test_parse(module_ptx);
    kptx_error err = {0};
    unsigned n = 0;
    g_assert_cmpint(kptx_fence_module(m, 0, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, 1);
    return m;
}

/* Every variable zeroed as its function starts: big in a loop of 16-byte stores and a
 * 4-byte tail, odd in 4 + 2 + 1 bytes, d in three 8-byte stores, one in a byte, cl in three
 * 2-byte stores; nothing else stores zeros to local memory. */
static void test_shape(void)
{
    kptx_module *m = fenced();
    size_t len;
    char *out = test_print(m, &len);
    g_test_message("%s", out);
    const char *want[] = {
        "add.u64 \t%__kfence_lze, %__kfence_lza, 4096;",
        "st.local.v4.b32 \t[%__kfence_lza], {%__kfence_lz, %__kfence_lz, %__kfence_lz, %__kfence_lz};",
        "st.local.b32 \t[big+4096], %__kfence_lz;",
        "st.local.b32 \t[odd], %__kfence_lz;", "st.local.b16 \t[odd+4], %__kfence_lzh;",
        "st.local.b8 \t[odd+6], %__kfence_lzh;",
        "st.local.v2.b32 \t[d+16], {%__kfence_lz, %__kfence_lz};",
        "st.local.b8 \t[one], %__kfence_lzh;", "st.local.b16 \t[cl+4], %__kfence_lzh;",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(want); i++)
        if (!strstr(out, want[i]))
            g_error("missing: %s", want[i]);
    g_assert_null(strstr(out, "[d+24]"));
    g_assert_null(strstr(out, "[odd+7]"));
    if (ptxas_path)
        ptxas_assert_assembles(ptxas_path, out, len, "sm_90", false);
    free(out);
    kptx_module_free(m);
}

/* Runs k of the module text ptx on a device whose blocks start with RESIDUE in local
 * memory; out[] as k leaves it. */
static void run(const char *ptx, bool is_fenced, uint32_t out[2 * THREADS])
{
    uint8_t params[8];
    g_assert_cmpint(test_emu_run_once(ptx, RESIDUE, THREADS, params, sizeof params, is_fenced,
                                      out, 8 * THREADS), ==, 0);
}

static void test_runs(void)
{
    uint32_t plain[2 * THREADS], scrubbed[2 * THREADS];
    run(module_ptx, false, plain);
    kptx_module *m = fenced();
    char *text = test_print(m, NULL);
    run(text, true, scrubbed);
    free(text);
    kptx_module_free(m);
    for (unsigned t = 0; t < THREADS; t++) {
        g_assert_cmpuint(plain[t], ==, ENTRY_BYTES + CALLEE_BYTES);    /* the residue */
        g_assert_cmpuint(scrubbed[t], ==, 0);
        g_assert_cmpuint(plain[THREADS + t], ==, 0x11223344u);
        g_assert_cmpuint(scrubbed[THREADS + t], ==, 0x11223344u);
    }
}

/* The frame: k reads, byte by byte through a pointer made from its array probe, its
 * thread's whole frame [stacksave, top), which the clamp leaves it, before it writes any of
 * it, and counts the nonzero bytes into out[tid]. The emulator lays a kernel's .local
 * variables out downward from KEMU_LOCAL_TOP in the order declared, nested blocks' too, and
 * its stacksave is the lowest: probe's 8 bytes at the top, 8 of padding, hidden's 64 (16-byte
 * aligned), odd's 5 at the bottom (so the frame's bottom is not 16-byte aligned): 85 bytes,
 * 77 of them neither probe nor any top-level variable of the entry, as a GPU's frame holds
 * spill slots, saved registers and padding that PTX does not name. Also its callee's cl,
 * counted into out[THREADS + tid]. */
static const char frame_ptx[] =
    ".version 7.8\n.target sm_70\n.address_size 64\n"
    ".func (.param .b32 ret) callee()\n{\n"
    "  .local .align 2 .b8 cl[6];\n"
    "  .reg .b32 %r<6>;\n  .reg .b64 %rd<4>;\n  .reg .b16 %h1;\n  .reg .pred %p1;\n"
    "  mov.u32 %r1, 0;\n" COUNT("cl", "6", "CL")
    "  st.param.b32 [ret], %r1;\n  ret;\n}\n"
    ".visible .entry k(.param .u64 out)\n{\n"
    "  .local .align 4 .b8 probe[8];\n"
    "  .reg .b32 %r<8>;\n  .reg .b64 %rd<8>;\n  .reg .b16 %h1;\n  .reg .pred %p1;\n"
    "  mov.u32 %r1, 0;\n  mov.u64 %rd1, probe;\n  add.u64 %rd2, %rd1, 8;\n"
    "  sub.u64 %rd1, %rd1, 77;\n"
    "FR:\n  ld.local.u8 %h1, [%rd1];\n  setp.ne.u16 %p1, %h1, 0;\n"
    "  selp.u32 %r4, 1, 0, %p1;\n  add.u32 %r1, %r1, %r4;\n  add.u64 %rd1, %rd1, 1;\n"
    "  setp.lt.u64 %p1, %rd1, %rd2;\n  @%p1 bra FR;\n"
    "  {\n  .local .align 16 .b8 hidden[64];\n  .local .b8 odd[5];\n"
    "  st.local.u32 [hidden], %r1;\n  st.local.u8 [odd+4], %h1;\n  }\n"
    "  {\n  .param .b32 r0;\n  call (r0), callee, ();\n  ld.param.b32 %r5, [r0];\n  }\n"
    "  ld.param.u64 %rd4, [out];\n  cvta.to.global.u64 %rd4, %rd4;\n"
    "  mov.u32 %r3, %tid.x;\n  mul.wide.u32 %rd5, %r3, 4;\n  add.u64 %rd6, %rd4, %rd5;\n"
    "  st.global.u32 [%rd6], %r1;\n  st.global.u32 [%rd6+8], %r5;\n  ret;\n}\n";

enum { FRAME_BYTES = 8 + 8 + 64 + 5 + CALLEE_BYTES };

/* Whether text has a and, after it, b. */
static bool before(const char *text, const char *a, const char *b)
{
    const char *pa = g_strstr_len(text, -1, a);
    return pa && g_strstr_len(pa, -1, b);
}

static kptx_module *fenced_top(const char *text, uint64_t top)
{
    kptx_module *m = test_parse(text);
    kptx_error err = {0};
    unsigned n = 0;
    const kptx_fence_opts o = {.local_top = top};
    g_assert_cmpint(kptx_fence_module_opts(m, &o, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, 1);
    return m;
}

/* With a local top the entry zeroes its frame from stacksave: the bytes to a 16-byte
 * boundary, then 16 a store, and past top's last boundary bytes again (none for
 * KEMU_LOCAL_TOP); its variables are not zeroed one by one (they lie in the frame), the
 * device function's still are. The scrub ends before the entry's code label. */
static void test_frame_shape(void)
{
    static const uint64_t tops[] = {KEMU_LOCAL_TOP, KEMU_LOCAL_TOP + 4};
    for (size_t i = 0; i < G_N_ELEMENTS(tops); i++) {
        kptx_module *m = fenced_top(frame_ptx, tops[i]);
        size_t len;
        char *out = test_print(m, &len);
        g_test_message("%s", out);
        const char *want[] = {
            "stacksave.u64 \t%__kfence_lza;",
            "st.local.b8 \t[%__kfence_lza], %__kfence_lzh;",
            "st.local.v4.b32 \t[%__kfence_lza], {%__kfence_lz, %__kfence_lz, %__kfence_lz, %__kfence_lz};",
            "st.local.b16 \t[cl+4], %__kfence_lzh;",
        };
        for (size_t k = 0; k < G_N_ELEMENTS(want); k++)
            if (!strstr(out, want[k]))
                g_error("missing: %s", want[k]);
        g_assert_null(strstr(out, "[probe]"));
        g_assert_cmpint(strstr(out, "__kfence_lzloopftail:") != NULL, ==, i == 1);
        g_assert_true(before(out, "stacksave.u64 \t%__kfence_lza;", "__kfence_ssdone:"));
        if (ptxas_path)
            ptxas_assert_assembles(ptxas_path, out, len, "sm_90", false);
        free(out);
        kptx_module_free(m);
    }
}

/* An entry that reads no local memory (no call, every address in global, shared, const or
 * param space) could not read its frame: it gets no scrub of it, nor of its unused
 * variable; one generic load, which may be local, gets the frame's. */
static void test_frame_skip(void)
{
    static const char fmt[] =
        ".version 7.8\n.target sm_70\n.address_size 64\n"
        ".visible .entry k(.param .u64 out)\n{\n"
        "  .local .align 4 .b8 unused[8];\n  .reg .b32 %%r1;\n  .reg .b64 %%rd<3>;\n"
        "  ld.param.u64 %%rd1, [out];\n  cvta.to.global.u64 %%rd1, %%rd1;\n"
        "  ld%s.u32 %%r1, [%%rd1];\n  st.global.u32 [%%rd1+4], %%r1;\n  ret;\n}\n";
    static const char *const spaces[] = {".global", ""};
    for (size_t i = 0; i < G_N_ELEMENTS(spaces); i++) {
        char *text = g_strdup_printf(fmt, spaces[i]);
        kptx_module *m = fenced_top(text, KEMU_LOCAL_TOP);
        size_t len;
        char *out = test_print(m, &len);
        g_test_message("%s", out);
        g_assert_cmpint(before(out, "stacksave.u64 \t%__kfence_lza;", ""), ==, i == 1);
        g_assert_cmpint(before(out, "st.local", ""), ==, i == 1);
        if (ptxas_path)
            ptxas_assert_assembles(ptxas_path, out, len, "sm_90", false);
        free(out);
        kptx_module_free(m);
        g_free(text);
    }
}

/* Residue in every byte of the frame unfenced; fenced, none (the entry zeroed it all,
 * not only probe: without the frame scrub it finds the other 77). */
static void test_frame_runs(void)
{
    uint32_t plain[2 * THREADS], scrubbed[2 * THREADS];
    run(frame_ptx, false, plain);
    kptx_module *m = fenced_top(frame_ptx, KEMU_LOCAL_TOP);
    char *text = test_print(m, NULL);
    run(text, true, scrubbed);
    free(text);
    kptx_module_free(m);
    for (unsigned t = 0; t < THREADS; t++) {
        g_assert_cmpuint(plain[t] + plain[THREADS + t], ==, FRAME_BYTES);
        g_assert_cmpuint(scrubbed[t], ==, 0);
        g_assert_cmpuint(scrubbed[THREADS + t], ==, 0);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ptxas_path = ptxas_arg(argc, argv);
    g_test_add_func("/ptx/fence/scrub/shape", test_shape);
    g_test_add_func("/ptx/fence/scrub/runs", test_runs);
    g_test_add_func("/ptx/fence/scrub/frame/shape", test_frame_shape);
    g_test_add_func("/ptx/fence/scrub/frame/runs", test_frame_runs);
    g_test_add_func("/ptx/fence/scrub/frame/skip", test_frame_skip);
    return g_test_run();
}
