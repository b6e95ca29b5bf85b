/* Building blocks of the transformations that rewrite function bodies (the slicer, the
 * fencing pass): new statements in an arena array sized beforehand, names and operands. */
#include <string.h>

#include "ptx_internal.h"

void *kptx_rw_alloc(kptx_rw *rw, size_t n)
{
    void *p = kptx_arena_alloc(rw->a, n);
    if (!p)
        rw->oom = true;
    return p;
}

const char *kptx_rw_name(kptx_rw *rw, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = kptx_rw_alloc(rw, la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

kptx_stmt *kptx_rw_push(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_stmt *from)
{
    if (sv->n == sv->cap) {
        rw->oom = true;     /* the size computed beforehand was wrong: fail, never overrun */
        return NULL;
    }
    kptx_stmt *s = &sv->v[sv->n++];
    if (from)
        *s = *from;
    else
        memset(s, 0, sizeof *s);
    return s;
}

void kptx_rw_label(kptx_rw *rw, kptx_stmt_vec *sv, const char *name)
{
    kptx_stmt *s = kptx_rw_push(rw, sv, NULL);
    if (s) {
        s->kind = KPTX_STMT_LABEL;
        s->u.label = name;
    }
}

bool kptx_rw_begin(kptx_rw *rw, kptx_stmt_vec *sv, size_t cap)
{
    sv->n = 0;
    sv->cap = cap;
    sv->v = kptx_arena_alloc_raw(rw->a, cap * sizeof *sv->v);
    if (!sv->v)
        rw->oom = true;
    return sv->v != NULL;
}

kptx_operand kptx_reg_operand(const char *name)
{
    return (kptx_operand){.kind = KPTX_OPND_REG, .name = name};
}

kptx_operand kptx_int_operand(int64_t v)
{
    return (kptx_operand){.kind = KPTX_OPND_INT, .value = v};
}

kptx_operand kptx_rw_addr(kptx_rw *rw, const char *symbol, int64_t offset)
{
    kptx_operand *base = kptx_rw_alloc(rw, sizeof *base);
    if (base)
        *base = (kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = symbol};
    return (kptx_operand){.kind = KPTX_OPND_ADDRESS, .value = offset, .n_elems = base ? 1 : 0,
                          .elems = base};
}

kptx_stmt *kptx_rw_emit(kptx_rw *rw, kptx_stmt_vec *sv, const char *opcode, const char *mods,
                        unsigned n_ops, const kptx_operand *ops)
{
    kptx_stmt *s = kptx_rw_push(rw, sv, NULL);
    const char **m = kptx_rw_alloc(rw, 4 * sizeof *m);
    kptx_operand *o = n_ops ? kptx_rw_alloc(rw, n_ops * sizeof *o) : NULL;
    if (!s || !m || (n_ops && !o))
        return NULL;
    unsigned n_mods = 0;
    for (const char *p = mods; *p && n_mods < 4;) {
        size_t len = strcspn(p + 1, ".") + 1;
        char *mod = kptx_rw_alloc(rw, len + 1);
        if (!mod)
            return NULL;
        memcpy(mod, p, len);
        m[n_mods++] = mod;
        p += len;
    }
    if (n_ops)
        memcpy(o, ops, n_ops * sizeof *o);
    s->kind = KPTX_STMT_INSTR;
    s->u.instr = (kptx_instr){.opcode = opcode, .n_mods = n_mods, .mods = m, .n_ops = n_ops,
                              .ops = o};
    return s;
}

/* Whether s starts the code of a body (is neither a declaration nor a directive). */
static bool opens_code(const kptx_stmt *s)
{
    return s->kind != KPTX_STMT_VAR && s->kind != KPTX_STMT_DIRECTIVE;
}

void kptx_rw_declare_reg(kptx_rw *rw, kptx_stmt_vec *sv, const char *type, const char *name,
                         unsigned range)
{
    kptx_stmt *r = kptx_rw_push(rw, sv, NULL);
    if (r) {
        r->kind = KPTX_STMT_VAR;
        r->u.var = (kptx_var){.space = KPTX_SPACE_REG, .type = type, .name = name,
                              .reg_range = range};
    }
}

kptx_stmt *kptx_rw_emit3(kptx_rw *rw, kptx_stmt_vec *sv, const char *opcode, const char *mods,
                         kptx_operand a, kptx_operand b, kptx_operand c, unsigned n)
{
    const kptx_operand ops[3] = {a, b, c};
    return kptx_rw_emit(rw, sv, opcode, mods, n, ops);
}

void kptx_rw_body(kptx_rw *rw, size_t cap, const kptx_function *fn, kptx_function *out,
                  const kptx_body_hooks *h)
{
    kptx_stmt_vec sv;
    if (!kptx_rw_begin(rw, &sv, cap))
        return;
    h->declare(h->user, &sv);
    bool started = false;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        if (!started && !fn->code_label && opens_code(s)) {
            h->prologue(h->user, &sv);
            started = true;
        }
        if (s->kind == KPTX_STMT_INSTR)
            h->instr(h->user, &sv, s);
        else if (s->kind == KPTX_STMT_LABEL && h->label)
            h->label(h->user, &sv, s);
        else
            kptx_rw_push(rw, &sv, s);
        if (!started && fn->code_label && s->kind == KPTX_STMT_LABEL &&
            !strcmp(s->u.label, fn->code_label)) {
            h->prologue(h->user, &sv);      /* after an earlier transform's prologue */
            started = true;
        }
    }
    if (!started)
        h->prologue(h->user, &sv);
    out->n_stmts = (unsigned)sv.n;
    out->stmts = sv.v;
}

int kptx_rw_add_vars(kptx_rw *rw, kptx_module *m, const kptx_var *vars, unsigned n)
{
    kptx_item *items = kptx_rw_alloc(rw, (m->n_items + n) * sizeof *items);
    if (!items)
        return KPTX_ENOMEM;
    unsigned at = 0;
    while (at < m->n_items && m->items[at].kind != KPTX_ITEM_FUNCTION)
        at++;
    memcpy(items, m->items, at * sizeof *items);
    for (unsigned i = 0; i < n; i++) {
        items[at + i].kind = KPTX_ITEM_VAR;
        items[at + i].u.var = vars[i];
    }
    memcpy(items + at + n, m->items + at, (m->n_items - at) * sizeof *items);
    m->items = items;
    m->n_items += n;
    return 0;
}
