/* Loads and stores in every state space, scalar and .v2/.v4, with per-lane bounds and
 * alignment checks (emu_access.c). A narrow load is sign- or zero-extended by its type; a
 * store writes the low bytes of the register. Source 0 is the address register (a zero
 * constant for absolute addresses), imm the offset. */
#include "emu_ops.h"

#include <string.h>

static inline uint64_t load_elem(const uint8_t *p, unsigned size, emu_type t)
{
    uint64_t v = 0;
    memcpy(&v, p, size);
    return emu_extend(v, t);
}

static inline uint64_t lane_address(const emu_insn *in, const uint64_t *base, unsigned l)
{
    uint64_t b = (in->flags & EMU_F_ADDR32) ? (uint32_t)base[l] : base[l];
    return b + (uint64_t)in->imm;
}

static int ld_any(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const uint64_t *base = EMU_REG(w, in->src[0]);
    const emu_type t = (emu_type)in->type;
    const unsigned es = emu_type_size(t), n = in->vec, bytes = es * n;
    EMU_FOR_LANES(mask, l, {
        const uint8_t *p = emu_space_ptr(w, in->space, lane_address(in, base, l), bytes, l, false);
        if (!p)
            return w->fault.code;
        for (unsigned k = 0; k < n; k++)
            EMU_REG(w, in->dst[k])[l] = load_elem(p + k * es, es, t);
    });
    return 0;
}

static int st_any(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const uint64_t *base = EMU_REG(w, in->src[0]);
    const unsigned es = emu_type_size((emu_type)in->type), n = in->vec, bytes = es * n;
    EMU_FOR_LANES(mask, l, {
        uint8_t *p = emu_space_ptr(w, in->space, lane_address(in, base, l), bytes, l, true);
        if (!p)
            return w->fault.code;
        for (unsigned k = 0; k < n; k++) {
            uint64_t v = EMU_REG(w, in->src[1 + k])[l];
            memcpy(p + k * es, &v, es);
        }
    });
    return 0;
}

/* Scalar global loads and stores of 4 and 8 bytes, the bulk of memory traffic. */
#define LD_GLOBAL(name, UT, T)                                                           \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        const uint64_t *base = EMU_REG(w, in->src[0]);                                   \
        uint64_t *d = EMU_REG(w, in->dst[0]);                                            \
        EMU_FOR_LANES(mask, l, {                                                         \
            const uint8_t *p = emu_global_ptr(w, base[l] + (uint64_t)in->imm, sizeof(UT), l); \
            if (!p)                                                                      \
                return w->fault.code;                                                    \
            UT v;                                                                        \
            memcpy(&v, p, sizeof v);                                                     \
            d[l] = (uint64_t)(T)v;                                                       \
        });                                                                              \
        return 0;                                                                        \
    }

LD_GLOBAL(ld_global_u32, uint32_t, uint32_t)
LD_GLOBAL(ld_global_s32, uint32_t, int32_t)
LD_GLOBAL(ld_global_64, uint64_t, uint64_t)

#define ST_GLOBAL(name, UT)                                                              \
    static int name(emu_warp *w, const emu_insn *in, uint32_t mask)                      \
    {                                                                                    \
        const uint64_t *base = EMU_REG(w, in->src[0]), *s = EMU_REG(w, in->src[1]);      \
        EMU_FOR_LANES(mask, l, {                                                         \
            uint8_t *p = emu_global_ptr(w, base[l] + (uint64_t)in->imm, sizeof(UT), l);  \
            if (!p)                                                                      \
                return w->fault.code;                                                    \
            UT v = (UT)s[l];                                                             \
            memcpy(p, &v, sizeof v);                                                     \
        });                                                                              \
        return 0;                                                                        \
    }

ST_GLOBAL(st_global_32, uint32_t)
ST_GLOBAL(st_global_64, uint64_t)

/* cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}: done at once (a valid
 * order: the data is there before any wait). src[0]/imm: destination; src[1] + src[2]:
 * source; in->op: cp-size; src[3]: src-size (bytes copied, the rest zero-filled), or when
 * in->type2 is .pred the ignore-src predicate (true: all zero). */
static int cp_async(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const uint64_t *dbase = EMU_REG(w, in->src[0]), *sbase = EMU_REG(w, in->src[1]);
    const uint64_t *soff = EMU_REG(w, in->src[2]);
    const uint64_t *ssize = in->src[3] != EMU_NO_SLOT ? EMU_REG(w, in->src[3]) : NULL;
    const unsigned size = in->op;
    EMU_FOR_LANES(mask, l, {
        uint32_t n = !ssize ? size
                   : in->type2 == EMU_T_PRED ? ((ssize[l] & 1u) ? 0 : size)
                                             : (uint32_t)ssize[l];
        if (n > size)
            n = size;
        uint8_t *dst = emu_space_ptr(w, EMU_SPACE_SHARED, lane_address(in, dbase, l), size, l,
                                     true);
        if (!dst)
            return w->fault.code;
        if (n) {
            const uint8_t *src = emu_space_ptr(w, EMU_SPACE_GLOBAL, sbase[l] + soff[l], size,
                                               l, false);
            if (!src)
                return w->fault.code;
            memcpy(dst, src, n);
        }
        memset(dst + n, 0, size - n);
    });
    return 0;
}

emu_fn emu_op_mem(const char *op, unsigned space, emu_type t, unsigned vec, uint16_t flags)
{
    unsigned size = emu_type_size(t);
    if (strcmp(op, "cp.async") == 0)
        return cp_async;
    if (size == 0 || size > 8 || t == EMU_T_PRED || (vec != 1 && vec != 2 && vec != 4))
        return NULL;
    bool global = space == EMU_SPACE_GLOBAL && !(flags & EMU_F_ADDR32), flat = vec == 1;
    if (strcmp(op, "ld") == 0) {
        if (global && flat && (t == EMU_T_U32 || t == EMU_T_B32 || t == EMU_T_F32))
            return ld_global_u32;
        if (global && flat && t == EMU_T_S32)
            return ld_global_s32;
        if (global && flat && size == 8)
            return ld_global_64;
        return ld_any;
    }
    if (strcmp(op, "st") == 0) {
        if (global && flat && size == 4)
            return st_global_32;
        if (global && flat && size == 8)
            return st_global_64;
        return st_any;
    }
    return NULL;
}
