/* The slicer: index rectification. For every sliceable entry E it adds E__kslice, which
 * takes E's parameters plus (first linear block id, grid x, y, z) and is launched as a 1-D
 * grid of `count` blocks. At its start every thread computes the original grid's block
 * coordinates of its block, with two divisions, and stores them in a per-block .shared
 * array (all threads store the same values, so each thread's own later loads see them
 * without a barrier):
 *   L = %ctaid.x + first;  q = L / nx;  (x, y, z) = (L - q * nx, q % ny, q / ny)
 * Each read of %ctaid.* then becomes a load from that array and each read of %nctaid.* a
 * load of the parameter, into a fresh temporary just before the instruction that reads
 * it: the live ranges stay short and no division sits in the kernel's hot path. Device
 * functions that read them are cloned (f__kslice) and load all six values from the
 * array; calls in sliced code go to the clones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* Temporaries: two scratch registers and one per distinct value an instruction reads. */
#define N_TEMPS (2 + KPTX_GRID_VALUES)
/* Most statements the prologue emits (all six values): 3 + 5 + 3 + 3 + 3 + 1 + 6 + 1. */
#define PROLOGUE_MAX 32

typedef struct slicer {
    kptx_module *m;
    kptx_rw rw;
    const kptx_analysis *an;
    char prefix[32];
    const char *temps[N_TEMPS];     /* "%__kslice_t0" ... */
    const char *param_names[4];     /* first, nx, ny, nz */
    const char *grid_var;           /* the .shared copy of the rectified values */
    const char *pred;               /* predicate register of the prologue's branch */
    const char *done_label;         /* label after the prologue */
    bool *clone;                    /* per function: gets a clone */
    bool *sliced;                   /* per function (entries): gets a sliced variant */
    unsigned *entry_grid;           /* per sliced entry: values its clones load */
    unsigned shared_grid;           /* values any clone loads (sizes the .shared copy) */
} slicer;

static void *sl_alloc(slicer *sl, size_t n)
{
    return kptx_rw_alloc(&sl->rw, n);
}

static const char *sl_name(slicer *sl, const char *a, const char *b)
{
    return kptx_rw_name(&sl->rw, a, b);
}

static kptx_stmt *push_copy(slicer *sl, kptx_stmt_vec *sv, const kptx_stmt *from)
{
    return kptx_rw_push(&sl->rw, sv, from);
}

static kptx_stmt *push(slicer *sl, kptx_stmt_vec *sv)
{
    return kptx_rw_push(&sl->rw, sv, NULL);
}

#define reg_op kptx_reg_operand

static kptx_operand addr_op(slicer *sl, const char *symbol, int64_t offset)
{
    return kptx_rw_addr(&sl->rw, symbol, offset);
}

/* opcode, its modifiers written together (".lo.u32"), and up to three operands. */
static void emit(slicer *sl, kptx_stmt_vec *sv, const char *opcode, const char *mods,
                 unsigned n_ops, kptx_operand a, kptx_operand b, kptx_operand c)
{
    const kptx_operand ops[3] = {a, b, c};
    kptx_rw_emit(&sl->rw, sv, opcode, mods, n_ops, ops);
}

static void ld_param(slicer *sl, kptx_stmt_vec *sv, const char *dst, unsigned which)
{
    emit(sl, sv, "ld", ".param.u32", 2, reg_op(dst), addr_op(sl, sl->param_names[which], 0),
         (kptx_operand){0});
}

/* A volatile load: ptxas would otherwise forward the prologue's store to it and keep the
 * value in a register from the prologue on. */
static void load_shared_value(slicer *sl, kptx_stmt_vec *sv, int g, const char *out)
{
    emit(sl, sv, "ld", ".volatile.shared.u32", 2, reg_op(out), addr_op(sl, sl->grid_var, 4 * g),
         (kptx_operand){0});
}

static void store_shared_value(slicer *sl, kptx_stmt_vec *sv, int g, const char *value)
{
    emit(sl, sv, "st", ".shared.u32", 2, addr_op(sl, sl->grid_var, 4 * g), reg_op(value),
         (kptx_operand){0});
}

/* The prologue of a sliced entry: the original grid's block coordinates, computed once per
 * thread with two divisions, stored to the .shared copy (only the values in `grid`):
 *   L = %ctaid.x + first;  q = L / nx;  x = L - q * nx;  r = q / ny;  y = q - r * ny;  z = r
 * It sits in a basic block of its own (skipped when nx is 0, which no launch passes): ptxas
 * then does not interleave the kernel's first instructions with the divisions, which would
 * raise the kernel's register count. */
static void prologue(slicer *sl, kptx_stmt_vec *sv, unsigned grid)
{
    const char *l = sl->temps[0], *n = sl->temps[1], *q = sl->temps[2], *t = sl->temps[3],
               *r = sl->temps[4];
    kptx_operand none = {0};
    if (!grid)
        return;
    ld_param(sl, sv, n, 1);
    emit(sl, sv, "setp", ".eq.u32", 3, reg_op(sl->pred), reg_op(n),
         (kptx_operand){.kind = KPTX_OPND_INT});
    emit(sl, sv, "bra", ".uni", 1,
         (kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = sl->done_label}, none, none);
    if (sv->n && !sl->rw.oom)
        sv->v[sv->n - 1].u.instr.guard = sl->pred;
    if (grid & (KPTX_GRID_CTAID(0) | KPTX_GRID_CTAID(1) | KPTX_GRID_CTAID(2))) {
        emit(sl, sv, "mov", ".u32", 2, reg_op(l),
             (kptx_operand){.kind = KPTX_OPND_SREG, .name = "%ctaid.x"}, none);
        ld_param(sl, sv, t, 0);
        emit(sl, sv, "add", ".u32", 3, reg_op(l), reg_op(l), reg_op(t));
        emit(sl, sv, "div", ".u32", 3, reg_op(q), reg_op(l), reg_op(n));
    }
    if (grid & KPTX_GRID_CTAID(0)) {
        emit(sl, sv, "mul", ".lo.u32", 3, reg_op(t), reg_op(q), reg_op(n));
        emit(sl, sv, "sub", ".u32", 3, reg_op(t), reg_op(l), reg_op(t));
        store_shared_value(sl, sv, 0, t);
    }
    if (grid & (KPTX_GRID_CTAID(1) | KPTX_GRID_CTAID(2))) {
        ld_param(sl, sv, n, 2);
        emit(sl, sv, "div", ".u32", 3, reg_op(r), reg_op(q), reg_op(n));
    }
    if (grid & KPTX_GRID_CTAID(1)) {
        emit(sl, sv, "mul", ".lo.u32", 3, reg_op(t), reg_op(r), reg_op(n));
        emit(sl, sv, "sub", ".u32", 3, reg_op(t), reg_op(q), reg_op(t));
        store_shared_value(sl, sv, 1, t);
    }
    if (grid & KPTX_GRID_CTAID(2))
        store_shared_value(sl, sv, 2, r);
    for (int c = 0; c < 3; c++) {
        if (!(grid & KPTX_GRID_NCTAID(c)))
            continue;
        ld_param(sl, sv, t, 1 + (unsigned)c);
        store_shared_value(sl, sv, 3 + c, t);
    }
    kptx_rw_label(&sl->rw, sv, sl->done_label);
}

/* ---- rewriting one function ---- */

static void collect_grid(const kptx_operand *o, unsigned *mask)
{
    if (o->kind == KPTX_OPND_SREG) {
        int g = kptx_grid_value(o->name);
        if (g >= 0)
            *mask |= 1u << g;
    }
    for (unsigned i = 0; i < o->n_elems; i++)
        collect_grid(&o->elems[i], mask);
}

/* A copy of o with grid reads replaced by temporaries and calls retargeted to clones. */
static kptx_operand rewrite_operand(slicer *sl, const kptx_operand *o, bool call_target)
{
    kptx_operand r = *o;
    int g = o->kind == KPTX_OPND_SREG ? kptx_grid_value(o->name) : -1;
    if (g >= 0) {
        r.kind = KPTX_OPND_REG;
        r.name = sl->temps[2 + g];
    } else if (call_target && o->kind == KPTX_OPND_SYMBOL) {
        int k = kptx_analysis_find(sl->an, o->name);
        if (k >= 0 && sl->clone[k])
            r.name = sl_name(sl, o->name, KPTX_SLICE_SUFFIX);
    }
    if (o->n_elems) {
        r.elems = sl_alloc(sl, o->n_elems * sizeof *r.elems);
        for (unsigned i = 0; r.elems && i < o->n_elems; i++)
            r.elems[i] = rewrite_operand(sl, &o->elems[i], false);
    }
    return r;
}

static bool calls_clone(const slicer *sl, const kptx_instr *in)
{
    const char *target = kptx_call_target(in);
    int k = target ? kptx_analysis_find(sl->an, target) : -1;
    return k >= 0 && sl->clone[k];
}

static void rewrite_instr(slicer *sl, kptx_stmt_vec *sv, const kptx_stmt *s, bool in_clone)
{
    const kptx_instr *in = &s->u.instr;
    unsigned grid = 0;
    for (unsigned i = 0; i < in->n_ops; i++)
        collect_grid(&in->ops[i], &grid);
    bool retarget = calls_clone(sl, in);
    if (!grid && !retarget) {
        push_copy(sl, sv, s);
        return;
    }
    for (int g = 0; g < KPTX_GRID_VALUES; g++) {
        if (!(grid & (1u << g)))
            continue;
        if (in_clone || g < 3)
            load_shared_value(sl, sv, g, sl->temps[2 + g]);
        else
            ld_param(sl, sv, sl->temps[2 + g], 1 + (unsigned)(g - 3));
    }
    kptx_stmt *c = push_copy(sl, sv, s);
    kptx_operand *ops = sl_alloc(sl, in->n_ops * sizeof *ops);
    if (!c || !ops)
        return;
    c->line = 0;
    bool target_seen = false;
    for (unsigned i = 0; i < in->n_ops; i++) {
        bool is_target = retarget && !target_seen && in->ops[i].kind != KPTX_OPND_LIST;
        target_seen |= is_target;
        ops[i] = rewrite_operand(sl, &in->ops[i], is_target);
    }
    c->u.instr.ops = ops;
}

static void temps_decl(slicer *sl, kptx_stmt_vec *sv)
{
    kptx_stmt *s = push(sl, sv), *p = push(sl, sv);
    if (!s || !p)
        return;
    s->kind = KPTX_STMT_VAR;
    s->u.var = (kptx_var){.space = KPTX_SPACE_REG, .type = ".b32",
                          .name = sl_name(sl, "%", sl_name(sl, sl->prefix, "_t")),
                          .reg_range = N_TEMPS};
    p->kind = KPTX_STMT_VAR;
    p->u.var = (kptx_var){.space = KPTX_SPACE_REG, .type = ".pred", .name = sl->pred};
}

/* Statements the rewritten body can have at most: the original ones, two declarations, the
 * prologue, and one load before an instruction per grid value it reads. */
static size_t body_bound(const kptx_function *fn)
{
    size_t n = fn->n_stmts + 2 + PROLOGUE_MAX;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        if (fn->stmts[i].kind != KPTX_STMT_INSTR)
            continue;
        unsigned grid = 0;
        for (unsigned k = 0; k < fn->stmts[i].u.instr.n_ops; k++)
            collect_grid(&fn->stmts[i].u.instr.ops[k], &grid);
        n += (size_t)__builtin_popcount(grid);
    }
    return n;
}

/* What one body's rewrite needs besides the slicer. */
typedef struct body_job {
    slicer *sl;
    bool in_clone;
    unsigned prologue_grid;
} body_job;

static void hook_declare(void *user, kptx_stmt_vec *sv)
{
    temps_decl(((body_job *)user)->sl, sv);
}

static void hook_prologue(void *user, kptx_stmt_vec *sv)
{
    body_job *b = user;
    prologue(b->sl, sv, b->prologue_grid);
}

static void hook_instr(void *user, kptx_stmt_vec *sv, const kptx_stmt *s)
{
    body_job *b = user;
    rewrite_instr(b->sl, sv, s, b->in_clone);
}

static void rewrite_body(slicer *sl, kptx_function *out, const kptx_function *fn, bool in_clone,
                         unsigned prologue_grid)
{
    body_job b = {sl, in_clone, prologue_grid};
    const kptx_body_hooks h = {hook_declare, hook_prologue, hook_instr, &b, NULL};
    kptx_rw_body(&sl->rw, body_bound(fn), fn, out, &h);
}

/* ---- new functions ---- */

static void make_clone(slicer *sl, kptx_function *out, const kptx_function *fn)
{
    *out = *fn;
    out->name = sl_name(sl, fn->name, KPTX_SLICE_SUFFIX);
    out->line = 0;
    if (fn->has_body)
        rewrite_body(sl, out, fn, true, 0);
}

static void make_sliced_entry(slicer *sl, kptx_function *out, const kptx_function *fn,
                              unsigned prologue_grid)
{
    *out = *fn;
    out->name = sl_name(sl, fn->name, KPTX_SLICE_SUFFIX);
    out->line = 0;
    out->n_params = fn->n_params + KPTX_SLICE_EXTRA_PARAMS;
    out->params = sl_alloc(sl, out->n_params * sizeof *out->params);
    if (!out->params)
        return;
    if (fn->n_params)
        memcpy(out->params, fn->params, fn->n_params * sizeof *fn->params);
    uint32_t off = (fn->param_bytes + 3) & ~3u;
    for (unsigned i = 0; i < KPTX_SLICE_EXTRA_PARAMS; i++) {
        out->params[fn->n_params + i] = (kptx_var){.space = KPTX_SPACE_PARAM, .type = ".u32",
                                                   .name = sl->param_names[i],
                                                   .offset = off, .size = 4};
        off += 4;
    }
    out->param_bytes = off;
    rewrite_body(sl, out, fn, false, prologue_grid);
}

/* ---- planning ---- */

static bool name_taken(const slicer *sl, const char *name)
{
    char buf[4096];
    return kptx_slice_name(name, buf, sizeof buf) != 0 || kptx_analysis_find(sl->an, buf) >= 0;
}

/* Marks the sliceable entries and the functions they need cloned. */
static int plan(slicer *sl, unsigned *n_sliced)
{
    const kptx_analysis *an = sl->an;
    bool *reach = malloc(an->n_fns * sizeof *reach);
    if (!reach)
        return KPTX_ENOMEM;
    for (unsigned i = 0; i < an->n_fns; i++) {
        const kptx_function *fn = an->facts[i].fn;
        uint32_t sregs;
        char why[192];
        if (!fn->is_entry || !fn->has_body || name_taken(sl, fn->name))
            continue;
        if (kptx_entry_verdict(sl->m, an, i, &sregs, why, sizeof why)) {
            free(reach);
            return KPTX_ENOMEM;
        }
        if (why[0])
            continue;
        memset(reach, 0, an->n_fns * sizeof *reach);
        kptx_reachable(an, i, reach);
        bool clash = false;
        for (unsigned k = 0; k < an->n_fns; k++)
            clash |= reach[k] && k != i && an->facts[k].grid_reach && name_taken(sl, an->facts[k].fn->name);
        if (clash)
            continue;
        sl->sliced[i] = true;
        (*n_sliced)++;
        sl->entry_grid[i] = an->facts[i].grid &
                            (KPTX_GRID_CTAID(0) | KPTX_GRID_CTAID(1) | KPTX_GRID_CTAID(2));
        for (unsigned k = 0; k < an->n_fns; k++) {
            if (!reach[k] || k == i || !an->facts[k].grid_reach)
                continue;
            sl->clone[k] = true;
            sl->entry_grid[i] |= an->facts[k].grid_reach;
        }
        sl->shared_grid |= sl->entry_grid[i];
    }
    free(reach);
    return 0;
}

/* ---- the module ---- */

static kptx_item *add_item(slicer *sl, kptx_item *items, unsigned *n)
{
    kptx_item *it = &items[(*n)++];
    memset(it, 0, sizeof *it);
    (void)sl;
    return it;
}

static void add_grid_var(slicer *sl, kptx_item *items, unsigned *n)
{
    kptx_item *it = add_item(sl, items, n);
    it->kind = KPTX_ITEM_VAR;
    it->u.var = (kptx_var){.space = KPTX_SPACE_SHARED, .align = 4, .type = ".b32",
                           .name = sl->grid_var, .n_dims = 1, .dims = {KPTX_GRID_VALUES}};
}

static int rebuild_items(slicer *sl)
{
    kptx_module *m = sl->m;
    unsigned cap = 2 * m->n_items + 1, n = 0;
    kptx_item *items = sl_alloc(sl, cap * sizeof *items);
    if (!items)
        return KPTX_ENOMEM;
    bool var_added = !sl->shared_grid;
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        if (it->kind == KPTX_ITEM_FUNCTION && !var_added) {
            add_grid_var(sl, items, &n);
            var_added = true;
        }
        items[n++] = *it;
        if (it->kind != KPTX_ITEM_FUNCTION)
            continue;
        int k = kptx_analysis_find(sl->an, it->u.fn.name);
        if (k < 0)
            continue;
        if (sl->clone[k]) {
            kptx_item *c = add_item(sl, items, &n);
            c->kind = KPTX_ITEM_FUNCTION;
            make_clone(sl, &c->u.fn, &it->u.fn);
        } else if (sl->sliced[k] && it->u.fn.has_body) {
            kptx_item *c = add_item(sl, items, &n);
            c->kind = KPTX_ITEM_FUNCTION;
            make_sliced_entry(sl, &c->u.fn, &it->u.fn, sl->entry_grid[k]);
        }
    }
    if (sl->rw.oom)
        return KPTX_ENOMEM;
    m->items = items;
    m->n_items = n;
    return 0;
}

static int setup_names(slicer *sl)
{
    int rc = kptx_unused_prefix(sl->m, "__kslice", sl->prefix, sizeof sl->prefix);
    if (rc)
        return rc;
    static const char *const extra[4] = {"_first", "_nx", "_ny", "_nz"};
    for (unsigned i = 0; i < 4; i++)
        sl->param_names[i] = sl_name(sl, sl->prefix, extra[i]);
    sl->grid_var = sl_name(sl, sl->prefix, "_grid");
    sl->pred = sl_name(sl, "%", sl_name(sl, sl->prefix, "_p"));
    sl->done_label = sl_name(sl, sl->prefix, "_done");
    const char *treg = sl_name(sl, "%", sl_name(sl, sl->prefix, "_t"));
    for (unsigned i = 0; i < N_TEMPS && treg; i++) {
        char num[8];
        snprintf(num, sizeof num, "%u", i);
        sl->temps[i] = sl_name(sl, treg, num);
    }
    return sl->rw.oom ? KPTX_ENOMEM : 0;
}

int kptx_slice_module(kptx_module *m, unsigned *n_sliced, kptx_error *err)
{
    unsigned count = 0;
    if (n_sliced)
        *n_sliced = 0;
    if (!m)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL module");
    slicer sl = {.m = m, .rw = {.a = m->arena}};
    sl.an = kptx_module_analysis(m, err);
    if (!sl.an)
        return KPTX_ENOMEM;
    unsigned n = sl.an->n_fns ? sl.an->n_fns : 1;
    sl.clone = calloc(n, sizeof *sl.clone);
    sl.sliced = calloc(n, sizeof *sl.sliced);
    sl.entry_grid = calloc(n, sizeof *sl.entry_grid);
    int rc = !sl.clone || !sl.sliced || !sl.entry_grid ? KPTX_ENOMEM : setup_names(&sl);
    if (!rc)
        rc = plan(&sl, &count);
    if (!rc && count)
        rc = rebuild_items(&sl);
    free(sl.clone);
    free(sl.sliced);
    free(sl.entry_grid);
    if (count && !rc)
        kptx_module_forget_analysis(m);
    if (rc)
        return kptx_fail(err, rc, 0, 0, rc == KPTX_ENOMEM ? "out of memory while slicing"
                                                          : "no unused name prefix for slicing");
    if (n_sliced)
        *n_sliced = count;
    return 0;
}
