/* Warp-level instructions: shfl, vote, match, redux, elect, activemask, bar.warp.sync.
 * The scheduler runs them only once every needed lane of the membermask is in the
 * executing group (emu_exec.c); here they see the whole warp's registers at once.
 * Participants are the executing lanes (guard true) that are in the membermask. */
#include "emu_ops.h"

#include <string.h>

uint32_t emu_membermask(const emu_warp *w, const emu_insn *in, uint32_t mask)
{
    if (in->src[4] == EMU_NO_SLOT)   /* non-.sync forms: the lanes executing */
        return mask;
    return (uint32_t)EMU_REG(w, in->src[4])[__builtin_ctz(mask)];
}

/* shfl: in->op EMU_WS_UP/DOWN/BFLY/IDX; src a, b, c; dst d and optional predicate. */
static int shfl(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    uint64_t a[EMU_WARP];
    memcpy(a, EMU_REG(w, in->src[0]), sizeof a);   /* read all before any write */
    const uint64_t *b = EMU_REG(w, in->src[1]), *c = EMU_REG(w, in->src[2]);
    uint64_t *d = EMU_REG(w, in->dst[0]);
    uint64_t *p = (in->flags & EMU_F_PRED_OUT) ? EMU_REG(w, in->dst[1]) : NULL;
    EMU_FOR_LANES(mask, l, {
        int lane = (int)l;
        int bval = (int)(b[l] & 0x1fu), cval = (int)(c[l] & 0x1fu);
        int segmask = (int)((c[l] >> 8) & 0x1fu);
        int max_lane = (lane & segmask) | (cval & ~segmask);
        int min_lane = lane & segmask;
        int j;
        bool pval;
        switch (in->op) {
        case EMU_WS_UP: j = lane - bval; pval = j >= max_lane; break;
        case EMU_WS_DOWN: j = lane + bval; pval = j <= max_lane; break;
        case EMU_WS_BFLY: j = lane ^ bval; pval = j <= max_lane; break;
        default: j = min_lane | (bval & ~segmask); pval = j <= max_lane; break;
        }
        if (!pval)
            j = lane;
        d[l] = (uint32_t)a[j & 31];
        if (p)
            p[l] = pval;
    });
    return 0;
}

static uint32_t pred_bits(const uint64_t *p, uint32_t lanes)
{
    uint32_t bits = 0;
    for (uint32_t m = lanes; m; m &= m - 1) {
        unsigned l = (unsigned)__builtin_ctz(m);
        bits |= (uint32_t)(p[l] & 1u) << l;
    }
    return bits;
}

/* vote: in->op EMU_WS_ALL/ANY/UNI/BALLOT over the participating lanes. */
static int vote(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const uint32_t part = mask & emu_membermask(w, in, mask);
    const uint32_t ballot = pred_bits(EMU_REG(w, in->src[0]), part);
    uint64_t r;
    switch (in->op) {
    case EMU_WS_ALL: r = ballot == part; break;
    case EMU_WS_ANY: r = ballot != 0; break;
    case EMU_WS_UNI: r = ballot == 0 || ballot == part; break;
    default: r = ballot; break;
    }
    uint64_t *d = EMU_REG(w, in->dst[0]);
    EMU_FOR_LANES(mask, l, d[l] = r);
    return 0;
}

static uint64_t width_value(uint64_t v, emu_type t)
{
    return emu_type_size(t) == 8 ? v : (uint32_t)v;
}

/* match.any: lanes holding the same value; match.all: all lanes or none, with p. */
static int match(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const uint32_t part = mask & emu_membermask(w, in, mask);
    const uint64_t *a = EMU_REG(w, in->src[0]);
    const emu_type t = (emu_type)in->type;
    uint64_t *d = EMU_REG(w, in->dst[0]);
    uint64_t *p = (in->flags & EMU_F_PRED_OUT) ? EMU_REG(w, in->dst[1]) : NULL;
    bool all_equal = true;
    if (part) {
        uint64_t first = width_value(a[__builtin_ctz(part)], t);
        for (uint32_t m = part; m; m &= m - 1)
            all_equal &= width_value(a[__builtin_ctz(m)], t) == first;
    }
    EMU_FOR_LANES(mask, l, {
        uint32_t same = 0;
        if (in->op == EMU_WS_MATCH_ANY) {
            for (uint32_t m = part; m; m &= m - 1) {
                unsigned k = (unsigned)__builtin_ctz(m);
                if (width_value(a[k], t) == width_value(a[l], t))
                    same |= 1u << k;
            }
        } else {
            same = all_equal ? part : 0;
        }
        d[l] = same;
        if (p)
            p[l] = all_equal;
    });
    return 0;
}

/* redux.sync: in->op EMU_WS_RED_*; 32-bit operands. */
static int redux(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const uint32_t part = mask & emu_membermask(w, in, mask);
    const uint64_t *a = EMU_REG(w, in->src[0]);
    const bool s = in->type == EMU_T_S32;
    uint32_t acc = 0;
    bool first = true;
    for (uint32_t m = part; m; m &= m - 1) {
        uint32_t v = (uint32_t)a[__builtin_ctz(m)];
        if (first) {
            acc = v;
            first = false;
            continue;
        }
        switch (in->op) {
        case EMU_WS_RED_ADD: acc += v; break;
        case EMU_WS_RED_MIN: acc = s ? ((int32_t)v < (int32_t)acc ? v : acc) : (v < acc ? v : acc); break;
        case EMU_WS_RED_MAX: acc = s ? ((int32_t)v > (int32_t)acc ? v : acc) : (v > acc ? v : acc); break;
        case EMU_WS_RED_AND: acc &= v; break;
        case EMU_WS_RED_OR: acc |= v; break;
        default: acc ^= v; break;
        }
    }
    uint64_t *d = EMU_REG(w, in->dst[0]);
    EMU_FOR_LANES(mask, l, d[l] = acc);
    return 0;
}

/* elect.sync d|p, membermask: the lowest participating lane is elected. */
static int elect(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const uint32_t part = mask & emu_membermask(w, in, mask);
    const unsigned leader = part ? (unsigned)__builtin_ctz(part) : 0;
    uint64_t *d = in->dst[0] != EMU_NO_SLOT ? EMU_REG(w, in->dst[0]) : NULL;
    uint64_t *p = EMU_REG(w, in->dst[1]);
    EMU_FOR_LANES(mask, l, {
        if (d)
            d[l] = leader;
        p[l] = part && l == leader;
    });
    return 0;
}

static int activemask(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    uint64_t *d = EMU_REG(w, in->dst[0]);
    const uint32_t active = w->group_mask;
    EMU_FOR_LANES(mask, l, d[l] = active);
    return 0;
}

static int warp_sync(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    (void)w;
    (void)in;
    (void)mask;
    return 0;
}

emu_fn emu_op_warp(const char *op, unsigned mode, emu_type t)
{
    (void)mode;
    (void)t;
    static const struct {
        const char *name;
        emu_fn f;
    } table[] = {
        {"shfl", shfl}, {"vote", vote}, {"match", match}, {"redux", redux},
        {"elect", elect}, {"activemask", activemask}, {"bar.warp.sync", warp_sync},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(op, table[i].name) == 0)
            return table[i].f;
    return NULL;
}
