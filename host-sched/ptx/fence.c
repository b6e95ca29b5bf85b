/* The fencing pass: every global memory access of a fenceable entry is confined to the
 * tenant's address window (Guardian-style address masking; kernelet/ptx.h, "Fencing").
 * The entry loads the window's base and mask from its two new parameters once, into
 * registers no other code can name, and each access's address is computed as
 *   .global:  a = (addr & mask_w) | base
 *   generic:  a = isspacep.global(addr) ? (addr & mask_w) | base : addr
 * just before the access, which then uses [a]; mask_w is the mask with the access's
 * alignment folded in (fence_align.c: w, its width in bytes). Inside the window nothing
 * changes for an aligned address, so a kernel that stays in its own memory computes
 * exactly what it did; an address outside is redirected into the tenant's own window,
 * never into another tenant's memory, and a misaligned one (a fault that would end the
 * shared context) to the aligned address below it. With KPTX_FENCE_TRAP such addresses
 * end the thread with a fault code instead, and the access keeps its own address. Const
 * and param accesses are left alone: they cannot reach global memory; shared and local ones
 * are clamped into the block's shared memory and the thread's frames (fence_shared.c,
 * fence_local.c), and what earlier kernels left there is zeroed first (fence_scrub.c).
 *
 * The same pass gives the backend control of a running tenant kernel through two more
 * parameters, the addresses of the tenant's control words (kernelet/ptx.h, "Control"),
 * which lie outside every window so that no tenant code can name them:
 *   - a backward branch (a loop's back-edge) first counts one more iteration in a register
 *     and, every KPTX_CANCEL_POLL_PERIOD iterations, reads the cancel word and exits the
 *     thread when it is set: a runaway kernel can be stopped without losing the context;
 *   - `trap` and a call of `__assertfail` (CUDA's device assert) write their fault code to
 *     the fault word and exit the thread instead of faulting: the context, and with it
 *     every other tenant's work, survives, and the backend reports the fault to its tenant.
 * A device function cannot see the parameters: one that loops, recurses, traps or asserts
 * gets the control words' addresses as two more parameters of its own (fence_calls.c), and
 * its body is rewritten as an entry's; one where a cycle of calls is entered (recursion,
 * callgraph.c) reads the cancel word as it starts. Counted loops are strip-mined instead
 * of counted (fence_loops.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* Statements one access may add: address (two), isspacep, and, or, selp, the shared
 * clamp's isspacep, and, min, selp, and with KPTX_FENCE_TRAP the checks (two and an or),
 * its guard, the misaligned test (three) and the fault's two. */
#define PER_ACCESS 18
/* Statements one instruction may add for control: the cancel poll of a back-edge, or the
 * fault store and exit that replace a trap or an assert. */
#define PER_CONTROL 8

/* The 64-bit registers: the four parameters (in their order), then two for addresses. */
enum { R_BASE, R_MASK, R_CANCEL, R_FAULT, R_ADDR, R_WIN, R_DIST, N_REGS };
/* The 32-bit registers: the back-edge count, the cancel word as read, and a counted
 * loop's scratch (R_DIST is the 64-bit loops'). A shared access's address and its clamp
 * are kptx_smem_clamps' (declared where a function clamps). */
enum { C_COUNT, C_WORD, C_DIST, N_CREGS };
/* Statements a counted loop's strip-mining adds at most (head, test, back-edge). */
#define PER_LOOP 24

typedef struct fencer {
    kptx_module *m;
    kptx_rw rw;
    char prefix[32];
    const char *param[KPTX_FENCE_EXTRA_PARAMS]; /* base, mask, cancel, fault */
    const char *reg[N_REGS];
    const char *creg[N_CREGS];
    const char *pred, *poll;        /* an access's isspacep; the cancel poll's */
    const char *loop_pred[2];       /* a counted loop's scratch predicates */
    const char *loop_reg;           /* the counted loops' inner bounds: loop_reg<k>_<width> */
    const char *oob;                /* KPTX_FENCE_TRAP: the access left the window */
    bool trap;                      /* KPTX_FENCE_TRAP */
    kptx_align_masks align;         /* the masks per access width; the entry's widths */
    kptx_smem_clamps smem;          /* the shared clamps per access width; fn's widths */
    kptx_local_scrub scrub;         /* fn's .local variables, zeroed as it starts */
    kptx_local_clamps local;        /* the local clamps per access width; fn's widths */
    kptx_reg_set regs;              /* fn's registers (a shared address's width) */
    const kptx_analysis *an;
    const bool *ctl;                /* per analysed function: a device function given the
                                       control words (fence_calls.c) */
    const char *call_param[2];      /* the body's .param passing them to such a call */
    const kptx_function *fn;        /* the one being fenced */
    bool device_fn;                 /* fn is a device function, not an entry */
    bool controlled;                /* fn takes the control words: an entry, or such a
                                       device function (else only its shared accesses are
                                       clamped) */
    bool poll_on_entry;             /* fn is a cycle head (callgraph.c): it polls as it starts */
    uint64_t stack_guard;           /* the module's stack guard (fence_stack.c), 0: none */
    bool guard_stack;               /* fn is on a cycle of calls: it checks the guard */
    kptx_label_index labels;        /* fn's labels */
    kptx_counted_loop *loops;       /* fn's counted loops: their polls are strip-mined */
    kptx_loop_names *loop_names;    /* each one's registers and labels */
    unsigned n_loops;
    int *loop_at;                   /* per statement of fn: the counted loop whose head,
                                       test or back-edge it is, or -1 */
    unsigned n_polls;               /* cancel polls emitted: their labels' numbers */
} fencer;

static kptx_operand sym_op(const char *name)
{
    return (kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = name};
}

static kptx_stmt *emit2(fencer *f, kptx_stmt_vec *sv, const char *op, const char *mods,
                        kptx_operand a, kptx_operand b)
{
    const kptx_operand ops[2] = {a, b};
    return kptx_rw_emit(&f->rw, sv, op, mods, 2, ops);
}

static kptx_stmt *emit3(fencer *f, kptx_stmt_vec *sv, const char *op, const char *mods,
                        kptx_operand a, kptx_operand b, kptx_operand c)
{
    const kptx_operand ops[3] = {a, b, c};
    return kptx_rw_emit(&f->rw, sv, op, mods, 3, ops);
}

/* The instruction that takes the address of variable sym for an access: the generic
 * address for a generic access, else (a .global variable) its global address. */
static void take_address(fencer *f, kptx_stmt_vec *sv, const kptx_function *fn,
                         const char *sym, bool generic)
{
    kptx_operand dst = kptx_reg_operand(f->reg[R_ADDR]);
    kptx_space sp = kptx_symbol_space(f->m, fn, sym);
    if (!generic) {
        emit2(f, sv, "mov", ".u64", dst, sym_op(sym));
        return;
    }
    const char *mods = sp == KPTX_SPACE_SHARED ? ".shared.u64"
                       : sp == KPTX_SPACE_LOCAL ? ".local.u64"
                       : sp == KPTX_SPACE_CONST ? ".const.u64" : ".global.u64";
    emit2(f, sv, "cvta", mods, dst, sym_op(sym));
}

/* The register holding the address of addr (base plus offset), computing it into the
 * address register when it is not one register already. */
static const char *address_of(fencer *f, kptx_stmt_vec *sv, const kptx_function *fn,
                              const kptx_operand *addr, bool generic)
{
    const kptx_operand *base = &addr->elems[0];
    kptx_operand a = kptx_reg_operand(f->reg[R_ADDR]);
    if (base->kind == KPTX_OPND_REG && addr->value == 0)
        return base->name;
    if (base->kind == KPTX_OPND_REG) {
        emit3(f, sv, "add", ".s64", a, *base, kptx_int_operand(addr->value));
        return f->reg[R_ADDR];
    }
    if (base->kind == KPTX_OPND_INT) {
        emit2(f, sv, "mov", ".u64", a, kptx_int_operand((int64_t)((uint64_t)base->value +
                                                        (uint64_t)addr->value)));
        return f->reg[R_ADDR];
    }
    take_address(f, sv, fn, base->name, generic);
    if (addr->value)
        emit3(f, sv, "add", ".s64", a, a, kptx_int_operand(addr->value));
    return f->reg[R_ADDR];
}

static void guard(kptx_stmt *c, const char *pred, bool negated);
static kptx_operand reg_address(fencer *f, const char *reg);
static void emit_fault_if(fencer *f, kptx_stmt_vec *sv, const char *pred, bool negated,
                          uint32_t code);
static void emit_fault_word_if(fencer *f, kptx_stmt_vec *sv, const char *pred, bool negated);

/* dst = (raw & mask_w) | base for an access of width bytes; a generic one first asks
 * isspacep.global into the access predicate. */
static void emit_masked(fencer *f, kptx_stmt_vec *sv, kptx_operand dst, kptx_operand raw,
                        unsigned width, bool generic)
{
    if (generic)
        emit2(f, sv, "isspacep", ".global", kptx_reg_operand(f->pred), raw);
    emit3(f, sv, "and", ".b64", dst, raw, kptx_reg_operand(kptx_align_mask(&f->align, width)));
    emit3(f, sv, "or", ".b64", dst, dst, kptx_reg_operand(f->reg[R_BASE]));
}

/* A generic access: dst = raw clamped into the block's shared memory (fence_shared.c),
 * with isspacep.shared into the access predicate. */
static void emit_generic_clamp(fencer *f, kptx_stmt_vec *sv, kptx_operand dst, kptx_operand raw,
                               unsigned width)
{
    emit2(f, sv, "isspacep", ".shared", kptx_reg_operand(f->pred), raw);
    kptx_smem_clamp(&f->rw, sv, &f->smem, dst, raw, width, 0, true);
}

/* KPTX_FENCE_TRAP: the fault of an access of width bytes at raw (a register of bits bits)
 * when the check f->oob holds, misaligned before outside (the GPU checks alignment first),
 * and the thread ends before the access; scratch: a register of the same width. */
static void emit_access_fault(fencer *f, kptx_stmt_vec *sv, kptx_operand raw,
                              kptx_operand scratch, unsigned width, unsigned bits)
{
    if (width == 1) {
        emit_fault_if(f, sv, f->oob, false, KPTX_FAULT_ADDRESS);
        return;
    }
    /* Which fault. Not under the check's guard: only the fault's store uses the code, so
     * ptxas can sink it onto the fault's path (ptxas 13.0, sm_90: 14 such accesses took 8
     * SASS instructions more than one fault code would, and 104 more when guarded). */
    kptx_operand q = kptx_reg_operand(f->poll), code = kptx_reg_operand(f->creg[C_WORD]);
    emit3(f, sv, "and", bits == 64 ? ".b64" : ".b32", scratch, raw, kptx_int_operand(width - 1));
    emit3(f, sv, "setp", bits == 64 ? ".ne.u64" : ".ne.u32", q, scratch, kptx_int_operand(0));
    const kptx_operand ops[4] = {code, kptx_int_operand(KPTX_FAULT_MISALIGNED),
                                 kptx_int_operand(KPTX_FAULT_ADDRESS), q};
    kptx_rw_emit(&f->rw, sv, "selp", ".u32", 4, ops);
    emit_fault_word_if(f, sv, f->oob, false);
}

/* KPTX_FENCE_TRAP: the check f->oob is cleared where the access's own guard says it does
 * not run (bits: its address's width). */
static void clear_unless_runs(fencer *f, kptx_stmt_vec *sv, kptx_operand raw, unsigned bits,
                              const kptx_instr *in)
{
    if (in->guard)
        guard(emit3(f, sv, "setp", bits == 64 ? ".ne.u64" : ".ne.u32",
                    kptx_reg_operand(f->oob), raw, raw), in->guard, !in->guard_negated);
}

/* KPTX_FENCE_TRAP, an access of width bytes: when the mask would change its address (it
 * is outside the window, or not aligned to width) it writes the fault, misaligned before
 * outside, and ends the thread before the access, as the GPU would fault; only when the
 * access itself runs (its guard g: the check is cleared when g says no). A generic address
 * is checked against the window when it is global, against the block's shared memory when
 * it is shared (the clamp would change it), else not at all. */
static void trap_outside(fencer *f, kptx_stmt_vec *sv, kptx_operand raw, unsigned width,
                         bool generic, const kptx_instr *in)
{
    kptx_operand oob = kptx_reg_operand(f->oob), w = kptx_reg_operand(f->reg[R_WIN]);
    kptx_operand p = kptx_reg_operand(f->pred);
    emit_masked(f, sv, w, raw, width, generic);
    if (generic) {
        const kptx_operand ops[4] = {oob, w, raw, p};
        kptx_rw_emit(&f->rw, sv, "setp", ".ne.and.u64", 4, ops);
        emit_generic_clamp(f, sv, w, raw, width);
        const kptx_operand shared[4] = {p, w, raw, p};
        kptx_rw_emit(&f->rw, sv, "setp", ".ne.and.u64", 4, shared);
        emit3(f, sv, "or", ".pred", oob, oob, p);
    } else {
        emit3(f, sv, "setp", ".ne.u64", oob, w, raw);
    }
    clear_unless_runs(f, sv, raw, 64, in);
    emit_access_fault(f, sv, raw, w, width, 64);
}

/* Emits the fence of addr, the address operand of in, and returns the address operand
 * that replaces it: [a], or addr itself once KPTX_FENCE_TRAP checked it. */
static kptx_operand fence_address(fencer *f, kptx_stmt_vec *sv, const kptx_function *fn,
                                  const kptx_operand *addr, bool generic, const kptx_instr *in)
{
    unsigned width = kptx_access_width(in);
    kptx_operand a = kptx_reg_operand(f->reg[R_ADDR]), w = kptx_reg_operand(f->reg[R_WIN]);
    kptx_operand raw = kptx_reg_operand(address_of(f, sv, fn, addr, generic));
    if (f->trap) {      /* it runs only where the mask would not change the address */
        trap_outside(f, sv, raw, width, generic, in);
        if (!generic || !((f->local.generic >> kptx_width_slot(width)) & 1u))
            return *addr;
        /* a local one was not checked: clamped into the thread's frames (fence_local.c) */
        kptx_operand p = kptx_reg_operand(f->pred);
        emit2(f, sv, "isspacep", ".local", p, raw);
        kptx_local_clamp(&f->rw, sv, &f->local, w, raw, width, true);
        const kptx_operand ops[4] = {a, w, raw, p};
        kptx_rw_emit(&f->rw, sv, "selp", ".b64", 4, ops);
        return reg_address(f, f->reg[R_ADDR]);
    }
    emit_masked(f, sv, generic ? w : a, raw, width, generic);
    if (generic) {
        kptx_operand p = kptx_reg_operand(f->pred);
        const kptx_operand ops[4] = {a, w, raw, p};
        kptx_rw_emit(&f->rw, sv, "selp", ".b64", 4, ops);
        emit_generic_clamp(f, sv, w, raw, width);
        const kptx_operand shared[4] = {a, w, a, p};
        kptx_rw_emit(&f->rw, sv, "selp", ".b64", 4, shared);
        if ((f->local.generic >> kptx_width_slot(width)) & 1u) {  /* fence_local.c */
            emit2(f, sv, "isspacep", ".local", p, raw);
            kptx_local_clamp(&f->rw, sv, &f->local, w, raw, width, true);
            kptx_rw_emit(&f->rw, sv, "selp", ".b64", 4, shared);
        }
    }
    return reg_address(f, f->reg[R_ADDR]);
}

/* Whether register name is declared 32 bits wide (else it is taken for 64). */
static bool is_32bit(const fencer *f, const char *name)
{
    const kptx_var *v = kptx_reg_set_find(&f->regs, name);
    return v && kptx_type_size(v->type) == 4;
}

/* The .b32 register holding the shared offset addr names (base plus offset, the offset
 * left out with without_offset), computed into the clamps' first scratch register when it
 * is not one 32-bit register already: a 64-bit register is cut to its low half (shared
 * offsets are 32-bit; for any offset the block has, the same). */
static const char *shared_offset_of(fencer *f, kptx_stmt_vec *sv, const kptx_operand *addr,
                                    bool without_offset)
{
    const kptx_operand *base = &addr->elems[0];
    kptx_operand a = kptx_reg_operand(f->smem.scratch[0]);
    int64_t value = without_offset ? 0 : addr->value;
    kptx_operand off = kptx_int_operand((int32_t)(uint32_t)value);
    if (base->kind == KPTX_OPND_INT) {
        emit2(f, sv, "mov", ".u32", a,
              kptx_int_operand((uint32_t)((uint64_t)base->value + (uint64_t)value)));
        return f->smem.scratch[0];
    }
    if (base->kind == KPTX_OPND_SYMBOL) {
        emit2(f, sv, "mov", ".u32", a, sym_op(base->name));
    } else if (is_32bit(f, base->name)) {
        if (!value)
            return base->name;
        emit3(f, sv, "add", ".s32", a, *base, off);
        return f->smem.scratch[0];
    } else {
        emit2(f, sv, "cvt", ".u32.u64", a, *base);
    }
    if (value)
        emit3(f, sv, "add", ".s32", a, a, off);
    return f->smem.scratch[0];
}

/* A .shared access: its offset clamped into the block's shared memory (fence_shared.c),
 * or with KPTX_FENCE_TRAP checked against the clamp; returns the address operand that
 * replaces addr. One that stays in a sized variable keeps its address. An offset that is a
 * multiple of the width is added after the base is aligned ((r & -w) + k is (r + k) & -w):
 * accesses [r], [r+4], [r+8] ... share the and, and the add and the min may become one
 * instruction (sm_90's VIADDMNMX). */
static kptx_operand fence_shared(fencer *f, kptx_stmt_vec *sv, const kptx_function *fn,
                                 const kptx_operand *addr, const kptx_stmt *s)
{
    const kptx_instr *in = &s->u.instr;
    unsigned width = kptx_access_width(in);
    if (kptx_smem_in_bounds(f->m, fn, addr, width))
        return *addr;
    int g = kptx_smem_group_of(&f->smem, (unsigned)(s - fn->stmts));
    if (g >= 0) {       /* one clamp for the group, at its first access (fence_shared.c) */
        if (f->smem.groups[g].first == (unsigned)(s - fn->stmts))
            kptx_smem_group_clamp(&f->rw, sv, &f->smem, (unsigned)g,
                                  kptx_reg_operand(shared_offset_of(f, sv, addr, true)));
        return kptx_smem_group_address(&f->rw, &f->smem, (unsigned)g, addr->value);
    }
    kptx_operand clamp = kptx_reg_operand(f->smem.scratch[0]);
    if (!f->trap || !f->controlled) {     /* no fault word: only unfenced entries call it */
        bool late = addr->elems[0].kind != KPTX_OPND_INT && addr->value % width == 0;
        const char *reg = shared_offset_of(f, sv, addr, late);
        kptx_smem_clamp(&f->rw, sv, &f->smem, clamp, kptx_reg_operand(reg), width,
                        late ? (int32_t)(uint32_t)addr->value : 0, false);
        return reg_address(f, f->smem.scratch[0]);
    }
    const char *reg = shared_offset_of(f, sv, addr, false);
    kptx_operand raw = kptx_reg_operand(reg);
    clamp = kptx_reg_operand(f->smem.scratch[1]);
    kptx_smem_clamp(&f->rw, sv, &f->smem, clamp, raw, width, 0, false);
    emit3(f, sv, "setp", ".ne.u32", kptx_reg_operand(f->oob), clamp, raw);
    clear_unless_runs(f, sv, raw, 32, in);
    emit_access_fault(f, sv, raw, clamp, width, 32);
    return reg_address(f, reg);     /* the offset checked, as the access's own */
}

/* ---- control: cancel polls, traps and asserts ---- */

/* Whether s (a statement of f->fn) branches back to a label before it: a loop's back-edge. */
static bool is_back_edge(const fencer *f, const kptx_stmt *s)
{
    int at = kptx_branch_target(&f->labels, s);
    return at >= 0 && (unsigned)at <= (unsigned)(s - f->fn->stmts);
}

/* The fault code with which s ends the thread (a trap or an assert), or 0. */
static uint32_t fault_of(const kptx_instr *in)
{
    if (!strcmp(in->opcode, "trap"))
        return KPTX_FAULT_TRAP;
    return kptx_calls_assert(in) ? KPTX_FAULT_ASSERT : 0;
}

/* [reg]: an address operand on one of the pass's registers. */
static kptx_operand reg_address(fencer *f, const char *reg)
{
    kptx_operand *elem = kptx_rw_alloc(&f->rw, sizeof *elem);
    if (elem)
        *elem = kptx_reg_operand(reg);
    return (kptx_operand){.kind = KPTX_OPND_ADDRESS, .n_elems = elem ? 1 : 0, .elems = elem};
}

static void guard(kptx_stmt *c, const char *pred, bool negated)
{
    if (c) {
        c->u.instr.guard = pred;
        c->u.instr.guard_negated = negated;
    }
}

/* A branch to label, under the guard pred. */
static void emit_branch_if(fencer *f, kptx_stmt_vec *sv, const char *pred, const char *label)
{
    kptx_operand target = sym_op(label);
    guard(kptx_rw_emit(&f->rw, sv, "bra", "", 1, &target), pred, false);
}

/* A label of the pass's own, numbered: kind ("_poll", "_strip") and n. */
static const char *own_label(fencer *f, const char *kind, unsigned n)
{
    char num[24];
    snprintf(num, sizeof num, "%s%u", kind, n);
    return kptx_rw_name(&f->rw, f->prefix, num);
}

/* The thread reads the cancel word and exits when it is set. */
static void emit_cancel_check(fencer *f, kptx_stmt_vec *sv)
{
    kptx_operand word = kptx_reg_operand(f->creg[C_WORD]);
    kptx_operand poll = kptx_reg_operand(f->poll);
    emit2(f, sv, "ld", ".volatile.global.u32", word, reg_address(f, f->reg[R_CANCEL]));
    emit3(f, sv, "setp", ".ne.u32", poll, word, kptx_int_operand(0));
    guard(kptx_rw_emit(&f->rw, sv, "exit", "", 0, NULL), f->poll, false);
}

/* Every KPTX_CANCEL_POLL_PERIOD back-edges a thread checks the cancel word; the other
 * back-edges count and branch past: three instructions each (the count's test and reset,
 * not a mask, in the loop: tight loops pay for every one, which is why counted loops are
 * strip-mined instead). */
static void emit_poll(fencer *f, kptx_stmt_vec *sv)
{
    const char *past = own_label(f, "_poll", f->n_polls++);
    kptx_operand count = kptx_reg_operand(f->creg[C_COUNT]);
    kptx_operand poll = kptx_reg_operand(f->poll);
    emit3(f, sv, "add", ".u32", count, count, kptx_int_operand(1));
    emit3(f, sv, "setp", ".lt.u32", poll, count, kptx_int_operand(KPTX_CANCEL_POLL_PERIOD));
    emit_branch_if(f, sv, f->poll, past);
    emit2(f, sv, "mov", ".u32", count, kptx_int_operand(0));
    emit_cancel_check(f, sv);
    kptx_rw_label(&f->rw, sv, past);
}

/* The registers and labels of counted loop k of the function being fenced. */
static kptx_loop_names name_loop(fencer *f, unsigned k)
{
    const kptx_counted_loop *l = &f->loops[k];
    char num[32];   /* labels and registers are the function's own: numbered per loop */
    snprintf(num, sizeof num, "%u_%u", k, l->width);
    kptx_loop_names nm = {
        .inner = kptx_rw_name(&f->rw, f->loop_reg, num),
        .dist = l->width == 32 ? f->creg[C_DIST] : f->reg[R_DIST],
        .pa = f->loop_pred[0],
        .pb = f->loop_pred[1],
        .head2 = own_label(f, "_strip", 2 * k),
        .leave = own_label(f, "_strip", 2 * k + 1),
    };
    return nm;
}

/* s, a statement of a counted loop (its test or back-edge): strip-mined. */
static void strip_mine(fencer *f, kptx_stmt_vec *sv, const kptx_stmt *s, unsigned k)
{
    const kptx_counted_loop *l = &f->loops[k];
    const kptx_loop_names *nm = &f->loop_names[k];
    const kptx_stmt *test = &f->fn->stmts[l->test];
    if (s == test) {
        kptx_loop_emit_test(&f->rw, sv, test, l, nm);
        return;
    }
    kptx_loop_emit_edge(&f->rw, sv, s, test, nm);
    emit_cancel_check(f, sv);
    kptx_loop_emit_tail(&f->rw, sv, f->fn->stmts[l->head].u.label, nm);
}

/* The fault code in the word register into the fault word, and the thread ends, under the
 * guard pred (none: NULL). */
static void emit_fault_word_if(fencer *f, kptx_stmt_vec *sv, const char *pred, bool negated)
{
    kptx_operand word = kptx_reg_operand(f->creg[C_WORD]);
    guard(emit2(f, sv, "st", ".volatile.global.u32", reg_address(f, f->reg[R_FAULT]), word),
          pred, negated);
    guard(kptx_rw_emit(&f->rw, sv, "exit", "", 0, NULL), pred, negated);
}

/* code into the fault word, and the thread ends, under the guard pred (none: NULL). */
static void emit_fault_if(fencer *f, kptx_stmt_vec *sv, const char *pred, bool negated,
                          uint32_t code)
{
    kptx_operand word = kptx_reg_operand(f->creg[C_WORD]);
    guard(emit2(f, sv, "mov", ".u32", word, kptx_int_operand(code)), pred, negated);
    emit_fault_word_if(f, sv, pred, negated);
}

/* A trap or assert: its fault code into the fault word, and the thread ends (under the
 * instruction's own guard). */
static void emit_fault(fencer *f, kptx_stmt_vec *sv, const kptx_instr *in, uint32_t code)
{
    emit_fault_if(f, sv, in->guard, in->guard_negated, code);
}

/* Whether in calls a device function that takes the control words. */
static bool calls_controlled(const fencer *f, const kptx_instr *in)
{
    const char *target = kptx_call_target(in);
    int k = target && f->ctl ? kptx_analysis_find(f->an, target) : -1;
    return k >= 0 && f->ctl[k];
}

/* A call of such a function: the words' addresses into the call's two more parameters. */
static void emit_controlled_call(fencer *f, kptx_stmt_vec *sv, const kptx_stmt *s)
{
    const kptx_instr *in = &s->u.instr;
    for (unsigned i = 0; i < 2; i++)
        emit2(f, sv, "st", ".param.b64", kptx_rw_addr(&f->rw, f->call_param[i], 0),
              kptx_reg_operand(f->reg[R_CANCEL + i]));
    unsigned t = 0;             /* the target, after the results' list if any */
    while (t < in->n_ops && in->ops[t].kind == KPTX_OPND_LIST)
        t++;
    bool has_args = t + 1 < in->n_ops && in->ops[t + 1].kind == KPTX_OPND_LIST;
    const kptx_operand *args = has_args ? &in->ops[t + 1] : NULL;
    unsigned n_args = args ? args->n_elems : 0;
    kptx_operand *ops = kptx_rw_alloc(&f->rw, (in->n_ops + 1) * sizeof *ops);
    kptx_operand *elems = kptx_rw_alloc(&f->rw, (n_args + 2) * sizeof *elems);
    kptx_stmt *c = kptx_rw_push(&f->rw, sv, s);
    if (!ops || !elems || !c)
        return;
    if (n_args)
        memcpy(elems, args->elems, n_args * sizeof *elems);
    for (unsigned i = 0; i < 2; i++)
        elems[n_args + i] = sym_op(f->call_param[i]);
    unsigned n = 0;
    for (unsigned i = 0; i <= t; i++)
        ops[n++] = in->ops[i];
    ops[n++] = (kptx_operand){.kind = KPTX_OPND_LIST, .n_elems = n_args + 2, .elems = elems};
    for (unsigned i = t + 1 + has_args; i < in->n_ops; i++)
        ops[n++] = in->ops[i];
    c->line = 0;
    c->u.instr.ops = ops;
    c->u.instr.n_ops = n;
}

/* The polls, faults and controlled calls of s (a controlled function's); whether s is
 * done with. */
static bool control_instr(fencer *f, kptx_stmt_vec *sv, const kptx_function *fn,
                          const kptx_stmt *s)
{
    if (calls_controlled(f, &s->u.instr)) {
        emit_controlled_call(f, sv, s);
        return true;
    }
    int loop = f->loop_at[s - fn->stmts];
    if (loop >= 0) {
        strip_mine(f, sv, s, (unsigned)loop);
        return true;
    }
    uint32_t fault = fault_of(&s->u.instr);
    if (fault) {
        emit_fault(f, sv, &s->u.instr, fault);
        return true;
    }
    if (is_back_edge(f, s) || !strcmp(s->u.instr.opcode, "brx"))
        emit_poll(f, sv);   /* an indirect branch may go back too */
    return false;
}

/* cp.async's src-size, when a register: at most cp-size (as in any correct kernel), so that
 * the copy reads no more than the cp-size bytes the mask keeps inside the window. Into the
 * clamps' second scratch register, free once the addresses are fenced. */
static void bound_copy_size(fencer *f, kptx_stmt_vec *sv, const kptx_instr *in,
                            kptx_operand *ops)
{
    if (in->n_ops < 4 || in->ops[3].kind != KPTX_OPND_REG || !is_32bit(f, in->ops[3].name))
        return;     /* none, an immediate (ptxas checks it) or the predicate ignore-src */
    ops[3] = kptx_reg_operand(f->smem.scratch[1]);
    emit3(f, sv, "min", ".u32", ops[3], in->ops[3], in->ops[2]);
}

/* A .local ld or st: its address clamped into the thread's frames (fence_local.c). */
static void fence_local(fencer *f, kptx_stmt_vec *sv, const kptx_stmt *s)
{
    const kptx_instr *in = &s->u.instr;
    kptx_operand *ops = kptx_rw_alloc(&f->rw, in->n_ops * sizeof *ops);
    if (!ops)
        return;
    for (unsigned i = 0; i < in->n_ops; i++) {
        const kptx_operand *o = &in->ops[i];
        bool is32 = o->kind == KPTX_OPND_ADDRESS && o->elems[0].kind == KPTX_OPND_REG &&
                    is_32bit(f, o->elems[0].name);
        ops[i] = o->kind != KPTX_OPND_ADDRESS
                     ? *o
                     : kptx_local_fence(&f->rw, sv, &f->local, o, kptx_access_width(in), is32);
    }
    kptx_stmt *c = kptx_rw_push(&f->rw, sv, s);
    if (c) {
        c->line = 0;
        c->u.instr.ops = ops;
    }
}

static void fence_instr(fencer *f, kptx_stmt_vec *sv, const kptx_function *fn,
                        const kptx_stmt *s)
{
    if (f->controlled && control_instr(f, sv, fn, s))
        return;
    kptx_fence_kind k = kptx_fence_kind_of(f->m, fn, &s->u.instr);
    if (k == KPTX_FENCE_NONE && kptx_local_width(&s->u.instr) && f->local.used) {
        fence_local(f, sv, s);
        return;
    }
    /* a device function has no window (its global accesses made its entries unfenceable) */
    bool window = !f->device_fn && (k == KPTX_FENCE_GLOBAL || k == KPTX_FENCE_GENERIC ||
                                    k == KPTX_FENCE_COPY);
    if (!window && k != KPTX_FENCE_SHARED) {
        kptx_rw_push(&f->rw, sv, s);
        return;
    }
    const kptx_instr *in = &s->u.instr;
    kptx_operand *ops = kptx_rw_alloc(&f->rw, in->n_ops * sizeof *ops);
    if (!ops)
        return;
    for (unsigned i = 0; i < in->n_ops; i++)    /* cp.async: [shared], [global] */
        ops[i] = in->ops[i].kind != KPTX_OPND_ADDRESS ? in->ops[i]
                 : k == KPTX_FENCE_SHARED || (k == KPTX_FENCE_COPY && i == 0)
                     ? fence_shared(f, sv, fn, &in->ops[i], s)
                     : fence_address(f, sv, fn, &in->ops[i], k == KPTX_FENCE_GENERIC, in);
    if (k == KPTX_FENCE_COPY)
        bound_copy_size(f, sv, in, ops);
    kptx_stmt *c = kptx_rw_push(&f->rw, sv, s);
    if (c) {
        c->line = 0;
        c->u.instr.ops = ops;
    }
}

static void declare_reg(fencer *f, kptx_stmt_vec *sv, const char *type, const char *name,
                        unsigned range)
{
    kptx_rw_declare_reg(&f->rw, sv, type, name, range);
}

/* Declarations of the pass's registers (the shared clamps' first). */
static void declare(fencer *f, kptx_stmt_vec *sv)
{
    kptx_scrub_declare(&f->rw, sv, &f->scrub);
    kptx_local_declare(&f->rw, sv, &f->local);
    kptx_smem_declare(&f->rw, sv, &f->smem);
    if (!f->controlled)
        return;     /* a device function whose shared accesses only are clamped */
    declare_reg(f, sv, ".b64", kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_r")),
                N_REGS);
    declare_reg(f, sv, ".b32", kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_c")),
                N_CREGS);
    declare_reg(f, sv, ".pred", f->pred, 0);
    declare_reg(f, sv, ".pred", f->poll, 0);
    for (unsigned i = 0; i < 2; i++)
        declare_reg(f, sv, ".pred", f->loop_pred[i], 0);
    for (unsigned k = 0; k < f->n_loops; k++)
        declare_reg(f, sv, f->loops[k].width == 32 ? ".b32" : ".b64", f->loop_names[k].inner, 0);
    for (unsigned i = 0; i < 2 && f->call_param[0]; i++) {
        kptx_stmt *p = kptx_rw_push(&f->rw, sv, NULL);
        if (p) {
            p->kind = KPTX_STMT_VAR;
            p->u.var = (kptx_var){.space = KPTX_SPACE_PARAM, .type = ".b64",
                                  .name = f->call_param[i]};
        }
    }
    if (f->trap)
        declare_reg(f, sv, ".pred", f->oob, 0);
    kptx_align_declare(&f->rw, sv, &f->align);
}

/* A function on a cycle of calls ends its thread with KPTX_FAULT_STACK when its frame lies
 * below the module's stack guard (fence_stack.c): the recursion stops a margin short of
 * overflowing the stack, which would end the context. */
static void emit_stack_check(fencer *f, kptx_stmt_vec *sv)
{
    kptx_operand sp = kptx_reg_operand(f->reg[R_ADDR]);
    kptx_rw_emit(&f->rw, sv, "stacksave", ".u64", 1, &sp);
    emit3(f, sv, "setp", ".lt.u64", kptx_reg_operand(f->poll), sp,
          kptx_int_operand((int64_t)f->stack_guard));
    emit_fault_if(f, sv, f->poll, false, KPTX_FAULT_STACK);
}

/* The window and the control words' addresses into their registers (a device function's
 * control words only); no back-edge yet.
 *
 * A recursion polls at its cycle heads (callgraph.c): every cycle of calls passes through
 * one, so a recursion that never ends, tail calls made jumps by ptxas included, reads the
 * cancel word at least once each time round. The head reads it unconditionally as it
 * starts: the back-edges' count is a register of the invocation, zero at every call, so a
 * counted poll would never come due. One load per call of a head, whose call already
 * costs a frame; heads only, not every function of the cycle (f -> g -> f polls in f
 * alone); at the start of the body rather than before each call that closes a cycle, as
 * often on the way round (one more read when the recursion is entered from outside) but
 * one site per function whatever its calls, under no call's guard, and no call needs to
 * find its edge. */
static void load_params(fencer *f, kptx_stmt_vec *sv)
{
    kptx_scrub_prologue(&f->rw, sv, &f->scrub, f->fn);    /* before any of fn's code */
    if (f->scrub.shared) {
        kptx_scrub_shared(&f->rw, sv, &f->scrub, f->smem.var);
        f->smem.var_used = true;    /* the module declares the .extern array */
    }
    kptx_local_prologue(&f->rw, sv, &f->local);    /* the local clamps' bounds */
    kptx_smem_prologue(&f->rw, sv, &f->smem);      /* the shared clamps per width */
    if (!f->controlled)
        return;
    /* a device function has only the control words' addresses (no memory to fence) */
    for (unsigned i = f->device_fn ? R_CANCEL - R_BASE : 0; i < KPTX_FENCE_EXTRA_PARAMS; i++)
        emit2(f, sv, "ld", ".param.u64", kptx_reg_operand(f->reg[R_BASE + i]),
              kptx_rw_addr(&f->rw, f->param[i], 0));
    kptx_align_prologue(&f->rw, sv, &f->align);    /* an entry's masks per width */
    emit2(f, sv, "mov", ".u32", kptx_reg_operand(f->creg[C_COUNT]), kptx_int_operand(0));
    if (f->poll_on_entry)
        emit_cancel_check(f, sv);
    if (f->guard_stack)
        emit_stack_check(f, sv);
}

static size_t body_bound(const kptx_function *fn, unsigned n_loops)
{
    /* declarations (at most 10, a mask and two shared clamps per width), the prologue (an
     * entry's 5 and a mask per width, a device function's 3, a cycle head's poll 3 and the
     * stack check 5, the shared clamps' 3 and 4 per width), and what each one may add */
    size_t n = fn->n_stmts + 24 + 8 * KPTX_ALIGN_SLOTS + (size_t)n_loops * (PER_LOOP + 1) +
               2 + 3 * KPTX_SMEM_BOUNDS +     /* the shared groups' registers and bounds */
               kptx_scrub_bound(fn) + 4 + 9 * KPTX_ALIGN_SLOTS;    /* and the local clamps' */
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_INSTR)
            n += PER_ACCESS * fn->stmts[i].u.instr.n_ops + PER_CONTROL;
    return n;
}

static void hook_declare(void *f, kptx_stmt_vec *sv)
{
    declare(f, sv);
}

static void hook_prologue(void *f, kptx_stmt_vec *sv)
{
    load_params(f, sv);
}

static void hook_instr(void *user, kptx_stmt_vec *sv, const kptx_stmt *s)
{
    fencer *f = user;
    fence_instr(f, sv, f->fn, s);
}

/* A label: itself, and after a counted loop's head the inner bound of its first strip. */
static void hook_label(void *user, kptx_stmt_vec *sv, const kptx_stmt *s)
{
    fencer *f = user;
    kptx_rw_push(&f->rw, sv, s);
    int loop = f->loop_at[s - f->fn->stmts];
    if (loop >= 0)
        kptx_loop_emit_head(&f->rw, sv, &f->loops[loop], &f->loop_names[loop]);
}

/* fn's labels and counted loops, and which statements belong to the loops' rewrites. */
static bool find_loops(fencer *f, const kptx_function *fn)
{
    f->loop_at = malloc((fn->n_stmts ? fn->n_stmts : 1) * sizeof *f->loop_at);
    if (!f->loop_at || kptx_label_index_build(&f->labels, fn) ||
        (f->controlled && kptx_find_counted_loops(fn, &f->labels, &f->loops, &f->n_loops)))
        return false;
    f->loop_names = f->n_loops ? malloc(f->n_loops * sizeof *f->loop_names) : NULL;
    if (f->n_loops && !f->loop_names)
        return false;
    for (unsigned i = 0; i < fn->n_stmts; i++)
        f->loop_at[i] = -1;
    for (unsigned k = 0; k < f->n_loops; k++) {
        f->loop_names[k] = name_loop(f, k);
        f->loop_at[f->loops[k].head] = (int)k;
        f->loop_at[f->loops[k].test] = (int)k;
        f->loop_at[f->loops[k].edge] = (int)k;
    }
    return true;
}

static void forget_loops(fencer *f)
{
    kptx_label_index_free(&f->labels);
    free(f->loops);
    free(f->loop_names);
    free(f->loop_at);
    f->loops = NULL;
    f->loop_names = NULL;
    f->loop_at = NULL;
    f->n_loops = 0;
}

static void fence_body(fencer *f, kptx_function *out, const kptx_function *fn)
{
    const kptx_body_hooks h = {hook_declare, hook_prologue, hook_instr, f, hook_label};
    f->fn = fn;
    kptx_smem_scan(&f->smem, f->m, fn, !f->device_fn);
    if (!f->trap)       /* KPTX_FENCE_TRAP checks, and reports, each access */
        kptx_smem_group_scan(&f->smem, f->m, fn);
    kptx_scrub_scan(&f->scrub, fn, f->local.top);
    kptx_local_scan(&f->local, f->m, fn, !f->device_fn);
    if (find_loops(f, fn) && !kptx_reg_set_build(fn, &f->regs))
        kptx_rw_body(&f->rw, body_bound(fn, f->n_loops), fn, out, &h);
    else
        f->rw.oom = true;
    kptx_reg_set_free(&f->regs);
    forget_loops(f);
    kptx_smem_forget(&f->smem);
    f->smem.used = f->smem.generic = 0;
    f->scrub.n_vars = 0;
    f->scrub.shared = false;
    f->scrub.frame_top = 0;
    f->scrub.frame_read = false;
    f->local.used = f->local.generic = 0;
}

/* The fenced entry: fn's parameters and then the window's, and the fenced body. */
static void fence_entry(fencer *f, kptx_function *fn)
{
    kptx_function out = *fn;
    out.n_params = fn->n_params + KPTX_FENCE_EXTRA_PARAMS;
    out.params = kptx_rw_alloc(&f->rw, out.n_params * sizeof *out.params);
    if (!out.params)
        return;
    if (fn->n_params)
        memcpy(out.params, fn->params, fn->n_params * sizeof *fn->params);
    uint32_t off = kptx_fence_param_offset(fn->param_bytes);
    for (unsigned i = 0; i < KPTX_FENCE_EXTRA_PARAMS; i++, off += 8)
        out.params[fn->n_params + i] = (kptx_var){.space = KPTX_SPACE_PARAM, .type = ".u64",
                                                  .name = f->param[i], .offset = off,
                                                  .size = 8};
    out.param_bytes = off;
    kptx_align_scan(&f->align, f->m, fn);
    fence_body(f, &out, fn);
    out.code_label = kptx_scrub_done_label(&f->rw, &f->scrub);    /* later prologues after */
    f->align.used = 0;      /* device functions touch no global memory: no masks */
    if (!f->rw.oom)
        *fn = out;
}

/* fn's parameters with the control words' two appended (a device function's). */
static kptx_var *controlled_params(fencer *f, const kptx_function *fn)
{
    kptx_var *p = kptx_rw_alloc(&f->rw, (fn->n_params + 2) * sizeof *p);
    if (!p)
        return NULL;
    if (fn->n_params)
        memcpy(p, fn->params, fn->n_params * sizeof *p);
    for (unsigned i = 0; i < 2; i++)
        p[fn->n_params + i] = (kptx_var){.space = KPTX_SPACE_PARAM, .type = ".b64",
                                         .name = f->param[R_CANCEL - R_BASE + i]};
    return p;
}

/* A device function that takes the control words (facts not NULL): its declaration, and
 * its body rewritten as an entry's (polls, faults; it touches no global memory,
 * fence_check.c); or one whose shared accesses only are clamped, parameters unchanged. */
static void fence_device_fn(fencer *f, kptx_function *fn, const kptx_fn_facts *facts)
{
    kptx_function out = *fn;
    if (facts && !(out.params = controlled_params(f, fn)))
        return;
    out.n_params = fn->n_params + (facts ? 2 : 0);
    if (fn->has_body) {
        f->device_fn = true;
        f->controlled = facts != NULL;
        f->poll_on_entry = facts && facts->cycle_head;
        f->guard_stack = facts && facts->recursive && f->stack_guard;
        fence_body(f, &out, fn);
        f->device_fn = f->poll_on_entry = f->guard_stack = false;
        f->controlled = true;
    }
    if (!f->rw.oom)
        *fn = out;
}

static int setup_names(fencer *f)
{
    int rc = kptx_unused_prefix(f->m, "__kfence", f->prefix, sizeof f->prefix);
    if (rc)
        return rc;
    f->param[0] = kptx_rw_name(&f->rw, f->prefix, "_base");
    f->param[1] = kptx_rw_name(&f->rw, f->prefix, "_mask");
    f->param[2] = kptx_rw_name(&f->rw, f->prefix, "_cancel");
    f->param[3] = kptx_rw_name(&f->rw, f->prefix, "_fault");
    f->pred = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_p"));
    f->poll = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_q"));
    f->oob = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_o"));
    f->loop_pred[0] = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_la"));
    f->loop_pred[1] = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_lb"));
    f->loop_reg = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_n"));
    f->call_param[0] = kptx_rw_name(&f->rw, f->prefix, "_a0");
    f->call_param[1] = kptx_rw_name(&f->rw, f->prefix, "_a1");
    const char *reg = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_r"));
    const char *creg = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_c"));
    for (unsigned i = 0; i < N_REGS && reg; i++) {
        char num[8];
        snprintf(num, sizeof num, "%u", i);
        f->reg[i] = kptx_rw_name(&f->rw, reg, num);
        if (i < N_CREGS && creg)
            f->creg[i] = kptx_rw_name(&f->rw, creg, num);
    }
    kptx_align_setup(&f->rw, &f->align, f->prefix, f->reg[R_MASK]);
    kptx_smem_setup(&f->rw, &f->smem, f->prefix);
    kptx_scrub_setup(&f->rw, &f->scrub, f->prefix);
    return f->rw.oom ? KPTX_ENOMEM : 0;
}

/* Marks in fence[] (per analysed function) the entries that can be fenced, and in ctl[]
 * the device functions they reach that get the control words (with KPTX_FENCE_TRAP also
 * those whose shared accesses are clamped: they report them); how many entries. */
static unsigned plan(const kptx_module *m, const kptx_analysis *an, unsigned flags,
                     bool *fence, bool *ctl, int *rc)
{
    unsigned n = 0;
    bool *faults = flags & KPTX_FENCE_TRAP ? calloc(an->n_fns ? an->n_fns : 1, 1) : NULL;
    if ((flags & KPTX_FENCE_TRAP) && !faults) {
        *rc = KPTX_ENOMEM;
        return 0;
    }
    for (unsigned i = 0; i < an->n_fns; i++) {
        char why[192];
        const kptx_function *fn = an->facts[i].fn;
        if (faults && !fn->is_entry)
            faults[i] = kptx_smem_clamps_any(m, fn);
        if (!fn->is_entry || !fn->has_body)
            continue;
        kptx_fence_judge(m, an, i, flags, why, sizeof why);
        fence[i] = !why[0];
    }
    *rc = kptx_plan_controlled(an, faults, fence, ctl, &n);
    free(faults);
    return *rc ? 0 : n;
}

int kptx_fence_module(kptx_module *m, unsigned flags, unsigned *n_fenced, kptx_error *err)
{
    const kptx_fence_opts o = {.flags = flags};
    return kptx_fence_module_opts(m, &o, n_fenced, err);
}

int kptx_fence_module_opts(kptx_module *m, const kptx_fence_opts *o, unsigned *n_fenced,
                           kptx_error *err)
{
    if (n_fenced)
        *n_fenced = 0;
    if (!m || !o)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL argument");
    unsigned flags = o->flags;
    const kptx_analysis *an = kptx_module_analysis(m, err);
    if (!an)
        return KPTX_ENOMEM;
    fencer f = {.m = m, .rw = {.a = m->arena}, .trap = (flags & KPTX_FENCE_TRAP) != 0,
                .an = an, .controlled = true};
    bool *fence = calloc(an->n_fns ? an->n_fns : 1, sizeof *fence);
    bool *ctl = calloc(an->n_fns ? an->n_fns : 1, sizeof *ctl);
    int rc = !fence || !ctl ? KPTX_ENOMEM : setup_names(&f);
    if (!rc)
        kptx_local_setup(&f.rw, &f.local, f.prefix, m, o->local_top, o->stack_bytes);
    if (!rc)
        rc = kptx_stack_guard(m, an, o->stack_bytes, o->stack_top, &f.stack_guard);
    unsigned count = rc ? 0 : plan(m, an, flags, fence, ctl, &rc);
    f.ctl = ctl;
    for (unsigned i = 0; !rc && count && i < m->n_items; i++) {
        kptx_item *it = &m->items[i];
        if (it->kind != KPTX_ITEM_FUNCTION)
            continue;
        int k = kptx_analysis_find(an, it->u.fn.name);
        if (k >= 0 && it->u.fn.is_entry && it->u.fn.has_body && fence[k])
            fence_entry(&f, &it->u.fn);
        else if (k >= 0 && !it->u.fn.is_entry && ctl[k])
            fence_device_fn(&f, &it->u.fn, &an->facts[k]); /* and declarations */
        else if (!it->u.fn.is_entry && (kptx_smem_clamps_any(m, &it->u.fn) ||
                                        kptx_scrub_any(&it->u.fn) ||
                                        kptx_local_any(m, &it->u.fn, f.local.top)))
            fence_device_fn(&f, &it->u.fn, NULL);   /* its shared accesses, its locals */
    }
    if (!rc && count)
        rc = kptx_smem_declare_var(&f.rw, m, &f.smem);
    free(fence);
    free(ctl);
    if (!rc && f.rw.oom)
        rc = KPTX_ENOMEM;
    if (count)
        kptx_module_forget_analysis(m);
    if (rc)
        return kptx_fail(err, rc, 0, 0, rc == KPTX_ENOMEM ? "out of memory while fencing"
                                                          : "no unused name prefix for fencing");
    if (n_fenced)
        *n_fenced = count;
    return 0;
}
