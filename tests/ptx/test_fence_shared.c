/* The fence's clamp of shared addresses (host-sched/ptx/fence_shared.c): on the GPU a
 * shared access past the block's shared memory, or misaligned, is a sticky fault that ends
 * the shared context. Run in the emulator, which faults as the GPU does (an illegal or a
 * misaligned address), every access form the clamp handles (ld, st, atom, red; 1 to 16
 * bytes, vectors; .shared, .shared::cta and generic; 32- and 64-bit registers, an offset,
 * a variable; the static array and the dynamic one), at offsets in and out of
 * the block's shared memory: unfenced, an access outside faults; fenced, it lands at
 * min(a & -w, limit - w), inside the block's own shared memory, and an access inside
 * computes exactly what the original does; with KPTX_FENCE_TRAP it ends the thread with
 * KPTX_FAULT_ADDRESS or KPTX_FAULT_MISALIGNED instead. Also what the pass writes, what it
 * refuses (distributed shared memory, the driver's reserved shared memory), device
 * functions, the slicer's own shared array, odd operands, and that ptxas takes it all
 * (with --ptxas PATH). */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/emu.h"
#include "kernelet/ptx.h"
#include "emu_window_util.h"
#include "ptx_test_util.h"
#include "ptxas_util.h"

static const char *ptxas_path;  /* --ptxas PATH: the fenced modules must assemble */

#define HEAD ".version 7.8\n.target sm_80\n.address_size 64\n"   /* sm_80: cp.async */
#define WINDOW (16ull << 20)
enum { STATIC = 64, DYN_AT = 64 };  /* arr's bytes; where the emulator puts dyn[] */

/* One access form: statements at the access, the shared offset arr + off in %r5 (32-bit)
 * and %rd5 (64-bit), the value in %r2; a load leaves what it read in %r7. */
typedef struct form {
    const char *name;
    unsigned width;
    enum { STORE, LOAD, ADD, RED } op;     /* ADD: atom, which loads too */
    int64_t fixed;      /* >= 0: the access's offset, whatever off (a constant address) */
    unsigned base;      /* the offset off counts from: arr (0) or dyn (DYN_AT) */
    const char *body;
} form;

static const form forms[] = {
    {"st_u32", 4, STORE, -1, 0, "st.shared.u32 [%r5], %r2;"},
    {"st_off", 4, STORE, -1, 0, "add.s32 %r6, %r5, 12;\n st.shared.u32 [%r6+-12], %r2;"},
    {"st_odd_off", 4, STORE, -1, 0, "add.s32 %r6, %r5, 2;\n st.shared.u32 [%r6+-2], %r2;"},
    {"st_wide", 4, STORE, -1, 0, "st.shared.u32 [%rd5], %r2;"},
    {"st_wide_off", 4, STORE, -1, 0, "add.s64 %rd6, %rd5, 8;\n st.shared.u32 [%rd6+-8], %r2;"},
    {"st_cta", 4, STORE, -1, 0, "st.shared::cta.u32 [%r5], %r2;"},
    {"st_u8", 1, STORE, -1, 0, "cvt.u16.u32 %h1, %r2;\n st.shared.u8 [%r5], %h1;"},
    {"st_u16", 2, STORE, -1, 0, "cvt.u16.u32 %h1, %r2;\n st.shared.u16 [%r5], %h1;"},
    {"st_u64", 8, STORE, -1, 0, "cvt.u64.u32 %rd6, %r2;\n st.shared.u64 [%r5], %rd6;"},
    {"st_v2", 8, STORE, -1, 0, "st.shared.v2.u32 [%r5], {%r2, %r2};"},
    {"st_v4", 16, STORE, -1, 0, "st.shared.v4.u32 [%r5], {%r2, %r2, %r2, %r2};"},
    {"ld_u32", 4, LOAD, -1, 0, "ld.shared.u32 %r7, [%r5];"},
    {"ld_v2", 8, LOAD, -1, 0, "ld.shared.v2.u32 {%r7, %r11}, [%r5];"},
    {"ld_cta_wide", 4, LOAD, -1, 0, "ld.volatile.shared::cta.u32 %r7, [%rd5];"},
    {"atom_add", 4, ADD, -1, 0, "atom.shared.add.u32 %r7, [%r5], %r2;"},
    {"red_add", 4, RED, -1, 0, "red.shared.add.u32 [%r5], %r2;"},
    {"gen_st", 4, STORE, -1, 0, "cvta.shared.u64 %rd6, %rd5;\n st.u32 [%rd6], %r2;"},
    {"gen_ld", 4, LOAD, -1, 0, "cvta.shared.u64 %rd6, %rd5;\n ld.u32 %r7, [%rd6];"},
    {"gen_v2", 8, STORE, -1, 0, "cvta.shared.u64 %rd6, %rd5;\n st.v2.u32 [%rd6+0], {%r2, %r2};"},
    {"gen_u8", 1, STORE, -1, 0, "cvta.shared.u64 %rd6, %rd5;\n cvt.u16.u32 %h1, %r2;\n"
                                " st.u8 [%rd6], %h1;"},
    {"gen_atom", 4, ADD, -1, 0, "cvta.shared.u64 %rd6, %rd5;\n atom.add.u32 %r7, [%rd6], %r2;"},
    {"dyn_st", 4, STORE, -1, DYN_AT, "mov.u32 %r6, dyn;\n add.u32 %r6, %r6, %r1;\n"
                                     " st.shared.u32 [%r6], %r2;"},
    {"sym_near", 4, STORE, 60, 0, "st.shared.u32 [arr+60], %r2;"},     /* in arr: kept */
    {"sym_far", 4, STORE, 4096, 0, "st.shared.u32 [arr+4096], %r2;"},
    {"sym_mis", 4, STORE, 62, 0, "st.shared.u32 [arr+62], %r2;"},
    /* cp.async: the destination clamped, the source (out + 240, past the words dumped,
     * in the window) masked */
    {"cp_async4", 4, STORE, -1, 0, "st.global.u32 [%rd1+240], %r2;\n"
                                   " cp.async.ca.shared.global [%r5], [%rd1+240], 4;\n"
                                   " cp.async.wait_all;"},
    {"cp_async8_size", 8, STORE, -1, 0, "st.global.v2.u32 [%rd1+240], {%r2, %r2};\n"
                                        " mov.u32 %r6, 8;\n"
                                        " cp.async.ca.shared.global [%r5], [%rd1+240], 8, %r6;\n"
                                        " cp.async.commit_group;\n cp.async.wait_group 0;"},
    {"cp_async16", 16, STORE, -1, 0, "st.global.v4.u32 [%rd1+240], {%r2, %r2, %r2, %r2};\n"
                                     " cp.async.cg.shared.global [%rd5], [%rd1+240], 16;\n"
                                     " cp.async.wait_all;"},
};
enum { N_FORMS = sizeof forms / sizeof forms[0] };

/* Each form's entry (out, off, val, words): fills the block's shared memory, words of
 * it, with 0x1000 + i one word at a time, runs the form, writes what it loaded to out[0]
 * and the shared memory after it to out[1..]. One thread: no barrier. */
static void append_entry(GString *s, const char *name, const char *body)
{
    g_string_append_printf(
        s,
        ".visible .entry %s(.param .u64 out, .param .u32 off, .param .u32 val,"
        " .param .u32 words)\n{\n"
        " .reg .b16 %%h<2>;\n .reg .b32 %%r<12>;\n .reg .b64 %%rd<8>;\n .reg .pred %%p<2>;\n"
        " .shared .align 16 .b8 arr[%u];\n"
        " ld.param.u64 %%rd1, [out];\n ld.param.u32 %%r1, [off];\n"
        " ld.param.u32 %%r2, [val];\n ld.param.u32 %%r3, [words];\n"
        " mov.u32 %%r4, 0;\nFILL:\n shl.b32 %%r8, %%r4, 2;\n add.u32 %%r9, %%r4, 4096;\n"
        " st.shared.u32 [%%r8], %%r9;\n add.u32 %%r4, %%r4, 1;\n"
        " setp.lt.u32 %%p1, %%r4, %%r3;\n @%%p1 bra FILL;\n"
        " mov.u32 %%r10, arr;\n add.u32 %%r5, %%r10, %%r1;\n cvt.u64.u32 %%rd5, %%r5;\n"
        " mov.u32 %%r7, 0;\n %s\n st.global.u32 [%%rd1], %%r7;\n"
        " mov.u32 %%r4, 0;\nDUMP:\n shl.b32 %%r8, %%r4, 2;\n ld.shared.u32 %%r9, [%%r8];\n"
        " mul.wide.u32 %%rd2, %%r4, 4;\n add.s64 %%rd3, %%rd1, %%rd2;\n"
        " st.global.u32 [%%rd3+4], %%r9;\n add.u32 %%r4, %%r4, 1;\n"
        " setp.lt.u32 %%p1, %%r4, %%r3;\n @%%p1 bra DUMP;\n ret;\n}\n",
        name, STATIC, body);
}

static char *forms_ptx(void)
{
    GString *s = g_string_new(HEAD ".extern .shared .align 16 .b8 dyn[];\n");
    for (unsigned i = 0; i < N_FORMS; i++)
        append_entry(s, forms[i].name, forms[i].body);
    return g_string_free(s, FALSE);
}

static kptx_module *fenced_module(const char *ptx, unsigned flags, unsigned expect)
{
    kptx_module *m = test_parse(ptx);
    kptx_error err = {0};
    unsigned n = 0;
    g_assert_cmpint(kptx_fence_module(m, flags, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, expect);
    return m;
}

/* ---- what the pass writes ---- */

/* The limit once as the entry starts, one clamp register per width; an and and a min per
 * access (no and for a byte), its address computed first where it is not one 32-bit
 * register; an access that stays in its variable is left alone; one .extern array. */
static void test_shape(void)
{
    char *ptx = forms_ptx();
    kptx_module *m = fenced_module(ptx, 0, N_FORMS);
    char *all = test_print(m, NULL);
    g_assert_cmpuint(test_occurrences(all, ".extern .shared .align 1 .b8 __kfence_smem[];"), ==, 1);
    test_assert_reprints(all);
    free(all);
    char *t = test_function_text(m, "st_u32");
    g_assert_cmpuint(test_occurrences(t, "mov.u32 \t%__kfence_sa, __kfence_smem;"), ==, 1);
    g_assert_cmpuint(test_occurrences(t, "mov.u32 \t%__kfence_sb, %dynamic_smem_size;"), ==, 1);
    g_assert_cmpuint(test_occurrences(t, "sub.s32 \t%__kfence_s4, %__kfence_sa, 4;"), ==, 1);
    g_assert_cmpuint(test_occurrences(t, "max.s32 \t%__kfence_s4, %__kfence_s4, 0;"), ==, 1);
    /* the fill, the access, the dump: and, min each on their own registers */
    g_assert_cmpuint(test_occurrences(t, "and.b32 \t%__kfence_sa, %r8, -4;"), ==, 2);
    g_assert_cmpuint(test_occurrences(t, "and.b32 \t%__kfence_sa, %r5, -4;"), ==, 1);
    g_assert_cmpuint(test_occurrences(t, "min.u32 \t%__kfence_sa, %__kfence_sa, %__kfence_s4;"),
                     ==, 3);
    g_assert_nonnull(strstr(t, "st.shared.u32 \t[%__kfence_sa], %r2;"));
    g_assert_null(strstr(t, "%__kfence_g"));            /* no generic access */
    g_free(t);
    t = test_function_text(m, "st_wide_off");  /* a 64-bit register; the offset after the and */
    g_assert_nonnull(strstr(t, "cvt.u32.u64 \t%__kfence_sa, %rd6;\n"
                               "\tand.b32 \t%__kfence_sa, %__kfence_sa, -4;\n"
                               "\tadd.s32 \t%__kfence_sa, %__kfence_sa, -8;\n"
                               "\tmin.u32 \t%__kfence_sa, %__kfence_sa, %__kfence_s4;"));
    g_free(t);
    t = test_function_text(m, "st_odd_off");   /* an offset that is no multiple: added first */
    g_assert_nonnull(strstr(t, "add.s32 \t%__kfence_sa, %r6, -2;\n"
                               "\tand.b32 \t%__kfence_sa, %__kfence_sa, -4;"));
    g_free(t);
    t = test_function_text(m, "st_u16");       /* cvt.u16 is no access; the and is on %r5 itself */
    g_assert_nonnull(strstr(t, "and.b32 \t%__kfence_sa, %r5, -2;"));
    g_free(t);
    t = test_function_text(m, "st_u8");                            /* a byte: no and */
    g_assert_nonnull(strstr(t, "min.u32 \t%__kfence_sa, %r5, %__kfence_s1;"));
    g_free(t);
    t = test_function_text(m, "sym_near");                         /* inside arr: left alone */
    g_assert_nonnull(strstr(t, "st.shared.u32 \t[arr+60], %r2;"));
    g_free(t);
    t = test_function_text(m, "sym_mis");                          /* past arr's end: clamped */
    g_assert_nonnull(strstr(t, "mov.u32 \t%__kfence_sa, arr;"));
    g_assert_null(strstr(t, "[arr+62]"));
    g_free(t);
    t = test_function_text(m, "gen_v2");       /* generic: the window's mask and the shared clamp */
    g_assert_cmpuint(test_occurrences(t, "isspacep.shared"), ==, 1);
    g_assert_nonnull(strstr(t, "cvta.shared.u64 \t%__kfence_g8, %__kfence_g8;"));
    g_assert_nonnull(strstr(t, "min.u64 \t%__kfence_r5, %__kfence_r5, %__kfence_g8;"));
    g_free(t);
    kptx_module_free(m);
    /* trap: the access keeps the offset it checked; the fault code is chosen */
    m = fenced_module(ptx, KPTX_FENCE_TRAP, N_FORMS);
    t = test_function_text(m, "st_off");
    g_assert_nonnull(strstr(t, "setp.ne.u32 \t%__kfence_o, %__kfence_sb, %__kfence_sa;"));
    g_assert_nonnull(strstr(t, "selp.u32 \t%__kfence_c1, 5, 3, %__kfence_q;"));
    g_assert_nonnull(strstr(t, "st.shared.u32 \t[%__kfence_sa], %r2;"));
    g_free(t);
    t = test_function_text(m, "gen_st");
    g_assert_nonnull(strstr(t, "or.pred \t%__kfence_o, %__kfence_o, %__kfence_p;"));
    g_assert_nonnull(strstr(t, "st.u32 \t[%rd6], %r2;"));
    g_free(t);
    kptx_module_free(m);
    g_free(ptx);
}

/* ---- other instructions with shared addresses ---- */

/* Every instruction besides ld/st/atom/red whose shared address the pass clamps, with the
 * offset tile + off in %r2 (%rd3: 64-bit); the emulator runs none but cp.async (above).
 * Each in a block of its own (the labels): no group, each its own clamp. */
static const char ops_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry ops(.param .u64 p, .param .u32 off)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<12>;\n  .reg .b64 %rd<4>;\n"
    "  .shared .align 16 .b8 tile[256];\n  .shared .align 8 .b64 bar;\n"
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [off];\n  mov.u32 %r2, tile;\n"
    "  add.u32 %r2, %r2, %r1;\n  cvt.u64.u32 %rd3, %r2;\n  mov.u32 %r3, 8;\n"
    "  mbarrier.init.shared::cta.b64 [bar], 1;\n"
    "O1:\n"
    "  mbarrier.init.shared.b64 [%r2], 1;\n"
    "O2:\n"
    "  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r4, %r5, %r6, %r7}, [%r2];\n"
    "O3:\n"
    "  ldmatrix.sync.aligned.m8n8.x2.trans.shared::cta.b16 {%r4, %r5}, [%rd3+32];\n"
    "O4:\n"
    "  stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r2+16], {%r4};\n"
    "O5:\n"
    "  cp.async.ca.shared.global [%r2+8], [%rd1], 8, %r3;\n"
    "O6:\n"
    "  cp.async.cg.shared.global [tile+16], [%rd1+16], 16;\n"
    "O7:\n"
    "  cp.async.commit_group;\n  cp.async.wait_group 0;\n"
    "  mbarrier.arrive.shared::cta.b64 %rd2, [%r2];\n"
    "O8:\n"
    "  mbarrier.test_wait.shared.b64 %p1, [%r2], %rd2;\n"
    "O9:\n"
    "  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], %r3;\n"
    "O10:\n"
    "  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r2], 16;\n"
    "O11:\n"
    "  mbarrier.arrive_drop.shared.b64 %rd2, [%r2];\n"
    "O12:\n"
    "  cp.async.mbarrier.arrive.noinc.shared.b64 [%r2];\n"
    "O13:\n"
    "  mbarrier.pending_count.b64 %r8, %rd2;\n"
    "O14:\n"
    "  mbarrier.inval.shared.b64 [%r2];\n  ret;\n}\n";

/* The clamp of %r2 for w bytes (and, min) right before the instruction that uses it. */
static void assert_clamped(const char *t, unsigned w, const char *instr)
{
    char *want = g_strdup_printf("and.b32 \t%%__kfence_sa, %%r2, -%u;\n"
                                 "\tmin.u32 \t%%__kfence_sa, %%__kfence_sa, %%__kfence_s%u;\n"
                                 "\t%s", w, w, instr);
    if (!strstr(t, want))
        g_error("not clamped for %u bytes: %s", w, instr);
    g_free(want);
}

/* ldmatrix and stmatrix rows (16 bytes), mbarrier objects (8), cp.async's destination
 * (cp-size) are clamped as a shared access of that width; cp.async's source is masked
 * into the window and a register src-size bounded by cp-size; what stays in its variable
 * and pending_count (a state, no address) are left alone; with KPTX_FENCE_TRAP each
 * clamp is a check. All of it assembles. */
static void test_ops_shape(void)
{
    kptx_module *m = fenced_module(ops_ptx, 0, 1);
    char *t = test_function_text(m, "ops");
    assert_clamped(t, 8, "mbarrier.init.shared.b64 \t[%__kfence_sa], 1;");
    assert_clamped(t, 16, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 \t{%r4, %r5, %r6, %r7}, "
                          "[%__kfence_sa];");
    g_assert_nonnull(strstr(t, "cvt.u32.u64 \t%__kfence_sa, %rd3;\n"
                               "\tand.b32 \t%__kfence_sa, %__kfence_sa, -16;\n"
                               "\tadd.s32 \t%__kfence_sa, %__kfence_sa, 32;\n"
                               "\tmin.u32 \t%__kfence_sa, %__kfence_sa, %__kfence_s16;\n"
                               "\tldmatrix.sync.aligned.m8n8.x2.trans.shared::cta.b16 \t{%r4, %r5}, "
                               "[%__kfence_sa];"));
    g_assert_nonnull(strstr(t, "add.s32 \t%__kfence_sa, %__kfence_sa, 16;\n"
                               "\tmin.u32 \t%__kfence_sa, %__kfence_sa, %__kfence_s16;\n"
                               "\tstmatrix.sync.aligned.m8n8.x1.shared.b16 \t[%__kfence_sa], {%r4};"));
    g_assert_nonnull(strstr(t, "add.s32 \t%__kfence_sa, %__kfence_sa, 8;\n"
                               "\tmin.u32 \t%__kfence_sa, %__kfence_sa, %__kfence_s8;\n"
                               "\tand.b64 \t%__kfence_r4, %rd1, %__kfence_m8;\n"
                               "\tor.b64 \t%__kfence_r4, %__kfence_r4, %__kfence_r0;\n"
                               "\tmin.u32 \t%__kfence_sb, %r3, 8;\n"
                               "\tcp.async.ca.shared.global \t[%__kfence_sa], [%__kfence_r4], 8, "
                               "%__kfence_sb;"));
    g_assert_nonnull(strstr(t, "and.b64 \t%__kfence_r4, %__kfence_r4, %__kfence_m16;\n"
                               "\tor.b64 \t%__kfence_r4, %__kfence_r4, %__kfence_r0;\n"
                               "\tcp.async.cg.shared.global \t[tile+16], [%__kfence_r4], 16;"));
    assert_clamped(t, 8, "mbarrier.arrive.shared::cta.b64 \t%rd2, [%__kfence_sa];");
    assert_clamped(t, 8, "mbarrier.test_wait.shared.b64 \t%p1, [%__kfence_sa], %rd2;");
    assert_clamped(t, 8, "mbarrier.try_wait.parity.shared::cta.b64 \t%p1, [%__kfence_sa], %r3;");
    assert_clamped(t, 8, "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 \t[%__kfence_sa], 16;");
    assert_clamped(t, 8, "mbarrier.arrive_drop.shared.b64 \t%rd2, [%__kfence_sa];");
    assert_clamped(t, 8, "cp.async.mbarrier.arrive.noinc.shared.b64 \t[%__kfence_sa];");
    assert_clamped(t, 8, "mbarrier.inval.shared.b64 \t[%__kfence_sa];");
    g_assert_nonnull(strstr(t, "\tmbarrier.init.shared::cta.b64 \t[bar], 1;"));
    g_assert_nonnull(strstr(t, "\tmbarrier.pending_count.b64 \t%r8, %rd2;"));
    g_assert_cmpuint(test_occurrences(t, "min.u32 \t%__kfence_sa"), ==, 12);
    g_free(t);
    kptx_module_free(m);
    m = fenced_module(ops_ptx, KPTX_FENCE_TRAP, 1);
    t = test_function_text(m, "ops");
    g_assert_cmpuint(test_occurrences(t, "setp.ne.u32 \t%__kfence_o, %__kfence_sb, "), ==, 12);
    g_assert_nonnull(strstr(t, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 \t{%r4, %r5, %r6, %r7}, "
                               "[%r2];"));
    g_free(t);
    kptx_module_free(m);
    for (unsigned k = 0; ptxas_path && k < 3; k++) {
        m = k ? fenced_module(ops_ptx, k == 1 ? 0 : KPTX_FENCE_TRAP, 1) : test_parse(ops_ptx);
        size_t len;
        char *text = test_print(m, &len);
        ptxas_assert_assembles(ptxas_path, text, len, "sm_90", false);
        free(text);
        kptx_module_free(m);
    }
}

/* ---- groups: one clamp for a run of accesses from one base (fence_shared.c) ---- */

typedef struct group_case {
    const char *name, *body;    /* statements on %r5 (32-bit), %rd5 (64-bit), %r6 */
    unsigned mins;              /* clamps (min.u32) the body gets */
    const char *want;           /* a substring of the fenced body, or NULL */
} group_case;

static const group_case group_cases[] = {
    {"eight", "ld.shared.f32 %f1, [%r5];\n ld.shared.f32 %f2, [%r5+4];\n"
              " ld.shared.f32 %f3, [%r5+8];\n ld.shared.f32 %f4, [%r5+12];\n"
              " st.shared.f32 [%r5+16], %f1;\n atom.shared.add.u32 %r7, [%r5+20], 1;\n"
              " red.shared.add.u32 [%r5+24], 1;\n ld.shared.f32 %f5, [%r5+28];",
     1, "and.b32 \t%__kfence_sg0, %r5, -4;\n"
        "\tmin.u32 \t%__kfence_sg0, %__kfence_sg0, %__kfence_sh0;\n"
        "\tld.shared.f32 \t%f1, [%__kfence_sg0];"},
    {"bound", "ld.shared.f32 %f1, [%r5];\n ld.shared.f32 %f2, [%r5+124];",
     1, "sub.s32 \t%__kfence_sh0, %__kfence_sa, 128;\n"
        "\tmax.s32 \t%__kfence_sh0, %__kfence_sh0, 0;\n"
        "\tand.b32 \t%__kfence_sh0, %__kfence_sh0, -4;"},
    {"last_offset", "ld.shared.f32 %f1, [%r5];\n ld.shared.f32 %f2, [%r5+124];",
     1, "ld.shared.f32 \t%f2, [%__kfence_sg0+124];"},
    {"other_ops", "mov.f32 %f1, 0f3f800000;\n ld.shared.f32 %f2, [%r5];\n"
                  " add.f32 %f3, %f1, %f2;\n st.shared.f32 [%r5+4], %f3;\n"
                  " .loc 1 2 3\n ld.shared.f32 %f4, [%r5+8];", 1, NULL},
    {"guarded", "setp.eq.u32 %p1, %r6, 0;\n ld.shared.f32 %f1, [%r5];\n"
                " ld.shared.f32 %f2, [%r5+4];\n @%p1 ld.shared.f32 %f3, [%r5+8];\n"
                " ld.shared.f32 %f4, [%r5+12];\n ld.shared.f32 %f5, [%r5+16];", 3,
     "and.b32 \t%__kfence_sg1, %r5, -4;\n"       /* the first after the guarded one */
     "\tadd.s32 \t%__kfence_sg1, %__kfence_sg1, 12;\n"},
    {"write_between", "ld.shared.f32 %f1, [%r5];\n ld.shared.f32 %f2, [%r5+4];\n"
                      " add.u32 %r5, %r5, 8;\n ld.shared.f32 %f3, [%r5];\n"
                      " ld.shared.f32 %f4, [%r5+4];", 2, NULL},
    {"writes_itself", "ld.shared.u32 %r6, [%r5];\n ld.shared.u32 %r5, [%r5+4];\n"
                      " ld.shared.u32 %r7, [%r5+8];", 2, "ld.shared.u32 \t%r5, [%__kfence_sg0+4];"},
    {"label", "ld.shared.f32 %f1, [%r5];\n ld.shared.f32 %f2, [%r5+4];\nMID:\n"
              " ld.shared.f32 %f3, [%r5+8];\n ld.shared.f32 %f4, [%r5+12];", 2, NULL},
    {"barrier", "st.shared.f32 [%r5], %f1;\n bar.sync 0;\n ld.shared.f32 %f2, [%r5+4];", 2, NULL},
    {"bases", "ld.shared.f32 %f1, [%r5];\n ld.shared.f32 %f2, [%r6];\n"
              " ld.shared.f32 %f3, [%r5+64];\n ld.shared.f32 %f4, [%r6+4];", 2,
     "ld.shared.f32 \t%f4, [%__kfence_sg1+4];"},
    /* a negative offset: r + lo is the lowest access's own address, wrapped alike */
    {"negative", "ld.shared.u8 %r7, [%r5+-3];\n ld.shared.u8 %r8, [%r5];\n"
                 " ld.shared.u8 %r9, [%r5+4];", 1,
     "add.s32 \t%__kfence_sg0, %r5, -3;\n"
     "\tmin.u32 \t%__kfence_sg0, %__kfence_sg0, %__kfence_sh0;\n"
     "\tld.shared.u8 \t%r7, [%__kfence_sg0];"},
    {"lower_later", "ld.shared.f32 %f1, [%r5+8];\n ld.shared.f32 %f2, [%r5];", 1,
     "and.b32 \t%__kfence_sg0, %r5, -4;\n"     /* from the lowest, a later one */
     "\tmin.u32 \t%__kfence_sg0, %__kfence_sg0, %__kfence_sh0;\n"
     "\tld.shared.f32 \t%f1, [%__kfence_sg0+8];"},
    /* widths: the and to the widest; each offset from the lowest a multiple of its width */
    {"mixed", "ld.shared.v4.u32 {%r7, %r8, %r9, %r10}, [%r5];\n st.shared.u32 [%r5+16], %r7;\n"
              " st.shared.u8 [%r5+21], %h1;", 1,
     "sub.s32 \t%__kfence_sh0, %__kfence_sa, 22;\n"
     "\tmax.s32 \t%__kfence_sh0, %__kfence_sh0, 0;\n"
     "\tand.b32 \t%__kfence_sh0, %__kfence_sh0, -16;"},
    {"misaligned", "ld.shared.u32 %r7, [%r5];\n ld.shared.u32 %r8, [%r5+2];", 2, NULL},
    {"wider_off", "ld.shared.u32 %r7, [%r5+4];\n ld.shared.u64 %rd7, [%r5+8];", 2, NULL},
    {"too_far", "ld.shared.u32 %r7, [%r5];\n ld.shared.u32 %r8, [%r5+1020];\n"
                " ld.shared.u32 %r8, [%r5+1024];", 2, NULL},
    {"wide_reg", "ld.shared.u32 %r7, [%rd5+4];\n ld.shared.u32 %r8, [%rd5+8];", 1,
     "cvt.u32.u64 \t%__kfence_sa, %rd5;\n"
     "\tand.b32 \t%__kfence_sg0, %__kfence_sa, -4;\n"
     "\tadd.s32 \t%__kfence_sg0, %__kfence_sg0, 4;"},
    {"in_variable", "ld.shared.u32 %r7, [arr+4];\n ld.shared.u32 %r8, [arr+8];", 0, NULL},
    {"generic", "cvta.shared.u64 %rd6, %rd5;\n ld.u32 %r7, [%rd6];\n ld.u32 %r8, [%rd6+4];", 0,
     NULL},
};

static char *group_ptx(const group_case *c)
{
    return g_strdup_printf(
        ".version 8.0\n.target sm_90\n.address_size 64\n.file 1 \"g.cu\"\n"
        ".visible .entry %s(.param .u32 at, .param .u32 other)\n{\n"
        " .reg .pred %%p<2>;\n .reg .b16 %%h<2>;\n .reg .b32 %%r<12>;\n .reg .f32 %%f<8>;\n"
        " .reg .b64 %%rd<8>;\n .shared .align 16 .b8 arr[64];\n"
        " ld.param.u32 %%r5, [at];\n ld.param.u32 %%r6, [other];\n cvt.u64.u32 %%rd5, %%r5;\n"
        " %s\n ret;\n}\n", c->name, c->body);
}

/* A group of unguarded accesses from one base gets one min; a guard, a write of the base,
 * a label, a barrier, another base, a misaligned or too distant offset splits it;
 * KPTX_FENCE_TRAP checks each; the result assembles. */
static void test_groups_shape(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(group_cases); i++) {
        const group_case *c = &group_cases[i];
        g_test_message("%s", c->name);
        char *ptx = group_ptx(c);
        kptx_module *m = fenced_module(ptx, 0, 1);
        char *t = test_function_text(m, c->name);
        /* a group's clamp, an access's own (the scrub's min is on its own registers) */
        if (test_occurrences(t, "min.u32 \t%__kfence_sg") +
            test_occurrences(t, "min.u32 \t%__kfence_sa,") != c->mins)
            g_error("%s: not %u clamps in\n%s", c->name, c->mins, t);
        if (c->want && !strstr(t, c->want))
            g_error("%s: no \"%s\" in\n%s", c->name, c->want, t);
        g_free(t);
        char *all = test_print(m, NULL);
        test_assert_reprints(all);
        if (ptxas_path)
            ptxas_assert_assembles(ptxas_path, all, strlen(all), "sm_90", false);
        free(all);
        kptx_module_free(m);
        m = fenced_module(ptx, KPTX_FENCE_TRAP, 1);    /* each access checked, as before */
        t = test_function_text(m, c->name);
        g_assert_null(strstr(t, "%__kfence_sg"));
        g_free(t);
        kptx_module_free(m);
        g_free(ptx);
    }
}

/* ---- verdicts ---- */

typedef struct verdict_case {
    const char *body;       /* the kernel's statements; %r1..%r4, %rd1..%rd2 */
    const char *why;        /* substring of the reason, NULL: fenceable */
} verdict_case;

static const verdict_case verdicts[] = {
    {"ld.shared.u32 %r1, [%r2];", NULL},
    {"st.shared::cta.v4.b32 [%rd1+16], {%r1, %r2, %r3, %r4};", NULL},
    {"atom.shared.cas.b64 %rd2, [%r2], %rd1, %rd2;", NULL},
    {"call.uni helper, (%r2);", NULL},      /* its shared accesses are clamped too */
    {"ld.shared %r1, [%r2];", "accesses shared memory in a way the fence does not cover"},
    {"ld.shared.u32 %r1, [gvar];", "accesses shared memory in a way the fence does not cover"},
    {"ld.shared::cluster.u32 %r1, [%r2];", "distributed shared memory"},
    {"st.shared::cluster.u32 [%rd1], %r1;", "distributed shared memory"},
    {"mapa.shared::cluster.u32 %r1, %r2, %r3;", "mapa"},
    {"mapa.u64 %rd2, %rd1, %r3;", "distributed shared memory"},
    {"cvta.shared::cluster.u64 %rd2, %rd1;", "distributed shared memory"},
    {"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r2];",
     "distributed shared memory"},
    {"isspacep.shared::cluster %p1, %rd1;", NULL},  /* looks only */
    {"call.uni remote, (%r2);", "calls remote: ld.shared::cluster.u32"},
    {"mov.u32 %r1, %reserved_smem_offset_begin;", "%reserved_smem_offset_begin (line"},
    {"call.uni reserved, (%r2);", "calls reserved: %reserved_smem_offset_end (line"},
    {"mov.u32 %r1, %dynamic_smem_size;", NULL},
    /* other instructions with shared addresses: clamped (test_ops_shape) */
    {"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r1, %r2, %r3, %r4}, [%r2];", NULL},
    {"ldmatrix.sync.aligned.m16n16.x1.trans.shared::cta.b8 {%r1, %r3}, [%rd1];", NULL},
    {"stmatrix.sync.aligned.m8n8.x4.shared::cta.b16 [%r2], {%r1, %r2, %r3, %r4};", NULL},
    {"stmatrix.sync.aligned.m16n8.x1.trans.shared.b8 [%r2], {%r1};", NULL},
    {"mbarrier.init.shared::cta.b64 [%r2], %r1;", NULL},
    {"mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], %r1;", NULL},
    {"mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd2, [%r2], %r1;", NULL},
    {"mbarrier.pending_count.b64 %r1, %rd1;", NULL},
    {"cp.async.mbarrier.arrive.shared::cta.b64 [%r2];", NULL},
    {"cp.async.cg.shared.global.L2::cache_hint [%r2], [%rd1], 16, %r1, %rd2;", NULL},
    {"cp.async.ca.shared.global [%r2], [gvar], 4, %p1;", NULL},
    {"call.uni matrix, (%r2);", NULL},      /* clamped in the device function */
    {"call.uni copier, (%r2);", "calls copier, which touches global memory"},
    /* generic forms (an address that is not shared is undefined for them) */
    {"ldmatrix.sync.aligned.m8n8.x1.b16 {%r1}, [%rd1];", "cannot clamp into the block's"},
    {"mbarrier.init.b64 [%rd1], %r1;", "mbarrier.init.b64 (line"},
    {"stmatrix.sync.aligned.m8n8.x1.shared.b16 [gvar], {%r1};", "cannot clamp into the"},
    {"cp.async.ca.shared.global [%r2], [%rd1], 3;", "cp.async.ca.shared.global (line"},
    {"cp.async.ca.shared.global [gvar], [%rd1], 4;", "cp.async.ca.shared.global (line"},
    /* refused: a shared reach the fence cannot bound */
    {"wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%r1, %r1, %r1, %r1, %r1, %r1, %r1,"
     " %r1}, [%r2], %r3;", "accesses shared memory in a way the fence does not cover"},
    {"wmma.store.d.sync.aligned.row.m16n16k16.shared::cta.f32 [%r2], {%r1, %r1, %r1, %r1,"
     " %r1, %r1, %r1, %r1}, %r3;", "accesses shared memory in a way the fence does not cover"},
    {"tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%r2], %rd1;",
     "tensormap.replace"},
    {"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%r1, %r2, %r3, %r4}, %rd1, %rd2, 1,"
     " 1, 1, 0, 0;", "descriptors whose layout only run time knows"},
    {"wgmma.fence.sync.aligned;", NULL},
    {"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 32;",
     "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 (line 48) reaches shared (or"},
    {"st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%r2], %r1, [%r3];",
     "distributed shared memory"},
    {"red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r2],"
     " %r1, [%r3];", "distributed shared memory"},
    {"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], %r1,"
     " [%r3];", "distributed shared memory"},
    {"cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r2], [%rd1], %r1,"
     " [%r3];", "may touch global memory"},
    {"cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r2], %r1;",
     "may touch global memory"},
    {"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2],"
     " [%rd1, {%r1, %r3}], [%r4];", "distributed shared memory"},
    {"multimem.ld_reduce.relaxed.sys.add.u32 %r1, [%rd1];", "may touch global memory"},
};

static char *verdict_module(const char *version, const char *body)
{
    return g_strdup_printf(
        ".version %s\n.target sm_90\n.address_size 64\n.global .align 4 .u32 gvar;\n"
        ".func helper(.param .u32 q)\n{\n  .reg .b32 %%v<3>;\n  ld.param.u32 %%v1, [q];\n"
        "  ld.shared.u32 %%v2, [%%v1+4];\n  st.shared.u32 [%%v1], %%v2;\n  ret;\n}\n"
        ".func remote(.param .u32 q)\n{\n  .reg .b32 %%v<3>;\n  ld.param.u32 %%v1, [q];\n"
        "  ld.shared::cluster.u32 %%v2, [%%v1];\n  ret;\n}\n"
        ".func reserved(.param .u32 q)\n{\n  .reg .b32 %%v;\n"
        "  mov.u32 %%v, %%reserved_smem_offset_end;\n  ret;\n}\n"
        ".func matrix(.param .u32 q)\n{\n  .reg .b32 %%v<3>;\n  ld.param.u32 %%v1, [q];\n"
        "  ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%%v1, %%v2}, [%%v1];\n  ret;\n}\n"
        ".func copier(.param .u32 q)\n{\n  .reg .b32 %%v;\n  .reg .b64 %%a;\n"
        "  ld.param.u32 %%v, [q];\n  cvt.u64.u32 %%a, %%v;\n"
        "  cp.async.ca.shared.global [%%v], [%%a], 4;\n  ret;\n}\n"
        ".visible .entry k(.param .u64 p)\n{\n  .reg .pred %%p1;\n"
        "  .reg .b32 %%r<5>;\n  .reg .b64 %%rd<3>;\n  ld.param.u64 %%rd1, [p];\n"
        "  %s\n  ret;\n}\n", version, body);
}

static void test_verdicts(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(verdicts); i++) {
        char *text = verdict_module("8.0", verdicts[i].body);
        test_assert_fence_verdict(text, verdicts[i].body, verdicts[i].why);
        g_free(text);
    }
    /* %dynamic_smem_size is PTX ISA 4.1: an older module's shared accesses cannot be
     * clamped */
    char *text = verdict_module("4.0", "ld.shared.u32 %r1, [%r2];");
    kptx_module *m = test_parse(text);
    char why[192];
    g_assert_cmpint(kptx_fence_verdict(m, "k", 0, why, sizeof why, NULL), ==, 0);
    g_assert_nonnull(strstr(why, "needs 4.1"));
    kptx_module_free(m);
    g_free(text);
}

/* A device function's shared accesses are clamped where it is (the limit computed as it
 * starts, no parameter more); with KPTX_FENCE_TRAP it takes the control words to report
 * its faults, and a call through a pointer then cannot reach it. */
static void test_device_functions(void)
{
    char *text = verdict_module("8.0", "call.uni helper, (%r2);");
    kptx_module *m = fenced_module(text, 0, 1);
    const kptx_function *h = kptx_find_function(m, "helper");
    g_assert_cmpuint(h->n_params, ==, 1);
    char *t = test_function_text(m, "helper");     /* [%v1+4] and [%v1]: one group */
    g_assert_cmpuint(test_occurrences(t, "min.u32"), ==, 1);
    g_assert_nonnull(strstr(t, "%dynamic_smem_size"));
    g_assert_null(strstr(t, "ld.param.u64"));          /* no window, no control words */
    g_free(t);
    t = test_function_text(m, "remote");                           /* not reached: left alone */
    g_assert_null(strstr(t, "min.u32"));
    g_free(t);
    kptx_module_free(m);
    m = fenced_module(text, KPTX_FENCE_TRAP, 1);
    h = kptx_find_function(m, "helper");
    g_assert_cmpuint(h->n_params, ==, 3);
    t = test_function_text(m, "helper");
    g_assert_cmpuint(test_occurrences(t, "st.volatile.global.u32"), ==, 2);
    g_free(t);
    t = test_function_text(m, "k");
    g_assert_nonnull(strstr(t, "call.uni \thelper, (%r2, __kfence_a0, __kfence_a1);"));
    g_free(t);
    kptx_module_free(m);
    g_free(text);
    text = verdict_module("8.0", "mov.u64 %rd2, helper;\n  {\n  .param .b32 pa;\n"
                                 "  st.param.b32 [pa], %r2;\n"
                                 "  prot: .callprototype _ (.param .b32 _);\n"
                                 "  call.uni %rd2, (pa), prot;\n  }");
    m = test_parse(text);
    char why[192];
    g_assert_cmpint(kptx_fence_verdict(m, "k", 0, why, sizeof why, NULL), ==, 0);
    g_assert_cmpstr(why, ==, "");
    g_assert_cmpint(kptx_fence_verdict(m, "k", KPTX_FENCE_TRAP, why, sizeof why, NULL), ==, 0);
    g_assert_nonnull(strstr(why, "calls helper, which accesses shared memory"));
    kptx_module_free(m);
    g_free(text);
}

/* Odd operands: the pass never fails or writes what does not parse back, and what it
 * writes assembles wherever the original does. */
static const char *const odd_bodies[] = {
    "ld.shared.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1+-2147483648];",
    "st.shared.b128 [%r2+2147483647], %rq1;",
    "ld.shared.u32 %r1, [4294967292];",
    "ld.shared.u32 %r1, [0x7fffffffffffffff];",
    "st.shared.u32 [sarr+-8], %r1;",
    "st.shared.u32 [sarr+4], %r1;",
    "st.shared.u32 [sarr+1], %r1;",
    "ld.shared.u32 %r1, [dyn+8];",
    "ld.shared.u32 %r1, [dyn];",
    "atom.shared.cas.b32 %r1, [sarr+8], %r2, %r3;",
    "atom.shared::cta.exch.b64 %rd1, [%rd2+8], %rd1;",
    "red.shared.add.noftz.f16x2 [%r2], %r1;",
    "ld.shared.u32 %r1, [%r2+0];",
    "@%p1 st.shared.u16 [%r2+6], %h1;",
    "@!%p1 ld.shared.u8 %h1, [%rd2];",
    "ld.u32 %r1, [sarr+4];",
    "st.v4.f32 [dyn+16], {%f1, %f1, %f1, %f1};",
    "ld.shared.u32 %r1, [%r9];",
    "ld.shared.u32 %r1, [p];",
    "st.shared.v2.u64 [sarr], {%rd1, %rd2};",
    "st.shared.v2.u64 [sarr+8], {%rd1, %rd2};",
};

static bool assembles(const char *text, size_t len)
{
    GBytes *cubin = NULL;
    char *log = NULL;
    bool ok = ptxas_run(ptxas_path, text, len, "sm_90", false, false, &cubin, &log);
    if (cubin)
        g_bytes_unref(cubin);
    g_free(log);
    return ok;
}

static void test_odd_operands(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(odd_bodies); i++)
        for (unsigned trap = 0; trap < 2; trap++) {
            char *text = g_strdup_printf(
                ".version 8.3\n.target sm_90\n.address_size 64\n"
                ".extern .shared .align 16 .b8 dyn[];\n"
                ".visible .entry k(.param .u64 p)\n{\n  .reg .pred %%p1;\n  .reg .b16 %%h1;\n"
                "  .reg .b32 %%r<5>;\n  .reg .b64 %%rd<3>;\n  .reg .f32 %%f1;\n"
                "  .reg .b128 %%rq1;\n  .shared .align 8 .b8 sarr[16];\n"
                "  ld.param.u64 %%rd1, [p];\n  cvt.u32.u64 %%r2, %%rd1;\n"
                "  setp.ne.u32 %%p1, %%r2, 0;\n  %s\n  ret;\n}\n",
                odd_bodies[i]);
            kptx_module *m = test_parse(text);
            kptx_error err = {0};
            unsigned n = 0;
            g_assert_cmpint(kptx_fence_module(m, trap ? KPTX_FENCE_TRAP : 0, &n, &err), ==, 0);
            size_t len;
            char *out = test_print(m, &len);
            g_test_message("%s: %u fenced", odd_bodies[i], n);
            test_assert_reprints(out);
            if (ptxas_path && n && assembles(text, strlen(text)))
                ptxas_assert_assembles(ptxas_path, out, len, "sm_90", false);
            else if (ptxas_path)
                g_test_message("  (the original does not assemble either)");
            free(out);
            kptx_module_free(m);
            g_free(text);
        }
}

/* The forms, as written and fenced both ways, assemble for sm_80 and sm_90. */
static void test_assembles(void)
{
    if (!ptxas_path) {
        g_test_skip("no ptxas");
        return;
    }
    char *ptx = forms_ptx();
    for (unsigned k = 0; k < 3; k++) {
        kptx_module *m = k ? fenced_module(ptx, k == 1 ? 0 : KPTX_FENCE_TRAP, N_FORMS)
                           : test_parse(ptx);
        size_t len;
        char *text = test_print(m, &len);
        ptxas_assert_assembles(ptxas_path, text, len, "sm_80", false);
        ptxas_assert_assembles(ptxas_path, text, len, "sm_90", false);
        free(text);
        kptx_module_free(m);
    }
    g_free(ptx);
}

/* ---- run in the emulator ---- */

enum { MAX_WORDS = 64 };

typedef struct fixture {
    kemu_device *dev;
    kemu_range win, other;
    kemu_module *plain, *redirect, *trap;
    kemu_devptr out, ctl;
} fixture;

static kemu_module *load(fixture *f, kptx_module *m, const char *ptx)
{
    return test_emu_load(f->dev, &f->win, m, ptx);
}

static void fixture_open(fixture *f)
{
    kemu_error e = {0};
    f->dev = test_emu_windows(WINDOW, &f->win, &f->other);
    char *ptx = forms_ptx();
    f->plain = load(f, NULL, ptx);
    f->redirect = load(f, fenced_module(ptx, 0, N_FORMS), NULL);
    f->trap = load(f, fenced_module(ptx, KPTX_FENCE_TRAP, N_FORMS), NULL);
    g_free(ptx);
    g_assert_cmpint(kemu_mem_alloc_in(f->dev, &f->win, 4 * (MAX_WORDS + 1), &f->out, &e), ==, 0);
    g_assert_cmpint(kemu_mem_alloc_in(f->dev, &f->other, 8, &f->ctl, &e), ==, 0);
}

/* What a run leaves: out[0] (what a load read), the shared memory's words, the fault. */
typedef struct state {
    uint32_t loaded, shared[MAX_WORDS], fault;
} state;

#define VAL 0xa5b6c7d8u

/* Runs form fm of mod (fenced: with the window and the control words) on one thread with
 * off and dyn bytes of dynamic shared memory; the emulator's status, the state in *s. */
static int run(fixture *f, kemu_module *mod, bool fenced, const form *fm, uint32_t off,
               uint32_t dyn, state *s)
{
    kemu_function *fn;
    kemu_error e = {0};
    g_assert_cmpint(kemu_module_get_function(mod, fm->name, &fn, &e), ==, 0);
    uint32_t words = (STATIC + dyn) / 4;
    uint8_t zero[4 * (MAX_WORDS + 1)] = {0};
    g_assert_cmpint(kemu_memcpy_htod(f->dev, f->out, zero, sizeof zero, &e), ==, 0);
    g_assert_cmpint(kemu_memcpy_htod(f->dev, f->ctl, zero, 8, &e), ==, 0);
    uint8_t params[24 + 8 * KPTX_FENCE_EXTRA_PARAMS];
    uint64_t window[KPTX_FENCE_EXTRA_PARAMS] = {f->win.lo, WINDOW - 1, f->ctl, f->ctl + 4};
    uint32_t val = VAL;
    memcpy(params, &f->out, 8);
    memcpy(params + 8, &off, 4);
    memcpy(params + 12, &val, 4);
    memcpy(params + 16, &words, 4);
    memcpy(params + 24, window, sizeof window);
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .params = params,
                              .params_bytes = fenced ? sizeof params : 20,
                              .dynamic_shared_bytes = dyn};
    int rc = kemu_launch(fn, &cfg, &e);
    uint32_t got[MAX_WORDS + 1];
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, got, f->out, sizeof got, &e), ==, 0);
    s->loaded = got[0];
    memset(s->shared, 0, sizeof s->shared);
    memcpy(s->shared, got + 1, 4 * words);
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, &s->fault, f->ctl + 4, 4, &e), ==, 0);
    return rc;
}

/* The shared offset form fm accesses for off. */
static uint64_t offset_of(const form *fm, uint32_t off)
{
    return fm->fixed >= 0 ? (uint64_t)fm->fixed : (uint32_t)(fm->base + off);
}

/* What the clamp makes of the access (the model of fence_shared.c): min(a & -w, (L - w) & -w),
 * L the block's shared bytes; the state the original would leave had it accessed there. */
static void expect(const form *fm, uint32_t off, uint32_t dyn, state *s)
{
    uint32_t limit = STATIC + dyn;
    uint64_t a = offset_of(fm, off) & ~(uint64_t)(fm->width - 1);
    uint64_t hi = (limit - fm->width) & ~(uint64_t)(fm->width - 1);  /* aligned too */
    uint64_t at = a < hi ? a : hi;
    memset(s, 0, sizeof *s);
    for (unsigned i = 0; i < limit / 4; i++)
        s->shared[i] = 0x1000 + i;
    uint8_t *bytes = (uint8_t *)s->shared;
    uint32_t old;
    memcpy(&old, bytes + at, 4);
    if (fm->op == LOAD || fm->op == ADD)
        s->loaded = old;
    if (fm->op == ADD || fm->op == RED) {
        uint32_t sum = old + VAL;
        memcpy(bytes + at, &sum, 4);
    } else if (fm->op == STORE && fm->width == 8 && strcmp(fm->name, "st_u64") == 0) {
        const uint64_t v = VAL;
        memcpy(bytes + at, &v, 8);
    } else if (fm->op == STORE) {
        for (unsigned k = 0; k < fm->width; k++)
            bytes[at + k] = (uint8_t)(VAL >> (8 * (k % 4)));
    }
    /* the kernel dumps whole words below the limit only */
    memset(bytes + limit / 4 * 4, 0, sizeof s->shared - limit / 4 * 4);
}

static void assert_state(const state *got, const state *want)
{
    g_assert_cmphex(got->loaded, ==, want->loaded);
    g_assert_cmpmem(got->shared, sizeof got->shared, want->shared, sizeof want->shared);
    g_assert_cmpuint(got->fault, ==, want->fault);
}

static void check(fixture *f, const form *fm, uint32_t off, uint32_t dyn)
{
    state plain, s, want;
    uint64_t a = offset_of(fm, off);
    bool aligned = a % fm->width == 0, inside = a + fm->width <= STATIC + dyn;
    g_test_message("%s at %#llx (+%u dynamic bytes): %s, %s", fm->name, (unsigned long long)a,
                   dyn, aligned ? "aligned" : "misaligned", inside ? "inside" : "outside");
    int rc = run(f, f->plain, false, fm, off, dyn, &plain);
    /* unfenced: the emulator faults as the GPU does, alignment first */
    g_assert_cmpint(rc, ==, !aligned ? KEMU_EMISALIGNED : !inside ? KEMU_EADDRESS : 0);
    /* fenced: inside and aligned, exactly what the original does; else it completes, the
     * access landing in the block's own shared memory, aligned below the limit */
    g_assert_cmpint(run(f, f->redirect, true, fm, off, dyn, &s), ==, 0);
    expect(fm, off, dyn, &want);
    assert_state(&s, &want);
    if (aligned && inside)
        assert_state(&plain, &want);    /* the model is the original's where it runs */
    /* trap: such an access ends the thread with its fault code, before it */
    g_assert_cmpint(run(f, f->trap, true, fm, off, dyn, &s), ==, 0);
    if (aligned && inside) {
        assert_state(&s, &want);
        return;
    }
    g_assert_cmpuint(s.fault, ==, aligned ? KPTX_FAULT_ADDRESS : KPTX_FAULT_MISALIGNED);
    g_assert_cmphex(s.loaded, ==, 0);   /* it never wrote its results */
}

static void test_runs(void)
{
    fixture f;
    fixture_open(&f);
    const uint32_t dyns[] = {0, 48, 50};    /* 50: a limit no wide access divides */
    for (unsigned i = 0; i < N_FORMS; i++)
        for (unsigned d = 0; d < G_N_ELEMENTS(dyns); d++) {
            const form *fm = &forms[i];
            uint32_t limit = STATIC + dyns[d], w = fm->width;
            const uint32_t offs[] = {0, w / 2, 60, 64 - w, 64, limit - w, limit - w + w / 2,
                                     limit, limit + 4, 1000, 0x7ffffff0u, 0xfffffffcu, 1};
            for (unsigned k = 0; k < G_N_ELEMENTS(offs); k++) {
                uint32_t off = offs[k] - fm->base;
                if (fm->fixed >= 0 && k)
                    break;      /* the offset does not matter */
                if (fm->base && offs[k] < fm->base)
                    continue;
                check(&f, fm, off, dyns[d]);
            }
        }
    kemu_device_destroy(f.dev);
}

/* A group run in the emulator: from r = arr + off, a load, a store, a vector load and a
 * store (the widest 8 bytes, 20 bytes from r). */
static const form group_form = {"grp", 8, LOAD, -1, 0,
                                "ld.shared.u32 %r7, [%r5];\n st.shared.u32 [%r5+4], %r2;\n"
                                " ld.shared.v2.u32 {%r6, %r11}, [%r5+8];\n add.u32 %r7, %r7, %r6;\n"
                                " st.shared.u32 [%r5+16], %r7;"};
enum { GROUP_SPAN = 20 };

/* What the group leaves when r' = at. */
static void expect_group(uint32_t at, uint32_t limit, state *s)
{
    memset(s, 0, sizeof *s);
    for (unsigned i = 0; i < limit / 4; i++)
        s->shared[i] = 0x1000 + i;
    s->loaded = s->shared[at / 4] + s->shared[at / 4 + 2];
    s->shared[at / 4 + 1] = VAL;
    s->shared[at / 4 + 4] = s->loaded;
}

/* In range the fenced group computes exactly what the original does; with its last access
 * (or any) past the limit, or misaligned, the original faults and the fenced one completes,
 * every access at r' = min((r & -8), (limit - 20) & -8), inside the block's memory. */
static void test_group_runs(void)
{
    fixture f;
    kemu_error e = {0};
    f.dev = test_emu_windows(WINDOW, &f.win, &f.other);
    GString *g = g_string_new(HEAD ".extern .shared .align 16 .b8 dyn[];\n");
    append_entry(g, group_form.name, group_form.body);
    kptx_module *m = fenced_module(g->str, 0, 1);
    char *t = test_function_text(m, "grp");
    g_assert_cmpuint(test_occurrences(t, "min.u32 \t%__kfence_sg"), ==, 1);
    g_free(t);
    f.plain = load(&f, NULL, g->str);
    f.redirect = load(&f, m, NULL);
    g_string_free(g, TRUE);
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.win, 4 * (MAX_WORDS + 1), &f.out, &e), ==, 0);
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.other, 8, &f.ctl, &e), ==, 0);
    const uint32_t dyns[] = {0, 48, 50};    /* 50: a limit no wide access divides */
    for (unsigned d = 0; d < G_N_ELEMENTS(dyns); d++) {
        uint32_t limit = STATIC + dyns[d], bound = (limit - GROUP_SPAN) & ~7u;
        const uint32_t offs[] = {0, 8, bound, bound + 8, limit - 16, limit - 8, limit, 4,
                                 1000, 0xfffffff8u};
        for (unsigned k = 0; k < G_N_ELEMENTS(offs); k++) {
            uint32_t r = offs[k];
            bool aligned = r % 8 == 0, inside = (uint64_t)r + GROUP_SPAN <= limit;
            g_test_message("group at %#x (+%u dynamic bytes)", r, dyns[d]);
            state plain, s, want;
            int rc = run(&f, f.plain, false, &group_form, r, dyns[d], &plain);
            g_assert_true((rc == 0) == (aligned && inside));   /* else it faults */
            g_assert_cmpint(run(&f, f.redirect, true, &group_form, r, dyns[d], &s), ==, 0);
            uint32_t at = (r & ~7u) < bound ? r & ~7u : bound;
            expect_group(at, limit, &want);
            assert_state(&s, &want);
            if (aligned && inside)
                assert_state(&s, &plain);       /* exactly the original's */
        }
    }
    kemu_device_destroy(f.dev);
}

/* A device function's shared accesses are clamped too, and a sliced variant's own shared
 * array (the slicer runs after the fence) comes before the dynamic memory, which the limit
 * follows. */
static const char helper_ptx[] =
    HEAD
    ".func poke(.param .u32 at, .param .u32 v)\n{\n  .reg .b32 %r<3>;\n"
    "  ld.param.u32 %r1, [at];\n  ld.param.u32 %r2, [v];\n  st.shared.u32 [%r1], %r2;\n"
    "  ret;\n}\n"
    ".visible .entry k(.param .u64 out, .param .u32 off)\n{\n"
    "  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n  .shared .align 4 .u32 arr[8];\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [off];\n  mov.u32 %r2, %ctaid.x;\n"
    "  st.shared.u32 [arr], %r2;\n  st.shared.u32 [arr+28], %r2;\n"
    "  mov.u32 %r3, arr;\n  add.u32 %r3, %r3, %r1;\n  mov.u32 %r4, 77;\n"
    "  {\n  .param .b32 pa;\n  .param .b32 pv;\n  st.param.b32 [pa], %r3;\n"
    "  st.param.b32 [pv], %r4;\n  call.uni poke, (pa, pv);\n  }\n"
    "  ld.shared.u32 %r5, [arr];\n  ld.shared.u32 %r6, [arr+28];\n"
    "  mul.wide.u32 %rd2, %r2, 8;\n  add.s64 %rd3, %rd1, %rd2;\n"
    "  st.global.v2.u32 [%rd3], {%r5, %r6};\n  ret;\n}\n";

/* Runs entry of mod on two blocks (variant 0: unfenced, 1: fenced, 2: fenced and sliced)
 * with the poke at arr + off; the status, arr[0] and arr[7] of each block in got. */
static int run_poke(fixture *f, kemu_module *mod, unsigned variant, uint32_t off,
                    uint32_t got[4])
{
    kemu_function *fn;
    kemu_error e = {0};
    g_assert_cmpint(kemu_module_get_function(mod, variant == 2 ? "k" KPTX_SLICE_SUFFIX : "k",
                                             &fn, &e), ==, 0);
    uint8_t params[64] = {0};
    uint64_t window[KPTX_FENCE_EXTRA_PARAMS] = {f->win.lo, WINDOW - 1, f->ctl, f->ctl + 4};
    uint32_t slice[KPTX_SLICE_EXTRA_PARAMS] = {0, 2, 1, 1};
    memcpy(params, &f->out, 8);
    memcpy(params + 8, &off, 4);
    memcpy(params + 16, window, sizeof window);
    memcpy(params + 48, slice, sizeof slice);
    kemu_launch_config cfg = {.grid = {2, 1, 1}, .block = {1, 1, 1}, .params = params,
                              .params_bytes = variant == 0 ? 12 : variant == 1 ? 48 : 64};
    memset(got, 0, 16);
    g_assert_cmpint(kemu_memcpy_htod(f->dev, f->out, got, 16, &e), ==, 0);
    int rc = kemu_launch(fn, &cfg, &e);
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, got, f->out, 16, &e), ==, 0);
    return rc;
}

static void test_device_function_runs(void)
{
    fixture f;
    kemu_error e = {0};
    f.dev = test_emu_windows(WINDOW, &f.win, &f.other);
    kemu_module *mods[3];
    mods[0] = load(&f, NULL, helper_ptx);
    mods[1] = load(&f, fenced_module(helper_ptx, 0, 1), NULL);
    kptx_module *m = fenced_module(helper_ptx, 0, 1);
    unsigned sliced = 0;
    g_assert_cmpint(kptx_slice_module(m, &sliced, NULL), ==, 0);
    g_assert_cmpuint(sliced, ==, 1);
    mods[2] = load(&f, m, NULL);
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.win, 16, &f.out, &e), ==, 0);
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.other, 8, &f.ctl, &e), ==, 0);
    for (uint32_t off = 0; off <= 64; off += 4)
        for (unsigned v = 0; v < 3; v++) {
            uint32_t got[4];
            int rc = run_poke(&f, mods[v], v, off, got);
            bool inside = off < 32;
            g_test_message("poke at arr+%u, %s: rc %d, %u %u %u %u", off,
                           v == 0 ? "plain" : v == 1 ? "fenced" : "fenced, sliced", rc,
                           got[0], got[1], got[2], got[3]);
            g_assert_cmpint(rc, ==, v == 0 && !inside ? KEMU_EADDRESS : 0);
            if (v == 0 && !inside)
                continue;
            /* arr[0] and arr[7] hold the block's id but where the poke lands: at arr + off
             * inside; past it, at the block's last word: arr[7] where arr is all its
             * shared memory (fenced), somewhere in the slicer's array after it (sliced) */
            bool at7 = off == 28 || (!inside && v == 1);
            g_assert_cmpuint(got[0], ==, off == 0 ? 77 : 0);
            g_assert_cmpuint(got[2], ==, off == 0 ? 77 : 1);
            if (v < 2 || inside) {
                g_assert_cmpuint(got[1], ==, at7 ? 77 : 0);
                g_assert_cmpuint(got[3], ==, at7 ? 77 : 1);
            }
        }
    kemu_device_destroy(f.dev);
}

/* cp.async's global source is masked like a load: given another tenant's address, the
 * fenced copy reads the tenant's own window at the same offset (unfenced: the secret). */
static const char steal_ptx[] =
    HEAD
    ".visible .entry steal(.param .u64 out, .param .u64 src)\n{\n"
    "  .reg .b32 %r<3>;\n  .reg .b64 %rd<3>;\n  .shared .align 4 .u32 w;\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u64 %rd2, [src];\n  mov.u32 %r1, w;\n"
    "  cp.async.ca.shared.global [%r1], [%rd2], 4;\n  cp.async.wait_all;\n"
    "  ld.shared.u32 %r2, [w];\n  st.global.u32 [%rd1], %r2;\n  ret;\n}\n";

static uint32_t run_steal(fixture *f, kemu_module *mod, bool fenced, kemu_devptr src)
{
    kemu_function *fn;
    kemu_error e = {0};
    g_assert_cmpint(kemu_module_get_function(mod, "steal", &fn, &e), ==, 0);
    uint64_t params[2 + KPTX_FENCE_EXTRA_PARAMS] = {f->out, src, f->win.lo, WINDOW - 1,
                                                    f->ctl, f->ctl + 4};
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .params = params,
                              .params_bytes = fenced ? sizeof params : 16};
    g_assert_cmpint(kemu_launch(fn, &cfg, &e), ==, 0);
    uint32_t got;
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, &got, f->out, 4, &e), ==, 0);
    return got;
}

static void test_copy_source_masked(void)
{
    fixture f;
    kemu_error e = {0};
    kemu_devptr secret, mine;
    const uint32_t secret_word = 0x5ec2e7, my_word = 0x1234;
    f.dev = test_emu_windows(WINDOW, &f.win, &f.other);
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.other, 4, &secret, &e), ==, 0);
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.win, 4, &mine, &e), ==, 0);
    g_assert_cmpuint(secret - f.other.lo, ==, mine - f.win.lo);    /* the same offset */
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.win, 4, &f.out, &e), ==, 0);
    g_assert_cmpint(kemu_mem_alloc_in(f.dev, &f.other, 8, &f.ctl, &e), ==, 0);
    g_assert_cmpint(kemu_memcpy_htod(f.dev, secret, &secret_word, 4, &e), ==, 0);
    g_assert_cmpint(kemu_memcpy_htod(f.dev, mine, &my_word, 4, &e), ==, 0);
    kemu_module *plain = load(&f, NULL, steal_ptx);
    kemu_module *fenced = load(&f, fenced_module(steal_ptx, 0, 1), NULL);
    g_assert_cmphex(run_steal(&f, plain, false, secret), ==, secret_word);    /* the attack */
    g_assert_cmphex(run_steal(&f, fenced, true, secret), ==, my_word);
    g_assert_cmphex(run_steal(&f, fenced, true, mine), ==, my_word);          /* unchanged */
    kemu_device_destroy(f.dev);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ptxas_path = ptxas_arg(argc, argv);
    g_test_add_func("/ptx/fence/shared/shape", test_shape);
    g_test_add_func("/ptx/fence/shared/ops-shape", test_ops_shape);
    g_test_add_func("/ptx/fence/shared/groups-shape", test_groups_shape);
    g_test_add_func("/ptx/fence/shared/verdicts", test_verdicts);
    g_test_add_func("/ptx/fence/shared/device-functions", test_device_functions);
    g_test_add_func("/ptx/fence/shared/odd-operands", test_odd_operands);
    g_test_add_func("/ptx/fence/shared/assembles", test_assembles);
    g_test_add_func("/ptx/fence/shared/runs", test_runs);
    g_test_add_func("/ptx/fence/shared/group-runs", test_group_runs);
    g_test_add_func("/ptx/fence/shared/device-function-runs", test_device_function_runs);
    g_test_add_func("/ptx/fence/shared/copy-source-masked", test_copy_source_masked);
    return g_test_run();
}
