/* Generated one-instruction kernels on the emulator against C references (op_runner.h). */
#include "op_runner.h"

#include <kernelet/emu.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N_INPUTS 3000u
#define BLOCK 80u   /* not a multiple of 32: the last warp of each block is partial */

static unsigned type_bits(const char *t)
{
    if (!t)
        return 0;
    if (strcmp(t, ".pred") == 0)
        return 1;
    if (strstr(t, "16x2") || strstr(t, "32"))
        return 32;
    if (strstr(t, "16"))
        return 16;
    if (strstr(t, "64"))
        return 64;
    return 8;
}

static bool type_is_float(const char *t)
{
    return t && (t[1] == 'f' || (t[1] == 'b' && t[2] == 'f'));
}

/* The ld/st type for a register type (16-bit floats move as bits). */
static const char *mem_type(const char *t)
{
    if (strcmp(t, ".f16") == 0 || strcmp(t, ".bf16") == 0)
        return ".b16";
    if (strcmp(t, ".f16x2") == 0 || strcmp(t, ".bf16x2") == 0)
        return ".b32";
    return t;
}

static void append_load(GString *s, const char *reg, const char *t, unsigned off)
{
    if (!t)
        return;
    if (strcmp(t, ".pred") == 0)
        g_string_append_printf(s, "\tld.global.u32 %%t%s, [%%q2+%u];\n"
                                  "\tsetp.ne.u32 %%%s, %%t%s, 0;\n", reg, off, reg, reg);
    else
        g_string_append_printf(s, "\tld.global%s %%%s, [%%q2+%u];\n", mem_type(t), reg, off);
}

static char *kernel_text(const op_case *c)
{
    GString *s = g_string_new(".version 8.0\n.target sm_90\n.address_size 64\n"
                              ".visible .entry op_kernel(.param .u64 p_in, .param .u64 p_out,"
                              " .param .u32 p_n)\n{\n"
                              "\t.reg .pred %guard;\n\t.reg .b32 %i<6>;\n\t.reg .b64 %q<6>;\n"
                              "\t.reg .u32 %ta, %tb, %tc, %td;\n"
                              "\t.reg .u32 %u<8>;\n\t.reg .u64 %w<4>;\n\t.reg .pred %p<4>;\n");
    const char *names[4] = {"a", "b", "c", "d"};
    const char *types[4] = {c->at, c->bt, c->ct, c->dt};
    for (int i = 0; i < 4; i++)
        if (types[i])
            g_string_append_printf(s, "\t.reg %s %%%s;\n", types[i], names[i]);
    g_string_append(s, "\tmov.u32 %i0, %tid.x;\n\tmov.u32 %i1, %ctaid.x;\n"
                       "\tmov.u32 %i2, %ntid.x;\n\tmad.lo.s32 %i3, %i1, %i2, %i0;\n"
                       "\tld.param.u32 %i4, [p_n];\n\tsetp.ge.u32 %guard, %i3, %i4;\n"
                       "\t@%guard bra DONE;\n\tld.param.u64 %q0, [p_in];\n"
                       "\tmul.wide.u32 %q1, %i3, 24;\n\tadd.s64 %q2, %q0, %q1;\n");
    for (int i = 0; i < 3; i++)
        append_load(s, names[i], types[i], 8u * (unsigned)i);
    g_string_append_printf(s, "\t%s\n", c->body);
    g_string_append(s, "\tld.param.u64 %q3, [p_out];\n\tmul.wide.u32 %q4, %i3, 8;\n"
                       "\tadd.s64 %q5, %q3, %q4;\n");
    if (strcmp(c->dt, ".pred") == 0)
        g_string_append(s, "\tselp.u32 %td, 1, 0, %d;\n\tst.global.u32 [%q5], %td;\n");
    else
        g_string_append_printf(s, "\tst.global%s [%%q5], %%d;\n", mem_type(c->dt));
    g_string_append(s, "DONE:\n\tret;\n}\n");
    return g_string_free(s, FALSE);
}

/* ---- inputs -------------------------------------------------------------------------------- */

static uint64_t width_mask(unsigned bits)
{
    return bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
}

static uint64_t rand_bits(GRand *r)
{
    return ((uint64_t)g_rand_int(r) << 32) | g_rand_int(r);
}

static uint64_t gen_int(GRand *r, unsigned bits)
{
    uint64_t m = width_mask(bits), top = 1ull << (bits - 1);
    const uint64_t specials[] = {0, 1, 2, 3, m, m - 1, top, top - 1, top + 1, 0x7f, 0x80, 0xff};
    unsigned pick = (unsigned)g_rand_int_range(r, 0, 10);
    if (pick < 6)
        return rand_bits(r) & m;
    if (pick < 8)
        return specials[g_rand_int_range(r, 0, G_N_ELEMENTS(specials))] & m;
    return (uint64_t)(int64_t)g_rand_int_range(r, -100, 101) & m;
}

static uint64_t gen_float32(GRand *r, op_gen g)
{
    static const uint32_t specials[] = {
        0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc00001,
        0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0x3f800000, 0xbf800000, 0x3f000000,
        0x40000000, 0x00400000, 0x4b000000, 0x4effffff, 0x4f000000, 0xcf000000, 0x5f000000,
    };
    unsigned pick = (unsigned)g_rand_int_range(r, 0, 10);
    if (g == GEN_ANGLE && pick < 8)
        return bits_f((float)g_rand_double_range(r, -100.0, 100.0));
    if (g == GEN_INTF && pick < 7) {
        const double fr[] = {0.0, 0.5, 0.25, 0.75, -0.5, 0.5000001};
        double k = pick < 4 ? g_rand_int_range(r, -70000, 70000)
                            : ldexp(g_rand_double_range(r, -1, 1), g_rand_int_range(r, 0, 70));
        return bits_f((float)(k + fr[g_rand_int_range(r, 0, 6)]));
    }
    if (pick < 3 && g != GEN_POS)
        return g_rand_int(r);
    if (pick < 8) {
        double v = g_rand_double_range(r, 0.5, 1.0) * ldexp(1.0, g_rand_int_range(r, -40, 40));
        if (g != GEN_POS && g_rand_boolean(r))
            v = -v;
        return bits_f((float)v);
    }
    return specials[g_rand_int_range(r, 0, G_N_ELEMENTS(specials))];
}

static uint64_t gen_float64(GRand *r, op_gen g)
{
    static const uint64_t specials[] = {
        0, 0x8000000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
        0x7ff8000000000000ull, 0x7ff0000000000001ull, 1, 0x000fffffffffffffull,
        0x0010000000000000ull, 0x7fefffffffffffffull, 0x3ff0000000000000ull,
        0xbff0000000000000ull, 0x41e0000000000000ull, 0xc1e0000000000000ull,
        0x43e0000000000000ull, 0x43f0000000000000ull,
    };
    unsigned pick = (unsigned)g_rand_int_range(r, 0, 10);
    if (g == GEN_ANGLE && pick < 8)
        return bits_d(g_rand_double_range(r, -100.0, 100.0));
    if (g == GEN_INTF && pick < 7) {
        const double fr[] = {0.0, 0.5, 0.25, 0.75, -0.5, 0.5000000001};
        double k = pick < 4 ? g_rand_int_range(r, -70000, 70000)
                            : ldexp(g_rand_double_range(r, -1, 1), g_rand_int_range(r, 0, 70));
        return bits_d(k + fr[g_rand_int_range(r, 0, 6)]);
    }
    if (pick < 3 && g != GEN_POS)
        return rand_bits(r);
    if (pick < 8) {
        double v = g_rand_double_range(r, 0.5, 1.0) * ldexp(1.0, g_rand_int_range(r, -300, 300));
        if (g != GEN_POS && g_rand_boolean(r))
            v = -v;
        return bits_d(v);
    }
    return specials[g_rand_int_range(r, 0, G_N_ELEMENTS(specials))];
}

/* One half (binary16, or bfloat16 when bf): random bits, ordinary values, specials. */
static uint16_t gen_half(GRand *r, bool bf)
{
    static const uint16_t f16[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x0001, 0x03ff,
                                   0x0400, 0x7bff, 0x3c00, 0xbc00, 0x3800, 0x3bff};
    static const uint16_t b16[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x007f,
                                   0x0080, 0x7f7f, 0x3f80, 0xbf80, 0x3f00, 0x3f7f};
    unsigned pick = (unsigned)g_rand_int_range(r, 0, 10);
    if (pick < 3)
        return (uint16_t)g_rand_int(r);
    if (pick < 5)
        return bf ? b16[g_rand_int_range(r, 0, 13)] : f16[g_rand_int_range(r, 0, 13)];
    /* sign, an exponent near the middle, random mantissa */
    uint16_t sign = g_rand_boolean(r) ? 0x8000 : 0;
    if (bf)
        return sign | (uint16_t)(g_rand_int_range(r, 0x70, 0x90) << 7) | (uint16_t)g_rand_int_range(r, 0, 128);
    return sign | (uint16_t)(g_rand_int_range(r, 5, 26) << 10) | (uint16_t)g_rand_int_range(r, 0, 1024);
}

static uint64_t gen_value(GRand *r, op_gen g, const char *type)
{
    if (type && (g == GEN_FLOAT || g == GEN_POS) && strstr(type, "16") && type_is_float(type)) {
        bool bf = type[1] == 'b';
        uint64_t v = gen_half(r, bf);
        if (strstr(type, "x2"))
            v |= (uint64_t)gen_half(r, bf) << 16;
        return v;
    }
    unsigned bits = type_bits(type);
    switch (g) {
    case GEN_SMALL: return (uint64_t)g_rand_int_range(r, 0, 71);
    case GEN_POSLEN:
        return (uint64_t)g_rand_int_range(r, 0, 41) | (uint64_t)g_rand_int_range(r, 0, 41) << 8;
    case GEN_BOOL: return (uint64_t)g_rand_int_range(r, 0, 2);
    case GEN_INT: return gen_int(r, bits);
    default:
        if (!type_is_float(type) || bits == 16)
            return bits == 16 ? g_rand_int(r) & 0xffffu : gen_int(r, bits);
        return bits == 64 ? gen_float64(r, g) : gen_float32(r, g);
    }
}

/* ---- running ----------------------------------------------------------------------------------- */

static bool same_result(const op_case *c, uint64_t want, uint64_t got)
{
    unsigned bits = type_bits(c->dt);
    want &= width_mask(bits);
    got &= width_mask(bits);
    if (want == got)
        return true;
    /* double-precision NaNs: any NaN is accepted for a NaN */
    return strcmp(c->dt, ".f64") == 0 && isnan(dbits(want)) && isnan(dbits(got));
}

void op_run(const op_case *c)
{
    kemu_device_config dc = {.workers = 2};
    kemu_device *dev;
    kemu_error err = {0};
    g_assert_cmpint(kemu_device_create(&dc, &dev, &err), ==, 0);
    char *text = kernel_text(c);
    kemu_module *mod;
    if (kemu_module_load(dev, text, strlen(text), &mod, &err) != 0)
        g_error("%s: load: %s\n%s", c->name, err.message, text);
    kemu_function *fn;
    g_assert_cmpint(kemu_module_get_function(mod, "op_kernel", &fn, &err), ==, 0);
    kemu_function_info info;
    kemu_function_info_get(fn, &info);
    if (info.unsupported)
        g_error("%s: %s", c->name, info.unsupported);

    GRand *r = g_rand_new_with_seed(g_str_hash(c->name));
    static uint64_t in[N_INPUTS * 3], out[N_INPUTS];
    const char *types[3] = {c->at, c->bt, c->ct};
    for (unsigned i = 0; i < N_INPUTS; i++)
        for (unsigned k = 0; k < 3; k++)
            in[i * 3 + k] = types[k] ? gen_value(r, c->gen[k], types[k]) : 0;
    g_rand_free(r);

    kemu_devptr din, dout;
    g_assert_cmpint(kemu_mem_alloc(dev, sizeof in, &din, &err), ==, 0);
    g_assert_cmpint(kemu_mem_alloc(dev, sizeof out, &dout, &err), ==, 0);
    g_assert_cmpint(kemu_memcpy_htod(dev, din, in, sizeof in, &err), ==, 0);
    uint8_t params[20] = {0};
    uint32_t n = N_INPUTS;
    memcpy(params, &din, 8);
    memcpy(params + 8, &dout, 8);
    memcpy(params + 16, &n, 4);
    kemu_launch_config cfg = {.grid = {(N_INPUTS + BLOCK - 1) / BLOCK, 1, 1},
                              .block = {BLOCK, 1, 1}, .params = params,
                              .params_bytes = sizeof params};
    if (kemu_launch(fn, &cfg, &err) != 0)
        g_error("%s: launch: %s", c->name, err.message);
    g_assert_cmpint(kemu_memcpy_dtoh(dev, out, dout, sizeof out, &err), ==, 0);

    for (unsigned i = 0; i < N_INPUTS; i++) {
        uint64_t a = in[i * 3], b = in[i * 3 + 1], cc = in[i * 3 + 2];
        bool ok;
        uint64_t want = 0;
        if (c->ref) {
            want = c->ref(a, b, cc);
            ok = same_result(c, want, out[i]);
        } else {
            ok = c->check(a, b, cc, out[i]);
        }
        if (!ok)
            g_error("%s: a=0x%llx b=0x%llx c=0x%llx: expected 0x%llx, emulator gave 0x%llx",
                    c->name, (unsigned long long)a, (unsigned long long)b,
                    (unsigned long long)cc, (unsigned long long)want,
                    (unsigned long long)out[i]);
    }
    kemu_module_unload(mod);
    kemu_device_destroy(dev);
    g_free(text);
}

static void run_case(gconstpointer data)
{
    op_run(data);
}

void op_add_tests(const char *prefix, const op_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *path = g_strdup_printf("%s/%s", prefix, cases[i].name);
        g_test_add_data_func(path, &cases[i], run_case);
        g_free(path);
    }
}
