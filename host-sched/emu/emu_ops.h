/* Building blocks of the instruction handlers (emu_ops_*.c): operand access and the
 * handler shapes that most integer and bit operations share. */
#ifndef KERNELET_EMU_OPS_H
#define KERNELET_EMU_OPS_H

#include "emu_internal.h"

#define EMU_SRC(i) const uint64_t *s##i = EMU_REG(w, in->src[i])
#define EMU_DST uint64_t *d = EMU_REG(w, in->dst[0])

/* A handler computing d = (UT)(expr) from the raw 64-bit operands a (and b). */
#define EMU_OP1(name, UT, expr)                                                          \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        EMU_DST;                                                                         \
        EMU_SRC(0);                                                                      \
        EMU_FOR_LANES(mask, l, {                                                         \
            uint64_t a = s0[l];                                                          \
            d[l] = (UT)(expr);                                                           \
        });                                                                              \
        return 0;                                                                        \
    }

#define EMU_OP2(name, UT, expr)                                                          \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        EMU_DST;                                                                         \
        EMU_SRC(0);                                                                      \
        EMU_SRC(1);                                                                      \
        EMU_FOR_LANES(mask, l, {                                                         \
            uint64_t a = s0[l], b = s1[l];                                               \
            d[l] = (UT)(expr);                                                           \
        });                                                                              \
        return 0;                                                                        \
    }

/* The same with the operands converted to T first (signed comparisons, division). */
#define EMU_OP2_AS(name, T, UT, expr)                                                    \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        EMU_DST;                                                                         \
        EMU_SRC(0);                                                                      \
        EMU_SRC(1);                                                                      \
        EMU_FOR_LANES(mask, l, {                                                         \
            T a = (T)s0[l], b = (T)s1[l];                                                \
            d[l] = (UT)(expr);                                                           \
        });                                                                              \
        return 0;                                                                        \
    }

#endif
