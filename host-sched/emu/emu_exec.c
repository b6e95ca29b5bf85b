/* Running one thread block: warps in lock-step, divergence, barriers, warp sync.
 *
 * Each lane (thread) has its own pc. A warp executes one *group* at a time: the runnable
 * lanes that share the lowest pc, all together, one instruction for all of them per step
 * (min-pc scheduling). A branch that splits the group stores each lane's pc and the warp
 * picks the lowest pc again; lanes meet again where the group's pc reaches another
 * lane's pc (stop_pc), which for the code compilers emit is the reconvergence point.
 * This needs no control-flow analysis and handles any control flow, calls and returns.
 *
 * Barriers count threads (bar.sync waits for every thread of the block that has not
 * exited, or for the given count): lanes that arrive leave the runnable set until the
 * barrier completes, and the block switches to its other warps. Warp-synchronous
 * instructions (shfl, vote, match, redux, bar.warp.sync) run only when every non-exited
 * lane of their membermask is in the executing group; lanes that come early wait.
 * A spinning group (many backward branches while other lanes wait) lets the other
 * groups of its warp run from time to time, and warps yield after a time slice, so
 * locks and flags between threads make progress as with independent thread scheduling.
 */
#include "emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMU_SLICE 16384u        /* warp instructions before the block switches warps */
#define EMU_SPIN_LIMIT 4096u    /* backward branches before other groups get a turn */

static unsigned popc(uint32_t m)
{
    return (unsigned)__builtin_popcount(m);
}

/* ---- Block context --------------------------------------------------------------------- */

emu_block *emu_block_new(emu_launch *L, unsigned participant)
{
    const emu_code *c = L->code;
    emu_block *blk = calloc(1, sizeof *blk);
    if (!blk)
        return NULL;
    blk->L = L;
    blk->participant = participant;
    blk->n_threads = L->block[0] * L->block[1] * L->block[2];
    blk->n_warps = (blk->n_threads + EMU_WARP - 1) / EMU_WARP;
    blk->shared_bytes = L->shared_total;
    size_t regs = (size_t)c->n_slots * EMU_WARP;
    size_t depth = c->max_depth ? c->max_depth : 1;
    blk->warps = calloc(blk->n_warps, sizeof *blk->warps);
    blk->regfile = calloc(regs * blk->n_warps, sizeof *blk->regfile);
    blk->shared = calloc(1, blk->shared_bytes ? blk->shared_bytes : 1);
    blk->local = calloc(1, (size_t)blk->n_threads * c->local_bytes + 1);
    blk->pframe = calloc(1, (size_t)blk->n_threads * c->pframe_bytes + 1);
    blk->ret_stacks = calloc((size_t)blk->n_warps * EMU_WARP * depth, sizeof(uint32_t));
    if (c->save_bytes) {
        blk->save = malloc((size_t)blk->n_threads * c->save_bytes);
        blk->save_sp = calloc(blk->n_threads, sizeof *blk->save_sp);
        blk->retbuf = calloc(blk->n_threads, c->retbuf_bytes + 1);
    }
    if (!blk->warps || !blk->regfile || !blk->shared || !blk->local || !blk->pframe ||
        !blk->ret_stacks || (c->save_bytes && (!blk->save || !blk->save_sp || !blk->retbuf))) {
        emu_block_free(blk);
        return NULL;
    }
    unsigned nx = L->block[0], ny = L->block[1];
    for (unsigned i = 0; i < blk->n_warps; i++) {
        emu_warp *w = &blk->warps[i];
        w->blk = blk;
        w->code = c;
        w->regs = blk->regfile + regs * i;
        w->ret_stack = blk->ret_stacks + (size_t)i * EMU_WARP * depth;
        w->warp_id = i;
        w->thread0 = i * EMU_WARP;
        unsigned n = blk->n_threads - w->thread0;
        w->valid = n >= EMU_WARP ? EMU_FULL_MASK : (1u << n) - 1;
        /* Constants and the special registers that do not change between blocks. */
        for (uint32_t k = 0; k < c->n_consts; k++) {
            uint64_t *r = EMU_REG(w, c->const_base + k);
            for (unsigned l = 0; l < EMU_WARP; l++)
                r[l] = c->const_values[k];
        }
        for (unsigned l = 0; l < EMU_WARP; l++) {
            unsigned t = w->thread0 + l;
            uint64_t v[EMU_SR_COUNT] = {0};
            v[EMU_SR_TID_X] = t % nx;
            v[EMU_SR_TID_Y] = (t / nx) % ny;
            v[EMU_SR_TID_Z] = t / (nx * ny);
            v[EMU_SR_NTID_X] = L->block[0];
            v[EMU_SR_NTID_Y] = L->block[1];
            v[EMU_SR_NTID_Z] = L->block[2];
            v[EMU_SR_NCTAID_X] = L->grid[0];
            v[EMU_SR_NCTAID_Y] = L->grid[1];
            v[EMU_SR_NCTAID_Z] = L->grid[2];
            v[EMU_SR_LANEID] = l;
            v[EMU_SR_WARPID] = i;
            v[EMU_SR_NWARPID] = blk->n_warps;
            v[EMU_SR_SMID] = participant;
            v[EMU_SR_NSMID] = L->workers;
            v[EMU_SR_GRIDID] = L->gridid;
            v[EMU_SR_LANEMASK_EQ] = 1u << l;
            v[EMU_SR_LANEMASK_LT] = (1u << l) - 1;
            v[EMU_SR_LANEMASK_LE] = l == 31 ? EMU_FULL_MASK : (2u << l) - 1;
            v[EMU_SR_LANEMASK_GT] = ~(uint32_t)v[EMU_SR_LANEMASK_LE];
            v[EMU_SR_LANEMASK_GE] = ~(uint32_t)v[EMU_SR_LANEMASK_LT];
            v[EMU_SR_DYN_SMEM] = L->dyn_shared;
            v[EMU_SR_TOTAL_SMEM] = L->shared_total;
            for (unsigned s = 0; s < EMU_SR_COUNT; s++)
                if (c->sreg_slot[s] != EMU_NO_SLOT)
                    EMU_REG(w, c->sreg_slot[s])[l] = v[s];
        }
    }
    return blk;
}

void emu_block_free(emu_block *blk)
{
    if (!blk)
        return;
    free(blk->warps);
    free(blk->regfile);
    free(blk->shared);
    free(blk->local);
    free(blk->pframe);
    free(blk->ret_stacks);
    free(blk->save);
    free(blk->save_sp);
    free(blk->retbuf);
    free(blk);
}

/* n bytes of a block's memory as a GPU would hand them over: zeroed, or every word the
 * device's residue_word (what earlier kernels left, kemu_device_config). */
static void fill_onchip(void *p, size_t n, uint32_t word)
{
    if (!word) {
        memset(p, 0, n);
        return;
    }
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(word >> (8 * (i % 4)));
}

static void block_reset(emu_block *blk, uint64_t linear)
{
    const emu_launch *L = blk->L;
    const emu_code *c = L->code;
    blk->ctaid[0] = (uint32_t)(linear % L->grid[0]);
    blk->ctaid[1] = (uint32_t)(linear / L->grid[0] % L->grid[1]);
    blk->ctaid[2] = (uint32_t)(linear / ((uint64_t)L->grid[0] * L->grid[1]));
    blk->live = blk->n_threads;
    memset(blk->bar_arrived, 0, sizeof blk->bar_arrived);
    memset(blk->bar_expected, 0, sizeof blk->bar_expected);
    memset(blk->bar_red, 0, sizeof blk->bar_red);
    memset(blk->bar_insn, 0, sizeof blk->bar_insn);
    uint32_t residue = L->dev->cfg.residue_word;
    fill_onchip(blk->shared, blk->shared_bytes, residue);
    fill_onchip(blk->local, (size_t)blk->n_threads * c->local_bytes, residue);
    memset(blk->pframe, 0, (size_t)blk->n_threads * c->pframe_bytes);
    if (blk->save_sp)
        memset(blk->save_sp, 0, blk->n_threads * sizeof *blk->save_sp);
    for (unsigned i = 0; i < blk->n_warps; i++) {
        emu_warp *w = &blk->warps[i];
        memset(w->regs, 0, (size_t)c->n_regs * EMU_WARP * sizeof *w->regs);
        static const emu_sreg ctaid[3] = {EMU_SR_CTAID_X, EMU_SR_CTAID_Y, EMU_SR_CTAID_Z};
        for (unsigned d = 0; d < 3; d++) {
            uint32_t slot = c->sreg_slot[ctaid[d]];
            if (slot != EMU_NO_SLOT)
                for (unsigned l = 0; l < EMU_WARP; l++)
                    EMU_REG(w, slot)[l] = blk->ctaid[d];
        }
        memset(w->lane_pc, 0, sizeof w->lane_pc);
        memset(w->carry, 0, sizeof w->carry);
        memset(w->depth, 0, sizeof w->depth);
        w->run = w->valid;
        w->exited = 0;
        w->barrier = 0;
        w->syncwait = 0;
        w->group_mask = 0;
        w->executed = 0;
        w->thread_insns = 0;
        w->backjumps = 0;
        w->cache = NULL;
        memset(&w->fault, 0, sizeof w->fault);
    }
}

/* ---- Scheduling within a warp ----------------------------------------------------------- */

static void lanes_set_pc(emu_warp *w, uint32_t lanes, uint32_t pc)
{
    for (; lanes; lanes &= lanes - 1)
        w->lane_pc[__builtin_ctz(lanes)] = pc;
}

/* Picks the next group: the lowest pc among runnable lanes, or with after != EMU_NO_PC the
 * lowest pc above `after` (wrapping), which lets a spinning group yield to the others.
 * Waiting lanes at the chosen pc join. Returns false when no lane can run. */
static bool schedule(emu_warp *w, uint32_t after)
{
    if (!w->run)
        return false;
    uint32_t best = EMU_NO_PC, lowest = EMU_NO_PC;
    for (uint32_t m = w->run; m; m &= m - 1) {
        uint32_t pc = w->lane_pc[__builtin_ctz(m)];
        if (pc < lowest)
            lowest = pc;
        if (after != EMU_NO_PC && pc > after && pc < best)
            best = pc;
    }
    uint32_t pick = best != EMU_NO_PC ? best : lowest;
    uint32_t group = 0, stop = EMU_NO_PC;
    for (uint32_t m = w->run | w->syncwait; m; m &= m - 1) {
        unsigned l = (unsigned)__builtin_ctz(m);
        uint32_t pc = w->lane_pc[l];
        if (pc == pick)
            group |= 1u << l;
        else if (pc > pick && pc < stop)
            stop = pc;
    }
    w->syncwait &= ~group;
    w->run |= group;
    w->group_pc = pick;
    w->group_mask = group;
    w->stop_pc = stop;
    return true;
}

static uint32_t guard_mask(const emu_warp *w, const emu_insn *in, uint32_t mask)
{
    const uint64_t *p = EMU_REG(w, in->guard);
    uint32_t bits = 0;
    for (unsigned l = 0; l < EMU_WARP; l++)
        bits |= (uint32_t)(p[l] & 1u) << l;
    return (in->guard_neg ? ~bits : bits) & mask;
}

/* ---- Barriers ---------------------------------------------------------------------------- */

static void barrier_release(emu_block *blk, unsigned id)
{
    const emu_insn *in = blk->bar_insn[id];
    for (unsigned i = 0; i < blk->n_warps; i++) {
        emu_warp *w = &blk->warps[i];
        uint32_t lanes = 0;
        for (uint32_t m = w->barrier; m; m &= m - 1) {
            unsigned l = (unsigned)__builtin_ctz(m);
            if (w->bar_id[l] == id)
                lanes |= 1u << l;
        }
        if (in && in->n_dst > 0) {   /* bar.red: every waiting thread gets the result */
            uint64_t *d = EMU_REG(w, in->dst[0]);
            EMU_FOR_LANES(lanes, l, d[l] = blk->bar_red[id]);
        }
        w->barrier &= ~lanes;
        w->run |= lanes;
    }
    blk->bar_arrived[id] = 0;
    blk->bar_expected[id] = 0;
    blk->bar_red[id] = 0;
    blk->bar_insn[id] = NULL;
}

static void barrier_check(emu_block *blk, unsigned id)
{
    uint32_t expected = blk->bar_expected[id] ? blk->bar_expected[id] : blk->live;
    if (blk->bar_arrived[id] > 0 && blk->bar_arrived[id] >= expected)
        barrier_release(blk, id);
}


static uint32_t first_lane_value(const emu_warp *w, uint32_t slot, uint32_t mask)
{
    return (uint32_t)EMU_REG(w, slot)[__builtin_ctz(mask)];
}

/* Lanes m arrive at the barrier of instruction in; returns false on a bad barrier id. */
static bool barrier_arrive(emu_warp *w, const emu_insn *in, uint32_t m, uint32_t pc)
{
    emu_block *blk = w->blk;
    uint32_t id = first_lane_value(w, in->src[0], m);
    if (id >= EMU_BARRIERS)
        return false;
    if (in->flags & EMU_F_COUNT)
        blk->bar_expected[id] = first_lane_value(w, in->src[1], m);
    blk->bar_arrived[id] += popc(m);
    if (in->op >= EMU_BAR_RED_POPC) {
        const uint64_t *p = EMU_REG(w, in->src[2]);
        uint32_t acc = blk->bar_insn[id] ? blk->bar_red[id] : (in->op == EMU_BAR_RED_AND);
        EMU_FOR_LANES(m, l, {
            uint32_t v = (uint32_t)(p[l] & 1u);
            if (in->op == EMU_BAR_RED_POPC) acc += v;
            else if (in->op == EMU_BAR_RED_AND) acc &= v;
            else acc |= v;
        });
        blk->bar_red[id] = acc;
    }
    if (in->op != EMU_BAR_ARRIVE) {
        blk->bar_insn[id] = in;
        w->run &= ~m;
        w->barrier |= m;
        for (uint32_t b = m; b; b &= b - 1) {
            unsigned l = (unsigned)__builtin_ctz(b);
            w->bar_id[l] = (uint8_t)id;
            w->lane_pc[l] = pc + 1;
        }
    }
    barrier_check(blk, id);
    return true;
}

static void lanes_exit(emu_warp *w, uint32_t m)
{
    emu_block *blk = w->blk;
    w->run &= ~m;
    w->exited |= m;
    blk->live -= popc(m);
    /* Lanes waiting for a warp-synchronous instruction no longer wait for these. */
    w->run |= w->syncwait;
    w->syncwait = 0;
    for (unsigned id = 0; id < EMU_BARRIERS; id++)
        if (blk->bar_arrived[id])
            barrier_check(blk, id);
}

/* ---- The interpreter loop ------------------------------------------------------------------ */

static int fail(emu_warp *w, const emu_insn *in, int code, const char *detail)
{
    emu_launch_fail(w->blk->L, w, in, code, detail);
    return code;
}

/* The function a pointer value names (its index in the code's callees), or -1. */
static int callee_of(const emu_code *c, uint64_t handle)
{
    for (uint32_t i = 1; handle && i < c->n_callees; i++)
        if (c->callees[i].handle == handle)
            return (int)i;
    return -1;
}

/* Lane l calls function f (index into frames/callees) at target with the copies of cl
 * (dst: parameter index for calls through pointers, else the callee's frame offset). */
static int call_lane(emu_warp *w, const emu_insn *in, unsigned l, int f, uint32_t pc)
{
    const emu_code *c = w->code;
    const emu_copylist *cl = &c->copylists[in->aux];
    w->fault.lane = l;
    if (w->depth[l] >= c->max_depth ||
        ((in->flags & EMU_F_SAVE) && !emu_frame_save(w, &c->frames[f], l)))
        return fail(w, in, KEMU_ERESOURCES,
                    "call stack overflow (recursion deeper than the emulator's stack)");
    w->ret_stack[l * c->max_depth + w->depth[l]++] = pc + 1;
    uint8_t *frame = emu_lane_pframe(w, l);
    const emu_callee *ce = (in->flags & EMU_F_INDIRECT) ? &c->callees[f] : NULL;
    for (uint32_t k = 0; k < cl->count; k++) {
        const emu_copy *cp = &c->copies[cl->first + k];
        uint32_t dst = cp->dst, bytes = cp->bytes;
        if (ce) {
            const emu_copy *param = &c->callee_vars[ce->first + cp->dst];
            dst = param->dst;
            bytes = bytes < param->bytes ? bytes : param->bytes;
        }
        memmove(frame + dst, frame + cp->src, bytes);
    }
    return 0;
}

/* Lanes m call: a direct call jumps to in->imm; a call through a pointer sends every lane
 * to its own target (lane pcs set, the caller reschedules). */
static int do_call(emu_warp *w, const emu_insn *in, uint32_t m, uint32_t pc)
{
    const emu_code *c = w->code;
    const bool indirect = in->flags & EMU_F_INDIRECT;
    for (uint32_t b = m; b; b &= b - 1) {
        unsigned l = (unsigned)__builtin_ctz(b);
        int f = (int)in->frame;
        if (indirect) {
            uint64_t handle = EMU_REG(w, in->src[0])[l];
            f = callee_of(c, handle);
            if (f < 0) {
                emu_fault_set(w, KEMU_EADDRESS, l, handle, 0, "function pointer");
                return fail(w, in, KEMU_EADDRESS, "call through an invalid function pointer");
            }
            if (c->callees[f].n_params != c->copylists[in->aux].count) {
                w->fault.lane = l;
                return fail(w, in, KEMU_EUNSUPPORTED,
                            "call through a pointer to a function of another type");
            }
            w->lane_pc[l] = c->callees[f].pc;
        }
        int rc = call_lane(w, in, l, f, pc);
        if (rc)
            return rc;
    }
    return 0;
}

/* Warp-synchronous instruction: runs it when every needed lane is here, else waits. */
static int do_wsync(emu_warp *w, const emu_insn *in, uint32_t m, uint32_t mask, bool *wait)
{
    *wait = false;
    uint32_t member = m ? emu_membermask(w, in, m) : 0;
    uint32_t missing = member & w->valid & ~w->exited & ~mask;
    if (missing) {
        if (missing & (w->run | w->barrier)) {
            *wait = true;
            return 0;
        }
        char why[96];
        snprintf(why, sizeof why, "lanes 0x%08x of membermask 0x%08x wait elsewhere", missing,
                 member);
        return fail(w, in, KEMU_EDEADLOCK, why);
    }
    if (!m)
        return 0;
    w->group_mask = mask;   /* activemask reads it */
    int rc = in->fn(w, in, m);
    return rc ? fail(w, in, rc, NULL) : 0;
}

/* Runs warp w until it blocks, finishes, uses up its time slice or faults. */
static int warp_run(emu_warp *w)
{
    const emu_insn *code = w->code->insns;
    emu_launch *L = w->blk->L;
    if (!schedule(w, EMU_NO_PC))
        return 0;
    uint32_t pc = w->group_pc, mask = w->group_mask, stop = w->stop_pc;
    int rc = 0;
    for (unsigned slice = EMU_SLICE; slice > 0; slice--) {
        const emu_insn *in = &code[pc];
        uint32_t m = in->guard == EMU_NO_SLOT ? mask : guard_mask(w, in, mask);
        bool resched = false;
        w->executed++;
        w->thread_insns += popc(m);
        switch ((emu_kind)in->kind) {
        case EMU_K_OP:
            if (m && (rc = in->fn(w, in, m)) != 0)
                return fail(w, in, rc, NULL);
            pc++;
            break;
        case EMU_K_BRA: {
            uint32_t target = (uint32_t)in->imm;
            if (m == mask) {
                if (target <= pc && (w->run & ~mask) && ++w->backjumps > EMU_SPIN_LIMIT) {
                    /* The count survives time slices: a spinning group yields to the
                     * other groups of its warp even when it is resumed every slice. */
                    w->backjumps = 0;
                    lanes_set_pc(w, mask, target);
                    schedule(w, target);
                    pc = w->group_pc, mask = w->group_mask, stop = w->stop_pc;
                    continue;
                }
                pc = target;
            } else if (m == 0) {
                pc++;
            } else {
                lanes_set_pc(w, m, target);
                lanes_set_pc(w, mask & ~m, pc + 1);
                resched = true;
            }
            break;
        }
        case EMU_K_EXIT:
            if (m) {
                lanes_exit(w, m);
                mask &= ~m;
            }
            pc++;
            if (m)
                resched = true, lanes_set_pc(w, mask, pc);
            break;
        case EMU_K_RET:
            lanes_set_pc(w, mask & ~m, pc + 1);
            for (uint32_t b = m; b; b &= b - 1) {
                unsigned l = (unsigned)__builtin_ctz(b);
                if (w->depth[l] == 0)
                    return fail(w, in, KEMU_EUNSUPPORTED, "ret without a call");
                if (in->flags & EMU_F_SAVE) {
                    emu_frame_restore(w, &w->code->frames[in->frame], l);
                    w->returned[l] = in->frame;
                }
                w->lane_pc[l] = w->ret_stack[l * w->code->max_depth + --w->depth[l]];
            }
            resched = true;
            break;
        case EMU_K_CALL:
            if (m && (rc = do_call(w, in, m, pc)) != 0)
                return rc;
            if (in->flags & EMU_F_INDIRECT) {
                lanes_set_pc(w, mask & ~m, pc + 1);
                resched = true;
            } else if (m == mask) {
                pc = (uint32_t)in->imm;
            } else if (m == 0) {
                pc++;
            } else {
                lanes_set_pc(w, m, (uint32_t)in->imm);
                lanes_set_pc(w, mask & ~m, pc + 1);
                resched = true;
            }
            break;
        case EMU_K_BAR:
            lanes_set_pc(w, mask & ~m, pc + 1);
            if (m) {
                if (!barrier_arrive(w, in, m, pc))
                    return fail(w, in, KEMU_EUNSUPPORTED, "barrier id above 15");
                if (in->op == EMU_BAR_ARRIVE)
                    lanes_set_pc(w, m, pc + 1);
                resched = true;
            } else {
                pc++;
            }
            break;
        case EMU_K_WSYNC: {
            bool wait;
            if ((rc = do_wsync(w, in, m, mask, &wait)) != 0)
                return rc;
            if (wait) {
                lanes_set_pc(w, mask, pc);
                w->run &= ~mask;
                w->syncwait |= mask;
                resched = true;
            } else {
                pc++;
            }
            break;
        }
        case EMU_K_TRAP:
            if (m) {
                w->fault.lane = (unsigned)__builtin_ctz(m);
                return fail(w, in, KEMU_ETRAP, NULL);
            }
            pc++;
            break;
        case EMU_K_FAIL:
        default:
            if (m) {
                w->fault.lane = (unsigned)__builtin_ctz(m);
                return fail(w, in, KEMU_EUNSUPPORTED, in->note);
            }
            pc++;
            break;
        }
        if (EMU_UNLIKELY(resched || pc >= stop)) {
            if (!resched)
                lanes_set_pc(w, mask, pc);
            if (!schedule(w, EMU_NO_PC)) {
                w->group_mask = 0;
                return 0;
            }
            pc = w->group_pc, mask = w->group_mask, stop = w->stop_pc;
        }
    }
    lanes_set_pc(w, mask, pc);
    if (L->budget && w->executed > L->budget)
        return fail(w, &code[pc], KEMU_ELIMIT, "instruction budget exhausted");
    return 0;
}

/* ---- The block scheduler ------------------------------------------------------------------- */

static int deadlock(emu_block *blk)
{
    for (unsigned i = 0; i < blk->n_warps; i++) {
        emu_warp *w = &blk->warps[i];
        uint32_t waiting = w->barrier | w->syncwait;
        if (!waiting)
            continue;
        unsigned l = (unsigned)__builtin_ctz(waiting);
        const emu_insn *in = &w->code->insns[w->lane_pc[l] - (w->barrier >> l & 1u)];
        char why[160];
        if (w->barrier >> l & 1u) {
            unsigned id = w->bar_id[l];
            snprintf(why, sizeof why,
                     "barrier %u never completes: %u of %u threads arrived", id,
                     blk->bar_arrived[id],
                     blk->bar_expected[id] ? blk->bar_expected[id] : blk->live);
        } else {
            snprintf(why, sizeof why, "lanes 0x%08x wait for lanes that never arrive",
                     w->syncwait);
        }
        w->fault.lane = l;
        return fail(w, in, KEMU_EDEADLOCK, why);
    }
    return fail(&blk->warps[0], &blk->warps[0].code->insns[0], KEMU_EDEADLOCK,
                "no thread can run");
}

int emu_block_run(emu_block *blk, uint64_t linear_block)
{
    emu_launch *L = blk->L;
    block_reset(blk, linear_block);
    for (;;) {
        bool ran = false, done = true;
        for (unsigned i = 0; i < blk->n_warps; i++) {
            emu_warp *w = &blk->warps[i];
            if (w->exited == w->valid)
                continue;
            done = false;
            if (!w->run)
                continue;
            int rc = warp_run(w);
            ran = true;
            if (rc)
                return rc;
        }
        if (done)
            break;
        if (!ran)
            return deadlock(blk);
        if (atomic_load_explicit(&L->stop, memory_order_relaxed))
            return KEMU_ECANCELLED;
        if (L->cancel && *L->cancel) {
            emu_launch_fail(L, NULL, NULL, KEMU_ECANCELLED, NULL);
            return KEMU_ECANCELLED;
        }
    }
    uint64_t ti = 0, wi = 0;
    for (unsigned i = 0; i < blk->n_warps; i++) {
        ti += blk->warps[i].thread_insns;
        wi += blk->warps[i].executed;
    }
    atomic_fetch_add_explicit(&L->thread_insns, ti, memory_order_relaxed);
    atomic_fetch_add_explicit(&L->warp_insns, wi, memory_order_relaxed);
    return 0;
}
