/* Floating-point arithmetic: add, sub, mul, fma/mad, div, min, max, neg, abs, copysign,
 * testp, rcp, sqrt, rsqrt and the approximate sin, cos, lg2, ex2, tanh.
 *
 * Built with -frounding-math -ffp-contract=off: every operation rounds once, in the mode
 * the instruction names (.rn .rz .rm .rp, set with fesetround around the lane loop).
 * .rn, .rz, .rm, .rp results are exact IEEE-754 (fma through the C library's fma, which
 * is correctly rounded). Approximate instructions compute in double precision and round
 * to single: they are at least as accurate as the PTX ISA promises (docs/EMULATOR.md).
 * .ftz flushes subnormal inputs and results to sign-preserving zero; .sat clamps to
 * [0, 1] with NaN to +0; NaN results of single-precision operations are the canonical
 * NaN 0x7fffffff, as the GPU gives.
 */
#include "emu_fp.h"
#include "emu_ops.h"

#include <fenv.h>

enum { F_ADD = 1, F_SUB, F_MUL, F_DIV, F_MIN, F_MAX, F_FMA, F_NEG, F_ABS, F_RCP, F_SQRT,
       F_RSQRT, F_SIN, F_COS, F_LG2, F_EX2, F_TANH, F_COPYSIGN, F_TESTP };

static inline float in32(uint64_t v, bool ftz)
{
    float f = emu_f32(v);
    return ftz ? emu_ftz32(f) : f;
}

static inline uint64_t out32(float r, uint16_t flags)
{
    if (flags & EMU_F_SAT)
        r = r > 0.0f ? (r < 1.0f ? r : 1.0f) : 0.0f;   /* NaN and -0 give +0 */
    if (flags & EMU_F_FTZ)
        r = emu_ftz32(r);
    if (isnan(r))
        return 0x7fffffffu;
    return emu_bits32(r);
}

static inline uint64_t out64(double r, uint16_t flags)
{
    if (flags & EMU_F_SAT)
        r = r > 0.0 ? (r < 1.0 ? r : 1.0) : 0.0;
    return emu_bits64(r);
}

int emu_round_begin(unsigned rnd)
{
    int mode;
    switch (rnd) {
    case EMU_RND_RZ: mode = FE_TOWARDZERO; break;
    case EMU_RND_RM: mode = FE_DOWNWARD; break;
    case EMU_RND_RP: mode = FE_UPWARD; break;
    default: return -1;
    }
    int old = fegetround();
    fesetround(mode);
    return old;
}

void emu_round_end(int old)
{
    if (old >= 0)
        fesetround(old);
}

/* min/max with PTX's rules: a NaN operand is ignored (.NaN: propagates), -0 < +0. */
static inline double minmax(double a, double b, bool is_max, bool nan_prop, bool *nan)
{
    *nan = false;
    if (isnan(a) || isnan(b)) {
        if (nan_prop || (isnan(a) && isnan(b))) {
            *nan = true;
            return a;
        }
        return isnan(a) ? b : a;
    }
    if (a == b && a == 0.0)
        return (signbit(a) != 0) == !is_max ? a : b;
    return is_max ? (a > b ? a : b) : (a < b ? a : b);
}

/* ---- Fast paths: round to nearest, no flags --------------------------------------------- */

static inline uint64_t canon32(float r)
{
    return isnan(r) ? 0x7fffffffu : emu_bits32(r);
}

/* A handler for d = expr over operands of float type T read by FROM, written by TO. */
#define FAST_FP(name, T, FROM, TO, expr)                                                 \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        EMU_DST;                                                                         \
        EMU_SRC(0);                                                                      \
        EMU_SRC(1);                                                                      \
        const uint64_t *s2 = in->n_src > 2 ? EMU_REG(w, in->src[2]) : s1;                \
        EMU_FOR_LANES(mask, l, {                                                         \
            T a = FROM(s0[l]), b = FROM(s1[l]), c = FROM(s2[l]);                         \
            (void)c;                                                                     \
            d[l] = TO(expr);                                                             \
        });                                                                              \
        return 0;                                                                        \
    }

FAST_FP(add_f32, float, emu_f32, canon32, a + b)
FAST_FP(sub_f32, float, emu_f32, canon32, a - b)
FAST_FP(mul_f32, float, emu_f32, canon32, a * b)
FAST_FP(fma_f32, float, emu_f32, canon32, fmaf(a, b, c))
FAST_FP(add_f64, double, emu_f64, emu_bits64, a + b)
FAST_FP(sub_f64, double, emu_f64, emu_bits64, a - b)
FAST_FP(mul_f64, double, emu_f64, emu_bits64, a * b)
FAST_FP(fma_f64, double, emu_f64, emu_bits64, fma(a, b, c))

/* ---- General single precision -------------------------------------------------------------- */

static float apply32(unsigned op, float a, float b, float c, uint16_t flags, bool *nan)
{
    *nan = false;
    switch (op) {
    case F_ADD: return a + b;
    case F_SUB: return a - b;
    case F_MUL: return a * b;
    case F_DIV: return a / b;
    case F_FMA: return fmaf(a, b, c);
    case F_MIN: case F_MAX:
        return (float)minmax(a, b, op == F_MAX, flags & EMU_F_NAN, nan);
    case F_RCP: return 1.0f / a;
    case F_SQRT: return sqrtf(a);
    case F_RSQRT: return (float)(1.0 / sqrt((double)a));
    case F_SIN: return (float)sin((double)a);
    case F_COS: return (float)cos((double)a);
    case F_LG2: return (float)log2((double)a);
    case F_EX2: return (float)exp2((double)a);
    case F_TANH: return (float)tanh((double)a);
    default: return a;
    }
}

static int gen_f32(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    const uint64_t *s1 = in->n_src > 1 ? EMU_REG(w, in->src[1]) : s0;
    const uint64_t *s2 = in->n_src > 2 ? EMU_REG(w, in->src[2]) : s0;
    const bool ftz = in->flags & EMU_F_FTZ;
    int old = emu_round_begin(in->rnd);
    EMU_FOR_LANES(mask, l, {
        bool nan;
        float r = apply32(in->op, in32(s0[l], ftz), in32(s1[l], ftz), in32(s2[l], ftz),
                          in->flags, &nan);
        d[l] = nan ? 0x7fffffffu : out32(r, in->flags);
    });
    emu_round_end(old);
    return 0;
}

/* neg, abs, copysign: sign manipulation, NaN payloads kept. */
static int sign_f32(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    const uint64_t *s1 = in->n_src > 1 ? EMU_REG(w, in->src[1]) : s0;
    const bool ftz = in->flags & EMU_F_FTZ;
    EMU_FOR_LANES(mask, l, {
        uint32_t a = (uint32_t)emu_bits32(in32(s0[l], ftz));
        uint32_t r = in->op == F_NEG ? a ^ 0x80000000u
                   : in->op == F_ABS ? a & 0x7fffffffu
                                     : ((uint32_t)s1[l] & 0x7fffffffu) | (a & 0x80000000u);
        d[l] = r;
    });
    return 0;
}

static int sign_f64(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    const uint64_t *s1 = in->n_src > 1 ? EMU_REG(w, in->src[1]) : s0;
    const uint64_t sign = 1ull << 63;
    EMU_FOR_LANES(mask, l, {
        uint64_t a = s0[l];
        d[l] = in->op == F_NEG ? a ^ sign
             : in->op == F_ABS ? a & ~sign
                               : (s1[l] & ~sign) | (a & sign);
    });
    return 0;
}

/* ---- General double precision -------------------------------------------------------------- */

static double apply64(unsigned op, double a, double b, double c, uint16_t flags, bool *nan)
{
    *nan = false;
    switch (op) {
    case F_ADD: return a + b;
    case F_SUB: return a - b;
    case F_MUL: return a * b;
    case F_DIV: return a / b;
    case F_FMA: return fma(a, b, c);
    case F_MIN: case F_MAX: return minmax(a, b, op == F_MAX, flags & EMU_F_NAN, nan);
    case F_RCP: return 1.0 / a;
    case F_SQRT: return sqrt(a);
    case F_RSQRT: return 1.0 / sqrt(a);
    default: return a;
    }
}

/* rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64: the ISA's gross approximations work on the
 * upper word of the operand (sign, exponent, 20 mantissa bits) and return a result whose
 * low 32 bits are zero. Here: the exact value for that upper word, truncated to it.
 * Subnormals flush to zero, NaN gives 0x7fffffff00000000. */
static uint64_t gross64(unsigned op, uint64_t a)
{
    const uint64_t hi = 0xffffffff00000000ull;
    double x = emu_f64(a & hi);
    if (fpclassify(x) == FP_SUBNORMAL)
        x = copysign(0.0, x);
    double r = op == F_RCP ? 1.0 / x : 1.0 / sqrt(x);
    if (isnan(r))
        return 0x7fffffff00000000ull;
    if (fpclassify(r) == FP_SUBNORMAL)
        r = copysign(0.0, r);
    return emu_bits64(r) & hi;
}

static int gen_f64(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    const uint64_t *s1 = in->n_src > 1 ? EMU_REG(w, in->src[1]) : s0;
    const uint64_t *s2 = in->n_src > 2 ? EMU_REG(w, in->src[2]) : s0;
    if ((in->op == F_RCP || in->op == F_RSQRT) && (in->flags & EMU_F_FTZ) &&
        in->rnd == EMU_RND_NONE) {
        EMU_FOR_LANES(mask, l, d[l] = gross64(in->op, s0[l]));
        return 0;
    }
    int old = emu_round_begin(in->rnd);
    EMU_FOR_LANES(mask, l, {
        bool nan;
        double r = apply64(in->op, emu_f64(s0[l]), emu_f64(s1[l]), emu_f64(s2[l]), in->flags, &nan);
        d[l] = nan ? 0x7fffffffffffffffull : out64(r, in->flags);
    });
    emu_round_end(old);
    return 0;
}

/* ---- testp --------------------------------------------------------------------------------- */

enum { T_FINITE = 1, T_INFINITE, T_NUMBER, T_NOTANUMBER, T_NORMAL, T_SUBNORMAL };

static int testp(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    const bool is64 = in->type == EMU_T_F64;
    EMU_FOR_LANES(mask, l, {
        int c = is64 ? fpclassify(emu_f64(s0[l])) : fpclassify(emu_f32(s0[l]));
        bool r;
        switch (in->cmp) {
        case T_FINITE: r = c != FP_INFINITE && c != FP_NAN; break;
        case T_INFINITE: r = c == FP_INFINITE; break;
        case T_NUMBER: r = c != FP_NAN; break;
        case T_NOTANUMBER: r = c == FP_NAN; break;
        case T_NORMAL: r = c == FP_NORMAL; break;
        default: r = c == FP_SUBNORMAL; break;
        }
        d[l] = r;
    });
    return 0;
}

/* ---- Lookup --------------------------------------------------------------------------------- */

static const struct {
    const char *name;
    unsigned op;
} float_ops[] = {
    {"add", F_ADD}, {"sub", F_SUB}, {"mul", F_MUL}, {"div", F_DIV}, {"min", F_MIN},
    {"max", F_MAX}, {"fma", F_FMA}, {"mad", F_FMA}, {"neg", F_NEG}, {"abs", F_ABS},
    {"rcp", F_RCP}, {"sqrt", F_SQRT}, {"rsqrt", F_RSQRT}, {"sin", F_SIN}, {"cos", F_COS},
    {"lg2", F_LG2}, {"ex2", F_EX2}, {"tanh", F_TANH}, {"copysign", F_COPYSIGN},
    {"testp", F_TESTP},
};

/* The sub-operation code for a float opcode (stored in emu_insn.op), or 0. */
unsigned emu_float_opcode(const char *op)
{
    for (size_t i = 0; i < sizeof float_ops / sizeof float_ops[0]; i++)
        if (strcmp(op, float_ops[i].name) == 0)
            return float_ops[i].op;
    return 0;
}

unsigned emu_testp_opcode(const char *mod)
{
    static const char *const names[] = {".finite", ".infinite", ".number", ".notanumber",
                                        ".normal", ".subnormal"};
    for (unsigned i = 0; i < 6; i++)
        if (strcmp(mod, names[i]) == 0)
            return i + 1;
    return 0;
}

emu_fn emu_op_float(const char *name, emu_type t, unsigned rnd, uint16_t flags)
{
    unsigned op = emu_float_opcode(name);
    if (!op || (t != EMU_T_F32 && t != EMU_T_F64))
        return NULL;
    bool plain = (rnd == EMU_RND_NONE || rnd == EMU_RND_RN) &&
                 !(flags & (EMU_F_FTZ | EMU_F_SAT | EMU_F_NAN));
    if (op == F_TESTP)
        return testp;
    if (op == F_NEG || op == F_ABS || op == F_COPYSIGN)
        return t == EMU_T_F32 ? sign_f32 : sign_f64;
    if (t == EMU_T_F32) {
        if (plain && op == F_ADD) return add_f32;
        if (plain && op == F_SUB) return sub_f32;
        if (plain && op == F_MUL) return mul_f32;
        if (plain && op == F_FMA) return fma_f32;
        return gen_f32;
    }
    if (op >= F_SIN && op <= F_TANH)
        return NULL;   /* single precision only */
    if (plain && op == F_ADD) return add_f64;
    if (plain && op == F_SUB) return sub_f64;
    if (plain && op == F_MUL) return mul_f64;
    if (plain && op == F_FMA) return fma_f64;
    return gen_f64;
}
