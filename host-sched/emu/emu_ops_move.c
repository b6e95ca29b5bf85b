/* Data movement without memory: mov (scalar, vector pack and unpack), %clock reads,
 * cvta, isspacep, and the instructions that have no effect on the emulated machine
 * (prefetch, nanosleep, ...) or that order memory (membar, fence). Also the copy of
 * return values after a call. */
#include "emu_ops.h"
#include "kernelet/ptx.h"

#include <string.h>
#include <time.h>

static int mov(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_FOR_LANES(mask, l, d[l] = s0[l]);
    return 0;
}

/* mov.bN d, {a, b, ...}: the sources are the parts, first in the low bits. */
static int mov_pack(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    const unsigned n = in->n_src, part = emu_type_size((emu_type)in->type) * 8 / n;
    const uint64_t pmask = part >= 64 ? UINT64_MAX : (1ull << part) - 1;
    EMU_FOR_LANES(mask, l, {
        uint64_t v = 0;
        for (unsigned i = 0; i < n; i++)
            v |= (EMU_REG(w, in->src[i])[l] & pmask) << (i * part);
        d[l] = v;
    });
    return 0;
}

/* mov.bN {a, b, ...}, s: splits s; a sink destination is a scratch slot. */
static int mov_unpack(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_SRC(0);
    const unsigned n = in->n_dst, part = emu_type_size((emu_type)in->type) * 8 / n;
    const uint64_t pmask = part >= 64 ? UINT64_MAX : (1ull << part) - 1;
    EMU_FOR_LANES(mask, l, {
        uint64_t v = s0[l];
        for (unsigned i = 0; i < n; i++)
            EMU_REG(w, in->dst[i])[l] = (v >> (i * part)) & pmask;
    });
    return 0;
}

/* %clock, %clock64: the warp's instruction count (monotonic, deterministic);
 * %globaltimer: nanoseconds of the host's monotonic clock. in->op 1 = globaltimer. */
static int read_clock(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    uint64_t v = w->executed;
    if (in->op == 1) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    if (in->type == EMU_T_U32 || in->type == EMU_T_B32)
        v &= 0xffffffffu;
    EMU_FOR_LANES(mask, l, d[l] = v);
    return 0;
}

/* stacksave: the lane's stack pointer, as on the H100, whose stacks start at
 * KEMU_LOCAL_TOP and grow down (tests/gpu/ptx/stack_probe.c): below the kernel's local
 * variables, which lie under the top as a GPU's frames do, and less what the lane's
 * recursive invocations have saved (KEMU_STACK_BYTES at most), so that it is at or below
 * every local address and the fencing pass's stack guard sees the emulator's stack fill. */
static int stack_save(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    (void)in;
    const uint32_t *saved = w->blk->save_sp ? w->blk->save_sp + w->thread0 : NULL;
    const uint64_t sp = emu_local_base(w->code);
    EMU_FOR_LANES(mask, l, d[l] = sp - (saved ? saved[l] : 0));
    return 0;
}

static uint64_t window_of(unsigned space)
{
    switch (space) {
    case EMU_SPACE_SHARED: return EMU_SHARED_WINDOW;
    case EMU_SPACE_LOCAL: return EMU_LOCAL_WINDOW;
    case EMU_SPACE_PARAM: return EMU_PARAM_WINDOW;
    default: return 0;
    }
}

/* cvta.space: space address to generic (in->op 0) or generic to space (.to, op 1). */
static int cvta(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    const uint64_t base = window_of(in->space);
    const bool to = in->op == 1, narrow = emu_type_size((emu_type)in->type) == 4;
    EMU_FOR_LANES(mask, l, {
        uint64_t a = narrow ? (uint32_t)s0[l] : s0[l];
        uint64_t r = base == 0 ? a : to ? a - base : a + base;
        d[l] = narrow ? (uint32_t)r : r;
    });
    return 0;
}

static int isspacep(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_SRC(0);
    EMU_FOR_LANES(mask, l, {
        uint64_t win = s0[l] & ~(EMU_WINDOW_BYTES - 1);
        bool r;
        if (in->space == EMU_SPACE_GLOBAL || in->space == EMU_SPACE_CONST)
            r = win != EMU_SHARED_WINDOW && win != EMU_LOCAL_WINDOW && win != EMU_PARAM_WINDOW;
        else
            r = win == window_of(in->space);
        d[l] = r;
    });
    return 0;
}

static int nop(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    (void)w;
    (void)in;
    (void)mask;
    return 0;
}

static int fence(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    (void)w;
    (void)in;
    (void)mask;
    atomic_thread_fence(memory_order_seq_cst);
    return 0;
}

static int zero(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    EMU_DST;
    EMU_FOR_LANES(mask, l, d[l] = 0);
    return 0;
}

/* After a call: copies the callee's return values into the caller's variables (from the
 * return buffer when the callee is recursive: its frame was restored already). */
static int call_return(emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const emu_code *c = w->code;
    const emu_copylist *cl = &c->copylists[in->aux];
    const bool saved = in->flags & EMU_F_SAVE, indirect = in->flags & EMU_F_INDIRECT;
    EMU_FOR_LANES(mask, l, {
        /* through a pointer: the function this lane returned from says where results are */
        uint32_t f = indirect ? w->returned[l] : in->frame;
        const uint32_t formal = saved ? c->frames[f].formal_begin : 0;
        const emu_callee *ce = indirect ? &c->callees[f] : NULL;
        uint8_t *frame = emu_lane_pframe(w, l);
        for (uint32_t k = 0; k < cl->count; k++) {
            const emu_copy *cp = &c->copies[cl->first + k];
            uint32_t src = cp->src, bytes = cp->bytes;
            if (ce) {
                if (cp->src >= ce->n_rets)
                    continue;
                const emu_copy *ret = &c->callee_vars[ce->first + ce->n_params + cp->src];
                src = ret->dst;
                bytes = bytes < ret->bytes ? bytes : ret->bytes;
            }
            const uint8_t *from = saved ? emu_lane_retbuf(w, l) + (src - formal) : frame + src;
            memmove(frame + cp->dst, from, bytes);
        }
    });
    return 0;
}

emu_fn emu_op_move(const char *op, emu_type t)
{
    (void)t;
    static const struct {
        const char *name;
        emu_fn f;
    } table[] = {
        {"mov", mov}, {"mov.pack", mov_pack}, {"mov.unpack", mov_unpack},
        {"clock", read_clock}, {"cvta", cvta}, {"isspacep", isspacep},
        {"stacksave", stack_save},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(op, table[i].name) == 0)
            return table[i].f;
    return NULL;
}

emu_fn emu_op_misc(const char *op)
{
    static const struct {
        const char *name;
        emu_fn f;
    } table[] = {
        {"nop", nop}, {"fence", fence}, {"zero", zero}, {"call.return", call_return},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(op, table[i].name) == 0)
            return table[i].f;
    return NULL;
}
