/* The fence's clamp of local addresses (host-sched/ptx/fence_local.c). On the GPU a local
 * access past the thread's local memory is an illegal address that ends the shared
 * context, and one below the running function's frame reads what earlier kernels' deeper
 * stacks left there. Fenced, every .local ld/st (entry and device function) and every
 * generic access an entry finds local stays within [the function's stack pointer as it
 * starts, the local top). Checked here: what the pass writes, that it writes nothing
 * without a local top or for a module that cannot use stacksave, that ptxas takes it
 * (with --ptxas PATH), and in the emulator, whose local memory is laid out as the H100's
 * (KEMU_LOCAL_TOP), that a correct kernel computes what it did while stores past the top
 * and loads below the frame land inside the thread's own frames. */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/emu.h"
#include "kernelet/ptx.h"
#include "emu_window_util.h"
#include "ptx_test_util.h"
#include "ptxas_util.h"

static const char *ptxas_path;  /* --ptxas PATH: the fenced module must assemble */

#define TOP 0xfffdc0u
enum { THREADS = 2 };

/* k(out, off): loc[] of 8 words, each thread writes loc[i] = i * 3 + tid and reads loc[5]
 * back (out[tid]); then, at loc + off (bytes, a parameter: in range, past the top, or
 * below the frame), stores 77 and loads it back through a .local and a generic address
 * (out[THREADS + tid], out[2 * THREADS + tid]); callee reads its caller's loc[2] through
 * a generic pointer and its own array through .local (out[3 * THREADS + tid]). */
static const char module_fmt[] =
    ".version %s\n.target sm_70\n.address_size 64\n"
    ".func (.param .b32 ret) callee(.param .b64 p)\n{\n"
    "  .local .align 4 .b8 own[8];\n  .reg .b32 %%r<4>;\n  .reg .b64 %%rd<4>;\n"
    "  ld.param.u64 %%rd1, [p];\n  cvta.to.local.u64 %%rd1, %%rd1;\n  ld.local.u32 %%r1, [%%rd1+8];\n"
    "  st.local.u32 [own+4], %%r1;\n  mov.u64 %%rd2, own;\n  ld.local.u32 %%r2, [%%rd2+4];\n"
    "  st.param.b32 [ret], %%r2;\n  ret;\n}\n"
    ".visible .entry k(.param .u64 out, .param .u64 off)\n{\n"
    "  .local .align 16 .b8 loc[32];\n"
    "  .reg .b32 %%r<12>;\n  .reg .b64 %%rd<12>;\n  .reg .pred %%p1;\n"
    "  mov.u32 %%r1, %%tid.x;\n  mov.u64 %%rd1, loc;\n  mov.u32 %%r2, 0;\n"
    "FILL:\n  mul.lo.u32 %%r3, %%r2, 3;\n  add.u32 %%r3, %%r3, %%r1;\n"
    "  mul.wide.u32 %%rd2, %%r2, 4;\n  add.u64 %%rd3, %%rd1, %%rd2;\n"
    "  st.local.u32 [%%rd3], %%r3;\n  add.u32 %%r2, %%r2, 1;\n"
    "  setp.lt.u32 %%p1, %%r2, 8;\n  @%%p1 bra FILL;\n"
    "  ld.local.u32 %%r4, [loc+20];\n"
    "  ld.param.u64 %%rd4, [off];\n  add.u64 %%rd5, %%rd1, %%rd4;\n  mov.u32 %%r5, 77;\n"
    "  st.local.u32 [%%rd5], %%r5;\n  ld.local.u32 %%r6, [%%rd5];\n"
    "  cvta.local.u64 %%rd6, %%rd5;\n  ld.u32 %%r7, [%%rd6];\n"
    "  cvta.local.u64 %%rd7, %%rd1;\n"
    "  {\n  .param .b64 a0;\n  .param .b32 r0;\n  st.param.b64 [a0], %%rd7;\n"
    "  call (r0), callee, (a0);\n  ld.param.b32 %%r8, [r0];\n  }\n"
    "  ld.param.u64 %%rd8, [out];\n  cvta.to.global.u64 %%rd8, %%rd8;\n"
    "  mul.wide.u32 %%rd9, %%r1, 4;\n  add.u64 %%rd10, %%rd8, %%rd9;\n"
    "  st.global.u32 [%%rd10], %%r4;\n  st.global.u32 [%%rd10+%u], %%r6;\n"
    "  st.global.u32 [%%rd10+%u], %%r7;\n  st.global.u32 [%%rd10+%u], %%r8;\n  ret;\n}\n";

static char *module_text(const char *version)
{
    return g_strdup_printf(module_fmt, version, 4 * THREADS, 8 * THREADS, 12 * THREADS);
}

static kptx_module *fenced(const char *text, uint64_t top)
{
    kptx_module *m = test_parse(text);
    kptx_error err = {0};
    unsigned n = 0;
    const kptx_fence_opts o = {.local_top = top};
    g_assert_cmpint(kptx_fence_module_opts(m, &o, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, 1);
    return m;
}

/* Not inlined: gcc 12 then takes test_print's buffer for a dangling local (a false
 * -Wdangling-pointer). */
static G_GNUC_NO_INLINE unsigned occurrences(const char *text, const char *what)
{
    unsigned n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* Each function reads its stack pointer once for its clamps (the entry once more, for the
 * scrub of its frame, fence_scrub.c); each .local access is clamped (a max and a
 * min below the top less its width), the entry's generic accesses also where they are
 * local; without a local top, or in a module before PTX ISA 7.3, nothing of it. */
static void test_shape(void)
{
    char *text = module_text("7.8");
    kptx_module *m = fenced(text, TOP);
    size_t len;
    char *out = test_print(m, &len);
    g_test_message("%s", out);
    g_assert_cmpuint(occurrences(out, "stacksave.u64"), ==, 3);    /* entry (2), callee */
    g_assert_cmpuint(occurrences(out, "min.u64 \t%__kfence_lca, %__kfence_lca, 16776636;"), ==,
                     7);                               /* 4 + 3 .local accesses, TOP - 4 */
    g_assert_cmpuint(occurrences(out, "isspacep.local"), ==, 1);   /* the entry's generic ld */
    g_assert_nonnull(strstr(out, "max.u64 \t%__kfence_lca, %__kfence_lca, %__kfence_lo4;"));
    if (ptxas_path)
        ptxas_assert_assembles(ptxas_path, out, len, "sm_90", false);
    free(out);
    kptx_module_free(m);
    /* --fence-faults: the generic access is checked where global or shared, and
     * clamped where local (nothing reports that) */
    m = test_parse(text);
    kptx_error err = {0};
    const kptx_fence_opts trap = {.flags = KPTX_FENCE_TRAP, .local_top = TOP};
    g_assert_cmpint(kptx_fence_module_opts(m, &trap, NULL, &err), ==, 0);
    out = test_print(m, &len);
    g_assert_cmpuint(occurrences(out, "isspacep.local"), ==, 1);
    g_assert_cmpuint(occurrences(out, "stacksave.u64"), ==, 3);
    if (ptxas_path)
        ptxas_assert_assembles(ptxas_path, out, len, "sm_90", false);
    free(out);
    kptx_module_free(m);
    m = fenced(text, 0);
    out = test_print(m, NULL);
    g_assert_null(strstr(out, "stacksave"));
    g_assert_null(strstr(out, "isspacep.local"));
    free(out);
    kptx_module_free(m);
    g_free(text);
    text = module_text("7.0");
    m = fenced(text, TOP);
    out = test_print(m, NULL);
    g_assert_null(strstr(out, "stacksave"));
    free(out);
    kptx_module_free(m);
    g_free(text);
}

/* Runs k of the module text ptx with off; its status, out[] as it leaves it. */
static int run(const char *ptx, bool is_fenced, int64_t off, uint32_t out[4 * THREADS])
{
    uint8_t params[16];
    memcpy(params + 8, &off, 8);
    return test_emu_run_once(ptx, 0, THREADS, params, sizeof params, is_fenced, out,
                             16 * THREADS);
}

/* In range the fenced kernel computes what the original does; 1 MiB past the top and
 * 4 KiB below the frame the original faults (on the GPU the first ends the context) and
 * the fenced one completes, its store and both loads landing at the same place in the
 * thread's own frames; the callee still reads its caller's array. */
static void test_runs(void)
{
    char *text = module_text("7.8");
    kptx_module *m = fenced(text, KEMU_LOCAL_TOP);
    char *ftext = test_print(m, NULL);
    kptx_module_free(m);
    static const int64_t offs[] = {0, 8, 1 << 20, -4096};
    for (size_t i = 0; i < G_N_ELEMENTS(offs); i++) {
        uint32_t plain[4 * THREADS] = {0}, clamped[4 * THREADS] = {0};
        int prc = run(text, false, offs[i], plain);
        int frc = run(ftext, true, offs[i], clamped);
        g_test_message("off %lld: plain %d, fenced %d", (long long)offs[i], prc, frc);
        g_assert_cmpint(frc, ==, 0);
        g_assert_cmpint(prc, ==, i < 2 ? 0 : KEMU_EADDRESS);
        for (unsigned t = 0; t < THREADS; t++) {
            g_assert_cmpuint(clamped[t], ==, 15 + t);                  /* loc[5] */
            g_assert_cmpuint(clamped[THREADS + t], ==, 77);
            g_assert_cmpuint(clamped[2 * THREADS + t], ==, 77);
            g_assert_cmpuint(clamped[3 * THREADS + t], ==, offs[i] == 8 ? 77 : 6 + t); /* loc[2] */
            if (i < 2)
                g_assert_cmpmem(plain, sizeof plain, clamped, sizeof clamped);
        }
    }
    free(ftext);
    g_free(text);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ptxas_path = ptxas_arg(argc, argv);
    g_test_add_func("/ptx/fence/local/shape", test_shape);
    g_test_add_func("/ptx/fence/local/runs", test_runs);
    return g_test_run();
}
