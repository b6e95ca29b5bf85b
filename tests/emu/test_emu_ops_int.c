/* Integer, bit, comparison and integer-conversion instructions on the emulator against C
 * computations, over random operands (op_runner). Conventions checked here that PTX
 * leaves to the hardware: x / 0 gives all ones and x % 0 gives x; INT_MIN / -1 wraps. */
#include "op_runner.h"

#include <string.h>

#define REF(name, expr)                                                                    \
    static uint64_t name(uint64_t a, uint64_t b, uint64_t c)                             \
    {                                                                                    \
        (void)a;                                                                         \
        (void)b;                                                                         \
        (void)c;                                                                         \
        return (uint64_t)(expr);                                                         \
    }

#define U32(x) ((uint32_t)(x))
#define S32(x) ((int32_t)(uint32_t)(x))
#define U16(x) ((uint16_t)(x))
#define S16(x) ((int16_t)(uint16_t)(x))
#define S64(x) ((int64_t)(x))

static int64_t clamp32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v;
}

static uint64_t sdiv(int64_t a, int64_t b, int64_t min)
{
    return b == 0 ? (uint64_t)-1 : (a == min && b == -1) ? (uint64_t)a : (uint64_t)(a / b);
}

static uint64_t srem(int64_t a, int64_t b, int64_t min)
{
    return b == 0 ? (uint64_t)a : (a == min && b == -1) ? 0 : (uint64_t)(a % b);
}

REF(r_add32, U32(a + b))
REF(r_add64, a + b)
REF(r_sub32, U32(a - b))
REF(r_sub64, a - b)
REF(r_add16, U16(a + b))
REF(r_mullo32, U32(U32(a) * U32(b)))
REF(r_mullo64, a * b)
REF(r_mulhi_s32, U32(((int64_t)S32(a) * S32(b)) >> 32))
REF(r_mulhi_u32, U32(((uint64_t)U32(a) * U32(b)) >> 32))
REF(r_mulhi_u64, (uint64_t)(((unsigned __int128)a * b) >> 64))
REF(r_mulhi_s64, (uint64_t)(((__int128)S64(a) * S64(b)) >> 64))
REF(r_mulwide_s32, (uint64_t)((int64_t)S32(a) * S32(b)))
REF(r_mulwide_u32, (uint64_t)U32(a) * U32(b))
REF(r_mulwide_u16, U32((uint32_t)U16(a) * U16(b)))
REF(r_mulwide_s16, U32((int32_t)S16(a) * S16(b)))
REF(r_madlo_s32, U32(U32(a) * U32(b) + U32(c)))
REF(r_madhi_u32, U32((((uint64_t)U32(a) * U32(b)) >> 32) + U32(c)))
REF(r_madwide_s32, (uint64_t)((int64_t)S32(a) * S32(b)) + c)
REF(r_madhisat_s32, U32(clamp32((((int64_t)S32(a) * S32(b)) >> 32) + S32(c))))
REF(r_div_s32, U32(sdiv(S32(a), S32(b), INT32_MIN)))
REF(r_div_u32, U32(b) ? U32(U32(a) / U32(b)) : 0xffffffffu)
REF(r_div_s64, sdiv(S64(a), S64(b), INT64_MIN))
REF(r_div_u64, b ? a / b : UINT64_MAX)
REF(r_rem_s32, U32(srem(S32(a), S32(b), INT32_MIN)))
REF(r_rem_u32, U32(b) ? U32(a) % U32(b) : U32(a))
REF(r_rem_s64, srem(S64(a), S64(b), INT64_MIN))
REF(r_rem_u64, b ? a % b : a)
REF(r_min_s32, U32(S32(a) < S32(b) ? S32(a) : S32(b)))
REF(r_min_u32, U32(a) < U32(b) ? U32(a) : U32(b))
REF(r_max_s64, S64(a) > S64(b) ? a : b)
REF(r_max_u16, U16(a) > U16(b) ? U16(a) : U16(b))
REF(r_min_s16, U16(S16(a) < S16(b) ? S16(a) : S16(b)))
REF(r_abs_s32, U32(S32(a) < 0 ? 0u - U32(a) : U32(a)))
REF(r_abs_s64, S64(a) < 0 ? 0 - a : a)
REF(r_neg_s32, U32(0u - U32(a)))
REF(r_neg_s16, U16(0u - U16(a)))
REF(r_addsat_s32, U32(clamp32((int64_t)S32(a) + S32(b))))
REF(r_subsat_s32, U32(clamp32((int64_t)S32(a) - S32(b))))
REF(r_mul24lo_s32, U32((int64_t)((int32_t)(U32(a) << 8) >> 8) * ((int32_t)(U32(b) << 8) >> 8)))
REF(r_mul24hi_u32, U32(((uint64_t)(U32(a) & 0xffffff) * (U32(b) & 0xffffff)) >> 16))
REF(r_mad24lo_u32, U32((U32(a) & 0xffffff) * (U32(b) & 0xffffff) + U32(c)))
REF(r_sad_u32, U32((U32(a) > U32(b) ? U32(a) - U32(b) : U32(b) - U32(a)) + U32(c)))
REF(r_sad_s32, U32((S32(a) > S32(b) ? U32(a) - U32(b) : U32(b) - U32(a)) + U32(c)))

static const op_case arith_cases[] = {
    {"add.u32", "add.u32 %d, %a, %b;", ".u32", ".u32", ".u32", NULL, {GEN_INT, GEN_INT}, r_add32, NULL},
    {"add.s64", "add.s64 %d, %a, %b;", ".s64", ".s64", ".s64", NULL, {GEN_INT, GEN_INT}, r_add64, NULL},
    {"add.u16", "add.u16 %d, %a, %b;", ".u16", ".u16", ".u16", NULL, {GEN_INT, GEN_INT}, r_add16, NULL},
    {"sub.s32", "sub.s32 %d, %a, %b;", ".s32", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_sub32, NULL},
    {"sub.u64", "sub.u64 %d, %a, %b;", ".u64", ".u64", ".u64", NULL, {GEN_INT, GEN_INT}, r_sub64, NULL},
    {"mul.lo.s32", "mul.lo.s32 %d, %a, %b;", ".s32", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_mullo32, NULL},
    {"mul.lo.u64", "mul.lo.u64 %d, %a, %b;", ".u64", ".u64", ".u64", NULL, {GEN_INT, GEN_INT}, r_mullo64, NULL},
    {"mul.hi.s32", "mul.hi.s32 %d, %a, %b;", ".s32", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_mulhi_s32, NULL},
    {"mul.hi.u32", "mul.hi.u32 %d, %a, %b;", ".u32", ".u32", ".u32", NULL, {GEN_INT, GEN_INT}, r_mulhi_u32, NULL},
    {"mul.hi.u64", "mul.hi.u64 %d, %a, %b;", ".u64", ".u64", ".u64", NULL, {GEN_INT, GEN_INT}, r_mulhi_u64, NULL},
    {"mul.hi.s64", "mul.hi.s64 %d, %a, %b;", ".s64", ".s64", ".s64", NULL, {GEN_INT, GEN_INT}, r_mulhi_s64, NULL},
    {"mul.wide.s32", "mul.wide.s32 %d, %a, %b;", ".s64", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_mulwide_s32, NULL},
    {"mul.wide.u32", "mul.wide.u32 %d, %a, %b;", ".u64", ".u32", ".u32", NULL, {GEN_INT, GEN_INT}, r_mulwide_u32, NULL},
    {"mul.wide.u16", "mul.wide.u16 %d, %a, %b;", ".u32", ".u16", ".u16", NULL, {GEN_INT, GEN_INT}, r_mulwide_u16, NULL},
    {"mul.wide.s16", "mul.wide.s16 %d, %a, %b;", ".s32", ".s16", ".s16", NULL, {GEN_INT, GEN_INT}, r_mulwide_s16, NULL},
    {"mad.lo.s32", "mad.lo.s32 %d, %a, %b, %c;", ".s32", ".s32", ".s32", ".s32", {GEN_INT, GEN_INT, GEN_INT}, r_madlo_s32, NULL},
    {"mad.hi.u32", "mad.hi.u32 %d, %a, %b, %c;", ".u32", ".u32", ".u32", ".u32", {GEN_INT, GEN_INT, GEN_INT}, r_madhi_u32, NULL},
    {"mad.wide.s32", "mad.wide.s32 %d, %a, %b, %c;", ".s64", ".s32", ".s32", ".s64", {GEN_INT, GEN_INT, GEN_INT}, r_madwide_s32, NULL},
    {"mad.hi.sat.s32", "mad.hi.sat.s32 %d, %a, %b, %c;", ".s32", ".s32", ".s32", ".s32", {GEN_INT, GEN_INT, GEN_INT}, r_madhisat_s32, NULL},
    {"div.s32", "div.s32 %d, %a, %b;", ".s32", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_div_s32, NULL},
    {"div.u32", "div.u32 %d, %a, %b;", ".u32", ".u32", ".u32", NULL, {GEN_INT, GEN_INT}, r_div_u32, NULL},
    {"div.s64", "div.s64 %d, %a, %b;", ".s64", ".s64", ".s64", NULL, {GEN_INT, GEN_INT}, r_div_s64, NULL},
    {"div.u64", "div.u64 %d, %a, %b;", ".u64", ".u64", ".u64", NULL, {GEN_INT, GEN_INT}, r_div_u64, NULL},
    {"rem.s32", "rem.s32 %d, %a, %b;", ".s32", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_rem_s32, NULL},
    {"rem.u32", "rem.u32 %d, %a, %b;", ".u32", ".u32", ".u32", NULL, {GEN_INT, GEN_INT}, r_rem_u32, NULL},
    {"rem.s64", "rem.s64 %d, %a, %b;", ".s64", ".s64", ".s64", NULL, {GEN_INT, GEN_INT}, r_rem_s64, NULL},
    {"rem.u64", "rem.u64 %d, %a, %b;", ".u64", ".u64", ".u64", NULL, {GEN_INT, GEN_INT}, r_rem_u64, NULL},
    {"min.s32", "min.s32 %d, %a, %b;", ".s32", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_min_s32, NULL},
    {"min.u32", "min.u32 %d, %a, %b;", ".u32", ".u32", ".u32", NULL, {GEN_INT, GEN_INT}, r_min_u32, NULL},
    {"max.s64", "max.s64 %d, %a, %b;", ".s64", ".s64", ".s64", NULL, {GEN_INT, GEN_INT}, r_max_s64, NULL},
    {"max.u16", "max.u16 %d, %a, %b;", ".u16", ".u16", ".u16", NULL, {GEN_INT, GEN_INT}, r_max_u16, NULL},
    {"min.s16", "min.s16 %d, %a, %b;", ".s16", ".s16", ".s16", NULL, {GEN_INT, GEN_INT}, r_min_s16, NULL},
    {"abs.s32", "abs.s32 %d, %a;", ".s32", ".s32", NULL, NULL, {GEN_INT}, r_abs_s32, NULL},
    {"abs.s64", "abs.s64 %d, %a;", ".s64", ".s64", NULL, NULL, {GEN_INT}, r_abs_s64, NULL},
    {"neg.s32", "neg.s32 %d, %a;", ".s32", ".s32", NULL, NULL, {GEN_INT}, r_neg_s32, NULL},
    {"neg.s16", "neg.s16 %d, %a;", ".s16", ".s16", NULL, NULL, {GEN_INT}, r_neg_s16, NULL},
    {"add.sat.s32", "add.sat.s32 %d, %a, %b;", ".s32", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_addsat_s32, NULL},
    {"sub.sat.s32", "sub.sat.s32 %d, %a, %b;", ".s32", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_subsat_s32, NULL},
    {"mul24.lo.s32", "mul24.lo.s32 %d, %a, %b;", ".s32", ".s32", ".s32", NULL, {GEN_INT, GEN_INT}, r_mul24lo_s32, NULL},
    {"mul24.hi.u32", "mul24.hi.u32 %d, %a, %b;", ".u32", ".u32", ".u32", NULL, {GEN_INT, GEN_INT}, r_mul24hi_u32, NULL},
    {"mad24.lo.u32", "mad24.lo.u32 %d, %a, %b, %c;", ".u32", ".u32", ".u32", ".u32", {GEN_INT, GEN_INT, GEN_INT}, r_mad24lo_u32, NULL},
    {"sad.u32", "sad.u32 %d, %a, %b, %c;", ".u32", ".u32", ".u32", ".u32", {GEN_INT, GEN_INT, GEN_INT}, r_sad_u32, NULL},
    {"sad.s32", "sad.s32 %d, %a, %b, %c;", ".s32", ".s32", ".s32", ".s32", {GEN_INT, GEN_INT, GEN_INT}, r_sad_s32, NULL},
};

/* ---- Carry chains and vector moves ------------------------------------------------------------ */

REF(r_add64_via32, a + b)
REF(r_sub64_via32, a - b)
REF(r_madcc, (uint64_t)U32(a) * U32(b) + c)
REF(r_swap_halves, (a >> 32) | (a << 32))
REF(r_pack16, (uint64_t)U16(a) | (uint64_t)U16(b) << 16)

static const op_case chain_cases[] = {
    {"add.cc-addc", "mov.b64 {%u0, %u1}, %a; mov.b64 {%u2, %u3}, %b; add.cc.u32 %u0, %u0, %u2;"
                    " addc.u32 %u1, %u1, %u3; mov.b64 %d, {%u0, %u1};",
     ".b64", ".b64", ".b64", NULL, {GEN_INT, GEN_INT}, r_add64_via32, NULL},
    {"sub.cc-subc", "mov.b64 {%u0, %u1}, %a; mov.b64 {%u2, %u3}, %b; sub.cc.u32 %u0, %u0, %u2;"
                    " subc.u32 %u1, %u1, %u3; mov.b64 %d, {%u0, %u1};",
     ".b64", ".b64", ".b64", NULL, {GEN_INT, GEN_INT}, r_sub64_via32, NULL},
    {"mad.cc-madc", "mov.b64 {%u0, %u1}, %a; mov.b64 {%u2, %u3}, %b; mov.b64 {%u4, %u5}, %c;"
                    " mad.lo.cc.u32 %u6, %u0, %u2, %u4; madc.hi.u32 %u7, %u0, %u2, %u5;"
                    " mov.b64 %d, {%u6, %u7};",
     ".b64", ".b64", ".b64", ".b64", {GEN_INT, GEN_INT, GEN_INT}, r_madcc, NULL},
    {"mov-unpack-pack", "mov.b64 {%u0, %u1}, %a; mov.b64 %d, {%u1, %u0};", ".b64", ".b64", NULL,
     NULL, {GEN_INT}, r_swap_halves, NULL},
    {"mov-pack16", "mov.b32 %d, {%a, %b};", ".b32", ".b16", ".b16", NULL, {GEN_INT, GEN_INT},
     r_pack16, NULL},
};

/* ---- Bits ------------------------------------------------------------------------------------ */

static uint64_t bfe_ref(uint64_t a, unsigned pos, unsigned len, unsigned bits, bool sgn)
{
    pos &= 0xff;
    len &= 0xff;
    unsigned msb = bits - 1;
    uint64_t sbit = 0;
    if (sgn && len) {
        unsigned top = pos + len - 1 > msb ? msb : pos + len - 1;
        sbit = a >> top & 1;
    }
    uint64_t d = 0;
    for (unsigned i = 0; i <= msb; i++) {
        uint64_t bit = (i < len && pos + i <= msb) ? a >> (pos + i) & 1 : sbit;
        d |= bit << i;
    }
    return d;
}

static uint64_t bfi_ref(uint64_t a, uint64_t b, unsigned pos, unsigned len, unsigned bits)
{
    pos &= 0xff;
    len &= 0xff;
    for (unsigned i = 0; i < len && pos + i < bits; i++)
        b = (b & ~(1ull << (pos + i))) | ((a >> i & 1) << (pos + i));
    return b;
}

static uint64_t bfind_ref(uint64_t a, unsigned bits, bool sgn, bool shiftamt)
{
    uint64_t m = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    a &= m;
    if (sgn && a >> (bits - 1))
        a = ~a & m;
    for (int i = (int)bits - 1; i >= 0; i--)
        if (a >> i & 1)
            return shiftamt ? bits - 1 - (unsigned)i : (unsigned)i;
    return 0xffffffffu;
}

static uint64_t brev_ref(uint64_t a, unsigned bits)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < bits; i++)
        r |= (a >> i & 1) << (bits - 1 - i);
    return r;
}

static uint64_t clz_ref(uint64_t a, unsigned bits)
{
    unsigned n = 0;
    for (int i = (int)bits - 1; i >= 0 && !(a >> i & 1); i--)
        n++;
    return n;
}

static uint64_t popc_ref(uint64_t a, unsigned bits)
{
    unsigned n = 0;
    for (unsigned i = 0; i < bits; i++)
        n += a >> i & 1;
    return n;
}

static uint32_t prmt_ref(uint32_t a, uint32_t b, uint32_t c, int mode)
{
    /* byte selection tables of the PTX ISA for the special modes, as byte lists b3..b0 */
    static const uint8_t tables[6][4][4] = {
        {{3, 2, 1, 0}, {4, 3, 2, 1}, {5, 4, 3, 2}, {6, 5, 4, 3}},
        {{5, 6, 7, 0}, {6, 7, 0, 1}, {7, 0, 1, 2}, {0, 1, 2, 3}},
        {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},
        {{3, 2, 1, 0}, {3, 2, 1, 1}, {3, 2, 2, 2}, {3, 3, 3, 3}},
        {{0, 0, 0, 0}, {1, 1, 1, 0}, {2, 2, 1, 0}, {3, 2, 1, 0}},
        {{1, 0, 1, 0}, {3, 2, 3, 2}, {1, 0, 1, 0}, {3, 2, 3, 2}},
    };
    uint8_t src[8];
    for (int i = 0; i < 4; i++) {
        src[i] = (uint8_t)(a >> (8 * i));
        src[4 + i] = (uint8_t)(b >> (8 * i));
    }
    uint32_t d = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t byte;
        if (mode < 0) {
            unsigned sel = c >> (4 * i) & 0xf;
            byte = src[sel & 7];
            if (sel & 8)
                byte = (byte & 0x80) ? 0xff : 0;
        } else {
            byte = src[tables[mode][c & 3][3 - i]];
        }
        d |= (uint32_t)byte << (8 * i);
    }
    return d;
}

static uint32_t lop3_ref(uint32_t a, uint32_t b, uint32_t c, uint8_t lut)
{
    uint32_t d = 0;
    for (int i = 0; i < 32; i++) {
        unsigned idx = (a >> i & 1) << 2 | (b >> i & 1) << 1 | (c >> i & 1);
        d |= (uint32_t)(lut >> idx & 1) << i;
    }
    return d;
}

static uint32_t shf_ref(uint32_t a, uint32_t b, uint32_t n, bool right, bool clamp)
{
    n = clamp ? (n > 32 ? 32 : n) : n % 32;
    uint64_t v = (uint64_t)b << 32 | a;
    return right ? (uint32_t)(v >> n) : (uint32_t)(v << n >> 32);
}

static int64_t dp_part(uint32_t v, unsigned i, unsigned width, bool sgn)
{
    uint32_t x = v >> (i * width) & ((1u << width) - 1);
    if (sgn && (x >> (width - 1)))
        return (int64_t)x - ((int64_t)1 << width);
    return x;
}

static uint64_t dp4a_ref(uint32_t a, uint32_t b, uint32_t c, bool sa, bool sb)
{
    int64_t acc = sa || sb ? (int64_t)(int32_t)c : (int64_t)c;
    for (unsigned i = 0; i < 4; i++)
        acc += dp_part(a, i, 8, sa) * dp_part(b, i, 8, sb);
    return (uint32_t)acc;
}

static uint64_t dp2a_ref(uint32_t a, uint32_t b, uint32_t c, bool sa, bool sb, bool hi)
{
    int64_t acc = sa || sb ? (int64_t)(int32_t)c : (int64_t)c;
    for (unsigned i = 0; i < 2; i++)
        acc += dp_part(a, i, 16, sa) * dp_part(b, i + (hi ? 2 : 0), 8, sb);
    return (uint32_t)acc;
}

REF(r_and32, U32(a & b))
REF(r_or64, a | b)
REF(r_xor16, U16(a ^ b))
REF(r_not32, U32(~a))
REF(r_cnot32, U32(a) == 0)
REF(r_andp, (a & b) & 1)
REF(r_orp, (a | b) & 1)
REF(r_xorp, (a ^ b) & 1)
REF(r_notp, (a & 1) ^ 1)
REF(r_shl32, U32(b) >= 32 ? 0 : U32(U32(a) << U32(b)))
REF(r_shl64, U32(b) >= 64 ? 0 : a << U32(b))
REF(r_shr_u32, U32(b) >= 32 ? 0 : U32(a) >> U32(b))
REF(r_shr_s32, U32(S32(a) >> (U32(b) >= 32 ? 31 : U32(b))))
REF(r_shr_s64, (uint64_t)(S64(a) >> (U32(b) >= 64 ? 63 : U32(b))))
REF(r_shr_u16, U32(b) >= 16 ? 0 : U16(a) >> U32(b))
REF(r_popc32, popc_ref(U32(a), 32))
REF(r_popc64, popc_ref(a, 64))
REF(r_clz32, clz_ref(U32(a), 32))
REF(r_clz64, clz_ref(a, 64))
REF(r_brev32, brev_ref(U32(a), 32))
REF(r_brev64, brev_ref(a, 64))
REF(r_bfe_u32, bfe_ref(U32(a), U32(b), U32(c), 32, false))
REF(r_bfe_s32, U32(bfe_ref(U32(a), U32(b), U32(c), 32, true)))
REF(r_bfe_u64, bfe_ref(a, U32(b), U32(c), 64, false))
REF(r_bfe_s64, bfe_ref(a, U32(b), U32(c), 64, true))
REF(r_bfi32, U32(bfi_ref(U32(a), U32(b), U32(c) & 0xff, U32(c) >> 8 & 0xff, 32)))
REF(r_bfi64, bfi_ref(a, b, U32(c) & 0xff, U32(c) >> 8 & 0xff, 64))
REF(r_bfind_u32, bfind_ref(U32(a), 32, false, false))
REF(r_bfind_s32, bfind_ref(U32(a), 32, true, false))
REF(r_bfind_u64, bfind_ref(a, 64, false, false))
REF(r_bfind_s64, bfind_ref(a, 64, true, false))
REF(r_bfind_sa_u32, bfind_ref(U32(a), 32, false, true))
REF(r_prmt, prmt_ref(U32(a), U32(b), U32(c), -1))
REF(r_prmt_f4e, prmt_ref(U32(a), U32(b), U32(c), 0))
REF(r_prmt_b4e, prmt_ref(U32(a), U32(b), U32(c), 1))
REF(r_prmt_rc8, prmt_ref(U32(a), U32(b), U32(c), 2))
REF(r_prmt_ecl, prmt_ref(U32(a), U32(b), U32(c), 3))
REF(r_prmt_ecr, prmt_ref(U32(a), U32(b), U32(c), 4))
REF(r_prmt_rc16, prmt_ref(U32(a), U32(b), U32(c), 5))
REF(r_lop3_96, lop3_ref(U32(a), U32(b), U32(c), 0x96))
REF(r_lop3_e8, lop3_ref(U32(a), U32(b), U32(c), 0xe8))
REF(r_lop3_ca, lop3_ref(U32(a), U32(b), U32(c), 0xca))
REF(r_lop3_01, lop3_ref(U32(a), U32(b), U32(c), 0x01))
REF(r_shf_lw, shf_ref(U32(a), U32(b), U32(c), false, false))
REF(r_shf_rw, shf_ref(U32(a), U32(b), U32(c), true, false))
REF(r_shf_lc, shf_ref(U32(a), U32(b), U32(c), false, true))
REF(r_shf_rc, shf_ref(U32(a), U32(b), U32(c), true, true))
REF(r_dp4a_uu, dp4a_ref(U32(a), U32(b), U32(c), false, false))
REF(r_dp4a_ss, dp4a_ref(U32(a), U32(b), U32(c), true, true))
REF(r_dp4a_su, dp4a_ref(U32(a), U32(b), U32(c), true, false))
REF(r_dp2a_lo_ss, dp2a_ref(U32(a), U32(b), U32(c), true, true, false))
REF(r_dp2a_hi_us, dp2a_ref(U32(a), U32(b), U32(c), false, true, true))

#define B3 {GEN_INT, GEN_INT, GEN_INT}
static const op_case bit_cases[] = {
    {"and.b32", "and.b32 %d, %a, %b;", ".b32", ".b32", ".b32", NULL, B3, r_and32, NULL},
    {"or.b64", "or.b64 %d, %a, %b;", ".b64", ".b64", ".b64", NULL, B3, r_or64, NULL},
    {"xor.b16", "xor.b16 %d, %a, %b;", ".b16", ".b16", ".b16", NULL, B3, r_xor16, NULL},
    {"not.b32", "not.b32 %d, %a;", ".b32", ".b32", NULL, NULL, B3, r_not32, NULL},
    {"cnot.b32", "cnot.b32 %d, %a;", ".b32", ".b32", NULL, NULL, B3, r_cnot32, NULL},
    {"and.pred", "and.pred %d, %a, %b;", ".pred", ".pred", ".pred", NULL, {GEN_BOOL, GEN_BOOL}, r_andp, NULL},
    {"or.pred", "or.pred %d, %a, %b;", ".pred", ".pred", ".pred", NULL, {GEN_BOOL, GEN_BOOL}, r_orp, NULL},
    {"xor.pred", "xor.pred %d, %a, %b;", ".pred", ".pred", ".pred", NULL, {GEN_BOOL, GEN_BOOL}, r_xorp, NULL},
    {"not.pred", "not.pred %d, %a;", ".pred", ".pred", NULL, NULL, {GEN_BOOL}, r_notp, NULL},
    {"shl.b32", "shl.b32 %d, %a, %b;", ".b32", ".b32", ".u32", NULL, {GEN_INT, GEN_SMALL}, r_shl32, NULL},
    {"shl.b64", "shl.b64 %d, %a, %b;", ".b64", ".b64", ".u32", NULL, {GEN_INT, GEN_SMALL}, r_shl64, NULL},
    {"shr.u32", "shr.u32 %d, %a, %b;", ".u32", ".u32", ".u32", NULL, {GEN_INT, GEN_SMALL}, r_shr_u32, NULL},
    {"shr.s32", "shr.s32 %d, %a, %b;", ".s32", ".s32", ".u32", NULL, {GEN_INT, GEN_SMALL}, r_shr_s32, NULL},
    {"shr.s64", "shr.s64 %d, %a, %b;", ".s64", ".s64", ".u32", NULL, {GEN_INT, GEN_SMALL}, r_shr_s64, NULL},
    {"shr.u16", "shr.u16 %d, %a, %b;", ".u16", ".u16", ".u32", NULL, {GEN_INT, GEN_SMALL}, r_shr_u16, NULL},
    {"popc.b32", "popc.b32 %d, %a;", ".u32", ".b32", NULL, NULL, B3, r_popc32, NULL},
    {"popc.b64", "popc.b64 %d, %a;", ".u32", ".b64", NULL, NULL, B3, r_popc64, NULL},
    {"clz.b32", "clz.b32 %d, %a;", ".u32", ".b32", NULL, NULL, B3, r_clz32, NULL},
    {"clz.b64", "clz.b64 %d, %a;", ".u32", ".b64", NULL, NULL, B3, r_clz64, NULL},
    {"brev.b32", "brev.b32 %d, %a;", ".b32", ".b32", NULL, NULL, B3, r_brev32, NULL},
    {"brev.b64", "brev.b64 %d, %a;", ".b64", ".b64", NULL, NULL, B3, r_brev64, NULL},
    {"bfe.u32", "bfe.u32 %d, %a, %b, %c;", ".u32", ".u32", ".u32", ".u32", {GEN_INT, GEN_SMALL, GEN_SMALL}, r_bfe_u32, NULL},
    {"bfe.s32", "bfe.s32 %d, %a, %b, %c;", ".s32", ".s32", ".u32", ".u32", {GEN_INT, GEN_SMALL, GEN_SMALL}, r_bfe_s32, NULL},
    {"bfe.u64", "bfe.u64 %d, %a, %b, %c;", ".u64", ".u64", ".u32", ".u32", {GEN_INT, GEN_SMALL, GEN_SMALL}, r_bfe_u64, NULL},
    {"bfe.s64", "bfe.s64 %d, %a, %b, %c;", ".s64", ".s64", ".u32", ".u32", {GEN_INT, GEN_SMALL, GEN_SMALL}, r_bfe_s64, NULL},
    {"bfi.b32", "shr.u32 %u0, %c, 8; bfi.b32 %d, %a, %b, %c, %u0;", ".b32", ".b32", ".b32", ".u32", {GEN_INT, GEN_INT, GEN_POSLEN}, r_bfi32, NULL},
    {"bfi.b64", "shr.u32 %u0, %c, 8; bfi.b64 %d, %a, %b, %c, %u0;", ".b64", ".b64", ".b64", ".u32", {GEN_INT, GEN_INT, GEN_POSLEN}, r_bfi64, NULL},
    {"bfind.u32", "bfind.u32 %d, %a;", ".u32", ".u32", NULL, NULL, B3, r_bfind_u32, NULL},
    {"bfind.s32", "bfind.s32 %d, %a;", ".u32", ".s32", NULL, NULL, B3, r_bfind_s32, NULL},
    {"bfind.u64", "bfind.u64 %d, %a;", ".u32", ".u64", NULL, NULL, B3, r_bfind_u64, NULL},
    {"bfind.s64", "bfind.s64 %d, %a;", ".u32", ".s64", NULL, NULL, B3, r_bfind_s64, NULL},
    {"bfind.shiftamt.u32", "bfind.shiftamt.u32 %d, %a;", ".u32", ".u32", NULL, NULL, B3, r_bfind_sa_u32, NULL},
    {"prmt.b32", "prmt.b32 %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".b32", B3, r_prmt, NULL},
    {"prmt.b32.f4e", "prmt.b32.f4e %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".b32", B3, r_prmt_f4e, NULL},
    {"prmt.b32.b4e", "prmt.b32.b4e %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".b32", B3, r_prmt_b4e, NULL},
    {"prmt.b32.rc8", "prmt.b32.rc8 %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".b32", B3, r_prmt_rc8, NULL},
    {"prmt.b32.ecl", "prmt.b32.ecl %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".b32", B3, r_prmt_ecl, NULL},
    {"prmt.b32.ecr", "prmt.b32.ecr %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".b32", B3, r_prmt_ecr, NULL},
    {"prmt.b32.rc16", "prmt.b32.rc16 %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".b32", B3, r_prmt_rc16, NULL},
    {"lop3.b32-0x96", "lop3.b32 %d, %a, %b, %c, 0x96;", ".b32", ".b32", ".b32", ".b32", B3, r_lop3_96, NULL},
    {"lop3.b32-0xe8", "lop3.b32 %d, %a, %b, %c, 0xe8;", ".b32", ".b32", ".b32", ".b32", B3, r_lop3_e8, NULL},
    {"lop3.b32-0xca", "lop3.b32 %d, %a, %b, %c, 0xca;", ".b32", ".b32", ".b32", ".b32", B3, r_lop3_ca, NULL},
    {"lop3.b32-0x01", "lop3.b32 %d, %a, %b, %c, 1;", ".b32", ".b32", ".b32", ".b32", B3, r_lop3_01, NULL},
    {"shf.l.wrap", "shf.l.wrap.b32 %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".u32", {GEN_INT, GEN_INT, GEN_SMALL}, r_shf_lw, NULL},
    {"shf.r.wrap", "shf.r.wrap.b32 %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".u32", {GEN_INT, GEN_INT, GEN_SMALL}, r_shf_rw, NULL},
    {"shf.l.clamp", "shf.l.clamp.b32 %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".u32", {GEN_INT, GEN_INT, GEN_SMALL}, r_shf_lc, NULL},
    {"shf.r.clamp", "shf.r.clamp.b32 %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".u32", {GEN_INT, GEN_INT, GEN_SMALL}, r_shf_rc, NULL},
    {"dp4a.u32.u32", "dp4a.u32.u32 %d, %a, %b, %c;", ".u32", ".u32", ".u32", ".u32", B3, r_dp4a_uu, NULL},
    {"dp4a.s32.s32", "dp4a.s32.s32 %d, %a, %b, %c;", ".s32", ".s32", ".s32", ".s32", B3, r_dp4a_ss, NULL},
    {"dp4a.s32.u32", "dp4a.s32.u32 %d, %a, %b, %c;", ".s32", ".s32", ".u32", ".s32", B3, r_dp4a_su, NULL},
    {"dp2a.lo.s32.s32", "dp2a.lo.s32.s32 %d, %a, %b, %c;", ".s32", ".s32", ".s32", ".s32", B3, r_dp2a_lo_ss, NULL},
    {"dp2a.hi.u32.s32", "dp2a.hi.u32.s32 %d, %a, %b, %c;", ".s32", ".u32", ".s32", ".s32", B3, r_dp2a_hi_us, NULL},
};

/* ---- Comparison, selection ------------------------------------------------------------------- */

REF(r_setp_eq_s32, S32(a) == S32(b))
REF(r_setp_ne_s32, S32(a) != S32(b))
REF(r_setp_lt_s32, S32(a) < S32(b))
REF(r_setp_le_s32, S32(a) <= S32(b))
REF(r_setp_gt_s32, S32(a) > S32(b))
REF(r_setp_ge_s32, S32(a) >= S32(b))
REF(r_setp_lt_u32, U32(a) < U32(b))
REF(r_setp_lo_u32, U32(a) < U32(b))
REF(r_setp_ls_u32, U32(a) <= U32(b))
REF(r_setp_hi_u32, U32(a) > U32(b))
REF(r_setp_hs_u32, U32(a) >= U32(b))
REF(r_setp_lt_u64, a < b)
REF(r_setp_ge_s64, S64(a) >= S64(b))
REF(r_setp_lt_s16, S16(a) < S16(b))
REF(r_setp_lt_and, (S32(a) < S32(b)) && (c & 1))
REF(r_setp_lt_or_not, (S32(a) < S32(b)) || !(c & 1))
REF(r_setp_gt_xor_q, (!(S32(a) > S32(b))) != (c & 1))
REF(r_selp32, (c & 1) ? U32(a) : U32(b))
REF(r_selp64, (c & 1) ? a : b)
REF(r_slct_s32, S32(c) >= 0 ? U32(a) : U32(b))
REF(r_set_lt, S32(a) < S32(b) ? 0xffffffffu : 0)
REF(r_set_eq_f, U32(a) == U32(b) ? 0x3f800000u : 0)

static const op_case cmp_cases[] = {
    {"setp.eq.s32", "setp.eq.s32 %d, %a, %b;", ".pred", ".s32", ".s32", NULL, B3, r_setp_eq_s32, NULL},
    {"setp.ne.s32", "setp.ne.s32 %d, %a, %b;", ".pred", ".s32", ".s32", NULL, B3, r_setp_ne_s32, NULL},
    {"setp.lt.s32", "setp.lt.s32 %d, %a, %b;", ".pred", ".s32", ".s32", NULL, B3, r_setp_lt_s32, NULL},
    {"setp.le.s32", "setp.le.s32 %d, %a, %b;", ".pred", ".s32", ".s32", NULL, B3, r_setp_le_s32, NULL},
    {"setp.gt.s32", "setp.gt.s32 %d, %a, %b;", ".pred", ".s32", ".s32", NULL, B3, r_setp_gt_s32, NULL},
    {"setp.ge.s32", "setp.ge.s32 %d, %a, %b;", ".pred", ".s32", ".s32", NULL, B3, r_setp_ge_s32, NULL},
    {"setp.lt.u32", "setp.lt.u32 %d, %a, %b;", ".pred", ".u32", ".u32", NULL, B3, r_setp_lt_u32, NULL},
    {"setp.lo.u32", "setp.lo.u32 %d, %a, %b;", ".pred", ".u32", ".u32", NULL, B3, r_setp_lo_u32, NULL},
    {"setp.ls.u32", "setp.ls.u32 %d, %a, %b;", ".pred", ".u32", ".u32", NULL, B3, r_setp_ls_u32, NULL},
    {"setp.hi.u32", "setp.hi.u32 %d, %a, %b;", ".pred", ".u32", ".u32", NULL, B3, r_setp_hi_u32, NULL},
    {"setp.hs.u32", "setp.hs.u32 %d, %a, %b;", ".pred", ".u32", ".u32", NULL, B3, r_setp_hs_u32, NULL},
    {"setp.lt.u64", "setp.lt.u64 %d, %a, %b;", ".pred", ".u64", ".u64", NULL, B3, r_setp_lt_u64, NULL},
    {"setp.ge.s64", "setp.ge.s64 %d, %a, %b;", ".pred", ".s64", ".s64", NULL, B3, r_setp_ge_s64, NULL},
    {"setp.lt.s16", "setp.lt.s16 %d, %a, %b;", ".pred", ".s16", ".s16", NULL, B3, r_setp_lt_s16, NULL},
    {"setp.lt.and.s32", "setp.lt.and.s32 %d, %a, %b, %c;", ".pred", ".s32", ".s32", ".pred", {GEN_INT, GEN_INT, GEN_BOOL}, r_setp_lt_and, NULL},
    {"setp.lt.or.s32-not", "setp.lt.or.s32 %d, %a, %b, !%c;", ".pred", ".s32", ".s32", ".pred", {GEN_INT, GEN_INT, GEN_BOOL}, r_setp_lt_or_not, NULL},
    {"setp.gt.xor.s32-pair", "setp.gt.xor.s32 %p0|%d, %a, %b, %c;", ".pred", ".s32", ".s32", ".pred", {GEN_INT, GEN_INT, GEN_BOOL}, r_setp_gt_xor_q, NULL},
    {"selp.b32", "selp.b32 %d, %a, %b, %c;", ".b32", ".b32", ".b32", ".pred", {GEN_INT, GEN_INT, GEN_BOOL}, r_selp32, NULL},
    {"selp.b64", "selp.b64 %d, %a, %b, %c;", ".b64", ".b64", ".b64", ".pred", {GEN_INT, GEN_INT, GEN_BOOL}, r_selp64, NULL},
    {"slct.u32.s32", "slct.u32.s32 %d, %a, %b, %c;", ".u32", ".u32", ".u32", ".s32", B3, r_slct_s32, NULL},
    {"set.lt.u32.s32", "set.lt.u32.s32 %d, %a, %b;", ".u32", ".s32", ".s32", NULL, B3, r_set_lt, NULL},
    {"set.eq.f32.u32", "set.eq.f32.u32 %d, %a, %b;", ".f32", ".u32", ".u32", NULL, {GEN_BOOL, GEN_BOOL}, r_set_eq_f, NULL},
};

/* ---- Integer conversions ----------------------------------------------------------------------- */

static uint64_t sat_s(int64_t v, unsigned bits)
{
    int64_t lo = -(1ll << (bits - 1)), hi = (1ll << (bits - 1)) - 1;
    return (uint64_t)(v < lo ? lo : v > hi ? hi : v);
}

static uint64_t sat_u(int64_t v, unsigned bits)
{
    int64_t hi = (int64_t)((1ull << bits) - 1);
    return (uint64_t)(v < 0 ? 0 : v > hi ? hi : v);
}

REF(r_cvt_u32_u64, U32(a))
REF(r_cvt_s64_s32, (uint64_t)(int64_t)S32(a))
REF(r_cvt_u64_u32, (uint64_t)U32(a))
REF(r_cvt_s32_s8, U32((int32_t)(int8_t)a))
REF(r_cvt_u32_u8, U32((uint8_t)a))
REF(r_cvt_s16_s32, U16(a))
REF(r_cvt_sat_s8_s32, U16((int16_t)(int8_t)sat_s(S32(a), 8)))
REF(r_cvt_sat_u16_s32, U16(sat_u(S32(a), 16)))
REF(r_cvt_sat_s32_u64, U32(a > (uint64_t)INT32_MAX ? INT32_MAX : a))
REF(r_cvt_sat_u32_s64, U32(S64(a) < 0 ? 0 : a > UINT32_MAX ? UINT32_MAX : a))
REF(r_cvt_sat_u32_s32, U32(S32(a) < 0 ? 0 : U32(a)))

static const op_case cvt_cases[] = {
    {"cvt.u32.u64", "cvt.u32.u64 %d, %a;", ".u32", ".u64", NULL, NULL, B3, r_cvt_u32_u64, NULL},
    {"cvt.s64.s32", "cvt.s64.s32 %d, %a;", ".s64", ".s32", NULL, NULL, B3, r_cvt_s64_s32, NULL},
    {"cvt.u64.u32", "cvt.u64.u32 %d, %a;", ".u64", ".u32", NULL, NULL, B3, r_cvt_u64_u32, NULL},
    {"cvt.s32.s8", "cvt.s32.s8 %d, %a;", ".s32", ".s32", NULL, NULL, B3, r_cvt_s32_s8, NULL},
    {"cvt.u32.u8", "cvt.u32.u8 %d, %a;", ".u32", ".u32", NULL, NULL, B3, r_cvt_u32_u8, NULL},
    {"cvt.s16.s32", "cvt.s16.s32 %d, %a;", ".s16", ".s32", NULL, NULL, B3, r_cvt_s16_s32, NULL},
    {"cvt.sat.s8.s32", "cvt.sat.s8.s32 %d, %a;", ".s16", ".s32", NULL, NULL, B3, r_cvt_sat_s8_s32, NULL},
    {"cvt.sat.u16.s32", "cvt.sat.u16.s32 %d, %a;", ".u16", ".s32", NULL, NULL, B3, r_cvt_sat_u16_s32, NULL},
    {"cvt.sat.s32.u64", "cvt.sat.s32.u64 %d, %a;", ".s32", ".u64", NULL, NULL, B3, r_cvt_sat_s32_u64, NULL},
    {"cvt.sat.u32.s64", "cvt.sat.u32.s64 %d, %a;", ".u32", ".s64", NULL, NULL, B3, r_cvt_sat_u32_s64, NULL},
    {"cvt.sat.u32.s32", "cvt.sat.u32.s32 %d, %a;", ".u32", ".s32", NULL, NULL, B3, r_cvt_sat_u32_s32, NULL},
};

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    op_add_tests("/emu/ops/int", arith_cases, G_N_ELEMENTS(arith_cases));
    op_add_tests("/emu/ops/carry", chain_cases, G_N_ELEMENTS(chain_cases));
    op_add_tests("/emu/ops/bits", bit_cases, G_N_ELEMENTS(bit_cases));
    op_add_tests("/emu/ops/compare", cmp_cases, G_N_ELEMENTS(cmp_cases));
    op_add_tests("/emu/ops/cvt-int", cvt_cases, G_N_ELEMENTS(cvt_cases));
    return g_test_run();
}
