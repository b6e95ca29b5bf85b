/* Atomics (atom, red) on global, shared and generic addresses, 32 and 64 bits: add
 * (integer, f32, f64), min, max, inc, dec, cas, exch, and, or, xor. Blocks run on
 * different host threads at once, so every operation is a real host atomic
 * (sequentially consistent, stronger than any .sem the instruction names). Lanes of a
 * warp apply theirs in lane order. atom.add.f32 flushes subnormals, as on the GPU. */
#include "emu_fp.h"
#include "emu_internal.h"

/* The new value of a read-modify-write whose result depends on the old one. */
static uint32_t update32(unsigned aop, emu_type t, uint32_t old, uint32_t b)
{
    bool s = emu_type_is_signed(t);
    switch (aop) {
    case EMU_AOP_ADD:
        if (t == EMU_T_F32) {
            float r = emu_ftz32(emu_ftz32(emu_f32(old)) + emu_ftz32(emu_f32(b)));
            return isnan(r) ? 0x7fffffffu : (uint32_t)emu_bits32(r);
        }
        return old + b;
    case EMU_AOP_MIN: return s ? ((int32_t)old < (int32_t)b ? old : b) : (old < b ? old : b);
    case EMU_AOP_MAX: return s ? ((int32_t)old > (int32_t)b ? old : b) : (old > b ? old : b);
    case EMU_AOP_INC: return old >= b ? 0 : old + 1;
    case EMU_AOP_DEC: return (old == 0 || old > b) ? b : old - 1;
    default: return b;
    }
}

static uint64_t update64(unsigned aop, emu_type t, uint64_t old, uint64_t b)
{
    bool s = emu_type_is_signed(t);
    switch (aop) {
    case EMU_AOP_ADD:
        if (t == EMU_T_F64)
            return emu_bits64(emu_f64(old) + emu_f64(b));
        return old + b;
    case EMU_AOP_MIN: return s ? ((int64_t)old < (int64_t)b ? old : b) : (old < b ? old : b);
    case EMU_AOP_MAX: return s ? ((int64_t)old > (int64_t)b ? old : b) : (old > b ? old : b);
    default: return b;
    }
}

/* One atomic read-modify-write of T at p: fetch-ops where the host has them, otherwise a
 * compare-and-swap loop around UPDATE. Returns the old value. */
#define ATOMIC_RMW(name, T, UPDATE, FLOAT_T)                                             \
    static T name(T *p, unsigned aop, emu_type t, T b, T c)                              \
    {                                                                                    \
        switch (aop) {                                                                   \
        case EMU_AOP_EXCH: return __atomic_exchange_n(p, b, __ATOMIC_SEQ_CST);           \
        case EMU_AOP_AND: return __atomic_fetch_and(p, b, __ATOMIC_SEQ_CST);             \
        case EMU_AOP_OR: return __atomic_fetch_or(p, b, __ATOMIC_SEQ_CST);               \
        case EMU_AOP_XOR: return __atomic_fetch_xor(p, b, __ATOMIC_SEQ_CST);             \
        case EMU_AOP_CAS: {                                                              \
            T expected = b;                                                              \
            __atomic_compare_exchange_n(p, &expected, c, false, __ATOMIC_SEQ_CST,        \
                                        __ATOMIC_SEQ_CST);                               \
            return expected;                                                             \
        }                                                                                \
        case EMU_AOP_ADD:                                                                \
            if (t != FLOAT_T)                                                            \
                return __atomic_fetch_add(p, b, __ATOMIC_SEQ_CST);                       \
            break;                                                                       \
        default:                                                                         \
            break;                                                                       \
        }                                                                                \
        T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                    \
        while (!__atomic_compare_exchange_n(p, &old, UPDATE(aop, t, old, b), false,      \
                                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))         \
            ;                                                                            \
        return old;                                                                      \
    }

ATOMIC_RMW(atomic32, uint32_t, update32, EMU_T_F32)
ATOMIC_RMW(atomic64, uint64_t, update64, EMU_T_F64)

/* atom d, [a], b{, c} or red [a], b: src 0 address, 1 b, 2 c; dst 0 when n_dst. */
static int atom(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const uint64_t *base = EMU_REG(w, in->src[0]), *b = EMU_REG(w, in->src[1]);
    const uint64_t *c = in->op == EMU_AOP_CAS ? EMU_REG(w, in->src[2]) : b;
    uint64_t *d = in->n_dst ? EMU_REG(w, in->dst[0]) : NULL;
    const emu_type t = (emu_type)in->type;
    const unsigned size = emu_type_size(t);
    EMU_FOR_LANES(mask, l, {
        uint64_t a = ((in->flags & EMU_F_ADDR32) ? (uint32_t)base[l] : base[l]) + (uint64_t)in->imm;
        uint8_t *p = emu_space_ptr(w, in->space, a, size, l, true);
        if (!p)
            return w->fault.code;
        uint64_t old = size == 8 ? atomic64((uint64_t *)(void *)p, in->op, t, b[l], c[l])
                                 : atomic32((uint32_t *)(void *)p, in->op, t, (uint32_t)b[l],
                                            (uint32_t)c[l]);
        if (d)
            d[l] = emu_extend(old, t);
    });
    return 0;
}

emu_fn emu_op_atom(unsigned space, unsigned aop, emu_type t, bool returns)
{
    (void)returns;
    if (space == EMU_SPACE_LOCAL || space == EMU_SPACE_PARAM || space == EMU_SPACE_CONST)
        return NULL;
    unsigned size = emu_type_size(t);
    if ((size != 4 && size != 8) || t == EMU_T_F16X2 || t == EMU_T_BF16X2)
        return NULL;
    bool is_float = t == EMU_T_F32 || t == EMU_T_F64;
    bool bits = t == EMU_T_B32 || t == EMU_T_B64;
    switch (aop) {
    case EMU_AOP_ADD: return bits ? NULL : atom;
    case EMU_AOP_MIN: case EMU_AOP_MAX: return is_float || bits ? NULL : atom;
    case EMU_AOP_INC: case EMU_AOP_DEC: return t == EMU_T_U32 ? atom : NULL;
    case EMU_AOP_CAS: case EMU_AOP_EXCH: case EMU_AOP_AND: case EMU_AOP_OR: case EMU_AOP_XOR:
        return is_float ? NULL : atom;
    default: return NULL;
    }
}
