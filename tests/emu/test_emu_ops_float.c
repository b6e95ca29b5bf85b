/* Floating-point instructions on the emulator against C over random operands (op_runner),
 * special values included: IEEE operations in all four rounding modes (the C side sets
 * them with fesetround; this file is built with -frounding-math), .ftz and .sat, min/max
 * with NaN, comparisons including the unordered ones, conversions with every rounding
 * (half precision against the CPU's F16C instructions), and the approximate instructions
 * against libm within the bounds docs/EMULATOR.md states. Single-precision NaN results
 * must be the canonical 0x7fffffff. */
#include "op_runner.h"

#include <fenv.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

static uint64_t c32(float r)
{
    return isnan(r) ? 0x7fffffffu : bits_f(r);
}

static float ftz(float x)
{
    return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

#define MODES(X, name, expr)                                                               \
    X(name##_rn, FE_TONEAREST, expr)                                                     \
    X(name##_rz, FE_TOWARDZERO, expr)                                                    \
    X(name##_rm, FE_DOWNWARD, expr)                                                      \
    X(name##_rp, FE_UPWARD, expr)

#define F32REF(name, mode, expr)                                                           \
    static uint64_t name(uint64_t A, uint64_t B, uint64_t C)                             \
    {                                                                                    \
        float a = fbits(A), b = fbits(B), c = fbits(C);                                  \
        (void)b;                                                                         \
        (void)c;                                                                         \
        fesetround(mode);                                                                \
        volatile float r = (expr);                                                       \
        fesetround(FE_TONEAREST);                                                        \
        return c32(r);                                                                   \
    }

#define F64REF(name, mode, expr)                                                           \
    static uint64_t name(uint64_t A, uint64_t B, uint64_t C)                             \
    {                                                                                    \
        double a = dbits(A), b = dbits(B), c = dbits(C);                                 \
        (void)b;                                                                         \
        (void)c;                                                                         \
        fesetround(mode);                                                                \
        volatile double r = (expr);                                                      \
        fesetround(FE_TONEAREST);                                                        \
        return bits_d(r);                                                                \
    }

MODES(F32REF, f_add, a + b)
MODES(F32REF, f_sub, a - b)
MODES(F32REF, f_mul, a * b)
MODES(F32REF, f_div, a / b)
MODES(F32REF, f_fma, fmaf(a, b, c))
MODES(F32REF, f_sqrt, sqrtf(a))
MODES(F32REF, f_rcp, 1.0f / a)
MODES(F64REF, d_add, a + b)
MODES(F64REF, d_sub, a - b)
MODES(F64REF, d_mul, a * b)
MODES(F64REF, d_div, a / b)
MODES(F64REF, d_fma, fma(a, b, c))
MODES(F64REF, d_sqrt, sqrt(a))
MODES(F64REF, d_rcp, 1.0 / a)

F32REF(f_add_ftz, FE_TONEAREST, ftz(ftz(a) + ftz(b)))
F32REF(f_mul_ftz, FE_TONEAREST, ftz(ftz(a) * ftz(b)))
F32REF(f_fma_ftz, FE_TONEAREST, ftz(fmaf(ftz(a), ftz(b), ftz(c))))
F32REF(f_div_ftz, FE_TONEAREST, ftz(ftz(a) / ftz(b)))
F32REF(f_sqrt_ftz, FE_TONEAREST, ftz(sqrtf(ftz(a))))

static float sat(float r)
{
    return r > 0.0f ? (r < 1.0f ? r : 1.0f) : 0.0f;
}

F32REF(f_add_sat, FE_TONEAREST, sat(a + b))
F32REF(f_mul_sat, FE_TONEAREST, sat(a * b))
F32REF(f_fma_sat, FE_TONEAREST, sat(fmaf(a, b, c)))

#define FIELDS3(t) t, t, t, t
#define FF {GEN_FLOAT, GEN_FLOAT, GEN_FLOAT}
#define CASES4(pre, body_fmt, t, n, ref)                                                   \
    {pre ".rn" t, body_fmt(".rn", t), t, t, n > 1 ? t : NULL, n > 2 ? t : NULL, FF, ref##_rn, NULL}, \
    {pre ".rz" t, body_fmt(".rz", t), t, t, n > 1 ? t : NULL, n > 2 ? t : NULL, FF, ref##_rz, NULL}, \
    {pre ".rm" t, body_fmt(".rm", t), t, t, n > 1 ? t : NULL, n > 2 ? t : NULL, FF, ref##_rm, NULL}, \
    {pre ".rp" t, body_fmt(".rp", t), t, t, n > 1 ? t : NULL, n > 2 ? t : NULL, FF, ref##_rp, NULL}

#define B_ADD(m, t) "add" m t " %d, %a, %b;"
#define B_SUB(m, t) "sub" m t " %d, %a, %b;"
#define B_MUL(m, t) "mul" m t " %d, %a, %b;"
#define B_DIV(m, t) "div" m t " %d, %a, %b;"
#define B_FMA(m, t) "fma" m t " %d, %a, %b, %c;"
#define B_SQRT(m, t) "sqrt" m t " %d, %a;"
#define B_RCP(m, t) "rcp" m t " %d, %a;"

static const op_case ieee_cases[] = {
    CASES4("add", B_ADD, ".f32", 2, f_add), CASES4("sub", B_SUB, ".f32", 2, f_sub),
    CASES4("mul", B_MUL, ".f32", 2, f_mul), CASES4("div", B_DIV, ".f32", 2, f_div),
    CASES4("fma", B_FMA, ".f32", 3, f_fma), CASES4("sqrt", B_SQRT, ".f32", 1, f_sqrt),
    CASES4("rcp", B_RCP, ".f32", 1, f_rcp),
    CASES4("add", B_ADD, ".f64", 2, d_add), CASES4("sub", B_SUB, ".f64", 2, d_sub),
    CASES4("mul", B_MUL, ".f64", 2, d_mul), CASES4("div", B_DIV, ".f64", 2, d_div),
    CASES4("fma", B_FMA, ".f64", 3, d_fma), CASES4("sqrt", B_SQRT, ".f64", 1, d_sqrt),
    CASES4("rcp", B_RCP, ".f64", 1, d_rcp),
    {"add.f32", "add.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, f_add_rn, NULL},
    {"mad.rn.f32", "mad.rn.f32 %d, %a, %b, %c;", FIELDS3(".f32"), FF, f_fma_rn, NULL},
    {"mul.f64", "mul.f64 %d, %a, %b;", ".f64", ".f64", ".f64", NULL, FF, d_mul_rn, NULL},
    {"add.ftz.f32", "add.ftz.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, f_add_ftz, NULL},
    {"mul.rn.ftz.f32", "mul.rn.ftz.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, f_mul_ftz, NULL},
    {"fma.rn.ftz.f32", "fma.rn.ftz.f32 %d, %a, %b, %c;", FIELDS3(".f32"), FF, f_fma_ftz, NULL},
    {"div.rn.ftz.f32", "div.rn.ftz.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, f_div_ftz, NULL},
    {"sqrt.rn.ftz.f32", "sqrt.rn.ftz.f32 %d, %a;", ".f32", ".f32", NULL, NULL, FF, f_sqrt_ftz, NULL},
    {"add.sat.f32", "add.sat.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, f_add_sat, NULL},
    {"mul.sat.f32", "mul.sat.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, f_mul_sat, NULL},
    {"fma.rn.sat.f32", "fma.rn.sat.f32 %d, %a, %b, %c;", FIELDS3(".f32"), FF, f_fma_sat, NULL},
};

/* ---- min, max, sign operations, testp ------------------------------------------------------------ */

static double minmax_ref(double a, double b, bool is_max, bool nan_prop, bool *nan)
{
    *nan = false;
    if (isnan(a) || isnan(b)) {
        if (nan_prop || (isnan(a) && isnan(b))) {
            *nan = true;
            return 0;
        }
        return isnan(a) ? b : a;
    }
    if (a == 0 && b == 0)   /* -0 is below +0 */
        return is_max ? (signbit(a) ? b : a) : (signbit(a) ? a : b);
    return is_max ? fmax(a, b) : fmin(a, b);
}

#define MINMAX32(name, is_max, nan_prop)                                                   \
    static uint64_t name(uint64_t a, uint64_t b, uint64_t c)                             \
    {                                                                                    \
        (void)c;                                                                         \
        bool nan;                                                                        \
        double r = minmax_ref(fbits(a), fbits(b), is_max, nan_prop, &nan);               \
        return nan ? 0x7fffffffu : bits_f((float)r);                                     \
    }

MINMAX32(r_min_f32, false, false)
MINMAX32(r_max_f32, true, false)
MINMAX32(r_min_nan_f32, false, true)
MINMAX32(r_max_nan_f32, true, true)

static uint64_t r_min_f64(uint64_t a, uint64_t b, uint64_t c)
{
    (void)c;
    bool nan;
    double r = minmax_ref(dbits(a), dbits(b), false, false, &nan);
    return nan ? 0x7ff8000000000000ull : bits_d(r);
}

static uint64_t r_abs_f32(uint64_t a, uint64_t b, uint64_t c) { (void)b; (void)c; return a & 0x7fffffffu; }
static uint64_t r_neg_f32(uint64_t a, uint64_t b, uint64_t c) { (void)b; (void)c; return (a ^ 0x80000000u) & 0xffffffffu; }
static uint64_t r_abs_f64(uint64_t a, uint64_t b, uint64_t c) { (void)b; (void)c; return a & ~(1ull << 63); }
static uint64_t r_neg_f64(uint64_t a, uint64_t b, uint64_t c) { (void)b; (void)c; return a ^ (1ull << 63); }
static uint64_t r_copysign_f32(uint64_t a, uint64_t b, uint64_t c)
{
    (void)c;
    return (b & 0x7fffffffu) | (a & 0x80000000u);
}
static uint64_t r_abs_ftz_f32(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    return bits_f(ftz(fbits(a))) & 0x7fffffffu;
}

#define TESTP(name, cond)                                                                  \
    static uint64_t name(uint64_t A, uint64_t b, uint64_t c)                             \
    {                                                                                    \
        (void)b;                                                                         \
        (void)c;                                                                         \
        float a = fbits(A);                                                              \
        return (cond);                                                                   \
    }

TESTP(r_finite, isfinite(a))
TESTP(r_infinite, isinf(a))
TESTP(r_number, !isnan(a))
TESTP(r_notanumber, isnan(a))
TESTP(r_normal, isnormal(a))
TESTP(r_subnormal, fpclassify(a) == FP_SUBNORMAL)

static const op_case misc_cases[] = {
    {"min.f32", "min.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, r_min_f32, NULL},
    {"max.f32", "max.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, r_max_f32, NULL},
    {"min.NaN.f32", "min.NaN.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, r_min_nan_f32, NULL},
    {"max.NaN.f32", "max.NaN.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, r_max_nan_f32, NULL},
    {"min.f64", "min.f64 %d, %a, %b;", ".f64", ".f64", ".f64", NULL, FF, r_min_f64, NULL},
    {"abs.f32", "abs.f32 %d, %a;", ".f32", ".f32", NULL, NULL, FF, r_abs_f32, NULL},
    {"abs.ftz.f32", "abs.ftz.f32 %d, %a;", ".f32", ".f32", NULL, NULL, FF, r_abs_ftz_f32, NULL},
    {"neg.f32", "neg.f32 %d, %a;", ".f32", ".f32", NULL, NULL, FF, r_neg_f32, NULL},
    {"abs.f64", "abs.f64 %d, %a;", ".f64", ".f64", NULL, NULL, FF, r_abs_f64, NULL},
    {"neg.f64", "neg.f64 %d, %a;", ".f64", ".f64", NULL, NULL, FF, r_neg_f64, NULL},
    {"copysign.f32", "copysign.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, r_copysign_f32, NULL},
    {"testp.finite", "testp.finite.f32 %d, %a;", ".pred", ".f32", NULL, NULL, FF, r_finite, NULL},
    {"testp.infinite", "testp.infinite.f32 %d, %a;", ".pred", ".f32", NULL, NULL, FF, r_infinite, NULL},
    {"testp.number", "testp.number.f32 %d, %a;", ".pred", ".f32", NULL, NULL, FF, r_number, NULL},
    {"testp.notanumber", "testp.notanumber.f32 %d, %a;", ".pred", ".f32", NULL, NULL, FF, r_notanumber, NULL},
    {"testp.normal", "testp.normal.f32 %d, %a;", ".pred", ".f32", NULL, NULL, FF, r_normal, NULL},
    {"testp.subnormal", "testp.subnormal.f32 %d, %a;", ".pred", ".f32", NULL, NULL, FF, r_subnormal, NULL},
};

/* ---- comparisons ---------------------------------------------------------------------------------- */

#define CMPREF(name, cond)                                                                 \
    static uint64_t name(uint64_t A, uint64_t B, uint64_t c)                             \
    {                                                                                    \
        (void)c;                                                                         \
        float a = fbits(A), b = fbits(B);                                                \
        bool un = isnan(a) || isnan(b);                                                  \
        (void)un;                                                                        \
        return (cond);                                                                   \
    }

CMPREF(c_eq, !un && a == b)
CMPREF(c_ne, !un && a != b)
CMPREF(c_lt, !un && a < b)
CMPREF(c_le, !un && a <= b)
CMPREF(c_gt, !un && a > b)
CMPREF(c_ge, !un && a >= b)
CMPREF(c_equ, un || a == b)
CMPREF(c_neu, un || a != b)
CMPREF(c_ltu, un || a < b)
CMPREF(c_leu, un || a <= b)
CMPREF(c_gtu, un || a > b)
CMPREF(c_geu, un || a >= b)
CMPREF(c_num, !un)
CMPREF(c_nan, un)
CMPREF(c_lt_ftz, !(isnan(a) || isnan(b)) && ftz(a) < ftz(b))

static uint64_t c_ge_f64(uint64_t A, uint64_t B, uint64_t c)
{
    (void)c;
    double a = dbits(A), b = dbits(B);
    return !isnan(a) && !isnan(b) && a >= b;
}

#define SETP(op, ref) {"setp." op ".f32", "setp." op ".f32 %d, %a, %b;", ".pred", ".f32", ".f32", NULL, FF, ref, NULL}
static const op_case cmp_cases[] = {
    SETP("eq", c_eq), SETP("ne", c_ne), SETP("lt", c_lt), SETP("le", c_le), SETP("gt", c_gt),
    SETP("ge", c_ge), SETP("equ", c_equ), SETP("neu", c_neu), SETP("ltu", c_ltu),
    SETP("leu", c_leu), SETP("gtu", c_gtu), SETP("geu", c_geu), SETP("num", c_num),
    SETP("nan", c_nan),
    {"setp.lt.ftz.f32", "setp.lt.ftz.f32 %d, %a, %b;", ".pred", ".f32", ".f32", NULL, FF, c_lt_ftz, NULL},
    {"setp.ge.f64", "setp.ge.f64 %d, %a, %b;", ".pred", ".f64", ".f64", NULL, FF, c_ge_f64, NULL},
};

/* ---- conversions ----------------------------------------------------------------------------------- */

enum { RNI, RZI, RMI, RPI };

static double round_int(double x, int r)
{
    switch (r) {
    case RNI: return nearbyint(x);
    case RZI: return trunc(x);
    case RMI: return floor(x);
    default: return ceil(x);
    }
}

static uint64_t f2i(double x, int r, unsigned bits, bool sgn, bool src64)
{
    uint64_t m = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    if (isnan(x))
        return (src64 || bits == 64) ? 1ull << (bits - 1) : 0;
    double v = round_int(x, r);
    if (sgn) {
        double lo = -ldexp(1, (int)bits - 1), hi = ldexp(1, (int)bits - 1);
        if (v <= lo)
            return (1ull << (bits - 1)) & m;
        if (v >= hi)
            return ((1ull << (bits - 1)) - 1) & m;
        return (uint64_t)(int64_t)v & m;
    }
    if (v <= 0)
        return 0;
    if (v >= ldexp(1, (int)bits))
        return m;
    return (uint64_t)v;
}

#define F2I(name, r, bits, sgn, src64)                                                     \
    static uint64_t name(uint64_t a, uint64_t b, uint64_t c)                             \
    {                                                                                    \
        (void)b;                                                                         \
        (void)c;                                                                         \
        double x = src64 ? dbits(a) : (double)fbits(a);                                  \
        return f2i(x, r, bits, sgn, src64);                                              \
    }

F2I(r_cvt_rni_s32_f32, RNI, 32, true, false)
F2I(r_cvt_rzi_s32_f32, RZI, 32, true, false)
F2I(r_cvt_rmi_s32_f32, RMI, 32, true, false)
F2I(r_cvt_rpi_s32_f32, RPI, 32, true, false)
F2I(r_cvt_rzi_u32_f32, RZI, 32, false, false)
F2I(r_cvt_rzi_s64_f64, RZI, 64, true, true)
F2I(r_cvt_rni_u64_f64, RNI, 64, false, true)
F2I(r_cvt_rzi_s64_f32, RZI, 64, true, false)
F2I(r_cvt_rni_s32_f64, RNI, 32, true, true)

static uint64_t r_cvt_rzi_s16_f32(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    return f2i(fbits(a), RZI, 16, true, false) & 0xffffu;
}

#define I2F(name, mode, T, expr_type, cast)                                                \
    static uint64_t name(uint64_t a, uint64_t b, uint64_t c)                             \
    {                                                                                    \
        (void)b;                                                                         \
        (void)c;                                                                         \
        fesetround(mode);                                                                \
        volatile T r = (T)(cast)a;                                                       \
        fesetround(FE_TONEAREST);                                                        \
        return expr_type(r);                                                             \
    }

I2F(r_cvt_rn_f32_s32, FE_TONEAREST, float, bits_f, int32_t)
I2F(r_cvt_rz_f32_u32, FE_TOWARDZERO, float, bits_f, uint32_t)
I2F(r_cvt_rm_f32_s64, FE_DOWNWARD, float, bits_f, int64_t)
I2F(r_cvt_rp_f32_u64, FE_UPWARD, float, bits_f, uint64_t)
I2F(r_cvt_rn_f64_s64, FE_TONEAREST, double, bits_d, int64_t)
I2F(r_cvt_rz_f64_u64, FE_TOWARDZERO, double, bits_d, uint64_t)

#define D2F(name, mode)                                                                    \
    static uint64_t name(uint64_t a, uint64_t b, uint64_t c)                             \
    {                                                                                    \
        (void)b;                                                                         \
        (void)c;                                                                         \
        fesetround(mode);                                                                \
        volatile float r = (float)dbits(a);                                              \
        fesetround(FE_TONEAREST);                                                        \
        return c32(r);                                                                   \
    }

D2F(r_cvt_rn_f32_f64, FE_TONEAREST)
D2F(r_cvt_rz_f32_f64, FE_TOWARDZERO)
D2F(r_cvt_rm_f32_f64, FE_DOWNWARD)
D2F(r_cvt_rp_f32_f64, FE_UPWARD)

static uint64_t r_cvt_f64_f32(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    return bits_d((double)fbits(a));
}

F32REF(r_cvt_rni_f32_f32, FE_TONEAREST, nearbyintf(a))
F32REF(r_cvt_rzi_f32_f32, FE_TONEAREST, truncf(a))
F32REF(r_cvt_rmi_f32_f32, FE_TONEAREST, floorf(a))
F32REF(r_cvt_rpi_f32_f32, FE_TONEAREST, ceilf(a))
F32REF(r_cvt_sat_f32_f32, FE_TONEAREST, sat(a))
F32REF(r_cvt_ftz_f32_f32, FE_TONEAREST, ftz(a))
F64REF(r_cvt_rmi_f64_f64, FE_TONEAREST, floor(a))

/* Half precision by the CPU's F16C conversions (exact, with an explicit rounding). */
__attribute__((target("f16c"))) static uint16_t f16_of(float x, int rnd)
{
    switch (rnd) {
    case 0: return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    case 1: return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    case 2: return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    default: return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    }
}

__attribute__((target("f16c"))) static float f32_of_f16(uint16_t h)
{
    return _cvtsh_ss(h);
}

#define F2H(name, rnd)                                                                     \
    static uint64_t name(uint64_t a, uint64_t b, uint64_t c)                             \
    {                                                                                    \
        (void)b;                                                                         \
        (void)c;                                                                         \
        return isnan(fbits(a)) ? 0x7fff : f16_of(fbits(a), rnd);                         \
    }

F2H(r_cvt_rn_f16_f32, 0)
F2H(r_cvt_rz_f16_f32, 1)
F2H(r_cvt_rm_f16_f32, 2)
F2H(r_cvt_rp_f16_f32, 3)

static uint64_t r_cvt_f32_f16(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    return c32(f32_of_f16((uint16_t)a));
}

static uint64_t r_cvt_rn_f16x2_f32(uint64_t a, uint64_t b, uint64_t c)
{
    return (r_cvt_rn_f16_f32(a, 0, c) << 16) | r_cvt_rn_f16_f32(b, 0, c);
}

static uint64_t r_cvt_rn_bf16_f32(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    uint32_t x = (uint32_t)a;
    if (isnan(fbits(a)))
        return 0x7fff;
    return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

static uint64_t r_cvt_rz_bf16_f32(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    return isnan(fbits(a)) ? 0x7fff : (uint32_t)a >> 16;
}

static uint64_t r_cvt_f32_bf16(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    return c32(fbits((uint32_t)(a & 0xffffu) << 16));
}

#define CVT(name, dt, at, gen, ref) {name, name " %d, %a;", dt, at, NULL, NULL, {gen}, ref, NULL}
static const op_case cvt_cases[] = {
    CVT("cvt.rni.s32.f32", ".s32", ".f32", GEN_INTF, r_cvt_rni_s32_f32),
    CVT("cvt.rzi.s32.f32", ".s32", ".f32", GEN_INTF, r_cvt_rzi_s32_f32),
    CVT("cvt.rmi.s32.f32", ".s32", ".f32", GEN_INTF, r_cvt_rmi_s32_f32),
    CVT("cvt.rpi.s32.f32", ".s32", ".f32", GEN_INTF, r_cvt_rpi_s32_f32),
    CVT("cvt.rzi.u32.f32", ".u32", ".f32", GEN_INTF, r_cvt_rzi_u32_f32),
    CVT("cvt.rzi.s64.f64", ".s64", ".f64", GEN_INTF, r_cvt_rzi_s64_f64),
    CVT("cvt.rni.u64.f64", ".u64", ".f64", GEN_INTF, r_cvt_rni_u64_f64),
    CVT("cvt.rzi.s64.f32", ".s64", ".f32", GEN_INTF, r_cvt_rzi_s64_f32),
    CVT("cvt.rni.s32.f64", ".s32", ".f64", GEN_INTF, r_cvt_rni_s32_f64),
    CVT("cvt.rzi.s16.f32", ".s16", ".f32", GEN_INTF, r_cvt_rzi_s16_f32),
    CVT("cvt.rn.f32.s32", ".f32", ".s32", GEN_INT, r_cvt_rn_f32_s32),
    CVT("cvt.rz.f32.u32", ".f32", ".u32", GEN_INT, r_cvt_rz_f32_u32),
    CVT("cvt.rm.f32.s64", ".f32", ".s64", GEN_INT, r_cvt_rm_f32_s64),
    CVT("cvt.rp.f32.u64", ".f32", ".u64", GEN_INT, r_cvt_rp_f32_u64),
    CVT("cvt.rn.f64.s64", ".f64", ".s64", GEN_INT, r_cvt_rn_f64_s64),
    CVT("cvt.rz.f64.u64", ".f64", ".u64", GEN_INT, r_cvt_rz_f64_u64),
    CVT("cvt.rn.f32.f64", ".f32", ".f64", GEN_FLOAT, r_cvt_rn_f32_f64),
    CVT("cvt.rz.f32.f64", ".f32", ".f64", GEN_FLOAT, r_cvt_rz_f32_f64),
    CVT("cvt.rm.f32.f64", ".f32", ".f64", GEN_FLOAT, r_cvt_rm_f32_f64),
    CVT("cvt.rp.f32.f64", ".f32", ".f64", GEN_FLOAT, r_cvt_rp_f32_f64),
    CVT("cvt.f64.f32", ".f64", ".f32", GEN_FLOAT, r_cvt_f64_f32),
    CVT("cvt.rni.f32.f32", ".f32", ".f32", GEN_INTF, r_cvt_rni_f32_f32),
    CVT("cvt.rzi.f32.f32", ".f32", ".f32", GEN_INTF, r_cvt_rzi_f32_f32),
    CVT("cvt.rmi.f32.f32", ".f32", ".f32", GEN_INTF, r_cvt_rmi_f32_f32),
    CVT("cvt.rpi.f32.f32", ".f32", ".f32", GEN_INTF, r_cvt_rpi_f32_f32),
    CVT("cvt.rmi.f64.f64", ".f64", ".f64", GEN_INTF, r_cvt_rmi_f64_f64),
    CVT("cvt.sat.f32.f32", ".f32", ".f32", GEN_FLOAT, r_cvt_sat_f32_f32),
    CVT("cvt.ftz.f32.f32", ".f32", ".f32", GEN_FLOAT, r_cvt_ftz_f32_f32),
    CVT("cvt.rn.f16.f32", ".f16", ".f32", GEN_FLOAT, r_cvt_rn_f16_f32),
    CVT("cvt.rz.f16.f32", ".f16", ".f32", GEN_FLOAT, r_cvt_rz_f16_f32),
    CVT("cvt.rm.f16.f32", ".f16", ".f32", GEN_FLOAT, r_cvt_rm_f16_f32),
    CVT("cvt.rp.f16.f32", ".f16", ".f32", GEN_FLOAT, r_cvt_rp_f16_f32),
    CVT("cvt.f32.f16", ".f32", ".f16", GEN_FLOAT, r_cvt_f32_f16),
    CVT("cvt.rn.bf16.f32", ".bf16", ".f32", GEN_FLOAT, r_cvt_rn_bf16_f32),
    CVT("cvt.rz.bf16.f32", ".bf16", ".f32", GEN_FLOAT, r_cvt_rz_bf16_f32),
    CVT("cvt.f32.bf16", ".f32", ".bf16", GEN_FLOAT, r_cvt_f32_bf16),
    {"cvt.rn.f16x2.f32", "cvt.rn.f16x2.f32 %d, %a, %b;", ".b32", ".f32", ".f32", NULL, FF, r_cvt_rn_f16x2_f32, NULL},
};

/* ---- half-precision arithmetic ----------------------------------------------------------------- */

/* The value of a half (bf: bfloat16) exactly. */
static __float128 half_value(uint16_t h, bool bf)
{
    return bf ? (__float128)fbits((uint64_t)h << 16) : (__float128)f32_of_f16(h);
}

/* Orders halves by value as integers (sign-magnitude to two's complement). */
static int32_t half_key(uint16_t h)
{
    return (h & 0x8000u) ? -(int32_t)(h & 0x7fffu) : (int32_t)h;
}

static uint16_t half_of_key(int32_t k)
{
    return k < 0 ? (uint16_t)(0x8000u | (uint32_t)-k) : (uint16_t)k;
}

/* The half nearest to the exact value r, ties to even, by search among neighbours. */
static uint16_t half_nearest(__float128 r, bool bf)
{
    if (r != r)
        return 0x7fff;
    uint16_t inf = bf ? 0x7f80 : 0x7c00, maxf = bf ? 0x7f7f : 0x7bff;
    __float128 m = half_value(maxf, bf), ulp = m - half_value(maxf - 1, bf);
    if (r >= m + ulp / 2)
        return inf;
    if (r <= -(m + ulp / 2))
        return inf | 0x8000;
    float approx = (float)(double)r;
    uint16_t h0 = bf ? (uint16_t)(bits_f(approx) >> 16) : f16_of(approx, 1);
    int32_t k0 = half_key(h0), best = k0;
    __float128 best_d = -1;
    for (int32_t k = k0 - 3; k <= k0 + 3; k++) {
        uint16_t h = half_of_key(k);
        if ((h & 0x7fffu) > maxf)
            continue;
        __float128 d = half_value(h, bf) - r;
        if (d < 0)
            d = -d;
        if (best_d < 0 || d < best_d || (d == best_d && (h & 1u) == 0)) {
            best = k;
            best_d = d;
        }
    }
    uint16_t h = half_of_key(best);
    if ((h & 0x7fffu) == 0)   /* rounded to zero: the sign of the exact value */
        h = r < 0 ? 0x8000 : 0;
    return h;
}

enum { HA_ADD, HA_SUB, HA_MUL, HA_FMA };

static uint16_t half_ref1(int op, uint16_t a, uint16_t b, uint16_t c, bool bf, bool ftz, bool sat)
{
    uint16_t in[3] = {a, b, c};
    __float128 v[3];
    for (int i = 0; i < 3; i++) {
        if (ftz && (in[i] & 0x7c00u) == 0)
            in[i] &= 0x8000u;
        v[i] = half_value(in[i], bf);
    }
    __float128 r = op == HA_ADD ? v[0] + v[1] : op == HA_SUB ? v[0] - v[1]
                 : op == HA_MUL ? v[0] * v[1] : v[0] * v[1] + v[2];
    if (r == 0) {   /* the sign of an exact zero as IEEE gives it */
        double z = op == HA_ADD ? (double)v[0] + (double)v[1]
                 : op == HA_SUB ? (double)v[0] - (double)v[1]
                 : op == HA_MUL ? (double)v[0] * (double)v[1]
                                : fma((double)v[0], (double)v[1], (double)v[2]);
        return signbit(z) && !sat ? 0x8000 : 0;   /* .sat gives +0 */
    }
    if (sat)
        r = r != r ? 0 : r < 0 ? 0 : r > 1 ? 1 : r;
    uint16_t h = half_nearest(r, bf);
    if (ftz && (h & 0x7c00u) == 0)
        h &= 0x8000u;
    return h;
}

#define HREF(name, op, parts, bf, ftz, sat)                                                \
    static uint64_t name(uint64_t a, uint64_t b, uint64_t c)                             \
    {                                                                                    \
        uint64_t r = 0;                                                                  \
        for (int p = 0; p < parts; p++)                                                  \
            r |= (uint64_t)half_ref1(op, (uint16_t)(a >> 16 * p), (uint16_t)(b >> 16 * p), \
                                     (uint16_t)(c >> 16 * p), bf, ftz, sat) << 16 * p;   \
        return r;                                                                        \
    }

HREF(h_add, HA_ADD, 1, false, false, false)
HREF(h_sub, HA_SUB, 1, false, false, false)
HREF(h_mul, HA_MUL, 1, false, false, false)
HREF(h_fma, HA_FMA, 1, false, false, false)
HREF(h_add_ftz, HA_ADD, 1, false, true, false)
HREF(h_fma_sat, HA_FMA, 1, false, false, true)
HREF(h2_add, HA_ADD, 2, false, false, false)
HREF(h2_fma, HA_FMA, 2, false, false, false)
HREF(b_add, HA_ADD, 1, true, false, false)
HREF(b_fma, HA_FMA, 1, true, false, false)
HREF(b2_mul, HA_MUL, 2, true, false, false)

static uint64_t h_neg(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    return (a ^ 0x8000u) & 0xffffu;
}

static uint64_t h2_abs(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    return a & 0x7fff7fffu;
}

static uint16_t half_minmax(uint16_t a, uint16_t b, bool is_max)
{
    float x = f32_of_f16(a), y = f32_of_f16(b);
    if (isnan(x) && isnan(y))
        return 0x7fff;
    if (isnan(x) || isnan(y))
        return isnan(x) ? b : a;
    if (x == 0 && y == 0)
        return is_max ? ((a & 0x8000u) ? b : a) : ((a & 0x8000u) ? a : b);
    return (is_max ? x > y : x < y) ? a : b;
}

static uint64_t h_min(uint64_t a, uint64_t b, uint64_t c)
{
    (void)c;
    return half_minmax((uint16_t)a, (uint16_t)b, false);
}

static uint64_t h2_max(uint64_t a, uint64_t b, uint64_t c)
{
    (void)c;
    return half_minmax((uint16_t)a, (uint16_t)b, true) |
           (uint64_t)half_minmax((uint16_t)(a >> 16), (uint16_t)(b >> 16), true) << 16;
}

#define HC(name, body, t, n, ref)                                                          \
    {name, body, t, t, n > 1 ? t : NULL, n > 2 ? t : NULL, FF, ref, NULL}
static const op_case half_cases[] = {
    HC("add.rn.f16", "add.rn.f16 %d, %a, %b;", ".f16", 2, h_add),
    HC("sub.f16", "sub.f16 %d, %a, %b;", ".f16", 2, h_sub),
    HC("mul.rn.f16", "mul.rn.f16 %d, %a, %b;", ".f16", 2, h_mul),
    HC("fma.rn.f16", "fma.rn.f16 %d, %a, %b, %c;", ".f16", 3, h_fma),
    HC("add.ftz.f16", "add.ftz.f16 %d, %a, %b;", ".f16", 2, h_add_ftz),
    HC("fma.rn.sat.f16", "fma.rn.sat.f16 %d, %a, %b, %c;", ".f16", 3, h_fma_sat),
    HC("add.rn.f16x2", "add.rn.f16x2 %d, %a, %b;", ".f16x2", 2, h2_add),
    HC("fma.rn.f16x2", "fma.rn.f16x2 %d, %a, %b, %c;", ".f16x2", 3, h2_fma),
    HC("add.rn.bf16", "add.rn.bf16 %d, %a, %b;", ".bf16", 2, b_add),
    HC("fma.rn.bf16", "fma.rn.bf16 %d, %a, %b, %c;", ".bf16", 3, b_fma),
    HC("mul.rn.bf16x2", "mul.rn.bf16x2 %d, %a, %b;", ".bf16x2", 2, b2_mul),
    HC("neg.f16", "neg.f16 %d, %a;", ".f16", 1, h_neg),
    HC("abs.f16x2", "abs.f16x2 %d, %a;", ".f16x2", 1, h2_abs),
    HC("min.f16", "min.f16 %d, %a, %b;", ".f16", 2, h_min),
    HC("max.f16x2", "max.f16x2 %d, %a, %b;", ".f16x2", 2, h2_max),
};

/* ---- approximate instructions: within the documented bounds ------------------------------------- */

/* got (single precision bits) within max_ulps of exact, or the same special value. */
static bool ulp_close(uint64_t got_bits, double exact, double max_ulps, double abs_tol)
{
    float got = fbits(got_bits);
    if (isnan(exact))
        return (uint32_t)got_bits == 0x7fffffffu;
    if (isinf(exact) || isinf(got))
        return got == (float)exact;
    double err = fabs((double)got - exact);
    if (err <= abs_tol)
        return true;
    int e;
    frexp(exact == 0 ? ldexp(1, -126) : exact, &e);
    double ulp = ldexp(1.0, (e - 24 < -149 ? -149 : e - 24));
    return err <= max_ulps * ulp;
}

#define APPROX(name, in_ftz, exact_expr, ulps, abs_tol)                                    \
    static bool name(uint64_t A, uint64_t B, uint64_t C, uint64_t got)                   \
    {                                                                                    \
        (void)C;                                                                         \
        double a = in_ftz ? ftz(fbits(A)) : fbits(A), b = fbits(B);                      \
        (void)b;                                                                         \
        double exact = (exact_expr);                                                     \
        if (in_ftz && fpclassify((float)exact) == FP_SUBNORMAL)                          \
            return (uint32_t)got == bits_f(copysignf(0.0f, (float)exact));               \
        return ulp_close(got, exact, ulps, abs_tol);                                     \
    }

APPROX(k_ex2, false, exp2(a), 1.0, 0)
APPROX(k_ex2_ftz, true, exp2(a), 1.0, 0)
APPROX(k_lg2, false, log2(a), 1.0, 0)
APPROX(k_sin, false, sin(a), 1.0, 0x1p-22)
APPROX(k_cos, false, cos(a), 1.0, 0x1p-22)
APPROX(k_rsqrt, false, 1.0 / sqrt(a), 1.0, 0)
APPROX(k_sqrt, false, sqrt(a), 0.5, 0)
APPROX(k_rcp, false, 1.0 / a, 0.5, 0)
APPROX(k_div_approx, false, a / b, 2.0, 0)
APPROX(k_div_full, false, a / b, 2.0, 0)
APPROX(k_tanh, false, tanh(a), 1.0, 0)

/* rcp.approx.ftz.f64: from the upper word of a, low 32 bits of the result zero, within
 * the 20 mantissa bits it keeps; subnormals flushed, NaN canonical. */
static bool gross_check(uint64_t a, uint64_t got, bool is_rsqrt)
{
    if ((uint32_t)got != 0)
        return false;
    double x = dbits(a & 0xffffffff00000000ull);
    if (fpclassify(x) == FP_SUBNORMAL)
        x = copysign(0.0, x);
    double exact = is_rsqrt ? 1.0 / sqrt(x) : 1.0 / x, g = dbits(got);
    if (isnan(exact))
        return got == 0x7fffffff00000000ull;
    if (isinf(exact) || exact == 0 || fpclassify(exact) == FP_SUBNORMAL)
        return g == (fpclassify(exact) == FP_SUBNORMAL ? copysign(0.0, exact) : exact);
    return fabs(g - exact) <= fabs(exact) * 0x1p-20;
}

static bool k_rcp_f64(uint64_t a, uint64_t b, uint64_t c, uint64_t got)
{
    (void)b;
    (void)c;
    return gross_check(a, got, false);
}

static bool k_rsqrt_f64(uint64_t a, uint64_t b, uint64_t c, uint64_t got)
{
    (void)b;
    (void)c;
    return gross_check(a, got, true);
}

#define APX(name, dt, gen, check) {name, name " %d, %a;", dt, dt, NULL, NULL, {gen}, NULL, check}
static const op_case approx_cases[] = {
    APX("ex2.approx.f32", ".f32", GEN_ANGLE, k_ex2),
    APX("ex2.approx.ftz.f32", ".f32", GEN_FLOAT, k_ex2_ftz),
    APX("lg2.approx.f32", ".f32", GEN_POS, k_lg2),
    APX("sin.approx.f32", ".f32", GEN_ANGLE, k_sin),
    APX("cos.approx.f32", ".f32", GEN_ANGLE, k_cos),
    APX("rsqrt.approx.f32", ".f32", GEN_POS, k_rsqrt),
    APX("sqrt.approx.f32", ".f32", GEN_POS, k_sqrt),
    APX("rcp.approx.f32", ".f32", GEN_FLOAT, k_rcp),
    APX("tanh.approx.f32", ".f32", GEN_ANGLE, k_tanh),
    APX("rcp.approx.ftz.f64", ".f64", GEN_FLOAT, k_rcp_f64),
    APX("rsqrt.approx.ftz.f64", ".f64", GEN_POS, k_rsqrt_f64),
    {"div.approx.f32", "div.approx.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, NULL, k_div_approx},
    {"div.full.f32", "div.full.f32 %d, %a, %b;", ".f32", ".f32", ".f32", NULL, FF, NULL, k_div_full},
};

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    op_add_tests("/emu/ops/ieee", ieee_cases, G_N_ELEMENTS(ieee_cases));
    op_add_tests("/emu/ops/float-misc", misc_cases, G_N_ELEMENTS(misc_cases));
    op_add_tests("/emu/ops/float-compare", cmp_cases, G_N_ELEMENTS(cmp_cases));
    op_add_tests("/emu/ops/cvt-float", cvt_cases, G_N_ELEMENTS(cvt_cases));
    op_add_tests("/emu/ops/approx", approx_cases, G_N_ELEMENTS(approx_cases));
    op_add_tests("/emu/ops/half", half_cases, G_N_ELEMENTS(half_cases));
    return g_test_run();
}
