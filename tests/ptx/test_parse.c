/* Lexer, parser and printer on small inputs with known structure; kernel information;
 * bad input. */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"
#include "ptx_test_util.h"

#define HEADER ".version 8.0\n.target sm_75\n.address_size 64\n"

static int parse_error(const char *text, size_t len, kptx_error *err)
{
    kptx_module *m = (kptx_module *)1;
    memset(err, 0, sizeof *err);
    int rc = kptx_parse(text, len, &m, err);
    if (rc) {
        g_assert_null(m);
        g_assert_cmpint(err->code, ==, rc);
        g_assert_cmpuint(strlen(err->message), >, 0);
    } else {
        g_assert_nonnull(m);
        kptx_module_free(m);
    }
    return rc;
}

/* The instructions of the only function (or the function named name). */
static const kptx_function *fn_of(const kptx_module *m, const char *name)
{
    const kptx_function *fn = kptx_find_function(m, name);
    g_assert_nonnull(fn);
    return fn;
}

static const kptx_instr *nth_instr(const kptx_function *fn, unsigned n)
{
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_INSTR && n-- == 0)
            return &fn->stmts[i].u.instr;
    g_error("no instruction %u", n);
    return NULL;
}

static const char body_ptx[] = HEADER
    ".visible .entry k(.param .u64 k_p)\n"
    "{\n"
    "  .reg .pred %p<3>;\n"
    "  .reg .b32 %r<10>;\n"
    "  .reg .b64 %rd<4>;\n"
    "  ld.global.nc.v2.u32 {%r1, %r2}, [%rd1+-8];\n"          /* 0 */
    "  @!%p1 bra.uni $L__BB0_2;\n"                             /* 1 */
    "  setp.lt.s32 %p1|%p2, %r1, 0x10;\n"                      /* 2 */
    "  mov.u32 %r3, %ctaid.y;\n"                               /* 3 */
    "  shfl.sync.down.b32 %r4|%p2, %r3, 1, 31, -1;\n"          /* 4 */
    "  cp.async.ca.shared.global.L2::128B [%r5], [%rd2], 16;\n" /* 5 */
    "  mov.b64 {%r6, _}, %rd3;\n"                              /* 6 */
    "  and.pred %p1, %p2, !%p1;\n"                             /* 7 */
    "$L__BB0_2:\n"
    "  ret;\n"                                                 /* 8 */
    "}\n";

static void test_instructions(void)
{
    kptx_module *m = test_parse(body_ptx);
    const kptx_function *fn = fn_of(m, "k");
    const kptx_instr *in = nth_instr(fn, 0);
    g_assert_cmpstr(in->opcode, ==, "ld");
    g_assert_cmpuint(in->n_mods, ==, 4);
    g_assert_cmpstr(in->mods[0], ==, ".global");
    g_assert_cmpstr(in->mods[1], ==, ".nc");
    g_assert_cmpstr(in->mods[2], ==, ".v2");
    g_assert_cmpstr(in->mods[3], ==, ".u32");
    g_assert_cmpuint(in->n_ops, ==, 2);
    g_assert_cmpint(in->ops[0].kind, ==, KPTX_OPND_VECTOR);
    g_assert_cmpuint(in->ops[0].n_elems, ==, 2);
    g_assert_cmpstr(in->ops[0].elems[1].name, ==, "%r2");
    g_assert_cmpint(in->ops[1].kind, ==, KPTX_OPND_ADDRESS);
    g_assert_cmpint(in->ops[1].value, ==, -8);
    g_assert_cmpint(in->ops[1].elems[0].kind, ==, KPTX_OPND_REG);
    g_assert_cmpstr(in->ops[1].elems[0].name, ==, "%rd1");

    in = nth_instr(fn, 1);
    g_assert_cmpstr(in->guard, ==, "%p1");
    g_assert_true(in->guard_negated);
    g_assert_cmpstr(in->opcode, ==, "bra");
    g_assert_cmpint(in->ops[0].kind, ==, KPTX_OPND_SYMBOL);
    g_assert_cmpstr(in->ops[0].name, ==, "$L__BB0_2");

    in = nth_instr(fn, 2);
    g_assert_cmpint(in->ops[0].kind, ==, KPTX_OPND_PAIR);
    g_assert_cmpstr(in->ops[0].elems[1].name, ==, "%p2");
    g_assert_cmpint(in->ops[2].kind, ==, KPTX_OPND_INT);
    g_assert_cmpint(in->ops[2].value, ==, 16);

    in = nth_instr(fn, 3);
    g_assert_cmpint(in->ops[1].kind, ==, KPTX_OPND_SREG);
    g_assert_cmpstr(in->ops[1].name, ==, "%ctaid.y");

    in = nth_instr(fn, 4);
    g_assert_cmpint(in->ops[4].value, ==, -1);

    in = nth_instr(fn, 5);
    g_assert_cmpstr(in->opcode, ==, "cp");
    g_assert_cmpstr(in->mods[4], ==, ".L2::128B");

    in = nth_instr(fn, 6);
    g_assert_cmpint(in->ops[0].elems[1].kind, ==, KPTX_OPND_SINK);

    in = nth_instr(fn, 7);
    g_assert_true(in->ops[2].negated);
    g_assert_false(in->ops[1].negated);

    g_assert_cmpint(fn->stmts[fn->n_stmts - 2].kind, ==, KPTX_STMT_LABEL);
    g_assert_cmpstr(fn->stmts[fn->n_stmts - 2].u.label, ==, "$L__BB0_2");
    kptx_module_free(m);
}

static void test_literals(void)
{
    kptx_module *m = test_parse(HEADER ".entry k()\n{\n .reg .b64 %rd<2>;\n .reg .f32 %f<2>;\n"
                           " .reg .f64 %fd<2>;\n"
                           " mov.b64 %rd1, 0x7fffffffffffffff;\n"
                           " mov.b64 %rd1, 0xFFFFFFFFFFFFFFFF;\n"
                           " mov.b64 %rd1, 017;\n"
                           " mov.b64 %rd1, 0b1011;\n"
                           " mov.b64 %rd1, 42U;\n"
                           " mov.b64 %rd1, -9223372036854775807;\n"
                           " mov.f32 %f1, 0f3F800000;\n"
                           " mov.f64 %fd1, 0d4000000000000000;\n"
                           " mov.f64 %fd1, 1.5;\n"
                           " mov.f64 %fd1, -2.5e3;\n"
                           " ret;\n}\n");
    const kptx_function *fn = fn_of(m, "k");
    const int64_t ints[] = {INT64_MAX, -1, 15, 11, 42, -INT64_MAX};
    for (unsigned i = 0; i < G_N_ELEMENTS(ints); i++) {
        const kptx_operand *o = &nth_instr(fn, i)->ops[1];
        g_assert_cmpint(o->kind, ==, KPTX_OPND_INT);
        g_assert_cmpint(o->value, ==, ints[i]);
    }
    const kptx_operand *f = &nth_instr(fn, 6)->ops[1];
    g_assert_cmpint(f->kind, ==, KPTX_OPND_FLOAT);
    g_assert_cmpuint(f->width, ==, 32);
    g_assert_cmphex(f->bits, ==, 0x3F800000);
    f = &nth_instr(fn, 7)->ops[1];
    g_assert_cmpuint(f->width, ==, 64);
    g_assert_cmphex(f->bits, ==, 0x4000000000000000ull);
    const double want[] = {1.5, -2500.0};
    for (unsigned i = 0; i < 2; i++) {
        f = &nth_instr(fn, 8 + i)->ops[1];
        double d;
        memcpy(&d, &f->bits, sizeof d);
        g_assert_cmpuint(f->width, ==, 64);
        g_assert_cmpfloat(d, ==, want[i]);
    }
    kptx_module_free(m);
}

static void test_declarations(void)
{
    kptx_module *m = test_parse(HEADER
        ".global .attribute(.managed) .align 8 .u64 a, b;\n"
        ".extern .shared .align 16 .b8 dyn[];\n"
        ".const .align 4 .u32 tab[2][3] = {{1, 2, 3}, {4, 5, -6}};\n"
        ".global .align 8 .u64 ptrs[2] = {generic(tab)+4, tab};\n"
        ".global .v4 .f32 v = {0f3F800000, 2.0, 0, 1};\n"
        ".global .attribute(.unified(0x1, 2)) .u32 u;\n"
        ".visible .entry k(.param .u64 .ptr .global .align 16 k_p, .param .align 8 .b8 k_s[12])\n"
        "{\n .reg .b32 %r<5>, extra;\n ret;\n}\n");
    g_assert_cmpuint(m->n_items, ==, 3 + 8);
    g_assert_cmpstr(m->items[9].u.var.attribute, ==, "(.unified(0x1, 2))");
    const kptx_var *a = &m->items[3].u.var, *b = &m->items[4].u.var;
    g_assert_cmpstr(a->name, ==, "a");
    g_assert_cmpstr(b->name, ==, "b");
    g_assert_cmpstr(b->attribute, ==, "(.managed)");
    g_assert_cmpuint(b->align, ==, 8);
    g_assert_cmpint(b->space, ==, KPTX_SPACE_GLOBAL);
    const kptx_var *dyn = &m->items[5].u.var;
    g_assert_cmpstr(dyn->linkage, ==, ".extern");
    g_assert_cmpuint(dyn->n_dims, ==, 1);
    g_assert_cmpuint(dyn->dims[0], ==, 0);
    const kptx_var *tab = &m->items[6].u.var;
    g_assert_cmpuint(tab->n_dims, ==, 2);
    g_assert_cmpuint(tab->dims[1], ==, 3);
    g_assert_cmpuint(tab->n_init, ==, 6);
    g_assert_cmpint(tab->init[5].value, ==, -6);
    const kptx_var *ptrs = &m->items[7].u.var;
    g_assert_true(ptrs->init[0].generic);
    g_assert_cmpint(ptrs->init[0].value, ==, 4);
    g_assert_cmpstr(ptrs->init[0].name, ==, "tab");
    g_assert_false(ptrs->init[1].generic);
    const kptx_var *v = &m->items[8].u.var;
    g_assert_cmpuint(v->vec, ==, 4);
    g_assert_cmpuint(v->n_init, ==, 4);
    const kptx_function *fn = fn_of(m, "k");
    g_assert_true(fn->params[0].is_ptr);
    g_assert_cmpint(fn->params[0].ptr_space, ==, KPTX_SPACE_GLOBAL);
    g_assert_cmpuint(fn->params[0].ptr_align, ==, 16);
    g_assert_cmpuint(fn->params[0].align, ==, 0);
    g_assert_cmpuint(fn->params[1].align, ==, 8);
    g_assert_cmpuint(fn->params[1].dims[0], ==, 12);
    g_assert_cmpint(fn->stmts[0].kind, ==, KPTX_STMT_VAR);
    g_assert_cmpuint(fn->stmts[0].u.var.reg_range, ==, 5);
    g_assert_cmpstr(fn->stmts[1].u.var.name, ==, "extra");

    /* printing and parsing again keeps every field */
    char *text = test_print(m, NULL);
    kptx_module *m2 = test_parse(text);
    char *text2 = test_print(m2, NULL);
    g_assert_cmpstr(text, ==, text2);
    g_assert_cmpuint(m2->items[6].u.var.n_init, ==, 6);
    g_assert_true(m2->items[7].u.var.init[0].generic);
    free(text);
    free(text2);
    kptx_module_free(m2);
    kptx_module_free(m);
}

static void test_directives(void)
{
    kptx_module *m = test_parse(".version 8.3\n.target sm_90a, debug\n.address_size 64\n"
                           ".file 1 \"/src/a.cu\", 1700000000, 1234\n"
                           ".entry k()\n.maxntid 128, 2\n.reqntid 64\n{\n"
                           " .loc 1 10 5, function_name $L__info_string0, inlined_at 1 6 30\n"
                           " .pragma \"nounroll\";\n"
                           " ret;\n}\n"
                           ".section .debug_str\n{\n$L__info_string0:\n.b8 95,90,0\n}\n");
    g_assert_cmpuint(m->version_major, ==, 8);
    g_assert_cmpuint(m->version_minor, ==, 3);
    g_assert_cmpstr(m->target, ==, "sm_90a");
    g_assert_cmpuint(m->address_size, ==, 64);
    g_assert_cmpstr(m->items[1].u.dir.text, ==, "sm_90a, debug");
    g_assert_cmpstr(m->items[3].u.dir.text, ==, "1 \"/src/a.cu\", 1700000000, 1234");
    const kptx_function *fn = fn_of(m, "k");
    g_assert_cmpuint(fn->n_perf, ==, 2);
    g_assert_cmpstr(fn->perf[0].text, ==, "128, 2");
    g_assert_cmpstr(fn->stmts[0].u.dir.name, ==, ".loc");
    g_assert_cmpstr(fn->stmts[0].u.dir.text, ==,
                    "1 10 5, function_name $L__info_string0, inlined_at 1 6 30");
    g_assert_cmpstr(fn->stmts[1].u.dir.text, ==, "\"nounroll\"");
    const kptx_directive *sec = &m->items[m->n_items - 1].u.dir;
    g_assert_cmpstr(sec->name, ==, ".section");
    g_assert_cmpstr(sec->text, ==, ".debug_str\n{\n$L__info_string0:\n.b8 95, 90, 0\n}");
    kptx_kernel_info info;
    g_assert_cmpint(kptx_kernel_info_get(m, "k", &info, NULL), ==, 0);
    g_assert_cmpuint(info.maxntid[0], ==, 128);
    g_assert_cmpuint(info.maxntid[1], ==, 2);
    g_assert_cmpuint(info.maxntid[2], ==, 1);
    g_assert_cmpuint(info.reqntid[0], ==, 64);
    kptx_kernel_info_clear(&info);
    char *text = test_print(m, NULL);
    kptx_module *m2 = test_parse(text);
    char *text2 = test_print(m2, NULL);
    g_assert_cmpstr(text, ==, text2);
    free(text);
    free(text2);
    kptx_module_free(m2);
    kptx_module_free(m);
}

/* Registers may be named without '%'; a name is a register where one is declared. */
static void test_plain_registers(void)
{
    kptx_module *m = test_parse(HEADER ".global .u32 counter;\n"
                           ".func f(.reg .b32 arg)\n{\n .reg .b32 t, u<3>;\n"
                           " add.s32 t, arg, u2;\n"
                           " { .reg .b32 inner;\n mov.u32 inner, counter; }\n"
                           " mov.u32 t, u3;\n ret;\n}\n");
    const kptx_function *fn = fn_of(m, "f");
    const kptx_instr *add = nth_instr(fn, 0);
    for (int i = 0; i < 3; i++)
        g_assert_cmpint(add->ops[i].kind, ==, KPTX_OPND_REG);
    const kptx_instr *mov = nth_instr(fn, 1);
    g_assert_cmpint(mov->ops[0].kind, ==, KPTX_OPND_REG);
    g_assert_cmpint(mov->ops[1].kind, ==, KPTX_OPND_SYMBOL);
    /* u3 is outside u<3> (u0..u2) */
    g_assert_cmpint(nth_instr(fn, 2)->ops[1].kind, ==, KPTX_OPND_SYMBOL);
    unsigned begins = 0, ends = 0;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        begins += fn->stmts[i].kind == KPTX_STMT_BLOCK_BEGIN;
        ends += fn->stmts[i].kind == KPTX_STMT_BLOCK_END;
    }
    g_assert_cmpuint(begins, ==, 1);
    g_assert_cmpuint(ends, ==, 1);
    kptx_module_free(m);
}

static void test_print_reparse(void)
{
    kptx_module *m = test_parse(body_ptx);
    char *text = test_print(m, NULL);
    kptx_module *m2 = test_parse(text);
    char *text2 = test_print(m2, NULL);
    g_assert_cmpstr(text, ==, text2);
    g_assert_nonnull(strstr(text, "[%rd1+-8]"));
    g_assert_nonnull(strstr(text, "@!%p1 bra.uni"));
    g_assert_nonnull(strstr(text, "%p1|%p2"));
    free(text);
    free(text2);
    kptx_module_free(m2);
    kptx_module_free(m);
}

/* Offsets by the PTX ABI, worked out by hand: each parameter at the next multiple of its
 * alignment (natural for scalars and vectors, .align for byte arrays). */
static void test_param_layout(void)
{
    kptx_module *m = test_parse(HEADER ".entry k(.param .u8 a, .param .u64 b,"
                           " .param .align 16 .b8 c[20], .param .v2 .f32 d, .param .u16 e,"
                           " .param .b8 f[3], .param .f64 g)\n{\n ret;\n}\n");
    kptx_kernel_info info;
    kptx_error err = {0};
    g_assert_cmpint(kptx_kernel_info_get(m, "k", &info, &err), ==, 0);
    const uint32_t off[] = {0, 8, 16, 40, 48, 50, 56};
    const uint32_t size[] = {1, 8, 20, 8, 2, 3, 8};
    const uint32_t align[] = {1, 8, 16, 8, 2, 1, 8};
    g_assert_cmpuint(info.n_params, ==, 7);
    for (unsigned i = 0; i < 7; i++) {
        g_assert_cmpuint(info.params[i].offset, ==, off[i]);
        g_assert_cmpuint(info.params[i].size, ==, size[i]);
        g_assert_cmpuint(info.params[i].align, ==, align[i]);
        g_assert_cmpuint(fn_of(m, "k")->params[i].offset, ==, off[i]);
    }
    g_assert_cmpuint(info.param_bytes, ==, 64);
    g_assert_cmpuint(fn_of(m, "k")->param_bytes, ==, 64);
    g_assert_true(info.sliceable);
    kptx_kernel_info_clear(&info);
    g_assert_cmpint(kptx_kernel_info_get(m, "nope", &info, &err), ==, KPTX_ENOTFOUND);
    g_assert_cmpint(kptx_kernel_info_get(NULL, "k", &info, &err), ==, KPTX_EINVAL);
    kptx_module_free(m);
}

/* Special registers, also those read in called functions (and only those called). */
static void test_sregs(void)
{
    kptx_module *m = test_parse(HEADER
        ".func (.param .b32 r) lane()\n{\n .reg .b32 %r<2>;\n mov.u32 %r1, %laneid;\n"
        " st.param.b32 [r], %r1;\n ret;\n}\n"
        ".func unused()\n{\n .reg .b32 %r<2>;\n mov.u32 %r1, %smid;\n ret;\n}\n"
        ".entry k()\n{\n .reg .b32 %r<4>;\n .reg .b64 %rd<2>;\n mov.u32 %r1, %tid.x;\n mov.u32 %r2, %nctaid.y;\n"
        " { .param .b32 r0;\n call.uni (r0), lane, ();\n ld.param.b32 %r3, [r0]; }\n"
        " mov.u64 %rd1, %clock64;\n ret;\n}\n");
    kptx_kernel_info info;
    g_assert_cmpint(kptx_kernel_info_get(m, "k", &info, NULL), ==, 0);
    g_assert_cmphex(info.sregs, ==,
                    KPTX_SREG_TID | KPTX_SREG_NCTAID | KPTX_SREG_LANEID | KPTX_SREG_CLOCK);
    kptx_kernel_info_clear(&info);
    kptx_module_free(m);
}

static void expect_unsliceable(const char *body, const char *decls, const char *word)
{
    char *text = g_strdup_printf(HEADER "%s\n.visible .entry k(.param .u64 k_p)\n{\n"
                                 " .reg .b32 %%r<8>;\n .reg .b64 %%rd<4>;\n .reg .b16 %%rs<2>;\n"
                                 "%s\n ret;\n}\n", decls, body);
    kptx_module *m = test_parse(text);
    kptx_kernel_info info;
    g_assert_cmpint(kptx_kernel_info_get(m, "k", &info, NULL), ==, 0);
    if (info.sliceable || !strstr(info.why_not, word))
        g_error("'%s': sliceable=%d why='%s', expected '%s'", body, info.sliceable, info.why_not,
                word);
    /* the slicer leaves it alone */
    unsigned n = 1;
    g_assert_cmpint(kptx_slice_module(m, &n, NULL), ==, 0);
    g_assert_cmpuint(n, ==, 0);
    g_assert_null(kptx_find_function(m, "k__kslice"));
    kptx_kernel_info_clear(&info);
    kptx_module_free(m);
    g_free(text);
}

static void test_verdicts(void)
{
    expect_unsliceable(" mov.u64 %rd1, %gridid;", "", "%gridid");
    expect_unsliceable(" mov.u32 %r1, %envreg1;", "", "%envreg1");
    expect_unsliceable(" mov.u32 %r1, %cluster_ctarank;", "", "cluster");
    expect_unsliceable(" mov.u32 %r1, %clusterid.x;", "", "cluster");
    expect_unsliceable(" mov.u32 %r1, %ctaid.w;", "", "%ctaid.w");
    expect_unsliceable(" mov.u32 %r1, %newreg;", "", "%newreg");
    expect_unsliceable(" mov.u64 %rd1, %current_graph_exec;", "", "graph");
    expect_unsliceable(" mov.u32 %r1, %total_smem_size;", "", "shared memory");
    expect_unsliceable(" mov.u16 %rs1, %ctaid.x;", "", "32-bit");
    expect_unsliceable(" mov.v4.u32 {%r1, %r2, %r3, %r4}, %ctaid;", "", "vector");
    expect_unsliceable(" frob.b32 %r1, %r2;", "", "frob");
    expect_unsliceable(" { .param .b32 a;\n call.uni cudaCGSynchronizeGrid, (a); }",
                       ".extern .func cudaCGSynchronizeGrid(.param .b32 x);", "grid-wide");
    expect_unsliceable(" { .param .b64 a;\n call.uni cudaLaunchDeviceV2, (a); }",
                       ".extern .func cudaLaunchDeviceV2(.param .b64 x);", "device-side launch");
    expect_unsliceable(" { .param .b64 a;\n call.uni other_module, (a); }",
                       ".extern .func other_module(.param .b64 x);", "other_module");
    expect_unsliceable(" call.uni missing;", "", "missing");
    expect_unsliceable(" mov.u64 %rd1, f;\n { call %rd1, (); }",
                       ".func f()\n{\n .reg .b32 %r<2>;\n mov.u32 %r1, %nctaid.x;\n ret;\n}\n",
                       "called through a pointer");
}

static void test_cluster_directive(void)
{
    kptx_module *m = test_parse(".version 8.0\n.target sm_90\n.address_size 64\n"
                           ".entry k()\n.reqnctapercluster 2, 1, 1\n{\n ret;\n}\n");
    kptx_kernel_info info;
    g_assert_cmpint(kptx_kernel_info_get(m, "k", &info, NULL), ==, 0);
    g_assert_false(info.sliceable);
    g_assert_nonnull(strstr(info.why_not, "cluster"));
    kptx_kernel_info_clear(&info);
    kptx_module_free(m);
}

/* Bad input: a clean error with a position, never a crash. */
static void test_bad_input(void)
{
    static const struct {
        const char *text;
        int code;
        unsigned line;
    } cases[] = {
        {"garbage", KPTX_ESYNTAX, 1},
        {"", KPTX_ESYNTAX, 0},
        {HEADER ".entry k(\n", KPTX_ESYNTAX, 5},
        {HEADER ".entry k()\n{\n mov.u32 %r1, ;\n}\n", KPTX_ESYNTAX, 6},
        {HEADER ".entry k()\n{\n ret;\n", KPTX_ESYNTAX, 7},
        {HEADER ".entry k()\n{\n /* open\n", KPTX_ESYNTAX, 6},
        {HEADER ".pragma \"open\n;", KPTX_ESYNTAX, 4},
        {HEADER ".global .u32 x = 99999999999999999999;\n", KPTX_ESYNTAX, 4},
        {HEADER ".global .u32 x[1][2][3][4][5];\n", KPTX_ELIMIT, 4},
        {HEADER ".global .u32 x = {{{{{{1}}}}}};\n", KPTX_ELIMIT, 4},
        {HEADER ".entry k()\n{\n .reg .b32 %r<0>;\n}\n", KPTX_ESYNTAX, 6},
        {HEADER ".entry k()\n{\n mov.u32 %r1, 0fXYZ;\n}\n", KPTX_ESYNTAX, 6},
        {HEADER ".weird 1\n", KPTX_ESYNTAX, 4},
        {HEADER ".entry k(.param .u32 a[])\n{\n ret;\n}\n", KPTX_ESYNTAX, 0},
        {".target sm_75\n.entry k()\n{\n ret;\n}\n", KPTX_ESYNTAX, 0},
        {HEADER "\x01", KPTX_ESYNTAX, 4},
        {HEADER "\xc3\xa9", KPTX_ESYNTAX, 4},
        /* an attribute list that never closes, or holds two words in a row: its text would
         * print back as something else (found by the fuzzer) */
        {HEADER ".global .attribute(.mana\n.version 8.0\n.u32 x;\n", KPTX_ESYNTAX, 5},
        {HEADER ".global .attribute(.managed .x) .u32 x;\n", KPTX_ESYNTAX, 4},
        {HEADER ".global .attribute(.managed; .u32 x;\n", KPTX_ESYNTAX, 4},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        kptx_error err;
        int rc = parse_error(cases[i].text, strlen(cases[i].text), &err);
        if (rc != cases[i].code || (cases[i].line && err.line != cases[i].line))
            g_error("case %zu: rc %d line %u (%s), expected %d line %u", i, rc, err.line,
                    err.message, cases[i].code, cases[i].line);
    }
    /* a NUL byte inside the text */
    static const char nul[] = HEADER ".entry k()\n{\n\0 ret;\n}\n";
    kptx_error err;
    g_assert_cmpint(parse_error(nul, sizeof nul - 1, &err), ==, KPTX_ESYNTAX);
    /* ... and inside a string, where printing it back would cut the string short (found by
     * the fuzzer: the printed module did not parse) */
    static const char nul_str[] = HEADER ".pragma \"nounr\\\0oll\";\n";
    g_assert_cmpint(parse_error(nul_str, sizeof nul_str - 1, &err), ==, KPTX_ESYNTAX);
    g_assert_nonnull(strstr(err.message, "NUL"));
    g_assert_cmpint(kptx_parse(NULL, 0, NULL, &err), ==, KPTX_EINVAL);
    kptx_module *m;
    g_assert_cmpint(kptx_parse("x", KPTX_MAX_TEXT + 1, &m, &err), ==, KPTX_ELIMIT);
    g_assert_cmpint(kptx_parse("garbage", 7, &m, NULL), ==, KPTX_ESYNTAX);
}

static void test_huge_and_deep(void)
{
    /* an identifier of 100 KB */
    GString *s = g_string_new(HEADER ".global .u32 ");
    for (int i = 0; i < 100000; i++)
        g_string_append_c(s, 'a');
    g_string_append(s, ";\n");
    kptx_error err;
    g_assert_cmpint(parse_error(s->str, s->len, &err), ==, KPTX_ELIMIT);
    g_string_free(s, TRUE);

    /* blocks nested 100000 deep */
    s = g_string_new(HEADER ".entry k()\n{\n");
    for (int i = 0; i < 100000; i++)
        g_string_append_c(s, '{');
    g_assert_cmpint(parse_error(s->str, s->len, &err), ==, KPTX_ELIMIT);
    g_string_free(s, TRUE);

    /* nested blocks within the limit are fine */
    s = g_string_new(HEADER ".entry k()\n{\n");
    for (int i = 0; i < 100; i++)
        g_string_append(s, "{\n");
    for (int i = 0; i < 100; i++)
        g_string_append(s, "}\n");
    g_string_append(s, "ret;\n}\n");
    kptx_module *m = test_parse(s->str);
    kptx_module_free(m);
    g_string_free(s, TRUE);

    /* a long chain of offsets and a long operand list */
    s = g_string_new(HEADER ".entry k()\n{\n .reg .b32 %r<2>;\n call.uni f, (");
    for (int i = 0; i < 5000; i++)
        g_string_append_printf(s, "%sp%d", i ? ", " : "", i);
    g_string_append(s, ");\n ret;\n}\n");
    m = test_parse(s->str);
    g_assert_cmpuint(nth_instr(fn_of(m, "k"), 0)->ops[1].n_elems, ==, 5000);
    kptx_module_free(m);
    g_string_free(s, TRUE);
}

/* Every prefix of a valid module either parses or fails cleanly; those that end inside
 * the function cannot parse. */
static void test_truncated(void)
{
    size_t len = strlen(body_ptx);
    size_t fn_start = (size_t)(strstr(body_ptx, ".visible") - body_ptx);
    size_t fn_end = (size_t)(strrchr(body_ptx, '}') - body_ptx);
    for (size_t n = 0; n < len; n++) {
        kptx_error err;
        int rc = parse_error(body_ptx, n, &err);
        if (n > fn_start && n <= fn_end)
            g_assert_cmpint(rc, ==, KPTX_ESYNTAX);
        else
            g_assert_true(rc == 0 || rc == KPTX_ESYNTAX);
    }
}

static void test_strerror(void)
{
    const int codes[] = {KPTX_OK, KPTX_EINVAL, KPTX_ESYNTAX, KPTX_ENOMEM, KPTX_EUNSUPPORTED,
                         KPTX_ENOTFOUND, KPTX_ELIMIT, KPTX_ECORRUPT, KPTX_EIO};
    for (size_t i = 0; i < G_N_ELEMENTS(codes); i++) {
        g_assert_cmpstr(kptx_strerror(codes[i]), !=, kptx_strerror(12345));
        for (size_t k = 0; k < i; k++)
            g_assert_cmpstr(kptx_strerror(codes[i]), !=, kptx_strerror(codes[k]));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ptx/parse/instructions", test_instructions);
    g_test_add_func("/ptx/parse/literals", test_literals);
    g_test_add_func("/ptx/parse/declarations", test_declarations);
    g_test_add_func("/ptx/parse/directives", test_directives);
    g_test_add_func("/ptx/parse/plain-registers", test_plain_registers);
    g_test_add_func("/ptx/print/reparse", test_print_reparse);
    g_test_add_func("/ptx/info/param-layout", test_param_layout);
    g_test_add_func("/ptx/info/sregs", test_sregs);
    g_test_add_func("/ptx/info/verdicts", test_verdicts);
    g_test_add_func("/ptx/info/cluster-directive", test_cluster_directive);
    g_test_add_func("/ptx/errors/bad-input", test_bad_input);
    g_test_add_func("/ptx/errors/huge-and-deep", test_huge_and_deep);
    g_test_add_func("/ptx/errors/truncated", test_truncated);
    g_test_add_func("/ptx/errors/strerror", test_strerror);
    return g_test_run();
}
