/* Rewrites a module for relocated variables (kernelet/ptx.h, "Relocating module
 * variables"): each operand naming one (sym, sym+off, or the base of [sym+off]) becomes a
 * register that a mov.u64 just before the instruction sets to the variable's window
 * address, and the declarations go. Every instruction form that accepts a symbol accepts
 * a register there, so one rule covers mov, cvta, ld/st/atom/red and the rest; the
 * fencing pass has already masked every access, so the addresses stay fenced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* Registers one instruction may need: symbols of planned variables among its operands. */
#define MAX_PER_INSTR 8

typedef struct named {
    const char *name;
    unsigned k;                 /* index in the plan */
} named;

typedef struct relocator {
    kptx_rw rw;
    const kptx_reloc_plan *p;
    uint64_t base;
    bool *shadowed;             /* per planned variable: the function declares the name */
    named *order;               /* planned variables by name */
    unsigned *marked;           /* the shadowed[] entries set for this function */
    unsigned n_marked;
    const char *reg_base;       /* "%<prefix>_r": declared as %<prefix>_r<MAX_PER_INSTR> */
    const char *reg[MAX_PER_INSTR];
    unsigned used;              /* registers taken by the current instruction */
    bool too_many;
} relocator;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* The plan's index of the variable called sym, or -1 (a binary search: a module may hold
 * many variables and many uses). */
static int find(const relocator *r, const char *sym)
{
    named key = {.name = sym};
    const named *hit = sym ? bsearch(&key, r->order, r->p->n, sizeof *r->order, by_name) : NULL;
    return hit ? (int)hit->k : -1;
}

/* The planned variable sym names in the current function, or -1. */
static int planned(const relocator *r, const char *sym)
{
    int k = find(r, sym);
    return k >= 0 && !r->shadowed[k] ? k : -1;
}

static unsigned count_uses(const relocator *r, const kptx_operand *o)
{
    unsigned n = o->kind == KPTX_OPND_SYMBOL && planned(r, o->name) >= 0;
    for (unsigned i = 0; o->kind != KPTX_OPND_SYMBOL && i < o->n_elems; i++)
        n += count_uses(r, &o->elems[i]);
    return n;
}

static unsigned instr_uses(const relocator *r, const kptx_instr *in)
{
    unsigned n = 0;
    for (unsigned i = 0; i < in->n_ops; i++)
        n += count_uses(r, &in->ops[i]);
    return n;
}

/* A register holding the window address of variable k plus off, set just before. */
static kptx_operand address_reg(relocator *r, kptx_stmt_vec *sv, int k, int64_t off)
{
    if (r->used >= MAX_PER_INSTR) {
        r->too_many = true;
        return kptx_reg_operand(r->reg[0]);
    }
    kptx_operand ops[2] = {kptx_reg_operand(r->reg[r->used++]),
                           {.kind = KPTX_OPND_INT,
                            .value = (int64_t)(r->base + r->p->vars[k].offset + (uint64_t)off)}};
    kptx_rw_emit(&r->rw, sv, "mov", ".u64", 2, ops);
    return ops[0];
}

/* o with every planned symbol in it replaced by a register (sub-operands copied). */
static kptx_operand rewrite_operand(relocator *r, kptx_stmt_vec *sv, const kptx_operand *o)
{
    int k = o->kind == KPTX_OPND_SYMBOL ? planned(r, o->name) : -1;
    if (k >= 0)
        return address_reg(r, sv, k, o->value);
    if (o->kind == KPTX_OPND_SYMBOL || !o->n_elems || !count_uses(r, o))
        return *o;
    kptx_operand c = *o;
    kptx_operand *e = kptx_rw_alloc(&r->rw, o->n_elems * sizeof *e);
    if (!e)
        return c;
    for (unsigned i = 0; i < o->n_elems; i++)
        e[i] = rewrite_operand(r, sv, &o->elems[i]);
    c.elems = e;
    return c;
}

static void hook_instr(void *user, kptx_stmt_vec *sv, const kptx_stmt *s)
{
    relocator *r = user;
    const kptx_instr *in = &s->u.instr;
    if (!instr_uses(r, in)) {
        kptx_rw_push(&r->rw, sv, s);
        return;
    }
    kptx_operand *ops = kptx_rw_alloc(&r->rw, in->n_ops * sizeof *ops);
    if (!ops)
        return;
    r->used = 0;
    for (unsigned i = 0; i < in->n_ops; i++)
        ops[i] = rewrite_operand(r, sv, &in->ops[i]);
    kptx_stmt *c = kptx_rw_push(&r->rw, sv, s);
    if (c)
        c->u.instr.ops = ops;
}

static void hook_declare(void *user, kptx_stmt_vec *sv)
{
    relocator *r = user;
    kptx_stmt *d = kptx_rw_push(&r->rw, sv, NULL);
    if (!d)
        return;
    d->kind = KPTX_STMT_VAR;
    d->u.var = (kptx_var){.space = KPTX_SPACE_REG, .type = ".b64", .name = r->reg_base,
                          .reg_range = MAX_PER_INSTR};
}

static void hook_nothing(void *user, kptx_stmt_vec *sv)
{
    (void)user;
    (void)sv;
}

static void shadow(relocator *r, const char *name)
{
    int k = find(r, name);
    if (k >= 0 && !r->shadowed[k]) {
        r->shadowed[k] = true;
        r->marked[r->n_marked++] = (unsigned)k;
    }
}

/* Marks the planned names fn declares itself (parameters, body variables, labels), after
 * clearing the previous function's marks. */
static void find_shadows(relocator *r, const kptx_function *fn)
{
    for (unsigned i = 0; i < r->n_marked; i++)
        r->shadowed[r->marked[i]] = false;
    r->n_marked = 0;
    for (unsigned i = 0; i < fn->n_params; i++)
        shadow(r, fn->params[i].name);
    for (unsigned i = 0; i < fn->n_rets; i++)
        shadow(r, fn->rets[i].name);
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        if (fn->stmts[i].kind == KPTX_STMT_VAR)
            shadow(r, fn->stmts[i].u.var.name);
        else if (fn->stmts[i].kind == KPTX_STMT_LABEL)
            shadow(r, fn->stmts[i].u.label);
    }
}

static void relocate_function(relocator *r, kptx_function *fn)
{
    find_shadows(r, fn);
    size_t n = 0;
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_INSTR)
            n += instr_uses(r, &fn->stmts[i].u.instr);
    if (!n)
        return;
    const kptx_body_hooks h = {hook_declare, hook_nothing, hook_instr, r, NULL};
    kptx_function out = *fn;
    kptx_rw_body(&r->rw, fn->n_stmts + 1 + n, fn, &out, &h);
    if (!r->rw.oom)
        *fn = out;
}

/* Removes the planned variables' declarations from the module's items. */
static void drop_declarations(kptx_module *m, const relocator *r)
{
    unsigned w = 0;
    for (unsigned i = 0; i < m->n_items; i++) {
        int k = m->items[i].kind == KPTX_ITEM_VAR ? find(r, m->items[i].u.var.name) : -1;
        if (k < 0 || &m->items[i].u.var != r->p->vars[k].var)
            m->items[w++] = m->items[i];
    }
    m->n_items = w;
}

static int setup(relocator *r, kptx_module *m)
{
    char prefix[32];
    int rc = kptx_unused_prefix(m, "__kreloc", prefix, sizeof prefix);
    if (rc)
        return rc;
    const char *reg = kptx_rw_name(&r->rw, "%", kptx_rw_name(&r->rw, prefix, "_r"));
    for (unsigned i = 0; i < MAX_PER_INSTR && reg; i++) {
        char num[8];
        snprintf(num, sizeof num, "%u", i);
        r->reg[i] = kptx_rw_name(&r->rw, reg, num);
    }
    r->reg_base = reg;
    return r->rw.oom ? KPTX_ENOMEM : 0;
}

static void relocator_free(relocator *r)
{
    free(r->shadowed);
    free(r->marked);
    free(r->order);
}

/* The relocator's tables: the plan sorted by name, the shadow marks, the registers. */
static int relocator_init(relocator *r, kptx_module *m)
{
    r->shadowed = calloc(r->p->n, sizeof *r->shadowed);
    r->marked = calloc(r->p->n, sizeof *r->marked);
    r->order = calloc(r->p->n, sizeof *r->order);
    if (!r->shadowed || !r->marked || !r->order)
        return KPTX_ENOMEM;
    for (unsigned i = 0; i < r->p->n; i++)
        r->order[i] = (named){r->p->vars[i].name, i};
    qsort(r->order, r->p->n, sizeof *r->order, by_name);
    return setup(r, m);
}

/* On failure m is half rewritten: the caller frees it. */
int kptx_reloc_apply(kptx_module *m, const kptx_reloc_plan *p, uint64_t base, kptx_error *err)
{
    if (!m || !p)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL argument");
    if (!p->n)
        return 0;
    relocator r = {.rw = {.a = m->arena}, .p = p, .base = base};
    int rc = relocator_init(&r, m);
    for (unsigned i = 0; !rc && i < m->n_items; i++)
        if (m->items[i].kind == KPTX_ITEM_FUNCTION && m->items[i].u.fn.has_body)
            relocate_function(&r, &m->items[i].u.fn);
    if (!rc && r.rw.oom)
        rc = KPTX_ENOMEM;
    if (!rc && !r.too_many)
        drop_declarations(m, &r);
    relocator_free(&r);
    if (!rc && r.too_many)
        return kptx_fail(err, KPTX_EUNSUPPORTED, 0, 0, "an instruction names more than %d "
                         "module variables", MAX_PER_INSTR);
    if (rc)
        return kptx_fail(err, rc, 0, 0, rc == KPTX_ENOMEM ? "out of memory while relocating"
                                                          : "no unused name prefix");
    kptx_module_forget_analysis(m);
    return 0;
}
