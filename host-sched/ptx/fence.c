/* The fencing pass: every global memory access of a fenceable entry is confined to the
 * tenant's address window (Guardian-style address masking; kernelet/ptx.h, "Fencing").
 * The entry loads the window's base and mask from its two new parameters once, into
 * registers no other code can name, and each access's address is computed as
 *   .global:  a = (addr & mask) | base
 *   generic:  a = isspacep.global(addr) ? (addr & mask) | base : addr
 * just before the access, which then uses [a]. Inside the window nothing changes, so a
 * kernel that stays in its own memory computes exactly what it did; an address outside is
 * redirected into the tenant's own window, never into another tenant's memory. Shared,
 * local, const and param accesses are left alone: they cannot reach global memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* Statements one access may add: address, isspacep, and, or, selp. */
#define PER_ACCESS 6

enum { R_BASE, R_MASK, R_ADDR, R_WIN, N_REGS };

typedef struct fencer {
    kptx_module *m;
    kptx_rw rw;
    char prefix[32];
    const char *param[KPTX_FENCE_EXTRA_PARAMS]; /* base, mask */
    const char *reg[N_REGS];
    const char *pred;
    const kptx_function *fn;        /* the one being fenced */
} fencer;

static kptx_operand int_op(int64_t v)
{
    return (kptx_operand){.kind = KPTX_OPND_INT, .value = v};
}

static kptx_operand sym_op(const char *name)
{
    return (kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = name};
}

static void emit2(fencer *f, kptx_stmt_vec *sv, const char *op, const char *mods,
                  kptx_operand a, kptx_operand b)
{
    const kptx_operand ops[2] = {a, b};
    kptx_rw_emit(&f->rw, sv, op, mods, 2, ops);
}

static void emit3(fencer *f, kptx_stmt_vec *sv, const char *op, const char *mods,
                  kptx_operand a, kptx_operand b, kptx_operand c)
{
    const kptx_operand ops[3] = {a, b, c};
    kptx_rw_emit(&f->rw, sv, op, mods, 3, ops);
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
        emit3(f, sv, "add", ".s64", a, *base, int_op(addr->value));
        return f->reg[R_ADDR];
    }
    if (base->kind == KPTX_OPND_INT) {
        emit2(f, sv, "mov", ".u64", a, int_op((int64_t)((uint64_t)base->value +
                                                        (uint64_t)addr->value)));
        return f->reg[R_ADDR];
    }
    take_address(f, sv, fn, base->name, generic);
    if (addr->value)
        emit3(f, sv, "add", ".s64", a, a, int_op(addr->value));
    return f->reg[R_ADDR];
}

/* Emits the fence of addr and returns the address operand that replaces it: [a]. */
static kptx_operand fence_address(fencer *f, kptx_stmt_vec *sv, const kptx_function *fn,
                                  const kptx_operand *addr, bool generic)
{
    kptx_operand a = kptx_reg_operand(f->reg[R_ADDR]), w = kptx_reg_operand(f->reg[R_WIN]);
    kptx_operand raw = kptx_reg_operand(address_of(f, sv, fn, addr, generic));
    kptx_operand *elem = kptx_rw_alloc(&f->rw, sizeof *elem);
    kptx_operand dst = generic ? w : a;
    if (generic)
        emit2(f, sv, "isspacep", ".global", kptx_reg_operand(f->pred), raw);
    emit3(f, sv, "and", ".b64", dst, raw, kptx_reg_operand(f->reg[R_MASK]));
    emit3(f, sv, "or", ".b64", dst, dst, kptx_reg_operand(f->reg[R_BASE]));
    if (generic) {
        const kptx_operand ops[4] = {a, w, raw, kptx_reg_operand(f->pred)};
        kptx_rw_emit(&f->rw, sv, "selp", ".b64", 4, ops);
    }
    if (elem)
        *elem = a;
    return (kptx_operand){.kind = KPTX_OPND_ADDRESS, .n_elems = elem ? 1 : 0, .elems = elem};
}

static void fence_instr(fencer *f, kptx_stmt_vec *sv, const kptx_function *fn,
                        const kptx_stmt *s)
{
    kptx_fence_kind k = kptx_fence_kind_of(f->m, fn, &s->u.instr);
    if (k != KPTX_FENCE_GLOBAL && k != KPTX_FENCE_GENERIC) {
        kptx_rw_push(&f->rw, sv, s);
        return;
    }
    const kptx_instr *in = &s->u.instr;
    kptx_operand *ops = kptx_rw_alloc(&f->rw, in->n_ops * sizeof *ops);
    if (!ops)
        return;
    for (unsigned i = 0; i < in->n_ops; i++)
        ops[i] = in->ops[i].kind == KPTX_OPND_ADDRESS
                     ? fence_address(f, sv, fn, &in->ops[i], k == KPTX_FENCE_GENERIC)
                     : in->ops[i];
    kptx_stmt *c = kptx_rw_push(&f->rw, sv, s);
    if (c) {
        c->line = 0;
        c->u.instr.ops = ops;
    }
}

/* Declarations of the pass's registers, and the loads of the window into two of them. */
static void declare(fencer *f, kptx_stmt_vec *sv)
{
    kptx_stmt *r = kptx_rw_push(&f->rw, sv, NULL), *p = kptx_rw_push(&f->rw, sv, NULL);
    if (!r || !p)
        return;
    r->kind = KPTX_STMT_VAR;
    r->u.var = (kptx_var){.space = KPTX_SPACE_REG, .type = ".b64",
                          .name = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_r")),
                          .reg_range = N_REGS};
    p->kind = KPTX_STMT_VAR;
    p->u.var = (kptx_var){.space = KPTX_SPACE_REG, .type = ".pred", .name = f->pred};
}

static void load_window(fencer *f, kptx_stmt_vec *sv)
{
    for (unsigned i = 0; i < KPTX_FENCE_EXTRA_PARAMS; i++)
        emit2(f, sv, "ld", ".param.u64", kptx_reg_operand(f->reg[R_BASE + i]),
              kptx_rw_addr(&f->rw, f->param[i], 0));
}

static size_t body_bound(const kptx_function *fn)
{
    size_t n = fn->n_stmts + 2 + KPTX_FENCE_EXTRA_PARAMS;
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_INSTR)
            n += PER_ACCESS * fn->stmts[i].u.instr.n_ops;
    return n;
}

static void hook_declare(void *f, kptx_stmt_vec *sv)
{
    declare(f, sv);
}

static void hook_prologue(void *f, kptx_stmt_vec *sv)
{
    load_window(f, sv);
}

static void hook_instr(void *user, kptx_stmt_vec *sv, const kptx_stmt *s)
{
    fencer *f = user;
    fence_instr(f, sv, f->fn, s);
}

static void fence_body(fencer *f, kptx_function *out, const kptx_function *fn)
{
    const kptx_body_hooks h = {hook_declare, hook_prologue, hook_instr, f};
    f->fn = fn;
    kptx_rw_body(&f->rw, body_bound(fn), fn, out, &h);
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
    fence_body(f, &out, fn);
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
    f->pred = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_p"));
    const char *reg = kptx_rw_name(&f->rw, "%", kptx_rw_name(&f->rw, f->prefix, "_r"));
    for (unsigned i = 0; i < N_REGS && reg; i++) {
        char num[8];
        snprintf(num, sizeof num, "%u", i);
        f->reg[i] = kptx_rw_name(&f->rw, reg, num);
    }
    return f->rw.oom ? KPTX_ENOMEM : 0;
}

/* Marks in fence[] (per analysed function) the entries that can be fenced. */
static unsigned plan(const kptx_module *m, const kptx_analysis *an, unsigned flags,
                     bool *fence)
{
    unsigned n = 0;
    for (unsigned i = 0; i < an->n_fns; i++) {
        char why[192];
        if (!an->facts[i].fn->is_entry || !an->facts[i].fn->has_body)
            continue;
        kptx_fence_judge(m, an, i, flags, why, sizeof why);
        fence[i] = !why[0];
        n += fence[i];
    }
    return n;
}

int kptx_fence_module(kptx_module *m, unsigned flags, unsigned *n_fenced, kptx_error *err)
{
    if (n_fenced)
        *n_fenced = 0;
    if (!m)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL module");
    const kptx_analysis *an = kptx_module_analysis(m, err);
    if (!an)
        return KPTX_ENOMEM;
    fencer f = {.m = m, .rw = {.a = m->arena}};
    bool *fence = calloc(an->n_fns ? an->n_fns : 1, sizeof *fence);
    int rc = !fence ? KPTX_ENOMEM : setup_names(&f);
    unsigned count = rc ? 0 : plan(m, an, flags, fence);
    for (unsigned i = 0; !rc && count && i < m->n_items; i++) {
        kptx_item *it = &m->items[i];
        if (it->kind != KPTX_ITEM_FUNCTION || !it->u.fn.is_entry || !it->u.fn.has_body)
            continue;
        int k = kptx_analysis_find(an, it->u.fn.name);
        if (k >= 0 && fence[k])
            fence_entry(&f, &it->u.fn);
    }
    free(fence);
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
