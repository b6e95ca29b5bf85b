/* Comparison and selection: setp (two predicate results, .and/.or/.xor with a third
 * predicate), set, selp, slct. Float comparisons follow IEEE: the plain operators are
 * false on NaN (ne too), the ...u forms are true, num/nan test for NaN. */
#include "emu_fp.h"
#include "emu_ops.h"

static inline bool cmp_int(unsigned cmp, uint64_t a, uint64_t b, emu_type t)
{
    uint64_t ua = emu_extend(a, t), ub = emu_extend(b, t);
    bool sig = emu_type_is_signed(t);
    int64_t sa = (int64_t)ua, sb = (int64_t)ub;
    switch (cmp) {
    case EMU_CMP_EQ: return ua == ub;
    case EMU_CMP_NE: return ua != ub;
    case EMU_CMP_LT: return sig ? sa < sb : ua < ub;
    case EMU_CMP_LE: return sig ? sa <= sb : ua <= ub;
    case EMU_CMP_GT: return sig ? sa > sb : ua > ub;
    case EMU_CMP_GE: return sig ? sa >= sb : ua >= ub;
    case EMU_CMP_LO: return ua < ub;
    case EMU_CMP_LS: return ua <= ub;
    case EMU_CMP_HI: return ua > ub;
    case EMU_CMP_HS: return ua >= ub;
    default: return false;
    }
}

static inline double float_operand(uint64_t v, emu_type t, bool ftz)
{
    if (t == EMU_T_F64)
        return emu_f64(v);
    return ftz ? emu_ftz32(emu_f32(v)) : emu_f32(v);
}

static inline bool cmp_float(unsigned cmp, double a, double b)
{
    bool un = isnan(a) || isnan(b);
    switch (cmp) {
    case EMU_CMP_EQ: return !un && a == b;
    case EMU_CMP_NE: return !un && a != b;
    case EMU_CMP_LT: return !un && a < b;
    case EMU_CMP_LE: return !un && a <= b;
    case EMU_CMP_GT: return !un && a > b;
    case EMU_CMP_GE: return !un && a >= b;
    case EMU_CMP_EQU: return un || a == b;
    case EMU_CMP_NEU: return un || a != b;
    case EMU_CMP_LTU: return un || a < b;
    case EMU_CMP_LEU: return un || a <= b;
    case EMU_CMP_GTU: return un || a > b;
    case EMU_CMP_GEU: return un || a >= b;
    case EMU_CMP_NUM: return !un;
    case EMU_CMP_NAN: return un;
    default: return false;
    }
}

static inline bool combine(unsigned bop, bool t, bool c)
{
    switch (bop) {
    case EMU_BOP_AND: return t && c;
    case EMU_BOP_OR: return t || c;
    case EMU_BOP_XOR: return t != c;
    default: return t;
    }
}

/* The comparison of lane l of in's two first sources. */
static inline bool compare_lane(const emu_insn *in, emu_type t, uint64_t a, uint64_t b)
{
    if (emu_type_is_float(t))
        return cmp_float(in->cmp, float_operand(a, t, in->flags & EMU_F_FTZ),
                         float_operand(b, t, in->flags & EMU_F_FTZ));
    return cmp_int(in->cmp, a, b, t);
}

static int setp(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    const emu_type t = (emu_type)in->type;
    const uint64_t *c = in->bop ? EMU_REG(w, in->src[2]) : NULL;
    uint64_t *q = in->dst[1] != EMU_NO_SLOT ? EMU_REG(w, in->dst[1]) : NULL;
    EMU_FOR_LANES(mask, l, {
        bool r = compare_lane(in, t, s0[l], s1[l]);
        bool cv = c ? (c[l] & 1u) : false;
        d[l] = combine(in->bop, r, cv);
        if (q)
            q[l] = combine(in->bop, !r, cv);
    });
    return 0;
}

/* The hot loop-exit test, setp on 32-bit integers without a combination. */
#define SETP32(name, T, op)                                                              \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        EMU_DST;                                                                         \
        EMU_SRC(0);                                                                      \
        EMU_SRC(1);                                                                      \
        EMU_FOR_LANES(mask, l, d[l] = (T)s0[l] op (T)s1[l]);                             \
        return 0;                                                                        \
    }

SETP32(setp_eq_32, uint32_t, ==)
SETP32(setp_ne_32, uint32_t, !=)
SETP32(setp_lt_s32, int32_t, <)
SETP32(setp_lt_u32, uint32_t, <)
SETP32(setp_ge_s32, int32_t, >=)
SETP32(setp_ge_u32, uint32_t, >=)

static int set(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    const emu_type st = (emu_type)in->type2;
    const uint64_t *c = in->bop ? EMU_REG(w, in->src[2]) : NULL;
    const uint64_t one = in->type == EMU_T_F32 ? 0x3f800000u : 0xffffffffu;
    EMU_FOR_LANES(mask, l, {
        bool r = combine(in->bop, compare_lane(in, st, s0[l], s1[l]), c ? (c[l] & 1u) : false);
        d[l] = r ? one : 0;
    });
    return 0;
}

static int selp(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    EMU_SRC(2);
    EMU_FOR_LANES(mask, l, d[l] = (s2[l] & 1u) ? s0[l] : s1[l]);
    return 0;
}

/* slct d, a, b, c: a when c >= 0 (c of type2: .s32 or .f32), else b. */
static int slct(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    EMU_SRC(2);
    const bool is_float = in->type2 == EMU_T_F32;
    EMU_FOR_LANES(mask, l, {
        bool ge = is_float ? float_operand(s2[l], EMU_T_F32, in->flags & EMU_F_FTZ) >= 0.0
                           : (int32_t)s2[l] >= 0;
        d[l] = ge ? s0[l] : s1[l];
    });
    return 0;
}

emu_fn emu_op_compare(const char *op, emu_type t)
{
    if (strcmp(op, "setp") == 0)
        return setp;
    if (strcmp(op, "set") == 0)
        return set;
    if (strcmp(op, "selp") == 0)
        return selp;
    if (strcmp(op, "slct") == 0)
        return slct;
    (void)t;
    return NULL;
}

/* A specialised setp for plain 32-bit integer comparisons, or NULL. */
emu_fn emu_op_setp_fast(unsigned cmp, emu_type t)
{
    bool s32 = t == EMU_T_S32, u32 = t == EMU_T_U32 || t == EMU_T_B32;
    if (!s32 && !u32)
        return NULL;
    switch (cmp) {
    case EMU_CMP_EQ: return setp_eq_32;
    case EMU_CMP_NE: return setp_ne_32;
    case EMU_CMP_LT: return s32 ? setp_lt_s32 : setp_lt_u32;
    case EMU_CMP_GE: return s32 ? setp_ge_s32 : setp_ge_u32;
    case EMU_CMP_LO: return u32 ? setp_lt_u32 : NULL;
    case EMU_CMP_HS: return u32 ? setp_ge_u32 : NULL;
    default: return NULL;
    }
}
