/* The fence's clamp of shared addresses (kernelet/ptx.h, "Fencing"; docs/SECURITY.md). On
 * the GPU a shared access past the block's shared memory, or not aligned to its width,
 * raises a sticky error that ends the shared context and every tenant's work with it. So
 * every .shared access of a fenced kernel (ld, st, atom, red; ldmatrix and stmatrix rows,
 * mbarrier objects, cp.async's destination: fence_check.c says which and their widths; and
 * every generic one whose address isspacep.shared finds shared), wherever it is, entry or
 * device function (cp.async: entries only, it touches global memory), uses
 *   a' = min(a & -w, hi_w),   hi_w = max(limit - w, 0)
 * for an access of w bytes at shared offset a: an aligned address below the limit is
 * unchanged (a correct kernel computes exactly what it did), any other lands in the block's
 * own shared memory, aligned. Shared memory is the block's own: no other tenant's bytes
 * are there, so where it lands is the tenant's affair (as the window's sink is, fence.c).
 *
 * The limit, computed in one place (kptx_smem_prologue) as a function starts: where the
 * block's dynamic shared memory starts (the address of an .extern .shared array the pass
 * declares; the dynamic memory follows all static shared variables) plus its size
 * (%dynamic_smem_size): the end of the block's own shared memory, whatever the GPU puts
 * before it (sm_80 and later reserve 1 KiB per block for the driver: on the H100 offsets 0
 * to 0x400, the user's memory starting at 0x400; bench/compat/smem_probe.cu,
 * docs/perf/isolation.md). Offsets [0, limit) are assumed addressable by the block (on the
 * H100 writing offset 0 passes): a block always has that much (its own variables, its
 * dynamic memory and what lies below them). A sliced variant's own shared array (slice.c)
 * comes before the dynamic memory too. %total_smem_size would not do: on the H100 it counts
 * the user's bytes only (rounded up to 128), not where they start, and the slicer refuses
 * it.
 *
 * Each clamped access costs an and and a min (the and is left out for single bytes), plus
 * whatever the address needed computed (an add for [%r+4], a cvt for a 64-bit register:
 * shared offsets are 32-bit); a generic one isspacep.shared, and, min and selp on top of
 * the global fence. An access [var+off] of a sized .shared variable that stays inside it,
 * aligned, needs no clamp and keeps its address (nvcc writes many). When the block has
 * less shared memory than the access's width (none at all, or an .extern array launched
 * without the bytes it needs; never on the H100, whose limit is at least 0x400) hi_w is 0;
 * where nothing lies below the user's memory (the emulator, GPUs before sm_80) such an
 * access may still fault, as natively. */
#include <stdio.h>

#include "ptx_internal.h"

void kptx_smem_setup(kptx_rw *rw, kptx_smem_clamps *sc, const char *prefix)
{
    const char *hi = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_s"));
    const char *ghi = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_g"));
    sc->var = kptx_rw_name(rw, prefix, "_smem");
    for (unsigned k = 0; k < KPTX_ALIGN_SLOTS && hi && ghi; k++) {
        char num[16];
        snprintf(num, sizeof num, "%u", 1u << k);
        sc->hi[k] = kptx_rw_name(rw, hi, num);
        sc->ghi[k] = kptx_rw_name(rw, ghi, num);
    }
    sc->scratch[0] = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_sa"));
    sc->scratch[1] = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_sb"));
    sc->used = sc->generic = 0;
    sc->var_used = false;
}

bool kptx_smem_in_bounds(const kptx_module *m, const kptx_function *fn,
                         const kptx_operand *addr, unsigned width)
{
    if (addr->n_elems != 1 || addr->elems[0].kind != KPTX_OPND_SYMBOL || !width)
        return false;
    const kptx_var *v = kptx_symbol_var(m, fn, addr->elems[0].name);
    if (!v || v->space != KPTX_SPACE_SHARED || (v->linkage && !strcmp(v->linkage, ".extern")))
        return false;
    uint64_t size;
    unsigned align;
    kptx_var_size_align(v, &size, &align);
    int64_t off = addr->value;
    return size && off >= 0 && (uint64_t)off <= size && width <= size - (uint64_t)off &&
           off % width == 0 && align % width == 0;
}

/* The clamped access (kind and width) of in, or 0 when it needs none. */
static unsigned clamped_width(const kptx_module *m, const kptx_function *fn,
                              const kptx_instr *in, bool generic)
{
    kptx_fence_kind k = kptx_fence_kind_of(m, fn, in);
    unsigned width = kptx_access_width(in);
    if (k == KPTX_FENCE_GENERIC)
        return generic ? width : 0;
    if (k == KPTX_FENCE_COPY)       /* like a generic access, only an entry's (global) */
        return generic && !kptx_smem_in_bounds(m, fn, &in->ops[0], width) ? width : 0;
    if (k != KPTX_FENCE_SHARED)
        return 0;
    for (unsigned i = 0; i < in->n_ops; i++)
        if (in->ops[i].kind == KPTX_OPND_ADDRESS && kptx_smem_in_bounds(m, fn, &in->ops[i], width))
            return 0;
    return width;
}

void kptx_smem_scan(kptx_smem_clamps *sc, const kptx_module *m, const kptx_function *fn,
                    bool generic)
{
    sc->used = sc->generic = 0;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        unsigned width = s->kind == KPTX_STMT_INSTR ? clamped_width(m, fn, &s->u.instr, generic)
                                                    : 0;
        if (!width)
            continue;
        sc->used |= 1u << kptx_width_slot(width);
        if (kptx_fence_kind_of(m, fn, &s->u.instr) == KPTX_FENCE_GENERIC)
            sc->generic |= 1u << kptx_width_slot(width);
    }
}

bool kptx_smem_clamps_any(const kptx_module *m, const kptx_function *fn)
{
    for (unsigned i = 0; fn->has_body && i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_INSTR && clamped_width(m, fn, &fn->stmts[i].u.instr,
                                                                 false))
            return true;
    return false;
}

static void declare_reg(kptx_rw *rw, kptx_stmt_vec *sv, const char *type, const char *name)
{
    kptx_stmt *r = kptx_rw_push(rw, sv, NULL);
    if (r) {
        r->kind = KPTX_STMT_VAR;
        r->u.var = (kptx_var){.space = KPTX_SPACE_REG, .type = type, .name = name};
    }
}

void kptx_smem_declare(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_smem_clamps *sc)
{
    for (unsigned i = 0; i < 2 && sc->used; i++)
        declare_reg(rw, sv, ".b32", sc->scratch[i]);
    for (unsigned k = 0; k < KPTX_ALIGN_SLOTS; k++) {
        if ((sc->used >> k) & 1u)
            declare_reg(rw, sv, ".b32", sc->hi[k]);
        if ((sc->generic >> k) & 1u)
            declare_reg(rw, sv, ".b64", sc->ghi[k]);
    }
}

static void emit(kptx_rw *rw, kptx_stmt_vec *sv, const char *op, const char *mods,
                 kptx_operand a, kptx_operand b, kptx_operand c, unsigned n)
{
    const kptx_operand ops[3] = {a, b, c};
    kptx_rw_emit(rw, sv, op, mods, n, ops);
}

/* The one place that says where the block's shared memory ends (the top of this file):
 * change the limit here. */
void kptx_smem_prologue(kptx_rw *rw, kptx_stmt_vec *sv, kptx_smem_clamps *sc)
{
    if (!sc->used)
        return;
    sc->var_used = true;
    kptx_operand lim = kptx_reg_operand(sc->scratch[0]), dyn = kptx_reg_operand(sc->scratch[1]);
    kptx_operand none = {0};
    emit(rw, sv, "mov", ".u32", lim, (kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = sc->var},
         none, 2);
    emit(rw, sv, "mov", ".u32", dyn,
         (kptx_operand){.kind = KPTX_OPND_SREG, .name = "%dynamic_smem_size"}, none, 2);
    emit(rw, sv, "add", ".u32", lim, lim, dyn, 3);
    for (unsigned k = 0; k < KPTX_ALIGN_SLOTS; k++) {
        if (!((sc->used >> k) & 1u))
            continue;
        kptx_operand hi = kptx_reg_operand(sc->hi[k]);
        emit(rw, sv, "sub", ".s32", hi, lim, kptx_int_operand(1 << k), 3);
        emit(rw, sv, "max", ".s32", hi, hi, kptx_int_operand(0), 3);
        if (!((sc->generic >> k) & 1u))
            continue;
        kptx_operand ghi = kptx_reg_operand(sc->ghi[k]);
        emit(rw, sv, "cvt", ".u64.u32", ghi, hi, none, 2);
        emit(rw, sv, "cvta", ".shared.u64", ghi, ghi, none, 2);
    }
}

void kptx_smem_clamp(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_smem_clamps *sc,
                     kptx_operand dst, kptx_operand src, unsigned width, int64_t offset,
                     bool generic)
{
    unsigned k = kptx_width_slot(width);
    const char *bits = generic ? ".b64" : ".b32";
    if (width > 1) {
        emit(rw, sv, "and", bits, dst, src, kptx_int_operand(-(int64_t)width), 3);
        src = dst;
    }
    if (offset) {
        emit(rw, sv, "add", generic ? ".s64" : ".s32", dst, src, kptx_int_operand(offset), 3);
        src = dst;
    }
    emit(rw, sv, "min", generic ? ".u64" : ".u32", dst, src,
         kptx_reg_operand(generic ? sc->ghi[k] : sc->hi[k]), 3);
}

int kptx_smem_declare_var(kptx_rw *rw, kptx_module *m, const kptx_smem_clamps *sc)
{
    if (!sc->var_used)
        return 0;
    const kptx_var v = {.linkage = ".extern", .space = KPTX_SPACE_SHARED, .type = ".b8",
                        .name = sc->var, .align = 1, .n_dims = 1, .dims = {0}};
    return kptx_rw_add_vars(rw, m, &v, 1);
}
