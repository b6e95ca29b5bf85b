/* The fence's clamp of shared addresses (kernelet/ptx.h, "Fencing"; docs/SECURITY.md). On
 * the GPU a shared access past the block's shared memory, or not aligned to its width,
 * raises a sticky error that ends the shared context and every tenant's work with it. So
 * every .shared access of a fenced kernel (ld, st, atom, red; ldmatrix and stmatrix rows,
 * mbarrier objects, cp.async's destination: fence_check.c says which and their widths; and
 * every generic one whose address isspacep.shared finds shared), wherever it is, entry or
 * device function (cp.async: entries only, it touches global memory), uses
 *   a' = min(a & -w, hi_w),   hi_w = max(limit - w, 0) & -w
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
#include <stdlib.h>
#include <string.h>

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
    sc->group_reg = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_sg"));
    sc->bound_reg = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_sh"));
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

void kptx_smem_declare(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_smem_clamps *sc)
{
    for (unsigned i = 0; i < 2 && sc->used; i++)
        kptx_rw_declare_reg(rw, sv, ".b32", sc->scratch[i], 0);
    if (sc->n_groups) {
        kptx_rw_declare_reg(rw, sv, ".b32", sc->group_reg, sc->n_groups);
        kptx_rw_declare_reg(rw, sv, ".b32", sc->bound_reg, sc->n_bounds);
    }
    for (unsigned k = 0; k < KPTX_ALIGN_SLOTS; k++) {
        if ((sc->used >> k) & 1u)
            kptx_rw_declare_reg(rw, sv, ".b32", sc->hi[k], 0);
        if ((sc->generic >> k) & 1u)
            kptx_rw_declare_reg(rw, sv, ".b64", sc->ghi[k], 0);
    }
}

/* Register k of the range name<n>. */
static kptx_operand numbered(kptx_rw *rw, const char *name, unsigned k)
{
    char num[16];
    snprintf(num, sizeof num, "%u", k);
    return kptx_reg_operand(kptx_rw_name(rw, name, num));
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
    kptx_rw_emit3(rw, sv, "mov", ".u32", lim, (kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = sc->var},
         none, 2);
    kptx_rw_emit3(rw, sv, "mov", ".u32", dyn,
         (kptx_operand){.kind = KPTX_OPND_SREG, .name = "%dynamic_smem_size"}, none, 2);
    kptx_rw_emit3(rw, sv, "add", ".u32", lim, lim, dyn, 3);
    for (unsigned k = 0; k < KPTX_ALIGN_SLOTS; k++) {
        if (!((sc->used >> k) & 1u))
            continue;
        kptx_operand hi = kptx_reg_operand(sc->hi[k]);
        kptx_rw_emit3(rw, sv, "sub", ".s32", hi, lim, kptx_int_operand(1 << k), 3);
        kptx_rw_emit3(rw, sv, "max", ".s32", hi, hi, kptx_int_operand(0), 3);
        /* aligned down too: a dynamic size that w does not divide would otherwise leave
         * the clamp's own address misaligned, a fault that ends the context */
        if (k)
            kptx_rw_emit3(rw, sv, "and", ".b32", hi, hi, kptx_int_operand(-(1 << k)), 3);
        if (!((sc->generic >> k) & 1u))
            continue;
        kptx_operand ghi = kptx_reg_operand(sc->ghi[k]);
        kptx_rw_emit3(rw, sv, "cvt", ".u64.u32", ghi, hi, none, 2);
        kptx_rw_emit3(rw, sv, "cvta", ".shared.u64", ghi, ghi, none, 2);
    }
    for (unsigned k = 0; k < sc->n_bounds; k++) {      /* the groups' bounds */
        kptx_operand b = numbered(rw, sc->bound_reg, k);
        kptx_rw_emit3(rw, sv, "sub", ".s32", b, lim, kptx_int_operand(sc->bound_span[k]), 3);
        kptx_rw_emit3(rw, sv, "max", ".s32", b, b, kptx_int_operand(0), 3);
        if (sc->bound_align[k] > 1)     /* the limit need not be aligned (the dynamic size) */
            kptx_rw_emit3(rw, sv, "and", ".b32", b, b, kptx_int_operand(-(int64_t)sc->bound_align[k]), 3);
    }
}

void kptx_smem_clamp(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_smem_clamps *sc,
                     kptx_operand dst, kptx_operand src, unsigned width, int64_t offset,
                     bool generic)
{
    unsigned k = kptx_width_slot(width);
    const char *bits = generic ? ".b64" : ".b32";
    if (width > 1) {
        kptx_rw_emit3(rw, sv, "and", bits, dst, src, kptx_int_operand(-(int64_t)width), 3);
        src = dst;
    }
    if (offset) {
        kptx_rw_emit3(rw, sv, "add", generic ? ".s64" : ".s32", dst, src, kptx_int_operand(offset), 3);
        src = dst;
    }
    kptx_rw_emit3(rw, sv, "min", generic ? ".u64" : ".u32", dst, src,
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

/* ---- groups: one clamp for a run of accesses from one base register ----
 *
 * nvcc unrolls loops into runs like ld.shared [%r8], [%r8+64], ... [%r8+960] in one
 * block; clamped one by one each pays a min. A group is such a run: accesses (.shared,
 * unguarded, [r + k] with r a register) of one base r in one basic block, where nothing
 * from the first to the last of them is a label, a nested scope, a branch, a call, an
 * exit, a trap or a barrier, or names r otherwise (so nothing writes it: the last member
 * may write r itself, after its access). So once the first runs, all run, or the thread
 * faults before. With lo the lowest offset, align the widest access and span the bytes
 * from r + lo to the end of the farthest, the first computes
 *   r' = min((r + lo) & -align, bound),  bound = max(limit - span, 0) & -align
 * and an access at offset k uses [r' + (k - lo)]. Each access's k - lo is a multiple of
 * its width, and lo - k0 (k0: the first's offset) of align.
 *  - A correct kernel computes exactly what it did: its widest access is aligned, so r + lo
 *    is a multiple of align; its farthest ends inside the limit, so r + lo <= limit - span,
 *    and aligned, <= bound: r' = r + lo, every access at its own address.
 *  - Otherwise some access of the group faults natively: r + lo misaligned misaligns the
 *    widest; r + lo > bound (aligned) puts the farthest's end past the limit, or, where
 *    r + lo + span wraps past 2^32, r + lo itself (the lowest access) is at least
 *    2^32 - span, past any limit. The group runs whole, so the kernel would fault, and
 *    moving its other accesses too changes only a faulting kernel's behaviour.
 *  - Every access lands inside [0, limit) and aligned: r' <= bound, and r' + k - lo + w <=
 *    bound + span <= limit, given limit >= span. A span is at most KPTX_SMEM_GROUP_SPAN
 *    (1 KiB), and on sm_80 and later the limit is at least 0x400 (the driver's 1 KiB lies
 *    below the user's memory: the top of this file). Where nothing lies below (the
 *    emulator, GPUs before sm_80) a block with less shared memory than a group's span
 *    faults in that group, fenced as natively, as an access wider than the block's memory
 *    does alone.
 * Anything else (a guard, generic and cp.async accesses, a base that is a variable or a
 * constant, a single access, a bound past KPTX_SMEM_BOUNDS per function, KPTX_FENCE_TRAP,
 * whose checks report each access) keeps its own clamp. */

/* Whether operand o names register reg. */
static bool names_reg(const kptx_operand *o, const char *reg)
{
    if (o->kind == KPTX_OPND_REG)
        return !strcmp(o->name, reg);
    for (unsigned i = 0; o->kind != KPTX_OPND_SYMBOL && i < o->n_elems; i++)
        if (names_reg(&o->elems[i], reg))
            return true;
    return false;
}

/* Whether in names reg other than as the base of an address. */
static bool names_besides_address(const kptx_instr *in, const char *reg)
{
    for (unsigned i = 0; i < in->n_ops; i++)
        if (in->ops[i].kind != KPTX_OPND_ADDRESS && names_reg(&in->ops[i], reg))
            return true;
    return false;
}

/* Whether in names reg anywhere (its guard included). */
static bool names_any(const kptx_instr *in, const char *reg)
{
    for (unsigned i = 0; i < in->n_ops; i++)
        if (names_reg(&in->ops[i], reg))
            return true;
    return in->guard && !strcmp(in->guard, reg);
}

/* Whether s ends a run: a basic block's end or start, a scope (a register may be shadowed
 * there), or what may stop the thread or wait for others before the next access. */
static bool ends_run(const kptx_stmt *s)
{
    static const char *const stops[] = {"bra", "brx", "call", "ret", "exit", "trap",
                                        "brkpt", "bar", "barrier"};
    if (s->kind == KPTX_STMT_DIRECTIVE)
        return false;
    if (s->kind != KPTX_STMT_INSTR)
        return true;
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
        if (!strcmp(s->u.instr.opcode, stops[i]))
            return true;
    return false;
}

/* The address of s when it may join a group (an unguarded .shared access [reg + k] that
 * is clamped), its width into *width; else NULL. */
static const kptx_operand *group_address(const kptx_module *m, const kptx_function *fn,
                                         const kptx_stmt *s, unsigned *width)
{
    if (s->kind != KPTX_STMT_INSTR || s->u.instr.guard ||
        kptx_fence_kind_of(m, fn, &s->u.instr) != KPTX_FENCE_SHARED ||
        !(*width = clamped_width(m, fn, &s->u.instr, false)))
        return NULL;
    const kptx_operand *addr = NULL;
    for (unsigned i = 0; i < s->u.instr.n_ops; i++)
        if (s->u.instr.ops[i].kind == KPTX_OPND_ADDRESS) {
            if (addr)
                return NULL;
            addr = &s->u.instr.ops[i];
        }
    bool small = addr && addr->value > -(1 << 30) && addr->value < (1 << 30);
    return small && addr->n_elems == 1 && addr->elems[0].kind == KPTX_OPND_REG ? addr : NULL;
}

/* A group as it grows: its offsets and widths so far. */
typedef struct run {
    int64_t k0, lo, end;        /* the first's offset; the lowest; the farthest end */
    unsigned align;
} run;

/* Adds an access at offset k of width w to r, when the group stays one (the top of this
 * section): k - k0 a multiple of w, lo - k0 of the widest, the span at most 1 KiB. */
static bool run_add(run *r, int64_t k, unsigned w)
{
    int64_t lo = k < r->lo ? k : r->lo, end = k + w > r->end ? k + w : r->end;
    unsigned align = w > r->align ? w : r->align;
    if ((uint64_t)(k - r->k0) % w || (uint64_t)(lo - r->k0) % align ||
        end - lo > KPTX_SMEM_GROUP_SPAN)
        return false;
    *r = (run){.k0 = r->k0, .lo = lo, .end = end, .align = align};
    return true;
}

/* The bound slot of (span, align), added when new; -1 when all are taken. */
static int bound_slot(kptx_smem_clamps *sc, int64_t span, unsigned align)
{
    for (unsigned k = 0; k < sc->n_bounds; k++)
        if (sc->bound_span[k] == span && sc->bound_align[k] == align)
            return (int)k;
    if (sc->n_bounds == KPTX_SMEM_BOUNDS)
        return -1;
    sc->bound_span[sc->n_bounds] = span;
    sc->bound_align[sc->n_bounds] = align;
    return (int)sc->n_bounds++;
}

/* The group that starts at statement i: its members marked in group_at as sc->n_groups
 * (kept when there are two or more and a bound for it). */
static void grow_group(kptx_smem_clamps *sc, const kptx_module *m, const kptx_function *fn,
                       unsigned i)
{
    unsigned w, n = 1, last = i;
    const kptx_operand *a = group_address(m, fn, &fn->stmts[i], &w);
    const char *reg = a ? a->elems[0].name : NULL;
    if (!a || names_besides_address(&fn->stmts[i].u.instr, reg))
        return;     /* it writes r: the next access sees another base */
    run r = {.k0 = a->value, .lo = a->value, .end = a->value + w, .align = w};
    int g = (int)sc->n_groups;
    sc->group_at[i] = g;
    for (unsigned j = i + 1; j < fn->n_stmts && !ends_run(&fn->stmts[j]); j++) {
        const kptx_stmt *s = &fn->stmts[j];
        if (s->kind != KPTX_STMT_INSTR)
            continue;
        const kptx_operand *b = group_address(m, fn, s, &w);
        bool member = b && !strcmp(b->elems[0].name, reg) && run_add(&r, b->value, w);
        if (member) {
            sc->group_at[j] = g;
            n++;
            last = j;
        }
        if (member ? names_besides_address(&s->u.instr, reg) : names_any(&s->u.instr, reg))
            break;      /* r may change: a write, or an access that is no member */
    }
    int slot = n > 1 ? bound_slot(sc, r.end - r.lo, r.align) : -1;
    if (slot < 0) {
        for (unsigned j = i; j <= last; j++)
            if (sc->group_at[j] == g)
                sc->group_at[j] = -1;
        return;
    }
    sc->groups[sc->n_groups++] = (kptx_smem_group){.lo = r.lo, .align = r.align,
                                                   .slot = (unsigned)slot, .first = i};
}

void kptx_smem_group_scan(kptx_smem_clamps *sc, const kptx_module *m, const kptx_function *fn)
{
    kptx_smem_forget(sc);
    if (!sc->used || !fn->n_stmts)
        return;
    sc->group_at = malloc(fn->n_stmts * sizeof *sc->group_at);
    sc->groups = malloc(fn->n_stmts * sizeof *sc->groups);
    if (!sc->group_at || !sc->groups) {
        kptx_smem_forget(sc);       /* each access clamped alone */
        return;
    }
    for (unsigned i = 0; i < fn->n_stmts; i++)
        sc->group_at[i] = -1;
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (sc->group_at[i] < 0)
            grow_group(sc, m, fn, i);
}

void kptx_smem_forget(kptx_smem_clamps *sc)
{
    free(sc->group_at);
    free(sc->groups);
    sc->group_at = NULL;
    sc->groups = NULL;
    sc->n_groups = sc->n_bounds = 0;
}

int kptx_smem_group_of(const kptx_smem_clamps *sc, unsigned i)
{
    return sc->group_at ? sc->group_at[i] : -1;
}

void kptx_smem_group_clamp(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_smem_clamps *sc,
                           unsigned g, kptx_operand src)
{
    const kptx_smem_group *gr = &sc->groups[g];
    kptx_operand dst = numbered(rw, sc->group_reg, g);
    /* r + lo wraps as the lowest access's own address does; a multiple of align is added
     * after the and ((r & -a) + lo is (r + lo) & -a), which the min may take in
     * (sm_90's VIADDMNMX) and groups of one base may share */
    bool late = gr->lo % gr->align == 0;
    if (gr->lo && !late) {
        kptx_rw_emit3(rw, sv, "add", ".s32", dst, src, kptx_int_operand(gr->lo), 3);
        src = dst;
    }
    if (gr->align > 1) {
        kptx_rw_emit3(rw, sv, "and", ".b32", dst, src, kptx_int_operand(-(int64_t)gr->align), 3);
        src = dst;
    }
    if (gr->lo && late) {
        kptx_rw_emit3(rw, sv, "add", ".s32", dst, src, kptx_int_operand(gr->lo), 3);
        src = dst;
    }
    kptx_rw_emit3(rw, sv, "min", ".u32", dst, src, numbered(rw, sc->bound_reg, gr->slot), 3);
}

kptx_operand kptx_smem_group_address(kptx_rw *rw, const kptx_smem_clamps *sc, unsigned g,
                                     int64_t off)
{
    kptx_operand *elem = kptx_rw_alloc(rw, sizeof *elem);
    if (elem)
        *elem = numbered(rw, sc->group_reg, g);
    return (kptx_operand){.kind = KPTX_OPND_ADDRESS, .n_elems = elem ? 1 : 0, .elems = elem,
                          .value = off - sc->groups[g].lo};
}
