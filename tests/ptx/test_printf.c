/* The device printf pass (kptx_printf_module) and the format walker it shares with libcuda
 * (kptx_printf_next): argument layouts of formats as nvcc packs them, which calls are
 * rewritten and which are left alone, the reserved names, and, run in the emulator, the
 * records a kernel appends: sizes, format addresses, argument bytes, return values, and a
 * full ring that drops and counts. */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/emu.h"
#include "kernelet/ptx.h"
#include "ptx_test_util.h"
#include "ptxas_util.h"

static const char *ptxas_path;  /* --ptxas PATH: rewritten modules must assemble */

/* ---- layouts ---- */

typedef struct layout_case {
    const char *fmt;
    int rc;
    uint32_t bytes;
    unsigned n_args;
} layout_case;

/* Offsets as nvcc lays the buffer out (checked against `nvcc -ptx` of CUDA 13: int at 0,
 * double at 8, pointers at multiples of 8, char and short promoted to 4-byte ints). */
static const layout_case layouts[] = {
    {"", 0, 0, 0},
    {"plain text\n", 0, 0, 0},
    {"%d", 0, 4, 1},
    {"%d %f", 0, 16, 2},
    {"%f %d", 0, 12, 2},
    {"%s %d", 0, 12, 2},
    {"%c%hhd%hd", 0, 12, 3},
    {"%d %ld", 0, 16, 2},
    {"%ld %d", 0, 12, 2},
    {"%lld %llu %zu %p", 0, 32, 4},
    {"%d %s %d %e", 0, 32, 4},
    {"%-08.3f|%+5i|%#x|% o|%X|%u", 0, 28, 6},
    {"%*.*f", 0, 16, 3},
    {"%*d %.*s", 0, 24, 4},
    {"100%% of %d%%", 0, 4, 1},
    {"%Lf %a %G %E", 0, 32, 4},
    {"%n", KPTX_EUNSUPPORTED, 0, 0},
    {"%ls", KPTX_EUNSUPPORTED, 0, 0},
    {"%Ld", KPTX_EUNSUPPORTED, 0, 0},
    {"%d %", KPTX_EUNSUPPORTED, 0, 0},
    {"%k", KPTX_EUNSUPPORTED, 0, 0},
};

static void test_layouts(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(layouts); i++) {
        const layout_case *c = &layouts[i];
        uint32_t bytes = 99;
        unsigned n = 99;
        int rc = kptx_printf_layout_of(c->fmt, strlen(c->fmt), &bytes, &n);
        if (rc != c->rc || (rc == 0 && (bytes != c->bytes || n != c->n_args)))
            g_error("\"%s\": rc %d bytes %u args %u, want rc %d bytes %u args %u", c->fmt, rc,
                    bytes, n, c->rc, c->bytes, c->n_args);
    }
    GString *many = g_string_new("");
    for (unsigned i = 0; i < KPTX_PRINTF_MAX_ARGS; i++)
        g_string_append(many, "%d");
    uint32_t bytes;
    g_assert_cmpint(kptx_printf_layout_of(many->str, many->len, &bytes, NULL), ==, 0);
    g_assert_cmpuint(bytes, ==, 4 * KPTX_PRINTF_MAX_ARGS);
    g_string_append(many, "%d");
    g_assert_cmpint(kptx_printf_layout_of(many->str, many->len, &bytes, NULL), ==,
                    KPTX_ELIMIT);
    g_string_free(many, TRUE);
}

/* The walker's view of one conversion: offsets of '*' values and of the value. */
static void test_spec_offsets(void)
{
    const char *f = "a%-*.*lld b%5.2s";
    size_t pos = 0;
    uint32_t bytes = 0;
    kptx_printf_spec s;
    g_assert_cmpint(kptx_printf_next(f, strlen(f), &pos, &bytes, &s), ==, 1);
    g_assert_cmpuint(s.start, ==, 1);
    g_assert_cmpuint(s.len, ==, 8);
    g_assert_true(s.star_width && s.star_prec && s.has_prec);
    g_assert_cmpint(s.length, ==, 'q');
    g_assert_cmpuint(s.width_off, ==, 0);
    g_assert_cmpuint(s.prec_off, ==, 4);
    g_assert_cmpuint(s.value_off, ==, 8);
    g_assert_cmpint(kptx_printf_next(f, strlen(f), &pos, &bytes, &s), ==, 1);
    g_assert_cmpint(s.conv, ==, 's');
    g_assert_cmpuint(s.value_off, ==, 16);
    g_assert_cmpint(kptx_printf_next(f, strlen(f), &pos, &bytes, &s), ==, 0);
    g_assert_cmpuint(bytes, ==, 24);
}

/* ---- the rewrite ---- */

#define HEAD ".version 7.0\n.target sm_70\n.address_size 64\n"
#define PROTO ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, " \
              ".param .b64 vprintf_param_1);\n"

/* A call sequence as nvcc writes it: format in fmt, buffer in args, result into ret. */
#define CALL(fmt, args, ret)                                                                 \
    "  {\n  .param .b64 param0;\n  st.param.b64 [param0+0], " fmt ";\n"                      \
    "  .param .b64 param1;\n  st.param.b64 [param1+0], " args ";\n"                          \
    "  .param .b32 retval0;\n"                                                               \
    "  call.uni (retval0), vprintf, (param0, param1);\n"                                     \
    "  ld.param.b32 " ret ", [retval0+0];\n  }\n"

/* speak(out): thread t prints "t=%d d=%f big=%lld\n" (t, t + 0.5, t * 2^40), then "plain\n"
 * through cvta.const of a .const string, then calls shout(t), which prints "f%d %s\n" (t,
 * "who"); out[t], out[32 + t], out[64 + t] get the three results. */
static const char speak_ptx[] =
    HEAD PROTO
    ".global .align 1 .b8 $str[20] = {116, 61, 37, 100, 32, 100, 61, 37, 102, 32, 98, 105, "
    "103, 61, 37, 108, 108, 100, 10};\n"
    ".const .align 1 .b8 $str$1[7] = {112, 108, 97, 105, 110, 10};\n"
    ".global .align 1 .b8 $str$2[9] = {120, 120, 102, 37, 100, 32, 37, 115};\n"
    ".global .align 1 .b8 $str$3[4] = {119, 104, 111};\n"
    ".func (.param .b32 r) shout(.param .b32 t)\n"
    "{\n"
    "  .local .align 8 .b8 depot[16];\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<8>;\n"
    "  ld.param.u32 %r1, [t];\n"
    "  mov.u64 %rd1, depot;\n  cvta.local.u64 %rd2, %rd1;\n"
    "  st.local.u32 [%rd1], %r1;\n"
    "  mov.u64 %rd3, $str$3;\n  cvta.global.u64 %rd4, %rd3;\n"
    "  st.local.u64 [%rd1+8], %rd4;\n"
    "  mov.u64 %rd5, $str$2;\n  cvta.global.u64 %rd6, %rd5;\n"
    "  add.u64 %rd7, %rd6, 2;\n"
    CALL("%rd7", "%rd2", "%r2")
    "  st.param.b32 [r], %r2;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry speak(.param .u64 out)\n"
    "{\n"
    "  .local .align 16 .b8 depot[32];\n"
    "  .reg .b32 %r<8>;\n  .reg .b64 %rd<16>;\n  .reg .f64 %fd<3>;\n"
    "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u64 %rd3, depot;\n  cvta.local.u64 %rd4, %rd3;\n"
    "  cvt.rn.f64.u32 %fd1, %r1;\n  add.f64 %fd2, %fd1, 0d3FE0000000000000;\n"
    "  cvt.u64.u32 %rd5, %r1;\n  shl.b64 %rd6, %rd5, 40;\n"
    "  st.local.u32 [%rd3], %r1;\n  st.local.f64 [%rd3+8], %fd2;\n"
    "  st.local.u64 [%rd3+16], %rd6;\n"
    "  mov.u64 %rd7, $str;\n  cvta.global.u64 %rd8, %rd7;\n"
    CALL("%rd8", "%rd4", "%r2")
    "  mov.u64 %rd9, $str$1;\n  cvta.const.u64 %rd10, %rd9;\n"
    CALL("%rd10", "0", "%r3")
    "  { .param .b32 p0;\n  st.param.b32 [p0+0], %r1;\n  .param .b32 rv;\n"
    "  call.uni (rv), shout, (p0);\n  ld.param.b32 %r4, [rv+0];\n  }\n"
    "  mul.wide.u32 %rd11, %r1, 4;\n  add.s64 %rd12, %rd2, %rd11;\n"
    "  st.global.u32 [%rd12], %r2;\n  st.global.u32 [%rd12+128], %r3;\n"
    "  st.global.u32 [%rd12+256], %r4;\n"
    "  ret;\n"
    "}\n";

/* Calls left alone: a format from a parameter, from a register written twice, an
 * argument-taking format with no buffer, and an unknown conversion. */
static const char unresolved_ptx[] =
    HEAD PROTO
    ".global .align 1 .b8 $str[3] = {37, 100};\n"
    ".global .align 1 .b8 $str$1[3] = {37, 110};\n"
    ".visible .entry opaque(.param .u64 fmt, .param .u32 which)\n"
    "{\n"
    "  .reg .b32 %r<6>;\n  .reg .b64 %rd<8>;\n  .reg .pred %p1;\n"
    "  ld.param.u64 %rd1, [fmt];\n"
    CALL("%rd1", "0", "%r1")
    "  mov.u64 %rd2, $str;\n  ld.param.u32 %r5, [which];\n  setp.eq.u32 %p1, %r5, 0;\n"
    "  @%p1 mov.u64 %rd2, $str$1;\n"
    CALL("%rd2", "0", "%r2")
    "  mov.u64 %rd3, $str;\n  cvta.global.u64 %rd4, %rd3;\n"
    CALL("%rd4", "0", "%r3")
    "  mov.u64 %rd5, $str$1;\n  cvta.global.u64 %rd6, %rd5;\n"
    CALL("%rd6", "%rd1", "%r4")
    "  ret;\n"
    "}\n";

static unsigned count(const char *text, const char *what)
{
    unsigned n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

static unsigned rewrite(kptx_module *m, unsigned flags)
{
    unsigned n = 99;
    kptx_error err = {0};
    if (kptx_printf_module(m, flags, &n, &err))
        g_error("printf pass: %s", err.message);
    return n;
}

static void test_rewrite(void)
{
    kptx_module *m = test_parse(speak_ptx);
    g_assert_cmpuint(rewrite(m, 0), ==, 3);
    char *text = test_print(m, NULL);
    g_assert_cmpuint(count(text, "vprintf, (param0, param1)"), ==, 0);
    g_assert_cmpuint(count(text, "shout, (p0)"), ==, 1);
    /* records: 16 + 24 argument bytes, 16 + 0, 16 + 16 */
    g_assert_cmpuint(count(text, "[__kernelet_printf], 40;"), ==, 1);
    g_assert_cmpuint(count(text, "[__kernelet_printf], 16;"), ==, 1);
    g_assert_cmpuint(count(text, "[__kernelet_printf], 32;"), ==, 1);
    g_assert_cmpuint(count(text, ".global .align 8 .b8 __kernelet_printf[1048576];"), ==, 1);
    /* the strings table names the formats first, in module order (shout's, then speak's),
     * then the other strings: "$str$2", "$str", "$str$1", "$str$3", "" */
    g_assert_nonnull(strstr(text, "__kernelet_printf_strings[27] = {36, 115, 116, 114, 36, 50, "
                                  "0, 36, 115, 116, 114, 0, 36, 115, 116, 114, 36, 49, 0, 36, "
                                  "115, 116, 114, 36, 51, 0, 0};"));
    free(text);
    text = test_print(m, NULL);
    test_assert_reprints(text);
    free(text);
    kptx_module_free(m);

    m = test_parse(speak_ptx);
    g_assert_cmpuint(rewrite(m, KPTX_PRINTF_ENTRIES_ONLY), ==, 2);
    text = test_print(m, NULL);
    g_assert_cmpuint(count(text, "vprintf, (param0, param1)"), ==, 1);  /* shout's */
    free(text);
    kptx_module_free(m);
}

static void test_unresolved(void)
{
    kptx_module *m = test_parse(unresolved_ptx);
    char *before = test_print(m, NULL);
    g_assert_cmpuint(rewrite(m, 0), ==, 0);
    char *after = test_print(m, NULL);
    g_assert_cmpstr(before, ==, after);     /* nothing rewritten, nothing added */
    free(after);
    free(before);
    kptx_module_free(m);
}

static void test_reserved(void)
{
    static const char *const clash[] = {
        HEAD ".global .align 8 .b8 __kernelet_printf[16];\n",
        HEAD ".global .align 1 .b8 __kernelet_printf_strings[1];\n",
        HEAD ".visible .entry __kernelet_printf()\n{\n  ret;\n}\n",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(clash); i++) {
        kptx_module *m = test_parse(clash[i]);
        kptx_error err = {0};
        unsigned n = 99;
        g_assert_cmpint(kptx_printf_module(m, 0, &n, &err), ==, KPTX_EUNSUPPORTED);
        g_assert_cmpuint(n, ==, 0);
        g_assert_nonnull(strstr(err.message, "reserved"));
        kptx_module_free(m);
    }
    /* a second application is refused and leaves the module as the first made it */
    kptx_module *m = test_parse(speak_ptx);
    rewrite(m, 0);
    char *once = test_print(m, NULL);
    kptx_error err = {0};
    g_assert_cmpint(kptx_printf_module(m, 0, NULL, &err), ==, KPTX_EUNSUPPORTED);
    char *twice = test_print(m, NULL);
    g_assert_cmpstr(once, ==, twice);
    free(once);
    free(twice);
    kptx_module_free(m);
    /* nothing to rewrite: nothing added */
    m = test_parse(HEAD ".visible .entry k()\n{\n  ret;\n}\n");
    g_assert_cmpuint(rewrite(m, 0), ==, 0);
    once = test_print(m, NULL);
    g_assert_null(strstr(once, "__kernelet_printf"));
    free(once);
    kptx_module_free(m);
}

/* ---- run in the emulator ---- */

enum { THREADS = 32 };

typedef struct run_result {
    uint8_t *ring;
    int32_t ret[3 * THREADS];
    kemu_devptr str[4];             /* $str, $str$1, $str$2, $str$3 */
} run_result;

static void run_speak(run_result *r, uint32_t start_head)
{
    kemu_device *dev;
    kemu_module *mod;
    kemu_function *fn;
    kemu_error e = {0};
    kemu_devptr ring, out;
    size_t size;
    kptx_error err = {0};
    kptx_module *m = test_parse(speak_ptx);
    g_assert_cmpint(kptx_printf_module(m, 0, NULL, &err), ==, 0);
    /* not fenced: shout writes the ring and device functions are not fenced (kerneletd
     * leaves their calls alone while fencing; the integration tests run fenced entries) */
    g_assert_cmpint(kemu_device_create(&(kemu_device_config){.workers = 1}, &dev, &e), ==, 0);
    if (kemu_module_load_parsed(dev, m, &mod, &e))
        g_error("load: %s", e.message);
    kptx_module_free(m);
    g_assert_cmpint(kemu_module_get_global(mod, KPTX_PRINTF_RING, &ring, &size, &e), ==, 0);
    g_assert_cmpuint(size, ==, KPTX_PRINTF_RING_BYTES);
    static const char *const names[] = {"$str", "$str$1", "$str$2", "$str$3"};
    for (unsigned i = 0; i < 4; i++)
        g_assert_cmpint(kemu_module_get_global(mod, names[i], &r->str[i], &size, &e), ==, 0);
    g_assert_cmpint(kemu_memcpy_htod(dev, ring, &start_head, 4, &e), ==, 0);
    g_assert_cmpint(kemu_mem_alloc(dev, sizeof r->ret, &out, &e), ==, 0);
    g_assert_cmpint(kemu_module_get_function(mod, "speak", &fn, &e), ==, 0);
    uint64_t params[1] = {out};
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {THREADS, 1, 1}, .params = params,
                              .params_bytes = sizeof params};
    if (kemu_launch(fn, &cfg, &e))
        g_error("speak: %s", e.message);
    r->ring = g_malloc(KPTX_PRINTF_RING_BYTES);
    g_assert_cmpint(kemu_memcpy_dtoh(dev, r->ring, ring, KPTX_PRINTF_RING_BYTES, &e), ==, 0);
    g_assert_cmpint(kemu_memcpy_dtoh(dev, r->ret, out, sizeof r->ret, &e), ==, 0);
    kemu_device_destroy(dev);
}

static uint32_t u32_at(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t u64_at(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* One record of kind k (0 speak, 1 plain, 2 shout) for thread t: checks its contents. */
static void check_record(const run_result *r, const uint8_t *rec, bool seen[3][THREADS])
{
    uint32_t total = u32_at(rec), argb = u32_at(rec + 4);
    uint64_t fmt = u64_at(rec + 8);
    const uint8_t *a = rec + KPTX_PRINTF_RECORD_HEADER;
    unsigned t;
    if (fmt == r->str[0]) {
        g_assert_cmpuint(total, ==, 40);
        g_assert_cmpuint(argb, ==, 24);
        t = u32_at(a);
        double d;
        memcpy(&d, a + 8, 8);
        g_assert_cmpfloat(d, ==, t + 0.5);
        g_assert_cmpuint(u64_at(a + 16), ==, (uint64_t)t << 40);
        g_assert_false(seen[0][t]);
        seen[0][t] = true;
    } else if (fmt == r->str[1]) {
        g_assert_cmpuint(total, ==, 16);
        g_assert_cmpuint(argb, ==, 0);
        for (t = 0; t < THREADS && seen[1][t]; t++)
            ;
        g_assert_cmpuint(t, <, THREADS);
        seen[1][t] = true;
    } else {
        g_assert_cmpuint(fmt, ==, r->str[2] + 2);       /* "f%d %s" inside "xxf%d %s" */
        g_assert_cmpuint(total, ==, 32);
        g_assert_cmpuint(argb, ==, 16);
        t = u32_at(a);
        g_assert_cmpuint(t, <, THREADS);
        g_assert_cmpuint(u64_at(a + 8), ==, r->str[3]);
        g_assert_false(seen[2][t]);
        seen[2][t] = true;
    }
}

static void test_run(void)
{
    run_result r;
    bool seen[3][THREADS] = {{false}};
    run_speak(&r, 0);
    const uint8_t *data = r.ring + KPTX_PRINTF_RING_HEADER;
    uint32_t head = u32_at(r.ring);
    g_assert_cmpuint(head, ==, THREADS * (40 + 16 + 32));
    g_assert_cmpuint(u32_at(r.ring + 4), ==, 0);
    for (uint32_t o = 0; o < head; o += u32_at(data + o))
        check_record(&r, data + o, seen);
    for (unsigned k = 0; k < 3; k++)
        for (unsigned t = 0; t < THREADS; t++)
            g_assert_true(seen[k][t]);
    for (unsigned t = 0; t < THREADS; t++) {
        g_assert_cmpint(r.ret[t], ==, 3);
        g_assert_cmpint(r.ret[THREADS + t], ==, 0);
        g_assert_cmpint(r.ret[2 * THREADS + t], ==, 2);
    }
    g_free(r.ring);
}

/* A ring with room for one record: the first reservation takes it, every later one is
 * dropped and counted, its printf returns -1, and nothing is written past the ring. */
static void test_full(void)
{
    run_result r;
    uint32_t cap = KPTX_PRINTF_RING_BYTES - KPTX_PRINTF_RING_HEADER;
    run_speak(&r, cap - 40);
    g_assert_cmpuint(u32_at(r.ring + 4), ==, 3 * THREADS - 1);
    g_assert_cmpuint(u32_at(r.ring + KPTX_PRINTF_RING_HEADER + cap - 40), ==, 40);
    unsigned kept = 0;
    for (unsigned i = 0; i < 3 * THREADS; i++) {
        g_assert_true(r.ret[i] == -1 || (i < THREADS && r.ret[i] == 3));
        kept += r.ret[i] != -1;
    }
    g_assert_cmpuint(kept, ==, 1);
    g_free(r.ring);
}

/* The rewritten module assembles, alone and fenced (entries only, as kerneletd does). */
static void test_assembles(void)
{
    if (!ptxas_path) {
        g_test_skip("no ptxas");
        return;
    }
    for (unsigned fenced = 0; fenced < 2; fenced++) {
        kptx_module *m = test_parse(speak_ptx);
        kptx_error err = {0};
        unsigned n = 0;
        rewrite(m, fenced ? KPTX_PRINTF_ENTRIES_ONLY : 0);
        if (fenced) {
            g_assert_cmpint(kptx_fence_module(m, 0, &n, &err), ==, 0);
            g_assert_cmpuint(n, ==, 1);
        }
        size_t len;
        char *text = test_print(m, &len);
        /* shout's call of vprintf stays when fenced: a relocatable object then */
        ptxas_assert_assembles(ptxas_path, text, len, "sm_75", fenced);
        free(text);
        kptx_module_free(m);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ptxas_path = ptxas_arg(argc, argv);
    g_test_add_func("/ptx/printf/layouts", test_layouts);
    g_test_add_func("/ptx/printf/spec-offsets", test_spec_offsets);
    g_test_add_func("/ptx/printf/rewrite", test_rewrite);
    g_test_add_func("/ptx/printf/unresolved", test_unresolved);
    g_test_add_func("/ptx/printf/reserved", test_reserved);
    g_test_add_func("/ptx/printf/run", test_run);
    g_test_add_func("/ptx/printf/full", test_full);
    g_test_add_func("/ptx/printf/assembles", test_assembles);
    return g_test_run();
}
