/* cvt: conversions between integer and floating-point types with PTX's rounding (.rn .rz
 * .rm .rp for float results, .rni .rzi .rmi .rpi for integral results), saturation
 * (.sat), flush to zero (.ftz) and the half-precision types (.f16, .bf16, and the packed
 * .f16x2/.bf16x2 forms that take two sources). Float-to-integer conversions clamp to the
 * destination range; NaN gives 0, or 1 << (width - 1) when the source is .f64 or the
 * destination is 64-bit (as the PTX ISA specifies). Built with -frounding-math.
 */
#include "emu_fp.h"
#include "emu_ops.h"

static bool is_half(emu_type t)
{
    return t == EMU_T_F16 || t == EMU_T_BF16;
}

/* A float source as a double (exact); f32 subnormals flushed with .ftz. */
static double float_in(uint64_t v, emu_type t, bool ftz)
{
    switch (t) {
    case EMU_T_F16: return emu_f16_to_f64((uint16_t)v);
    case EMU_T_BF16: return emu_bf16_to_f64((uint16_t)v);
    case EMU_T_F32: {
        float f = emu_f32(v);
        return ftz ? emu_ftz32(f) : f;
    }
    default: return emu_f64(v);
    }
}

/* Rounds x to an integral value by an integer rounding mode. */
static double round_integral(double x, unsigned rnd)
{
    switch (rnd) {
    case EMU_RND_RNI: return nearbyint(x);   /* current mode is round-to-nearest-even */
    case EMU_RND_RMI: return floor(x);
    case EMU_RND_RPI: return ceil(x);
    default: return trunc(x);
    }
}

/* Float x to integer type t, clamped; NaN as the PTX ISA says. */
static uint64_t float_to_int(double x, emu_type t, bool src_f64)
{
    unsigned bits = emu_type_size(t) * 8;
    if (isnan(x))
        return (src_f64 || bits == 64) ? 1ull << (bits - 1) : 0;
    if (emu_type_is_signed(t)) {
        double lo = -ldexp(1.0, (int)bits - 1), hi = ldexp(1.0, (int)bits - 1);
        if (x <= lo)
            return emu_extend(1ull << (bits - 1), t);
        if (x >= hi)
            return emu_extend((1ull << (bits - 1)) - 1, t);
        return emu_extend((uint64_t)(int64_t)x, t);
    }
    double hi = ldexp(1.0, (int)bits);
    if (x <= 0.0)
        return 0;
    if (x >= hi)
        return bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    return (uint64_t)x;
}

/* Integer to integer, with optional saturation to the destination range. */
static uint64_t int_to_int(uint64_t v, emu_type src, emu_type dst, bool sat)
{
    uint64_t x = emu_extend(v, src);
    if (sat) {
        unsigned bits = emu_type_size(dst) * 8;
        bool ssrc = emu_type_is_signed(src);
        if (emu_type_is_signed(dst)) {
            int64_t lo = bits == 64 ? INT64_MIN : -(1ll << (bits - 1));
            int64_t hi = bits == 64 ? INT64_MAX : (1ll << (bits - 1)) - 1;
            if (ssrc)
                x = (uint64_t)((int64_t)x < lo ? lo : (int64_t)x > hi ? hi : (int64_t)x);
            else
                x = x > (uint64_t)hi ? (uint64_t)hi : x;
        } else {
            uint64_t hi = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
            if (ssrc && (int64_t)x < 0)
                x = 0;
            else if (x > hi)
                x = hi;
        }
    }
    return emu_extend(x, dst);
}

/* Double x (exact) to float type t with rounding rnd (the FP mode is already set for
 * f32/f64; half types round in software). */
static uint64_t to_float(double x, emu_type t, unsigned rnd, uint16_t flags)
{
    if (flags & EMU_F_SAT)
        x = x > 0.0 ? (x < 1.0 ? x : 1.0) : 0.0;
    switch (t) {
    case EMU_T_F16: return emu_f64_to_f16(x, rnd);
    case EMU_T_BF16: return emu_f64_to_bf16(x, rnd);
    case EMU_T_F32: {
        volatile double vx = x;
        float f = (float)vx;
        if (flags & EMU_F_FTZ)
            f = emu_ftz32(f);
        return isnan(f) ? 0x7fffffffu : emu_bits32(f);
    }
    default:
        return emu_bits64(x);
    }
}

/* Integer source to float destination with the current rounding mode. */
static uint64_t int_to_float(uint64_t v, emu_type src, emu_type dst, unsigned rnd,
                             uint16_t flags)
{
    uint64_t x = emu_extend(v, src);
    bool s = emu_type_is_signed(src);
    if (dst == EMU_T_F32) {
        volatile float f = s ? (float)(int64_t)x : (float)x;
        return to_float((double)f, EMU_T_F32, rnd, flags);
    }
    volatile double dd = s ? (double)(int64_t)x : (double)x;
    return to_float(dd, dst, rnd, flags);
}

static int cvt_general(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    const emu_type dt = (emu_type)in->type, st = (emu_type)in->type2;
    const bool dfloat = emu_type_is_float(dt), sfloat = emu_type_is_float(st);
    const bool ftz = in->flags & EMU_F_FTZ, sat = in->flags & EMU_F_SAT;
    const unsigned rnd = in->rnd;
    int old = dfloat && !is_half(dt) ? emu_round_begin(rnd) : -1;
    EMU_FOR_LANES(mask, l, {
        uint64_t v = s0[l], r;
        if (!sfloat && !dfloat) {
            r = int_to_int(v, st, dt, sat);
        } else if (!sfloat) {
            r = int_to_float(v, st, dt, rnd, in->flags);
        } else if (!dfloat) {
            r = float_to_int(round_integral(float_in(v, st, ftz), rnd), dt, st == EMU_T_F64);
        } else {
            double x = float_in(v, st, ftz);
            if (rnd >= EMU_RND_RNI)
                x = round_integral(x, rnd);
            r = to_float(x, dt, rnd, in->flags);
        }
        d[l] = r;
    });
    emu_round_end(old);
    return 0;
}

/* cvt.rn.f16x2.f32 d, a, b (and bf16x2): a goes to the upper half. */
static int cvt_pack_x2(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    const emu_type half = in->type == EMU_T_F16X2 ? EMU_T_F16 : EMU_T_BF16;
    const bool ftz = in->flags & EMU_F_FTZ;
    EMU_FOR_LANES(mask, l, {
        uint64_t hi = to_float(float_in(s0[l], EMU_T_F32, ftz), half, in->rnd, in->flags);
        uint64_t lo = to_float(float_in(s1[l], EMU_T_F32, ftz), half, in->rnd, in->flags);
        d[l] = (hi << 16) | lo;
    });
    return 0;
}

/* The address-computation conversions, fast. */
static int cvt_u64_u32(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_FOR_LANES(mask, l, d[l] = (uint32_t)s0[l]);
    return 0;
}

static int cvt_s64_s32(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_FOR_LANES(mask, l, d[l] = (uint64_t)(int64_t)(int32_t)s0[l]);
    return 0;
}

emu_fn emu_op_cvt(emu_type dst, emu_type src, unsigned rnd, uint16_t flags)
{
    if (dst == EMU_T_NONE || src == EMU_T_NONE || dst == EMU_T_PRED || src == EMU_T_PRED ||
        dst == EMU_T_B128 || src == EMU_T_B128 || src == EMU_T_F16X2 || src == EMU_T_BF16X2)
        return NULL;
    if (dst == EMU_T_F16X2 || dst == EMU_T_BF16X2)
        return src == EMU_T_F32 && rnd != EMU_RND_NONE && rnd <= EMU_RND_RP ? cvt_pack_x2
                                                                             : NULL;
    bool dfloat = emu_type_is_float(dst), sfloat = emu_type_is_float(src);
    if (rnd == EMU_RND_RNA)
        return NULL;
    if (!dfloat && sfloat && rnd != EMU_RND_NONE && rnd < EMU_RND_RNI)
        return NULL;   /* float to int needs an integer rounding */
    if (dfloat && !sfloat && rnd >= EMU_RND_RNI)
        return NULL;
    if (!flags && rnd == EMU_RND_NONE) {
        if (dst == EMU_T_U64 && (src == EMU_T_U32 || src == EMU_T_B32))
            return cvt_u64_u32;
        if (dst == EMU_T_S64 && src == EMU_T_S32)
            return cvt_s64_s32;
    }
    return cvt_general;
}
