/* The sim's module variables through the executor interface: which declarations of
 * hand-written PTX and of nvcc's PTX become variables, their sizes and initial values (read
 * back with copies), their memory, and the text the sim refuses. */
#include <math.h>

#include "sched_test.h"

typedef struct env {
    ksim *sim;
    kbackend be;
    kbackend_module *mod;
} env;

static env *env_new(void)
{
    env *e = g_new0(env, 1);
    g_assert_cmpint(ksim_new(&e->sim, NULL, NULL), ==, 0);
    ksim_backend(e->sim, &e->be);
    kbackend_profile comp = test_profile(0.002, 3000, 0.85, 0.05);
    g_assert_cmpint(ksim_add_kernel(e->sim, "comp", &comp, NULL), ==, 0);
    return e;
}

static void env_free(env *e)
{
    if (e->mod)
        g_assert_cmpint(e->be.ops->module_unload(e->be.state, e->mod, NULL), ==, 0);
    ksim_free(e->sim);
    g_free(e);
}

static int load(env *e, const char *text, kbackend_error *err)
{
    return e->be.ops->module_load_ptx(e->be.state, 0, text, strlen(text), &e->mod, err);
}

static uint64_t mem_in_use(const env *e)
{
    ksim_stats st;
    ksim_get_stats(e->sim, &st);
    return st.mem_in_use;
}

/* The variable's range; fails the test when it is absent. */
static kbackend_devptr var(env *e, const char *name, uint64_t expect_bytes)
{
    kbackend_devptr addr = 0;
    uint64_t bytes = 0;
    kbackend_error err = {0};
    if (e->be.ops->global_get(e->be.state, e->mod, name, &addr, &bytes, &err))
        g_error("global_get %s: %s", name, err.msg);
    g_assert_cmpuint(addr, !=, 0);
    g_assert_cmpuint(bytes, ==, expect_bytes);
    return addr;
}

static void no_var(env *e, const char *name)
{
    kbackend_devptr addr;
    kbackend_error err = {0};
    g_assert_cmpint(e->be.ops->global_get(e->be.state, e->mod, name, &addr, NULL, &err), ==,
                    KBACKEND_ENOTFOUND);
    g_assert_nonnull(strstr(err.msg, name));
}

static void on_done(void *user, const kbackend_completion *c)
{
    *(int *)user = c->status ? c->status : 1;
}

/* bytes at addr, through a device-to-host copy. */
static void read_dev(env *e, kbackend_devptr addr, void *dst, uint64_t bytes)
{
    int done = 0;
    g_assert_cmpint(e->be.ops->copy_d2h(e->be.state, dst, addr, bytes, on_done, &done, NULL),
                    ==, 0);
    while (!done)
        g_assert_cmpint(e->be.ops->progress(e->be.state, UINT64_MAX, NULL), >=, 0);
    g_assert_cmpint(done, ==, 1);
}

static const char hand_ptx[] =
    "//\n// hand-written: what the sim must find, and what it must not\n//\n"
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".file 1 \"dir{x}/a;b.cu\"\n"
    ".global .align 4 .u32 counter;\n"
    ".const .align 8 .f64 coeffs[16];\n"
    ".global .align 16 .v4 .f32 vecs[3] = {{1.0, 2.0}, {0f40400000}};\n"
    ".global .align 1 .b8 table[] = {1, 2, 3, 4, 5};\n"
    ".global .align 2 .u16 grid[][3] = {{1, 2, 3}, {4}};\n"
    ".visible .global .attribute(.managed) .align 8 .u64 managed;\n"
    ".global .s32 a = -7, b[2] = {1, 2}, c;\n"
    ".weak .global .align 4 .b32 w = 0x10;\n"
    ".common .global .align 8 .b8 blob[0x40];\n"
    ".global .f32 half = 0f3F000000;\n"
    ".global .f64 small = -1.5e-3;\n"
    ".global .f64 third = 0dC004000000000000;\n"
    ".global .u64 self_ptr = generic(counter), fn_ptr = helper;\n"
    ".global .s8 neg[4] = {-1, -128, 127, 0x7f};\n"
    ".extern .global .align 4 .u32 ext;\n"
    ".shared .align 4 .b8 sh[64];\n"
    ".global .texref tex = { filter_mode = nearest, addr_mode_0 = wrap };\n"
    "// .global .u32 commented;\n"
    "/* .entry ghost() { } .global .u32 ghost_var; */\n"
    ".visible .entry comp(\n"
    "    .param .u64 .ptr .global .align 4 comp_param_0\n"
    ")\n.maxntid 256, 1, 1\n{\n"
    "    .reg .b32 %r<3>;\n    .local .align 4 .b8 body_local[8];\n"
    "    ld.global.u32 %r1, [counter];\n    { .reg .b32 inner; }\n    ret;\n}\n"
    ".visible .func (.param .b32 r) helper(.param .b64 .ptr .global p)\n{\n    ret;\n}\n";

static void test_declarations(void)
{
    env *e = env_new();
    uint64_t before = mem_in_use(e);
    g_assert_cmpint(load(e, hand_ptx, NULL), ==, 0);
    struct { const char *name; uint64_t bytes; } expect[] = {
        {"counter", 4}, {"coeffs", 8 * 16}, {"vecs", 4 * 4 * 3}, {"table", 5},
        {"grid", 2 * 3 * 2}, {"managed", 8}, {"a", 4}, {"b", 8}, {"c", 4}, {"w", 4},
        {"blob", 64}, {"half", 4}, {"small", 8}, {"third", 8}, {"self_ptr", 8},
        {"fn_ptr", 8}, {"neg", 4},
    };
    uint64_t total = 0;
    kbackend_devptr addr[G_N_ELEMENTS(expect)];
    for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
        addr[i] = var(e, expect[i].name, expect[i].bytes);
        total += expect[i].bytes;
        for (size_t j = 0; j < i; j++)      /* every variable has memory of its own */
            g_assert_true(addr[j] + expect[j].bytes <= addr[i] ||
                          addr[i] + expect[i].bytes <= addr[j]);
    }
    g_assert_cmpuint(mem_in_use(e) - before, ==, total);
    const char *absent[] = {"ext", "sh", "tex", "commented", "ghost_var", "body_local",
                            "inner", "comp_param_0", "comp", "helper", "p", "r"};
    for (size_t i = 0; i < G_N_ELEMENTS(absent); i++)
        no_var(e, absent[i]);
    kbackend_function *f;
    kbackend_error err;
    g_assert_cmpint(e->be.ops->function_get(e->be.state, e->mod, "comp", &f, NULL, &err), ==, 0);
    g_assert_cmpint(e->be.ops->function_get(e->be.state, e->mod, "ghost", &f, NULL, &err), ==,
                    KBACKEND_ENOTFOUND);
    g_assert_cmpint(e->be.ops->function_get(e->be.state, e->mod, "counter", &f, NULL, &err),
                    ==, KBACKEND_ENOTFOUND);
    g_assert_cmpint(e->be.ops->module_unload(e->be.state, e->mod, NULL), ==, 0);
    e->mod = NULL;
    g_assert_cmpuint(mem_in_use(e), ==, before);
    env_free(e);
}

static void test_initial_values(void)
{
    env *e = env_new();
    g_assert_cmpint(load(e, hand_ptx, NULL), ==, 0);
    float vecs[12], half;
    g_assert_true(sizeof(float) == 4 && sizeof(double) == 8);
    read_dev(e, var(e, "vecs", sizeof(vecs)), vecs, sizeof(vecs));
    const float vexp[12] = {1, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0};   /* short groups padded */
    for (int i = 0; i < 12; i++)
        g_assert_cmpfloat(vecs[i], ==, vexp[i]);
    uint8_t table[5], nb[4];
    read_dev(e, var(e, "table", 5), table, 5);
    for (int i = 0; i < 5; i++)
        g_assert_cmpuint(table[i], ==, i + 1);
    uint16_t grid[6];
    read_dev(e, var(e, "grid", sizeof(grid)), grid, sizeof(grid));
    const uint16_t gexp[6] = {1, 2, 3, 4, 0, 0};
    for (int i = 0; i < 6; i++)
        g_assert_cmpuint(grid[i], ==, gexp[i]);
    int32_t a, b[2], c = 99;
    read_dev(e, var(e, "a", 4), &a, 4);
    read_dev(e, var(e, "b", 8), b, 8);
    read_dev(e, var(e, "c", 4), &c, 4);
    g_assert_cmpint(a, ==, -7);
    g_assert_cmpint(b[0], ==, 1);
    g_assert_cmpint(b[1], ==, 2);
    g_assert_cmpint(c, ==, 0);
    uint32_t w;
    read_dev(e, var(e, "w", 4), &w, 4);
    g_assert_cmpuint(w, ==, 16);
    read_dev(e, var(e, "half", 4), &half, 4);
    g_assert_cmpfloat(half, ==, 0.5f);
    double small, third;
    read_dev(e, var(e, "small", 8), &small, 8);
    read_dev(e, var(e, "third", 8), &third, 8);
    g_assert_cmpfloat(small, ==, -1.5e-3);
    g_assert_cmpfloat(third, ==, -2.5);
    uint64_t self, fn;
    read_dev(e, var(e, "self_ptr", 8), &self, 8);
    read_dev(e, var(e, "fn_ptr", 8), &fn, 8);
    g_assert_cmpuint(self, ==, var(e, "counter", 4));
    g_assert_cmpuint(fn, ==, 0);            /* function addresses: none in the sim */
    read_dev(e, var(e, "neg", 4), nb, 4);
    g_assert_cmpuint(nb[0], ==, 0xff);
    g_assert_cmpuint(nb[1], ==, 0x80);
    g_assert_cmpuint(nb[2], ==, 0x7f);
    g_assert_cmpuint(nb[3], ==, 0x7f);
    env_free(e);
}

/* nvcc's PTX for globals.cu (built by meson when nvcc is there). */
static void test_nvcc(void)
{
#ifdef GLOBALS_PTX
    gchar *text;
    GError *gerr = NULL;
    if (!g_file_get_contents(GLOBALS_PTX, &text, NULL, &gerr))
        g_error("%s: %s", GLOBALS_PTX, gerr->message);
    env *e = env_new();
    kbackend_error err = {0};
    if (load(e, text, &err))
        g_error("nvcc PTX refused: %s", err.msg);
    var(e, "counter", sizeof(int));
    var(e, "coeffs", 16 * sizeof(float));
    var(e, "vecs", 2 * 4 * sizeof(float));
    var(e, "pairs", 5 * 16);                /* {int, double}: 16 bytes with padding */
    var(e, "managed_total", 8);
    double table[3];
    read_dev(e, var(e, "table", sizeof(table)), table, sizeof(table));
    g_assert_cmpfloat(table[0], ==, 1.0);
    g_assert_cmpfloat(table[1], ==, 2.0);
    g_assert_cmpfloat(table[2], ==, 3.0);
    float scale;
    read_dev(e, var(e, "scale", 4), &scale, 4);
    g_assert_cmpfloat(scale, ==, 1.5f);
    uint64_t target;
    read_dev(e, var(e, "target", 8), &target, 8);
    g_assert_cmpuint(target, ==, var(e, "counter", 4));
    int16_t ns[7];
    read_dev(e, var(e, "_ZN2ns12in_namespaceE", sizeof(ns)), ns, sizeof(ns));
    const int16_t nexp[7] = {-1, 2, 0, 0, 0, 0, 0};
    for (int i = 0; i < 7; i++)
        g_assert_cmpint(ns[i], ==, nexp[i]);
    kbackend_function *f;
    g_assert_cmpint(e->be.ops->function_get(e->be.state, e->mod, "comp", &f, NULL, NULL), ==,
                    0);
    env_free(e);
    g_free(text);
#else
    g_test_skip("built without nvcc: no PTX from globals.cu");
#endif
}

static void test_refused_text(void)
{
    static const struct { const char *text; const char *msg; } bad[] = {
        {"// nothing", "no .entry"},
        {".entry e() { } /* open", "unterminated comment"},
        {".file 1 \"open\n.global .u32 x;", "unterminated string"},
        {".global .u32 x[];", "without a size"},
        {".global .u32 x; .global .u32 x;", "declared twice"},
        {".global .u32 1abc;", "variable name"},
        {".global .u32 x", "without ';'"},
        {".global .u32 x = 1", "without ';'"},
        {".global .align 3 .u32 x;", "power of two"},
        {".global .foo x;", "without a type"},
        {".entry e() {", "'{' without"},
        {".entry e())", "')' without"},
        {".entry", "without a name"},
        {".entry 9e() {}", "name '9e'"},
        {".global .u8 x[1][2][3][4][5];", "more than 4"},
        {".global .u8 x[0];", "positive integer"},
        {".global .u8 x[2][];", "only the first"},
        {".global .b8 x[0x20000000000];", "larger than 1 TiB"},
        {".global .u32 x[2] = {1, 2, 3};", "more initialisers"},
        {".global .u32 x[2][2] = {{1, 2, 3}};", "element holds"},
        {".global .u32 x[2] = {{1}};", "nested deeper"},
        {".global .u32 x[2] = {1, , 2};", "empty element"},
        {".global .u32 x[2] = {1, 2;", "empty element"},
        {".global .u32 x[2] = {1, 2", "without its '}'"},
        {".global .attribute(.managed .u32 x;", "without ')'"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        env *e = env_new();
        kbackend_error err = {0};
        g_test_message("%s", bad[i].text);
        g_assert_cmpint(load(e, bad[i].text, &err), ==, KBACKEND_EMODULE);
        if (!strstr(err.msg, bad[i].msg))
            g_error("'%s': message '%s' lacks '%s'", bad[i].text, err.msg, bad[i].msg);
        g_assert_null(e->mod);
        g_assert_cmpuint(mem_in_use(e), ==, 0);
        env_free(e);
    }
    /* more than the sim's memory: the load fails and gives back what it had */
    env *e = env_new();
    kbackend_error err = {0};
    g_assert_cmpint(load(e, ".global .u32 first[4];\n.global .b8 big[200000000000];", &err), ==,
                    KBACKEND_EDEVMEM);
    g_assert_cmpuint(mem_in_use(e), ==, 0);
    /* variables only: a module without kernels is fine */
    g_assert_cmpint(load(e, ".global .u32 only;", NULL), ==, 0);
    var(e, "only", 4);
    kbackend_devptr addr;
    g_assert_cmpint(e->be.ops->global_get(e->be.state, e->mod, NULL, &addr, NULL, &err), ==,
                    KBACKEND_EINVAL);
    env_free(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sim-globals/declarations", test_declarations);
    g_test_add_func("/sim-globals/initial-values", test_initial_values);
    g_test_add_func("/sim-globals/nvcc", test_nvcc);
    g_test_add_func("/sim-globals/refused-text", test_refused_text);
    return g_test_run();
}
