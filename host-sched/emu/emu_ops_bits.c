/* Bit operations: and, or, xor, not, cnot, shl, shr, popc, clz, brev, bfe, bfi, bfind,
 * lop3, shf, prmt, dp4a, dp2a. Semantics as in the PTX ISA (shift amounts clamp at the
 * width, bfe/bfi take position and length from the low 8 bits). */
#include "emu_ops.h"

#include <string.h>

#define LOGIC(op, expr)                                                                  \
    EMU_OP2(op##_16, uint16_t, expr)                                                     \
    EMU_OP2(op##_32, uint32_t, expr)                                                     \
    EMU_OP2(op##_64, uint64_t, expr)

LOGIC(and, a & b)
LOGIC(or, a | b)
LOGIC(xor, a ^ b)
EMU_OP2(and_p, uint8_t, (a & b) & 1u)
EMU_OP2(or_p, uint8_t, (a | b) & 1u)
EMU_OP2(xor_p, uint8_t, (a ^ b) & 1u)
EMU_OP1(not_16, uint16_t, ~a)
EMU_OP1(not_32, uint32_t, ~a)
EMU_OP1(not_64, uint64_t, ~a)
EMU_OP1(not_p, uint8_t, (~a) & 1u)
EMU_OP1(cnot_16, uint16_t, (uint16_t)a == 0)
EMU_OP1(cnot_32, uint32_t, (uint32_t)a == 0)
EMU_OP1(cnot_64, uint64_t, a == 0)

/* Shifts: the amount is an unsigned 32-bit value; amounts past the width clamp. */
#define SHIFT_AMT(b, bits) ((uint32_t)(b) > (bits) ? (bits) : (uint32_t)(b))
EMU_OP2(shl_16, uint16_t, SHIFT_AMT(b, 16) >= 16 ? 0 : (uint16_t)a << SHIFT_AMT(b, 16))
EMU_OP2(shl_32, uint32_t, SHIFT_AMT(b, 32) >= 32 ? 0 : (uint32_t)a << SHIFT_AMT(b, 32))
EMU_OP2(shl_64, uint64_t, SHIFT_AMT(b, 64) >= 64 ? 0 : a << SHIFT_AMT(b, 64))
EMU_OP2(shr_u16, uint16_t, SHIFT_AMT(b, 16) >= 16 ? 0 : (uint16_t)a >> SHIFT_AMT(b, 16))
EMU_OP2(shr_u32, uint32_t, SHIFT_AMT(b, 32) >= 32 ? 0 : (uint32_t)a >> SHIFT_AMT(b, 32))
EMU_OP2(shr_u64, uint64_t, SHIFT_AMT(b, 64) >= 64 ? 0 : a >> SHIFT_AMT(b, 64))
EMU_OP2(shr_s16, uint16_t, (int16_t)a >> (SHIFT_AMT(b, 16) >= 16 ? 15 : SHIFT_AMT(b, 16)))
EMU_OP2(shr_s32, uint32_t, (int32_t)a >> (SHIFT_AMT(b, 32) >= 32 ? 31 : SHIFT_AMT(b, 32)))
EMU_OP2(shr_s64, uint64_t, (int64_t)a >> (SHIFT_AMT(b, 64) >= 64 ? 63 : SHIFT_AMT(b, 64)))

EMU_OP1(popc_32, uint32_t, __builtin_popcount((uint32_t)a))
EMU_OP1(popc_64, uint32_t, __builtin_popcountll(a))
EMU_OP1(clz_32, uint32_t, (uint32_t)a ? __builtin_clz((uint32_t)a) : 32)
EMU_OP1(clz_64, uint32_t, a ? __builtin_clzll(a) : 64)

static uint64_t reverse_bits(uint64_t v, unsigned bits)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < bits; i++, v >>= 1)
        r = (r << 1) | (v & 1u);
    return r;
}

EMU_OP1(brev_32, uint32_t, reverse_bits(a, 32))
EMU_OP1(brev_64, uint64_t, reverse_bits(a, 64))

/* bfind: position of the most significant bit that differs from the sign (signed) or is
 * set (unsigned); 0xffffffff when there is none; .shiftamt (in->op) counts from the top. */
static int bfind(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    const emu_type t = (emu_type)in->type;
    const unsigned bits = emu_type_size(t) * 8;
    const bool is_signed = emu_type_is_signed(t);
    EMU_FOR_LANES(mask, l, {
        uint64_t a = s0[l] & (bits == 64 ? UINT64_MAX : (1ull << bits) - 1);
        if (is_signed && (a >> (bits - 1)) & 1u)
            a = ~a & (bits == 64 ? UINT64_MAX : (1ull << bits) - 1);
        uint32_t r;
        if (a == 0)
            r = 0xffffffffu;
        else {
            r = 63u - (uint32_t)__builtin_clzll(a);
            if (in->op)
                r = bits - 1 - r;
        }
        d[l] = r;
    });
    return 0;
}

/* bfe d, a, pos, len */
static int bfe(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    EMU_SRC(2);
    const emu_type t = (emu_type)in->type;
    const unsigned msb = emu_type_size(t) * 8 - 1;
    const bool is_signed = emu_type_is_signed(t);
    EMU_FOR_LANES(mask, l, {
        uint64_t a = s0[l];
        unsigned pos = (unsigned)(s1[l] & 0xffu), len = (unsigned)(s2[l] & 0xffu);
        uint64_t sbit = 0;
        if (is_signed && len != 0) {
            unsigned top = pos + len - 1 > msb ? msb : pos + len - 1;
            sbit = (a >> top) & 1u;
        }
        uint64_t r = 0;
        for (unsigned i = 0; i <= msb; i++) {
            uint64_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1u : sbit;
            r |= bit << i;
        }
        d[l] = r;
    });
    return 0;
}

/* bfi f, a, b, pos, len: b with the low len bits of a inserted at pos */
static int bfi(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    EMU_SRC(2);
    EMU_SRC(3);
    const unsigned msb = emu_type_size((emu_type)in->type) * 8 - 1;
    EMU_FOR_LANES(mask, l, {
        uint64_t a = s0[l], r = s1[l] & (msb == 63 ? UINT64_MAX : (1ull << (msb + 1)) - 1);
        unsigned pos = (unsigned)(s2[l] & 0xffu), len = (unsigned)(s3[l] & 0xffu);
        for (unsigned i = 0; i < len && pos + i <= msb; i++) {
            uint64_t bit = (a >> i) & 1u;
            r = (r & ~(1ull << (pos + i))) | (bit << (pos + i));
        }
        d[l] = r;
    });
    return 0;
}

/* lop3 d, a, b, c, lut: bit i of d is lut[(a_i << 2) | (b_i << 1) | c_i] */
static int lop3(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    EMU_SRC(2);
    EMU_SRC(3);
    EMU_FOR_LANES(mask, l, {
        uint32_t a = (uint32_t)s0[l], b = (uint32_t)s1[l], c = (uint32_t)s2[l];
        uint32_t lut = (uint32_t)s3[l] & 0xffu, r = 0;
        for (unsigned i = 0; i < 8; i++)
            if ((lut >> i) & 1u)
                r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
        d[l] = r;
    });
    return 0;
}

/* shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of {b, a}. in->op: bit 0 right,
 * bit 1 clamp. */
static int shf(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    EMU_SRC(2);
    const bool right = in->op & 1u, clamp = in->op & 2u;
    EMU_FOR_LANES(mask, l, {
        uint64_t v = ((uint64_t)(uint32_t)s1[l] << 32) | (uint32_t)s0[l];
        uint32_t n = (uint32_t)s2[l];
        n = clamp ? (n > 32 ? 32 : n) : (n & 31u);
        d[l] = right ? (uint32_t)(v >> n) : (uint32_t)((v << n) >> 32);
    });
    return 0;
}

/* prmt: in->op 0 generic, 1 f4e, 2 b4e, 3 rc8, 4 ecl, 5 ecr, 6 rc16 */
static const uint8_t prmt_modes[6][4][4] = {
    {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},   /* f4e */
    {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},   /* b4e */
    {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},   /* rc8 */
    {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},   /* ecl */
    {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},   /* ecr */
    {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},   /* rc16 */
};

static int prmt(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    EMU_SRC(2);
    EMU_FOR_LANES(mask, l, {
        uint64_t src = ((uint64_t)(uint32_t)s1[l] << 32) | (uint32_t)s0[l];
        uint32_t c = (uint32_t)s2[l], r = 0;
        for (unsigned i = 0; i < 4; i++) {
            uint32_t byte;
            if (in->op == 0) {
                unsigned sel = (c >> (4 * i)) & 0xfu;
                byte = (uint32_t)(src >> (8 * (sel & 7u))) & 0xffu;
                if (sel & 8u)
                    byte = (byte & 0x80u) ? 0xffu : 0;
            } else {
                unsigned sel = prmt_modes[in->op - 1][c & 3u][i];
                byte = (uint32_t)(src >> (8 * sel)) & 0xffu;
            }
            r |= byte << (8 * i);
        }
        d[l] = r;
    });
    return 0;
}

/* dp4a.atype.btype d, a, b, c (in->type = atype, in->type2 = btype) */
static int dp4a(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    EMU_SRC(2);
    const bool sa = in->type == EMU_T_S32, sb = in->type2 == EMU_T_S32;
    EMU_FOR_LANES(mask, l, {
        int64_t acc = sa || sb ? (int64_t)(int32_t)s2[l] : (int64_t)(uint32_t)s2[l];
        for (unsigned i = 0; i < 4; i++) {
            uint32_t ab = (uint32_t)(s0[l] >> (8 * i)) & 0xffu;
            uint32_t bb = (uint32_t)(s1[l] >> (8 * i)) & 0xffu;
            int64_t x = sa ? (int8_t)ab : (int64_t)ab, y = sb ? (int8_t)bb : (int64_t)bb;
            acc += x * y;
        }
        d[l] = (uint32_t)acc;
    });
    return 0;
}

/* dp2a.{lo,hi}.atype.btype d, a, b, c: a holds two 16-bit values, b four bytes of which
 * .lo uses bytes 0-1 and .hi bytes 2-3 (in->op 1 = hi). */
static int dp2a(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_SRC(1);
    EMU_SRC(2);
    const bool sa = in->type == EMU_T_S32, sb = in->type2 == EMU_T_S32;
    const unsigned first = in->op ? 2 : 0;
    EMU_FOR_LANES(mask, l, {
        int64_t acc = sa || sb ? (int64_t)(int32_t)s2[l] : (int64_t)(uint32_t)s2[l];
        for (unsigned i = 0; i < 2; i++) {
            uint32_t ah = (uint32_t)(s0[l] >> (16 * i)) & 0xffffu;
            uint32_t bb = (uint32_t)(s1[l] >> (8 * (first + i))) & 0xffu;
            int64_t x = sa ? (int16_t)ah : (int64_t)ah, y = sb ? (int8_t)bb : (int64_t)bb;
            acc += x * y;
        }
        d[l] = (uint32_t)acc;
    });
    return 0;
}

static unsigned width_index(emu_type t)
{
    switch (t) {
    case EMU_T_PRED: return 0;
    case EMU_T_B16: case EMU_T_U16: case EMU_T_S16: return 1;
    case EMU_T_B32: case EMU_T_U32: case EMU_T_S32: return 2;
    case EMU_T_B64: case EMU_T_U64: case EMU_T_S64: return 3;
    default: return 4;
    }
}

emu_fn emu_op_bits(const char *op, emu_type t)
{
    unsigned wi = width_index(t);
    if (wi > 3)
        return NULL;
    static const struct {
        const char *name;
        emu_fn f[4];   /* pred, 16, 32, 64 */
    } table[] = {
        {"and", {and_p, and_16, and_32, and_64}},
        {"or", {or_p, or_16, or_32, or_64}},
        {"xor", {xor_p, xor_16, xor_32, xor_64}},
        {"not", {not_p, not_16, not_32, not_64}},
        {"cnot", {NULL, cnot_16, cnot_32, cnot_64}},
        {"shl", {NULL, shl_16, shl_32, shl_64}},
        {"popc", {NULL, NULL, popc_32, popc_64}},
        {"clz", {NULL, NULL, clz_32, clz_64}},
        {"brev", {NULL, NULL, brev_32, brev_64}},
        {"bfind", {NULL, NULL, bfind, bfind}},
        {"bfe", {NULL, NULL, bfe, bfe}},
        {"bfi", {NULL, NULL, bfi, bfi}},
        {"lop3", {NULL, NULL, lop3, NULL}},
        {"shf", {NULL, NULL, shf, NULL}},
        {"prmt", {NULL, NULL, prmt, NULL}},
        {"dp4a", {NULL, NULL, dp4a, NULL}},
        {"dp2a", {NULL, NULL, dp2a, NULL}},
    };
    if (strcmp(op, "shr") == 0) {
        static const emu_fn u[4] = {NULL, shr_u16, shr_u32, shr_u64};
        static const emu_fn s[4] = {NULL, shr_s16, shr_s32, shr_s64};
        return emu_type_is_signed(t) ? s[wi] : u[wi];
    }
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(op, table[i].name) == 0)
            return table[i].f[wi];
    return NULL;
}
