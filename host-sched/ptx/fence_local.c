/* The fence's clamp of local addresses (kernelet/ptx.h, "Fencing"; docs/SECURITY.md,
 * "Local memory"). A thread's local memory is a stack at the top of its local window: on
 * the H100 an entry without locals starts at 0xfffdc0 (the local top,
 * kptx_fence_opts.local_top) and a function's frame lies below its caller's. A local
 * access past the window is an illegal address that ends the shared context, and one below
 * the running function's frame reads what earlier kernels' deeper stacks left there
 * (bench/compat/residue.cu: every word, on an H200). So every .local ld/st of a fenced
 * function (entry or device function), and every generic one of an entry that
 * isspacep.local finds local, uses
 *   a' = min(max(a & -w, lo_w), top - w),   lo_w = (sp + w - 1) & -w
 * for an access of w bytes, sp the function's stack pointer as it starts (stacksave,
 * after its frame is made): the frames of the thread's chain of calls, from the running
 * function's up to the entry's, are what the clamp leaves it, and a correct kernel, which
 * touches only those (its own variables, its callers' through pointers), computes exactly
 * what it did. A function that moves its stack pointer itself (alloca) takes its lower
 * bound a stack's size lower (kptx_fence_opts.stack_bytes): what it allocates lies there.
 *
 * Each clamped access costs an and (none for single bytes), a max and a min, plus the
 * address computed where it is not one 64-bit register. Modules that cannot use stacksave
 * (PTX ISA before 7.3, or a target before sm_52) and backends that give no local top keep
 * their local accesses as written. Within the frames, what the clamp leaves readable that
 * the running thread did not write is what the scrub zeroed (fence_scrub.c: the entry's
 * whole frame, up to the same top, and each device function's variables) and, below the
 * entry's frame, the device functions' spill slots, which ptxas adds and PTX cannot name. */
#include <stdio.h>

#include "ptx_internal.h"

void kptx_local_setup(kptx_rw *rw, kptx_local_clamps *lc, const char *prefix,
                      const kptx_module *m, uint64_t top, uint64_t stack_bytes)
{
    bool isa = m->version_major > 7 || (m->version_major == 7 && m->version_minor >= 3);
    lc->top = isa && kptx_target_sm(m) >= 52 ? top : 0;
    lc->stack_bytes = stack_bytes;
    lc->sp = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_sp"));
    lc->addr = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_lca"));
    const char *lo = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_lo"));
    const char *glo = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_glo"));
    const char *ghi = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_ghi"));
    for (unsigned k = 0; k < KPTX_ALIGN_SLOTS && lo && glo && ghi; k++) {
        char num[16];
        snprintf(num, sizeof num, "%u", 1u << k);
        lc->lo[k] = kptx_rw_name(rw, lo, num);
        lc->glo[k] = kptx_rw_name(rw, glo, num);
        lc->ghi[k] = kptx_rw_name(rw, ghi, num);
    }
    lc->used = lc->generic = 0;
    lc->alloca = false;
}

/* The width of in's access when it is a .local ld or st, else 0. */
unsigned kptx_local_width(const kptx_instr *in)
{
    if (strcmp(in->opcode, "ld") && strcmp(in->opcode, "st"))
        return 0;
    for (unsigned i = 0; i < in->n_mods; i++)
        if (!strcmp(in->mods[i], ".local"))
            return kptx_access_width(in);
    return 0;
}

static bool is_alloca(const kptx_instr *in)
{
    return !strcmp(in->opcode, "alloca") || !strcmp(in->opcode, "stackrestore");
}

void kptx_local_scan(kptx_local_clamps *lc, const kptx_module *m, const kptx_function *fn,
                     bool generic)
{
    lc->used = lc->generic = 0;
    lc->alloca = false;
    for (unsigned i = 0; lc->top && i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        if (s->kind != KPTX_STMT_INSTR)
            continue;
        const kptx_instr *in = &s->u.instr;
        lc->alloca |= is_alloca(in);
        unsigned width = kptx_local_width(in);
        if (width)
            lc->used |= 1u << kptx_width_slot(width);
        else if (generic && kptx_fence_kind_of(m, fn, in) == KPTX_FENCE_GENERIC &&
                 (width = kptx_access_width(in)))
            lc->generic |= 1u << kptx_width_slot(width);
    }
}

bool kptx_local_any(const kptx_module *m, const kptx_function *fn, uint64_t top)
{
    bool isa = m->version_major > 7 || (m->version_major == 7 && m->version_minor >= 3);
    if (!top || !isa || kptx_target_sm(m) < 52)
        return false;
    for (unsigned i = 0; fn->has_body && i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_INSTR && kptx_local_width(&fn->stmts[i].u.instr))
            return true;
    return false;
}

void kptx_local_declare(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_clamps *lc)
{
    unsigned all = lc->used | lc->generic;
    if (!all)
        return;
    kptx_rw_declare_reg(rw, sv, ".b64", lc->sp, 0);
    kptx_rw_declare_reg(rw, sv, ".b64", lc->addr, 0);
    for (unsigned k = 0; k < KPTX_ALIGN_SLOTS; k++) {
        if ((all >> k) & 1u)
            kptx_rw_declare_reg(rw, sv, ".b64", lc->lo[k], 0);
        if ((lc->generic >> k) & 1u) {
            kptx_rw_declare_reg(rw, sv, ".b64", lc->glo[k], 0);
            kptx_rw_declare_reg(rw, sv, ".b64", lc->ghi[k], 0);
        }
    }
}

/* The highest address an access of 2^k bytes may start at. */
static int64_t top_of(const kptx_local_clamps *lc, unsigned k)
{
    return (int64_t)(lc->top - (1u << k));
}

void kptx_local_prologue(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_clamps *lc)
{
    unsigned all = lc->used | lc->generic;
    if (!all)
        return;
    kptx_operand sp = kptx_reg_operand(lc->sp), none = {0};
    kptx_rw_emit(rw, sv, "stacksave", ".u64", 1, &sp);
    if (lc->alloca)     /* what it allocates lies below its frame, within a stack's size */
        kptx_rw_emit3(rw, sv, "sub", ".u64", sp, sp, kptx_int_operand((int64_t)lc->stack_bytes), 3);
    for (unsigned k = 0; k < KPTX_ALIGN_SLOTS; k++) {
        if (!((all >> k) & 1u))
            continue;
        kptx_operand lo = kptx_reg_operand(lc->lo[k]);
        kptx_rw_emit3(rw, sv, "add", ".u64", lo, sp, kptx_int_operand((1 << k) - 1), 3);
        kptx_rw_emit3(rw, sv, "and", ".b64", lo, lo, kptx_int_operand(-(1 << k)), 3);
        if (!((lc->generic >> k) & 1u))
            continue;
        kptx_operand glo = kptx_reg_operand(lc->glo[k]), ghi = kptx_reg_operand(lc->ghi[k]);
        kptx_rw_emit3(rw, sv, "cvta", ".local.u64", glo, lo, none, 2);
        kptx_rw_emit3(rw, sv, "mov", ".u64", ghi, kptx_int_operand(top_of(lc, k)), none, 2);
        kptx_rw_emit3(rw, sv, "cvta", ".local.u64", ghi, ghi, none, 2);
    }
}

void kptx_local_clamp(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_clamps *lc,
                      kptx_operand dst, kptx_operand src, unsigned width, bool generic)
{
    unsigned k = kptx_width_slot(width);
    if (width > 1) {
        kptx_rw_emit3(rw, sv, "and", ".b64", dst, src, kptx_int_operand(-(int64_t)width), 3);
        src = dst;
    }
    kptx_rw_emit3(rw, sv, "max", ".u64", dst, src, kptx_reg_operand(generic ? lc->glo[k] : lc->lo[k]),
         3);
    kptx_rw_emit3(rw, sv, "min", ".u64", dst, dst,
         generic ? kptx_reg_operand(lc->ghi[k]) : kptx_int_operand(top_of(lc, k)), 3);
}

/* The 64-bit address addr names, in lc->addr unless it is one register (assumed 64-bit
 * when is32 says not: nvcc's locals are addressed through 64-bit registers). */
static kptx_operand local_address_of(kptx_rw *rw, kptx_stmt_vec *sv,
                                     const kptx_local_clamps *lc, const kptx_operand *addr,
                                     bool is32)
{
    const kptx_operand *base = &addr->elems[0];
    kptx_operand a = kptx_reg_operand(lc->addr), none = {0};
    if (base->kind == KPTX_OPND_REG && !is32 && !addr->value)
        return *base;
    if (base->kind == KPTX_OPND_INT)
        kptx_rw_emit3(rw, sv, "mov", ".u64", a, kptx_int_operand(base->value + addr->value), none, 2);
    else if (base->kind == KPTX_OPND_SYMBOL)
        kptx_rw_emit3(rw, sv, "mov", ".u64", a, (kptx_operand){.kind = KPTX_OPND_SYMBOL,
                                                      .name = base->name}, none, 2);
    else if (is32)
        kptx_rw_emit3(rw, sv, "cvt", ".u64.u32", a, *base, none, 2);
    else
        kptx_rw_emit3(rw, sv, "mov", ".u64", a, *base, none, 2);
    if (base->kind != KPTX_OPND_INT && addr->value)
        kptx_rw_emit3(rw, sv, "add", ".s64", a, a, kptx_int_operand(addr->value), 3);
    return a;
}

kptx_operand kptx_local_fence(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_clamps *lc,
                              const kptx_operand *addr, unsigned width, bool is32)
{
    if (!lc->top || !((lc->used >> kptx_width_slot(width)) & 1u))
        return *addr;
    kptx_operand raw = local_address_of(rw, sv, lc, addr, is32);
    kptx_operand dst = kptx_reg_operand(lc->addr);
    kptx_local_clamp(rw, sv, lc, dst, raw, width, false);
    kptx_operand at = {.kind = KPTX_OPND_ADDRESS, .n_elems = 1};
    at.elems = kptx_rw_alloc(rw, sizeof *at.elems);
    if (at.elems)
        at.elems[0] = dst;
    return at;
}
