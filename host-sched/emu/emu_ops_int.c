/* Integer arithmetic: add, sub (with carry and saturation), mul, mad (lo/hi/wide),
 * mul24, mad24, sad, div, rem, min, max, abs, neg.
 *
 * Wrapping operations compute in unsigned 64-bit arithmetic and keep the low bits of the
 * type; operations whose result depends on signedness have one handler per signed and
 * unsigned type. Division by zero gives all ones (quotient) and the dividend (remainder),
 * INT_MIN / -1 wraps (the emulator's fixed convention, docs/EMULATOR.md); nothing traps.
 */
#include "emu_ops.h"

#include <string.h>

/* ---- Wrapping ops, one handler per width ------------------------------------------------ */

#define WRAP_WIDTHS(op, expr)                                                            \
    EMU_OP2(op##_16, uint16_t, expr)                                                     \
    EMU_OP2(op##_32, uint32_t, expr)                                                     \
    EMU_OP2(op##_64, uint64_t, expr)

WRAP_WIDTHS(add, a + b)
WRAP_WIDTHS(sub, a - b)
WRAP_WIDTHS(mullo, a * b)

EMU_OP1(neg_16, uint16_t, 0 - a)
EMU_OP1(neg_32, uint32_t, 0 - a)
EMU_OP1(neg_64, uint64_t, 0 - a)

/* ---- Carry chains: add.cc, addc, sub.cc, subc ------------------------------------------- */

#define CARRY_OP(name, UT, BITS, is_sub)                                                 \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        EMU_DST;                                                                         \
        EMU_SRC(0);                                                                      \
        EMU_SRC(1);                                                                      \
        bool cin = (in->flags & EMU_F_CARRY_IN) != 0, cout = (in->flags & EMU_F_CC) != 0; \
        EMU_FOR_LANES(mask, l, {                                                         \
            UT a = (UT)s0[l], b = (UT)s1[l];                                             \
            UT c = cin ? (UT)w->carry[l] : 0;                                            \
            UT r;                                                                        \
            bool flag;                                                                   \
            if (is_sub) {                                                                \
                r = (UT)(a - b - c);                                                     \
                flag = a < b || (a == b && c);  /* borrow out */                         \
            } else {                                                                     \
                r = (UT)(a + b + c);                                                     \
                flag = r < a || (r == a && c);                                           \
            }                                                                            \
            d[l] = r;                                                                    \
            if (cout)                                                                    \
                w->carry[l] = flag;                                                      \
        });                                                                              \
        return 0;                                                                        \
    }

CARRY_OP(addcc_32, uint32_t, 32, false)
CARRY_OP(addcc_64, uint64_t, 64, false)
CARRY_OP(subcc_32, uint32_t, 32, true)
CARRY_OP(subcc_64, uint64_t, 64, true)

/* ---- Saturating s32 add/sub -------------------------------------------------------------- */

static int64_t clamp_s32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v;
}

EMU_OP2(addsat_s32, uint32_t, clamp_s32((int64_t)(int32_t)a + (int32_t)b))
EMU_OP2(subsat_s32, uint32_t, clamp_s32((int64_t)(int32_t)a - (int32_t)b))

/* ---- Signedness-dependent ops ------------------------------------------------------------- */

#define TYPED_ALL(op, expr)                                                              \
    EMU_OP2_AS(op##_u16, uint16_t, uint16_t, expr)                                       \
    EMU_OP2_AS(op##_s16, int16_t, uint16_t, expr)                                        \
    EMU_OP2_AS(op##_u32, uint32_t, uint32_t, expr)                                       \
    EMU_OP2_AS(op##_s32, int32_t, uint32_t, expr)                                        \
    EMU_OP2_AS(op##_u64, uint64_t, uint64_t, expr)                                       \
    EMU_OP2_AS(op##_s64, int64_t, uint64_t, expr)

TYPED_ALL(min, a < b ? a : b)
TYPED_ALL(max, a > b ? a : b)

/* Quotient and remainder without C's undefined cases. */
#define DIV_EXPR(T, MINV) (b == 0 ? (T)-1 : (MINV != 0 && a == (T)MINV && b == (T)-1) ? a : a / b)
#define REM_EXPR(T, MINV) (b == 0 ? a : (MINV != 0 && a == (T)MINV && b == (T)-1) ? 0 : a % b)

EMU_OP2_AS(div_u16, uint16_t, uint16_t, DIV_EXPR(uint16_t, 0))
EMU_OP2_AS(div_s16, int16_t, uint16_t, DIV_EXPR(int16_t, INT16_MIN))
EMU_OP2_AS(div_u32, uint32_t, uint32_t, DIV_EXPR(uint32_t, 0))
EMU_OP2_AS(div_s32, int32_t, uint32_t, DIV_EXPR(int32_t, INT32_MIN))
EMU_OP2_AS(div_u64, uint64_t, uint64_t, DIV_EXPR(uint64_t, 0))
EMU_OP2_AS(div_s64, int64_t, uint64_t, DIV_EXPR(int64_t, INT64_MIN))
EMU_OP2_AS(rem_u16, uint16_t, uint16_t, REM_EXPR(uint16_t, 0))
EMU_OP2_AS(rem_s16, int16_t, uint16_t, REM_EXPR(int16_t, INT16_MIN))
EMU_OP2_AS(rem_u32, uint32_t, uint32_t, REM_EXPR(uint32_t, 0))
EMU_OP2_AS(rem_s32, int32_t, uint32_t, REM_EXPR(int32_t, INT32_MIN))
EMU_OP2_AS(rem_u64, uint64_t, uint64_t, REM_EXPR(uint64_t, 0))
EMU_OP2_AS(rem_s64, int64_t, uint64_t, REM_EXPR(int64_t, INT64_MIN))

/* abs of the most negative value is itself (wraps). */
#define ABS1(name, T, UT) EMU_OP1(name, UT, (T)(UT)a < 0 ? (UT)(0 - (UT)a) : (UT)a)
ABS1(abs_s16, int16_t, uint16_t)
ABS1(abs_s32, int32_t, uint32_t)
ABS1(abs_s64, int64_t, uint64_t)

/* sad: c + |a - b| */
#define SAD(name, T, UT)                                                                 \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        EMU_DST;                                                                         \
        EMU_SRC(0);                                                                      \
        EMU_SRC(1);                                                                      \
        EMU_SRC(2);                                                                      \
        EMU_FOR_LANES(mask, l, {                                                         \
            T a = (T)s0[l], b = (T)s1[l];                                                \
            UT diff = a > b ? (UT)((UT)a - (UT)b) : (UT)((UT)b - (UT)a);                 \
            d[l] = (UT)(diff + (UT)s2[l]);                                               \
        });                                                                              \
        return 0;                                                                        \
    }

SAD(sad_u16, uint16_t, uint16_t)
SAD(sad_s16, int16_t, uint16_t)
SAD(sad_u32, uint32_t, uint32_t)
SAD(sad_s32, int32_t, uint32_t)
SAD(sad_u64, uint64_t, uint64_t)
SAD(sad_s64, int64_t, uint64_t)

/* ---- Multiplication: hi and wide, and mad -------------------------------------------------- */

/* The full product of two values of type t (sign- or zero-extended), as 128 bits. */
static inline unsigned __int128 product(uint64_t a, uint64_t b, emu_type t)
{
    if (emu_type_is_signed(t))
        return (unsigned __int128)((__int128)(int64_t)emu_extend(a, t) *
                                   (__int128)(int64_t)emu_extend(b, t));
    return (unsigned __int128)emu_extend(a, t) * emu_extend(b, t);
}

static uint64_t width_mask(unsigned bits)
{
    return bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
}

/* mul.hi, mul.wide, mad.lo/hi/wide (with .cc, madc, .sat) in one handler: the type and
 * mode live in the instruction (in->type, in->op = EMU_MUL_*). */
static int mul_general(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    const emu_type t = (emu_type)in->type;
    const unsigned bits = emu_type_size(t) * 8;
    const bool mad = in->n_src == 3;
    const uint64_t *s2 = mad ? EMU_REG(w, in->src[2]) : NULL;
    const unsigned rbits = in->op == EMU_MUL_WIDE ? 2 * bits : bits;
    const uint64_t rmask = width_mask(rbits);
    EMU_FOR_LANES(mask, l, {
        unsigned __int128 p = product(s0[l], s1[l], t);
        uint64_t r = in->op == EMU_MUL_HI ? (uint64_t)(p >> bits) : (uint64_t)p;
        r &= rmask;
        if (mad) {
            uint64_t c = s2[l] & rmask;
            uint64_t cin = (in->flags & EMU_F_CARRY_IN) ? w->carry[l] : 0;
            if (in->flags & EMU_F_SAT) {   /* mad.hi.sat.s32 */
                int64_t v = (int64_t)(int32_t)r + (int64_t)(int32_t)c;
                r = (uint32_t)clamp_s32(v);
            } else {
                unsigned __int128 sum = (unsigned __int128)r + c + cin;
                if (in->flags & EMU_F_CC)
                    w->carry[l] = (uint8_t)((sum >> rbits) & 1u);
                r = (uint64_t)sum & rmask;
            }
        }
        d[l] = r;
    });
    return 0;
}

/* The plain mad.lo of the common types, fast. */
#define MADLO(name, UT)                                                                  \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        EMU_DST;                                                                         \
        EMU_SRC(0);                                                                      \
        EMU_SRC(1);                                                                      \
        EMU_SRC(2);                                                                      \
        EMU_FOR_LANES(mask, l, d[l] = (UT)(s0[l] * s1[l] + s2[l]));                      \
        return 0;                                                                        \
    }

MADLO(madlo_16, uint16_t)
MADLO(madlo_32, uint32_t)
MADLO(madlo_64, uint64_t)

/* mul.wide.u32 / .s32, the common address computation, fast. */
EMU_OP2(mulwide_u32, uint64_t, (uint64_t)(uint32_t)a * (uint32_t)b)
EMU_OP2(mulwide_s32, uint64_t, (int64_t)(int32_t)a * (int64_t)(int32_t)b)

/* mul24 / mad24: 24-bit operands, 48-bit product; .lo keeps bits 31..0, .hi 47..16. */
static int mul24(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    const bool is_signed = emu_type_is_signed((emu_type)in->type);
    const bool mad = in->n_src == 3;
    const uint64_t *s2 = mad ? EMU_REG(w, in->src[2]) : NULL;
    EMU_FOR_LANES(mask, l, {
        int64_t a, b;
        if (is_signed) {
            a = (int64_t)((int32_t)((uint32_t)s0[l] << 8) >> 8);
            b = (int64_t)((int32_t)((uint32_t)s1[l] << 8) >> 8);
        } else {
            a = (int64_t)(s0[l] & 0xffffffu);
            b = (int64_t)(s1[l] & 0xffffffu);
        }
        uint64_t p = (uint64_t)(a * b);
        uint32_t r = in->op == EMU_MUL_HI ? (uint32_t)(p >> 16) : (uint32_t)p;
        if (mad)
            r += (uint32_t)s2[l];
        d[l] = r;
    });
    return 0;
}

/* ---- Lookup ------------------------------------------------------------------------------- */

static unsigned width_index(emu_type t)
{
    switch (emu_type_size(t)) {
    case 2: return 0;
    case 4: return 1;
    case 8: return 2;
    default: return 3;
    }
}

/* Index 0..5: u16 s16 u32 s32 u64 s64; 6 otherwise. */
static unsigned typed_index(emu_type t)
{
    switch (t) {
    case EMU_T_U16: case EMU_T_B16: return 0;
    case EMU_T_S16: return 1;
    case EMU_T_U32: case EMU_T_B32: return 2;
    case EMU_T_S32: return 3;
    case EMU_T_U64: case EMU_T_B64: return 4;
    case EMU_T_S64: return 5;
    default: return 6;
    }
}

emu_fn emu_op_int_binary(const char *op, emu_type t, uint16_t flags)
{
    unsigned wi = width_index(t), ti = typed_index(t);
    if (wi > 2 || ti > 5)
        return NULL;
    static const emu_fn add[3] = {add_16, add_32, add_64}, sub[3] = {sub_16, sub_32, sub_64};
    static const emu_fn mn[6] = {min_u16, min_s16, min_u32, min_s32, min_u64, min_s64};
    static const emu_fn mx[6] = {max_u16, max_s16, max_u32, max_s32, max_u64, max_s64};
    static const emu_fn dv[6] = {div_u16, div_s16, div_u32, div_s32, div_u64, div_s64};
    static const emu_fn rm[6] = {rem_u16, rem_s16, rem_u32, rem_s32, rem_u64, rem_s64};
    bool is_add = strcmp(op, "add") == 0, is_sub = strcmp(op, "sub") == 0;
    if (flags & EMU_F_SAT)
        return t == EMU_T_S32 && is_add ? addsat_s32 : t == EMU_T_S32 && is_sub ? subsat_s32
                                                                                : NULL;
    if (flags & (EMU_F_CC | EMU_F_CARRY_IN)) {
        if (wi == 0 || !(is_add || is_sub))
            return NULL;
        return is_add ? (wi == 1 ? addcc_32 : addcc_64) : (wi == 1 ? subcc_32 : subcc_64);
    }
    if (is_add) return add[wi];
    if (is_sub) return sub[wi];
    if (strcmp(op, "min") == 0) return mn[ti];
    if (strcmp(op, "max") == 0) return mx[ti];
    if (strcmp(op, "div") == 0) return dv[ti];
    if (strcmp(op, "rem") == 0) return rm[ti];
    if (strcmp(op, "sad") == 0) {
        static const emu_fn sd[6] = {sad_u16, sad_s16, sad_u32, sad_s32, sad_u64, sad_s64};
        return sd[ti];
    }
    return NULL;
}

emu_fn emu_op_int_unary(const char *op, emu_type t)
{
    unsigned wi = width_index(t);
    if (wi > 2)
        return NULL;
    if (strcmp(op, "neg") == 0) {
        static const emu_fn f[3] = {neg_16, neg_32, neg_64};
        return emu_type_is_signed(t) ? f[wi] : NULL;
    }
    if (strcmp(op, "abs") == 0) {
        static const emu_fn f[3] = {abs_s16, abs_s32, abs_s64};
        return emu_type_is_signed(t) ? f[wi] : NULL;
    }
    return NULL;
}

/* op "mul", "mad", "mul24" or "mad24"; mode EMU_MUL_LO/HI/WIDE; flags EMU_F_CC,
 * EMU_F_CARRY_IN, EMU_F_SAT (mad only). Plain cases get fast handlers. */
emu_fn emu_op_int_mul(const char *op, emu_type t, unsigned mode, uint16_t flags)
{
    unsigned wi = width_index(t), ti = typed_index(t);
    if (wi > 2 || ti > 5 || mode < EMU_MUL_LO || mode > EMU_MUL_WIDE)
        return NULL;
    bool mad = strncmp(op, "mad", 3) == 0;
    bool is24 = strcmp(op + 3, "24") == 0;
    uint16_t extra = flags & (EMU_F_CC | EMU_F_CARRY_IN | EMU_F_SAT);
    if (extra && !mad)
        return NULL;
    if ((flags & EMU_F_SAT) && !(mode == EMU_MUL_HI && t == EMU_T_S32 && !is24 &&
                                 !(flags & (EMU_F_CC | EMU_F_CARRY_IN))))
        return NULL;
    if (is24)
        return (t == EMU_T_U32 || t == EMU_T_S32) && mode != EMU_MUL_WIDE && !extra ? mul24
                                                                                     : NULL;
    if (mode == EMU_MUL_WIDE && wi == 2)
        return NULL;
    if ((flags & (EMU_F_CC | EMU_F_CARRY_IN)) && wi == 0)
        return NULL;
    if (extra)
        return mul_general;
    if (mode == EMU_MUL_LO) {
        static const emu_fn ml[3] = {mullo_16, mullo_32, mullo_64};
        static const emu_fn md[3] = {madlo_16, madlo_32, madlo_64};
        return mad ? md[wi] : ml[wi];
    }
    if (!mad && mode == EMU_MUL_WIDE && t == EMU_T_U32)
        return mulwide_u32;
    if (!mad && mode == EMU_MUL_WIDE && t == EMU_T_S32)
        return mulwide_s32;
    return mul_general;
}
