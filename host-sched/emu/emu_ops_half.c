/* Half-precision arithmetic: add, sub, mul, fma, min, max, neg, abs on .f16, .bf16 and the
 * packed .f16x2/.bf16x2 (each half separately). Operands widen exactly to double; sums and
 * products of two halves are exact there, fma is computed rounding to odd, so the single
 * rounding to half (round to nearest even, emu_half.c) is correctly rounded. .ftz flushes
 * .f16 subnormals, .sat clamps to [0, 1]; NaN results are the canonical 0x7fff. Built with
 * -frounding-math (the round-to-odd fma switches the FPU mode). */
#include "emu_fp.h"
#include "emu_internal.h"

#include <fenv.h>

enum { H_ADD = 1, H_SUB, H_MUL, H_FMA, H_MIN, H_MAX, H_NEG, H_ABS };

static bool is_bf16(emu_type t)
{
    return t == EMU_T_BF16 || t == EMU_T_BF16X2;
}

static double widen(uint16_t h, bool bf, bool ftz)
{
    if (ftz && !bf && (h & 0x7c00u) == 0)   /* f16 subnormal or zero */
        h &= 0x8000u;
    return bf ? emu_bf16_to_f64(h) : emu_f16_to_f64(h);
}

/* a * b + c rounded to odd: exact enough that rounding it once more to half is exact. */
static double fma_odd(double a, double b, double c)
{
    int old = fegetround();
    feclearexcept(FE_INEXACT);
    fesetround(FE_TOWARDZERO);
    volatile double r = fma(a, b, c);
    bool inexact = fetestexcept(FE_INEXACT) != 0;
    fesetround(old);
    return inexact && isfinite(r) ? emu_f64(emu_bits64(r) | 1u) : r;
}

static uint16_t narrow(double r, bool bf, uint16_t flags)
{
    if (flags & EMU_F_SAT)
        r = r > 0.0 ? (r < 1.0 ? r : 1.0) : 0.0;
    uint16_t h = bf ? emu_f64_to_bf16(r, EMU_RND_RN) : emu_f64_to_f16(r, EMU_RND_RN);
    if ((flags & EMU_F_FTZ) && !bf && (h & 0x7c00u) == 0)
        h &= 0x8000u;
    return h;
}

static uint16_t half_op(unsigned op, uint16_t ha, uint16_t hb, uint16_t hc, bool bf,
                        uint16_t flags)
{
    const bool ftz = (flags & EMU_F_FTZ) != 0;
    if (op == H_NEG)
        return ha ^ 0x8000u;
    if (op == H_ABS)
        return ha & 0x7fffu;
    double a = widen(ha, bf, ftz), b = widen(hb, bf, ftz), r;
    switch (op) {
    case H_ADD: r = a + b; break;
    case H_SUB: r = a - b; break;
    case H_MUL: r = a * b; break;
    case H_FMA: r = fma_odd(a, b, widen(hc, bf, ftz)); break;
    default: {
        bool is_max = op == H_MAX;
        if (isnan(a) || isnan(b)) {
            if ((flags & EMU_F_NAN) || (isnan(a) && isnan(b)))
                return 0x7fff;
            return isnan(a) ? hb : ha;
        }
        if (a == b && a == 0.0)
            return (signbit(a) != 0) == !is_max ? ha : hb;
        return is_max ? (a > b ? ha : hb) : (a < b ? ha : hb);
    }
    }
    return narrow(r, bf, flags);
}

static int half_arith(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    uint64_t *d = EMU_REG(w, in->dst[0]);
    const uint64_t *s0 = EMU_REG(w, in->src[0]);
    const uint64_t *s1 = in->n_src > 1 ? EMU_REG(w, in->src[1]) : s0;
    const uint64_t *s2 = in->n_src > 2 ? EMU_REG(w, in->src[2]) : s0;
    const emu_type t = (emu_type)in->type;
    const bool bf = is_bf16(t);
    const unsigned parts = (t == EMU_T_F16X2 || t == EMU_T_BF16X2) ? 2 : 1;
    EMU_FOR_LANES(mask, l, {
        uint64_t r = 0;
        for (unsigned p = 0; p < parts; p++) {
            unsigned sh = 16 * p;
            uint16_t h = half_op(in->op, (uint16_t)(s0[l] >> sh), (uint16_t)(s1[l] >> sh),
                                 (uint16_t)(s2[l] >> sh), bf, in->flags);
            r |= (uint64_t)h << sh;
        }
        d[l] = r;
    });
    return 0;
}

/* The handler for a half-precision opcode, or NULL (with the sub-operation in *op). */
emu_fn emu_op_half(const char *name, emu_type t, unsigned rnd, uint16_t flags, uint8_t *op)
{
    static const char *const names[] = {"add", "sub", "mul", "fma", "min", "max", "neg", "abs"};
    if (t != EMU_T_F16 && t != EMU_T_F16X2 && t != EMU_T_BF16 && t != EMU_T_BF16X2)
        return NULL;
    if (rnd != EMU_RND_NONE && rnd != EMU_RND_RN)
        return NULL;
    *op = 0;
    for (unsigned i = 0; i < 8; i++)
        if (strcmp(name, names[i]) == 0)
            *op = (uint8_t)(H_ADD + i);
    if (!*op || (is_bf16(t) && (flags & EMU_F_FTZ)))
        return NULL;
    return half_arith;
}
